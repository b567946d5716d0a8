#!/bin/sh
# `tierkit topology` (and --json) must report node 0 as fast and node 1 as the slow tier.
# vmtest-timeout: 20
. /vmtest/guest/lib.sh
if ! tierkit topology --help > /dev/null 2>&1; then
    skip topology "tierkit has no topology command"
    exit 0
fi
if ! tierkit topology > /tmp/topo.txt 2>&1; then
    fail topology "tierkit topology exited with $?: $(head -3 /tmp/topo.txt | tr '\n' ' ')"
    exit 0
fi
sed 's/^/  topology: /' /tmp/topo.txt
if ! tierkit topology --json > /tmp/topo.json 2>/tmp/topo.err; then
    fail topology "tierkit topology --json failed: $(head -3 /tmp/topo.err | tr '\n' ' ')"
    exit 0
fi
# Without jq: one chunk per node object ({"id":N,...}) of the whitespace-free JSON.
node_class() {
    tr -d ' \n\t' < /tmp/topo.json | sed 's/{"id":/\n{"id":/g' | grep "^{\"id\":$1," | head -1 \
        | sed -n 's/.*"class":"\([a-z]*\)".*/\1/p'
}
c0=$(node_class 0); c1=$(node_class 1)
grep -qi slow /tmp/topo.txt || { fail topology "text output names no slow tier"; exit 0; }
if [ "$c0" = fast ] && [ "$c1" = slow ]; then
    pass topology "json node0=$c0 node1=$c1"
else
    fail topology "json node0=${c0:-missing} node1=${c1:-missing} (want fast/slow): $(head -c 300 /tmp/topo.json)"
fi

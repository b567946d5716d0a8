#!/bin/sh
# `tierkit topology` (and --json) must report node 0 as fast and node 1 as the slow tier.
# vmtest-timeout: 20
. /vmtest/guest/lib.sh
if ! tierkit --version > /tmp/topo.txt 2>&1; then
    fail topology "tierkit does not run in the guest: $(head -3 /tmp/topo.txt | tr '\n' ' ')"
    exit 0
fi
if ! tierkit --help | grep -qE '^ +topology '; then
    skip topology "tierkit has no topology command"
    exit 0
fi
tierkit topology > /tmp/topo.txt 2>&1
rc=$?
if [ "$rc" != 0 ]; then
    fail topology "tierkit topology exited with $rc: $(head -3 /tmp/topo.txt | tr '\n' ' ')"
    exit 0
fi
sed 's/^/  topology: /' /tmp/topo.txt
if ! tierkit topology --json > /tmp/topo.json 2>/tmp/topo.err; then
    fail topology "tierkit topology --json failed: $(head -3 /tmp/topo.err | tr '\n' ' ')"
    exit 0
fi
# Without jq: walk the "nodes" array object by object (keys in any order), print node $1's class.
node_class() {
    tr -d ' \n\t\r' < /tmp/topo.json | awk -v want="$1" '
    { s = s $0 }
    END {
        i = index(s, "\"nodes\":[")
        if (!i) exit
        depth = 0; obj = ""
        for (i += 9; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (depth == 0 && c == "]") exit
            if (c == "{" || c == "[") depth++
            if (depth > 0) obj = obj c
            if (c == "}" || c == "]") {
                depth--
                if (depth > 0) continue
                if (match(obj, /"id":[0-9]+[,}]/) && substr(obj, RSTART + 5, RLENGTH - 6) == want &&
                    match(obj, /"class":"[a-z]+"/)) {
                    print substr(obj, RSTART + 9, RLENGTH - 10)
                    exit
                }
                obj = ""
            }
        }
    }'
}
c0=$(node_class 0); c1=$(node_class 1)
grep -qi slow /tmp/topo.txt || { fail topology "text output names no slow tier"; exit 0; }
if [ "$c0" = fast ] && [ "$c1" = slow ]; then
    pass topology "json node0=$c0 node1=$c1"
else
    fail topology "json node0=${c0:-missing} node1=${c1:-missing} (want fast/slow): $(head -c 300 /tmp/topo.json)"
fi

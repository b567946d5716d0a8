#!/bin/bash
# Builds target/vm/initramfs.cpio.gz for run.sh: busybox-static, the static test programs
# (workload + tools), the dax modules unpacked by setup.sh, the tierkit binary with the shared
# libraries it links (at their host paths, ELF interpreter included), /init, the test scenarios
# (guest/, /vmtest/guest) and the benchmarks (bench/, /vmtest/bench).
# Needs: setup.sh run once, and target/release/tierkit (make build).
set -euo pipefail
cd "$(dirname "$0")/../.."
VM=target/vm
CACHE=$VM/cache
TIERKIT=${TIERKIT:-target/release/tierkit}
die() { echo "vm initramfs: $*" >&2; exit 1; }
[ -s "$CACHE/kernel.env" ] || die "run tests/vm/setup.sh first ($CACHE/kernel.env missing)"
[ -x "$TIERKIT" ] || die "$TIERKIT missing: run 'make build' first"
command -v busybox >/dev/null || [ -x /bin/busybox ] || die "busybox missing: run tests/vm/setup.sh"

ROOT=$VM/rootfs
BIN=$VM/bin
rm -rf "$ROOT" && mkdir -p "$BIN" "$ROOT"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,run,lib/modules,vmtest/guest,vmtest/bench}

# Static guest programs, rebuilt when their source changes.
build() {  # build SRC OUT EXTRA-LIBS...
    local src=$1 out=$2; shift 2
    if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
        gcc -static -O2 -Wall -Wextra -Werror -o "$out" "$src" "$@"
    fi
}
build tests/vm/workload/zipf_reader.c "$BIN/zipf_reader" -lm -lpthread
build tests/vm/tools/placement.c "$BIN/placement"
build tests/vm/tools/raw_move.c "$BIN/raw_move"
build tests/vm/tools/move_pid.c "$BIN/move_pid"
build tests/vm/tools/node_hog.c "$BIN/node_hog"
cp "$BIN"/{zipf_reader,placement,raw_move} "$ROOT/bin/"
cp "$BIN"/{move_pid,node_hog} "$ROOT/bin/"
cp /bin/busybox "$ROOT/bin/busybox"

# tierkit is dynamically linked: ship it stripped, with every library ldd resolves, at the same
# paths (the interpreter path is baked into the binary).
strip -o "$ROOT/bin/tierkit" "$TIERKIT"
ldd "$TIERKIT" | awk '/=> \//{print $3} /^\t\//{print $1}' | while read -r lib; do
    mkdir -p "$ROOT$(dirname "$lib")"
    cp -L "$lib" "$ROOT$lib"
done
interp=$(readelf -l "$TIERKIT" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
[ -e "$ROOT$interp" ] || die "ELF interpreter $interp of $TIERKIT not copied"

cp "$CACHE"/modules/*.ko "$ROOT/lib/modules/"
cp tests/vm/init.sh "$ROOT/init"
cp tests/vm/guest/*.sh "$ROOT/vmtest/guest/"
cp tests/vm/bench/*.sh "$ROOT/vmtest/bench/"
chmod +x "$ROOT/init" "$ROOT"/vmtest/guest/*.sh "$ROOT"/vmtest/bench/*.sh

(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) > "$VM/initramfs.cpio.gz.tmp"
mv "$VM/initramfs.cpio.gz.tmp" "$VM/initramfs.cpio.gz"
echo "vm initramfs: $VM/initramfs.cpio.gz ($(( $(stat -c %s "$VM/initramfs.cpio.gz") >> 20 )) MiB," \
    "tests: $(cd tests/vm/guest && ls [0-9][0-9]-*.sh | tr '\n' ' ')benchmarks: $(cd tests/vm/bench && ls [0-9][0-9]-*.sh | tr '\n' ' '))"

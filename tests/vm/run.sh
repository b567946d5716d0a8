#!/bin/bash
# Boots the test kernel under QEMU (TCG) with node 0 = 2 CPUs + 1 GiB and node 1 = 1 GiB of
# CPU-less memory that the guest hot-plugs through dax_hmem -> kmem (a lower memory tier), runs
# the guest scenarios, and judges the log.
# Usage: tests/vm/run.sh [SCENARIO...]   (names as in tests/vm/guest/NN-NAME.sh: NAME or NN-NAME)
# Env: TIMEOUT (whole run, s, default 420), SCENARIO_TIMEOUT (default per-scenario limit, s, 60),
#      NODE0_MB (default 1024), QEMU_EXTRA, KAPPEND (extra kernel arguments).
# Writes target/vm/guest.log. Exit 0 only if the guest reached its end marker, printed at least
# one VMTEST line, and no VMTEST line says FAIL (SKIP is not a failure).
set -uo pipefail
shopt -s lastpipe
cd "$(dirname "$0")/../.."
VM=target/vm
LOG=$VM/guest.log
KERNEL=$VM/cache/vmlinux
INITRD=$VM/initramfs.cpio.gz
for f in "$KERNEL" "$INITRD"; do
    [ -s "$f" ] || { echo "vm-test: $f missing: run tests/vm/setup.sh and tests/vm/build-initramfs.sh" >&2; exit 2; }
done
command -v qemu-system-x86_64 >/dev/null || { echo "vm-test: qemu-system-x86_64 missing: run tests/vm/setup.sh" >&2; exit 2; }

TIMEOUT=${TIMEOUT:-420}
N0=${NODE0_MB:-1024}
ONLY=$(IFS=,; echo "$*")
# node1 starts right after node0. Its first 1022 MiB are marked soft-reserved (E820 type
# 0xefffffff, 2 MiB aligned as dax_hmem needs) and the rest, where QEMU puts the ACPI tables,
# plain reserved, so node 1 has no memory until the guest binds the dax device to kmem.
N1_START=$(printf '0x%x' $((N0 << 20)))
TAIL=$(printf '0x%x' $(((N0 + 1022) << 20)))
APPEND="console=ttyS0 panic=-1 loglevel=4 mitigations=off memmap=1022M%${N1_START}-1+0xefffffff"
APPEND="$APPEND memmap=0x1e0000%${TAIL}-1+2 memhp_default_state=online_movable"
# The emulation's slowdown, for the benchmarks: the guest runs the same CPU-bound command
# (tierkit's own simulator, one thread) and compares its rate with this one from the host.
# Best of three on each side (the host's rate varied 13-20 M/s between single runs).
REF_BENCH="bench --policies tierkit --pages 65536 --accesses 5000000"
HOST_REF=$(for i in 1 2 3; do target/release/tierkit $REF_BENCH 2>/dev/null; done |
    awk '$1 == "tierkit" && $2 > best { best = $2 } END { print best + 0 }')
APPEND="$APPEND vmtest_timeout=${SCENARIO_TIMEOUT:-60} vmtest_host_ref=${HOST_REF:-0}${ONLY:+ vmtest_only=$ONLY}${KAPPEND:+ $KAPPEND}"

mkdir -p "$VM"
# Boots the guest once; sets begin, end (VMTEST_BEGIN / VMTEST_END seen), qemu_rc.
boot() {
: > "$LOG"
begin="" end=""
# shellcheck disable=SC2086
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp 2 \
    -m $((N0 + 1024))M -object memory-backend-ram,id=m0,size=${N0}M -object memory-backend-ram,id=m1,size=1G \
    -numa node,nodeid=0,cpus=0-1,memdev=m0 -numa node,nodeid=1,memdev=m1 \
    -nodefaults -no-user-config -display none -serial stdio -no-reboot \
    -kernel "$KERNEL" -initrd "$INITRD" -append "$APPEND" ${QEMU_EXTRA:-} < /dev/null 2>&1 |
    while IFS= read -r line; do
        line=${line%$'\r'}
        printf '%s\n' "$line" >> "$LOG"
        case "$line" in
            VMTEST_BEGIN*) begin=$EPOCHREALTIME ;;
            VMTEST_END*) end=$EPOCHREALTIME ;;
            VMTEST\ *|VMBENCH\ *) echo "$line" ;;
        esac
    done
qemu_rc=${PIPESTATUS[0]}
}

echo "vm-test: booting $(cat $VM/cache/kernel.env) (TCG, 2 CPUs, node0 ${N0} MiB, node1 1024 MiB CPU-less)${ONLY:+, scenarios: $ONLY}"
# Multi-threaded TCG now and then traps on the kernel's own code patching while it boots
# (seen once in ~40 boots: "Oops: int3" in sched_clock_cpu at 2 s, then a panic). A guest
# that panicked before /init started its scenarios ran nothing: it is booted again, at
# most twice, and the failed boot's log is kept beside the log.
rm -f "$LOG".boot*
for attempt in 1 2 3; do
    start=$EPOCHREALTIME
    boot
    [ -z "$begin" ] && grep -qE 'Kernel panic|Oops' "$LOG" && [ $attempt -lt 3 ] || break
    cp "$LOG" "$LOG.boot$attempt"
    echo "vm-test: boot $attempt panicked before /init ($(grep -m1 -E 'Oops|Kernel panic' "$LOG" | cut -c1-100));" \
        "booting again (log: $LOG.boot$attempt)"
done
finish=$EPOCHREALTIME

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
pass=$(grep -c '^VMTEST [^ ]* PASS' "$LOG")
failed=$(grep -c '^VMTEST [^ ]* FAIL' "$LOG")
skipped=$(grep -c '^VMTEST [^ ]* SKIP' "$LOG")
echo "vm-test: qemu exit $qemu_rc; boot to /init $([ -n "$begin" ] && secs "$start" "$begin" || echo '?') s;" \
    "whole run $(secs "$start" "$finish") s; log $LOG"
# A run that never finished, or ran nothing, counts as one more failure.
harness=0
[ "$qemu_rc" = 124 ] && echo "vm-test: FAIL: QEMU killed after TIMEOUT=${TIMEOUT}s"
if [ -z "$end" ]; then
    echo "vm-test: FAIL: the guest never reached VMTEST_END; last lines of $LOG:"
    tail -25 "$LOG" | sed 's/^/  | /'
    harness=1
fi
if [ $((pass + failed + skipped)) = 0 ]; then
    echo "vm-test: FAIL: no VMTEST line in $LOG"
    harness=1
fi
grep -E 'Kernel panic|BUG: |Oops' "$LOG" | head -5 | sed 's/^/vm-test: kernel: /'
grep '^VMTEST [^ ]* FAIL' "$LOG" | sed 's/^/vm-test: /'
failed=$((failed + harness))
echo "vm-test: $pass passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]

#!/bin/bash
# Boots the test kernel under QEMU (TCG) with node 0 = 2 CPUs + 1 GiB and node 1 = 1 GiB of
# CPU-less memory that the guest hot-plugs through dax_hmem -> kmem (a lower memory tier), runs
# the guest scenarios, and judges the log.
# Usage: tests/vm/run.sh [--bench] [SCENARIO...]
#   the tests, tests/vm/guest/NN-NAME.sh (VMTEST lines), or with --bench the benchmarks,
#   tests/vm/bench/NN-NAME.sh (VMBENCH lines); SCENARIO names one as NAME or NN-NAME.
# Env: TIMEOUT (whole run, s, default 1800, also with --bench), SCENARIO_TIMEOUT (default
#      per-scenario limit, s, 60), NODE0_MB (default 1024), QEMU_EXTRA, KAPPEND (kernel arguments).
# Writes target/vm/guest.log (target/vm/bench.log with --bench). Exit 0 only if the guest reached
# its end marker, printed at least one VMTEST line (with --bench: VMBENCH line), and no VMTEST
# line says FAIL (SKIP is not a failure).
set -uo pipefail
shopt -s lastpipe
cd "$(dirname "$0")/../.."
VM=target/vm
SUITE=guest MARK=VMTEST
if [ "${1:-}" = --bench ]; then SUITE=bench MARK=VMBENCH; shift; fi
P=vm-test LOG=$VM/guest.log
[ $SUITE = bench ] && P=vm-bench LOG=$VM/bench.log
KERNEL=$VM/cache/vmlinux
INITRD=$VM/initramfs.cpio.gz
for f in "$KERNEL" "$INITRD"; do
    [ -s "$f" ] || { echo "$P: $f missing: run tests/vm/setup.sh and tests/vm/build-initramfs.sh" >&2; exit 2; }
done
command -v qemu-system-x86_64 >/dev/null || { echo "$P: qemu-system-x86_64 missing: run tests/vm/setup.sh" >&2; exit 2; }

# The whole run's limit: at least 3.5x the longest whole run measured on this 2-core machine
# while other builds ran beside it (tests/vm/README.md, time limits).
TIMEOUT=${TIMEOUT:-1800}
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
if [ $SUITE = bench ]; then
    REF_BENCH="bench --policies tierkit --pages 65536 --accesses 5000000 --repeat 1"
    HOST_REF=$(for i in 1 2 3; do target/release/tierkit $REF_BENCH 2>/dev/null; done |
        awk '$1 == "tierkit" && $2 > best { best = $2 } END { print best + 0 }')
    APPEND="$APPEND vmtest_host_ref=${HOST_REF:-0}"
fi
APPEND="$APPEND vmtest_suite=$SUITE vmtest_timeout=${SCENARIO_TIMEOUT:-60}${ONLY:+ vmtest_only=$ONLY}${KAPPEND:+ $KAPPEND}"

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

echo "$P: booting $(cat $VM/cache/kernel.env) (TCG, 2 CPUs, node0 ${N0} MiB, node1 1024 MiB CPU-less)${ONLY:+, scenarios: $ONLY}"
# Multi-threaded TCG now and then traps on the kernel's own code patching (an int3 left at
# a text-patch site: seen once in ~40 boots at 2 s in sched_clock_cpu, and once in ~15 whole
# runs at 93 s in task_numa_fault, while a scenario flipped numa_balancing), then the guest
# panics. That is the emulator, not the code under test: a guest that panicked before /init
# started its scenarios, or that panicked on that trap while they ran, is booted again for
# the whole run, at most twice; the failed boot's log is kept beside the log.
emulator_trap() {
    { [ -z "$begin" ] && grep -qE 'Kernel panic|Oops' "$LOG"; } ||
        { [ -z "$end" ] && grep -q 'Oops: int3' "$LOG" && grep -q 'Kernel panic' "$LOG"; }
}
rm -f "$LOG".boot*
for attempt in 1 2 3; do
    start=$EPOCHREALTIME
    boot
    emulator_trap && [ $attempt -lt 3 ] || break
    cp "$LOG" "$LOG.boot$attempt"
    echo "$P: boot $attempt panicked on the emulator's trap ($(grep -m1 -E 'Oops|Kernel panic' "$LOG" | cut -c1-100));" \
        "booting again (log: $LOG.boot$attempt)"
done
finish=$EPOCHREALTIME

secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
pass=$(grep -c '^VMTEST [^ ]* PASS' "$LOG")
failed=$(grep -c '^VMTEST [^ ]* FAIL' "$LOG")
skipped=$(grep -c '^VMTEST [^ ]* SKIP' "$LOG")
marks=$(grep -c "^$MARK " "$LOG")
echo "$P: qemu exit $qemu_rc; boot to /init $([ -n "$begin" ] && secs "$start" "$begin" || echo '?') s;" \
    "whole run $(secs "$start" "$finish") s; log $LOG"
# A run that never finished, or ran nothing, counts as one more failure.
harness=0
[ "$qemu_rc" = 124 ] && echo "$P: FAIL: QEMU killed after TIMEOUT=${TIMEOUT}s"
if [ -z "$end" ]; then
    echo "$P: FAIL: the guest never reached VMTEST_END; last lines of $LOG:"
    tail -25 "$LOG" | sed 's/^/  | /'
    harness=1
fi
if [ "$marks" = 0 ]; then
    echo "$P: FAIL: no $MARK line in $LOG"
    harness=1
fi
grep -E 'Kernel panic|BUG: |Oops' "$LOG" | head -5 | sed "s/^/$P: kernel: /"
grep '^VMTEST [^ ]* FAIL' "$LOG" | sed "s/^/$P: /"
# Each scenario's duration (uptime at its end minus at its start), for the time limits.
echo "$P: durations (s):" $(awk '$1 == "VMSCENARIO" { sub(/uptime=/, "", $4)
    if ($3 == "start") t[$2] = $4; else printf "%s=%.0f ", $2, $4 - t[$2] }' "$LOG")
failed=$((failed + harness))
if [ $SUITE = bench ]; then
    echo "$P: $marks VMBENCH lines, $failed failed"
else
    echo "$P: $pass passed, $failed failed, $skipped skipped"
fi
[ "$failed" = 0 ]

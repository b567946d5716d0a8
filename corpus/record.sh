#!/usr/bin/env bash
# Records corpus programs with `tierkit record --via valgrind` (simulated 32 MiB 16-way LLC,
# recording from the program's TK_START marker, 1 in the program's SAMPLE_EVERY misses kept)
# into corpus/NAME.tktrace (its instruction gaps rounded to the mean gap for storage), with a
# JSON sidecar corpus/NAME.json (program, version, command, input, LLC model, sample rate,
# the unit of the rounded gaps, the trace's records, pages and instructions from
# `tierkit trace info --json`, the wall time from the marker to the end, records/s and trace
# bytes per record).
#
# Usage: corpus/record.sh [--max-records N] [--out DIR] --all | NAME...
#        (NAME: corpus/programs/NAME.sh; --all: every program there)
# Environment: TIERKIT (default target/release/tierkit), TK_CORPUS_WORK (default target/corpus-work).
#
# Inputs are made natively first (NAME.sh setup). A single-process program is recorded as a
# whole; for a server, the server runs under the recorder and the client natively beside it:
# the client loads the data, asks the server to print TK_START, then runs its measured phase
# (record mode: up to RECORD_OPS_FACTOR times the native operations) until it finishes or the
# recorder exits; then the server is stopped and the recorder awaited.
set -euo pipefail
CORPUS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$CORPUS_DIR")
TIERKIT=${TIERKIT:-$ROOT/target/release/tierkit}
WORK_ROOT=${TK_CORPUS_WORK:-$ROOT/target/corpus-work}
MARKER=TK_START
MAX_RECORDS=5000000
OUT_DIR=$CORPUS_DIR
LLC=32MiB
LLC_WAYS=16
export RECORD_OPS_FACTOR=${RECORD_OPS_FACTOR:-20}

usage() { echo "usage: corpus/record.sh [--max-records N] [--out DIR] --all | NAME..." >&2; exit 2; }
names=()
while [ $# -gt 0 ]; do
    case "$1" in
        --max-records) MAX_RECORDS=${2:?--max-records needs a count}; shift 2 ;;
        --out) OUT_DIR=${2:?--out needs a directory}; shift 2 ;;
        --all)
            for f in "$CORPUS_DIR"/programs/*.sh; do names+=("$(basename "$f" .sh)"); done
            shift
            ;;
        -h | --help) usage ;;
        -*) echo "corpus/record.sh: unknown option $1" >&2; usage ;;
        *) names+=("$1"); shift ;;
    esac
done
[ ${#names[@]} -gt 0 ] || usage
[ -x "$TIERKIT" ] || { echo "corpus/record.sh: $TIERKIT not found (cargo build --release -p tierkit)" >&2; exit 1; }
"$TIERKIT" record --help | grep -q -- --start-marker ||
    { echo "corpus/record.sh: $TIERKIT record has no --start-marker (rebuild tierkit)" >&2; exit 1; }
for name in "${names[@]}"; do
    [ -f "$CORPUS_DIR/programs/$name.sh" ] || { echo "corpus/record.sh: no program corpus/programs/$name.sh" >&2; exit 1; }
done
mkdir -p "$OUT_DIR"

# Copies the recorder's output through, writing the time of the first marker line to $1.
stamp_marker() {
    local line
    while IFS= read -r line; do
        [[ $line == *"$MARKER"* && ! -f $1 ]] && date +%s.%N >"$1"
        printf '%s\n' "$line"
    done
}

record_one() (
    local name=$1 script=$CORPUS_DIR/programs/$1.sh
    WORK=$WORK_ROOT/$name
    mkdir -p "$WORK"
    # One run of a program at a time (its input files and port are shared): the lock is
    # the one NAME.sh run and check take.
    exec 9>"$WORK/.lock"
    flock -n 9 || { echo "[$name] waiting for another run of $name to finish" >&2; flock 9; }
    bash "$script" setup "$WORK"
    TK_CORPUS_LIB_ONLY=1
    # shellcheck source=/dev/null
    . "$script"
    mkdir -p "$WORK"
    recorded_cmd
    local trace=$OUT_DIR/$name.tktrace log=$WORK/record.log stamp=$WORK/record.marker-time t0 t1
    local rec=("$TIERKIT" record --via valgrind --llc "$LLC" --llc-ways "$LLC_WAYS"
        --start-marker "$MARKER" --sample-every "$SAMPLE_EVERY" --max-records "$MAX_RECORDS"
        -o "$trace" -- "${CMD[@]}")
    say "recording: ${rec[*]}"
    rm -f "$stamp"
    t0=$(date +%s.%N)
    if [ "$KIND" = server ]; then
        { env "${CMD_ENV[@]}" "${rec[@]}" 2>&1 | stamp_marker "$stamp" >"$log"; } &
        local rpid=$! cpid waited=0
        # Valgrind's start can take minutes; a server that died (see the log) ends the wait.
        until SERVER_WAIT_S=5 server_wait 2>/dev/null; do
            waited=$((waited + 5))
            if ! kill -0 "$rpid" 2>/dev/null || [ "$waited" -ge 600 ]; then
                say "FAIL: the server never answered under the recorder (see $log)"
                tail -5 "$log" >&2
                kill "$rpid" 2>/dev/null || true
                return 1
            fi
        done
        TK_RECORD=1 client >"$WORK/client.log" 2>&1 &
        cpid=$!
        # Whichever ends first: the recorder (max records reached and the server ended) or the client.
        while kill -0 "$rpid" 2>/dev/null && kill -0 "$cpid" 2>/dev/null; do sleep 1; done
        if kill -0 "$cpid" 2>/dev/null; then
            kill "$cpid" 2>/dev/null || true
        fi
        wait "$cpid" || true
        kill -0 "$rpid" 2>/dev/null && server_stop
        wait "$rpid" || { say "FAIL: the recorder failed (see $log)"; tail -5 "$log" >&2; return 1; }
    else
        env "${CMD_ENV[@]}" "${rec[@]}" 2>&1 | stamp_marker "$stamp" >"$log" ||
            { say "FAIL: the recorder failed (see $log)"; tail -5 "$log" >&2; return 1; }
    fi
    t1=$(date +%s.%N)
    [ -f "$stamp" ] || { say "FAIL: the program never printed $MARKER (see $log)"; return 1; }
    # Stored with its clock rounded to the mean gap (docs/TRACES.md: every prefix within one
    # unit of its exact count, the total exact, no result moved).
    "$TIERKIT" trace convert --round-gaps auto "$trace" "$trace.rounded" 2>"$WORK/round.log" &&
        mv "$trace.rounded" "$trace" || { say "FAIL: rounding the gaps failed (see $WORK/round.log)"; return 1; }
    local gap_unit
    gap_unit=$(sed -n 's/.*rounded to \([0-9]*\) instructions.*/\1/p' "$WORK/round.log")
    "$TIERKIT" trace info --json "$trace" >"$WORK/info.json"
    local cmdline
    cmdline=$(printf '%q ' "${CMD_ENV[@]}" "${CMD[@]}")
    python3 - "$WORK/info.json" "$OUT_DIR/$name.json" <<PY
import json, sys
info = json.load(open(sys.argv[1]))
side = {
    "program": "$name",
    "version": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$(version)"),
    "kind": "$KIND",
    "command": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "${cmdline% }"),
    "input": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$INPUT"),
    "llc": {"model": "tierkit record --via valgrind", "size": "$LLC", "ways": $LLC_WAYS},
    "start_marker": "$MARKER",
    "sample_every": $SAMPLE_EVERY,
    "max_records": $MAX_RECORDS,
    "records": info["accesses"],
    "pages": info["pages"],
    "instructions": info.get("instructions"),
    "gap_unit": ${gap_unit:-1},
    "footprint_bytes": info.get("footprint_bytes"),
    "record_wall_s": round($t1 - $t0, 1),
    "recorded_wall_s": round($t1 - $(cat "$stamp"), 1),
    "records_per_s": round(info["accesses"] / max($t1 - $(cat "$stamp"), 1e-3)),
    "trace_bytes": $(stat -c %s "$trace"),
    "bytes_per_record": round($(stat -c %s "$trace") / max(info["accesses"], 1), 2),
    "trace": "$name.tktrace",
}
json.dump(side, open(sys.argv[2], "w"), indent=2)
print(json.dumps(side))
PY
)

for name in "${names[@]}"; do
    record_one "$name"
done

# Sourced by corpus/programs/NAME.sh: installing what a program needs, the work dir, and the
# native run (setup, the recorded process with its TK_START marker timed, peak RSS).
#
# A program script sets NAME, KIND (single | server), SAMPLE_EVERY, INPUT (one line), and
# defines setup (install + deterministic input under $WORK), recorded_cmd (sets CMD_ENV and
# CMD: the process that is recorded and that writes the marker), version (one line), and for
# KIND=server also server_wait, client (load, marker request, measured phase) and server_stop.
# It ends with `corpus_main "$@"`, which gives every program these commands:
#   NAME.sh [run] [WORK]  install, make the input, run natively (marker timing, peak RSS)
#   NAME.sh setup [WORK]  install and make the input only (what record.sh runs first)
#   NAME.sh check [WORK]  run natively under strace and check that the marker is one write(2)
#                         by the process that is recorded (corpus/drivers/check_marker.py)
#   NAME.sh client [WORK] (servers) the client alone, against a server already running
set -euo pipefail
CORPUS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$CORPUS_DIR")
VENV=${TK_CORPUS_VENV:-$ROOT/target/corpus-venv}
PY=$VENV/bin/python
MARKER=TK_START
CMD_ENV=()
CMD=()

say() { printf '[%s] %s\n' "$NAME" "$*" >&2; }

# Debian packages, installed when missing.
need_apt() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2 ||
        { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2; }
}

# The corpus venv (Debian's python3 + corpus/requirements.txt), rebuilt when the pins change.
need_venv() {
    need_apt python3 python3-venv
    local stamp
    stamp="$VENV/.corpus-$(sha256sum "$CORPUS_DIR/requirements.txt" | cut -c1-16)"
    [ -f "$stamp" ] && return 0
    say "creating $VENV"
    /usr/bin/python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check -r "$CORPUS_DIR/requirements.txt" >&2
    rm -f "$VENV"/.corpus-*
    touch "$stamp"
}

# The LD_PRELOAD marker for programs that cannot print one (corpus/marker/tk_marker.c),
# built into $WORK. Sets MARKER_SO.
need_marker_shim() {
    need_apt gcc
    MARKER_SO=$WORK/tk_marker.so
    if [ ! -f "$MARKER_SO" ] || [ "$CORPUS_DIR/marker/tk_marker.c" -nt "$MARKER_SO" ]; then
        gcc -O2 -shared -fPIC -o "$MARKER_SO" "$CORPUS_DIR/marker/tk_marker.c"
    fi
}

# Runs the recorded process natively under $WRAP (/usr/bin/time -v, or strace for `check`),
# its stdout passed through a filter that counts marker lines and stamps the first one.
# Writes $WORK/native.txt: markers, load_s (start to marker), measured_s (marker to end),
# rss_kib (peak RSS), cpu_s (the whole process's user + system time); under `check`, the
# marker check instead.
run_native_recorded() {
    local t0 tm="" n=0 line
    t0=$(date +%s.%N)
    while IFS= read -r line; do
        if [[ $line == *"$MARKER"* ]]; then
            n=$((n + 1))
            [ -n "$tm" ] || tm=$(date +%s.%N)
        fi
        printf '%s\n' "$line"
    done < <(env "${CMD_ENV[@]}" "${WRAP[@]}" "${CMD[@]}")
    finish_native "$t0" "${tm:-}" "$n" "$(date +%s.%N)"
}

finish_native() {
    local t0=$1 tm=$2 n=$3 t1=$4 rss cpu
    if [ -n "${CHECK:-}" ]; then
        python3 "$CORPUS_DIR/drivers/check_marker.py" "$WORK/strace.txt" "$MARKER" | tee "$WORK/marker-check.txt" >&2
        return
    fi
    rss=$(sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$WORK/time-v.txt")
    cpu=$(sed -n 's/^\s*\(User\|System\) time (seconds): //p' "$WORK/time-v.txt" | paste -sd+)
    if [ -z "$tm" ]; then
        say "FAIL: no $MARKER line"
        return 1
    fi
    python3 - "$t0" "$tm" "$t1" "$n" "$rss" "$cpu" >"$WORK/native.txt" <<'PY'
import sys
t0, tm, t1 = map(float, sys.argv[1:4])
print(f"markers {sys.argv[4]}\nload_s {tm - t0:.2f}\nmeasured_s {t1 - tm:.2f}\nrss_kib {sys.argv[5]}\n"
      f"cpu_s {sum(map(float, sys.argv[6].split('+'))):.2f}")
PY
    say "native: $(tr '\n' ' ' <"$WORK/native.txt")"
    [ "$n" -eq 1 ] || { say "FAIL: $n marker lines (want 1)"; return 1; }
}

# A server program natively: the server under /usr/bin/time -v with its stdout and stderr filtered as
# above, the client against it, then the server stopped.
run_native_server() {
    local fifo=$WORK/server.stdout t0 t1
    rm -f "$fifo" "$WORK/marker.times"
    mkfifo "$fifo"
    t0=$(date +%s.%N)
    env "${CMD_ENV[@]}" "${WRAP[@]}" "${CMD[@]}" >"$fifo" 2>&1 &
    local spid=$!
    while IFS= read -r line; do
        [[ $line == *"$MARKER"* ]] && date +%s.%N >>"$WORK/marker.times"
        printf '%s\n' "$line" >&2
    done <"$fifo" &
    local rpid=$!
    server_wait
    client "$@"
    t1=$(date +%s.%N)
    server_stop
    wait "$spid" || true
    wait "$rpid" || true
    rm -f "$fifo"
    local n=0 tm=""
    if [ -f "$WORK/marker.times" ]; then
        n=$(wc -l <"$WORK/marker.times")
        tm=$(head -1 "$WORK/marker.times")
    fi
    finish_native "$t0" "$tm" "$n" "$t1"
}

corpus_main() {
    [ -n "${TK_CORPUS_LIB_ONLY:-}" ] && return 0
    local action=run
    case "${1:-}" in
        setup | run | client | check) action=$1; shift ;;
    esac
    WORK=$(realpath -m "${1:-$ROOT/target/corpus-work/$NAME}")
    [ $# -gt 0 ] && shift
    mkdir -p "$WORK"
    case "$action" in
        setup) setup ;;
        client) client "$@" ;;
        run | check)
            exec 9>"$WORK/.lock"
            flock -n 9 || { say "waiting for another run of $NAME to finish"; flock 9; }
            setup
            WRAP=(/usr/bin/time -v -o "$WORK/time-v.txt")
            if [ "$action" = check ]; then
                need_apt strace
                CHECK=1
                WRAP=(strace -f -qq -s 256 -o "$WORK/strace.txt"
                    -e trace=write,writev,clone,clone3,fork,vfork,execve)
            fi
            recorded_cmd
            say "$(version); recording would sample 1 in $SAMPLE_EVERY"
            if [ "$KIND" = server ]; then run_native_server "$@"; else run_native_recorded; fi
            ;;
    esac
}

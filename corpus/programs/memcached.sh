#!/usr/bin/env bash
# Key-value store: Debian's memcached (2 worker threads, 2 GiB of item memory) under the
# YCSB-like client (corpus/drivers/kv_client.py): load 1M keys of 512 B, then 90% get / 10%
# set over YCSB's scrambled Zipfian keys (0.99), pipelined 32 deep. The server is the
# recorded process: after the load the client sends `verbosity 2`, `get TK_START`,
# `verbosity 0`, and the server logs "<fd get TK_START" to its stderr with one write(2).
NAME=memcached
KIND=server
SAMPLE_EVERY=4
PORT=${TK_MEMCACHED_PORT:-11299}
KEYS=1000000
VALUE=512
OPS=800000
INPUT="1M keys x 512 B loaded by set; 90% get / 10% set, scrambled Zipfian 0.99, pipeline 32"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() { need_apt memcached python3; }

# memcached sets its descriptor limit, soft and hard, to exactly -c; Valgrind refuses any
# hard limit but the one it shows its client, min(soft + 12, hard) - 12 (it keeps 12
# descriptors for itself), so -c is that number (19988 under `ulimit -n 20000`).
valgrind_fd_limit() {
    local soft hard
    soft=$(ulimit -Sn)
    hard=$(ulimit -Hn)
    [ "$hard" = unlimited ] && hard=$((soft + 12))
    [ "$soft" = unlimited ] && soft=$hard
    echo $(($((soft + 12 < hard ? soft + 12 : hard)) - 12))
}

recorded_cmd() { CMD=(memcached -p "$PORT" -l 127.0.0.1 -U 0 -m 2048 -t 2 -c "$(valgrind_fd_limit)" -u root -A); }

version() { memcached -V; }

server_wait() {
    local i
    for ((i = 0; i < ${SERVER_WAIT_S:-30} * 10; i++)); do
        python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $PORT), 1).close()" 2>/dev/null && return 0
        sleep 0.1
    done
    say "FAIL: memcached did not answer on port $PORT"
    return 1
}

server_stop() {
    python3 -c "import socket; s=socket.create_connection(('127.0.0.1', $PORT), 5); s.sendall(b'shutdown\r\n'); s.recv(64)" 2>/dev/null || true
}

# Under record.sh (TK_RECORD set) the measured phase runs RECORD_OPS_FACTOR times longer:
# the recorder, not the client, ends it.
client() {
    local ops=$OPS
    [ -z "${TK_RECORD:-}" ] || ops=$((OPS * RECORD_OPS_FACTOR))
    python3 "$CORPUS_DIR/drivers/kv_client.py" memcached "$PORT" "$KEYS" "$VALUE" "$ops" 90 32 7
}

corpus_main "$@"

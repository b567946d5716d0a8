#!/usr/bin/env bash
# Key-value store: Debian's redis-server (one I/O thread, no persistence) under a YCSB-like
# client (corpus/drivers/kv_client.py): load 1M keys of 512 B, then 90% GET / 10% SET over
# YCSB's scrambled Zipfian keys (0.99), pipelined 32 deep. The server is the recorded
# process: after the load the client sends DEBUG LOG TK_START (--enable-debug-command), which
# the server writes to its log on stdout with one write(2).
NAME=redis
KIND=server
SAMPLE_EVERY=8
PORT=${TK_REDIS_PORT:-6399}
KEYS=1000000
VALUE=512
OPS=800000
INPUT="1M keys x 512 B loaded by SET; 90% GET / 10% SET, scrambled Zipfian 0.99, pipeline 32"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() { need_apt redis-server redis-tools python3; }

recorded_cmd() {
    CMD=(redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no
        --logfile "" --dir "$WORK" --enable-debug-command yes --io-threads 1)
}

version() { redis-server --version | cut -d' ' -f1-3; }

server_wait() {
    local i
    for ((i = 0; i < ${SERVER_WAIT_S:-30} * 10; i++)); do
        [ "$(redis-cli -p "$PORT" ping 2>/dev/null)" = PONG ] && return 0
        sleep 0.1
    done
    say "FAIL: redis-server did not answer on port $PORT"
    return 1
}

server_stop() { redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; }

# Under record.sh (TK_RECORD set) the measured phase runs RECORD_OPS_FACTOR times longer:
# the recorder, not the client, ends it.
client() {
    local ops=$OPS
    [ -z "${TK_RECORD:-}" ] || ops=$((OPS * RECORD_OPS_FACTOR))
    python3 "$CORPUS_DIR/drivers/kv_client.py" redis "$PORT" "$KEYS" "$VALUE" "$ops" 90 32 7
}

corpus_main "$@"

#!/usr/bin/env bash
# Interpreter: Debian's CPython 3.11 (/usr/bin/python3) running pure-Python data processing
# (corpus/drivers/pyworkload.py): json.load of a seeded 300k-order shop export, TK_START, then
# dict aggregations, a join, sorts, per-user histories, a text report and status updates.
NAME=cpython
KIND=single
SAMPLE_EVERY=8
ORDERS=300000
ROUNDS=3
INPUT="seeded JSON shop export: 100k users, 300k orders of 1-6 items; $ROUNDS rounds of aggregation/join/sort/report"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_apt python3
    /usr/bin/python3 "$CORPUS_DIR/drivers/pyworkload.py" setup "$WORK" "$ORDERS"
}

# -S: no site packages, so nothing beyond the standard library is imported.
recorded_cmd() { CMD=(/usr/bin/python3 -S "$CORPUS_DIR/drivers/pyworkload.py" run "$WORK" "$ORDERS" "$ROUNDS"); }

version() { /usr/bin/python3 --version; }

corpus_main "$@"

#!/usr/bin/env bash
# Analytical query engine: DuckDB (PyPI) on TPC-H-like data it generates itself at scale
# factor 1 (corpus/drivers/duckdb_tpch.py; lineitem 6M rows). The recorded process opens the
# database read-only, runs each query once (warm-up), writes TK_START, then runs TPC-H
# queries 1, 3, 5, 6, 10, 12, 14, 18 four times on one thread.
NAME=duckdb
KIND=single
SAMPLE_EVERY=2
SF=1
ROUNDS=4
INPUT="TPC-H-like tables at SF $SF generated with hash() (lineitem 6M rows), queries 1,3,5,6,10,12,14,18 x $ROUNDS, 1 thread"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_venv
    OMP_NUM_THREADS=1 "$PY" "$CORPUS_DIR/drivers/duckdb_tpch.py" setup "$WORK" "$SF"
}

recorded_cmd() { CMD=("$PY" "$CORPUS_DIR/drivers/duckdb_tpch.py" run "$WORK" "$SF" "$ROUNDS"); }

version() { echo "duckdb $("$PY" -c 'import duckdb; print(duckdb.__version__)')"; }

corpus_main "$@"

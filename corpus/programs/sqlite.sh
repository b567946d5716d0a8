#!/usr/bin/env bash
# Relational database: Debian's sqlite3 shell under a sysbench-like OLTP mix
# (corpus/drivers/sqlite_oltp.py): 4 tables x 500k rows (~430 MB file), a 1 GiB page cache
# warmed by full table and index scans, then 12k read-write transactions (point selects,
# range scans, updates, delete + insert; 75% of ids on a hot 1%). The script prints TK_START
# with `.print` between warm-up and transactions; libstdbuf (coreutils, what `stdbuf -oL`
# preloads) makes sqlite3's stdout line-buffered so the line is one write(2) right then.
NAME=sqlite
KIND=single
SAMPLE_EVERY=4
TABLES=4
ROWS=500000
TXNS=12000
INPUT="sysbench-like: 4 tables x 500k rows (~430 MB), 12k oltp_read_write transactions, 75% of ids on a hot 1%"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_apt sqlite3 python3 coreutils
    if [ ! -f "$WORK/base.db" ]; then
        python3 "$CORPUS_DIR/drivers/sqlite_oltp.py" "$WORK" "$TABLES" "$ROWS" "$TXNS" 1
        rm -f "$WORK/base.db.tmp"
        sqlite3 -batch -bail "$WORK/base.db.tmp" ".read $WORK/build.sql"
        mv "$WORK/base.db.tmp" "$WORK/base.db"
    fi
    # The transactions change the database: each run starts from the same bytes.
    cp "$WORK/base.db" "$WORK/run.db"
}

recorded_cmd() {
    CMD_ENV=(LD_PRELOAD=/usr/libexec/coreutils/libstdbuf.so _STDBUF_O=L)
    CMD=(sqlite3 -batch -bail "$WORK/run.db" ".read $WORK/run.sql")
}

version() { echo "sqlite3 $(sqlite3 --version | cut -d' ' -f1)"; }

corpus_main "$@"

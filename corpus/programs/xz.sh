#!/usr/bin/env bash
# Compression: Debian's xz -9 (64 MiB dictionary, bt4 match finder, one thread) on 16 MiB
# of mixed text (Python sources, web logs, CSV; corpus/drivers/gen_text.py, seed 42).
# xz cannot print a marker: corpus/marker/tk_marker.c, preloaded, writes TK_START from xz's
# own process before main, so the whole compression is the measured phase.
NAME=xz
KIND=single
SAMPLE_EVERY=1
INPUT="16 MiB of generated mixed text (gen_text.py, seed 42), xz -9 -T1"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_apt xz-utils python3 gcc
    need_marker_shim
    [ -f "$WORK/text16.bin" ] || python3 "$CORPUS_DIR/drivers/gen_text.py" "$WORK/text16.bin" 16 42
}

recorded_cmd() {
    MARKER_SO=$WORK/tk_marker.so
    CMD_ENV=(LD_PRELOAD="$MARKER_SO" TK_MARKER_EXE=xz)
    CMD=(xz -9 -T1 -k -f -- "$WORK/text16.bin")
}

version() { xz --version | head -1; }

corpus_main "$@"

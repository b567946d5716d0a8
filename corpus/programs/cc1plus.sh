#!/usr/bin/env bash
# Compiler: Debian's GCC 12 C++ compiler proper (cc1plus, as g++ runs it) at -O2 -std=c++20
# on a template-heavy translation unit (corpus/inputs/heavy.cpp: Boost.Geometry, Boost.Spirit
# X3, std::regex, ranges, variant), preprocessed once in setup so the recorded process is
# cc1plus alone. cc1plus cannot print a marker: corpus/marker/tk_marker.c, preloaded, writes
# TK_START from cc1plus's own process before main, so the whole compilation is recorded.
NAME=cc1plus
KIND=single
SAMPLE_EVERY=4
INPUT="corpus/inputs/heavy.cpp preprocessed (~11 MB of Boost and libstdc++ headers), -O2 -std=c++20"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_apt g++ libboost1.74-dev gcc
    need_marker_shim
    g++ -std=c++20 -O2 -E "$CORPUS_DIR/inputs/heavy.cpp" -o "$WORK/heavy.ii"
}

recorded_cmd() {
    CMD_ENV=(LD_PRELOAD="$WORK/tk_marker.so" TK_MARKER_EXE=cc1plus)
    CMD=("$(g++ -print-prog-name=cc1plus)" -quiet -fpreprocessed -std=c++20 -O2 "$WORK/heavy.ii" -o "$WORK/heavy.s")
}

version() { g++ --version | head -1; }

corpus_main "$@"

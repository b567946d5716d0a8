#!/usr/bin/env bash
# Numeric array code: numpy (PyPI) kernels on arrays of hundreds of MB
# (corpus/drivers/numpy_kernels.py): sort of 16M doubles, FFT of 2^22 complex values, 5-point
# stencil on a 4096x4096 grid, 2048x2048 matrix product (OpenBLAS, one thread), random gather,
# histogram. The recorded process builds its seeded arrays, writes TK_START, runs two rounds.
NAME=numpy
KIND=single
SAMPLE_EVERY=64
ROUNDS=2
INPUT="seeded arrays: 16M float64 vector, 4096^2 grid, 2048^2 matrices, 8M indices; $ROUNDS rounds"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() { need_venv; }

recorded_cmd() {
    CMD_ENV=(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
    CMD=("$PY" "$CORPUS_DIR/drivers/numpy_kernels.py" "$ROUNDS" 3)
}

version() { echo "numpy $("$PY" -c 'import numpy; print(numpy.__version__)')"; }

corpus_main "$@"

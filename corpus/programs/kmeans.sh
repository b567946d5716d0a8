#!/usr/bin/env bash
# ML training, clustering: scikit-learn (PyPI) KMeans (Lloyd, 64 clusters, features as
# float64), one thread, on 1M rows x 28 features of a seeded HIGGS-like set
# (corpus/drivers/ml_data.py). The recorded process loads the arrays and prepares the
# training data (the load phase), writes TK_START, then trains 15 rounds
# (corpus/drivers/ml_train.py).
NAME=kmeans
KIND=single
SAMPLE_EVERY=8
ROWS=1000000
ROUNDS=15
INPUT="HIGGS-like 1M x 28 float32 (ml_data.py, seed 11); 15 rounds, 1 thread"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_venv
    "$PY" "$CORPUS_DIR/drivers/ml_data.py" "$WORK" "$ROWS"
}

recorded_cmd() {
    CMD_ENV=(OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
    CMD=("$PY" "$CORPUS_DIR/drivers/ml_train.py" kmeans "$WORK" "$ROWS" "$ROUNDS")
}

version() { echo "sklearn $("$PY" -c 'import sklearn; print(sklearn.__version__)')"; }

corpus_main "$@"

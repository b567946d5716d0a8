#!/usr/bin/env bash
# Graph analytics: python-igraph (PyPI, C core) on a Barabasi-Albert graph of 1M vertices and
# 4M edges (corpus/drivers/igraph_graph.py). The recorded process reads the edge list, writes
# TK_START, then runs BFS from 4 roots, PageRank, connected components and k-core.
NAME=igraph
KIND=single
SAMPLE_EVERY=32
N=1000000
M=4
ROUNDS=1
INPUT="Barabasi-Albert graph, 1M vertices x 4 edges each (seed 2024); BFS x4, PageRank, components, coreness, x $ROUNDS"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

setup() {
    need_venv
    "$PY" "$CORPUS_DIR/drivers/igraph_graph.py" setup "$WORK" "$N" "$M"
}

recorded_cmd() {
    CMD_ENV=(OMP_NUM_THREADS=1)
    CMD=("$PY" "$CORPUS_DIR/drivers/igraph_graph.py" run "$WORK" "$N" "$M" "$ROUNDS")
}

version() { echo "igraph $("$PY" -c 'import igraph; print(igraph.__version__)')"; }

corpus_main "$@"

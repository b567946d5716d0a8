"""python-igraph (C core) graph analytics on a Barabasi-Albert power-law graph.

setup: a BA graph of N vertices, M edges per new vertex (igraph's generator with Python's
random seeded), written as WORK/ba-N-M.edges (igraph's edge-list text format).
run: reads the edge list (the load phase), writes TK_START, then runs ROUNDS rounds of: BFS
from 4 seeded roots, PageRank (PRPACK), connected components and k-core decomposition.

Usage: igraph_graph.py setup|run WORK [N] [M] [ROUNDS]
"""
import os
import random
import sys
import time

import igraph

from tk_marker import start_marker


def main():
    mode, work = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
    m = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    path = os.path.join(work, f"ba-{n}-{m}.edges")
    if mode == "setup":
        if not os.path.exists(path):
            random.seed(2024)
            igraph.set_random_number_generator(random)
            g = igraph.Graph.Barabasi(n, m)
            g.write_edgelist(path + ".tmp")
            os.replace(path + ".tmp", path)
        return
    g = igraph.Graph.Read_Edgelist(path, directed=False)
    rng = random.Random(7)
    start_marker()
    t0, c0 = time.monotonic(), time.process_time()
    for _ in range(rounds):
        for _ in range(4):
            g.bfs(rng.randrange(g.vcount()))
        g.pagerank()
        g.connected_components()
        g.coreness()
    print(f"measured: {rounds} rounds on {g.vcount()} vertices, {g.ecount()} edges in "
          f"{time.monotonic() - t0:.1f} s (cpu {time.process_time() - c0:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()

"""numpy array kernels on arrays of hundreds of MB, one BLAS thread.

Load phase: seeded arrays (16M float64 values, a 4096x4096 grid, 2048x2048 matrices, 8M
random indices). Then TK_START and ROUNDS rounds of: a sort of the 128 MB vector, an FFT of
2^22 complex values, 10 Jacobi sweeps of a 5-point stencil on the grid, a matrix product, a
random gather from the vector and a histogram of it.

Usage: numpy_kernels.py [ROUNDS] [SEED]
"""
import sys
import time

import numpy as np

from tk_marker import start_marker


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    vec = rng.standard_normal(16 << 20)
    grid = rng.random((4096, 4096))
    a, b = rng.random((2048, 2048)), rng.random((2048, 2048))
    idx = rng.integers(0, vec.size, 8 << 20)
    start_marker()
    t0, c0 = time.monotonic(), time.process_time()
    for _ in range(rounds):
        s = np.sort(vec)
        f = np.fft.fft(vec[: 1 << 22] + 1j * vec[1 << 22: 2 << 22])
        g = grid.copy()
        for _ in range(10):
            g[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:])
        c = a @ b
        gathered = vec[idx].sum()
        hist, _ = np.histogram(vec, bins=1000)
        vec += 1e-9 * s[::-1]  # the next round sorts different data
        del s, f, g, c
    print(f"measured: {rounds} rounds in {time.monotonic() - t0:.1f} s (cpu {time.process_time() - c0:.1f} s); "
          f"{gathered:.3f} {hist[500]}", file=sys.stderr)


if __name__ == "__main__":
    main()

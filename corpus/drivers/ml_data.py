"""A HIGGS-like binary classification set for the ML programs: ROWS x FEATURES float32,
features from a seeded mix of Gaussians, uniforms and products; the label from a fixed
nonlinear score plus noise. Written once as WORK/X-ROWS.npy and WORK/y-ROWS.npy.

Usage: ml_data.py WORK [ROWS] [FEATURES] [SEED]
"""
import os
import sys

import numpy as np


def paths(work, rows):
    return os.path.join(work, f"X-{rows}.npy"), os.path.join(work, f"y-{rows}.npy")


def main():
    work = sys.argv[1]
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    feats = int(sys.argv[3]) if len(sys.argv) > 3 else 28
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 11
    xp, yp = paths(work, rows)
    if os.path.exists(xp) and os.path.exists(yp):
        return
    rng = np.random.default_rng(seed)
    x = np.empty((rows, feats), dtype=np.float32)
    for j in range(feats):
        kind = j % 4
        if kind == 0:
            x[:, j] = rng.normal(0, 1 + j / 10, rows)
        elif kind == 1:
            x[:, j] = rng.uniform(-3, 3, rows)
        elif kind == 2:
            x[:, j] = rng.exponential(1.0, rows)
        else:
            x[:, j] = x[:, j - 1] * x[:, j - 3] + rng.normal(0, 0.5, rows)
    w = rng.normal(0, 1, feats)
    score = x @ w / np.sqrt(feats) + np.sin(x[:, 0] * x[:, 1]) + (x[:, 2] > 1.5) * 1.2 - 0.5 * x[:, 3] ** 2 / 10
    y = (score + rng.logistic(0, 1, rows) > 0).astype(np.float32)
    np.save(xp + ".tmp.npy", x)
    np.save(yp + ".tmp.npy", y)
    os.replace(xp + ".tmp.npy", xp)
    os.replace(yp + ".tmp.npy", yp)


if __name__ == "__main__":
    main()

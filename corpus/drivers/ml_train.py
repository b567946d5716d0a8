"""Gradient-boosting and clustering training on the ml_data.py set, one thread.

xgboost: builds a QuantileDMatrix (the load phase: quantile sketch and binning), writes
TK_START, trains ROUNDS trees with tree_method=hist, depth 8, 256 bins.
lightgbm: constructs the Dataset (binning), writes TK_START, trains ROUNDS trees with 255
leaves.
kmeans: scikit-learn KMeans (Lloyd) on the features widened to float64, 64 clusters started
from 64 seeded random rows; TK_START, then ROUNDS Lloyd iterations.

Usage: ml_train.py xgboost|lightgbm|kmeans WORK ROWS ROUNDS
"""
import sys
import time

import numpy as np

import ml_data
from tk_marker import start_marker


def main():
    which, work, rows, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    xp, yp = ml_data.paths(work, rows)
    x, y = np.load(xp), np.load(yp)
    if which == "xgboost":
        import xgboost as xgb
        dtrain = xgb.QuantileDMatrix(x, y, max_bin=256, nthread=1)
        params = {"tree_method": "hist", "max_depth": 8, "eta": 0.1, "objective": "binary:logistic",
                  "nthread": 1, "seed": 0, "eval_metric": "logloss"}
        run = lambda: xgb.train(params, dtrain, num_boost_round=rounds)
    elif which == "lightgbm":
        import lightgbm as lgb
        dtrain = lgb.Dataset(x, y, params={"max_bin": 255, "verbose": -1}).construct()
        params = {"objective": "binary", "num_leaves": 255, "learning_rate": 0.1, "num_threads": 1,
                  "seed": 0, "verbose": -1, "deterministic": True}
        run = lambda: lgb.train(params, dtrain, num_boost_round=rounds)
    elif which == "kmeans":
        from sklearn.cluster import KMeans
        x64 = x.astype(np.float64)
        centers = x64[np.random.default_rng(0).choice(rows, 64, replace=False)]
        km = KMeans(n_clusters=64, init=centers, n_init=1, max_iter=rounds, tol=0.0, algorithm="lloyd")
        run = lambda: km.fit(x64)
    else:
        sys.exit(f"ml_train.py: unknown program {which!r} (xgboost, lightgbm or kmeans)")
    start_marker()
    t0, c0 = time.monotonic(), time.process_time()
    run()
    print(f"measured: {which} {rounds} rounds on {rows} rows in {time.monotonic() - t0:.1f} s "
          f"(cpu {time.process_time() - c0:.1f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()

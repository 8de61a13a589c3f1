#!/usr/bin/env python3
"""kdforge's Python module against scipy.spatial.cKDTree (all cores) and,
where CuPy is installed, cupyx.scipy.spatial.KDTree: build and k-nearest
query times as a Python user sees them (call overhead, conversions and, on
a GPU, the wait for the device included), with a sample of the results
verified against scipy.

    PYTHONPATH=build/python python3 python/bench.py                  # 1M x 1M, k = 8, float32, 3-D
    PYTHONPATH=build/python python3 python/bench.py --n 100000 --m 100000 --reps 3

Prints one row per library and kind of input: median build and query
times over --reps runs after a warm-up, the query's speed-up over scipy's,
and how many of the sampled rows agree with scipy's (distances within
rounding, indices wherever the distances are not tied).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

# python/kdforge beside this script is the source package, without the
# compiled module: import the built or installed one instead
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000, help="points in the tree (default 1000000)")
    p.add_argument("--m", type=int, default=1_000_000, help="query points (default 1000000)")
    p.add_argument("--k", type=int, default=8, help="neighbours per query (default 8)")
    p.add_argument("--dim", type=int, default=3, help="dimension (default 3)")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--dist", choices=["uniform", "clustered"], default="uniform",
                   help="uniform in the unit cube, or tight Gaussian clusters")
    p.add_argument("--builder", default=None, help="kdforge's builder (default: by dimension)")
    p.add_argument("--reps", type=int, default=5, help="timed runs of each step (median reported)")
    p.add_argument("--verify", type=int, default=1000, help="rows checked against scipy (0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-scipy", action="store_true", help="leave scipy out (verification by brute force)")
    p.add_argument("--no-cupyx", action="store_true", help="leave cupyx out")
    p.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    return p.parse_args()


def make(dist, n, dim, rng):
    if dist == "uniform":
        return rng.random((n, dim))
    centres = rng.random((max(1, n // 1000), dim))
    return centres[rng.integers(0, len(centres), n)] + rng.normal(scale=0.002, size=(n, dim))


def timed(fn, reps, sync=lambda: None):
    """Median seconds of reps calls after one warm-up, and the last result."""
    out = fn()
    sync()
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        out = fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def verify(points, queries, rows, d, i, k, ref_d, ref_i):
    """How many of the sampled rows agree with the reference: distances
    within rounding of the tree's type, indices where not tied."""
    rtol = 2e-5 if d.dtype == np.float32 else 1e-12
    good = 0
    for j, q in enumerate(rows):
        dd, ii = np.asarray(d[q], dtype=np.float64), np.asarray(i[q])
        rd, ri = ref_d[j], ref_i[j]
        ok = np.allclose(dd, rd, rtol=rtol, atol=1e-6 if d.dtype == np.float32 else 1e-13)
        actual = np.linalg.norm(points[ii] - queries[q], axis=1)
        ok &= np.allclose(actual, dd, rtol=rtol, atol=1e-6 if d.dtype == np.float32 else 1e-13)
        gaps = np.diff(np.concatenate([[-np.inf], rd, [np.inf]]))
        clear = (gaps[:-1] > 8 * rtol * rd) & (gaps[1:] > 8 * rtol * rd)
        ok &= bool((ii[clear] == ri[clear]).all())
        good += bool(ok)
    return good


def main():
    a = parse()
    # With OMP_PROC_BIND set, the OpenMP runtime binds this (the main) thread
    # to one core when kdforge loads it, and threads started from it later
    # (scipy's workers) inherit that core: scipy runs with the cores the
    # process had before.
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    import kdforge

    kdforge.initialize()
    info = kdforge.runtime_info()
    dtype = np.dtype(a.dtype)
    rng = np.random.default_rng(a.seed)
    pts = make(a.dist, a.n, a.dim, rng).astype(dtype)
    qs = make(a.dist, a.m, a.dim, rng).astype(dtype)
    sample = np.sort(rng.choice(a.m, size=min(a.verify, a.m), replace=False)) if a.verify else np.array([], int)

    print(f"# kdforge {kdforge.__version__} ({info['backend']}, concurrency {info['concurrency']}), "
          f"Python {platform.python_version()}, NumPy {np.__version__}, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs" + (f" ({len(cores)} usable)" if cores is not None and len(cores) != os.cpu_count() else ""))
    print(f"# n = {a.n}, m = {a.m}, k = {a.k}, {a.dim}-D {a.dist} {a.dtype}, median of {a.reps} after a warm-up")

    scipy_spatial = None
    if not a.no_scipy:
        try:
            import scipy
            import scipy.spatial as scipy_spatial
        except ImportError:
            print("# scipy not installed: left out, verification by brute force")
    ref_d = ref_i = None
    if len(sample):
        p64 = pts.astype(np.float64)
        if scipy_spatial is not None:
            ref_d, ref_i = scipy_spatial.cKDTree(p64).query(qs[sample].astype(np.float64), k=a.k, workers=-1)
        else:
            dist = np.linalg.norm(p64[None, :, :] - qs[sample].astype(np.float64)[:, None, :], axis=2)
            ref_i = np.argsort(dist, axis=1, kind="stable")[:, :a.k]
            ref_d = np.take_along_axis(dist, ref_i, axis=1)
        ref_d, ref_i = ref_d.reshape(len(sample), a.k), ref_i.reshape(len(sample), a.k)
    p64 = pts.astype(np.float64)

    rows = []

    def row(lib, inputs, build_s, query_s, d, i):
        checked = verify(p64, qs.astype(np.float64), sample, d, i, a.k, ref_d, ref_i) if len(sample) else 0
        rows.append(dict(library=lib, inputs=inputs, build_ms=build_s * 1e3, query_ms=query_s * 1e3,
                         verified=checked, sampled=len(sample)))

    # kdforge with NumPy arrays (on a GPU build: copied to the device and back)
    build_s, tree = timed(lambda: kdforge.KDTree(pts, builder=a.builder), a.reps)
    query_s, (d, i) = timed(lambda: tree.query(qs, k=a.k), a.reps)
    row(f"kdforge ({info['backend']}, {tree.builder})", "numpy", build_s, query_s, d, i)
    del tree

    cp = None
    if info["gpu"] or not a.no_cupyx:
        try:
            import cupy as cp
            cp.cuda.runtime.getDeviceCount()
        except Exception:
            cp = None
    if cp is not None:
        sync = cp.cuda.Device().synchronize
        dp, dq = cp.asarray(pts), cp.asarray(qs)
        if info["gpu"]:
            build_s, tree = timed(lambda: kdforge.KDTree(dp, builder=a.builder), a.reps, sync)
            query_s, (d, i) = timed(lambda: tree.query(dq, k=a.k), a.reps, sync)
            row(f"kdforge ({info['backend']}, {tree.builder})", "cupy", build_s, query_s, cp.asnumpy(d), cp.asnumpy(i))
            del tree, d, i
        if not a.no_cupyx:
            try:
                from cupyx.scipy.spatial import KDTree as CupyxKDTree
            except ImportError:
                CupyxKDTree = None
                print("# cupyx.scipy.spatial.KDTree not available (CuPy >= 13)")
            if CupyxKDTree is not None:
                build_s, ctree = timed(lambda: CupyxKDTree(dp), a.reps, sync)
                query_s, (d, i) = timed(lambda: ctree.query(dq, k=a.k), a.reps, sync)
                row(f"cupyx.scipy.spatial.KDTree (CuPy {cp.__version__})", "cupy", build_s, query_s,
                    cp.asnumpy(d).reshape(a.m, a.k).astype(dtype), cp.asnumpy(i).reshape(a.m, a.k))
                del ctree

    if scipy_spatial is not None:
        if cores is not None and os.sched_getaffinity(0) != cores:
            print(f"# the OpenMP runtime bound the main thread to {len(os.sched_getaffinity(0))} of "
                  f"{len(cores)} cores (OMP_PROC_BIND): scipy gets all {len(cores)} back")
            os.sched_setaffinity(0, cores)
        build_s, stree = timed(lambda: scipy_spatial.cKDTree(pts), a.reps)
        query_s, (d, i) = timed(lambda: stree.query(qs, k=a.k, workers=-1), a.reps)
        row(f"scipy cKDTree workers=-1 (SciPy {scipy.__version__})", "numpy", build_s, query_s,
            d.reshape(a.m, a.k), i.reshape(a.m, a.k))

    base = next((r["query_ms"] for r in rows if r["library"].startswith("scipy")), None)
    print(f"{'library':<52} {'input':<6} {'build ms':>10} {'query ms':>10} {'vs scipy':>9}  verified")
    for r in rows:
        speed = f"{base / r['query_ms']:8.1f}x" if base else "       -"
        ver = f"{r['verified']}/{r['sampled']}" if r["sampled"] else "-"
        print(f"{r['library']:<52} {r['inputs']:<6} {r['build_ms']:10.2f} {r['query_ms']:10.2f} {speed}  {ver}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(args=vars(a), runtime=info, rows=rows), f, indent=1)
    bad = [r for r in rows if r["verified"] != r["sampled"]]
    if bad:
        print("# results differ from scipy's: " + ", ".join(r["library"] for r in bad), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

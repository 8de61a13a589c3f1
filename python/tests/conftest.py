"""Shared data and checks of the kdforge Python tests.

Results are compared with scipy.spatial.cKDTree on the same points (as
float64, scipy's only type), tolerant of ties: distances must agree within
rounding, and indices must agree wherever the neighbours' distances are
distinct; where they tie, each index must be of a point at the reported
distance.
"""

import numpy as np
import pytest

scipy_spatial = pytest.importorskip("scipy.spatial")
import kdforge  # noqa: E402

FAST = tuple(kdforge.runtime_info()["fast_dimensions"])


def builders_for(m):
    """The builders that accept m-dimensional points in this build."""
    return ["left-balanced", "split-sort", "bucket"] if m in FAST else ["bucket"]


def tolerance(dtype):
    # float32 trees compute in float32, scipy in float64
    return (2e-5, 1e-6) if np.dtype(dtype) == np.float32 else (1e-12, 1e-13)


def make_points(kind, n, m, rng, dtype=np.float64):
    if kind == "uniform":
        p = rng.random((n, m))
    elif kind == "clustered":  # tight Gaussian blobs with far-apart centres
        centres = rng.random((max(1, n // 200), m)) * 100
        p = centres[rng.integers(0, len(centres), n)] + rng.normal(scale=0.01, size=(n, m))
    elif kind == "duplicates":  # few distinct points, each repeated many times
        base = rng.random((max(1, n // 50), m))
        p = base[rng.integers(0, len(base), n)]
    elif kind == "plane":  # every point on z = 0.5 (the last coordinate constant)
        p = rng.random((n, m))
        p[:, -1] = 0.5
    elif kind == "grid":  # integer lattice: many exact distance ties
        side = int(np.ceil(n ** (1.0 / m)))
        p = np.stack(np.meshgrid(*[np.arange(side)] * m, indexing="ij"), -1).reshape(-1, m)[:n].astype(float)
    else:
        raise ValueError(kind)
    return np.ascontiguousarray(p, dtype=dtype)


def reference(points):
    return scipy_spatial.cKDTree(np.asarray(points, dtype=np.float64))


def check_knn(points, queries, ks, d, i, dtype, upper_bound=np.inf):
    """d, i (M x len(ks)) against scipy's answer for the k-th neighbours ks."""
    pts = np.asarray(points, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64).reshape(-1, pts.shape[1])
    n = len(pts)
    kmax = max(ks)
    d = np.asarray(d, dtype=np.float64).reshape(len(q), len(ks))
    i = np.asarray(i).reshape(len(q), len(ks))
    assert i.dtype == np.int64
    rtol, atol = tolerance(dtype)
    found = i != n
    np.testing.assert_array_equal(np.isinf(d), ~found)
    assert ((i >= 0) & (i <= n)).all()
    if n == 0:
        assert not found.any()
        return
    # scipy's k + 1 nearest without a bound: the true k-th distances and
    # whether the k-th is clear of its neighbours by more than rounding
    kk = min(kmax + 1, n)
    full_d, full_i = reference(pts).query(q, k=kk)
    full_d, full_i = np.asarray(full_d).reshape(len(q), kk), np.asarray(full_i).reshape(len(q), kk)
    for c, k in enumerate(ks):
        if k > n:
            assert not found[:, c].any(), f"column k={k} > n={n} must be missing"
            continue
        true = full_d[:, k - 1]
        tol = 4 * (rtol * true + atol)
        np.testing.assert_array_equal(found[true < upper_bound - tol, c], True)
        np.testing.assert_array_equal(found[true >= upper_bound + tol, c], False)
        f = found[:, c]
        np.testing.assert_allclose(d[f, c], true[f], rtol=rtol, atol=atol)
        # the index is of a point at the reported distance ...
        actual = np.linalg.norm(pts[i[f, c]] - q[f], axis=1)
        np.testing.assert_allclose(d[f, c], actual, rtol=rtol, atol=atol)
        # ... and scipy's where the k-th distance is clear of the others
        lo = full_d[:, k - 2] if k >= 2 else np.full(len(q), -np.inf)
        hi = full_d[:, k] if k < kk else np.full(len(q), np.inf)
        clear = f & (true - lo > tol) & (hi - true > tol)
        np.testing.assert_array_equal(i[clear, c], full_i[clear, k - 1])
    # each row's indices are distinct
    for row, fr in zip(i, found):
        vals = row[fr]
        assert len(np.unique(vals)) == len(vals) or len(set(ks)) < len(ks)


def check_ball(points, queries, r, rows, dtype, sort=None):
    """Lists of indices within r (scalar or per query) against brute force,
    tolerant of points at r within rounding."""
    pts = np.asarray(points, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64).reshape(-1, pts.shape[1])
    rr = np.broadcast_to(np.asarray(r, dtype=np.float64), (len(q),)).reshape(-1)
    rtol, atol = tolerance(dtype)
    assert len(rows) == len(q)
    for j, row in enumerate(rows):
        assert isinstance(row, list)
        dist = np.linalg.norm(pts - q[j], axis=1)
        tol = rtol * rr[j] + atol
        sure = set(np.nonzero(dist <= rr[j] - tol)[0].tolist())
        maybe = set(np.nonzero(dist <= rr[j] + tol)[0].tolist())
        got = set(row)
        assert len(got) == len(row), "an index appears twice"
        assert sure <= got <= maybe
        if sort:
            assert row == sorted(row)


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)

"""query_ball_point, count_neighbors, query_ball_tree, query_pairs and
sparse_distance_matrix against scipy.spatial.cKDTree."""

import numpy as np
import pytest

import kdforge
from conftest import builders_for, check_ball, make_points, reference


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind,m", [("uniform", 3), ("clustered", 2), ("duplicates", 3), ("uniform", 1),
                                    ("clustered", 6)])
def test_ball_point(rng, dtype, kind, m):
    pts = make_points(kind, 2000, m, rng, dtype)
    q = np.concatenate([make_points("uniform", 150, m, rng, dtype) * (100 if kind == "clustered" else 1),
                        pts[:50]])
    r = 0.15 if kind != "clustered" else 0.02
    for builder in builders_for(m):
        tree = kdforge.KDTree(pts, builder=builder)
        rows = tree.query_ball_point(q, r)
        assert rows.dtype == object and rows.shape == (len(q),)
        check_ball(pts, q, r, rows, dtype, sort=True)  # several points: sorted, as scipy
        unsorted = tree.query_ball_point(q, r, return_sorted=False)
        check_ball(pts, q, r, unsorted, dtype)
        lengths = tree.query_ball_point(q, r, return_length=True)
        assert lengths.dtype == np.int64
        np.testing.assert_array_equal(lengths, [len(x) for x in rows])
        if dtype == np.float64:
            ref = reference(pts).query_ball_point(q, r)
            assert [sorted(x) for x in ref] == list(rows)


def test_ball_point_shapes_and_radii(rng):
    pts = make_points("uniform", 1000, 3, rng)
    tree, ref = kdforge.KDTree(pts), reference(pts)
    x1 = pts[3]
    # one point: a list (unsorted by default, as scipy), its length an int64
    row = tree.query_ball_point(x1, 0.2)
    assert isinstance(row, list) and sorted(row) == sorted(ref.query_ball_point(x1, 0.2))
    assert tree.query_ball_point(x1, 0.2, return_sorted=True) == sorted(row)
    n1 = tree.query_ball_point(x1, 0.2, return_length=True)
    assert isinstance(n1, np.int64) and n1 == len(row)
    # leading shapes
    x = make_points("uniform", 12, 3, rng).reshape(2, 2, 3, 3)
    rows = tree.query_ball_point(x, 0.3)
    want = ref.query_ball_point(x, 0.3)
    assert rows.shape == want.shape == (2, 2, 3)
    assert all(a == sorted(b) for a, b in zip(rows.ravel(), want.ravel()))
    assert tree.query_ball_point(x, 0.3, return_length=True).shape == (2, 2, 3)
    # one radius per query, broadcast like scipy's
    q = make_points("uniform", 40, 3, rng)
    radii = np.linspace(0, 0.4, 40)
    rows = tree.query_ball_point(q, radii)
    check_ball(pts, q, radii, rows, np.float64, sort=True)
    assert list(rows) == [sorted(r) for r in ref.query_ball_point(q, radii)]
    np.testing.assert_array_equal(tree.query_ball_point(q, radii, return_length=True),
                                  ref.query_ball_point(q, radii, return_length=True))
    rows = tree.query_ball_point(q, [0.25])
    check_ball(pts, q, 0.25, rows, np.float64)
    # inclusive, as scipy's
    line = kdforge.KDTree(np.array([[0.0, 0, 0], [1, 0, 0], [3, 0, 0]]))
    assert sorted(line.query_ball_point([0, 0, 0], 1.0)) == [0, 1]
    # a radius of inf finds every point
    assert len(tree.query_ball_point(x1, np.inf)) == 1000
    # no queries
    assert tree.query_ball_point(np.zeros((0, 3)), 0.1).shape == (0,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_count_neighbors(rng, dtype):
    a = make_points("clustered", 1500, 3, rng, dtype)
    b = np.concatenate([make_points("clustered", 1000, 3, rng, dtype), a[:100]])
    ta, tb = kdforge.KDTree(a), kdforge.KDTree(b, builder="bucket")
    ra, rb = reference(a), reference(b)
    for r in (0.0, 0.01, 0.5, 10.0):
        got = ta.count_neighbors(tb, r)
        assert isinstance(got, int)
        if dtype == np.float64:
            assert got == ra.count_neighbors(rb, r)
        else:
            assert abs(got - ra.count_neighbors(rb, r)) <= 2  # points at r within float rounding
    radii = np.array([0.005, 0.02, 0.1, 3.0])
    got = ta.count_neighbors(tb, radii)
    assert got.dtype == np.int64 and got.shape == (4,)
    if dtype == np.float64:
        np.testing.assert_array_equal(got, ra.count_neighbors(rb, radii))
        np.testing.assert_array_equal(ta.count_neighbors(tb, radii, cumulative=False),
                                      ra.count_neighbors(rb, radii, cumulative=False))
        # the count is symmetric, and self-counts include the pairs (i, i)
        assert tb.count_neighbors(ta, 0.1) == got[2]
        assert ta.count_neighbors(ta, 0.0) == ra.count_neighbors(ra, 0.0)
    with pytest.raises(ValueError, match="non-decreasing"):
        ta.count_neighbors(tb, [0.2, 0.1], cumulative=False)
    with pytest.raises(ValueError, match="one-dimensional"):
        ta.count_neighbors(tb, [[0.2]])
    with pytest.raises(ValueError, match="weights"):
        ta.count_neighbors(tb, 0.2, weights=np.ones(len(a)))


def test_ball_tree_pairs_and_sparse_matrix(rng):
    a = make_points("uniform", 400, 2, rng)
    b = make_points("uniform", 300, 2, rng)
    ta, tb, ra, rb = kdforge.KDTree(a), kdforge.KDTree(b), reference(a), reference(b)
    assert ta.query_ball_tree(tb, 0.08) == [sorted(x) for x in ra.query_ball_tree(rb, 0.08)]
    assert ta.query_pairs(0.05) == ra.query_pairs(0.05)
    pairs = ta.query_pairs(0.05, output_type="ndarray")
    assert pairs.dtype == np.int64 and pairs.shape[1] == 2
    assert set(map(tuple, pairs.tolist())) == ra.query_pairs(0.05)
    dups = np.repeat(a[:10], 3, axis=0)
    assert kdforge.KDTree(dups).query_pairs(0.0) == reference(dups).query_pairs(0.0)
    for out in ("dict", "coo_matrix", "dok_matrix", "ndarray"):
        got = ta.sparse_distance_matrix(tb, 0.1, output_type=out)
        want = ra.sparse_distance_matrix(rb, 0.1, output_type=out)
        if out == "dict":
            assert got.keys() == want.keys()
            np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=1e-12)
        elif out == "ndarray":
            assert got.dtype.names == want.dtype.names
            key = lambda s: np.lexsort((s["j"], s["i"]))  # noqa: E731
            g, w = got[key(got)], want[key(want)]
            np.testing.assert_array_equal(g["i"], w["i"])
            np.testing.assert_array_equal(g["j"], w["j"])
            np.testing.assert_allclose(g["v"], w["v"], rtol=1e-12)
        else:
            assert got.shape == want.shape and got.nnz == want.nnz
            np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=1e-12)

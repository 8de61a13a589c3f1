"""KDTree.query against scipy.spatial.cKDTree: every builder, both float
types, random, clustered and hostile point sets, scipy's shapes."""

import numpy as np
import pytest

import kdforge
from conftest import FAST, builders_for, check_knn, make_points, reference


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["uniform", "clustered", "duplicates", "plane", "grid"])
@pytest.mark.parametrize("m", [3, 2])
def test_knn_every_builder(rng, dtype, kind, m):
    pts = make_points(kind, 3000, m, rng, dtype)
    q = np.concatenate([make_points("uniform", 400, m, rng, dtype), pts[:100]])
    if kind == "clustered":
        q *= 100
    for builder in builders_for(m):
        tree = kdforge.KDTree(pts, builder=builder)
        assert tree.builder == builder and tree.dtype == dtype
        for k in (1, 8, [1, 3, 17]):
            d, i = tree.query(q, k=k)
            ks = [k] if k == 1 else (list(range(1, k + 1)) if isinstance(k, int) else k)
            assert d.dtype == dtype and i.dtype == np.int64
            check_knn(pts, q, ks, d, i, dtype)


@pytest.mark.parametrize("m,n", [(1, 2000), (4, 2000), (7, 1500), (128, 600)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_knn_any_dimension(rng, m, n, dtype):
    pts = make_points("clustered" if m > 8 else "uniform", n, m, rng, dtype)
    q = make_points("uniform", 100, m, rng, dtype)
    if m > 8:
        q = np.concatenate([q * 100, pts[:50] + 0.001])
    tree = kdforge.KDTree(pts)
    assert tree.builder == ("left-balanced" if m in FAST else "bucket")
    d, i = tree.query(q, k=5)
    check_knn(pts, q, [1, 2, 3, 4, 5], d, i, dtype)
    small = kdforge.KDTree(pts, builder="bucket", leafsize=1)
    d, i = small.query(q, k=[2, 4])
    check_knn(pts, q, [2, 4], d, i, dtype)


def test_shapes_as_scipy(rng):
    pts = make_points("uniform", 500, 3, rng)
    tree, ref = kdforge.KDTree(pts), reference(pts)
    x1 = pts[7] + 0.01
    # one point, k = 1: Python scalars
    d, i = tree.query(x1)
    rd, ri = ref.query(x1)
    assert type(d) is float and type(i) is int
    assert i == ri and d == pytest.approx(rd)
    # one point, k > 1 or a list: 1-D
    for k in (4, [2, 4]):
        d, i = tree.query(x1, k=k)
        rd, ri = ref.query(x1, k=k)
        assert d.shape == rd.shape == (len(rd),) and i.shape == ri.shape
        np.testing.assert_array_equal(i, ri)
    # batches of any leading shape
    x = make_points("uniform", 24, 3, rng).reshape(2, 4, 3, 3)
    for k in (1, 3, [1], [3, 1, 2]):
        d, i = tree.query(x, k=k)
        rd, ri = ref.query(x, k=k)
        assert d.shape == rd.shape and i.shape == ri.shape
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_allclose(d, rd, rtol=1e-12)
    # k as numpy integers and tuples
    d, i = tree.query(x1, k=np.int64(2))
    assert d.shape == (2,)
    d, i = tree.query(x1, k=(1, 2))
    assert d.shape == (2,)
    # no queries
    for k, shape in ((1, (0,)), (2, (0, 2))):
        d, i = tree.query(np.zeros((0, 3)), k=k)
        assert d.shape == shape and i.shape == shape


def test_missing_neighbours_and_upper_bound(rng):
    pts = make_points("uniform", 50, 3, rng)
    q = make_points("uniform", 30, 3, rng)
    tree = kdforge.KDTree(pts)
    # k > n: index n, distance inf
    d, i = tree.query(q, k=60)
    check_knn(pts, q, list(range(1, 61)), d, i, np.float64)
    assert (i[:, 50:] == 50).all() and np.isinf(d[:, 50:]).all()
    # distance_upper_bound is strict, as scipy's
    for ub in (0.05, 0.2, 0.5):
        d, i = tree.query(q, k=10, distance_upper_bound=ub)
        rd, ri = reference(pts).query(q, k=10, distance_upper_bound=ub)
        np.testing.assert_array_equal(i, ri)
        np.testing.assert_allclose(d, rd, rtol=1e-12)
    line = np.array([[0.0, 0, 0], [1, 0, 0], [3, 0, 0]])
    d, i = kdforge.KDTree(line).query([0, 0, 0], k=3, distance_upper_bound=1.0)
    np.testing.assert_array_equal(i, [0, 3, 3])
    assert d[0] == 0 and np.isinf(d[1:]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hostile_point_sets(rng, dtype):
    # one point
    one = np.array([[0.25, 0.5, 0.75]], dtype=dtype)
    d, i = kdforge.KDTree(one).query(make_points("uniform", 20, 3, rng, dtype), k=3)
    assert (i[:, 0] == 0).all() and (i[:, 1:] == 1).all() and np.isinf(d[:, 1:]).all()
    # every point the same
    same = np.tile(one, (1000, 1))
    for builder in builders_for(3):
        d, i = kdforge.KDTree(same, builder=builder).query(one, k=4)
        np.testing.assert_array_equal(i, [[0, 1, 2, 3]])  # ties go to the smaller index
        np.testing.assert_array_equal(d, 0)
    # huge coordinate offsets
    far = make_points("uniform", 2000, 3, rng, np.float64) + 1e6
    d, i = kdforge.KDTree(far).query(far[:50] + 1e-3, k=4)
    check_knn(far, far[:50] + 1e-3, [1, 2, 3, 4], d, i, np.float64)


def test_empty_tree():
    for m in (1, 3, 5):
        tree = kdforge.KDTree(np.zeros((0, m)))
        assert tree.n == 0 and tree.m == m
        d, i = tree.query(np.zeros(m), k=2)
        np.testing.assert_array_equal(i, [0, 0])
        assert np.isinf(d).all()
        d, i = tree.query(np.zeros((4, m)))
        assert (i == 0).all() and np.isinf(d).all()
        assert tree.query_ball_point(np.zeros(m), 1.0) == []
        assert tree.count_neighbors(tree, 1.0) == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_memory_layouts(rng, dtype):
    pts = make_points("uniform", 2000, 3, rng, dtype)
    q = make_points("uniform", 300, 3, rng, dtype)
    want_d, want_i = kdforge.KDTree(pts).query(q, k=6)
    for p in (np.asfortranarray(pts), np.repeat(pts, 2, axis=1)[:, ::2],
              np.repeat(pts, 2, axis=0)[::2], pts[::-1][::-1]):
        assert np.array_equal(p, pts)
        tree = kdforge.KDTree(p)
        for x in (q, np.asfortranarray(q), np.repeat(q, 2, axis=0)[::2], q[::-1][::-1],
                  np.broadcast_to(q[:1], (5, 3))):
            d, i = tree.query(x, k=6)
            n = len(x)
            np.testing.assert_array_equal(i, want_i[:n] if n == 300 else kdforge.KDTree(pts).query(
                np.ascontiguousarray(x), k=6)[1])
            assert d.dtype == dtype


def test_dtypes(rng):
    pts = make_points("uniform", 500, 3, rng)
    # float32 stays float32, float64 float64; other types become float64
    assert kdforge.KDTree(pts.astype(np.float32)).dtype == np.float32
    for t in (np.int32, np.int64, np.float16, np.uint8):
        tree = kdforge.KDTree((pts * 100).astype(t))
        assert tree.dtype == np.float64
    tree = kdforge.KDTree((pts * 100).astype(np.int32))
    d, i = tree.query(np.array([[10, 20, 30]]), k=3)
    check_knn((pts * 100).astype(np.int32), [[10, 20, 30]], [1, 2, 3], d, i, np.float64)
    # lists are arrays
    tree = kdforge.KDTree([[0.0, 0.0], [1.0, 1.0]])
    assert tree.query([0.9, 0.9]) == (pytest.approx(np.hypot(0.1, 0.1)), 1)
    # queries take the tree's type
    t32 = kdforge.KDTree(pts.astype(np.float32))
    assert t32.query(pts[:3], k=2)[0].dtype == np.float32


def test_eps_keeps_scipys_bound(rng):
    for n in (3000, 40):
        pts = make_points("clustered", n, 3, rng)
        q = make_points("uniform", 500, 3, rng) * 100
        tree = kdforge.KDTree(pts)
        true, _ = reference(pts).query(q, k=8)
        for eps in (0.1, 1.0, 5.0):
            d, i = tree.query(q, k=8, eps=eps)
            assert (d <= true * (1 + eps) * (1 + 1e-12)).all()
            assert (d >= true * (1 - 1e-12)).all()
            np.testing.assert_allclose(np.linalg.norm(pts[i] - q[:, None, :], axis=2), d, rtol=1e-12)


def test_attributes(rng):
    pts = make_points("uniform", 300, 3, rng, np.float32)
    tree = kdforge.KDTree(pts, leafsize=4)
    ref = reference(pts)
    assert tree.n == 300 and tree.m == 3 and tree.leafsize == 4
    assert tree.data is pts  # kept as given (kdforge's tree holds its own copy)
    np.testing.assert_allclose(tree.maxes, ref.maxes)
    np.testing.assert_allclose(tree.mins, ref.mins)
    assert "KDTree" in repr(tree)
    assert kdforge.cKDTree is kdforge.KDTree
    # the tree's own copy: changing the data afterwards changes nothing
    d0, i0 = tree.query(pts[:10], k=3)
    pts[:] = 0
    d1, i1 = tree.query(np.asarray(ref.data[:10], dtype=np.float32), k=3)
    np.testing.assert_array_equal(i0, i1)


def test_torch_cpu_tensors(rng):
    torch = pytest.importorskip("torch")
    pts = make_points("uniform", 500, 3, rng)
    tree = kdforge.KDTree(torch.from_numpy(pts))
    d, i = tree.query(torch.from_numpy(pts[:10]), k=2)
    assert isinstance(d, torch.Tensor) and not d.is_cuda
    np.testing.assert_array_equal(i[:, 0].numpy(), np.arange(10))

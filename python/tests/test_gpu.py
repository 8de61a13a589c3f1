"""A GPU build on CuPy arrays and PyTorch CUDA tensors: read in place,
results on the device in the caller's kind of array, the same answers as
scipy. Skipped where the module was built for a CPU or CuPy/a GPU is missing."""

import numpy as np
import pytest

import kdforge
from conftest import check_ball, check_knn, make_points, reference

if not kdforge.runtime_info()["gpu"]:
    pytest.skip("the module was built for the CPU", allow_module_level=True)
cp = pytest.importorskip("cupy")
try:
    cp.cuda.runtime.getDeviceCount()
except Exception:  # pragma: no cover
    pytest.skip("no GPU", allow_module_level=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m", [3, 2, 7])
def test_cupy_in_cupy_out(rng, dtype, m):
    pts = make_points("clustered", 5000, m, rng, dtype)
    q = np.concatenate([make_points("uniform", 500, m, rng, dtype) * 100, pts[:100]])
    tree = kdforge.KDTree(cp.asarray(pts))
    assert isinstance(tree.data, cp.ndarray)
    d, i = tree.query(cp.asarray(q), k=8)
    assert isinstance(d, cp.ndarray) and isinstance(i, cp.ndarray)
    assert d.dtype == dtype and i.dtype == np.int64
    assert d.data.device_id == cp.cuda.Device().id
    check_knn(pts, q, list(range(1, 9)), cp.asnumpy(d), cp.asnumpy(i), dtype)
    d, i = tree.query(cp.asarray(q), k=[1, 5], distance_upper_bound=0.05)
    check_knn(pts, q, [1, 5], cp.asnumpy(d), cp.asnumpy(i), dtype, upper_bound=0.05)
    counts = tree.query_ball_point(cp.asarray(q), 0.05, return_length=True)
    assert isinstance(counts, cp.ndarray)
    rows = tree.query_ball_point(cp.asarray(q), 0.05)
    check_ball(pts, q, 0.05, rows, dtype, sort=True)
    np.testing.assert_array_equal(cp.asnumpy(counts), [len(r) for r in rows])
    radii = cp.linspace(0, 0.1, len(q))
    rows = tree.query_ball_point(cp.asarray(q), radii)
    check_ball(pts, q, cp.asnumpy(radii), rows, dtype, sort=True)


def test_numpy_and_cupy_mixed(rng):
    pts = make_points("uniform", 4000, 3, rng, np.float32)
    q = make_points("uniform", 300, 3, rng, np.float32)
    t_host, t_dev = kdforge.KDTree(pts), kdforge.KDTree(cp.asarray(pts))
    d1, i1 = t_host.query(q, k=4)  # NumPy in: copied to the device once, NumPy out
    assert isinstance(d1, np.ndarray)
    d2, i2 = t_dev.query(cp.asarray(q), k=4)
    d3, i3 = t_host.query(cp.asarray(q), k=4)
    d4, i4 = t_dev.query(q, k=4)
    for i in (i2, i3):
        np.testing.assert_array_equal(cp.asnumpy(i), i1)
    np.testing.assert_array_equal(i4, i1)
    assert t_host.count_neighbors(t_dev, 0.05) == reference(pts).count_neighbors(reference(pts), 0.05)


def test_strided_cupy(rng):
    pts = make_points("uniform", 3000, 3, rng)
    q = make_points("uniform", 200, 3, rng)
    want = kdforge.KDTree(pts).query(q, k=3)[1]
    for p in (cp.asfortranarray(cp.asarray(pts)), cp.asarray(np.repeat(pts, 2, axis=1))[:, ::2]):
        tree = kdforge.KDTree(p)
        for x in (cp.asfortranarray(cp.asarray(q)), cp.asarray(np.repeat(q, 2, 0))[::2]):
            np.testing.assert_array_equal(cp.asnumpy(tree.query(x, k=3)[1]), want)


def test_cupy_streams(rng):
    pts = make_points("uniform", 100000, 3, rng, np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.asarray(pts) * 2 - 1  # produced on a non-default stream
        tree = kdforge.KDTree(x)
        d, i = tree.query(x[:1000], k=2)
    np.testing.assert_array_equal(cp.asnumpy(i[:, 0]), np.arange(1000))


def test_nan_on_the_gpu(rng):
    pts = cp.asarray(make_points("uniform", 100, 3, rng))
    pts[5, 2] = cp.nan
    with pytest.raises(ValueError, match="point 5"):
        kdforge.KDTree(pts)


def test_torch_cuda(rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    pts = make_points("uniform", 5000, 3, rng, np.float32)
    q = make_points("uniform", 400, 3, rng, np.float32)
    tp = torch.from_numpy(pts).cuda().requires_grad_(True)
    tree = kdforge.KDTree(tp)
    d, i = tree.query(torch.from_numpy(q).cuda(), k=6)
    assert isinstance(d, torch.Tensor) and d.is_cuda and d.dtype == torch.float32 and i.dtype == torch.int64
    check_knn(pts, q, list(range(1, 7)), d.cpu().numpy(), i.cpu().numpy(), np.float32)
    d64, _ = kdforge.KDTree(tp.double()).query(torch.from_numpy(q).cuda().double().t().contiguous().t(), k=2)
    assert d64.dtype == torch.float64
    counts = tree.query_ball_point(torch.from_numpy(q).cuda(), 0.1, return_length=True)
    assert isinstance(counts, torch.Tensor) and counts.is_cuda
    check_ball(pts, q, 0.1, tree.query_ball_point(torch.from_numpy(q).cuda(), 0.1), np.float32)

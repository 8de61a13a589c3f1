"""Bad input becomes ValueError naming the problem; running out of memory MemoryError."""

import numpy as np
import pytest

import kdforge
from conftest import builders_for, make_points


@pytest.mark.parametrize("m", [3, 5])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_points_and_queries(rng, m, bad):
    pts = make_points("uniform", 200, m, rng)
    pts[17, 1] = bad
    for builder in builders_for(m):
        with pytest.raises(ValueError, match="point 17 has a NaN or infinite coordinate"):
            kdforge.KDTree(pts, builder=builder)
    pts[17, 1] = 0.5
    q = make_points("uniform", 30, m, rng)
    q[4, 0] = bad
    for builder in builders_for(m):
        tree = kdforge.KDTree(pts, builder=builder)
        for call in (lambda: tree.query(q, k=2), lambda: tree.query_ball_point(q, 0.1),
                     lambda: tree.query_ball_point(q, 0.1, return_length=True)):
            with pytest.raises(ValueError, match="query 4 has a NaN or infinite coordinate"):
                call()
        # the tree still answers
        d, i = tree.query(pts[:2], k=1)
        np.testing.assert_array_equal(i, [0, 1])


def test_bad_arguments(rng):
    pts = make_points("uniform", 100, 3, rng)
    tree = kdforge.KDTree(pts)
    cases = [
        (lambda: tree.query(pts, p=1), "p=1 is not supported"),
        (lambda: tree.query(pts, p=np.inf), "Euclidean"),
        (lambda: tree.query_ball_point(pts, 0.1, p=3), "p=3"),
        (lambda: tree.count_neighbors(tree, 0.1, p=1), "p=1"),
        (lambda: tree.query(pts, k=0), "k must be at least 1"),
        (lambda: tree.query(pts, k=[0, 1]), "positive"),
        (lambda: tree.query(pts, k=[]), "positive"),
        (lambda: tree.query(pts, k=1.5), "positive"),
        (lambda: tree.query(pts, eps=-1), "eps"),
        (lambda: tree.query(pts, distance_upper_bound=-1), "distance_upper_bound"),
        (lambda: tree.query(pts, distance_upper_bound=np.nan), "distance_upper_bound"),
        (lambda: tree.query(pts, workers=0), "workers"),
        (lambda: tree.query(pts[:, :2]), "vectors of length 3"),
        (lambda: tree.query(np.float64(1.0)), "vectors of length 3"),
        (lambda: tree.query_ball_point(pts, -0.5), "r must be >= 0"),
        (lambda: tree.query_ball_point(pts, np.nan), "r must be >= 0"),
        (lambda: tree.query_ball_point(pts, np.full(100, -1.0)), ">= 0"),
        (lambda: tree.query_ball_point(pts, np.ones(7)), "broadcast"),
        (lambda: tree.count_neighbors(tree, -1.0), ">= 0"),
        (lambda: tree.count_neighbors(kdforge.KDTree(pts[:, :2]), 1.0), "dimensions"),
        (lambda: tree.count_neighbors(pts, 1.0), "kdforge.KDTree"),
        (lambda: tree.query_pairs(0.1, output_type="list"), "output type"),
        (lambda: kdforge.KDTree(pts, builder="octree"), "unknown builder"),
        (lambda: kdforge.KDTree(pts, leafsize=0), "leafsize"),
        (lambda: kdforge.KDTree(pts, boxsize=1.0), "boxsize"),
        (lambda: kdforge.KDTree(pts[0]), "2 dimensions"),
        (lambda: kdforge.KDTree(np.zeros((5, 0))), "no coordinates"),
    ]
    if 5 not in kdforge.runtime_info()["fast_dimensions"]:
        cases.append((lambda: kdforge.KDTree(np.zeros((5, 5)), builder="split-sort"), "builder='bucket'"))
    for call, match in cases:
        with pytest.raises(ValueError, match=match):
            call()


def test_gpu_arrays_on_a_cpu_build():
    if kdforge.runtime_info()["gpu"]:
        pytest.skip("a GPU build takes GPU arrays")

    class DeviceArray:  # what CuPy and Numba arrays show
        __cuda_array_interface__ = {"shape": (4, 3), "typestr": "<f8", "data": (0, False), "version": 3,
                                    "strides": None}

    with pytest.raises(ValueError, match="GPU array.*built for the CPU"):
        kdforge.KDTree(DeviceArray())
    with pytest.raises(ValueError, match="GPU array.*built for the CPU"):
        kdforge.KDTree(np.zeros((4, 3))).query(DeviceArray())


def test_not_picklable(rng):
    import pickle

    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(kdforge.KDTree(make_points("uniform", 10, 3, rng)))


def _beyond_memory():
    """Bytes no allocation of this machine can get: more than memory and
    swap together, where the kernel refuses such requests (overcommit
    heuristic or strict). None where it might grant them."""
    try:
        mode = int(open("/proc/sys/vm/overcommit_memory").read())
        info = dict(line.split(":") for line in open("/proc/meminfo"))
        total = (int(info["MemTotal"].split()[0]) + int(info["SwapTotal"].split()[0])) * 1024
    except (OSError, ValueError, KeyError):
        return None
    return None if mode == 1 else 2 * total


def test_out_of_memory_is_memory_error():
    """kNN rows of M x k (4-byte indices and distances) with k = n = M =
    2^18, one column asked for: 2^36 entries, more than any GPU has, and
    more than twice this host's memory where the kernel refuses such
    requests. Run in a child process, so a crash is a failure, not the end
    of the suite."""
    gpu = kdforge.runtime_info()["gpu"]
    beyond = _beyond_memory()
    if not gpu and (beyond is None or (1 << 36) * 4 < beyond):
        pytest.skip("needs a host that refuses allocations beyond its memory, or a GPU")
    code = """
import numpy as np, kdforge
n = 1 << 18
pts = np.random.default_rng(3).random((n, 3)).astype(np.float32)
tree = kdforge.KDTree(pts)
try:
    tree.query(pts, k=[n])
except MemoryError as e:
    print("MemoryError:", e)
d, i = tree.query(pts[:3], k=1)
assert (i == np.arange(3)).all()
print("still answering")
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "MemoryError:" in out.stdout and "out of memory" in out.stdout, out.stdout
    assert "still answering" in out.stdout

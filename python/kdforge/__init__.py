"""kdforge for Python: scipy.spatial.cKDTree's interface on kdforge's k-d trees,
on NumPy arrays (CPU builds) and on CuPy arrays and PyTorch CUDA tensors
without copies (GPU builds).

    import numpy as np, kdforge
    points = np.random.rand(1_000_000, 3).astype(np.float32)
    tree = kdforge.KDTree(points)
    d, i = tree.query(points[:1000], k=8)       # unsquared distances, int64 indices

Differences from scipy and the build: python/README.md.
"""

try:
    from ._kdforge import __version__
except ImportError as e:  # the source tree's python/kdforge, without the compiled module
    raise ImportError(
        f"kdforge: the compiled module _kdforge is not in {__path__[0]}: this is the source tree's package. "
        "Build it (cmake --build <build> --target kdforge_python) and put <build>/python first on PYTHONPATH, "
        "or install it (python/README.md)") from e
from ._tree import KDTree, cKDTree, finalize, initialize, runtime_info

__all__ = ["KDTree", "cKDTree", "initialize", "finalize", "runtime_info", "__version__"]

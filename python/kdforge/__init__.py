"""kdforge for Python: scipy.spatial.cKDTree's interface on kdforge's k-d trees,
on NumPy arrays (CPU builds) and on CuPy arrays and PyTorch CUDA tensors
without copies (GPU builds).

    import numpy as np, kdforge
    points = np.random.rand(1_000_000, 3).astype(np.float32)
    tree = kdforge.KDTree(points)
    d, i = tree.query(points[:1000], k=8)       # unsquared distances, int64 indices

Differences from scipy and the build: python/README.md.
"""

from ._kdforge import __version__
from ._tree import KDTree, cKDTree, finalize, initialize, runtime_info

__all__ = ["KDTree", "cKDTree", "initialize", "finalize", "runtime_info", "__version__"]

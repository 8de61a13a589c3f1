"""kdforge.KDTree: scipy.spatial.cKDTree's interface on kdforge's trees.

This layer turns scipy's arguments (shapes, k as an int or a list, scalar or
per-query radii, the p/eps/workers keywords) into calls of the C++ core and
its results back into scipy's shapes; every difference from scipy is listed
in python/README.md.
"""

import atexit
import numbers
import os
import threading

import numpy as np

from . import _arrays as A
from . import _kdforge

BUILDERS = ("left-balanced", "split-sort", "bucket")

# Queries are sent to the core in chunks of this many rows: a Ctrl-C is
# seen between chunks at the latest (and between a call's phases inside),
# at no measurable cost for a chunk of millions of queries.
_CHUNK = 1 << 21

_lock = threading.Lock()
_started = False


def initialize(num_threads=None, device_id=None):
    """Starts kdforge's runtime (Kokkos) now rather than at the first tree.

    num_threads: threads of the CPU pool (default: OMP_NUM_THREADS, else
    every core); device_id: the GPU of a GPU build (default: the first
    visible one). Has no effect once the runtime runs. Finalised at exit.
    """
    global _started
    if _started:
        return
    with _lock:
        if _started or _kdforge.is_initialized():
            _started = True
            return
        if num_threads is None:
            env = os.environ.get("KDFORGE_NUM_THREADS")
            num_threads = int(env) if env else -1
        if device_id is None:
            env = os.environ.get("KDFORGE_DEVICE_ID")
            device_id = int(env) if env else -1
        _kdforge.initialize(int(num_threads), int(device_id))
        _started = True


def finalize():
    """Releases every tree's memory and stops the runtime; runs at exit.
    Trees used afterwards raise RuntimeError, and the runtime cannot start again."""
    _kdforge.finalize()


atexit.register(finalize)


def runtime_info():
    """The backend (OpenMP, Cuda, ...), whether results live on a GPU, the
    threads of the pool or the GPU in use, the compiled dimensions."""
    return dict(_kdforge.runtime_info())


def _check_p(p):
    if not isinstance(p, numbers.Real) or p != 2:
        raise ValueError(f"kdforge: p={p!r} is not supported: kdforge measures Euclidean distances only (p=2)")


def _check_eps(eps):
    if not isinstance(eps, numbers.Real) or not eps >= 0 or not np.isfinite(eps):
        raise ValueError(f"kdforge: eps must be a finite number >= 0 (got {eps!r})")
    return float(eps)


def _check_workers(workers):
    if workers is None:
        return
    if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or (workers < 1 and workers != -1):
        raise ValueError(f"Invalid number of workers {workers!r}, must be -1 or > 0")


def _check_radius(r, what):
    r = float(r)
    if not r >= 0:
        raise ValueError(f"kdforge: {what} must be >= 0 (got {r})")
    return r


def _check_place(kind, what):
    if kind in (A.CUPY, A.TORCH) and not _kdforge.compiled_for_gpu():
        raise ValueError(f"kdforge: {what} is a GPU array, but this kdforge module was built for the CPU "
                         f"({_kdforge.runtime_info()['backend']}); pass NumPy arrays, or build the module with "
                         "-DKDFORGE_BACKEND=Cuda")


_fast_dimensions = None


def _default_builder(m):
    global _fast_dimensions
    if _fast_dimensions is None:
        _fast_dimensions = tuple(_kdforge.runtime_info()["fast_dimensions"])
    return "left-balanced" if m in _fast_dimensions else "bucket"


class KDTree:
    """A k-d tree over n points in m dimensions for nearest-neighbour and
    radius queries, with the interface of scipy.spatial.cKDTree.

    Parameters
    ----------
    data : array_like, shape (n, m)
        The points: a NumPy array (or anything NumPy converts), and in a GPU
        build also a CuPy array or a PyTorch CUDA tensor (read in place).
        float32 and float64 are kept as given; other dtypes become float64.
        NaN or infinite coordinates raise ValueError.
    leafsize : int, optional
        Points per leaf of a bucket tree (default: kdforge's 8). The
        left-balanced and split-sort trees hold one point per node and
        ignore it.
    builder : {"left-balanced", "split-sort", "bucket"}, optional
        Default: "left-balanced" where the module has compiled trees for m
        (``kdforge.runtime_info()["fast_dimensions"]``, 2 and 3 by default),
        else "bucket" (any m).
    compact_nodes, copy_data, balanced_tree : bool, optional
        Accepted for compatibility and ignored: kdforge's trees are always
        balanced and always keep their own copy of the points.
    boxsize : None
        Periodic boundaries are not supported (ValueError unless None).
    """

    def __init__(self, data, leafsize=None, compact_nodes=True, copy_data=False, balanced_tree=True,
                 boxsize=None, builder=None):
        if boxsize is not None:
            raise ValueError("kdforge: periodic boundaries (boxsize) are not supported")
        if leafsize is not None:
            if isinstance(leafsize, bool) or not isinstance(leafsize, numbers.Integral) or leafsize < 1:
                raise ValueError("leafsize must be at least 1")
        initialize()
        points, kind = A.coerce(data)
        _check_place(kind, "data")
        shape = A.shape_of(points, kind)
        if len(shape) != 2:
            raise ValueError(f"data must be 2 dimensions (got shape {shape})")
        n, m = shape
        if m < 1:
            raise ValueError("kdforge: the points have no coordinates (data of shape (n, 0))")
        if n >= 2**31 - 1:
            raise ValueError(f"kdforge: {n} points: the Python module indexes at most 2^31 - 2 points per tree")
        if builder is None:
            builder = _default_builder(m)
        if builder not in BUILDERS:
            raise ValueError(f"kdforge: unknown builder {builder!r}; expected one of {', '.join(BUILDERS)}")
        rows = A.rows_of(points, kind, m)
        A.synchronize_inputs(rows)
        self._tree = _kdforge.Tree(A.ref(rows, kind, n, m), builder, int(leafsize or 0))
        self._kind = kind
        self._dtype = np.dtype(np.float32 if self._tree.dtype == "f" else np.float64)
        self.data = A.to_kind(points, kind) if kind == A.TORCH_CPU else points
        self.n = n
        self.m = m
        self.leafsize = int(leafsize) if leafsize is not None else 8
        self.builder = builder
        self._bounds = None

    # -- attributes --------------------------------------------------------
    @property
    def dtype(self):
        """The coordinate type of the tree and of its distances (float32 or float64)."""
        return self._dtype

    @property
    def maxes(self):
        """The largest coordinate in each dimension (NumPy, length m)."""
        return self._box()[1]

    @property
    def mins(self):
        """The smallest coordinate in each dimension (NumPy, length m)."""
        return self._box()[0]

    def _box(self):
        if self._bounds is None:
            if self.n == 0:
                self._bounds = (np.full(self.m, np.inf), np.full(self.m, -np.inf))
            else:  # reduced where the data lives, only the box copied
                data = self.data if self._kind != A.CUPY else A._cupy().asarray(self.data)
                if self._kind in (A.TORCH, A.TORCH_CPU):
                    lo, hi = data.amin(0), data.amax(0)
                else:
                    lo, hi = data.min(axis=0), data.max(axis=0)
                self._bounds = (A.to_numpy(lo, self._kind).astype(np.float64),
                                A.to_numpy(hi, self._kind).astype(np.float64))
        return self._bounds

    def __repr__(self):
        return f"kdforge.KDTree(n={self.n}, m={self.m}, dtype={self._dtype.name}, builder={self.builder!r})"

    def __getstate__(self):
        raise TypeError("kdforge.KDTree cannot be pickled; pickle its data and build the tree again")

    # -- queries -----------------------------------------------------------
    def _queries(self, x, what="x"):
        """x (shape (..., m)) as (rows (-1, m), kind, leading shape)."""
        q, kind = A.coerce(x, self._dtype)
        _check_place(kind, what)
        shape = A.shape_of(q, kind)
        if len(shape) == 0 or shape[-1] != self.m:
            raise ValueError(f"{what} must consist of vectors of length {self.m} but has shape {shape}")
        rows = A.rows_of(q, kind, self.m)
        return rows, kind, shape[:-1]

    def _chunks(self, total):
        for b in range(0, total, _CHUNK):
            yield b, min(total, b + _CHUNK)

    def query(self, x, k=1, eps=0, p=2, distance_upper_bound=np.inf, workers=-1):
        """The k nearest neighbours of each point of x, as scipy's cKDTree.query.

        Returns (d, i): distances (unsquared, the tree's dtype) and indices
        (int64), ascending; a missing neighbour (k > n, or none nearer than
        distance_upper_bound) has distance inf and index n. k: an int (k = 1
        drops the last axis, as scipy does) or a sequence of the 1-based
        ranks wanted. x of shape (m,) gives one row, (..., m) an array of
        rows. eps >= 0 is accepted and the answer is exact, which meets
        scipy's bound for any eps. workers is checked and otherwise ignored:
        kdforge uses its whole thread pool (kdforge.initialize).
        """
        _check_p(p)
        _check_eps(eps)  # the exact answer meets every (1 + eps) bound
        _check_workers(workers)
        ub = float(distance_upper_bound)
        if np.isnan(ub) or ub < 0:
            raise ValueError(f"kdforge: distance_upper_bound must be >= 0 (got {distance_upper_bound!r})")
        if isinstance(k, (numbers.Integral, np.integer)) and not isinstance(k, bool):
            if k < 1:
                raise ValueError(f"k must be at least 1 (got {k})")
            ks, squeeze = list(range(1, int(k) + 1)), int(k) == 1
        else:
            try:
                ks = [int(v) for v in np.asarray(k).reshape(-1)]
                ok = all(v == f for v, f in zip(ks, np.asarray(k, dtype=float).reshape(-1)))
            except (TypeError, ValueError):
                ok = False
            if not ok or not ks or min(ks) < 1:
                raise ValueError(f"k must be a positive int or a sequence of positive ints (got {k!r})")
            squeeze = False
        rows, kind, lead = self._queries(x)
        nq = rows.shape[0]
        dtype = self._dtype
        d = A.empty(kind, (nq, len(ks)), dtype, like=rows)
        i = A.empty(kind, (nq, len(ks)), np.int64, like=rows)
        if nq:
            A.synchronize_inputs(rows)
            A.synchronize_outputs(kind, rows)
            for b, e in self._chunks(nq):
                self._tree.knn(A.ref(rows[b:e], kind, e - b, self.m), ks, ub,
                               A.ref(d[b:e], kind, e - b, len(ks)), A.ref(i[b:e], kind, e - b, len(ks)))
        d, i = A.to_kind(d, kind), A.to_kind(i, kind)
        if squeeze:
            d, i = d.reshape(lead), i.reshape(lead)
            if not lead and kind == A.NUMPY:
                return float(d), int(i)
            return d, i
        return d.reshape(lead + (len(ks),)), i.reshape(lead + (len(ks),))

    def _radii(self, r, lead, nq, kind, like):
        """None for a scalar radius, else r broadcast to the queries as a float64 column."""
        if np.ndim(r) == 0 and A.kind_of(r) == A.NUMPY:
            _check_radius(r, "r")
            return None
        rk = A.kind_of(r)
        rr, rk = A.coerce(r, np.float64)
        if rk in (A.NUMPY, A.TORCH_CPU):
            rr = np.broadcast_to(np.asarray(rr), lead)
            if np.isnan(rr).any() or (rr < 0).any():
                raise ValueError("kdforge: every radius must be >= 0")
            if kind in (A.NUMPY, A.TORCH_CPU):
                return np.ascontiguousarray(rr).reshape(nq)
            return A.asarray_like(np.ascontiguousarray(rr).reshape(nq), kind, like)
        # radii on the GPU: the queries must be there too, and of the same kind
        if kind not in (A.CUPY, A.TORCH):
            raise ValueError("kdforge: radii on the GPU need queries on the GPU")
        if rk != kind:
            rr = A._torch().as_tensor(rr, device=like.device) if kind == A.TORCH else A._cupy().asarray(rr)
            rk = kind
        if rk == A.TORCH:
            rr = rr.broadcast_to(lead).reshape(nq).contiguous()
        else:
            rr = A._cupy().ascontiguousarray(A._cupy().broadcast_to(rr, lead)).reshape(nq)
        return rr

    def query_ball_point(self, x, r, p=2.0, eps=0, workers=1, return_sorted=None, return_length=False):
        """The points within distance r (inclusive) of each point of x, as
        scipy's cKDTree.query_ball_point: a list of indices for one point,
        an object array of lists of shape x.shape[:-1] for several;
        return_length=True gives the counts instead (an array of the
        queries' kind). r: a scalar or one radius per query (broadcast to
        x.shape[:-1]). return_sorted: sort each list by index (default: for
        several points yes, for one point no, as scipy). Unsorted lists are
        in kdforge's traversal order. eps is checked and the answer is exact.
        """
        _check_p(p)
        _check_eps(eps)
        _check_workers(workers)
        rows, kind, lead = self._queries(x)
        nq = rows.shape[0]
        radii = self._radii(r, lead, nq, kind, rows)
        rscalar = 0.0 if radii is not None else float(r)
        single = len(lead) == 0
        if return_length:
            counts = A.empty(kind, (nq,), np.int64, like=rows)
            if nq:
                A.synchronize_inputs(rows, radii)
                A.synchronize_outputs(kind, rows)
                for b, e in self._chunks(nq):
                    rref = A.ref(radii[b:e], kind, e - b, None) if radii is not None else _null_ref()
                    self._tree.radius_count(A.ref(rows[b:e], kind, e - b, self.m), rref, rscalar,
                                            A.ref(counts[b:e], kind, e - b, None))
            counts = A.to_kind(counts, kind)
            if single:
                return np.int64(A.to_numpy(counts, kind)[0]) if kind == A.NUMPY else counts.reshape(())
            return counts.reshape(lead)
        if return_sorted is None:
            return_sorted = not single
        out = np.empty(nq, dtype=object)
        if nq:
            A.synchronize_inputs(rows, radii)
            for b, e in self._chunks(nq):
                rref = A.ref(radii[b:e], kind, e - b, None) if radii is not None else _null_ref()
                out[b:e] = self._tree.radius_lists(A.ref(rows[b:e], kind, e - b, self.m), rref, rscalar,
                                                   bool(return_sorted))
        if single:
            return out[0]
        return out.reshape(lead)

    def _csr(self, queries, r, distances=False, sort=False):
        """Radius search rows of `queries` (another tree's data) as host CSR arrays."""
        rows, kind, _ = self._queries(queries, "data")
        nq = rows.shape[0]
        r = _check_radius(r, "r")
        if nq == 0:
            return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0) if distances else None
        A.synchronize_inputs(rows)
        parts = []
        for b, e in self._chunks(nq):
            parts.append(self._tree.radius_csr(A.ref(rows[b:e], kind, e - b, self.m), _null_ref(), r, sort,
                                               distances))
        if len(parts) == 1:
            return parts[0]
        offsets = [parts[0][0]]
        for o, _, _ in parts[1:]:
            offsets.append(o[1:] + offsets[-1][-1])
        return (np.concatenate(offsets), np.concatenate([p[1] for p in parts]),
                np.concatenate([p[2] for p in parts]) if distances else None)

    def count_neighbors(self, other, r, p=2.0, weights=None, cumulative=True):
        """The number of pairs (x1 of self, x2 of other) with distance(x1, x2) <= r,
        as scipy's cKDTree.count_neighbors: r a scalar (an int back) or a 1-D
        array (an int64 array; cumulative=False: pairs per bin
        r[i-1] < d <= r[i], r non-decreasing). One pass per radius; weights
        are not supported."""
        _check_p(p)
        if not isinstance(other, KDTree):
            raise ValueError("kdforge: other must be a kdforge.KDTree")
        if other.m != self.m:
            raise ValueError(f"kdforge: the trees have {self.m} and {other.m} dimensions")
        if weights is not None:
            raise ValueError("kdforge: weighted counts (weights) are not supported")
        rr = np.asarray(A.to_numpy(r, A.kind_of(r)) if A.kind_of(r) != A.NUMPY else r, dtype=np.float64)
        if rr.ndim > 1:
            raise ValueError("r must be either a single value or a one-dimensional array of values")
        if np.isnan(rr).any() or (rr < 0).any():
            raise ValueError("kdforge: every r must be >= 0")
        if not cumulative and rr.ndim == 1 and (np.diff(rr) < 0).any():
            raise ValueError("r must be non-decreasing for non-cumulative counting.")
        flat = rr.reshape(-1)
        if other.n == 0 or self.n == 0 or flat.size == 0:
            counts = np.zeros(flat.size, np.int64)
        else:
            q, kind, _ = self._queries(other.data, "other.data")
            A.synchronize_inputs(q)
            counts = np.zeros(flat.size, np.int64)
            for b, e in self._chunks(q.shape[0]):
                counts += np.asarray(self._tree.count_pairs(A.ref(q[b:e], kind, e - b, self.m),
                                                            [float(v) for v in flat]), dtype=np.int64)
        if not cumulative and flat.size:
            counts = np.concatenate([counts[:1], np.diff(counts)])
        if rr.ndim == 0:
            return int(counts[0])
        return counts

    def query_ball_tree(self, other, r, p=2.0, eps=0):
        """For each point of self, the list of indices of other's points
        within distance r (as scipy; the lists sorted by index)."""
        _check_p(p)
        _check_eps(eps)
        if not isinstance(other, KDTree):
            raise ValueError("kdforge: other must be a kdforge.KDTree")
        if other.m != self.m:
            raise ValueError(f"kdforge: the trees have {self.m} and {other.m} dimensions")
        offsets, idx, _ = other._csr(self.data, r, sort=True)
        flat = idx.tolist()
        return [flat[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]

    def query_pairs(self, r, p=2.0, eps=0, output_type="set"):
        """All pairs (i, j), i < j, of points within distance r of each other:
        a set of tuples, or output_type="ndarray" an (npairs, 2) int64 array
        (sorted, where scipy's order is unspecified)."""
        _check_p(p)
        _check_eps(eps)
        if output_type not in ("set", "ndarray"):
            raise ValueError(f"Invalid output type {output_type!r}")
        offsets, idx, _ = self._csr(self.data, r)
        first = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(offsets))
        keep = first < idx
        pairs = np.stack([first[keep], idx[keep]], axis=1) if keep.any() else np.zeros((0, 2), np.int64)
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        pairs = pairs[order]
        if output_type == "ndarray":
            return pairs
        return set(map(tuple, pairs.tolist()))

    def sparse_distance_matrix(self, other, max_distance, p=2.0, output_type="dok_matrix"):
        """The distances between the points of self and of other no farther
        apart than max_distance, as scipy: output_type "dok_matrix",
        "coo_matrix" (scipy.sparse), "dict" ({(i, j): d}) or "ndarray" (a
        structured array with fields i, j, v)."""
        _check_p(p)
        if not isinstance(other, KDTree):
            raise ValueError("kdforge: other must be a kdforge.KDTree")
        if other.m != self.m:
            raise ValueError(f"kdforge: the trees have {self.m} and {other.m} dimensions")
        if output_type not in ("dok_matrix", "coo_matrix", "dict", "ndarray"):
            raise ValueError(f"Invalid output type {output_type!r}")
        offsets, j, v = other._csr(self.data, max_distance, distances=True, sort=True)
        i = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(offsets))
        if output_type == "ndarray":
            res = np.empty(i.size, dtype=[("i", np.intp), ("j", np.intp), ("v", np.float64)])
            res["i"], res["j"], res["v"] = i, j, v
            return res
        if output_type == "dict":
            return dict(zip(zip(i.tolist(), j.tolist()), v.tolist()))
        import scipy.sparse

        coo = scipy.sparse.coo_matrix((v, (i, j)), shape=(self.n, other.n))
        if output_type == "coo_matrix":
            return coo
        dok = scipy.sparse.dok_matrix((self.n, other.n), dtype=np.float64)
        entries = dict(zip(zip(i.tolist(), j.tolist()), v.tolist()))
        if hasattr(dok, "_update"):
            dok._update(entries)  # keeps the zero distances, as scipy's does
        else:  # pragma: no cover
            for key, val in entries.items():
                dok[key] = val
        return dok


def _null_ref():
    return _kdforge.ArrayRef(0, 0, 1, 1, 1, "d", False)


cKDTree = KDTree

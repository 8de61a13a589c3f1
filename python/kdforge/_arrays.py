"""The caller's arrays as the C++ core reads them.

NumPy arrays (and anything NumPy can turn into one: lists, PyTorch CPU
tensors) are read in place on CPUs and copied to the GPU once per call in a
GPU build. CuPy arrays, PyTorch CUDA tensors and other objects with
``__cuda_array_interface__`` are read in place on the GPU. Results come back
in the caller's kind of array: NumPy for NumPy, CuPy for CuPy (and other
CUDA arrays), torch tensors for torch tensors, on the same device.
"""

import numpy as np

from . import _kdforge

NUMPY, CUPY, TORCH, TORCH_CPU = "numpy", "cupy", "torch", "torch-cpu"

_CODES = {np.dtype(np.float32): "f", np.dtype(np.float64): "d", np.dtype(np.int64): "q"}


def _torch():
    import torch

    return torch


def _cupy():
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - GPU machines only
        raise ValueError("kdforge: results for GPU arrays other than torch tensors are CuPy arrays; "
                         "install CuPy") from e
    return cupy


def kind_of(x):
    """numpy, cupy (any __cuda_array_interface__ object), torch or torch-cpu."""
    mod = type(x).__module__ or ""
    if mod.startswith("torch"):
        return TORCH if getattr(x, "is_cuda", False) else TORCH_CPU
    if hasattr(x, "__cuda_array_interface__"):
        return CUPY
    return NUMPY


def float_dtype(dt):
    """float32 and float64 are kept; every other dtype becomes float64 (as scipy does)."""
    dt = np.dtype(dt)
    return dt if dt in (np.dtype(np.float32), np.dtype(np.float64)) else np.dtype(np.float64)


def _torch_dtype(dt):
    torch = _torch()
    return {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64,
            np.dtype(np.int64): torch.int64}[np.dtype(dt)]


def numpy_dtype(x, kind):
    if kind in (TORCH, TORCH_CPU):
        return np.dtype(str(x.dtype).replace("torch.", ""))
    return np.dtype(x.dtype)


def coerce(x, dtype=None):
    """(array, kind): x as an array of its kind with dtype `dtype` (default:
    float32/float64 kept, the rest float64), never copied when it already is."""
    kind = kind_of(x)
    if kind == NUMPY:
        a = np.asarray(x)
        dt = np.dtype(dtype) if dtype is not None else float_dtype(a.dtype)
        if a.dtype != dt:
            a = a.astype(dt)
        return a, kind
    if kind in (TORCH, TORCH_CPU):
        t = x.detach()
        dt = np.dtype(dtype) if dtype is not None else float_dtype(numpy_dtype(t, kind))
        if numpy_dtype(t, kind) != dt:
            t = t.to(_torch_dtype(dt))
        if kind == TORCH_CPU:
            return t.resolve_conj().numpy(), kind  # shares the tensor's memory
        return t, kind
    cai = x.__cuda_array_interface__
    cur = np.dtype(cai["typestr"])
    dt = np.dtype(dtype) if dtype is not None else float_dtype(cur)
    if cur != dt:
        x = _cupy().asarray(x).astype(dt)
    return x, kind


def shape_of(a, kind):
    if kind == CUPY and not hasattr(a, "shape"):
        return tuple(a.__cuda_array_interface__["shape"])
    return tuple(a.shape)


def _positive_strides(shape, strides, itemsize):
    """Strides in elements, or None where they are not positive multiples of the itemsize."""
    out = []
    for n, s in zip(shape, strides):
        if n <= 1:
            out.append(0)  # any stride will do; C++ picks one
            continue
        if s <= 0 or s % itemsize:
            return None
        out.append(s // itemsize)
    return out


def ref(a, kind, rows, cols):
    """An ArrayRef of `a` viewed as rows x cols (rank 1 when cols is None).
    `a` must already have that many elements in that shape."""
    if kind in (NUMPY, TORCH_CPU):
        arr = a
        itemsize = arr.dtype.itemsize
        strides = _positive_strides(arr.shape, arr.strides, itemsize) if arr.size else [0] * arr.ndim
        if strides is None:
            raise AssertionError("kdforge: internal: strides not normalised")
        ptr = arr.__array_interface__["data"][0]
        dt = _CODES[arr.dtype]
        device = False
    elif kind == TORCH:
        itemsize = a.element_size()
        strides = [s if n > 1 else 0 for n, s in zip(a.shape, a.stride())]
        ptr = a.data_ptr()
        dt = _CODES[numpy_dtype(a, kind)]
        device = True
    else:
        cai = a.__cuda_array_interface__
        itemsize = np.dtype(cai["typestr"]).itemsize
        shape = tuple(cai["shape"])
        st = cai.get("strides")
        if st is None:  # C-contiguous
            st, acc = [], itemsize
            for n in reversed(shape):
                st.insert(0, acc)
                acc *= max(n, 1)
        strides = _positive_strides(shape, st, itemsize)
        ptr = cai["data"][0]
        dt = _CODES[np.dtype(cai["typestr"])]
        device = True
    if cols is None:
        s0 = strides[0] if strides else 1
        return _kdforge.ArrayRef(ptr, rows, 1, s0, 1, dt, device)
    s0, s1 = strides if len(strides) == 2 else (cols, 1)
    return _kdforge.ArrayRef(ptr, rows, cols, s0, s1, dt, device)


def rows_of(a, kind, m):
    """`a` (shape (..., m)) as a 2-D array (-1, m) of its kind with positive
    strides: a view where one exists, else a C-ordered copy."""
    if kind in (NUMPY, TORCH_CPU):
        b = a.reshape(-1, m)
        if b.size and _positive_strides(b.shape, b.strides, b.dtype.itemsize) is None:
            b = np.ascontiguousarray(b)
        return b
    if kind == TORCH:
        b = a.reshape(-1, m)
        if b.numel() and any(s <= 0 for n, s in zip(b.shape, b.stride()) if n > 1):
            b = b.contiguous()
        return b
    cp = _cupy()
    b = cp.asarray(a).reshape(-1, m)
    if b.size and _positive_strides(b.shape, b.strides, b.dtype.itemsize) is None:
        b = cp.ascontiguousarray(b)
    return b


def column(a, kind, n):
    """A 1-D array of its kind with positive stride (a view, or a copy)."""
    if kind in (NUMPY, TORCH_CPU):
        b = a.reshape(n)
        if n > 1 and (b.strides[0] <= 0 or b.strides[0] % b.dtype.itemsize):
            b = np.ascontiguousarray(b)
        return b
    if kind == TORCH:
        b = a.reshape(n)
        return b.contiguous() if n > 1 and b.stride()[0] <= 0 else b
    cp = _cupy()
    b = cp.asarray(a).reshape(n)
    return cp.ascontiguousarray(b) if n > 1 and b.strides[0] <= 0 else b


def empty(kind, shape, dtype, like=None):
    """A new C-ordered array of the caller's kind (on like's device)."""
    dtype = np.dtype(dtype)
    if kind == NUMPY:
        return np.empty(shape, dtype)
    if kind == TORCH_CPU:
        return np.empty(shape, dtype)  # wrapped by to_kind
    if kind == TORCH:
        torch = _torch()
        return torch.empty(shape, dtype=_torch_dtype(dtype), device=like.device)
    cp = _cupy()
    return cp.empty(shape, dtype)


def to_kind(a, kind):
    """A result made by empty() as the caller's kind (torch CPU: a tensor sharing the memory)."""
    if kind == TORCH_CPU:
        return _torch().from_numpy(a)
    return a


def synchronize_inputs(*arrays):
    """Waits for the streams that produced GPU inputs (__cuda_array_interface__ v3)."""
    for a in arrays:
        if a is None:
            continue
        kind = kind_of(a)
        if kind == TORCH:
            _torch().cuda.current_stream(a.device).synchronize()
        elif kind == CUPY:
            stream = a.__cuda_array_interface__.get("stream")
            if stream:
                _kdforge.synchronize_stream(int(stream))


def synchronize_outputs(kind, like):
    """New device arrays may reuse pool memory still read by queued work of
    the caller's stream: wait for it before kdforge writes them."""
    if kind == TORCH:
        _torch().cuda.current_stream(like.device).synchronize()
    elif kind == CUPY:
        _cupy().cuda.get_current_stream().synchronize()


def to_numpy(a, kind):
    if kind in (NUMPY, TORCH_CPU):
        return np.asarray(a)
    if kind == TORCH:
        return a.detach().cpu().numpy()
    return _cupy().asnumpy(a)


def asarray_like(values, kind, like):
    """A NumPy array `values` as the caller's kind (on like's device)."""
    if kind == NUMPY:
        return values
    if kind == TORCH_CPU:
        return _torch().from_numpy(np.ascontiguousarray(values))
    if kind == TORCH:
        return _torch().as_tensor(values, device=like.device)
    return _cupy().asarray(values)

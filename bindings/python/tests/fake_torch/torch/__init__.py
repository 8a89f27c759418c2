"""A stand-in for torch on machines without it (the CPU CI): CPU tensors over
NumPy arrays with the few methods symm and symm.torch use, so their logic
(dispatch, staging, fallback) is tested here; the real torch is tested by
tests/test_torch_gpu.py on the GPU machine. Not a general torch emulation."""
import numpy as np

from . import cuda, distributed  # noqa: F401

__version__ = "0.0-fake"


class _CEntries:
    @staticmethod
    def _cuda_getCurrentRawStream(dev):  # noqa: N802 (torch's spelling)
        return 0


_C = _CEntries() if cuda.is_available() else None  # CUDA entry points only with FAKE_TORCH_CUDA


class _Ops:  # torch.ops: no symm_mem namespace here
    pass


ops = _Ops()


def device(kind, index=None):
    return "%s:%s" % (kind, index) if index is not None else kind


class dtype:
    def __init__(self, name, np_dtype):
        self.name_, self.np = name, np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"

    def __repr__(self):
        return "torch." + self.name_

    __str__ = __repr__


float16, float32, float64 = dtype("float16", "f2"), dtype("float32", "f4"), dtype("float64", "f8")
int8, int16, int32, int64 = (dtype("int8", "i1"), dtype("int16", "i2"), dtype("int32", "i4"),
                             dtype("int64", "i8"))
uint8 = dtype("uint8", "u1")
bool_ = dtype("bool", "?")
_BY_NP = {d.np: d for d in (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)}


class _Device:
    type, index = "cpu", None


class Tensor:
    def __init__(self, arr):
        self.a = arr
        self.dtype = _BY_NP[arr.dtype]
        self.device = _Device()

    shape = property(lambda self: self.a.shape)
    is_cuda = False

    def data_ptr(self):
        return self.a.ctypes.data

    def numel(self):
        return self.a.size

    def element_size(self):
        return self.a.itemsize

    def dim(self):
        return self.a.ndim

    def is_contiguous(self):
        return self.a.flags.c_contiguous

    def stride(self):
        return tuple(st // self.a.itemsize for st in self.a.strides)

    def cpu(self):
        return self

    def fill_(self, v):
        self.a[...] = v
        return self

    def __mul__(self, k):
        return Tensor(self.a * (k.a if isinstance(k, Tensor) else k))

    def __add__(self, k):
        return Tensor(self.a + (k.a if isinstance(k, Tensor) else k))

    def __floordiv__(self, k):
        return Tensor(self.a // (k.a if isinstance(k, Tensor) else k))

    def __eq__(self, k):
        return Tensor(self.a == (k.a if isinstance(k, Tensor) else k))

    __hash__ = object.__hash__

    def __bool__(self):
        return bool(self.a.all())

    def repeat_interleave(self, k):
        return Tensor(np.repeat(self.a, k))

    def view(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], dtype):
            return Tensor(self.a.view(shape[0].np))
        if len(shape) == 1 and isinstance(shape[0], tuple):
            shape = shape[0]
        v = self.a.view()
        v.shape = shape  # raises, like torch, when a copy would be needed
        return Tensor(v)

    def copy_(self, other):
        np.copyto(self.a, other.a.reshape(self.a.shape), casting="unsafe")
        return self

    def div_(self, k):
        if self.a.dtype.kind != "f":
            raise RuntimeError("result type Float can't be cast to the desired output type")
        self.a /= k
        return self

    def t(self):
        return Tensor(self.a.T)

    def __getitem__(self, i):
        return Tensor(self.a[i])

    def numpy(self):
        return self.a

    def tolist(self):
        return self.a.tolist()

    def __repr__(self):
        return "tensor(%r)" % (self.a,)


def from_numpy(a):
    return Tensor(a)


class _Capsule:  # np.from_dlpack takes an object with __dlpack__, not a capsule
    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, stream=None, **kwargs):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def from_dlpack(obj):
    """Zero-copy import: an object with __dlpack__ or a "dltensor" capsule (CPU only)."""
    r = np.from_dlpack(obj if hasattr(obj, "__dlpack__") else _Capsule(obj))
    # NumPy marks unversioned DLPack imports read-only; torch's are writable.
    import ctypes
    span = sum((d - 1) * s for d, s in zip(r.shape, r.strides)) + r.itemsize if r.size else 0
    raw = (ctypes.c_char * max(span, 1)).from_address(r.__array_interface__["data"][0])
    w = np.ndarray(r.shape, r.dtype, buffer=raw, strides=r.strides)
    t = Tensor(w)
    t.keep = r  # the import (and with it the producer's capsule) lives as long as t
    return t


def all(t):  # noqa: A001 (torch's name)
    return bool(t.a.all())


def equal(a, b):
    return a.a.shape == b.a.shape and bool((a.a == b.a).all())


def tensor(data, dtype=float32, device=None):
    return Tensor(np.array(data, dtype=dtype.np))


def zeros(shape, dtype=float32, device=None):
    return Tensor(np.zeros(shape, dtype=dtype.np))


def empty(shape, dtype=float32, device=None):
    return Tensor(np.empty(shape, dtype=dtype.np))


def arange(start, end=None, dtype=float32, device=None):
    return Tensor((np.arange(start) if end is None else np.arange(start, end)).astype(dtype.np))

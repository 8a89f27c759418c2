"""A minimal DLPack producer (DLPack 0.8 ABI: DLManagedTensor in a PyCapsule
named "dltensor"), so torch.from_dlpack / np.from_dlpack / cupy.from_dlpack
can take a symm.Buffer without copying."""
import ctypes

_DTYPES = {  # name: (code, bits); codes: 0 int, 1 uint, 2 float, 4 bfloat
    "int8": (0, 8), "int16": (0, 16), "int32": (0, 32), "int64": (0, 64),
    "uint8": (1, 8), "uint16": (1, 16), "uint32": (1, 32), "uint64": (1, 64),
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _DELETER)]

# address -> (managed struct, shape array, strides array, keep): alive until the consumer calls
# the deleter, or until the capsule dies unconsumed (its destructor, as DLPack
# asks of producers). keep is what the tensor holds: for a host tensor the
# buffer's view root, whose liveness makes free()/finalize() refuse.
_live = {}


@_DELETER
def _delete(p):
    _live.pop(ctypes.addressof(p.contents), None)


# PyCapsule_Destructor. The capsule is passed as a plain address: it is being
# deallocated, so it must not be turned into a Python object again.
_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.restype, _is_valid.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_char_p]


@_CAPSULE_DTOR
def _capsule_gone(cap):
    # a consumer renames the capsule "used_dltensor" and calls the deleter itself
    if _is_valid(cap, b"dltensor"):
        _live.pop(_get_pointer(cap, b"dltensor"), None)


def capsule(addr, shape, dtype_name, device, keep, strides=None):
    """A "dltensor" capsule over addr (shape and optional strides in elements;
    device (type, index): (1, 0) CPU, (2, n) CUDA GPU n). The consumer's
    tensor lives on exactly that device, whatever memory the pointer maps."""
    m = _Managed()
    shp = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    std = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
    code, bits = _DTYPES[dtype_name]
    m.dl_tensor.data = addr
    m.dl_tensor.device = _Device(device[0], device[1])
    m.dl_tensor.ndim = len(shape)
    m.dl_tensor.dtype = _DType(code, bits, 1)
    m.dl_tensor.shape = shp
    m.dl_tensor.strides = std
    m.dl_tensor.byte_offset = 0
    m.deleter = _delete
    _live[ctypes.addressof(m)] = (m, shp, std, keep)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(m), b"dltensor", ctypes.cast(_capsule_gone, ctypes.c_void_p))

"""Contexts, teams and typed symmetric buffers over the C ABI (ctypes)."""
import array
import ctypes
import gc
import numbers
import operator
import os
import struct
import threading
import time
import warnings
import weakref

from . import _ffi, errors
from ._ffi import (LIB, InitAttr, CtxInfo, TeamConfig, UniqueId, DeviceCtx, DeviceTeam,
                   UNIQUE_ID_BYTES)

# ---- constants (values of include/symm/symm.h; checked by tests/test_abi.py) ----
BACKENDS = {"auto": 0, "host": 1, "cuda": 2}
BOOTSTRAPS = {"auto": 0, "env": 1, "uid": 2, "single": 3}
THREAD_LEVELS = {"single": 0, "funneled": 1, "serialized": 2, "multiple": 3}
DTYPES = {"int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "uint16": 6,
          "uint32": 7, "uint64": 8, "float16": 9, "bfloat16": 10, "float32": 11,
          "float64": 12}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}
DTYPE_SIZES = {1: 1, 2: 2, 3: 4, 4: 8, 5: 1, 6: 2, 7: 4, 8: 8, 9: 2, 10: 2, 11: 4, 12: 8}
# struct formats for scalars (bfloat16 is handled apart)
_FMT = {1: "b", 2: "h", 3: "i", 4: "q", 5: "B", 6: "H", 7: "I", 8: "Q", 9: "e", 11: "f", 12: "d"}
TEAMS = {"world": 0, "shared": 1, "node": 2, "same_local_pe": 3}
SIGNAL_OPS = {"set": 0, "add": 1}
CMPS = {"eq": 0, "ne": 1, "gt": 2, "ge": 3, "lt": 4, "le": 5,
        "==": 0, "!=": 1, ">": 2, ">=": 3, "<": 4, "<=": 5}
AMOS = {"fetch": 0, "set": 1, "compare_swap": 2, "swap": 3, "fetch_inc": 4, "inc": 5,
        "fetch_add": 6, "add": 7, "fetch_and": 8, "and": 9, "fetch_or": 10, "or": 11,
        "fetch_xor": 12, "xor": 13}
OPS = {"sum": 0, "prod": 1, "min": 2, "max": 3, "and": 4, "or": 5, "xor": 6}
INDEX_NONE = 0xFFFFFFFFFFFFFFFF
ASYNC_CLEAR = 1
# The start of the message of a heap call's Mismatch when a peer took part
# with arguments it had rejected (runtime/core/heap.c, agree()).
_PEER_REFUSED = "rejected its arguments"
_UINT16, _BFLOAT16 = DTYPES["uint16"], DTYPES["bfloat16"]


# ---- integer arguments ------------------------------------------------------------
#
# ctypes converts a Python int to a C integer by truncation (2**32 becomes PE
# 0, 2**64 + 1 element 1), so every integer is checked against its C type
# first. The common case (an int in range) costs a type test and a chained
# comparison; anything else takes _int, which accepts NumPy integers and
# other __index__ objects and refuses the rest, naming the argument.

_U32_MAX = (1 << 32) - 1
_U64_MAX = (1 << 64) - 1
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1


def _int(v, name, lo, hi, ctype):
    """v as an int in [lo, hi]; ArgumentTypeError / ArgumentOverflow naming it."""
    if v.__class__ is not int:
        try:
            v = operator.index(v)
        except TypeError:
            raise errors.ArgumentTypeError(
                1, "SYMM_ERR_INVALID_ARG", "%s must be an integer, not %s %r"
                % (name, type(v).__name__, v)) from None
    if lo <= v <= hi:
        return v
    raise errors.ArgumentOverflow(1, "SYMM_ERR_INVALID_ARG", "%s = %d is outside %s [%d, %d]"
                                  % (name, v, ctype, lo, hi))


def _u64(v, name):
    if v.__class__ is int and 0 <= v <= _U64_MAX:
        return v
    return _int(v, name, 0, _U64_MAX, "uint64_t")


def _i32(v, name):
    if v.__class__ is int and _I32_MIN <= v <= _I32_MAX:
        return v
    return _int(v, name, _I32_MIN, _I32_MAX, "int32_t")


def _u32(v, name):
    if v.__class__ is int and 0 <= v <= _U32_MAX:
        return v
    return _int(v, name, 0, _U32_MAX, "uint32_t")


def _addr(v, name):
    """A symmetric address given as an int: a pointer, [0, 2**64)."""
    return _int(v, name, 0, _U64_MAX, "a 64-bit address")


def _code(table, value, what):
    if isinstance(value, int):
        return _u32(value, what)
    try:
        return table[str(value).lower()]
    except KeyError:
        raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                     "unknown %s %r (one of %s)" % (what, value, sorted(table)))


def dtype_code(dtype):
    """SYMM_DTYPE_* for a name ("float32"), a NumPy dtype, a torch dtype or a code."""
    if isinstance(dtype, int):
        return _u32(dtype, "dtype")
    name = getattr(dtype, "name", None) or str(dtype)
    name = name.replace("torch.", "")
    name = {"half": "float16", "float": "float32", "double": "float64",
            "int": "int32", "long": "int64", "short": "int16"}.get(name, name)
    return _code(DTYPES, name, "dtype")


def dtype_size(dtype):
    """Bytes of one element of dtype (a name, NumPy/torch dtype or code), as
    the loader answers it (symm_dtype_size; no runtime needed).
    InvalidArgument for a dtype the library does not know."""
    code = dtype_code(dtype)
    size = _lib().symm_dtype_size(code)
    if not size:
        raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                     "symm_dtype_size: unknown dtype %r (code %d)" % (dtype, code))
    return size


def team_config(num_contexts=0):
    """A symm_team_config (ctypes struct) with the library's defaults
    (symm_team_config_init; no runtime needed), num_contexts set (the
    OpenSHMEM hint, >= 0)."""
    num_contexts = _i32(num_contexts, "num_contexts")
    cfg = TeamConfig()
    call("symm_team_config_init", ctypes.byref(cfg), ctypes.sizeof(cfg))
    if num_contexts:
        cfg.num_contexts = num_contexts
    return cfg


def _team_config(config):
    """None, a TeamConfig, or a dict of its fields ({"num_contexts": 2})."""
    if config is None or isinstance(config, TeamConfig):
        return config
    if isinstance(config, dict):
        unknown = sorted(set(config) - {"num_contexts"})
        if unknown:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                         "team config: unknown fields %s (known: num_contexts)"
                                         % unknown)
        return team_config(**config)
    raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                 "team config: a dict or symm_team_config, not %r" % (config,))


# ---- calling the library ----------------------------------------------------

def _lib():
    lib = LIB.get()
    if lib is None:
        raise errors.LibraryNotFound(5, "SYMM_ERR_LIBRARY_NOT_FOUND", LIB.why)
    return lib


def _fail(lib, st):
    name = lib.symm_status_string(st).decode()
    msg = (lib.symm_last_error() or b"").decode(errors="replace")
    return errors.from_status(st, name, msg)


def call(name, *args):
    """Call a symm_* function; raise the status's exception on failure. The
    message is read on this thread right after the call (ctypes releases the
    GIL during the call, but the thread does not change)."""
    lib = _lib()
    fn = getattr(lib, name, None)
    if fn is None:
        raise errors.NotSupported(7, "SYMM_ERR_NOT_SUPPORTED",
                                  "%s: the loader %s does not export it" % (name, LIB.path))
    st = fn(*args)
    if st:
        raise _fail(lib, st)


class _Bound:
    """The loader's functions (_C.symm_put), bound once:
    the first access looks the function up, later ones are a plain attribute
    read (the fast paths of put, p, g, barrier_all and quiet use these)."""

    def __getattr__(self, name):
        lib = _lib()
        fn = getattr(lib, name, None) if name.startswith("symm_") else None
        if fn is None:
            raise errors.NotSupported(7, "SYMM_ERR_NOT_SUPPORTED", "%s: the loader %s does "
                                      "not export it" % (name, LIB.path))
        setattr(self, name, fn)
        return fn


_C = _Bound()


# ---- unprototyped calls (the fast paths) -------------------------------------------
#
# A prototyped ctypes call (argtypes) converts each argument by calling its
# type's from_param, a Python-level call per argument: most of what a small
# call costs from Python. The fast paths of put, p, barrier_all and quiet call
# the same C functions through function objects without argtypes, whose
# arguments ctypes passes without a Python call each: handles as the
# c_void_p objects they already are, a source address as a c_void_p made once
# (put remembers it with its NumPy source), bytes (p's value) as a pointer to
# their storage, and integers as C ints, which libffi widens into the 64-bit
# argument register by sign extension. So the fast paths pass integers only in
# [0, 2**31) for uint64_t parameters (index, count) and int32_t values for
# int32_t ones (pe); anything else takes the prototyped call. The widening is
# libffi's, not C's: it is checked once on this machine (labs(-5) through an
# unprototyped call must be 5: the upper half of the register was filled), and
# only on 64-bit x86 and ARM; elsewhere _F is None and every call is prototyped.

_FAST_MAX = 2 ** 31  # indices and counts below it pass as C ints


def _fast_ok():
    import platform
    if ctypes.sizeof(ctypes.c_void_p) != 8 or ctypes.sizeof(ctypes.c_long) != 8:
        return False
    if platform.machine().lower() not in ("x86_64", "amd64", "aarch64", "arm64"):
        return False
    try:
        libc = ctypes.CDLL(None)
        labs = libc._FuncPtr(("labs", libc))
    except (OSError, AttributeError, TypeError):
        return False
    labs.restype = ctypes.c_long
    return labs(-5) == 5 and labs(2 ** 31 - 1) == 2 ** 31 - 1


class _Unprototyped:
    """The loader's functions without argtypes (restype int32_t), made on
    first use: _F.symm_put(handle, index, c_void_p, count, pe)."""

    def __getattr__(self, name):
        lib = _lib()
        if not name.startswith("symm_") or getattr(lib, name, None) is None:
            raise AttributeError(name)
        fn = lib._FuncPtr((name, lib))
        fn.restype = ctypes.c_int32
        setattr(self, name, fn)
        return fn


_F = _Unprototyped() if _fast_ok() else None


def _raise(st):
    raise _fail(_lib(), st)


# ---- argument order ----------------------------------------------------------------
#
# A buffer method takes its arguments in C's order: (index, data, pe) after the
# buffer (put(index, data, pe), get(index, count_or_out, pe), p(index, value, pe),
# g(index, pe), put_signal(index, data, pe, sig, ...), atomic(index, op, value,
# compare, pe), fetch_add(index, value, pe), compare_swap(index, compare, value,
# pe)), or by keyword (index=, data=/value=, pe=). Release 1.2 took (data, pe,
# index=0). No call is read in an order it may not mean: _resolve binds the
# call to both orders (the number of arguments, the keywords, and the kinds of
# values: an index or a PE is an integer, data is not, an op is a name or a
# code); a call only one order accepts runs in that order (1.2's with a
# DeprecationWarning); a call both accept with different meanings (all
# integers: p(0, 5, 1), get(0, 4, 1), g(0, 1), fetch_add(0, 1, 1),
# compare_swap(0, 1, 2, 1)) is refused, naming both readings: giving pe by
# keyword makes any call C's order. The fast paths of put and p take the
# unambiguous forms (put(i, data, pe), p(i, value, pe=pe)) without it.

_NO = _NOT_GIVEN = type("_NotGiven", (), {"__repr__": lambda self: "<not given>",
                                            "__slots__": ()})()


def _is_index(v):
    """Is v an index (an int, a NumPy integer), as opposed to data?"""
    return v.__class__ is int or isinstance(v, numbers.Integral)


def _deprecated(method, old, new, depth=4):
    warnings.warn("symm.Buffer.%s%s is deprecated: buffer methods take C's order, %s%s (or "
                  "keywords); the old order goes in a later release" % (method, old, method, new),
                  DeprecationWarning, stacklevel=depth)


# What each parameter may hold, for telling the two orders apart.
def _k_int(v):
    return _is_index(v)


def _k_int_or_none(v):
    return v is None or _is_index(v)


def _k_data(v):  # an array, bytes, a tensor: never a number
    return v is not None and not isinstance(v, (numbers.Number, str))


def _k_scalar(v):
    return isinstance(v, numbers.Number) or _DATA_SCALAR(v)


def _k_scalar_or_none(v):
    return v is None or _k_scalar(v)


def _k_op(v):
    return isinstance(v, str) or _is_index(v)


def _k_any(v):
    return True


def _DATA_SCALAR(v):  # a NumPy scalar (np.float16 is not a numbers.Number)
    return getattr(v, "shape", None) == () and hasattr(v, "dtype")


_KINDS = {"index": _k_int, "pe": _k_int, "sig_index": _k_int, "signal": _k_int,
          "count": _k_int_or_none, "data": _k_data, "out": _k_any, "value": _k_scalar,
          "compare": _k_scalar_or_none, "op": _k_op, "sig_op": _k_op, "sig": _k_data,
          "nbi": _k_any, "stream": _k_any, "on_stream": _k_any}
_RMA_TAIL = ("nbi", "stream", "on_stream")
# method: (C's order, 1.2's order, required in both, defaults); a name in
# C's order that is not in _KINDS takes anything (get's count_or_out).
_ORDERS = {
    "put": (("index", "data", "pe") + _RMA_TAIL, ("data", "pe", "index") + _RMA_TAIL,
            ("data", "pe"), {"index": 0, "nbi": False, "stream": None, "on_stream": False}),
    "get": (("index", "count_or_out", "pe"),
            ("pe", "index", "count", "out") + _RMA_TAIL, ("pe",),
            {"index": 0, "count_or_out": None, "count": None, "out": None, "nbi": False,
             "stream": None, "on_stream": False}),
    "p": (("index", "value", "pe", "stream", "on_stream"),
          ("value", "pe", "index", "stream", "on_stream"), ("value", "pe"),
          {"index": 0, "stream": None, "on_stream": False}),
    "g": (("index", "pe"), ("pe", "index"), ("pe",), {"index": 0}),
    "put_signal": (("index", "data", "pe", "sig", "sig_index", "signal", "sig_op") + _RMA_TAIL,
                   ("data", "pe", "sig", "sig_index", "signal", "sig_op", "index") + _RMA_TAIL,
                   ("data", "pe", "sig", "sig_index", "signal"),
                   {"index": 0, "sig_op": "set", "nbi": False, "stream": None,
                    "on_stream": False}),
    "atomic": (("index", "op", "value", "compare", "pe", "nbi"),
               ("op", "pe", "index", "value", "compare", "nbi"), ("op", "pe"),
               {"index": 0, "value": 0, "compare": None, "nbi": False}),
    "fetch_add": (("index", "value", "pe"), ("value", "pe", "index"), ("value", "pe"),
                  {"index": 0}),
    "compare_swap": (("index", "compare", "value", "pe"), ("compare", "value", "pe", "index"),
                     ("compare", "value", "pe"), {"index": 0}),
}
# keywords C's order takes besides its positionals (get: count=, out= and the
# RMA options; the 1.2 spelling data= of get's second argument)
_EXTRA_KW = {"get": ("count", "out") + _RMA_TAIL}


def _bind(names, extra, required, args, kw, kinds):
    """{name: value} of a call in one order, or None when that order cannot
    take it (too many arguments, an unknown or repeated keyword, a missing
    argument, or (kinds) a value of the wrong kind)."""
    if len(args) > len(names):
        return None
    a = dict(zip(names, args))
    for k, v in kw.items():
        if (k not in names and k not in extra) or k in a:
            return None
        a[k] = v
    for k in required:
        if k not in a:
            return None
    if kinds:
        for k, v in a.items():
            if not _KINDS.get(k, _k_any)(v):
                return None
    return a


def _same(a, b):
    return a is b or (_is_index(a) and _is_index(b) and a == b)


def _shown(v):
    r = repr(v)
    return r if len(r) <= 24 else r[:21] + "..."


def _resolve(method, args, kw, depth=4):
    """The arguments of a buffer method's call, {name: value} with the
    defaults filled in, in the order the call can only mean (see above)."""
    new_names, old_names, required, defaults = _ORDERS[method]
    extra = _EXTRA_KW.get(method, ())
    if method == "get" and "data" in kw and "count_or_out" not in kw:
        kw = dict(kw)
        kw["count_or_out"] = kw.pop("data")
    new = _bind(new_names, extra, required, args, kw, True)
    old = _bind(old_names, (), required, args, kw, True)
    if new is not None and old is not None:
        # the same integers in the same places (p(1, 1, 1)) mean the same call
        if set(new) != set(old) or any(not _same(new[k], old[k]) for k in new):
            before = [k for k in new_names[:new_names.index("pe")] if k in new]
            raise errors.ArgumentTypeError(
                1, "SYMM_ERR_INVALID_ARG",
                "Buffer.%s(%s) is ambiguous: C's order reads it as %s(%s), the 1.2 order as "
                "%s(%s); give pe by keyword for C's order: %s(%s, pe=%s)"
                % (method, ", ".join(_shown(v) for v in args), method,
                   ", ".join("%s=%s" % (k, _shown(new[k])) for k in new_names if k in new),
                   method,
                   ", ".join("%s=%s" % (k, _shown(old[k])) for k in old_names if k in old),
                   method, ", ".join(_shown(new[k]) for k in before), _shown(new["pe"])))
    elif new is None and old is not None:
        _deprecated(method, "(%s)" % ", ".join(old_names[:max(len(args), len(required))]),
                    "(%s)" % ", ".join(new_names[:new_names.index("pe") + 1]), depth)
        new = old
    elif new is None and _bind(new_names, extra, required, args, kw, False) is None and \
            _bind(old_names, (), required, args, kw, False) is not None:
        # only 1.2's order has a place for every argument: its values are
        # wrong (put(1.5, pe)); the checks that follow say which
        _deprecated(method, "(%s)" % ", ".join(old_names[:max(len(args), len(required))]),
                    "(%s)" % ", ".join(new_names[:new_names.index("pe") + 1]), depth)
        new = _bind(old_names, (), required, args, kw, False)
    elif new is None:
        # C's order's own complaint, or the value's (ArgumentTypeError /
        # ArgumentOverflow from the checks that follow)
        if len(args) > len(new_names):
            raise TypeError("Buffer.%s() takes at most %d positional arguments (%d given): "
                            "%s(%s)" % (method, len(new_names), len(args), method,
                                        ", ".join(new_names)))
        new = dict(zip(new_names, args))
        for k, v in kw.items():
            if (k not in new_names and k not in extra) or k in new:
                raise TypeError("Buffer.%s(): %s argument %r: %s(%s)"
                                % (method, "repeated" if k in new else "unexpected", k,
                                   method, ", ".join(new_names + extra)))
            new[k] = v
        for k in required:
            if k not in new:
                raise TypeError("Buffer.%s() missing argument %r: %s(%s)"
                                % (method, k, method, ", ".join(new_names)))
    for k, v in defaults.items():
        new.setdefault(k, v)
    return new


# ---- waiting on the main thread --------------------------------------------------
#
# A C wait cannot be left before its condition holds, and Python runs signal
# handlers (KeyboardInterrupt) on the main thread only, between bytecodes. So
# the main thread does not block in the C waits: it polls their non-blocking
# forms (symm_test*, symm_signal_fetch), with Python running between polls,
# on the C waits' own schedule (spin, yield for 20 ms, then 50 us naps). The
# first poll is the whole cost of a wait whose condition already holds: one
# C call, as before. Other threads never see signals and call the C waits.

_MAIN_IDENT = threading.main_thread().ident
_get_ident = threading.get_ident
_monotonic = time.monotonic
_sleep = time.sleep
_yield = getattr(os, "sched_yield", lambda: time.sleep(0))
_SPINS = 128
_YIELD_S = 0.02
_NAP_S = 50e-6


def _on_main():
    """True on the thread that receives KeyboardInterrupt."""
    return _get_ident() == _MAIN_IDENT


def _poll(done):
    """Call done() until it returns true; signal handlers run between calls,
    so KeyboardInterrupt (or a handler's exception) ends the wait at once."""
    for _ in range(_SPINS):
        if done():
            return
    start = _monotonic()
    while not done():
        if _monotonic() - start < _YIELD_S:
            _yield()
        else:
            _sleep(_NAP_S)


# comparisons of symm_signal_wait_until on the value symm_signal_fetch read
_CMP_FN = (lambda a, b: a == b, lambda a, b: a != b, lambda a, b: a > b,
           lambda a, b: a >= b, lambda a, b: a < b, lambda a, b: a <= b)


def available():
    """True when symm can be used here: a loader and a runtime were found and
    agree on the ABI. Never raises; initialises nothing."""
    lib = LIB.get()
    return lib is not None and lib.symm_loader_probe() == 0


def probe():
    """Like available(), but raises LibraryNotFound / AbiMismatch with the
    list of everything that was tried."""
    call("symm_loader_probe")


_set_runtime = [None]  # the path given to set_runtime(), for runtime_path() before a load


def set_runtime(path):
    """Use the runtime at ``path`` (before anything loaded it). SYMM_RUNTIME
    in the environment still wins. InvalidState once the runtime was looked for."""
    call("symm_loader_set_runtime", None if path is None else str(path).encode())
    _set_runtime[0] = None if path is None else str(path)


def loader_version():
    """The loader's version as (major, minor, patch)."""
    v = ctypes.c_uint32()
    call("symm_loader_get_version", ctypes.byref(v))
    return (v.value // 1000000, v.value // 1000 % 1000, v.value % 1000)


def runtime_version():
    """The loaded runtime's version as (major, minor, patch) (loads it)."""
    v = ctypes.c_uint32()
    call("symm_get_version", ctypes.byref(v))
    return (v.value // 1000000, v.value // 1000 % 1000, v.value % 1000)


def runtime_path():
    """Path of the runtime: the one the loader opened, or before anything
    loaded it, the one it will try first (SYMM_RUNTIME, set_runtime(), the
    runtime beside the loader: the wheel's symm/_lib/). "" when there is no
    loader, or when the loader will search the system's library path."""
    lib = LIB.get()
    if lib is None:
        return ""
    got = (lib.symm_loader_runtime_path() or b"").decode()
    if got:
        return got
    # Not loaded yet: the loader's order (loader/symm_loader.c, symm__load_once).
    first = os.environ.get("SYMM_RUNTIME") or _set_runtime[0]
    if first:
        return first if os.path.exists(first) else ""
    if LIB.path and os.sep in LIB.path:
        beside = os.path.join(os.path.dirname(os.path.realpath(LIB.path)), _ffi.RUNTIME_SONAME)
        if os.path.exists(beside):
            return beside
    return ""


def loader_path():
    """Path of the loader this package uses, or None."""
    LIB.get()
    return LIB.path


def get_include():
    """The folder to pass to the C compiler (-I) for ``#include <symm/symm.h>``:
    the wheel's symm/include (or a source checkout's include/). Like
    numpy.get_include(); no loader or runtime needed. LibraryNotFound when
    this copy of the package has no header."""
    h = _ffi.package_file("include", "symm", "symm.h")
    if h is None:  # the package imported from a source checkout (PYTHONPATH)
        tree = os.path.join(os.path.dirname(os.path.dirname(_ffi.HERE)), os.pardir, "include")
        h = os.path.join(os.path.normpath(tree), "symm", "symm.h")
    if not os.path.exists(h):
        raise errors.LibraryNotFound(5, "SYMM_ERR_LIBRARY_NOT_FOUND",
                                     "symm.get_include: this symm package has no symm/symm.h "
                                     "(looked in %s)" % os.path.dirname(os.path.dirname(h)))
    return os.path.dirname(os.path.dirname(h))


def get_library_dir():
    """The folder holding the loader libsymm.so.1 this package uses (the
    wheel's symm/_lib, with the runtime, symmrun, symm-info, the transport
    plugins in symm/ and pkgconfig/symm.pc): link C programs with
    ``-L DIR -l:libsymm.so.1 -Wl,-rpath,DIR``. LibraryNotFound when the
    package found no loader, or only a bare name on the system's search path."""
    lib = _ffi.package_file("_lib", _ffi.LOADER_SONAME)
    if lib is None:
        LIB.get()
        lib = LIB.path if LIB.cdll is not None and LIB.path and os.sep in LIB.path else None
    if lib is None:
        raise errors.LibraryNotFound(5, "SYMM_ERR_LIBRARY_NOT_FOUND",
                                     "symm.get_library_dir: no loader file (%s) found%s"
                                     % (_ffi.LOADER_SONAME, "" if LIB.why is None
                                        else "\n" + LIB.why))
    return os.path.dirname(os.path.realpath(lib))


def unique_id():
    """A new job id (bytes) for UID bootstrap: make it on rank 0, send it to the others."""
    uid = UniqueId()
    call("symm_get_unique_id", ctypes.byref(uid))
    return bytes(uid.bytes)


# ---- local memory -------------------------------------------------------------

def _stream_handle(stream):
    """A raw CUstream from None (legacy default), an int, a torch/CuPy stream."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return _addr(stream, "stream") or None
    for attr in ("cuda_stream", "ptr", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v or None
    raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "not a CUDA stream: %r" % (stream,))


class _Local:
    """Address and size of caller memory: buffer-protocol objects (NumPy,
    bytearray, memoryview), CUDA arrays (__cuda_array_interface__: CuPy,
    Numba) and torch tensors. keep holds what must stay alive."""

    __slots__ = ("addr", "nbytes", "keep")

    def __init__(self, obj, writable):
        self.keep = obj
        if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # torch.Tensor
            if not obj.is_contiguous():
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "tensor is not contiguous")
            self.addr, self.nbytes = obj.data_ptr(), obj.numel() * obj.element_size()
            return
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            if cai.get("strides") not in (None, ()):
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "array is not contiguous")
            n = 1
            for d in cai["shape"]:
                n *= d
            itemsize = int(cai["typestr"][2:])
            self.addr, self.nbytes = cai["data"][0], n * itemsize
            return
        if isinstance(obj, (bytes, str)):
            if writable:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "destination is read-only")
            data = obj.encode() if isinstance(obj, str) else obj
            arr = (ctypes.c_char * max(len(data), 1)).from_buffer_copy(data or b"\0")
            self.keep, self.addr, self.nbytes = arr, ctypes.addressof(arr), len(data)
            return
        mv = memoryview(obj)
        if not mv.c_contiguous:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "buffer is not C-contiguous")
        if mv.readonly:
            if writable:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "destination is read-only")
            arr = (ctypes.c_char * max(mv.nbytes, 1)).from_buffer_copy(mv.tobytes() or b"\0")
            self.keep, self.addr, self.nbytes = arr, ctypes.addressof(arr), mv.nbytes
            return
        cbuf = (ctypes.c_char * mv.nbytes).from_buffer(mv.cast("B")) if mv.nbytes else None
        self.keep = (obj, mv, cbuf)
        self.addr = ctypes.addressof(cbuf) if cbuf is not None else 0
        self.nbytes = mv.nbytes


# ---- the element type of caller data ----------------------------------------------

# dtype object (NumPy, torch, CuPy) or format/typestr -> SYMM_DTYPE_* code, 0 for
# a type symm has not (bool, complex, big-endian, structured), None for raw bytes
_DATA_CODES = {}
# memoryview / array.array formats (native or little-endian on every host symm runs on)
_FORMATS = {"b": "int8", "h": "int16", "H": "uint16", "i": "int32", "I": "uint32",
            "l": "int%d" % (8 * struct.calcsize("l")), "L": "uint%d" % (8 * struct.calcsize("L")),
            "q": "int64", "Q": "uint64", "n": "int64", "N": "uint64", "e": "float16",
            "f": "float32", "d": "float64"}
_TYPESTR_KINDS = {"i": "int", "u": "uint", "f": "float"}


def _learn_code(key, name):
    try:
        code = dtype_code(name) if name else 0
    except errors.InvalidArgument:
        code = 0
    try:
        _DATA_CODES[key] = code
    except TypeError:  # an unhashable dtype object: not cached
        pass
    return code


def _data_code(obj):
    """The SYMM_DTYPE_* code of obj's elements: by its dtype (NumPy, torch,
    CuPy), its __cuda_array_interface__ typestr or its buffer format
    (array.array, typed memoryviews); None for untyped bytes (bytes,
    bytearray, str, format "B" or "c"); 0 for a type symm does not have."""
    dt = getattr(obj, "dtype", None)
    if dt is not None:
        try:
            return _DATA_CODES[dt]
        except (KeyError, TypeError):
            name = getattr(dt, "name", None) or str(dt).replace("torch.", "")
            return _learn_code(dt, None if getattr(dt, "isnative", True) is False else name)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        t = cai.get("typestr", "")
        if t in _DATA_CODES:
            return _DATA_CODES[t]
        kind = _TYPESTR_KINDS.get(t[1:2])
        ok = kind and t[:1] in "<|=" and t[2:].isdigit()
        return _learn_code(t, "%s%d" % (kind, 8 * int(t[2:])) if ok else None)
    try:
        fmt = memoryview(obj).format
    except TypeError:
        return None  # str, or not a buffer at all (_Local says so)
    if fmt in ("B", "c", "<B", "=B", "@B", "<c", "@c"):
        return None
    if fmt in _DATA_CODES:
        return _DATA_CODES[fmt]
    f = fmt[1:] if fmt[:1] in "<=@" else fmt
    return _learn_code(fmt, _FORMATS.get(f) if fmt[:1] not in ">!" else None)


def _type_name(obj):
    dt = getattr(obj, "dtype", None)
    if dt is not None:
        return str(dt).replace("torch.", "")
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return "typestr %r" % cai.get("typestr")
    return "format %r" % memoryview(obj).format


def _address(obj, what):
    """(address, nbytes or None) of a symmetric address: an int, a Buffer
    (its element 0 on this PE), or an array/tensor viewing heap memory (a
    NumPy view of Buffer.numpy(), a tensor from Context.tensor(), ...)."""
    if isinstance(obj, bool):
        raise errors.ArgumentTypeError(1, "SYMM_ERR_INVALID_ARG",
                                       "%s: not an address: %r" % (what, obj))
    if isinstance(obj, int):
        return _addr(obj, what), None
    if isinstance(obj, ctypes.c_void_p):
        return obj.value or 0, None
    if isinstance(obj, Buffer):
        obj.handle
        return obj.ptr, obj.nbytes
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # torch.Tensor
        if not obj.is_contiguous():
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "%s: tensor is not contiguous" % what)
        return obj.data_ptr(), obj.numel() * obj.element_size()
    for attr in ("__cuda_array_interface__", "__array_interface__"):
        ai = getattr(obj, attr, None)
        if ai is not None:
            if ai.get("strides") not in (None, ()):
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "%s: array is not contiguous" % what)
            n = int(ai["typestr"][2:])
            for d in ai["shape"]:
                n *= d
            return ai["data"][0], n
    raise errors.ArgumentTypeError(
        1, "SYMM_ERR_INVALID_ARG",
        "%s: a symmetric address is an int, a Buffer or an array/tensor over the heap, not %s"
        % (what, type(obj).__name__))


def _scalar(dtype, value, name="value"):
    """A ctypes buffer holding one element of dtype; a value the dtype cannot
    hold raises ArgumentOverflow / ArgumentTypeError naming it (struct would
    say neither which argument nor why)."""
    size = DTYPE_SIZES[dtype]
    try:
        if dtype == DTYPES["bfloat16"]:
            bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
            bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
            raw = struct.pack("<H", bits & 0xFFFF)
        else:
            raw = struct.pack("<" + _FMT[dtype], value)
    except (struct.error, OverflowError, TypeError, ValueError) as e:
        if dtype < DTYPES["float16"]:  # an integer dtype
            if isinstance(value, float) or not hasattr(value, "__index__"):
                raise errors.ArgumentTypeError(
                    1, "SYMM_ERR_INVALID_ARG", "%s must be an integer for a %s buffer, not %s %r"
                    % (name, DTYPE_NAMES[dtype], type(value).__name__, value)) from None
            lo, hi = ((-(1 << (8 * size - 1)), (1 << (8 * size - 1)) - 1)
                      if dtype <= DTYPES["int64"] else (0, (1 << (8 * size)) - 1))
            raise errors.ArgumentOverflow(
                1, "SYMM_ERR_INVALID_ARG", "%s = %r is outside %s [%d, %d]"
                % (name, value, DTYPE_NAMES[dtype], lo, hi)) from None
        if isinstance(e, OverflowError):
            raise errors.ArgumentOverflow(
                1, "SYMM_ERR_INVALID_ARG", "%s = %r does not fit %s (%s)"
                % (name, value, DTYPE_NAMES[dtype], e)) from None
        raise errors.ArgumentTypeError(
            1, "SYMM_ERR_INVALID_ARG", "%s must be a number for a %s buffer, not %s %r"
            % (name, DTYPE_NAMES[dtype], type(value).__name__, value)) from None
    return (ctypes.c_char * size).from_buffer_copy(raw)


def _unscalar(dtype, buf):
    raw = bytes(buf)
    if dtype == DTYPES["bfloat16"]:
        return struct.unpack("<f", struct.pack("<I", struct.unpack("<H", raw)[0] << 16))[0]
    return struct.unpack("<" + _FMT[dtype], raw)[0]


def _status_array(status, n):
    if status is None:
        return None
    arr = (ctypes.c_int32 * max(n, 1))(*[int(bool(s)) for s in status])
    return arr


# ---- Ctrl-C inside a blocking C call -----------------------------------------------
#
# A barrier or collective runs in C with the GIL released; Python's SIGINT
# handler only sets a flag that is read when the call returns, which for a PE
# waiting on peers may be never. The runtime watches a descriptor for this
# (SYMM_INTERRUPT_FD, docs/BAD-INPUT.md "Ctrl-C"): once it is readable, the PE
# gives up the job, its waiting call returns and the pending KeyboardInterrupt
# is raised. Python's wakeup fd receives a byte per signal with a Python
# handler; a daemon thread passes on SIGINT's only (another handled signal,
# SIGCHLD say, must not end the job). The variable is set only around
# symm_init, so child processes never inherit a descriptor number they lack.

_intr = {"fd": None}


def _interrupt_fd():
    """The descriptor to give the runtime, or None (not the main thread,
    another wakeup fd in use, or the user named one in SYMM_INTERRUPT_FD)."""
    if _intr["fd"] is not None:  # a later context: an earlier Ctrl-C must not end this one
        try:
            while os.read(_intr["fd"], 64):
                pass
        except BlockingIOError:
            pass
        return _intr["fd"]
    if "SYMM_INTERRUPT_FD" in os.environ:
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    import signal
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    try:
        old = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    except (ValueError, OSError):
        os.close(wake_r), os.close(wake_w)
        return None
    if old != -1:  # someone else's (asyncio): leave it in place
        signal.set_wakeup_fd(old)
        os.close(wake_r), os.close(wake_w)
        return None
    intr_r, intr_w = os.pipe()
    os.set_blocking(intr_r, False)

    def relay():
        while True:
            try:
                got = os.read(wake_r, 64)
            except OSError:
                return
            if not got:
                return
            if signal.SIGINT in got:
                try:
                    os.write(intr_w, b"\x03")
                except OSError:
                    pass

    threading.Thread(target=relay, name="symm-sigint", daemon=True).start()
    _intr["fd"] = intr_r
    return intr_r


# ---- context ----------------------------------------------------------------------

class Context:
    """Membership of one job and its symmetric heap (symm_init / symm_finalize).

    Use ``with symm.init() as ctx:``; leaving the block finalizes (collective).
    Thread-safe (the runtime's default thread level is MULTIPLE); collectives
    on one team must not run concurrently from several threads.
    """

    def __init__(self, backend="auto", bootstrap="auto", *, heap_cap=0, device=-1,
                 timeout_ms=0, unique_id=None, rank=None, n_pes=None, thread_level="multiple"):
        attr = InitAttr()
        call("symm_init_attr_init", ctypes.byref(attr), ctypes.sizeof(attr))
        attr.backend = _code(BACKENDS, backend, "backend")
        attr.thread_level = _code(THREAD_LEVELS, thread_level, "thread level")
        attr.heap_cap = _u64(heap_cap, "heap_cap")
        attr.device = _i32(device, "device")
        attr.timeout_ms = _u32(timeout_ms, "timeout_ms")
        if unique_id is not None:
            if len(unique_id) != UNIQUE_ID_BYTES or rank is None or n_pes is None:
                raise errors.InvalidArgument(
                    1, "SYMM_ERR_INVALID_ARG",
                    "UID bootstrap needs the %d-byte id, rank and n_pes" % UNIQUE_ID_BYTES)
            attr.bootstrap = BOOTSTRAPS["uid"]
            ctypes.memmove(attr.unique_id.bytes, bytes(unique_id), UNIQUE_ID_BYTES)
            attr.rank, attr.n_pes = _i32(rank, "rank"), _i32(n_pes, "n_pes")
        else:
            attr.bootstrap = _code(BOOTSTRAPS, bootstrap, "bootstrap")
        h = ctypes.c_void_p()
        fd = _interrupt_fd()
        if fd is None:
            call("symm_init", ctypes.byref(attr), ctypes.byref(h))
        else:
            os.environ["SYMM_INTERRUPT_FD"] = str(fd)
            try:
                call("symm_init", ctypes.byref(attr), ctypes.byref(h))
            finally:
                del os.environ["SYMM_INTERRUPT_FD"]
        self._h = h
        self._lock = threading.Lock()
        self._bufs = {}  # handle value -> Buffer (live)
        self._held = []  # freed Buffers whose memory a host view on some PE still sees
        self._abandoned = []  # handles of contexts left to the process's exit (views)
        self._pending = []  # sources/destinations of nbi calls, kept until quiet
        # A new object after each completed host quiet (nbi fetch results are
        # readable once it is no longer the one of their call): a plain
        # attribute store, so quiet and barrier_all take no lock for it.
        self._quiet_gen = object()
        info = self.query()
        lib = _lib()
        self.my_pe, self.n_pes = lib.symm_my_pe(h), lib.symm_n_pes(h)
        self.backend = {1: "host", 2: "cuda"}.get(info["backend"], str(info["backend"]))
        self.device = info["device"]

    # lifecycle
    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        # A failure inside the block may mean peers are gone: still release
        # everything local; report the finalize error only if nothing else failed.
        try:
            self.finalize()
        except errors.Error:
            if exc_type is None:
                raise

    def finalize(self):
        """Leave the job (collective). Buffers still allocated are released too.

        While a host view of one of its buffers (numpy(), memoryview(),
        torch() or DLPack on the host backend, or an array made from one) is
        alive on any PE, unmapping the heap would leave the view pointing at
        nothing: then every PE leaves the context to the process's exit
        instead (they agree on it first), so the views stay readable; the
        context is finalized as far as this package is concerned."""
        if self._h is None or not self._h.value:
            return
        with self._lock:
            bufs = list(self._bufs.values()) + self._held
            for b in bufs:
                b._closing = True  # no new views from here on
        h = self._h
        abandon = self._views_on_any_pe(bufs)
        with self._lock:
            for b in bufs:
                b._h = None
            self._bufs.clear()
            self._held = []
        self._h = None
        if abandon:
            self._abandoned.append(h)  # released by the process's exit
            return
        call("symm_finalize", ctypes.byref(h))

    # ---- memory that host views still see ----
    #
    # A host view (NumPy array, memoryview, DLPack tensor over this PE's copy)
    # keeps what it views: free() of a buffer that a view on some PE still
    # sees frees it for the program (the handle is invalid) but not the
    # memory, on any PE (the heap stays symmetric): the buffer is "held", and
    # every later alloc()/register()/free() of the context first tries again
    # to release each held buffer, collectively, until no PE has a view.
    # Whether some PE has a view is learnt from the allocation agreement
    # every PE makes anyway: a PE with a view takes part with an argument
    # the library rejects, so the call fails on every PE and changes nothing
    # (its peers get Mismatch, "PE k rejected its arguments").

    def _take_part_refusing(self):
        """This PE's part in the heap agreement its peers are in (a free, an
        alloc), refused: the call fails everywhere and changes nothing."""
        try:
            call("symm_buf_alloc", self.handle, 0xFFFFFFFF, 0, ctypes.byref(ctypes.c_void_p()))
        except errors.InvalidArgument:
            pass

    def _release(self, b, collect):
        """Free b's memory on every PE unless a host view of it is alive on
        one (collective); True when freed. collect: look again after a
        garbage collection before deciding this PE has a view."""
        if b._viewed() and collect:
            gc.collect()  # views in reference cycles the collector has not reached yet
        if b._viewed():
            self._take_part_refusing()
            return False
        try:
            call("symm_buf_free", b._ch)
        except errors.Mismatch as e:
            if _PEER_REFUSED in e.message:
                return False
            raise
        return True

    def _release_held(self):
        """Try to release every held buffer (collective: every PE holds the
        same ones, in the same order)."""
        for b in list(self._held):
            if self._release(b, False):
                with self._lock:
                    self._held.remove(b)

    def _views_on_any_pe(self, bufs):
        """Has any PE a host view of one of bufs? (collective: an allocation
        agreement; a PE without views asks for 0 bytes, freed by finalize)."""
        mine = any(b._viewed() for b in bufs)
        if mine:
            gc.collect()
            mine = any(b._viewed() for b in bufs)
        if mine:
            self._take_part_refusing()
            return True
        try:
            call("symm_buf_alloc", self.handle, DTYPES["uint8"], 0,
                 ctypes.byref(ctypes.c_void_p()))
        except errors.Mismatch as e:
            return _PEER_REFUSED in e.message
        except errors.Error:
            pass  # (a failed job: finalize says so)
        return False

    def __del__(self):
        # No collective behind the user's back: an unfinalized context is
        # released by the process's exit (the runtime cleans up after itself).
        pass

    @property
    def handle(self):
        """The raw symm_ctx handle (ctypes c_void_p); InvalidHandle once finalized."""
        if self._h is None:
            raise errors.InvalidHandle(2, "SYMM_ERR_INVALID_HANDLE", "context was finalized")
        return self._h

    def query(self):
        """symm_ctx_query as a dict."""
        info = CtxInfo()
        info.struct_size = ctypes.sizeof(info)
        call("symm_ctx_query", self.handle, ctypes.byref(info))
        return {f: getattr(info, f) for f, _ in CtxInfo._fields_ if f != "struct_size"}

    def async_error(self, clear=False):
        """The first failure recorded after its call returned (a stream
        operation, a GPU wait that gave up) as (status, message); (0, "") when
        none. clear=True resets the record."""
        st = ctypes.c_int32()
        msg = ctypes.create_string_buffer(512)
        call("symm_ctx_async_error", self.handle, ASYNC_CLEAR if clear else 0, 512,
             ctypes.byref(st), msg)
        return st.value, msg.value.decode(errors="replace")

    def raise_async_error(self, clear=True):
        """Raise the recorded asynchronous failure, if any."""
        st, msg = self.async_error(clear)
        if st:
            raise errors.from_status(st, _lib().symm_status_string(st).decode(), msg)

    # buffers
    def alloc(self, dtype, count, shape=None):
        """A symmetric buffer of count elements (collective; zeroed). A dtype
        the library does not know, or a count outside uint64_t, still takes
        part in the allocation (as a code the library rejects): this rank
        raises InvalidArgument (ArgumentOverflow for the count), the others
        Mismatch naming it, and nobody waits."""
        try:
            code, bad = dtype_code(dtype), None
        except errors.InvalidArgument as e:
            code, bad = 0xFFFFFFFF, e
        try:
            count = _u64(count, "count")
        except errors.InvalidArgument as e:
            code, count, bad = 0xFFFFFFFF, 0, bad or e
        self._release_held()
        h = ctypes.c_void_p()
        try:
            call("symm_buf_alloc", self.handle, code, count, ctypes.byref(h))
        except errors.InvalidArgument:
            if bad is None:
                raise
        if bad is not None:
            raise bad
        b = Buffer(self, h, code, count, shape)
        with self._lock:
            self._bufs[h.value] = b
        return b

    def array(self, shape, dtype="float32"):
        """A symmetric buffer shaped like an array (collective)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = 1
        for i, d in enumerate(shape):
            n *= _int(d, "shape[%d]" % i, 0, _U64_MAX, "a dimension")
        return self.alloc(dtype, n, shape)

    def tensor(self, shape, dtype=None):
        """A torch.Tensor on the symmetric heap (CUDA backend): zero-copy view
        of a new buffer, which stays allocated while the tensor lives and is
        freed with free_tensor(t) (collective)."""
        import torch
        dtype = dtype or torch.float32
        b = self.array(shape, str(dtype).replace("torch.", ""))
        return b.torch()

    def buffer_of(self, obj):
        """The Buffer whose memory holds obj (a tensor/array from tensor() or
        a view of a buffer), or None."""
        addr = _Local(obj, False).addr
        with self._lock:
            for b in self._bufs.values():
                if b._h is not None and b.ptr <= addr < b.ptr + max(b.nbytes, 1):
                    return b
        return None

    def free_tensor(self, t):
        """Free the buffer under a tensor from tensor() (collective). On the
        host backend the tensor is a view, which keeps the memory until it is
        gone (see Buffer.free)."""
        b = self.buffer_of(t)
        if b is None:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "not a symm tensor")
        b.free()

    def peer_tensor(self, t, pe):
        """A tensor over pe's copy of the symmetric tensor t (load/store
        reachable peers: same GPU or NVLink/P2P); NotSupported otherwise.
        Same shape, strides and dtype as t, and on t's device (the GPU that
        issues the loads/stores), although the memory is pe's: writes by
        kernels on it land in pe's copy. Keep t alive while it is used."""
        import torch
        from ._dlpack import _DTYPES, capsule
        name = str(t.dtype).replace("torch.", "")
        if name not in _DTYPES:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                         "peer_tensor: dtype %s has no symm type" % (t.dtype,))
        out = ctypes.c_void_p()
        call("symm_ptr", self.handle, ctypes.c_void_p(t.data_ptr()), _i32(pe, "pe"),
             ctypes.byref(out))
        if not out.value:
            raise errors.NotSupported(7, "SYMM_ERR_NOT_SUPPORTED",
                                      "PE %d is not load/store reachable from PE %d" % (pe, self.my_pe))
        # DLPack, not __cuda_array_interface__: torch takes the device of a
        # CUDA-array-interface pointer from cudaPointerGetAttributes, which
        # for a peer GPU's memory names the peer GPU, and as_tensor(device=)
        # would then copy. DLPack states the device.
        dev = (2, t.device.index) if getattr(t, "is_cuda", False) else (1, 0)
        cap = capsule(out.value, tuple(t.shape), name, dev, keep=(self, t),
                      strides=tuple(t.stride()))
        return torch.from_dlpack(cap)

    # teams
    def team(self, which="world"):
        """A predefined team: "world", "shared", "node", "same_local_pe"."""
        h = ctypes.c_void_p()
        call("symm_team_get", self.handle, _code(TEAMS, which, "team"), ctypes.byref(h))
        return Team(self, h, predefined=True)

    @property
    def world(self):
        """The world team (every PE of the context)."""
        return self.team("world")

    # ordering and synchronisation
    def quiet(self, stream=None, on_stream=False):
        """Complete every put/get/atomic this PE issued (nbi included); stream=/on_stream=True:
        enqueued on that stream instead."""
        if on_stream or stream is not None:
            call("symm_quiet_on_stream", self.handle, _stream_handle(stream))
        else:
            h = self._h
            if h is None:
                self.handle
            st = _F.symm_quiet(h) if _F is not None else _C.symm_quiet(h)
            if st:
                _raise(st)
            if self._pending:
                with self._lock:
                    self._pending.clear()
            self._quiet_gen = object()

    def fence(self):
        """Order this PE's earlier puts and atomics to each PE before its later ones to that PE."""
        call("symm_fence", self.handle)

    def barrier_all(self, stream=None, on_stream=False):
        """Quiet, then wait until every PE arrived (collective); stream=/on_stream=True: a barrier
        ordered on that stream."""
        if on_stream or stream is not None:
            call("symm_barrier_all_on_stream", self.handle, _stream_handle(stream))
            return
        h = self._h
        if h is None:
            self.handle  # raises InvalidHandle
        st = _F.symm_barrier_all(h) if _F is not None else _C.symm_barrier_all(h)
        if st:
            _raise(st)
        if self._pending:
            with self._lock:
                self._pending.clear()
        self._quiet_gen = object()

    def ctx_lock(self):
        """The lock guarding this context's Python-side tables (buffers, kept nbi objects)."""
        return self._lock

    def _keep_until_quiet(self, obj):
        with self._lock:
            self._pending.append(obj)

    def sync_all(self):
        """Wait until every PE arrived (collective), without completing outstanding operations."""
        call("symm_sync_all", self.handle)

    # raw symmetric addresses
    def ptr(self, sym_addr, pe):
        """Address at which this process reaches pe's copy of a symmetric
        address, or None when pe is not load/store reachable."""
        out = ctypes.c_void_p()
        call("symm_ptr", self.handle, ctypes.c_void_p(_addr(sym_addr, "sym_addr")),
             _i32(pe, "pe"), ctypes.byref(out))
        return out.value

    def putmem(self, dest, data, pe, nbi=False, stream=None, on_stream=False):
        """Write the bytes of data (any contiguous buffer, array or tensor) to
        pe's copy of the symmetric address dest (symm_putmem).

        dest is an address inside this PE's heap, naming the same offset on
        pe: an int (``buf.ptr + byte_offset``), a Buffer (its element 0) or
        an array/tensor viewing heap memory (``buf.numpy()[4:]``, a tensor
        from tensor()). [dest, dest + nbytes) must lie inside the heap
        (OutOfBounds). nbi=True: symm_putmem_nbi, complete at quiet(); the
        source is kept referenced until then. stream=/on_stream=True:
        symm_putmem_on_stream, enqueued (already asynchronous: no nbi form;
        keep the returned source alive until the stream passes)."""
        addr = _address(dest, "putmem dest")[0]
        loc = _Local(data, False)
        args = (self.handle, ctypes.c_void_p(addr), ctypes.c_void_p(loc.addr), loc.nbytes,
                _i32(pe, "pe"))
        self._mem_call(("symm_putmem", "symm_putmem_nbi", "symm_putmem_on_stream"), args, loc.keep,
                       nbi, stream, on_stream)
        return loc.keep

    def getmem(self, src, pe, nbytes=None, out=None, nbi=False, stream=None, on_stream=False):
        """Read nbytes of pe's copy of the symmetric address src (an int, a
        Buffer or a heap view, as in putmem) into out (any writable
        contiguous buffer; default a new bytearray) and return out
        (symm_getmem). nbytes defaults to out's size, else to src's when src
        is a Buffer or a view. nbi=True: symm_getmem_nbi, out is written by
        quiet() and kept referenced until then. stream=/on_stream=True:
        symm_getmem_on_stream."""
        addr, src_bytes = _address(src, "getmem src")
        if nbytes is None:
            if out is not None:
                nbytes = _Local(out, True).nbytes
            elif src_bytes is not None:
                nbytes = src_bytes
            else:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "getmem: give nbytes or out for an int address")
        nbytes = _u64(nbytes, "nbytes")
        if out is None:
            out = bytearray(nbytes)
        loc = _Local(out, True)
        if nbytes > loc.nbytes:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                         "getmem: out holds %d bytes, %d asked" % (loc.nbytes, nbytes))
        args = (self.handle, ctypes.c_void_p(loc.addr), ctypes.c_void_p(addr), nbytes,
                _i32(pe, "pe"))
        self._mem_call(("symm_getmem", "symm_getmem_nbi", "symm_getmem_on_stream"), args, loc.keep,
                       nbi, stream, on_stream)
        return out

    def _mem_call(self, names, args, keep, nbi, stream, on_stream):
        """One putmem/getmem call: names = (blocking, nbi, stream) C entries;
        an nbi call keeps `keep` referenced until the next quiet()."""
        blocking, nbi_name, stream_name = names
        if on_stream or stream is not None:
            if nbi:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "%s: the stream form has no nbi variant" % blocking[5:])
            call(stream_name, *args, _stream_handle(stream))
        else:
            call(nbi_name if nbi else blocking, *args)
        if nbi:
            self._keep_until_quiet(keep)

    def register(self, obj, dtype=None, count=None, shape=None):
        """Make existing memory symmetric (symm_buf_register; collective):
        every PE passes its own object (a tensor, CUDA array or buffer) of
        count elements of dtype (defaults: obj's dtype and size). CUDA
        backend only, for memory from cuMemCreate with POSIX fd handles
        mapped with cuMemMap; the host backend raises NotSupported. The
        returned Buffer keeps obj referenced until free(), which unregisters
        it without freeing the memory (the memory stays yours)."""
        loc = _Local(obj, True)
        if dtype is None:
            dtype = getattr(obj, "dtype", None)
            if dtype is None:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "register: give dtype (%s has none)" % type(obj).__name__)
        code = dtype_code(dtype)
        size = DTYPE_SIZES.get(code)
        if count is None:
            if not size:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "register: unknown dtype %r" % (dtype,))
            count = loc.nbytes // size
        count = _u64(count, "count")
        if size and count * size > loc.nbytes:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                         "register: %d %s elements need %d bytes; the object has %d"
                                         % (count, DTYPE_NAMES[code], count * size, loc.nbytes))
        self._release_held()
        h = ctypes.c_void_p()
        call("symm_buf_register", self.handle, ctypes.c_void_p(loc.addr), code, count,
             ctypes.byref(h))
        b = Buffer(self, h, code, count, shape)
        b._registered = loc.keep
        with self._lock:
            self._bufs[h.value] = b
        return b

    def device_ctx(self):
        """The symm_device_ctx (a ctypes struct) for CUDA kernels."""
        d = DeviceCtx()
        d.struct_size = ctypes.sizeof(d)
        call("symm_device_ctx_get", self.handle, ctypes.byref(d))
        return d


def init(*args, **kwargs):
    """Join the job (symmrun, torchrun, Open MPI, Slurm environment; or a
    unique id with rank and n_pes) and return a Context. See Context."""
    return Context(*args, **kwargs)


class _CudaView:
    """__cuda_array_interface__ over raw device memory (for torch.as_tensor/CuPy)."""

    _TYPESTR = {"float16": "<f2", "bfloat16": "<f2", "float32": "<f4", "float64": "<f8",
                "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
                "uint8": "|u1", "uint16": "<u2", "uint32": "<u4", "uint64": "<u8"}

    def __init__(self, addr, shape, dtype, device, keep):
        name = str(dtype).replace("torch.", "")
        self.keep = keep
        self.__cuda_array_interface__ = {
            "shape": tuple(shape), "typestr": self._TYPESTR[name], "data": (addr, False),
            "version": 3, "strides": None, "stream": None}


# ---- teams ----------------------------------------------------------------------

_STREAM_FORMS = {
    "symm_broadcast": "symm_broadcast_on_stream",
    "symm_fcollect": "symm_fcollect_on_stream",
    "symm_alltoall": "symm_alltoall_on_stream",
    "symm_alltoallv": "symm_alltoallv_on_stream",
    "symm_reduce": "symm_reduce_on_stream",
    "symm_reducescatter": "symm_reducescatter_on_stream",
}


class Team:
    """An ordered subset of a context's PEs. Split teams are destroyed with
    destroy() (collective); nothing collective runs behind the user's back.

    Collectives: every PE passes the same dst and src buffers and indices (an
    in-place gather's src is its own block of dst) and is in place or not
    alike; the blocking forms raise Mismatch otherwise, the stream forms cannot
    check. Collectives on different teams may run in different threads."""

    def __init__(self, ctx, h, predefined=False):
        self.ctx, self._h, self.predefined = ctx, h, predefined

    @property
    def handle(self):
        """The raw symm_team handle (ctypes c_void_p); InvalidHandle once destroyed."""
        if self._h is None:
            raise errors.InvalidHandle(2, "SYMM_ERR_INVALID_HANDLE", "team was destroyed")
        return self._h

    @property
    def my_pe(self):
        """This PE's number in the team."""
        return _lib().symm_team_my_pe(self.handle)

    @property
    def n_pes(self):
        """How many PEs the team has."""
        return _lib().symm_team_n_pes(self.handle)

    def translate(self, pe, to_team):
        """Number in to_team of this team's PE pe, or -1."""
        return _lib().symm_team_translate_pe(self.handle, _i32(pe, "pe"), to_team.handle)

    def split_strided(self, start, stride, size, config=None):
        """New team of PEs start, start+stride, ... (collective over this team);
        None on PEs outside it. config: None, {"num_contexts": n} or a
        symm.team_config() struct."""
        cfg = _team_config(config)
        h = ctypes.c_void_p()
        call("symm_team_split_strided", self.handle, _i32(start, "start"),
             _i32(stride, "stride"), _i32(size, "size"),
             None if cfg is None else ctypes.byref(cfg), ctypes.byref(h))
        return Team(self.ctx, h) if h.value else None

    def split_2d(self, xrange, xconfig=None, yconfig=None):
        """(row team, column team) of a 2-D grid with rows of xrange PEs;
        configs as in split_strided."""
        xc, yc = _team_config(xconfig), _team_config(yconfig)
        x, y = ctypes.c_void_p(), ctypes.c_void_p()
        call("symm_team_split_2d", self.handle, _i32(xrange, "xrange"),
             None if xc is None else ctypes.byref(xc), None if yc is None else ctypes.byref(yc),
             ctypes.byref(x), ctypes.byref(y))
        return (Team(self.ctx, x) if x.value else None, Team(self.ctx, y) if y.value else None)

    def config(self):
        """The team's configuration as a dict ({"num_contexts": n};
        symm_team_get_config)."""
        cfg = team_config()
        call("symm_team_get_config", self.handle, ctypes.byref(cfg))
        return {f: getattr(cfg, f) for f, _ in TeamConfig._fields_ if f != "struct_size"}

    def device_team(self):
        """The symm_device_team (a ctypes struct) for CUDA kernels
        (symm_device_team_get). NotSupported on the host backend and for
        teams whose PEs are not evenly strided."""
        d = DeviceTeam()
        d.struct_size = ctypes.sizeof(d)
        call("symm_device_team_get", self.handle, ctypes.byref(d))
        return d

    def destroy(self):
        """Destroy a split team (collective over it)."""
        if self._h is None or self.predefined:
            if self.predefined:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "predefined teams belong to the context")
            return
        h, self._h = self._h, None
        call("symm_team_destroy", h)

    def barrier(self, stream=None, on_stream=False):
        """Quiet, then wait for every PE of the team (collective); stream=: ordered on that stream."""
        if on_stream or stream is not None:
            call("symm_barrier_on_stream", self.handle, _stream_handle(stream))
        else:
            call("symm_barrier", self.handle)

    def sync(self, stream=None, on_stream=False):
        """Wait for every PE of the team (collective), no quiet; stream=: ordered on that stream."""
        if on_stream or stream is not None:
            call("symm_team_sync_on_stream", self.handle, _stream_handle(stream))
        else:
            call("symm_team_sync", self.handle)

    # collectives: dst/src are Buffers; nelems defaults to what fits
    def _coll(self, name, dst, dst_index, src, src_index, nelems, extra, stream, on_stream):
        args = [self.handle, dst.handle, _u64(dst_index, "dst_index"), src.handle,
                _u64(src_index, "src_index"), _u64(nelems, "nelems")]
        args += extra
        if on_stream or stream is not None:
            call(_STREAM_FORMS[name], *args, _stream_handle(stream))
        else:
            call(name, *args)

    def broadcast(self, dst, src, nelems=None, root=0, dst_index=0, src_index=0, stream=None,
                  on_stream=False):
        """dst[dst_index:] on every PE receives root's src[src_index:] (nelems elements;
        collective)."""
        n = max(src.count - _u64(src_index, "src_index"), 0) if nelems is None else nelems
        self._coll("symm_broadcast", dst, dst_index, src, src_index, n, [_i32(root, "root")],
                   stream, on_stream)

    def fcollect(self, dst, src, nelems=None, dst_index=0, src_index=0, stream=None,
                 on_stream=False):
        """dst receives every PE's nelems elements of src, in team order (collective; equal
        counts)."""
        n = max(src.count - _u64(src_index, "src_index"), 0) if nelems is None else nelems
        self._coll("symm_fcollect", dst, dst_index, src, src_index, n, [], stream, on_stream)

    def collect(self, dst, src, nelems, dst_index=0, src_index=0):
        """dst receives every PE's src block in team order; nelems may differ per PE (collective)."""
        call("symm_collect", self.handle, dst.handle, _u64(dst_index, "dst_index"), src.handle,
             _u64(src_index, "src_index"), _u64(nelems, "nelems"))

    def alltoall(self, dst, src, nelems=None, dst_index=0, src_index=0, stream=None,
                 on_stream=False):
        """Block j (nelems elements) of src goes to PE j's dst block i (i: this PE; collective)."""
        n = (max(src.count - _u64(src_index, "src_index"), 0) // self.n_pes if nelems is None
             else nelems)
        self._coll("symm_alltoall", dst, dst_index, src, src_index, n, [], stream, on_stream)

    def alltoallv(self, dst, src, send_counts, recv_counts, dst_nelems=None, src_nelems=None,
                  dst_index=0, src_index=0, send_index=0, recv_index=0, stream=None,
                  on_stream=False):
        """Variable-size all-to-all with the counts in symmetric memory
        (symm_alltoallv, since ABI 1.2; MoE dispatch and combine, like
        PyTorch's all_to_all_vdev). Collective over the team; n = n_pes.

        This PE sends send_counts[send_index + j] elements to team PE j. The
        counts are read from symmetric memory when the call (or the stream)
        gets there, and peers read them too, so counts that a kernel just
        computed need no copy to the host.

        - src: src_nelems elements from src_index (default: the rest of src),
          packed in team order: the elements for PE 0, then for PE 1, ...
        - send_counts: a "uint64" or "int64" Buffer, n entries from
          send_index.
        - dst: room for dst_nelems elements from dst_index (default: the rest
          of dst); receives PE 0's elements for this PE, then PE 1's, ...
          (packed); elements past the received ones keep their values.
        - recv_counts: "uint64" or "int64", 2 * n entries from recv_index,
          written: [j] how many elements came from PE j, [n + j] where they
          start in dst, relative to dst_index.

        dst and src have one dtype; every buffer belongs to this context; the
        dst, src, send_counts and recv_counts ranges must not overlap (src
        with send_counts may). src_index, src_nelems and send_index must be
        the same on every PE (peers are read at this PE's offsets): the
        blocking form raises Mismatch otherwise (also on the peers of a PE
        whose own arguments were wrong), the stream form cannot check.
        Counts are read as uint64 (a negative int64 count is a huge one).

        OutOfBounds on the PE concerned only, the others finish normally and
        the team stays usable: when its send counts add up to more than
        src_nelems (it still receives what lies in range for it); or when
        what it would receive exceeds dst_nelems, or a peer's elements for it
        lie beyond that peer's src_nelems: then it copies nothing into dst
        but still writes recv_counts (what would have come).

        Combine (the reverse exchange) is the same call with the forward
        call's recv_counts (its first n entries: recv_index) as send_counts
        and its dst as src: every element returns to the slot it left from.

        stream=/on_stream=True: symm_alltoallv_on_stream, enqueued (on CUDA
        one kernel that reads the counts on the GPU;
        graph-capturable). Its status is about the arguments: an
        OutOfBounds found on the GPU is recorded on the context
        (Context.async_error / raise_async_error), and recv_counts says what
        would have come. On the host backend it runs at once and raises as
        the blocking form. A runtime older than 1.2 raises NotSupported."""
        di, si = _u64(dst_index, "dst_index"), _u64(src_index, "src_index")
        dn = max(dst.count - di, 0) if dst_nelems is None else dst_nelems
        sn = max(src.count - si, 0) if src_nelems is None else src_nelems
        args = (self.handle, dst.handle, di, _u64(dn, "dst_nelems"), src.handle, si,
                _u64(sn, "src_nelems"), send_counts.handle, _u64(send_index, "send_index"),
                recv_counts.handle, _u64(recv_index, "recv_index"))
        if on_stream or stream is not None:
            call(_STREAM_FORMS["symm_alltoallv"], *args, _stream_handle(stream))
        else:
            call("symm_alltoallv", *args)

    def reduce(self, dst, src, op="sum", nelems=None, dst_index=0, src_index=0, stream=None,
               on_stream=False):
        """dst = op over every PE of src, element-wise (all-reduce; sum, prod, min, max, and, or,
        xor; collective)."""
        n = max(src.count - _u64(src_index, "src_index"), 0) if nelems is None else nelems
        self._coll("symm_reduce", dst, dst_index, src, src_index, n, [_code(OPS, op, "op")],
                   stream, on_stream)

    def reducescatter(self, dst, src, op="sum", nelems=None, dst_index=0, src_index=0,
                      stream=None, on_stream=False):
        """This PE's dst receives block my_pe of the reduction of every PE's src (collective)."""
        n = (max(src.count - _u64(src_index, "src_index"), 0) // self.n_pes if nelems is None
             else nelems)
        self._coll("symm_reducescatter", dst, dst_index, src, src_index, n,
                   [_code(OPS, op, "op")], stream, on_stream)


# ---- buffers ----------------------------------------------------------------------

# the per-element-value forms of the set waits and tests
_VECTOR_FORMS = {
    "symm_wait_until_all": "symm_wait_until_all_vector",
    "symm_wait_until_any": "symm_wait_until_any_vector",
    "symm_wait_until_some": "symm_wait_until_some_vector",
    "symm_test_all": "symm_test_all_vector",
    "symm_test_any": "symm_test_any_vector",
    "symm_test_some": "symm_test_some_vector",
}


class FetchResult:
    """The prior value of a non-blocking fetching atomic (Buffer.atomic(...,
    nbi=True)): .value once the context completed a quiet() or barrier_all()
    after the call."""

    __slots__ = ("_ctx", "_dtype", "_raw", "_epoch")

    def __init__(self, ctx, dtype, raw, epoch):
        self._ctx, self._dtype, self._raw, self._epoch = ctx, dtype, raw, epoch

    @property
    def ready(self):
        """True once a quiet completed after the call."""
        return self._ctx._quiet_gen is not self._epoch

    @property
    def value(self):
        """The fetched value; InvalidState before the next quiet."""
        if not self.ready:
            raise errors.InvalidState(18, "SYMM_ERR_INVALID_STATE",
                                      "symm_atomic_nbi: the fetched value is written by the next "
                                      "quiet (call ctx.quiet() first)")
        return _unscalar(self._dtype, self._raw)

    def __repr__(self):
        return "<symm.FetchResult %s>" % (repr(self.value) if self.ready else "pending")


class Buffer:
    """A typed symmetric allocation: every PE has one at the same offset.

    Element indices are bounds-checked by the library. free() is collective
    and explicit; a Buffer that is never freed is released by the context's
    finalize (never by the garbage collector).

    Host views (numpy(), memoryview(), torch() and DLPack on the host
    backend, and every array made from them) see this PE's copy in place and
    keep it: after free() a view still sees this buffer's memory (never the
    next buffer), and after finalize() the memory stays mapped (see free()
    and Context.finalize()).
    """

    def __init__(self, ctx, h, dtype, count, shape=None):
        self.ctx, self._h, self.dtype, self.count = ctx, h, dtype, count
        self._registered = None  # the caller's object under a registered buffer
        # Every host view holds the ctypes array _root() returns (NumPy keeps
        # its buffer's exporter, DLPack its capsule's keep), so the weak
        # reference is alive exactly while a view is.
        self._root_ref = None
        self._closing = False  # free()/finalize() under way: no new views
        self._ch = h  # the C handle, also while the buffer is held (see Context._release)
        self.shape = tuple(shape) if shape else (count,)
        self.itemsize = DTYPE_SIZES[dtype]
        # put's last NumPy source: (array, address, dtype, nbytes, address as a
        # c_void_p, element count for the unprototyped call or None)
        self._src = None
        # one element as bytes for p() (bfloat16: _scalar rounds)
        self._pack = struct.Struct("<" + _FMT[dtype]).pack if dtype in _FMT else None
        self.nbytes = count * self.itemsize
        p = ctypes.c_void_p()
        call("symm_buf_ptr", h, ctypes.byref(p))
        self.ptr = p.value or 0
        off = ctypes.c_uint64()
        call("symm_buf_query", h, None, None, ctypes.byref(off))
        self.offset = off.value

    @property
    def handle(self):
        """The raw symm_buf handle (ctypes c_void_p); InvalidHandle once freed."""
        if self._h is None:
            raise errors.InvalidHandle(2, "SYMM_ERR_INVALID_HANDLE", "buffer was freed")
        return self._h

    @property
    def dtype_name(self):
        """The element type's name ("float32", ...)."""
        return DTYPE_NAMES[self.dtype]

    def free(self):
        """Free on every PE (collective).

        While a host view of this buffer (numpy(), memoryview(), torch() or
        DLPack on the host backend, or an array made from one) is alive on
        any PE, its memory is kept: the buffer is freed for the program (its
        handle is invalid) and the views keep seeing it, never another
        buffer; the memory is released by a later alloc(), register() or
        free() of the context once no PE has a view, or by finalize()."""
        if self._h is None:
            return
        ctx = self.ctx
        ctx._release_held()
        with ctx._lock:
            self._closing = True  # no new views from here on
        try:
            freed = ctx._release(self, True)
        except BaseException:
            self._closing = False
            raise
        with ctx._lock:
            ctx._bufs.pop(self._ch.value, None)
            if not freed:
                ctx._held.append(self)
        self._h = None
        self._registered = None

    def _viewed(self):
        """True while a host view of this buffer is alive."""
        return self._root_ref is not None and self._root_ref() is not None

    def _root(self):
        """The ctypes array over this PE's copy that every host view holds
        (made again once the last view is gone)."""
        with self.ctx._lock:
            if self._h is None or self._closing:
                raise errors.InvalidHandle(2, "SYMM_ERR_INVALID_HANDLE", "buffer was freed")
            root = self._root_ref() if self._root_ref is not None else None
            if root is None:
                root = (ctypes.c_char * self.nbytes).from_address(self.ptr)
                self._root_ref = weakref.ref(root)
            return root

    def __repr__(self):
        return "<symm.Buffer %s[%d] offset=%d%s>" % (self.dtype_name, self.count, self.offset,
                                                     "" if self._h is not None else " freed")

    # zero-copy views
    def numpy(self):
        """A NumPy array over this PE's copy (host backend: host memory),
        zero-copy. It (and every array made from it) keeps the memory it sees
        past free() and finalize() (see Buffer)."""
        import numpy as np
        if self.ctx.backend != "host":
            raise errors.NotSupported(7, "SYMM_ERR_NOT_SUPPORTED",
                                      "numpy() views host memory; this buffer is on the GPU "
                                      "(use torch() or __cuda_array_interface__)")
        self.handle
        name = self.dtype_name
        np_dtype = np.uint16 if name == "bfloat16" else np.dtype(name)
        if self.nbytes == 0:
            return np.zeros(self.shape, dtype=np_dtype)
        return np.frombuffer(self._root(), dtype=np_dtype).reshape(self.shape)

    def memoryview(self):
        """The buffer protocol over this PE's copy (host backend), zero-copy.
        It keeps the memory it sees past free() and finalize() (see Buffer)."""
        if self.ctx.backend != "host":
            raise errors.NotSupported(7, "SYMM_ERR_NOT_SUPPORTED", "host memory only")
        self.handle
        if self.nbytes == 0:
            return memoryview(bytearray())
        return memoryview(self._root()).cast("B")

    @property
    def __cuda_array_interface__(self):
        if self.ctx.backend != "cuda":
            raise AttributeError("__cuda_array_interface__: not GPU memory")
        self.handle
        return _CudaView(self.ptr, self.shape, self.dtype_name, self.ctx.device,
                         None).__cuda_array_interface__

    def torch(self):
        """A torch.Tensor viewing this PE's copy (zero-copy). On the host
        backend it is a host view, which keeps the memory (see Buffer); on
        GPUs keep the buffer allocated while the tensor is used."""
        import torch
        name = self.dtype_name
        if self.ctx.backend != "cuda":
            import numpy as np
            t = torch.from_numpy(self.numpy())
            return t.view(torch.bfloat16) if name == "bfloat16" else t
        view = _CudaView(self.ptr, self.shape, name, self.ctx.device, keep=self)
        t = torch.as_tensor(view, device="cuda:%d" % self.ctx.device)
        return t.view(torch.bfloat16) if name == "bfloat16" else t

    def __dlpack_device__(self):
        return (2, self.ctx.device) if self.ctx.backend == "cuda" else (1, 0)

    def __dlpack__(self, stream=None, **kwargs):
        from ._dlpack import capsule
        self.handle
        # a host tensor is a host view (it keeps the root until its deleter runs)
        keep = self._root() if self.ctx.backend == "host" and self.nbytes else self
        return capsule(self.ptr, self.shape, self.dtype_name, self.__dlpack_device__(), keep=keep)

    def _check_type(self, obj, what):
        """obj's elements must be of this buffer's dtype (bfloat16 buffers:
        also uint16, NumPy's spelling of bfloat16 bits); untyped bytes pass."""
        code = _data_code(obj)
        if code is None or code == self.dtype or (code == _UINT16 and self.dtype == _BFLOAT16):
            return
        raise errors.ArgumentTypeError(
            1, "SYMM_ERR_INVALID_ARG",
            "%s is %s, the buffer %s: no conversion is made (convert it first, e.g. "
            ".astype(%r); raw bytes are taken as they are)"
            % (what, _type_name(obj), self.dtype_name,
               "uint16" if self.dtype == _BFLOAT16 else self.dtype_name))

    @property
    def registered(self):
        """True for a buffer from Context.register() (caller's memory)."""
        return self._registered is not None

    def addr(self, index=0):
        """Symmetric address of element index on this PE (for Context.putmem /
        getmem / ptr); index may be count (one past the end)."""
        self.handle
        index = _u64(index, "index")
        if index > self.count:
            raise errors.OutOfBounds(3, "SYMM_ERR_OUT_OF_BOUNDS",
                                     "index %d is outside [0, %d]" % (index, self.count))
        return self.ptr + index * self.itemsize

    def peer_ptr(self, pe):
        """Address of pe's copy (element 0) if load/store reachable, else None."""
        p = ctypes.c_void_p()
        call("symm_buf_peer_ptr", self.handle, _i32(pe, "pe"), ctypes.byref(p))
        return p.value

    # RMA
    def _source(self, data, what):
        """(address for ctypes, nbytes, what to keep alive) of caller data of
        this buffer's dtype (ArgumentTypeError otherwise). The last NumPy
        array seen is remembered with its address (_src): reading
        __array_interface__ costs more than the C call. The reference held
        also keeps NumPy from resizing that array in place (ndarray.resize
        refuses while another reference exists), so the address stays true."""
        cls = data.__class__
        if cls is bytes:  # ctypes passes a bytes object's own storage: no copy
            return data, len(data), data
        if cls.__module__ == "numpy" and cls.__name__ == "ndarray":
            ai = data.__array_interface__
            if ai["strides"] is None and data.dtype.isnative:
                if _DATA_CODES.get(data.dtype) != self.dtype:
                    self._check_type(data, what)
                addr, nbytes = ai["data"][0], data.nbytes
                n = nbytes // self.itemsize
                fast = (_F is not None and n * self.itemsize == nbytes and 0 < n < _FAST_MAX)
                self._src = (data, addr, data.dtype, nbytes, ctypes.c_void_p(addr),
                             n if fast else None)
                return addr, data.nbytes, data
        elif cls is array.array:
            self._check_type(data, what)
            addr, n = data.buffer_info()
            return addr, n * data.itemsize, data
        loc = _Local(data, False)
        self._check_type(data, what)
        return loc.addr, loc.nbytes, loc.keep

    def put(self, index=_NO, data=_NO, _pe=_NO, /, *more, pe=_NO, **kw):
        """put(index, data, pe, nbi=False, stream=None, on_stream=False)

        Write data (any contiguous buffer, array or tensor of this dtype) to
        pe's copy starting at element index (C's order; keywords index=,
        data=, pe= work too). nbi / stream forms keep the source until quiet /
        until the stream passes (the object is referenced until then only by
        you: keep it alive).

        data of another dtype raises ArgumentTypeError naming both (nothing is
        converted: ``data.astype(buf.dtype_name)`` first); untyped bytes
        (bytes, bytearray, a memoryview of bytes) are taken byte for byte.
        The 1.2 order put(data, pe, index=0) still works and warns."""
        src = self._src
        if (src is not None and src[0] is data and index.__class__ is int and
                _pe.__class__ is int and not kw and not more and pe is _NO and
                0 <= index < _FAST_MAX and _I32_MIN <= _pe <= _I32_MAX and src[5] and
                data.dtype is src[2] and data.nbytes == src[3] and self._h is not None):
            # the NumPy array of the last call, as it was, C's order: one
            # unprototyped call (src[4]: its address as a c_void_p, src[5]:
            # its element count, None where the fast path cannot pass it)
            st = _F.symm_put(self._h, index, src[4], src[5], _pe)
            if st:
                _raise(st)
            return data
        nbi = stream = on_stream = None
        if (kw or more or index.__class__ is not int or (_pe is _NO) is (pe is _NO)
                or data is _NO):
            a = _resolve("put", tuple(x for x in (index, data, _pe) if x is not _NO) + more,
                         kw if pe is _NO else dict(kw, pe=pe))
            index, data, pe = a["index"], a["data"], a["pe"]
            nbi, stream, on_stream = a["nbi"], a["stream"], a["on_stream"]
        elif pe is _NO:
            pe = _pe
        if index.__class__ is not int or not 0 <= index <= _U64_MAX:
            index = _u64(index, "index")
        if pe.__class__ is not int or not _I32_MIN <= pe <= _I32_MAX:
            pe = _i32(pe, "pe")
        h = self._h
        if h is None:
            self.handle  # raises InvalidHandle
        src = self._src
        if src is not None and src[0] is data and data.dtype is src[2] and data.nbytes == src[3]:
            addr, nbytes, ptr = src[1], src[3], src[4]  # the array of the last call, as it was
        else:
            addr, nbytes, data = self._source(data, "put: data")
            ptr = data if data.__class__ is bytes else None
            src = self._src
            if ptr is None and src is not None and src[0] is data:
                ptr = src[4]
        n = nbytes // self.itemsize
        if n * self.itemsize != nbytes:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                         "data is %d bytes, not a whole number of %s elements"
                                         % (nbytes, self.dtype_name))
        if on_stream or stream is not None:
            call("symm_put_nbi_on_stream" if nbi else "symm_put_on_stream", h, index, addr, n, pe,
                 _stream_handle(stream))
        elif nbi:
            call("symm_put_nbi", h, index, addr, n, pe)
            self.ctx._keep_until_quiet(data)
        else:
            if _F is not None and ptr is not None and index < _FAST_MAX and n < _FAST_MAX:
                st = _F.symm_put(h, index, ptr, n, pe)
            else:
                st = _C.symm_put(h, index, addr, n, pe)
            if st:
                _raise(st)
        return data

    def get(self, *args, **kw):
        """get(index, count_or_out, pe, count=None, out=None, nbi=False, stream=None,
        on_stream=False)

        Read pe's copy from element index (C's order; keywords index=, pe=,
        count=, out= work too): the second argument is a count (None: to the
        end of the buffer, or as many as out holds) or the destination out.
        Returns out, or a new NumPy array (a bytearray without NumPy). out's
        dtype must be this buffer's, as in put() (ArgumentTypeError
        otherwise). get(index, count, pe) with three integers is ambiguous
        (the 1.2 order get(pe, index=0, count=None, out=None) reads it too):
        it is refused, give pe by keyword; the 1.2 order's other calls still
        work and warn."""
        a = _resolve("get", args, kw)
        index, pe, count, out = a["index"], a["pe"], a["count"], a["out"]
        nbi, stream, on_stream = a["nbi"], a["stream"], a["on_stream"]
        data = a.get("count_or_out")
        if data is not None:
            if _is_index(data):
                count = data
            else:
                out = data
        index = _u64(index, "index")
        pe = _i32(pe, "pe")
        if count is not None:
            count = _u64(count, "count")
        if out is None:
            n = self.count - index if count is None else count
            try:
                import numpy as np
                name = self.dtype_name
                out = np.empty(max(n, 0), dtype=np.uint16 if name == "bfloat16" else name)
            except ImportError:
                out = bytearray(max(n, 0) * self.itemsize)
        loc = _Local(out, True)
        self._check_type(out, "get: out")
        n = loc.nbytes // self.itemsize if count is None else count
        if n * self.itemsize > loc.nbytes:
            raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", "out is too small")
        args = (ctypes.c_void_p(loc.addr), self.handle, index, n, pe)
        if on_stream or stream is not None:
            call("symm_get_nbi_on_stream" if nbi else "symm_get_on_stream", *args,
                 _stream_handle(stream))
        else:
            call("symm_get_nbi" if nbi else "symm_get", *args)
        if nbi:
            self.ctx._keep_until_quiet(loc.keep)
        return out

    def p(self, index=_NO, value=_NO, _pe=_NO, /, *more, pe=_NO, **kw):
        """p(index, value, pe, stream=None, on_stream=False)

        Write one element (C's order; keywords index=, value=, pe= work too).
        p(index, value, pe) with three integers is ambiguous (the 1.2 order
        p(value, pe, index=0) reads it too): it is refused, give pe by keyword,
        p(index, value, pe=pe). The 1.2 order's other calls (p(value, pe))
        still work and warn."""
        stream = on_stream = None
        if (kw or more or _pe is not _NO or pe is _NO or index.__class__ is not int
                or value is _NO):
            a = _resolve("p", tuple(x for x in (index, value, _pe) if x is not _NO) + more,
                         kw if pe is _NO else dict(kw, pe=pe))
            index, value, pe = a["index"], a["value"], a["pe"]
            stream, on_stream = a["stream"], a["on_stream"]
        if index.__class__ is not int or not 0 <= index <= _U64_MAX:
            index = _u64(index, "index")
        if pe.__class__ is not int or not _I32_MIN <= pe <= _I32_MAX:
            pe = _i32(pe, "pe")
        h = self._h
        if h is None:
            self.handle
        pack = self._pack
        try:
            v = pack(value) if pack is not None else _scalar(self.dtype, value)
        except (struct.error, OverflowError, TypeError, ValueError):
            v = _scalar(self.dtype, value)  # raises, naming the value and the dtype
        if on_stream or stream is not None:
            call("symm_p_on_stream", h, index, v, pe, _stream_handle(stream))
        else:
            if _F is not None and index < _FAST_MAX:
                st = _F.symm_p(h, index, v, pe)
            else:
                st = _C.symm_p(h, index, v, pe)
            if st:
                _raise(st)

    def g(self, *args, **kw):
        """g(index, pe=...): read one element of pe's copy.

        g(index, pe) with two integers is ambiguous (the 1.2 order g(pe,
        index=0) reads it too): it is refused, give pe by keyword. g(pe), the
        1.2 form with the index left out, still works and warns."""
        a = _resolve("g", args, kw)
        index, pe = a["index"], a["pe"]
        v = (ctypes.c_char * self.itemsize)()
        call("symm_g", self.handle, _u64(index, "index"), _i32(pe, "pe"), v)
        return _unscalar(self.dtype, v)

    # signals (this buffer is the data; sig a UINT64 buffer)
    def put_signal(self, *args, **kw):
        """put_signal(index, data, pe, sig, sig_index, signal, sig_op="set", nbi=False,
        stream=None, on_stream=False)

        Put data at element index of pe's copy, then update pe's
        sig[sig_index] (sig: a uint64 Buffer; sig_op "set" or "add") after
        the data is visible. data's dtype must be this buffer's, as in put().
        The 1.2 order put_signal(data, pe, sig, sig_index, signal,
        sig_op="set", index=0, ...) still works and warns."""
        a = _resolve("put_signal", args, kw)
        return self._put_signal(a["data"], a["pe"], a["sig"], a["sig_index"], a["signal"],
                                a["sig_op"], a["index"], a["nbi"], a["stream"], a["on_stream"])

    def _put_signal(self, data, pe, sig, sig_index, signal, sig_op, index, nbi, stream,
                    on_stream):
        loc = _Local(data, False)
        self._check_type(data, "put_signal: data")
        n = loc.nbytes // self.itemsize
        args = (self.handle, _u64(index, "index"), ctypes.c_void_p(loc.addr), n, sig.handle,
                _u64(sig_index, "sig_index"), _u64(signal, "signal"),
                _code(SIGNAL_OPS, sig_op, "signal op"), _i32(pe, "pe"))
        if on_stream or stream is not None:
            call("symm_put_signal_on_stream", *args, _stream_handle(stream))
        else:
            call("symm_put_signal_nbi" if nbi else "symm_put_signal", *args)
        return loc.keep

    def signal_op(self, index, value, pe, op="set", stream=None, on_stream=False):
        """Set or add value to pe's signal element index (a UINT64 buffer); stream=: enqueued."""
        args = (self.handle, _u64(index, "index"), _u64(value, "value"),
                _code(SIGNAL_OPS, op, "signal op"), _i32(pe, "pe"))
        if on_stream or stream is not None:
            call("symm_signal_op_on_stream", *args, _stream_handle(stream))
        else:
            call("symm_signal_op", *args)

    def signal_fetch(self, index=0):
        """This PE's signal element index, read atomically."""
        v = ctypes.c_uint64()
        call("symm_signal_fetch", self.handle, _u64(index, "index"), ctypes.byref(v))
        return v.value

    def signal_wait_until(self, index, cmp, value, stream=None, on_stream=False):
        """Wait until this PE's signal compares true; returns the value seen
        (None for the stream form). On the main thread the wait polls, so
        KeyboardInterrupt ends it (nothing is changed: call it again)."""
        c = _code(CMPS, cmp, "comparison")
        h, i, val = self.handle, _u64(index, "index"), _u64(value, "value")
        if on_stream or stream is not None:
            call("symm_signal_wait_until_on_stream", h, i, c, val, _stream_handle(stream))
            return None
        v = ctypes.c_uint64()
        if _get_ident() != _MAIN_IDENT or not 0 <= c < len(_CMP_FN):
            call("symm_signal_wait_until", h, i, c, val, ctypes.byref(v))
            return v.value
        fn, ref = _CMP_FN[c], ctypes.byref(v)
        try:
            call("symm_signal_fetch", h, i, ref)
        except errors.Error:  # an argument error: the wait's own message, at once
            call("symm_signal_wait_until", h, i, c, val, ref)
            return v.value
        if fn(v.value, val):
            return v.value
        want, sat = ctypes.c_uint64(val), ctypes.c_int32()
        wref, sref = ctypes.byref(want), ctypes.byref(sat)

        def done():
            call("symm_signal_fetch", h, i, ref)
            if fn(v.value, val):
                return True
            call("symm_test", h, i, c, wref, sref)  # PeerFailed once a peer is lost
            return False

        _poll(done)
        return v.value

    # atomics
    def atomic(self, *args, **kw):
        """atomic(index, op, value=0, compare=None, pe=..., nbi=False)

        An atomic op on pe's element index (C's order: index, op, value,
        compare, pe; keywords work too, and pe is needed); returns the prior
        value for fetching ops (fetch*, swap, compare_swap), else None.

        nbi=True (symm_atomic_nbi): returns at once; a fetching op returns a
        FetchResult whose .value is readable after the context's next
        quiet() or barrier_all() (InvalidState before); its storage is kept
        referenced until then. The 1.2 order atomic(op, pe, index=0,
        value=0, compare=None) (the op first) still works and warns; with the
        op as a number code and pe given positionally the two orders can read
        the same integers: such a call is refused, give pe by keyword."""
        a = _resolve("atomic", args, kw)
        return self._atomic(a["op"], a["pe"], a["index"], a["value"], a["compare"], a["nbi"])

    def _atomic(self, op, pe, index, value, compare, nbi):
        code = _code(AMOS, op, "atomic op")
        v = _scalar(self.dtype, value)
        c = _scalar(self.dtype, compare, "compare") if compare is not None else None
        fetched = (ctypes.c_char * self.itemsize)()
        args = (self.handle, _u64(index, "index"), code, v, c, _i32(pe, "pe"), fetched)
        fetching = code in (0, 2, 3, 4, 6, 8, 10, 12)
        if nbi:
            epoch = self.ctx._quiet_gen
            call("symm_atomic_nbi", *args)
            self.ctx._keep_until_quiet(fetched)
            return FetchResult(self.ctx, self.dtype, fetched, epoch) if fetching else None
        call("symm_atomic", *args)
        if fetching:
            return _unscalar(self.dtype, fetched)
        return None

    def fetch_add(self, *args, **kw):
        """fetch_add(index, value, pe=...): add value to pe's element index
        atomically; returns the value before. fetch_add(index, value, pe)
        with three integers is ambiguous (the 1.2 order fetch_add(value, pe,
        index=0) reads it too): it is refused, give pe by keyword. The 1.2
        fetch_add(value, pe) still works and warns."""
        a = _resolve("fetch_add", args, kw)
        return self._atomic("fetch_add", a["pe"], a["index"], a["value"], None, False)

    def compare_swap(self, *args, **kw):
        """compare_swap(index, compare, value, pe=...): write value to pe's
        element index if it equals compare; returns the value before. Four
        integers are ambiguous (the 1.2 order compare_swap(compare, value, pe,
        index=0) reads them too): refused, give pe by keyword. The 1.2
        compare_swap(compare, value, pe) still works and warns."""
        a = _resolve("compare_swap", args, kw)
        return self._atomic("compare_swap", a["pe"], a["index"], a["value"], a["compare"],
                            False)

    # waits and tests on this PE's elements
    def wait_until(self, index, cmp, value):
        """Wait until this PE's element index compares true against value (cmp: eq, ne, gt, ge, lt,
        le or ==, !=, ...). On the main thread the wait polls, so KeyboardInterrupt ends it
        (nothing is changed: call it again)."""
        args = (self.handle, _u64(index, "index"), _code(CMPS, cmp, "comparison"),
                _scalar(self.dtype, value))
        if _get_ident() != _MAIN_IDENT:
            call("symm_wait_until", *args)
            return
        sat = ctypes.c_int32()
        ref = ctypes.byref(sat)
        try:
            call("symm_test", *args, ref)
        except errors.Error:  # an argument error: the wait's own message, at once
            call("symm_wait_until", *args)
            return
        if not sat.value:
            _poll(lambda: call("symm_test", *args, ref) or sat.value)

    def _set(self, name, index, nelems, status, cmp, value, vector, kind):
        c = _code(CMPS, cmp, "comparison")
        index, nelems = _u64(index, "index"), _u64(nelems, "nelems")
        st = _status_array(status, nelems)
        if vector:
            if len(value) < nelems:
                raise errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG",
                                             "%s: %d values for nelems = %d"
                                             % (name, len(value), nelems))
            vals = (ctypes.c_char * max(nelems * self.itemsize, 1))()
            for i, x in enumerate(value):
                ctypes.memmove(ctypes.addressof(vals) + i * self.itemsize,
                               _scalar(self.dtype, x, "value[%d]" % i), self.itemsize)
            v = vals
            name = _VECTOR_FORMS[name]
        else:
            v = _scalar(self.dtype, value)
        base = (self.handle, index, nelems, st, c, v)
        # (a set with no element included returns at once: the C wait says so)
        if kind[-4:] == "wait" and nelems > 0 and _on_main() and (
                st is None or not all(st[i] for i in range(nelems))):
            return self._poll_set(name, base, vector, kind)
        if kind == "all_wait":
            call(name, *base)
            return True
        if kind == "all_test":
            sat = ctypes.c_int32()
            call(name, *base, ctypes.byref(sat))
            return bool(sat.value)
        if kind == "any_wait":
            found = ctypes.c_uint64()
            call(name, *base, ctypes.byref(found))
            return found.value
        if kind == "any_test":
            sat, found = ctypes.c_int32(), ctypes.c_uint64()
            call(name, *base, ctypes.byref(sat), ctypes.byref(found))
            return found.value if sat.value else None
        idx = (ctypes.c_uint64 * max(nelems, 1))()
        nf = ctypes.c_uint64()
        call(name, *base, idx, ctypes.byref(nf))
        return [idx[i] for i in range(nf.value)]

    def _poll_set(self, name, base, vector, kind):
        """A set wait (name: its C form) on the main thread, by its test form
        (KeyboardInterrupt ends it). At least one element is included."""
        h, index, nelems, st, c, v = base
        test = name.replace("wait_until", "test")
        sat, found, nf = ctypes.c_int32(), ctypes.c_uint64(), ctypes.c_uint64()
        if kind == "some_wait":
            idx = (ctypes.c_uint64 * nelems)()
            tail = (idx, ctypes.byref(nf))
            done = lambda: call(test, *base, *tail) or nf.value  # noqa: E731
        elif kind == "any_wait":
            tail = (ctypes.byref(sat), ctypes.byref(found))
            done = lambda: call(test, *base, *tail) or sat.value  # noqa: E731
        else:
            done = self._all_cursor(test, base, vector)
        try:
            first = done()
        except errors.Error:  # an argument error: the wait's own message, at once
            call(name, *base, *(() if kind == "all_wait" else
                                (ctypes.byref(found),) if kind == "any_wait" else tail))
            first = True
        if not first:
            _poll(done)
        if kind == "all_wait":
            return True
        if kind == "any_wait":
            return found.value
        return [idx[i] for i in range(nf.value)]

    def _all_cursor(self, test, base, vector):
        """done() for wait_until_all: like the C wait, elements are passed in
        order and one that compared true is not read again (a cursor); each
        poll tests the rest at once (test_all), else moves the cursor over the
        leading elements that compare true (test_some), else tests the
        element at the cursor alone (PeerFailed once a peer is lost)."""
        h, index, nelems, st, c, v = base
        step = self.itemsize if vector else 0
        some = test.replace("test_all", "test_some")
        sat, nf = ctypes.c_int32(), ctypes.c_uint64()
        idx = (ctypes.c_uint64 * nelems)()
        pos = [0]
        P32 = ctypes.POINTER(ctypes.c_int32)

        def at(k):  # (status, value) pointers for the elements from k on
            s = None if st is None else ctypes.cast(ctypes.addressof(st) + 4 * k, P32)
            return s, ctypes.addressof(v) + step * k

        def done():
            k = pos[0]
            s, vk = at(k)
            rest = (h, index + k, nelems - k, s, c, vk)
            call(test, *rest, ctypes.byref(sat))
            if sat.value:
                pos[0] = nelems
                return True
            call(some, *rest, idx, ctypes.byref(nf))
            j = f = 0
            while k + j < nelems:
                if st is not None and st[k + j]:
                    j += 1
                elif f < nf.value and idx[f] == j:
                    j, f = j + 1, f + 1
                else:
                    break
            if j == 0:  # the element at the cursor, alone (included: the loop stopped on it)
                call("symm_test", h, index + k, c, vk, ctypes.byref(sat))
                j = 1 if sat.value else 0
            pos[0] = k + j
            return pos[0] >= nelems

        return done

    def wait_until_all(self, index, nelems, cmp, value, status=None, vector=False):
        """Wait until every element of [index, index + nelems) compares true (status: 1 = ignore
        that element; vector=True: one value per element)."""
        return self._set("symm_wait_until_all", index, nelems, status, cmp, value, vector, "all_wait")

    def wait_until_any(self, index, nelems, cmp, value, status=None, vector=False):
        """Index (relative to index) of one satisfied element."""
        return self._set("symm_wait_until_any", index, nelems, status, cmp, value, vector, "any_wait")

    def wait_until_some(self, index, nelems, cmp, value, status=None, vector=False):
        """Indices of every satisfied element (at least one)."""
        return self._set("symm_wait_until_some", index, nelems, status, cmp, value, vector,
                         "some_wait")

    def test(self, index, cmp, value):
        """True when this PE's element index compares true now (no wait)."""
        sat = ctypes.c_int32()
        call("symm_test", self.handle, _u64(index, "index"), _code(CMPS, cmp, "comparison"),
             _scalar(self.dtype, value), ctypes.byref(sat))
        return bool(sat.value)

    def test_all(self, index, nelems, cmp, value, status=None, vector=False):
        """True when every element of [index, index + nelems) compares true now."""
        return self._set("symm_test_all", index, nelems, status, cmp, value, vector, "all_test")

    def test_any(self, index, nelems, cmp, value, status=None, vector=False):
        """Index of one satisfied element, or None."""
        return self._set("symm_test_any", index, nelems, status, cmp, value, vector, "any_test")

    def test_some(self, index, nelems, cmp, value, status=None, vector=False):
        """Indices (relative to index) of the elements that compare true now (may be empty)."""
        return self._set("symm_test_some", index, nelems, status, cmp, value, vector, "some")

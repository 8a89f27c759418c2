"""ctypes view of the C ABI (include/symm/symm.h), and how the loader is found.

The package talks to libsymm.so.1 (the loader) only. A wheel ships the loader
and the runtime side by side in symm/_lib/, and the loader finds the runtime
next to itself; SYMM_RUNTIME still wins when set. Without any loader every
call raises symm.LibraryNotFound, so importing symm never fails.

Every prototype below is checked against abi/symm-abi.json by the test suite
(tests/test_abi.py), so the table cannot drift from the header.
"""
import ctypes
import ctypes.util
import os
import threading

c_status = ctypes.c_int32
c_handle = ctypes.c_void_p
P = ctypes.POINTER
vp = ctypes.c_void_p
u32, i32, u64 = ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64

UNIQUE_ID_BYTES = 128


class UniqueId(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_uint8 * UNIQUE_ID_BYTES)]


class InitAttr(ctypes.Structure):
    _fields_ = [
        ("struct_size", u32), ("backend", u32), ("bootstrap", u32), ("thread_level", u32),
        ("heap_cap", u64), ("rank", i32), ("n_pes", i32), ("device", i32),
        ("timeout_ms", u32), ("unique_id", UniqueId),
    ]


class CtxInfo(ctypes.Structure):
    _fields_ = [
        ("struct_size", u32), ("backend", u32), ("thread_level", u32), ("my_pe", i32),
        ("n_pes", i32), ("local_pe", i32), ("local_n_pes", i32), ("device", i32),
        ("heap_cap", u64), ("heap_mapped", u64), ("heap_used", u64),
    ]


class TeamConfig(ctypes.Structure):
    _fields_ = [("struct_size", u32), ("num_contexts", i32)]


class DeviceCtx(ctypes.Structure):
    _fields_ = [
        ("struct_size", u32), ("my_pe", i32), ("n_pes", i32), ("team_slots", i32),
        ("heap_cap", u64), ("heap_base", vp), ("slot_bytes", u64), ("peer_table", vp),
        ("peer_base", vp * 64), ("fail_word", vp),
        ("device_abi", u32), ("n_rings", u32), ("rings", vp),  # since 1.3: the GPU proxy
    ]


class DeviceTeam(ctypes.Structure):
    _fields_ = [
        ("struct_size", u32), ("my_pe", i32), ("n_pes", i32), ("start", i32),
        ("stride", i32), ("slot", i32), ("reserved", u64),
    ]


STRUCTS = {
    "symm_unique_id": UniqueId, "symm_init_attr": InitAttr, "symm_ctx_info": CtxInfo,
    "symm_team_config": TeamConfig, "symm_device_ctx": DeviceCtx,
    "symm_device_team": DeviceTeam,
}

# name: (return type, [argument types]); the C spelling of each type is in
# C_TYPES below for the ABI check.
S, H = c_status, c_handle
PROTOTYPES = {
    "symm_status_string": (ctypes.c_char_p, [c_status]),
    "symm_last_error": (ctypes.c_char_p, []),
    "symm_loader_probe": (S, []),
    "symm_loader_set_runtime": (S, [ctypes.c_char_p]),
    "symm_loader_get_version": (S, [P(u32)]),
    "symm_loader_runtime_path": (ctypes.c_char_p, []),
    "symm_get_version": (S, [P(u32)]),
    "symm_dtype_size": (u32, [u32]),
    "symm_init_attr_init": (S, [P(InitAttr), u32]),
    "symm_get_unique_id": (S, [P(UniqueId)]),
    "symm_init": (S, [P(InitAttr), P(H)]),
    "symm_finalize": (S, [P(H)]),
    "symm_my_pe": (i32, [H]),
    "symm_n_pes": (i32, [H]),
    "symm_ctx_query": (S, [H, P(CtxInfo)]),
    "symm_ctx_async_error": (S, [H, u32, u64, P(c_status), ctypes.c_char_p]),
    "symm_buf_alloc": (S, [H, u32, u64, P(H)]),
    "symm_buf_free": (S, [H]),
    "symm_buf_ptr": (S, [H, P(vp)]),
    "symm_buf_query": (S, [H, P(u32), P(u64), P(u64)]),
    "symm_put": (S, [H, u64, vp, u64, i32]),
    "symm_get": (S, [vp, H, u64, u64, i32]),
    "symm_put_nbi": (S, [H, u64, vp, u64, i32]),
    "symm_get_nbi": (S, [vp, H, u64, u64, i32]),
    "symm_p": (S, [H, u64, vp, i32]),
    "symm_g": (S, [H, u64, i32, vp]),
    "symm_putmem": (S, [H, vp, vp, u64, i32]),
    "symm_getmem": (S, [H, vp, vp, u64, i32]),
    "symm_putmem_nbi": (S, [H, vp, vp, u64, i32]),
    "symm_getmem_nbi": (S, [H, vp, vp, u64, i32]),
    "symm_ptr": (S, [H, vp, i32, P(vp)]),
    "symm_quiet": (S, [H]),
    "symm_fence": (S, [H]),
    "symm_barrier_all": (S, [H]),
    "symm_sync_all": (S, [H]),
    "symm_team_config_init": (S, [P(TeamConfig), u32]),
    "symm_team_get": (S, [H, u32, P(H)]),
    "symm_team_split_strided": (S, [H, i32, i32, i32, P(TeamConfig), P(H)]),
    "symm_team_split_2d": (S, [H, i32, P(TeamConfig), P(TeamConfig), P(H), P(H)]),
    "symm_team_destroy": (S, [H]),
    "symm_team_my_pe": (i32, [H]),
    "symm_team_n_pes": (i32, [H]),
    "symm_team_translate_pe": (i32, [H, i32, H]),
    "symm_team_get_config": (S, [H, P(TeamConfig)]),
    "symm_put_signal": (S, [H, u64, vp, u64, H, u64, u64, u32, i32]),
    "symm_put_signal_nbi": (S, [H, u64, vp, u64, H, u64, u64, u32, i32]),
    "symm_signal_op": (S, [H, u64, u64, u32, i32]),
    "symm_signal_fetch": (S, [H, u64, P(u64)]),
    "symm_signal_wait_until": (S, [H, u64, u32, u64, P(u64)]),
    "symm_wait_until": (S, [H, u64, u32, vp]),
    "symm_wait_until_all": (S, [H, u64, u64, P(i32), u32, vp]),
    "symm_wait_until_any": (S, [H, u64, u64, P(i32), u32, vp, P(u64)]),
    "symm_wait_until_some": (S, [H, u64, u64, P(i32), u32, vp, P(u64), P(u64)]),
    "symm_wait_until_all_vector": (S, [H, u64, u64, P(i32), u32, vp]),
    "symm_wait_until_any_vector": (S, [H, u64, u64, P(i32), u32, vp, P(u64)]),
    "symm_wait_until_some_vector": (S, [H, u64, u64, P(i32), u32, vp, P(u64), P(u64)]),
    "symm_test": (S, [H, u64, u32, vp, P(i32)]),
    "symm_test_all": (S, [H, u64, u64, P(i32), u32, vp, P(i32)]),
    "symm_test_any": (S, [H, u64, u64, P(i32), u32, vp, P(i32), P(u64)]),
    "symm_test_some": (S, [H, u64, u64, P(i32), u32, vp, P(u64), P(u64)]),
    "symm_test_all_vector": (S, [H, u64, u64, P(i32), u32, vp, P(i32)]),
    "symm_test_any_vector": (S, [H, u64, u64, P(i32), u32, vp, P(i32), P(u64)]),
    "symm_test_some_vector": (S, [H, u64, u64, P(i32), u32, vp, P(u64), P(u64)]),
    "symm_atomic": (S, [H, u64, u32, vp, vp, i32, vp]),
    "symm_atomic_nbi": (S, [H, u64, u32, vp, vp, i32, vp]),
    "symm_barrier": (S, [H]),
    "symm_team_sync": (S, [H]),
    "symm_broadcast": (S, [H, H, u64, H, u64, u64, i32]),
    "symm_fcollect": (S, [H, H, u64, H, u64, u64]),
    "symm_collect": (S, [H, H, u64, H, u64, u64]),
    "symm_alltoall": (S, [H, H, u64, H, u64, u64]),
    "symm_reduce": (S, [H, H, u64, H, u64, u64, u32]),
    "symm_reducescatter": (S, [H, H, u64, H, u64, u64, u32]),
    "symm_put_on_stream": (S, [H, u64, vp, u64, i32, vp]),
    "symm_get_on_stream": (S, [vp, H, u64, u64, i32, vp]),
    "symm_put_nbi_on_stream": (S, [H, u64, vp, u64, i32, vp]),
    "symm_get_nbi_on_stream": (S, [vp, H, u64, u64, i32, vp]),
    "symm_p_on_stream": (S, [H, u64, vp, i32, vp]),
    "symm_putmem_on_stream": (S, [H, vp, vp, u64, i32, vp]),
    "symm_getmem_on_stream": (S, [H, vp, vp, u64, i32, vp]),
    "symm_put_signal_on_stream": (S, [H, u64, vp, u64, H, u64, u64, u32, i32, vp]),
    "symm_signal_op_on_stream": (S, [H, u64, u64, u32, i32, vp]),
    "symm_signal_wait_until_on_stream": (S, [H, u64, u32, u64, vp]),
    "symm_quiet_on_stream": (S, [H, vp]),
    "symm_barrier_all_on_stream": (S, [H, vp]),
    "symm_barrier_on_stream": (S, [H, vp]),
    "symm_team_sync_on_stream": (S, [H, vp]),
    "symm_broadcast_on_stream": (S, [H, H, u64, H, u64, u64, i32, vp]),
    "symm_fcollect_on_stream": (S, [H, H, u64, H, u64, u64, vp]),
    "symm_alltoall_on_stream": (S, [H, H, u64, H, u64, u64, vp]),
    "symm_reduce_on_stream": (S, [H, H, u64, H, u64, u64, u32, vp]),
    "symm_reducescatter_on_stream": (S, [H, H, u64, H, u64, u64, u32, vp]),
    # since 1.2: variable-size all-to-all with its counts in symmetric memory
    "symm_alltoallv": (S, [H, H, u64, u64, H, u64, u64, H, u64, H, u64]),
    "symm_alltoallv_on_stream": (S, [H, H, u64, u64, H, u64, u64, H, u64, H, u64, vp]),
    "symm_buf_peer_ptr": (S, [H, i32, P(vp)]),
    "symm_buf_register": (S, [H, vp, u32, u64, P(H)]),
    "symm_device_ctx_get": (S, [H, P(DeviceCtx)]),
    "symm_device_team_get": (S, [H, P(DeviceTeam)]),
}

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED_LIB_DIR = os.path.join(HERE, "_lib")
LOADER_SONAME = "libsymm.so.1"
RUNTIME_SONAME = "libsymm_runtime.so.1"


def package_file(*parts):
    """Path of a file the wheel installs under symm/ (symm/_lib/libsymm.so.1,
    symm/include/symm/symm.h, ...), or None. An installed wheel has it beside
    this module; an editable install (meson-python) keeps the Python files in
    the source tree and the built ones in its build directory, and maps them
    through the package's resource tree."""
    p = os.path.join(HERE, *parts)
    if os.path.exists(p):
        return p
    try:
        from importlib import resources
        t = resources.files(__package__).joinpath(*parts)
    except Exception:  # Python 3.8 (no files()), or no resource reader
        return None
    if isinstance(t, os.PathLike) and os.path.exists(t):
        return os.fspath(t)
    return None


class _Lib:
    """The loaded loader (or why there is none), made once, thread-safely."""

    def __init__(self):
        self.lock = threading.Lock()
        self.cdll = None
        self.why = None  # why no loader could be opened
        self.path = None
        self.done = False

    def get(self):
        if self.done:
            return self.cdll
        with self.lock:
            if not self.done:
                self._open()
                self.done = True
        return self.cdll

    def _candidates(self):
        env = os.environ.get("SYMM_LOADER")
        if env:
            return [env]
        out = []
        bundled = package_file("_lib", LOADER_SONAME)
        if bundled:
            out.append(bundled)
        out.append(LOADER_SONAME)  # the dynamic linker's search path
        found = ctypes.util.find_library("symm")
        if found:
            out.append(found)
        return out

    def _open(self):
        tried = []
        for cand in self._candidates():
            try:
                lib = ctypes.CDLL(cand, mode=ctypes.RTLD_LOCAL)
            except OSError as e:
                tried.append("%s: %s" % (cand, e))
                continue
            for name, (res, args) in PROTOTYPES.items():
                fn = getattr(lib, name, None)
                if fn is None:
                    continue  # an older loader: calls of it raise NotSupported
                fn.restype = res
                fn.argtypes = args
            self.cdll, self.path = lib, cand
            # A wheel's own runtime sits beside its loader; the loader finds it
            # there by itself (its own directory). SYMM_RUNTIME still wins.
            return
        self.why = "symm: no loader (%s) could be opened; tried:\n  %s" % (
            LOADER_SONAME, "\n  ".join(tried) if tried else "(nothing)")


LIB = _Lib()

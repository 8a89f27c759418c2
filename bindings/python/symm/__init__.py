"""symm: one-sided communication over a symmetric heap, from Python.

    import symm
    if not symm.available():          # no loader/runtime here: run single-process
        ...
    with symm.init() as ctx:          # joins the job symmrun/torchrun started
        buf = ctx.array(1024, "float32")
        buf.put(data, pe=(ctx.my_pe + 1) % ctx.n_pes)
        ctx.barrier_all()
        buf.free()                    # collective, explicit

Standard library only; NumPy, PyTorch and CuPy are used when importable.
Every failure raises a subclass of symm.Error (symm.LibraryNotFound,
symm.PeerFailed, symm.Timeout, ...) with .status, .name and .message.
"""
from .errors import (Error, InvalidArgument, InvalidHandle, OutOfBounds, OutOfMemory,
                     LibraryNotFound, AbiMismatch, NotSupported, NoDevice, BootstrapError,
                     PeerFailed, Timeout, Mismatch, TeamExhausted, CudaError, OSFailure,
                     ThreadLevelError, InternalError, InvalidState, ArgumentOverflow,
                     ArgumentTypeError)
from ._core import (Context, Team, Buffer, FetchResult, init, available, probe, set_runtime,
                    loader_version, runtime_version, runtime_path, loader_path, unique_id,
                    get_include, get_library_dir,
                    dtype_code, dtype_size, team_config, DTYPES, OPS, AMOS, CMPS, TEAMS, INDEX_NONE)

__version__ = "1.3.0"

__all__ = [
    "Error", "InvalidArgument", "InvalidHandle", "OutOfBounds", "OutOfMemory",
    "LibraryNotFound", "AbiMismatch", "NotSupported", "NoDevice", "BootstrapError",
    "PeerFailed", "Timeout", "Mismatch", "TeamExhausted", "CudaError", "OSFailure",
    "ThreadLevelError", "InternalError", "InvalidState", "ArgumentOverflow", "ArgumentTypeError",
    "Context", "Team", "Buffer", "FetchResult", "init", "available", "probe", "set_runtime",
    "loader_version", "runtime_version", "runtime_path", "loader_path", "unique_id",
    "get_include", "get_library_dir",
    "dtype_code", "dtype_size", "team_config", "DTYPES", "OPS", "AMOS", "CMPS", "TEAMS", "INDEX_NONE",
]

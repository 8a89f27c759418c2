"""Exceptions: one symm.Error hierarchy, one subclass per status code.

Every failing call raises the subclass for its status, carrying the status
code, its C name (symm_status_string) and the message the library recorded on
the calling thread (symm_last_error), read right after the call.
"""


class Error(Exception):
    """A symm call failed. ``status`` (int), ``name`` (e.g. "SYMM_ERR_PEER_FAILED")
    and ``message`` (the library's explanation) describe why."""

    status = -1

    def __init__(self, status, name, message):
        super().__init__("%s: %s" % (name, message) if message else name)
        self.status = status
        self.name = name
        self.message = message


def _make(class_name, status, doc):
    return type(class_name, (Error,), {"status": status, "__doc__": doc})


InvalidArgument = _make("InvalidArgument", 1, "An argument is out of its domain.")
InvalidHandle = _make("InvalidHandle", 2, "A stale, foreign or already released handle.")
OutOfBounds = _make("OutOfBounds", 3, "An element or byte range outside a buffer or the heap.")
OutOfMemory = _make("OutOfMemory", 4, "The heap cap was reached or host memory ran out.")
LibraryNotFound = _make(
    "LibraryNotFound", 5,
    "symm is not usable here: no loader or no runtime was found (fall back to one process).")
AbiMismatch = _make("AbiMismatch", 6, "The runtime implements another ABI major version.")
NotSupported = _make("NotSupported", 7, "The entry or feature is not available here.")
NoDevice = _make("NoDevice", 8, "A GPU backend was asked for and no GPU is usable.")
BootstrapError = _make("BootstrapError", 9, "The job could not be formed or reached.")
PeerFailed = _make("PeerFailed", 10, "A peer PE died or left the job.")
Timeout = _make("Timeout", 11, "A bounded wait expired.")
Mismatch = _make("Mismatch", 12, "PEs disagree on a collective's arguments.")
TeamExhausted = _make("TeamExhausted", 13, "No free team slot.")
CudaError = _make("CudaError", 14, "The CUDA driver reported an error.")
OSFailure = _make("OSFailure", 15, "An operating-system call failed (the message has errno).")
ThreadLevelError = _make("ThreadLevelError", 16, "The call violates the context's thread level.")
InternalError = _make("InternalError", 17, "A bug in symm: please report it.")
InvalidState = _make("InvalidState", 18, "The call is not valid now (e.g. the runtime is loaded).")



class ArgumentOverflow(InvalidArgument, OverflowError):
    """An integer argument outside what its C parameter holds (a PE past
    int32_t, a negative or 2**64 index, a count past uint64_t): refused before
    the C call, which would have truncated it. The message names the argument
    and the range. Also an OverflowError (and an InvalidArgument)."""


class ArgumentTypeError(InvalidArgument, TypeError):
    """An argument of the wrong type: not an integer where one is needed, or
    data whose dtype is not the buffer's (the message names both). Also a
    TypeError (and an InvalidArgument)."""


BY_STATUS = {c.status: c for c in (
    InvalidArgument, InvalidHandle, OutOfBounds, OutOfMemory, LibraryNotFound, AbiMismatch,
    NotSupported, NoDevice, BootstrapError, PeerFailed, Timeout, Mismatch, TeamExhausted,
    CudaError, OSFailure, ThreadLevelError, InternalError, InvalidState)}


def from_status(status, name, message):
    """The exception object for a status code (Error for codes newer than this package)."""
    return BY_STATUS.get(status, Error)(status, name, message)

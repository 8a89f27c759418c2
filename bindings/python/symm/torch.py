"""symm.torch: collectives on PyTorch tensors, in place, on the current stream.

    import symm.torch as st
    ctx = st.init()                     # torchrun/symmrun env; None = fallback
    x = st.empty(1024, torch.float32)   # on the symmetric heap (or plain torch)
    st.all_reduce(x)                    # in place, current CUDA stream

Functions: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
barrier (same argument order as torch.distributed's all_reduce,
all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single, broadcast),
and all_to_all_v (PyTorch's torch.ops.symm_mem.all_to_all_vdev: splits in
symmetric memory, read on the GPU; MoE dispatch and combine).
Every call is enqueued on torch's current CUDA stream of the tensor's device
and returns at once (host backend: runs to completion, CPU tensors), so it is
ordered with the surrounding kernels and can be captured in a CUDA graph. The
collectives of one group must reach the GPU in the same order on every rank:
issue them on one stream, or synchronise when switching streams.

Tensors on the symmetric heap (from st.empty / ctx.tensor, or views of such a
tensor) are used directly: zero copies. Any other contiguous tensor is copied
into a symmetric staging buffer, reduced/exchanged there and copied back, all
on the same stream. Staging buffers are cached per (dtype, element count,
group) and allocated on first use, collectively over every PE of the context
(so every PE must make the first call of a shape in the same order): capture
a CUDA graph only after one eager call of each shape (the usual warm-up) or
after st.reserve(...); threads calling concurrently (each on its own group,
as collectives on one group must not overlap) reserve their shapes first.

Fallback (no symm context: symm.available() False, or init() met
LibraryNotFound / NoDevice / AbiMismatch, or init() was never called):
  - torch.distributed is initialised: the call goes to torch.distributed
    (all_reduce, all_gather_into_tensor, reduce_scatter_tensor,
    all_to_all_single, broadcast, barrier) on the default group; all_to_all_v
    makes two all_to_all_single calls (the splits, then the rows);
  - else one process (WORLD_SIZE unset or 1): the result is what one rank
    would get (all_reduce, broadcast, barrier: nothing; the others copy input
    to output; all_to_all_v copies input's first in_splits[0] rows);
  - else (several ranks, neither symm nor torch.distributed): symm.InvalidState.
st.backend() says which of "symm", "torch.distributed", "single" is in use.

Importing this module does not import torch; the first call does.
"""
import os
import threading

from . import _core, errors
from ._ffi import LIB

__all__ = ["init", "init_from_process_group", "use", "finalize", "context", "backend", "why_fallback", "empty",
           "reserve", "is_symmetric", "all_reduce", "all_gather", "reduce_scatter",
           "all_to_all", "all_to_all_v", "broadcast", "barrier"]

_FALLBACK_ERRORS = (errors.LibraryNotFound, errors.NoDevice, errors.AbiMismatch)
_OP_NAMES = {"sum": 0, "prod": 1, "product": 1, "min": 2, "max": 3, "band": 4, "and": 4,
             "bor": 5, "or": 5, "bxor": 6, "xor": 6, "avg": "avg"}
_DIST_OPS = {0: "SUM", 1: "PRODUCT", 2: "MIN", 3: "MAX", 4: "BAND", 5: "BOR", 6: "BXOR",
             "avg": "AVG"}


def _torch():
    import torch
    return torch


def _invalid(msg):
    return errors.InvalidArgument(1, "SYMM_ERR_INVALID_ARG", msg)


class _State:
    """The module's one context and what the fast path needs of it, cached."""

    def __init__(self):
        self.lock = threading.RLock()
        self.reset()
        self.why = "symm.torch.init() was not called"

    def reset(self):
        self.ctx = None
        self.owned = False
        self.heap = {}     # data_ptr -> (buffer handle, element index, Buffer, torch dtype)
        self.stage = {}    # (symm dtype code, count) -> (Buffer, tensor view)
        self.opc = dict(_OP_NAMES)  # op object -> code, grown as ops are seen
        self.dcode = {}    # torch dtype -> SYMM_DTYPE_* code
        self.world = None
        self.stream = None  # () -> raw stream handle of the current stream
        self.f = {}

    def attach(self, ctx, owned):
        torch = _torch()
        self.ctx, self.owned = ctx, owned
        self.world = ctx.world.handle
        lib = LIB.get()
        for name in ("reduce", "fcollect", "reducescatter", "alltoall", "broadcast"):
            self.f[name] = getattr(lib, "symm_%s_on_stream" % name)
        self.f["barrier"] = lib.symm_barrier_all_on_stream
        # since 1.2; None from an older loader (all_to_all_v raises NotSupported)
        self.f["alltoallv"] = getattr(lib, "symm_alltoallv_on_stream", None)
        self.lib = lib
        if ctx.backend == "cuda":
            dev = ctx.device
            raw = getattr(getattr(torch, "_C", None), "_cuda_getCurrentRawStream", None)
            if raw is not None:
                self.stream = lambda: raw(dev)
            else:  # older torch: through the Stream object (slower)
                cur = torch.cuda.current_stream
                self.stream = lambda: cur(dev).cuda_stream
        else:
            self.stream = lambda: None  # host backend: runs at once, stream ignored

    def fail(self, st):
        return _core._fail(self.lib, st)


_S = _State()


# ---- joining -------------------------------------------------------------------------

def _pick_device(device):
    """The GPU for this rank: the argument, else LOCAL_RANK (torchrun) modulo
    the GPU count, else -1 (the runtime's choice); CPU-only torch: -1."""
    if device is not None:
        return _core._i32(device, "device")
    torch = _torch()
    try:
        ngpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except Exception:
        ngpu = 0
    if ngpu == 0:
        return -1
    lr = os.environ.get("LOCAL_RANK")
    return int(lr) % ngpu if lr is not None else -1


def _attach_or_fallback(make):
    with _S.lock:
        if _S.ctx is not None:
            return _S.ctx
        try:
            ctx = make()
        except _FALLBACK_ERRORS as e:
            _S.why = "%s: %s" % (e.name, e.message.splitlines()[0] if e.message else "")
            return None
        _S.attach(ctx, True)
        if ctx.backend == "cuda":
            _torch().cuda.set_device(ctx.device)
        return ctx


def init(backend="auto", *, device=None, **kwargs):
    """Join the job with symm (the environment of torchrun, symmrun, Open MPI or
    Slurm; or unique_id/rank/n_pes like symm.init) and make it the context
    these functions use. Returns the symm.Context, or None when symm cannot be
    used here (no loader/runtime, no GPU for a CUDA backend, ABI mismatch):
    the functions then fall back (see the module's documentation; backend()
    says to what). Other failures (a peer that never comes, ...) raise.
    device defaults to LOCAL_RANK modulo the GPU count; torch's current
    device is set to the context's GPU. Calling it again returns the same
    context."""
    dev = _pick_device(device)
    return _attach_or_fallback(lambda: _core.Context(backend, device=dev, **kwargs))


def init_from_process_group(group=None, backend="auto", *, device=None, **kwargs):
    """Join with a unique id that rank 0 of the torch.distributed group makes
    and broadcasts (broadcast_object_list) to the group: works under any
    launcher torch.distributed works under. Collective over the group. Every
    rank learns from rank 0 whether symm is usable, so all use symm or all
    fall back (returns None then)."""
    import torch.distributed as dist
    if not dist.is_initialized():
        raise errors.InvalidState(18, "SYMM_ERR_INVALID_STATE",
                                  "init_from_process_group: torch.distributed is not initialised")
    with _S.lock:
        if _S.ctx is not None:
            return _S.ctx
        rank, n = dist.get_rank(group), dist.get_world_size(group)
        dev = _pick_device(device)
        torch = _torch()
        if dev >= 0:
            torch.cuda.set_device(dev)  # NCCL's object broadcast runs on it
        msg = [None]
        if rank == 0:
            try:
                msg = [_core.unique_id()]
            except _FALLBACK_ERRORS as e:
                msg = ["%s: %s" % (e.name, (e.message or "").splitlines()[0])]
        src = dist.get_global_rank(group, 0) if group is not None else 0
        dist.broadcast_object_list(msg, src=src, group=group)
        if isinstance(msg[0], str):
            _S.why = "rank 0: " + msg[0]
            return None
        uid = msg[0]
        return _attach_or_fallback(lambda: _core.Context(backend, device=dev, unique_id=uid,
                                                         rank=rank, n_pes=n, **kwargs))


def use(ctx):
    """Make an existing symm.Context (made with symm.init) the one these
    functions use; this module will not finalize it."""
    with _S.lock:
        if _S.ctx is not None and _S.ctx is not ctx:
            raise errors.InvalidState(18, "SYMM_ERR_INVALID_STATE", "another context is in use")
        _S.attach(ctx, False)


def finalize():
    """Free the staging buffers and, if init() made the context, finalize it
    (collective). Functions fall back afterwards."""
    with _S.lock:
        ctx, owned = _S.ctx, _S.owned
        # the buffers only: their tensors are views, which free() refuses while they live
        stage = [b for b, _ in _S.stage.values()]
        _S.reset()
        _S.why = "symm.torch.finalize() was called"
        if ctx is None:
            return
        if owned:
            ctx.finalize()  # frees the staging buffers too
        else:
            for b in stage:
                b.free()


def context():
    """The symm.Context in use, or None (fallback)."""
    return _S.ctx


def backend():
    """"symm", "torch.distributed" or "single": what the functions use now."""
    if _S.ctx is not None:
        return "symm"
    dist = _dist()
    return "torch.distributed" if dist is not None else "single"


def why_fallback():
    """Why symm is not in use (the error init() met), or "" when it is."""
    return "" if _S.ctx is not None else _S.why


# ---- tensors -----------------------------------------------------------------------

def empty(shape, dtype=None, device=None):
    """A zeroed tensor on the symmetric heap (collective), or, in fallback, a
    zeroed ordinary tensor on device (default: the current CUDA device when
    CUDA is available, else the CPU)."""
    torch = _torch()
    dtype = dtype or torch.float32
    if _S.ctx is not None:
        return _S.ctx.tensor(shape, dtype)
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.zeros(shape, dtype=dtype, device=device)


def is_symmetric(t):
    """True when t lies on the symmetric heap (used without copies)."""
    return _S.ctx is not None and _heap_entry(t) is not None


def reserve(numel, dtype, gathered=False, group=None):
    """Allocate the staging buffer for ordinary tensors of numel elements of
    dtype now (collective over every PE of the context), so that a later
    CUDA-graph capture, or threads calling concurrently, find it.
    gathered=True also reserves the n_pes * numel buffer that all_gather
    (output), reduce_scatter (input) and all_to_all use for numel-element
    blocks. Staging buffers are per group (one per symm.Team)."""
    if _S.ctx is None:
        return
    numel = _core._u64(numel, "numel")
    code = _core.dtype_code(dtype)
    tk = 0 if group is None else group.handle.value
    n = _npes(group)
    _staging(code, numel, dtype, 0, tk)
    if gathered:
        _staging(code, numel * n, dtype, 1, tk)
        _staging(code, numel * n, dtype, 0, tk)
        _staging(code, numel, dtype, 1, tk)


def _heap_entry(t):
    ent = _S.heap.get(t.data_ptr())
    if ent is not None and ent[2]._h is not None and ent[3] == t.dtype:
        return ent
    b = _S.ctx.buffer_of(t)
    if b is None or b.dtype != _dcode(t.dtype):
        return None
    off = t.data_ptr() - b.ptr
    ent = (b._h, off // b.itemsize, b, t.dtype)
    _S.heap[t.data_ptr()] = ent
    return ent


def _staging(code, count, dtype, slot, tk):
    key = (code, count, slot, tk)
    ent = _S.stage.get(key)
    if ent is None:
        with _S.lock:
            ent = _S.stage.get(key)
            if ent is None:
                b = _S.ctx.alloc(code, count)
                t = b.torch()
                if t.dtype != dtype:
                    t = t.view(dtype)
                ent = (b, t)
                _S.stage[key] = ent
    return ent


def _dcode(dt):
    c = _S.dcode.get(dt)
    if c is None:
        c = _S.dcode[dt] = _core.dtype_code(dt)
    return c


def _op(op):
    c = _S.opc.get(op)
    if c is None:
        name = getattr(op, "name", None) or str(op)
        name = name.rsplit(".", 1)[-1].lower()
        c = _OP_NAMES.get(name)
        if c is None:
            raise _invalid("unknown reduction %r (sum, prod, min, max, band, bor, bxor, avg)"
                           % (op,))
        try:
            _S.opc[op] = c
        except TypeError:
            pass
    return c


def _check(t, what):
    if not t.is_contiguous():
        raise _invalid("%s: the tensor is not contiguous" % what)


def _operand(t, slot, tk):
    """(handle, index, staged tensor or None) for t."""
    ent = _S.heap.get(t.data_ptr())
    if ent is None or ent[2]._h is None or ent[3] != t.dtype:
        ent = _heap_entry(t)
    if ent is not None:
        return ent[0], ent[1], None
    b, st = _staging(_dcode(t.dtype), t.numel(), t.dtype, slot, tk)
    return b._h, 0, st


# ---- collectives -------------------------------------------------------------------

def all_reduce(tensor, op="sum", group=None):
    """Reduce tensor element-wise over every rank, in place (sum, prod, min,
    max; band/bor/bxor on integers; avg on floating types = sum / n).
    op may be a string or a torch.distributed.ReduceOp. group: None (all
    ranks) or a symm.Team."""
    S = _S
    if S.ctx is None:
        return _fb_all_reduce(tensor, op, group)
    code = S.opc.get(op)
    if code is None:
        code = _op(op)
    if not tensor.is_contiguous():
        raise _invalid("all_reduce: the tensor is not contiguous")
    n = tensor.numel()
    team = S.world if group is None else group.handle
    ent = S.heap.get(tensor.data_ptr())
    if ent is None or ent[2]._h is None or ent[3] != tensor.dtype:
        ent = _heap_entry(tensor)
    if ent is not None:
        h, i = ent[0], ent[1]
        st = S.f["reduce"](team, h, i, h, i, n, 0 if code == "avg" else code, S.stream())
        if st:
            raise S.fail(st)
        if code == "avg":
            tensor.div_(S.ctx.n_pes if group is None else group.n_pes)
        return None
    b, stage = _staging(_dcode(tensor.dtype), n, tensor.dtype, 0,
                        0 if group is None else team.value)
    stage.copy_(tensor.view(-1))
    st = S.f["reduce"](team, b._h, 0, b._h, 0, n, 0 if code == "avg" else code, S.stream())
    if st:
        raise S.fail(st)
    if code == "avg":
        stage.div_(S.ctx.n_pes if group is None else group.n_pes)
    tensor.view(-1).copy_(stage)
    return None


def _flat(t):
    return t.view(-1)


def _two(name, output, input, group, per, code=None):
    """A collective from input (numel = per-rank block * k) into output."""
    S = _S
    _check(output, name)
    _check(input, name)
    if output.dtype != input.dtype:
        raise _invalid("%s: output is %s, input %s" % (name, output.dtype, input.dtype))
    team = S.world if group is None else group.handle
    tk = 0 if group is None else team.value
    hi, ii, si = _operand(input, 0, tk)
    ho, io, so = _operand(output, 1, tk)
    if si is not None:
        si.copy_(_flat(input))
    args = [team, ho, io, hi, ii, per]
    if code is not None:
        args.append(code)
    args.append(S.stream())
    st = S.f[name](*args)
    if st:
        raise S.fail(st)
    if so is not None:
        _flat(output).copy_(so)


def _npes(group):
    return _S.ctx.n_pes if group is None else group.n_pes


def all_gather(output, input, group=None):
    """output (n_pes * input.numel() elements) receives every rank's input,
    in rank order (torch.distributed.all_gather_into_tensor)."""
    if _S.ctx is None:
        return _fb("all_gather_into_tensor", output, input, group=group)
    n = _npes(group)
    if output.numel() != n * input.numel():
        raise _invalid("all_gather: output has %d elements, needs %d x %d"
                       % (output.numel(), n, input.numel()))
    _two("fcollect", output, input, group, input.numel())


def reduce_scatter(output, input, op="sum", group=None):
    """Rank i's output receives the reduction of every rank's block i of
    input (input: n_pes * output.numel() elements; torch.distributed.
    reduce_scatter_tensor)."""
    if _S.ctx is None:
        return _fb("reduce_scatter_tensor", output, input, op=op, group=group)
    n = _npes(group)
    if input.numel() != n * output.numel():
        raise _invalid("reduce_scatter: input has %d elements, needs %d x %d"
                       % (input.numel(), n, output.numel()))
    code = _op(op)
    _two("reducescatter", output, input, group, output.numel(), 0 if code == "avg" else code)
    if code == "avg":
        output.div_(n)


def all_to_all(output, input, group=None):
    """Block j of input goes to rank j's block i (i = this rank); blocks are
    numel / n_pes elements (torch.distributed.all_to_all_single with equal
    splits)."""
    if _S.ctx is None:
        return _fb("all_to_all_single", output, input, group=group)
    n = _npes(group)
    if input.numel() != output.numel() or input.numel() % n:
        raise _invalid("all_to_all: input and output need the same numel, a multiple of %d" % n)
    _two("alltoall", output, input, group, input.numel() // n)


def _rows(t):
    """Elements of one dim-0 row of t (1 for a 1-D tensor)."""
    r = 1
    for d in tuple(t.shape)[1:]:
        r *= int(d)
    return r


def _a2av_check(input, out, in_splits, out_splits_offsets, n):
    """all_to_all_v's local argument checks; the row length (elements)."""
    for t, what in ((input, "input"), (out, "out"), (in_splits, "in_splits"),
                    (out_splits_offsets, "out_splits_offsets")):
        _check(t, "all_to_all_v: " + what)
    if out.dtype != input.dtype:
        raise _invalid("all_to_all_v: out is %s, input %s" % (out.dtype, input.dtype))
    row = _rows(input)
    if _rows(out) != row:
        raise _invalid("all_to_all_v: input rows have %d elements, out rows %d (shapes %s, %s)"
                       % (row, _rows(out), tuple(input.shape), tuple(out.shape)))
    if in_splits.numel() != n:
        raise _invalid("all_to_all_v: in_splits has %d entries, the group %d ranks"
                       % (in_splits.numel(), n))
    shape = tuple(out_splits_offsets.shape)
    if out_splits_offsets.numel() != 2 * n or (len(shape) == 2 and shape[0] != 2):
        raise _invalid("all_to_all_v: out_splits_offsets is %s; it needs shape (2, %d)"
                       % (shape, n))
    for t, what in ((in_splits, "in_splits"), (out_splits_offsets, "out_splits_offsets")):
        if "int64" not in str(t.dtype):
            raise _invalid("all_to_all_v: %s is %s; splits are torch.int64" % (what, t.dtype))
    return row


def all_to_all_v(input, out, in_splits, out_splits_offsets, group=None):
    """Variable-size all-to-all with the splits on the device (PyTorch's
    torch.ops.symm_mem.all_to_all_vdev(input, out, in_splits,
    out_splits_offsets, group_name); MoE token dispatch and combine).

    - input: the rows for rank 0, then those for rank 1, ... (packed along
      dim 0; a 1-D tensor's rows are its elements);
    - in_splits: int64, one entry per rank: rows of input for rank j;
    - out: receives rank 0's rows for this rank, then rank 1's, ... (packed);
      rows past the received ones keep their values; same dtype and row
      shape as input;
    - out_splits_offsets: int64 of shape (2, n_ranks), written: [0][j] the
      rows that came from rank j, [1][j] where they start in out.

    Enqueued on the current CUDA stream (one kernel that reads the splits on
    the GPU: splits made by a kernel need no host copy; graph-capturable);
    the host backend runs it at once. Combine (the reverse exchange) is
    all_to_all_v(out, back, out_splits_offsets[0], other_splits_offsets):
    every row returns to where it left.

    input must have the same size on every rank (as PyTorch's symmetric
    tensors; its place in the heap too: allocate it in the same order
    everywhere). Tensors on the symmetric heap (st.empty) are used in place;
    others are staged (input, out, and the splits: one copy each way).
    Splits of rows longer than one element, and ordinary splits tensors, go
    through symmetric staging counts (one small kernel before and after).
    Bad splits (more rows than input holds, more than out holds) raise
    symm.OutOfBounds on the rank concerned (the host backend); on GPUs that
    is recorded on the context: ctx.raise_async_error(). The receiving rank
    then copies nothing but still gets out_splits_offsets.

    Fallback: torch.distributed (an all_to_all_single of the splits, then
    one with the split sizes: a host synchronisation); one process: out
    gets input's first in_splits[0] rows, out_splits_offsets [[in_splits[0]],
    [0]]. group: None (every rank) or a symm.Team."""
    S = _S
    if S.ctx is None:
        return _fb_all_to_all_v(input, out, in_splits, out_splits_offsets, group)
    n = _npes(group)
    row = _a2av_check(input, out, in_splits, out_splits_offsets, n)
    fn = S.f.get("alltoallv")
    if fn is None:
        raise errors.NotSupported(7, "SYMM_ERR_NOT_SUPPORTED",
                                  "all_to_all_v: the loader %s has no symm_alltoallv_on_stream "
                                  "(ABI 1.2)" % LIB.path)
    team = S.world if group is None else group.handle
    tk = 0 if group is None else team.value
    hi, ii, si = _operand(input, 0, tk)
    ho, io, so = _operand(out, 1, tk)
    if row == 1:
        hs, is_, ss = _operand(in_splits, 2, tk)
        hr, ir, sr = _operand(out_splits_offsets, 3, tk)
    else:  # the library counts elements: scaled copies of the splits
        b, ss = _staging(_dcode(in_splits.dtype), n, in_splits.dtype, 2, tk)
        hs, is_ = b._h, 0
        b, sr = _staging(_dcode(out_splits_offsets.dtype), 2 * n, out_splits_offsets.dtype, 3, tk)
        hr, ir = b._h, 0
    if si is not None:
        si.copy_(_flat(input))
    if so is not None:
        so.copy_(_flat(out))  # rows not received keep their values
    if ss is not None:
        ss.copy_(_flat(in_splits) if row == 1 else _flat(in_splits) * row)
    st = fn(team, ho, io, out.numel(), hi, ii, input.numel(), hs, is_, hr, ir, S.stream())
    if st and st != errors.OutOfBounds.status:
        raise S.fail(st)  # an argument error: nothing was written
    err = S.fail(st) if st else None  # read the message before more calls
    if sr is not None:
        _flat(out_splits_offsets).copy_(sr if row == 1 else sr // row)
    if so is not None:
        _flat(out).copy_(so)
    if err is not None:
        raise err


def broadcast(tensor, src=0, group=None):
    """Every rank's tensor receives rank src's, in place."""
    S = _S
    if S.ctx is None:
        return _fb("broadcast", tensor, src=src, group=group)
    _check(tensor, "broadcast")
    team = S.world if group is None else group.handle
    h, i, st_t = _operand(tensor, 0, 0 if group is None else team.value)
    if st_t is not None:
        st_t.copy_(_flat(tensor))
    st = S.f["broadcast"](team, h, i, h, i, tensor.numel(), _core._i32(src, "src"), S.stream())
    if st:
        raise S.fail(st)
    if st_t is not None:
        _flat(tensor).copy_(st_t)


def barrier(group=None):
    """A barrier ordered on the current stream (later work on the stream runs
    after every rank's earlier work on its stream); with the host backend a
    plain barrier. Fallback: torch.distributed.barrier()."""
    S = _S
    if S.ctx is None:
        return _fb("barrier", group=group)
    if group is None:
        st = S.f["barrier"](S.ctx.handle, S.stream())
        if st:
            raise S.fail(st)
    else:
        group.barrier(stream=S.stream(), on_stream=True)


# ---- fallback ------------------------------------------------------------------------

def _dist():
    """torch.distributed when it is initialised, else None (never imports torch
    when nothing else did)."""
    import sys
    if "torch" not in sys.modules:
        return None
    try:
        import torch.distributed as dist
    except ImportError:
        return None
    return dist if dist.is_available() and dist.is_initialized() else None


def _single_or_raise(name):
    ws = int(os.environ.get("WORLD_SIZE", os.environ.get("SYMM_N_PES", "1")) or 1)
    if ws > 1:
        raise errors.InvalidState(
            18, "SYMM_ERR_INVALID_STATE",
            "symm.torch.%s: %d ranks, but symm is not in use (%s) and torch.distributed is not "
            "initialised: call symm.torch.init() or torch.distributed.init_process_group()"
            % (name, ws, _S.why))


def _fb_all_reduce(tensor, op, group):
    code = _op(op)
    dist = _dist()
    if dist is not None:
        return dist.all_reduce(tensor, op=getattr(dist.ReduceOp, _DIST_OPS[code]), group=group)
    _single_or_raise("all_reduce")
    return None


def _fb_all_to_all_v(input, out, in_splits, out_splits_offsets, group):
    dist = _dist()
    if dist is None:
        _single_or_raise("all_to_all_v")
    n = dist.get_world_size(group) if dist is not None else 1
    _a2av_check(input, out, in_splits, out_splits_offsets, n)
    torch = _torch()
    sends = _flat(in_splits)
    if dist is not None:  # the splits first: torch.distributed wants them on the host
        got = torch.zeros(n, dtype=in_splits.dtype, device=in_splits.device)
        dist.all_to_all_single(got, sends, group=group)
    else:
        got = sends
    ins = [int(x) for x in sends.tolist()]
    outs = [int(x) for x in got.tolist()]
    offs = [sum(outs[:j]) for j in range(n)]
    _flat(out_splits_offsets).copy_(torch.tensor(outs + offs, dtype=out_splits_offsets.dtype,
                                                 device=out_splits_offsets.device))
    rows_in = int(input.shape[0]) if input.dim() else 1
    rows_out = int(out.shape[0]) if out.dim() else 1
    if min(ins) < 0 or sum(ins) > rows_in:
        raise errors.OutOfBounds(3, "SYMM_ERR_OUT_OF_BOUNDS",
                                 "all_to_all_v: in_splits %s: input has %d rows" % (ins, rows_in))
    if sum(outs) > rows_out:
        raise errors.OutOfBounds(3, "SYMM_ERR_OUT_OF_BOUNDS",
                                 "all_to_all_v: %d rows would come, out has %d (nothing was "
                                 "received; out_splits_offsets says what would have come)"
                                 % (sum(outs), rows_out))
    src = input.view(-1) if input.dim() == 0 else input
    dst = out.view(-1) if out.dim() == 0 else out
    if dist is not None:
        return dist.all_to_all_single(dst[:sum(outs)], src[:sum(ins)], outs, ins, group=group)
    dst[:ins[0]].copy_(src[:ins[0]])
    return None


def _fb(name, *tensors, op=None, src=None, group=None):
    dist = _dist()
    if dist is not None:
        kw = {"group": group}
        if op is not None:
            kw["op"] = getattr(dist.ReduceOp, _DIST_OPS[_op(op)])
        if src is not None:
            kw["src"] = src
        return getattr(dist, name)(*tensors, **kw)
    _single_or_raise(name)
    if name in ("barrier", "broadcast"):
        return None
    output, input = tensors
    if output.numel() != input.numel():
        raise _invalid("%s: output has %d elements, input %d (one rank)"
                       % (name, output.numel(), input.numel()))
    if op is not None:
        _op(op)  # validate
    output.view(-1).copy_(input.view(-1))
    return None


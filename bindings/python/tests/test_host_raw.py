"""Host-backend tests of the wrappers of the address-based and the less used
entries (one process per PE):
    symmrun -n 4 python3 bindings/python/tests/test_host_raw.py
Context.putmem/getmem (blocking, nbi, stream forms), Buffer.atomic(nbi=True),
Context.register, Team.device_team, Team.config and split configs,
symm.dtype_size, symm.team_config: data against references, bad input
against the exception it must raise; every integer argument of every public
method against its C type (table-driven)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import symm  # noqa: E402
from harness import case, check, expect_raises, run  # noqa: E402

ctx = symm.init()
me, n = ctx.my_pe, ctx.n_pes
nxt, prv = (me + 1) % n, (me - 1) % n


@case
def putmem_getmem_every_address_form():
    b = ctx.alloc("int32", 64)
    ref = np.arange(16, dtype=np.int32) + 1000 * me
    # an int address (element 8), a Buffer (element 0), a NumPy view (element 32)
    ctx.putmem(b.ptr + 8 * 4, ref, nxt)
    ctx.putmem(b, ref[:4], nxt)
    ctx.putmem(b.numpy()[32:48], ref[::-1].copy(), nxt)
    ctx.putmem(b.addr(60), bytes(ref[:2]), nxt)  # bytes are a source too
    ctx.barrier_all()
    pref = np.arange(16, dtype=np.int32) + 1000 * prv
    mem = b.numpy()
    check((mem[8:24] == pref).all(), mem[8:24])
    check((mem[:4] == pref[:4]).all(), mem[:4])
    check((mem[32:48] == pref[::-1]).all(), mem[32:48])
    check((mem[60:62] == pref[:2]).all(), mem[60:62])
    # getmem: what I wrote to nxt, back from nxt
    got = ctx.getmem(b.addr(8), nxt, nbytes=16 * 4)
    check(isinstance(got, bytearray) and np.frombuffer(got, np.int32).tolist() == ref.tolist(), got)
    out = np.zeros(16, dtype=np.int32)
    check(ctx.getmem(b.numpy()[32:48], nxt, out=out) is out, "out returned")
    check((out == ref[::-1]).all(), out)
    part = np.zeros(16, dtype=np.int32)
    ctx.getmem(b.ptr, nxt, nbytes=8, out=part)  # nbytes less than out
    check(part[:2].tolist() == ref[:2].tolist() and (part[2:] == 0).all(), part)
    whole = ctx.getmem(b, nxt)  # a Buffer: its whole size
    check(len(whole) == b.nbytes, len(whole))
    check(ctx.getmem(b.ptr, nxt, nbytes=0) == bytearray(), "0 bytes")
    ctx.barrier_all()
    b.free()


@case
def putmem_getmem_nbi_keep_until_quiet():
    b = ctx.alloc("float64", 8)
    kept = len(ctx._pending)
    # a temporary bytes source: copied into memory the context keeps until quiet
    ctx.putmem(b.addr(2), np.full(3, 2.5 + me).tobytes(), nxt, nbi=True)
    check(len(ctx._pending) == kept + 1, "nbi source kept")
    ctx.quiet()
    check(len(ctx._pending) == 0, "released at quiet")
    ctx.barrier_all()
    check(b.numpy()[2:5].tolist() == [2.5 + prv] * 3 and b.numpy()[5] == 0, b.numpy())
    out = np.zeros(3)
    ctx.getmem(b.addr(2), nxt, out=out, nbi=True)
    check(len(ctx._pending) == 1, "nbi destination kept")
    ctx.quiet()
    check(out.tolist() == [2.5 + me] * 3, out)
    ctx.barrier_all()
    b.free()


@case
def putmem_getmem_stream_forms():
    class FakeStream:
        cuda_stream = 0
    b = ctx.alloc("uint8", 32)
    for k, stream in enumerate((None, 0, FakeStream())):
        src = ((np.arange(10) + 10 * me + k) % 256).astype(np.uint8)
        ctx.putmem(b.addr(k), src, nxt, stream=stream, on_stream=True)
        ctx.barrier_all(stream=stream, on_stream=True)
        check((b.numpy()[k:k + 10] == (np.arange(10) + 10 * prv + k) % 256).all(), (k, b.numpy()))
        out = np.zeros(10, dtype=np.uint8)
        ctx.getmem(b.addr(k), nxt, out=out, stream=stream, on_stream=True)
        check((out == src).all(), (k, out))
        ctx.barrier_all()
    e = expect_raises(symm.InvalidArgument, ctx.putmem, b, b"x", nxt, nbi=True, on_stream=True)
    check("nbi" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.getmem, b, nxt, nbi=True, stream=0)
    check(ctx.async_error() == (0, ""), ctx.async_error())
    ctx.barrier_all()
    b.free()


@case
def putmem_getmem_bad_input():
    b = ctx.alloc("int64", 4)
    heap = ctx.query()["heap_mapped"]
    # past the heap's end, straddling it, before it, in the system area, NULL
    for addr, nbytes in ((b.ptr + heap, 8), (b.ptr + heap - b.offset - 4, 8), (16, 8), (0, 8),
                         (b.ptr - b.offset, 8)):
        e = expect_raises(symm.OutOfBounds, ctx.putmem, addr, bytes(nbytes), nxt)
        check(e.status == 3 and e.name == "SYMM_ERR_OUT_OF_BOUNDS", e)
        check("symm_putmem" in e.message, e.message)
        e = expect_raises(symm.OutOfBounds, ctx.getmem, addr, nxt, nbytes=nbytes)
        check("symm_getmem" in e.message, e.message)
        expect_raises(symm.OutOfBounds, ctx.putmem, addr, bytes(nbytes), nxt, nbi=True)
        expect_raises(symm.OutOfBounds, ctx.getmem, addr, nxt, nbytes=nbytes, nbi=True)
        expect_raises(symm.OutOfBounds, ctx.putmem, addr, bytes(nbytes), nxt, on_stream=True)
    check(len(ctx._pending) == 0, "a failed nbi call keeps nothing")
    # memory that is not the heap's (a private NumPy array) is no symmetric address
    own = np.zeros(4, dtype=np.int64)
    expect_raises(symm.OutOfBounds, ctx.putmem, own, own, nxt)
    e = expect_raises(symm.InvalidArgument, ctx.putmem, b, b"12345678", n + 2)
    check("pe" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.getmem, b, -1)
    e = expect_raises(symm.InvalidArgument, ctx.putmem, "not an address", b"x", nxt)
    check("symmetric address" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.putmem, True, b"x", nxt)
    e = expect_raises(symm.InvalidArgument, ctx.getmem, b.ptr, nxt)
    check("nbytes" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.getmem, b.ptr, nxt, nbytes=16, out=bytearray(8))
    expect_raises(symm.InvalidArgument, ctx.getmem, b.ptr, nxt, nbytes=-1)
    expect_raises(symm.InvalidArgument, ctx.getmem, b.ptr, nxt, out=b"read-only")
    expect_raises(symm.OutOfBounds, b.addr, 5)
    check(b.addr(4) == b.ptr + 32, "one past the end")
    ctx.barrier_all()
    b.free()
    expect_raises(symm.InvalidHandle, ctx.putmem, b, b"x", nxt)  # a freed Buffer


@case
def atomic_nbi():
    c = ctx.alloc("int64", 2)
    got = ctx.alloc("int64", n)
    ctx.barrier_all()
    r = c.atomic(0, "fetch_add", 1, pe=0, nbi=True)
    check(isinstance(r, symm.FetchResult), r)
    check(c.atomic(1, "add", me + 1, pe=0, nbi=True) is None, "non-fetching: None")
    # symm_atomic_nbi may complete early, but the value is only defined after quiet
    check(not r.ready and "pending" in repr(r), repr(r))
    e = expect_raises(symm.InvalidState, lambda: r.value)
    check("quiet" in e.message, e.message)
    ctx.quiet()
    check(r.ready and 0 <= r.value < n, repr(r))
    got.p(me, r.value, pe=0)
    ctx.barrier_all()
    if me == 0:
        check(c.numpy().tolist() == [n, n * (n + 1) // 2], c.numpy())
        check(sorted(got.numpy().tolist()) == list(range(n)), got.numpy())
    ctx.barrier_all()
    # compare_swap and swap, nbi, on my own element; barrier_all also completes them
    r1 = c.atomic(1, "swap", 7, pe=me, nbi=True)
    ctx.barrier_all()
    check(r1.value == (n * (n + 1) // 2 if me == 0 else 0), r1.value)
    r2 = c.atomic(1, "compare_swap", 9, compare=7, pe=me, nbi=True)
    ctx.quiet()
    check(r2.value == 7 and c.g(index=1, pe=me) == 9, (r2.value, c.g(index=1, pe=me)))
    f = ctx.alloc("float32", 1)
    r3 = f.atomic(0, "swap", 1.5, pe=me, nbi=True)
    ctx.quiet()
    check(r3.value == 0.0 and f.numpy()[0] == 1.5, (r3.value, f.numpy()))
    # bad input: arithmetic and bitwise ops on a floating dtype (wrong dtype),
    # an unknown op, out of bounds, bad pe
    for op in ("fetch_add", "and"):
        e = expect_raises(symm.InvalidArgument, f.atomic, op, me, value=1, nbi=True)
        check("symm_atomic_nbi" in e.message and "dtype" in e.message, e.message)
    expect_raises(symm.InvalidArgument, c.atomic, "minloc", me, nbi=True)
    expect_raises(symm.OutOfBounds, c.atomic, "fetch_add", me, index=2, value=1, nbi=True)
    expect_raises(symm.InvalidArgument, c.atomic, "add", n, value=1, nbi=True)
    ctx.barrier_all()
    for x in (c, got, f):
        x.free()


@case
def register_on_the_host_backend():
    own = np.zeros(16, dtype=np.int32)
    before = ctx.query()["heap_used"]
    e = expect_raises(symm.NotSupported, ctx.register, own)
    check(e.status == 7 and "symm_buf_register" in e.message and "host" in e.message, e)
    expect_raises(symm.NotSupported, ctx.register, own, "float32", 8)
    # bad input is reported before the backend is asked
    e = expect_raises(symm.InvalidArgument, ctx.register, own, "complex64")
    check("dtype" in e.message, e.message)
    e = expect_raises(symm.InvalidArgument, ctx.register, own, 99, 4)
    check("unknown dtype 99" in e.message, e.message)
    e = expect_raises(symm.InvalidArgument, ctx.register, own, "int64", 16)
    check("bytes" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.register, bytearray(16))  # no dtype
    expect_raises(symm.InvalidArgument, ctx.register, b"read-only", "uint8")
    expect_raises(symm.InvalidArgument, ctx.register, np.zeros(0, dtype=np.int32))  # count 0
    check(ctx.query()["heap_used"] == before, "nothing allocated")
    check(not any(b.registered for b in ctx._bufs.values()), ctx._bufs)
    ctx.barrier_all()


@case
def device_team_and_ctx_on_the_host_backend():
    for team in (ctx.world, ctx.team("shared")):
        e = expect_raises(symm.NotSupported, team.device_team)
        check(e.status == 7 and e.name == "SYMM_ERR_NOT_SUPPORTED", e)
        check("symm_device_team_get" in e.message and "host" in e.message, e.message)
    expect_raises(symm.NotSupported, ctx.device_ctx)
    if n >= 2:
        evens = ctx.world.split_strided(0, 2, (n + 1) // 2)
        if evens is not None:
            expect_raises(symm.NotSupported, evens.device_team)
            evens.destroy()
    ctx.barrier_all()


@case
def team_configs():
    d = symm.team_config()
    check(d.struct_size == 8 and d.num_contexts == 0, (d.struct_size, d.num_contexts))
    check(symm.team_config(4).num_contexts == 4, "num_contexts set")
    check(ctx.world.config() == {"num_contexts": 0}, ctx.world.config())
    t = ctx.world.split_strided(0, 1, n, config={"num_contexts": 3})
    check(t is not None and t.config() == {"num_contexts": 3}, t and t.config())
    t.barrier()
    t.destroy()
    t2 = ctx.world.split_strided(0, 1, n, config=symm.team_config(2))
    check(t2.config()["num_contexts"] == 2, t2.config())
    t2.destroy()
    x, y = ctx.world.split_2d(2, xconfig={"num_contexts": 1}, yconfig={"num_contexts": 5})
    check(x.config()["num_contexts"] == 1 and y.config()["num_contexts"] == 5,
          (x.config(), y.config()))
    x.destroy()
    y.destroy()
    none_cfg = ctx.world.split_strided(0, 1, n)
    check(none_cfg.config() == {"num_contexts": 0}, none_cfg.config())
    none_cfg.destroy()
    e = expect_raises(symm.InvalidArgument, ctx.world.split_strided, 0, 1, n,
                      config={"contexts": 2})
    check("unknown fields" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.world.split_strided, 0, 1, n, config=3)
    # a negative hint: every PE rejects it, none is left waiting
    expect_raises(symm.InvalidArgument, ctx.world.split_strided, 0, 1, n,
                  config={"num_contexts": -1})
    t.__init__(ctx, None)  # a destroyed team's handle
    expect_raises(symm.InvalidHandle, t.config)
    ctx.barrier_all()


@case
def dtype_sizes():
    for name, code in symm.DTYPES.items():
        size = symm.dtype_size(name)
        check(size == symm.dtype_size(code), name)
        want = 2 if name == "bfloat16" else np.dtype(name).itemsize
        check(size == want, (name, size, want))
    check(symm.dtype_size(np.dtype("float64")) == 8, "numpy dtype")
    for bad in (0, 13, 99, -1, "complex64"):
        e = expect_raises(symm.InvalidArgument, symm.dtype_size, bad)
        check(e.status == 1, e)


# ---- integer arguments: refused before the C call, which would truncate them ----

I32 = [2 ** 31, -2 ** 31 - 1, 2 ** 32, 2 ** 64]          # int32_t: PEs, roots, team sizes
U64 = [-1, 2 ** 64, 2 ** 64 + 1, 2 ** 70]                 # uint64_t: indices, counts
U32 = [-1, 2 ** 32, 2 ** 32 + 1]                          # uint32_t: codes, timeout_ms
NOT_INT = [1.5, "1", b"\x01", [1]]


def integer_rows(b, s8, sig, w):
    """(what, call(value), argument name, bad integers): every public method
    with an integer argument, each integer argument (table-driven)."""
    one = np.zeros(1, dtype=np.int64)
    return [
        # Buffer: RMA
        ("put pe", lambda v: b.put(one, v), "pe", I32),
        ("put index", lambda v: b.put(one, nxt, index=v), "index", U64),
        ("put stream pe", lambda v: b.put(one, v, on_stream=True), "pe", I32),
        ("put stream", lambda v: b.put(one, nxt, stream=v), "stream", U64),
        ("get pe", lambda v: b.get(v), "pe", I32),
        ("get index", lambda v: b.get(nxt, index=v), "index", U64),
        ("get count", lambda v: b.get(nxt, count=v), "count", U64),
        ("p pe", lambda v: b.p(0, 1, pe=v), "pe", I32),
        ("p index", lambda v: b.p(v, 1, pe=nxt), "index", U64),
        ("p value", lambda v: b.p(0, v, pe=nxt), "value", [2 ** 63, -2 ** 63 - 1, 2 ** 64]),
        ("p int8 value", lambda v: s8.p(0, v, pe=nxt), "value", [128, -129, 256]),
        ("g pe", lambda v: b.g(pe=v), "pe", I32),
        ("g index", lambda v: b.g(index=v, pe=nxt), "index", U64),
        ("peer_ptr pe", lambda v: b.peer_ptr(v), "pe", I32),
        ("addr index", lambda v: b.addr(v), "index", U64),
        # signals
        ("put_signal pe", lambda v: b.put_signal(one, v, sig, 0, 1), "pe", I32),
        ("put_signal index", lambda v: b.put_signal(one, nxt, sig, 0, 1, index=v), "index", U64),
        ("put_signal sig_index", lambda v: b.put_signal(one, nxt, sig, v, 1), "sig_index", U64),
        ("put_signal signal", lambda v: b.put_signal(one, nxt, sig, 0, v), "signal", U64),
        ("put_signal sig_op", lambda v: b.put_signal(one, nxt, sig, 0, 1, v), "signal op", U32),
        ("signal_op index", lambda v: sig.signal_op(v, 1, nxt), "index", U64),
        ("signal_op value", lambda v: sig.signal_op(0, v, nxt), "value", U64),
        ("signal_op pe", lambda v: sig.signal_op(0, 1, v), "pe", I32),
        ("signal_op op", lambda v: sig.signal_op(0, 1, nxt, op=v), "signal op", U32),
        ("signal_fetch index", lambda v: sig.signal_fetch(v), "index", U64),
        ("signal_wait_until index", lambda v: sig.signal_wait_until(v, "ge", 0), "index", U64),
        ("signal_wait_until value", lambda v: sig.signal_wait_until(0, "ge", v), "value", U64),
        ("signal_wait_until cmp", lambda v: sig.signal_wait_until(0, v, 0), "comparison", U32),
        # atomics
        ("atomic pe", lambda v: b.atomic(0, "add", 1, pe=v), "pe", I32),
        ("atomic index", lambda v: b.atomic(v, "add", 1, pe=nxt), "index", U64),
        ("atomic value", lambda v: b.atomic(0, "add", v, pe=nxt), "value", [2 ** 63, 2 ** 64]),
        ("atomic compare", lambda v: b.atomic(0, "compare_swap", 1, compare=v, pe=nxt), "compare",
         [2 ** 63, -2 ** 63 - 1]),
        ("atomic op", lambda v: b.atomic(0, v, 1, pe=nxt), "atomic op", U32),
        ("fetch_add pe", lambda v: b.fetch_add(0, 1, pe=v), "pe", I32),
        ("compare_swap index", lambda v: b.compare_swap(v, 0, 1, pe=nxt), "index", U64),
        # waits and tests
        ("wait_until index", lambda v: b.wait_until(v, "ge", 0), "index", U64),
        ("wait_until value", lambda v: b.wait_until(0, "ge", v), "value", [2 ** 63]),
        ("wait_until cmp", lambda v: b.wait_until(0, v, 0), "comparison", U32),
        ("wait_until_all index", lambda v: b.wait_until_all(v, 1, "ge", 0), "index", U64),
        ("wait_until_all nelems", lambda v: b.wait_until_all(0, v, "ge", 0), "nelems", U64),
        ("wait_until_any nelems", lambda v: b.wait_until_any(0, v, "ge", 0), "nelems", U64),
        ("wait_until_some index", lambda v: b.wait_until_some(v, 1, "ge", 0), "index", U64),
        ("wait_until_all values", lambda v: b.wait_until_all(0, 2, "ge", [0, v], vector=True),
         "value[1]", [2 ** 63]),
        ("test index", lambda v: b.test(v, "ge", 0), "index", U64),
        ("test value", lambda v: b.test(0, "ge", v), "value", [2 ** 64]),
        ("test_all nelems", lambda v: b.test_all(0, v, "ge", 0), "nelems", U64),
        ("test_any index", lambda v: b.test_any(v, 1, "ge", 0), "index", U64),
        ("test_some nelems", lambda v: b.test_some(0, v, "ge", 0), "nelems", U64),
        # Context
        ("alloc count", lambda v: ctx.alloc("int64", v), "count", U64),
        ("alloc dtype code", lambda v: ctx.alloc(v, 1), "dtype", U32),
        ("array shape", lambda v: ctx.array((2, v), "int8"), "shape[1]", U64),
        ("register count", lambda v: ctx.register(np.zeros(4), "float64", v), "count", U64),
        ("ptr pe", lambda v: ctx.ptr(b.ptr, v), "pe", I32),
        ("ptr sym_addr", lambda v: ctx.ptr(v, nxt), "sym_addr", U64),
        ("putmem pe", lambda v: ctx.putmem(b, one, v), "pe", I32),
        ("putmem dest", lambda v: ctx.putmem(v, one, nxt), "dest", U64),
        ("getmem pe", lambda v: ctx.getmem(b, v), "pe", I32),
        ("getmem src", lambda v: ctx.getmem(v, nxt, nbytes=8), "src", U64),
        ("getmem nbytes", lambda v: ctx.getmem(b, nxt, nbytes=v), "nbytes", U64),
        ("team which", lambda v: ctx.team(v), "team", U32),
        # Team
        ("translate pe", lambda v: w.translate(v, w), "pe", I32),
        ("split_strided start", lambda v: w.split_strided(v, 1, 1), "start", I32),
        ("split_strided stride", lambda v: w.split_strided(0, v, 1), "stride", I32),
        ("split_strided size", lambda v: w.split_strided(0, 1, v), "size", I32),
        ("split_strided num_contexts", lambda v: w.split_strided(0, 1, 1, {"num_contexts": v}),
         "num_contexts", I32),
        ("split_2d xrange", lambda v: w.split_2d(v), "xrange", I32),
        ("broadcast root", lambda v: w.broadcast(b, b, 1, root=v), "root", I32),
        ("broadcast nelems", lambda v: w.broadcast(b, b, v), "nelems", U64),
        ("broadcast dst_index", lambda v: w.broadcast(b, b, 1, dst_index=v), "dst_index", U64),
        ("broadcast src_index", lambda v: w.broadcast(b, b, src_index=v), "src_index", U64),
        ("fcollect nelems", lambda v: w.fcollect(b, b, v), "nelems", U64),
        ("collect dst_index", lambda v: w.collect(b, b, 1, dst_index=v), "dst_index", U64),
        ("collect nelems", lambda v: w.collect(b, b, v), "nelems", U64),
        ("alltoall src_index", lambda v: w.alltoall(b, b, 1, src_index=v), "src_index", U64),
        ("reduce nelems", lambda v: w.reduce(b, b, "sum", v), "nelems", U64),
        ("reduce op", lambda v: w.reduce(b, b, v), "op", U32),
        ("reducescatter dst_index", lambda v: w.reducescatter(b, b, "sum", 1, dst_index=v),
         "dst_index", U64),
        ("alltoallv dst_nelems", lambda v: w.alltoallv(b, b, b, b, dst_nelems=v), "dst_nelems",
         U64),
        ("alltoallv src_nelems", lambda v: w.alltoallv(b, b, b, b, src_nelems=v), "src_nelems",
         U64),
        ("alltoallv dst_index", lambda v: w.alltoallv(b, b, b, b, dst_index=v), "dst_index", U64),
        ("alltoallv src_index", lambda v: w.alltoallv(b, b, b, b, src_index=v), "src_index", U64),
        ("alltoallv send_index", lambda v: w.alltoallv(b, b, b, b, send_index=v), "send_index",
         U64),
        ("alltoallv recv_index", lambda v: w.alltoallv(b, b, b, b, recv_index=v), "recv_index",
         U64),
        # module level and init (refused before symm_init: nothing collective starts)
        ("team_config num_contexts", lambda v: symm.team_config(v), "num_contexts", I32),
        ("dtype_size code", lambda v: symm.dtype_size(v), "dtype", U32),
        ("init heap_cap", lambda v: symm.init(heap_cap=v), "heap_cap", U64),
        ("init device", lambda v: symm.init(device=v), "device", I32),
        ("init timeout_ms", lambda v: symm.init(timeout_ms=v), "timeout_ms", U32),
        ("init rank", lambda v: symm.init(unique_id=bytes(128), rank=v, n_pes=2), "rank", I32),
        ("init n_pes", lambda v: symm.init(unique_id=bytes(128), rank=0, n_pes=v), "n_pes", I32),
        ("init backend code", lambda v: symm.init(backend=v), "backend", U32),
    ]


@case
def every_integer_argument_is_range_checked():
    # An integer its C parameter cannot hold used to be truncated by ctypes
    # (pe=2**32 wrote PE 0, index=2**64+1 element 1, count=2**70 made an
    # empty buffer): now ArgumentOverflow (an OverflowError and an
    # InvalidArgument) naming the argument, and a non-integer
    # ArgumentTypeError (a TypeError); nothing reaches the C library.
    b, s8 = ctx.alloc("int64", 4), ctx.alloc("int8", 4)
    sig, w = ctx.alloc("uint64", 2), ctx.world
    b.numpy()[:] = 7
    ctx.barrier_all()
    rows = integer_rows(b, s8, sig, w)
    tried = 0
    for what, call, arg, bad in rows:
        for v in bad:
            e = expect_raises(symm.ArgumentOverflow, call, v)
            check(isinstance(e, OverflowError) and isinstance(e, symm.InvalidArgument)
                  and e.status == 1, (what, v, e))
            check(arg in e.message and str(v) in e.message, (what, v, e.message))
            tried += 1
        # a non-integer where the C parameter is an integer
        if arg not in ("value", "compare", "value[1]", "signal op", "comparison", "atomic op",
                       "op", "team", "backend", "dtype", "stream"):
            for v in NOT_INT:
                e = expect_raises(symm.ArgumentTypeError, call, v)
                check(isinstance(e, TypeError) and arg in e.message, (what, v, e.message))
                tried += 1
    check(tried > 300, tried)
    # a value of the wrong kind for the buffer: a float for an int64 element
    for call in (lambda: b.p(0, 1.5, nxt), lambda: b.atomic(0, "add", 2.5, pe=nxt),
                 lambda: b.wait_until(0, "ge", 0.5)):
        e = expect_raises(symm.ArgumentTypeError, call)
        check("value" in e.message and "int64" in e.message, e.message)
    f32 = ctx.alloc("float32", 1)
    e = expect_raises(symm.ArgumentOverflow, f32.p, 1e300, nxt)
    check("value" in e.message and "float32" in e.message, e.message)
    # nothing was written anywhere (a truncated PE or index would have)
    ctx.barrier_all()
    check((b.numpy() == 7).all() and (s8.numpy() == 0).all() and (sig.numpy() == 0).all(),
          (b.numpy(), s8.numpy(), sig.numpy()))
    ctx.barrier_all()
    # NumPy integers and other __index__ objects are integers
    b.put(np.array([5], dtype=np.int64), np.int32(nxt), index=np.uint64(3))
    b.p(np.uint8(2), np.int16(6), pe=np.int64(nxt))
    ctx.barrier_all()
    check(list(b.numpy()) == [7, 7, 6, 5], b.numpy())
    ctx.barrier_all()
    for x in (b, s8, sig, f32):
        x.free()


rc = run("PE %d: " % me)
try:
    ctx.finalize()
except symm.Error as e:
    print("PE %d: finalize failed: %s" % (me, e))
    rc = 1
sys.exit(rc)

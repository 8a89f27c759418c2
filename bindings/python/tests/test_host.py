"""Host-backend tests of the symm Python package, one process per PE:
    symmrun -n 4 python3 bindings/python/tests/test_host.py
Every API family, errors mapped to exceptions, zero-copy views, threads."""
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402

import symm  # noqa: E402
from harness import case, check, expect_raises, run  # noqa: E402

ctx = symm.init()
me, n = ctx.my_pe, ctx.n_pes
nxt, prv = (me + 1) % n, (me - 1) % n


@case
def context_basics():
    info = ctx.query()
    check(ctx.backend == "host", ctx.backend)
    check(info["n_pes"] == n and 0 <= me < n, info)
    check(info["thread_level"] == 3, "default thread level is MULTIPLE")
    check(symm.loader_version() == tuple(int(x) for x in symm.__version__.split(".")),
          (symm.loader_version(), symm.__version__))
    check(symm.runtime_version()[0] == 1, symm.runtime_version())
    check("libsymm_runtime.so.1" in symm.runtime_path(), symm.runtime_path())
    check(ctx.async_error() == (0, ""), ctx.async_error())


@case
def ring_put_get():
    b = ctx.array((2, 8), "int64")
    b.put(np.arange(16, dtype=np.int64) + 100 * me, nxt)
    ctx.barrier_all()
    check((b.numpy().ravel() == np.arange(16) + 100 * prv).all(), b.numpy())
    got = b.get(nxt)  # next holds what I sent it
    check((got == np.arange(16) + 100 * me).all(), got)
    part = b.get(nxt, index=3, count=4)
    check(list(part) == list(np.arange(3, 7) + 100 * me), part)
    ctx.barrier_all()
    b.free()


@case
def p_g_and_nbi():
    b = ctx.alloc("float64", 4)
    b.p(2, 1.5 + me, nxt)
    ctx.barrier_all()
    check(b.numpy()[2] == 1.5 + prv, b.numpy())
    check(b.g(index=2, pe=nxt) == 1.5 + me, "g")
    ctx.barrier_all()
    src = np.full(4, float(me), dtype=np.float64)
    b.put(src, nxt, nbi=True)
    ctx.quiet()
    ctx.barrier_all()
    check((b.numpy() == float(prv)).all(), b.numpy())
    out = np.zeros(4)
    b.get(nxt, out=out, nbi=True)
    ctx.quiet()
    check((out == float(me)).all(), out)
    ctx.barrier_all()
    b.free()


@case
def every_dtype_roundtrip():
    for name in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float16", "float32", "float64"]:
        b = ctx.alloc(name, 5)
        vals = (np.arange(5) + me).astype(name)
        b.put(vals, nxt)
        ctx.barrier_all()
        check((b.numpy() == (np.arange(5) + prv).astype(name)).all(), (name, b.numpy()))
        ctx.barrier_all()
        b.free()
    bf = ctx.alloc("bfloat16", 2)
    bf.p(1, 2.5, nxt)
    ctx.barrier_all()
    check(bf.g(index=1, pe=me) == 2.5, "bfloat16 scalar")
    ctx.barrier_all()
    bf.free()


@case
def put_signal_and_wait():
    data = ctx.alloc("int32", 64)
    sig = ctx.alloc("uint64", 2)
    data.put_signal(np.full(64, me, dtype=np.int32), nxt, sig, 0, 7, "set")
    seen = sig.signal_wait_until(0, "eq", 7)
    check(seen == 7, seen)
    check((data.numpy() == prv).all(), "data visible before the signal")
    sig.signal_op(1, 5, nxt, "add")
    check(sig.signal_wait_until(1, ">=", 5) >= 5, "signal add")
    check(sig.signal_fetch(1) == 5, sig.signal_fetch(1))
    ctx.barrier_all()
    data.free()
    sig.free()


@case
def atomics():
    c = ctx.alloc("int64", 2)
    ctx.barrier_all()
    for _ in range(10):
        c.fetch_add(0, 1, pe=0)
    c.atomic(1, "add", me + 1, pe=0)
    ctx.barrier_all()
    if me == 0:
        check(c.numpy()[0] == 10 * n, c.numpy())
        check(c.numpy()[1] == n * (n + 1) // 2, c.numpy())
    ctx.barrier_all()
    w = ctx.alloc("int32", 1)
    ctx.barrier_all()
    old = w.compare_swap(0, 0, me + 1, pe=0)
    wins = ctx.alloc("int32", n)
    src = np.array([1 if old == 0 else 0], dtype=np.int32)
    wins.put(src, 0, index=me)
    ctx.barrier_all()
    if me == 0:
        check(int(wins.numpy().sum()) == 1, "one compare_swap winner")
        check(w.numpy()[0] in range(1, n + 1), w.numpy())
    ctx.barrier_all()
    for b in (c, w, wins):
        b.free()


@case
def waits_and_tests():
    flags = ctx.alloc("int64", 4)
    ctx.barrier_all()
    check(not flags.test(0, "eq", 1), "test before")
    check(flags.test_any(0, 4, "eq", 1) is None, "test_any before")
    ctx.barrier_all()  # nobody sets my flag before I tested it
    flags.p(2, 1, pe=nxt)
    found = flags.wait_until_any(0, 4, "eq", 1)
    check(found == 2, found)
    check(flags.wait_until_some(0, 4, "eq", 1) == [2], "some")
    flags.wait_until(2, "ge", 1)
    check(flags.test_all(0, 4, ">=", 0), "test_all")
    check(flags.wait_until_all(0, 4, "eq", [0, 0, 1, 0], vector=True), "vector all")
    check(flags.test_all(0, 4, "eq", 0, status=[0, 0, 1, 0]), "status mask")
    ctx.barrier_all()
    flags.free()


@case
def main_thread_waits_keep_the_c_semantics():
    # On the main thread the waits poll the tests (so Ctrl-C ends them); they
    # must still mean what the C waits mean. wait_until_all passes elements in
    # order and does not read one again once it compared true: element 0 is 1
    # only for a while, then element 1 becomes 1 (all-at-once polling would hang).
    import time
    f = ctx.alloc("int64", 3)

    def flip(vals):
        time.sleep(0.2)
        f.p(0, vals[0], pe=me)
        time.sleep(0.3)
        f.p(0, 0, pe=me)
        f.p(1, vals[1], pe=me)

    for vector in (False, True):
        want = [7, 9] if vector else [1, 1]
        t = threading.Thread(target=flip, args=(want,))
        t.start()
        got = f.wait_until_all(0, 2, "eq", want if vector else 1, vector=vector)
        t.join()
        check(got is True and list(f.get(me, count=2)) == [0, want[1]], (vector, f.get(me)))
        f.p(1, 0, pe=me)
    # excluded elements are skipped; any/some report indices relative to index
    t = threading.Thread(target=lambda: (time.sleep(0.2), f.p(2, 4, pe=me), f.p(0, 4, pe=me)))
    t.start()
    check(f.wait_until_any(1, 2, "eq", 4) == 1, "any")
    t.join()
    check(f.wait_until_some(0, 3, "eq", 4, status=[1, 0, 0]) == [2], "some with a mask")
    check(f.wait_until_all(0, 3, "eq", 4, status=[0, 1, 0]), "all with a mask")
    check(f.wait_until_any(0, 3, "eq", 4, status=[1, 1, 1]) == symm.INDEX_NONE, "nothing included")
    check(f.wait_until_some(0, 0, "eq", 4) == [], "empty set")
    ctx.barrier_all()
    f.free()


@case
def teams_and_collectives():
    world = ctx.world
    check(world.n_pes == n and world.my_pe == me, "world")
    src = ctx.alloc("float32", 6)
    dst = ctx.alloc("float32", 6 * n)
    src.numpy()[:] = np.arange(6, dtype=np.float32) + me
    ctx.barrier_all()
    world.fcollect(dst, src)
    want = np.concatenate([np.arange(6, dtype=np.float32) + p for p in range(n)])
    check((dst.numpy() == want).all(), dst.numpy())
    red = ctx.alloc("float32", 6)
    world.reduce(red, src, "sum")
    check(np.allclose(red.numpy(), sum(np.arange(6, dtype=np.float32) + p for p in range(n))), red.numpy())
    world.reduce(red, src, "max")
    check((red.numpy() == np.arange(6, dtype=np.float32) + n - 1).all(), "max")
    world.broadcast(red, src, root=n - 1)
    check((red.numpy() == np.arange(6, dtype=np.float32) + n - 1).all(), "broadcast")
    a2a_src = ctx.alloc("int32", 2 * n)
    a2a_dst = ctx.alloc("int32", 2 * n)
    a2a_src.numpy()[:] = np.array([100 * me + j for j in range(n) for _ in range(2)], dtype=np.int32)
    ctx.barrier_all()
    world.alltoall(a2a_dst, a2a_src)
    check((a2a_dst.numpy() == np.array([100 * p + me for p in range(n) for _ in range(2)])).all(),
          a2a_dst.numpy())
    rs_src = ctx.alloc("int64", 3 * n)
    rs_dst = ctx.alloc("int64", 3)
    rs_src.numpy()[:] = np.arange(3 * n, dtype=np.int64) * (me + 1)
    ctx.barrier_all()
    world.reducescatter(rs_dst, rs_src, "sum")
    tot = n * (n + 1) // 2
    check((rs_dst.numpy() == np.arange(3 * me, 3 * me + 3) * tot).all(), rs_dst.numpy())
    col = ctx.alloc("int16", n * (n + 1) // 2)
    mine = ctx.alloc("int16", n)
    mine.numpy()[: me + 1] = me
    ctx.barrier_all()
    world.collect(col, mine, me + 1)
    check((col.numpy() == np.concatenate([[p] * (p + 1) for p in range(n)])).all(), col.numpy())
    if n >= 2:
        evens = world.split_strided(0, 2, (n + 1) // 2)
        if me % 2 == 0:
            check(evens is not None and evens.my_pe == me // 2, "split member")
            check(evens.translate(evens.my_pe, world) == me, "translate")
            one = ctx.alloc("int32", 1)  # allocation is over the context: others too
        else:
            check(evens is None, "non-member gets None")
            one = ctx.alloc("int32", 1)
        if evens is not None:
            one.numpy()[0] = 1
            evens.barrier()
            evens.destroy()
        ctx.barrier_all()
        one.free()
        row, col2 = world.split_2d(2)
        check(row is not None and col2 is not None, "2d")
        check(row.n_pes == min(2, n - (me // 2) * 2), row.n_pes)
        row.destroy()
        col2.destroy()
    for b in (src, dst, red, a2a_src, a2a_dst, rs_src, rs_dst, col, mine):
        b.free()


def a2av_count(tag, s, r, lim):
    """Elements PE s sends to PE r in exchange tag: 0..lim, about one in five 0."""
    x = (((tag + 1) * 1000003 + (s + 1) * 7919 + (r + 1) * 104729) * 2654435761) % (1 << 32)
    x ^= x >> 13
    return 0 if x % 5 == 0 else x % (lim + 1)


@case
def alltoallv_against_a_reference_and_combine():
    # Team.alltoallv (symm_alltoallv, ABI 1.2): per-pair counts (zeros too)
    # from a2av_count, checked element by element against an image computed
    # from the counts alone; then the combine brings every element back.
    cap, w = 64, ctx.world
    sentinel = -7

    def image(p, dtype):
        return (1000 * p + np.arange(cap)).astype(dtype)

    zeros_seen = moved = 0
    variants = [  # data dtype, counts dtype, (si, di, ci, ri), explicit nelems, stream form
        ("int32", "int64", (0, 0, 0, 0), False, False),
        ("float64", "uint64", (3, 5, 1, 2), True, False),
        ("int32", "uint64", (1, 2, 2, 0), False, True),
        ("int64", "int64", (0, 1, 0, 1), True, True),
    ]
    for tag, (dt, cdt, (si, di, ci, ri), explicit, on_stream) in enumerate(variants):
        lim = 5 if tag < 3 else 0  # the last: every count 0, still a collective
        src, dst, back = (ctx.alloc(dt, cap) for _ in range(3))
        scnt, rcnt, rcnt2 = ctx.alloc(cdt, n + 2), ctx.alloc(cdt, 2 * n + 2), ctx.alloc(cdt, 2 * n)
        sc = [a2av_count(tag, me, r, lim) for r in range(n)]
        if lim:
            every = [a2av_count(tag, s, r, lim) for s in range(n) for r in range(n)]
            zeros_seen += every.count(0)
            moved += sum(every)
        src.numpy()[:] = image(me, dt)
        dst.numpy()[:] = sentinel
        back.numpy()[:] = sentinel
        rcnt.numpy()[:] = 777
        scnt.numpy()[ci:ci + n] = sc
        kw = dict(dst_index=di, src_index=si, send_index=ci, recv_index=ri, on_stream=on_stream)
        if explicit:
            kw.update(dst_nelems=cap - di, src_nelems=cap - si)
        w.alltoallv(dst, src, scnt, rcnt, **kw)
        # the reference: from each s in team order, s's piece for me
        want = np.full(cap, sentinel).astype(dt)
        want_rc, at = [], 0
        for s in range(n):
            off = sum(a2av_count(tag, s, q, lim) for q in range(me))
            c = a2av_count(tag, s, me, lim)
            want[di + at:di + at + c] = image(s, dt)[si + off:si + off + c]
            want_rc.append((c, at))
            at += c
        got_rc = rcnt.numpy()
        check((dst.numpy() == want).all(), (tag, dst.numpy(), want))
        check(list(got_rc[ri:ri + n]) == [c for c, _ in want_rc], (tag, got_rc, want_rc))
        check(list(got_rc[ri + n:ri + 2 * n]) == [a for _, a in want_rc], (tag, got_rc, want_rc))
        check((np.delete(got_rc, range(ri, ri + 2 * n)) == 777).all(), (tag, "outside", got_rc))
        check((src.numpy() == image(me, dt)).all(), (tag, "src kept"))
        # combine: the receive counts as send counts, dst as src
        w.alltoallv(back, dst, rcnt, rcnt2, dst_index=si, src_index=di, send_index=ri,
                    on_stream=on_stream, dst_nelems=cap - si, src_nelems=cap - di)
        sent = sum(sc)
        want = np.full(cap, sentinel).astype(dt)
        want[si:si + sent] = image(me, dt)[si:si + sent]
        check((back.numpy() == want).all(), (tag, "combine", back.numpy(), want))
        check(list(rcnt2.numpy()) == sc + [sum(sc[:j]) for j in range(n)], (tag, rcnt2.numpy()))
        for b in (src, dst, back, scnt, rcnt, rcnt2):
            b.free()
    check(zeros_seen > 0 and moved > 0, "some pairs exchange nothing, others something")
    check(ctx.async_error() == (0, ""), ctx.async_error())


@case
def alltoallv_failures_stay_local():
    # A dst too small on the last PE: it raises OutOfBounds, copies nothing,
    # still gets its receive counts; every other PE succeeds; then the team works.
    w, last = ctx.world, n - 1
    src, dst = ctx.alloc("int32", 4 * n), ctx.alloc("int32", 4 * n)
    scnt, rcnt = ctx.alloc("int64", n), ctx.alloc("int64", 2 * n)
    src.numpy()[:] = 100 * me + np.arange(4 * n)
    scnt.numpy()[:] = 2
    dst.numpy()[:] = -1
    room = 2 * n - 1 if me == last else 2 * n
    if me == last:
        e = expect_raises(symm.OutOfBounds, w.alltoallv, dst, src, scnt, rcnt, dst_nelems=room)
        check(e.status == 3 and "dst_nelems" in e.message, e.message)
        check((dst.numpy() == -1).all(), ("nothing copied", dst.numpy()))
    else:
        w.alltoallv(dst, src, scnt, rcnt, dst_nelems=room)
        want = np.concatenate([100 * s + np.arange(2 * me, 2 * me + 2) for s in range(n)])
        check((dst.numpy()[:2 * n] == want).all(), dst.numpy())
    check(list(rcnt.numpy()) == [2] * n + [2 * s for s in range(n)], rcnt.numpy())
    # the team still works: the same exchange with room everywhere
    dst.numpy()[:] = -1
    w.alltoallv(dst, src, scnt, rcnt, dst_nelems=2 * n)
    want = np.concatenate([100 * s + np.arange(2 * me, 2 * me + 2) for s in range(n)])
    check((dst.numpy()[:2 * n] == want).all(), ("after the failure", dst.numpy()))
    # argument errors: counts of a float type (every PE), src_nelems that differ
    f64 = ctx.alloc("float64", 2 * n)
    e = expect_raises(symm.InvalidArgument, w.alltoallv, dst, src, f64, rcnt)
    check("UINT64" in e.message, e.message)
    if n > 1:
        expect_raises(symm.Mismatch, w.alltoallv, dst, src, scnt, rcnt, src_nelems=4 * n - me)
    w.alltoallv(dst, src, scnt, rcnt, on_stream=True)
    check((dst.numpy()[:2 * n] == want).all(), ("stream form after the errors", dst.numpy()))
    ctx.barrier_all()
    for b in (src, dst, scnt, rcnt, f64):
        b.free()


@case
def stream_forms_run_in_order_on_the_host():
    # The host backend runs every *_on_stream form at once, in call order
    # (stream None, an int handle or any object with .cuda_stream): the same
    # code as on GPUs, checked here against references.
    class FakeStream:
        cuda_stream = 0
    b = ctx.alloc("float32", 32)
    sig = ctx.alloc("uint64", 2)
    src = np.arange(8, dtype=np.float32) + 10 * me
    for stream in (None, 0, FakeStream()):
        b.numpy()[:] = 0
        sig.numpy()[:] = 0
        ctx.barrier_all()
        b.put(src, nxt, stream=stream, on_stream=True)
        b.put(src, nxt, index=8, nbi=True, stream=stream, on_stream=True)
        b.p(16, 7.5, nxt, stream=stream, on_stream=True)
        ctx.quiet(stream=stream, on_stream=True)
        ctx.barrier_all(stream=stream, on_stream=True)
        got = np.zeros(8, dtype=np.float32)
        b.get(prv, out=got, stream=stream, on_stream=True)
        check((got == np.arange(8) + 10 * ((me - 2) % n)).all(), (stream, got))
        b.put_signal(src, nxt, sig, 0, 1, "add", index=24, stream=stream, on_stream=True)
        check(sig.signal_wait_until(0, "ge", 1, stream=stream, on_stream=True) is None, "stream wait")
        sig.signal_op(1, 5, nxt, "set", stream=stream, on_stream=True)
        sig.signal_wait_until(1, "eq", 5, stream=stream, on_stream=True)
        ctx.world.sync(stream=stream, on_stream=True)
        ctx.world.barrier(stream=stream, on_stream=True)
        want = np.arange(8) + 10 * prv
        mem = b.numpy()
        check((mem[:8] == want).all() and (mem[8:16] == want).all() and mem[16] == 7.5
              and (mem[24:32] == want).all(), (stream, mem))
        check(sig.signal_fetch(0) == 1 and sig.signal_fetch(1) == 5, "signals")
        ctx.barrier_all()
    # collectives on the stream
    c_src = ctx.alloc("float32", 4 * n)
    c_dst = ctx.alloc("float32", 4 * n)
    small = ctx.alloc("float32", 4)
    c_src.numpy()[:] = np.arange(4 * n) + 100 * me
    ctx.barrier_all()
    w = ctx.world
    w.reduce(c_dst, c_src, "sum", on_stream=True)
    check((c_dst.numpy() == sum(np.arange(4 * n) + 100 * r for r in range(n))).all(), "reduce")
    w.fcollect(c_dst, c_src, nelems=4, on_stream=True)
    check((c_dst.numpy() == np.concatenate([np.arange(4) + 100 * r for r in range(n)])).all(),
          "fcollect")
    w.alltoall(c_dst, c_src, on_stream=True)
    check((c_dst.numpy() == np.concatenate([np.arange(4 * me, 4 * me + 4) + 100 * r
                                            for r in range(n)])).all(), "alltoall")
    w.broadcast(c_dst, c_src, root=n - 1, on_stream=True)
    check((c_dst.numpy() == np.arange(4 * n) + 100 * (n - 1)).all(), "broadcast")
    w.reducescatter(small, c_src, "max", on_stream=True)
    check((small.numpy() == np.arange(4 * me, 4 * me + 4) + 100 * (n - 1)).all(), "reducescatter")
    ctx.barrier_all()
    check(ctx.async_error() == (0, ""), ctx.async_error())
    for x in (b, sig, c_src, c_dst, small):
        x.free()


@case
def ordering_atomics_and_addresses():
    b = ctx.alloc("int64", 4)
    ctx.barrier_all()
    b.p(0, 1, pe=nxt)
    ctx.fence()  # the first put reaches nxt before the second
    b.p(1, 2, pe=nxt)
    ctx.quiet()
    ctx.sync_all()
    check(list(b.numpy()[:2]) == [1, 2], b.numpy())
    ctx.barrier_all()
    # the atomic ops beyond fetch_add / compare_swap, on my own element 2
    check(b.atomic(2, "set", 5, pe=me) is None, "set returns nothing")
    check(b.atomic(2, "fetch", pe=me) == 5, "fetch")
    check(b.atomic(2, "swap", 6, pe=me) == 5, "swap returns the old value")
    check(b.atomic(2, "fetch_inc", pe=me) == 6 and b.g(index=2, pe=me) == 7, "fetch_inc")
    b.atomic(2, "inc", pe=me)
    check(b.atomic(2, "fetch_and", 0b1100, pe=me) == 8 and b.g(index=2, pe=me) == 8, "fetch_and")
    b.atomic(2, "or", 1, pe=me)
    check(b.atomic(2, "fetch_xor", 3, pe=me) == 9 and b.g(index=2, pe=me) == 10, "fetch_xor")
    b.atomic(2, "and", 2, pe=me)
    b.atomic(2, "xor", 1, pe=me)
    check(b.g(index=2, pe=me) == 3, b.g(index=2, pe=me))
    # raw symmetric addresses
    check(ctx.ptr(b.ptr, me) == b.ptr and ctx.ptr(b.ptr, nxt) == b.peer_ptr(nxt), "ptr")
    ctx.team("node").sync()
    check(ctx.team("shared").n_pes == n and ctx.team("same_local_pe").n_pes == 1, "teams")
    ctx.barrier_all()
    b.free()


@case
def a_second_context_by_unique_id():
    # The NCCL-style model: PE 0 makes the id, sends it over its own channel
    # (here: the first context's heap), every PE joins with it.
    box = ctx.alloc("uint8", 128)
    if me == 0:
        uid = symm.unique_id()
        check(len(uid) == 128, len(uid))
        for pe in range(n):
            box.put(uid, pe)
    ctx.barrier_all()
    uid = bytes(box.numpy())
    with symm.init(unique_id=uid, rank=me, n_pes=n, heap_cap=1 << 26) as c2:
        check(c2.my_pe == me and c2.n_pes == n, (c2.my_pe, c2.n_pes))
        x = c2.alloc("int32", 1)
        x.p(0, me + 1, pe=nxt)
        c2.barrier_all()
        check(x.numpy()[0] == prv + 1, x.numpy())
        x.free()
    expect_raises(symm.InvalidArgument, symm.init, unique_id=b"short", rank=me, n_pes=n)
    ctx.barrier_all()
    box.free()


@case
def loader_calls():
    symm.probe()  # no exception: usable
    check(symm.available(), "available")
    check("libsymm.so.1" in (symm.loader_path() or ""), symm.loader_path())
    e = expect_raises(symm.InvalidState, symm.set_runtime, "/elsewhere/libsymm_runtime.so.1")
    check(e.status == 18, e)
    check(symm.dtype_code(np.dtype("float32")) == symm.DTYPES["float32"], "numpy dtype")
    check(symm.dtype_code("float64") == symm.DTYPES["float64"], "name")


@case
def errors_are_exceptions():
    b = ctx.alloc("int32", 4)
    e = expect_raises(symm.OutOfBounds, b.put, np.zeros(5, dtype=np.int32), nxt)
    check(e.status == 3 and e.name == "SYMM_ERR_OUT_OF_BOUNDS" and "outside" in e.message, e)
    e = expect_raises(symm.InvalidArgument, b.put, np.zeros(1, dtype=np.int32), n + 3)
    check("pe" in e.message, e.message)
    expect_raises(symm.InvalidArgument, ctx.alloc, "complex64", 3)
    check(isinstance(e, symm.Error), "hierarchy")
    if n > 1:  # one rank's unknown dtype: its InvalidArgument, the others' Mismatch
        bad = n - 1
        if me == bad:
            e = expect_raises(symm.InvalidArgument, ctx.alloc, "complex64", 3)
            check("complex64" in e.message, e.message)
        else:
            e = expect_raises(symm.Mismatch, ctx.alloc, "int32", 3)
            check("PE %d rejected its arguments" % bad in e.message, e.message)
        ctx.alloc("int32", 3).free()  # the heap still works
    ctx.barrier_all()
    b.free()
    expect_raises(symm.InvalidHandle, b.put, np.zeros(1, dtype=np.int32), nxt)
    red_bad = ctx.alloc("float32", 1)
    expect_raises(symm.NotSupported, ctx.world.reduce, red_bad, red_bad, "xor")
    ctx.barrier_all()
    red_bad.free()


@case
def data_of_another_dtype_is_refused():
    # put/put_signal/get compare the data's dtype with the buffer's: a float
    # array used to land bit for bit in an int64 buffer. Untyped bytes pass.
    import array
    b = ctx.alloc("int64", 4)
    sig = ctx.alloc("uint64", 1)
    b.numpy()[:] = 3
    ctx.barrier_all()
    wrong = [  # (data, how the message names its type)
        (np.array([1.5, 2.5]), "float64"),
        (np.zeros(2, np.float32), "float32"),
        (np.zeros(2, np.int32), "int32"),
        (np.zeros(2, np.uint64), "uint64"),
        (np.zeros(1, np.dtype(">i8")), ">i8"),  # int64, but big-endian
        (np.zeros(2, bool), "bool"),
        (np.zeros(1, np.complex64), "complex64"),
        (np.float64(1.0), "float64"),
        (array.array("d", [1.0]), "format 'd'"),
        (array.array("i", [1, 2]), "format 'i'"),
        (memoryview(np.zeros(2)), "format 'd'"),
    ]
    for data, name in wrong:
        for call in (lambda: b.put(data, nxt), lambda: b.put(data, nxt, nbi=True),
                     lambda: b.put(data, nxt, on_stream=True),
                     lambda: b.put_signal(data, nxt, sig, 0, 1)):
            e = expect_raises(symm.ArgumentTypeError, call)
            check(isinstance(e, TypeError) and name in e.message and "int64" in e.message,
                  (name, e.message))
        e = expect_raises(symm.ArgumentTypeError, b.get, nxt, out=np.zeros(4, np.float64))
        check("get: out is float64, the buffer int64" in e.message, e.message)
    ctx.barrier_all()
    check((b.numpy() == 3).all() and sig.signal_fetch(0) == 0, (b.numpy(), "something landed"))
    ctx.barrier_all()
    # the buffer's own dtype, in every spelling, and raw bytes
    b.put(np.array([9, 9], np.int64), nxt)
    b.put(array.array("q", [8]), nxt, index=2)
    b.put(np.array([7], np.int64).tobytes(), nxt, index=3)
    ctx.barrier_all()
    check(list(b.numpy()) == [9, 9, 8, 7], b.numpy())
    check(list(b.get(nxt, out=bytearray(32))) == list(np.array([9, 9, 8, 7], np.int64).tobytes()),
          "raw bytes out")
    # bfloat16 buffers take uint16 (NumPy's spelling of their bits), not float16
    bf = ctx.alloc("bfloat16", 2)
    bf.put(np.array([0x3F80, 0x4000], np.uint16), me)
    check(list(bf.get(me)) == [0x3F80, 0x4000] and bf.g(index=1, pe=me) == 2.0, bf.get(me))
    e = expect_raises(symm.ArgumentTypeError, bf.put, np.ones(2, np.float16), me)
    check("float16" in e.message and "bfloat16" in e.message and "uint16" in e.message, e.message)
    ctx.barrier_all()
    for x in (b, sig, bf):
        x.free()


@case
def zero_copy_views():
    b = ctx.array((3, 4), "float32")
    v = b.numpy()
    check(v.shape == (3, 4), v.shape)
    v[1, 2] = 42.0
    check(b.get(me)[6] == 42.0, "numpy view writes the heap")
    mv = b.memoryview()
    check(mv.nbytes == 48, mv.nbytes)
    d = np.from_dlpack(b)
    check(d.shape == (3, 4) and d[1, 2] == 42.0, "dlpack")
    check(b.peer_ptr(me) == b.ptr, "own peer pointer")
    check(b.peer_ptr(nxt) is not None, "host backend: peers are load/store reachable")
    ctx.barrier_all()
    b.free()


@case
def views_keep_the_memory_they_see():
    # free() while a host view is alive on one PE (the holder): the buffer is
    # freed for the program on every PE, but its memory is kept on every PE
    # until no view is left: the next buffer lands elsewhere and the view
    # still sees its own data. A later alloc/free releases the memory. Every
    # kind of view counts, also one made from another.
    ctx.alloc("int8", 1).free()  # releases what earlier cases' views held
    base = ctx.query()["heap_used"]
    kinds = {
        "numpy slice": lambda b: b.numpy()[2:5],
        "reshaped numpy": lambda b: b.numpy().reshape(8, 8).T,
        "memoryview slice": lambda b: b.memoryview()[16:40],
        "dlpack": lambda b: np.from_dlpack(b),
        "asarray of a memoryview": lambda b: np.asarray(b.memoryview()),
    }
    holder = 0
    for what, make in kinds.items():
        b = ctx.alloc("int64", 64)
        b.numpy()[:] = 100 + me
        view = make(b) if me == holder else None
        ctx.barrier_all()
        b.free()
        expect_raises(symm.InvalidHandle, lambda: b.handle)
        expect_raises(symm.InvalidHandle, b.numpy)
        c = ctx.alloc("int64", 64)  # where b was, were its memory released
        c.numpy()[:] = -1
        c.put(np.full(64, -2, dtype=np.int64), nxt)
        ctx.barrier_all()
        check(c.offset != b.offset, (what, "the next buffer took the held memory", c, b))
        if view is not None:
            vals = np.asarray(view).view(np.int64) if "memoryview" in what else view
            check((np.asarray(vals) == 100 + me).all(), (what, "the view changed", vals))
            del vals
        check(ctx.query()["heap_used"] > base + 512, (what, "held", ctx.query()))
        del view
        ctx.barrier_all()
        c.free()  # first releases b (no view left on any PE), then c
        check(ctx.query()["heap_used"] == base, (what, "released", ctx.query(), base))
        holder = (holder + 1) % n
    # an unconsumed DLPack capsule holds nothing; a view in a reference cycle
    # is collected by free()
    b = ctx.alloc("int64", 64)
    b.__dlpack__()
    cycle = [b.numpy()]
    cycle.append(cycle)
    del cycle
    b.free()
    check(ctx.query()["heap_used"] == base, ("capsule or cycle held memory", ctx.query()))


@case
def threads():
    # MULTIPLE by default: threads may call concurrently; each puts to its own slot.
    T = 4
    b = ctx.alloc("int64", T * n)
    errs = []

    def work(t):
        try:
            for pe in range(n):
                b.p(me * T + t, me * 1000 + t, pe=pe)
        except Exception as e:  # collected, reported below
            errs.append(e)

    ths = [threading.Thread(target=work, args=(t,)) for t in range(T)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    check(not errs, errs)
    ctx.barrier_all()
    want = np.array([p * 1000 + t for p in range(n) for t in range(T)])
    check((b.numpy() == want).all(), b.numpy())
    # errors are per thread: a failure on one thread does not leak to another
    msgs = {}

    def fail_one(t):
        try:
            b.p(0, 0, pe=n + t)
        except symm.InvalidArgument as e:
            msgs[t] = e.message

    ths = [threading.Thread(target=fail_one, args=(t,)) for t in range(3)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    check(all(("pe %d" % (n + t)) in msgs[t] for t in range(3)), msgs)
    # a blocking wait releases the GIL: another thread of this PE sets what it waits for
    sig = ctx.alloc("uint64", 1)
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(sig.signal_wait_until(0, "eq", 3)))
    waiter.start()
    import time
    time.sleep(0.2)
    sig.signal_op(0, 3, me, "set")
    waiter.join(30)
    check(not waiter.is_alive() and seen == [3], "the waiting thread did not see the signal: %r" % seen)
    ctx.barrier_all()
    sig.free()
    b.free()


@case
def argument_order_and_the_deprecated_one():
    # C's order (index, data, pe), keywords, and the pre-1.3 order with a
    # DeprecationWarning pointing at the caller's line
    import warnings
    b = ctx.alloc("int64", 8)
    ctx.barrier_all()
    b.put(2, np.array([10 + me, 20 + me], dtype=np.int64), nxt)
    b.put(index=4, data=np.array([30 + me], dtype=np.int64), pe=nxt)
    b.p(5, 40 + me, pe=nxt)
    b.p(index=6, value=50 + me, pe=nxt)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        b.put(np.array([60 + me], dtype=np.int64), nxt, index=7)  # old put(data, pe, index=)
        b.p(70 + me, nxt)                                          # old p(value, pe): element 0
        ctx.barrier_all()
        old_get = b.get(nxt, 2, count=2)                           # old get(pe, index, count=)
        old_g = b.g(nxt, index=5)                                  # old g(pe, index=)
        old_g0 = b.g(nxt)                                          # old g(pe): element 0
    check(len(w) == 5 and all(x.category is DeprecationWarning for x in w),
          [str(x.message) for x in w])
    check(all(x.filename == __file__ for x in w), [(x.filename, x.lineno) for x in w])
    check(list(b.numpy()) == [70 + prv, 0, 10 + prv, 20 + prv, 30 + prv, 40 + prv, 50 + prv,
                              60 + prv], b.numpy())
    check(list(old_get) == [10 + me, 20 + me] and old_g == 40 + me and old_g0 == 70 + me,
          (old_get, old_g, old_g0))
    check(list(b.get(2, 2, pe=nxt)) == [10 + me, 20 + me], "get(index, count, pe=)")
    out = np.zeros(3, dtype=np.int64)
    check(b.get(4, out, nxt) is out and list(out) == [30 + me, 40 + me, 50 + me], out)
    check(b.g(index=6, pe=nxt) == 50 + me and b.g(6, pe=nxt) == 50 + me, "g by keyword")
    expect_raises(TypeError, b.put, 0, np.zeros(1, dtype=np.int64))  # no pe
    expect_raises(symm.ArgumentOverflow, b.put, 0, b"\0" * 8, 2 ** 31)
    # Calls both orders read, with different meanings, are refused and change
    # nothing: every argument an integer (the message names both readings)
    ctx.barrier_all()
    before = list(b.numpy())
    ctx.barrier_all()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for call, args in ((b.p, (1, 5, nxt)), (b.get, (3, 2, nxt)), (b.g, (nxt, 5)),
                           (b.g, (np.int64(5), nxt)), (b.p, (1, 5, nxt, None))):
            try:
                call(*args)
            except symm.ArgumentTypeError as e:
                check("ambiguous" in e.message and "1.2 order" in e.message and
                      "pe=" in e.message, e.message)
            else:
                check(False, "%s%r was not refused" % (call.__name__, args))
    check(not w, [str(x.message) for x in w])
    ctx.barrier_all()
    check(list(b.numpy()) == before, (b.numpy(), before))
    # a float value: only C's order can read p(index, 2.5, pe); a float first:
    # only the 1.2 order (value, pe, index), which warns
    fb = ctx.alloc("float64", 4)
    fb.p(1, 2.5, nxt)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fb.p(3.5, nxt, 2)                                          # old p(value, pe, index)
    check(len(w) == 1 and w[0].category is DeprecationWarning, [str(x.message) for x in w])
    ctx.barrier_all()
    check(list(fb.numpy()) == [0, 2.5, 3.5, 0], fb.numpy())
    ctx.barrier_all()
    fb.free()
    c = ctx.alloc("int64", 2)  # atomics on this PE's own copy
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        check(c.atomic("fetch_add", me, 1, 5) == 0, "old atomic(op, pe, index, value)")
        check(c.fetch_add(2, me, index=1) == 5, "old fetch_add(value, pe, index=)")
        check(c.compare_swap(7, 9, me) == 0, "old compare_swap(compare, value, pe): element 0")
    check(len(w) == 3 and all(x.category is DeprecationWarning for x in w),
          [str(x.message) for x in w])
    check(c.atomic(1, "fetch", pe=me) == 7, "atomic(index, op, pe=)")
    check(c.fetch_add(1, 1, pe=me) == 7, "fetch_add(index, value, pe=)")
    check(c.compare_swap(1, 8, 0, pe=me) == 8 and c.g(index=1, pe=me) == 0,
          "compare_swap(index, compare, value, pe=)")
    before = list(c.numpy())
    for call, args in ((c.fetch_add, (1, 1, 0)), (c.compare_swap, (1, 0, 9, 0)),
                       (c.atomic, (1, 1, 0, 0, 0))):
        expect_raises(symm.ArgumentTypeError, call, *args)  # ambiguous: refused
    check(list(c.numpy()) == before, (c.numpy(), before))
    check(c.fetch_add(0, 0, 0) == before[0] == c.g(index=0, pe=0),
          "the same integer in each place: one meaning, not refused")
    ctx.barrier_all()
    c.free()
    b.free()

@case
def fast_paths_pass_every_index_whole():
    # put and p call C without ctypes prototypes for indices below 2**31 (an
    # int passed as a C int, widened by libffi); above, the prototyped call.
    # C must see the whole index on both sides of the line: an index cut to
    # its low 32 bits would land in the buffer and pass silently.
    import platform
    from symm import _core
    if platform.machine() in ("x86_64", "aarch64"):
        check(_core._F is not None, "the unprototyped fast path is off on %s" % platform.machine())
    b = ctx.alloc("int64", 8)
    ctx.barrier_all()
    a = np.array([5], dtype=np.int64)
    b.put(1, a, nxt)                     # NumPy source (its c_void_p remembered)
    b.put(2, a, nxt)                     # the remembered source
    b.put(3, np.int64(6).tobytes(), nxt)  # bytes
    b.p(4, 7, pe=nxt)
    b.p(np.int64(5), 8, pe=nxt)          # a NumPy index: the prototyped call
    ctx.barrier_all()
    check(list(b.numpy()) == [0, 5, 5, 6, 7, 8, 0, 0], b.numpy())
    ctx.barrier_all()
    for idx in (2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32, 2 ** 32 + 1, 2 ** 63):
        for what, call in (("put", lambda: b.put(idx, a, nxt)), ("p", lambda: b.p(idx, 9, pe=nxt)),
                           ("put bytes", lambda: b.put(idx, b"\1" * 8, nxt))):
            e = expect_raises(symm.OutOfBounds, call)
            check(str(idx) in e.message,
                  "%s at %d: C saw another index: %s" % (what, idx, e.message))
    ctx.barrier_all()
    check(list(b.numpy()) == [0, 5, 5, 6, 7, 8, 0, 0], b.numpy())
    ctx.barrier_all()
    b.free()


rc = run("PE %d: " % me)
try:
    ctx.finalize()
except symm.Error as e:
    print("PE %d: finalize failed: %s" % (me, e))
    rc = 1
sys.exit(rc)

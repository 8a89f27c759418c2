"""symm.torch on the host backend, one process per PE:
    symmrun -n 4 python3 bindings/python/tests/test_torch_host.py
Uses the NumPy-backed stand-in for torch in tests/fake_torch (this CPU machine
has no torch; tests/test_torch_gpu.py runs the real one on GPUs). Joins with
init_from_process_group (unique id broadcast through the stand-in's
torch.distributed, a file), then checks every collective on heap tensors and
on ordinary tensors (staging) against references, ops by name and by
ReduceOp, errors, threads on split teams, and finalize -> fallback."""
import os
import sys
import threading

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "fake_torch"))
import numpy as np  # noqa: E402

import symm  # noqa: E402
from harness import case, check, expect_raises, run, same_host  # noqa: E402

check("torch" not in sys.modules, "import symm must not import torch")
import symm.torch as st  # noqa: E402

check("torch" not in sys.modules, "import symm.torch must not import torch")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

check(torch.__file__.startswith(os.path.join(here, "fake_torch")), "the stand-in torch is used")

me, n = int(os.environ["SYMM_RANK"]), int(os.environ["SYMM_N_PES"])
os.environ["FAKE_DIST_DIR"] = os.path.join("/tmp", "symm-fake-dist-%d" % os.getppid())
os.makedirs(os.environ["FAKE_DIST_DIR"], exist_ok=True)
dist.init_process_group("gloo", rank=me, world_size=n)
ctx = st.init_from_process_group()
check(ctx is not None, "symm is usable here: %s" % st.why_fallback())
check(ctx.my_pe == me and ctx.n_pes == n, (ctx.my_pe, ctx.n_pes))
check(st.backend() == "symm" and st.context() is ctx, st.backend())
check(st.init_from_process_group() is ctx, "a second call returns the same context")
check(dist.calls[0][0] == "broadcast_object_list", dist.calls)
if me == 0:
    os.unlink(os.path.join(os.environ["FAKE_DIST_DIR"], "bcast.pickle"))
dist.calls.clear()


def ranks(shape, dtype, k=1):
    """Rank r's input: (arange + 1) * (r + k)."""
    base = np.arange(int(np.prod(shape))).reshape(shape) + 1
    return [(base * (r + k)).astype(dtype) for r in range(n)]


def heap(shape, dtype):
    t = st.empty(shape, dtype)
    check(st.is_symmetric(t), "st.empty gives a heap tensor")
    return t


def plain(shape, dtype):
    t = torch.zeros(shape, dtype)
    check(not st.is_symmetric(t), "torch.zeros is not on the heap")
    return t


@case
def all_reduce_ops():
    for make in (heap, plain):
        for dt, tdt in (("float32", torch.float32), ("int64", torch.int64),
                        ("float64", torch.float64)):
            for op, ref in (("sum", np.sum), ("max", np.max), ("min", np.min),
                            ("prod", np.prod), (dist.ReduceOp.SUM, np.sum),
                            (dist.ReduceOp.MAX, np.max)):
                t = make((3, 5), tdt)
                ins = ranks((3, 5), dt)
                t.numpy()[:] = ins[me]
                st.all_reduce(t, op)
                want = ref(np.stack(ins), axis=0).astype(dt)
                check((t.numpy() == want).all(), (make.__name__, dt, op, t.numpy(), want))
    t = heap(4, torch.float32)
    t.numpy()[:] = me + 1
    st.all_reduce(t, "avg")
    check(np.allclose(t.numpy(), (n + 1) / 2), t.numpy())
    t = plain(4, torch.int32)
    t.numpy()[:] = 1 << me
    st.all_reduce(t, "bor")
    check((t.numpy() == (1 << n) - 1).all(), t.numpy())
    check(dist.calls == [], "symm mode never calls torch.distributed: %r" % dist.calls)


@case
def heap_views_are_used_in_place():
    t = heap(16, torch.float32)
    v = t[4:12]  # a view inside the buffer: no staging
    check(st.is_symmetric(v), "a view of a heap tensor is on the heap")
    t.numpy()[:] = me
    st.all_reduce(v)
    got = t.numpy()
    check((got[4:12] == n * (n - 1) / 2).all() and (got[:4] == me).all()
          and (got[12:] == me).all(), got)
    before = len(st._S.stage)
    st.all_reduce(v)
    check(len(st._S.stage) == before, "heap tensors need no staging buffer")


@case
def all_gather_both_kinds():
    for mk_in, mk_out in ((heap, heap), (plain, plain), (heap, plain), (plain, heap)):
        x = mk_in(3, torch.int32)
        x.numpy()[:] = [me, me * 10, me * 100]
        out = mk_out(3 * n, torch.int32)
        st.all_gather(out, x)
        want = np.concatenate([[r, r * 10, r * 100] for r in range(n)])
        check((out.numpy() == want).all(), (mk_in.__name__, mk_out.__name__, out.numpy()))


@case
def reduce_scatter_both_kinds():
    for make in (heap, plain):
        x = make(2 * n, torch.float64)
        ins = ranks(2 * n, "float64")
        x.numpy()[:] = ins[me]
        out = make(2, torch.float64)
        st.reduce_scatter(out, x, "sum")
        want = np.sum(np.stack(ins), axis=0)[2 * me:2 * me + 2]
        check((out.numpy() == want).all(), (make.__name__, out.numpy(), want))
        st.reduce_scatter(out, x, "avg")
        check(np.allclose(out.numpy(), want / n), out.numpy())


@case
def all_to_all_both_kinds():
    for make in (heap, plain):
        x = make(2 * n, torch.int64)
        x.numpy()[:] = [100 * me + j for j in range(2 * n)]  # block j for rank j
        out = make(2 * n, torch.int64)
        st.all_to_all(out, x)
        want = [100 * r + 2 * me + k for r in range(n) for k in range(2)]
        check(out.numpy().tolist() == want, (make.__name__, out.numpy(), want))


def split(tag, s, r):
    """Rows rank s sends to rank r in exchange tag: 0..3, about one in four 0."""
    x = (((tag + 1) * 1000003 + (s + 1) * 7919 + (r + 1) * 104729) * 2654435761) % (1 << 32)
    x ^= x >> 11
    return 0 if x % 4 == 0 else x % 4


@case
def all_to_all_v_dispatch_and_combine():
    # all_to_all_v (all_to_all_vdev's shape): splits in rows of dim 0, on heap
    # tensors (in place) and ordinary ones (staged), 1-D and 2-D rows (the
    # splits scaled to elements for the library), against a reference made
    # from the splits alone; then the combine brings every row back.
    cap, zeros, moved = 4 * n + 3, 0, 0
    for tag, (make, cols, dt, grp) in enumerate((
            (heap, None, torch.int64, None), (plain, None, torch.float32, ctx.world),
            (heap, 3, torch.float64, None), (plain, 2, torch.int32, None))):
        shape = (cap,) if cols is None else (cap, cols)
        row = 1 if cols is None else cols

        def image(p):
            return (1000 * p + np.arange(cap * row)).reshape(shape).astype(dt.np)

        x = make(shape, dt)
        x.numpy()[:] = image(me)
        sc = [split(tag, me, r) for r in range(n)]
        every = [split(tag, s, r) for s in range(n) for r in range(n)]
        zeros, moved = zeros + every.count(0), moved + sum(every)
        splits = make(n, torch.int64)
        splits.numpy()[:] = sc
        out, back = make(shape, dt), make(shape, dt)
        out.numpy()[:] = -1
        back.numpy()[:] = -1
        oso, oso2 = make((2, n), torch.int64), make((2, n), torch.int64)
        st.all_to_all_v(x, out, splits, oso, group=grp)
        want, at, want_oso = np.full(shape, -1).astype(dt.np), 0, [[], []]
        for s in range(n):
            off = sum(split(tag, s, q) for q in range(me))
            c = split(tag, s, me)
            want[at:at + c] = image(s)[off:off + c]
            want_oso[0].append(c)
            want_oso[1].append(at)
            at += c
        check((out.numpy() == want).all(), (tag, make.__name__, out.numpy(), want))
        check(oso.numpy().tolist() == want_oso, (tag, oso.numpy(), want_oso))
        check((x.numpy() == image(me)).all(), (tag, "input kept"))
        st.all_to_all_v(out, back, oso[0], oso2, group=grp)  # combine
        want = np.full(shape, -1).astype(dt.np)
        want[:sum(sc)] = image(me)[:sum(sc)]
        check((back.numpy() == want).all(), (tag, "combine", back.numpy(), want))
        check(oso2.numpy().tolist() == [sc, [sum(sc[:j]) for j in range(n)]], (tag, oso2.numpy()))
    check(zeros > 0 and moved > 0, "some pairs exchange nothing, others something")
    check(dist.calls == [], "symm mode never calls torch.distributed: %r" % dist.calls)


@case
def all_to_all_v_failures():
    # out too small on the last rank (a shorter view of a heap tensor): that
    # rank raises OutOfBounds, receives nothing but its splits and offsets;
    # the others get their rows; the group still works. Argument errors
    # are found before anything is exchanged.
    x, out = heap(2 * n, torch.int64), heap(2 * n, torch.int64)
    x.numpy()[:] = 100 * me + np.arange(2 * n)
    splits, oso = heap(n, torch.int64), heap((2, n), torch.int64)
    splits.numpy()[:] = 2
    out.numpy()[:] = -1
    want = np.concatenate([100 * s + np.arange(2 * me, 2 * me + 2) for s in range(n)])
    if me == n - 1:
        e = expect_raises(symm.OutOfBounds, st.all_to_all_v, x, out[:2 * n - 1], splits, oso)
        check("dst_nelems" in e.message, e.message)
        check((out.numpy() == -1).all(), out.numpy())
    else:
        st.all_to_all_v(x, out, splits, oso)
        check((out.numpy() == want).all(), out.numpy())
    check(oso.numpy().tolist() == [[2] * n, [2 * s for s in range(n)]], oso.numpy())
    st.all_to_all_v(x, out, splits, oso)
    check((out.numpy() == want).all(), ("after the failure", out.numpy()))
    bad = (((x, out, heap(n + 1, torch.int64), oso), "in_splits"),
           ((x, out, splits, heap((3, n), torch.int64)), "(2, %d)" % n),
           ((x, heap(2 * n, torch.int32), splits, oso), "out is"),
           ((x, out, heap(n, torch.int32), oso), "int64"),
           ((heap((n, 2), torch.int64), heap((n, 3), torch.int64), splits, oso), "rows"))
    for args, what in bad:
        e = expect_raises(symm.InvalidArgument, st.all_to_all_v, *args)
        check(what in e.message, (what, e.message))


@case
def broadcast_and_barrier():
    for make in (heap, plain):
        for root in range(n):
            t = make(5, torch.float32)
            t.numpy()[:] = me + 0.5
            st.broadcast(t, src=root)
            check((t.numpy() == root + 0.5).all(), (make.__name__, root, t.numpy()))
    st.barrier()
    st.barrier(group=ctx.world)


@case
def peer_tensors_are_views_of_the_peers_copy():
    # The host backend reaches every PE of the host by load/store: a peer
    # tensor (DLPack over symm_ptr) reads and writes the peer's own copy. A PE
    # of another simulated host (SYMM_TEST_HOSTS, symmrun --hosts) has none.
    t = heap((n, 4), torch.int32)
    t.numpy()[:] = me
    ctx.barrier_all()
    reach = [p for p in range(n) if same_host(p)]
    for p in range(n):
        if p not in reach:
            expect_raises(symm.NotSupported, ctx.peer_tensor, t, p)
            continue
        pt = ctx.peer_tensor(t, p)
        check(pt.shape == t.shape and pt.dtype == t.dtype, (pt.shape, pt.dtype))
        check(pt.data_ptr() == ctx.ptr(t.data_ptr(), p), "the peer's address")
        check((pt.numpy() == p).all(), (p, pt.numpy()))
    ctx.barrier_all()  # everyone has read before anyone writes
    for p in reach:
        ctx.peer_tensor(t, p)[me].fill_(100 + me)  # my row of p's copy
    ctx.barrier_all()
    def rows(q):  # PE q's copy now: rows of its host's PEs written, the others q's fill
        return np.array([100 + p if p in reach else q for p in range(n)])[:, None]

    check((t.numpy() == rows(me)).all(), t.numpy())
    # views keep their offset and strides (a transposed view is not contiguous)
    nxt = reach[(reach.index(me) + 1) % len(reach)]  # the next PE of this host
    tt = t.t()
    ptt = ctx.peer_tensor(tt, nxt)
    check(ptt.stride() == tt.stride() and (ptt.numpy() == rows(nxt).T).all(), ptt.numpy())
    row = ctx.peer_tensor(t[2], nxt)
    check(row.data_ptr() == ctx.ptr(t[2].data_ptr(), nxt) and (row.numpy() == rows(nxt)[2]).all(),
          row.numpy())
    ctx.barrier_all()


@case
def errors_map_to_exceptions():
    t = heap((4, 4), torch.float32)
    expect_raises(symm.InvalidArgument, st.all_reduce, t.t())  # not contiguous
    expect_raises(symm.InvalidArgument, st.all_reduce, t, "median")
    e = expect_raises(symm.InvalidArgument, st.all_gather, heap(3, torch.float32), t)
    check("needs" in str(e), e)
    expect_raises(symm.InvalidArgument, st.all_to_all, heap(n + 1, torch.float32),
                  heap(n + 1, torch.float32))
    expect_raises(symm.InvalidArgument, st.all_gather, heap(16 * n, torch.float64), t)
    f = heap(4, torch.float32)
    e = expect_raises(symm.NotSupported, st.all_reduce, f, "bxor")  # from the C library
    check(e.name == "SYMM_ERR_NOT_SUPPORTED" and e.message, e)
    x = heap(4, torch.int32)
    e = expect_raises(symm.InvalidArgument, st.broadcast, x, n)  # root out of range
    check(e.status == 1, e)


@case
def threads_on_split_teams():
    # One team per thread (collectives on one team must not overlap); every
    # thread reduces its own tensors many times, concurrently.
    teams = [ctx.world.split_strided(0, 1, n) for _ in range(3)]
    for tm in teams:  # staging buffers are allocated collectively: before the threads
        st.reserve(8, torch.int64, group=tm)
    errs = []

    def work(k):
        try:
            for i in range(20):
                t = plain(8, torch.int64)  # staging: exercised concurrently
                t.numpy()[:] = me + k + i
                st.all_reduce(t, "sum", group=teams[k])
                want = n * (k + i) + n * (n - 1) // 2
                if not (t.numpy() == want).all():
                    errs.append((k, i, t.numpy()))
        except Exception as e:  # reported below
            errs.append((k, repr(e)))

    ths = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    check(errs == [], errs)
    for tm in teams:
        tm.destroy()


@case
def integer_arguments_are_range_checked():
    # ctypes would truncate them (src=2**32 broadcast from rank 0)
    t = heap((4,), torch.float32)
    for bad in (2 ** 31, 2 ** 32, -2 ** 31 - 1):
        e = expect_raises(symm.ArgumentOverflow, st.broadcast, t, src=bad)
        check(isinstance(e, OverflowError) and "src = %d" % bad in e.message, e.message)
    e = expect_raises(symm.ArgumentTypeError, st.broadcast, t, src=1.5)
    check(isinstance(e, TypeError) and "src" in e.message, e.message)
    for bad in (-1, 2 ** 64):
        e = expect_raises(symm.ArgumentOverflow, st.reserve, bad, torch.float32)
        check("numel = %d" % bad in e.message, e.message)
    st.broadcast(t, src=np.int64(n - 1))  # NumPy integers are integers


@case
def finalize_then_fallback():
    st.finalize()
    check(st.backend() == "torch.distributed" and st.context() is None, st.backend())
    t = torch.zeros(4, torch.float32)
    st.all_reduce(t, "max")
    o = torch.zeros(4 * n, torch.float32)
    st.all_gather(o, t)
    st.reduce_scatter(t, o, dist.ReduceOp.SUM)
    st.all_to_all(o, o)
    st.broadcast(t, src=1)
    st.barrier()
    names = [c[0] for c in dist.calls]
    check(names == ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor",
                    "all_to_all_single", "broadcast", "barrier"], names)
    check(dist.calls[0][2]["op"] is dist.ReduceOp.MAX, dist.calls[0])
    check(dist.calls[2][2]["op"] is dist.ReduceOp.SUM, dist.calls[2])
    check(dist.calls[4][2]["src"] == 1, dist.calls[4])
    # all_to_all_v: the splits by all_to_all_single, then the rows with the
    # split sizes (the stand-in receives nothing: every incoming split is 0)
    sp = torch.tensor([j % 3 for j in range(n)], torch.int64)
    oso = torch.zeros((2, n), torch.int64)
    oso.numpy()[:] = 9
    x = torch.zeros(3 * n, torch.float32)
    st.all_to_all_v(x, o, sp, oso)
    names = [c[0] for c in dist.calls[6:]]
    check(names == ["all_to_all_single"] * 2, names)
    ins = [int(v) for v in sp.tolist()]
    check(dist.calls[7][1][2:] == ([0] * n, ins), dist.calls[7])
    check(dist.calls[7][1][1].numel() == sum(ins) and dist.calls[7][1][0].numel() == 0,
          dist.calls[7])
    check(oso.numpy().tolist() == [[0] * n, [0] * n], oso.numpy())
    dist.destroy_process_group()
    check(st.backend() == "single", st.backend())
    e = expect_raises(symm.InvalidState, st.all_reduce, t)  # 4 ranks, nothing to use
    check("init_process_group" in e.message, e.message)


sys.exit(run("[pe %d] " % me))

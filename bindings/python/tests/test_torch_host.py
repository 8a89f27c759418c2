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
from harness import case, check, expect_raises, run  # noqa: E402

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
    # tensor (DLPack over symm_ptr) reads and writes the peer's own copy.
    t = heap((n, 4), torch.int32)
    t.numpy()[:] = me
    ctx.barrier_all()
    for p in range(n):
        pt = ctx.peer_tensor(t, p)
        check(pt.shape == t.shape and pt.dtype == t.dtype, (pt.shape, pt.dtype))
        check(pt.data_ptr() == ctx.ptr(t.data_ptr(), p), "the peer's address")
        check((pt.numpy() == p).all(), (p, pt.numpy()))
    ctx.barrier_all()  # everyone has read before anyone writes
    for p in range(n):
        ctx.peer_tensor(t, p)[me].fill_(100 + me)  # my row of p's copy
    ctx.barrier_all()
    check((t.numpy() == (100 + np.arange(n))[:, None]).all(), t.numpy())
    # views keep their offset and strides (a transposed view is not contiguous)
    nxt = (me + 1) % n
    tt = t.t()
    ptt = ctx.peer_tensor(tt, nxt)
    check(ptt.stride() == tt.stride() and (ptt.numpy() == tt.numpy()).all(), ptt.numpy())
    row = ctx.peer_tensor(t[2], nxt)
    check(row.data_ptr() == ctx.ptr(t[2].data_ptr(), nxt) and (row.numpy() == 102).all(),
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
    dist.destroy_process_group()
    check(st.backend() == "single", st.backend())
    e = expect_raises(symm.InvalidState, st.all_reduce, t)  # 4 ranks, nothing to use
    check("init_process_group" in e.message, e.message)


sys.exit(run("[pe %d] " % me))

"""GPU tests of symm with the real PyTorch (and CuPy), one process per PE,
launched by torchrun:

    python3 -m torch.distributed.run --standalone --nproc_per_node=N \\
        bindings/python/tests/test_torch_gpu.py MODE

MODE env: join with torchrun's environment (symm.torch.init);
     uid: a unique id broadcast through torch.distributed (init_from_process_group);
     fallback: SYMM_RUNTIME=/nonexistent: symm.torch falls back to
               torch.distributed (gloo, CPU tensors).
N may exceed the GPU count: rank r uses GPU LOCAL_RANK % count (2 PEs on one
GPU: correctness only). torch.distributed runs on NCCL when every rank has
its own GPU, else on gloo, and the NCCL comparison is skipped with a message.
Exit 77 (skip) without CUDA."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from harness import case, check, expect_raises, run, same_host  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if not torch.cuda.is_available():
    print("SKIP: no CUDA device for torch")
    sys.exit(77)

import symm  # noqa: E402
import symm.torch as st  # noqa: E402

try:
    import cupy
except ImportError:  # reported by the CuPy case
    cupy = None

MODE = sys.argv[1] if len(sys.argv) > 1 else "env"
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
ngpu = torch.cuda.device_count()
dev = local % ngpu
shared = world > ngpu  # ranks share a GPU: NCCL refuses that
torch.cuda.set_device(dev)
P = "[rank %d/%d gpu %d %s] " % (rank, world, dev, MODE)
TRACE = os.environ.get("SYMM_TEST_TRACE") == "1"


def trace(what):
    """SYMM_TEST_TRACE=1: a line a step, so a run stopped by its time limit names the step."""
    if TRACE:
        print("%strace: %s" % (P, what), flush=True)


if MODE == "fallback":
    check(os.environ.get("SYMM_RUNTIME") == "/nonexistent", "fallback mode needs SYMM_RUNTIME=/nonexistent")
    check(st.init() is None, "init() without a runtime returns None")
    dist.init_process_group("gloo")

    @case
    def fallback_to_torch_distributed():
        check(st.backend() == "torch.distributed", st.backend())
        check("LIBRARY_NOT_FOUND" in st.why_fallback(), st.why_fallback())
        check(st.init_from_process_group() is None, "the helper agrees on the fallback")
        t = torch.full((8,), float(rank + 1))
        st.all_reduce(t)
        check(torch.equal(t, torch.full((8,), world * (world + 1) / 2)), t)
        o = torch.zeros(8 * world)
        st.all_gather(o, torch.full((8,), float(rank)))
        check(torch.equal(o, torch.arange(world).float().repeat_interleave(8)), o)
        b = torch.full((4,), float(rank))
        st.broadcast(b, src=world - 1)
        check(torch.equal(b, torch.full((4,), float(world - 1))), b)
        # all_to_all_v: the splits, then the rows, through all_to_all_single
        sp = torch.tensor([(rank + j) % 3 for j in range(world)], dtype=torch.int64)
        x = torch.arange(3 * world, dtype=torch.float32) + 100 * rank
        out = torch.full((3 * world,), -1.0)
        oso = torch.zeros((2, world), dtype=torch.int64)
        st.all_to_all_v(x, out, sp, oso)
        want, at, woso = torch.full((3 * world,), -1.0), 0, [[], []]
        for s in range(world):
            off = sum((s + q) % 3 for q in range(rank))
            c = (s + rank) % 3
            want[at:at + c] = torch.arange(off, off + c, dtype=torch.float32) + 100 * s
            woso[0].append(c)
            woso[1].append(at)
            at += c
        check(torch.equal(out, want) and oso.tolist() == woso, (out, want, oso, woso))
        st.barrier()

    rc = run(P)
    dist.destroy_process_group()
    sys.exit(rc)

# ---- symm modes ---------------------------------------------------------------------
backend = "gloo" if shared else "nccl"
if MODE == "uid":
    dist.init_process_group(backend, device_id=None if shared else torch.device("cuda", dev))
    ctx = st.init_from_process_group()
else:
    ctx = st.init()
    dist.init_process_group(backend)
check(ctx is not None, "symm is usable: %s" % st.why_fallback())
check(ctx.backend == "cuda" and ctx.device == dev, (ctx.backend, ctx.device, dev))
check(ctx.my_pe == rank and ctx.n_pes == world, (ctx.my_pe, ctx.n_pes))
me, n = rank, world
S = torch.cuda.Stream()


def sync():
    torch.cuda.synchronize()


@case
def tensors_on_the_heap():
    for dt in (torch.float32, torch.bfloat16, torch.int64, torch.float16, torch.uint8):
        t = ctx.tensor((4, 33), dt)
        check(t.is_cuda and t.device.index == dev and t.dtype == dt and t.shape == (4, 33),
              (t.device, t.dtype, t.shape))
        check(st.is_symmetric(t) and st.is_symmetric(t[1]), "heap tensor and its views")
        check(int(t.count_nonzero()) == 0, "zeroed")
        t.fill_(3)
        check(int((t == 3).sum()) == t.numel(), "writable by torch kernels")
        ctx.free_tensor(t)
    b = ctx.alloc("float32", 64)
    x = torch.from_dlpack(b)  # DLPack
    check(x.data_ptr() == b.ptr and x.is_cuda, "DLPack is zero-copy")
    x.copy_(torch.arange(64, dtype=torch.float32))
    if cupy is not None:
        with cupy.cuda.Device(dev):
            c = cupy.asarray(b)  # __cuda_array_interface__
            check(c.data.ptr == b.ptr, "CuPy view is zero-copy")
            sync()
            check(float(c.sum()) == sum(range(64)), "CuPy sees torch's writes")
            c2 = cupy.from_dlpack(b)
            check(c2.data.ptr == b.ptr, "cupy.from_dlpack is zero-copy")
    ctx.barrier_all()
    b.free()
    check(not st.is_symmetric(torch.zeros(4, device="cuda")), "ordinary tensors are not")


@case
def peer_tensors():
    t = ctx.tensor(n * 16, torch.int32)
    t.fill_(me)
    sync()
    ctx.barrier_all(stream=torch.cuda.current_stream(), on_stream=True)
    sync()
    reach = set()  # the peers this rank stores into (and that store into it)
    for p in range(n):
        try:
            pt = ctx.peer_tensor(t, p)
        except symm.NotSupported as e:
            print(P + "peer %d is not load/store reachable: %s" % (p, e.message), flush=True)
            continue
        # a PE of another (simulated) host is never load/store reachable
        check(same_host(p), "PE %d is on another simulated host but has a peer tensor" % p)
        reach.add(p)
        check(pt.device == t.device and pt.shape == t.shape, (pt.device, pt.shape))
        mine = pt[16 * me:16 * me + 16]  # only this rank writes this block of p's copy
        check(bool((mine == p).all()), (p, mine))
        mine.fill_(1000 + me)  # a store into p's memory by a torch kernel
    sync()
    ctx.barrier_all(stream=torch.cuda.current_stream(), on_stream=True)
    sync()
    for p in range(n):
        blk = t[16 * p:16 * p + 16]
        want = 1000 + p if p in reach else me  # an unreachable peer left my fill
        check(bool((blk == want).all()), (p, blk, want))
    ctx.barrier_all(stream=torch.cuda.current_stream(), on_stream=True)
    ctx.free_tensor(t)


def stream_forms(stream_obj, mk, label):
    """Every _on_stream form on one stream (a torch or CuPy stream, or a raw
    handle); mk(values) makes device data."""
    nxt, prv = (me + 1) % n, (me - 1) % n
    stream = stream_obj

    class _Sync:  # stream.synchronize() for every kind of stream argument
        @staticmethod
        def synchronize():
            if isinstance(stream_obj, int):
                torch.cuda.synchronize()
            else:
                stream_obj.synchronize()
    b = ctx.alloc("float32", 32)
    sig = ctx.alloc("uint64", 2)
    g = mk([0.0] * 8)
    src = mk([me * 10.0 + i for i in range(8)])
    sync()  # the data was made on another stream
    b.put(src, nxt, stream=stream)
    ctx.quiet(stream=stream)
    ctx.barrier_all(stream=stream)
    b.get(prv, out=g, stream=stream)  # what prv holds: what prv-1 put there
    b.put(src, nxt, index=8, nbi=True, stream=stream)
    b.p(16, 7.5, nxt, stream=stream)
    ctx.quiet(stream=stream)
    ctx.world.barrier(stream=stream)
    b.put_signal(src, nxt, sig, 0, 1, sig_op="add", index=24, stream=stream)
    sig.signal_wait_until(0, "ge", 1, stream=stream)
    sig.signal_op(1, 5, nxt, op="set", stream=stream)
    sig.signal_wait_until(1, "eq", 5, stream=stream)
    ctx.world.sync(stream=stream)
    _Sync.synchronize()
    mem = torch.from_dlpack(b).cpu()
    want_prv = [prv * 10.0 + i for i in range(8)]
    check(mem[:8].tolist() == want_prv, (label, mem[:8]))
    check(mem[8:16].tolist() == want_prv and float(mem[16]) == 7.5, (label, mem[8:17]))
    gv = torch.as_tensor(g).cpu() if hasattr(g, "__cuda_array_interface__") else g.cpu()
    want_pp = [((me - 2) % n) * 10.0 + i for i in range(8)]
    check(gv.tolist() == want_pp, (label, gv, want_pp))
    check(mem[24:32].tolist() == want_prv, (label, mem[24:32]))
    check(sig.signal_fetch(0) == 1 and sig.signal_fetch(1) == 5, label)
    # collectives on the stream
    c_src = ctx.alloc("float32", 4 * n)
    c_dst = ctx.alloc("float32", 4 * n)
    torch.from_dlpack(c_src).copy_(torch.arange(4 * n, dtype=torch.float32) + 100 * me)
    sync()
    w = ctx.world
    w.reduce(c_dst, c_src, "sum", stream=stream)
    _Sync.synchronize()
    ref = sum(torch.arange(4 * n, dtype=torch.float32) + 100 * r for r in range(n))
    check(torch.equal(torch.from_dlpack(c_dst).cpu(), ref), (label, "reduce"))
    w.fcollect(c_dst, c_src, nelems=4, stream=stream)
    _Sync.synchronize()
    ref = torch.cat([torch.arange(4, dtype=torch.float32) + 100 * r for r in range(n)])
    check(torch.equal(torch.from_dlpack(c_dst).cpu(), ref), (label, "fcollect"))
    w.alltoall(c_dst, c_src, stream=stream)
    _Sync.synchronize()
    ref = torch.cat([torch.arange(4 * me, 4 * me + 4, dtype=torch.float32) + 100 * r
                     for r in range(n)])
    check(torch.equal(torch.from_dlpack(c_dst).cpu(), ref), (label, "alltoall"))
    w.broadcast(c_dst, c_src, root=n - 1, stream=stream)
    _Sync.synchronize()
    ref = torch.arange(4 * n, dtype=torch.float32) + 100 * (n - 1)
    check(torch.equal(torch.from_dlpack(c_dst).cpu(), ref), (label, "broadcast"))
    small = ctx.alloc("float32", 4)
    w.reducescatter(small, c_src, "max", stream=stream)
    _Sync.synchronize()
    ref = torch.arange(4 * me, 4 * me + 4, dtype=torch.float32) + 100 * (n - 1)
    check(torch.equal(torch.from_dlpack(small).cpu(), ref), (label, "reducescatter"))
    ctx.barrier_all(stream=stream)
    _Sync.synchronize()
    check(ctx.async_error() == (0, ""), ctx.async_error())
    for x in (b, sig, c_src, c_dst, small):
        x.free()


@case
def putmem_getmem_and_device_team():
    # byte RMA on symmetric addresses (heap tensor views), on a torch stream
    nxt, prv = (me + 1) % n, (me - 1) % n
    t = ctx.tensor(64, torch.int32)
    src = torch.arange(16, dtype=torch.int32, device="cuda") + 100 * me
    out = torch.zeros(16, dtype=torch.int32, device="cuda")
    sync()  # the data was made on another stream
    ctx.putmem(t[8:24], src, nxt, stream=S)
    ctx.barrier_all(stream=S)
    ctx.getmem(t[8:24], nxt, out=out, stream=S)  # nxt's copy holds what I put there
    S.synchronize()
    check(t[8:24].cpu().tolist() == [100 * prv + i for i in range(16)], t.cpu())
    check(out.cpu().tolist() == src.cpu().tolist(), out.cpu())
    whole = t.cpu().tolist()
    check(whole[:8] == [0] * 8 and whole[24:] == [0] * 40, ("only 8..24 written", whole))
    past = t.data_ptr() + ctx.query()["heap_mapped"]
    expect_raises(symm.OutOfBounds, ctx.putmem, past, src, nxt, stream=S)
    d = ctx.world.device_team()
    check((d.my_pe, d.n_pes, d.start, d.stride) == (me, n, 0, 1),
          (d.my_pe, d.n_pes, d.start, d.stride))
    check(ctx.world.config() == {"num_contexts": 0}, ctx.world.config())
    ctx.barrier_all(stream=S)
    S.synchronize()
    check(ctx.async_error() == (0, ""), ctx.async_error())
    ctx.free_tensor(t)


@case
def stream_forms_on_a_torch_stream():
    stream_forms(S, lambda v: torch.tensor(v, dtype=torch.float32, device="cuda"), "torch")


@case
def stream_forms_on_a_cupy_stream():
    check(cupy is not None, "CuPy is not importable here (pip install cupy-cuda13x)")
    with cupy.cuda.Device(dev):
        cs = cupy.cuda.Stream(non_blocking=True)
        stream_forms(cs, lambda v: cupy.asarray(v, dtype=cupy.float32), "cupy")
    # a raw handle works too
    stream_forms(S.cuda_stream, lambda v: torch.tensor(v, dtype=torch.float32, device="cuda"),
                 "raw")


@case
def torch_collectives_on_the_current_stream():
    with torch.cuda.stream(S):
        for dt in (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32):
            for kind in ("heap", "plain"):
                mk = (lambda k, d=dt: ctx.tensor(k, d)) if kind == "heap" else (
                    lambda k, d=dt: torch.zeros(k, dtype=d, device="cuda"))
                trace("%s %s: all_reduce sum" % (dt, kind))
                t = mk(96)
                t.copy_(torch.arange(96, device="cuda").to(dt) + me)
                st.all_reduce(t)
                ref = (torch.arange(96) * n + n * (n - 1) // 2).to(dt)
                check(torch.equal(t.cpu(), ref), (dt, kind, "sum", t[:4]))
                trace("%s %s: all_reduce max" % (dt, kind))
                t.fill_(me + 1)
                st.all_reduce(t, "max")
                check(bool((t == n).all()), (dt, kind, "max"))
                trace("%s %s: all_gather" % (dt, kind))
                x = mk(5)
                x.fill_(me)
                o = mk(5 * n)
                st.all_gather(o, x)
                ref = torch.arange(n).repeat_interleave(5).to(dt)
                check(torch.equal(o.cpu(), ref), (dt, kind, "all_gather", o))
                trace("%s %s: reduce_scatter" % (dt, kind))
                big = mk(3 * n)
                big.copy_(torch.arange(3 * n, device="cuda").to(dt))
                rs = mk(3)
                st.reduce_scatter(rs, big)
                ref = ((torch.arange(3 * me, 3 * me + 3)) * n).to(dt)
                check(torch.equal(rs.cpu(), ref), (dt, kind, "reduce_scatter", rs))
                trace("%s %s: all_to_all" % (dt, kind))
                a = mk(2 * n)
                a.copy_((torch.arange(2 * n, device="cuda") + 10 * me).to(dt))
                ao = mk(2 * n)
                st.all_to_all(ao, a)
                ref = torch.cat([torch.arange(2 * me, 2 * me + 2) + 10 * r for r in range(n)]).to(dt)
                check(torch.equal(ao.cpu(), ref), (dt, kind, "all_to_all", ao))
                trace("%s %s: broadcast" % (dt, kind))
                bc = mk(7)
                bc.fill_(me + 2)
                st.broadcast(bc, src=n - 1)
                check(bool((bc == n + 1).all()), (dt, kind, "broadcast"))
                trace("%s %s: barrier" % (dt, kind))
                st.barrier()
    trace("synchronize")
    S.synchronize()
    check(ctx.async_error() == (0, ""), ctx.async_error())


def _split(tag, s, r):
    """Rows rank s sends to rank r in exchange tag (0..3; zeros included)."""
    return (s * 3 + r * 5 + tag) % 4


def _a2av_reference(tag, shape, dt, image):
    """(out, out_splits_offsets) this rank must get from all_to_all_v."""
    want = torch.full(shape, -1).to(dt)
    oso, at = [[], []], 0
    for s in range(n):
        off = sum(_split(tag, s, q) for q in range(me))
        c = _split(tag, s, me)
        want[at:at + c] = image(s)[off:off + c]
        oso[0].append(c)
        oso[1].append(at)
        at += c
    return want, oso


@case
def all_to_all_v_with_splits_made_on_the_gpu():
    # symm.torch.all_to_all_v (symm_alltoallv_on_stream: one kernel reading
    # the splits on the GPU) on the current stream: splits computed by a torch
    # kernel (no host copy), heap and ordinary tensors, 1-D and 2-D rows;
    # the combine; a CUDA graph replayed with new splits; an out too small on
    # one rank (recorded on its context only).
    cap = 4 * n + 3
    k = 0
    with torch.cuda.stream(S):
        for kind in ("heap", "plain"):
            for cols, dt in ((None, torch.float32), (8, torch.bfloat16), (3, torch.int64)):
                shape = (cap,) if cols is None else (cap, cols)
                mk = (lambda s, d: ctx.tensor(s, d)) if kind == "heap" else (
                    lambda s, d: torch.zeros(s, dtype=d, device="cuda"))

                def image(p, shape=shape, dt=dt):
                    return (torch.arange(cap * (cols or 1)).reshape(shape) + 1000 * p).to(dt)

                x, out, back = mk(shape, dt), mk(shape, dt), mk(shape, dt)
                splits = mk(n, torch.int64)
                oso, oso2 = mk((2, n), torch.int64), mk((2, n), torch.int64)
                x.copy_(image(me).cuda())
                out.fill_(-1)
                back.fill_(-1)
                k += 1
                splits.copy_((torch.arange(n, device="cuda") * 5 + me * 3 + k) % 4)  # on the GPU
                st.all_to_all_v(x, out, splits, oso)
                st.all_to_all_v(out, back, oso[0], oso2)  # combine
                S.synchronize()
                want, want_oso = _a2av_reference(k, shape, dt, image)
                label = (kind, tuple(shape), dt)
                check(torch.equal(out.cpu(), want), (label, out.cpu(), want))
                check(oso.cpu().tolist() == want_oso, (label, oso.cpu(), want_oso))
                sc = [_split(k, me, r) for r in range(n)]
                want = torch.full(shape, -1).to(dt)
                want[:sum(sc)] = image(me)[:sum(sc)]
                check(torch.equal(back.cpu(), want), (label, "combine", back.cpu()))
                check(oso2.cpu().tolist() == [sc, [sum(sc[:j]) for j in range(n)]],
                      (label, oso2.cpu()))
        # a CUDA graph: splits from a device tag, dispatch, combine; replayed
        x, out, back = ctx.tensor(cap, torch.float32), ctx.tensor(cap, torch.float32), \
            ctx.tensor(cap, torch.float32)
        tag_t = torch.zeros((), dtype=torch.int64, device="cuda")
        splits = ctx.tensor(n, torch.int64)
        oso, oso2 = ctx.tensor((2, n), torch.int64), ctx.tensor((2, n), torch.int64)
        x.copy_(torch.arange(cap, dtype=torch.float32, device="cuda") + 1000 * me)

        def step():
            splits.copy_((torch.arange(n, device="cuda") * 5 + me * 3 + tag_t) % 4)
            st.all_to_all_v(x, out, splits, oso)
            st.all_to_all_v(out, back, oso[0], oso2)

        step()  # eager warm-up
    S.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=S):
        step()
    for tag in (1, 2, 3):
        with torch.cuda.stream(S):
            tag_t.fill_(tag)
            out.fill_(-1)
            back.fill_(-1)
            g.replay()
        S.synchronize()
        want, want_oso = _a2av_reference(
            tag, (cap,), torch.float32, lambda p: torch.arange(cap, dtype=torch.float32) + 1000 * p)
        check(torch.equal(out.cpu(), want) and oso.cpu().tolist() == want_oso, ("graph", tag, out))
        sent = sum(_split(tag, me, r) for r in range(n))
        check(torch.equal(back.cpu()[:sent], x.cpu()[:sent]) and bool((back[sent:] == -1).all()),
              ("graph combine", tag, back))
    check(ctx.async_error() == (0, ""), ctx.async_error())
    # out too small on the last rank: found on the GPU, recorded on its context
    with torch.cuda.stream(S):
        splits.fill_(2)
        out.fill_(-1)
        st.all_to_all_v(x, out[:2 * n - 1] if me == n - 1 else out, splits, oso)
    S.synchronize()
    status, msg = ctx.async_error(clear=True)
    if me == n - 1:
        check(status == 3 and bool((out == -1).all()), (status, msg, out))
    else:
        check(status == 0, (status, msg))
        want = torch.cat([torch.arange(2 * me, 2 * me + 2, dtype=torch.float32) + 1000 * s
                          for s in range(n)])
        check(torch.equal(out.cpu()[:2 * n], want), out.cpu())
    check(oso.cpu().tolist() == [[2] * n, [2 * s for s in range(n)]], oso.cpu())
    with torch.cuda.stream(S):  # the group still works
        st.all_to_all_v(x, out, splits, oso)
    S.synchronize()
    check(ctx.async_error() == (0, ""), ctx.async_error())


@case
def cuda_graph_capture():
    h = ctx.tensor(256, torch.float32)
    p = torch.zeros(256, device="cuda")
    with torch.cuda.stream(S):
        st.all_reduce(h)  # warm-up: p's staging buffer is made now, not in capture
        st.all_reduce(p, "max")
    S.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=S):
        st.all_reduce(h)
        st.all_reduce(p, "max")
        st.barrier()
    for it in range(3):
        with torch.cuda.stream(S):
            h.copy_(torch.arange(256, device="cuda", dtype=torch.float32) * (it + 1) + me)
            p.fill_(float(me * 10 + it))
            g.replay()
        S.synchronize()
        ref = torch.arange(256, dtype=torch.float32) * (it + 1) * n + n * (n - 1) / 2
        check(torch.equal(h.cpu(), ref), (it, h[:4], ref[:4]))
        check(bool((p == (n - 1) * 10 + it).all()), (it, p[:4]))
    check(ctx.async_error() == (0, ""), ctx.async_error())


@case
def nccl_agrees():
    if shared:
        print(P + "SKIP nccl comparison: %d ranks share %d GPU(s) (NCCL needs one GPU per rank)"
              % (world, ngpu), flush=True)
        return
    a = ctx.tensor(1000, torch.float32)
    b = torch.zeros(1000, device="cuda")
    a.copy_(torch.arange(1000, device="cuda", dtype=torch.float32) * (me + 1))
    b.copy_(a)
    st.all_reduce(a)
    dist.all_reduce(b)
    check(torch.equal(a, b), "symm and NCCL agree (integer-valued sums are exact)")


rc = run(P)
ctx.barrier_all()
st.finalize()
dist.destroy_process_group()
sys.exit(rc)

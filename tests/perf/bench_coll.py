"""Stream collectives side by side: symm (symm.torch on heap tensors, i.e. the
C API's *_on_stream collectives), NCCL (torch.distributed) and PyTorch
SymmetricMemory one-shot / two-shot all-reduce, in one job.

    python3 -m torch.distributed.run --standalone --nproc_per_node=N \\
        tests/perf/bench_coll.py [--json FILE] [--max-bytes B] [--ops a,b]
        [--impls symm,nccl,symm-mem]

Ops: barrier, all_reduce, all_gather, reduce_scatter, all_to_all (barrier: symm's
stream barrier, SymmetricMemory's barrier on channel 0, and NCCL's nearest
stand-in, a 4-byte all-reduce, one row; the others float32; "bytes" is
the size of the largest buffer: the all-reduce tensor, all-gather output,
reduce-scatter input, all-to-all tensor), 8 B to --max-bytes (default 1 GiB)
in powers of 4. For each: GPU time per call, median of 5 repetitions of K
back-to-back calls on one stream (CUDA events) and of the replay of a CUDA
graph of K calls; bus bandwidth as nccl-tests defines it (all-reduce:
bytes * 2(n-1)/n / t; the others: bytes * (n-1)/n / t); ratios symm / NCCL
and symm / best SymmetricMemory variant (< 1: symm is faster). Every
implementation's result is checked once per size against the expected values
before it is timed (a wrong one is reported and not timed).

NVLink multicast stays off (TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NCCL_NVLS_ENABLE=0). The comparison needs one GPU per rank (NCCL refuses two
ranks on one GPU): with fewer GPUs than ranks only symm runs, on sizes up to
1 MiB, and its times are processes time-slicing a GPU (they show that the
harness works, not performance).

--impls leaves implementations out, and with them their setup: without nccl
the process group is gloo (no NCCL communicator at all), without symm-mem
nothing of SymmetricMemory is initialised; to find out whether one of them
disturbs symm's timings."""
import argparse
import json
import os
import statistics
import sys

os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import symm.torch as st  # noqa: E402

OPS = ["barrier", "all_reduce", "all_gather", "reduce_scatter", "all_to_all"]
ap = argparse.ArgumentParser()
ap.add_argument("--json")
ap.add_argument("--max-bytes", type=int, default=1 << 30)
ap.add_argument("--ops", default=",".join(OPS))
ap.add_argument("--impls", default="symm,nccl,symm-mem",
                help="which to run beside symm (always run): nccl, symm-mem")
args = ap.parse_args()
want = set(args.impls.split(","))

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
ngpu = torch.cuda.device_count()
if ngpu == 0:
    print("SKIP: no CUDA device")
    sys.exit(77)
dev = local % ngpu
shared = world > ngpu
torch.cuda.set_device(dev)
use_nccl = not shared and "nccl" in want
dist.init_process_group("nccl" if use_nccl else "gloo",
                        device_id=torch.device("cuda", dev) if use_nccl else None)
ctx = st.init_from_process_group()
if ctx is None:
    print("symm is not usable: %s" % st.why_fallback())
    sys.exit(1)
S = torch.cuda.Stream()
max_bytes = min(args.max_bytes, 1 << 20) if shared else args.max_bytes
SIZES = []
b = 8
while b <= max_bytes:
    SIZES.append(b)
    b *= 4
# the sizes the collectives issue sets targets at (64 KiB, 1, 16 and 256 MiB)
SIZES = sorted(set(SIZES) | {x for x in (64 << 10, 1 << 20, 16 << 20, 256 << 20) if x <= max_bytes})


def say(*a):
    if rank == 0:
        print(*a, flush=True)


if shared:
    say("NOTE: %d ranks on %d GPU(s): the comparison with NCCL and SymmetricMemory needs one "
        "GPU per rank (>= 2 GPUs); measuring symm only, up to 1 MiB, time-sliced (not "
        "performance)." % (world, ngpu))

symm_mem = None
if not shared and "symm-mem" in want:
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except ImportError:
        symm_mem = None
gname = dist.group.WORLD.group_name
if symm_mem is not None and hasattr(symm_mem, "enable_symm_mem_for_group"):
    try:  # needed before rendezvous up to torch 2.7; later ones accept it (or warn)
        symm_mem.enable_symm_mem_for_group(gname)
    except Exception as e:  # noqa: BLE001 (rendezvous below says what is wrong)
        print("rank %d: enable_symm_mem_for_group: %r" % (rank, e), flush=True)


def reps_for(nbytes):
    return 2 if shared else max(5, min(200, (1 << 28) // max(nbytes, 1)))


def gpu_us(fn, graph, k):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(S):
        fn()
        S.synchronize()
        g = None
        if graph:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=S):
                for _ in range(k):
                    fn()
            g.replay()
            S.synchronize()
        ts = []
        for _ in range(5):
            e0.record(S)
            if graph:
                g.replay()
            else:
                for _ in range(k):
                    fn()
            e1.record(S)
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) * 1e3 / k)
    del g
    return statistics.median(ts)


def busbw(op, nbytes, us):
    if op == "barrier":
        return 0.0
    f = 2.0 * (world - 1) / world if op == "all_reduce" else (world - 1) / world
    return nbytes * f / (us * 1e-6) / 1e9 if us else None


def setup(op, impl, nbytes):
    """(fn, check) for one implementation, or None when it does not apply.
    check() returns None when the last result is right, else a message."""
    if op == "barrier":
        if impl == "symm":
            return (lambda: st.barrier()), (lambda: None)
        if impl == "nccl":  # no stream barrier in NCCL: a 4-byte all-reduce stands in
            t = torch.ones(1, device="cuda", dtype=torch.float32)
            return (lambda: dist.all_reduce(t)), (lambda: None), t
        if impl == "symm-mem one-shot" and symm_mem is not None:  # one row: its barrier
            t = symm_mem.empty(16, device="cuda", dtype=torch.float32)
            h = symm_mem.rendezvous(t, gname)
            return (lambda: h.barrier(channel=0)), (lambda: None), (t, h)
        return None
    n = nbytes // 4
    per = n // world
    if op != "all_reduce" and per == 0:
        return None
    def mk(m):
        if impl != "symm":
            return torch.empty(m, device="cuda", dtype=torch.float32)
        t = ctx.tensor(m, torch.float32)
        made.append(t)  # freed (collectively) once timed
        return t
    r1 = float(rank + 1)
    tot = world * (world + 1) / 2.0
    if impl in ("symm-mem one-shot", "symm-mem two-shot"):
        if op != "all_reduce" or symm_mem is None:
            return None
        t = symm_mem.empty(n, device="cuda", dtype=torch.float32)
        symm_mem.rendezvous(t, gname)
        t.fill_(r1)
        if impl.endswith("one-shot"):
            out = {}

            def fn():
                out["r"] = torch.ops.symm_mem.one_shot_all_reduce(t, "sum", gname)

            def check():
                return None if torch.all(out["r"] == tot) else "wrong sum"
            return fn, check, t
        if n % (world * 4):  # two-shot splits the tensor across ranks (16-byte pieces)
            return None

        def fn2():
            torch.ops.symm_mem.two_shot_all_reduce_(t, "sum", gname)
        # in place: the first call sums, later ones grow it; checked once
        return fn2, (lambda: None), t, (lambda: None if torch.all(t == tot) else "wrong sum")
    if op == "all_reduce":
        t = mk(n)
        t.fill_(r1)
        fn = (lambda: st.all_reduce(t)) if impl == "symm" else (lambda: dist.all_reduce(t))
        return fn, (lambda: None), t, (lambda: None if torch.all(t == tot) else "wrong sum")
    if op == "all_gather":
        i, o = mk(per), mk(per * world)
        i.fill_(r1)
        fn = (lambda: st.all_gather(o, i)) if impl == "symm" else \
            (lambda: dist.all_gather_into_tensor(o, i))
        want = torch.arange(1, world + 1, device="cuda", dtype=torch.float32).repeat_interleave(per)
        return fn, (lambda: None if torch.equal(o, want) else "wrong blocks"), (i, o)
    if op == "reduce_scatter":
        i, o = mk(per * world), mk(per)
        i.fill_(r1)
        fn = (lambda: st.reduce_scatter(o, i)) if impl == "symm" else \
            (lambda: dist.reduce_scatter_tensor(o, i))
        return fn, (lambda: None if torch.all(o == tot) else "wrong sum"), (i, o)
    if op == "all_to_all":
        i, o = mk(per * world), mk(per * world)
        i.copy_((torch.arange(world, device="cuda", dtype=torch.float32) + 100 * rank)
                .repeat_interleave(per))
        fn = (lambda: st.all_to_all(o, i)) if impl == "symm" else \
            (lambda: dist.all_to_all_single(o, i))
        want = (torch.arange(world, device="cuda", dtype=torch.float32) * 100 + rank) \
            .repeat_interleave(per)
        return fn, (lambda: None if torch.equal(o, want) else "wrong blocks"), (i, o)
    return None


made = []  # symm heap tensors of the implementation being timed
IMPLS = ["symm"] + (["nccl"] if use_nccl else []) + \
    (["symm-mem one-shot", "symm-mem two-shot"] if symm_mem is not None else [])
results = {"machine": torch.cuda.get_device_name(dev), "gpus": ngpu, "ranks": world,
           "shared_gpu": shared, "torch": torch.__version__, "rows": [], "notes": []}
for op in [o for o in args.ops.split(",") if o in OPS]:
    for nbytes in ([0] if op == "barrier" else SIZES):
        row = {"op": op, "bytes": nbytes}
        for impl in IMPLS:
            try:
                s = setup(op, impl, nbytes)
            except Exception as e:  # noqa: BLE001 (reported, the run goes on)
                results["notes"].append("%s %s %d: %r" % (impl, op, nbytes, e))
                s = None
            if s is None:
                continue
            fn, check = s[0], s[1]
            first = s[3] if len(s) > 3 else check
            try:
                # the inputs were filled on the current stream: S must wait for them
                S.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(S):
                    fn()
                S.synchronize()
                bad = first()
                # timed even when wrong: every rank must make the same calls
                k = reps_for(nbytes)
                b2b = gpu_us(fn, False, k)
                gr = None if shared else gpu_us(fn, True, k)
                bad = bad or check()
                if bad:
                    results["notes"].append("%s %s %d B: %s" % (impl, op, nbytes, bad))
                row[impl] = {"b2b_us": None if bad else b2b, "graph_us": None if bad else gr,
                             "busbw_gbs": None if bad else busbw(op, nbytes, b2b), "error": bad}
            except Exception as e:  # noqa: BLE001 (reported, the run goes on)
                results["notes"].append("%s %s %d B: %r" % (impl, op, nbytes, e))
                if impl == "symm":  # symm must work: a failed row fails the run
                    row[impl] = {"b2b_us": None, "graph_us": None, "busbw_gbs": None,
                                 "error": repr(e)}
            del s, fn, check, first
            S.synchronize()
            dist.barrier()
            for t in made:
                ctx.free_tensor(t)
            made.clear()
        sy = row.get("symm", {})
        for other in ("nccl", "symm-mem one-shot", "symm-mem two-shot"):
            o = row.get(other, {})
            if sy.get("b2b_us") and o.get("b2b_us"):
                row["ratio_vs_" + other] = sy["b2b_us"] / o["b2b_us"]
        results["rows"].append(row)
        say("%-14s %10d B  " % (op, nbytes) + "  ".join(
            "%s %.2f us" % (i, row[i]["b2b_us"]) for i in IMPLS if row.get(i, {}).get("b2b_us")))


def human(b):
    for u, s in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if b >= u:
            return "%d %s" % (b // u, s)
    return "%d B" % b


if rank == 0:
    print("\n## Collectives, %d ranks on %d x %s%s\n" % (world, ngpu, results["machine"],
          " (shared GPU: symm only)" if shared else ""))
    print("| op | bytes | " + " | ".join("%s b2b us / graph us / busbw GB/s" % i for i in IMPLS)
          + (" | symm / NCCL | symm / best symm-mem |" if not shared else " |"))
    print("|" + "---|" * (2 + len(IMPLS) + (2 if not shared else 0)))
    for row in results["rows"]:
        cells = []
        for i in IMPLS:
            c = row.get(i)
            if not c:
                cells.append("n/a")
            elif c.get("b2b_us") is None:
                cells.append("WRONG: %s" % c.get("error"))
            else:
                cells.append("%.2f / %s / %.1f" % (c["b2b_us"], "%.2f" % c["graph_us"]
                             if c.get("graph_us") else "-", c["busbw_gbs"] or 0))
        extra = ""
        if not shared:
            sm = [row[k] for k in ("ratio_vs_symm-mem one-shot", "ratio_vs_symm-mem two-shot")
                  if k in row]
            extra = " | %s | %s" % ("%.2f" % row["ratio_vs_nccl"] if "ratio_vs_nccl" in row
                                    else "-", "%.2f" % min(sm) if sm else "-")
        print("| %s | %s | %s%s |" % (row["op"], human(row["bytes"]), " | ".join(cells), extra))
    for n in results["notes"]:
        print("note:", n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
ctx.barrier_all()
st.finalize()
dist.barrier()
dist.destroy_process_group()
bad = [r for r in results["rows"] for i in IMPLS if r.get(i, {}).get("error")]
sys.exit(1 if bad else 0)

"""Per-call cost of symm.torch.all_reduce on small tensors, next to
torch.distributed.all_reduce (NCCL), PyTorch SymmetricMemory's one-shot
all-reduce and the C API's GPU time (bench_symm's reduce_on_stream).

    python3 -m torch.distributed.run --standalone --nproc_per_node=N \\
        tests/perf/bench_torch.py [--json FILE] [--c-results FILE]

Figures (rank 0 prints a table; --json writes them):
  host us/call: median over many calls of the wall time around one Python
      call (no synchronisation; the stream is drained every 50 calls so the
      launch queue never fills);
  GPU us/call: CUDA events around 200 back-to-back calls on one stream, and
      around the replay of a CUDA graph of 200 calls.
Rows: symm on a heap tensor (zero copy), symm on an ordinary tensor (staged:
two extra copies), the raw ctypes call beneath symm.torch (the floor of a
Python binding), NCCL, SymmetricMemory one-shot (multicast off:
TORCH_SYMM_MEM_DISABLE_MULTICAST=1). --c-results takes bench_symm's
BENCH_RESULTS file (RESULT reduce_f32_<size> ... "<us> us/call").
N may exceed the GPU count (rank r uses GPU LOCAL_RANK % count); NCCL and
SymmetricMemory need one GPU per rank, so with shared GPUs only symm runs and
its figures are two processes time-slicing one GPU (host time is still
meaningful; GPU time is not)."""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import symm.torch as st  # noqa: E402

SIZES = [8, 256, 1024, 4096, 65536]  # bytes, float32
HOST_CALLS, BATCH, GPU_CALLS = 2000, 50, 200
if os.environ.get("BENCH_TORCH_QUICK"):  # dry runs (tests/fake_torch): the code paths, no figures
    HOST_CALLS, BATCH, GPU_CALLS = 20, 10, 4

ap = argparse.ArgumentParser()
ap.add_argument("--json")
ap.add_argument("--c-results")
args = ap.parse_args()

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
ngpu = torch.cuda.device_count()
if ngpu == 0:
    print("SKIP: no CUDA device")
    sys.exit(77)
dev = local % ngpu
shared = world > ngpu
torch.cuda.set_device(dev)
dist.init_process_group("gloo" if shared else "nccl",
                        device_id=None if shared else torch.device("cuda", dev))
ctx = st.init_from_process_group()
if ctx is None:
    print("symm is not usable: %s" % st.why_fallback())
    sys.exit(1)
S = torch.cuda.Stream()
if shared:
    # Two processes time-slicing one GPU: every collective waits a time slice
    # for its peer (milliseconds), so fewer calls, and no GPU timings.
    HOST_CALLS, BATCH = 200, 10


def say(*a):
    if rank == 0:
        print(*a, flush=True)


def host_us(fn):
    """Median wall time of one call, in microseconds."""
    ts = []
    pc = time.perf_counter_ns
    with torch.cuda.stream(S):
        for _ in range(20):
            fn()
        S.synchronize()
        for _ in range(HOST_CALLS // BATCH):
            for _ in range(BATCH):
                t0 = pc()
                fn()
                ts.append(pc() - t0)
            S.synchronize()
    return statistics.median(ts) / 1e3


def gpu_us(fn, graph):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.cuda.stream(S):
        fn()
        S.synchronize()
        if graph:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=S):
                for _ in range(GPU_CALLS):
                    fn()
            g.replay()
            S.synchronize()
        best = []
        for _ in range(5):
            e0.record(S)
            if graph:
                g.replay()
            else:
                for _ in range(GPU_CALLS):
                    fn()
            e1.record(S)
            e1.synchronize()
            best.append(e0.elapsed_time(e1) * 1e3 / GPU_CALLS)
    return statistics.median(best)


def raw_call(t):
    """The C call symm.torch.all_reduce makes for a heap tensor, through ctypes
    with everything precomputed: what any ctypes binding pays at least."""
    S_ = st._S
    ent = st._heap_entry(t)
    f, team, h, i, n = S_.f["reduce"], S_.world, ent[0], ent[1], t.numel()
    raw = torch._C._cuda_getCurrentRawStream

    def call():
        f(team, h, i, h, i, n, 0, raw(dev))
    return call


results = {"machine": torch.cuda.get_device_name(dev), "gpus": ngpu, "ranks": world,
           "shared_gpu": shared, "torch": torch.__version__, "rows": {}}


def record(name, size, host, gpu, graph):
    results["rows"].setdefault(name, {})[size] = {"host_us": host, "gpu_us": gpu,
                                                 "graph_us": graph}


symm_mem = None
if not shared:
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except ImportError:
        symm_mem = None

keep = []
failed = None  # the exception that ended the timings early (the table still prints)


no_graph = {}  # row name -> why its CUDA-graph capture failed (not tried again)


def measure(name, size, fn, stream=True, graph=True):
    """One row: host time, then GPU time back to back and in a graph. A graph
    capture that fails (the same on every rank: same calls) is noted and the
    row goes on without graphs."""
    hu = host_us(fn)
    gu = gpu_us(fn, False) if stream and not shared else None
    gg = None
    if graph and not shared and name not in no_graph:
        try:
            gg = gpu_us(fn, True)
        except Exception as e:  # noqa: BLE001 (reported in the table)
            no_graph[name] = repr(e)
            results.setdefault("notes", []).append("%s: CUDA graph capture failed: %r" % (name, e))
            torch.cuda.synchronize()
    record(name, size, hu, gu, gg)
    say("  %s %d B: host %.2f us, GPU %s / graph %s us" % (
        name, size, hu, "-" if gu is None else "%.2f" % gu, "-" if gg is None else "%.2f" % gg))


if symm_mem is not None and hasattr(symm_mem, "enable_symm_mem_for_group"):
    try:  # needed before rendezvous up to torch 2.7; later ones accept it (or warn)
        symm_mem.enable_symm_mem_for_group(dist.group.WORLD.group_name)
    except Exception as e:  # noqa: BLE001 (reported in the table)
        results.setdefault("notes", []).append("enable_symm_mem_for_group: %r" % (e,))

try:
    for size in SIZES:
        n = size // 4
        h = ctx.tensor(n, torch.float32)
        keep.append(h)  # freed at the end: a failure surfaces after the table is out
        p = torch.zeros(n, device="cuda")
        torch.cuda.synchronize()  # zeroing of p (default stream) done before S uses it
        with torch.cuda.stream(S):
            # Staging made outside the timings. On S like every timed call: the
            # collectives of one team must be ordered on one stream (or by
            # synchronisation), else PEs may run them in different orders.
            st.all_reduce(p)
        S.synchronize()
        measure("symm.torch heap", size, lambda: st.all_reduce(h))
        measure("symm.torch staged", size, lambda: st.all_reduce(p))
        measure("ctypes floor", size, raw_call(h), graph=False)
        if not shared:
            q = torch.zeros(n, device="cuda")
            measure("torch.distributed NCCL", size, lambda: dist.all_reduce(q))
            if symm_mem is not None and hasattr(torch.ops, "symm_mem"):
                # every rank takes the same branch: a failure here is the same on all
                try:
                    sm = symm_mem.empty(n, device="cuda", dtype=torch.float32)
                    gname = dist.group.WORLD.group_name
                    symm_mem.rendezvous(sm, gname)
                    op = torch.ops.symm_mem.one_shot_all_reduce
                    measure("SymmetricMemory one-shot", size, lambda: op(sm, "sum", gname))
                except Exception as e:  # noqa: BLE001 (reported in the table)
                    results.setdefault("notes", []).append("SymmetricMemory: %r" % (e,))
                    symm_mem = None
except Exception as e:  # noqa: BLE001 (the table below says so; exit status 1)
    failed = e
    print("rank %d: timings stopped early: %r" % (rank, e), flush=True)
    results.setdefault("notes", []).append("rank %d: timings stopped early: %r" % (rank, e))

c_api = {}
if args.c_results and os.path.exists(args.c_results):
    for line in open(args.c_results):
        f = line.split()
        if len(f) > 4 and f[0] == "RESULT" and f[1].startswith("reduce_f32_"):
            key = f[1][len("reduce_f32_"):]
            try:
                c_api[key] = float(f[4])
            except ValueError:
                pass
results["c_api_gpu_us"] = c_api


def human(b):
    return "%d B" % b if b < 1024 else "%d KiB" % (b // 1024)


if rank == 0:
    fmt = lambda v: "-" if v is None else "%.2f" % v  # noqa: E731
    print("## symm.torch.all_reduce per call: %d ranks on %d x %s, torch %s"
          % (world, ngpu, results["machine"], torch.__version__))
    if shared:
        print("\n%d ranks share %d GPU(s): NCCL and SymmetricMemory need one GPU per rank (not "
              "run); GPU times are not measured (two processes time-slice the GPU, so a "
              "collective waits milliseconds for its peer). Host times hold."
              % (world, ngpu))
    if c_api and world != 2:
        print("\nC API column: bench_symm's reduce_on_stream runs on 2 PEs only, so it is "
              "shown in the 2-rank table; here the ctypes floor row is the C call (GPU time "
              "back to back) and the graph column the GPU time without any host cost.")
    elif not c_api:
        print("\nC API column: no bench_symm results given (--c-results).")
    print("\n| size | row | host us/call | GPU us/call (stream) | GPU us/call (graph) | C API GPU us/call |")
    print("|---|---|---|---|---|---|")
    for size in SIZES:
        for name, rows in results["rows"].items():
            r = rows.get(size)
            if r is None:
                continue
            c = (c_api.get(human(size).replace(" ", ""))
                 if name == "symm.torch heap" and not shared and world == 2 else None)
            print("| %s | %s | %s | %s | %s | %s |" % (human(size), name, fmt(r["host_us"]),
                                                      fmt(r["gpu_us"]), fmt(r["graph_us"]),
                                                      fmt(c)))
    for note in results.get("notes", []):
        print("\nnote:", note)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
# The end: every PE drains its stream, then frees (collective). A GPU-side
# wait that gave up during the timings is reported here (SYMM_ERR_TIMEOUT /
# PEER_FAILED), after the figures, and fails the run.
rc = 1 if failed is not None else 0
try:
    torch.cuda.synchronize()
    st_, msg = ctx.async_error()
    if st_:
        print("rank %d: asynchronous error during the timings: %s" % (rank, msg), flush=True)
        rc = 1
    ctx.barrier_all()
    for h in keep:
        ctx.free_tensor(h)
    st.finalize()
except Exception as e:  # reported, the figures above stand as printed
    print("rank %d: cleanup failed: %r" % (rank, e), flush=True)
    rc = 1
dist.destroy_process_group()
sys.exit(rc)

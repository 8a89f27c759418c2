"""Per-call host cost of the symm Python package against another copy of it,
one process, interleaved (so both see the same machine load):

    SYMM_RUNTIME=... SYMM_LOADER=... python3 tests/perf/bench_py_ab.py OLD_PARENT [reps]

OLD_PARENT holds the other copy as a package named symm_old (for example
`git archive <rev> bindings/python/symm`, renamed). One PE (bootstrap
"single"): put of one int64 from a NumPy array to this PE, p of one value,
barrier_all, and the bare ctypes call of symm_put with prepared arguments
(the floor a ctypes binding can reach). Each figure: the median over reps of
the mean ns per call of a batch of 2000 calls, the copies taking turns.
"""
import statistics
import sys
import time
import warnings

sys.path.insert(0, sys.argv[1])
import numpy as np  # noqa: E402
import symm  # noqa: E402
import symm_old  # noqa: E402

warnings.simplefilter("ignore", DeprecationWarning)
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 31
BATCH = 2000
clock = time.perf_counter_ns


def batch(fn):
    t0 = clock()
    fn()
    return (clock() - t0) / BATCH


def ops(mod, old):
    ctx = mod.init(bootstrap="single")
    b = ctx.alloc("int64", 8)
    a = np.ones(1, dtype=np.int64)
    if old:
        def put():
            for _ in range(BATCH):
                b.put(a, 0)

        def p():
            for i in range(BATCH):
                b.p(i, 0)
    else:
        def put():
            for _ in range(BATCH):
                b.put(0, a, 0)

        def p():
            for i in range(BATCH):
                b.p(0, i, pe=0)

    def barrier():
        for _ in range(BATCH):
            ctx.barrier_all()
    return ctx, b, {"put": put, "p": p, "barrier_all": barrier}


new_ctx, new_b, new_ops = ops(symm, False)
old_ctx, old_b, old_ops = ops(symm_old, True)
fn = symm._ffi.LIB.get().symm_put
h = new_b.handle
src = np.ones(1, dtype=np.int64)
addr = src.__array_interface__["data"][0]


def bare():
    for _ in range(BATCH):
        fn(h, 0, addr, 1, 0)


res = {k: ([], []) for k in new_ops}
res["ctypes_floor"] = ([], [])
for _ in range(REPS):
    for k in new_ops:
        res[k][0].append(batch(old_ops[k]))
        res[k][1].append(batch(new_ops[k]))
    res["ctypes_floor"][1].append(batch(bare))
print("op            before ns   after ns   (median of %d batches of %d calls, 1 PE)"
      % (REPS, BATCH))
for k, (o, n) in res.items():
    print("%-12s %10s %10.0f" % (k, "%.0f" % statistics.median(o) if o else "-",
                                 statistics.median(n)))
old_b.free()
new_b.free()

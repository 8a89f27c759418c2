"""Per-call host cost of the symm Python package against another copy of it,
one process, interleaved (so both see the same machine load):

    SYMM_RUNTIME=... SYMM_LOADER=... python3 tests/perf/bench_py_ab.py OLD_PARENT [reps] [1.2|1.3]

OLD_PARENT holds the other copy as a package named symm_old (for example
`git archive <rev> bindings/python/symm`, renamed); the last argument says
which calls it takes (1.2: put(data, pe), p(value, pe), the default; 1.3:
put(index, data, pe), p(index, value, pe), as main took them before
2026-12-06; pe=: p(index, value, pe=pe), as this package does). One PE (bootstrap
"single"): put of one int64 from a NumPy array to this PE, p of one value,
barrier_all, and the bare ctypes calls of symm_put with prepared arguments:
prototyped (argtypes) and unprototyped (the package's fast path), the floors
a ctypes binding can reach. Each figure: the median over reps of
the mean ns per call of a batch of 2000 calls, the copies taking turns.
"""
import ctypes
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
OLD_ORDER = sys.argv[3] if len(sys.argv) > 3 else "1.2"
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
    if old == "pe=":  # this package's form: p's pe by keyword
        def put():
            for _ in range(BATCH):
                b.put(0, a, 0)

        def p():
            for i in range(BATCH):
                b.p(0, i, pe=0)
    elif old is None:  # 1.3 order, as the old copy took it: pe positional
        def put():
            for _ in range(BATCH):
                b.put(0, a, 0)

        def p():
            for i in range(BATCH):
                b.p(0, i, 0)
    elif old:
        def put():
            for _ in range(BATCH):
                b.put(a, 0)

        def p():
            for i in range(BATCH):
                b.p(i, 0)
    else:
        return ops(mod, "pe=")

    def barrier():
        for _ in range(BATCH):
            ctx.barrier_all()
    return ctx, b, {"put": put, "p": p, "barrier_all": barrier}


new_ctx, new_b, new_ops = ops(symm, False)
old_ctx, old_b, old_ops = ops(symm_old, {"1.2": True, "1.3": None}.get(OLD_ORDER, OLD_ORDER))
fn = symm._ffi.LIB.get().symm_put
ufn = symm._core._F.symm_put if symm._core._F is not None else None
h = new_b.handle
src = np.ones(1, dtype=np.int64)
addr = src.__array_interface__["data"][0]
ptr = ctypes.c_void_p(addr)


def bare():
    for _ in range(BATCH):
        fn(h, 0, addr, 1, 0)


def bare_unprototyped():
    for _ in range(BATCH):
        ufn(h, 0, ptr, 1, 0)


res = {k: ([], []) for k in new_ops}
res["ctypes_floor"] = ([], [])
if ufn is not None:
    res["unprototyped"] = ([], [])
for _ in range(REPS):
    for k in new_ops:
        res[k][0].append(batch(old_ops[k]))
        res[k][1].append(batch(new_ops[k]))
    res["ctypes_floor"][1].append(batch(bare))
    if ufn is not None:
        res["unprototyped"][1].append(batch(bare_unprototyped))
print("op            before ns   after ns   (median of %d batches of %d calls, 1 PE)"
      % (REPS, BATCH))
for k, (o, n) in res.items():
    print("%-12s %10s %10.0f" % (k, "%.0f" % statistics.median(o) if o else "-",
                                 statistics.median(n)))
old_b.free()
new_b.free()

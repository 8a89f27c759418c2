"""Host cost of small calls from Python beside the same calls from C, in one run.

    python3 tests/perf/bench_py_calls.py BUILD_DIR [--rounds N]

BUILD_DIR is a Meson build of the project (tests/perf/bench_small, symmrun,
the loader and runtime). The script alternates, round by round, the C
benchmark (symmrun -n 2 bench_small: rows "small symm <op> ...") and this
file's own worker (symmrun -n 2 python3 bench_py_calls.py --worker), which
times the package's calls with the same method: PE 0 times BATCH calls to
PE 1, BATCHES times; a figure is the median of the batches' mean ns per call.
Both see the same machine state, so the difference is the binding's own cost:

  python op              C row            what
  put(0, a, 1)           p                one int64 element from a NumPy array
  p(0, v, 1)             p                one int64 value
  barrier_all()          barrier_all      2 PEs (both time it; PE 0's figure)

and, for Python only, the same barrier loop calling symm_barrier_all through
ctypes with no wrapper (barrier bare): on a shared machine the 2-PE barrier
is mostly whether both PEs hold a core, which this row shows apart from the
wrapper's cost.

The C side has no one-element symm_put row; symm_p moves the same 8 bytes
through the same checks and store, so it stands for the C cost of the put.
Printed: one line per op (median over rounds of each round's median);
--json FILE writes the rows; --plot FILE.png|.svg draws them with matplotlib
(pip install matplotlib; without it the script says so and still prints).
"""
import json
import os
import statistics
import subprocess
import sys
import time

BATCH = 2000
BATCHES = 41


def worker():
    import numpy as np
    import symm
    ctx = symm.init()
    me = ctx.my_pe
    if ctx.n_pes != 2:
        sys.exit("bench_py_calls: run on 2 PEs")
    buf = ctx.alloc("int64", 16)
    a = np.ones(1, dtype=np.int64)
    clock = time.perf_counter_ns

    def timed(name, body):
        if me == 0:
            v = []
            for _ in range(BATCHES):
                t0 = clock()
                body()
                v.append((clock() - t0) / BATCH)
            v.sort()
            print("small py %s 8 %.1f %.1f %.1f" % (name, v[len(v) // 2], v[len(v) // 10],
                                                  v[len(v) - 1 - len(v) // 10]), flush=True)
        ctx.barrier_all()

    def put():
        for _ in range(BATCH):
            buf.put(0, a, 1)

    def p():
        for i in range(BATCH):
            buf.p(0, i, pe=1)

    timed("put", put)
    timed("p", p)
    from symm._core import _C, _F
    bare = (_F or _C).symm_barrier_all
    h = ctx._h
    for name, body in (("barrier_all", ctx.barrier_all), ("barrier_bare", lambda: bare(h))):
        v = []
        for _ in range(BATCHES):
            t0 = clock()
            for _ in range(BATCH // 10):
                body()
            v.append((clock() - t0) / (BATCH // 10))
        v.sort()
        if me == 0:
            print("small py %s 0 %.1f %.1f %.1f" % (name, v[len(v) // 2], v[len(v) // 10],
                                                   v[len(v) - 1 - len(v) // 10]), flush=True)
    buf.free()
    ctx.finalize()


def rows(out, impl):
    got = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 7 and f[0] == "small" and f[1] == impl:
            got[f[2] if f[2] != "putmem_quiet" else "putmem_quiet_%s" % f[3]] = float(f[4])
    return got


def main():
    args = sys.argv[1:]
    if args[:1] == ["--worker"]:
        return worker()
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    build = os.path.abspath(args[0])
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 5
    jpath = args[args.index("--json") + 1] if "--json" in args else None
    symmrun = os.path.join(build, "runtime", "symmrun")
    bench = os.path.join(build, "tests", "perf", "bench_small")
    for f in (symmrun, bench):
        if not os.path.exists(f):
            sys.exit("bench_py_calls: %s is missing (ninja -C %s %s)"
                     % (f, build, os.path.relpath(f, build)))
    env = dict(os.environ, SYMM_RUNTIME=os.path.join(build, "runtime", "libsymm_runtime.so.1"),
               SYMM_LOADER=os.path.join(build, "loader", "libsymm.so.1"))
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.join(here, os.pardir, os.pardir, "bindings", "python")
    env["PYTHONPATH"] = os.path.normpath(pkg) + os.pathsep + env.get("PYTHONPATH", "")
    pairs = {"put": "p", "p": "p", "barrier_all": "barrier_all"}
    c_all, py_all = {k: [] for k in pairs}, {k: [] for k in pairs}
    bare = []  # Python's barrier loop calling C directly (no wrapper): the 2-PE floor
    for r in range(rounds):
        c = subprocess.run([symmrun, "-n", "2", "--timeout", "300", bench, "1"], env=env,
                           stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        py = subprocess.run([symmrun, "-n", "2", "--timeout", "300", sys.executable,
                             os.path.abspath(__file__), "--worker"], env=env,
                            stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        cr, pr = rows(c, "symm"), rows(py, "py")
        for k, ck in pairs.items():
            c_all[k].append(cr[ck])
            py_all[k].append(pr[k])
        print("round %d/%d: %s" % (r + 1, rounds, ", ".join(
            "%s C %.0f / py %.0f ns" % (k, cr[pairs[k]], pr[k]) for k in pairs)), flush=True)
        bare.append(pr.get("barrier_bare", float("nan")))
    print("\nop           C ns    Python ns   Python - C (median of %d rounds)" % rounds)
    out = []
    for k, ck in pairs.items():
        cm, pm = statistics.median(c_all[k]), statistics.median(py_all[k])
        print("%-12s %7.0f %10.0f %10.0f   (C row: %s)" % (k, cm, pm, pm - cm, ck))
        out.append({"op": k, "c_row": ck, "c_ns": cm, "py_ns": pm, "over_c_ns": pm - cm,
                    "c_rounds": c_all[k], "py_rounds": py_all[k]})
    print("%-12s %7s %10.0f   (Python calling symm_barrier_all bare: what the 2 PEs' "
          "scheduling leaves; the wrapper adds the difference to barrier_all)"
          % ("barrier bare", "-", statistics.median(bare)))
    if jpath:
        with open(jpath, "w") as f:
            json.dump(out, f, indent=1)
    if "--plot" in args:
        plot(out, args[args.index("--plot") + 1])


def plot(out, path):
    """Bars: C and Python ns per call for each op (matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_py_calls: no figure: matplotlib is not installed "
              "(python3 -m pip install matplotlib)", file=sys.stderr)
        return
    ops = [r["op"] for r in out]
    x = range(len(ops))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar([i - 0.2 for i in x], [r["c_ns"] for r in out], 0.4, label="C (bench_small)")
    ax.bar([i + 0.2 for i in x], [r["py_ns"] for r in out], 0.4, label="Python (symm)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(ops)
    ax.set_ylabel("ns per call (median)")
    ax.set_title("Host time per small call, 2 PEs, host backend")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)
    print("bench_py_calls: wrote %s" % path)


if __name__ == "__main__":
    main()

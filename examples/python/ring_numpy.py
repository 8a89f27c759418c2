"""Ring on the host backend with NumPy: every PE sends a block to the next
PE with put-with-signal, waits for the block from the previous one, then a
sum-reduction checks the whole ring.

    symmrun -n 4 python3 examples/python/ring_numpy.py
    python3 examples/python/ring_numpy.py        # one process, with or without symm

Without symm (not installed, or the runtime missing) it runs as one process
and says why; the exit status is 0 when the result is right."""
import sys

import numpy as np

import symm

N = 1 << 16


def ring(ctx):
    me, n = ctx.my_pe, ctx.n_pes
    data = ctx.array(N, "int64")          # collective; zeroed; the same offset everywhere
    sig = ctx.alloc("uint64", 1)
    total = ctx.alloc("int64", 1)
    mine = np.arange(N, dtype=np.int64) + me * N
    data.put_signal(0, mine, (me + 1) % n, sig, 0, 1, sig_op="add")
    sig.signal_wait_until(0, "ge", 1)     # the previous PE's block has landed
    got = data.numpy()                    # zero-copy view of this PE's copy
    prev = (me - 1) % n
    ok = bool((got == np.arange(N) + prev * N).all())
    part = ctx.alloc("int64", 1)
    part.numpy()[0] = int(got.sum())
    ctx.barrier_all()
    ctx.world.reduce(total, part, "sum")
    want = N * (N - 1) // 2 * n + N * N * (n * (n - 1) // 2)
    ok = ok and int(total.numpy()[0]) == want
    print("PE %d of %d: received PE %d's block, ring sum %d: %s"
          % (me, n, prev, int(total.numpy()[0]), "ok" if ok else "WRONG"), flush=True)
    for b in (data, sig, total, part):
        b.free()                          # collective and explicit
    return ok


def single(why):
    # What one process computes: its own block goes round a ring of one.
    got = np.arange(N, dtype=np.int64)
    ok = int(got.sum()) == N * (N - 1) // 2
    print("symm not available (%s); single-process result: %s" % (why, "ok" if ok else "WRONG"))
    return ok


def main():
    if not symm.available():
        try:
            symm.probe()
        except symm.Error as e:
            return single(e.name)
    try:
        ctx = symm.init(backend="host")
    except (symm.LibraryNotFound, symm.NoDevice) as e:
        return single(e.name)
    with ctx:
        return ring(ctx)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

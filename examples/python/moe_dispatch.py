"""MoE-style token dispatch and combine on the symmetric heap.

Every PE holds T tokens (rows of D values) and hosts one expert. A router
sends each token to one expert, so every PE sends a different number of
tokens to every peer. Per step:
  1. counts: alltoall of the per-peer token counts (so receivers know sizes);
  2. dispatch: the tokens for PE j, sorted by destination, go to PE j's
     receive buffer (block "me", capacity T rows) with put-with-signal; the
     receiver waits until its signal counts every sender;
  3. expert: y = x * (e + 1) + e / 2 on the received rows;
  4. combine: the results go back to their senders the same way, and each
     PE puts them back in token order.
The result is checked against the same computation done locally. Then the
same step again with Team.alltoallv (symm_alltoallv, ABI 1.2: PyTorch's
all_to_all_vdev), the counts read from symmetric memory by the call itself:
  dispatch: alltoallv of the sorted tokens with the per-peer counts, which
            also writes the receive counts and offsets;
  expert:   on the whole receive buffer (no host copy of any count);
  combine:  alltoallv of the results with the receive counts as send counts,
            which brings every row back to where it left.

    symmrun -n 4 python3 examples/python/moe_dispatch.py          # host backend, NumPy
    torchrun --nproc_per_node=N examples/python/moe_dispatch.py   # GPUs, PyTorch tensors
    python3 examples/python/moe_dispatch.py                       # one process, with or without symm

All communication uses the stream forms: on GPUs they are ordered on torch's
current stream (no host synchronisation but the counts of the first way; none
at all in the alltoallv way but the final check), on the host backend
they run at once. Without symm it runs as one process (every token goes to
the only expert) and says why."""
import os
import sys

import numpy as np

import symm

T, D, STEPS = 64, 16, 3


class NumpyOps:
    name = "numpy"

    def view(self, buf):
        return buf.numpy()

    def tokens(self, rank):
        return (np.arange(T * D, dtype=np.float32).reshape(T, D) % 97 + rank * 1000)

    def asnp(self, x):
        return np.asarray(x)

    def route(self, rank, step, n):
        return np.random.default_rng(rank * 1000 + step).integers(0, n, T)  # a toy router

    def argsort(self, x):
        return np.argsort(x, kind="stable")

    def bincount(self, x, n):
        return np.bincount(x, minlength=n)

    def empty_like(self, x):
        return np.empty_like(x)

    def stream(self):
        return None


class TorchOps(NumpyOps):
    name = "torch"

    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def view(self, buf):
        return buf.torch()

    def tokens(self, rank):
        return self.torch.as_tensor(NumpyOps.tokens(self, rank), device=self.device)

    def asnp(self, x):
        return x.cpu().numpy()

    def route(self, rank, step, n):
        return self.torch.as_tensor(NumpyOps.route(self, rank, step, n), device=self.device)

    def argsort(self, x):
        return self.torch.argsort(x, stable=True)

    def bincount(self, x, n):
        return self.torch.bincount(x, minlength=n)

    def empty_like(self, x):
        return self.torch.empty_like(x)

    def stream(self):
        return self.torch.cuda.current_stream()


def expert(x, e):
    return x * (e + 1) + e / 2


def reference(x, dest):
    x = np.asarray(x)
    return np.stack([expert(x[t], int(dest[t])) for t in range(T)])


def moe(ctx, ops):
    me, n = ctx.my_pe, ctx.n_pes
    s = ops.stream()
    recv = ctx.array((n, T, D), "float32")   # block i: tokens from PE i
    back = ctx.array((n, T, D), "float32")   # block j: results from PE j
    sig = ctx.alloc("uint64", 2)             # [0] dispatch arrivals, [1] combine arrivals
    cnt_send = ctx.alloc("int64", n)
    cnt_recv = ctx.alloc("int64", n)
    recv_v, back_v, cs_v = ops.view(recv), ops.view(back), ops.view(cnt_send)
    # the alltoallv way: counts in elements (rows * D), in symmetric memory
    a_src = ctx.array((T, D), "float32")       # tokens sorted by destination
    a_recv = ctx.array((n * T, D), "float32")  # packed: from PE 0, PE 1, ...
    a_y = ctx.array((n * T, D), "float32")     # the expert's results, same layout
    a_back = ctx.array((T, D), "float32")      # results, in the sorted order
    a_cnt = ctx.alloc("int64", n)              # elements for each PE
    a_rc = ctx.alloc("int64", 2 * n)           # dispatch: received counts, offsets
    a_rc2 = ctx.alloc("int64", 2 * n)          # combine: the same
    a_src_v, a_recv_v, a_y_v, a_back_v, a_cnt_v = (
        ops.view(b) for b in (a_src, a_recv, a_y, a_back, a_cnt))
    ok = True
    for step in range(1, STEPS + 1):
        x = ops.tokens(me + step)
        dest = ops.route(me, step, n)
        order = ops.argsort(dest)
        xs = x[order]                          # tokens grouped by destination, contiguous
        counts = ops.bincount(dest, n)
        cs_v[:] = counts
        # 1. counts
        ctx.world.alltoall(cnt_recv, cnt_send, nelems=1, stream=s, on_stream=True)
        rc = [int(v) for v in ops.asnp(ops.view(cnt_recv))]   # host needs the sizes
        sc = [int(v) for v in ops.asnp(counts)]
        # 2. dispatch: variable-size puts, one signal per sender
        off = 0
        keep = []
        for j in range(n):
            if sc[j]:
                part = xs[off:off + sc[j]]
                keep.append(part)
                recv.put_signal(me * T * D, part, j, sig, 0, 1, sig_op="add",
                                stream=s, on_stream=True)
            else:
                sig.signal_op(0, 1, j, op="add", stream=s, on_stream=True)
            off += sc[j]
        sig.signal_wait_until(0, "ge", n * step, stream=s, on_stream=True)
        # 3. the expert, on what arrived
        ys = []
        for i in range(n):
            ys.append(expert(recv_v[i, :rc[i]], me))
        # 4. combine: results back to their senders, then into token order
        for i in range(n):
            if rc[i]:
                keep.append(ys[i])
                back.put_signal(me * T * D, ys[i], i, sig, 1, 1, sig_op="add",
                                stream=s, on_stream=True)
            else:
                sig.signal_op(1, 1, i, op="add", stream=s, on_stream=True)
        sig.signal_wait_until(1, "ge", n * step, stream=s, on_stream=True)
        out = ops.empty_like(x)
        off = 0
        for j in range(n):
            out[order[off:off + sc[j]]] = back_v[j, :sc[j]]
            off += sc[j]
        ref = reference(ops.asnp(x), ops.asnp(dest))
        good = bool((ops.asnp(out) == ref).all())
        # the same with alltoallv: no count goes through the host
        a_src_v[:] = xs
        a_cnt_v[:] = counts * D
        ctx.world.alltoallv(a_recv, a_src, a_cnt, a_rc, stream=s, on_stream=True)
        a_y_v[:] = expert(a_recv_v, me)          # rows past the received ones: unused
        ctx.world.alltoallv(a_back, a_y, a_rc, a_rc2, stream=s, on_stream=True)  # combine
        out2 = ops.empty_like(x)
        out2[order] = a_back_v
        good2 = bool((ops.asnp(out2) == ref).all())
        ok = ok and good and good2
        print("PE %d step %d: sent %s, received %s tokens: %s; alltoallv: %s"
              % (me, step, sc, rc, "ok" if good else "WRONG", "ok" if good2 else "WRONG"),
              flush=True)
        ctx.barrier_all(stream=s, on_stream=True)  # nobody overwrites a buffer still read
        del keep
    for b in (recv, back, sig, cnt_send, cnt_recv, a_src, a_recv, a_y, a_back, a_cnt, a_rc,
              a_rc2):
        b.free()
    return ok


def single(ops, why):
    """One process: every token goes to the only expert."""
    ok = True
    for step in range(1, STEPS + 1):
        x = ops.asnp(ops.tokens(step))
        ok = ok and bool((expert(x, 0) == reference(x, np.zeros(T, dtype=np.int64))).all())
    print("symm not available (%s); single-process result (%s): %s"
          % (why, ops.name, "ok" if ok else "WRONG"))
    return ok


def main():
    ops, dev = NumpyOps(), -1
    try:
        import torch
        if torch.cuda.is_available():
            dev = int(os.environ.get("LOCAL_RANK", 0)) % torch.cuda.device_count()
            torch.cuda.set_device(dev)
            ops = TorchOps(torch, "cuda:%d" % dev)
    except ImportError:
        pass
    try:
        ctx = symm.init(backend="cuda" if ops.name == "torch" else "host", device=dev)
    except (symm.LibraryNotFound, symm.NoDevice) as e:
        return single(ops, e.name)
    with ctx:
        return moe(ctx, ops)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

"""symm.torch with the runtime missing (SYMM_RUNTIME=/nonexistent), one
process, with the NumPy-backed stand-in for torch (tests/fake_torch): init()
returns None and says why; one process gets single-rank results; with
torch.distributed initialised every call goes there with the right op;
init_from_process_group agrees on the fallback; several ranks with nothing to
use raise InvalidState."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "fake_torch"))
import numpy as np  # noqa: E402

import symm  # noqa: E402
import symm.torch as st  # noqa: E402
from harness import case, check, expect_raises, run  # noqa: E402

check("torch" not in sys.modules, "import symm.torch must not import torch")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

for k in ("WORLD_SIZE", "SYMM_N_PES", "RANK", "SYMM_RANK"):
    os.environ.pop(k, None)


@case
def init_falls_back():
    check(os.environ.get("SYMM_RUNTIME") == "/nonexistent", "run with SYMM_RUNTIME=/nonexistent")
    check(st.why_fallback() != "", "why before init")
    check(st.init() is None, "init returns None without a runtime")
    check(st.context() is None and st.backend() == "single", st.backend())
    check("SYMM_ERR_LIBRARY_NOT_FOUND" in st.why_fallback(), st.why_fallback())


@case
def single_process_results():
    t = torch.tensor([1.0, 2.0, 3.0])
    st.all_reduce(t)
    st.all_reduce(t, "max")
    st.all_reduce(t, dist.ReduceOp.PRODUCT)
    check(t.tolist() == [1.0, 2.0, 3.0], t.tolist())
    e = st.empty(4, torch.float32)
    check(e.numpy().tolist() == [0, 0, 0, 0], "empty() in fallback is zeroed torch memory")
    o = torch.zeros(3)
    st.all_gather(o, t)
    check(o.tolist() == [1.0, 2.0, 3.0], o.tolist())
    o = torch.zeros(3)
    st.reduce_scatter(o, t)
    check(o.tolist() == [1.0, 2.0, 3.0], o.tolist())
    o = torch.zeros(3)
    st.all_to_all(o, t)
    check(o.tolist() == [1.0, 2.0, 3.0], o.tolist())
    st.broadcast(t, src=0)
    st.barrier()
    check(t.tolist() == [1.0, 2.0, 3.0], t.tolist())
    expect_raises(symm.InvalidArgument, st.all_gather, torch.zeros(4), t)
    expect_raises(symm.InvalidArgument, st.all_reduce, t, "median")
    st.reserve(16, torch.float32)  # nothing to reserve: no error
    check(not st.is_symmetric(t), "nothing is symmetric in fallback")


@case
def single_process_all_to_all_v():
    # one rank: out gets input's first in_splits[0] rows (the others keep
    # their values), out_splits_offsets [[in_splits[0]], [0]]
    x = torch.tensor([1.0, 2.0, 3.0, 4.0])
    out = torch.tensor([-1.0] * 5)
    oso = torch.zeros((2, 1), torch.int64)
    st.all_to_all_v(x, out, torch.tensor([3], torch.int64), oso)
    check(out.tolist() == [1.0, 2.0, 3.0, -1.0, -1.0], out.tolist())
    check(oso.tolist() == [[3], [0]], oso.tolist())
    rows = torch.tensor([[1, 2], [3, 4], [5, 6]], torch.int32)  # splits count rows
    out2 = torch.zeros((3, 2), torch.int32)
    st.all_to_all_v(rows, out2, torch.tensor([2], torch.int64), oso)
    check(out2.tolist() == [[1, 2], [3, 4], [0, 0]], out2.tolist())
    check(oso.tolist() == [[2], [0]], oso.tolist())
    def i64(v):
        return torch.tensor(v, torch.int64)

    e = expect_raises(symm.OutOfBounds, st.all_to_all_v, x, torch.zeros(2), i64([3]), oso)
    check("would come" in e.message, e.message)
    check(oso.tolist() == [[3], [0]], ("the splits are written anyway", oso.tolist()))
    expect_raises(symm.OutOfBounds, st.all_to_all_v, x, out, i64([5]), oso)
    expect_raises(symm.OutOfBounds, st.all_to_all_v, x, out, i64([-1]), oso)
    expect_raises(symm.InvalidArgument, st.all_to_all_v, x, out, i64([1, 1]), oso)
    i32 = torch.tensor([1], torch.int32)
    expect_raises(symm.InvalidArgument, st.all_to_all_v, x, out, i32, oso)
    oso32 = torch.zeros(2, torch.int32)
    expect_raises(symm.InvalidArgument, st.all_to_all_v, x, out, i64([1]), oso32)
    check(out.tolist() == [1.0, 2.0, 3.0, -1.0, -1.0], ("errors leave out alone", out.tolist()))


@case
def several_ranks_without_anything_raise():
    os.environ["WORLD_SIZE"] = "2"
    try:
        e = expect_raises(symm.InvalidState, st.all_reduce, torch.zeros(2))
        check("init_process_group" in e.message and "LIBRARY_NOT_FOUND" in e.message, e.message)
        expect_raises(symm.InvalidState, st.barrier)
        e = expect_raises(symm.InvalidState, st.all_to_all_v, torch.zeros(2), torch.zeros(2),
                          torch.zeros(2, torch.int64), torch.zeros((2, 2), torch.int64))
        check("all_to_all_v" in e.message, e.message)
    finally:
        del os.environ["WORLD_SIZE"]


@case
def torch_distributed_fallback():
    dist.init_process_group("gloo", rank=0, world_size=1)
    check(st.backend() == "torch.distributed", st.backend())
    os.environ["FAKE_DIST_DIR"] = "/tmp/symm-fake-dist-fb-%d" % os.getpid()
    os.makedirs(os.environ["FAKE_DIST_DIR"], exist_ok=True)
    try:
        check(st.init_from_process_group() is None, "rank 0 has no runtime: all fall back")
        check(st.why_fallback().startswith("rank 0: SYMM_ERR_LIBRARY_NOT_FOUND"), st.why_fallback())
        got = []
        with open(os.path.join(os.environ["FAKE_DIST_DIR"], "bcast.pickle"), "rb") as f:
            import pickle
            got = pickle.load(f)
        check(isinstance(got[0], str), "rank 0 broadcast the reason, not an id: %r" % got)
    finally:
        import shutil
        shutil.rmtree(os.environ["FAKE_DIST_DIR"])
    dist.calls.clear()
    t = torch.tensor([1, 2], torch.int64)
    o = torch.zeros(2, torch.int64)
    for op, want in (("sum", "SUM"), ("prod", "PRODUCT"), ("min", "MIN"), ("max", "MAX"),
                     ("band", "BAND"), ("bor", "BOR"), ("bxor", "BXOR"), ("avg", "AVG"),
                     (dist.ReduceOp.MAX, "MAX")):
        st.all_reduce(t, op)
        check(dist.calls[-1][0] == "all_reduce" and dist.calls[-1][1][0] is t, dist.calls[-1])
        check(dist.calls[-1][2]["op"] is getattr(dist.ReduceOp, want), (op, dist.calls[-1]))
    st.all_gather(o, t)
    st.reduce_scatter(o, t, "min")
    st.all_to_all(o, t)
    st.broadcast(t, 0)
    st.barrier()
    names = [c[0] for c in dist.calls[-5:]]
    check(names == ["all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single",
                    "broadcast", "barrier"], names)
    check(dist.calls[-4][2]["op"] is dist.ReduceOp.MIN, dist.calls[-4])
    check(dist.calls[-5][1] == (o, t), "output, input order kept")
    # all_to_all_v: the splits first (all_to_all_single), then the rows with
    # the split sizes (the stand-in's collectives receive nothing: 0 rows)
    oso = torch.zeros((2, 1), torch.int64)
    sp = torch.tensor([2], torch.int64)
    st.all_to_all_v(t, o, sp, oso)
    check([c[0] for c in dist.calls[-2:]] == ["all_to_all_single"] * 2, dist.calls[-2:])
    check(dist.calls[-2][1][1] is not None and dist.calls[-2][1][1].tolist() == [2], dist.calls[-2])
    check(dist.calls[-1][1][2:] == ([0], [2]) and dist.calls[-1][1][1].tolist() == [1, 2],
          dist.calls[-1])
    check(oso.tolist() == [[0], [0]], oso.tolist())
    dist.destroy_process_group()


@case
def real_library_still_absent():
    check(np.float32(1) == 1, "numpy importable")
    check(not symm.available(), "available() stays False")


sys.exit(run())

"""All-reduce of a torch tensor with symm.torch, next to the same with
torch.distributed, launched by torchrun:

    torchrun --nproc_per_node=N examples/python/allreduce_torch.py
    python3 examples/python/allreduce_torch.py     # one process (fallback when symm is absent)

symm.torch.init() joins the job from torchrun's environment; the tensor
lives on the symmetric heap (symm.torch.empty), and all_reduce runs in place
on the current CUDA stream. torch.distributed runs on NCCL when every rank
has its own GPU; when ranks share a GPU (NCCL refuses that) or there is no
GPU it runs on gloo with CPU tensors. Both results are printed and must
agree. Without symm, symm.torch falls back to torch.distributed (or, for one
process, to nothing), so the script runs the same everywhere."""
import os
import sys

import torch
import torch.distributed as dist

import symm.torch as st

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
ngpu = torch.cuda.device_count() if torch.cuda.is_available() else 0
dev = int(os.environ.get("LOCAL_RANK", 0)) % ngpu if ngpu else None
if dev is not None:
    torch.cuda.set_device(dev)

ctx = st.init()                      # None: symm not usable here (st.why_fallback() says why)
nccl = ngpu > 0 and world <= ngpu    # NCCL needs one GPU per rank
if world > 1:
    dist.init_process_group("nccl" if nccl else "gloo")
# symm's tensors live on the GPU; without symm and with gloo, use CPU tensors
device = "cuda" if ngpu and (ctx is not None or nccl or world == 1) else "cpu"

x = st.empty(4096, torch.float32, device=device)   # on the symmetric heap when symm is in use
x.copy_(torch.arange(4096, dtype=torch.float32, device=x.device) * (rank + 1))
st.all_reduce(x)                                   # in place, current stream

y = torch.arange(4096, dtype=torch.float32) * (rank + 1)
y = y.cuda() if nccl else y
if world > 1:
    dist.all_reduce(y)

want = torch.arange(4096, dtype=torch.float32) * (world * (world + 1) // 2)
xs, ys = x.cpu(), y.cpu()
ok = torch.equal(xs, ys) and torch.equal(xs, want)
print("rank %d/%d: symm.torch (%s%s) x[1..3] = %s | torch.distributed (%s) = %s | %s"
      % (rank, world, st.backend(), ", heap" if st.is_symmetric(x) else "",
         xs[1:4].tolist(), "nccl" if nccl else ("gloo" if world > 1 else "one process"),
         ys[1:4].tolist(), "agree" if ok else "DIFFER"), flush=True)
if ctx is None:
    print("rank %d: symm not in use: %s" % (rank, st.why_fallback()))
st.finalize()
if world > 1:
    dist.destroy_process_group()
sys.exit(0 if ok else 1)

"""AllReduce, the heart of data parallelism: every rank contributes a tensor
and every rank ends with the same reduced result.

Rank r holds four copies of r. After all_reduce(SUM) every rank holds
0 + 1 + ... + (N-1) = N(N-1)/2 in each element; this is how DDP sums the
gradients that each rank computed on its own data (then divides by N).

    mpirun -np 4 python3 examples/torch/all_reduce.py
    torchrun --nproc_per_node 4 --redirects 1 --tee 1 examples/torch/all_reduce.py

--backend gloo runs the same program on torch's own CPU backend.
"""
import sys

import launch

rank, world_size = launch.setup_env()
args = launch.parse_args()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group(backend=args.backend, rank=rank, world_size=world_size)
tensor = torch.full((4,), float(rank))
print(f"[before] rank {rank}: {tensor.tolist()}", flush=True)
dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
print(f"[after]  rank {rank}: {tensor.tolist()}", flush=True)
want = world_size * (world_size - 1) / 2
ok = bool((tensor == want).all())
if not ok:
    print(f"rank {rank}: expected {want} everywhere", file=sys.stderr)
dist.destroy_process_group()
sys.exit(0 if ok else 1)

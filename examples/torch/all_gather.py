"""AllGather: every rank contributes a block and every rank ends with all of
them, in rank order.

Rank r holds [10r, 10r + 1]. all_gather fills a list whose entry i is rank
i's block, whatever order the blocks arrived in: the list is ordered by
rank, never by arrival. (A model that concatenates all_gather's output
along the wrong dimension, or assumes another order, trains to nonsense
without any error: print the blocks on the CPU, as here, and check.)

    mpirun -np 4 python3 examples/torch/all_gather.py
    torchrun --nproc_per_node 4 --redirects 1 --tee 1 examples/torch/all_gather.py
"""
import sys

import launch

rank, world_size = launch.setup_env()
args = launch.parse_args()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group(backend=args.backend, rank=rank, world_size=world_size)
local = torch.arange(2) + rank * 10
gathered = [torch.empty_like(local) for _ in range(world_size)]
dist.all_gather(gathered, local)
# one rank prints (rank 1 when there is one): every rank holds the same list
if rank == min(1, world_size - 1):
    for i, t in enumerate(gathered):
        print(f"[rank {rank} holds, from rank {i}] {t.tolist()}", flush=True)
ok = all(t.tolist() == [10 * i, 10 * i + 1] for i, t in enumerate(gathered))
if not ok:
    print(f"rank {rank}: the list is not in rank order: {[t.tolist() for t in gathered]}",
          file=sys.stderr)
dist.destroy_process_group()
sys.exit(0 if ok else 1)

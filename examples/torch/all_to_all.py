"""AllToAll, the exchange behind mixture-of-experts routing: every rank cuts
its input into one block per rank, sends block j to rank j, and receives
one block from every rank.

Rank r's input is [100r + 0, 100r + 1, ..., 100r + N-1]: element j is
addressed to rank j. After all_to_all_single, rank r's output is
[r, 100 + r, 200 + r, ...]: element i came from rank i. Across the ranks
the exchange is a transpose of the N x N matrix of inputs.

With --uneven, rank r sends j + 1 elements to rank j (MoE routing sends
each expert a different number of tokens, and the counts change every
step): the split sizes say how many rows go to and come from each rank.

    mpirun -np 4 python3 examples/torch/all_to_all.py [--uneven]
    torchrun --nproc_per_node 4 --redirects 1 --tee 1 examples/torch/all_to_all.py
"""
import argparse
import sys

import launch

rank, world_size = launch.setup_env()
ap = argparse.ArgumentParser()
ap.add_argument("--uneven", action="store_true", help="blocks of their own sizes")
args = launch.parse_args(ap)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

dist.init_process_group(backend=args.backend, rank=rank, world_size=world_size)
if not args.uneven:
    inp = torch.arange(world_size) + 100 * rank
    out = torch.empty_like(inp)
    dist.all_to_all_single(out, inp)
    want = [100 * i + rank for i in range(world_size)]
else:
    # j + 1 elements to rank j, so rank r receives r + 1 from everyone
    in_splits = [j + 1 for j in range(world_size)]
    out_splits = [rank + 1] * world_size
    inp = torch.cat([torch.full((j + 1,), 100 * rank + j) for j in range(world_size)])
    out = torch.empty(sum(out_splits), dtype=inp.dtype)
    dist.all_to_all_single(out, inp, output_split_sizes=out_splits, input_split_sizes=in_splits)
    want = [100 * i + rank for i in range(world_size) for _ in range(rank + 1)]
print(f"rank {rank}: sent {inp.tolist()}, received {out.tolist()}", flush=True)
ok = out.tolist() == want
if not ok:
    print(f"rank {rank}: expected {want}", file=sys.stderr)
dist.destroy_process_group()
sys.exit(0 if ok else 1)

"""Data-parallel training with DistributedDataParallel over backend "xcoll",
timed next to gloo in the same job.

Every rank holds a replica of one MLP and trains it on its own synthetic
batch; DDP keeps the replicas identical by averaging the gradients. It
does not wait for the whole backward pass: it groups the gradients into
buckets (--bucket-mb, torch's default 25 MB) in the order the backward
produces them, and starts an asynchronous all_reduce on each bucket as soon
as it is full, so communication overlaps the rest of the backward. Larger
buckets mean fewer, larger all_reduces (less per-call overhead), smaller
ones an earlier start (more overlap); the best size depends on the model.

Both models take the same steps, alternating in blocks, so that both see
the same machine; the medians are printed, with the bytes each step
all_reduces (4 bytes per parameter).

    mpirun -np 2 python3 examples/torch/ddp_train.py [--bucket-mb 25] [--steps 30]
    torchrun --nproc_per_node 2 --redirects 1 --tee 1 examples/torch/ddp_train.py
"""
import argparse
import copy
import os
import statistics
import sys
import time

import launch

rank, world_size = launch.setup_env()
ap = argparse.ArgumentParser()
ap.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket size (MB)")
ap.add_argument("--steps", type=int, default=30, help="timed steps per backend")
ap.add_argument("--hidden", type=int, default=1024, help="width of the MLP's hidden layers")
ap.add_argument("--layers", type=int, default=4, help="hidden layers")
ap.add_argument("--batch", type=int, default=32, help="samples per rank and step")
ap.add_argument("--threads", type=int, default=0,
                help="torch's compute threads per rank (default: the cores over the ranks on "
                     "this host, so that ranks do not fight over cores)")
args = ap.parse_args()
launch.import_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE",
                                                                    world_size)))
torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // local_ranks))
dist.init_process_group("xcoll", rank=rank, world_size=world_size)
gloo = dist.new_group(list(range(world_size)), backend="gloo")

torch.manual_seed(0)
layers = [torch.nn.Linear(64, args.hidden), torch.nn.ReLU()]
for _ in range(args.layers - 1):
    layers += [torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU()]
layers.append(torch.nn.Linear(args.hidden, 10))
model = torch.nn.Sequential(*layers)
nparams = sum(p.numel() for p in model.parameters())

runs = {}
for name, group in (("xcoll", None), ("gloo", gloo)):
    ddp = DDP(copy.deepcopy(model), process_group=group, bucket_cap_mb=args.bucket_mb)
    runs[name] = (ddp, torch.optim.SGD(ddp.parameters(), lr=0.01), [])


def step(name, i):
    ddp, opt, times = runs[name]
    g = torch.Generator().manual_seed(i * world_size + rank)
    x = torch.randn(args.batch, 64, generator=g)
    y = torch.randint(0, 10, (args.batch,), generator=g)
    t0 = time.perf_counter()
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(ddp(x), y)
    loss.backward()  # returns once every bucket's all_reduce has finished
    opt.step()
    return time.perf_counter() - t0, float(loss)


for i in range(3):  # warm-up: connections, allocations
    for name in runs:
        step(name, i)
block = 5
for first in range(0, args.steps, block):
    for name in runs:
        for i in range(first, min(first + block, args.steps)):
            t, loss = step(name, 100 + i)
            runs[name][2].append(t)

# the same steps from the same start: the two replicas agree
px = torch.cat([p.detach().reshape(-1) for p in runs["xcoll"][0].parameters()])
pg = torch.cat([p.detach().reshape(-1) for p in runs["gloo"][0].parameters()])
agree = torch.allclose(px, pg, rtol=1e-4, atol=1e-5)
if rank == 0:
    mx = statistics.median(runs["xcoll"][2]) * 1e3
    mg = statistics.median(runs["gloo"][2]) * 1e3
    print(f"DDP, {world_size} ranks: MLP of {nparams / 1e6:.2f} M parameters "
          f"({nparams * 4 / 2**20:.1f} MiB of gradients per step), batch {args.batch} per rank, "
          f"bucket {args.bucket_mb:g} MB, {args.steps} steps each")
    print(f"  step time (median): xcoll {mx:8.2f} ms   gloo {mg:8.2f} ms   gloo/xcoll {mg / mx:.2f}")
    print(f"  parameters after training: {'the same' if agree else 'DIFFERENT'} on both backends")
dist.destroy_process_group()
sys.exit(0 if agree else 1)

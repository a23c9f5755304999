"""DistributedDataParallel over backend "xcoll" trains as over gloo.

Two copies of one small MLP, one wrapped in DDP over xcoll (the default
group), one over gloo (a second group on the same ranks), take the same 20
steps on the same per-rank data. DDP averages the gradients in buckets
during the backward pass, through allreduce and Work::getFuture(), after
broadcasting the parameters from rank 0 at construction (ranks start from
different seeds here, so a broken broadcast shows). At 1 and 2 ranks the
parameters must be bit-identical (a sum of two floats does not depend on
order); at more, equal up to the order of summation.

With --hook powersgd both models use torch's PowerSGD comm hook, whose
future callbacks run all_reduces and wait for them (a backend that
completes futures on one thread deadlocks there).

With --sparse the model starts with a sparse embedding (nn.Embedding with
sparse=True): its gradients are sparse tensors, which DDP all_reduces as
such (SGD without momentum: it updates only the rows that were looked up).

Usage: test_ddp.py [--bucket-mb MB] [--hook none|powersgd] [--sparse]
(run by run_torch_tests.sh under mpirun)
"""
import argparse
import copy
import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "torch"))
import launch  # noqa: E402

RANK, SIZE = launch.setup_env()
launch.import_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402


class Bag(torch.nn.Module):
    """The mean of the embeddings of a sample's indices."""

    def __init__(self, emb):
        super().__init__()
        self.emb = emb

    def forward(self, idx):
        return self.emb(idx).mean(dim=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bucket-mb", type=float, default=0.01,
                    help="DDP bucket size: small, so that several buckets overlap the backward")
    ap.add_argument("--hook", choices=("none", "powersgd"), default="none",
                    help="powersgd: torch's PowerSGD comm hook on both models, whose "
                    "callbacks wait for all_reduces of their own")
    ap.add_argument("--sparse", action="store_true",
                    help="a sparse embedding first: sparse gradients")
    args = ap.parse_args()
    dist.init_process_group("xcoll", rank=RANK, world_size=SIZE,
                            timeout=datetime.timedelta(seconds=120))
    gloo = dist.new_group(list(range(SIZE)), backend="gloo")
    torch.manual_seed(1234 + RANK)  # different on every rank: DDP must broadcast rank 0's
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                                torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 4))
    if args.sparse:
        # 8 looked-up rows per sample, averaged: rows that ranks share and
        # rows only one rank touches
        model = torch.nn.Sequential(Bag(torch.nn.Embedding(50, 32, sparse=True)), model)
    mx = DDP(copy.deepcopy(model), bucket_cap_mb=args.bucket_mb)
    mg = DDP(copy.deepcopy(model), process_group=gloo, bucket_cap_mb=args.bucket_mb)
    if args.hook == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
        # compression from step 2 on; both states seed their random
        # matrices alike
        for m, pg in ((mx, None), (mg, gloo)):
            m.register_comm_hook(psgd.PowerSGDState(process_group=pg,
                                                    matrix_approximation_rank=1,
                                                    start_powerSGD_iter=2),
                                 psgd.powerSGD_hook)
    momentum = 0.0 if args.sparse else 0.9
    ox = torch.optim.SGD(mx.parameters(), lr=0.05, momentum=momentum)
    og = torch.optim.SGD(mg.parameters(), lr=0.05, momentum=momentum)
    fails = 0
    # after construction both hold rank 0's parameters
    r0 = [p.detach().clone() for p in mx.parameters()]
    for p in r0:
        dist.broadcast(p, src=0, group=gloo)
    if not all(torch.equal(a, b) for a, b in zip(mx.parameters(), r0)):
        print("FAIL r%d DDP over xcoll did not start from rank 0's parameters" % RANK,
              file=sys.stderr)
        fails += 1
    for step in range(20):
        g = torch.Generator().manual_seed(step * 100 + RANK)
        x = torch.randint(0, 50, (16, 8), generator=g) if args.sparse else \
            torch.randn(16, 32, generator=g)
        y = torch.randn(16, 4, generator=g)
        for m, o in ((mx, ox), (mg, og)):
            o.zero_grad()
            torch.nn.functional.mse_loss(m(x), y).backward()
            o.step()
    px = torch.cat([p.detach().reshape(-1) for p in mx.parameters()])
    pg = torch.cat([p.detach().reshape(-1) for p in mg.parameters()])
    exact = SIZE <= 2
    ok = torch.equal(px, pg) if exact else torch.allclose(px, pg, rtol=1e-5, atol=1e-6)
    if not ok:
        print("FAIL r%d after 20 steps the parameters differ from gloo's: max |diff| %g (%s)" %
              (RANK, float((px - pg).abs().max()), "exact expected" if exact else "allclose"),
              file=sys.stderr)
        fails += 1
    # and every rank holds the same parameters
    allp = [torch.zeros_like(px) for _ in range(SIZE)]
    dist.all_gather(allp, px, group=gloo)
    if not all(torch.equal(a, allp[0]) for a in allp):
        print("FAIL r%d ranks hold different parameters" % RANK, file=sys.stderr)
        fails += 1
    total = torch.tensor([fails])
    dist.all_reduce(total, group=gloo)
    if RANK == 0:
        print("test_ddp: %d ranks, bucket %.3g MB%s, 20 steps: %s (max |xcoll - gloo| %g)" %
              (SIZE, args.bucket_mb, ", sparse" if args.sparse else "",
               "ok" if int(total) == 0 else "%d failures" % int(total),
               float((px - pg).abs().max())), flush=True)
    dist.destroy_process_group()
    sys.exit(1 if int(total) else 0)


main()

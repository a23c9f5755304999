"""torch.distributed collectives, backend "xcoll" against gloo, in one job.

For each collective and size, the two backends run alternately (a block of
iterations on one, then the other, three times) on groups over the same
ranks, and the medians of the per-block averages are printed in the
nccl-tests layout: time in microseconds, algorithm bandwidth (bytes of the
per-rank buffer over time), and gloo's time over xcoll's (above 1: xcoll
faster). gloo 1.13 has no all_gather_into_tensor (_allgather_base): its
row is gloo's all_gather into a list of the same total size.

    mpirun -np 2 python3 bench/torch_bench.py [--max-mb 64] [--colls all_reduce,...]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "torch"))
import launch  # noqa: E402

rank, size = launch.setup_env()
launch.import_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--min-kb", type=float, default=4)
ap.add_argument("--max-mb", type=float, default=64)
ap.add_argument("--colls", default="all_reduce,all_gather_into_tensor,all_to_all_single,broadcast")
ap.add_argument("--reps", type=int, default=3, help="alternating blocks per backend")
args = ap.parse_args()

dist.init_process_group("xcoll", rank=rank, world_size=size)
groups = {"xcoll": dist.new_group(list(range(size)), backend="xcoll"),
          "gloo": dist.new_group(list(range(size)), backend="gloo")}


def op_for(coll, backend, n):
    """A function running one call of coll on n float32 per rank."""
    g = groups[backend]
    x = torch.ones(n)
    if coll == "all_reduce":
        return lambda: dist.all_reduce(x, group=g)
    if coll == "broadcast":
        return lambda: dist.broadcast(x, src=0, group=g)
    if coll == "all_to_all_single":
        n -= n % size
        x, y = torch.ones(n), torch.empty(n)
        return lambda: dist.all_to_all_single(y, x, group=g)
    if coll == "all_gather_into_tensor":
        out = torch.empty(n * size)
        if backend == "gloo":
            outs = list(out.chunk(size))
            return lambda: dist.all_gather(outs, x, group=g)
        return lambda: dist.all_gather_into_tensor(out, x, group=g)
    raise SystemExit("unknown collective " + coll)


def timed(fn, iters):
    dist.barrier(group=groups["gloo"])
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    t = torch.tensor([(time.perf_counter() - t0) / iters])
    # the slowest rank's time is the collective's
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=groups["gloo"])
    return float(t)


sizes = []
b = int(args.min_kb * 1024)
while b <= args.max_mb * 2**20:
    sizes.append(b)
    b *= 4
for coll in args.colls.split(","):
    if rank == 0:
        print("# %s, %d ranks, float32; time in us, algbw in GB/s (buffer bytes / time)" %
              (coll, size))
        print("#%11s %10s  %10s %7s  %10s %7s  %9s" % ("size(B)", "count", "xcoll(us)", "algbw",
                                                        "gloo(us)", "algbw", "gloo/xcoll"))
    for nbytes in sizes:
        n = nbytes // 4
        iters = max(3, min(200, int(2e7 // max(nbytes, 1))))
        fns = {be: op_for(coll, be, n) for be in groups}
        for be in groups:  # warm-up
            timed(fns[be], 2)
        res = {be: [] for be in groups}
        for _ in range(args.reps):
            for be in groups:
                res[be].append(timed(fns[be], iters))
        tx, tg = statistics.median(res["xcoll"]), statistics.median(res["gloo"])
        if rank == 0:
            print("%12d %10d  %10.1f %7.2f  %10.1f %7.2f  %9.2f" %
                  (nbytes, n, tx * 1e6, nbytes / tx / 1e9, tg * 1e6, nbytes / tg / 1e9, tg / tx),
                  flush=True)
dist.destroy_process_group()

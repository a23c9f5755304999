"""The torch.distributed backend "xcoll" against torch's documented semantics.

Launched by run_torch_tests.sh under mpirun at 1..4 ranks. Every method of
the issue's list, on integer-valued data so that results are exact: each is
checked against values computed here from the ranks' inputs, and against
gloo (a second process group on the same ranks) where gloo serves the call.
Then the unusual but legal calls (non-contiguous tensors, zero sizes,
uneven and empty splits, every root, requests finished in another order,
subgroups) and the refused ones (an unsupported dtype or op, a receive from
any source, a non-CPU tensor). A final check: a rank that skips a
collective makes the others raise within the group's timeout.

Usage: test_torch.py [--quick]
"""
import datetime
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "torch"))
import launch  # noqa: E402

RANK, SIZE = launch.setup_env()
launch.import_backend()
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

QUICK = "--quick" in sys.argv
failures = 0
checks = 0


def check(name, ok, detail=""):
    global failures, checks
    checks += 1
    if not ok:
        failures += 1
        if failures <= 30:
            print("FAIL r%d %s %s" % (RANK, name, detail), file=sys.stderr, flush=True)


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def raises(name, exc_type, words, fn):
    try:
        fn()
    except exc_type as e:
        check(name, all(w in str(e) for w in words), "message %r lacks %r" % (str(e)[:300], words))
        return
    except Exception as e:  # noqa: BLE001
        check(name, False, "raised %s, not %s: %s" % (type(e).__name__, exc_type.__name__,
                                                       str(e)[:300]))
        return
    check(name, False, "did not raise")


INTS = [torch.int8, torch.uint8, torch.int32, torch.int64]
FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
SIZES = [0, 1, 7, 1000] + ([] if QUICK else [70001])


def data(r, n, dtype, salt=0):
    """Rank r's input: small integers, exact in every dtype, sums and
    products of up to 4 ranks in range."""
    i = torch.arange(n, dtype=torch.int64)
    v = (i * 7 + r * 3 + salt) % 5 + 1  # 1..5
    if dtype == torch.bool:
        return ((i * (r + 1)) % 3 == 0)  # i = 0: True on every rank
    return v.to(dtype)


def expected_reduce(op, n, dtype, salt=0):
    ins = [data(r, n, dtype, salt).to(torch.float64 if dtype.is_floating_point else torch.int64)
           for r in range(SIZE)]
    if dtype == torch.bool:
        b = [data(r, n, dtype, salt) for r in range(SIZE)]
        out = b[0].clone()
        for x in b[1:]:
            if op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.BOR):
                out = out | x
            elif op == dist.ReduceOp.BXOR:
                out = out ^ x
            else:
                out = out & x
        return out
    out = ins[0].clone()
    for x in ins[1:]:
        if op == dist.ReduceOp.SUM or op == dist.ReduceOp.AVG:
            out = out + x
        elif op == dist.ReduceOp.PRODUCT:
            out = out * x
        elif op == dist.ReduceOp.MIN:
            out = torch.minimum(out, x)
        elif op == dist.ReduceOp.MAX:
            out = torch.maximum(out, x)
        elif op == dist.ReduceOp.BAND:
            out = out & x
        elif op == dist.ReduceOp.BOR:
            out = out | x
        elif op == dist.ReduceOp.BXOR:
            out = out ^ x
    if op == dist.ReduceOp.AVG:
        out = out / SIZE if dtype.is_floating_point else torch.div(out, SIZE, rounding_mode="trunc")
    return out.to(dtype)


def opname(op):
    for name in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"):
        if op == getattr(dist.ReduceOp, name):
            return name
    return str(op)


def ops_for(dtype):
    ops = [dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX]
    if dtype == torch.bool:
        return ops + [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    if not dtype.is_floating_point:
        ops += [dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR]
    return ops + [dist.ReduceOp.AVG]


def noncontig(t):
    """t's values in a non-contiguous tensor (every other column of a
    wider one), with the base to check that nothing else was written."""
    base = torch.full((t.numel(), 2), 99, dtype=t.dtype) if t.dtype != torch.bool else \
        torch.ones((t.numel(), 2), dtype=t.dtype)
    view = base[:, 0]
    view.copy_(t)
    return view, base


def test_all_reduce(gloo):
    for dtype in INTS + FLOATS + [torch.bool]:
        for op in ops_for(dtype):
            for n in SIZES:
                name = "all_reduce %s %s n=%d" % (dtype, opname(op), n)
                t = data(RANK, n, dtype)
                dist.all_reduce(t, op=op)
                want = expected_reduce(op, n, dtype)
                if op == dist.ReduceOp.AVG and dtype.is_floating_point:
                    # torch: AVG divides each value by the world size, then
                    # sums, so the last bit depends on the order of the sum
                    check(name, t.dtype == want.dtype and t.shape == want.shape and
                          torch.allclose(t.double(), want.double(), rtol=1e-2, atol=0),
                          "got %s want %s" % (t[:8], want[:8]))
                else:
                    check(name, same(t, want), "got %s want %s" % (t[:8], want[:8]))
                if dtype == torch.bool and n > 0:
                    # a bool is one byte holding 0 or 1: a sum of 1s would
                    # hold 2.. (and wrap to 0 at 256 ranks)
                    check(name + " bytes 0/1", int(t.view(torch.uint8).max()) <= 1)
                # gloo: no bfloat16, no AVG, no bool
                if dtype in (torch.int32, torch.int64, torch.float32, torch.float64) and \
                        op != dist.ReduceOp.AVG and n <= 1000:
                    g = data(RANK, n, dtype)
                    dist.all_reduce(g, op=op, group=gloo)
                    check(name + " vs gloo", same(t, g))
    # AVG of float16 values whose sum passes float16's 65504: the average
    # is in range, and torch's AVG (values divided, then summed) gives it
    for n in (3, 5000):
        t = torch.full((n,), 60000.0, dtype=torch.float16)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        check("all_reduce float16 AVG near 65504 n=%d" % n,
              bool(torch.isfinite(t).all()) and
              bool(((t.double() - 60000.0).abs() <= 64).all()), "got %s" % t[:4])
        u = torch.full((2 * SIZE,), 60000.0, dtype=torch.float16)
        out = torch.zeros(2, dtype=torch.float16)
        dist.reduce_scatter_tensor(out, u, op=dist.ReduceOp.AVG)
        check("reduce_scatter_tensor float16 AVG near 65504",
              bool(((out.double() - 60000.0).abs() <= 64).all()) and
              bool((u == 60000.0).all()), "got %s (input %s)" % (out, u[:2]))
        r = torch.full((n,), 60000.0, dtype=torch.float16)
        dist.reduce(r, dst=SIZE - 1, op=dist.ReduceOp.AVG)
        check("reduce float16 AVG near 65504 n=%d" % n,
              bool(((r.double() - 60000.0).abs() <= 64).all()),
              "got %s (non-root tensors are left as they were)" % r[:4])
    # in a non-contiguous view: the result there, the rest of the base untouched
    for n in (5, 3000):
        v, base = noncontig(data(RANK, n, torch.float32))
        dist.all_reduce(v)
        check("all_reduce non-contiguous n=%d" % n,
              same(v, expected_reduce(dist.ReduceOp.SUM, n, torch.float32)) and
              bool((base[:, 1] == 99).all()))
    # a 2-D, transposed tensor
    m = data(RANK, 12, torch.int64).view(3, 4).t()
    dist.all_reduce(m)
    check("all_reduce transposed",
          same(m, expected_reduce(dist.ReduceOp.SUM, 12, torch.int64).view(3, 4).t()))


def test_coalesced():
    warnings.filterwarnings("ignore", message=".*all_reduce_coalesced will be deprecated")
    ts = [data(RANK, n, torch.int32, salt=n) for n in (3, 0, 1000)]
    dist.all_reduce_coalesced(ts)
    check("all_reduce_coalesced", all(
        same(t, expected_reduce(dist.ReduceOp.SUM, n, torch.int32, salt=n))
        for t, n in zip(ts, (3, 0, 1000))))


def test_broadcast(gloo):
    for root in range(SIZE):
        for dtype in (torch.int8, torch.float64, torch.bfloat16, torch.bool, torch.int16,
                      torch.complex64):
            for n in (0, 1, 1000) + (() if QUICK else (300001,)):
                src = data(root, n, dtype if dtype != torch.complex64 else torch.float32)
                src = src.to(dtype)
                t = src.clone() if RANK == root else torch.zeros_like(src)
                dist.broadcast(t, src=root)
                check("broadcast root=%d %s n=%d" % (root, dtype, n), same(t, src))
        v, base = noncontig(data(RANK, 33, torch.int32))
        dist.broadcast(v, src=root)
        check("broadcast non-contiguous root=%d" % root,
              same(v, data(root, 33, torch.int32)) and bool((base[:, 1] == 99).all()))
        g = data(RANK, 100, torch.int64)
        dist.broadcast(g, src=root, group=gloo)
        check("broadcast vs gloo", same(g, data(root, 100, torch.int64)))


def test_reduce():
    for root in range(SIZE):
        for dtype in (torch.int64, torch.float16, torch.uint8):
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):
                t = data(RANK, 999, dtype)
                dist.reduce(t, dst=root, op=op)
                want = expected_reduce(op, 999, dtype) if RANK == root else data(RANK, 999, dtype)
                check("reduce root=%d %s %s" % (root, dtype, opname(op)), same(t, want),
                      "(non-root tensors are left as they were)" if RANK != root else "")


def sparse_input(r, sparse_dim, dtype):
    """Rank r's sparse COO tensor of shape (6, 4), sparse in its first
    sparse_dim dimensions: nonzeros where ranks overlap and where they do
    not, listed twice on one rank (uncoalesced), none at all on rank 1."""
    if r == 1:
        idx = torch.zeros((sparse_dim, 0), dtype=torch.int64)
    else:
        rows = torch.tensor([r % 6, (r + 2) % 6, 5, 5])
        idx = rows.view(1, -1) if sparse_dim == 1 else torch.stack([rows, rows % 4])
    k = idx.shape[1]
    shape = (k,) if sparse_dim == 2 else (k, 4)
    vals = (torch.arange(k * (1 if sparse_dim == 2 else 4)).view(shape) + r + 1).to(dtype)
    return torch.sparse_coo_tensor(idx, vals, (6, 4))


def test_sparse(gloo):
    """all_reduce of sparse tensors sums them (DDP's sparse gradients); torch
    documents no other op for them, gloo serves SUM only."""
    for sparse_dim in (1, 2):
        for dtype in (torch.float32, torch.int64, torch.float64):
            t = sparse_input(RANK, sparse_dim, dtype)
            want = sum(sparse_input(r, sparse_dim, dtype).to_dense() for r in range(SIZE))
            dist.all_reduce(t)
            check("sparse all_reduce sdim=%d %s" % (sparse_dim, dtype),
                  t.is_sparse and same(t.to_dense(), want))
            if dtype == torch.float32:
                g = sparse_input(RANK, sparse_dim, dtype)
                dist.all_reduce(g, group=gloo)
                check("sparse all_reduce sdim=%d vs gloo" % sparse_dim,
                      same(t.to_dense(), g.to_dense()))
    w = dist.all_reduce(sparse_input(RANK, 1, torch.float32), async_op=True)
    w.wait()
    check("sparse all_reduce async", same(w.result()[0].to_dense(), sum(
        sparse_input(r, 1, torch.float32).to_dense() for r in range(SIZE))))
    raises("sparse all_reduce MAX", ValueError, ["sparse", "ReduceOp.SUM"],
           lambda: dist.all_reduce(sparse_input(RANK, 1, torch.float32), op=dist.ReduceOp.MAX))
    # one rank's shape differs: every rank refuses it, none waits
    bad = torch.sparse_coo_tensor(torch.zeros((1, 0), dtype=torch.int64), torch.zeros(0, 4),
                                  (7 if RANK == SIZE - 1 else 6, 4))
    if SIZE > 1:
        raises("sparse all_reduce shapes differ", ValueError, ["differs from rank 0"],
               lambda: dist.all_reduce(bad))


def test_all_gather(gloo):
    for dtype in (torch.int32, torch.bool, torch.float16):
        for n in SIZES:
            out = [torch.zeros(n, dtype=dtype) for _ in range(SIZE)]
            dist.all_gather(out, data(RANK, n, dtype))
            check("all_gather %s n=%d rank order" % (dtype, n),
                  all(same(out[r], data(r, n, dtype)) for r in range(SIZE)))
    # the seed demo: each rank contributes its rank; the list is in rank order
    out = [torch.zeros(1, dtype=torch.int64) for _ in range(SIZE)]
    dist.all_gather(out, torch.tensor([RANK * 10]))
    g = [torch.zeros(1, dtype=torch.int64) for _ in range(SIZE)]
    dist.all_gather(g, torch.tensor([RANK * 10]), group=gloo)
    check("all_gather rank order vs gloo", [int(x) for x in out] == [int(x) for x in g] ==
          [r * 10 for r in range(SIZE)])
    # non-contiguous outputs and input
    views = [noncontig(torch.zeros(17, dtype=torch.int64)) for _ in range(SIZE)]
    src, _ = noncontig(data(RANK, 17, torch.int64))
    dist.all_gather([v for v, _ in views], src)
    check("all_gather non-contiguous", all(
        same(views[r][0], data(r, 17, torch.int64)) and bool((views[r][1][:, 1] == 99).all())
        for r in range(SIZE)))
    # into one tensor (_allgather_base), 2-D output
    for n in (0, 5, 4096):
        out = torch.zeros(SIZE, n, dtype=torch.float32)
        dist.all_gather_into_tensor(out, data(RANK, n, torch.float32))
        check("all_gather_into_tensor n=%d" % n,
              all(same(out[r], data(r, n, torch.float32)) for r in range(SIZE)))
        # gloo 1.13 has no _allgather_base: its list form (and it divides by
        # zero on empty tensors: SIGFPE)
        if n == 0:
            continue
        g = [torch.zeros(n, dtype=torch.float32) for _ in range(SIZE)]
        dist.all_gather(g, data(RANK, n, torch.float32), group=gloo)
        check("all_gather_into_tensor vs gloo n=%d" % n, same(out.view(-1), torch.cat(g)))
    # in place: the input is this rank's block of the output
    out = torch.zeros(SIZE * 10, dtype=torch.int32)
    mine = out.narrow(0, RANK * 10, 10)
    mine.copy_(data(RANK, 10, torch.int32))
    dist.all_gather_into_tensor(out, mine)
    check("all_gather_into_tensor in place",
          same(out, torch.cat([data(r, 10, torch.int32) for r in range(SIZE)])))
    # all_gather_coalesced (deprecated, served by gloo): a list per rank, of
    # tensors of different shapes (one 2-D, one empty, one non-contiguous
    # output), outputs[r] gets rank r's list; the same through gloo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation warning
        for group in (None, gloo):
            ins = [data(RANK, 6, torch.float64).view(2, 3), torch.zeros(0, dtype=torch.float64),
                   data(RANK, 5, torch.float64, salt=1)]
            outs = [[torch.zeros(2, 3, dtype=torch.float64), torch.zeros(0, dtype=torch.float64),
                     noncontig(torch.zeros(5, dtype=torch.float64))[0]] for _ in range(SIZE)]
            dist.all_gather_coalesced(outs, ins, group=group)
            check("all_gather_coalesced%s" % (" (gloo)" if group else ""), all(
                same(outs[r][0], data(r, 6, torch.float64).view(2, 3)) and
                outs[r][1].numel() == 0 and same(outs[r][2], data(r, 5, torch.float64, salt=1))
                for r in range(SIZE)))
        raises("all_gather_coalesced wrong list length", ValueError, ["output list"],
               lambda: dist.all_gather_coalesced(
                   [[torch.zeros(3)], [torch.zeros(3), torch.zeros(1)]] +
                   [[torch.zeros(3)]] * (SIZE - 2), [torch.zeros(3)]))
    raises("all_gather_into_tensor wrong size", ValueError, ["elements"],
           lambda: dist.all_gather_into_tensor(torch.zeros(SIZE * 3 + 1), torch.zeros(3)))
    raises("all_gather wrong list length", ValueError, ["output list"],
           lambda: dist.all_gather([torch.zeros(3)] * (SIZE + 1), torch.zeros(3)))


def test_reduce_scatter():
    for dtype in (torch.int64, torch.bfloat16, torch.float32):
        for op in (dist.ReduceOp.SUM, dist.ReduceOp.MIN):
            for n in (0, 1, 513):
                ins = [data(RANK, n, dtype, salt=j) for j in range(SIZE)]
                out = torch.zeros(n, dtype=dtype)
                dist.reduce_scatter(out, ins, op=op)
                check("reduce_scatter %s %s n=%d" % (dtype, opname(op), n),
                      same(out, expected_reduce(op, n, dtype, salt=RANK)))
                flat = torch.cat(ins)
                out2 = torch.zeros(n, dtype=dtype)
                dist.reduce_scatter_tensor(out2, flat, op=op)
                check("reduce_scatter_tensor %s %s n=%d" % (dtype, opname(op), n), same(out2, out))
    v, base = noncontig(torch.zeros(9, dtype=torch.int32))
    dist.reduce_scatter(v, [data(RANK, 9, torch.int32, salt=j) for j in range(SIZE)])
    check("reduce_scatter non-contiguous output",
          same(v, expected_reduce(dist.ReduceOp.SUM, 9, torch.int32, salt=RANK)) and
          bool((base[:, 1] == 99).all()))
    raises("reduce_scatter_tensor wrong size", ValueError, ["elements"],
           lambda: dist.reduce_scatter_tensor(torch.zeros(3), torch.zeros(SIZE * 3 + 2)))


def a2a_value(src, dst, k):
    return src * 1000 + dst * 10 + k


def test_all_to_all(gloo):
    # the seed demo: block j of rank r's input goes to rank j, in rank order
    for per in (1, 3, 0) + (() if QUICK else (70000,)):
        inp = torch.tensor([a2a_value(RANK, j, k % 10) for j in range(SIZE) for k in range(per)],
                           dtype=torch.int64)
        out = torch.empty_like(inp)
        dist.all_to_all_single(out, inp)
        want = torch.tensor([a2a_value(j, RANK, k % 10) for j in range(SIZE) for k in range(per)],
                            dtype=torch.int64)
        check("all_to_all_single equal per=%d" % per, same(out, want))
    # uneven splits (rows of a 2-D tensor), zeros among them: rank r sends
    # (r + j) % 3 rows to rank j
    cols = 4

    def rows(src, dst):
        return (src + dst) % 3

    in_splits = [rows(RANK, j) for j in range(SIZE)]
    out_splits = [rows(j, RANK) for j in range(SIZE)]
    inp = torch.cat([torch.full((rows(RANK, j), cols), a2a_value(RANK, j, 0), dtype=torch.float32)
                     for j in range(SIZE)]) if sum(in_splits) else torch.zeros(0, cols)
    out = torch.full((sum(out_splits), cols), -1.0)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = torch.cat([torch.full((rows(j, RANK), cols), a2a_value(j, RANK, 0),
                                 dtype=torch.float32) for j in range(SIZE)]) \
        if sum(out_splits) else torch.zeros(0, cols)
    check("all_to_all_single uneven", same(out, want), "got %s want %s" % (out, want))
    g = torch.full((sum(out_splits), cols), -1.0)
    dist.all_to_all_single(g, inp, out_splits, in_splits, group=gloo)
    check("all_to_all_single uneven vs gloo", same(out, g))
    # list form, blocks of their own sizes and dtype int8
    ins = [torch.full((RANK + j + 1,), (RANK * 4 + j) % 100, dtype=torch.int8)
           for j in range(SIZE)]
    outs = [torch.zeros(j + RANK + 1, dtype=torch.int8) for j in range(SIZE)]
    dist.all_to_all(outs, ins)
    check("all_to_all lists", all(
        same(outs[j], torch.full((j + RANK + 1,), (j * 4 + RANK) % 100, dtype=torch.int8))
        for j in range(SIZE)))
    raises("all_to_all_single bad splits", ValueError, ["split sizes add up"],
           lambda: dist.all_to_all_single(torch.zeros(SIZE), torch.zeros(SIZE),
                                          [1] * SIZE, [2] * SIZE))


def test_gather_scatter():
    for root in range(SIZE):
        out = [torch.zeros(6, dtype=torch.int32) for _ in range(SIZE)] if RANK == root else None
        dist.gather(data(RANK, 6, torch.int32), out, dst=root)
        if RANK == root:
            check("gather root=%d" % root,
                  all(same(out[r], data(r, 6, torch.int32)) for r in range(SIZE)))
        t = torch.zeros(7, dtype=torch.float64)
        src = [data(j, 7, torch.float64, salt=root) for j in range(SIZE)] if RANK == root else None
        dist.scatter(t, src, src=root)
        check("scatter root=%d" % root, same(t, data(RANK, 7, torch.float64, salt=root)))


def test_send_recv():
    if SIZE < 2:
        return
    right, left = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    # a ring; the receive posted first, the send waited for first
    for n in (0, 10, 200000 if not QUICK else 20000):
        r = torch.zeros(n, dtype=torch.int64)
        rw = dist.irecv(r, src=left, tag=7)
        sw = dist.isend(data(RANK, n, torch.int64), dst=right, tag=7)
        sw.wait()
        rw.wait()
        check("isend/irecv ring n=%d" % n, same(r, data(left, n, torch.int64)))
    # two tags between one pair, received in the other order
    if RANK == 0:
        dist.send(torch.tensor([1]), dst=1, tag=1)
        dist.send(torch.tensor([2]), dst=1, tag=2)
    elif RANK == 1:
        a, b = torch.zeros(1, dtype=torch.int64), torch.zeros(1, dtype=torch.int64)
        wb = dist.irecv(b, src=0, tag=2)
        wa = dist.irecv(a, src=0, tag=1)
        wb.wait()
        wa.wait()
        check("recv by tag", int(a) == 1 and int(b) == 2)
    # in the same order with one tag
    if RANK == 0:
        for k in range(5):
            dist.send(torch.tensor([k]), dst=1)
    elif RANK == 1:
        got = []
        for _ in range(5):
            t = torch.zeros(1, dtype=torch.int64)
            dist.recv(t, src=0)
            got.append(int(t))
        check("recv order", got == list(range(5)), str(got))
    # works finish in the order their requests do, not the order posted:
    # rank 0's receive can only finish after a barrier posted later
    if RANK == 0:
        t = torch.zeros(1, dtype=torch.int64)
        w = dist.irecv(t, src=1, tag=9)
        dist.barrier()
        w.wait()
        check("receive finished after a later barrier", int(t) == 77)
    else:
        dist.barrier()
        if RANK == 1:
            dist.send(torch.tensor([77]), dst=0, tag=9)
    # into a non-contiguous tensor
    if RANK == 0:
        dist.send(torch.arange(8, dtype=torch.int32), dst=1)
    elif RANK == 1:
        v, base = noncontig(torch.zeros(8, dtype=torch.int32))
        dist.recv(v, src=0)
        check("recv non-contiguous", same(v, torch.arange(8, dtype=torch.int32)) and
              bool((base[:, 1] == 99).all()))
    # batch_isend_irecv: both directions at once
    ops = [dist.P2POp(dist.isend, torch.tensor([RANK]), right),
           dist.P2POp(dist.irecv, torch.zeros(1, dtype=torch.int64), left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    check("batch_isend_irecv", int(ops[1].tensor) == left)
    raises("recv from any source", RuntimeError, ["any source", "src"],
           lambda: dist.recv(torch.zeros(1)))
    raises("send bad tag", ValueError, ["tag"],
           lambda: dist.send(torch.zeros(1), dst=right, tag=-3))
    dist.barrier()


def test_async():
    # many outstanding, waited for in reverse order; futures with callbacks
    n = 20
    ts = [data(RANK, 100 + k, torch.float32) for k in range(n)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    for w in reversed(works):
        w.wait()
    check("async reverse wait", all(
        same(t, expected_reduce(dist.ReduceOp.SUM, 100 + k, torch.float32))
        for k, t in enumerate(ts)))
    t = data(RANK, 50, torch.int64)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    check("get_future().then", same(fut.wait(), expected_reduce(dist.ReduceOp.SUM, 50,
                                                                torch.int64) * 2))
    # a callback that runs a collective and waits for it (torch's PowerSGD
    # hook does): its completion must not queue behind the callback
    def inner(f):
        x = torch.full((3,), 2.0)
        dist.all_reduce(x)
        y = torch.ones(2)
        dist.all_reduce(y, async_op=True).get_future().wait()
        return f.value()[0] + x + y.sum()
    fut = dist.all_reduce(torch.ones(3), async_op=True).get_future().then(inner)
    check("then() waiting for collectives", same(fut.wait(), torch.full((3,), 5.0 * SIZE)),
          str(fut.value()))
    # completes without wait: is_completed turns true on its own
    t = data(RANK, 10, torch.int32)
    w = dist.all_reduce(t, async_op=True)
    deadline = time.time() + 30
    while not w.is_completed() and time.time() < deadline:
        time.sleep(0.001)
    check("is_completed without wait", w.is_completed() and w.wait())
    # result() gives the output tensors
    out = [torch.zeros(2, dtype=torch.int64) for _ in range(SIZE)]
    w = dist.all_gather(out, torch.tensor([RANK, RANK]), async_op=True)
    w.wait()
    check("result()", [int(x[0]) for x in w.result()] == list(range(SIZE)))


def test_subgroups():
    # every rank calls new_group for every group, members or not
    evens = dist.new_group([r for r in range(SIZE) if r % 2 == 0], backend="xcoll")
    odds = dist.new_group([r for r in range(SIZE) if r % 2 == 1], backend="xcoll") \
        if SIZE > 1 else None
    mine = evens if RANK % 2 == 0 else odds
    members = [r for r in range(SIZE) if r % 2 == RANK % 2]
    t = torch.tensor([RANK + 1])
    dist.all_reduce(t, group=mine)
    check("subgroup all_reduce", int(t) == sum(r + 1 for r in members), str(int(t)))
    out = [torch.zeros(1, dtype=torch.int64) for _ in members]
    dist.all_gather(out, torch.tensor([RANK]), group=mine)
    check("subgroup all_gather (group rank order)", [int(x) for x in out] == members)
    # broadcast from the group's last member, named by its global rank
    b = torch.tensor([RANK])
    dist.broadcast(b, src=members[-1], group=mine)
    check("subgroup broadcast", int(b) == members[-1])
    # the world group still works after, interleaved with the subgroup
    w1 = dist.all_reduce(torch.ones(3), async_op=True, group=mine)
    t = torch.ones(3)
    dist.all_reduce(t)
    w1.wait()
    check("world after subgroup", same(t, torch.full((3,), float(SIZE))))
    check("subgroup backend", dist.get_backend(mine) == "xcoll")


def test_destroy_with_callback():
    """Destroying a group while a future's Python callback is pending:
    the callback runs, nothing deadlocks on the GIL."""
    g = dist.new_group(list(range(SIZE)), backend="xcoll")
    seen = []

    def slow(f):
        time.sleep(0.2)
        seen.append(int(f.value()[0][0]))
        return f.value()

    fut = dist.all_reduce(torch.ones(4, dtype=torch.int64), group=g,
                          async_op=True).get_future().then(slow)
    dist.destroy_process_group(g)
    del g
    fut.wait()
    check("destroy with a pending callback", seen == [SIZE], str(seen))


def test_refusals():
    raises("int16 reduction", TypeError, ["cannot reduce", "Short"],
           lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16)))
    # complex SUM is torch's own: it reduces the float view
    c = torch.complex(data(RANK, 5, torch.float32), data(RANK, 5, torch.float32, salt=1))
    dist.all_reduce(c)
    check("complex sum", same(c, torch.complex(
        expected_reduce(dist.ReduceOp.SUM, 5, torch.float32),
        expected_reduce(dist.ReduceOp.SUM, 5, torch.float32, salt=1))))
    raises("BAND on float", ValueError, ["BAND", "not supported"],
           lambda: dist.all_reduce(torch.zeros(3), op=dist.ReduceOp.BAND))
    raises("AVG on bool", ValueError, ["AVG"],
           lambda: dist.all_reduce(torch.zeros(3, dtype=torch.bool), op=dist.ReduceOp.AVG))
    raises("sparse tensor but in all_reduce", ValueError, ["dense"],
           lambda: dist.broadcast(torch.zeros(3).to_sparse(), 0))
    # the group still works after refusals (nothing was posted)
    t = torch.ones(2)
    dist.all_reduce(t)
    check("after refusals", same(t, torch.full((2,), float(SIZE))))


def test_timeout():
    """A rank that skips a collective: the others raise within the timeout."""
    if SIZE < 2:
        return
    tmo = 3.0
    g = dist.new_group(list(range(SIZE)), timeout=datetime.timedelta(seconds=tmo),
                       backend="xcoll")
    t = torch.ones(4)
    dist.all_reduce(t, group=g)
    check("short-timeout group works", same(t, torch.full((4,), float(SIZE))))
    if RANK != 0:
        t0 = time.time()
        raises("skipped collective raises", RuntimeError, ["timed out"],
               lambda: dist.all_reduce(torch.ones(4), group=g))
        took = time.time() - t0
        check("raised within the timeout", tmo - 0.5 <= took <= tmo + 15, "took %.1f s" % took)
    # the world group was not involved: it still works
    dist.barrier()


def main():
    dist.init_process_group("xcoll", rank=RANK, world_size=SIZE,
                            timeout=datetime.timedelta(seconds=120))
    check("backend name", dist.get_backend() == "xcoll")
    gloo = dist.new_group(list(range(SIZE)), backend="gloo")
    t0 = time.time()
    for test in (lambda: test_all_reduce(gloo), test_coalesced, lambda: test_broadcast(gloo),
                 test_reduce, lambda: test_all_gather(gloo), test_reduce_scatter,
                 lambda: test_all_to_all(gloo), test_gather_scatter, test_send_recv, test_async,
                 lambda: test_sparse(gloo),
                 test_subgroups, test_destroy_with_callback, test_refusals, test_timeout):
        test()
        dist.barrier()
    total = torch.tensor([failures])
    dist.all_reduce(total, group=gloo)
    if RANK == 0:
        print("test_torch: %d ranks, %d checks per rank, %d failures in all, %.1f s" %
              (SIZE, checks, int(total), time.time() - t0), flush=True)
    dist.destroy_process_group()
    sys.exit(1 if int(total) else 0)


main()

// collectives.cpp - each torch.distributed collective as one nonblocking
// xcoll call on the tensor's memory.
//
// A contiguous CPU tensor is handed to xcoll as it is. Anything else is
// staged: a non-contiguous input is copied into a contiguous one before
// the call, a non-contiguous output is written into a contiguous buffer
// and copied back when the call finishes, and the list forms (all_gather
// into a list, reduce_scatter from one, all_to_all of lists) go through
// one flat buffer, since an xcoll collective takes one buffer per side.
// Data movement needs no element type: it moves bytes, so every dtype
// (bool, int16, complex...) works there; reductions map the dtype and the
// op onto xcoll's and refuse, with the reason, what xcoll cannot reduce.
// Per-call timeouts (opts.timeout) are not xcoll's: the group's timeout,
// set at init_process_group, covers every call.
#include "backend.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>

namespace xcoll_torch {
namespace {

// What torch calls this backend in errors (each message starts so).
#define XT_WHO "xcoll backend: "

void check_tensor(const at::Tensor& t, const char* what) {
  TORCH_CHECK_VALUE(t.defined(), XT_WHO, what, ": an undefined tensor");
  TORCH_CHECK_VALUE(t.device().is_cpu(), XT_WHO, what, ": a tensor on ", t.device(),
                    "; this backend moves CPU tensors only");
  TORCH_CHECK_VALUE(t.layout() == at::kStrided, XT_WHO, what, ": a ", t.layout(),
                    " tensor; only dense (strided) tensors are supported");
}

const at::Tensor& only_tensor(const std::vector<at::Tensor>& ts, const char* what) {
  TORCH_CHECK_VALUE(ts.size() == 1, XT_WHO, what, " takes one tensor per process, got ",
                    ts.size());
  check_tensor(ts[0], what);
  return ts[0];
}

void check_root(const Group& g, int64_t root, const char* what) {
  TORCH_CHECK_VALUE(root >= 0 && root < g.size(), XT_WHO, what, ": root rank ", root,
                    " is outside the group's ranks 0..", g.size() - 1);
}

void check_like(const at::Tensor& t, const at::Tensor& like, const char* what,
                const char* which) {
  check_tensor(t, what);
  TORCH_CHECK_TYPE(t.scalar_type() == like.scalar_type(), XT_WHO, what, ": ", which, " is ",
                   t.scalar_type(), ", the input ", like.scalar_type());
  TORCH_CHECK_VALUE(t.numel() == like.numel(), XT_WHO, what, ": ", which, " has ", t.numel(),
                    " elements, the input ", like.numel());
}

// The one-tensor forms (all_gather_into_tensor, reduce_scatter_tensor):
// whole holds one block per rank, each the size of block.
void check_blocks(const Group& g, const at::Tensor& whole, const char* whole_name,
                  const at::Tensor& block, const char* block_name, const char* what) {
  check_tensor(whole, what);
  check_tensor(block, what);
  TORCH_CHECK_TYPE(whole.scalar_type() == block.scalar_type(), XT_WHO, what, ": the ",
                   whole_name, " is ", whole.scalar_type(), ", the ", block_name, " ",
                   block.scalar_type());
  TORCH_CHECK_VALUE(whole.numel() == (int64_t)g.size() * block.numel(), XT_WHO, what, ": the ",
                    whole_name, " has ", whole.numel(), " elements, which is not ", g.size(),
                    " ranks times the ", block_name, "'s ", block.numel());
}

size_t nbytes(const at::Tensor& t) { return (size_t)t.numel() * t.element_size(); }

// xcoll never reads or writes through a pointer for 0 bytes, but refuses
// NULL; an empty tensor may have no storage.
void* mem(const at::Tensor& t) {
  static char nothing;
  void* p = t.data_ptr();
  return p != nullptr ? p : &nothing;
}

// The tensor xcoll reads for t.
at::Tensor dense_in(const at::Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }

// The tensor xcoll writes for t (its input too, for in-place calls).
at::Tensor dense_out(const at::Tensor& t, bool keep_contents) {
  if (t.is_contiguous())
    return t;
  return keep_contents ? t.contiguous() : at::empty(t.sizes(), t.options());
}

// What to run when the call finished: copy the staged result into t.
std::function<void()> copy_into(const at::Tensor& t, const at::Tensor& staged) {
  if (t.is_same(staged))
    return nullptr;
  return [t, staged]() mutable { t.copy_(staged); };
}

// One flat tensor of the list, in order (each element flattened).
at::Tensor flatten(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> flat;
  flat.reserve(ts.size());
  for (const auto& t : ts)
    flat.push_back(t.reshape({-1}));
  return at::cat(flat);
}

// Copies consecutive pieces of flat into the tensors of the list.
std::function<void()> unflatten_into(const std::vector<at::Tensor>& ts, const at::Tensor& flat) {
  return [ts, flat]() mutable {
    int64_t off = 0;
    for (auto& t : ts) {
      t.copy_(flat.narrow(0, off, t.numel()).view(t.sizes()));
      off += t.numel();
    }
  };
}

xcoll_dtype_t reduce_dtype(const at::Tensor& t, const char* what) {
  switch (t.scalar_type()) {
    case at::kChar: return XCOLL_INT8;
    case at::kByte: return XCOLL_UINT8;
    case at::kBool: return XCOLL_UINT8; // 0 and 1: see reduce_op
    case at::kInt: return XCOLL_INT32;
    case at::kLong: return XCOLL_INT64;
    case at::kHalf: return XCOLL_FLOAT16;
    case at::kBFloat16: return XCOLL_BFLOAT16;
    case at::kFloat: return XCOLL_FLOAT32;
    case at::kDouble: return XCOLL_FLOAT64;
    default: break;
  }
  TORCH_CHECK_TYPE(false, XT_WHO, what, " cannot reduce ", t.scalar_type(),
                   " tensors: reductions take int8, uint8, int32, int64, float16, bfloat16, "
                   "float32, float64 and bool");
}

const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "an unknown op";
  }
}

// Bool tensors reduce as NCCL's do: SUM is a logical or (MAX of 0 and 1),
// PRODUCT a logical and (MIN); AVG has no bool meaning.
// ReduceOp.AVG on floating tensors: torch documents it as dividing the
// values by the group's size before summing (NCCL's premultiplied sum), so
// a float16 average of values whose sum passes 65504 stays finite, where
// xcoll's AVG divides the sum (xcoll.h): SUM, with *divide_first set.
// Integers keep xcoll's AVG, the truncated quotient of the sum, as NCCL
// computes it.
xcoll_op_t reduce_op(const c10d::ReduceOp& rop, const at::Tensor& t, const char* what,
                     bool* divide_first) {
  const bool is_bool = t.scalar_type() == at::kBool;
  const bool is_float = at::isFloatingType(t.scalar_type());
  *divide_first = rop.op_ == c10d::ReduceOp::AVG && is_float;
  if (*divide_first)
    return XCOLL_SUM;
  switch (rop.op_) {
    case c10d::ReduceOp::SUM: return is_bool ? XCOLL_MAX : XCOLL_SUM;
    case c10d::ReduceOp::PRODUCT: return is_bool ? XCOLL_MIN : XCOLL_PROD;
    case c10d::ReduceOp::MIN: return XCOLL_MIN;
    case c10d::ReduceOp::MAX: return XCOLL_MAX;
    case c10d::ReduceOp::AVG:
      if (!is_bool)
        return XCOLL_AVG;
      break;
    case c10d::ReduceOp::BAND:
      if (!is_float)
        return XCOLL_BAND;
      break;
    case c10d::ReduceOp::BOR:
      if (!is_float)
        return XCOLL_BOR;
      break;
    case c10d::ReduceOp::BXOR:
      if (!is_float)
        return XCOLL_BXOR;
      break;
    default: break;
  }
  TORCH_CHECK_VALUE(false, XT_WHO, what, ": ReduceOp.", op_name(rop.op_), " on ",
                    t.scalar_type(), " tensors is not supported (SUM, AVG, PRODUCT, MIN and MAX "
                    "on every reducible dtype; BAND, BOR, BXOR on integers and bool)");
}

// The input of a premultiplied AVG: x divided in place where x is the
// backend's own or is overwritten by the result anyway, else a new tensor.
at::Tensor premultiplied(const Group& g, at::Tensor x, bool in_place) {
  const double n = (double)g.size();
  return in_place ? x.div_(n) : x.div(n);
}

using Start = std::function<xcoll_status_t(xcoll_comm_t, xcoll_request_t*)>;

// all_reduce of a sparse COO tensor (DDP's gradients of a sparse
// embedding), as gloo does it: every rank's nonzeros gathered, then
// summed where their indices meet. Two calls: a header per rank (its
// shape, dtype, nonzero count) in one blocking allgather, which every rank
// checks alike (so a mismatch throws on all of them, none waits), then
// one allgatherv of each rank's indices and values packed side by side.
// Every rank sums the same concatenation in the same order: identical
// results. SUM only (gloo's rule: the others have no sparse meaning here).
constexpr int64_t kSparseDims = 16; // dimensions the header holds
c10::intrusive_ptr<c10d::Work> sparse_allreduce(Group& g, std::vector<at::Tensor>& tensors,
                                                const c10d::AllreduceOptions& opts) {
  const char* what = "all_reduce (sparse)";
  at::Tensor t = tensors[0];
  TORCH_CHECK_VALUE(opts.reduceOp.op_ == c10d::ReduceOp::SUM, XT_WHO, what, ": ReduceOp.",
                    op_name(opts.reduceOp.op_),
                    " is not supported on sparse tensors (ReduceOp.SUM is)");
  at::Tensor in = t.coalesce();
  const int64_t sdim = in.sparse_dim(), nnz = in._nnz();
  at::Tensor idx = in._indices().t().contiguous(); // nnz x sdim: a rank's rows end to end
  at::Tensor val = in._values().contiguous();      // nnz x the dense dims
  int64_t row = val.element_size(); // bytes per nonzero: its indices, then its values
  for (int64_t d = 1; d < val.dim(); d++)
    row *= val.size(d);
  row += sdim * 8;
  // the header: dims, sparse dims, dtype, nonzeros, bytes per nonzero, sizes
  std::vector<int64_t> mine(5 + kSparseDims, -1);
  mine[0] = t.dim(), mine[1] = sdim, mine[2] = (int64_t)t.scalar_type(), mine[3] = nnz;
  mine[4] = row;
  for (int64_t d = 0; d < t.dim() && d < kSparseDims; d++)
    mine[5 + d] = t.size(d);
  const size_t hn = mine.size();
  std::vector<int64_t> all(hn * g.size());
  g.run(what, [&](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallgather(mine.data(), all.data(), hn, XCOLL_INT64, c, nullptr, r);
  });
  auto counts = std::make_shared<std::vector<size_t>>(g.size());
  auto displs = std::make_shared<std::vector<size_t>>(g.size());
  size_t total = 0;
  for (int r = 0; r < g.size(); r++) {
    const int64_t* h = &all[hn * r];
    // the same on every rank, since every rank checks every header
    TORCH_CHECK_VALUE(h[0] <= kSparseDims, XT_WHO, what, ": rank ", r, "'s tensor has ", h[0],
                      " dimensions; at most ", kSparseDims);
    TORCH_CHECK_VALUE(std::equal(h, h + 3, &all[0]) && h[4] == all[4] &&
                          std::equal(h + 5, h + hn, &all[5]),
                      XT_WHO, what, ": rank ", r, "'s tensor differs from rank 0's in shape, "
                      "sparse dimensions or dtype");
    (*counts)[r] = (size_t)(h[3] * h[4]);
    (*displs)[r] = total;
    total += (*counts)[r];
  }
  // checked after the headers, so that every rank refuses it alike
  TORCH_CHECK_TYPE(at::isFloatingType(t.scalar_type()) ||
                       (at::isIntegralType(t.scalar_type(), false) &&
                        t.scalar_type() != at::kBool),
                   XT_WHO, what, ": ", t.scalar_type(), " tensors are not supported; integer "
                   "and floating ones are");
  at::Tensor packed = at::empty({(int64_t)(nnz * row)}, at::kByte);
  if (nnz > 0) {
    packed.narrow(0, 0, nnz * sdim * 8).copy_(idx.view(-1).view(at::kByte));
    packed.narrow(0, nnz * sdim * 8, nnz * (row - sdim * 8)).copy_(val.view(-1).view(at::kByte));
  }
  at::Tensor gathered = at::empty({(int64_t)total}, at::kByte);
  void *pin = mem(packed), *pout = mem(gathered);
  const size_t n = nbytes(packed);
  auto w = g.work(c10d::OpType::ALLREDUCE, "xcoll:all_reduce", tensors, {packed, gathered});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallgatherv(pin, n, pout, counts->data(), displs->data(), XCOLL_UINT8, c,
                             nullptr, r);
  }, [t, gathered, counts, displs, sdim, row, val]() mutable {
    std::vector<at::Tensor> idxs, vals;
    for (size_t r = 0; r < counts->size(); r++) {
      const int64_t k = (int64_t)(*counts)[r] / row, off = (int64_t)(*displs)[r];
      // a rank's piece starts at any byte: copied out before it is seen
      // as wider elements, which must be aligned
      idxs.push_back(
          gathered.narrow(0, off, k * sdim * 8).clone().view(at::kLong).view({k, sdim}));
      std::vector<int64_t> shape = val.sizes().vec();
      shape[0] = k;
      vals.push_back(gathered.narrow(0, off + k * sdim * 8, k * (row - sdim * 8))
                         .clone().view(val.scalar_type()).view(shape));
    }
    at::Tensor sum = at::sparse_coo_tensor(at::cat(idxs).t(), at::cat(vals), t.sizes(),
                                           t.options()).coalesce();
    t.copy_(sum);
  });
}

}  // namespace

c10::intrusive_ptr<c10d::Work> allreduce(Group& g, std::vector<at::Tensor>& tensors,
                                         const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].defined() && tensors[0].device().is_cpu() &&
      tensors[0].layout() == at::kSparse)
    return sparse_allreduce(g, tensors, opts);
  const at::Tensor& t = only_tensor(tensors, "all_reduce");
  const xcoll_dtype_t dt = reduce_dtype(t, "all_reduce");
  bool pre;
  const xcoll_op_t op = reduce_op(opts.reduceOp, t, "all_reduce", &pre);
  at::Tensor buf = dense_out(t, true);
  if (pre)
    premultiplied(g, buf, true);
  void* p = mem(buf);
  const size_t n = (size_t)buf.numel();
  auto w = g.work(c10d::OpType::ALLREDUCE, "xcoll:all_reduce", tensors, {buf});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallreduce(XCOLL_IN_PLACE, p, n, dt, op, c, nullptr, r);
  }, copy_into(t, buf));
}

c10::intrusive_ptr<c10d::Work> allreduce_coalesced(Group& g, std::vector<at::Tensor>& tensors,
                                                   const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK_VALUE(!tensors.empty(), XT_WHO "all_reduce_coalesced: no tensors");
  for (const auto& t : tensors) {
    check_tensor(t, "all_reduce_coalesced");
    TORCH_CHECK_TYPE(t.scalar_type() == tensors[0].scalar_type(),
                     XT_WHO "all_reduce_coalesced: tensors of one dtype only, got ",
                     tensors[0].scalar_type(), " and ", t.scalar_type());
  }
  const xcoll_dtype_t dt = reduce_dtype(tensors[0], "all_reduce_coalesced");
  bool pre;
  const xcoll_op_t op = reduce_op(opts.reduceOp, tensors[0], "all_reduce_coalesced", &pre);
  at::Tensor flat = flatten(tensors); // the backend's own
  if (pre)
    premultiplied(g, flat, true);
  void* p = mem(flat);
  const size_t n = (size_t)flat.numel();
  auto w = g.work(c10d::OpType::ALLREDUCE_COALESCED, "xcoll:all_reduce_coalesced", tensors,
                  {flat});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallreduce(XCOLL_IN_PLACE, p, n, dt, op, c, nullptr, r);
  }, unflatten_into(tensors, flat));
}

c10::intrusive_ptr<c10d::Work> broadcast(Group& g, std::vector<at::Tensor>& tensors,
                                         const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = only_tensor(tensors, "broadcast");
  check_root(g, opts.rootRank, "broadcast");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, XT_WHO "broadcast: root tensor ", opts.rootTensor,
                    " of one");
  at::Tensor buf = dense_out(t, g.rank() == opts.rootRank);
  void* p = mem(buf);
  const size_t n = nbytes(buf);
  const int root = (int)opts.rootRank;
  auto w = g.work(c10d::OpType::BROADCAST, "xcoll:broadcast", tensors, {buf});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_ibcast(p, n, XCOLL_UINT8, root, c, nullptr, r);
  }, g.rank() == root ? nullptr : copy_into(t, buf));
}

c10::intrusive_ptr<c10d::Work> reduce(Group& g, std::vector<at::Tensor>& tensors,
                                      const c10d::ReduceOptions& opts) {
  const at::Tensor& t = only_tensor(tensors, "reduce");
  check_root(g, opts.rootRank, "reduce");
  TORCH_CHECK_VALUE(opts.rootTensor == 0, XT_WHO "reduce: root tensor ", opts.rootTensor,
                    " of one");
  const xcoll_dtype_t dt = reduce_dtype(t, "reduce");
  bool pre;
  const xcoll_op_t op = reduce_op(opts.reduceOp, t, "reduce", &pre);
  const int root = (int)opts.rootRank;
  const bool at_root = g.rank() == root;
  at::Tensor buf = dense_out(t, true);
  if (pre) // elsewhere than the root, t stays as it was
    buf = premultiplied(g, buf, at_root);
  void* p = mem(buf);
  const size_t n = (size_t)buf.numel();
  auto w = g.work(c10d::OpType::REDUCE, "xcoll:reduce", tensors, {buf});
  // the result is the root's only: elsewhere the tensor is left as it was
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return at_root ? xcoll_ireduce(XCOLL_IN_PLACE, p, n, dt, op, root, c, nullptr, r)
                   : xcoll_ireduce(p, nullptr, n, dt, op, root, c, nullptr, r);
  }, at_root ? copy_into(t, buf) : nullptr);
}

c10::intrusive_ptr<c10d::Work> allgather(Group& g, std::vector<std::vector<at::Tensor>>& outputs,
                                         std::vector<at::Tensor>& inputs,
                                         const c10d::AllgatherOptions&) {
  const at::Tensor& t = only_tensor(inputs, "all_gather");
  TORCH_CHECK_VALUE(outputs.size() == 1, XT_WHO "all_gather takes one output list, got ",
                    outputs.size());
  std::vector<at::Tensor>& list = outputs[0];
  TORCH_CHECK_VALUE((int)list.size() == g.size(), XT_WHO "all_gather: the output list has ",
                    list.size(), " tensors for a group of ", g.size());
  for (const auto& o : list)
    check_like(o, t, "all_gather", "an output tensor");
  at::Tensor in = dense_in(t);
  at::Tensor flat = at::empty({(int64_t)g.size() * t.numel()}, t.options());
  void *pin = mem(in), *pout = mem(flat);
  const size_t n = nbytes(in);
  auto w = g.work(c10d::OpType::ALLGATHER, "xcoll:all_gather", list, {in, flat});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallgather(pin, pout, n, XCOLL_UINT8, c, nullptr, r);
  }, unflatten_into(list, flat));
}

c10::intrusive_ptr<c10d::Work> allgather_base(Group& g, at::Tensor& output, at::Tensor& input,
                                              const c10d::AllgatherOptions&) {
  check_blocks(g, output, "output", input, "input", "all_gather_into_tensor");
  at::Tensor in = dense_in(input);
  at::Tensor out = dense_out(output, false);
  void *pin = mem(in), *pout = mem(out);
  const size_t n = nbytes(in);
  auto w = g.work(c10d::OpType::_ALLGATHER_BASE, "xcoll:all_gather_into_tensor", {output},
                  {in, out});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallgather(pin, pout, n, XCOLL_UINT8, c, nullptr, r);
  }, copy_into(output, out));
}

// all_gather_coalesced (deprecated in torch, kept by gloo): every rank's
// list of tensors, in one allgather of the lists flattened; outputs[i]
// gets rank i's list. torch checks that each list has one dtype; it does
// not check shapes across ranks, and neither can this: only this rank's
// own shapes are compared with its outputs.
c10::intrusive_ptr<c10d::Work> allgather_coalesced(Group& g,
                                                   std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::AllgatherOptions&) {
  const char* what = "all_gather_coalesced";
  TORCH_CHECK_VALUE(!inputs.empty(), XT_WHO, what, ": no input tensors");
  TORCH_CHECK_VALUE((int)outputs.size() == g.size(), XT_WHO, what, ": ", outputs.size(),
                    " output lists for a group of ", g.size());
  std::vector<at::Tensor> all;
  for (const auto& t : inputs) {
    check_tensor(t, what);
    TORCH_CHECK_TYPE(t.scalar_type() == inputs[0].scalar_type(), XT_WHO, what,
                     ": input tensors of one dtype only, got ", inputs[0].scalar_type(), " and ",
                     t.scalar_type());
  }
  for (const auto& list : outputs) {
    TORCH_CHECK_VALUE(list.size() == inputs.size(), XT_WHO, what, ": an output list has ",
                      list.size(), " tensors for ", inputs.size(), " inputs");
    for (size_t j = 0; j < list.size(); j++) {
      check_like(list[j], inputs[j], what, "an output tensor");
      all.push_back(list[j]);
    }
  }
  at::Tensor in = flatten(inputs);
  at::Tensor flat = at::empty({(int64_t)g.size() * in.numel()}, in.options());
  void *pin = mem(in), *pout = mem(flat);
  const size_t n = nbytes(in);
  auto w = g.work(c10d::OpType::ALLGATHER_COALESCED, "xcoll:all_gather_coalesced", all,
                  {in, flat});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iallgather(pin, pout, n, XCOLL_UINT8, c, nullptr, r);
  }, unflatten_into(all, flat));
}

c10::intrusive_ptr<c10d::Work> gather(Group& g, std::vector<std::vector<at::Tensor>>& outputs,
                                      std::vector<at::Tensor>& inputs,
                                      const c10d::GatherOptions& opts) {
  const at::Tensor& t = only_tensor(inputs, "gather");
  check_root(g, opts.rootRank, "gather");
  const int root = (int)opts.rootRank;
  const bool at_root = g.rank() == root;
  std::vector<at::Tensor> list;
  if (at_root) {
    TORCH_CHECK_VALUE(outputs.size() == 1 && (int)outputs[0].size() == g.size(),
                      XT_WHO "gather: the root takes one output list of ", g.size(),
                      " tensors");
    list = outputs[0];
    for (const auto& o : list)
      check_like(o, t, "gather", "an output tensor");
  } else {
    TORCH_CHECK_VALUE(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                      XT_WHO "gather: only the root takes an output list");
  }
  at::Tensor in = dense_in(t);
  at::Tensor flat = at_root ? at::empty({(int64_t)g.size() * t.numel()}, t.options())
                            : at::Tensor();
  void* pin = mem(in);
  void* pout = at_root ? mem(flat) : nullptr;
  const size_t n = nbytes(in);
  auto w = g.work(c10d::OpType::GATHER, "xcoll:gather", list, {in});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_igather(pin, pout, n, XCOLL_UINT8, root, c, nullptr, r);
  }, at_root ? unflatten_into(list, flat) : nullptr);
}

c10::intrusive_ptr<c10d::Work> scatter(Group& g, std::vector<at::Tensor>& outputs,
                                       std::vector<std::vector<at::Tensor>>& inputs,
                                       const c10d::ScatterOptions& opts) {
  const at::Tensor& t = only_tensor(outputs, "scatter");
  check_root(g, opts.rootRank, "scatter");
  const int root = (int)opts.rootRank;
  const bool at_root = g.rank() == root;
  at::Tensor flat;
  if (at_root) {
    TORCH_CHECK_VALUE(inputs.size() == 1 && (int)inputs[0].size() == g.size(),
                      XT_WHO "scatter: the root takes one input list of ", g.size(),
                      " tensors");
    for (const auto& i : inputs[0])
      check_like(i, t, "scatter", "an input tensor");
    flat = flatten(inputs[0]);
  } else {
    TORCH_CHECK_VALUE(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
                      XT_WHO "scatter: only the root takes an input list");
  }
  at::Tensor out = dense_out(t, false);
  void* pin = at_root ? mem(flat) : nullptr;
  void* pout = mem(out);
  const size_t n = nbytes(out);
  auto w = g.work(c10d::OpType::SCATTER, "xcoll:scatter", outputs, {flat, out});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_iscatter(pin, pout, n, XCOLL_UINT8, root, c, nullptr, r);
  }, copy_into(t, out));
}

c10::intrusive_ptr<c10d::Work> reduce_scatter(Group& g, std::vector<at::Tensor>& outputs,
                                              std::vector<std::vector<at::Tensor>>& inputs,
                                              const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& t = only_tensor(outputs, "reduce_scatter");
  TORCH_CHECK_VALUE(inputs.size() == 1 && (int)inputs[0].size() == g.size(),
                    XT_WHO "reduce_scatter takes one input list of ", g.size(), " tensors");
  for (const auto& i : inputs[0])
    check_like(i, t, "reduce_scatter", "an input tensor");
  const xcoll_dtype_t dt = reduce_dtype(t, "reduce_scatter");
  bool pre;
  const xcoll_op_t op = reduce_op(opts.reduceOp, t, "reduce_scatter", &pre);
  at::Tensor flat = flatten(inputs[0]); // the backend's own
  if (pre)
    premultiplied(g, flat, true);
  at::Tensor out = dense_out(t, false);
  void *pin = mem(flat), *pout = mem(out);
  const size_t n = (size_t)out.numel();
  auto w = g.work(c10d::OpType::REDUCE_SCATTER, "xcoll:reduce_scatter", outputs, {flat, out});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_ireduce_scatter(pin, pout, n, dt, op, c, nullptr, r);
  }, copy_into(t, out));
}

c10::intrusive_ptr<c10d::Work> reduce_scatter_base(Group& g, at::Tensor& output,
                                                   at::Tensor& input,
                                                   const c10d::ReduceScatterOptions& opts) {
  check_blocks(g, input, "input", output, "output", "reduce_scatter_tensor");
  const xcoll_dtype_t dt = reduce_dtype(output, "reduce_scatter_tensor");
  bool pre;
  const xcoll_op_t op = reduce_op(opts.reduceOp, output, "reduce_scatter_tensor", &pre);
  at::Tensor in = dense_in(input);
  if (pre) // the input stays as it was
    in = premultiplied(g, in, false);
  at::Tensor out = dense_out(output, false);
  void *pin = mem(in), *pout = mem(out);
  const size_t n = (size_t)out.numel();
  auto w = g.work(c10d::OpType::_REDUCE_SCATTER_BASE, "xcoll:reduce_scatter_tensor", {output},
                  {in, out});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_ireduce_scatter(pin, pout, n, dt, op, c, nullptr, r);
  }, copy_into(output, out));
}

namespace {

// Block sizes and offsets in bytes, one block per rank, of t cut along
// its first dimension: splits[j] rows for rank j, or equal parts when
// splits is empty (torch's all_to_all_single convention).
void split_blocks(const Group& g, const at::Tensor& t, const std::vector<int64_t>& splits,
                  const char* which, std::vector<size_t>& counts, std::vector<size_t>& displs) {
  TORCH_CHECK_VALUE(t.dim() >= 1, XT_WHO "all_to_all_single: the ", which,
                    " is a 0-dimensional tensor; it is split along its first dimension");
  const int64_t rows = t.size(0);
  const size_t row_bytes = rows > 0 ? nbytes(t) / (size_t)rows
                                    : (size_t)t.element_size() *
                                          (size_t)c10::multiply_integers(t.sizes().slice(1));
  counts.assign(g.size(), 0);
  displs.assign(g.size(), 0);
  if (splits.empty()) {
    TORCH_CHECK_VALUE(rows % g.size() == 0, XT_WHO "all_to_all_single: the ", which, "'s ",
                      rows, " rows do not split equally over ", g.size(),
                      " ranks (give split sizes)");
  } else {
    TORCH_CHECK_VALUE((int)splits.size() == g.size(), XT_WHO "all_to_all_single: ",
                      splits.size(), " ", which, " split sizes for a group of ", g.size());
  }
  int64_t sum = 0;
  for (int j = 0; j < g.size(); j++) {
    const int64_t s = splits.empty() ? rows / g.size() : splits[j];
    TORCH_CHECK_VALUE(s >= 0, XT_WHO "all_to_all_single: ", which, " split size ", s,
                      " for rank ", j);
    displs[j] = (size_t)sum * row_bytes;
    counts[j] = (size_t)s * row_bytes;
    sum += s;
  }
  TORCH_CHECK_VALUE(sum == rows, XT_WHO "all_to_all_single: the ", which,
                    " split sizes add up to ", sum, " rows, the tensor has ", rows);
}

}  // namespace

c10::intrusive_ptr<c10d::Work> alltoall_base(Group& g, at::Tensor& output, at::Tensor& input,
                                             std::vector<int64_t>& output_splits,
                                             std::vector<int64_t>& input_splits,
                                             const c10d::AllToAllOptions&) {
  check_tensor(input, "all_to_all_single");
  check_tensor(output, "all_to_all_single");
  TORCH_CHECK_TYPE(output.scalar_type() == input.scalar_type(),
                   XT_WHO "all_to_all_single: the output is ", output.scalar_type(),
                   ", the input ", input.scalar_type());
  at::Tensor in = dense_in(input);
  at::Tensor out = dense_out(output, false);
  void *pin = mem(in), *pout = mem(out);
  auto w = g.work(c10d::OpType::ALLTOALL_BASE, "xcoll:all_to_all_single", {output}, {in, out});
  if (output_splits.empty() && input_splits.empty()) {
    TORCH_CHECK_VALUE(input.numel() == output.numel() && input.numel() % g.size() == 0,
                      XT_WHO "all_to_all_single: without split sizes the input and the output "
                      "hold the same number of elements, divisible by the group's ",
                      g.size(), " ranks (input ", input.numel(), ", output ", output.numel(),
                      ")");
    const size_t n = nbytes(in) / (size_t)g.size();
    return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
      return xcoll_ialltoall(pin, pout, n, XCOLL_UINT8, c, nullptr, r);
    }, copy_into(output, out));
  }
  std::vector<size_t> sc, sd, rc, rd;
  split_blocks(g, in, input_splits, "input", sc, sd);
  split_blocks(g, out, output_splits, "output", rc, rd);
  return g.post(w, [&](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_ialltoallv(pin, sc.data(), sd.data(), pout, rc.data(), rd.data(), XCOLL_UINT8,
                            c, nullptr, r);
  }, copy_into(output, out));
}

c10::intrusive_ptr<c10d::Work> alltoall(Group& g, std::vector<at::Tensor>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::AllToAllOptions&) {
  TORCH_CHECK_VALUE((int)inputs.size() == g.size() && (int)outputs.size() == g.size(),
                    XT_WHO "all_to_all takes lists of ", g.size(), " tensors, got ",
                    inputs.size(), " inputs and ", outputs.size(), " outputs");
  std::vector<size_t> sc(g.size()), sd(g.size()), rc(g.size()), rd(g.size());
  size_t soff = 0, roff = 0;
  int64_t out_numel = 0;
  for (int j = 0; j < g.size(); j++) {
    // blocks of their own sizes: one dtype is all they share
    check_tensor(inputs[j], "all_to_all");
    check_tensor(outputs[j], "all_to_all");
    TORCH_CHECK_TYPE(inputs[j].scalar_type() == inputs[0].scalar_type() &&
                         outputs[j].scalar_type() == inputs[0].scalar_type(),
                     XT_WHO "all_to_all: tensors of one dtype only, got ",
                     inputs[0].scalar_type(), " with ", inputs[j].scalar_type(), " and ",
                     outputs[j].scalar_type());
    sc[j] = nbytes(inputs[j]);
    sd[j] = soff;
    soff += sc[j];
    rc[j] = nbytes(outputs[j]);
    rd[j] = roff;
    roff += rc[j];
    out_numel += outputs[j].numel();
  }
  at::Tensor flat_in = flatten(inputs);
  at::Tensor flat_out = at::empty({out_numel}, outputs[0].options());
  void *pin = mem(flat_in), *pout = mem(flat_out);
  auto w = g.work(c10d::OpType::ALLTOALL, "xcoll:all_to_all", outputs, {flat_in, flat_out});
  return g.post(w, [&](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_ialltoallv(pin, sc.data(), sd.data(), pout, rc.data(), rd.data(), XCOLL_UINT8,
                            c, nullptr, r);
  }, unflatten_into(outputs, flat_out));
}

namespace {
void check_tag(int tag, const char* what) {
  TORCH_CHECK_VALUE(tag >= 0 && tag < XCOLL_TAG_LIMIT, XT_WHO, what, ": tag ", tag,
                    " is outside 0..", XCOLL_TAG_LIMIT - 1);
}
void check_peer(const Group& g, int peer, const char* what) {
  TORCH_CHECK_VALUE(peer >= 0 && peer < g.size(), XT_WHO, what, ": rank ", peer,
                    " is outside the group's ranks 0..", g.size() - 1);
}
}  // namespace

c10::intrusive_ptr<c10d::Work> send(Group& g, std::vector<at::Tensor>& tensors, int dst,
                                    int tag) {
  const at::Tensor& t = only_tensor(tensors, "send");
  check_peer(g, dst, "send");
  check_tag(tag, "send");
  at::Tensor in = dense_in(t);
  void* p = mem(in);
  const size_t n = nbytes(in);
  auto w = g.work(c10d::OpType::SEND, "xcoll:send", tensors, {in});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_isend(p, n, XCOLL_UINT8, dst, tag, c, nullptr, r);
  });
}

c10::intrusive_ptr<c10d::Work> recv(Group& g, std::vector<at::Tensor>& tensors, int src,
                                    int tag) {
  const at::Tensor& t = only_tensor(tensors, "recv");
  check_peer(g, src, "recv");
  check_tag(tag, "recv");
  at::Tensor out = dense_out(t, false);
  void* p = mem(out);
  const size_t n = nbytes(out);
  auto w = g.work(c10d::OpType::RECV, "xcoll:recv", tensors, {out});
  return g.post(w, [=](xcoll_comm_t c, xcoll_request_t* r) {
    return xcoll_irecv(p, n, XCOLL_UINT8, src, tag, c, nullptr, r);
  }, copy_into(t, out));
}

c10::intrusive_ptr<c10d::Work> barrier(Group& g, const c10d::BarrierOptions&) {
  auto w = g.work(c10d::OpType::BARRIER, "xcoll:barrier", {});
  return g.post(w, [](xcoll_comm_t c, xcoll_request_t* r) { return xcoll_ibarrier(c, r); });
}

}  // namespace xcoll_torch

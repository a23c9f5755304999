// torch_1_13.cpp - what depends on the torch version, for torch 1.13: a
// c10d::ProcessGroup subclass whose methods forward to collectives.cpp,
// and the Python module xcoll_torch, whose import registers the backend
// "xcoll" with torch.distributed. (torch 2.x backends derive from
// c10d::Backend and register with a device list: a file of their own,
// beside this one, chosen by configure.)
#include "backend.hpp"

#include <memory>

#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/utils/pybind.h>

namespace xcoll_torch {
namespace {

class ProcessGroupXcoll : public c10d::ProcessGroup {
 public:
  ProcessGroupXcoll(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                    std::chrono::milliseconds timeout)
      : c10d::ProcessGroup(rank, size), group_(store, rank, size, timeout) {
    init();
  }

  // Python drops the last reference holding the GIL, and the completion
  // thread may be running a future's Python callback, which needs it.
  ~ProcessGroupXcoll() override {
    if (Py_IsInitialized() && PyGILState_Check()) {
      pybind11::gil_scoped_release unlocked;
      group_.shutdown();
    } else {
      group_.shutdown();
    }
  }

  const std::string getBackendName() const override { return "xcoll"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t,
                                           const c10d::BroadcastOptions& o) override {
    return xcoll_torch::broadcast(group_, t, o);
  }
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& t,
                                           const c10d::AllreduceOptions& o) override {
    return xcoll_torch::allreduce(group_, t, o);
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& t, const c10d::AllreduceCoalescedOptions& o) override {
    return xcoll_torch::allreduce_coalesced(group_, t, o);
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& t,
                                        const c10d::ReduceOptions& o) override {
    return xcoll_torch::reduce(group_, t, o);
  }
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& out,
                                           std::vector<at::Tensor>& in,
                                           const c10d::AllgatherOptions& o) override {
    return xcoll_torch::allgather(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in,
                                                 const c10d::AllgatherOptions& o) override {
    return xcoll_torch::allgather_base(group_, out, in, o);
  }
  // deprecated in torch ("implement _allgather_base instead"), but gloo
  // serves it, and programs written for gloo call it
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& out,
                                                     std::vector<at::Tensor>& in,
                                                     const c10d::AllgatherOptions& o) override {
    return xcoll_torch::allgather_coalesced(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& out,
                                        std::vector<at::Tensor>& in,
                                        const c10d::GatherOptions& o) override {
    return xcoll_torch::gather(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& out,
                                         std::vector<std::vector<at::Tensor>>& in,
                                         const c10d::ScatterOptions& o) override {
    return xcoll_torch::scatter(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& out,
                                                std::vector<std::vector<at::Tensor>>& in,
                                                const c10d::ReduceScatterOptions& o) override {
    return xcoll_torch::reduce_scatter(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& out, at::Tensor& in, const c10d::ReduceScatterOptions& o) override {
    return xcoll_torch::reduce_scatter_base(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& out, at::Tensor& in,
                                               std::vector<int64_t>& out_splits,
                                               std::vector<int64_t>& in_splits,
                                               const c10d::AllToAllOptions& o) override {
    return xcoll_torch::alltoall_base(group_, out, in, out_splits, in_splits, o);
  }
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& out,
                                          std::vector<at::Tensor>& in,
                                          const c10d::AllToAllOptions& o) override {
    return xcoll_torch::alltoall(group_, out, in, o);
  }
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& t, int dst, int tag) override {
    return xcoll_torch::send(group_, t, dst, tag);
  }
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& t, int src, int tag) override {
    return xcoll_torch::recv(group_, t, src, tag);
  }
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>&, int) override {
    TORCH_CHECK(false,
                "xcoll backend: recv from any source (dist.recv without src) is not supported: "
                "xcoll matches a receive to one sender; pass src");
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& o) override {
    return xcoll_torch::barrier(group_, o);
  }

 private:
  Group group_;
};

// torch.distributed's creator: (store, rank, size, timeout) -> ProcessGroup.
c10::intrusive_ptr<c10d::ProcessGroup> create(const c10::intrusive_ptr<c10d::Store>& store,
                                              int rank, int size,
                                              std::chrono::milliseconds timeout) {
  return c10::make_intrusive<ProcessGroupXcoll>(store, rank, size, timeout);
}

}  // namespace
}  // namespace xcoll_torch

PYBIND11_MODULE(xcoll_torch, m) {
  namespace py = pybind11;
  m.doc() = "xcoll's torch.distributed backend: import registers backend=\"xcoll\"";
  // torch's pybind types (Store, ProcessGroup) must exist before ours use them
  py::module_ dist = py::module_::import("torch.distributed");
  py::class_<xcoll_torch::ProcessGroupXcoll, c10d::ProcessGroup,
             c10::intrusive_ptr<xcoll_torch::ProcessGroupXcoll>>(m, "ProcessGroupXcoll");
  m.def("create_process_group", &xcoll_torch::create, py::arg("store"), py::arg("rank"),
        py::arg("size"), py::arg("timeout"),
        // the bootstrap waits on the store: other Python threads may run
        py::call_guard<py::gil_scoped_release>(),
        "The creator torch.distributed calls for backend=\"xcoll\" (registered on import).");
  m.attr("__version__") = xcoll_version();
  py::object backend = dist.attr("Backend");
  // a second import (importlib.reload) finds it registered already
  if (!py::hasattr(backend, "XCOLL"))
    backend.attr("register_backend")("xcoll", m.attr("create_process_group"));
}

// backend.hpp - the torch.distributed backend "xcoll", inside lib/torch/.
//
// Three files, one job each:
//   group.cpp        an xcoll communicator made over the group's c10d Store,
//                    the Work objects torch waits on, and the thread that
//                    completes them as xcoll finishes the requests
//   collectives.cpp  each torch collective as one nonblocking xcoll call:
//                    dtype and op mapping, checks, staging of non-contiguous
//                    or list-shaped tensors
//   torch_1_13.cpp   what depends on the torch version: the ProcessGroup
//                    subclass (1.13; torch 2.x derives from c10d::Backend)
//                    and the Python module that registers "xcoll"
// Only the last includes Python or pybind11.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "xcoll.h"

namespace xcoll_torch {

class Group;

// One xcoll request as torch sees it. Torch's own Work::wait() sleeps on
// the condition variable finish() signals; the future (what DDP's comm
// hooks wait on) is completed at the same moment, with the outputs.
class Work : public c10d::Work {
 public:
  // title: a string literal "xcoll:<collective>"
  Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs);
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

 private:
  friend class Group;
  void complete(xcoll_status_t status);

  const char* what_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  xcoll_request_t req_ = nullptr;
  // Tensors xcoll reads or writes until the request finishes (staging
  // copies included), and what to do with the staged results then.
  std::vector<at::Tensor> keep_;
  std::function<void()> copy_back_;
  Group* group_ = nullptr;
};

// An xcoll communicator over the ranks of one torch process group.
class Group {
 public:
  // Collective over the group: every rank's transport address goes
  // through the Store. timeout becomes the communicator's (0: none).
  Group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
        std::chrono::milliseconds timeout);
  ~Group();
  Group(const Group&) = delete;
  // Waits until every posted call has completed (each within the timeout),
  // stops the completion threads and destroys the communicator; the
  // destructor's work, for a caller that must first let go of a lock the
  // completion threads may need (Python's, for a future's callbacks).
  // Idempotent.
  void shutdown();
  Group& operator=(const Group&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // A Work titled `title` ("xcoll:allreduce"); keep are the tensors the
  // call touches, outputs what result() and the future give.
  c10::intrusive_ptr<Work> work(c10d::OpType type, const char* title,
                                std::vector<at::Tensor> outputs,
                                std::vector<at::Tensor> keep = {});

  // Runs one xcoll call to completion on the calling thread (a step that
  // the next call of the same collective depends on); a failure throws,
  // naming what.
  void run(const char* what,
           const std::function<xcoll_status_t(xcoll_comm_t, xcoll_request_t*)>& start);

  // Posts a nonblocking xcoll call for w (start posts it on this group's
  // communicator); copy_back, if set, runs on a completion thread once
  // the call succeeded. A call xcoll refuses throws here, with its reason.
  c10::intrusive_ptr<c10d::Work> post(const c10::intrusive_ptr<Work>& w,
                                      const std::function<xcoll_status_t(xcoll_comm_t,
                                                                         xcoll_request_t*)>& start,
                                      std::function<void()> copy_back = nullptr);

 private:
  static void on_finished(void* arg);
  void completion_loop();

  int rank_, size_;
  xcoll_comm_t comm_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work*> finished_;  // noted by xcoll, not yet completed (each holds a reference)
  size_t pending_ = 0;          // posted and not yet completed
  bool stopping_ = false;
  // Completion threads: the first, and those started when every one was
  // busy completing (in a future's callbacks, which may wait for another
  // call of this group); each waits for finished_ when idle.
  std::vector<std::thread> completers_;
  size_t idle_ = 0;
};

// The collectives (collectives.cpp), as the ProcessGroup methods of any
// torch version take them.
c10::intrusive_ptr<c10d::Work> broadcast(Group& g, std::vector<at::Tensor>& tensors,
                                         const c10d::BroadcastOptions& opts);
c10::intrusive_ptr<c10d::Work> allreduce(Group& g, std::vector<at::Tensor>& tensors,
                                         const c10d::AllreduceOptions& opts);
c10::intrusive_ptr<c10d::Work> allreduce_coalesced(Group& g, std::vector<at::Tensor>& tensors,
                                                   const c10d::AllreduceCoalescedOptions& opts);
c10::intrusive_ptr<c10d::Work> reduce(Group& g, std::vector<at::Tensor>& tensors,
                                      const c10d::ReduceOptions& opts);
c10::intrusive_ptr<c10d::Work> allgather(Group& g, std::vector<std::vector<at::Tensor>>& outputs,
                                         std::vector<at::Tensor>& inputs,
                                         const c10d::AllgatherOptions& opts);
c10::intrusive_ptr<c10d::Work> allgather_base(Group& g, at::Tensor& output, at::Tensor& input,
                                              const c10d::AllgatherOptions& opts);
c10::intrusive_ptr<c10d::Work> allgather_coalesced(Group& g,
                                                   std::vector<std::vector<at::Tensor>>& outputs,
                                                   std::vector<at::Tensor>& inputs,
                                                   const c10d::AllgatherOptions& opts);
c10::intrusive_ptr<c10d::Work> gather(Group& g, std::vector<std::vector<at::Tensor>>& outputs,
                                      std::vector<at::Tensor>& inputs,
                                      const c10d::GatherOptions& opts);
c10::intrusive_ptr<c10d::Work> scatter(Group& g, std::vector<at::Tensor>& outputs,
                                       std::vector<std::vector<at::Tensor>>& inputs,
                                       const c10d::ScatterOptions& opts);
c10::intrusive_ptr<c10d::Work> reduce_scatter(Group& g, std::vector<at::Tensor>& outputs,
                                              std::vector<std::vector<at::Tensor>>& inputs,
                                              const c10d::ReduceScatterOptions& opts);
c10::intrusive_ptr<c10d::Work> reduce_scatter_base(Group& g, at::Tensor& output,
                                                   at::Tensor& input,
                                                   const c10d::ReduceScatterOptions& opts);
c10::intrusive_ptr<c10d::Work> alltoall_base(Group& g, at::Tensor& output, at::Tensor& input,
                                             std::vector<int64_t>& output_splits,
                                             std::vector<int64_t>& input_splits,
                                             const c10d::AllToAllOptions& opts);
c10::intrusive_ptr<c10d::Work> alltoall(Group& g, std::vector<at::Tensor>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::AllToAllOptions& opts);
c10::intrusive_ptr<c10d::Work> send(Group& g, std::vector<at::Tensor>& tensors, int dst, int tag);
c10::intrusive_ptr<c10d::Work> recv(Group& g, std::vector<at::Tensor>& tensors, int src, int tag);
c10::intrusive_ptr<c10d::Work> barrier(Group& g, const c10d::BarrierOptions& opts);

}  // namespace xcoll_torch

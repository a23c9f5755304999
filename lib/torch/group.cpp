// group.cpp - an xcoll communicator per torch process group, and the
// completion of torch's Work objects as xcoll finishes their requests.
//
// Threads: torch posts from its callers' threads (the main thread, and the
// autograd thread for DDP's gradient buckets); xcoll's progress thread
// moves the bytes; this file's completion threads run what must follow a
// finished request: staged copies back into the caller's tensors,
// Work::finish, and the future's callbacks (DDP's hooks), none of which
// may run inside xcoll's callback. Requests finish in any order (a
// receive may wait on a peer that first needs a later barrier), so they
// are completed in the order xcoll reports, never in posting order.
// A callback may itself wait for another call of the group (torch's
// PowerSGD hook waits for an all_reduce inside then()): that call's
// completion must not queue behind the callback, so a thread that takes a
// request while no other is idle starts one more first. Usually there are
// two: one completing, one waiting.
#include "backend.hpp"

#include <cstring>
#include <stdexcept>
#include <system_error>

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

namespace xcoll_torch {

// title is "xcoll:<collective>": torch's profiler records it, and errors
// name the collective
Work::Work(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, title),
      what_(std::strncmp(title, "xcoll:", 6) == 0 ? title + 6 : title),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()))) {}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() { return future_; }

std::vector<at::Tensor> Work::result() { return outputs_; }

void Work::complete(xcoll_status_t status) {
  std::exception_ptr err;
  if (status != XCOLL_OK) {
    err = std::make_exception_ptr(std::runtime_error(
        std::string("xcoll backend: ") + what_ + " failed: " + xcoll_strerror(status) +
        " (xcoll's log above, on stderr, says where and why)"));
  } else if (copy_back_) {
    try {
      copy_back_();
    } catch (...) {
      err = std::current_exception();
    }
  }
  // the staging buffers go now: a Work kept by the caller keeps only its outputs
  keep_.clear();
  copy_back_ = nullptr;
  finish(err);
  if (err)
    future_->setError(err);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

namespace {

// xcoll_bootstrap_t.allgather over the group's Store: round n of the
// bootstrap sets xcoll/<n>/<rank> and reads every rank's key. The Store
// is the group's PrefixStore, so subgroups never see each other's keys;
// Store::get waits as long as the store's timeout.
struct StoreBootstrap {
  c10d::Store* store;
  int rank, size;
  unsigned round = 0;
  std::string error;
};

int store_allgather(const void* sendbuf, void* recvbuf, size_t bytes, void* ctx) {
  auto* b = static_cast<StoreBootstrap*>(ctx);
  const std::string prefix = "xcoll/" + std::to_string(b->round++) + "/";
  try {
    const auto* in = static_cast<const uint8_t*>(sendbuf);
    b->store->set(prefix + std::to_string(b->rank), std::vector<uint8_t>(in, in + bytes));
    for (int r = 0; r < b->size; r++) {
      std::vector<uint8_t> v = b->store->get(prefix + std::to_string(r));
      if (v.size() != bytes) {
        b->error = "rank " + std::to_string(r) + " published " + std::to_string(v.size()) +
                   " bytes under " + prefix + ", expected " + std::to_string(bytes) +
                   " (a different xcoll on that rank?)";
        return -1;
      }
      if (bytes > 0)
        std::memcpy(static_cast<uint8_t*>(recvbuf) + (size_t)r * bytes, v.data(), bytes);
    }
  } catch (const std::exception& e) {
    b->error = e.what();
    return -1;
  }
  return 0;
}

}  // namespace

Group::Group(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
             std::chrono::milliseconds timeout)
    : rank_(rank), size_(size) {
  TORCH_CHECK(store, "xcoll backend: no store to create the group over");
  StoreBootstrap sb;
  sb.store = store.get();
  sb.rank = rank;
  sb.size = size;
  xcoll_bootstrap_t boot;
  boot.rank = rank;
  boot.size = size;
  boot.allgather = store_allgather;
  boot.ctx = &sb;
  xcoll_config_t cfg;
  xcoll_status_t st = xcoll_config_init(&cfg);
  TORCH_CHECK(st == XCOLL_OK, "xcoll backend: configuration: ", xcoll_strerror(st),
              " (an XCOLL_* environment variable is malformed: xcoll's log above says which)");
  // torch posts from several threads, and DDP waits on futures nobody
  // polls: both need xcoll's progress thread
  cfg.progress_thread = 1;
  // torch tensors on the CPU: no question to CUDA per buffer
  cfg.memory = XCOLL_MEMORY_HOST;
  // init_process_group(timeout=...): an error or a dead rank raises on the
  // others within it instead of hanging
  cfg.timeout_s = timeout.count() > 0 ? (double)timeout.count() / 1000.0 : 0.0;
  st = xcoll_comm_create(&boot, &cfg, &comm_);
  TORCH_CHECK(st == XCOLL_OK, "xcoll backend: creating the communicator of rank ", rank, " of ",
              size, " failed: ", xcoll_strerror(st),
              sb.error.empty() ? std::string() : " (store: " + sb.error + ")");
  completers_.emplace_back([this] { completion_loop(); });
}

Group::~Group() { shutdown(); }

void Group::shutdown() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  // the threads leave once every posted request has finished: each ends
  // within the communicator's timeout. None starts once stopping_ is set,
  // so the list is final.
  for (auto& t : completers_)
    if (t.joinable())
      t.join();
  if (comm_ != nullptr)
    xcoll_comm_destroy(comm_);
  comm_ = nullptr;
}

c10::intrusive_ptr<Work> Group::work(c10d::OpType type, const char* title,
                                     std::vector<at::Tensor> outputs,
                                     std::vector<at::Tensor> keep) {
  auto w = c10::make_intrusive<Work>(rank_, type, title, std::move(outputs));
  w->keep_ = std::move(keep);
  return w;
}

void Group::run(const char* what,
                const std::function<xcoll_status_t(xcoll_comm_t, xcoll_request_t*)>& start) {
  xcoll_request_t r = nullptr;
  xcoll_status_t st = start(comm_, &r);
  if (st == XCOLL_OK)
    st = xcoll_wait(&r);
  TORCH_CHECK(st == XCOLL_OK, "xcoll backend: ", what, ": ", xcoll_strerror(st),
              " (xcoll's log above, on stderr, says why)");
}

c10::intrusive_ptr<c10d::Work> Group::post(
    const c10::intrusive_ptr<Work>& w,
    const std::function<xcoll_status_t(xcoll_comm_t, xcoll_request_t*)>& start,
    std::function<void()> copy_back) {
  w->group_ = this;
  w->copy_back_ = std::move(copy_back);
  xcoll_status_t st = start(comm_, &w->req_);
  if (st != XCOLL_OK) {
    w->keep_.clear();
    TORCH_CHECK(false, "xcoll backend: ", w->what_, ": ", xcoll_strerror(st),
                " (xcoll's log above, on stderr, says why)");
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    pending_++;
  }
  // the reference the completion thread takes back (on_finished)
  Work* raw = c10::intrusive_ptr<Work>(w).release();
  st = xcoll_request_notify(w->req_, on_finished, raw);
  TORCH_INTERNAL_ASSERT(st == XCOLL_OK, "xcoll_request_notify refused a fresh request");
  return w;
}

// Runs inside xcoll, holding its lock: only notes the request.
void Group::on_finished(void* arg) {
  Work* w = static_cast<Work*>(arg);
  Group* g = w->group_;
  {
    std::lock_guard<std::mutex> lk(g->mu_);
    g->finished_.push_back(w);
  }
  g->cv_.notify_all();
}

void Group::completion_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    idle_++;
    cv_.wait(lk, [this] { return !finished_.empty() || (stopping_ && pending_ == 0); });
    idle_--;
    if (finished_.empty()) {
      cv_.notify_all(); // the other idle threads leave too
      return;
    }
    Work* raw = finished_.front();
    finished_.pop_front();
    if (idle_ == 0 && !stopping_) {
      try {
        completers_.emplace_back([this] { completion_loop(); });
      } catch (const std::system_error&) {
        // no thread to be had: completions go on here, and only a callback
        // that waits for a later call of the group can stall them
      }
    }
    lk.unlock();
    {
      auto w = c10::intrusive_ptr<Work>::reclaim(raw);
      int done = 0;
      // finished already: this only hands the request back with its status
      xcoll_status_t st = xcoll_test(&w->req_, &done);
      w->complete(done ? st : XCOLL_ERR_INTERNAL);
    }
    lk.lock();
    pending_--;
    if (stopping_ && pending_ == 0)
      cv_.notify_all();
  }
}

}  // namespace xcoll_torch

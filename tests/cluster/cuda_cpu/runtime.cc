#include "runtime.h"

#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cudacpu {
namespace {

thread_local int tls_worker_device = -1;
thread_local int tls_current_device = 0;
thread_local int64_t tls_busy_until_ns = 0;  // the running kernel's busy time ends here
thread_local bool tls_busy_used = false;

std::atomic<Runtime*> g_runtime{nullptr};

void SleepUntil(int64_t mono_ns) {
  timespec ts{static_cast<time_t>(mono_ns / 1000000000), static_cast<long>(mono_ns % 1000000000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// RANKSCOPE_CUDA_CPU_CLOCK="[realtime]OFFSET_NS[,DRIFT_PPM]": every device's globaltimer is
// CLOCK_MONOTONIC + OFFSET_NS (with "realtime": CLOCK_REALTIME + OFFSET_NS, e.g.
// "realtime+1500000"), drifting by DRIFT_PPM. Unset: CLOCK_REALTIME (a GPU's globaltimer
// counts from the Unix epoch), no drift.
void ClockConfig(int64_t* offset_ns, double* drift_ppm) {
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t realtime_offset =
      (int64_t{real.tv_sec} - mono.tv_sec) * 1000000000 + (real.tv_nsec - mono.tv_nsec);
  *offset_ns = realtime_offset;
  *drift_ppm = 0;
  const char* spec = std::getenv("RANKSCOPE_CUDA_CPU_CLOCK");
  if (spec == nullptr || *spec == '\0') return;
  const char* p = spec;
  int64_t base = 0;
  if (std::strncmp(p, "realtime", 8) == 0) {
    base = realtime_offset;
    p += 8;
  }
  char* end = nullptr;
  long long off = std::strtoll(p, &end, 10);
  double ppm = 0;
  bool ok = end != p && (*end == '\0' || *end == ',');
  if (ok && *end == ',') {
    const char* q = end + 1;
    ppm = std::strtod(q, &end);
    ok = end != q && *end == '\0';
  }
  if (!ok) {
    std::fprintf(stderr,
                 "cuda-cpu: RANKSCOPE_CUDA_CPU_CLOCK='%s' is not "
                 "[realtime]OFFSET_NS[,DRIFT_PPM]; using the default device clock\n",
                 spec);
    return;
  }
  *offset_ns = base + off;
  *drift_ppm = ppm;
}

void ResetAfterFork() {
  // The parent's stream workers do not exist in the child: start over (the old state leaks).
  g_runtime.store(nullptr);
}

}  // namespace

namespace {
std::mutex g_kernels_mu;
std::unordered_map<const void*, Kernel>& Kernels() {
  static auto* k = new std::unordered_map<const void*, Kernel>();
  return *k;
}
}  // namespace

void RegisterKernel(const void* func, Kernel k) {
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  Kernels()[func] = std::move(k);
}

const Kernel* FindKernel(const void* func) {
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  auto it = Kernels().find(func);
  return it == Kernels().end() ? nullptr : &it->second;  // entries are never erased
}

int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int WorkerDevice() { return tls_worker_device; }

void KernelBusy(uint64_t ns) {
  if (tls_worker_device < 0) return;  // not on a device
  tls_busy_until_ns += static_cast<int64_t>(ns);
  tls_busy_used = true;
  SleepUntil(tls_busy_until_ns);
}

// ---- Stream --------------------------------------------------------------------------------

void Stream::Start() {
  std::shared_ptr<Stream> self = shared_from_this();
  std::thread([self] { self->Run(); }).detach();
}

uint64_t Stream::Push(std::function<void()> fn, std::vector<Dep> deps) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(Item{std::move(fn), std::move(deps), MonoNs()});
  cv_.notify_all();
  return ++enqueued_;
}

void Stream::WaitFor(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return completed_ >= ticket; });
}

bool Stream::Reached(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ >= ticket;
}

Graph::~Graph() {
  for (Node& n : nodes) {
    if (n.release) n.release();
  }
}

bool Stream::BeginCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_) return false;
  capture_ = std::make_shared<Graph>();
  return true;
}

std::shared_ptr<Graph> Stream::EndCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::move(capture_);
}

std::shared_ptr<Graph> Stream::Capturing() {
  std::lock_guard<std::mutex> lock(mu_);
  return capture_;
}

uint64_t Stream::Enqueued() {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

bool Stream::Pending() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ < enqueued_;
}

int64_t Stream::LastCompletedNs() {
  std::lock_guard<std::mutex> lock(mu_);
  return last_completed_ns_;
}

void Stream::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = true;
  cv_.notify_all();
}

void Stream::Run() {
  tls_worker_device = device_->id();
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !queue_.empty() || closing_; });
      if (queue_.empty()) return;  // closed and drained
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    // When the item became runnable: enqueued, and every dependency done. A dependency found
    // done already finished no later than its stream's last completion (an upper bound).
    int64_t ready = item.enqueued_ns;
    for (Dep& d : item.deps) {
      if (!d.stream->Reached(d.ticket)) {
        d.stream->WaitFor(d.ticket);
        ready = std::max(ready, MonoNs());
      } else {
        ready = std::max(ready, d.stream->LastCompletedNs());
      }
    }
    // Device time: a kernel starts when it became runnable or the previous one's busy time
    // ended, whichever is later, so late wakeups of the worker do not add up.
    int64_t now = MonoNs();
    int64_t start = std::max(ready, last_deadline_ns_);
    tls_busy_until_ns = std::min(start, now);
    tls_busy_used = false;
    item.fn();
    const int64_t done = MonoNs();
    last_deadline_ns_ = tls_busy_used ? tls_busy_until_ns : done;
    std::lock_guard<std::mutex> lock(mu_);
    last_completed_ns_ = done;
    ++completed_;
    cv_.notify_all();
  }
}

// ---- Device --------------------------------------------------------------------------------

Device::Device(int id, int64_t clock_offset_ns, double drift_ppm)
    : id_(id),
      clock_offset_ns_(clock_offset_ns),
      drift_ppm_(drift_ppm),
      clock_epoch_ns_(MonoNs()) {}

uint64_t Device::Globaltimer(int64_t mono_ns) const {
  double drift = drift_ppm_ * 1e-6 * static_cast<double>(mono_ns - clock_epoch_ns_);
  return static_cast<uint64_t>(mono_ns + clock_offset_ns_ + static_cast<int64_t>(drift));
}

std::shared_ptr<Stream> Device::NewStream(bool blocking) {
  auto s = std::make_shared<Stream>(this, false, blocking);
  s->Start();
  std::lock_guard<std::mutex> lock(mu_);
  streams_.push_back(s);
  return s;
}

std::shared_ptr<Stream> Device::Legacy() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!legacy_) {
    legacy_ = std::make_shared<Stream>(this, true, true);
    legacy_->Start();
  }
  return legacy_;
}

uint64_t Device::Enqueue(const std::shared_ptr<Stream>& s, std::function<void()> fn,
                         std::vector<Stream::Dep> deps, bool may_block) {
  if (std::shared_ptr<Graph> g = s->Capturing()) {  // captured: runs at each graph launch
    std::lock_guard<std::mutex> lock(g->mu);
    g->nodes.push_back({[fn](cudaStream_t, const std::shared_ptr<Stream>& launch) {
                          launch->device()->Enqueue(launch, fn, {}, false);
                        },
                        nullptr});
    return s->Enqueued();  // reached once the work before the capture is
  }
  if (s->legacy() || s->blocking()) Legacy();  // make sure it exists before locking
  uint64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (s->legacy()) {
      for (auto it = streams_.begin(); it != streams_.end();) {
        std::shared_ptr<Stream> other = it->lock();
        if (!other) {
          it = streams_.erase(it);
          continue;
        }
        if (other->blocking() && other->Pending()) deps.push_back({other, other->Enqueued()});
        ++it;
      }
    } else if (s->blocking() && legacy_->Pending()) {
      deps.push_back({legacy_, legacy_->Enqueued()});
    }
    ticket = s->Push(std::move(fn), std::move(deps));
  }
  if (may_block && Runtime::Get().launch_blocking()) s->WaitFor(ticket);
  return ticket;
}

void Device::Synchronize() {
  std::vector<Stream::Dep> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (legacy_) all.push_back({legacy_, legacy_->Enqueued()});
    for (auto& w : streams_) {
      if (std::shared_ptr<Stream> s = w.lock()) all.push_back({s, s->Enqueued()});
    }
  }
  for (Stream::Dep& d : all) d.stream->WaitFor(d.ticket);
}

// ---- Runtime -------------------------------------------------------------------------------

Runtime& Runtime::Get() {
  Runtime* r = g_runtime.load(std::memory_order_acquire);
  if (r != nullptr) return *r;
  static const bool registered = pthread_atfork(nullptr, nullptr, ResetAfterFork) == 0;
  (void)registered;
  // Never destroyed: detached workers may still use it while the process exits. The
  // constructor starts no thread, so a losing racer's copy can simply be deleted.
  auto* fresh = new Runtime();
  if (g_runtime.compare_exchange_strong(r, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;
  return *r;
}

Runtime::Runtime() {
  const char* lb = std::getenv("CUDA_LAUNCH_BLOCKING");
  launch_blocking_ = lb != nullptr && std::strcmp(lb, "1") == 0;
  int64_t offset = 0;
  double ppm = 0;
  ClockConfig(&offset, &ppm);
  for (int i = 0; i < kDevices; ++i) devices_.push_back(std::make_unique<Device>(i, offset, ppm));
}

int Runtime::current_device() const { return tls_current_device; }
void Runtime::set_current_device(int id) { tls_current_device = id; }

std::shared_ptr<Stream> Runtime::ResolveStream(cudaStream_t handle, int device) {
  if (handle == nullptr || handle == cudaStreamLegacy) return devices_[device]->Legacy();
  if (handle == cudaStreamPerThread) {
    thread_local const Runtime* owner = nullptr;
    thread_local std::shared_ptr<Stream> per_thread[kDevices];
    if (owner != this) {  // first use on this thread, or a runtime recreated after fork
      for (auto& p : per_thread) p.reset();
      owner = this;
    }
    if (!per_thread[device]) per_thread[device] = devices_[device]->NewStream(true);
    return per_thread[device];
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(handle);
  return it == streams_.end() ? nullptr : it->second;
}

cudaStream_t Runtime::AddStream(std::shared_ptr<Stream> s) {
  auto handle = reinterpret_cast<cudaStream_t>(s.get());
  std::lock_guard<std::mutex> lock(mu_);
  streams_[handle] = std::move(s);
  return handle;
}

bool Runtime::RemoveStream(cudaStream_t handle) {
  std::shared_ptr<Stream> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = streams_.find(handle);
    if (it == streams_.end()) return false;
    s = std::move(it->second);
    streams_.erase(it);
  }
  s->Close();
  return true;
}

cudaEvent_t Runtime::AddEvent(std::shared_ptr<Event> e) {
  auto handle = reinterpret_cast<cudaEvent_t>(e.get());
  std::lock_guard<std::mutex> lock(mu_);
  events_[handle] = std::move(e);
  return handle;
}

std::shared_ptr<Event> Runtime::FindEvent(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = events_.find(handle);
  return it == events_.end() ? nullptr : it->second;
}

bool Runtime::RemoveEvent(cudaEvent_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.erase(handle) == 1;
}

bool Runtime::OwnsAllocation(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_.count(p) == 1;
}

void Runtime::AddAllocation(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  allocations_[p] = true;
}

void Runtime::RemoveAllocation(void* p) {
  std::lock_guard<std::mutex> lock(mu_);
  allocations_.erase(p);
}

}  // namespace cudacpu

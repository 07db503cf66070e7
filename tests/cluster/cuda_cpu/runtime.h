// The test bed's "GPU": devices with their own clocks, streams run by one worker thread each,
// events, and CUDA's implicit ordering rules (the legacy default stream, CUDA_LAUNCH_BLOCKING).
// The exported CUDA entry points (api.cc) are thin wrappers over this.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda_runtime_api.h"

namespace cudacpu {

int64_t MonoNs();

class Device;
class Stream;

// A graph captured from one stream (cudaStreamBeginCapture .. cudaStreamEndCapture): the work
// enqueued meanwhile, in capture order; at every cudaGraphLaunch each node enqueues its work
// again on the launch stream. Captured work keeps no dependencies on other streams (the test
// bed's graphs are one captured stream).
struct Graph {
  struct Node {
    std::function<void(cudaStream_t handle, const std::shared_ptr<Stream>& launch)> launch;
    std::function<void()> release;  // when the graph and its instances are gone
  };
  std::mutex mu;
  std::vector<Node> nodes;
  ~Graph();
};

// One stream: work runs in order on its own worker thread. A ticket is the 1-based position of
// a work item in the stream; the stream has reached ticket t when `completed >= t`.
class Stream : public std::enable_shared_from_this<Stream> {
 public:
  struct Dep {
    std::shared_ptr<Stream> stream;
    uint64_t ticket = 0;
  };
  Stream(Device* device, bool legacy, bool blocking)
      : device_(device), legacy_(legacy), blocking_(blocking) {}
  // Starts the worker (detached; it holds the stream until Close and the queue is drained.
  // Legacy and per-thread streams are never closed: they live as long as the process).
  void Start();
  // Appends work (run after every dep is reached); returns its ticket.
  uint64_t Push(std::function<void()> fn, std::vector<Dep> deps);
  void WaitFor(uint64_t ticket);
  bool Reached(uint64_t ticket);
  uint64_t Enqueued();
  bool Pending();
  // When the stream last completed an item (CLOCK_MONOTONIC ns; 0: never).
  int64_t LastCompletedNs();
  void Close();  // the worker exits once the queue is empty
  // Capture: while a graph is set, Device::Enqueue adds work to it instead of running it.
  bool BeginCapture();                  // false: already capturing
  std::shared_ptr<Graph> EndCapture();  // null: not capturing
  std::shared_ptr<Graph> Capturing();
  Device* device() const { return device_; }
  bool legacy() const { return legacy_; }
  bool blocking() const { return blocking_; }

 private:
  struct Item {
    std::function<void()> fn;
    std::vector<Dep> deps;
    int64_t enqueued_ns = 0;
  };
  void Run();
  Device* device_;
  bool legacy_;
  bool blocking_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  uint64_t enqueued_ = 0;
  uint64_t completed_ = 0;
  int64_t last_completed_ns_ = 0;
  bool closing_ = false;
  int64_t last_deadline_ns_ = 0;  // worker-only: where the previous kernel's busy time ended
  std::shared_ptr<Graph> capture_;
};

class Device {
 public:
  Device(int id, int64_t clock_offset_ns, double drift_ppm);
  int id() const { return id_; }
  // This device's globaltimer at host CLOCK_MONOTONIC time mono_ns.
  uint64_t Globaltimer(int64_t mono_ns) const;
  std::shared_ptr<Stream> NewStream(bool blocking);
  std::shared_ptr<Stream> Legacy();
  // Enqueues on s with CUDA's implicit ordering: the legacy stream waits for every blocking
  // stream's pending work, a blocking stream for the legacy stream's. With
  // CUDA_LAUNCH_BLOCKING, returns only once the work is done (unless may_block is false: the
  // test bed's own entry points leave that to their caller).
  uint64_t Enqueue(const std::shared_ptr<Stream>& s, std::function<void()> fn,
                   std::vector<Stream::Dep> extra_deps = {}, bool may_block = true);
  void Synchronize();  // every stream of the device reached what was enqueued before the call

 private:
  int id_;
  int64_t clock_offset_ns_;
  double drift_ppm_;
  int64_t clock_epoch_ns_;
  std::mutex mu_;
  std::shared_ptr<Stream> legacy_;
  std::vector<std::weak_ptr<Stream>> streams_;
};

struct Event {
  unsigned flags = 0;
  std::mutex mu;
  std::shared_ptr<Stream> stream;  // where it was last recorded (null: never)
  uint64_t ticket = 0;
  uint64_t generation = 0;
  uint64_t time_ns = 0;  // the device's globaltimer when that record was reached
};

struct Kernel {
  std::string name;
  int nargs = 0;
};

// Process-wide state. Recreated in a forked child (the parent's workers do not exist there).
class Runtime {
 public:
  static Runtime& Get();
  static constexpr int kDevices = 8;
  bool launch_blocking() const { return launch_blocking_; }
  Device* device(int id) { return devices_[id].get(); }
  int current_device() const;
  void set_current_device(int id);
  // Resolves a stream handle (null/cudaStreamLegacy: the device's legacy stream;
  // cudaStreamPerThread: the calling thread's own; else a created stream). Null if unknown.
  std::shared_ptr<Stream> ResolveStream(cudaStream_t handle, int device);
  cudaStream_t AddStream(std::shared_ptr<Stream> s);
  bool RemoveStream(cudaStream_t handle);
  cudaEvent_t AddEvent(std::shared_ptr<Event> e);
  std::shared_ptr<Event> FindEvent(cudaEvent_t handle);
  bool RemoveEvent(cudaEvent_t handle);
  bool OwnsAllocation(void* p);
  void AddAllocation(void* p);
  void RemoveAllocation(void* p);

 private:
  Runtime();
  bool launch_blocking_ = false;
  std::vector<std::unique_ptr<Device>> devices_;
  std::mutex mu_;
  std::unordered_map<cudaStream_t, std::shared_ptr<Stream>> streams_;
  std::unordered_map<cudaEvent_t, std::shared_ptr<Event>> events_;
  std::unordered_map<void*, bool> allocations_;
};

// Kernels are part of the program image, like a fat binary's: registrations outlive a
// runtime recreated after fork.
void RegisterKernel(const void* func, Kernel k);
const Kernel* FindKernel(const void* func);

// The device the calling thread works for (a stream worker), else -1.
int WorkerDevice();
// Busy time inside a kernel (cudacpuKernelBusy).
void KernelBusy(uint64_t ns);

}  // namespace cudacpu

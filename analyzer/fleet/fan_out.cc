#include "analyzer/fleet/fan_out.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace rs::fleet {

std::vector<rs::Result<void>> ForEachNode(
    const std::vector<NodeAddress>& nodes, const ClientAuth& auth, const FanOutOptions& options,
    const std::function<rs::Result<void>(size_t, NodeClient&)>& work) {
  std::vector<rs::Result<void>> results(nodes.size(), rs::Ok());
  struct Busy {
    NodeClient* client = nullptr;
    int64_t deadline_ns = 0;
  };
  std::vector<Busy> busy(nodes.size());
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<size_t> next{0};
  bool done = false;

  auto worker = [&] {
    for (;;) {
      const size_t i = next++;
      if (i >= nodes.size()) return;
      NodeClient client(nodes[i], auth, options.timeout_ns, options.per_request);
      {
        std::lock_guard<std::mutex> lock(mu);
        busy[i] = {&client, SteadyNowNs() + options.timeout_ns};
      }
      rs::Result<void> r = work(i, client);
      {
        std::lock_guard<std::mutex> lock(mu);
        busy[i].client = nullptr;
        results[i] = std::move(r);
      }
    }
  };
  // Stops a node whose request outlives its limit by more than a grace period (the client's
  // own timeouts end most; this ends one that trickles bytes, or hangs in a read).
  auto watchdog = [&] {
    constexpr int64_t kGraceNs = 500'000'000;
    std::unique_lock<std::mutex> lock(mu);
    while (!done) {
      cv.wait_for(lock, std::chrono::milliseconds(50));
      const int64_t now = SteadyNowNs();
      for (Busy& b : busy) {
        if (b.client != nullptr && now > b.deadline_ns + kGraceNs) {
          b.client->Stop();
          b.deadline_ns = INT64_MAX;  // once
        }
      }
    }
  };
  const size_t threads = std::min<size_t>(nodes.size(), std::max(1, options.parallel));
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  std::thread dog;
  if (!options.per_request) dog = std::thread(watchdog);
  for (std::thread& t : pool) t.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
  }
  cv.notify_all();
  if (dog.joinable()) dog.join();
  return results;
}

}  // namespace rs::fleet

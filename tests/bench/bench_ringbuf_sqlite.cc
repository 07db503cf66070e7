// Benchmark (not a test): sustained events/s from a BPF ring buffer through the recorder's
// event loop into SQLite, drops, bytes per event in the finished bundle, and the loop
// thread's CPU use at fixed event rates. Run as root:
//   bench_ringbuf_sqlite [--seconds S] [--rates max,100000,10000] [--dir DIR]
//                        [--journal TRUNCATE|OFF|WAL|...]
//                        [--serve CERT_DIR [--query-every MS]]
// --serve: as `rankscope-record --serve` does (WAL, SQLite with a connection per thread, the
// fleet server on 127.0.0.1 with CERT_DIR/{ca,node,ws}.{pem,key}); --query-every: a
// workstation thread queries the live recording over HTTPS every MS ms (0: back to back)
// through rankscope-fleet's client, and the queries' count and latency are printed.
// Events: one sched_events row per getppid() of this process (a syscall tracepoint in
// recorder/bench_ringbuf.bpf.c); a producer thread makes the calls, the main thread runs
// rs::rec::EventLoop exactly as rankscope-record does.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "recorder/bench_ringbuf.skel.h"
#ifdef RANKSCOPE_WITH_SERVE
#include "analyzer/fleet/node_client.h"
#include "recorder/serve/server.h"
#endif
#include "recorder/event_loop.h"
#include "recorder/kernel_probe.h"
#include "recorder/preflight.h"
#include "recorder/ring_poller.h"
#include "recorder/sched_probe.h"

namespace {

// The temporary database's journal (default: the recorder's own, crash-safe).
std::string g_journal = rs::rec::RecordingDbOptions().journal_mode;
std::string g_serve_certs;  // --serve: the certificates' directory
int g_query_every_ms = -1;  // --query-every: -1 none

int64_t MonoNs(clockid_t id = CLOCK_MONOTONIC) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

class BenchProbe : public rs::rec::KernelProbe {
 public:
  std::string_view source() const override { return "bench"; }
  rs::Result<void> Start(rs::rec::RecorderContext& ctx) override {
    ctx_ = &ctx;
    ASSIGN_OR_RETURN(writer_,
                     rs::rec::SchedEventWriter::Create(*ctx.db, ctx.node, ctx.ids, ctx.clock));
    rs::rec::SkeletonOps<bench_ringbuf_bpf> ops{&bench_ringbuf_bpf__open, &bench_ringbuf_bpf__load,
                                                &bench_ringbuf_bpf__destroy};
    ASSIGN_OR_RETURN(bench_ringbuf_bpf * skel,
                     Load<bench_ringbuf_bpf>(ops, ctx, [](bench_ringbuf_bpf* s) {
                       s->rodata->bench_tgid = static_cast<uint32_t>(getpid());
                     }));
    RETURN_IF_ERROR(AttachAll(ctx));
    RETURN_IF_ERROR(AddRingBuffer(ctx, skel->maps.bench_rb));
    wall_start_ = MonoNs();
    cpu_start_ = MonoNs(CLOCK_THREAD_CPUTIME_ID);
    attached.store(true);
    return rs::Ok();
  }
  rs::Result<void> Finish(rs::rec::RecorderContext& ctx) override {
    auto r = FinishKernel(ctx);
    // The recording phase only: from attach to the end of the final drain.
    const double wall = static_cast<double>(MonoNs() - wall_start_);
    recording_cpu_pct =
        100.0 * static_cast<double>(MonoNs(CLOCK_THREAD_CPUTIME_ID) - cpu_start_) / wall;
    drain_cpu_pct = 100.0 * static_cast<double>(ctx.poller->drain_cpu_ns()) / wall;
    peak_queued_bytes = ctx.poller->peak_queued_bytes();
    return r;
  }

  std::atomic<bool> attached{false};
  double recording_cpu_pct = 0;
  double drain_cpu_pct = 0;  // the poller's drain thread (kernel rings -> memory batches)
  size_t peak_queued_bytes = 0;

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override { return writer_.Write(data); }

 private:
  rs::rec::SchedEventWriter writer_;
  int64_t wall_start_ = 0, cpu_start_ = 0;
};

struct RunResult {
  double seconds = 0;
  uint64_t calls = 0, events = 0, drops = 0;
  double loop_cpu_pct = 0;   // loop thread during recording (attach -> final drain)
  double drain_cpu_pct = 0;  // drain thread, same period
  size_t peak_queued_bytes = 0;
  double total_s = 0;  // Run() including finalize (indexes, compression)
  int64_t bundle_bytes = 0;
  int64_t queries = 0, query_errors = 0;
  double query_ms_median = 0, query_ms_max = 0;
};

#ifdef RANKSCOPE_WITH_SERVE
// The recording served as rankscope-record --serve serves it, and a workstation querying it.
class ServeLoad {
 public:
  ServeLoad(const std::string& live_db, rs::rec::LoopConfig& config) {
    if (g_serve_certs.empty()) return;
    rs::serve::ServerConfig sc;
    sc.options.host = "127.0.0.1";
    sc.options.port = 0;
    sc.options.tls = {g_serve_certs + "/ca.pem", g_serve_certs + "/node.pem",
                      g_serve_certs + "/node.key"};
    sc.node = "bench";
    sc.live_db = live_db;
    auto s = rs::serve::Server::Start(std::move(sc));
    if (!s.ok()) {
      std::fprintf(stderr, "bench: --serve: %s\n", s.error().message().c_str());
      std::exit(1);
    }
    server_ = std::move(s).value();
    config.before_end = [this] {
      stop_ = true;
      if (client_.joinable()) client_.join();
      server_->Stop();
    };
    if (g_query_every_ms < 0) return;
    auth_.tls = {g_serve_certs + "/ca.pem", g_serve_certs + "/ws.pem", g_serve_certs + "/ws.key"};
    client_ = std::thread([this] {
      rs::fleet::NodeAddress node{"bench", "127.0.0.1", server_->port()};
      while (!stop_) {
        rs::fleet::NodeClient c(node, auth_, 30'000'000'000);
        rs::wire::QueryRequest q;
        q.sql = "SELECT COUNT(*), SUM(duration_ns), MAX(timestamp_ns) FROM sched_events";
        const int64_t t0 = MonoNs();
        auto r = c.Query(q);
        (r.ok() ? latencies_ms_ : errors_).push_back((MonoNs() - t0) * 1e-6);
        for (int i = 0; i < g_query_every_ms && !stop_; ++i) usleep(1000);
      }
    });
  }
  void Fill(RunResult& r) {
    r.queries = static_cast<int64_t>(latencies_ms_.size());
    r.query_errors = static_cast<int64_t>(errors_.size());
    if (latencies_ms_.empty()) return;
    std::sort(latencies_ms_.begin(), latencies_ms_.end());
    r.query_ms_median = latencies_ms_[latencies_ms_.size() / 2];
    r.query_ms_max = latencies_ms_.back();
  }

 private:
  std::unique_ptr<rs::serve::Server> server_;
  rs::fleet::ClientAuth auth_;
  std::thread client_;
  std::atomic<bool> stop_{false};
  std::vector<double> latencies_ms_, errors_;
};
#else
struct ServeLoad {
  ServeLoad(const std::string&, rs::rec::LoopConfig&) {
    if (!g_serve_certs.empty()) {
      std::fprintf(stderr, "bench: built without the fleet server (cpp-httplib)\n");
      std::exit(1);
    }
  }
  void Fill(RunResult&) {}
};
#endif

// rate 0: as fast as possible.
RunResult RunOnce(const std::string& dir, double seconds, uint64_t rate) {
  RunResult res;
  std::string out = dir + "/bench_" + std::to_string(rate) + ".rsb";
  rs::rec::RecorderOptions opts;
  opts.out = out;
  opts.duration_ns = static_cast<int64_t>(seconds * 1e9) + 300'000'000;  // + start-up slack
  auto writer = rs::rec::RecordingDb::Create(out, {.journal_mode = g_journal});
  if (!writer.ok()) {
    std::fprintf(stderr, "%s\n", writer.error().message().c_str());
    std::exit(1);
  }
  std::vector<std::unique_ptr<rs::rec::Probe>> probes;
  auto owned = std::make_unique<BenchProbe>();
  BenchProbe* probe = owned.get();
  probes.push_back(std::move(owned));
  rs::rec::LoopConfig config;
  ServeLoad serve_load(writer->temp_path(), config);
  rs::rec::EventLoop loop(opts, rs::NodeName{"bench", "flag"}, std::move(*writer),
                          std::move(probes), std::move(config));

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> calls{0};
  std::thread producer([&] {
    while (!probe->attached.load() && !stop.load()) usleep(1000);  // count only attached calls
    int64_t t0 = MonoNs();
    uint64_t n = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      int64_t now = MonoNs();
      if (now - t0 > static_cast<int64_t>(seconds * 1e9)) break;
      if (rate == 0) {
        for (int i = 0; i < 256; ++i) syscall(SYS_getppid);
        n += 256;
      } else {
        uint64_t due = static_cast<uint64_t>((now - t0) * 1e-9 * rate);
        for (; n < due; ++n) syscall(SYS_getppid);
        usleep(500);
      }
    }
    calls = n;
  });
  int64_t w0 = MonoNs();
  auto summary = loop.Run();
  int64_t w1 = MonoNs();
  stop = true;
  producer.join();
  if (!summary.ok()) {
    std::fprintf(stderr, "bench: %s\n", summary.error().message().c_str());
    std::exit(1);
  }
  res.total_s = (w1 - w0) * 1e-9;
  res.seconds = seconds;
  res.calls = calls;
  res.events = summary->events;
  res.drops = summary->drops;
  res.loop_cpu_pct = probe->recording_cpu_pct;
  res.drain_cpu_pct = probe->drain_cpu_pct;
  res.peak_queued_bytes = probe->peak_queued_bytes;
  serve_load.Fill(res);
  struct stat st {};
  if (stat(out.c_str(), &st) == 0) res.bundle_bytes = st.st_size;
  unlink(out.c_str());
  return res;
}

// The writer alone: rows/s of SchedEventWriter into the recording db in 10k-row transactions.
void WriterOnly(const std::string& dir, uint64_t n) {
  std::string out = dir + "/bench_writer.rsb";
  auto writer = rs::rec::RecordingDb::Create(out, {.journal_mode = g_journal});
  if (!writer.ok()) std::exit(1);
  rs::EventIdAllocator ids(1);
  rs::MonoToWall clock;
  rs::WallClock wall;
  clock.Add(wall.TakeRef("start"));
  auto w = rs::rec::SchedEventWriter::Create(writer->db(), "bench", &ids, &clock);
  if (!w.ok()) std::exit(1);
  rs_sched_event e{};
  e.kind = RS_SCHED_RUNQ;
  e.duration_ns = 15000;
  e.pid = e.tid = 100;
  std::memcpy(e.other_comm, "competitor", 10);
  if (const char* p = std::getenv("BENCH_PRAGMAS")) (void)writer->db().Exec(p);
  int64_t t0 = MonoNs();
  (void)writer->db().Exec("BEGIN");
  for (uint64_t i = 0; i < n; ++i) {
    e.ts_ns = static_cast<uint64_t>(t0) + i * 1000;
    if (!w->Write({reinterpret_cast<const uint8_t*>(&e), sizeof(e)}).ok()) std::exit(1);
    if (i % 10000 == 9999) (void)writer->db().Exec("COMMIT; BEGIN");
  }
  (void)writer->db().Exec("COMMIT");
  int64_t t1 = MonoNs();
  std::printf("writer only: %llu rows in %.2f s = %.0f rows/s\n",
              static_cast<unsigned long long>(n), (t1 - t0) * 1e-9, n / ((t1 - t0) * 1e-9));
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3;
  std::string rates = "0,100000,10000";
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--seconds")
      seconds = std::atof(argv[i + 1]);
    else if (a == "--rates")
      rates = argv[i + 1];
    else if (a == "--dir")
      dir = argv[i + 1];
    else if (a == "--journal")
      g_journal = argv[i + 1];
    else if (a == "--serve")
      g_serve_certs = argv[i + 1];
    else if (a == "--query-every")
      g_query_every_ms = std::atoi(argv[i + 1]);
    else if (a == "--writer-only") {
      WriterOnly(dir, std::strtoull(argv[i + 1], nullptr, 10));
      return 0;
    }
  }
  // As rankscope-record does: SQLite from one thread, or with --serve one connection per thread
  // and the database in WAL mode.
  if (!g_serve_certs.empty()) {
    (void)rs::UseSqliteConnectionsPerThread();
    g_journal = "WAL";
  } else {
    (void)rs::UseSqliteFromOneThreadOnly();
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "bench_ringbuf_sqlite: run as root (loads a BPF program)\n");
    return 1;
  }
  if (auto r = rs::rec::EnsureTracefs(); !r.ok()) {  // its program is a classic tracepoint
    std::fprintf(stderr, "bench_ringbuf_sqlite: %s\n", r.error().message().c_str());
    return 1;
  }
  // calls = events + drops + lost; lost must be 0 (every call after attach is accounted).
  std::printf("%-8s %10s %10s %12s %9s %6s %10s %11s %10s %12s %9s %8s %10s\n", "rate", "calls",
              "events", "events/s", "drops", "lost", "loop CPU%", "drain CPU%", "peak MiB",
              "bytes/event", "total s", "queries", "query ms");
  std::stringstream ss(rates);
  std::string item;
  while (std::getline(ss, item, ',')) {
    uint64_t rate = item == "max" ? 0 : std::strtoull(item.c_str(), nullptr, 10);
    RunResult r = RunOnce(dir, seconds, rate);
    long long lost = static_cast<long long>(r.calls) - static_cast<long long>(r.events) -
                     static_cast<long long>(r.drops);
    char queries[32] = "-", latency[32] = "-";
    if (r.queries || r.query_errors) {
      std::snprintf(queries, sizeof queries, "%lld%s", static_cast<long long>(r.queries),
                    r.query_errors ? "+err" : "");
      std::snprintf(latency, sizeof latency, "%.0f/%.0f", r.query_ms_median, r.query_ms_max);
    }
    std::printf(
        "%-8s %10llu %10llu %12.0f %9llu %6lld %10.1f %11.1f %10.1f %12.2f %9.2f %8s %10s\n",
        rate == 0 ? "max" : item.c_str(), static_cast<unsigned long long>(r.calls),
        static_cast<unsigned long long>(r.events), r.events / r.seconds,
        static_cast<unsigned long long>(r.drops), lost, r.loop_cpu_pct, r.drain_cpu_pct,
        static_cast<double>(r.peak_queued_bytes) / (1 << 20),
        r.events ? static_cast<double>(r.bundle_bytes) / r.events : 0.0, r.total_s, queries,
        latency);
    std::fflush(stdout);
  }
  return 0;
}

// Command-line options of rankscope-record (see man/rankscope-record.8).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rscore/result.h"

namespace rs::rec {

enum class Scope {
  kHost,   // every network namespace of the host
  kNetns,  // only the recorder's own network namespace
};
std::string_view ScopeName(Scope scope);

inline constexpr uint64_t kDefaultRingSizeBytes = uint64_t{1} << 30;
inline constexpr const char* kDefaultRingDir = "/var/lib/rankscope/ring";
inline constexpr uint64_t kDefaultCutKeepBytes = uint64_t{10} << 30;

struct RecorderOptions {
  std::string out;                         // --out FILE.rsb (required, except with --recover)
  bool force = false;                      // --force: replace an existing --out
  // --recover FILE: turn a temporary database left behind by a recorder into a bundle.
  std::optional<std::string> recover;
  std::optional<int64_t> duration_ns;      // --duration; none = until SIGINT/SIGTERM
  std::optional<std::string> node;         // --node
  std::optional<std::string> config_path;  // --config
  std::vector<int> pids;                   // --pid (repeatable): processes to trace from the start
  Scope scope = Scope::kHost;              // --scope host|netns
  // Testing only: shift this recorder's view of the wall clock (never written anywhere).
  int64_t simulate_clock_offset_ns = 0;  // --simulate-clock-offset NS
  double simulate_clock_drift_ppm = 0;   // --simulate-clock-drift PPM
  std::string simulate_rdma_sysfs;       // --simulate-rdma-sysfs DIR (empty: /sys)
  std::vector<std::string> nccl_libs;    // --nccl-lib PATH (repeatable)
  std::vector<std::string> cuda_libs;    // --cuda-lib PATH (repeatable)
  int cuda_launch_sample = 1;  // --cuda-launch-sample N: record 1 in N kernel launches (0: none)
  // --no-load-tracepoint: find later library loads by rescans only (the library-load
  // tracepoint puts every task of the node on the traced system-call path).
  bool load_tracepoint = true;
  // --no-gpu: leave rankscope's NCCL profiler plugin unread (the gpu source; without a
  // reader the plugin records nothing and asks NCCL for no device-side events).
  bool gpu = true;
  // --nccl-calls setup: probe only communicator setup and teardown (init, split, destroy,
  // abort), not every collective / send / receive / group call (see UsageText).
  bool nccl_calls_setup_only = false;
  // --sources LIST: the sources to record (process, tcp, sched, block, nccl, cuda, gpu);
  // empty: all. A source left out costs nothing and is 'off' in the bundle's sources table.
  std::vector<std::string> sources;
  // --ring D: record all the time, keeping the last D in the working database in
  // --ring-dir, and write a bundle of it (a cut) on SIGUSR1, `rankscope-record cut` and stop.
  std::optional<int64_t> ring_ns;
  uint64_t ring_size_bytes = kDefaultRingSizeBytes;  // --ring-size BYTES: cap on the ring's rows
  std::string ring_dir = kDefaultRingDir;            // --ring-dir DIR
  std::string cut_dir;                               // --cut-dir DIR; default RING_DIR/cuts
  // --cut-keep BYTES: this node's cuts are removed oldest first beyond this (0: all kept).
  uint64_t cut_keep_bytes = kDefaultCutKeepBytes;
  // --cut-on-stall D: cut when a call (NCCL, or a CUDA sync) has been in flight for D.
  std::optional<int64_t> cut_on_stall_ns;
  // --cut-on-slowdown FRACTION: cut when the node's collective rate over 10 s falls below
  // FRACTION of its median over the last 5 minutes.
  std::optional<double> cut_on_slowdown;
  // --serve ADDR[:PORT]: serve the live recording (and with --ring the cuts) read-only over
  // HTTPS to rankscope-fleet (recorder/serve/); the --serve-NAME options by NAME ("ca",
  // "cert", "key", "token-file", "max-queries", ...), checked where the server is built.
  std::optional<std::string> serve;
  std::vector<std::pair<std::string, std::string>> serve_options;
  bool cut_command = false;                          // `rankscope-record cut`
  int64_t cut_timeout_ns = int64_t{120} * 1'000'000'000;  // cut --timeout D
  bool verbose = false;  // -v
  bool quiet = false;    // -q: no informational lines (log.h LogInfo), warnings and errors kept
  bool help = false;     // --help
  bool version = false;  // --version
};

// Parses argv (getopt_long; resets getopt's state so it can be called more than once).
// Errors are one line naming the flag and what to do.
rs::Result<RecorderOptions> ParseOptions(int argc, char** argv);

// Convenience for tests: argv[0] is added.
rs::Result<RecorderOptions> ParseOptions(const std::vector<std::string>& args);

std::string UsageText();

// Why --out - is refused: the bundle is written in place as the recording goes (a temporary
// database beside it, renamed when complete), which standard output cannot be.
inline constexpr const char* kOutDashRefused =
    "--out -: a bundle is a file (it is built beside its name while recording and renamed "
    "when complete), not standard output; give a path, then copy it (e.g. cat node3.rsb)";

// "512M", "2G", "100000" -> bytes (K, M, G, T: powers of 1024).
rs::Result<uint64_t> ParseBytes(std::string_view text);
// Where cuts go: --cut-dir, else RING_DIR/cuts.
std::string CutDir(const RecorderOptions& o);

// Every source the recorder knows, in the order it starts them.
inline constexpr std::string_view kSourceNames[] = {"process", "tcp", "sched", "block",
                                                    "nccl",    "cuda", "gpu",  "rdma"};
// Whether --sources selects `source` (every source when none was given).
bool SourceSelected(const RecorderOptions& o, std::string_view source);

}  // namespace rs::rec

#include "recorder/options.h"

#include <algorithm>

#include <getopt.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "rscore/byte_size.h"
#include "rscore/duration.h"

namespace rec {
namespace {

enum LongOnly {
  kOptScope = 1000,
  kOptSimOffset,
  kOptSimDrift,
  kOptSimRdmaSysfs,
  kOptNcclLib,
  kOptCudaLib,
  kOptCudaSample,
  kOptNoLoadTracepoint,
  kOptNoGpu,
  kOptNcclCalls,
  kOptHelp,
  kOptVersion,
  kOptForce,
  kOptRecover,
  kOptSources,
  kOptRing,
  kOptRingSize,
  kOptRingDir,
  kOptCutDir,
  kOptTimeout,
  kOptCutOnStall,
  kOptCutKeep,
  kOptCutOnSlowdown,
  kOptServe,
  kOptServeOption,  // --serve-NAME: kOptServeOption + index in kServeOptionNames
};

// The server's own options, spelled --serve-NAME (recorder/serve/serve_options.h).
constexpr const char* kServeOptionNames[] = {"ca",
                                             "cert",
                                             "key",
                                             "token-file",
                                             "max-connections",
                                             "max-queries",
                                             "max-rows",
                                             "max-result-bytes",
                                             "max-request-bytes",
                                             "query-timeout"};

const option kLongOptions[] = {
    {"out", required_argument, nullptr, 'o'},
    {"force", no_argument, nullptr, kOptForce},
    {"recover", required_argument, nullptr, kOptRecover},
    {"duration", required_argument, nullptr, 'd'},
    {"node", required_argument, nullptr, 'n'},
    {"config", required_argument, nullptr, 'c'},
    {"pid", required_argument, nullptr, 'p'},
    {"scope", required_argument, nullptr, kOptScope},
    {"simulate-clock-offset", required_argument, nullptr, kOptSimOffset},
    {"simulate-clock-drift", required_argument, nullptr, kOptSimDrift},
    {"simulate-rdma-sysfs", required_argument, nullptr, kOptSimRdmaSysfs},
    {"nccl-lib", required_argument, nullptr, kOptNcclLib},
    {"cuda-lib", required_argument, nullptr, kOptCudaLib},
    {"cuda-launch-sample", required_argument, nullptr, kOptCudaSample},
    {"no-load-tracepoint", no_argument, nullptr, kOptNoLoadTracepoint},
    {"no-gpu", no_argument, nullptr, kOptNoGpu},
    {"nccl-calls", required_argument, nullptr, kOptNcclCalls},
    {"sources", required_argument, nullptr, kOptSources},
    {"ring", required_argument, nullptr, kOptRing},
    {"ring-size", required_argument, nullptr, kOptRingSize},
    {"ring-dir", required_argument, nullptr, kOptRingDir},
    {"cut-dir", required_argument, nullptr, kOptCutDir},
    {"timeout", required_argument, nullptr, kOptTimeout},
    {"cut-on-stall", required_argument, nullptr, kOptCutOnStall},
    {"cut-keep", required_argument, nullptr, kOptCutKeep},
    {"cut-on-slowdown", required_argument, nullptr, kOptCutOnSlowdown},
    {"serve", required_argument, nullptr, kOptServe},
    {"serve-ca", required_argument, nullptr, kOptServeOption + 0},
    {"serve-cert", required_argument, nullptr, kOptServeOption + 1},
    {"serve-key", required_argument, nullptr, kOptServeOption + 2},
    {"serve-token-file", required_argument, nullptr, kOptServeOption + 3},
    {"serve-max-connections", required_argument, nullptr, kOptServeOption + 4},
    {"serve-max-queries", required_argument, nullptr, kOptServeOption + 5},
    {"serve-max-rows", required_argument, nullptr, kOptServeOption + 6},
    {"serve-max-result-bytes", required_argument, nullptr, kOptServeOption + 7},
    {"serve-max-request-bytes", required_argument, nullptr, kOptServeOption + 8},
    {"serve-query-timeout", required_argument, nullptr, kOptServeOption + 9},
    {"verbose", no_argument, nullptr, 'v'},
    {"quiet", no_argument, nullptr, 'q'},
    {"help", no_argument, nullptr, kOptHelp},
    {"version", no_argument, nullptr, kOptVersion},
    {nullptr, 0, nullptr, 0},
};

rs::Result<int64_t> ParseInt(const std::string& flag, const char* text, int64_t min, int64_t max) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
    return rs::Error(flag + " '" + text + "': expected an integer from " + std::to_string(min) +
                     " to " + std::to_string(max));
  }
  return static_cast<int64_t>(v);
}

rs::Result<double> ParseDouble(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(v)) {
    return rs::Error(flag + " '" + text + "': expected a number");
  }
  return v;
}

std::string FlagName(int opt) {
  for (const option* o = kLongOptions; o->name; ++o) {
    if (o->val == opt) return std::string("--") + o->name;
  }
  return std::string("-") + static_cast<char>(opt);
}

}  // namespace

std::string_view ScopeName(Scope scope) { return scope == Scope::kNetns ? "netns" : "host"; }

rs::Result<RecorderOptions> ParseOptions(int argc, char** argv) {
  RecorderOptions o;
  // `rankscope-record cut [--ring-dir DIR] [--timeout D]`: the subcommand, then options.
  if (argc > 1 && std::string_view(argv[1]) == "cut") {
    o.cut_command = true;
    --argc;
    ++argv;
  }
  optind = 0;  // full reset of getopt's state (GNU): parse from the start again
  opterr = 0;  // errors are reported by us, as one line
  for (;;) {
    int idx = 0;
    int opt = getopt_long(argc, argv, ":o:d:n:c:p:vqh", kLongOptions, &idx);
    if (opt == -1) break;
    const char* arg = optarg;
    switch (opt) {
      case 'o':
        if (!*arg) return rs::Error("--out: empty path");
        if (std::string_view(arg) == "-") return rs::Error(kOutDashRefused);
        o.out = arg;
        break;
      case kOptForce:
        o.force = true;
        break;
      case kOptRecover:
        if (!*arg) return rs::Error("--recover: empty path");
        o.recover = arg;
        break;
      case 'd': {
        auto d = rs::ParseDuration(arg);
        if (!d.ok()) {
          return rs::Error(std::string("--duration '") + arg + "': " + d.error().message() +
                           " (use e.g. 30s, 500ms, 2m)");
        }
        o.duration_ns = *d;
        break;
      }
      case kOptRing:
      case kOptTimeout:
      case kOptCutOnStall: {
        auto d = rs::ParseDuration(arg);
        if (!d.ok() || *d <= 0) {
          return rs::Error(FlagName(opt) + " '" + arg + "': " +
                           (d.ok() ? std::string("must be more than 0") : d.error().message()) +
                           " (use e.g. 15m, 90s)");
        }
        if (opt == kOptRing) {
          o.ring_ns = *d;
        } else if (opt == kOptCutOnStall) {
          o.cut_on_stall_ns = *d;
        } else {
          o.cut_timeout_ns = *d;
        }
        break;
      }
      case kOptRingSize: {
        auto b = ParseBytes(arg);
        if (!b.ok())
          return rs::Error("--ring-size '" + std::string(arg) + "': " + b.error().message());
        if (*b < (uint64_t{1} << 20)) {
          return rs::Error("--ring-size '" + std::string(arg) + "': at least 1M");
        }
        o.ring_size_bytes = *b;
        break;
      }
      case kOptCutOnSlowdown: {
        ASSIGN_OR_RETURN(double f, ParseDouble("--cut-on-slowdown", arg));
        if (f <= 0 || f >= 1) {
          return rs::Error("--cut-on-slowdown '" + std::string(arg) +
                           "': a fraction between 0 and 1 (e.g. 0.5)");
        }
        o.cut_on_slowdown = f;
        break;
      }
      case kOptCutKeep: {
        auto b = ParseBytes(arg);
        if (!b.ok())
          return rs::Error("--cut-keep '" + std::string(arg) + "': " + b.error().message());
        o.cut_keep_bytes = *b;
        break;
      }
      case kOptRingDir:
      case kOptCutDir:
        if (!*arg) return rs::Error(FlagName(opt) + ": empty path");
        (opt == kOptRingDir ? o.ring_dir : o.cut_dir) = arg;  // both std::string lvalues
        break;
      case 'n':
        o.node = arg;
        break;
      case 'c':
        o.config_path = arg;
        break;
      case 'p': {
        ASSIGN_OR_RETURN(int64_t pid, ParseInt("--pid", arg, 1, 0x3fffffff));
        o.pids.push_back(static_cast<int>(pid));
        break;
      }
      case kOptScope: {
        std::string s = arg;
        if (s == "host") {
          o.scope = Scope::kHost;
        } else if (s == "netns") {
          o.scope = Scope::kNetns;
        } else {
          return rs::Error("--scope '" + s + "': expected 'host' or 'netns'");
        }
        break;
      }
      case kOptSimOffset: {
        ASSIGN_OR_RETURN(
            o.simulate_clock_offset_ns,
            ParseInt("--simulate-clock-offset", arg, -(int64_t{1} << 62), int64_t{1} << 62));
        break;
      }
      case kOptSimDrift: {
        ASSIGN_OR_RETURN(o.simulate_clock_drift_ppm, ParseDouble("--simulate-clock-drift", arg));
        if (std::fabs(o.simulate_clock_drift_ppm) > 1e5) {
          return rs::Error(std::string("--simulate-clock-drift '") + arg +
                           "': must be within +-100000 ppm");
        }
        break;
      }
      case kOptSimRdmaSysfs:
        if (*arg == '\0') return rs::Error("--simulate-rdma-sysfs: give a directory");
        o.simulate_rdma_sysfs = arg;
        break;
      case kOptNcclLib:
        o.nccl_libs.emplace_back(arg);
        break;
      case kOptCudaLib:
        o.cuda_libs.emplace_back(arg);
        break;
      case kOptCudaSample: {
        ASSIGN_OR_RETURN(int64_t n, ParseInt("--cuda-launch-sample", arg, 0, 1000000));
        o.cuda_launch_sample = static_cast<int>(n);
        break;
      }
      case kOptNoLoadTracepoint:
        o.load_tracepoint = false;
        break;
      case kOptNoGpu:
        o.gpu = false;
        break;
      case kOptNcclCalls:
        if (std::strcmp(arg, "all") == 0) {
          o.nccl_calls_setup_only = false;
        } else if (std::strcmp(arg, "setup") == 0) {
          o.nccl_calls_setup_only = true;
        } else {
          return rs::Error(std::string("--nccl-calls '") + arg + "': use all or setup");
        }
        break;
      case kOptSources: {
        o.sources.clear();
        std::string list(arg);
        for (size_t b = 0; b <= list.size();) {
          size_t e = list.find(',', b);
          if (e == std::string::npos) e = list.size();
          std::string name = list.substr(b, e - b);
          b = e + 1;
          if (name.empty()) continue;
          if (std::find(std::begin(kSourceNames), std::end(kSourceNames), name) ==
              std::end(kSourceNames)) {
            return rs::Error("--sources: unknown source '" + name +
                             "' (known: process,tcp,sched,block,nccl,cuda,gpu,rdma)");
          }
          o.sources.push_back(name);
        }
        if (o.sources.empty()) return rs::Error("--sources: no source named");
        break;
      }
      case kOptServe:
        if (!*arg) return rs::Error(std::string("--serve: empty address"));
        o.serve = arg;
        break;
      case 'v':
        o.verbose = true;
        break;
      case 'q':
        o.quiet = true;
        break;
      case 'h':
      case kOptHelp:
        o.help = true;
        break;
      case kOptVersion:
        o.version = true;
        break;
      case ':':
        return rs::Error(FlagName(optopt ? optopt : kLongOptions[idx].val) + " needs a value");
      default: {
        const int serve_index = opt - kOptServeOption;
        if (serve_index >= 0 && serve_index < static_cast<int>(std::size(kServeOptionNames))) {
          o.serve_options.emplace_back(kServeOptionNames[serve_index], arg);
          break;
        }
        std::string bad = (optind > 0 && optind <= argc) ? argv[optind - 1] : "?";
        if (optopt && optopt < 256 && bad.rfind("--", 0) != 0) {
          bad = std::string("-") + static_cast<char>(optopt);
        }
        return rs::Error("unknown option '" + bad + "'");
      }
    }
  }
  if (optind < argc) {
    return rs::Error(std::string("unexpected argument '") + argv[optind] +
                     "' (options take the form --name VALUE)");
  }
  if (o.help || o.version) return o;
  if (!o.serve_options.empty() && !o.serve) {
    return rs::Error("--serve-" + o.serve_options.front().first +
                     " configures the server: give --serve ADDR[:PORT] too");
  }
  if (o.serve && (o.cut_command || o.recover)) {
    return rs::Error(std::string("--serve serves a recording: not with ") +
                     (o.cut_command ? "cut" : "--recover"));
  }
  if (o.cut_command) {
    if (!o.out.empty() || o.ring_ns || o.duration_ns || o.recover || !o.pids.empty()) {
      return rs::Error("cut takes only --ring-dir, --timeout, -q and -v");
    }
    return o;
  }
  if ((o.cut_on_stall_ns || o.cut_on_slowdown) && !o.ring_ns) {
    return rs::Error(std::string(o.cut_on_stall_ns ? "--cut-on-stall" : "--cut-on-slowdown") +
                     " cuts the ring: give --ring too");
  }
  if (o.ring_ns) {
    if (!o.out.empty() || o.recover) {
      return rs::Error(
          "--ring records into --ring-dir and writes its bundles (cuts) into --cut-dir: no --out");
    }
    return o;
  }
  if (o.recover) {
    if (o.duration_ns || o.node || o.config_path || !o.pids.empty() || !o.sources.empty()) {
      return rs::Error("--recover FILE takes only --out, --force, -q and -v");
    }
    return o;
  }
  if (o.out.empty()) {
    return rs::Error("--out FILE.rsb is required (where to write the bundle)");
  }
  return o;
}

rs::Result<RecorderOptions> ParseOptions(const std::vector<std::string>& args) {
  std::vector<std::string> storage;
  storage.reserve(args.size() + 1);
  storage.emplace_back("rankscope-record");
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  return ParseOptions(static_cast<int>(storage.size()), argv.data());
}

std::string UsageText() {
  return R"(usage: rankscope-record --out FILE.rsb [options]
       rankscope-record --ring D [--ring-size BYTES] [--ring-dir DIR] [--cut-dir DIR] [options]
       rankscope-record cut [--ring-dir DIR] [--timeout D]
       rankscope-record --recover DIR [--out FILE.rsb] [--force]

Records kernel (TCP retransmits, scheduler, block I/O, process exec/exit), NCCL and CUDA
activity on this node into a zstd-compressed SQLite bundle. Needs root.

options:
  -o, --out FILE.rsb          bundle to write (written atomically, mode 0600); an existing
                              file is refused unless --force; not - (a bundle is a file:
                              copy it once written)
      --force                 replace an existing --out
      --recover DIR           turn the working directory DIR (.NAME.rec-PID-XXXXXX, or an
                              earlier recorder's .db file) left behind by a recorder that
                              died into a bundle (default --out: the bundle that recorder
                              was writing), then remove it
  -d, --duration D            stop after D (e.g. 500ms, 30s, 2m); default: until SIGINT/SIGTERM
      --ring D                record all the time, keeping only the last D (e.g. 15m) in a
                              working database in --ring-dir; a bundle of what it holds (a
                              cut) is written on SIGUSR1, on `rankscope-record cut` and at stop,
                              to CUT_DIR/CUT-ID/NODE.rsb
      --ring-size BYTES       the most the ring's rows may take on disk (default 1G; e.g. 512M):
                              the oldest go first, counted in the cut's metadata
      --ring-dir DIR          the ring's working database and recorder.pid (default
                              /var/lib/rankscope/ring)
      --timeout D             cut only: how long to wait for the cut (default 2m)
      --cut-dir DIR           where cuts go (default RING_DIR/cuts); a directory shared by
                              the nodes makes every node cut when one does
      --cut-keep BYTES        remove this node's oldest cuts beyond BYTES (default 10G; 0: keep
                              all)
      --cut-on-slowdown F     cut when this node's collectives per 10 s fall below F (e.g.
                              0.5) of their median over the last 5 minutes: once per
                              slowdown
      --cut-on-stall D        cut when an NCCL call or a CUDA synchronization has been in
                              flight for D (e.g. 30s): once per stall
  -n, --node NAME             node name (else config 'node =', else $RANKSCOPE_NODE, else hostname)
  -c, --config FILE           config file with 'key = value' lines (known key: node)
  -p, --pid PID               trace this process from the start (repeatable)
      --scope host|netns      record the whole host (default) or only this network namespace
      --nccl-lib PATH         also attach to this libnccl (repeatable)
      --cuda-lib PATH         also attach to this libcudart / libcuda (repeatable)
      --cuda-launch-sample N  record 1 in N CUDA kernel launches (default 1: all; 0: do not
                              probe launches at all: a launch left out by sampling still
                              pays the probe, about 1-8 us on the calling thread)
      --no-load-tracepoint    find libraries loaded later by rescans only (every 500 ms and
                              after an exec), not at once: saves about 40 ns on every system
                              call of the node, costs up to about 150 ms of calls per late load
      --nccl-calls all|setup  which NCCL calls to probe: all (default) or only communicator
                              setup and teardown; with setup, collectives, sends, receives
                              and group calls cost no probe (about 1-8 us each on the calling
                              thread) and leave no nccl_events rows: the plugin's gpu_ops
                              still have them, joined through the setup calls, but without
                              return codes, callers or failed calls
      --no-gpu                do not read rankscope's NCCL profiler plugin (table gpu_ops: when
                              the GPU ran each collective); the plugin then records nothing
      --sources LIST          record only these sources (comma-separated: process, tcp, sched,
                              block, nccl, cuda, gpu, rdma; default all); the others cost nothing.
                              process stays with nccl, cuda or gpu (they follow its execs)
      --serve ADDR[:PORT]     serve this recording read-only over HTTPS (TLS 1.3) to
                              rankscope-fleet: queries on the live recording, with --ring the
                              cuts for download, this node's clock (default port 7443)
      --serve-cert FILE       the node's certificate (PEM)
      --serve-key FILE        its private key (PEM)
      --serve-ca FILE         clients must present a certificate of this CA (mutual TLS)
      --serve-token-file FILE or: clients must send this bearer token (mode 0600)
      --serve-max-queries N   queries run at once, more get 503 (default 2); also
                              --serve-max-connections N (8), --serve-max-rows N (100000),
                              --serve-max-result-bytes N (16M), --serve-max-request-bytes N
                              (64K), --serve-query-timeout D (30s): see rankscope-serve(8)
  -v, --verbose               log every attachment
  -q, --quiet                 no informational lines (the start, the final summary, cuts);
                              warnings and errors are still printed
  -h, --help                  show this help
      --version               show the version

Testing only (never use on a real cluster; the values are not stored):
      --simulate-clock-offset NS   shift this recorder's wall clock by NS nanoseconds
      --simulate-clock-drift PPM   let this recorder's wall clock drift by PPM
      --simulate-rdma-sysfs DIR    read the RDMA ports under DIR/class/infiniband instead
                                   of /sys (a fake sysfs tree: only regular files are read)

examples:
  rankscope-record --out node3.rsb --duration 2m
      two minutes of this node, while the job is slow
  rankscope-record --out node3.rsb --nccl-calls setup
      until Ctrl-C, without a probe on every NCCL call (the profiler plugin times them)
  rankscope-record --ring 15m --ring-size 2G
      always on: the last 15 minutes are kept; `rankscope-record cut` writes them out
  rankscope-record --ring 15m --serve :7443 --serve-cert node3.pem --serve-key node3.key \
      --serve-ca ca.pem
      always on, and rankscope-fleet may query the live ring and collect its cuts
  rankscope-record --recover .node3.rsb.rec-4242-Ab12Cd
      after a recorder was killed: what it had committed becomes node3.rsb

exit status: 0 done, 1 error, 2 usage error.
See rankscope-record(8).
)";
}

rs::Result<uint64_t> ParseBytes(std::string_view text) { return rs::ParseByteSize(text); }

std::string CutDir(const RecorderOptions& o) {
  return o.cut_dir.empty() ? o.ring_dir + "/cuts" : o.cut_dir;
}

bool SourceSelected(const RecorderOptions& o, std::string_view source) {
  return o.sources.empty() ||
         std::find(o.sources.begin(), o.sources.end(), source) != o.sources.end();
}

}  // namespace rec

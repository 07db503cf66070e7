#include "recorder/options.h"

#include <getopt.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "rscore/byte_size.h"
#include "rscore/duration.h"

namespace rs::rec {
namespace {

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

rs::Result<int64_t> PositiveDuration(const std::string& flag, const char* text) {
  auto d = rs::ParseDuration(text);
  if (!d.ok() || *d <= 0) {
    return rs::Error(flag + " '" + text +
                     "': " + (d.ok() ? std::string("must be more than 0") : d.error().message()) +
                     " (use e.g. 15m, 90s)");
  }
  return *d;
}

rs::Result<uint64_t> Bytes(const std::string& flag, const char* text) {
  auto b = ParseBytes(text);
  if (!b.ok()) return rs::Error(flag + " '" + text + "': " + b.error().message());
  return *b;
}

rs::Result<std::string> Path(const std::string& flag, const char* text) {
  if (!*text) return rs::Error(flag + ": empty path");
  return std::string(text);
}

rs::Result<void> ParseSources(RecorderOptions& o, const std::string& list) {
  o.sources.clear();
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
  return rs::Ok();
}

// --serve-NAME: the server's own option NAME (recorder/serve/serve_options.h).
rs::Result<void> ServeOption(RecorderOptions& o, const char* name, const char* arg) {
  o.serve_options.emplace_back(std::string_view(name).substr(6), arg);
  return rs::Ok();
}

enum class Section { kMain, kTesting };

// Every option, once: getopt's table, the parser and --help are made from it (and the bash
// completion is tested against --help).
struct Spec {
  const char* name;   // --NAME
  char short_name;    // -X, or 0
  const char* value;  // the value's name in --help; nullptr: a flag
  Section section;
  // Its lines in --help; nullptr: not listed (another option's text names it).
  const char* help;
  // name: --NAME without the dashes; arg: nullptr for a flag
  rs::Result<void> (*apply)(RecorderOptions& o, const char* name, const char* arg);
};

const Spec kSpecs[] = {
    {"out", 'o', "FILE.rsb", Section::kMain,
     "bundle to write (written atomically, mode 0600); an existing\n"
     "file is refused unless --force; not - (a bundle is a file:\n"
     "copy it once written)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       if (!*arg) return rs::Error("--out: empty path");
       if (std::string_view(arg) == "-") return rs::Error(kOutDashRefused);
       o.out = arg;
       return rs::Ok();
     }},
    {"force", 0, nullptr, Section::kMain, "replace an existing --out",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.force = true;
       return rs::Ok();
     }},
    {"recover", 0, "DIR", Section::kMain,
     "turn the working directory DIR (.NAME.rec-PID-XXXXXX, or an\n"
     "earlier recorder's .db file) left behind by a recorder that\n"
     "died into a bundle (default --out: the bundle that recorder\n"
     "was writing), then remove it",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       if (!*arg) return rs::Error("--recover: empty path");
       o.recover = arg;
       return rs::Ok();
     }},
    {"duration", 'd', "D", Section::kMain,
     "stop after D (e.g. 500ms, 30s, 2m); default: until SIGINT/SIGTERM",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       auto d = rs::ParseDuration(arg);
       if (!d.ok()) {
         return rs::Error(std::string("--duration '") + arg + "': " + d.error().message() +
                          " (use e.g. 30s, 500ms, 2m)");
       }
       o.duration_ns = *d;
       return rs::Ok();
     }},
    {"ring", 0, "D", Section::kMain,
     "record all the time, keeping only the last D (e.g. 15m) in a\n"
     "working database in --ring-dir; a bundle of what it holds (a\n"
     "cut) is written on SIGUSR1, on `rankscope-record cut` and at stop,\n"
     "to CUT_DIR/CUT-ID/NODE.rsb",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.ring_ns, PositiveDuration("--ring", arg));
       return rs::Ok();
     }},
    {"ring-size", 0, "BYTES", Section::kMain,
     "the most the ring's rows may take on disk (default 1G; e.g. 512M):\n"
     "the oldest go first, counted in the cut's metadata",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.ring_size_bytes, Bytes("--ring-size", arg));
       if (o.ring_size_bytes < (uint64_t{1} << 20)) {
         return rs::Error("--ring-size '" + std::string(arg) + "': at least 1M");
       }
       return rs::Ok();
     }},
    {"ring-dir", 0, "DIR", Section::kMain,
     "the ring's working database and recorder.pid (default\n"
     "/var/lib/rankscope/ring)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.ring_dir, Path("--ring-dir", arg));
       return rs::Ok();
     }},
    {"timeout", 0, "D", Section::kMain, "cut only: how long to wait for the cut (default 2m)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.cut_timeout_ns, PositiveDuration("--timeout", arg));
       return rs::Ok();
     }},
    {"cut-dir", 0, "DIR", Section::kMain,
     "where cuts go (default RING_DIR/cuts); a directory shared by\n"
     "the nodes makes every node cut when one does",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.cut_dir, Path("--cut-dir", arg));
       return rs::Ok();
     }},
    {"cut-keep", 0, "BYTES", Section::kMain,
     "remove this node's oldest cuts beyond BYTES (default 10G; 0: keep\n"
     "all)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.cut_keep_bytes, Bytes("--cut-keep", arg));
       return rs::Ok();
     }},
    {"cut-on-slowdown", 0, "F", Section::kMain,
     "cut when this node's collectives per 10 s fall below F (e.g.\n"
     "0.5) of their median over the last 5 minutes: once per\n"
     "slowdown",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(double f, ParseDouble("--cut-on-slowdown", arg));
       if (f <= 0 || f >= 1) {
         return rs::Error("--cut-on-slowdown '" + std::string(arg) +
                          "': a fraction between 0 and 1 (e.g. 0.5)");
       }
       o.cut_on_slowdown = f;
       return rs::Ok();
     }},
    {"cut-on-stall", 0, "D", Section::kMain,
     "cut when an NCCL call or a CUDA synchronization has been in\n"
     "flight for D (e.g. 30s): once per stall",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.cut_on_stall_ns, PositiveDuration("--cut-on-stall", arg));
       return rs::Ok();
     }},
    {"node", 'n', "NAME", Section::kMain,
     "node name (else config 'node =', else $RANKSCOPE_NODE, else hostname)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.node = arg;
       return rs::Ok();
     }},
    {"config", 'c', "FILE", Section::kMain,
     "config file with 'key = value' lines (known key: node)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.config_path = arg;
       return rs::Ok();
     }},
    {"pid", 'p', "PID", Section::kMain, "trace this process from the start (repeatable)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(int64_t pid, ParseInt("--pid", arg, 1, 0x3fffffff));
       o.pids.push_back(static_cast<int>(pid));
       return rs::Ok();
     }},
    {"scope", 0, "host|netns", Section::kMain,
     "record the whole host (default) or only this network namespace",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       const std::string_view s = arg;
       if (s != "host" && s != "netns") {
         return rs::Error("--scope '" + std::string(s) + "': expected 'host' or 'netns'");
       }
       o.scope = s == "host" ? Scope::kHost : Scope::kNetns;
       return rs::Ok();
     }},
    {"nccl-lib", 0, "PATH", Section::kMain, "also attach to this libnccl (repeatable)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.nccl_libs.emplace_back(arg);
       return rs::Ok();
     }},
    {"cuda-lib", 0, "PATH", Section::kMain, "also attach to this libcudart / libcuda (repeatable)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.cuda_libs.emplace_back(arg);
       return rs::Ok();
     }},
    {"cuda-launch-sample", 0, "N", Section::kMain,
     "record 1 in N CUDA kernel launches (default 1: all; 0: do not\n"
     "probe launches at all: a launch left out by sampling still\n"
     "pays the probe, about 1-8 us on the calling thread)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(int64_t n, ParseInt("--cuda-launch-sample", arg, 0, 1000000));
       o.cuda_launch_sample = static_cast<int>(n);
       return rs::Ok();
     }},
    {"no-load-tracepoint", 0, nullptr, Section::kMain,
     "find libraries loaded later by rescans only (every 500 ms and\n"
     "after an exec), not at once: saves about 40 ns on every system\n"
     "call of the node, costs up to about 150 ms of calls per late load",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.load_tracepoint = false;
       return rs::Ok();
     }},
    {"nccl-calls", 0, "all|setup", Section::kMain,
     "which NCCL calls to probe: all (default) or only communicator\n"
     "setup and teardown; with setup, collectives, sends, receives\n"
     "and group calls cost no probe (about 1-8 us each on the calling\n"
     "thread) and leave no nccl_events rows: the plugin's gpu_ops\n"
     "still have them, joined through the setup calls, but without\n"
     "return codes, callers or failed calls",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       const std::string_view v = arg;
       if (v != "all" && v != "setup") {
         return rs::Error(std::string("--nccl-calls '") + arg + "': use all or setup");
       }
       o.nccl_calls_setup_only = v == "setup";
       return rs::Ok();
     }},
    {"no-gpu", 0, nullptr, Section::kMain,
     "do not read rankscope's NCCL profiler plugin (table gpu_ops: when\n"
     "the GPU ran each collective); the plugin then records nothing",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.gpu = false;
       return rs::Ok();
     }},
    {"sources", 0, "LIST", Section::kMain,
     "record only these sources (comma-separated: process, tcp, sched,\n"
     "block, nccl, cuda, gpu, rdma; default all); the others cost nothing.\n"
     "process stays with nccl, cuda or gpu (they follow its execs)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       return ParseSources(o, arg);
     }},
    {"serve", 0, "ADDR[:PORT]", Section::kMain,
     "serve this recording read-only over HTTPS (TLS 1.3) to\n"
     "rankscope-fleet: queries on the live recording, with --ring the\n"
     "cuts for download, this node's clock (default port 7443)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       if (!*arg) return rs::Error(std::string("--serve: empty address"));
       o.serve = arg;
       return rs::Ok();
     }},
    {"serve-cert", 0, "FILE", Section::kMain, "the node's certificate (PEM)", ServeOption},
    {"serve-key", 0, "FILE", Section::kMain, "its private key (PEM)", ServeOption},
    {"serve-ca", 0, "FILE", Section::kMain,
     "clients must present a certificate of this CA (mutual TLS)", ServeOption},
    {"serve-token-file", 0, "FILE", Section::kMain,
     "or: clients must send this bearer token (mode 0600)", ServeOption},
    {"serve-max-queries", 0, "N", Section::kMain,
     "queries run at once, more get 503 (default 2); also\n"
     "--serve-max-connections N (8), --serve-max-rows N (100000),\n"
     "--serve-max-result-bytes N (16M), --serve-max-request-bytes N\n"
     "(64K), --serve-query-timeout D (30s): see rankscope-serve(8)",
     ServeOption},
    {"serve-max-connections", 0, "N", Section::kMain, nullptr, ServeOption},
    {"serve-max-rows", 0, "N", Section::kMain, nullptr, ServeOption},
    {"serve-max-result-bytes", 0, "N", Section::kMain, nullptr, ServeOption},
    {"serve-max-request-bytes", 0, "N", Section::kMain, nullptr, ServeOption},
    {"serve-query-timeout", 0, "D", Section::kMain, nullptr, ServeOption},
    {"verbose", 'v', nullptr, Section::kMain, "log every attachment",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.verbose = true;
       return rs::Ok();
     }},
    {"quiet", 'q', nullptr, Section::kMain,
     "no informational lines (the start, the final summary, cuts);\n"
     "warnings and errors are still printed",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.quiet = true;
       return rs::Ok();
     }},
    {"help", 'h', nullptr, Section::kMain, "show this help",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.help = true;
       return rs::Ok();
     }},
    {"version", 0, nullptr, Section::kMain, "show the version",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       o.version = true;
       return rs::Ok();
     }},
    {"simulate-clock-offset", 0, "NS", Section::kTesting,
     "shift this recorder's wall clock by NS nanoseconds",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(
           o.simulate_clock_offset_ns,
           ParseInt("--simulate-clock-offset", arg, -(int64_t{1} << 62), int64_t{1} << 62));
       return rs::Ok();
     }},
    {"simulate-clock-drift", 0, "PPM", Section::kTesting,
     "let this recorder's wall clock drift by PPM",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       ASSIGN_OR_RETURN(o.simulate_clock_drift_ppm, ParseDouble("--simulate-clock-drift", arg));
       if (std::fabs(o.simulate_clock_drift_ppm) > 1e5) {
         return rs::Error(std::string("--simulate-clock-drift '") + arg +
                          "': must be within +-100000 ppm");
       }
       return rs::Ok();
     }},
    {"simulate-rdma-sysfs", 0, "DIR", Section::kTesting,
     "read the RDMA ports under DIR/class/infiniband instead\n"
     "of /sys (a fake sysfs tree: only regular files are read)",
     [](RecorderOptions& o, const char*, [[maybe_unused]] const char* arg) -> rs::Result<void> {
       if (*arg == '\0') return rs::Error("--simulate-rdma-sysfs: give a directory");
       o.simulate_rdma_sysfs = arg;
       return rs::Ok();
     }},
};

// getopt's values: the short name where there is one, else kLongOnly + the index in kSpecs.
constexpr int kLongOnly = 1000;

int SpecValue(size_t i) {
  return kSpecs[i].short_name ? kSpecs[i].short_name : kLongOnly + static_cast<int>(i);
}

const Spec* SpecOf(int value) {
  for (size_t i = 0; i < std::size(kSpecs); ++i) {
    if (SpecValue(i) == value) return &kSpecs[i];
  }
  return nullptr;
}

std::vector<option> LongOptions() {
  std::vector<option> out;
  for (size_t i = 0; i < std::size(kSpecs); ++i) {
    out.push_back(option{kSpecs[i].name, kSpecs[i].value ? required_argument : no_argument, nullptr,
                         SpecValue(i)});
  }
  out.push_back(option{nullptr, 0, nullptr, 0});
  return out;
}

// ":o:d:..." (leading ':': a missing value comes back as ':').
std::string ShortOptions() {
  std::string out = ":";
  for (const Spec& s : kSpecs) {
    if (!s.short_name) continue;
    out += s.short_name;
    if (s.value) out += ':';
  }
  return out;
}

std::string FlagName(int value) {
  const Spec* s = SpecOf(value);
  if (s) return std::string("--") + s->name;
  return std::string("-") + static_cast<char>(value);
}

// One section of --help: the flag column `width` wide, the help's further lines under its first.
std::string HelpLines(Section section, size_t width) {
  std::string out;
  for (const Spec& s : kSpecs) {
    if (s.section != section || !s.help) continue;
    std::string flag = std::string("  ") +
                       (s.short_name ? std::string("-") + s.short_name + ", " : "    ") + "--" +
                       s.name + (s.value ? std::string(" ") + s.value : "");
    flag.resize(std::max(width, flag.size() + 1), ' ');
    std::string_view help = s.help;
    for (bool first = true;; first = false) {
      const size_t nl = help.find('\n');
      out += (first ? flag : std::string(width, ' ')) + std::string(help.substr(0, nl)) + "\n";
      if (nl == std::string_view::npos) break;
      help.remove_prefix(nl + 1);
    }
  }
  return out;
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
  static const std::vector<option> long_options = LongOptions();
  static const std::string short_options = ShortOptions();
  optind = 0;  // full reset of getopt's state (GNU): parse from the start again
  opterr = 0;  // errors are reported by us, as one line
  for (;;) {
    int idx = 0;
    const int opt = getopt_long(argc, argv, short_options.c_str(), long_options.data(), &idx);
    if (opt == -1) break;
    if (opt == ':') {
      return rs::Error(FlagName(optopt ? optopt : long_options[idx].val) + " needs a value");
    }
    const Spec* spec = opt == '?' ? nullptr : SpecOf(opt);
    if (!spec) {
      std::string bad = (optind > 0 && optind <= argc) ? argv[optind - 1] : "?";
      if (optopt && optopt < 256 && bad.rfind("--", 0) != 0) {
        bad = std::string("-") + static_cast<char>(optopt);
      }
      return rs::Error("unknown option '" + bad + "'");
    }
    RETURN_IF_ERROR(spec->apply(o, spec->name, optarg));
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
)" + HelpLines(Section::kMain, 30) +
         "\nTesting only (never use on a real cluster; the values are not stored):\n" +
         HelpLines(Section::kTesting, 35) + R"(
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

}  // namespace rs::rec

// rankscope-fleet: every node's recording from one workstation, over mutual TLS.
//   query   --nodes FILE|HOSTLIST "SQL"   one table of every node's rows (a leading node column)
//   collect --nodes FILE|HOSTLIST DIR     the bundles of a time range, ready for rankscope-merge
// See man/rankscope-fleet.1.
#include <boost/program_options.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "analyzer/fleet/fleet_collect.h"
#include "analyzer/fleet/fleet_query.h"
#include "rscore/cli.h"
#include "rscore/cli_help.h"
#include "rscore/clock.h"
#include "rscore/duration.h"
#include "rscore/output.h"
#include "rscore/text_escape.h"
#include "rscore/time_arg.h"
#include "rscore/tls.h"

namespace po = boost::program_options;
using namespace rs::cli;

namespace {

constexpr const char* kUsage =
    "usage: rankscope-fleet query --nodes FILE|HOSTLIST SQL|- [options]\n"
    "       rankscope-fleet collect --nodes FILE|HOSTLIST --since TIME --until TIME DIR "
    "[options]\n"
    "\n"
    "Asks every node's rankscope-serve or rankscope-record --serve at once, over HTTPS with\n"
    "mutual TLS (--ca, --cert, --key) or a bearer token (--token-file).\n"
    "\n"
    "examples:\n"
    "  rankscope-fleet query --nodes nodes.txt --ca ca.pem --cert ws.pem --key ws.key \\\n"
    "      \"SELECT COUNT(*) FROM tcp_events\"\n"
    "      retransmits per node\n"
    "  rankscope-fleet collect --nodes 'node[1-32]' --ca ca.pem --cert ws.pem --key ws.key \\\n"
    "      --since 2026-11-25T02:00:00Z --until 2026-11-25T02:30:00Z bundles/\n"
    "      the bundles of half an hour, for rankscope-merge\n"
    "\n"
    "Run 'rankscope-fleet COMMAND --help' for a command's options.\n";

constexpr const char* kExitLine =
    "exit status: 0 done, 1 error, 2 usage error, 3 partial (some nodes failed, each named in a\n"
    "warning).\nSee rankscope-fleet(1).\n";

struct Common {
  std::string nodes, ca, cert, key, token_file, timeout = "30s";
  int parallel = 64;
  bool quiet = false;
};

void AddCommon(po::options_description& opts, Common& c, const char* timeout_help) {
  opts.add_options()("nodes", po::value<std::string>(&c.nodes)->value_name("FILE|HOSTLIST"),
                     "the nodes: a file of 'NAME ADDRESS[:PORT]' lines, or a list such as "
                     "node[1-8]:7443,10.0.0.9 (default port 7443)")(
      "ca", po::value<std::string>(&c.ca)->value_name("FILE"),
      "the CA the nodes' certificates are signed by (PEM)")(
      "cert", po::value<std::string>(&c.cert)->value_name("FILE"),
      "this workstation's certificate (PEM), for mutual TLS")(
      "key", po::value<std::string>(&c.key)->value_name("FILE"), "its private key (PEM)")(
      "token-file", po::value<std::string>(&c.token_file)->value_name("FILE"),
      "send the bearer token in FILE (nodes without a CA for clients)")(
      "timeout", po::value<std::string>(&c.timeout)->value_name("DURATION"), timeout_help)(
      "parallel", po::value<int>(&c.parallel)->value_name("N"), "nodes asked at once (default 64)");
}

// -q and -h, after a command's own options.
void AddLast(po::options_description& opts, Common& c) {
  opts.add_options()("quiet,q", po::bool_switch(&c.quiet),
                     "no summary line; warnings are still printed")("help,h", "show this help");
}

// Arguments with whitespace (SQL, even one starting with "--") are always positional.
rs::Result<ParsedArgs> Parse(int argc, char** argv, const po::options_description& opts) {
  std::vector<std::string> plain;
  std::vector<std::pair<size_t, std::string>> spaced;  // index among all, text
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.find_first_of(" \t\n") != std::string::npos) {
      spaced.emplace_back(static_cast<size_t>(i), a);
    } else {
      plain.push_back(a);
    }
  }
  ASSIGN_OR_RETURN(ParsedArgs p, ParseArgs(plain, opts, {}));
  if (!spaced.empty()) {  // back into command-line order
    std::vector<std::string> ordered;
    size_t j = 0;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a.find_first_of(" \t\n") != std::string::npos) {
        ordered.push_back(a);
      } else if (j < p.positional.size() && a == p.positional[j]) {
        ordered.push_back(p.positional[j++]);
      }
    }
    p.positional = std::move(ordered);
  }
  return p;
}

// The checks every command makes; the error is a usage error.
rs::Result<rs::fleet::ClientAuth> Prepare(const Common& c,
                                          std::vector<rs::fleet::NodeAddress>& nodes,
                                          rs::fleet::FanOutOptions& fan) {
  if (c.nodes.empty()) return rs::Error("--nodes FILE|HOSTLIST is required");
  ASSIGN_OR_RETURN(nodes, rs::fleet::ParseNodes(c.nodes));
  rs::fleet::ClientAuth auth;
  auth.tls = {c.ca, c.cert, c.key};
  if (!c.token_file.empty()) {
    auto token = rs::tls::ReadTokenFile(c.token_file);
    if (!token.ok()) return token.error().Wrap("--token-file");
    auth.token = *token;
  }
  RETURN_IF_ERROR(rs::fleet::CheckClientAuth(auth));
  auto t = rs::ParseDuration(c.timeout);
  if (!t.ok()) return t.error().Wrap("--timeout");
  fan.timeout_ns = *t;
  if (c.parallel < 1) return rs::Error("--parallel must be at least 1");
  fan.parallel = c.parallel;
  return auth;
}

const HelpText kQueryHelp = {
    .usage = "rankscope-fleet query --nodes FILE|HOSTLIST SQL|- [options]",
    .about =
        "Runs one read-only SQL statement on every node at once (the node's live recording\n"
        "when a recorder serves it, else its newest bundle) and prints every node's rows as one\n"
        "table with a leading 'node' column, in the formats of rankscope-analyze query. The\n"
        "nodes refuse what rankscope-analyze query refuses (writes, ATTACH, PRAGMAs, impure\n"
        "functions). A node that is down, slower than --timeout, refused by TLS or refusing\n"
        "the query is a warning naming it and why; the others' rows are printed (exit 3).\n"
        "Each node's clock is measured against this workstation's on the way (--show-clock).",
    .examples =
        {{"rankscope-fleet query --nodes nodes.txt --ca ca.pem --cert ws.pem --key ws.key "
          "\"SELECT COUNT(*) AS retransmits FROM tcp_events\"",
          "retransmits on every node"},
         {"rankscope-fleet query --nodes 'node[1-8]' --ca ca.pem --cert ws.pem --key ws.key "
          "--format csv - < slow_calls.sql",
          "a query from a file, every node's rows as CSV"}},
    .man_page = "rankscope-fleet(1)",
    .more_exit_codes = ", 3 partial (nodes failed)"};

const HelpText kCollectHelp = {
    .usage =
        "rankscope-fleet collect --nodes FILE|HOSTLIST --since TIME --until TIME DIR "
        "[options]",
    .about =
        "Downloads every node's bundles whose recording overlaps [--since, --until] into DIR,\n"
        "in parallel: DIR/NODE.rsb, or DIR/CUT-ID/NODE.rsb for the cuts of an always-on ring.\n"
        "A download left partial by an earlier run is resumed; every file is checked against\n"
        "the node's XXH64 checksum. Each node's clock offset as measured over the wire is\n"
        "stored beside its bundles in clock_offsets.json, which rankscope-merge compares with\n"
        "its own clock alignment. TIME: ISO 8601 UTC (2026-11-25T02:14:00Z) or epoch\n"
        "nanoseconds. A node that fails or has no bundle in the range is a warning (exit 3).\n"
        "With --summaries each node summarizes its bundles (rankscope-analyze summarize) and\n"
        "only the summaries come, as DIR/NODE.rss: for a large job's verdict; the report then\n"
        "names the nodes whose raw bundles to collect.",
    .examples =
        {{"rankscope-fleet collect --nodes nodes.txt --ca ca.pem --cert ws.pem --key ws.key "
          "--since 2026-11-25T02:00:00Z --until 2026-11-25T02:30:00Z bundles/",
          "half an hour of every node"},
         {"rankscope-merge -o job.rsdb bundles/",
          "then: merge them (a second collect resumes and skips what is there)"},
         {"rankscope-fleet collect --summaries --nodes 'node[1-1024]' --ca ca.pem --cert ws.pem "
          "--key ws.key --since 2026-11-25T02:00:00Z --until 2026-11-25T02:30:00Z sums/",
          "a large job: each node's summaries only"}},
    .man_page = "rankscope-fleet(1)",
    .more_exit_codes = ", 3 partial (nodes failed)"};

// A warning carries what a node answered: one line each, whatever it holds.
void PrintWarnings(const std::vector<std::string>& warnings) {
  for (const std::string& w : warnings) {
    std::cerr << "rankscope-fleet: warning: " << rs::EscapeText(w) << "\n";
  }
}

int QueryMain(int argc, char** argv) {
  Common c;
  std::string format = "table", out_path = "-", bundle, query_timeout;
  int64_t limit = 10000;
  bool show_clock = false, force = false;
  po::options_description opts;
  AddCommon(opts, c, "a node still not done after DURATION is left out (default 30s)");
  opts.add_options()("format,f", po::value<std::string>(&format)->value_name("FORMAT"),
                     "table (default), csv or json")(
      "limit,n", po::value<int64_t>(&limit)->value_name("N"),
      "rows per node at most (default 10000; 0: the node's own limit)")(
      "bundle", po::value<std::string>(&bundle)->value_name("NAME"),
      "query this bundle of each node (as collect lists them) instead of its default")(
      "show-clock", po::bool_switch(&show_clock),
      "print each node's clock offset against this workstation (standard error)")(
      "out,o", po::value<std::string>(&out_path)->value_name("FILE"),
      "write the table to FILE ('-': standard output, the default)")(
      "force", po::bool_switch(&force), "replace an existing --out");
  AddLast(opts, c);
  auto parsed = Parse(argc, argv, opts);
  if (!parsed.ok()) {
    std::cerr << "rankscope-fleet query: "
              << WithHelpHint(parsed.error().message(), "rankscope-fleet query") << "\n";
    return kExitUsage;
  }
  if (parsed->vm.count("help")) {
    std::cout << FormatHelp(kQueryHelp, opts);
    return kExitOk;
  }
  auto usage = [](const std::string& m) {
    std::cerr << "rankscope-fleet query: " << WithHelpHint(m, "rankscope-fleet query") << "\n";
    return kExitUsage;
  };
  if (parsed->positional.size() != 1) {
    return usage("expected one SQL statement (or - for standard input), got " +
                 std::to_string(parsed->positional.size()) + " argument(s)");
  }
  rs::fleet::FleetQuery q;
  auto auth = Prepare(c, q.nodes, q.fan);
  if (!auth.ok()) return usage(auth.error().message());
  q.auth = *auth;
  auto fmt = rs::analyzer::ParseOutputFormat(format);
  if (!fmt.ok()) return usage(fmt.error().message());
  q.format = *fmt;
  if (limit < 0) return usage("--limit must be >= 0");
  q.request.limit = limit;
  q.request.timeout_ms = q.fan.timeout_ns / 1'000'000;
  q.request.bundle = bundle;
  q.request.sql = parsed->positional[0];
  if (IsStdio(q.request.sql)) {
    auto sql = ReadStdin(1 << 20);
    if (!sql.ok()) {
      std::cerr << "rankscope-fleet query: " << sql.error().message() << "\n";
      return kExitError;
    }
    q.request.sql = *sql;
  }
  auto target = rs::CheckOutput(out_path, force, {});
  if (!target.ok()) return usage(target.error().message());
  auto file = rs::OutputFile::Create(*target);
  if (!file.ok()) {
    std::cerr << "rankscope-fleet query: " << file.error().message() << "\n";
    return kExitError;
  }
  const int64_t started = rs::MonotonicNowNs();
  rs::Result<rs::fleet::FleetQueryResult> result = rs::Error("");
  {
    rs::FdOstream out(file->fd(), file->shown());
    result = rs::fleet::RunFleetQuery(q, out);
    if (auto closed = out.Close(); result.ok() && !closed.ok()) result = closed.error();
  }
  if (!result.ok()) {
    std::cerr << "rankscope-fleet query: " << rs::EscapeText(result.error().message()) << "\n";
    return kExitError;
  }
  PrintWarnings(result->warnings);
  if (result->answered == 0) {
    std::cerr << "rankscope-fleet query: no node answered\n";
    return kExitError;
  }
  if (auto committed = file->Commit(); !committed.ok()) {
    std::cerr << "rankscope-fleet query: " << committed.error().message() << "\n";
    return kExitError;
  }
  if (show_clock) std::cerr << rs::fleet::FormatClocks(result->answers);
  if (!c.quiet) {
    std::cerr << "rankscope-fleet query: " << result->rows << " rows from " << result->answered
              << " of " << q.nodes.size() << " nodes in "
              << FormatElapsed(rs::MonotonicNowNs() - started) << "\n";
  }
  return result->answered < static_cast<int>(q.nodes.size()) ? kExitPartial : kExitOk;
}

int CollectMain(int argc, char** argv) {
  Common c;
  std::string since, until, out_dir;
  bool summaries = false;
  po::options_description opts;
  AddCommon(opts, c,
            "a node that does not answer a request within DURATION is left out (default 30s; "
            "a download may take longer while data flows)");
  opts.add_options()("since", po::value<std::string>(&since)->value_name("TIME"),
                     "bundles whose recording ends at or after TIME")(
      "until", po::value<std::string>(&until)->value_name("TIME"),
      "bundles whose recording starts at or before TIME")(
      "out,o", po::value<std::string>(&out_dir)->value_name("DIR"), "the directory (or as DIR)")(
      "summaries", po::bool_switch(&summaries),
      "each node's summaries of its bundles (NODE.rss, made on the node: what the report "
      "reads, nothing raw) instead of the bundles");
  AddLast(opts, c);
  auto parsed = Parse(argc, argv, opts);
  if (!parsed.ok()) {
    std::cerr << "rankscope-fleet collect: "
              << WithHelpHint(parsed.error().message(), "rankscope-fleet collect") << "\n";
    return kExitUsage;
  }
  if (parsed->vm.count("help")) {
    std::cout << FormatHelp(kCollectHelp, opts);
    return kExitOk;
  }
  auto usage = [](const std::string& m) {
    std::cerr << "rankscope-fleet collect: " << WithHelpHint(m, "rankscope-fleet collect") << "\n";
    return kExitUsage;
  };
  if (parsed->positional.size() + (out_dir.empty() ? 0 : 1) != 1) {
    return usage("expected one DIR to collect into (as an argument or -o DIR)");
  }
  rs::fleet::FleetCollect col;
  col.dir = out_dir.empty() ? parsed->positional[0] : out_dir;
  col.summaries = summaries;
  auto auth = Prepare(c, col.nodes, col.fan);
  if (!auth.ok()) return usage(auth.error().message());
  col.auth = *auth;
  col.fan.per_request = true;
  for (auto [text, dest, flag] : {std::tuple{&since, &col.since_ns, "--since"},
                                  std::tuple{&until, &col.until_ns, "--until"}}) {
    if (text->empty()) return usage(std::string(flag) + " TIME is required");
    auto t = rs::ParseTimeArg(*text, flag);
    if (!t.ok()) return usage(t.error().message());
    if (t->relative) return usage(std::string(flag) + ": a time of day, not +offset");
    *dest = t->ns;
  }
  if (col.until_ns < col.since_ns) return usage("--until is before --since");
  const int64_t started = rs::MonotonicNowNs();
  auto r = rs::fleet::RunFleetCollect(col);
  if (!r.ok()) {
    std::cerr << "rankscope-fleet collect: " << rs::EscapeText(r.error().message()) << "\n";
    return kExitError;
  }
  PrintWarnings(r->warnings);
  if (!c.quiet) {
    std::cerr << "rankscope-fleet collect: " << r->bundles
              << (summaries ? " summary file(s)" : " bundle(s)") << " from " << r->nodes_ok
              << " of " << col.nodes.size() << " nodes into " << col.dir << " (" << r->transferred
              << " bytes transferred";
    if (r->resumed) std::cerr << ", " << r->resumed << " resumed";
    if (r->already_there) std::cerr << ", " << r->already_there << " already there";
    std::cerr << ") in " << FormatElapsed(rs::MonotonicNowNs() - started) << "\n";
    for (const std::string& d : r->dirs) {
      std::cerr << "  merge with: rankscope-merge -o merged.rsdb " << d << "\n";
    }
  }
  return r->nodes_ok < static_cast<int>(col.nodes.size()) ? kExitPartial : kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a node that closes mid-request is an error value, not a signal
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    (argc < 2 ? std::cerr : std::cout) << kUsage << "\n" << kExitLine;
    return argc < 2 ? kExitUsage : kExitOk;
  }
  const std::string cmd = argv[1];
  if (cmd == "--version") {
    std::cout << "rankscope-fleet " << RANKSCOPE_VERSION << "\n";
    return kExitOk;
  }
  if (cmd == "query") return QueryMain(argc - 1, argv + 1);
  if (cmd == "collect") return CollectMain(argc - 1, argv + 1);
  std::cerr << "rankscope-fleet: "
            << WithHelpHint("unknown command '" + cmd + "': use query or collect",
                            "rankscope-fleet")
            << "\n";
  return kExitUsage;
}

// rankscope-serve: a node's finished bundles, served read-only over HTTPS to rankscope-fleet
// (queries, bundle listing and download), where no recorder runs. See man/rankscope-serve.8.
#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "recorder/serve/server.h"
#include "rscore/cli.h"
#include "rscore/identity.h"
#include "rscore/sqlite.h"
#include "rscore/time_arg.h"

namespace {

constexpr int kExitOk = 0, kExitError = 1, kExitUsage = 2;

std::string Usage() {
  return "usage: rankscope-serve --listen ADDR[:PORT] --cert FILE --key FILE (--ca FILE | "
         "--token-file FILE)\n"
         "                       [options] DIR\n"
         "\n"
         "Serves the bundles under DIR (NODE.rsb files, the always-on ring's CUT-ID/NODE.rsb\n"
         "cuts) to rankscope-fleet over HTTPS (TLS 1.3): read-only queries under the guard of\n"
         "rankscope-analyze query, the bundle list and downloads (resumable, with checksums),\n"
         "and this node's clock. Clients need a certificate of the --ca (mutual TLS) or the\n"
         "bearer token of --token-file. Every request is logged on standard error with the\n"
         "client's certificate subject. Runs until SIGINT or SIGTERM.\n"
         "\n"
         "options:\n"
         "      --listen ADDR[:PORT]    address to listen on (port default 7443; ':7443' is\n"
         "                              every address; IPv6 in brackets: '[fd00::3]:7443')\n"
         "  -n, --node NAME             this node's name (else $RANKSCOPE_NODE, else the\n"
         "                              hostname); a query's rows carry its bundle's node\n" +
         rs::serve::ServeOptionsHelp("--") +
         "  -q, --quiet                 no start-up line (requests are still logged)\n"
         "  -h, --help                  show this help\n"
         "      --version               show the version\n"
         "\n"
         "Testing only:\n"
         "      --simulate-clock-offset NS   report this node's clock NS nanoseconds off\n"
         "\n"
         "examples:\n"
         "  rankscope-serve --listen :7443 --cert node3.pem --key node3.key --ca ca.pem "
         "/var/lib/rankscope/ring/cuts\n"
         "      the always-on ring's cuts of this node, to workstations with a certificate of "
         "ca.pem\n"
         "  rankscope-serve --listen 10.0.0.3 --cert node3.pem --key node3.key --token-file "
         "/etc/rankscope/token /srv/bundles\n"
         "      a site without a CA: clients send the token (the node's certificate may be "
         "self-signed)\n"
         "\n" +
         std::string(rs::cli::kExitStatusHelp) + ".\nSee rankscope-serve(8).\n";
}

void Log(const std::string& line) {
  const std::string l = "rankscope-serve: " + line + "\n";
  std::fputs(l.c_str(), stderr);
}

}  // namespace

int main(int argc, char** argv) {
  enum { kListen = 1000, kHelp, kVersion, kServeOption };
  static const char* kServeNames[] = {"ca",
                                      "cert",
                                      "key",
                                      "token-file",
                                      "max-connections",
                                      "max-queries",
                                      "max-request-bytes",
                                      "max-rows",
                                      "max-result-bytes",
                                      "query-timeout",
                                      "simulate-clock-offset"};
  std::vector<option> longs = {{"listen", required_argument, nullptr, kListen},
                               {"node", required_argument, nullptr, 'n'},
                               {"quiet", no_argument, nullptr, 'q'},
                               {"help", no_argument, nullptr, 'h'},
                               {"version", no_argument, nullptr, kVersion}};
  for (size_t i = 0; i < std::size(kServeNames); ++i) {
    longs.push_back(
        {kServeNames[i], required_argument, nullptr, kServeOption + static_cast<int>(i)});
  }
  longs.push_back({nullptr, 0, nullptr, 0});
  rs::serve::ServerConfig config;
  bool listen_given = false, quiet = false;
  std::string node_flag;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":n:qh", longs.data(), nullptr)) != -1) {
    if (c == kListen) {
      listen_given = true;
      if (auto r = rs::serve::ParseListen(optarg, config.options); !r.ok()) {
        std::fprintf(stderr, "rankscope-serve: --listen %s (see 'rankscope-serve --help')\n",
                     r.error().message().c_str());
        return kExitUsage;
      }
    } else if (c == 'n') {
      node_flag = optarg;
    } else if (c == 'q') {
      quiet = true;
    } else if (c == 'h') {
      std::fputs(Usage().c_str(), stdout);
      return kExitOk;
    } else if (c == kVersion) {
      std::printf("rankscope-serve %s\n", RANKSCOPE_VERSION);
      return kExitOk;
    } else if (c >= kServeOption && c < kServeOption + static_cast<int>(std::size(kServeNames))) {
      if (auto r = rs::serve::SetServeOption(kServeNames[c - kServeOption], optarg, config.options);
          !r.ok()) {
        std::fprintf(stderr, "rankscope-serve: --%s (see 'rankscope-serve --help')\n",
                     r.error().message().c_str());
        return kExitUsage;
      }
    } else {
      const char* bad = argv[optind - 1];
      std::fprintf(stderr, "rankscope-serve: %s: %s (see 'rankscope-serve --help')\n", bad,
                   c == ':' ? "needs a value" : "unknown option");
      return kExitUsage;
    }
  }
  if (optind + 1 != argc) {
    std::fprintf(stderr,
                 "rankscope-serve: expected one DIR of bundles, got %d argument(s) (see "
                 "'rankscope-serve --help')\n",
                 argc - optind);
    return kExitUsage;
  }
  if (!listen_given) {
    std::fprintf(
        stderr,
        "rankscope-serve: --listen ADDR[:PORT] is required (see 'rankscope-serve --help')\n");
    return kExitUsage;
  }
  if (auto r = rs::serve::CheckServeOptions(config.options, "--"); !r.ok()) {
    std::fprintf(stderr, "rankscope-serve: %s (see 'rankscope-serve --help')\n",
                 r.error().message().c_str());
    return kExitUsage;
  }
  rs::NodeNameSources src;
  if (!node_flag.empty()) src.flag = node_flag;
  if (const char* env = std::getenv("RANKSCOPE_NODE"); env && *env) src.env = env;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) src.hostname = host;
  auto node = rs::ResolveNodeName(src);
  if (!node.ok()) {
    std::fprintf(stderr, "rankscope-serve: %s\n", node.error().message().c_str());
    return kExitUsage;
  }
  config.node = node->name;
  config.bundle_dir = argv[optind];
  config.log = Log;

  // SIGINT / SIGTERM are taken by sigwait below, on this thread only: the server's threads
  // (started after this) inherit the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Each server thread queries on connections of its own, and a query's SQLite memory is
  // bounded (serve/query_service.h): before the first database is opened.
  if (auto r = rs::UseSqliteConnectionsPerThread(); !r.ok()) {
    std::fprintf(stderr, "rankscope-serve: %s\n", r.error().message().c_str());
    return kExitError;
  }
  rs::serve::BundleStore probe(config.bundle_dir);
  auto listing = probe.List();
  if (!listing.ok()) {
    std::fprintf(stderr, "rankscope-serve: %s\n", listing.error().message().c_str());
    return kExitError;
  }
  for (const std::string& s : listing->skipped) Log("warning: not served: " + s);
  auto server = rs::serve::Server::Start(config);
  if (!server.ok()) {
    std::fprintf(stderr, "rankscope-serve: %s\n", server.error().message().c_str());
    return kExitError;
  }
  if (!quiet) {
    const rs::serve::ServeOptions& o = config.options;
    Log("serving " + std::to_string(listing->bundles.size()) + " bundle(s) of " +
        config.bundle_dir + " as node " + config.node + " on https://" + o.host + ":" +
        std::to_string((*server)->port()) + " (" +
        (o.tls.ca.empty() ? std::string("bearer token")
                          : "mutual TLS, clients of " + o.tls.ca +
                                (o.token_file.empty() ? "" : ", and a bearer token")) +
        ")");
  }
  int sig = 0;
  sigwait(&stop, &sig);
  (*server)->Stop();
  if (!quiet) {
    Log(std::string("stopped by ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + " after " +
        std::to_string((*server)->requests()) + " request(s)");
  }
  return kExitOk;
}

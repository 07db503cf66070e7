#include "analyzer/fleet/fleet_collect.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>

#include "analyzer/fleet/fleet_query.h"
#include "rscore/cli.h"
#include "rscore/identity.h"
#include "rscore/path.h"
#include "rscore/wire_clock_file.h"

namespace rs::fleet {
namespace {

rs::Result<void> MakeDirs(const std::string& path) {
  std::string p;
  size_t i = 0;
  while (i <= path.size()) {
    const size_t slash = path.find('/', i);
    p = path.substr(0, slash == std::string::npos ? path.size() : slash);
    i = slash == std::string::npos ? path.size() + 1 : slash + 1;
    if (p.empty()) continue;
    if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) {
      return rs::Error(p + ": cannot make the directory: " + std::strerror(errno));
    }
  }
  return rs::Ok();
}

}  // namespace

rs::Result<std::string> CollectPath(const std::string& dir, const std::string& name,
                                    const std::string& node, const std::string& ext) {
  if (auto v = rs::ValidateNodeName(node, "the node's answer"); !v.ok()) return v.error();
  if (name.empty() || name.front() == '/') return rs::Error("'" + name + "' is not a bundle name");
  std::string sub;
  size_t start = 0;
  for (;;) {
    const size_t slash = name.find('/', start);
    const std::string part =
        name.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == ".." || part.front() == '.') {
      return rs::Error("'" + name + "' is not a bundle name to store");
    }
    if (slash == std::string::npos) break;  // the file's own name is replaced by the node's
    sub += part + "/";
    start = slash + 1;
  }
  return dir + "/" + sub + node + ext;
}

rs::Result<CollectResult> RunFleetCollect(const FleetCollect& c) {
  RETURN_IF_ERROR(MakeDirs(c.dir));
  if (access(c.dir.c_str(), W_OK) != 0) {
    return rs::Error(c.dir + ": cannot write there: " + std::strerror(errno));
  }
  CollectResult r;
  std::mutex mu;
  std::map<std::string, std::string> taken;  // destination -> the node that took it
  std::map<std::string, std::vector<rs::WireClock>> clocks_by_dir;
  std::set<std::string> got_dirs;
  std::vector<std::string> answered(c.nodes.size());  // the nodes' own names
  auto statuses =
      ForEachNode(c.nodes, c.auth, c.fan, [&](size_t i, NodeClient& client) -> rs::Result<void> {
        ASSIGN_OR_RETURN(rs::WireClock clock, client.MeasureClock(kClockExchanges));
        answered[i] = clock.node;
        ASSIGN_OR_RETURN(rs::wire::BundleList list,
                         client.ListBundles(c.since_ns, c.until_ns, c.summaries));
        if (list.bundles.empty()) {
          return rs::Error("no bundle overlaps the time asked for");
        }
        std::string failures;
        for (const rs::wire::BundleEntry& b : list.bundles) {
          auto dest = CollectPath(c.dir, b.name, b.node, c.summaries ? ".rss" : ".rsb");
          if (!dest.ok()) {
            failures += (failures.empty() ? "" : "; ") + dest.error().message();
            continue;
          }
          {
            std::lock_guard<std::mutex> lock(mu);
            auto [it, fresh] = taken.emplace(*dest, c.nodes[i].label());
            if (!fresh) {
              failures += (failures.empty() ? "" : "; ") + b.name + " would go to " + *dest +
                          ", which " + it->second + "'s bundle took";
              continue;
            }
          }
          RETURN_IF_ERROR(MakeDirs(rs::DirOf(*dest)));
          auto fetched = client.Fetch(b, *dest, c.summaries);
          if (!fetched.ok()) {
            failures += (failures.empty() ? "" : "; ") + fetched.error().message();
            continue;
          }
          std::lock_guard<std::mutex> lock(mu);
          got_dirs.insert(rs::DirOf(*dest));
          ++r.bundles;
          r.bytes += fetched->bytes;
          r.transferred += fetched->transferred;
          r.already_there += fetched->already_there ? 1 : 0;
          r.resumed += fetched->resumed_from > 0 ? 1 : 0;
          // The clock measured is the serving machine's: it is this bundle's node's clock only
          // when the node serves its own recordings.
          if (b.node == clock.node) {
            rs::WireClock bc = clock;
            auto& v = clocks_by_dir[rs::DirOf(*dest)];
            bool have = false;
            for (const auto& x : v) have = have || x.node == bc.node;
            if (!have) v.push_back(bc);
          }
        }
        if (!failures.empty()) return rs::Error(failures);
        return rs::Ok();
      });
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    if (statuses[i].ok()) {
      ++r.nodes_ok;
    } else {
      r.warnings.push_back(c.nodes[i].who(answered[i]) + ": " + statuses[i].error().message());
    }
  }
  for (auto& [dir, clocks] : clocks_by_dir) {
    std::sort(clocks.begin(), clocks.end(), [](const rs::WireClock& a, const rs::WireClock& b) {
      return rs::cli::NaturalLess(a.node, b.node);
    });
    RETURN_IF_ERROR(rs::WriteWireClockFile(dir + "/" + rs::kWireClockFileName, clocks));
  }
  r.dirs.assign(got_dirs.begin(), got_dirs.end());
  if (r.bundles == 0) return rs::Error("no bundle was collected");
  return r;
}

}  // namespace rs::fleet

#include "analyzer/report_test_util.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <tuple>
#include <utility>

#include "analyzer/device_arrival.h"
#include "rscore/bundle.h"
#include "rscore/schema.h"

namespace rs::analyzer::testing {

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/rankscope-report-XXXXXX";
  if (mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

uint64_t TestSeed() {
  if (const char* s = std::getenv("RANKSCOPE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  return static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
}

rs::Result<std::string> WriteMergedCluster(const synth::ClusterSpec& spec, const std::string& dir,
                                           int64_t error_bound_ns) {
  ASSIGN_OR_RETURN(std::vector<std::string> bundles, synth::WriteClusterBundles(spec, dir));
  std::string out = dir + "/cluster.rsdb";
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(out, rs::Db::Mode::kCreate));
  RETURN_IF_ERROR(rs::CreateSchema(db, rs::DbKind::kMerged));
  int64_t start = std::numeric_limits<int64_t>::max(), end = 0;
  int input = 0;
  for (const std::string& path : bundles) {
    ASSIGN_OR_RETURN(rs::OpenedDb in, rs::OpenRankscopeFile(path));
    const rs::BundleInfo& info = in.info();
    start = std::min(start, info.start_ns);
    end = std::max(end, info.end_ns);
    RETURN_IF_ERROR(db.Exec("ATTACH DATABASE '" + in.sqlite_path() + "' AS b"));
    RETURN_IF_ERROR(db.Exec("BEGIN"));
    for (std::string_view t : rs::kEventTables) {
      std::string table(t);
      RETURN_IF_ERROR(
          db.Exec("INSERT INTO main." + table + " SELECT *, timestamp_ns FROM b." + table));
    }
    for (const char* t : {"clock_refs", "sources", "attachments", "interfaces", "processes",
                          "sched_summary", "block_devices", "rdma_ports"}) {
      RETURN_IF_ERROR(db.Exec(std::string("INSERT INTO main.") + t + " SELECT * FROM b." + t));
    }
    RETURN_IF_ERROR(db.Exec("INSERT OR IGNORE INTO main.stacks SELECT * FROM b.stacks"));
    ++input;
    RETURN_IF_ERROR(db.Exec("INSERT INTO merge_inputs VALUES (" + std::to_string(input) + ", '" +
                            path + "', '" + info.recording_id + "', '" + info.node + "', '" +
                            info.node + "', 'merged', NULL)"));
    RETURN_IF_ERROR(
        db.Exec("INSERT INTO clock_alignment(node, offset_ns, error_bound_ns, method,"
                " rendezvous_count) VALUES ('" +
                info.node + "', 0, " + std::to_string(error_bound_ns) + ", 'rendezvous', 0)"));
    RETURN_IF_ERROR(db.Exec("COMMIT"));
    RETURN_IF_ERROR(db.Exec("DETACH DATABASE b"));
  }
  RETURN_IF_ERROR(db.Exec("INSERT INTO metadata VALUES ('start_ns', '" + std::to_string(start) +
                          "'), ('end_ns', '" + std::to_string(end) + "')"));
  RETURN_IF_ERROR(rs::CreateIndexes(db));
  return out;
}

void GroupCalls(CollectiveData& data, std::vector<NcclCall> calls) {
  std::stable_sort(calls.begin(), calls.end(), [](const NcclCall& x, const NcclCall& y) {
    return std::tie(x.comm, x.seq, x.ts) < std::tie(y.comm, y.seq, y.ts);
  });
  data.calls = std::move(calls);
  for (size_t i = 0; i < data.calls.size();) {
    Collective g;
    g.comm = data.calls[i].comm;
    g.seq = data.calls[i].seq;
    g.begin = i;
    while (i < data.calls.size() && data.calls[i].comm == g.comm && data.calls[i].seq == g.seq) {
      g.last_exit = std::max(g.last_exit, data.calls[i].ts + data.calls[i].dur);
      ++i;
    }
    g.end = i;
    g.first_entry = data.calls[g.begin].ts;
    g.last_entry = data.calls[g.end - 1].ts;
    ++data.matched;
    data.collectives.push_back(g);
  }
  SetArrivals(data);
}

}  // namespace rs::analyzer::testing

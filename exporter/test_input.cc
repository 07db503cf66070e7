#include "exporter/test_input.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "rscore/bundle.h"
#include "rscore/schema.h"

namespace rs::exporter::testing {

Result<std::vector<std::string>> WriteInputs(const synth::ClusterSpec& spec, const std::string& dir,
                                             const std::string& merged_path) {
  ASSIGN_OR_RETURN(std::vector<std::string> bundles, synth::WriteClusterBundles(spec, dir));
  ::unlink(merged_path.c_str());
  ASSIGN_OR_RETURN(Db db, Db::Open(merged_path, Db::Mode::kCreate));
  RETURN_IF_ERROR(CreateSchema(db, DbKind::kMerged));
  for (size_t n = 0; n < bundles.size(); ++n) {
    ASSIGN_OR_RETURN(OpenedDb in, OpenRankscopeFile(bundles[n]));
    const std::string node = in.info().node;
    const int64_t offset = n < spec.offset_ns.size() ? spec.offset_ns[n] : 0;
    RETURN_IF_ERROR(db.Exec("ATTACH DATABASE '" + in.sqlite_path() + "' AS b"));
    RETURN_IF_ERROR(db.Exec("BEGIN"));
    for (std::string_view t : kEventTables) {
      const std::string table(t);
      RETURN_IF_ERROR(
          db.Exec("INSERT INTO main." + table + " SELECT *, timestamp_ns FROM b." + table));
      RETURN_IF_ERROR(db.Exec("UPDATE main." + table + " SET timestamp_ns = timestamp_ns - " +
                              std::to_string(offset) + " WHERE node = '" + node + "'"));
    }
    for (const TimeColumn& c : kExtraTimeColumns) {
      const std::string column(c.column);
      RETURN_IF_ERROR(db.Exec("UPDATE main." + std::string(c.table) + " SET " + column + " = " +
                              column + " - " + std::to_string(offset) + " WHERE node = '" + node +
                              "' AND " + column + " IS NOT NULL"));
    }
    for (const char* t :
         {"processes", "interfaces", "clock_refs", "sources", "stacks", "block_devices"}) {
      RETURN_IF_ERROR(
          db.Exec(std::string("INSERT OR IGNORE INTO main.") + t + " SELECT * FROM b." + t));
    }
    RETURN_IF_ERROR(
        db.Exec("INSERT INTO clock_alignment(node, offset_ns, error_bound_ns, method)"
                " VALUES ('" +
                node + "', " + std::to_string(offset) + ", 0, 'reference')"));
    RETURN_IF_ERROR(db.Exec("COMMIT"));
    RETURN_IF_ERROR(db.Exec("DETACH DATABASE b"));
  }
  RETURN_IF_ERROR(CreateIndexes(db));
  return bundles;
}

Result<void> AddGpuOps(const std::string& merged_path, const GpuOpsSpec& spec) {
  ASSIGN_OR_RETURN(Db db, Db::Open(merged_path, Db::Mode::kReadWrite));
  // Where the call's operation starts on the device, ns after the call's entry.
  const std::string start = "(timestamp_ns + 5000 + (rank * 7919 + seq * 104729) % 40000)";
  const std::string unstarted = "(duration_ns IS NULL AND rank = ?2)";
  ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare(
          "INSERT INTO gpu_ops(id, node, timestamp_ns, pid, tid, op, rank, nranks, comm_id_hash,"
          " seq, count, datatype, bytes, peer, root, algorithm, protocol, channels,"
          " device_start_ns, device_end_ns, clock_error_ns, net_bytes_sent, net_bytes_recv, state)"
          " SELECT id, node, timestamp_ns + 2000, pid, tid, op, rank, nranks, comm_id_hash, seq,"
          " count, datatype, bytes, peer, root, 'RING', 'SIMPLE', 2,"
          " CASE WHEN " +
          unstarted + " THEN NULL ELSE " + start +
          " END,"
          " CASE WHEN duration_ns IS NULL THEN NULL"
          "  ELSE MAX(timestamp_ns + duration_ns - 1000, " +
          start +
          " + 1000) END,"
          " 2000, bytes, bytes,"
          " CASE WHEN duration_ns IS NOT NULL THEN 'completed'"
          "  WHEN " +
          unstarted +
          " THEN 'enqueued' ELSE 'started' END"
          " FROM nccl_events WHERE seq IS NOT NULL AND comm_id_hash IS NOT NULL"
          " AND op NOT LIKE 'COMM\\_%' ESCAPE '\\' AND op NOT LIKE 'GROUP\\_%' ESCAPE '\\'"
          " AND rank IS NOT ?1"));
  RETURN_IF_ERROR(st.Bind(1, spec.no_plugin_rank).Bind(2, spec.unstarted_rank).Run());
  ASSIGN_OR_RETURN(Statement del,
                   db.Prepare("DELETE FROM nccl_events WHERE rank = ?1 AND seq % 5 = 0"
                              " AND op NOT LIKE 'COMM\\_%' ESCAPE '\\'"));
  return del.Bind(1, spec.hostless_rank).Run();
}

Result<void> WriteSmallGpuDb(const std::string& path, bool with_gpu_ops) {
  ::unlink(path.c_str());
  ASSIGN_OR_RETURN(Db db, Db::Open(path, Db::Mode::kCreate));
  RETURN_IF_ERROR(CreateSchema(db, DbKind::kMerged));
  RETURN_IF_ERROR(db.Exec(R"sql(
INSERT INTO processes(node, pid, comm, rank) VALUES
  ('a', 10, 'trainer', 0), ('a', 11, 'trainer', 1), ('b', 20, 'trainer', 2);
INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op, rank, nranks,
                        comm_id_hash, seq, count, datatype, bytes, peer, state) VALUES
  (1, 'a', 1000, 20, 10, 10, 'ALL_REDUCE', 0, 3, 42, 7, 1024, 'float32', 4096, NULL, 'complete'),
  (2, 'a', 1100, 20, 11, 12, 'ALL_REDUCE', 1, 3, 42, 7, 1024, 'float32', 4096, NULL, 'complete'),
  (3, 'b', 1050, 2000, 20, 20, 'ALL_REDUCE', 2, 3, 42, 7, 1024, 'float32', 4096, NULL,
   'complete'),
  (4, 'a', 4000, 10, 10, 10, 'ALL_REDUCE', 0, 3, 42, 8, 1024, 'float32', 4096, NULL, 'complete'),
  (5, 'a', 4000, 10, 11, 12, 'ALL_REDUCE', 1, 3, 42, 8, 1024, 'float32', 4096, NULL, 'complete'),
  (6, 'b', 4050, NULL, 20, 20, 'ALL_REDUCE', 2, 3, 42, 8, 1024, 'float32', 4096, NULL,
   'in_flight'),
  (7, 'a', 5000, 10, 11, 12, 'RECV', 1, 3, 42, 1, 1024, 'float32', 4096, 0, 'complete');
)sql"));
  if (!with_gpu_ops) return db.Exec("DROP TABLE gpu_ops");
  return db.Exec(R"sql(
INSERT INTO gpu_ops(id, node, timestamp_ns, pid, tid, op, rank, nranks, comm_id_hash, seq, count,
                    datatype, bytes, peer, algorithm, protocol, channels, device_start_ns,
                    device_end_ns, clock_error_ns, net_bytes_sent, net_bytes_recv, state) VALUES
  (101, 'a', 1010, 10, 10, 'ALL_REDUCE', 0, 3, 42, 7, 1024, 'float32', 4096, NULL, 'RING', 'LL',
   4, 1500, 3000, 50, 100, 200, 'completed'),
  (102, 'a', 1110, 11, 12, 'ALL_REDUCE', 1, 3, 42, 7, 1024, 'float32', 4096, NULL, 'RING', 'LL',
   4, 1300, 3000, 50, 100, 200, 'completed'),
  (103, 'a', 4005, 10, 10, 'ALL_REDUCE', 0, 3, 42, 8, 1024, 'float32', 4096, NULL, 'RING',
   'SIMPLE', 2, 4100, NULL, NULL, 0, 0, 'started'),
  (104, 'a', 4005, 11, 12, 'ALL_REDUCE', 1, 3, 42, 8, 1024, 'float32', 4096, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, 0, 0, 'enqueued'),
  (105, 'a', 5000, 10, 10, 'SEND', 0, 3, 42, 1, 1024, 'float32', 4096, 1, 'RING', 'SIMPLE', 1,
   5100, 5200, 50, 4096, 0, 'completed'),
  (106, 'a', 5002, 11, 12, 'RECV', 1, 3, 42, 1, 1024, 'float32', 4096, 0, 'RING', 'SIMPLE', 1,
   4990, 5200, 50, 0, 4096, 'completed');
)sql");
}

std::string MakeTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/rs-export-test-XXXXXX";
  char* d = mkdtemp(tmpl.data());
  return d ? std::string(d) : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace rs::exporter::testing

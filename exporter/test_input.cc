#include "test_input.h"

#include <unistd.h>

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
    for (const char* t : {"processes", "interfaces", "clock_refs", "sources", "stacks"}) {
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

}  // namespace rs::exporter::testing

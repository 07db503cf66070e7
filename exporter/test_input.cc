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

}  // namespace rs::exporter::testing

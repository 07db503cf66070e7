#include "rscore/enqueue.h"

#include "rscore/schema.h"

namespace rs {

Result<std::set<std::pair<std::string, int64_t>>> EnqueuingProcesses(Db& db) {
  ASSIGN_OR_RETURN(bool gpu_ops, HasGpuOps(db));
  ASSIGN_OR_RETURN(bool blocking, HasColumn(db, "processes", "cuda_launch_blocking"));
  // A second node's call: in a merged database the first node's rows come first, so this
  // stops after them.
  ASSIGN_OR_RETURN(const bool several_nodes,
                   db.QueryInt("SELECT EXISTS (SELECT 1 FROM nccl_events WHERE node <>"
                               " (SELECT node FROM nccl_events LIMIT 1))"));
  // The same set either way; what it costs differs. One node's rows are in time order, and a
  // GPU process's first CUDA call or operation comes early: EXISTS per process stops there
  // (0.01 s against 0.14 s for a scan of a bundle's 410k CUDA calls). A merged database holds
  // its nodes one after another: per process the scan would pass every earlier node's rows
  // (21.6 s for 2,048 processes of 256 nodes), so each table is read once into a set (0.3 s).
  std::string sql;
  if (!several_nodes) {
    sql = std::string(
              "SELECT node, pid FROM (SELECT DISTINCT node, pid FROM nccl_events) n"
              " WHERE (EXISTS (SELECT 1 FROM cuda_events c WHERE c.pid = n.pid"
              " AND c.node = n.node)") +
          (gpu_ops ? " OR EXISTS (SELECT 1 FROM gpu_ops g WHERE g.pid = n.pid"
                     " AND g.node = n.node)"
                   : "") +
          ")" +
          (blocking ? " AND NOT EXISTS (SELECT 1 FROM processes p WHERE p.node = n.node"
                      " AND p.pid = n.pid AND p.cuda_launch_blocking = 1)"
                    : "");
  } else {
    sql = std::string(
              "SELECT node, pid FROM (SELECT DISTINCT node, pid FROM nccl_events)"
              " WHERE ((node, pid) IN (SELECT node, pid FROM cuda_events)") +
          (gpu_ops ? " OR (node, pid) IN (SELECT node, pid FROM gpu_ops)" : "") + ")" +
          (blocking ? " AND (node, pid) NOT IN (SELECT node, pid FROM processes"
                      " WHERE cuda_launch_blocking = 1)"
                    : "");
  }
  ASSIGN_OR_RETURN(Statement st, db.Prepare(sql));
  std::set<std::pair<std::string, int64_t>> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.emplace(st.Text(0), st.Int(1));
  }
  return out;
}

}  // namespace rs

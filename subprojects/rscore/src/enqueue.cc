#include "rscore/enqueue.h"

#include "rscore/schema.h"

namespace rs {

Result<std::set<std::pair<std::string, int64_t>>> EnqueuingProcesses(Db& db) {
  ASSIGN_OR_RETURN(bool gpu_ops, HasGpuOps(db));
  ASSIGN_OR_RETURN(bool blocking, HasColumn(db, "processes", "cuda_launch_blocking"));
  // Per process, EXISTS stops at its first CUDA call or device operation (early in a GPU
  // process's life); only processes without any scan the tables through.
  ASSIGN_OR_RETURN(
      Statement st,
      db.Prepare(std::string("SELECT node, pid FROM (SELECT DISTINCT node, pid FROM nccl_events) n"
                             " WHERE (EXISTS (SELECT 1 FROM cuda_events c WHERE c.pid = n.pid"
                             " AND c.node = n.node)") +
                 (gpu_ops ? " OR EXISTS (SELECT 1 FROM gpu_ops g WHERE g.pid = n.pid"
                            " AND g.node = n.node)"
                          : "") +
                 ")" +
                 (blocking ? " AND NOT EXISTS (SELECT 1 FROM processes p WHERE p.node = n.node"
                             " AND p.pid = n.pid AND p.cuda_launch_blocking = 1)"
                           : "")));
  std::set<std::pair<std::string, int64_t>> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.emplace(st.Text(0), st.Int(1));
  }
  return out;
}

}  // namespace rs

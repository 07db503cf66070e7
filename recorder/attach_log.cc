#include "recorder/attach_log.h"

#include "recorder/log.h"

namespace rs::rec {

AttachLog::AttachLog(rs::Db* db, std::string node, bool verbose)
    : db_(db), node_(std::move(node)), verbose_(verbose) {}

void AttachLog::Record(const std::string& kind, const std::string& target,
                       const std::string& symbol, bool ok, const std::string& error,
                       const std::string& build_id) {
  entries_.push_back({kind, target, symbol, ok, error, build_id});
  if (!ok) ++failures_;
  if (!ok || verbose_) {
    std::string where = target + (symbol.empty() ? "" : ":" + symbol);
    if (ok) {
      Log("attached %s %s", kind.c_str(), where.c_str());
    } else {
      Log("could not attach %s %s: %s", kind.c_str(), where.c_str(), error.c_str());
    }
  }
  if (db_ == nullptr) return;
  auto st = db_->Prepare(
      "INSERT INTO attachments(node, kind, target, symbol, ok, error, build_id) "
      "VALUES (?, ?, ?, ?, ?, ?, ?)");
  rs::Result<void> r = st.ok() ? rs::Ok() : rs::Result<void>(st.error());
  if (st.ok()) {
    st->Bind(1, node_).Bind(2, kind).Bind(3, target).Bind(5, ok ? 1 : 0);
    if (symbol.empty())
      st->BindNull(4);
    else
      st->Bind(4, symbol);
    if (error.empty())
      st->BindNull(6);
    else
      st->Bind(6, error);
    if (build_id.empty())
      st->BindNull(7);
    else
      st->Bind(7, build_id);
    r = st->Run();
  }
  if (!r.ok() && write_status_.ok()) write_status_ = r;
}

}  // namespace rs::rec

#include "analyzer/mcp/recording.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "analyzer/call_semantics.h"
#include "analyzer/query.h"
#include "analyzer/report.h"
#include "analyzer/report_filter.h"
#include "analyzer/report_render.h"
#include "exporter/event_reader.h"
#include "merger/merge.h"
#include "rscore/cli.h"
#include "rscore/duration.h"
#include "rscore/time_arg.h"

namespace rs::analyzer::mcp {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Merges the bundles with rankscope-merge's library into a private directory, then keeps the
// result open without a name: nothing is left of it after the server, however it ends
// (but for the instant between the merge and the unlink). Returns the open descriptor.
rs::Result<int> MergeBundles(const std::vector<std::string>& inputs, std::ostream& log) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/rankscope-mcp-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) {
    return rs::Error("cannot make a directory for the merged bundles in " +
                     dir.substr(0, dir.rfind('/')) + ": " + std::strerror(errno));
  }
  rs::merge::MergeOptions options;
  options.inputs = inputs;
  options.out_path = dir + "/merged.rsdb";
  auto merged = rs::merge::Merge(options, log);
  int fd = -1;
  if (merged.ok()) fd = ::open(options.out_path.c_str(), O_RDONLY | O_CLOEXEC);
  const int open_errno = errno;
  ::unlink(options.out_path.c_str());
  ::rmdir(dir.c_str());
  if (!merged.ok()) return merged.error().Wrap("merging " + Join(inputs));
  if (fd < 0) {
    return rs::Error("cannot open the merged bundles: " + std::string(std::strerror(open_errno)));
  }
  return fd;
}

}  // namespace

rs::Result<std::unique_ptr<Recording>> Recording::Open(const std::vector<std::string>& inputs,
                                                       bool check_integrity, std::ostream& log) {
  if (inputs.empty()) return rs::Error("no input: give a .rsdb, a .rsb or bundles to merge");
  std::unique_ptr<Recording> r(new Recording());
  if (inputs.size() == 1 && !IsDirectory(inputs[0])) {
    r->name_ = r->path_ = inputs[0];
  } else {
    ASSIGN_OR_RETURN(r->merged_fd_, MergeBundles(inputs, log));
    r->path_ = "/proc/self/fd/" + std::to_string(r->merged_fd_);
    r->name_ = std::to_string(inputs.size()) + (inputs.size() == 1 ? " directory" : " inputs") +
               " merged: " + Join(inputs);
  }
  ASSIGN_OR_RETURN(r->opened_, rs::OpenRankscopeFile(r->path_, check_integrity));
  return r;
}

Recording::~Recording() {
  if (merged_fd_ >= 0) ::close(merged_fd_);
}

int64_t Recording::start_ns() const { return RecordingStartNs(opened_); }

void Recording::BeginCall(int64_t time_limit_ns) {
  opened_.db().RestartDeadline(time_limit_ns, rs::FormatDuration(time_limit_ns) + " per step");
}

rs::Result<rs::Db*> Recording::QueryDb() {
  if (!query_db_) {
    // The same file through a second connection (a bundle's is its decompressed image).
    ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(opened_.sqlite_path(), rs::Db::Mode::kReadOnly));
    RETURN_IF_ERROR(db.GuardInput(name_));
    RETURN_IF_ERROR(CreateQueryViews(db));
    RETURN_IF_ERROR(InstallReadOnlyGuard(db));
    query_db_ = std::make_unique<rs::Db>(std::move(db));
  }
  return query_db_.get();
}

rs::Result<const Report*> Recording::GetReport() {
  if (!report_) {
    ASSIGN_OR_RETURN(Report r, BuildReport(opened_));
    r.input = name_;
    report_ = std::move(r);
  }
  return &*report_;
}

rs::Result<const Json*> Recording::ReportJson() {
  if (!report_json_) {
    ASSIGN_OR_RETURN(const Report* r, GetReport());
    Json j = Json::parse(RenderJson(*r), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return rs::Error("internal error: the report's JSON does not parse");
    report_json_ = std::move(j);
  }
  return &*report_json_;
}

rs::Result<const CollectiveData*> Recording::Collectives() {
  if (!collectives_) {
    ASSIGN_OR_RETURN(const Report* r, GetReport());
    // As the report compares them: the calls' semantics decide the arrivals.
    ASSIGN_OR_RETURN(CollectiveData data, LoadComparedCollectives(db(), r->clock));
    collectives_ = std::move(data);
  }
  return &*collectives_;
}

rs::Result<const std::vector<std::string>*> Recording::Nodes() {
  if (!nodes_) {
    ASSIGN_OR_RETURN(std::vector<std::string> nodes, rs::exporter::ListNodes(db()));
    std::stable_sort(nodes.begin(), nodes.end(), [](const std::string& a, const std::string& b) {
      return rs::cli::NaturalLess(a, b);
    });
    nodes_ = std::move(nodes);
  }
  return &*nodes_;
}

rs::Result<void> Recording::CheckNode(const std::string& node, const std::string& what) {
  ASSIGN_OR_RETURN(const std::vector<std::string>* nodes, Nodes());
  if (std::find(nodes->begin(), nodes->end(), node) != nodes->end()) return rs::Ok();
  std::vector<std::string> shown(nodes->begin(),
                                 nodes->begin() + std::min<size_t>(nodes->size(), 50));
  return rs::Error(what + ": no node '" + node + "' in this recording; its nodes are " +
                   (shown.empty() ? std::string("(none)") : Join(shown)) +
                   (nodes->size() > shown.size()
                        ? " and " + std::to_string(nodes->size() - shown.size()) + " more"
                        : ""));
}

rs::Result<int64_t> Recording::ResolveTime(const std::string& text, const std::string& what) const {
  ASSIGN_OR_RETURN(rs::TimeArg t, rs::ParseTimeArg(text, what));
  return t.Resolve(start_ns());
}

}  // namespace rs::analyzer::mcp

#include "merger/test_bundles.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "rscore/bundle.h"
#include "rscore/zstd_file.h"

namespace rs::merge::testing {

TempDir::TempDir() {
  const char* t = std::getenv("TMPDIR");
  std::string tmpl = std::string(t && *t ? t : "/tmp") + "/rankscope-merge-test.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

rs::Result<void> RewriteBundle(const std::string& in, const std::string& out,
                               const std::string& sql) {
  ASSIGN_OR_RETURN(rs::TempFile tmp, rs::TempFile::Create("", "rewrite"));
  RETURN_IF_ERROR(rs::DecompressFile(in, tmp.path()));
  {
    ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(tmp.path(), rs::Db::Mode::kReadWrite));
    RETURN_IF_ERROR(db.Exec(sql));
  }
  return rs::CompressFile(tmp.path(), out, 3);
}

rs::Result<void> FlipByteInImage(const std::string& in, const std::string& out, int64_t offset) {
  ASSIGN_OR_RETURN(rs::TempFile tmp, rs::TempFile::Create("", "flip"));
  RETURN_IF_ERROR(rs::DecompressFile(in, tmp.path()));
  std::fstream f(tmp.path(), std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.read(&c, 1);
  if (!f) return rs::Error(in + ": image shorter than offset " + std::to_string(offset));
  c = static_cast<char>(c ^ 0xff);
  f.seekp(offset);
  f.write(&c, 1);
  f.close();
  return rs::CompressFile(tmp.path(), out, 3);
}

rs::Result<void> Truncate(const std::string& in, const std::string& out, int64_t bytes) {
  std::ifstream f(in, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  data.resize(static_cast<size_t>(std::min<int64_t>(bytes, static_cast<int64_t>(data.size()))));
  return WriteText(out, data);
}

rs::Result<void> WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f) return rs::Error(path + ": cannot write");
  return rs::Ok();
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto s = std::filesystem::file_size(path, ec);
  return ec ? -1 : static_cast<int64_t>(s);
}

rs::Result<void> WriteEmptyBundle(const std::string& path, const std::string& node,
                                  const std::string& recording_id) {
  ASSIGN_OR_RETURN(rs::BundleWriter w, rs::BundleWriter::Create(path, 3));
  RETURN_IF_ERROR(w.SetMetadata("recording_id", recording_id));
  RETURN_IF_ERROR(w.SetMetadata("node", node));
  RETURN_IF_ERROR(w.SetMetadata("start_ns", "1760000000000000000"));
  RETURN_IF_ERROR(w.SetMetadata("end_ns", "1760000001000000000"));
  return w.Finalize();
}

rs::Result<rs::Db> OpenMerged(const std::string& path) {
  return rs::Db::Open(path, rs::Db::Mode::kReadOnly);
}

}  // namespace rs::merge::testing

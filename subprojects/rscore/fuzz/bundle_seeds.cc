// Seed corpus for bundle_fuzz: `bundle_seeds DIR` writes a few small valid and invalid bundles
// (.rsb) and databases (.rsdb) into DIR, so the fuzzer starts from inputs that get past the
// format checks instead of from random bytes.
//   valid:   a bundle with rows, its SQLite image, a small bundle image, a merged db
//   invalid: truncated zstd frame, text file, bad / newer / missing metadata, unknown db_kind
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "rscore/bundle.h"
#include "rscore/event_id.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"
#include "rscore/zstd_file.h"

namespace {

using rs::Result;

Result<void> WriteBundle(const std::string& path) {
  ASSIGN_OR_RETURN(rs::BundleWriter w, rs::BundleWriter::Create(path, 19));
  std::string rid = rs::NewRecordingId();
  RETURN_IF_ERROR(w.SetMetadata("recording_id", rid));
  RETURN_IF_ERROR(w.SetMetadata("node", "n0"));
  RETURN_IF_ERROR(w.SetMetadata("start_ns", "1000"));
  RETURN_IF_ERROR(w.SetMetadata("end_ns", "9000"));
  rs::EventIdAllocator ids(rs::RecordingKey(rid));
  ASSIGN_OR_RETURN(rs::Statement nccl,
                   w.db().Prepare("INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, "
                                  "pid, tid, op, rank, nranks, comm_id_hash, seq, bytes) "
                                  "VALUES (?, 'n0', ?, 500, 7, 7, 'ALL_REDUCE', 0, 2, 42, ?, 64)"));
  for (int i = 0; i < 4; ++i)
    RETURN_IF_ERROR(nccl.Bind(1, ids.Next()).Bind(2, 2000 + i * 1000).Bind(3, i).Run());
  RETURN_IF_ERROR(w.db().Exec(
      "INSERT INTO clock_refs(node, seq, kind, mono_ns, realtime_ns, read_span_ns) VALUES "
      "('n0', 0, 'start', 10, 1000, 50), ('n0', 1, 'end', 8010, 9000, 60)"));
  return w.Finalize();
}

// An SQLite image with 512-byte pages (a few KiB smaller than the recorder's), optionally
// with one metadata value changed or removed afterwards.
Result<void> WriteSmallDb(const std::string& path, rs::DbKind kind, const std::string& edit_sql) {
  std::remove(path.c_str());
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(path, rs::Db::Mode::kCreate));
  RETURN_IF_ERROR(db.Exec("PRAGMA page_size=512; PRAGMA journal_mode=DELETE;"));
  RETURN_IF_ERROR(rs::CreateSchema(db, kind));
  if (kind == rs::DbKind::kBundle) {
    RETURN_IF_ERROR(
        db.Exec("INSERT INTO metadata(key, value) VALUES ('recording_id', 'r0'), ('node', 'n1'), "
                "('start_ns', '1000'), ('end_ns', '2000');"
                "INSERT INTO nccl_events(id, node, timestamp_ns, pid, tid, op) "
                "VALUES (1, 'n1', 1500, 1, 1, 'SEND');"));
  }
  if (!edit_sql.empty()) RETURN_IF_ERROR(db.Exec(edit_sql));
  return db.Exec("VACUUM");
}

Result<void> WriteAll(const std::string& dir) {
  RETURN_IF_ERROR(WriteBundle(dir + "/valid.rsb"));
  // The bundle's SQLite image, rewritten with 512-byte pages (about 20 KiB instead of 120).
  RETURN_IF_ERROR(rs::DecompressFile(dir + "/valid.rsb", dir + "/valid_image.rsdb"));
  {
    ASSIGN_OR_RETURN(rs::Db image,
                     rs::Db::Open(dir + "/valid_image.rsdb", rs::Db::Mode::kReadWrite));
    RETURN_IF_ERROR(image.Exec("PRAGMA page_size=512; VACUUM;"));
  }
  RETURN_IF_ERROR(WriteSmallDb(dir + "/small.rsdb", rs::DbKind::kBundle, ""));
  RETURN_IF_ERROR(WriteSmallDb(dir + "/merged.rsdb", rs::DbKind::kMerged, ""));
  RETURN_IF_ERROR(WriteSmallDb(dir + "/bad_format_version.rsdb", rs::DbKind::kBundle,
                               "UPDATE metadata SET value = '1x' WHERE key = 'format_version'"));
  RETURN_IF_ERROR(WriteSmallDb(dir + "/newer_schema.rsdb", rs::DbKind::kBundle,
                               "UPDATE metadata SET value = '99' WHERE key = 'schema_version'"));
  RETURN_IF_ERROR(WriteSmallDb(dir + "/no_node.rsdb", rs::DbKind::kBundle,
                               "DELETE FROM metadata WHERE key = 'node'"));
  RETURN_IF_ERROR(WriteSmallDb(dir + "/unknown_kind.rsdb", rs::DbKind::kBundle,
                               "UPDATE metadata SET value = 'other' WHERE key = 'db_kind'"));
  // A zstd frame cut in the middle, and bytes that are neither zstd nor SQLite.
  {
    std::ifstream in(dir + "/valid.rsb", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(dir + "/truncated.rsb", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  std::ofstream(dir + "/text.rsb") << "node0 recording, not a bundle\n";
  return rs::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::string dir = argv[1];
  mkdir(dir.c_str(), 0755);
  auto r = WriteAll(dir);
  if (!r.ok()) {
    std::fprintf(stderr, "bundle_seeds: %s\n", r.error().message().c_str());
    return 1;
  }
  return 0;
}

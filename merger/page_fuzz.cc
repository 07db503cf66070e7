// Fuzzing the merge's page path (record_copy.cc, btree_splice.cc, sqlite_pages.cc): a fuzz
// input is a list of byte changes made to the SQLite image of one node's bundle; the merge of
// that bundle with a good one then runs with every input copied into a part page by page and
// the parts spliced in. The judge: a merge that fails wrote nothing; a merge that succeeds wrote
// a database that PRAGMA integrity_check finds intact, whose rows reconcile with merge_counts.
// Anything else aborts (libFuzzer keeps the input).
//
// Built three ways: as a libFuzzer target (-Dfuzz=true with clang, see .ci/fuzz), as a replay
// tool (merge_page_fuzz_replay FILE...), and as the unit test that runs seeded random cases
// (page_fuzz_test.cc).
#include "page_fuzz.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "merge.h"
#include "rscore/sqlite.h"
#include "rscore/zstd_file.h"
#include "synth_bundle.h"

namespace merge::fuzz {
namespace {

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "merge page fuzz: %s\n", what.c_str());
  std::abort();
}

struct Seed {
  std::string dir;          // holds the bundles and each case's files
  std::string good_bundle;  // node0, never changed
  std::string image;        // node1's SQLite image, changed per case
};

const Seed& TheSeed() {
  static const Seed seed = [] {
    Seed s;
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/rankscope-page-fuzz.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) Fail("cannot make a directory under " + tmpl);
    s.dir = tmpl;
    // The seed's directory goes when the process ends normally (a crash keeps it, with the case).
    static std::string dir_to_remove;
    dir_to_remove = s.dir;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir_to_remove, ignored);
    });
    synth::ClusterSpec spec;
    spec.nodes = 2;
    spec.steps = 12;
    auto bundles = synth::WriteClusterBundles(spec, s.dir);
    if (!bundles.ok() || bundles->size() != 2) Fail("cannot write the seed bundles");
    s.good_bundle = (*bundles)[0];
    const std::string image = s.dir + "/node1.db";
    if (!rs::DecompressFile((*bundles)[1], image, 0600).ok()) Fail("cannot decompress node1");
    std::ifstream in(image, std::ios::binary);
    s.image.assign(std::istreambuf_iterator<char>(in), {});
    unlink(image.c_str());
    unlink((*bundles)[1].c_str());
    return s;
  }();
  return seed;
}

int64_t Int(rs::Db& db, const std::string& sql) {
  auto v = db.QueryInt(sql);
  if (!v.ok()) Fail(sql + ": " + v.error().message());
  return *v;
}

}  // namespace

std::string SeedImage() { return TheSeed().image; }

Outcome RunCase(const uint8_t* data, size_t size) {
  const Seed& seed = TheSeed();
  // Each change: 4 bytes of offset into the image (little endian, modulo its size), 1 byte
  // XORed into it; at most 64 changes.
  std::string image = seed.image;
  for (size_t k = 0; k + 5 <= size && k < 5 * 64; k += 5) {
    uint32_t off = static_cast<uint32_t>(data[k]) | static_cast<uint32_t>(data[k + 1]) << 8 |
                   static_cast<uint32_t>(data[k + 2]) << 16 |
                   static_cast<uint32_t>(data[k + 3]) << 24;
    image[off % image.size()] = static_cast<char>(image[off % image.size()] ^ data[k + 4]);
  }
  const std::string image_path = seed.dir + "/case.db", bundle = seed.dir + "/node1.rsb",
                    out = seed.dir + "/case.rsdb";
  {
    std::ofstream f(image_path, std::ios::binary | std::ios::trunc);
    f.write(image.data(), static_cast<std::streamsize>(image.size()));
    if (!f) Fail("cannot write " + image_path);
  }
  if (!rs::CompressFile(image_path, bundle, 1, 0600).ok()) Fail("cannot compress the case");
  unlink(image_path.c_str());
  unlink(out.c_str());

  MergeOptions o;
  o.inputs = {seed.good_bundle, bundle};
  o.out_path = out;
  o.worker_threads = 1;  // every input through a part: the page path
  o.splice = true;
  std::ostringstream log;
  auto merged = Merge(o, log);
  struct stat st {};
  const bool written = stat(out.c_str(), &st) == 0;
  if (!merged.ok()) {
    if (written) Fail("the merge failed (" + merged.error().message() + ") but wrote " + out);
    unlink(bundle.c_str());
    return Outcome::kRefused;
  }
  if (!written) Fail("the merge succeeded without writing " + out);
  {
    auto db = rs::Db::Open(out, rs::Db::Mode::kReadOnly);
    if (!db.ok()) Fail("cannot open the merged db: " + db.error().message());
    auto check = db->QueryText("PRAGMA integrity_check");
    if (!check.ok() || check->value_or("") != "ok") {
      Fail("integrity_check: " + (check.ok() ? check->value_or("(none)") : check.error().message()) +
           "\nmerge log:\n" + log.str());
    }
    if (Int(*db, "SELECT COUNT(*) FROM merge_counts WHERE rows_in != rows_out + rows_skipped") != 0)
      Fail("merge_counts do not reconcile");
    for (const char* t : {"nccl_events", "tcp_events", "sched_events", "block_events",
                          "process_events", "cuda_events", "gpu_ops"}) {
      const std::string table(t);
      if (Int(*db, "SELECT COUNT(*) FROM " + table) !=
          Int(*db, "SELECT COALESCE(SUM(rows_out), 0) FROM merge_counts WHERE table_name = '" +
                       table + "'")) {
        Fail(table + ": rows in the db differ from merge_counts' rows_out");
      }
    }
  }
  unlink(out.c_str());
  unlink(bundle.c_str());
  return merged->skipped > 0 ? Outcome::kSkipped : Outcome::kMerged;
}

}  // namespace merge::fuzz

#ifdef RANKSCOPE_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  merge::fuzz::RunCase(data, size);
  return 0;
}
#elif defined(RANKSCOPE_FUZZ_REPLAY)
int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    auto outcome = merge::fuzz::RunCase(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::printf("%s: %s\n", argv[i],
                outcome == merge::fuzz::Outcome::kMerged    ? "merged"
                : outcome == merge::fuzz::Outcome::kSkipped ? "merged, the changed bundle skipped"
                                                            : "refused");
  }
  return 0;
}
#endif

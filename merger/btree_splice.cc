#include "btree_splice.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <queue>
#include <thread>
#include <unordered_map>
#include <variant>

namespace merge {
namespace {

constexpr int kMaxKeyColumns = 3;
constexpr int kMaxDepth = 40;
constexpr int64_t kLockByteOffset = 0x40000000;  // the page holding it is never used

// Page types (first byte of a b-tree page header).
constexpr uint8_t kIndexInterior = 2, kTableInterior = 5, kIndexLeaf = 10, kTableLeaf = 13;

uint32_t Get16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
uint32_t Get32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
void Put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// SQLite varint: 1-9 bytes, big-endian groups of 7 bits, the 9th byte whole. Returns the
// length read (0: runs past `end`).
int GetVarint(const uint8_t* p, const uint8_t* end, uint64_t* v) {
  if (p < end && !(p[0] & 0x80)) {  // the common one-byte case
    *v = p[0];
    return 1;
  }
  uint64_t x = 0;
  for (int i = 0; i < 8; ++i) {
    if (p + i >= end) return 0;
    x = (x << 7) | (p[i] & 0x7f);
    if (!(p[i] & 0x80)) {
      *v = x;
      return i + 1;
    }
  }
  if (p + 8 >= end) return 0;
  *v = (x << 8) | p[8];
  return 9;
}

int PutVarint(uint8_t* out, uint64_t v) {
  if (v < 0x80) {
    out[0] = static_cast<uint8_t>(v);
    return 1;
  }
  if (v > 0x00ffffffffffffffULL) {  // 9 bytes: 8 groups of 7 bits, then 8 bits
    out[8] = static_cast<uint8_t>(v);
    v >>= 8;
    for (int i = 7; i >= 0; --i) {
      out[i] = static_cast<uint8_t>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    return 9;
  }
  uint8_t tmp[9];
  int n = 0;
  do {
    tmp[n++] = static_cast<uint8_t>((v & 0x7f) | 0x80);
    v >>= 7;
  } while (v);
  tmp[0] &= 0x7f;
  for (int i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

// The 100-byte database header fields the splice relies on.
struct Header {
  uint32_t page_size = 0;
  uint8_t reserved = 0;
  uint8_t write_version = 0, read_version = 0;
  uint32_t change_counter = 0;
  uint32_t page_count = 0;
  uint32_t schema_format = 0;
  uint32_t autovacuum_root = 0;
  uint32_t text_encoding = 0;
  uint32_t usable() const { return page_size - reserved; }
};

// `source`: a file only read (a WAL-mode flag is fine when the file stands alone, as a
// decompressed bundle image does).
rs::Result<Header> ParseHeader(const uint8_t* h, int64_t file_size, const std::string& path,
                               bool source = false) {
  if (std::memcmp(h, "SQLite format 3", 16) != 0) return rs::Error(path + ": not an SQLite file");
  Header r;
  r.page_size = Get16(h + 16) == 1 ? 65536 : Get16(h + 16);
  r.write_version = h[18];
  r.read_version = h[19];
  r.reserved = h[20];
  r.change_counter = Get32(h + 24);
  r.schema_format = Get32(h + 44);
  r.autovacuum_root = Get32(h + 52);
  r.text_encoding = Get32(h + 56);
  if (r.page_size < 512 || (r.page_size & (r.page_size - 1)) != 0) {
    return rs::Error(path + ": bad page size");
  }
  uint32_t in_header = Get32(h + 28);
  // The header's page count is valid only when its version-valid-for number matches.
  r.page_count = in_header != 0 && Get32(h + 92) == r.change_counter
                     ? in_header
                     : static_cast<uint32_t>(file_size / r.page_size);
  if (static_cast<int64_t>(r.page_count) * r.page_size > file_size) {
    return rs::Error(path + ": shorter than its header says");
  }
  if (!source && (r.write_version != 1 || r.read_version != 1)) {
    return rs::Error(path + ": in WAL mode (the splice needs a rollback-journal file)");
  }
  if (r.autovacuum_root != 0) return rs::Error(path + ": auto-vacuum database");
  if (r.schema_format != 4) return rs::Error(path + ": schema format is not 4");
  return r;
}

// An open file descriptor, closed with its owner.
class UniqueFd {
 public:
  static rs::Result<UniqueFd> Open(const std::string& path, int flags) {
    UniqueFd f;
    f.fd_ = open(path.c_str(), flags | O_CLOEXEC);
    if (f.fd_ < 0) return rs::Error(path + ": " + std::strerror(errno));
    return f;
  }
  UniqueFd() = default;
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

// A part, mapped read-only.
class MappedFile {
 public:
  static rs::Result<std::unique_ptr<MappedFile>> Open(const std::string& path,
                                                      bool read_only_source = false) {
    auto f = std::unique_ptr<MappedFile>(new MappedFile);
    f->path_ = path;
    ASSIGN_OR_RETURN(f->fd_, UniqueFd::Open(path, O_RDONLY));
    struct stat st {};
    if (fstat(f->fd_.get(), &st) != 0) return rs::Error(path + ": " + std::strerror(errno));
    f->size_ = st.st_size;
    if (f->size_ < 512) return rs::Error(path + ": too short for an SQLite file");
    void* m = mmap(nullptr, f->size_, PROT_READ, MAP_SHARED, f->fd_.get(), 0);
    if (m == MAP_FAILED) return rs::Error(path + ": mmap: " + std::strerror(errno));
    f->data_ = static_cast<const uint8_t*>(m);
    ASSIGN_OR_RETURN(f->header_, ParseHeader(f->data_, f->size_, path, read_only_source));
    return f;
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
  }
  const Header& header() const { return header_; }
  const std::string& path() const { return path_; }
  // Drops the mapped pages from this process (they stay in the page cache): a mapped page
  // read once would otherwise count as the process's memory until the end.
  void Release() const { madvise(const_cast<uint8_t*>(data_), size_, MADV_DONTNEED); }
  // Page `n` (1-based); nullptr when outside the file.
  const uint8_t* Page(uint32_t n) const {
    if (n < 1 || n > header_.page_count) return nullptr;
    return data_ + static_cast<int64_t>(n - 1) * header_.page_size;
  }

 private:
  MappedFile() = default;
  std::string path_;
  UniqueFd fd_;
  const uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  Header header_;
};

// How much of a payload of `n` bytes is stored in the cell (the rest in overflow pages).
uint32_t LocalSize(uint64_t n, uint32_t usable, bool table_leaf) {
  const uint64_t max_local = table_leaf ? usable - 35 : (usable - 12) * 64 / 255 - 23;
  if (n <= max_local) return static_cast<uint32_t>(n);
  const uint64_t min_local = (usable - 12) * 32 / 255 - 23;
  uint64_t k = min_local + (n - min_local) % (usable - 4);
  return static_cast<uint32_t>(k <= max_local ? k : min_local);
}

// One cell of a table leaf.
struct LeafCell {
  uint64_t payload_size = 0;
  int64_t rowid = 0;
  const uint8_t* payload = nullptr;  // local part
  uint32_t local = 0;
  uint32_t overflow_at = 0;  // offset in the page of the first overflow page number; 0: none
};

rs::Result<LeafCell> ParseLeafCell(const uint8_t* page, uint32_t offset, uint32_t usable) {
  const uint8_t* end = page + usable;
  const uint8_t* p = page + offset;
  if (offset >= usable) return rs::Error("cell offset outside the page");
  LeafCell c;
  int n = GetVarint(p, end, &c.payload_size);
  if (n == 0) return rs::Error("truncated cell");
  p += n;
  uint64_t rowid = 0;
  n = GetVarint(p, end, &rowid);
  if (n == 0) return rs::Error("truncated cell");
  p += n;
  c.rowid = static_cast<int64_t>(rowid);
  c.local = LocalSize(c.payload_size, usable, true);
  c.payload = p;
  const uint32_t body = static_cast<uint32_t>(p - page);
  if (c.local < c.payload_size) {
    if (body + c.local + 4 > usable) return rs::Error("cell runs past the page");
    c.overflow_at = body + c.local;
  } else if (body + c.local > usable) {
    return rs::Error("cell runs past the page");
  }
  return c;
}

// Index keys of up to K integer (or NULL) columns and the rowid; SQLite's order for them.
template <int K>
struct Key {
  int64_t v[K];
  int64_t rowid;
  uint8_t nulls;  // bit j: column j is NULL
  bool operator<(const Key& o) const {
    for (int j = 0; j < K; ++j) {
      bool a = nulls >> j & 1, b = o.nulls >> j & 1;
      if (a != b) return a;  // NULL sorts first
      if (!a && v[j] != o.v[j]) return v[j] < o.v[j];
    }
    return rowid < o.rowid;
  }
};
using KeyList = std::variant<std::vector<Key<1>>, std::vector<Key<2>>, std::vector<Key<3>>>;

// Reads the value of column `col` of a record. Returns false for values the splice does not
// sort (real, text, blob); NULL for columns past the record's end (none of them has a default).
bool RecordInt(const uint8_t* rec, size_t n, int col, bool* is_null, int64_t* v, bool* corrupt) {
  uint64_t hdr_len = 0;
  int k = GetVarint(rec, rec + n, &hdr_len);
  if (k == 0 || hdr_len > n) {
    *corrupt = true;
    return false;
  }
  const uint8_t* h = rec + k;
  const uint8_t* hend = rec + hdr_len;
  size_t body = hdr_len;
  for (int i = 0;; ++i) {
    if (h >= hend) {  // column beyond the record
      *is_null = true;
      return true;
    }
    uint64_t t = 0;
    int m = GetVarint(h, hend, &t);
    if (m == 0) {
      *corrupt = true;
      return false;
    }
    h += m;
    static constexpr uint8_t kIntLen[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
    size_t len = t >= 12 ? (t - 12) / 2 : (t < 10 ? kIntLen[t] : 0);
    if (t == 10 || t == 11) {
      *corrupt = true;
      return false;
    }
    if (i < col) {
      body += len;
      continue;
    }
    if (t == 0) {
      *is_null = true;
      return true;
    }
    if (t == 8 || t == 9) {
      *is_null = false;
      *v = t - 8;
      return true;
    }
    if (t == 7 || t >= 12) return false;
    if (body + len > n) {
      *corrupt = true;
      return false;
    }
    const uint8_t* b = rec + body;
    int64_t x = static_cast<int8_t>(b[0]);  // sign from the first byte
    for (size_t j = 1; j < len; ++j) x = static_cast<int64_t>(static_cast<uint64_t>(x) << 8 | b[j]);
    *is_null = false;
    *v = x;
    return true;
  }
}

// Serial type and length of an integer, as SQLite chooses them (schema format 4).
int IntSerialType(int64_t i, int* len) {
  uint64_t u = i < 0 ? ~static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
  if (u <= 127) {
    if (i == 0 || i == 1) {
      *len = 0;
      return 8 + static_cast<int>(i);
    }
    *len = 1;
    return 1;
  }
  static constexpr struct {
    uint64_t max;
    int type, len;
  } kSizes[] = {{32767, 2, 2}, {8388607, 3, 3}, {2147483647, 4, 4}, {0x00007fffffffffffULL, 5, 6}};
  for (const auto& s : kSizes) {
    if (u <= s.max) {
      *len = s.len;
      return s.type;
    }
  }
  *len = 8;
  return 6;
}

struct LeafRef {
  size_t part;
  uint32_t page;
  int64_t max_rowid;
};

// One table in one part: its leaves in order, and each built index's keys, sorted.
struct PartScan {
  std::vector<LeafRef> leaves;  // leaves with cells
  int64_t rows = 0;
  int64_t first_rowid = 0, last_rowid = 0;
  std::vector<KeyList> keys;     // per TableWork::built
  std::vector<bool> unsortable;  // per TableWork::built: holds a key only SQLite compares
};

struct TableWork {
  const SpliceTable* table;
  std::vector<const SpliceIndex*> built;  // indexes the splice builds
  std::vector<PartScan> parts;
  int64_t rows = 0;
  std::vector<std::string> reindex;
};

}  // namespace

struct SpliceWork {
  const SplicePlan* plan = nullptr;
  Header out_header;
  std::vector<std::unique_ptr<MappedFile>> parts;
  std::vector<TableWork> tables;
};

namespace {

// Leaf pages of a table b-tree of `f`, in key order.
rs::Result<void> CollectLeaves(const MappedFile& f, uint32_t root, size_t part,
                               std::vector<LeafRef>* out, std::vector<bool>* seen) {
  struct Frame {
    uint32_t page;
    int depth;
  };
  std::vector<Frame> stack{{root, 0}};
  while (!stack.empty()) {
    Frame fr = stack.back();
    stack.pop_back();
    const uint8_t* p = f.Page(fr.page);
    if (!p || fr.page == 1 || fr.depth > kMaxDepth || (*seen)[fr.page]) {
      return rs::Error(f.path() + ": damaged b-tree at page " + std::to_string(fr.page));
    }
    (*seen)[fr.page] = true;
    const uint32_t ncells = Get16(p + 3);
    const uint32_t header = p[0] == kTableLeaf ? 8 : 12;
    if (header + 2 * ncells > f.header().usable()) {
      return rs::Error(f.path() + ": page " + std::to_string(fr.page) + " claims too many cells");
    }
    if (p[0] == kTableLeaf) {
      out->push_back(LeafRef{part, fr.page, 0});
      continue;
    }
    if (p[0] != kTableInterior) {
      return rs::Error(f.path() + ": page " + std::to_string(fr.page) + " is not a table page");
    }
    // Children pushed in reverse so that they pop in order: rightmost last.
    stack.push_back(Frame{Get32(p + 8), fr.depth + 1});
    for (uint32_t i = ncells; i-- > 0;) {
      uint32_t off = Get16(p + 12 + 2 * i);
      if (off + 4 > f.header().usable()) return rs::Error(f.path() + ": damaged interior page");
      stack.push_back(Frame{Get32(p + off), fr.depth + 1});
    }
  }
  return rs::Ok();
}

// Pages in an overflow chain of a payload of `n` bytes of which `local` are in the cell.
uint64_t ChainPages(uint64_t n, uint32_t local, uint32_t usable) {
  return (n - local + usable - 5) / (usable - 4);
}

// An overflow chain lies inside the file, has the length its payload needs, and shares no page
// with anything else of the tree: checked before anything is written (CopyLeaf trusts it).
rs::Result<void> CheckChain(const MappedFile& f, const uint8_t* page, const LeafCell& c,
                            std::vector<bool>* seen) {
  const uint32_t usable = f.header().usable();
  if (c.payload_size > static_cast<uint64_t>(f.header().page_count) * usable) {
    return rs::Error(f.path() + ": payload larger than the file");
  }
  uint32_t next = Get32(page + c.overflow_at);
  for (uint64_t k = ChainPages(c.payload_size, c.local, usable); k > 0; --k) {
    const uint8_t* o = f.Page(next);
    if (!o || next == 1 || (*seen)[next]) {
      return rs::Error(f.path() + ": damaged overflow chain at page " + std::to_string(next));
    }
    (*seen)[next] = true;
    next = Get32(o);
  }
  return rs::Ok();
}

// The whole payload of a cell whose payload overflows (its chain checked by CheckChain).
rs::Result<std::string> FullPayload(const MappedFile& f, const uint8_t* page, const LeafCell& c) {
  std::string out(reinterpret_cast<const char*>(c.payload), c.local);
  uint32_t next = Get32(page + c.overflow_at);
  const uint32_t chunk = f.header().usable() - 4;
  while (out.size() < c.payload_size) {
    const uint8_t* o = f.Page(next);
    if (!o || next == 1) return rs::Error(f.path() + ": damaged overflow chain");
    size_t take = std::min<size_t>(chunk, c.payload_size - out.size());
    out.append(reinterpret_cast<const char*>(o + 4), take);
    next = Get32(o);
  }
  return out;
}

template <int K>
bool AddKey(std::vector<Key<K>>& keys, const SpliceIndex& idx, int rowid_col, const uint8_t* rec,
            size_t n, int64_t rowid, bool* corrupt) {
  Key<K> k{};
  k.rowid = rowid;
  for (int j = 0; j < K; ++j) {
    int col = idx.key_columns[j];
    bool is_null = false;
    int64_t v = 0;
    if (col == -1 || col == rowid_col) {
      v = rowid;
    } else if (!RecordInt(rec, n, col, &is_null, &v, corrupt)) {
      return false;
    }
    if (is_null) k.nulls |= static_cast<uint8_t>(1u << j);
    k.v[j] = is_null ? 0 : v;
  }
  keys.push_back(k);
  return true;
}

KeyList MakeKeyList(size_t k) {
  if (k == 1) return std::vector<Key<1>>{};
  if (k == 2) return std::vector<Key<2>>{};
  return std::vector<Key<3>>{};
}

// Scans table `tw` in part `pi`: leaves, rowid order inside the part, keys (sorted at the end).
// `key_bytes`: keys held by all threads; past `budget` every thread stops collecting keys.
rs::Result<void> ScanPart(const SpliceWork& w, TableWork& tw, size_t pi,
                          std::atomic<int64_t>& key_bytes, int64_t budget,
                          std::atomic<bool>& over_budget) {
  const SpliceTable& t = *tw.table;
  const MappedFile& f = *w.parts[pi];
  const uint32_t usable = f.header().usable();
  PartScan& ps = tw.parts[pi];
  std::vector<LeafRef> leaves;
  std::vector<bool> seen(f.header().page_count + 1);  // pages of this tree, overflow included
  RETURN_IF_ERROR(CollectLeaves(f, static_cast<uint32_t>(t.part_roots[pi]), pi, &leaves, &seen));
  // The key lists are allocated once, exactly, from the leaves' cell counts, and only when they
  // fit in what is left of the budget.
  int64_t cells = 0;
  for (const LeafRef& leaf : leaves) cells += Get16(f.Page(leaf.page) + 3);
  int64_t held = 0;
  for (const SpliceIndex* idx : tw.built) {
    ps.keys.push_back(MakeKeyList(idx->key_columns.size()));
    ps.unsortable.push_back(false);
    held += std::visit([&](auto& v) { return cells * static_cast<int64_t>(sizeof(v[0])); },
                       ps.keys.back());
  }
  if (key_bytes.fetch_add(held) + held > budget) over_budget = true;
  if (!over_budget) {
    for (KeyList& k : ps.keys) {
      std::visit([&](auto& v) { v.reserve(static_cast<size_t>(cells)); }, k);
    }
  }
  bool have_last = false;
  int64_t last = 0;
  for (LeafRef& leaf : leaves) {
    const uint8_t* page = f.Page(leaf.page);
    const uint32_t ncells = Get16(page + 3);
    if (ncells == 0) continue;  // an empty table's root: nothing to move
    const bool keys = !over_budget.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i < ncells; ++i) {
      auto cell = ParseLeafCell(page, Get16(page + 8 + 2 * i), usable);
      if (!cell.ok()) {
        return cell.error().Wrap(f.path() + ": page " + std::to_string(leaf.page));
      }
      const LeafCell& c = cell.value();
      if (have_last && c.rowid <= last) {
        return rs::Error(f.path() + ": table " + t.name + ": rowids out of order");
      }
      if (!have_last) ps.first_rowid = c.rowid;
      have_last = true;
      last = c.rowid;
      if (c.overflow_at) RETURN_IF_ERROR(CheckChain(f, page, c, &seen));
      if (!keys) continue;
      std::string whole;
      const uint8_t* rec = c.payload;
      size_t n = c.local;
      if (c.overflow_at && !tw.built.empty()) {
        ASSIGN_OR_RETURN(whole, FullPayload(f, page, c));
        rec = reinterpret_cast<const uint8_t*>(whole.data());
        n = whole.size();
      }
      for (size_t x = 0; x < tw.built.size(); ++x) {
        if (ps.unsortable[x]) continue;
        bool corrupt = false;
        bool ok = std::visit(
            [&](auto& k) {
              return AddKey(k, *tw.built[x], t.rowid_column, rec, n, c.rowid, &corrupt);
            },
            ps.keys[x]);
        if (corrupt) return rs::Error(f.path() + ": damaged record in table " + t.name);
        if (!ok) ps.unsortable[x] = true;  // a key SQLite must compare: REINDEX
      }
    }
    leaf.max_rowid = last;
    ps.leaves.push_back(leaf);
    ps.rows += ncells;
  }
  ps.last_rowid = last;
  if (over_budget) {
    ps.keys.clear();
    key_bytes -= held;
    return rs::Ok();
  }
  for (KeyList& k : ps.keys) {
    std::visit([](auto& v) { std::sort(v.begin(), v.end()); }, k);
  }
  return rs::Ok();
}

// Writes pages at the end of the output (allocated in order, written in runs) and at fixed
// numbers (roots).
class PageWriter {
 public:
  PageWriter(int fd, uint32_t page_size, uint32_t first_free)
      : fd_(fd), page_size_(page_size), next_(first_free) {}
  uint32_t Allocate() {
    const int64_t start = static_cast<int64_t>(next_ - 1) * page_size_;
    if (start <= kLockByteOffset && kLockByteOffset < start + page_size_) {
      ++next_;  // the lock-byte page is never part of a b-tree
    }
    ++written_;
    return next_++;
  }
  uint32_t last_allocated() const { return next_ - 1; }
  int64_t pages_written() const { return written_; }
  rs::Result<void> Write(uint32_t page, const uint8_t* data) {
    if (run_pages_ > 0 && (page != run_start_ + run_pages_ || run_.size() >= kRunBytes)) {
      RETURN_IF_ERROR(Flush());
    }
    if (run_pages_ == 0) run_start_ = page;
    run_.insert(run_.end(), data, data + page_size_);
    ++run_pages_;
    return rs::Ok();
  }
  rs::Result<void> Flush() {
    size_t done = 0;
    const off_t at = static_cast<off_t>(run_start_ - 1) * page_size_;
    while (done < run_.size()) {
      ssize_t n =
          pwrite(fd_, run_.data() + done, run_.size() - done, at + static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return rs::Error(std::string("writing the output: ") + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    run_.clear();
    run_pages_ = 0;
    return rs::Ok();
  }

 private:
  static constexpr size_t kRunBytes = 1 << 20;
  int fd_;
  uint32_t page_size_;
  uint32_t next_;
  int64_t written_ = 0;
  std::vector<uint8_t> run_;
  uint32_t run_start_ = 0, run_pages_ = 0;
};

// A b-tree page being filled: cell pointers from the header down, cell contents from the end
// up, in key order.
class PageImage {
 public:
  PageImage(uint8_t type, uint32_t page_size, uint32_t usable)
      : type_(type), page_(page_size, 0), usable_(usable) {
    Reset();
  }
  void Reset() {
    std::fill(page_.begin(), page_.end(), 0);
    ncells_ = 0;
    content_ = usable_;
    pointers_ = header_size();
  }
  uint32_t header_size() const { return type_ == kTableLeaf || type_ == kIndexLeaf ? 8 : 12; }
  bool interior() const { return header_size() == 12; }
  uint32_t free_bytes() const { return content_ - pointers_; }
  uint32_t cells() const { return ncells_; }
  // `child` is written in front of `key` on interior pages.
  void Add(uint32_t child, const uint8_t* key, uint32_t n) {
    const uint32_t len = n + (interior() ? 4 : 0);
    content_ -= len;
    uint8_t* c = page_.data() + content_;
    if (interior()) {
      Put32(c, child);
      c += 4;
    }
    std::memcpy(c, key, n);
    Put16(page_.data() + pointers_, content_);
    pointers_ += 2;
    ++ncells_;
  }
  const uint8_t* Finish(uint32_t rightmost) {
    uint8_t* h = page_.data();
    h[0] = type_;
    Put16(h + 1, 0);
    Put16(h + 3, ncells_);
    Put16(h + 5, content_ == 65536 ? 0 : content_);
    h[7] = 0;
    if (interior()) Put32(h + 8, rightmost);
    return page_.data();
  }

 private:
  uint8_t type_;
  std::vector<uint8_t> page_;
  uint32_t usable_;
  uint32_t ncells_ = 0, content_ = 0, pointers_ = 0;
};

// One level of a b-tree built bottom-up from keys in order. A page takes a cell while room
// for one more of the largest cell remains; the next cell is held back and becomes the
// separator passed up when a further cell arrives, or is added to the page when the level ends
// (that room is why). So no page is ever left without a cell. The top level's last page is
// written at the tree's root page number.
class Level {
 public:
  Level(PageWriter& out, uint8_t type, uint8_t parent_type, uint32_t max_key, uint32_t page_size,
        uint32_t usable)
      : out_(out),
        type_(type),
        parent_type_(parent_type),
        max_key_(max_key),
        page_size_(page_size),
        usable_(usable),
        page_(type, page_size, usable) {}

  // Adds a cell: `key` alone on a leaf level; `child` and `key` on an interior level.
  rs::Result<void> Add(uint32_t child, const uint8_t* key, uint32_t n) {
    const uint32_t cell = n + (page_.interior() ? 4 : 0);
    const uint32_t largest = max_key_ + (page_.interior() ? 4 : 0);
    if (held_) {
      uint32_t p = out_.Allocate();
      RETURN_IF_ERROR(out_.Write(p, page_.Finish(held_child_)));
      if (!parent_) {
        parent_ = std::make_unique<Level>(out_, parent_type_, parent_type_, max_key_, page_size_,
                                          usable_);
      }
      RETURN_IF_ERROR(parent_->Add(p, held_key_.data(), static_cast<uint32_t>(held_key_.size())));
      page_.Reset();
      held_ = false;
      page_.Add(child, key, n);
      return rs::Ok();
    }
    if (page_.free_bytes() >= cell + 2 + largest + 2) {
      page_.Add(child, key, n);
      return rs::Ok();
    }
    held_ = true;
    held_child_ = child;
    held_key_.assign(key, key + n);
    return rs::Ok();
  }

  // Ends the level; `last_child` is the interior pages' rightmost child.
  rs::Result<void> Finish(uint32_t last_child, uint32_t root) {
    if (held_) page_.Add(held_child_, held_key_.data(), static_cast<uint32_t>(held_key_.size()));
    if (!parent_) return out_.Write(root, page_.Finish(last_child));
    uint32_t p = out_.Allocate();
    RETURN_IF_ERROR(out_.Write(p, page_.Finish(last_child)));
    return parent_->Finish(p, root);
  }

 private:
  PageWriter& out_;
  uint8_t type_, parent_type_;
  uint32_t max_key_, page_size_, usable_;
  PageImage page_;
  bool held_ = false;
  uint32_t held_child_ = 0;
  std::vector<uint8_t> held_key_;
  std::unique_ptr<Level> parent_;
};

// Copies a table leaf of a part to page `to` of the output, its overflow chains copied onto
// pages allocated right after (in order, so the writes stay sequential) and renumbered.
rs::Result<void> CopyLeaf(const MappedFile& f, uint32_t from, uint32_t to, PageWriter& out,
                          std::vector<uint8_t>& buf) {
  const uint32_t ps = f.header().page_size, usable = f.header().usable();
  const uint8_t* src = f.Page(from);
  buf.assign(src, src + ps);
  struct Chain {
    uint32_t source_first;
    std::vector<uint32_t> pages;  // new numbers, in chain order
  };
  std::vector<Chain> chains;
  const uint32_t ncells = Get16(src + 3);
  for (uint32_t i = 0; i < ncells; ++i) {
    ASSIGN_OR_RETURN(LeafCell c, ParseLeafCell(src, Get16(src + 8 + 2 * i), usable));
    if (!c.overflow_at) continue;
    Chain chain{Get32(src + c.overflow_at), {}};
    for (uint64_t k = ChainPages(c.payload_size, c.local, usable); k > 0; --k) {
      chain.pages.push_back(out.Allocate());
    }
    Put32(buf.data() + c.overflow_at, chain.pages[0]);
    chains.push_back(std::move(chain));
  }
  RETURN_IF_ERROR(out.Write(to, buf.data()));
  std::vector<uint8_t> page(ps);
  for (const Chain& chain : chains) {
    uint32_t next = chain.source_first;
    for (size_t k = 0; k < chain.pages.size(); ++k) {
      const uint8_t* o = f.Page(next);
      if (!o || next == 1) return rs::Error(f.path() + ": damaged overflow chain");
      std::memcpy(page.data(), o, ps);
      Put32(page.data(), k + 1 < chain.pages.size() ? chain.pages[k + 1] : 0);
      RETURN_IF_ERROR(out.Write(chain.pages[k], page.data()));
      next = Get32(o);
    }
  }
  return rs::Ok();
}

// Flushes `out` and makes the file's header count its pages: page count, and a new change
// counter with its version-valid-for copy, so that the next reader trusts the new page count
// and drops anything it cached.
rs::Result<void> FinishFile(int fd, const Header& h, PageWriter& out, const std::string& path) {
  RETURN_IF_ERROR(out.Flush());
  uint8_t f[4];
  Put32(f, h.change_counter + 1);
  bool ok = pwrite(fd, f, 4, 24) == 4 && pwrite(fd, f, 4, 92) == 4;
  Put32(f, out.last_allocated());
  ok = ok && pwrite(fd, f, 4, 28) == 4;
  ok = ok && ftruncate(fd, static_cast<off_t>(out.last_allocated()) * h.page_size) == 0;
  if (!ok) return rs::Error(path + ": writing the header: " + std::strerror(errno));
  return rs::Ok();
}

// The header of a file being written (the output, a part).
rs::Result<Header> ReadHeader(int fd, const std::string& path) {
  uint8_t h[100];
  struct stat st {};
  if (pread(fd, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) || fstat(fd, &st) != 0) {
    return rs::Error(path + ": cannot read the header");
  }
  return ParseHeader(h, st.st_size, path);
}

uint8_t RootType(int fd, uint32_t page, uint32_t ps, uint32_t* cells) {
  uint8_t h[8];
  if (pread(fd, h, sizeof h, static_cast<off_t>(page - 1) * ps) != static_cast<ssize_t>(sizeof h)) {
    return 0;
  }
  *cells = Get16(h + 3);
  return h[0];
}

template <int K>
uint32_t EncodeEntry(const Key<K>& k, uint8_t* out) {
  // varint(payload size), then the record: header size, serial types, values.
  uint8_t types[K + 1];
  int lens[K + 1];
  int64_t vals[K + 1];
  for (int j = 0; j <= K; ++j) {
    bool null = j < K && (k.nulls >> j & 1);
    vals[j] = j < K ? k.v[j] : k.rowid;
    if (null) {
      types[j] = 0;
      lens[j] = 0;
    } else {
      types[j] = static_cast<uint8_t>(IntSerialType(vals[j], &lens[j]));
    }
  }
  uint32_t body = 0;
  for (int j = 0; j <= K; ++j) body += static_cast<uint32_t>(lens[j]);
  const uint32_t hdr = 1 + K + 1;  // < 128: one byte
  const uint32_t payload = hdr + body;
  uint8_t* p = out + PutVarint(out, payload);
  *p++ = static_cast<uint8_t>(hdr);
  for (int j = 0; j <= K; ++j) *p++ = types[j];
  for (int j = 0; j <= K; ++j) {
    for (int b = lens[j] - 1; b >= 0; --b) *p++ = static_cast<uint8_t>(vals[j] >> (8 * b));
  }
  return static_cast<uint32_t>(p - out);
}

// Writes the index from the parts' sorted key runs, merged.
template <int K>
rs::Result<void> WriteIndex(std::vector<std::vector<Key<K>>*> runs, uint32_t root, PageWriter& out,
                            const Header& h) {
  const uint32_t max_entry = 1 + 1 + (K + 1) + 8 * (K + 1);  // varint(<128) + record
  Level leaf(out, kIndexLeaf, kIndexInterior, max_entry, h.page_size, h.usable());
  uint8_t buf[64];
  using Head = std::pair<size_t, size_t>;  // run, position
  auto later = [&](const Head& a, const Head& b) {
    return (*runs[b.first])[b.second] < (*runs[a.first])[a.second];
  };
  std::priority_queue<Head, std::vector<Head>, decltype(later)> heads(later);
  for (size_t r = 0; r < runs.size(); ++r) {
    if (!runs[r]->empty()) heads.push({r, 0});
  }
  while (!heads.empty()) {
    Head top = heads.top();
    heads.pop();
    std::vector<Key<K>>& run = *runs[top.first];
    // Take from this run while it stays the smallest (runs rarely interleave key by key).
    size_t i = top.second;
    const Key<K>* bound = heads.empty() ? nullptr : &(*runs[heads.top().first])[heads.top().second];
    do {
      uint32_t n = EncodeEntry(run[i], buf);
      RETURN_IF_ERROR(leaf.Add(0, buf, n));
      ++i;
    } while (i < run.size() && (!bound || run[i] < *bound));
    if (i < run.size()) heads.push({top.first, i});
  }
  return leaf.Finish(0, root);
}

}  // namespace

rs::Result<int64_t> RootPage(rs::Db& db, const std::string& type, const std::string& name,
                             std::string* sql) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT rootpage, sql FROM main.sqlite_schema WHERE type = ?1 AND"
                              " name = ?2"));
  st.Bind(1, type).Bind(2, name);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return int64_t{0};
  if (sql) *sql = st.Text(1);
  return st.Int(0);
}

rs::Result<SplicePlan> PlanSplice(rs::Db& out, const std::string& out_path,
                                  const std::vector<std::string>& part_paths,
                                  const std::vector<std::string>& tables) {
  SplicePlan plan;
  plan.out_path = out_path;
  plan.part_paths = part_paths;
  auto root_of = [](rs::Db& db, const std::string& type, const std::string& name,
                    std::string* sql) -> rs::Result<int64_t> {
    ASSIGN_OR_RETURN(int64_t root, RootPage(db, type, name, sql));
    if (root == 0) return rs::Error(db.path() + ": no " + type + " " + name);
    return root;
  };
  std::vector<rs::Db> parts;
  for (const std::string& p : part_paths) {
    ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(p, rs::Db::Mode::kReadOnly));
    parts.push_back(std::move(db));
  }
  for (const std::string& name : tables) {
    SpliceTable t;
    t.name = name;
    std::string sql;
    ASSIGN_OR_RETURN(t.out_root, root_of(out, "table", name, &sql));
    ASSIGN_OR_RETURN(int64_t rowid_table,
                     out.QueryInt("SELECT COUNT(*) FROM pragma_table_list WHERE schema = 'main'"
                                  " AND name = '" +
                                  name + "' AND wr = 0"));
    if (rowid_table != 1) return rs::Error("table " + name + " is not a rowid table");
    // Record positions are table_xinfo positions: refuse hidden and generated columns.
    ASSIGN_OR_RETURN(int64_t hidden, out.QueryInt("SELECT COUNT(*) FROM pragma_table_xinfo('" +
                                                  name + "') WHERE hidden != 0"));
    if (hidden != 0) return rs::Error("table " + name + " has hidden or generated columns");
    // INTEGER PRIMARY KEY DESC is not a rowid alias: SQLite then keeps an index of origin
    // 'pk' for it, and the value is stored in the record.
    ASSIGN_OR_RETURN(int64_t pk_index, out.QueryInt("SELECT COUNT(*) FROM pragma_index_list('" +
                                                    name + "') WHERE origin = 'pk'"));
    ASSIGN_OR_RETURN(rs::Statement cols,
                     out.Prepare("SELECT cid, pk, upper(type), dflt_value IS NULL FROM"
                                 " pragma_table_info(?1)"));
    cols.Bind(1, name);
    int pk_cols = 0, int_pk = -1;
    std::vector<bool> no_default;
    for (;;) {
      ASSIGN_OR_RETURN(bool row, cols.Step());
      if (!row) break;
      if (cols.Int(1) > 0) {
        ++pk_cols;
        if (cols.Text(2) == "INTEGER") int_pk = static_cast<int>(cols.Int(0));
      }
      no_default.push_back(cols.Int(3) != 0);
    }
    t.rowid_column = pk_cols == 1 && pk_index == 0 ? int_pk : -1;
    for (size_t i = 0; i < parts.size(); ++i) {
      std::string part_sql;
      ASSIGN_OR_RETURN(int64_t r, root_of(parts[i], "table", name, &part_sql));
      if (part_sql != sql) {
        return rs::Error(part_paths[i] + ": table " + name + " is defined differently");
      }
      t.part_roots.push_back(r);
    }
    ASSIGN_OR_RETURN(rs::Statement idx,
                     out.Prepare("SELECT l.name, s.rootpage, l.\"unique\" OR l.partial OR"
                                 " s.sql IS NULL FROM pragma_index_list(?1) AS l JOIN"
                                 " main.sqlite_schema AS s ON s.name = l.name"));
    idx.Bind(1, name);
    std::vector<std::pair<std::string, int64_t>> to_check;
    for (;;) {
      ASSIGN_OR_RETURN(bool row, idx.Step());
      if (!row) break;
      if (idx.Int(2) != 0) {
        t.reindex.push_back(idx.Text(0));
      } else {
        to_check.emplace_back(idx.Text(0), idx.Int(1));
      }
    }
    for (const auto& [iname, root] : to_check) {
      ASSIGN_OR_RETURN(rs::Statement x,
                       out.Prepare("SELECT cid, \"desc\", coll FROM pragma_index_xinfo(?1)"
                                   " WHERE key = 1 ORDER BY seqno"));
      x.Bind(1, iname);
      SpliceIndex si;
      si.name = iname;
      si.out_root = root;
      bool ok = true;
      for (;;) {
        ASSIGN_OR_RETURN(bool row, x.Step());
        if (!row) break;
        int cid = static_cast<int>(x.Int(0));
        if (cid < -1 || x.Int(1) != 0 || x.Text(2) != "BINARY") ok = false;
        if (cid >= 0 && (cid >= static_cast<int>(no_default.size()) || !no_default[cid])) {
          ok = false;
        }
        si.key_columns.push_back(cid);
      }
      if (si.key_columns.empty() || si.key_columns.size() > kMaxKeyColumns) ok = false;
      if (ok) {
        t.indexes.push_back(si);
      } else {
        t.reindex.push_back(iname);
      }
    }
    plan.tables.push_back(std::move(t));
  }
  return plan;
}

rs::Result<std::shared_ptr<SpliceWork>> PrepareSplice(const SplicePlan& plan) {
  auto w = std::make_shared<SpliceWork>();
  w->plan = &plan;
  {
    ASSIGN_OR_RETURN(UniqueFd file, UniqueFd::Open(plan.out_path, O_RDONLY));
    const int fd = file.get();
    ASSIGN_OR_RETURN(w->out_header, ReadHeader(fd, plan.out_path));
    const uint32_t ps = w->out_header.page_size;
    for (const SpliceTable& t : plan.tables) {
      uint32_t cells = 1;
      if (RootType(fd, static_cast<uint32_t>(t.out_root), ps, &cells) != kTableLeaf || cells) {
        return rs::Error(plan.out_path + ": table " + t.name + " is not empty");
      }
      for (const SpliceIndex& i : t.indexes) {
        if (RootType(fd, static_cast<uint32_t>(i.out_root), ps, &cells) != kIndexLeaf || cells) {
          return rs::Error(plan.out_path + ": index " + i.name + " is not empty");
        }
      }
    }
  }
  for (const std::string& p : plan.part_paths) {
    ASSIGN_OR_RETURN(auto f, MappedFile::Open(p));
    const Header& h = f->header();
    const Header& o = w->out_header;
    if (h.page_size != o.page_size || h.reserved != o.reserved ||
        h.text_encoding != o.text_encoding) {
      return rs::Error(p + ": page size, reserved bytes or text encoding differ from the output");
    }
    w->parts.push_back(std::move(f));
  }
  for (const SpliceTable& t : plan.tables) {
    TableWork tw;
    tw.table = &t;
    tw.reindex = t.reindex;
    for (const SpliceIndex& i : t.indexes) tw.built.push_back(&i);
    tw.parts.resize(w->parts.size());
    w->tables.push_back(std::move(tw));
  }
  // Parts are scanned (and their keys sorted) in parallel, one part per thread at a time.
  std::atomic<size_t> next{0};
  std::atomic<int64_t> key_bytes{0};
  std::atomic<bool> over_budget{false};
  std::vector<std::optional<rs::Error>> errors(w->parts.size());
  auto work = [&] {
    for (size_t pi; (pi = next++) < w->parts.size();) {
      for (TableWork& tw : w->tables) {
        auto r = ScanPart(*w, tw, pi, key_bytes, plan.key_budget_bytes, over_budget);
        if (!r.ok()) {
          errors[pi] = r.error();
          break;
        }
      }
      w->parts[pi]->Release();
    }
  };
  const size_t threads =
      std::min<size_t>(w->parts.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t i = 1; i < threads; ++i) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (const auto& e : errors) {
    if (e) return *e;
  }
  for (TableWork& tw : w->tables) {
    // Rowids ascend from part to part.
    const std::string* prev_part = nullptr;
    int64_t prev_last = 0;
    for (size_t pi = 0; pi < tw.parts.size(); ++pi) {
      const PartScan& ps = tw.parts[pi];
      tw.rows += ps.rows;
      if (ps.rows == 0) continue;
      if (prev_part && ps.first_rowid <= prev_last) {
        return rs::Error("table " + tw.table->name + ": rowids of " + w->parts[pi]->path() +
                         " do not follow those of " + *prev_part);
      }
      prev_part = &w->parts[pi]->path();
      prev_last = ps.last_rowid;
    }
    // Indexes whose keys were not all collected or not all integers: SQLite builds them.
    for (size_t x = tw.built.size(); x-- > 0;) {
      bool sqlite = over_budget;
      for (const PartScan& ps : tw.parts) sqlite = sqlite || ps.unsortable[x];
      if (!sqlite) continue;
      tw.reindex.push_back(tw.built[x]->name);
      tw.built.erase(tw.built.begin() + static_cast<long>(x));
      for (PartScan& ps : tw.parts) {
        if (x < ps.keys.size()) ps.keys.erase(ps.keys.begin() + static_cast<long>(x));
      }
    }
  }
  return w;
}

rs::Result<SpliceStats> WriteSplice(SpliceWork& w) {
  const SplicePlan& plan = *w.plan;
  const Header& h = w.out_header;
  ASSIGN_OR_RETURN(UniqueFd file, UniqueFd::Open(plan.out_path, O_RDWR));
  const int fd = file.get();
  PageWriter out(fd, h.page_size, h.page_count + 1);
  SpliceStats stats;
  std::vector<uint8_t> buf;
  constexpr uint32_t kMaxRowidKey = 9;
  for (TableWork& tw : w.tables) {
    const uint32_t root = static_cast<uint32_t>(tw.table->out_root);
    std::vector<const LeafRef*> leaves;
    for (const PartScan& ps : tw.parts) {
      for (const LeafRef& l : ps.leaves) leaves.push_back(&l);
    }
    const size_t n = leaves.size();
    if (n == 1) {
      RETURN_IF_ERROR(CopyLeaf(*w.parts[leaves[0]->part], leaves[0]->page, root, out, buf));
    } else if (n > 1) {
      Level interior(out, kTableInterior, kTableInterior, kMaxRowidKey, h.page_size, h.usable());
      for (size_t i = 0; i < n; ++i) {
        if (i > 0 && leaves[i]->part != leaves[i - 1]->part)
          w.parts[leaves[i - 1]->part]->Release();
        uint32_t p = out.Allocate();
        RETURN_IF_ERROR(CopyLeaf(*w.parts[leaves[i]->part], leaves[i]->page, p, out, buf));
        if (i + 1 < n) {
          uint8_t key[9];
          int k = PutVarint(key, static_cast<uint64_t>(leaves[i]->max_rowid));
          RETURN_IF_ERROR(interior.Add(p, key, static_cast<uint32_t>(k)));
        } else {
          RETURN_IF_ERROR(interior.Finish(p, root));
        }
      }
    }
    if (n > 0) w.parts[leaves[n - 1]->part]->Release();
    stats.rows += tw.rows;
    stats.table_rows[tw.table->name] = tw.rows;
    for (size_t x = 0; x < tw.built.size() && !tw.parts.empty(); ++x) {
      const uint32_t iroot = static_cast<uint32_t>(tw.built[x]->out_root);
      auto r = std::visit(
          [&](auto& first) -> rs::Result<void> {
            std::vector<std::remove_reference_t<decltype(first)>*> runs;
            for (PartScan& ps : tw.parts) {
              auto& run = std::get<std::remove_reference_t<decltype(first)>>(ps.keys[x]);
              stats.index_entries += static_cast<int64_t>(run.size());
              runs.push_back(&run);
            }
            if (tw.rows == 0) return rs::Ok();
            return WriteIndex(runs, iroot, out, h);
          },
          tw.parts[0].keys[x]);
      RETURN_IF_ERROR(r);
    }
    for (const std::string& r : tw.reindex) stats.reindex.push_back(r);
  }
  RETURN_IF_ERROR(FinishFile(fd, h, out, plan.out_path));
  stats.pages_written = out.pages_written();
  return stats;
}

namespace {

// A field of a record: serial type and value bytes.
struct Field {
  uint64_t type = 0;
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};

uint32_t FieldLen(uint64_t t) {
  static constexpr uint8_t kIntLen[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
  return t >= 12 ? static_cast<uint32_t>((t - 12) / 2) : (t < 10 ? kIntLen[t] : 0);
}

bool IsInt(uint64_t t) { return (t >= 1 && t <= 6) || t == 8 || t == 9; }

int64_t IntValue(const Field& f) {
  if (f.type == 8 || f.type == 9) return static_cast<int64_t>(f.type - 8);
  int64_t x = static_cast<int8_t>(f.data[0]);
  for (uint32_t j = 1; j < f.len; ++j)
    x = static_cast<int64_t>(static_cast<uint64_t>(x) << 8 | f.data[j]);
  return x;
}

// Splits a record into its fields; false when damaged.
bool SplitRecord(const uint8_t* rec, size_t n, std::vector<Field>* out) {
  out->clear();
  uint64_t hdr = 0;
  int k = GetVarint(rec, rec + n, &hdr);
  if (k == 0 || hdr > n) return false;
  const uint8_t* h = rec + k;
  size_t body = hdr;
  while (h < rec + hdr) {
    Field f;
    int m = GetVarint(h, rec + hdr, &f.type);
    if (m == 0 || f.type == 10 || f.type == 11) return false;
    h += m;
    f.len = FieldLen(f.type);
    if (body + f.len > n) return false;
    f.data = rec + body;
    body += f.len;
    out->push_back(f);
  }
  return true;
}

// Builds a table b-tree from cells in rowid order, leaves first, at the end of a file.
class TableBuilder {
 public:
  TableBuilder(PageWriter& out, const Header& h, uint32_t root)
      : out_(out),
        h_(h),
        root_(root),
        leaf_(kTableLeaf, h.page_size, h.usable()),
        interior_(out, kTableInterior, kTableInterior, 9, h.page_size, h.usable()) {}
  bool Fits(uint32_t cell) const { return leaf_.free_bytes() >= cell + 2; }
  rs::Result<void> Add(const uint8_t* cell, uint32_t n, int64_t rowid) {
    if (!Fits(n)) RETURN_IF_ERROR(EndLeaf());
    leaf_.Add(0, cell, n);
    max_ = rowid;
    return rs::Ok();
  }
  rs::Result<void> Finish() {
    if (leaf_.cells() > 0) RETURN_IF_ERROR(EndLeaf());
    if (!held_) return rs::Ok();  // no rows: the root stays an empty leaf
    if (leaves_ == 1) return out_.Write(root_, held_page_.data());
    uint32_t p = out_.Allocate();
    RETURN_IF_ERROR(out_.Write(p, held_page_.data()));
    return interior_.Finish(p, root_);
  }

 private:
  // One finished leaf is held back: the last one is the interior level's rightmost child, or
  // the root itself when it is the only one.
  rs::Result<void> EndLeaf() {
    if (held_) {
      uint32_t p = out_.Allocate();
      RETURN_IF_ERROR(out_.Write(p, held_page_.data()));
      uint8_t key[9];
      int k = PutVarint(key, static_cast<uint64_t>(held_max_));
      RETURN_IF_ERROR(interior_.Add(p, key, static_cast<uint32_t>(k)));
    }
    const uint8_t* page = leaf_.Finish(0);
    held_page_.assign(page, page + h_.page_size);
    held_max_ = max_;
    held_ = true;
    ++leaves_;
    leaf_.Reset();
    return rs::Ok();
  }

  PageWriter& out_;
  const Header& h_;
  uint32_t root_;
  PageImage leaf_;
  Level interior_;
  std::vector<uint8_t> held_page_;
  int64_t held_max_ = 0, max_ = 0;
  bool held_ = false;
  int64_t leaves_ = 0;
};

// One table of one input into its part (see CopyRecords).
rs::Result<RecordCounts> CopyTableRecords(const RecordCopy& rc, const RecordTable& t,
                                          const MappedFile& in, PageWriter& out,
                                          const Header& part) {
  RecordCounts counts;
  counts.table = t.name;
  std::vector<LeafRef> leaves;
  std::vector<bool> seen(in.header().page_count + 1);
  RETURN_IF_ERROR(CollectLeaves(in, static_cast<uint32_t>(t.input_root), 0, &leaves, &seen));
  TableBuilder tree(out, part, static_cast<uint32_t>(t.part_root));
  const uint32_t usable = in.header().usable();
  const uint32_t max_payload = part.usable() - 35;  // larger records would need overflow pages
  std::vector<Field> fields;
  // A record's serial types and body, built in place; a record larger than a page is refused
  // below, so a page's worth of room (plus one field) is enough for each.
  std::vector<uint8_t> cell(part.page_size), types(part.page_size + 64), body(part.page_size + 64);
  std::string whole;
  for (const LeafRef& leaf : leaves) {
    const uint8_t* page = in.Page(leaf.page);
    const uint32_t ncells = Get16(page + 3);
    for (uint32_t i = 0; i < ncells; ++i) {
      auto parsed = ParseLeafCell(page, Get16(page + 8 + 2 * i), usable);
      if (!parsed.ok()) return parsed.error().Wrap(in.path());
      const LeafCell& c = parsed.value();
      const uint8_t* rec = c.payload;
      size_t n = c.local;
      if (c.overflow_at) {
        RETURN_IF_ERROR(CheckChain(in, page, c, &seen));
        ASSIGN_OR_RETURN(whole, FullPayload(in, page, c));
        rec = reinterpret_cast<const uint8_t*>(whole.data());
        n = whole.size();
      }
      ++counts.rows_in;
      if (!SplitRecord(rec, n, &fields) || static_cast<int>(fields.size()) != t.columns) {
        return rs::Error(in.path() + ": table " + t.name + ": a record without every column");
      }
      if (fields[t.rowid_column].type != 0) {
        return rs::Error(in.path() + ": table " + t.name + ": rowid column stored in the record");
      }
      // stack_id: remapped, NULL when the bundle lacks the stack (counted over every row, as
      // the SQL copy does).
      int64_t stack = 0;
      bool stack_null = true;
      if (t.stack_column >= 0 && fields[t.stack_column].type != 0) {
        if (!IsInt(fields[t.stack_column].type)) {
          return rs::Error(in.path() + ": table " + t.name + ": a stack_id that is not an integer");
        }
        auto m = rc.stack_map->find(IntValue(fields[t.stack_column]));
        if (m == rc.stack_map->end()) {
          ++counts.dangling;
        } else {
          stack = m->second;
          stack_null = false;
        }
      }
      const Field& node = fields[t.node_column];
      if (node.type < 13 || node.type % 2 == 0 || node.len != rc.original_node.size() ||
          std::memcmp(node.data, rc.original_node.data(), node.len) != 0) {
        ++counts.other_node;  // WHERE node = original_node
        continue;
      }
      const Field& ts = fields[t.timestamp_column];
      if (!IsInt(ts.type)) {
        return rs::Error(in.path() + ": table " + t.name + ": a timestamp that is not an integer");
      }
      const int64_t local_ts = IntValue(ts);
      // The output record: the input's fields, node renamed, timestamp aligned, stack_id
      // remapped, then local_timestamp_ns.
      uint8_t* tp = types.data();
      uint8_t* bp = body.data();
      const uint8_t* body_limit = body.data() + part.page_size;
      auto put_int = [&](int64_t v) {
        int len = 0;
        *tp++ = static_cast<uint8_t>(IntSerialType(v, &len));
        for (int b = len - 1; b >= 0; --b) *bp++ = static_cast<uint8_t>(v >> (8 * b));
      };
      bool too_large = false;
      auto put_bytes = [&](uint64_t type, const uint8_t* data, size_t len) {
        if (bp + len > body_limit) {
          too_large = true;
          return;
        }
        tp += PutVarint(tp, type);
        std::memcpy(bp, data, len);
        bp += len;
      };
      for (int f = 0; f < t.columns && !too_large; ++f) {
        if (f == t.node_column) {
          put_bytes(13 + 2 * static_cast<uint64_t>(rc.node.size()),
                    reinterpret_cast<const uint8_t*>(rc.node.data()), rc.node.size());
        } else if (f == t.timestamp_column) {
          put_int(rc.align(local_ts));
        } else if (f == t.stack_column && stack_null) {
          *tp++ = 0;
        } else if (f == t.stack_column) {
          put_int(stack);
        } else {
          put_bytes(fields[f].type, fields[f].data, fields[f].len);
        }
      }
      put_int(local_ts);
      const size_t ntypes = static_cast<size_t>(tp - types.data());
      const size_t nbody = static_cast<size_t>(bp - body.data());
      uint64_t hdr = ntypes + 1;
      if (hdr > 127) hdr += 1;  // a two-byte header size
      const uint64_t payload = hdr + nbody;
      if (too_large || payload > max_payload || hdr > 16383) {
        return rs::Error(in.path() + ": table " + t.name + ": a record too large for a page");
      }
      const int64_t rowid = c.rowid + rc.id_shift;
      uint8_t* p = cell.data();
      p += PutVarint(p, payload);
      p += PutVarint(p, static_cast<uint64_t>(rowid));
      p += PutVarint(p, hdr);
      std::memcpy(p, types.data(), ntypes);
      p += ntypes;
      std::memcpy(p, body.data(), nbody);
      p += nbody;
      RETURN_IF_ERROR(tree.Add(cell.data(), static_cast<uint32_t>(p - cell.data()), rowid));
      ++counts.rows_out;
    }
  }
  RETURN_IF_ERROR(tree.Finish());
  return counts;
}

}  // namespace

rs::Result<std::vector<RecordCounts>> CopyRecords(const RecordCopy& rc) {
  ASSIGN_OR_RETURN(auto in, MappedFile::Open(rc.input_path, /*read_only_source=*/true));
  ASSIGN_OR_RETURN(UniqueFd file, UniqueFd::Open(rc.part_path, O_RDWR));
  const int fd = file.get();
  ASSIGN_OR_RETURN(Header part, ReadHeader(fd, rc.part_path));
  if (in->header().text_encoding != part.text_encoding) {
    return rs::Error(rc.input_path + ": text encoding differs from the part's");
  }
  for (const RecordTable& t : rc.tables) {
    uint32_t cells = 1;
    if (RootType(fd, static_cast<uint32_t>(t.part_root), part.page_size, &cells) != kTableLeaf ||
        cells != 0) {
      return rs::Error(rc.part_path + ": table " + t.name + " is not empty");
    }
  }
  PageWriter out(fd, part.page_size, part.page_count + 1);
  std::vector<RecordCounts> counts;
  auto written = [&]() -> rs::Result<void> {
    for (const RecordTable& t : rc.tables) {
      ASSIGN_OR_RETURN(RecordCounts c, CopyTableRecords(rc, t, *in, out, part));
      counts.push_back(c);
    }
    return FinishFile(fd, part, out, rc.part_path);
  }();
  if (!written.ok()) {
    // Nothing of it counts: the roots were written last, the header not at all. Put the
    // roots' empty leaves back and the file's length.
    for (const RecordTable& t : rc.tables) {
      PageImage empty(kTableLeaf, part.page_size, part.usable());
      if (pwrite(fd, empty.Finish(0), part.page_size,
                 static_cast<off_t>(t.part_root - 1) * part.page_size) !=
          static_cast<ssize_t>(part.page_size)) {
        return rs::Error(rc.part_path + ": cannot restore after: " + written.error().message());
      }
    }
    if (ftruncate(fd, static_cast<off_t>(part.page_count) * part.page_size) != 0) {
      return rs::Error(rc.part_path + ": cannot restore after: " + written.error().message());
    }
    return written.error();
  }
  return counts;
}

}  // namespace merge

// The SQLite file format as the merge reads and writes it page by page: header fields, b-tree
// pages and cells, varints, overflow chains, the lock-byte page. Shared by the splice
// (btree_splice.h) and the page-level copy of event rows (record_copy.h). Facts from
// https://www.sqlite.org/fileformat2.html.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "rscore/result.h"

namespace merge::pages {

constexpr int kMaxDepth = 40;
constexpr int64_t kLockByteOffset = 0x40000000;  // the page holding it is never used

// Page types (first byte of a b-tree page header).
constexpr uint8_t kIndexInterior = 2, kTableInterior = 5, kIndexLeaf = 10, kTableLeaf = 13;

inline uint32_t Get16(const uint8_t* p) { return (uint32_t{p[0]} << 8) | p[1]; }
inline uint32_t Get32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void Put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void Put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

// SQLite varint: 1-9 bytes, big-endian groups of 7 bits, the 9th byte whole. Returns the
// length read (0: runs past `end`).
int GetVarint(const uint8_t* p, const uint8_t* end, uint64_t* v);
// Writes `v` as a varint; returns its length.
int PutVarint(uint8_t* out, uint64_t v);

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
                               bool source = false);
// The header of a file being written (the output, a part).
rs::Result<Header> ReadHeader(int fd, const std::string& path);

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
uint32_t LocalSize(uint64_t n, uint32_t usable, bool table_leaf);

// One cell of a table leaf.
struct LeafCell {
  uint64_t payload_size = 0;
  int64_t rowid = 0;
  const uint8_t* payload = nullptr;  // local part
  uint32_t local = 0;
  uint32_t overflow_at = 0;  // offset in the page of the first overflow page number; 0: none
};

rs::Result<LeafCell> ParseLeafCell(const uint8_t* page, uint32_t offset, uint32_t usable);

// Serial type and length of an integer, as SQLite chooses them (schema format 4).
int IntSerialType(int64_t i, int* len);

// A field of a record: serial type and value bytes.
struct Field {
  uint64_t type = 0;
  const uint8_t* data = nullptr;
  uint32_t len = 0;
};
// Bytes of a value of serial type `t`.
uint32_t FieldLen(uint64_t t);
// Serial types of integers.
inline bool IsInt(uint64_t t) { return (t >= 1 && t <= 6) || t == 8 || t == 9; }
// The value of an integer field.
int64_t IntValue(const Field& f);
// Splits a record into its fields; false when damaged.
bool SplitRecord(const uint8_t* rec, size_t n, std::vector<Field>* out);

// A leaf page of a table b-tree, its file (index of a part) and largest rowid.
struct LeafRef {
  size_t part;
  uint32_t page;
  int64_t max_rowid;
};

// Leaf pages of a table b-tree of `f`, in key order; `seen` marks every page visited.
rs::Result<void> CollectLeaves(const MappedFile& f, uint32_t root, size_t part,
                               std::vector<LeafRef>* out, std::vector<bool>* seen);
// Pages in an overflow chain of a payload of `n` bytes of which `local` are in the cell.
uint64_t ChainPages(uint64_t n, uint32_t local, uint32_t usable);
// An overflow chain lies inside the file, has the length its payload needs, and shares no page
// with anything else of the tree: checked before anything is written.
rs::Result<void> CheckChain(const MappedFile& f, const uint8_t* page, const LeafCell& c,
                            std::vector<bool>* seen);
// The whole payload of a cell whose payload overflows (its chain checked by CheckChain).
rs::Result<std::string> FullPayload(const MappedFile& f, const uint8_t* page, const LeafCell& c);

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

// Flushes `out` and makes the file's header count its pages: page count, and a new change
// counter with its version-valid-for copy, so that the next reader trusts the new page count
// and drops anything it cached.
rs::Result<void> FinishFile(int fd, const Header& h, PageWriter& out, const std::string& path);
// Type byte and cell count of page `page`; 0 when it cannot be read.
uint8_t RootType(int fd, uint32_t page, uint32_t ps, uint32_t* cells);

}  // namespace merge::pages

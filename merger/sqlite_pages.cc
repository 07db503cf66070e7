#include "sqlite_pages.h"

namespace merge::pages {

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

// `source`: a file only read (a WAL-mode flag is fine when the file stands alone, as a
// decompressed bundle image does).
rs::Result<Header> ParseHeader(const uint8_t* h, int64_t file_size, const std::string& path,
                               bool source) {
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

// How much of a payload of `n` bytes is stored in the cell (the rest in overflow pages).
uint32_t LocalSize(uint64_t n, uint32_t usable, bool table_leaf) {
  const uint64_t max_local = table_leaf ? usable - 35 : (usable - 12) * 64 / 255 - 23;
  if (n <= max_local) return static_cast<uint32_t>(n);
  const uint64_t min_local = (usable - 12) * 32 / 255 - 23;
  uint64_t k = min_local + (n - min_local) % (usable - 4);
  return static_cast<uint32_t>(k <= max_local ? k : min_local);
}

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

uint32_t FieldLen(uint64_t t) {
  static constexpr uint8_t kIntLen[] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};
  return t >= 12 ? static_cast<uint32_t>((t - 12) / 2) : (t < 10 ? kIntLen[t] : 0);
}

int64_t IntValue(const Field& f) {
  if (f.type == 8 || f.type == 9) return static_cast<int64_t>(f.type - 8);
  int64_t x = static_cast<int8_t>(f.data[0]);
  for (uint32_t j = 1; j < f.len; ++j)
    x = static_cast<int64_t>(static_cast<uint64_t>(x) << 8 | f.data[j]);
  return x;
}

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

}  // namespace merge::pages

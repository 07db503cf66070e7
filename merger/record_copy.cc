#include "record_copy.h"

#include "sqlite_pages.h"

namespace merge {
using namespace pages;

namespace {

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

bool IsTimeColumn(const RecordTable& t, int field) {
  for (int f : t.time_columns) {
    if (f == field) return true;
  }
  return false;
}

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
      for (int f : t.time_columns) {
        if (fields[f].type != 0 && !IsInt(fields[f].type)) {
          return rs::Error(in.path() + ": table " + t.name +
                           ": a wall-clock time that is not an integer");
        }
      }
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
      for (size_t c = 0; c < t.source.size() && !too_large; ++c) {
        const int f = t.source[c];
        if (f < 0) {
          *tp++ = 0;  // NULL: a column the input's table does not have
        } else if (f == t.node_column) {
          put_bytes(13 + 2 * static_cast<uint64_t>(rc.node.size()),
                    reinterpret_cast<const uint8_t*>(rc.node.data()), rc.node.size());
        } else if (f == t.timestamp_column) {
          put_int(rc.align(local_ts));
        } else if (f == t.stack_column && stack_null) {
          *tp++ = 0;
        } else if (f == t.stack_column) {
          put_int(stack);
        } else if (IsTimeColumn(t, f) && fields[f].type != 0) {
          put_int(rc.align(IntValue(fields[f])));
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

#include "btree_splice.h"

#include "sqlite_pages.h"

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
#include <variant>

namespace merge {
using namespace pages;

namespace {

constexpr int kMaxKeyColumns = 3;

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
    const size_t len = FieldLen(t);
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
    if (!IsInt(t)) return false;
    if (body + len > n) {
      *corrupt = true;
      return false;
    }
    const int64_t x = IntValue(Field{t, rec + body, static_cast<uint32_t>(len)});
    *is_null = false;
    *v = x;
    return true;
  }
}

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

}  // namespace merge

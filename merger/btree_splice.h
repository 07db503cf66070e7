// Filling the output's large tables from parts page by page instead of row by row.
//
// SQLite lets one connection write a database, and every row it inserts passes through its
// b-tree code (~0.55 µs per row here even for the transfer optimization), after which every
// index is sorted by that one connection. The event tables of the parts already hold their rows
// in final form, in b-tree leaf pages of the same page size, and the parts' rowid ranges follow
// each other. A splice appends those leaf pages to the output file as they are (overflow chains
// renumbered), builds the interior pages above them, and builds each index from the keys read
// out of the leaves, sorted in memory, written as finished pages. SQLite reopens the file
// afterwards and sees ordinary, packed b-trees.
//
// The file format facts used are those of https://www.sqlite.org/fileformat2.html: the
// 100-byte header, b-tree page headers and cells, the local-payload rule, overflow chains,
// the record format and the lock-byte page.
//
// Preconditions (checked by PrepareSplice, read-only; a failure there leaves every file as it
// was and the caller copies with SQL instead): the output is closed and not in WAL mode; the
// spliced tables and their indexes are empty in the output; all files share page size, reserved
// bytes, text encoding and schema format 4, without auto-vacuum; each table is a rowid table
// defined identically everywhere, without hidden or generated columns; rowids ascend strictly
// from part to part; every page the trees use (cell counts, overflow chains) lies inside its
// file and belongs to one tree only, so the write pass never meets a damaged page. Indexes that are
// unique, partial, on expressions, descending, with a collation other than BINARY, on more than
// three columns, holding real/text/blob keys, or whose keys would exceed the memory budget are
// not built here: they are listed in SpliceWork::reindex and the caller runs REINDEX on them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace merge {

struct SpliceIndex {
  std::string name;
  int64_t out_root = 0;
  std::vector<int> key_columns;  // table column numbers; -1: the rowid
};

struct SpliceTable {
  std::string name;
  int64_t out_root = 0;
  std::vector<int64_t> part_roots;  // per part, in part order
  int rowid_column = -1;            // the INTEGER PRIMARY KEY column (NULL in records), or -1
  std::vector<SpliceIndex> indexes;
  std::vector<std::string> reindex;  // indexes the splice leaves to SQLite
};

struct SplicePlan {
  std::string out_path;
  std::vector<std::string> part_paths;  // in rowid order
  std::vector<SpliceTable> tables;
  int64_t key_budget_bytes = int64_t{128} << 20;  // index keys held in memory at once
};

// Root page of the table or index `name` (`type` 'table' | 'index') in the main schema of
// `db`, and its SQL when `sql` is given; 0 when there is none.
rs::Result<int64_t> RootPage(rs::Db& db, const std::string& type, const std::string& name,
                             std::string* sql = nullptr);

// Reads roots and index definitions through `out` (still open, every table in `tables` empty)
// and from each part. An error: the splice cannot be used; nothing changed.
rs::Result<SplicePlan> PlanSplice(rs::Db& out, const std::string& out_path,
                                  const std::vector<std::string>& part_paths,
                                  const std::vector<std::string>& tables);

struct SpliceWork;  // what PrepareSplice found: leaves in order, sorted index keys

struct SpliceStats {
  int64_t pages_written = 0;
  int64_t rows = 0;
  std::map<std::string, int64_t> table_rows;  // rows now in each spliced table
  int64_t index_entries = 0;
  std::vector<std::string> reindex;  // "index" names left to REINDEX, over all tables
};

// Read-only pass over the parts and the output's header (call with the output closed). An
// error: the splice cannot be used here; nothing changed.
rs::Result<std::shared_ptr<SpliceWork>> PrepareSplice(const SplicePlan& plan);

// Writes the pages and the output's new header. An error here leaves the output unusable.
rs::Result<SpliceStats> WriteSplice(SpliceWork& work);

}  // namespace merge

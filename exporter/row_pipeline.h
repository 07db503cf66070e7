// Decouples reading from writing: a reader thread steps the SQLite statements and copies
// rows into a small pool of batches while the caller turns earlier rows into packets, so
// the two halves run on two cores. Order is unchanged (one producer, FIFO), memory is
// bounded by the pool (kBatches x kBatchRows rows).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "exporter/event_reader.h"

namespace rs::exporter {

// The most bytes of one text value the trace gets (a name, an argument): a longer one is cut
// at a character boundary and ends with a marker saying how long it was.
inline constexpr size_t kMaxTraceCellBytes = 1024;
// `text` (`n` bytes) as the trace gets it.
std::string TraceCell(const char* text, size_t n);

// One row of EventReader copied out of SQLite; columns as in namespace col.
class Row {
 public:
  static constexpr int kMaxColumns = 29;  // gpu_ops has the most
  Table table() const { return table_; }
  bool IsNull(int c) const { return cells_[c].null; }
  int64_t Int(int c) const { return cells_[c].i; }              // 0 for text columns
  const std::string& Text(int c) const { return cells_[c].s; }  // "" unless a text column
  void Load(Table table, const Statement& st);

 private:
  struct Cell {
    bool null = true;
    int64_t i = 0;
    std::string s;
  };
  Table table_ = Table::kNccl;
  std::array<Cell, kMaxColumns> cells_;
};

static_assert(col::gpu::kKernelSymmetric < Row::kMaxColumns, "a gpu_ops row fits a Row");

class RowPipeline {
 public:
  static constexpr size_t kBatchRows = 1024;
  static constexpr int kBatches = 4;

  // Starts the reader thread. Read errors are prefixed with `source` (the input file).
  RowPipeline(EventReader reader, std::string source);
  ~RowPipeline();
  RowPipeline(const RowPipeline&) = delete;
  RowPipeline& operator=(const RowPipeline&) = delete;

  // The next row in stream order, nullptr at the end. The pointer is valid until the next
  // call.
  Result<const Row*> Next();

 private:
  struct Batch {
    std::vector<Row> rows;
    size_t n = 0;
  };
  void Produce();

  EventReader reader_;
  std::string source_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Batch>> full_, free_;
  bool done_ = false, stop_ = false;
  std::optional<Error> error_;
  std::unique_ptr<Batch> current_;
  size_t pos_ = 0;
  std::thread thread_;  // last: starts after everything above is built
};

}  // namespace rs::exporter

#include "exporter/row_pipeline.h"

#include <sqlite3.h>

namespace rs::exporter {

std::string TraceCell(const char* text, size_t n) {
  if (text == nullptr) return "";
  if (n <= kMaxTraceCellBytes) return std::string(text, n);
  size_t keep = kMaxTraceCellBytes;
  while (keep > 0 && (static_cast<unsigned char>(text[keep]) & 0xC0) == 0x80) --keep;  // UTF-8
  return std::string(text, keep) + "...[truncated: " + std::to_string(n) + " bytes]";
}

void Row::Load(Table table, const Statement& st) {
  table_ = table;
  sqlite3_stmt* raw = st.raw();
  const int n = std::min(sqlite3_column_count(raw), kMaxColumns);
  for (int c = 0; c < n; ++c) {
    Cell& cell = cells_[c];
    const int type = sqlite3_column_type(raw, c);
    cell.null = type == SQLITE_NULL;
    cell.i = 0;
    cell.s.clear();
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) {
      cell.i = sqlite3_column_int64(raw, c);
    } else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(raw, c));
      const auto n = static_cast<size_t>(sqlite3_column_bytes(raw, c));
      if (n <= kMaxTraceCellBytes) {
        cell.s.assign(text ? text : "", text ? n : 0);
      } else {
        cell.s = TraceCell(text, n);
      }
    }
  }
}

RowPipeline::RowPipeline(EventReader reader, std::string source)
    : reader_(std::move(reader)), source_(std::move(source)) {
  for (int b = 0; b < kBatches; ++b) {
    auto batch = std::make_unique<Batch>();
    batch->rows.resize(kBatchRows);
    free_.push_back(std::move(batch));
  }
  thread_ = std::thread([this] { Produce(); });
}

RowPipeline::~RowPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void RowPipeline::Produce() {
  while (true) {
    std::unique_ptr<Batch> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !free_.empty(); });
      if (stop_) return;
      batch = std::move(free_.front());
      free_.pop_front();
    }
    batch->n = 0;
    std::optional<Error> error;
    bool end = false;
    while (batch->n < kBatchRows) {
      auto has = reader_.Next();
      if (!has.ok()) {
        error = has.error().Wrap(source_);
        break;
      }
      if (!*has) {
        end = true;
        break;
      }
      batch->rows[batch->n++].Load(reader_.table(), reader_.row());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      full_.push_back(std::move(batch));
      if (error || end) {
        error_ = std::move(error);
        done_ = true;
      }
    }
    cv_.notify_all();
    if (error || end) return;
  }
}

Result<const Row*> RowPipeline::Next() {
  if (current_ && pos_ < current_->n) return &current_->rows[pos_++];
  std::unique_lock<std::mutex> lock(mu_);
  if (current_) {
    free_.push_back(std::move(current_));
    cv_.notify_all();
  }
  while (true) {
    cv_.wait(lock, [this] { return !full_.empty() || done_; });
    if (full_.empty()) break;  // done_ and drained
    current_ = std::move(full_.front());
    full_.pop_front();
    pos_ = 0;
    if (current_->n > 0) return &current_->rows[pos_++];
    free_.push_back(std::move(current_));
    cv_.notify_all();
  }
  if (error_) return *error_;
  return static_cast<const Row*>(nullptr);
}

}  // namespace rs::exporter

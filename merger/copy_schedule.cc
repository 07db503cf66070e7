#include "copy_schedule.h"

#include <algorithm>

namespace merge {

double EstimatedFinish(const std::vector<int64_t>& rows, size_t direct, int workers,
                       const CopyCosts& c) {
  double writer = 0;
  for (size_t i = 0; i < direct && i < rows.size(); ++i) {
    writer += c.per_input + c.copy_per_row * static_cast<double>(rows[i]);
  }
  if (direct >= rows.size()) return writer;
  if (workers < 1) return -1;  // parts nobody copies: not a valid split
  // Each part goes to the worker that is free first; the writer combines parts in order,
  // waiting for one that is not ready yet.
  std::vector<double> free_at(static_cast<size_t>(workers), 0.0);
  for (size_t i = direct; i < rows.size(); ++i) {
    auto h = std::min_element(free_at.begin(), free_at.end());
    *h += c.per_input + c.copy_per_row * static_cast<double>(rows[i]);
    writer = std::max(writer, *h) + c.per_input + c.combine_per_row * static_cast<double>(rows[i]);
  }
  return writer;
}

size_t DirectCopies(const std::vector<int64_t>& rows, int workers, const CopyCosts& costs) {
  if (workers < 1) return rows.size();
  size_t best = rows.size();
  double best_finish = EstimatedFinish(rows, best, workers, costs);
  for (size_t direct = 0; direct < rows.size(); ++direct) {
    double f = EstimatedFinish(rows, direct, workers, costs);
    if (f < best_finish) {
      best_finish = f;
      best = direct;
    }
  }
  return best;
}

}  // namespace merge

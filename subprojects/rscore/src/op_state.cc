#include "rscore/op_state.h"

namespace rs {

std::string_view OpStateName(OpState s) {
  switch (s) {
    case OpState::kNotEnqueued:
      return "not_enqueued";
    case OpState::kEnqueued:
      return "enqueued";
    case OpState::kStarted:
      return "started";
    case OpState::kCompleted:
      return "completed";
  }
  return "not_enqueued";
}

std::optional<OpState> OpStateFromName(std::string_view name) {
  if (name == "not_enqueued") return OpState::kNotEnqueued;
  if (name == "enqueued" || name == "scheduled") return OpState::kEnqueued;
  if (name == "started") return OpState::kStarted;
  if (name == "completed") return OpState::kCompleted;
  return std::nullopt;
}

}  // namespace rs

#include "merger/fr_bounds.h"

#include <string>
#include <vector>

namespace rs::merge::fr {
namespace {

// "256 KiB", "2 MiB".
std::string Size(int64_t bytes) {
  return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB"
                                : std::to_string(bytes >> 10) + " KiB";
}

class Bounder {
 public:
  explicit Bounder(Dump& dump) : dump_(dump) {}

  // A text value cut to kMaxFrValueBytes, its marker included.
  void Text(std::string& value, const std::string& field) {
    if (static_cast<int64_t>(value.size()) <= kMaxFrValueBytes) return;
    const size_t size = value.size();
    const std::string marker = std::string(kTruncatedMarker) + std::to_string(size) + " bytes]";
    Cut(value, static_cast<size_t>(kMaxFrValueBytes) - marker.size());
    Note(field, size);
    value += marker;
  }

  rs::Result<void> Structure(const std::string& json, int64_t limit, const std::string& field) {
    if (static_cast<int64_t>(json.size()) <= limit) return rs::Ok();
    return rs::Error(field + ": " + std::to_string(json.size()) + " bytes of JSON, over the " +
                     Size(limit) +
                     " a merged database may hold there: no Flight Recorder dump has such a "
                     "value (refused; remove the file or fix the field)");
  }

  // Frames kept from the innermost while the stack's text fits; the rest said in a marker frame.
  void Frames(std::vector<Frame>& frames, const std::string& field) {
    const std::string whole = StackText(frames);
    if (static_cast<int64_t>(whole.size()) <= kMaxFrValueBytes) return;
    // Room for the marker frame and its separators.
    const size_t budget = static_cast<size_t>(kMaxFrValueBytes) - 128;
    size_t used = 0, kept = 0;
    for (Frame& f : frames) {
      for (std::string* s : {&f.name, &f.file}) {
        if (s->size() > budget / 4) Cut(*s, budget / 4);
      }
      const size_t size = StackText({f}).size() + 1;
      if (used + size > budget) break;
      used += size;
      ++kept;
    }
    const size_t left_out = frames.size() - kept;
    frames.resize(kept);
    frames.push_back(Frame{std::string(kTruncatedMarker) + std::to_string(whole.size()) +
                               " bytes of stack, " + std::to_string(left_out) +
                               " frame(s) left out]",
                           "", 0});
    Note(field, whole.size());
  }

  void Opaque(std::string& json, const std::string& field) {
    if (static_cast<int64_t>(json.size()) <= kMaxFrValueBytes) return;
    const size_t size = json.size();
    json = "\"" + std::string(kTruncatedMarker).substr(1) + std::to_string(size) + " bytes]\"";
    Note(field, size);
  }

 private:
  // Cut at `size` bytes or before, never inside a UTF-8 character.
  static void Cut(std::string& s, size_t size) {
    while (size > 0 && (static_cast<unsigned char>(s[size]) & 0xc0) == 0x80) --size;
    s.resize(size);
  }
  void Note(const std::string& field, size_t size) {
    dump_.truncated.push_back(field + " (" + std::to_string(size) + " bytes)");
  }
  Dump& dump_;
};

}  // namespace

rs::Result<void> BoundValues(Dump& dump) {
  Bounder b(dump);
  b.Text(dump.version, "version");
  b.Text(dump.comm_lib_version, "comm_lib_version");
  b.Opaque(dump.nccl_comm_state, "nccl_comm_state");
  for (PgStatus& s : dump.status) b.Text(s.pg_id, "pg_status key");
  RETURN_IF_ERROR(b.Structure(StatusJson(dump.status), kMaxFrStatusBytes, "pg_status"));
  for (size_t i = 0; i < dump.groups.size(); ++i) {
    ProcessGroup& g = dump.groups[i];
    const std::string where = "pg_config[" + std::to_string(i) + "]";
    b.Text(g.name, where + ".name");
    b.Text(g.desc, where + ".desc");
    RETURN_IF_ERROR(b.Structure(RanksJson(g.ranks), kMaxFrRanksBytes, where + ".ranks"));
  }
  for (size_t i = 0; i < dump.entries.size(); ++i) {
    Entry& e = dump.entries[i];
    const std::string where = "entries[" + std::to_string(i) + "]";
    b.Text(e.pg_name, where + ".process_group name");
    b.Text(e.pg_desc, where + ".process_group desc");
    b.Text(e.profiling_name, where + ".profiling_name");
    b.Text(e.op, where + ".op (from profiling_name)");
    b.Text(e.datatype, where + ".datatype (from input_dtypes)");
    b.Text(e.thread_id, where + ".thread_id");
    b.Text(e.thread_name, where + ".thread_name");
    b.Frames(e.frames, where + ".frames");
    for (const auto& [json, name] :
         {std::pair{&e.input_sizes, "input_sizes"}, std::pair{&e.output_sizes, "output_sizes"},
          std::pair{&e.input_dtypes, "input_dtypes"},
          std::pair{&e.output_dtypes, "output_dtypes"}}) {
      RETURN_IF_ERROR(b.Structure(*json, kMaxFrValueBytes, where + "." + name));
    }
  }
  return rs::Ok();
}

}  // namespace rs::merge::fr

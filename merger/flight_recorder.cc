#include "merger/flight_recorder.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "merger/fr_bounds.h"
#include "merger/fr_groups.h"
#include "merger/fr_recording.h"
#include "rscore/pickle.h"

namespace rs::merge::fr {
namespace {

using Json = nlohmann::json;

// A dump is a few MB (2000 entries by default); beyond this it is not one.
constexpr int64_t kMaxDumpBytes = int64_t{1} << 30;

// The newest schema PyTorch writes: FlightRecorder.hpp's version_val "2.10" (PyTorch main,
// FlightRecorder<EventType> with per-backend recorders).
constexpr int kNewestMinor = 10;

constexpr std::string_view kUtf8Bom = "\xef\xbb\xbf";

// Where in the dump a value sits, for errors: "entries[12].state".
std::string At(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

const Json* Find(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// An integer, also as JSON dumps write some of them: a decimal string.
std::optional<int64_t> AsInt(const Json& v) {
  if (v.is_number_integer()) {
    if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
    return v.get<int64_t>();
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.empty() || s.size() > 20) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    long long x = std::strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0') return std::nullopt;
    return x;
  }
  return std::nullopt;
}

rs::Result<int64_t> RequireInt(const Json& obj, const char* key, const std::string& where) {
  const Json* v = Find(obj, key);
  if (!v) return rs::Error(At(where, key) + ": missing");
  std::optional<int64_t> x = AsInt(*v);
  if (!x)
    return rs::Error(At(where, key) + ": not an integer (" + std::string(v->type_name()) + ")");
  return *x;
}

rs::Result<std::optional<int64_t>> OptionalInt(const Json& obj, const char* key,
                                               const std::string& where) {
  const Json* v = Find(obj, key);
  if (!v) return std::optional<int64_t>();
  std::optional<int64_t> x = AsInt(*v);
  if (!x)
    return rs::Error(At(where, key) + ": not an integer (" + std::string(v->type_name()) + ")");
  return x;
}

rs::Result<std::string> RequireString(const Json& obj, const char* key, const std::string& where) {
  const Json* v = Find(obj, key);
  if (!v) return rs::Error(At(where, key) + ": missing");
  if (!v->is_string())
    return rs::Error(At(where, key) + ": not a string (" + std::string(v->type_name()) + ")");
  return v->get<std::string>();
}

std::string OptionalString(const Json& obj, const char* key) {
  const Json* v = Find(obj, key);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

// A list of shapes ([[4, 8], [16]]): its JSON text and the elements over all of them.
rs::Result<std::pair<std::string, int64_t>> Shapes(const Json& obj, const char* key,
                                                   const std::string& where) {
  const Json* v = Find(obj, key);
  if (!v) return std::make_pair(std::string("[]"), int64_t{0});
  if (!v->is_array()) return rs::Error(At(where, key) + ": not a list of shapes");
  int64_t numel = 0;
  for (const Json& shape : *v) {
    if (!shape.is_array()) return rs::Error(At(where, key) + ": not a list of shapes");
    int64_t n = 1;
    for (const Json& d : shape) {
      std::optional<int64_t> x = AsInt(d);
      if (!x || *x < 0) return rs::Error(At(where, key) + ": a dimension is not a count");
      n = *x == 0 || n <= INT64_MAX / *x ? n * *x : INT64_MAX;
    }
    numel = numel <= INT64_MAX - n ? numel + n : INT64_MAX;
  }
  return std::make_pair(v->dump(), numel);
}

rs::Result<std::string> Names(const Json& obj, const char* key, const std::string& where) {
  const Json* v = Find(obj, key);
  if (!v) return std::string("[]");
  if (!v->is_array()) return rs::Error(At(where, key) + ": not a list of names");
  for (const Json& s : *v) {
    if (!s.is_string()) return rs::Error(At(where, key) + ": not a list of names");
  }
  return v->dump();
}

// 'send 0->1' / 'recv 1<-0': group ranks of the sender and the receiver.
void ParsePeers(std::string_view rest, Entry& e) {
  auto num = [](std::string_view s) -> std::optional<int64_t> {
    if (s.empty() || s.size() > 9) return std::nullopt;
    int64_t x = 0;
    for (char c : s) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      x = x * 10 + (c - '0');
    }
    return x;
  };
  if (size_t p = rest.find("->"); p != std::string_view::npos) {
    e.src = num(rest.substr(0, p));
    e.dst = num(rest.substr(p + 2));
  } else if (size_t q = rest.find("<-"); q != std::string_view::npos) {
    e.dst = num(rest.substr(0, q));
    e.src = num(rest.substr(q + 2));
  }
}

rs::Result<Entry> ParseEntry(const Json& j, const std::string& where) {
  if (!j.is_object()) return rs::Error(where + ": not a dict");
  Entry e;
  ASSIGN_OR_RETURN(e.profiling_name, RequireString(j, "profiling_name", where));
  ASSIGN_OR_RETURN(e.collective_seq_id, RequireInt(j, "collective_seq_id", where));
  ASSIGN_OR_RETURN(e.time_created_ns, RequireInt(j, "time_created_ns", where));
  ASSIGN_OR_RETURN(std::string state, RequireString(j, "state", where));
  if (state == "scheduled") {
    e.state = "enqueued";
  } else if (state == "started" || state == "completed") {
    e.state = state;
  } else {
    return rs::Error(At(where, "state") + ": '" + state +
                     "' is none of scheduled, started, completed");
  }
  const Json* pg = Find(j, "process_group");
  if (!pg) return rs::Error(At(where, "process_group") + ": missing");
  if (pg->is_array() && pg->size() == 2 && (*pg)[0].is_string() && (*pg)[1].is_string()) {
    e.pg_name = (*pg)[0].get<std::string>();
    e.pg_desc = (*pg)[1].get<std::string>();
  } else if (pg->is_string()) {
    e.pg_name = pg->get<std::string>();  // the earliest dumps: the name alone
  } else {
    return rs::Error(At(where, "process_group") + ": not a (name, desc) pair");
  }
  ASSIGN_OR_RETURN(auto p2p_seq, OptionalInt(j, "p2p_seq_id", where));
  e.p2p_seq_id = p2p_seq.value_or(0);
  ASSIGN_OR_RETURN(auto record_id, OptionalInt(j, "record_id", where));
  e.record_id = record_id.value_or(-1);
  ASSIGN_OR_RETURN(auto pg_id, OptionalInt(j, "pg_id", where));
  e.pg_id = pg_id.value_or(-1);
  ASSIGN_OR_RETURN(auto op_id, OptionalInt(j, "op_id", where));
  e.op_id = op_id.value_or(-1);
  ASSIGN_OR_RETURN(e.timeout_ms, OptionalInt(j, "timeout_ms", where));
  // JSON dumps write 0 for a time not (yet) discovered.
  ASSIGN_OR_RETURN(e.time_discovered_started_ns,
                   OptionalInt(j, "time_discovered_started_ns", where));
  ASSIGN_OR_RETURN(e.time_discovered_completed_ns,
                   OptionalInt(j, "time_discovered_completed_ns", where));
  if (e.time_discovered_started_ns == 0) e.time_discovered_started_ns.reset();
  if (e.time_discovered_completed_ns == 0) e.time_discovered_completed_ns.reset();
  if (const Json* d = Find(j, "duration_ms")) {
    if (!d->is_number()) return rs::Error(At(where, "duration_ms") + ": not a number");
    e.duration_ms = d->get<double>();
  }
  if (const Json* r = Find(j, "retired")) {
    if (!r->is_boolean()) return rs::Error(At(where, "retired") + ": not a bool");
    e.retired = r->get<bool>();
  }
  e.op = OpFromProfilingName(e.profiling_name);
  if (const Json* p = Find(j, "is_p2p"); p && p->is_boolean()) {
    e.is_p2p = p->get<bool>();
  } else {
    e.is_p2p = e.op == "SEND" || e.op == "RECV";
  }
  if (e.op == "SEND" || e.op == "RECV") {
    std::string_view name = e.profiling_name;
    size_t space = name.find(' ');
    if (space != std::string_view::npos) ParsePeers(name.substr(space + 1), e);
  }
  ASSIGN_OR_RETURN(auto in_sizes, Shapes(j, "input_sizes", where));
  e.input_sizes = in_sizes.first;
  e.input_numel = in_sizes.second;
  ASSIGN_OR_RETURN(auto out_sizes, Shapes(j, "output_sizes", where));
  e.output_sizes = out_sizes.first;
  ASSIGN_OR_RETURN(e.input_dtypes, Names(j, "input_dtypes", where));
  ASSIGN_OR_RETURN(e.output_dtypes, Names(j, "output_dtypes", where));
  if (const Json* dt = Find(j, "input_dtypes"); dt && !dt->empty()) {
    e.datatype = DatatypeFromTorch((*dt)[0].get<std::string>());
  }
  e.thread_name = OptionalString(j, "thread_name");
  if (const Json* t = Find(j, "thread_id"))
    e.thread_id = t->is_string() ? t->get<std::string>() : t->dump();
  if (const Json* frames = Find(j, "frames")) {
    if (!frames->is_array()) return rs::Error(At(where, "frames") + ": not a list");
    for (const Json& f : *frames) {
      Frame fr;
      fr.name = OptionalString(f, "name");
      fr.file = OptionalString(f, "filename");
      if (const Json* l = Find(f, "line")) fr.line = AsInt(*l).value_or(0);
      e.frames.push_back(std::move(fr));
    }
  }
  return e;
}

// "[0, 1, 2]" (what FR writes) or a list.
rs::Result<std::vector<int64_t>> RankList(const Json& v, const std::string& where) {
  Json list = v;
  if (v.is_string()) {
    list = Json::parse(v.get<std::string>(), nullptr, /*allow_exceptions=*/false);
  }
  if (!list.is_array()) return rs::Error(where + ": not a list of ranks");
  std::vector<int64_t> ranks;
  for (const Json& r : list) {
    std::optional<int64_t> x = AsInt(r);
    if (!x || *x < 0) return rs::Error(where + ": not a list of ranks");
    ranks.push_back(*x);
  }
  return ranks;
}

rs::Result<Dump> Normalize(const Json& root, Dump dump) {
  if (!root.is_object()) return rs::Error("the dump is not a dict");
  ASSIGN_OR_RETURN(dump.version, RequireString(root, "version", ""));
  int major = 0, minor = 0;
  if (std::sscanf(dump.version.c_str(), "%d.%d", &major, &minor) != 2 || major != 2 || minor < 0) {
    return rs::Error("version '" + dump.version +
                     "': not a Flight Recorder schema this reads (2.0 to 2." +
                     std::to_string(kNewestMinor) + ")");
  }
  if (minor > kNewestMinor) {
    // PyTorch raises the minor version only when it adds fields (FlightRecorder.hpp: "minor
    // when adding fields, major when changing existing fields"): every field read here keeps
    // its meaning.
    dump.notes.push_back("Flight Recorder version " + dump.version +
                         " is newer than the newest this rankscope knows (2." +
                         std::to_string(kNewestMinor) + "): read as 2." +
                         std::to_string(kNewestMinor) + "; fields added since are not read");
  }
  dump.comm_lib_version = OptionalString(root, "comm_lib_version");
  if (const Json* cfg = Find(root, "pg_config")) {
    if (!cfg->is_object()) return rs::Error("pg_config: not a dict");
    for (const auto& [key, info] : cfg->items()) {
      ProcessGroup g;
      g.name = OptionalString(info, "name");
      if (g.name.empty()) g.name = key;
      g.desc = OptionalString(info, "desc");
      const Json* ranks = Find(info, "ranks");
      if (!ranks) return rs::Error("pg_config." + key + ".ranks: missing");
      ASSIGN_OR_RETURN(g.ranks, RankList(*ranks, "pg_config." + key + ".ranks"));
      dump.groups.push_back(std::move(g));
    }
  }
  if (const Json* st = Find(root, "pg_status")) {
    if (!st->is_object()) return rs::Error("pg_status: not a dict");
    for (const auto& [key, s] : st->items()) {
      PgStatus p;
      p.pg_id = key;
      const std::string where = "pg_status." + key;
      ASSIGN_OR_RETURN(p.last_enqueued, OptionalInt(s, "last_enqueued_collective", where));
      ASSIGN_OR_RETURN(p.last_started, OptionalInt(s, "last_started_collective", where));
      ASSIGN_OR_RETURN(p.last_completed, OptionalInt(s, "last_completed_collective", where));
      dump.status.push_back(std::move(p));
    }
  }
  if (const Json* entries = Find(root, "entries")) {
    if (!entries->is_array()) return rs::Error("entries: not a list");
    dump.entries.reserve(entries->size());
    for (size_t i = 0; i < entries->size(); ++i) {
      ASSIGN_OR_RETURN(Entry e, ParseEntry((*entries)[i], "entries[" + std::to_string(i) + "]"));
      dump.entries.push_back(std::move(e));
    }
  }
  if (const Json* comm = Find(root, "nccl_comm_state")) {
    // Bytes (a pickle's binary values) have no JSON text: written as their length.
    dump.nccl_comm_state = comm->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
  return dump;
}

rs::Result<std::string> ReadAll(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return rs::Error(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return rs::Error("not a regular file");
  if (st.st_size > kMaxDumpBytes) {
    return rs::Error(std::to_string(st.st_size) + " bytes: larger than any dump (1 GiB)");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return rs::Error(std::strerror(errno));
  std::ostringstream s;
  s << f.rdbuf();
  if (!f && !f.eof()) return rs::Error("read failed");
  return std::move(s).str();
}

}  // namespace

Sniff SniffFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[64] = {};
  f.read(head, sizeof head);
  const std::string_view h(head, static_cast<size_t>(f.gcount()));
  if (h.size() < 2) return Sniff::kNotDump;
  const auto b1 = static_cast<unsigned char>(h[1]);
  if (static_cast<unsigned char>(h[0]) == 0x80 && b1 >= 2 && b1 <= 5) return Sniff::kPickle;
  if (h[0] == '}' || h.substr(0, 2) == "(d") return Sniff::kPickle;  // protocol 1, 0
  std::string_view json = h.substr(0, 3) == kUtf8Bom ? h.substr(3) : h;
  const size_t first = json.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && json[first] == '{') return Sniff::kJson;
  return Sniff::kNotDump;
}

std::optional<int64_t> RankFromFileName(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  // A '.json' or '.pkl' suffix some users add.
  for (std::string_view ext : {".json", ".pkl", ".pickle"}) {
    if (name.size() > ext.size() && name.substr(name.size() - ext.size()) == ext) {
      name.remove_suffix(ext.size());
    }
  }
  size_t end = name.size(), begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
  if (begin == end || end - begin > 9) return std::nullopt;
  return std::stoll(std::string(name.substr(begin, end - begin)));
}

rs::Result<Dump> ParseDump(std::string_view data, std::string format, const std::string& name,
                           int64_t rank) {
  Dump dump;
  dump.file = name;
  dump.format = format;
  dump.rank = rank;
  Json root;
  if (format == "pickle") {
    ASSIGN_OR_RETURN(root, rs::pickle::Decode(data));
  } else {
    if (data.substr(0, 3) == kUtf8Bom) data.remove_prefix(3);
    root = Json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) return rs::Error("not valid JSON");
  }
  ASSIGN_OR_RETURN(dump, Normalize(root, std::move(dump)));
  RETURN_IF_ERROR(BoundValues(dump));
  DescribeRecording(dump);
  ResolveGroups(dump);
  return dump;
}

rs::Result<Dump> ReadDump(const std::string& path) {
  auto fail = [&](const rs::Error& e) { return e.Wrap(path); };
  std::optional<int64_t> rank = RankFromFileName(path);
  if (!rank) {
    return rs::Error(path +
                     ": a Flight Recorder dump's name ends in its rank (nccl_trace_rank_3); "
                     "rename it so");
  }
  Sniff kind = SniffFile(path);
  if (kind == Sniff::kNotDump) {
    return rs::Error(path + ": neither a pickle (protocol 0-5) nor a JSON Flight Recorder dump");
  }
  auto data = ReadAll(path);
  if (!data.ok()) return fail(data.error());
  auto dump = ParseDump(*data, kind == Sniff::kPickle ? "pickle" : "json", path, *rank);
  if (!dump.ok()) return fail(dump.error());
  return dump;
}

std::string StatusJson(const std::vector<PgStatus>& status) {
  Json j = Json::object();
  for (const PgStatus& s : status) {
    Json row = Json::object();
    if (s.last_enqueued) row["last_enqueued_collective"] = *s.last_enqueued;
    if (s.last_started) row["last_started_collective"] = *s.last_started;
    if (s.last_completed) row["last_completed_collective"] = *s.last_completed;
    j[s.pg_id] = row;
  }
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string RanksJson(const std::vector<int64_t>& ranks) { return Json(ranks).dump(); }

std::string StackText(const std::vector<Frame>& frames) {
  std::string text;
  for (const Frame& f : frames) {
    if (!text.empty()) text += '\n';
    text += f.name + " (" + f.file + ":" + std::to_string(f.line) + ")";
  }
  return text;
}

std::string OpFromProfilingName(std::string_view name) {
  if (size_t colon = name.find(':'); colon != std::string_view::npos) name = name.substr(colon + 1);
  if (size_t space = name.find(' '); space != std::string_view::npos) name = name.substr(0, space);
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  std::string n(name);
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto starts = [&](std::string_view p) { return n.rfind(p, 0) == 0; };
  if (starts("all_reduce") || starts("allreduce")) return "ALL_REDUCE";
  if (starts("all_gather") || starts("allgather")) return "ALL_GATHER";
  if (starts("reduce_scatter")) return "REDUCE_SCATTER";
  if (starts("all_to_all") || starts("alltoall")) return "ALL_TO_ALL";
  if (starts("broadcast")) return "BROADCAST";
  if (starts("reduce")) return "REDUCE";
  if (starts("gather")) return "GATHER";
  if (starts("scatter")) return "SCATTER";
  if (starts("barrier")) return "BARRIER";
  if (n == "send") return "SEND";
  if (n == "recv") return "RECV";
  if (n == "coalesced") return "COALESCED";
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper;
}

std::string DatatypeFromTorch(std::string_view dtype) {
  static const std::map<std::string_view, std::string_view> kNames = {
      {"Float", "float32"},
      {"Double", "float64"},
      {"Half", "float16"},
      {"BFloat16", "bfloat16"},
      {"Long", "int64"},
      {"Int", "int32"},
      {"Short", "int16"},
      {"Char", "int8"},
      {"Byte", "uint8"},
      {"Bool", "bool"},
      {"Float8_e4m3fn", "float8e4m3"},
      {"Float8_e5m2", "float8e5m2"}};
  auto it = kNames.find(dtype);
  if (it != kNames.end()) return std::string(it->second);
  std::string lower(dtype);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

}  // namespace rs::merge::fr

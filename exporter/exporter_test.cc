// Exports synthetic clusters (merged db and single bundles) and checks the decoded trace
// against the database: counts per table, aligned timestamps, flows, in-flight calls,
// determinism, filters.
#include "exporter/exporter.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "exporter/row_pipeline.h"
#include "exporter/test_input.h"
#include "exporter/trace_check.h"
#include "rscore/bundle.h"
#include "rscore/comm_hash.h"
#include "rscore/schema.h"

namespace rs::exporter {
namespace {

using testing::DecodedTrace;
using testing::DecodePerfettoTrace;

using testing::MakeTempDir;
std::string ReadAll(const std::string& path) { return testing::ReadFile(path); }

// Which table a trace event came from, by the names the exporter gives them.
std::string TableOf(const testing::DecodedEvent& e, const std::set<std::string>& nccl_ops,
                    const std::set<std::string>& sched_events) {
  if (e.name == "retransmit") return "tcp_events";
  if (e.name == "exec" || e.name == "exit") return "process_events";
  if (e.name.rfind("block ", 0) == 0) return "block_events";
  if (sched_events.count(e.name)) return "sched_events";
  if (nccl_ops.count(e.name)) return "nccl_events";
  return "cuda_events";
}

std::set<std::string> Distinct(Db& db, const std::string& sql) {
  std::set<std::string> out;
  auto st = db.Prepare(sql);
  EXPECT_TRUE(st.ok());
  while (st.ok() && st->Step().value()) out.insert(st->Text(0));
  return out;
}

class ExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    ASSERT_FALSE(dir_->empty());
    synth::ClusterSpec spec;
    spec.nodes = 3;
    spec.ranks_per_node = 2;
    spec.steps = 30;
    spec.fault = "hang";
    spec.hang_step = 22;
    spec.offset_ns = {0, 3'000'000, -2'000'000};
    ASSERT_EQ(mkdir((*dir_ + "/hang").c_str(), 0700), 0);
    auto r = testing::WriteInputs(spec, *dir_ + "/hang", *dir_ + "/hang.rsdb");
    ASSERT_TRUE(r.ok()) << r.error().message();
    synth::ClusterSpec loss = spec;
    loss.fault = "loss";
    loss.steps = 25;
    loss.extra_sched_per_step = 60;  // enough packets for several compressed chunks
    ASSERT_EQ(mkdir((*dir_ + "/loss").c_str(), 0700), 0);
    auto l = testing::WriteInputs(loss, *dir_ + "/loss", *dir_ + "/loss.rsdb");
    ASSERT_TRUE(l.ok()) << l.error().message();
  }
  static void TearDownTestSuite() {
    std::string cmd = "rm -rf '" + *dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    delete dir_;
  }

  static ExportResult ExportOk(ExportOptions o) {
    o.force = true;  // a test may export into the same file again
    auto r = Export(o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(r).value() : ExportResult{};
  }

  // Checks the decoded trace of `input` (exported with `filter_sql` applied) against the db.
  static void CheckAgainstDb(const std::string& input, const std::string& trace_path,
                             const std::string& where, int64_t expect_end) {
    auto decoded = DecodePerfettoTrace(trace_path);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message();
    const DecodedTrace& t = *decoded;
    for (const std::string& e : t.errors) ADD_FAILURE() << e;
    auto opened = OpenRankscopeFile(input);
    ASSERT_TRUE(opened.ok());
    Db& db = opened->db();
    auto ops = Distinct(db, "SELECT DISTINCT op FROM nccl_events");
    auto sched = Distinct(db, "SELECT DISTINCT event FROM sched_events");

    // Per table: the multiset of (start, end) equals the db's, so counts reconcile and every
    // timestamp is the db's aligned one; a scheduler span cut to nest on its thread's track
    // carries the time cut (cut_ns), and only such spans are cut.
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> got;
    for (const auto& e : t.events) {
      const std::string table = TableOf(e, ops, sched);
      auto cut = e.ints.find("cut_ns");
      if (cut != e.ints.end()) {
        EXPECT_EQ(table, "sched_events") << e.name;
        EXPECT_GT(cut->second, 0) << e.name;
      }
      got[table].push_back({e.ts, e.end + (cut == e.ints.end() ? 0 : cut->second)});
    }
    for (const auto& [uuid, d] : t.tracks) {
      EXPECT_EQ(d.name().find("scheduler (overlap"), std::string::npos) << d.name();
    }
    for (std::string table : {"nccl_events", "cuda_events", "sched_events", "block_events",
                              "tcp_events", "process_events"}) {
      bool instant = table == "tcp_events" || table == "process_events";
      std::string end =
          instant ? "timestamp_ns"
                  : "COALESCE(timestamp_ns + duration_ns, " + std::to_string(expect_end) + ")";
      auto st = db.Prepare("SELECT timestamp_ns, " + end + " FROM " + table + where);
      ASSERT_TRUE(st.ok()) << st.error().message();
      std::vector<std::pair<int64_t, int64_t>> want;
      while (st->Step().value()) want.push_back({st->Int(0), st->Int(1)});
      std::vector<std::pair<int64_t, int64_t>>& have = got[table];
      std::sort(want.begin(), want.end());
      std::sort(have.begin(), have.end());
      EXPECT_EQ(have.size(), want.size()) << table;
      EXPECT_TRUE(have == want) << table << ": timestamps differ from the db";
    }

    // Flows: every collective with >= 2 participants is one flow through exactly its ranks,
    // terminated once, on its last slice.
    std::map<uint64_t, std::set<int64_t>> flow_ranks;
    std::map<uint64_t, std::set<std::pair<std::string, int64_t>>> flow_coll;
    std::map<uint64_t, int> terminations;
    std::map<uint64_t, int64_t> last_ts, term_ts;
    for (const auto& e : t.events) {
      std::vector<uint64_t> ids = e.flows;
      ids.insert(ids.end(), e.terminating_flows.begin(), e.terminating_flows.end());
      for (uint64_t id : ids) {
        flow_ranks[id].insert(e.ints.at("rank"));
        flow_coll[id].insert({e.strings.at("comm_id_hex"), e.ints.at("seq")});
        last_ts[id] = std::max(last_ts[id], e.ts);
      }
      for (uint64_t id : e.terminating_flows) {
        ++terminations[id];
        term_ts[id] = e.ts;
      }
    }
    auto st = db.Prepare(
        "SELECT comm_id_hash, seq, group_concat(rank) FROM (SELECT comm_id_hash, seq, rank FROM"
        " nccl_events" +
        where +
        " AND seq IS NOT NULL ORDER BY rank) GROUP BY comm_id_hash, seq HAVING COUNT(*) >= 2");
    ASSERT_TRUE(st.ok()) << st.error().message();
    std::map<std::pair<std::string, int64_t>, std::set<int64_t>> want;
    while (st->Step().value()) {
      std::set<int64_t> ranks;
      std::stringstream ss(st->Text(2));
      for (std::string r; std::getline(ss, r, ',');) ranks.insert(std::stoll(r));
      want[{rs::HashHex(static_cast<uint64_t>(st->Int(0))), st->Int(1)}] = ranks;
    }
    EXPECT_EQ(flow_ranks.size(), want.size());
    for (const auto& [id, colls] : flow_coll) {
      ASSERT_EQ(colls.size(), 1u) << "flow " << id << " mixes collectives";
      EXPECT_EQ(flow_ranks[id], want[*colls.begin()]) << "flow " << id;
      EXPECT_EQ(terminations[id], 1) << "flow " << id;
      EXPECT_EQ(term_ts[id], last_ts[id]) << "flow " << id << " not terminated last";
    }
  }

  // For hand-made rows: ends are start + max(duration, 0), in-flight ones the trace end.
  static void CheckAgainstDbClamped(const std::string& input, const std::string& trace_path) {
    auto t = DecodePerfettoTrace(trace_path);
    ASSERT_TRUE(t.ok());
    std::vector<std::pair<int64_t, int64_t>> have,
        want = {
            {900, 900},    // runq, duration -1
            {990, 1010},   // block in flight
            {1000, 1000},  // nccl, duration -50
            {1000, 1010},  // nccl
            {1002, 1005},  // cuda, nested in the nccl call on b
            {1003, 1010},  // cuda in flight
            {1005, 1010},  // nccl in flight
        };
    for (const auto& e : t->events) have.push_back({e.ts, e.end});
    std::sort(have.begin(), have.end());
    EXPECT_EQ(have, want) << input;
  }

  static std::string* dir_;
};
std::string* ExportTest::dir_ = nullptr;

TEST_F(ExportTest, MergedDbToPerfettoMatchesTheDb) {
  ExportOptions o;
  o.input = *dir_ + "/hang.rsdb";
  o.output = *dir_ + "/hang.pftrace";
  ExportResult r = ExportOk(o);
  EXPECT_GT(r.stats.slices, 0);
  EXPECT_EQ(r.stats.slices + r.stats.instants, r.summary.rows);
  // The hang leaves in-flight AllReduces: they run to the end of the trace.
  EXPECT_EQ(r.stats.in_flight, 5);
  CheckAgainstDb(o.input, o.output, " WHERE 1", r.summary.last_ts);
  auto t = DecodePerfettoTrace(o.output);
  ASSERT_TRUE(t.ok());
  int in_flight = 0;
  for (const auto& e : t->events) {
    if (e.ints.count("in_flight")) {
      ++in_flight;
      EXPECT_EQ(e.end, r.summary.last_ts);
      EXPECT_EQ(e.name, "ALL_REDUCE");
    }
  }
  EXPECT_EQ(in_flight, 5);
  // Track names and the node -> rank -> thread tree.
  std::set<std::string> process_names;
  for (const auto& [uuid, d] : t->tracks) {
    if (d.has_process()) {
      process_names.insert(d.process().process_name());
      ASSERT_TRUE(t->tracks.count(d.parent_uuid()));
      EXPECT_EQ(d.name().rfind(t->tracks.at(d.parent_uuid()).name() + " / rank ", 0), 0u)
          << d.name();
    }
  }
  EXPECT_EQ(process_names.size(), 6u);
  EXPECT_TRUE(process_names.count("node1 / rank 3 (pid 10101)"));
  // NCCL annotations carry what people filter on.
  for (const auto& e : t->events) {
    if (e.name != "ALL_REDUCE") continue;
    for (const char* k : {"rank", "seq", "bytes", "ret"}) {
      EXPECT_TRUE(e.ints.count(k)) << k;
    }
    EXPECT_EQ(e.strings.at("op"), "ALL_REDUCE");
    // The communicator one way, as the report and the query views spell it.
    EXPECT_EQ(e.strings.at("comm_id_hex").size(), 18u) << e.strings.at("comm_id_hex");
    EXPECT_FALSE(e.ints.count("comm_id_hash"));
  }
}

TEST_F(ExportTest, RetransmitsAreInstantsWithARateCounter) {
  ExportOptions o;
  o.input = *dir_ + "/loss.rsdb";
  o.output = *dir_ + "/loss.pftrace";
  ExportResult r = ExportOk(o);
  CheckAgainstDb(o.input, o.output, " WHERE 1", r.summary.last_ts);
  auto t = DecodePerfettoTrace(o.output);
  ASSERT_TRUE(t.ok());
  int64_t retransmits = 0;
  for (const auto& e : t->events) retransmits += e.name == "retransmit" && e.instant;
  EXPECT_EQ(retransmits, r.summary.rows_per_table[static_cast<int>(Table::kTcp)]);
  EXPECT_GT(retransmits, 0);
  int64_t max_rate = 0;
  for (const auto& c : t->counters) {
    if (t->tracks.at(c.track).name().find("retransmits/s") != std::string::npos) {
      max_rate = std::max(max_rate, c.value);
    }
  }
  EXPECT_GT(max_rate, 0);
  EXPECT_LE(max_rate, retransmits);
}

// A retransmission the kernel could not send (err != 0) is shown under its own name and left
// out of the rate; the congestion state and the result are annotations.
TEST_F(ExportTest, UnsentRetransmitsAreShownButNotCounted) {
  const std::string path = *dir_ + "/unsent.rsdb";
  {
    auto db = Db::Open(path, Db::Mode::kCreate);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
    ASSERT_TRUE(db->Exec(R"sql(
INSERT INTO tcp_events(id, node, timestamp_ns, event, family, saddr, daddr, sport, dport,
                       segments, ca_state, err)
  VALUES (1, 'a', 1000, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 1, 2, 3,
          'Recovery', 0),
         (2, 'a', 1001, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 1, 2, 45,
          'Recovery', -16),
         (3, 'a', 1002, 'tcp_retransmit_skb', 'ipv4', '10.0.0.1', '10.0.0.2', 1, 2, 1,
          'Open', 0);
)sql")
                    .ok());
  }
  ExportOptions o;
  o.input = path;
  o.output = path + ".pftrace";
  ExportOk(o);
  auto t = DecodePerfettoTrace(o.output);
  ASSERT_TRUE(t.ok());
  std::vector<std::string> seen;
  for (const auto& e : t->events) {
    if (!e.instant) continue;
    seen.push_back(e.name + "/" + e.strings.at("ca_state") + "/" +
                   std::to_string(e.ints.at("err")));
  }
  EXPECT_EQ(seen,
            (std::vector<std::string>{"retransmit/Recovery/0", "retransmit not sent/Recovery/-16",
                                      "retransmit/Open/0"}));
  int64_t max_rate = 0;
  for (const auto& c : t->counters) {
    if (t->tracks.at(c.track).name().find("retransmits/s") != std::string::npos) {
      max_rate = std::max(max_rate, c.value);
    }
  }
  EXPECT_EQ(max_rate, 4);  // 3 + 1 segments sent; the 45 not sent are not in it
}

TEST_F(ExportTest, SameInputGivesByteIdenticalOutput) {
  for (Format f : {Format::kPerfetto, Format::kChromeJson}) {
    ExportOptions o;
    o.input = *dir_ + "/loss.rsdb";
    o.format = f;
    o.output = *dir_ + "/a.out";
    ExportOk(o);
    o.output = *dir_ + "/b.out";
    ExportOk(o);
    std::string a = ReadAll(*dir_ + "/a.out"), b = ReadAll(*dir_ + "/b.out");
    EXPECT_GT(a.size(), 1000u);
    EXPECT_TRUE(a == b) << "format " << static_cast<int>(f);
  }
}

TEST_F(ExportTest, CompressedAndPlainTracesHoldTheSamePackets) {
  ExportOptions o;
  o.input = *dir_ + "/loss.rsdb";
  o.output = *dir_ + "/deflate.pftrace";
  ExportResult z = ExportOk(o);
  o.output = *dir_ + "/plain.pftrace";
  o.compress = false;
  ExportResult p = ExportOk(o);
  auto dz = DecodePerfettoTrace(*dir_ + "/deflate.pftrace");
  auto dp = DecodePerfettoTrace(*dir_ + "/plain.pftrace");
  ASSERT_TRUE(dz.ok() && dp.ok());
  EXPECT_GE(dz->compressed_chunks, 2);
  EXPECT_EQ(dp->compressed_chunks, 0);
  EXPECT_EQ(dz->packets, dp->packets);
  EXPECT_EQ(dz->packets, z.packets);
  ASSERT_EQ(dz->events.size(), dp->events.size());
  for (size_t i = 0; i < dz->events.size(); ++i) {
    EXPECT_EQ(dz->events[i].ts, dp->events[i].ts);
    EXPECT_EQ(dz->events[i].end, dp->events[i].end);
    EXPECT_EQ(dz->events[i].name, dp->events[i].name);
  }
  EXPECT_LT(z.bytes * 3, p.bytes);  // synthetic rows repeat a lot: deflate gains > 3x
}

TEST_F(ExportTest, SingleBundle) {
  ExportOptions o;
  o.input = *dir_ + "/hang/node1.rsb";
  o.output = *dir_ + "/node1.pftrace";
  ExportResult r = ExportOk(o);
  EXPECT_GT(r.summary.rows, 0);
  CheckAgainstDb(o.input, o.output, " WHERE 1", r.summary.last_ts);
}

TEST_F(ExportTest, WindowAndNodeFilter) {
  auto opened = OpenRankscopeFile(*dir_ + "/loss.rsdb");
  ASSERT_TRUE(opened.ok());
  auto first = opened->db().QueryInt("SELECT MIN(timestamp_ns) FROM process_events");
  ASSERT_TRUE(first.ok());
  ExportOptions o;
  o.input = *dir_ + "/loss.rsdb";
  o.output = *dir_ + "/window.pftrace";
  o.from = TimePoint{true, 100'000'000};
  o.to = TimePoint{true, 300'000'000};
  o.nodes = {"node1", "node2"};
  ExportResult r = ExportOk(o);
  const int64_t from = *first + 100'000'000, to = *first + 300'000'000;
  std::string where = " WHERE timestamp_ns BETWEEN " + std::to_string(from) + " AND " +
                      std::to_string(to) + " AND node IN ('node1', 'node2')";
  std::string sum = "SELECT 0";
  for (std::string_view table : kEventTables) {
    sum += " + (SELECT COUNT(*) FROM " + std::string(table) + where + ")";
  }
  EXPECT_EQ(r.summary.rows, *opened->db().QueryInt(sum));
  EXPECT_GT(r.summary.rows, 0);
  CheckAgainstDb(o.input, o.output, where, r.summary.last_ts);
  auto t = DecodePerfettoTrace(o.output);
  ASSERT_TRUE(t.ok());
  for (const auto& [uuid, d] : t->tracks) {
    EXPECT_EQ(d.name().find("node0"), std::string::npos) << d.name();
  }
}

TEST_F(ExportTest, ChromeJsonHasOneCompleteEventPerSlice) {
  ExportOptions o;
  o.input = *dir_ + "/hang.rsdb";
  o.output = *dir_ + "/hang.json";
  o.format = Format::kChromeJson;
  ExportResult r = ExportOk(o);
  std::string j = ReadAll(o.output);
  auto count = [&](const std::string& needle) {
    int64_t n = 0;
    for (size_t p = j.find(needle); p != std::string::npos; p = j.find(needle, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(j.rfind("{\"displayTimeUnit\"", 0), 0u);
  EXPECT_EQ(count("{\"ph\":\"X\""), r.stats.slices);
  EXPECT_EQ(count("{\"ph\":\"i\""), r.stats.instants);
  EXPECT_EQ(count("{\"ph\":\"s\"") + count("{\"ph\":\"t\"") + count("{\"ph\":\"f\""),
            r.stats.flow_events);
  EXPECT_EQ(j.substr(j.size() - 4), "\n]}\n");
}

// A db with no events, and one with corrupt rows (negative durations, unknown pids, NULL
// ranks): both export to valid traces.
TEST_F(ExportTest, EmptyAndOddInputs) {
  for (bool odd : {false, true}) {
    const std::string path = *dir_ + (odd ? "/odd.rsdb" : "/empty.rsdb");
    {
      auto db = Db::Open(path, Db::Mode::kCreate);
      ASSERT_TRUE(db.ok());
      ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
      if (odd) {
        ASSERT_TRUE(db->Exec(R"sql(
INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op, seq, comm_id_hash)
  VALUES (1, 'a', 1000, -50, 7, 7, 'ALL_REDUCE', 0, 42),
         (2, 'b', 1000, 10, 7, 7, 'ALL_REDUCE', 0, 42),
         (3, 'b', 1005, NULL, 7, 8, 'BROADCAST', 1, 42);
INSERT INTO sched_events(id, node, timestamp_ns, duration_ns, event, pid, tid)
  VALUES (4, 'a', 900, -1, 'runq_latency', 7, 7);
INSERT INTO block_events(id, node, timestamp_ns, duration_ns, dev, op, bytes)
  VALUES (5, 'a', 990, NULL, '8:0', 'read', 4096);
INSERT INTO cuda_events(id, node, timestamp_ns, duration_ns, pid, tid, api, library, state)
  VALUES (6, 'b', 1002, 3, 7, 7, 'cudaLaunchKernel', 'cudart', 'complete'),
         (7, 'b', 1003, NULL, 7, 8, 'cudaStreamSynchronize', 'cudart', 'in_flight');
)sql")
                        .ok());
      }
    }
    ExportOptions o;
    o.input = path;
    for (Format f : {Format::kPerfetto, Format::kChromeJson}) {
      o.format = f;
      o.output = path + (f == Format::kPerfetto ? ".pftrace" : ".json");
      ExportResult r = ExportOk(o);
      EXPECT_EQ(r.summary.rows, odd ? 7 : 0);
      EXPECT_EQ(r.stats.slices, odd ? 7 : 0);
      EXPECT_EQ(r.stats.in_flight, odd ? 3 : 0);
    }
    o.output = path + ".pftrace";
    o.format = Format::kPerfetto;
    if (odd) CheckAgainstDbClamped(path, o.output);
    auto t = DecodePerfettoTrace(o.output);
    ASSERT_TRUE(t.ok());
    for (const std::string& e : t->errors) ADD_FAILURE() << e;
    EXPECT_EQ(t->events.size(), odd ? 7u : 0u);
  }
}

TEST_F(ExportTest, CorruptInputIsAnErrorNamingTheFile) {
  const std::string bad = *dir_ + "/corrupt.rsdb";
  std::string bytes = ReadAll(*dir_ + "/loss.rsdb");
  ASSERT_GT(bytes.size(), 64u * 1024);
  // Keep the schema and metadata pages, wreck the last pages (indexes, built last).
  for (size_t i = bytes.size() * 7 / 10 / 4096 * 4096; i < bytes.size(); ++i) {
    bytes[i] = static_cast<char>(0xA5);
  }
  std::ofstream(bad, std::ios::binary) << bytes;
  ExportOptions o;
  o.input = bad;
  o.output = *dir_ + "/corrupt.pftrace";
  auto r = Export(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("corrupt.rsdb"), std::string::npos) << r.error().message();
  EXPECT_NE(access(o.output.c_str(), F_OK), 0);
}

TEST_F(ExportTest, ErrorsNameTheInputAndTheNode) {
  ExportOptions o;
  o.input = *dir_ + "/hang.rsdb";
  o.output = *dir_ + "/x.pftrace";
  o.nodes = {"node9"};
  auto r = Export(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("node9"), std::string::npos);
  EXPECT_NE(r.error().message().find("node0, node1, node2"), std::string::npos)
      << r.error().message();
  o.nodes.clear();
  o.input = *dir_ + "/missing.rsdb";
  auto m = Export(o);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message().find("missing.rsdb"), std::string::npos);
  o.input = *dir_ + "/hang.rsdb";
  o.from = TimePoint{true, 2'000'000'000};
  o.to = TimePoint{true, 1'000'000'000};
  auto order = Export(o);
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message().find("--from is after --to"), std::string::npos);
  o.from.reset();
  o.to.reset();
  o.output = *dir_ + "/no/such/dir/x.pftrace";
  auto w = Export(o);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message().find("x.pftrace"), std::string::npos);
  EXPECT_NE(access((*dir_ + "/x.pftrace").c_str(), F_OK), 0);  // nothing half-written
}

// A window holding no event is an error that names the window and the recording's range, and
// leaves no file behind, in both formats.
TEST_F(ExportTest, EmptyWindowIsAnErrorNamingTheWindowAndTheRecording) {
  auto opened = OpenRankscopeFile(*dir_ + "/hang.rsdb");
  ASSERT_TRUE(opened.ok());
  auto first = FirstEventTimestamp(opened->db());
  ASSERT_TRUE(first.ok() && first->has_value());
  auto start = RecordingStartNs(opened->db());  // the zero of +offsets
  ASSERT_TRUE(start.ok());
  for (Format f : {Format::kPerfetto, Format::kChromeJson}) {
    ExportOptions o;
    o.input = *dir_ + "/hang.rsdb";
    o.format = f;
    o.output = *dir_ + (f == Format::kPerfetto ? "/late.pftrace" : "/late.json");
    o.from = TimePoint{true, 3600'000'000'000};  // an hour after the recording's start
    auto r = Export(o);
    ASSERT_FALSE(r.ok()) << "an empty window exported";
    const std::string& m = r.error().message();
    EXPECT_NE(m.find("no event"), std::string::npos) << m;
    EXPECT_NE(m.find(rs::FormatUtc(*start + 3600'000'000'000)), std::string::npos) << m;
    EXPECT_NE(m.find("+3600"), std::string::npos) << m;                 // the window as an offset
    EXPECT_NE(m.find(rs::FormatUtc(**first)), std::string::npos) << m;  // the recording
    EXPECT_NE(access(o.output.c_str(), F_OK), 0) << "output left behind";
    // The same input without a window still exports.
    o.from.reset();
    ExportOk(o);
  }
}

}  // namespace
}  // namespace rs::exporter

#include "exporter/trace_check.h"

#include <zlib.h>

#include <fstream>
#include <sstream>

namespace rs::exporter::testing {
namespace {

namespace pb = perfetto::protos;

// Inflates a compressed_packets payload (zlib format).
Result<std::string> Inflate(const std::string& in) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Error("inflateInit failed");
  std::string out;
  char buf[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(buf, sizeof buf - z.avail_out);
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END)
    return Error("corrupt compressed_packets (zlib " + std::to_string(rc) + ")");
  return out;
}

}  // namespace

Result<DecodedTrace> DecodePerfettoTrace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  pb::Trace outer;
  if (!outer.ParseFromString(ss.str())) return Error(path + ": not a valid perfetto.protos.Trace");
  DecodedTrace out;
  // Expand compressed chunks in place: their packets continue the same sequence.
  pb::Trace trace;
  for (const pb::TracePacket& p : outer.packet()) {
    if (!p.has_compressed_packets()) {
      *trace.add_packet() = p;
      continue;
    }
    ++out.compressed_chunks;
    if (p.ByteSizeLong() >= 512 * 1024) out.errors.push_back("compressed chunk over 512 KiB");
    ASSIGN_OR_RETURN(std::string raw, Inflate(p.compressed_packets()));
    pb::Trace inner;
    if (!inner.ParseFromString(raw)) return Error(path + ": corrupt compressed chunk");
    for (const pb::TracePacket& q : inner.packet()) {
      if (q.has_compressed_packets()) out.errors.push_back("nested compressed chunk");
      *trace.add_packet() = q;
    }
  }
  auto fail = [&](int64_t i, const std::string& what) {
    out.errors.push_back("packet " + std::to_string(i) + ": " + what);
  };
  std::map<uint64_t, std::string> names, arg_names;
  std::map<uint64_t, std::vector<size_t>> open;  // track -> stack of open slices
  bool incremental = false;
  int64_t now = 0;
  for (int i = 0; i < trace.packet_size(); ++i) {
    const pb::TracePacket& p = trace.packet(i);
    ++out.packets;
    if (p.trusted_packet_sequence_id() != 1) fail(i, "not on sequence 1");
    if (i == 0) {
      if (p.sequence_flags() != pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED)
        fail(i, "first packet does not clear incremental state");
      if (!p.has_clock_snapshot()) {
        fail(i, "first packet has no clock snapshot");
      } else {
        for (const auto& c : p.clock_snapshot().clocks()) {
          if (c.clock_id() == 64 && c.is_incremental()) {
            incremental = true;
            now = static_cast<int64_t>(c.timestamp());
          }
        }
      }
      if (p.trace_packet_defaults().timestamp_clock_id() != 64)
        fail(i, "defaults do not select the incremental clock");
      continue;
    }
    if (p.sequence_flags() != pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE)
      fail(i, "missing SEQ_NEEDS_INCREMENTAL_STATE");
    for (const auto& n : p.interned_data().event_names()) {
      if (names.count(n.iid())) fail(i, "event name iid " + std::to_string(n.iid()) + " redefined");
      names[n.iid()] = n.name();
    }
    for (const auto& n : p.interned_data().debug_annotation_names()) {
      if (arg_names.count(n.iid())) fail(i, "annotation iid redefined");
      arg_names[n.iid()] = n.name();
    }
    if (p.has_track_descriptor()) {
      const pb::TrackDescriptor& d = p.track_descriptor();
      if (d.uuid() == 0) fail(i, "track uuid 0");
      if (out.tracks.count(d.uuid()))
        fail(i, "track " + std::to_string(d.uuid()) + " declared twice");
      if (d.has_parent_uuid() && !out.tracks.count(d.parent_uuid()))
        fail(i, "track " + d.name() + " declared before its parent");
      out.tracks[d.uuid()] = d;
      continue;
    }
    if (!p.has_track_event()) {
      fail(i, "unexpected packet kind");
      continue;
    }
    if (!p.has_timestamp()) fail(i, "track event without timestamp");
    if (!incremental) fail(i, "no incremental clock defined");
    now += static_cast<int64_t>(p.timestamp());
    const pb::TrackEvent& te = p.track_event();
    auto track = out.tracks.find(te.track_uuid());
    if (track == out.tracks.end()) {
      fail(i, "event on undeclared track " + std::to_string(te.track_uuid()));
      continue;
    }
    const bool is_counter_track = track->second.has_counter();
    if (te.type() == pb::TrackEvent::TYPE_COUNTER) {
      if (!is_counter_track) fail(i, "counter value on a non-counter track");
      out.counters.push_back({te.track_uuid(), now, te.counter_value()});
      continue;
    }
    if (is_counter_track) fail(i, "slice or instant on a counter track");
    if (te.type() == pb::TrackEvent::TYPE_SLICE_END) {
      auto& stack = open[te.track_uuid()];
      if (stack.empty()) {
        fail(i, "slice end without begin on track " + track->second.name());
      } else {
        out.events[stack.back()].end = now;
        stack.pop_back();
      }
      continue;
    }
    DecodedEvent e;
    e.track = te.track_uuid();
    e.ts = e.end = now;
    e.instant = te.type() == pb::TrackEvent::TYPE_INSTANT;
    if (!e.instant && te.type() != pb::TrackEvent::TYPE_SLICE_BEGIN) fail(i, "unknown type");
    if (!names.count(te.name_iid()))
      fail(i, "name iid " + std::to_string(te.name_iid()) + " not defined");
    e.name = names[te.name_iid()];
    for (const auto& a : te.debug_annotations()) {
      if (!arg_names.count(a.name_iid())) {
        fail(i, "annotation name iid not defined");
        continue;
      }
      const std::string& n = arg_names[a.name_iid()];
      if (a.has_string_value()) e.strings[n] = a.string_value();
      if (a.has_int_value()) e.ints[n] = a.int_value();
      if (a.has_bool_value()) e.ints[n] = a.bool_value();
    }
    e.flows.assign(te.flow_ids().begin(), te.flow_ids().end());
    e.terminating_flows.assign(te.terminating_flow_ids().begin(), te.terminating_flow_ids().end());
    out.events.push_back(std::move(e));
    if (!out.events.back().instant) open[te.track_uuid()].push_back(out.events.size() - 1);
  }
  for (const auto& [track, stack] : open) {
    if (!stack.empty()) {
      out.errors.push_back(std::to_string(stack.size()) + " unterminated slices on track " +
                           out.tracks[track].name());
    }
  }
  return out;
}

}  // namespace rs::exporter::testing

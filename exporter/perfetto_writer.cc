#include "exporter/perfetto_writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <zlib.h>

#include <cstring>

#include "rscore/json.h"
#include "rscore/output.h"

namespace rs::exporter {
namespace {

namespace pb = perfetto::protos;

// Tag of Trace.packet (field 1, length-delimited).
constexpr uint32_t kTracePacketTag = (1 << 3) | 2;
// Tag of TracePacket.compressed_packets (field 50, length-delimited).
constexpr uint32_t kCompressedPacketsTag = (50 << 3) | 2;
// Uncompressed bytes per compressed_packets chunk: keeps each chunk far below Perfetto's
// 512 KiB limit even when data does not compress.
constexpr size_t kChunkBytes = 256 * 1024;

pb::CounterDescriptor::Unit UnitOf(CounterUnit u) {
  switch (u) {
    case CounterUnit::kTimeNs:
      return pb::CounterDescriptor::UNIT_TIME_NS;
    case CounterUnit::kCount:
      return pb::CounterDescriptor::UNIT_COUNT;
    case CounterUnit::kNone:
      break;
  }
  return pb::CounterDescriptor::UNIT_UNSPECIFIED;
}

}  // namespace

PerfettoWriter::PerfettoWriter(int fd, std::string path_for_errors, bool compress)
    : path_(std::move(path_for_errors)),
      compress_(compress),
      file_(std::make_unique<google::protobuf::io::FileOutputStream>(fd, 1 << 20)),
      out_(std::make_unique<google::protobuf::io::CodedOutputStream>(file_.get())) {}

PerfettoWriter::~PerfettoWriter() {
  out_.reset();
  file_.reset();
}

int64_t PerfettoWriter::bytes() const { return out_ ? out_->ByteCount() : flushed_bytes_; }

void PerfettoWriter::NewPacket() {
  // Messages live on an arena, reset every few thousand packets: clearing a packet frees
  // its oneof sub-messages, which otherwise costs a malloc/free round per packet.
  if (packet_ == nullptr || ++arena_packets_ >= 4096) {
    arena_.Reset();
    packet_ = google::protobuf::Arena::CreateMessage<pb::TracePacket>(&arena_);
    arena_packets_ = 0;
  } else {
    packet_->Clear();
  }
}

Result<void> PerfettoWriter::CheckStream() {
  if (out_->HadError()) {
    return WriteError(path_, file_->GetErrno());
  }
  return Ok();
}

Result<void> PerfettoWriter::WritePacket() {
  if (!out_) return Error(path_ + ": write after finish");
  const size_t size = packet_->ByteSizeLong();
  ++packets_;
  if (!compress_) {
    out_->WriteTag(kTracePacketTag);
    out_->WriteVarint64(size);
    packet_->SerializeWithCachedSizes(out_.get());
    return CheckStream();
  }
  // Same bytes as the uncompressed stream, gathered for deflate.
  uint8_t head[16];
  uint8_t* p = google::protobuf::io::CodedOutputStream::WriteTagToArray(kTracePacketTag, head);
  p = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(size, p);
  const size_t at = chunk_.size();
  chunk_.resize(at + static_cast<size_t>(p - head) + size);
  auto* dst = reinterpret_cast<uint8_t*>(chunk_.data() + at);
  std::memcpy(dst, head, static_cast<size_t>(p - head));
  packet_->SerializeWithCachedSizesToArray(dst + (p - head));
  if (chunk_.size() >= kChunkBytes) return FlushChunk();
  return Ok();
}

Result<void> PerfettoWriter::FlushChunk() {
  if (chunk_.empty()) return Ok();
  uLongf len = compressBound(static_cast<uLong>(chunk_.size()));
  compressed_.resize(len);
  int rc = compress2(reinterpret_cast<Bytef*>(compressed_.data()), &len,
                     reinterpret_cast<const Bytef*>(chunk_.data()),
                     static_cast<uLong>(chunk_.size()), Z_BEST_SPEED);
  if (rc != Z_OK) return Error(path_ + ": deflate failed (zlib error " + std::to_string(rc) + ")");
  const uint64_t inner =
      google::protobuf::io::CodedOutputStream::VarintSize32(kCompressedPacketsTag) +
      google::protobuf::io::CodedOutputStream::VarintSize64(len) + len;
  out_->WriteTag(kTracePacketTag);
  out_->WriteVarint64(inner);
  out_->WriteTag(kCompressedPacketsTag);
  out_->WriteVarint64(len);
  out_->WriteRaw(compressed_.data(), static_cast<int>(len));
  chunk_.clear();
  ++chunks_;
  return CheckStream();
}

Result<void> PerfettoWriter::Begin(int64_t first_ts, int64_t /*last_ts*/) {
  last_ts_ = first_ts;
  NewPacket();
  packet_->set_trusted_packet_sequence_id(kSequenceId);
  packet_->set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  packet_->set_first_packet_on_sequence(true);
  pb::ClockSnapshot* snap = packet_->mutable_clock_snapshot();
  // The incremental clock starts at the first event; REALTIME and BOOTTIME are given the
  // same reading so the trace shows aligned wall-clock nanoseconds whichever clock the
  // reader treats as primary.
  pb::ClockSnapshot::Clock* inc = snap->add_clocks();
  inc->set_clock_id(kIncrementalClockId);
  inc->set_timestamp(static_cast<uint64_t>(first_ts));
  inc->set_is_incremental(true);
  for (pb::BuiltinClock c : {pb::BUILTIN_CLOCK_REALTIME, pb::BUILTIN_CLOCK_BOOTTIME}) {
    pb::ClockSnapshot::Clock* clock = snap->add_clocks();
    clock->set_clock_id(static_cast<uint32_t>(c));
    clock->set_timestamp(static_cast<uint64_t>(first_ts));
  }
  snap->set_primary_trace_clock(pb::BUILTIN_CLOCK_REALTIME);
  packet_->mutable_trace_packet_defaults()->set_timestamp_clock_id(kIncrementalClockId);
  return WritePacket();
}

Result<void> PerfettoWriter::DeclareTrack(const Track& t) {
  if (uuid_of_.size() <= t.index) uuid_of_.resize(t.index + 1, 0);
  uuid_of_[t.index] = t.uuid;
  NewPacket();
  packet_->set_trusted_packet_sequence_id(kSequenceId);
  packet_->set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  pb::TrackDescriptor* d = packet_->mutable_track_descriptor();
  d->set_uuid(t.uuid);
  if (t.parent_uuid) d->set_parent_uuid(t.parent_uuid);
  d->set_name(rs::ValidUtf8(t.name));
  d->set_sibling_order_rank(t.sort_index);
  if (t.explicit_child_order) d->set_child_ordering(pb::TrackDescriptor::EXPLICIT);
  if (!t.merge_key.empty()) {
    d->set_sibling_merge_behavior(pb::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_BY_SIBLING_MERGE_KEY);
    d->set_sibling_merge_key(rs::ValidUtf8(t.merge_key));
  }
  switch (t.kind) {
    case TrackKind::kProcess:
      d->mutable_process()->set_pid(t.pid);
      d->mutable_process()->set_process_name(rs::ValidUtf8(t.name));
      break;
    case TrackKind::kThread:
      d->mutable_thread()->set_pid(t.pid);
      d->mutable_thread()->set_tid(t.tid);
      d->mutable_thread()->set_thread_name(rs::ValidUtf8(t.name));
      break;
    case TrackKind::kCounter:
      d->mutable_counter()->set_unit(UnitOf(t.unit));
      break;
    case TrackKind::kNode:
    case TrackKind::kSlices:
      break;
  }
  return WritePacket();
}

uint64_t PerfettoWriter::InternName(std::string_view name) {
  auto it = names_.find(name);
  if (it != names_.end()) return it->second;
  uint64_t iid = names_.size() + 1;
  names_.emplace(std::string(name), iid);
  pb::EventName* e = packet_->mutable_interned_data()->add_event_names();
  e->set_iid(iid);
  e->set_name(rs::ValidUtf8(name));
  return iid;
}

uint64_t PerfettoWriter::InternArgName(std::string_view name) {
  auto it = arg_names_.find(name);
  if (it != arg_names_.end()) return it->second;
  uint64_t iid = arg_names_.size() + 1;
  arg_names_.emplace(std::string(name), iid);
  pb::DebugAnnotationName* e = packet_->mutable_interned_data()->add_debug_annotation_names();
  e->set_iid(iid);
  e->set_name(rs::ValidUtf8(name));
  return iid;
}

Result<void> PerfettoWriter::Emit(const TraceEvent& ev) {
  CHECK(ev.ts >= last_ts_);
  CHECK(ev.track < uuid_of_.size() && uuid_of_[ev.track] != 0);
  NewPacket();
  packet_->set_timestamp(static_cast<uint64_t>(ev.ts - last_ts_));
  last_ts_ = ev.ts;
  packet_->set_trusted_packet_sequence_id(kSequenceId);
  packet_->set_sequence_flags(pb::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  pb::TrackEvent* te = packet_->mutable_track_event();
  te->set_track_uuid(uuid_of_[ev.track]);
  switch (ev.type) {
    case EventType::kSliceEnd:
      te->set_type(pb::TrackEvent::TYPE_SLICE_END);
      return WritePacket();
    case EventType::kCounter:
      te->set_type(pb::TrackEvent::TYPE_COUNTER);
      te->set_counter_value(ev.counter_value);
      return WritePacket();
    case EventType::kSliceBegin:
      te->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
      break;
    case EventType::kInstant:
      te->set_type(pb::TrackEvent::TYPE_INSTANT);
      break;
  }
  te->set_name_iid(InternName(ev.name));
  for (const Annotation& a : ev.args) {
    pb::DebugAnnotation* d = te->add_debug_annotations();
    d->set_name_iid(InternArgName(a.name));
    switch (a.kind) {
      case Annotation::Kind::kInt:
        d->set_int_value(a.i);
        break;
      case Annotation::Kind::kUint:
        d->set_uint_value(a.u);
        break;
      case Annotation::Kind::kString:
        d->set_string_value(rs::ValidUtf8(a.s));
        break;
      case Annotation::Kind::kBool:
        d->set_bool_value(a.b);
        break;
    }
  }
  for (const FlowLink& f : ev.flows) {
    if (f.role == FlowRole::kStart || f.role == FlowRole::kStep) te->add_flow_ids(f.id);
    if (f.role == FlowRole::kEnd) te->add_terminating_flow_ids(f.id);
  }
  return WritePacket();
}

Result<void> PerfettoWriter::Finish() {
  if (!out_) return Ok();
  RETURN_IF_ERROR(FlushChunk());
  const bool had_error = out_->HadError();
  flushed_bytes_ = out_->ByteCount();
  out_.reset();
  const bool flushed = file_->Flush();
  const int err = file_->GetErrno();
  file_.reset();
  if (had_error || !flushed) {
    return WriteError(path_, err);
  }
  return Ok();
}

}  // namespace rs::exporter

// Writes the trace as native Perfetto protobuf, one packet at a time: each TracePacket is
// emitted as a length-delimited field 1 of `Trace`, so the whole trace is never held in
// memory. One packet sequence (trusted_packet_sequence_id 1):
//  - the first packet clears incremental state and carries a ClockSnapshot that defines a
//    sequence-scoped incremental clock (id 64, ns) anchored at the first event's wall-clock
//    time, plus TracePacketDefaults selecting that clock; every later timestamp is the
//    delta from the previous packet's, so timestamps stay exact and small;
//  - every later packet sets SEQ_NEEDS_INCREMENTAL_STATE;
//  - event names and debug annotation names are interned (InternedData) in the packet
//    that first uses them.
// With compression on (the default), packets are gathered into chunks of about 256 KiB,
// deflated (zlib format, as Perfetto's own tracing service does) and written as
// TracePacket.compressed_packets, which trace_processor and ui.perfetto.dev inflate on load.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/arena.h>

#include "exporter/perfetto_trace.pb.h"
#include "exporter/trace_sink.h"

namespace google::protobuf::io {
class FileOutputStream;
class CodedOutputStream;
}  // namespace google::protobuf::io

namespace rs::exporter {

inline constexpr uint32_t kSequenceId = 1;
inline constexpr uint32_t kIncrementalClockId = 64;

class PerfettoWriter : public TraceSink {
 public:
  // Writes to an already open file descriptor (not closed by this object).
  PerfettoWriter(int fd, std::string path_for_errors, bool compress);
  ~PerfettoWriter() override;

  Result<void> Begin(int64_t first_ts, int64_t last_ts) override;
  Result<void> DeclareTrack(const Track& track) override;
  Result<void> Emit(const TraceEvent& event) override;
  Result<void> Finish() override;

  int64_t packets() const { return packets_; }
  int64_t chunks() const { return chunks_; }
  int64_t bytes() const;

 private:
  void NewPacket();
  Result<void> WritePacket();
  Result<void> FlushChunk();
  Result<void> CheckStream();
  uint64_t InternName(std::string_view name);
  uint64_t InternArgName(std::string_view name);

  std::string path_;
  bool compress_ = false;
  std::string chunk_;       // serialized packets waiting to be compressed
  std::string compressed_;  // scratch for deflate output
  std::unique_ptr<google::protobuf::io::FileOutputStream> file_;
  std::unique_ptr<google::protobuf::io::CodedOutputStream> out_;
  google::protobuf::Arena arena_;
  perfetto::protos::TracePacket* packet_ = nullptr;  // on arena_
  int arena_packets_ = 0;
  std::vector<uint64_t> uuid_of_;  // Track::index -> uuid
  std::map<std::string, uint64_t, std::less<>> names_;
  std::map<std::string, uint64_t, std::less<>> arg_names_;
  int64_t last_ts_ = 0;
  int64_t packets_ = 0;
  int64_t chunks_ = 0;
  int64_t flushed_bytes_ = 0;
};

}  // namespace rs::exporter

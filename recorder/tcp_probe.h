// TCP retransmits: bpf/tcp.bpf.c -> this probe -> table tcp_events.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "recorder/kernel_probe.h"
#include "tcp.h"

namespace rec {

// Printable address of an rs_tcp_event (inet_ntop; IPv4 uses the first 4 bytes).
std::string FormatAddress(uint16_t family, const uint8_t (&addr)[16]);
// 'ESTABLISHED', 'SYN_SENT', ... ('STATE_<n>' for values this build does not know).
std::string TcpStateName(uint8_t state);
// 'Open', 'Disorder', 'CWR', 'Recovery', 'Loss' ('CA_<n>' for values this build does not know).
std::string TcpCaStateName(uint8_t ca_state);

// event bytes -> tcp_events row (pure: testable on an in-memory db).
class TcpEventWriter {
 public:
  static rs::Result<TcpEventWriter> Create(rs::Db& db, std::string node, rs::EventIdAllocator* ids,
                                           const rs::MonoToWall* clock);
  rs::Result<void> Write(std::span<const uint8_t> data);

 private:
  rs::Statement insert_;
  std::string node_;
  rs::EventIdAllocator* ids_ = nullptr;
  const rs::MonoToWall* clock_ = nullptr;
};

class TcpProbe : public KernelProbe {
 public:
  std::string_view source() const override { return "tcp"; }
  rs::Result<void> Start(RecorderContext& ctx) override;
  rs::Result<void> Finish(RecorderContext& ctx) override { return FinishKernel(ctx); }

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override { return writer_.Write(data); }

 private:
  TcpEventWriter writer_;
};

}  // namespace rec

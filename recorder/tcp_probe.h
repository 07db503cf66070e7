// TCP retransmits: bpf/tcp.bpf.c -> this probe -> table tcp_events.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "bpf/abi/tcp.h"
#include "recorder/kernel_probe.h"

namespace rs::rec {

// Printable address of an rs_tcp_event (inet_ntop; IPv4 uses the first 4 bytes).
std::string FormatAddress(uint16_t family, const uint8_t (&addr)[16]);
// 'ESTABLISHED', 'SYN_SENT', ... ('STATE_<n>' for values this build does not know).
std::string TcpStateName(uint8_t state);
// 'Open', 'Disorder', 'CWR', 'Recovery', 'Loss' ('CA_<n>' for values this build does not know).
std::string TcpCaStateName(uint8_t ca_state);

// event bytes -> tcp_events row.
class TcpEventWriter : public KernelEventWriter<TcpEventWriter> {
 public:
  static const char kInsertSql[];
  rs::Result<void> Write(std::span<const uint8_t> data);
};

class TcpProbe : public KernelProbe {
 public:
  std::string_view source() const override { return "tcp"; }
  rs::Result<void> Start(RecorderContext& ctx) override;

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override { return writer_.Write(data); }

 private:
  TcpEventWriter writer_;
};

}  // namespace rs::rec

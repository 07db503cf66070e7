// Small formatting helpers shared by the analyses' summaries and the renderers.
#pragma once

#include <cstdint>
#include <string>

namespace rs::analyzer {

// 8930000 -> "8.93 ms"; 1500 -> "1.5 us"; keeps 3 significant digits.
std::string FormatNs(int64_t ns);
// 0.853 -> "85%".
std::string FormatPercent(double fraction);
// 2.43 -> "2.4x".
std::string FormatRatio(double ratio);
// 4.66 -> "4.7" (standard errors, pixel positions).
std::string FormatFixed1(double v);
// "device start" for 'device_start', "host-bound" for 'host_bound': a vocabulary value as people
// read it ("" stays "").
std::string Spoken(const std::string& value);
// A straggler's shape as read beside its cause: host-bound, device-bound, network-bound (not
// "cause network, network").
std::string ShapeSpoken(const std::string& shape);
// The first frame of a stack ('symbol+0xoff (file@build_id+0xoff)' per line) outside the CUDA
// and NCCL libraries: the application's caller, as 'symbol+0xoff (file name)' ("" for none).
std::string CallerFrame(const std::string& stack);
// One line per thing a rank was doing (hang reports): "cudaMemcpy in flight since ...".
std::string DescribeActivityLine(const struct Activity& a, int64_t time_zero_ns);

}  // namespace rs::analyzer

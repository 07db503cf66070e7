#include "recorder/event_loop.h"

#include <signal.h>

#include <atomic>

#include "recorder/recording.h"

namespace rs::rec {
namespace {

std::atomic<int> g_stop_signal{0};
std::atomic<bool> g_cut_requested{false};

extern "C" void OnStopSignal(int signo) { g_stop_signal.store(signo); }
extern "C" void OnCutSignal(int) { g_cut_requested.store(true); }

}  // namespace

int StopSignalReceived() { return g_stop_signal.load(); }
bool TakeCutRequest() { return g_cut_requested.exchange(false); }

void InstallStopSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll returns at once
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = OnCutSignal;  // a cut (--ring); without a ring it is logged and ignored
  sigaction(SIGUSR1, &sa, nullptr);
}

void RequestStop(int signo) { g_stop_signal.store(signo); }

EventLoop::EventLoop(const RecorderOptions& opts, rs::NodeName node, RecordingDb writer,
                     std::vector<std::unique_ptr<Probe>> probes, LoopConfig config)
    : opts_(opts),
      node_(std::move(node)),
      writer_(std::move(writer)),
      probes_(std::move(probes)),
      config_(std::move(config)) {}

rs::Result<RecordingSummary> EventLoop::Run() {
  auto summary = Record();
  if (!summary.ok() && recording_began_ && !writer_.kept()) {
    // What was committed stays for --recover rather than going with the error.
    writer_.Keep();
    return rs::Error(summary.error().message() + "; what was recorded until then is kept in " +
                     writer_.temp_path() + ": " + RecoverCommand(writer_.temp_path()));
  }
  return summary;
}

rs::Result<RecordingSummary> EventLoop::Record() {
  Recording recording(opts_, config_, node_, writer_, probes_);
  RETURN_IF_ERROR(recording.Begin());
  RETURN_IF_ERROR(recording.StartProbes());
  recording_began_ = true;
  recording.Loop();
  recording.Finish();
  if (config_.before_end) config_.before_end();
  return recording.End();
}

}  // namespace rs::rec

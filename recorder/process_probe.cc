#include "recorder/process_probe.h"

#include <cstring>

#include "bpf/process.skel.h"

namespace rs::rec {

int ExitCodeFromWaitStatus(int32_t status) {
  int sig = status & 0x7f;
  if (sig == 0) return (status >> 8) & 0xff;
  return 128 + sig;
}

const char ProcessEventWriter::kInsertSql[] =
    "INSERT INTO process_events(id, node, timestamp_ns, event, pid, ppid, comm, filename, "
    "exit_code) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";

rs::Result<rs_process_event> ProcessEventWriter::Write(std::span<const uint8_t> data) {
  ASSIGN_OR_RETURN(const rs_process_event e, ReadEvent<rs_process_event>(data, "process"));
  if (e.kind != RS_PROCESS_EXEC && e.kind != RS_PROCESS_EXIT) {
    return rs::Error("process: unknown event kind " + std::to_string(e.kind));
  }
  bool exec = e.kind == RS_PROCESS_EXEC;
  std::string comm(e.comm, strnlen(e.comm, sizeof(e.comm)));
  std::string filename(e.filename, strnlen(e.filename, sizeof(e.filename)));
  rs::Statement& st = BeginRow(e.ts_ns);
  st.Bind(4, exec ? "exec" : "exit").Bind(5, static_cast<int64_t>(e.pid));
  st.Bind(6, NullIfZero(e.ppid)).Bind(7, NullIfEmpty(comm));
  if (exec && !filename.empty())
    st.Bind(8, filename);
  else
    st.BindNull(8);
  if (exec)
    st.BindNull(9);
  else
    st.Bind(9, ExitCodeFromWaitStatus(e.exit_code));
  RETURN_IF_ERROR(st.Run());
  return e;
}

rs::Result<void> ProcessProbe::OnSample(std::span<const uint8_t> data) {
  ASSIGN_OR_RETURN(rs_process_event e, writer_.Write(data));
  if (e.kind == RS_PROCESS_EXEC && ctx_ != nullptr) {
    ctx_->execs.push_back({static_cast<int>(e.pid), e.ts_ns});
  }
  return rs::Ok();
}

rs::Result<void> ProcessProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  ASSIGN_OR_RETURN(writer_, ProcessEventWriter::Create(ctx));
  SkeletonOps<process_bpf> ops{&process_bpf__open, &process_bpf__load, &process_bpf__destroy};
  ASSIGN_OR_RETURN(process_bpf * skel, Load<process_bpf>(ops, ctx, nullptr));
  return AttachAndPoll(ctx, skel->maps.process_rb);
}

}  // namespace rs::rec

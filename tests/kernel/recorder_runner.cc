#include "recorder_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace rs::rec::ktest {
namespace {

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string RecorderPath() {
  const char* p = std::getenv("RANKSCOPE_RECORD");
  return p ? p : "rankscope-record";
}

int Sh(const std::string& cmd) {
  int st = std::system(cmd.c_str());
  return st == -1 ? -1 : ExitCode(st);
}

std::string ShOut(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) out.append(buf.data(), n);
  pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/rs_ktest.XXXXXX";
  char* p = mkdtemp(tmpl);
  path_ = p ? p : "/tmp";
}
TempDir::~TempDir() {
  std::error_code ec;
  if (path_ != "/tmp") std::filesystem::remove_all(path_, ec);
}

rs::Result<RecorderProcess> RecorderProcess::Start(const std::vector<std::string>& args,
                                                   const std::string& netns) {
  std::vector<std::string> argv;
  if (!netns.empty()) argv = {"/usr/sbin/ip", "netns", "exec", netns};
  argv.push_back(RecorderPath());
  argv.insert(argv.end(), args.begin(), args.end());
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return rs::Error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) return rs::Error("fork failed");
  if (pid == 0) {
    dup2(pipefd[1], STDERR_FILENO);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    std::fprintf(stderr, "exec %s failed: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  close(pipefd[1]);
  RecorderProcess p;
  p.pid_ = pid;
  p.err_fd_ = pipefd[0];
  return p;
}

RecorderProcess::RecorderProcess(RecorderProcess&& o) noexcept
    : pid_(o.pid_),
      err_fd_(o.err_fd_),
      err_(std::move(o.err_)),
      status_(o.status_),
      exited_(o.exited_) {
  o.pid_ = -1;
  o.err_fd_ = -1;
}

RecorderProcess::~RecorderProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (err_fd_ >= 0) close(err_fd_);
}

void RecorderProcess::Drain(int timeout_ms) {
  if (err_fd_ < 0) return;
  pollfd pfd{err_fd_, POLLIN, 0};
  if (poll(&pfd, 1, timeout_ms) <= 0) return;
  char buf[4096];
  ssize_t n = read(err_fd_, buf, sizeof(buf));
  if (n > 0) {
    err_.append(buf, static_cast<size_t>(n));
  } else if (n == 0) {
    close(err_fd_);
    err_fd_ = -1;
  }
}

bool RecorderProcess::WaitReady(int timeout_ms) {
  return WaitFor(": recording node ", timeout_ms);
}

bool RecorderProcess::WaitFor(const std::string& text, int timeout_ms) {
  int64_t end = NowMs() + timeout_ms;
  while (NowMs() < end) {
    if (err_.find(text) != std::string::npos) return true;
    if (err_fd_ < 0) return false;  // exited
    Drain(100);
  }
  return false;
}

int RecorderProcess::Wait(int timeout_ms) {
  int64_t end = NowMs() + timeout_ms;
  while (!exited_ && NowMs() < end) {
    int st = 0;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      status_ = ExitCode(st);
      break;
    }
    Drain(50);
  }
  while (err_fd_ >= 0 && exited_) {
    size_t before = err_.size();
    Drain(200);
    if (err_.size() == before) break;
  }
  return exited_ ? status_ : -1;
}

int RecorderProcess::Stop(int signo, int timeout_ms) {
  if (!exited_) kill(pid_, signo);
  return Wait(timeout_ms);
}

RunResult RunRecorder(const std::vector<std::string>& args, int timeout_ms) {
  RunResult r;
  auto p = RecorderProcess::Start(args);
  if (!p.ok()) return r;
  r.exit_code = p->Wait(timeout_ms);
  r.stderr_text = p->stderr_text();
  return r;
}

pid_t SpawnSpinner(int cpu, const char* name, int max_s, bool round_robin) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_NAME, name);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  sched_setaffinity(0, sizeof(set), &set);
  if (round_robin) {
    sched_param sp{};
    sp.sched_priority = 1;
    if (sched_setscheduler(0, SCHED_RR, &sp) != 0) _exit(3);
  }
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  volatile uint64_t x = 0;
  do {
    for (int i = 0; i < 100000; ++i) x = x + 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec - start.tv_sec < max_s);
  _exit(0);
}

void Reap(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

rs::Result<int64_t> QueryBundleInt(const std::string& bundle, const std::string& sql) {
  ASSIGN_OR_RETURN(rs::OpenedDb db, rs::OpenRankscopeFile(bundle));
  return db.db().QueryInt(sql);
}

}  // namespace rs::rec::ktest

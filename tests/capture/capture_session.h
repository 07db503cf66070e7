// Test harness of the capture tests: a probe driven through its real lifecycle (Start ->
// Tick -> Finish) against an in-memory bundle database, children whose 'key value' output
// the tests read, and a row helper for asserting every column.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "recorder/attach_log.h"
#include "recorder/options.h"
#include "recorder/preflight.h"
#include "recorder/probe.h"
#include "recorder/process_table.h"
#include "recorder/ring_poller.h"
#include "rscore/clock.h"
#include "rscore/event_id.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"

namespace capture_test {

inline int64_t WallNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// One probe recording into an in-memory bundle database.
class Session {
 public:
  explicit Session(rs::rec::RecorderOptions opts)
      : opts_(std::move(opts)),
        db_(std::move(rs::Db::Open(":memory:", rs::Db::Mode::kCreate).value())),
        log_(&db_, "capnode", /*verbose=*/false),
        processes_(&db_, "capnode", "/proc", 0, &WallNs),
        ids_(0x1234) {
    if (geteuid() == 0) {  // the library-load tracepoint needs tracefs, as in rankscope-record
      auto tracefs = rs::rec::EnsureTracefs();
      if (!tracefs.ok()) std::fprintf(stderr, "warning: %s\n", tracefs.error().message().c_str());
    }
    (void)rs::CreateSchema(db_, rs::DbKind::kBundle);
    clock_.Add(wall_.TakeRef("start"));
    ctx_.db = &db_;
    ctx_.node = "capnode";
    ctx_.ids = &ids_;
    ctx_.clock = &clock_;
    ctx_.options = &opts_;
    ctx_.attach_log = &log_;
    ctx_.processes = &processes_;
    ctx_.poller = &poller_;
  }

  rs::Result<void> Start(rs::rec::Probe& probe) { return probe.Start(ctx_); }
  void Tick(rs::rec::Probe& probe) { probe.Tick(ctx_); }
  rs::Result<void> Finish(rs::rec::Probe& probe) {
    clock_.Add(wall_.TakeRef("end"));
    return probe.Finish(ctx_);
  }
  rs::Db& db() { return db_; }
  rs::rec::AttachLog& log() { return log_; }
  rs::rec::RecorderContext& ctx() { return ctx_; }

 private:
  rs::rec::RecorderOptions opts_;
  rs::Db db_;
  rs::rec::AttachLog log_;
  rs::rec::ProcessTable processes_;
  rs::EventIdAllocator ids_;
  rs::WallClock wall_;
  rs::MonoToWall clock_;
  rs::rec::RingPoller poller_;  // direct mode: probes read their rings on Tick / Finish
  rs::rec::RecorderContext ctx_;
};

// A child process with its stdin and stdout on pipes.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {}) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~Child() {
    Kill();
    if (in_ >= 0) close(in_);
    if (out_ >= 0) close(out_);
  }
  pid_t pid() const { return pid_; }

  // Reads 'key value' lines until `key` was seen (or EOF / timeout). false on timeout or EOF.
  bool ReadUntil(const std::string& key, int timeout_ms = 10000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!values_.count(key)) {
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) return false;
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) return false;
      char buf[4096];
      ssize_t n = read(out_, buf, sizeof(buf));
      if (n <= 0) return false;
      pending_.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = pending_.find('\n')) != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        size_t sp = line.find(' ');
        values_[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
      }
    }
    return true;
  }
  std::string Value(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? "" : it->second;
  }
  int64_t Int(const std::string& key) const { return std::stoll(Value(key)); }
  uint64_t Hex(const std::string& key) const { return std::stoull(Value(key), nullptr, 16); }
  void Write(const std::string& s) { (void)!write(in_, s.data(), s.size()); }
  // Waits for exit; returns the exit status (-1 on timeout, after which it is killed).
  int Wait(int timeout_ms = 10000) {
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Kill();
    return -1;
  }
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1, out_ = -1;
  std::string pending_;
  std::map<std::string, std::string> values_;
};

// Rows of a query, every column as optional text (NULL = nullopt).
using Row = std::map<std::string, std::optional<std::string>>;
inline std::vector<Row> Rows(rs::Db& db, const std::string& sql) {
  std::vector<Row> rows;
  auto st = db.Prepare(sql);
  if (!st.ok()) return rows;
  while (true) {
    auto more = st->Step();
    if (!more.ok() || !*more) break;
    Row r;
    for (int i = 0; i < st->ColumnCount(); ++i) {
      if (st->IsNull(i)) {
        r[st->ColumnName(i)] = std::nullopt;
      } else {
        r[st->ColumnName(i)] = st->Text(i);
      }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}
inline std::optional<int64_t> Int(const Row& r, const std::string& col) {
  auto it = r.find(col);
  if (it == r.end() || !it->second) return std::nullopt;
  return std::stoll(*it->second);
}
inline std::optional<std::string> Text(const Row& r, const std::string& col) {
  auto it = r.find(col);
  return it == r.end() ? std::nullopt : it->second;
}
inline int64_t S64(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace capture_test

// One call a test profiler plugin received (test_profiler_plugin.cc), as the tests read it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

// The activation mask the test plugin returns from init: every event type.
#define RSTEST_MASK 0xfff

struct RsTestEvent {
  enum Call { kInit, kStart, kStop, kRecord, kFinalize };
  Call call = kInit;
  int tid = 0;
  bool device_thread = false;  // called on a stream worker of the test bed's CUDA runtime
  uint64_t globaltimer = 0;    // the calling thread's device clock at the call
  int handle = 0;              // start: the new event's id; stop/record: the event's
  int context = 0;
  // init
  uint64_t comm_hash = 0;
  std::string name;
  int n_nodes = 0, nranks = 0;
  bool has_logger = false;
  // start (descriptor fields by type)
  uint64_t type = 0;
  int parent = 0, parent_group = 0, rank = -1, group_depth = 0;
  uint64_t seq = 0;
  std::string func, datatype, algo, proto;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  int root = 0;  // also a p2p or proxy peer
  int n_channels = 0, channel = -1, n_steps = 0, chunk = 0, is_send = -1, step = -1;
  pid_t pid = 0;
  void* stream = nullptr;
  bool graph_captured = false;  // API events
  // record
  int state = -1;
  uint64_t ptimer = 0;  // KernelCh start / stop
  size_t trans_size = 0;
};

// The tables of a bundle and a merged database as SQL: the schema itself and its
// documentation (DescribeSchema reads the comments). Included by schema.cc only.
#pragma once

#include <string_view>

namespace rs::schema_sql {

constexpr std::string_view kBundleSql = R"sql(
-- facts about the recording: versions, node, host, start and end, capture settings
CREATE TABLE metadata (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) STRICT;
-- monotonic/realtime clock pairs taken at start, every second and at the end
CREATE TABLE clock_refs (
  node          TEXT NOT NULL,
  seq           INTEGER NOT NULL,
  kind          TEXT NOT NULL,      -- 'start' | 'periodic' | 'end'
  mono_ns       INTEGER NOT NULL,   -- CLOCK_MONOTONIC (what BPF timestamps use)
  realtime_ns   INTEGER NOT NULL,   -- CLOCK_REALTIME read between two monotonic reads
  read_span_ns  INTEGER NOT NULL,   -- width of that bracket: the pair's own uncertainty
  maxerror_us   INTEGER,            -- adjtimex(2) maxerror
  esterror_us   INTEGER,            -- adjtimex(2) esterror
  clock_state   TEXT,               -- adjtimex return: 'TIME_OK', 'TIME_ERROR', ...
  PRIMARY KEY (node, seq)
) STRICT;
-- one row per capture source: how it was attached, events written and lost
CREATE TABLE sources (
  node      TEXT NOT NULL,
  source    TEXT NOT NULL,          -- 'tcp', 'sched', 'block', 'process', 'nccl', 'cuda'
  method    TEXT,                   -- 'tp_btf', 'tracepoint', 'uprobe', 'off', ...
  events    INTEGER NOT NULL DEFAULT 0,
  drops     INTEGER NOT NULL DEFAULT 0,  -- ring-buffer reserve failures + lost entries
  note      TEXT,
  PRIMARY KEY (node, source)
) STRICT;
-- every probe the recorder tried to attach, and whether it worked
CREATE TABLE attachments (
  node      TEXT NOT NULL,
  kind      TEXT NOT NULL,          -- 'tracepoint', 'nccl', 'cudart', 'cuda'
  target    TEXT NOT NULL,          -- tracepoint name or library file
  symbol    TEXT,
  ok        INTEGER NOT NULL,
  error     TEXT,
  build_id  TEXT
) STRICT;
-- the node's network addresses (which TCP peers are other nodes)
CREATE TABLE interfaces (
  node       TEXT NOT NULL,
  ifname     TEXT NOT NULL,
  family     TEXT NOT NULL,         -- 'ipv4' | 'ipv6'
  address    TEXT NOT NULL,
  prefix_len INTEGER,
  netns      INTEGER
) STRICT;
-- processes seen, with the rank and job identity from their environment and NCCL
CREATE TABLE processes (
  node                 TEXT NOT NULL,
  pid                  INTEGER NOT NULL,
  first_seen_ns        INTEGER,
  comm                 TEXT,
  exe                  TEXT,
  netns                INTEGER,
  env_rank             INTEGER,   -- torchrun RANK
  env_local_rank       INTEGER,
  env_world_size       INTEGER,
  env_local_world_size INTEGER,
  env_group_rank       INTEGER,
  env_role_rank        INTEGER,
  torchelastic_run_id  TEXT,
  slurm_procid         INTEGER,
  slurm_localid        INTEGER,
  slurm_nodeid         INTEGER,
  slurm_job_id         TEXT,
  nccl_rank            INTEGER,   -- rank passed to ncclCommInitRank* (first communicator)
  nccl_nranks          INTEGER,
  rank                 INTEGER,   -- best known global rank
  rank_conflict        TEXT,      -- set when the sources above disagree; never resolved silently
  cuda_launch_blocking INTEGER,   -- CUDA_LAUNCH_BLOCKING in its environment: 1 = "1" (kernel
                                  -- launches, NCCL's too, return when done), 0 = other; NULL unset
  nccl_profiler_api    INTEGER,   -- rankscope's NCCL profiler plugin seen in this process: the
                                  -- profiler API version NCCL used with it (5, 4); NULL: not seen
  PRIMARY KEY (node, pid)
) STRICT;
-- symbolized caller stacks, pointed to by the events' stack_id
CREATE TABLE stacks (
  id     INTEGER PRIMARY KEY,     -- xxh64 of the symbolized frames (as signed 64-bit)
  frames TEXT NOT NULL            -- one frame per line: 'symbol+0xoff (file@build_id+0xoff)'
) STRICT;
-- one row per NCCL API call: collectives, send/recv, communicator set-up
CREATE TABLE nccl_events (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,  -- call entry, wall clock
  duration_ns  INTEGER,           -- NULL while in flight at the end of recording
  pid          INTEGER NOT NULL,
  tid          INTEGER NOT NULL,
  op           TEXT NOT NULL,     -- 'ALL_REDUCE', 'ALL_GATHER', 'SEND', 'COMM_INIT', ...
  rank         INTEGER,           -- NULL when unknown (never guessed)
  nranks       INTEGER,
  comm_id_hash INTEGER,           -- splitmix64 fold of the ncclUniqueId (comm_hash.h)
  nccl_comm_hash INTEGER,         -- NCCL's commHash, as NCCL's logs and profiler plugins name
                                  -- the communicator (nccl_comm_hash.h); NULL: not derivable
  comm         INTEGER,           -- ncclComm_t pointer value in that process
  seq          INTEGER,           -- per-communicator collective number; per-peer for p2p
  count        INTEGER,
  datatype     TEXT,
  reduce_op    TEXT,
  bytes        INTEGER,
  peer         INTEGER,
  root         INTEGER,
  stream       INTEGER,
  ret          INTEGER,
  in_group     INTEGER NOT NULL DEFAULT 0,
  state        TEXT NOT NULL DEFAULT 'complete',   -- 'complete' | 'in_flight'
  stack_id     INTEGER,
  -- COMM_SPLIT that succeeded (the row's communicator is the parent): the color (-1:
  -- NCCL_SPLIT_NOCOLOR, no new communicator), the key, and which split of the parent it is
  -- (1 for the first). The merge derives the children's rank and nranks from them.
  split_color  INTEGER,
  split_key    INTEGER,
  split_seq    INTEGER
) STRICT;
-- CUDA runtime and driver API calls (kernel launches may be sampled)
CREATE TABLE cuda_events (
  id            INTEGER PRIMARY KEY,
  node          TEXT NOT NULL,
  timestamp_ns  INTEGER NOT NULL,
  duration_ns   INTEGER,
  pid           INTEGER NOT NULL,
  tid           INTEGER NOT NULL,
  api           TEXT NOT NULL,    -- function name, e.g. 'cudaMalloc', 'cuLaunchKernel'
  library       TEXT NOT NULL,    -- 'cudart' | 'cuda'
  bytes         INTEGER,
  stream        INTEGER,
  kernel        INTEGER,          -- kernel function pointer for launches
  memcpy_kind   INTEGER,
  ptr           INTEGER,
  ret           INTEGER,
  state         TEXT NOT NULL DEFAULT 'complete',
  sample_weight INTEGER NOT NULL DEFAULT 1,   -- launches sampled 1-in-N carry N
  stack_id      INTEGER
) STRICT;
-- one row per NCCL operation as the GPU ran it (rankscope's NCCL profiler plugin)
CREATE TABLE gpu_ops (
  id              INTEGER PRIMARY KEY,
  node            TEXT NOT NULL,
  timestamp_ns    INTEGER NOT NULL,  -- the host enqueued it (its API call; v4: the task), wall clock
  pid             INTEGER NOT NULL,
  tid             INTEGER,           -- the enqueuing thread (a non-blocking communicator's:
                                     -- NCCL's launch thread, not the caller)
  op              TEXT NOT NULL,     -- as nccl_events.op: 'ALL_REDUCE', ..., 'SEND', 'RECV'
  rank            INTEGER,
  nranks          INTEGER,
  comm_id_hash    INTEGER,           -- as nccl_events (NULL: communicator created unrecorded)
  nccl_comm_hash  INTEGER,           -- NCCL's own commHash (nccl_comm_hash.h)
  seq             INTEGER,           -- as nccl_events.seq: joins on (comm_id_hash, seq)
  nccl_seq        INTEGER,           -- NCCL's seqNumber (per communicator and op, from 0)
  count           INTEGER,           -- as NCCL reports it (ALL_GATHER / BROADCAST: bytes)
  datatype        TEXT,
  bytes           INTEGER,
  peer            INTEGER,           -- SEND / RECV
  root            INTEGER,           -- BROADCAST / REDUCE
  algorithm       TEXT,              -- 'RING', 'TREE', ...
  protocol        TEXT,              -- 'LL', 'LL128', 'SIMPLE'
  channels        INTEGER,
  device_start_ns INTEGER,           -- first kernel channel started on the GPU, wall clock
  device_end_ns   INTEGER,           -- last kernel channel stopped, wall clock
  clock_error_ns  INTEGER,           -- bound of the GPU -> host clock conversion; NULL: unbounded
  net_bytes_sent  INTEGER,           -- bytes NCCL's proxy sent / received over the network
  net_bytes_recv  INTEGER,
  state           TEXT NOT NULL,     -- 'enqueued' | 'started' | 'completed' (at the recording's end)
  user_tag        INTEGER,           -- profiler API v7: the call's user tag (NULL: untagged or older API)
  initial_sync_ns INTEGER,           -- v7: longest initial_sync kernel phase of its channels (device ns;
                                     -- the wait at the kernel's opening barrier); NULL: not reported
  final_sync_ns   INTEGER,           -- v7: longest final_sync phase (the closing barrier)
  kernel_symmetric INTEGER,          -- v7: 1 a symmetric-memory kernel (its initial_sync is the wait
                                     -- at a barrier with its peers), 0 another; NULL: older API
  graph_call_seq  INTEGER,           -- a CUDA graph's replay: the seq of the call captured into the
                                     -- graph (its own seq is NULL: no call of its own); NULL: none
  graph_replay_seq INTEGER,          -- a replayed collective: the communicator's replayed collectives
                                     -- counted from 1 (the same one on every rank whose capture had
                                     -- the device events); NULL: not a replay, or a send / receive
  -- NCCL's network proxy (ProxyStep states), summed over the operation's steps, host ns; all
  -- NULL where no step was timed (no network transfer, or ProxyStep events off):
  proxy_steps     INTEGER,           -- steps timed from start to stop (sends and receives)
  send_gpu_wait_ns INTEGER,          -- sends: waiting for this rank's kernel to fill the buffer
  send_peer_wait_ns INTEGER,         -- sends: waiting for the receiving peer's free buffer
  send_net_ns     INTEGER,           -- sends: on the network until completed
  recv_net_wait_ns INTEGER,          -- receives: waiting for the data (sending peer and network)
  recv_gpu_wait_ns INTEGER,          -- receives: waiting for this rank's kernel to consume it
  net_step_max_ns INTEGER,           -- the longest single send step on the network
  net_step_max_peer INTEGER          -- ... to this peer (rank in the communicator); NULL: unnamed
) STRICT;
-- TCP retransmissions
CREATE TABLE tcp_events (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,
  event        TEXT NOT NULL,     -- 'tcp_retransmit_skb'
  family       TEXT NOT NULL,     -- 'ipv4' | 'ipv6'
  saddr        TEXT NOT NULL,
  daddr        TEXT NOT NULL,
  sport        INTEGER NOT NULL,
  dport        INTEGER NOT NULL,
  seq          INTEGER,
  segments     INTEGER NOT NULL DEFAULT 1,
  state        TEXT,              -- 'ESTABLISHED', 'SYN_SENT', ...
  netns        INTEGER,
  pid          INTEGER,
  ca_state     TEXT,              -- 'Open' | 'Disorder' | 'CWR' | 'Recovery' | 'Loss'
  err          INTEGER,           -- 0 = sent, -errno = not sent; NULL: kernel < 6.17 (sent only)
  dsack_dups   INTEGER            -- segments the peer reported received twice (D-SACK) on this
                                  -- connection so far; NULL: not read (kernel < 4.19, older bundle)
) STRICT;
-- intervals a traced thread was off the CPU or waited in the run queue
CREATE TABLE sched_events (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,  -- start of the interval
  duration_ns  INTEGER NOT NULL,
  event        TEXT NOT NULL,     -- 'off_cpu' | 'runq_latency'
  pid          INTEGER NOT NULL,
  tid          INTEGER NOT NULL,
  cpu          INTEGER,
  other_pid    INTEGER,           -- the task that had the CPU
  other_tid    INTEGER,
  other_comm   TEXT
) STRICT;
-- per-CPU scheduler counters, one row per CPU and interval
CREATE TABLE sched_summary (
  node          TEXT NOT NULL,
  timestamp_ns  INTEGER NOT NULL, -- end of the interval this row summarizes
  interval_ns   INTEGER NOT NULL,
  cpu           INTEGER NOT NULL,
  switches      INTEGER NOT NULL,
  runq_count    INTEGER NOT NULL,
  runq_total_ns INTEGER NOT NULL,
  runq_max_ns   INTEGER NOT NULL
) STRICT;
-- block device I/O requests, issue to completion
CREATE TABLE block_events (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,  -- issue
  duration_ns  INTEGER,           -- issue -> complete
  dev          TEXT NOT NULL,     -- 'major:minor'
  op           TEXT NOT NULL,     -- 'read' | 'write' | 'flush' | 'discard' | 'other'
  rwbs         TEXT,
  sector       INTEGER,
  bytes        INTEGER NOT NULL,
  pid          INTEGER,
  comm         TEXT
) STRICT;
-- each node's block devices by name (block_events.dev -> 'sda', 'nvme0n1')
CREATE TABLE block_devices (
  node  TEXT NOT NULL,
  dev   TEXT NOT NULL,            -- 'major:minor', as in block_events.dev
  name  TEXT NOT NULL,            -- the kernel's name on the node ('sda', 'nvme0n1'): DEVNAME
                                  -- of /sys/dev/block/MAJ:MIN/uevent
  PRIMARY KEY (node, dev)
) STRICT;
-- the node's RDMA ports (InfiniBand, RoCE) under /sys/class/infiniband, as found at the start
CREATE TABLE rdma_ports (
  node       TEXT NOT NULL,
  device     TEXT NOT NULL,         -- 'mlx5_0': the name NCCL_IB_HCA takes and NCCL logs
                                    -- ('NET/IB : Using [0]mlx5_0:1/RoCE')
  port       INTEGER NOT NULL,      -- from 1
  link_layer TEXT,                  -- 'InfiniBand' | 'Ethernet' (RoCE)
  netdev     TEXT,                  -- its network interface ('ib0', 'ens1f0np0'), where sysfs
                                    -- names one (RoCE: GID 0's device; InfiniBand: IPoIB's)
  gid        TEXT,                  -- GID 0 (InfiniBand: the subnet prefix and port GUID)
  node_guid  TEXT,
  rate       TEXT,                  -- '200 Gb/sec (4X HDR)'
  state      TEXT,                  -- '4: ACTIVE', '1: DOWN', ...
  PRIMARY KEY (node, device, port)
) STRICT;
-- RDMA port counters read from sysfs once a second: a row at a counter's first reading,
-- whenever it changed, and at the last reading
CREATE TABLE rdma_counters (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,    -- the reading
  device       TEXT NOT NULL,       -- as rdma_ports.device
  port         INTEGER NOT NULL,
  counter      TEXT NOT NULL,       -- its sysfs file: 'symbol_error', 'link_downed',
                                    -- 'port_xmit_wait', 'out_of_sequence', 'np_cnp_sent', ...
  dir          TEXT NOT NULL,       -- 'counters' (the port's InfiniBand counters) |
                                    -- 'hw_counters' (the driver's: RoCE retries, congestion)
  value        INTEGER NOT NULL,    -- as the kernel reports it (cumulative)
  delta        INTEGER,             -- its increase since the reading at since_ns; NULL at
                                    -- the first reading and where the value went down (reset)
  since_ns     INTEGER              -- the previous reading (wall clock; NULL at the first)
) STRICT;
-- process exec and exit
CREATE TABLE process_events (
  id           INTEGER PRIMARY KEY,
  node         TEXT NOT NULL,
  timestamp_ns INTEGER NOT NULL,
  event        TEXT NOT NULL,     -- 'exec' | 'exit'
  pid          INTEGER NOT NULL,
  ppid         INTEGER,
  comm         TEXT,
  filename     TEXT,
  exit_code    INTEGER
) STRICT;
)sql";

constexpr std::string_view kMergedSql = R"sql(
-- every input the merge was given, and what it did with it
CREATE TABLE merge_inputs (
  input_id      INTEGER PRIMARY KEY,
  file          TEXT NOT NULL,
  recording_id  TEXT,
  node          TEXT,             -- node name in this db (disambiguated if needed)
  original_node TEXT,             -- node name inside the bundle
  status        TEXT NOT NULL,    -- 'merged' | 'skipped' | 'duplicate'
  reason        TEXT
) STRICT;
-- rows read, written and skipped per input and table
CREATE TABLE merge_counts (
  input_id     INTEGER NOT NULL,
  table_name   TEXT NOT NULL,
  rows_in      INTEGER NOT NULL,
  rows_out     INTEGER NOT NULL,
  rows_skipped INTEGER NOT NULL,
  PRIMARY KEY (input_id, table_name)
) STRICT;
-- how each node's clock was aligned to the reference node, with its error bound
CREATE TABLE clock_alignment (
  node             TEXT PRIMARY KEY,
  offset_ns        INTEGER NOT NULL,  -- how far this node's clock is ahead of the reference
                                      -- aligned = local - offset_ns - drift_ppm*1e-6*(local - anchor_ns)
  drift_ppm        REAL NOT NULL DEFAULT 0,
  anchor_ns        INTEGER NOT NULL DEFAULT 0,
  error_bound_ns   INTEGER NOT NULL,
  method           TEXT NOT NULL,     -- 'reference' | 'rendezvous' | 'wall_clock'
  rendezvous_count INTEGER NOT NULL DEFAULT 0,
  note             TEXT,
  evidence         TEXT               -- what the rendezvous rest on, kinds with counts:
                                      -- 'device 120, comm_init 1' ('device' | 'blocking_call' |
                                      -- 'sync_after' | 'comm_init'); NULL: none used
) STRICT;
-- whether each communicator's NCCL calls block or only enqueue, as the merge decided it before
-- aligning the clocks (rscore/call_mode.h); the report reads it rather than deciding again
CREATE TABLE call_modes (
  comm_id_hash           INTEGER PRIMARY KEY,
  mode                   TEXT NOT NULL,     -- 'blocking' | 'enqueue' | 'by_process' (a process that
                                            -- used a GPU enqueues, the others block)
  evidence               TEXT NOT NULL,     -- what decided it, one sentence
  device_calls           INTEGER NOT NULL,  -- finished calls with a bounded device start
  returned_before_device INTEGER NOT NULL,  -- ... that returned before it
  same_node_checked      INTEGER NOT NULL,  -- (node, collective) with two or more finished calls
  same_node_early_exits  INTEGER NOT NULL   -- ... where one returned before another entered
) STRICT;
-- PyTorch Flight Recorder dumps the merge read, one per rank
CREATE TABLE fr_dumps (
  input_id         INTEGER PRIMARY KEY,  -- merge_inputs.input_id of the dump file
  rank             INTEGER NOT NULL,     -- global rank: the number the file name ends in
  node             TEXT,                 -- the node whose recording saw that rank; NULL: none
  pid              INTEGER,              -- that rank's process there
  format           TEXT NOT NULL,        -- 'pickle' | 'json'
  version          TEXT NOT NULL,        -- the dump's schema version ('2.4' ... '2.10')
  comm_lib_version TEXT,                 -- NCCL's version as PyTorch reported it
  entries          INTEGER NOT NULL,     -- entries in the dump (its fr_entries rows)
  clock            TEXT NOT NULL,        -- 'aligned': times moved like the node's recording;
                                         -- 'unaligned': the host's wall clock as written
  pg_status        TEXT,                 -- per process group id: last enqueued, started and
                                         -- completed collective (JSON)
  nccl_comm_state  TEXT,                 -- NCCL's communicator dump, where present (JSON)
  backend          TEXT,                 -- who recorded it, from the profiling names: 'nccl' |
                                         -- 'gloo' | another prefix | 'mixed'; NULL: no entry says
  timing           TEXT,                 -- what 'started' can mean: 'on' (NCCL start events:
                                         -- started states and durations exist) | 'off' (none:
                                         -- entries go scheduled -> completed) | 'partial' |
                                         -- 'unknown' | 'none' (gloo: no events, every entry
                                         -- stays scheduled, retired = done, finished or failed)
  first_record_id  INTEGER,              -- record_id of the first entry kept (oldest)
  last_record_id   INTEGER,              -- ... of the last
  ring             TEXT                  -- 'complete' (ids from 0, no gap) | 'wrapped' (entries
                                         -- before first_record_id overwritten by the ring of
                                         -- TORCH_FR_BUFFER_SIZE) | 'filtered' (gaps: only some
                                         -- dumped); NULL: no record ids
) STRICT;
-- process groups of the Flight Recorder dumps and the recorded NCCL communicator of each
CREATE TABLE process_groups (
  id           INTEGER PRIMARY KEY,
  pg_name      TEXT NOT NULL,     -- FR's process group name ('0', '1', a split group's hash)
  pg_desc      TEXT,              -- its description ('default_pg', 'undefined', the user's)
  ranks        TEXT NOT NULL,     -- its global ranks (JSON list)
  size         INTEGER NOT NULL,
  comm_id_hash INTEGER,           -- the recorded communicator over the same ranks
  match        TEXT NOT NULL,     -- 'recorded' (comm_id_hash set) | 'fr_only' (no recorded
                                  -- communicator fits) | 'ambiguous' (several fit)
  members      TEXT,              -- where ranks comes from: 'listed' (pg_config under its
                                  -- name) | 'default_group' (gloo's unnamed pg_config entry,
                                  -- tied by pg_id 0 and 'default_pg') | 'unknown' (no dump
                                  -- lists it: ranks is [], size 0)
  ranks_seen   TEXT               -- global ranks whose dumps hold entries of it (JSON list)
) STRICT;
-- one row per Flight Recorder entry: an operation of a process group as PyTorch saw it
CREATE TABLE fr_entries (
  id                           INTEGER PRIMARY KEY,
  input_id                     INTEGER NOT NULL,  -- fr_dumps.input_id
  rank                         INTEGER NOT NULL,  -- global rank
  node                         TEXT,              -- as fr_dumps.node
  pg                           INTEGER NOT NULL,  -- process_groups.id
  comm_id_hash                 INTEGER,           -- process_groups.comm_id_hash (joins nccl_events)
  seq                          INTEGER NOT NULL,  -- collective_seq_id; p2p_seq_id for send/recv
  is_p2p                       INTEGER NOT NULL,
  op                           TEXT NOT NULL,     -- as nccl_events.op: 'ALL_REDUCE', 'SEND', ...
  profiling_name               TEXT NOT NULL,     -- FR's: 'nccl:all_reduce', 'nccl:send 0->1'
  src                          INTEGER,           -- send/recv: group rank of the sender
  dst                          INTEGER,           -- ... and of the receiver
  state                        TEXT NOT NULL,     -- 'enqueued' (FR: scheduled) | 'started' |
                                                  -- 'completed', when the dump was written;
                                                  -- read with fr_dumps.timing
  timestamp_ns                 INTEGER NOT NULL,  -- time_created_ns: the host enqueued it
  time_discovered_started_ns   INTEGER,           -- PyTorch's watchdog saw it started (late by
                                                  -- up to its poll interval)
  time_discovered_completed_ns INTEGER,           -- ... saw it completed
  duration_ns                  INTEGER,           -- device time (TORCH_NCCL_ENABLE_TIMING=1 only)
  timeout_ms                   INTEGER,
  retired                      INTEGER,           -- PyTorch stopped watching it (NCCL: 1 and
                                                  -- not completed: it timed out; gloo: 1 =
                                                  -- done, finished or failed alike)
  record_id                    INTEGER,
  pg_id                        INTEGER,           -- the process's own number of the group
  op_id                        INTEGER,
  count                        INTEGER,           -- elements over all inputs
  datatype                     TEXT,              -- the first input's, as nccl_events.datatype
  input_sizes                  TEXT,              -- shapes (JSON)
  input_dtypes                 TEXT,              -- PyTorch's names (JSON)
  output_sizes                 TEXT,
  output_dtypes                TEXT,
  thread_id                    TEXT,
  thread_name                  TEXT,
  stack_id                     INTEGER,           -- stacks.id: the Python stack
  local_timestamp_ns           INTEGER            -- time_created_ns as the dump wrote it
) STRICT;
)sql";

// The column a merged db adds to every event table (CreateSchema adds it without the comment).
constexpr std::string_view kLocalTimestampColumn =
    "local_timestamp_ns INTEGER  -- timestamp_ns as the node's own clock gave it, before alignment";

}  // namespace rs::schema_sql

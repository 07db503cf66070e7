/* The plugin <-> recorder ABI of GPU-side operation records (the `gpu` family: this header,
 * recorder/plugin/gpu_plugin.c, recorder/gpu_probe.cc, table gpu_ops).
 *
 * rankscope's NCCL profiler plugin (libnccl-profiler-rankscope.so, loaded by NCCL inside the
 * training process) keeps one shared-memory region per process: a memfd named
 * RS_GPU_RING_NAME, mapped MAP_SHARED and kept open (close-on-exec), so that it shows in
 * /proc/PID/fd and /proc/PID/maps as "/memfd:rankscope-gpu (deleted)" and disappears with the
 * process. The recorder finds it there, maps it too, and is its only reader. The memfd is
 * sealed (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) before it is mapped: the recorder, which
 * runs as root among other users' processes, maps only a region that can never shrink under
 * it, owned by the user of the process that holds it, and bounds every count and index it
 * reads from it (recorder/gpu_ring_reader.h, gpu_ring_view.h). Layout:
 *
 *   struct rs_gpu_ring_header                    (RS_GPU_HEADER_BYTES)
 *   struct rs_gpu_op slots[header.slot_count]    operations in flight (stamp != 0)
 *   struct rs_gpu_op ring[header.ring_records]   finished records, a ring
 *
 * An operation is one collective or send/receive as NCCL launched it. Its slot is filled from
 * NCCL's events (Coll/P2p on the host thread, KernelCh and ProxyOp/ProxyStep on NCCL's proxy
 * thread); when its last kernel channel stopped and its network work ended, or when its
 * communicator is finalized, it is copied into the ring and the slot is freed. The recorder
 * reads the ring as it fills and, when recording ends, the slots: operations enqueued or
 * started but not completed (a hang).
 *
 * Ring protocol (several writers, one reader, the writer never waits):
 *   writer: i = fetch_add(&head, 1); r = &ring[i % ring_records];
 *           store(&r->stamp, 0, release); write the fields; store(&r->stamp, i + 1, release)
 *   reader: for i from its tail while i < load(&head, acquire):
 *           s = load(&r->stamp, acquire); copy; fence(acquire); s2 = load(&r->stamp)
 *           s == s2 == i + 1: record i;  s > i + 1 or (s2 != s): overwritten (a drop, counted);
 *           s == 0 or s < i + 1: not written yet (read again at the next poll)
 * The reader never writes a record; it writes only `reader_heartbeat_ns`, which tells the
 * plugin that a recorder is reading (the plugin asks NCCL for device-side events only then).
 *
 * Times: CLOCK_MONOTONIC nanoseconds of the host (the recorder's BPF clock). Device times are
 * the GPU's globaltimer (the `*_raw` fields) converted by the plugin to that clock; see
 * gpu_clock.c for the calibration and `clock_error_ns` for its bound.
 *
 * Versioning: RS_GPU_RING_VERSION changes whenever a struct here changes layout or a field its
 * meaning; the recorder reads only the version it was built with (and says so in the bundle).
 * C (the plugin is C, libc only) and C++ (the recorder). */
#ifndef RANKSCOPE_GPU_RING_H_
#define RANKSCOPE_GPU_RING_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RS_GPU_RING_NAME "rankscope-gpu"
#define RS_GPU_RING_MAGIC 0x53504f5550475352ULL /* "RSGPUOPS" little-endian */
#define RS_GPU_RING_VERSION 5
#define RS_GPU_HEADER_BYTES 4096
#define RS_GPU_SLOT_COUNT 1024   /* operations in flight per process */
#define RS_GPU_RING_RECORDS 8192 /* finished records kept for the reader */
/* A recorder whose heartbeat is older than this is gone: device-side events are switched
 * off again. */
#define RS_GPU_READER_TIMEOUT_NS 2000000000LL
/* The startup window: from the region's creation (the process's first communicator) until
 * the header's startup_until_ns, the plugin records as if a reader were present, as long as
 * none ever was. A recorder started with the job finds the region only at its next rescan
 * (every 500 ms); a short job, or the first steps of a long one, would otherwise go unseen.
 * A reader that opens a region no reader has read yet starts at the ring's beginning and
 * keeps what the recording window saw. Milliseconds; the environment variable
 * RANKSCOPE_PLUGIN_STARTUP_MS of the training process overrides it (0: no window). */
#define RS_GPU_STARTUP_WINDOW_MS 5000

/* The operation: NCCL's ncclFunc_t numbering (0-4 collectives, 6 send, 7 receive). */
enum rs_gpu_func {
  RS_GPU_BROADCAST = 0,
  RS_GPU_REDUCE = 1,
  RS_GPU_ALL_GATHER = 2,
  RS_GPU_REDUCE_SCATTER = 3,
  RS_GPU_ALL_REDUCE = 4,
  RS_GPU_SEND = 6,
  RS_GPU_RECV = 7,
  RS_GPU_FUNC_UNKNOWN = 255
};

/* Data types: NCCL's ncclDataType_t values (ncclInt8 = 0 ... ncclFloat8e5m2 = 11). */
#define RS_GPU_DATATYPE_UNKNOWN 255

enum rs_gpu_algo {
  RS_GPU_ALGO_UNKNOWN = 0,
  RS_GPU_ALGO_TREE = 1,
  RS_GPU_ALGO_RING = 2,
  RS_GPU_ALGO_COLLNET_DIRECT = 3,
  RS_GPU_ALGO_COLLNET_CHAIN = 4,
  RS_GPU_ALGO_NVLS = 5,
  RS_GPU_ALGO_NVLS_TREE = 6,
  RS_GPU_ALGO_PAT = 7
};

enum rs_gpu_proto {
  RS_GPU_PROTO_UNKNOWN = 0,
  RS_GPU_PROTO_LL = 1,
  RS_GPU_PROTO_LL128 = 2,
  RS_GPU_PROTO_SIMPLE = 3
};

/* How far the operation got, as the plugin last saw it. */
enum rs_gpu_state {
  RS_GPU_ENQUEUED = 1, /* launched onto its stream; no kernel channel started yet */
  RS_GPU_STARTED = 2,  /* a kernel channel started on the device */
  RS_GPU_COMPLETED = 3 /* every kernel channel stopped */
};

/* Flags of a record. */
/* seq counted in launch order (profiler API v4: no API events), not in call order */
#define RS_GPU_SEQ_LAUNCH_ORDER (1u << 0)
/* written when its communicator was finalized */
#define RS_GPU_FINALIZED (1u << 1)
/* no upper bound of the device-host offset yet */
#define RS_GPU_CLOCK_UNBOUNDED (1u << 2)
/* a channel stopped (or a kernel phase ended) at a device time before its start: that time is
 * not used (no end, no clock sample, no phase length) */
#define RS_GPU_DEVICE_TIME_BACKWARDS (1u << 3)
/* v7: its channels reported kernel phases; the sync fields hold their longest (0: none of that
 * phase, which NCCL reports only when it lasted) */
#define RS_GPU_KERNEL_PHASES (1u << 4)
/* made from a v7 Coll / P2p event: user_tag and the kernel's kind below are known */
#define RS_GPU_V7_TASK (1u << 5)
/* v7: NCCL ran it with a symmetric-memory kernel, whose initial_sync phase ends when its
 * opening barrier with its peers passed */
#define RS_GPU_SYMMETRIC_KERNEL (1u << 6)
/* an operation of a CUDA graph's replay: its call was captured into the graph (NCCL's
 * graphCaptured), and NCCL starts its Coll / P2p event, with the captured call's API event as
 * parent, each time the graph runs (enqueue.cc, hostStreamPlanTask from the graph's host node).
 * No API call of its own: api_ns 0; seq counts the communicator's replayed collectives from 1
 * (0: a send / receive, not numbered), graph_call_seq names the captured call */
#define RS_GPU_GRAPH_REPLAY (1u << 7)
/* some of its proxy steps were not timed: their timing entry was taken by a later step
 * before they ended (more than RS_GPU_STEP_ENTRIES steps in flight in the process) */
#define RS_GPU_PROXY_TIMES_PARTIAL (1u << 8)

struct rs_gpu_op {
  uint64_t stamp;            /* ring: index + 1 once complete; slot: non-zero while in use */
  uint64_t nccl_comm_hash;   /* NCCL's commHash (init's commId) */
  uint64_t seq;              /* per communicator from 1: collectives in call order (as
                              * nccl_events.seq), send/receive per peer and direction */
  uint64_t nccl_seq;         /* NCCL's seqNumber (per communicator and function, from 0);
                              * UINT64_MAX for send/receive (NCCL numbers none) */
  int64_t enqueue_ns;        /* host: the Coll/P2p event (NCCL launched the task) */
  int64_t api_ns;            /* host: the CollApi/P2pApi event (the API call); 0: not seen */
  int64_t device_start_ns;   /* first channel's kernel start, host clock; 0: not started */
  int64_t device_end_ns;     /* last channel's stop, host clock; 0: not completed */
  uint64_t device_start_raw; /* the same as the device's globaltimer */
  uint64_t device_end_raw;
  int64_t clock_error_ns;  /* the conversion's error bound (see the flag CLOCK_UNBOUNDED) */
  uint64_t count;          /* elements, as NCCL reports them (AllGather/Broadcast: bytes) */
  uint64_t net_bytes_sent; /* bytes the proxy sent over the network (ProxyStep sizes) */
  uint64_t net_bytes_recv; /* bytes the proxy received */
  uint64_t user_tag;       /* v7: the call's ncclCollConfig_t.userProfilerTag; 0: untagged */
  int64_t initial_sync_ns; /* v7 (RS_GPU_KERNEL_PHASES): the longest initial_sync phase of its
                            * channels, device ns, no clock conversion involved. A symmetric
                            * kernel's (RS_GPU_SYMMETRIC_KERNEL) ends when its opening barrier
                            * with its peers passed: how long it waited for them. NCCL 2.31's
                            * other kernels (src/device/common.h, ncclKernelMain) end it once
                            * their work is loaded, before any exchange: no wait for a peer */
  int64_t final_sync_ns;   /* v7: the longest final_sync phase (the closing barrier) */
  /* NCCL's network proxy (ProxyStep states, net.cc sendProxyProgress / recvProxyProgress),
   * summed over the operation's steps on every channel and peer, host ns (gpu_proxy.c). A
   * send step: from its buffer handed to the kernel until the kernel filled it (SendGPUWait
   * -> the first SendPeerWait), until the receiving peer's buffer was free so the network
   * took it (-> SendWait), until the network completed it (-> stop). A receive step: from
   * posted until its data arrived in device memory (RecvWait -> RecvGPUWait, NCCL's flush
   * included), until the kernel consumed it (-> stop). */
  int64_t send_gpu_wait_ns;  /* the proxy waited for this rank's kernel */
  int64_t send_peer_wait_ns; /* ... for the receiving peer */
  int64_t send_net_ns;       /* ... for the network to complete the send */
  int64_t recv_net_wait_ns;  /* ... for the sending peer's data (its kernel, its proxy, the
                              * network) */
  int64_t recv_gpu_wait_ns;  /* ... for this rank's kernel to consume received data */
  int64_t net_step_max_ns;   /* the longest single send step on the network */
  int32_t rank;
  int32_t nranks;
  int32_t peer;     /* send/receive: the peer; Broadcast/Reduce: the root; else -1 */
  int32_t tid;      /* the host thread that enqueued it */
  uint8_t func;     /* enum rs_gpu_func */
  uint8_t datatype; /* ncclDataType_t */
  uint8_t algo;     /* enum rs_gpu_algo */
  uint8_t proto;    /* enum rs_gpu_proto */
  uint8_t state;    /* enum rs_gpu_state */
  uint8_t channels; /* channels NCCL planned (the descriptor's nChannels) */
  uint8_t channels_started;
  uint8_t channels_stopped;
  uint32_t flags;          /* RS_GPU_* flags */
  uint32_t graph_call_seq; /* RS_GPU_GRAPH_REPLAY: the captured call's number (as seq numbers
                            * calls; 0 past 2^32 - 1) */
  uint32_t proxy_steps;    /* steps timed from start to stop (send and receive) */
  int32_t net_step_max_peer; /* the peer of net_step_max_ns's step; -1: none (or not named:
                              * peers past rank 4094, gpu_proxy.c) */
};

struct rs_gpu_ring_header {
  uint64_t magic;        /* RS_GPU_RING_MAGIC */
  uint32_t version;      /* RS_GPU_RING_VERSION */
  uint32_t header_bytes; /* RS_GPU_HEADER_BYTES */
  uint32_t record_bytes; /* sizeof(struct rs_gpu_op) */
  uint32_t slot_count;
  uint32_t ring_records;
  int32_t pid;         /* the process that created the region */
  int32_t api_version; /* the profiler API NCCL uses with the plugin: 7, 6, 5 or 4 (0 before
                        * init) */
  uint32_t proxy_times_off; /* 1: RANKSCOPE_PLUGIN_PROXY_TIMES=0 when the region was made, no
                             * proxy step is timed (the proxy sums stay 0) */
  uint64_t head;               /* records written to the ring (atomic) */
  int64_t reader_heartbeat_ns; /* written by the recorder at every read (atomic) */
  uint64_t ops;                /* operations the plugin saw launched (atomic) */
  uint64_t ops_unrecorded;     /* of them, launched while no recorder read (not in the ring) */
  uint64_t drops_slots_full;   /* operations not recorded: every slot was in use */
  uint64_t drops_late_event;   /* device events for an operation already written */
  uint64_t comms;              /* communicators initialized */
  char plugin_version[32];     /* the plugin's own version string */
  int64_t created_ns;          /* when the plugin made the region */
  int64_t startup_until_ns;    /* end of the startup window (RS_GPU_STARTUP_WINDOW_MS); 0: none */
  uint64_t ops_copy_engine;    /* v6+: collectives NCCL ran on the copy engines (CeColl events):
                                * counted, not recorded -- the profiler API gives them no device
                                * time (atomic) */
  uint64_t graph_calls;        /* API calls NCCL said were captured into a CUDA graph (atomic) */
  uint64_t graph_calls_unrecorded; /* of them, captured while NCCL's mask lacked the device
                                    * events: their replays are neither recorded nor numbered,
                                    * so the replay numbers of this process and of one whose
                                    * calls were captured with them may differ (atomic) */
  uint64_t graph_replay_ops;       /* operations of graph replays (counted in ops too; atomic) */
};

#define RS_GPU_REGION_BYTES(slots, records)                                       \
  ((uint64_t)RS_GPU_HEADER_BYTES + (uint64_t)(slots) * sizeof(struct rs_gpu_op) + \
   (uint64_t)(records) * sizeof(struct rs_gpu_op))

#ifdef __cplusplus
static_assert(sizeof(struct rs_gpu_op) == 224, "rs_gpu_op layout");
static_assert(sizeof(struct rs_gpu_ring_header) <= RS_GPU_HEADER_BYTES, "header fits");
} /* extern "C" */
#else
_Static_assert(sizeof(struct rs_gpu_op) == 224, "rs_gpu_op layout");
_Static_assert(sizeof(struct rs_gpu_ring_header) <= RS_GPU_HEADER_BYTES, "header fits");
#endif

#endif /* RANKSCOPE_GPU_RING_H_ */

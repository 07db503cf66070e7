/* NCCL's event activation mask, switched between two values:
 *   base: what the plugin needs to number operations (v5+: Coll, P2p, CollApi, P2pApi,
 *         KernelLaunch; v4: Coll, P2p), and v6+'s CeColl (copy-engine collectives, counted)
 *         -- always on, so sequence numbers stay exact;
 *   full: base + KernelCh, ProxyOp, ProxyStep (v7: + KernelPhase) -- while a recorder reads
 *         the region.
 * NCCL reads the mask once per API call (v5: when the call starts; v4: when the call appends
 * its task) and gives that task's device events only if the value it read had them. An
 * operation is recorded only if its device events will come (else its slot would wait for
 * them until the communicator ends), so the plugin must know which value NCCL read. It knows
 * it exactly: every switch moves an epoch (odd while switching), every host-thread callback
 * notes the epoch it saw, and if the epoch did not move between the callback before NCCL's
 * read and the callback that learns what the read was for (v5+: the call's CollApi / P2pApi
 * event; v4: the launch's Group event), NCCL read the value the plugin has now. No callback
 * in between may note the epoch (v5's GroupApi event comes between: it is left out). If the
 * epoch moved, the operation is counted as unrecorded (the first one of a thread after a
 * switch, at most). */
#ifndef RANKSCOPE_GPU_MASK_H_
#define RANKSCOPE_GPU_MASK_H_

/* At init: NCCL's mask variable (one per NCCL library in the process) gets the current
 * value; the first init chooses base and full by the API version (5 or 4). */
void rs_gpu_mask_init(int* nccl_mask, int api_version);
/* Host paths: switch to full (a reader is present) or back to base. Never waits. */
void rs_gpu_mask_want_full(int full);
/* First and last thing of every callback NCCL makes on a host thread (but v5's GroupApi). */
void rs_gpu_mask_enter(void);
void rs_gpu_mask_leave(void);
/* v5, at CollApi / P2pApi start: the mask NCCL read for this call had the device events. */
int rs_gpu_mask_call_full(void);
/* v4, at the Group start: the same for the plan's tasks (read at their calls); and its value
 * at the plan's Coll / P2p starts. */
void rs_gpu_mask_plan_begin(void);
int rs_gpu_mask_plan_full(void);
/* The value in effect (for tests and the benchmark). */
int rs_gpu_mask_current(void);
/* In the child after fork: starts over (the calling thread is the only one). */
void rs_gpu_mask_forget(void);

#endif /* RANKSCOPE_GPU_MASK_H_ */

/* The event handles the plugin gives NCCL: no allocation, only values. NCCL keeps a handle,
 * passes it back as the parent of later events and to stopEvent / recordEventState, and never
 * reads through it. Bit 63 is set in every handle (no user-space pointer has it), the next
 * three bits name the kind, and the rest says what the handle stands for:
 *   API kinds (CollApi, P2pApi): the call's number in its communicator, whether NCCL's
 *     activation mask for the call certainly had the device events (gpu_mask.h), and whether
 *     the call was captured into a CUDA graph (its operations come at each of the graph's
 *     replays, with this handle as their parent);
 *   slot kinds (the operation, its kernel channels, proxy operations and steps): the slot
 *     index and the slot's generation when the operation was enqueued, so an event for an
 *     operation already written (the slot free or reused) is recognised (gpu_slots.h). */
#ifndef RANKSCOPE_GPU_HANDLE_H_
#define RANKSCOPE_GPU_HANDLE_H_

#include <stdint.h>

enum rs_gpu_handle_kind {
  RS_GPU_H_NONE = 0, /* not one of ours (NULL, or another plugin's value) */
  RS_GPU_H_COLL_API = 1,
  RS_GPU_H_P2P_API = 2,
  RS_GPU_H_TASK = 3, /* the Coll / P2p event: the operation itself */
  RS_GPU_H_KERNEL_CH = 4,
  RS_GPU_H_PROXY_OP = 5,
  RS_GPU_H_PROXY_STEP = 6,
  RS_GPU_H_KERNEL_PHASE = 7 /* v7: a phase of a kernel channel (its phase in bits 48-49) */
};

#define RS_GPU_H_MARK (1ull << 63)
#define RS_GPU_H_KIND_SHIFT 60
#define RS_GPU_H_API_FULL (1ull << 59)  /* API kinds: the call's mask had the device events */
#define RS_GPU_H_API_GRAPH (1ull << 58) /* API kinds: NCCL said graphCaptured */
#define RS_GPU_H_API_NUMBER_MASK ((1ull << 58) - 1)

static inline void* rs_gpu_handle_make(enum rs_gpu_handle_kind kind, uint64_t payload) {
  return (void*)(uintptr_t)(RS_GPU_H_MARK | ((uint64_t)kind << RS_GPU_H_KIND_SHIFT) | payload);
}

static inline enum rs_gpu_handle_kind rs_gpu_handle_kind(const void* h) {
  uint64_t v = (uint64_t)(uintptr_t)h;
  if ((v & RS_GPU_H_MARK) == 0) return RS_GPU_H_NONE;
  return (enum rs_gpu_handle_kind)((v >> RS_GPU_H_KIND_SHIFT) & 7);
}

static inline uint64_t rs_gpu_handle_payload(const void* h) {
  return (uint64_t)(uintptr_t)h & ((1ull << RS_GPU_H_KIND_SHIFT) - 1);
}

/* API handles: number (from 1), the mask bit and the graph bit. */
static inline void* rs_gpu_api_handle(enum rs_gpu_handle_kind kind, uint64_t number, int full,
                                      int graph) {
  return rs_gpu_handle_make(kind, (number & RS_GPU_H_API_NUMBER_MASK) |
                                      (full ? RS_GPU_H_API_FULL : 0) |
                                      (graph ? RS_GPU_H_API_GRAPH : 0));
}

/* Slot handles: slot index (bits 32-47) and the slot's generation (bits 0-31). */
static inline void* rs_gpu_slot_handle(enum rs_gpu_handle_kind kind, uint32_t index, uint32_t gen) {
  return rs_gpu_handle_make(kind, ((uint64_t)(index & 0xffff) << 32) | gen);
}
static inline uint32_t rs_gpu_handle_slot(const void* h) {
  return (uint32_t)((rs_gpu_handle_payload(h) >> 32) & 0xffff);
}
static inline uint32_t rs_gpu_handle_gen(const void* h) {
  return (uint32_t)rs_gpu_handle_payload(h);
}
/* Kernel phase handles: a slot handle with the phase (0-3) in bits 48-49. */
static inline void* rs_gpu_phase_handle(const void* channel, uint32_t phase) {
  return rs_gpu_handle_make(
      RS_GPU_H_KERNEL_PHASE,
      (rs_gpu_handle_payload(channel) & ((1ull << 48) - 1)) | ((uint64_t)(phase & 3) << 48));
}
static inline uint32_t rs_gpu_handle_phase(const void* h) {
  return (uint32_t)((rs_gpu_handle_payload(h) >> 48) & 3);
}

#endif /* RANKSCOPE_GPU_HANDLE_H_ */

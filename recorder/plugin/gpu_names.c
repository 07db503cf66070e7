#include "recorder/plugin/gpu_names.h"

#include <stddef.h>
#include <string.h>

#include "recorder/plugin/gpu_ring.h"

struct name_value {
  const char* name;
  uint8_t value;
};

static uint8_t lookup(const struct name_value* table, size_t n, const char* name, uint8_t unknown) {
  if (name == NULL) return unknown;
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(table[i].name, name) == 0) return table[i].value;
  }
  return unknown;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

uint8_t rs_gpu_func_of(const char* name) {
  static const struct name_value funcs[] = {{"AllReduce", RS_GPU_ALL_REDUCE},
                                            {"AllGather", RS_GPU_ALL_GATHER},
                                            {"ReduceScatter", RS_GPU_REDUCE_SCATTER},
                                            {"Broadcast", RS_GPU_BROADCAST},
                                            {"Reduce", RS_GPU_REDUCE},
                                            {"Send", RS_GPU_SEND},
                                            {"Recv", RS_GPU_RECV}};
  return lookup(funcs, COUNT(funcs), name, RS_GPU_FUNC_UNKNOWN);
}

/* ncclDataType_t's values. NCCL 2.28 names ncclUint8 "Unknown" (its table lacks the entry):
 * such an operation is recorded with RS_GPU_DATATYPE_UNKNOWN. */
uint8_t rs_gpu_datatype_of(const char* name) {
  static const struct name_value types[] = {
      {"ncclInt8", 0},    {"ncclUint8", 1},    {"ncclInt32", 2},       {"ncclUint32", 3},
      {"ncclInt64", 4},   {"ncclUint64", 5},   {"ncclFloat16", 6},     {"ncclFloat32", 7},
      {"ncclFloat64", 8}, {"ncclBfloat16", 9}, {"ncclFloat8e4m3", 10}, {"ncclFloat8e5m2", 11}};
  return lookup(types, COUNT(types), name, RS_GPU_DATATYPE_UNKNOWN);
}

uint8_t rs_gpu_algo_of(const char* name) {
  static const struct name_value algos[] = {{"TREE", RS_GPU_ALGO_TREE},
                                            {"RING", RS_GPU_ALGO_RING},
                                            {"COLLNET_DIRECT", RS_GPU_ALGO_COLLNET_DIRECT},
                                            {"COLLNET_CHAIN", RS_GPU_ALGO_COLLNET_CHAIN},
                                            {"NVLS", RS_GPU_ALGO_NVLS},
                                            {"NVLS_TREE", RS_GPU_ALGO_NVLS_TREE},
                                            {"PAT", RS_GPU_ALGO_PAT}};
  return lookup(algos, COUNT(algos), name, RS_GPU_ALGO_UNKNOWN);
}

uint8_t rs_gpu_proto_of(const char* name) {
  static const struct name_value protos[] = {
      {"LL", RS_GPU_PROTO_LL}, {"LL128", RS_GPU_PROTO_LL128}, {"SIMPLE", RS_GPU_PROTO_SIMPLE}};
  return lookup(protos, COUNT(protos), name, RS_GPU_PROTO_UNKNOWN);
}

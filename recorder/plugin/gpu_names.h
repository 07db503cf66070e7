/* NCCL's names in profiler events, as the numbers of a record (gpu_ring.h): NCCL passes the
 * function, datatype, algorithm and protocol as strings (ncclFuncToString,
 * ncclDatatypeToString, ncclAlgoToString, ncclProtoToString of NCCL 2.27 / 2.28). A name NCCL
 * may add later maps to the "unknown" value of its field. */
#ifndef RANKSCOPE_GPU_NAMES_H_
#define RANKSCOPE_GPU_NAMES_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

uint8_t rs_gpu_func_of(const char* name);     /* enum rs_gpu_func */
uint8_t rs_gpu_datatype_of(const char* name); /* ncclDataType_t, RS_GPU_DATATYPE_UNKNOWN */
uint8_t rs_gpu_algo_of(const char* name);     /* enum rs_gpu_algo */
uint8_t rs_gpu_proto_of(const char* name);    /* enum rs_gpu_proto */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RANKSCOPE_GPU_NAMES_H_ */

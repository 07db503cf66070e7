/* A plugin library that exports only one version of rankscope's plugin, ncclProfiler_vN
 * (N = RS_SHIM_VERSION, 4 by default): a copy of the plugin's table of that version (the
 * plugin RS_GPU_PLUGIN names) made when it is loaded. NCCL's loader takes the newest version a
 * plugin exports, so a shim makes NCCL drive the plugin through version N: the test bed's
 * library through v4 (NCCL 2.27's interface), and on a GPU node every version the node's NCCL
 * offers (tests/gpu/check_real_nccl.sh). */
#include <dlfcn.h>
#include <stdlib.h>

#include "rscore/nccl_profiler.h"

#ifndef RS_SHIM_VERSION
#define RS_SHIM_VERSION 4
#endif
#define RS_CAT(a, b) a##b
#define RS_XCAT(a, b) RS_CAT(a, b)
#define RS_STR(a) #a
#define RS_XSTR(a) RS_STR(a)
#define RS_TABLE RS_XCAT(ncclProfiler_v, RS_SHIM_VERSION)

__attribute__((visibility("default"))) RS_XCAT(RS_TABLE, _t) RS_TABLE;

__attribute__((constructor)) static void copy_table(void) {
  const char* path = getenv("RS_GPU_PLUGIN");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  const RS_XCAT(RS_TABLE, _t)* table = lib != NULL ? dlsym(lib, RS_XSTR(RS_TABLE)) : NULL;
  if (table != NULL) RS_TABLE = *table;
}

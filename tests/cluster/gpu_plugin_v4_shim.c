/* The test bed's NCCL library takes a plugin's ncclProfiler_v5 when it has one. To run
 * rankscope's plugin through the library's v4 path (NCCL 2.27's interface), this library
 * exports only ncclProfiler_v4: a copy of the plugin's (RS_GPU_PLUGIN names it) made when it
 * is loaded. */
#include <dlfcn.h>
#include <stdlib.h>

#include "rscore/nccl_profiler.h"

__attribute__((visibility("default"))) ncclProfiler_v4_t ncclProfiler_v4;

__attribute__((constructor)) static void copy_table(void) {
  const char* path = getenv("RS_GPU_PLUGIN");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  const ncclProfiler_v4_t* v4 = lib != NULL ? dlsym(lib, "ncclProfiler_v4") : NULL;
  if (v4 != NULL) ncclProfiler_v4 = *v4;
}

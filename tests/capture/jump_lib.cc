// A library with two NCCL entry points for the capture tests of abandoned calls:
// ncclGroupStart waits until a signal arrives (the test's handler jumps out of it with
// siglongjmp, so it never returns), ncclGroupEnd returns at once. Attached with --nccl-lib
// (its functions make it an NCCL library).
#include <unistd.h>

extern "C" __attribute__((visibility("default"), noinline)) int ncclGroupStart() {
  for (;;) pause();
}

extern "C" __attribute__((visibility("default"), noinline)) int ncclGroupEnd() { return 0; }

#define _GNU_SOURCE
#include "recorder/plugin/gpu_region.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef RANKSCOPE_VERSION
#define RANKSCOPE_VERSION "unknown"
#endif

static pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static void* g_base;                        /* the mapping; NULL: none */
static struct rs_gpu_ring_header* g_header; /* atomic: published once filled in */
static uint64_t g_generation;               /* atomic */

static const size_t kRegionBytes = RS_GPU_REGION_BYTES(RS_GPU_SLOT_COUNT, RS_GPU_RING_RECORDS);

int64_t rs_gpu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct rs_gpu_op* ops(void) {
  return (struct rs_gpu_op*)((char*)g_base + RS_GPU_HEADER_BYTES);
}

/* RS_GPU_STARTUP_WINDOW_MS, or the process's RANKSCOPE_PLUGIN_STARTUP_MS (whole milliseconds,
 * at most a day; anything else is ignored). */
static int64_t startup_window_ns(void) {
  int64_t ms = RS_GPU_STARTUP_WINDOW_MS;
  const char* env = getenv("RANKSCOPE_PLUGIN_STARTUP_MS");
  if (env != NULL && *env != '\0') {
    char* end = NULL;
    errno = 0;
    const long long v = strtoll(env, &end, 10);
    if (errno == 0 && end != NULL && *end == '\0' && v >= 0 && v <= 86400000LL) ms = v;
  }
  return ms * 1000000;
}

/* memfd, size, seals, mapping, header; the magic is written last, so a reader that maps the
 * region meanwhile refuses it ("not initialized yet") instead of reading half a header.
 * Sealed before it is mapped (so before /proc/PID/maps shows it), against shrinking and
 * growing, and against further seals: the recorder maps only regions that can never shrink
 * (a truncated mapping raises SIGBUS in every process that touches it) and refuses any other
 * (gpu_ring.h). */
static struct rs_gpu_ring_header* create(void) {
  const int fd = memfd_create(RS_GPU_RING_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return NULL;
  if (ftruncate(fd, (off_t)kRegionBytes) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return NULL;
  }
  void* base = mmap(NULL, kRegionBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    errno = err;
    return NULL;
  }
  struct rs_gpu_ring_header* h = (struct rs_gpu_ring_header*)base; /* zeroed by ftruncate */
  h->version = RS_GPU_RING_VERSION;
  h->header_bytes = RS_GPU_HEADER_BYTES;
  h->record_bytes = sizeof(struct rs_gpu_op);
  h->slot_count = RS_GPU_SLOT_COUNT;
  h->ring_records = RS_GPU_RING_RECORDS;
  h->pid = (int32_t)getpid();
  strncpy(h->plugin_version, "rankscope " RANKSCOPE_VERSION, sizeof(h->plugin_version) - 1);
  h->created_ns = rs_gpu_now_ns();
  const char* times = getenv("RANKSCOPE_PLUGIN_PROXY_TIMES");
  h->proxy_times_off = times != NULL && strcmp(times, "0") == 0;
  const int64_t window = startup_window_ns();
  h->startup_until_ns = window > 0 ? h->created_ns + window : 0;
  __atomic_store_n(&h->magic, RS_GPU_RING_MAGIC, __ATOMIC_RELEASE);
  g_fd = fd;
  g_base = base;
  return h;
}

struct rs_gpu_ring_header* rs_gpu_region_open(void (*on_create)(void)) {
  struct rs_gpu_ring_header* h = __atomic_load_n(&g_header, __ATOMIC_ACQUIRE);
  if (h != NULL) return h;
  pthread_mutex_lock(&g_open_mu);
  h = g_header;
  if (h == NULL) {
    h = create();
    if (h != NULL) {
      if (on_create != NULL) on_create();
      __atomic_store_n(&g_header, h, __ATOMIC_RELEASE);
    }
  }
  const int err = errno;
  pthread_mutex_unlock(&g_open_mu);
  errno = err;
  return h;
}

struct rs_gpu_ring_header* rs_gpu_region_header(void) {
  return __atomic_load_n(&g_header, __ATOMIC_ACQUIRE);
}

uint64_t rs_gpu_region_generation(void) { return __atomic_load_n(&g_generation, __ATOMIC_ACQUIRE); }

struct rs_gpu_op* rs_gpu_region_slot(uint32_t i) {
  return ops() + i;
}

/* The writer's half of the protocol in gpu_ring.h. The fence keeps the field stores after
 * the stamp's reset, so a reader that sees the old stamp after copying saw old fields only. */
void rs_gpu_region_write(const struct rs_gpu_op* op) {
  struct rs_gpu_ring_header* h = rs_gpu_region_header();
  if (h == NULL) return;
  const uint64_t i = __atomic_fetch_add(&h->head, 1, __ATOMIC_ACQ_REL);
  struct rs_gpu_op* r = ops() + RS_GPU_SLOT_COUNT + i % RS_GPU_RING_RECORDS;
  __atomic_store_n(&r->stamp, 0, __ATOMIC_RELEASE);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  memcpy((char*)r + sizeof(r->stamp), (const char*)op + sizeof(op->stamp),
         sizeof(*r) - sizeof(r->stamp));
  __atomic_store_n(&r->stamp, i + 1, __ATOMIC_RELEASE);
}

int rs_gpu_region_reader_present(int64_t now_ns) {
  const struct rs_gpu_ring_header* h = rs_gpu_region_header();
  if (h == NULL) return 0;
  const int64_t beat = __atomic_load_n(&h->reader_heartbeat_ns, __ATOMIC_ACQUIRE);
  if (beat == 0) return now_ns < h->startup_until_ns; /* no reader yet: the startup window */
  return now_ns - beat < RS_GPU_READER_TIMEOUT_NS;
}

int rs_gpu_region_in_startup_window(int64_t now_ns) {
  const struct rs_gpu_ring_header* h = rs_gpu_region_header();
  return h != NULL && __atomic_load_n(&h->reader_heartbeat_ns, __ATOMIC_ACQUIRE) == 0 &&
         now_ns < h->startup_until_ns;
}

void rs_gpu_region_forget(void) {
  if (g_base != NULL) munmap(g_base, kRegionBytes);
  if (g_fd >= 0) close(g_fd);
  g_base = NULL;
  g_fd = -1;
  __atomic_store_n(&g_header, NULL, __ATOMIC_RELEASE);
  __atomic_fetch_add(&g_generation, 1, __ATOMIC_ACQ_REL);
  pthread_mutex_init(&g_open_mu, NULL); /* a parent's thread may have held it at fork */
}

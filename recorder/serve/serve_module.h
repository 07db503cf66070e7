/* The fleet server as a module that rankscope-record loads (dlopen) only when --serve is given:
 * librankscope-serve.so, with cpp-httplib, OpenSSL and the query guard inside, so that a
 * recorder that does not serve loads none of them. A C interface, versioned: the recorder and
 * the module need not come from the same build to fail cleanly. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RANKSCOPE_SERVE_ABI 1
#define RANKSCOPE_SERVE_MODULE_NAME "librankscope-serve.so"

struct rankscope_serve_args {
  int abi; /* RANKSCOPE_SERVE_ABI */
  const char* host;
  int port;
  const char* ca; /* "" none */
  const char* cert;
  const char* key;
  const char* token_file; /* "" none */
  int max_connections;
  int max_queries;
  int64_t max_request_bytes;
  int64_t max_rows;
  int64_t max_result_bytes;
  int64_t query_timeout_ns;
  int64_t simulate_clock_offset_ns;
  const char* node;
  const char* bundle_dir; /* "" none */
  const char* live_db;    /* "" none */
  void (*log)(void* ctx, const char* line);
  void* log_ctx;
};

struct rankscope_serve;

/* Loads the certificates and binds (no thread yet); NULL with `error` filled on failure. */
typedef struct rankscope_serve* (*rankscope_serve_bind_fn)(const struct rankscope_serve_args*,
                                                           char* error, size_t error_size);
typedef int (*rankscope_serve_port_fn)(struct rankscope_serve*);
typedef void (*rankscope_serve_run_fn)(struct rankscope_serve*);
/* Stops serving, joins its threads and frees it. */
typedef void (*rankscope_serve_stop_fn)(struct rankscope_serve*);

#ifdef __cplusplus
}
#endif

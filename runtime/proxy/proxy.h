/*
 * The proxy: the consumer side of the request rings (include/symm/
 * symm_device_ring.h) and the thread that drains them. docs/PROXY.md has the
 * design, the ordering rules and the figures.
 *
 * Two parts:
 *  - the engine (engine.h, engine.c): rings, the drain loop, the thread and
 *    its idle back-off. It knows no context: it runs requests through an
 *    executor (symm__proxy_exec), so a test can drive it with a fake one.
 *  - the context's proxy (this header, proxy.c): an engine whose executor
 *    calls the core's routed operations (symm__put/get/atomic/put_signal/
 *    fence/quiet), started for a context and stopped before it goes away.
 */
#ifndef SYMM_RUNTIME_PROXY_H
#define SYMM_RUNTIME_PROXY_H

#include <stdbool.h>
#include <stdint.h>

#include "engine.h"
#include "internal.h"

/* ------------------------------------------------------------------------ */
/* A context's proxy (proxy.c)                                               */
/* ------------------------------------------------------------------------ */

/* Should ctx have a proxy under these flags? True when the job has PEs of
 * other hosts (and, with SYMM__PROXY_NEED_GPU, the backend drives a device),
 * or with SYMM__PROXY_FORCE. */
bool symm__proxy_wanted(const symm__ctx *ctx, uint32_t flags);
/* Create ctx's rings and start its thread when symm__proxy_wanted; SUCCESS
 * and nothing started otherwise. o NULL: symm__proxy_opts_env. Local (no
 * collective), once per context; INVALID_STATE when it already has one. */
symm_status symm__proxy_start(symm__ctx *ctx, const symm__proxy_opts *o);
bool symm__proxy_running(symm__ctx *ctx);
/* The producer handle of ring i (version: the producer's SYMM_RING_VERSION).
 * NOT_SUPPORTED when ctx has no proxy. */
symm_status symm__proxy_ring(symm__ctx *ctx, uint32_t i, uint32_t version, symm_ring *out);
uint32_t symm__proxy_n_rings(symm__ctx *ctx);
/* The wake word of `stream` for an operation a stream form posts on ring
 * `ring` (engine.c's header comment): one a stream, reused (a stream runs
 * its operations one after another; not for a capturing stream, whose graph
 * may replay beside the stream's later work), kept until finalize.
 * NOT_SUPPORTED when the context has no proxy or every word is taken (the
 * caller then waits another way). */
symm_status symm__proxy_stream_wake(symm__ctx *ctx, const void *stream, uint32_t ring,
                                    symm__px_wake *out);
/* Host-side quiet over the rings (symm__engine_quiet); SUCCESS without a proxy. */
symm_status symm__proxy_quiet(symm__ctx *ctx);
/* symm_ctx_async_error's SYMM_ASYNC_CLEAR: ring failures recorded so far
 * were delivered; symm__proxy_quiet does not return them again. */
void symm__proxy_ack(symm__ctx *ctx);
/* End ctx's proxy thread (symm__engine_stop): in-flight requests complete or
 * fail, every producer wait ends. The rings stay readable until
 * symm__proxy_destroy. Idempotent; nothing when ctx has none. The GPU wiring
 * calls it from finalize before the context's memory goes, and destroy after
 * the device is idle. */
void symm__proxy_stop(symm__ctx *ctx);
void symm__proxy_destroy(symm__ctx *ctx);
/* The ring reserved for stream forms (a device backend with ring_stream). */
symm_status symm__proxy_stream_ring(symm__ctx *ctx, symm_ring *out);
/* The kernels' rings as GPU code reads them: a device array of *n handles
 * (made on first use; NULL and 0 without a proxy or device memory). */
symm_status symm__proxy_device_rings(symm__ctx *ctx, const void **rings, uint32_t *n);
/* Host calls (SYMM_RING_OP_CALL): fn(ctx, arg) runs on the proxy's thread
 * when a request with value *id is taken. once: dropped after it ran (else
 * kept, for a captured graph's replays, until symm__proxy_call_drop or the
 * proxy's destroy; free_arg(arg) then). A kept call whose fn and arg_bytes
 * bytes of arg equal an earlier kept one's gets that one's number (arg is
 * freed), so a loop that enqueues the same call does not grow the table. */
typedef symm_status (*symm__proxy_call_fn)(symm__ctx *ctx, void *arg);
symm_status symm__proxy_call_add(symm__ctx *ctx, symm__proxy_call_fn fn, void *arg,
                                 size_t arg_bytes, void (*free_arg)(void *arg), bool once,
                                 uint64_t *id);
void symm__proxy_call_drop(symm__ctx *ctx, uint64_t id);
/* Counters of ctx's proxy (zeros without one). */
void symm__proxy_stats_get(symm__ctx *ctx, symm__proxy_stats *s);

#endif /* SYMM_RUNTIME_PROXY_H */

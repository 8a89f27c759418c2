/*
 * The proxy engine's contract (engine.c): rings, the drain loop, the thread,
 * the executor a request runs through and the memory the rings live in. It
 * knows no context and includes nothing of the core, so a test or a CUDA
 * benchmark can drive it with its own executor and memory (C or C++).
 * proxy.h builds a context's proxy on it. docs/PROXY.md has the design.
 */
#ifndef SYMM_RUNTIME_PROXY_ENGINE_H
#define SYMM_RUNTIME_PROXY_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>
#include <symm/symm_device_ring.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Options                                                                   */
/* ------------------------------------------------------------------------ */

#define SYMM__PROXY_DEFAULT_RINGS 1u
#define SYMM__PROXY_MAX_RINGS 64u
#define SYMM__PROXY_DEFAULT_DEPTH 1024u
#define SYMM__PROXY_DEFAULT_SPIN_US 50u   /* poll without pause after the last request */
#define SYMM__PROXY_DEFAULT_IDLE_US 100u  /* longest nap when idle: the wake-up bound    */
#define SYMM__PROXY_WAKE_WORDS 4096u      /* wake words (stream waits), engine.c         */

/* symm__proxy_opts.flags */
#define SYMM__PROXY_FORCE 1u    /* start even when no PE is remote (tests, benchmarks)     */
#define SYMM__PROXY_NEED_GPU 2u /* start only when the backend drives a device (the GPU
                                   wiring passes it: host code never needs the proxy)      */

typedef struct symm__proxy_opts {
    uint32_t n_rings;  /* rings (ordering domains), 1..SYMM__PROXY_MAX_RINGS     */
    uint32_t depth;    /* slots per ring, a power of two in
                          [SYMM_RING_MIN_DEPTH, SYMM_RING_MAX_DEPTH]                */
    uint32_t spin_us;  /* idle: poll this long before napping                      */
    uint32_t idle_us;  /* idle: naps double up to this                             */
    uint32_t flags;    /* SYMM__PROXY_*                                            */
} symm__proxy_opts;

/* Defaults, then the environment: SYMM_PROXY_RINGS, SYMM_PROXY_RING_DEPTH,
 * SYMM_PROXY_SPIN_US, SYMM_PROXY_IDLE_US. INVALID_ARG (with the variable's
 * name) on a bad value. */
symm_status symm__proxy_opts_env(symm__proxy_opts *o);

/* What the engine runs requests with. Entries are called from the engine's
 * thread (or from whoever calls symm__engine_poll), one at a time. */
typedef struct symm__proxy_exec {
    void *arg;
    /* Run one request (PUT, GET, AMO, PUT_SIGNAL, FENCE; NOP and QUIET are the
     * engine's). *pending = true when it was issued non-blocking and completes
     * at the next flush. A failure returns its status, message recorded. */
    symm_status (*run)(void *arg, const symm_ring_req *q, bool *pending);
    /* Complete every pending request (remote completion). */
    symm_status (*flush)(void *arg);
    /* PEER_FAILED once the job lost a PE (polled about every millisecond). */
    symm_status (*check)(void *arg);
    /* A request failed (or the job did: q NULL): record it. NULL: nothing. */
    void (*failed)(void *arg, uint32_t ring, uint64_t ticket, const symm_ring_req *q,
                   symm_status st, const char *msg);
    /* On the engine's thread: first thing (started true) and last (false).
     * NULL: nothing. */
    void (*thread)(void *arg, bool started);
} symm__proxy_exec;

/* Where the rings live. The GPU wiring gives host-pinned memory mapped into
 * the device for `shared` and device memory for `producer` (then `device`
 * translates a shared address into the device's view, for the handles); the
 * default is page-aligned host memory for both. Every allocation is zeroed. */
typedef struct symm__proxy_mem {
    void *arg;
    void *(*alloc_shared)(void *arg, size_t bytes);
    void (*free_shared)(void *arg, void *p, size_t bytes);
    void *(*alloc_producer)(void *arg, size_t bytes);
    void (*free_producer)(void *arg, void *p, size_t bytes);
    void *(*device)(void *arg, void *shared); /* NULL: the same address */
    /* A producer word as the host reads it (device memory: a copy). NULL: a
     * plain load. */
    uint64_t (*read_producer)(void *arg, const uint64_t *p);
} symm__proxy_mem;

/* Counters (relaxed reads; for tests and benchmarks). */
typedef struct symm__proxy_stats {
    uint64_t requests;  /* slots taken                                   */
    uint64_t failed;    /* requests that failed                          */
    uint64_t flushes;   /* exec->flush calls                             */
    uint64_t naps;      /* idle naps                                     */
    uint64_t passes;    /* drain passes                                  */
    uint64_t run_ns, run_max_ns;     /* time in exec->run: total, longest    */
    uint64_t flush_ns, flush_max_ns; /* time in exec->flush: total, longest  */
} symm__proxy_stats;

typedef struct symm__engine symm__engine;

/* Rings zeroed, headers written. mem NULL: host memory. */
symm_status symm__engine_create(const symm__proxy_opts *o, const symm__proxy_exec *x,
                                const symm__proxy_mem *mem, symm__engine **out);
/* The producer handle of ring i, for a producer built against format
 * `version` (SYMM_RING_VERSION of its header): ABI_MISMATCH with a message
 * naming both versions when they differ. */
symm_status symm__engine_ring(symm__engine *e, uint32_t i, uint32_t version, symm_ring *out);
uint32_t symm__engine_n_rings(const symm__engine *e);
/* Wake words (engine.c's header comment): ring i's notify cells (depth, one
 * a slot: cell t % depth belongs to ticket index t) and the
 * SYMM__PROXY_WAKE_WORDS 32-bit words, both in the producers' view. A
 * producer that wants word w set once its request completed stores w + 1 in
 * its cell before it writes the request. */
symm_status symm__engine_wake(symm__engine *e, uint32_t i, uint64_t **notify, uint32_t **words);
/* Word w in the host's view (NULL past the last). */
uint32_t *symm__engine_word_host(symm__engine *e, uint32_t w);
/* One drain pass over every ring (what the thread loops on): requests taken. */
size_t symm__engine_poll(symm__engine *e);
/* Start the thread (idempotent). */
symm_status symm__engine_start(symm__engine *e);
bool symm__engine_running(const symm__engine *e);
/* The job lost a PE (or the engine must stop): every ring's state word takes
 * st and, for PEER_FAILED, the fail word is set; producers' waits end. Any
 * thread, idempotent (the first status stays). */
void symm__engine_fail(symm__engine *e, symm_status st);
/* End the thread: requests already written are run (or failed when the job
 * is lost), then every ring's state becomes INVALID_STATE ("stopped", unless it
 * already was) so no producer waits on. Memory stays (producers may still
 * read it) until destroy. Idempotent; safe when never started. */
void symm__engine_stop(symm__engine *e);
/* Stop, then free the rings. NULL accepted. */
void symm__engine_destroy(symm__engine *e);
/* Wait (host side) until every request claimed so far on every ring has
 * finished: completed >= head. A failure among them that no earlier quiet
 * returned and no symm__engine_ack covered is returned (once); PEER_FAILED /
 * the state's status ends it. Producers that are still running may claim
 * more: those are not waited for. */
symm_status symm__engine_quiet(symm__engine *e);
/* The failures recorded so far count as delivered (symm_ctx_async_error
 * with SYMM_ASYNC_CLEAR): a later quiet does not return them. */
void symm__engine_ack(symm__engine *e);
/* The fail word producers' handles point at (0 healthy, SYMM_DEVICE_FAIL_PEER
 * (2) once the job lost a PE, as the device context's fail word). */
const int32_t *symm__engine_fail_word(const symm__engine *e);
void symm__engine_stats(const symm__engine *e, symm__proxy_stats *s);

#ifdef __cplusplus
}
#endif

#endif /* SYMM_RUNTIME_PROXY_ENGINE_H */

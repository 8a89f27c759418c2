/*
 * The entry prologue: what every public entry does before its own checks.
 * It resolves the handle (INVALID_HANDLE for a stale or foreign one) and
 * checks the caller's thread level against the context's. Every failure
 * carries the entry's name. The thread's message needs no clearing here:
 * the dispatch wrapper hides it unless the call fails (api/dispatch.c).
 * Query entries that any thread may call resolve their handle without the
 * thread check (symm__*_get). The direct path below (symm__cpu_peer) lets
 * the small entries do the host backend's work themselves.
 *
 * The call modes of one-sided entries: blocking (complete on return), nbi
 * (complete at the next quiet) and on a stream (ordered on the stream; on a
 * backend without stream hooks it runs blocking at call time).
 */
#ifndef SYMM_API_ENTRY_H
#define SYMM_API_ENTRY_H

#include "backends/host/host_cpu.h"
#include "internal.h"

/* The checks every call makes, inlined for the case that passes; the
 * out-of-line functions (core/check.c) decide and write the message. */
static inline symm_status symm__thread_ok(const symm__ctx *ctx) {
    if (__builtin_expect(ctx->thread_level != SYMM_THREAD_FUNNELED, 1)) return SYMM_SUCCESS;
    return symm__thread_check(ctx);
}

/* No PE is known lost (symm__check_failed). */
static inline symm_status symm__failed_ok(symm__ctx *ctx) {
    if (__builtin_expect(ctx->watched && !atomic_load_explicit(&ctx->failed, memory_order_relaxed),
                         1))
        return SYMM_SUCCESS;
    return symm__check_failed(ctx);
}

/* pe is a PE of the job and no PE is known lost (symm__check_target). */
static inline symm_status symm__target_ok(symm__ctx *ctx, int32_t pe) {
    if (__builtin_expect((uint32_t)pe < (uint32_t)ctx->n_pes && ctx->watched &&
                             !atomic_load_explicit(&ctx->failed, memory_order_relaxed), 1))
        return SYMM_SUCCESS;
    return symm__check_target(ctx, pe);
}

/* The handle resolves inline; the out-of-line lookup writes the message. */
static inline symm_status symm__enter_ctx(const char *fn, symm_ctx h, symm__ctx **ctx) {
    symm__ctx *c = symm__handle_get(SYMM__KIND_CTX, (uint64_t)(uintptr_t)h);
    if (__builtin_expect(!c, 0)) SYMM_TRY_IN(fn, symm__ctx_get(h, &c));
    SYMM_TRY_IN(fn, symm__thread_ok(c));
    *ctx = c;
    return SYMM_SUCCESS;
}

static inline symm_status symm__enter_buf(const char *fn, symm_buf h, symm__buf **buf) {
    symm__buf *b = symm__handle_get(SYMM__KIND_BUF, (uint64_t)(uintptr_t)h);
    if (__builtin_expect(!b, 0)) SYMM_TRY_IN(fn, symm__buf_get(h, &b));
    SYMM_TRY_IN(fn, symm__thread_ok(b->ctx));
    *buf = b;
    return SYMM_SUCCESS;
}

/* Elements [index, index + n) lie inside buf (symm__check_range). */
static inline symm_status symm__range_ok(const symm__buf *b, uint64_t index, uint64_t n) {
    if (__builtin_expect(index <= b->count && n <= b->count - index, 1)) return SYMM_SUCCESS;
    return symm__check_range(b, index, n);
}

/* The direct path: pe's heap as this CPU maps it when the call is a load,
 * store or CPU atomic done here, i.e. the backend set cpu_peers (its ops are
 * host_cpu.h's) and the job has no transport (every PE is on this host, and
 * no NIC atomics to stay coherent with); NULL: the routed path (route.c),
 * which also reports a PE that is not mapped. One decision instead of the
 * route's calls (symm__put -> ops->put) per small operation: docs/DECISIONS.md
 * "Small operations". */
static inline uint8_t *symm__cpu_peer(const symm__ctx *ctx, int32_t pe) {
    if (__builtin_expect(ctx->cpu_peers && !ctx->tp, 1)) return ctx->peer_base[pe];
    return NULL;
}

static inline symm_status symm__enter_team(const char *fn, symm_team h, symm__team **team) {
    SYMM_TRY_IN(fn, symm__team_get(h, team));
    SYMM_TRY_IN(fn, symm__thread_ok((*team)->ctx));
    return SYMM_SUCCESS;
}

/* How a one-sided entry completes. */
typedef struct symm__mode {
    uint32_t flags;        /* SYMM__NBI: at the next quiet                  */
    bool on_stream;        /* ordered on stream (the hook's view of it)     */
    symm_stream_t stream;
} symm__mode;

#define SYMM__BLOCKING ((symm__mode){0, false, NULL})
#define SYMM__NBI_MODE ((symm__mode){SYMM__NBI, false, NULL})
#define SYMM__ON_STREAM(s) ((symm__mode){0, true, (s)})

#endif /* SYMM_API_ENTRY_H */

/*
 * The entry prologue: what every public entry does before its own checks.
 * It resolves the handle (INVALID_HANDLE for a stale or foreign one) and
 * checks the caller's thread level against the context's. Every failure
 * carries the entry's name. The thread's message needs no clearing here:
 * the dispatch wrapper hides it unless the call fails (api/dispatch.c). Query entries that any thread may call
 * resolve their handle without the thread check (symm__*_get).
 *
 * The call modes of one-sided entries: blocking (complete on return), nbi
 * (complete at the next quiet) and on a stream (ordered on the stream; on a
 * backend without stream hooks it runs blocking at call time).
 */
#ifndef SYMM_API_ENTRY_H
#define SYMM_API_ENTRY_H

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

static inline symm_status symm__enter_ctx(const char *fn, symm_ctx h, symm__ctx **ctx) {
    SYMM_TRY_IN(fn, symm__ctx_get(h, ctx));
    SYMM_TRY_IN(fn, symm__thread_ok(*ctx));
    return SYMM_SUCCESS;
}

static inline symm_status symm__enter_buf(const char *fn, symm_buf h, symm__buf **buf) {
    SYMM_TRY_IN(fn, symm__buf_get(h, buf));
    SYMM_TRY_IN(fn, symm__thread_ok((*buf)->ctx));
    return SYMM_SUCCESS;
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

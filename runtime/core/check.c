/* The validation helpers every entry uses: handle resolution, thread level,
 * PE and range checks, peer failure, and the spin-wait that honours it. */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"

/* ---- handle resolution and common checks ---- */

symm_status symm__ctx_get(symm_ctx h, symm__ctx **ctx) {
    symm__ctx *c = symm__handle_get(SYMM__KIND_CTX, (uint64_t)(uintptr_t)h);
    if (!c) return symm__err(SYMM_ERR_INVALID_HANDLE, "invalid symm_ctx %p (NULL, finalized or not a context)", (void *)h);
    *ctx = c;
    return SYMM_SUCCESS;
}

symm_status symm__buf_get(symm_buf h, symm__buf **buf) {
    symm__buf *b = symm__handle_get(SYMM__KIND_BUF, (uint64_t)(uintptr_t)h);
    if (!b) return symm__err(SYMM_ERR_INVALID_HANDLE, "invalid symm_buf %p (NULL, freed or not a buffer)", (void *)h);
    *buf = b;
    return SYMM_SUCCESS;
}

symm__team *symm__team_lookup(symm_team h) {
    /* Only the table says whether the object lives: a free releases the
     * handle before its grace period, so nothing reachable here is freed. */
    return symm__handle_get(SYMM__KIND_TEAM, (uint64_t)(uintptr_t)h);
}

symm_status symm__team_get(symm_team h, symm__team **team) {
    symm__team *t = symm__team_lookup(h);
    if (!t) return symm__err(SYMM_ERR_INVALID_HANDLE, "invalid symm_team %p (NULL, destroyed or not a team)", (void *)h);
    symm__hold(&t->closing); /* team calls block (barriers, collectives) */
    *team = t;
    return SYMM_SUCCESS;
}

symm_status symm__ctx_lock(const char *fn, symm__ctx *ctx) {
    symm__park(ctx);
    pthread_mutex_lock(&ctx->lock);
    if (atomic_load_explicit(&ctx->closing, memory_order_relaxed)) {
        pthread_mutex_unlock(&ctx->lock);
        return symm__err(SYMM_ERR_INVALID_HANDLE,
                         "%s: the context was finalized by another thread during this call", fn);
    }
    return SYMM_SUCCESS;
}

symm_status symm__thread_check(const symm__ctx *ctx) {
    if (ctx->thread_level == SYMM_THREAD_FUNNELED && !pthread_equal(pthread_self(), ctx->init_thread))
        return symm__err(SYMM_ERR_THREAD_LEVEL,
                         "context was created with SYMM_THREAD_FUNNELED: only the thread that "
                         "called symm_init may call symm");
    return SYMM_SUCCESS;
}

symm_status symm__check_pe(const symm__ctx *ctx, int32_t pe) {
    if (pe < 0 || pe >= ctx->n_pes)
        return symm__err(SYMM_ERR_INVALID_ARG, "pe %d is outside [0, %d)", pe, ctx->n_pes);
    return SYMM_SUCCESS;
}

symm_status symm__check_target(symm__ctx *ctx, int32_t pe) {
    SYMM_TRY(symm__check_pe(ctx, pe));
    return symm__check_failed(ctx);
}

symm_status symm__check_range(const symm__buf *buf, uint64_t index, uint64_t nelems) {
    if (index > buf->count || nelems > buf->count - index)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "elements [%llu, %llu + %llu) are outside the buffer of %llu elements",
                         (unsigned long long)index, (unsigned long long)index,
                         (unsigned long long)nelems, (unsigned long long)buf->count);
    return SYMM_SUCCESS;
}

void symm__mark_failed(symm__ctx *ctx) {
    if (atomic_exchange(&ctx->failed, 1) == 0) {
        if (ctx->ops && ctx->ops->peer_failed) ctx->ops->peer_failed(ctx);
        symm__tp_peer_failed(ctx);
    }
}

static void on_job_lost(void *ctx) { symm__mark_failed(ctx); }

/* Every backend's context of 2 PEs or more has a watcher: besides GPU-side
 * waits, it spares each one-sided call the bootstrap poll (a clock read and
 * a call per call: symm__check_failed). */
void symm__watch_start(symm__ctx *ctx) {
    if (!ctx->ops || ctx->n_pes < 2) return;
    ctx->watch = symm__boot_watch_start(ctx->boot, on_job_lost, ctx);
    ctx->watched = ctx->watch != NULL;
}

void symm__watch_stop(symm__ctx *ctx) {
    symm__boot_watch_stop(ctx->watch);
    ctx->watch = NULL;
}

symm_status symm__check_failed(symm__ctx *ctx) {
    /* A watched context learns of a lost PE from its watcher (ctx->failed),
     * as soon as the news arrives: nothing to poll here. */
    if (__builtin_expect(ctx->watched, 1) &&
        !atomic_load_explicit(&ctx->failed, memory_order_relaxed))
        return SYMM_SUCCESS;
    if (atomic_load_explicit(&ctx->failed, memory_order_relaxed)) {
        if (ctx->boot && symm__boot_check(ctx->boot) != SYMM_SUCCESS)
            return SYMM_ERR_PEER_FAILED; /* boot_check left the job's reason */
        return symm__err(SYMM_ERR_PEER_FAILED, "a peer PE of this job failed; the context is unusable");
    }
    if (ctx->boot && symm__boot_check(ctx->boot) != SYMM_SUCCESS) {
        symm__mark_failed(ctx);
        return SYMM_ERR_PEER_FAILED; /* boot_check left the message */
    }
    return SYMM_SUCCESS;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

symm_status symm__wait(symm__ctx *ctx, bool (*done)(void *arg), void *arg) {
    return symm__wait_keep(ctx, NULL, done, arg);
}

symm_status symm__wait_keep(symm__ctx *ctx, atomic_int *keep, bool (*done)(void *arg),
                            void *arg) {
    /* Spin briefly (latency), then yield (PEs may outnumber cores), then
     * sleep in short naps; check for failed peers about every millisecond.
     * A wait that does not end while spinning parks (handles.c) and from
     * then on leaves when its context or an object it holds is freed.
     * Once parked, every pass drives the transport's completions: a PE
     * waiting here is the target of its peers' puts, gets and atomics, and
     * a transport with manual progress (ofi) serves them only while someone
     * reads its completion queue, so the waiting thread does it at once
     * instead of leaving it to the transport's sleeping progress thread. */
    for (int i = 0; i < 128; i++) {
        if (done(arg)) return SYMM_SUCCESS;
    }
    if (keep) symm__hold(keep);
    symm__park(ctx);
    uint64_t start = now_ns(), last_check = start, note_at = start + 1000000000ull;
    for (uint64_t iter = 0;; iter++) {
        symm__progress(ctx); /* first: what it serves may be what done() waits for */
        if (done(arg)) return SYMM_SUCCESS;
        SYMM_TRY(symm__check_closing(ctx));
        uint64_t t = now_ns();
        if (t - last_check > 1000000ull) {
            last_check = t;
            SYMM_TRY(symm__check_failed(ctx));
        }
        if (t >= note_at) { /* a long wait says what it waits for: 1 s, then every 10 s */
            note_at = t + 10000000000ull;
            if (symm__log_on(SYMM_LOG_INFO, SYMM_LOG_WAIT)) symm__log_long_wait(t - start);
        }
        if (t - start < 20000000ull) {
            sched_yield();
        } else {
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
        }
    }
}

/* ---- asynchronous failures (read by symm_ctx_async_error) ---- */

void symm__async_record(symm__ctx *ctx, symm_status status, const char *fmt, ...) {
    pthread_mutex_lock(&ctx->async_lock);
    if (ctx->async_count++ == 0) {
        ctx->async_status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->async_msg, sizeof ctx->async_msg, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_unlock(&ctx->async_lock);
}

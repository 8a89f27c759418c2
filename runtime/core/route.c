/*
 * One routing layer for every one-sided operation of the core. The rule:
 * a PE of this host (same host id) is reached through the backend, which
 * mapped its heap; a PE of another host through the transport. Atomic
 * updates also go through the transport for this host's PEs when the
 * transport's atomics are not atomic with CPU atomics (ctx->amo_tp), so
 * CPU and NIC never race on one word. quiet and fence cover both paths.
 */
#include <stdlib.h>

#include "tp.h"

symm_status symm__routes_init(symm__ctx *ctx) {
    const uint64_t *host = ctx->boot_info.host_id;
    ctx->remote = calloc((size_t)ctx->n_pes, 1);
    if (!ctx->remote) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    ctx->n_remote = 0;
    ctx->n_hosts = 0;
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (host && host[pe] != host[ctx->my_pe]) {
            ctx->remote[pe] = 1;
            ctx->n_remote++;
        }
        bool first = true; /* first PE of its host: count the host once */
        for (int32_t q = 0; host && q < pe && first; q++) first = host[q] != host[pe];
        if (first) ctx->n_hosts++;
    }
    return SYMM_SUCCESS;
}

static symm_status tp_status(symm__ctx *ctx, int32_t st) {
    if (st == SYMM_ERR_PEER_FAILED) symm__mark_failed(ctx);
    return (symm_status)st;
}

#define TP_CALL(ctx, call)                                                     \
    do {                                                                       \
        struct symm__tp *tp_ = (ctx)->tp;                                      \
        pthread_mutex_lock(&tp_->lock);                                        \
        int32_t st_ = tp_->ops->call;                                          \
        pthread_mutex_unlock(&tp_->lock);                                      \
        return tp_status((ctx), st_);                                          \
    } while (0)

static inline bool via_tp(const symm__ctx *ctx, int32_t pe) {
    return ctx->remote && ctx->remote[pe];
}

/* ---- the GPU proxy's own copies ----
 * The proxy's thread runs stream operations and collectives while
 * application threads may sit in the driver: torch's .cpu() is a copy into
 * pageable memory that waits for its stream, and holds what the driver's
 * pageable path needs meanwhile; if that stream waits for the proxy, a
 * pageable copy by the proxy's thread (the backend's put or get of a host
 * buffer: a collective's records and partial sums, a staging buffer) never
 * starts. So every copy between local memories on that thread goes through
 * the transport's GPU-memory service: pinned bounce buffers and a stream of
 * its own, polled (the transport's service thread already copies that way).
 * Other threads keep the backend's copies. */
static inline bool on_svc_thread(const symm__ctx *ctx) {
    const uintptr_t t = atomic_load_explicit(&ctx->svc_thread, memory_order_relaxed);
    return __builtin_expect(t != 0, 0) && t == symm__thread_ptr();
}

symm_status symm__local_copy(symm__ctx *ctx, void *dst, const void *src, uint64_t n) {
    if (on_svc_thread(ctx)) return symm__tp_mem_copy(ctx, dst, src, n);
    return ctx->ops->local_copy(ctx, dst, src, n);
}

/* ---- device buffers outside the heap: staged through host memory ----
 * A transport reaches the heap (registered at mem_add, GPU memory included)
 * and host memory. A caller's GPU buffer outside the heap is neither: the
 * core copies it through a host buffer with the backend's local_copy, piece
 * by piece, each piece a blocking transport call (the staging buffer is
 * reused at once, so nbi is not kept; allowed: nbi may complete early). */
#define STAGE_BYTES (1u << 20)

/* Memory the CPU cannot read (the heap included): only with a device backend. */
static bool dev_mem(const symm__ctx *ctx, const void *p) {
    const symm__backend_ops *o = ctx->ops;
    return p && o->is_device_mem && o->local_copy && o->is_device_mem((symm__ctx *)ctx, p);
}

/* The heap: the transport registered it, device memory or not. */
static bool in_heap(const symm__ctx *ctx, const void *p) {
    const uint8_t *c = p;
    return ctx->heap_base && c >= ctx->heap_base && (uint64_t)(c - ctx->heap_base) < ctx->heap_cap;
}

static symm_status tp_put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                          uint32_t tflags) {
    TP_CALL(ctx, put(tp_->state, pe, off, src, n, tflags));
}

static symm_status tp_get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                          uint32_t tflags) {
    TP_CALL(ctx, get(tp_->state, dst, pe, off, n, tflags));
}

static symm_status tp_put_signal(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                                 uint64_t n, uint64_t sig_off, uint64_t value, uint32_t sig_op,
                                 uint32_t tflags) {
    TP_CALL(ctx, put_signal(tp_->state, pe, off, src, n, sig_off, value, sig_op, tflags));
}

static symm_status stage_alloc(uint64_t n, uint8_t **buf, size_t *cap) {
    *cap = n < STAGE_BYTES ? (size_t)n : STAGE_BYTES;
    *buf = malloc(*cap);
    if (!*buf)
        return symm__err(SYMM_ERR_OUT_OF_MEMORY,
                         "out of host memory for a %zu-byte staging buffer (GPU buffer to a PE "
                         "on another host)", *cap);
    return SYMM_SUCCESS;
}

/* Put n bytes of a device buffer through the staging buffer, piece by piece. */
static symm_status staged_put(symm__ctx *ctx, int32_t pe, uint64_t off, const uint8_t *src,
                              uint64_t n, uint8_t *buf, size_t cap) {
    symm_status st = SYMM_SUCCESS;
    for (uint64_t done = 0; done < n && st == SYMM_SUCCESS;) {
        uint64_t m = n - done < cap ? n - done : cap;
        st = symm__local_copy(ctx, buf, src + done, m);
        if (st == SYMM_SUCCESS) st = tp_put(ctx, pe, off + done, buf, m, 0);
        done += m;
    }
    return st;
}

/* ---- partial 64-bit words ----
 * A transport without native 32-bit atomics builds them as 64-bit CMP_SWP
 * loops, and the NIC reads and writes back all 8 bytes of the word: a plain
 * store into the word's other bytes in between is lost. The ibverbs plugin
 * therefore writes the partial words at either end of a put with CMP_SWP
 * merges, reading those bytes with the CPU. Two consequences here:
 *  - with amo_tp, this host's puts send their partial edge words through
 *    the transport too (whole words stay load/store);
 *  - a device buffer (heap included) reaches the transport only in whole
 *    words: the edges go from a host copy. */
static bool partial_words(uint64_t off, uint64_t n) { return n && ((off | n) & 7); }

static symm_status put_edge(symm__ctx *ctx, int32_t pe, uint64_t off, const uint8_t *src,
                            uint64_t k) {
    uint8_t b[8];
    const void *p = src;
    if (dev_mem(ctx, src)) {
        SYMM_TRY(symm__local_copy(ctx, b, src, k));
        p = b;
    }
    return tp_put(ctx, pe, off, p, k, 0);
}

static void split_words(uint64_t off, uint64_t n, uint64_t *head, uint64_t *mid, uint64_t *tail) {
    *head = off & 7 ? 8 - (off & 7) : 0;
    if (*head > n) *head = n;
    *tail = (n - *head) & 7;
    *mid = n - *head - *tail;
}

/* Edges through the transport (blocking), whole words by symm__put. */
static symm_status put_split(symm__ctx *ctx, int32_t pe, uint64_t off, const uint8_t *src,
                             uint64_t n, uint32_t flags) {
    uint64_t head, mid, tail;
    split_words(off, n, &head, &mid, &tail);
    symm_status st = SYMM_SUCCESS;
    if (head) st = put_edge(ctx, pe, off, src, head);
    if (st == SYMM_SUCCESS && mid) st = symm__put(ctx, pe, off + head, src + head, mid, flags);
    if (st == SYMM_SUCCESS && tail) st = put_edge(ctx, pe, off + head + mid, src + head + mid, tail);
    return st;
}

symm_status symm__put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                      uint32_t flags) {
    const bool partial = partial_words(off, n);
    if (!via_tp(ctx, pe)) {
        if (partial && ctx->amo_tp && ctx->tp) return put_split(ctx, pe, off, src, n, flags);
        if (on_svc_thread(ctx) && ctx->peer_base[pe]) /* blocking: nbi may complete early */
            return symm__tp_mem_copy(ctx, ctx->peer_base[pe] + off, src, n);
        return ctx->ops->put(ctx, pe, off, src, n, flags);
    }
    const bool dev = dev_mem(ctx, src); /* one pointer query per remote put */
    if (partial && dev) return put_split(ctx, pe, off, src, n, flags);
    if (dev && n && !in_heap(ctx, src)) {
        uint8_t *buf;
        size_t cap;
        SYMM_TRY(stage_alloc(n, &buf, &cap));
        symm_status st = staged_put(ctx, pe, off, src, n, buf, cap);
        free(buf);
        return st;
    }
    return tp_put(ctx, pe, off, src, n, (flags & SYMM__NBI) ? SYMM_TP_NBI : 0);
}

symm_status symm__get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                      uint32_t flags) {
    if (!via_tp(ctx, pe)) {
        if (on_svc_thread(ctx) && ctx->peer_base[pe])
            return symm__tp_mem_copy(ctx, dst, ctx->peer_base[pe] + off, n);
        return ctx->ops->get(ctx, dst, pe, off, n, flags);
    }
    if (n && !in_heap(ctx, dst) && dev_mem(ctx, dst)) {
        uint8_t *buf, *out = dst;
        size_t cap;
        SYMM_TRY(stage_alloc(n, &buf, &cap));
        symm_status st = SYMM_SUCCESS;
        for (uint64_t done = 0; done < n && st == SYMM_SUCCESS;) {
            uint64_t m = n - done < cap ? n - done : cap;
            st = tp_get(ctx, buf, pe, off + done, m, 0);
            if (st == SYMM_SUCCESS) st = symm__local_copy(ctx, out + done, buf, m);
            done += m;
        }
        free(buf);
        return st;
    }
    return tp_get(ctx, dst, pe, off, n, (flags & SYMM__NBI) ? SYMM_TP_NBI : 0);
}

symm_status symm__atomic(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                         const void *value, const void *compare, void *fetched) {
    bool tp = via_tp(ctx, pe) || (ctx->amo_tp && op != SYMM_AMO_FETCH);
    if (!tp) return ctx->ops->atomic(ctx, pe, off, dtype, op, value, compare, fetched);
    TP_CALL(ctx, atomic(tp_->state, pe, off, dtype, op, value, compare, fetched, 0));
}

symm_status symm__put_signal(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                             uint64_t n, uint64_t sig_off, uint64_t value, uint32_t amo,
                             uint32_t flags) {
    if (via_tp(ctx, pe)) {
        uint32_t sig_op = amo == SYMM_AMO_ADD ? SYMM_SIGNAL_ADD : SYMM_SIGNAL_SET;
        const bool dev = dev_mem(ctx, src);
        if (partial_words(off, n) && dev) {
            /* A device buffer with partial words: everything before the
             * part that carries the signal completes first (blocking). */
            uint64_t head, mid, tail;
            split_words(off, n, &head, &mid, &tail);
            const uint8_t *s8 = src;
            if (!tail) {
                SYMM_TRY(put_edge(ctx, pe, off, s8, head));
                return symm__put_signal(ctx, pe, off + head, s8 + head, mid, sig_off, value, amo,
                                        flags);
            }
            uint8_t b[8];
            SYMM_TRY(symm__put(ctx, pe, off, s8, head + mid, 0));
            SYMM_TRY(symm__local_copy(ctx, b, s8 + head + mid, tail));
            return tp_put_signal(ctx, pe, off + head + mid, b, tail, sig_off, value, sig_op, 0);
        }
        if (dev && n && !in_heap(ctx, src)) {
            /* Every piece but the last completes (blocking puts) before the
             * last one goes with the signal, so the signal still lands last. */
            uint8_t *buf;
            size_t cap;
            SYMM_TRY(stage_alloc(n, &buf, &cap));
            uint64_t last = (n - 1) / cap * cap; /* offset of the last piece */
            symm_status st = staged_put(ctx, pe, off, src, last, buf, cap);
            if (st == SYMM_SUCCESS)
                st = symm__local_copy(ctx, buf, (const uint8_t *)src + last, n - last);
            if (st == SYMM_SUCCESS)
                st = tp_put_signal(ctx, pe, off + last, buf, n - last, sig_off, value, sig_op, 0);
            free(buf);
            return st;
        }
        return tp_put_signal(ctx, pe, off, src, n, sig_off, value, sig_op,
                             (flags & SYMM__NBI) ? SYMM_TP_NBI : 0);
    }
    /* This host: the data by load/store, then the fence orders it before the
     * signal update (which may itself go through the transport: amo_tp). */
    if (n > 0) SYMM_TRY(symm__put(ctx, pe, off, src, n, flags));
    SYMM_TRY(symm__fence(ctx));
    return symm__atomic(ctx, pe, sig_off, SYMM_DTYPE_UINT64, amo, &value, NULL, NULL);
}

symm_status symm__quiet(symm__ctx *ctx) {
    SYMM_TRY(ctx->ops->quiet(ctx));
    if (!ctx->tp) return SYMM_SUCCESS;
    TP_CALL(ctx, quiet(tp_->state));
}

/* With amo_tp an atomic or signal update to a PE of this host goes through
 * the transport while the puts before it went through the backend, whose
 * fence orders only its own path (the CUDA backend's nbi copies still wait
 * on its stream): so the backend's operations complete (quiet) before
 * anything after the fence can take the transport's way. Test: tests/remote
 * "stream_" cases, GPU-RESULTS.md "2026-12-07: the seventh run on one H100". */
symm_status symm__fence(symm__ctx *ctx) {
    SYMM_TRY(ctx->amo_tp ? ctx->ops->quiet(ctx) : ctx->ops->fence(ctx));
    if (!ctx->tp) return SYMM_SUCCESS;
    TP_CALL(ctx, fence(tp_->state));
}

void symm__progress(symm__ctx *ctx) {
    if (ctx->tp && ctx->tp->ops->progress) ctx->tp->ops->progress(ctx->tp->state);
}

bool symm__team_has_remote(const symm__team *team) {
    const symm__ctx *ctx = team->ctx;
    if (!ctx->n_remote) return false;
    for (int32_t i = 0; i < team->n_pes; i++)
        if (ctx->remote[symm__team_world_pe(team, i)]) return true;
    return false;
}

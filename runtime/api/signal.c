/*
 * Signals, in every call mode: one element of a SYMM_DTYPE_UINT64 buffer,
 * updated with an atomic SET or ADD, optionally after a put whose data it
 * announces; waits on it.
 *
 * put_signal (route.c) = put, fence, atomic on the signal (one message through
 * a transport for a PE of another host): the fence
 * orders the data before the signal at the target, so a PE that sees the
 * signal (signal_wait_until, or any wait/test on it) then reads the data.
 * The _nbi form issues the data put as nbi (src must stay untouched until the
 * next quiet); the signal update itself is issued at once and is ordered after
 * the data by the fence. Completing earlier than quiet is allowed.
 */
#include <inttypes.h>

#include "entry.h"
#include "stream_px.h"

/* A signal element: uint64 buffer, index inside it. */
static inline symm_status check_signal(const char *fn, const symm__buf *sig, uint64_t sig_index) {
    SYMM_CHECK(sig->dtype == SYMM_DTYPE_UINT64, SYMM_ERR_INVALID_ARG,
               "%s: a signal buffer must be SYMM_DTYPE_UINT64 (dtype %u given)", fn, sig->dtype);
    SYMM_TRY_IN(fn, symm__range_ok(sig, sig_index, 1));
    return SYMM_SUCCESS;
}

symm_status symm__check_signal(const char *fn, const symm__buf *sig, uint64_t sig_index) {
    return check_signal(fn, sig, sig_index);
}

/* SYMM_SIGNAL_* -> SYMM_AMO_*. */
symm_status symm__signal_amo(const char *fn, uint32_t sig_op, uint32_t *amo) {
    switch (sig_op) {
    case SYMM_SIGNAL_SET: *amo = SYMM_AMO_SET; return SYMM_SUCCESS;
    case SYMM_SIGNAL_ADD: *amo = SYMM_AMO_ADD; return SYMM_SUCCESS;
    default:
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "%s: unknown signal op %u (expected SYMM_SIGNAL_SET or SYMM_SIGNAL_ADD)",
                         fn, sig_op);
    }
}

symm_status symm__put_signal_check(const char *fn, symm_buf dst_h, uint64_t dst_index,
                                   const void *src, uint64_t nelems, symm_buf sig_h,
                                   uint64_t sig_index, uint32_t sig_op, int32_t pe,
                                   symm__buf **dstp, symm__buf **sigp, uint32_t *amo) {
    symm__buf *dst = NULL, *sig = NULL; /* -O3 cannot see the check fill them */
    SYMM_TRY(symm__enter_buf(fn, dst_h, &dst));
    SYMM_TRY_IN(fn, symm__buf_get(sig_h, &sig));
    symm__ctx *ctx = dst->ctx;
    SYMM_CHECK(sig->ctx == ctx, SYMM_ERR_INVALID_ARG,
               "%s: dst and sig belong to different contexts", fn);
    SYMM_TRY_IN(fn, symm__target_ok(ctx, pe));
    SYMM_TRY(symm__signal_amo(fn, sig_op, amo));
    SYMM_TRY(check_signal(fn, sig, sig_index));
    SYMM_TRY_IN(fn, symm__range_ok(dst, dst_index, nelems));
    SYMM_CHECK(src || nelems == 0, SYMM_ERR_INVALID_ARG, "%s: src is NULL", fn);
    SYMM_CHECK(sig != dst || sig_index < dst_index || sig_index - dst_index >= nelems,
               SYMM_ERR_INVALID_ARG,
               "%s: the signal element %" PRIu64 " lies inside the data range [%" PRIu64
               ", %" PRIu64 ")", fn, sig_index, dst_index, dst_index + nelems);
    *dstp = dst;
    *sigp = sig;
    return SYMM_SUCCESS;
}

static symm_status put_signal(const char *fn, symm_buf dst_h, uint64_t dst_index,
                              const void *src, uint64_t nelems, symm_buf sig_h,
                              uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe,
                              uint32_t flags) {
    symm__buf *dst = NULL, *sig = NULL; /* -O3 cannot see the check fill them */
    uint32_t amo = SYMM_AMO_SET;
    SYMM_TRY(symm__put_signal_check(fn, dst_h, dst_index, src, nelems, sig_h, sig_index, sig_op,
                                    pe, &dst, &sig, &amo));
    symm__ctx *ctx = dst->ctx;
    const uint64_t off = dst->off + dst_index * dst->elem_size, n = nelems * dst->elem_size;
    const uint64_t sig_off = sig->off + sig_index * sizeof(uint64_t);
    uint8_t *peer = symm__cpu_peer(ctx, pe);
    if (__builtin_expect(peer != NULL, 1)) { /* route.c's local case, inline (entry.h) */
        if (n > 0) symm__host_copy(peer + off, src, n);
        symm__host_order();
        symm__host_amo(peer + sig_off, sizeof(uint64_t), amo, signal, 0);
        return SYMM_SUCCESS;
    }
    return symm__put_signal(ctx, pe, off, src, n, sig_off, signal, amo, flags);
}

symm_status symm_put_signal(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                            symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op,
                            int32_t pe) {
    return put_signal(__func__, dst, dst_index, src, nelems, sig, sig_index, signal, sig_op, pe,
                      0);
}

symm_status symm_put_signal_nbi(symm_buf dst, uint64_t dst_index, const void *src,
                                uint64_t nelems, symm_buf sig, uint64_t sig_index,
                                uint64_t signal, uint32_t sig_op, int32_t pe) {
    return put_signal(__func__, dst, dst_index, src, nelems, sig, sig_index, signal, sig_op, pe,
                      SYMM__NBI);
}

/* The signal entries' checks: the signal element, its op, the target. */
static symm_status signal_target(const char *fn, symm_buf sig_h, uint64_t sig_index,
                                 uint32_t sig_op, int32_t pe, symm__buf **sig, uint32_t *amo) {
    SYMM_TRY(symm__enter_buf(fn, sig_h, sig));
    SYMM_TRY_IN(fn, symm__target_ok((*sig)->ctx, pe));
    SYMM_TRY(symm__signal_amo(fn, sig_op, amo));
    return check_signal(fn, *sig, sig_index);
}

static symm_status signal_op(const char *fn, symm_buf sig_h, uint64_t sig_index, uint64_t signal,
                             uint32_t sig_op, int32_t pe, symm__mode m) {
    symm__buf *sig = NULL;
    uint32_t amo = SYMM_AMO_SET;
    SYMM_TRY(signal_target(fn, sig_h, sig_index, sig_op, pe, &sig, &amo));
    symm__ctx *ctx = sig->ctx;
    uint64_t off = sig->off + sig_index * sizeof(uint64_t);
    if (m.on_stream && symm__px_stream_to(ctx, pe)) { /* another host: the proxy */
        symm_ring_req q;
        symm__ring_req_init(&q, SYMM_RING_OP_AMO, pe);
        q.sub = amo;
        q.dtype = SYMM_DTYPE_UINT64;
        q.off = off;
        q.value = signal;
        SYMM_TRY_IN(fn, symm__px_stream(ctx, &q, 0, 0, m.stream));
        return SYMM_SUCCESS;
    }
    if (m.on_stream && ctx->ops->signal_stream) {
        return ctx->ops->signal_stream(ctx, pe, off, signal, sig_op, symm__hook_stream(m.stream));
    }
    uint8_t *peer = m.on_stream ? NULL : symm__cpu_peer(ctx, pe);
    if (__builtin_expect(peer != NULL, 1)) { /* the direct path (entry.h) */
        symm__host_amo(peer + off, sizeof(uint64_t), amo, signal, 0);
        return SYMM_SUCCESS;
    }
    return symm__atomic(ctx, pe, off, SYMM_DTYPE_UINT64, amo, &signal, NULL, NULL);
}

symm_status symm_signal_op(symm_buf sig_h, uint64_t sig_index, uint64_t signal, uint32_t sig_op,
                           int32_t pe) {
    return signal_op(__func__, sig_h, sig_index, signal, sig_op, pe, SYMM__BLOCKING);
}

symm_status symm_signal_op_on_stream(symm_buf sig_h, uint64_t sig_index, uint64_t signal,
                                     uint32_t sig_op, int32_t pe, symm_stream_t stream) {
    return signal_op(__func__, sig_h, sig_index, signal, sig_op, pe, SYMM__ON_STREAM(stream));
}

symm_status symm_signal_fetch(symm_buf sig_h, uint64_t sig_index, uint64_t *value) {
    const char *fn = __func__;
    symm__buf *sig = NULL;
    SYMM_TRY(symm__enter_buf(fn, sig_h, &sig));
    symm__ctx *ctx = sig->ctx;
    SYMM_TRY(check_signal(fn, sig, sig_index));
    SYMM_CHECK(value, SYMM_ERR_INVALID_ARG, "%s: value is NULL", fn);
    const uint64_t off = sig->off + sig_index * sizeof(uint64_t);
    uint8_t *mine = symm__cpu_peer(ctx, ctx->my_pe);
    if (__builtin_expect(mine != NULL, 1)) { /* the direct path (entry.h) */
        *value = symm__host_amo(mine + off, sizeof(uint64_t), SYMM_AMO_FETCH, 0, 0);
        return SYMM_SUCCESS;
    }
    uint64_t zero = 0, v = 0;
    SYMM_TRY(symm__atomic(ctx, ctx->my_pe, off, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH, &zero, NULL,
                          &v));
    *value = v;
    return SYMM_SUCCESS;
}

static symm_status wait_target(const char *fn, symm_buf sig_h, uint64_t sig_index, uint32_t cmp,
                               symm__buf **sig) {
    SYMM_TRY(symm__enter_buf(fn, sig_h, sig));
    SYMM_TRY(check_signal(fn, *sig, sig_index));
    return symm__check_cmp(fn, cmp);
}

symm_status symm_signal_wait_until(symm_buf sig_h, uint64_t sig_index, uint32_t cmp,
                                   uint64_t value, uint64_t *value_out) {
    symm__buf *sig = NULL;
    SYMM_TRY(wait_target(__func__, sig_h, sig_index, cmp, &sig));
    uint64_t seen = 0;
    SYMM_TRY(symm__wait_elem(sig, sig_index, cmp, value, &seen));
    if (value_out) *value_out = seen;
    return SYMM_SUCCESS;
}

symm_status symm_signal_wait_until_on_stream(symm_buf sig_h, uint64_t sig_index, uint32_t cmp,
                                             uint64_t value, symm_stream_t stream) {
    symm__buf *sig = NULL;
    SYMM_TRY(wait_target(__func__, sig_h, sig_index, cmp, &sig));
    symm__ctx *ctx = sig->ctx;
    if (!ctx->ops->wait_stream) return symm_signal_wait_until(sig_h, sig_index, cmp, value, NULL);
    return ctx->ops->wait_stream(ctx, sig->off + sig_index * sizeof(uint64_t), cmp, value,
                                 symm__hook_stream(stream));
}

symm_status symm_put_signal_on_stream(symm_buf dst_h, uint64_t dst_index, const void *src,
                                      uint64_t nelems, symm_buf sig_h, uint64_t sig_index,
                                      uint64_t signal, uint32_t sig_op, int32_t pe,
                                      symm_stream_t stream) {
    const char *fn = __func__;
    symm__buf *dst = NULL, *sig = NULL; /* -O3 cannot see the check fill them */
    uint32_t amo;
    SYMM_TRY(symm__put_signal_check(fn, dst_h, dst_index, src, nelems, sig_h, sig_index, sig_op,
                                    pe, &dst, &sig, &amo));
    symm__ctx *ctx = dst->ctx;
    if (symm__px_stream_to(ctx, pe)) { /* another host: one PUT_SIGNAL through the proxy */
        symm_ring_req q;
        symm__ring_req_init(&q, SYMM_RING_OP_PUT_SIGNAL, pe);
        q.sub = sig_op;
        q.off = dst->off + dst_index * dst->elem_size;
        q.local = (uint64_t)(uintptr_t)src;
        q.n = nelems * dst->elem_size;
        q.sig_off = sig->off + sig_index * sizeof(uint64_t);
        q.value = signal;
        SYMM_TRY_IN(fn, symm__px_stream(ctx, &q, 0, 0, stream));
        return SYMM_SUCCESS;
    }
    if (!ctx->ops->put_stream || !ctx->ops->signal_stream)
        return symm_put_signal(dst_h, dst_index, src, nelems, sig_h, sig_index, signal, sig_op, pe);
    void *s = symm__hook_stream(stream);
    if (nelems > 0)
        SYMM_TRY(ctx->ops->put_stream(ctx, pe, dst->off + dst_index * dst->elem_size, src,
                                      nelems * dst->elem_size, s));
    /* stream order + the signal's own fence put the data first */
    return ctx->ops->signal_stream(ctx, pe, sig->off + sig_index * sizeof(uint64_t), signal,
                                   sig_op, s);
}

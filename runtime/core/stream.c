/*
 * Stream-ordered operations, direct access, registration and the device
 * context: core glue. Each entry validates its arguments exactly like its
 * blocking form, then calls the backend's optional hook. A backend without
 * the hook (host) runs the blocking form instead: "on the host backend they
 * run to completion before returning and stream is ignored".
 *
 * Hooks read a NULL stream as "blocking" (internal stream + wait), so the
 * user's NULL — the legacy default stream — is passed to them as
 * CU_STREAM_LEGACY.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "teams.h"

/* ------------------------------------------------------------------------ */
/* Entry checks (the shared validators live in rma.c and signal.c)           */
/* ------------------------------------------------------------------------ */

static symm_status ctx_entry(const char *fn, symm_ctx h, symm__ctx **ctx) {
    SYMM_TRY_IN(fn, symm__ctx_get(h, ctx));
    SYMM_TRY_IN(fn, symm__thread_check(*ctx));
    return SYMM_SUCCESS;
}

static symm_status team_entry(const char *fn, symm_team h, symm__team **team) {
    SYMM_TRY_IN(fn, symm__team_get(h, team));
    SYMM_TRY_IN(fn, symm__thread_check((*team)->ctx));
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Put / get                                                                 */
/* ------------------------------------------------------------------------ */

static symm_status put_on_stream(const char *fn, symm_buf dst, uint64_t index, const void *src,
                                 uint64_t nelems, int32_t pe, symm_stream_t stream) {
    symm__err_clear();
    symm__buf *b;
    uint64_t off;
    SYMM_TRY(symm__rma_target(fn, dst, index, nelems, pe, src, &b, &off));
    if (nelems == 0) return SYMM_SUCCESS;
    symm__ctx *ctx = b->ctx;
    uint64_t n = nelems * b->elem_size;
    if (ctx->ops->put_stream) {
        SYMM_TRY(symm__stream_route(fn, ctx, pe));
        return ctx->ops->put_stream(ctx, pe, off, src, n, symm__hook_stream(stream));
    }
    return symm__put(ctx, pe, off, src, n, 0);
}

static symm_status get_on_stream(const char *fn, void *dst, symm_buf src, uint64_t index,
                                 uint64_t nelems, int32_t pe, symm_stream_t stream) {
    symm__err_clear();
    symm__buf *b;
    uint64_t off;
    SYMM_TRY(symm__rma_target(fn, src, index, nelems, pe, dst, &b, &off));
    if (nelems == 0) return SYMM_SUCCESS;
    symm__ctx *ctx = b->ctx;
    uint64_t n = nelems * b->elem_size;
    if (ctx->ops->get_stream) {
        SYMM_TRY(symm__stream_route(fn, ctx, pe));
        return ctx->ops->get_stream(ctx, dst, pe, off, n, symm__hook_stream(stream));
    }
    return symm__get(ctx, dst, pe, off, n, 0);
}

symm_status symm_put_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                               int32_t pe, symm_stream_t stream) {
    return put_on_stream(__func__, dst, dst_index, src, nelems, pe, stream);
}

symm_status symm_get_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems,
                               int32_t pe, symm_stream_t stream) {
    return get_on_stream(__func__, dst, src, src_index, nelems, pe, stream);
}

/* Stream puts/gets already return at once; completion comes at a later quiet. */
symm_status symm_put_nbi_on_stream(symm_buf dst, uint64_t dst_index, const void *src,
                                   uint64_t nelems, int32_t pe, symm_stream_t stream) {
    return put_on_stream(__func__, dst, dst_index, src, nelems, pe, stream);
}

symm_status symm_get_nbi_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems,
                                   int32_t pe, symm_stream_t stream) {
    return get_on_stream(__func__, dst, src, src_index, nelems, pe, stream);
}

symm_status symm_p_on_stream(symm_buf dst, uint64_t index, const void *value, int32_t pe,
                             symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__buf *b;
    uint64_t off;
    SYMM_TRY(symm__rma_target(fn, dst, index, 1, pe, value, &b, &off));
    symm__ctx *ctx = b->ctx;
    /* Read now, from a stack copy: the backend carries pageable bytes in the
     * kernel parameter, so the stream (or a graph replay) needs no host memory. */
    uint64_t v = 0;
    memcpy(&v, value, b->elem_size);
    if (ctx->ops->put_stream) {
        SYMM_TRY(symm__stream_route(fn, ctx, pe));
        return ctx->ops->put_stream(ctx, pe, off, &v, b->elem_size, symm__hook_stream(stream));
    }
    return symm__put(ctx, pe, off, &v, b->elem_size, 0);
}

symm_status symm_putmem_on_stream(symm_ctx h, void *dst_sym, const void *src, uint64_t nbytes,
                                  int32_t pe, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__ctx *ctx;
    SYMM_TRY(ctx_entry(fn, h, &ctx));
    SYMM_TRY_IN(fn, symm__check_target(ctx, pe));
    uint64_t off;
    SYMM_TRY(symm__sym_offset(fn, ctx, dst_sym, nbytes, &off));
    SYMM_CHECK(src || nbytes == 0, SYMM_ERR_INVALID_ARG, "%s: local buffer is NULL", fn);
    if (nbytes == 0) return SYMM_SUCCESS;
    if (ctx->ops->put_stream) {
        SYMM_TRY(symm__stream_route(fn, ctx, pe));
        return ctx->ops->put_stream(ctx, pe, off, src, nbytes, symm__hook_stream(stream));
    }
    return symm__put(ctx, pe, off, src, nbytes, 0);
}

symm_status symm_getmem_on_stream(symm_ctx h, void *dst, const void *src_sym, uint64_t nbytes,
                                  int32_t pe, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__ctx *ctx;
    SYMM_TRY(ctx_entry(fn, h, &ctx));
    SYMM_TRY_IN(fn, symm__check_target(ctx, pe));
    uint64_t off;
    SYMM_TRY(symm__sym_offset(fn, ctx, src_sym, nbytes, &off));
    SYMM_CHECK(dst || nbytes == 0, SYMM_ERR_INVALID_ARG, "%s: local buffer is NULL", fn);
    if (nbytes == 0) return SYMM_SUCCESS;
    if (ctx->ops->get_stream) {
        SYMM_TRY(symm__stream_route(fn, ctx, pe));
        return ctx->ops->get_stream(ctx, dst, pe, off, nbytes, symm__hook_stream(stream));
    }
    return symm__get(ctx, dst, pe, off, nbytes, 0);
}

/* ------------------------------------------------------------------------ */
/* Signals                                                                   */
/* ------------------------------------------------------------------------ */

symm_status symm_put_signal_on_stream(symm_buf dst_h, uint64_t dst_index, const void *src,
                                      uint64_t nelems, symm_buf sig_h, uint64_t sig_index,
                                      uint64_t signal, uint32_t sig_op, int32_t pe,
                                      symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__buf *dst, *sig;
    uint32_t amo;
    SYMM_TRY(symm__put_signal_check(fn, dst_h, dst_index, src, nelems, sig_h, sig_index, sig_op,
                                    pe, &dst, &sig, &amo));
    symm__ctx *ctx = dst->ctx;
    if (!ctx->ops->put_stream || !ctx->ops->signal_stream)
        return symm_put_signal(dst_h, dst_index, src, nelems, sig_h, sig_index, signal, sig_op, pe);
    SYMM_TRY(symm__stream_route(fn, ctx, pe));
    void *s = symm__hook_stream(stream);
    if (nelems > 0)
        SYMM_TRY(ctx->ops->put_stream(ctx, pe, dst->off + dst_index * dst->elem_size, src,
                                      nelems * dst->elem_size, s));
    /* stream order + the signal's own fence put the data first */
    return ctx->ops->signal_stream(ctx, pe, sig->off + sig_index * sizeof(uint64_t), signal,
                                   sig_op, s);
}

symm_status symm_signal_op_on_stream(symm_buf sig_h, uint64_t sig_index, uint64_t signal,
                                     uint32_t sig_op, int32_t pe, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__buf *sig;
    SYMM_TRY_IN(fn, symm__buf_get(sig_h, &sig));
    symm__ctx *ctx = sig->ctx;
    SYMM_TRY_IN(fn, symm__thread_check(ctx));
    SYMM_TRY_IN(fn, symm__check_target(ctx, pe));
    uint32_t amo;
    SYMM_TRY(symm__signal_amo(fn, sig_op, &amo));
    SYMM_TRY(symm__check_signal(fn, sig, sig_index));
    if (!ctx->ops->signal_stream) return symm_signal_op(sig_h, sig_index, signal, sig_op, pe);
    SYMM_TRY(symm__stream_route(fn, ctx, pe));
    return ctx->ops->signal_stream(ctx, pe, sig->off + sig_index * sizeof(uint64_t), signal,
                                   sig_op, symm__hook_stream(stream));
}

symm_status symm_signal_wait_until_on_stream(symm_buf sig_h, uint64_t sig_index, uint32_t cmp,
                                             uint64_t value, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__buf *sig;
    SYMM_TRY_IN(fn, symm__buf_get(sig_h, &sig));
    symm__ctx *ctx = sig->ctx;
    SYMM_TRY_IN(fn, symm__thread_check(ctx));
    SYMM_TRY(symm__check_signal(fn, sig, sig_index));
    SYMM_TRY(symm__check_cmp(fn, cmp));
    if (!ctx->ops->wait_stream) return symm_signal_wait_until(sig_h, sig_index, cmp, value, NULL);
    return ctx->ops->wait_stream(ctx, sig->off + sig_index * sizeof(uint64_t), cmp, value,
                                 symm__hook_stream(stream));
}

/* ------------------------------------------------------------------------ */
/* Ordering and barriers                                                     */
/* ------------------------------------------------------------------------ */

symm_status symm_quiet_on_stream(symm_ctx h, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__ctx *ctx;
    SYMM_TRY(ctx_entry(fn, h, &ctx));
    SYMM_TRY_IN(fn, symm__check_failed(ctx));
    if (!ctx->ops->quiet_stream) return symm__quiet(ctx);
    SYMM_TRY(ctx->ops->quiet_stream(ctx, symm__hook_stream(stream)));
    /* Host-initiated transport traffic completes now (no GPU proxy yet). */
    return ctx->tp ? symm__quiet(ctx) : SYMM_SUCCESS;
}

/* quiet (when asked) then sync of team on the stream. */
static symm_status team_sync_on_stream(symm__team *team, bool quiet, symm_stream_t stream) {
    symm__ctx *ctx = team->ctx;
    SYMM_TRY(symm__check_failed(ctx));
    if (!ctx->ops->sync_stream) {
        if (quiet) SYMM_TRY(symm__quiet(ctx));
        return symm__team_sync(team);
    }
    if (symm__team_has_remote(team))
        return symm__err(SYMM_ERR_NOT_SUPPORTED,
                         "stream-ordered barriers over teams with PEs of other hosts are not "
                         "supported yet (use symm_barrier)");
    void *s = symm__hook_stream(stream);
    if (quiet && ctx->ops->quiet_stream) SYMM_TRY(ctx->ops->quiet_stream(ctx, s));
    return ctx->ops->sync_stream(ctx, team, s);
}

symm_status symm_barrier_all_on_stream(symm_ctx h, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__ctx *ctx;
    SYMM_TRY(ctx_entry(fn, h, &ctx));
    SYMM_TRY_IN(fn, team_sync_on_stream(ctx->predef[SYMM_TEAM_WORLD], true, stream));
    return SYMM_SUCCESS;
}

symm_status symm_barrier_on_stream(symm_team h, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__team *team;
    SYMM_TRY(team_entry(fn, h, &team));
    SYMM_TRY_IN(fn, team_sync_on_stream(team, true, stream));
    return SYMM_SUCCESS;
}

symm_status symm_team_sync_on_stream(symm_team h, symm_stream_t stream) {
    const char *fn = __func__;
    symm__err_clear();
    symm__team *team;
    SYMM_TRY(team_entry(fn, h, &team));
    SYMM_TRY_IN(fn, team_sync_on_stream(team, false, stream));
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Direct access                                                             */
/* ------------------------------------------------------------------------ */

symm_status symm_buf_peer_ptr(symm_buf h, int32_t pe, void **ptr) {
    const char *fn = __func__;
    symm__err_clear();
    symm__buf *b;
    SYMM_TRY_IN(fn, symm__buf_get(h, &b));
    SYMM_CHECK(ptr, SYMM_ERR_INVALID_ARG, "%s: ptr is NULL", fn);
    SYMM_TRY_IN(fn, symm__check_target(b->ctx, pe));
    uint8_t *base = b->ctx->peer_base ? b->ctx->peer_base[pe] : NULL;
    *ptr = base ? base + b->off : NULL;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Device context                                                            */
/* ------------------------------------------------------------------------ */

symm_status symm_device_ctx_get(symm_ctx h, symm_device_ctx *dctx) {
    const char *fn = __func__;
    symm__err_clear();
    symm__ctx *ctx;
    SYMM_TRY_IN(fn, symm__ctx_get(h, &ctx));
    SYMM_CHECK(dctx, SYMM_ERR_INVALID_ARG, "%s: dctx is NULL", fn);
    SYMM_CHECK(dctx->struct_size >= offsetof(symm_device_ctx, peer_base), SYMM_ERR_INVALID_ARG,
               "%s: dctx->struct_size %u is too small (set it to sizeof(symm_device_ctx))", fn,
               dctx->struct_size);
    if (!ctx->ops->device_ctx)
        return symm__err(SYMM_ERR_NOT_SUPPORTED, "%s: the %s backend has no device context", fn,
                         ctx->ops->name);
    symm_device_ctx d;
    SYMM_TRY_IN(fn, ctx->ops->device_ctx(ctx, &d));
    uint32_t size = dctx->struct_size < sizeof d ? dctx->struct_size : (uint32_t)sizeof d;
    d.struct_size = size;
    memcpy(dctx, &d, size);
    return SYMM_SUCCESS;
}

symm_status symm__device_team_of(const symm__team *t, symm_device_team *d) {
    /* GPU code addresses team PE i as start + i * stride */
    int32_t start = symm__team_world_pe(t, 0);
    int32_t stride = t->n_pes > 1 ? symm__team_world_pe(t, 1) - start : 1;
    for (int32_t i = 0; i < t->n_pes; i++)
        SYMM_CHECK(symm__team_world_pe(t, i) == start + i * stride, SYMM_ERR_NOT_SUPPORTED,
                   "the team's PEs are not evenly strided; GPU code cannot address it");
    memset(d, 0, sizeof *d);
    d->struct_size = (uint32_t)sizeof *d;
    d->my_pe = t->my_pe;
    d->n_pes = t->n_pes;
    d->start = start;
    d->stride = stride;
    d->slot = t->slot;
    return SYMM_SUCCESS;
}

symm_status symm_device_team_get(symm_team h, symm_device_team *dteam) {
    const char *fn = __func__;
    symm__err_clear();
    symm__team *t;
    SYMM_TRY_IN(fn, symm__team_get(h, &t));
    SYMM_CHECK(dteam, SYMM_ERR_INVALID_ARG, "%s: dteam is NULL", fn);
    SYMM_CHECK(dteam->struct_size >= offsetof(symm_device_team, reserved), SYMM_ERR_INVALID_ARG,
               "%s: dteam->struct_size %u is too small (set it to sizeof(symm_device_team))", fn,
               dteam->struct_size);
    if (!t->ctx->ops->device_ctx)
        return symm__err(SYMM_ERR_NOT_SUPPORTED, "%s: the %s backend has no device context", fn,
                         t->ctx->ops->name);
    symm_device_team d;
    SYMM_TRY_IN(fn, symm__device_team_of(t, &d));
    uint32_t size = dteam->struct_size < sizeof d ? dteam->struct_size : (uint32_t)sizeof d;
    d.struct_size = size;
    memcpy(dteam, &d, size);
    return SYMM_SUCCESS;
}

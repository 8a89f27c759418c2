/*
 * Direct access and GPU code: a peer's address of a buffer, the device
 * context and device teams that kernels take (symm_device.cuh).
 */
#include <string.h>

#include "entry.h"
#include "proxy/proxy.h"

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
    /* 1.3: the proxy's rings, for PEs that are not load/store reachable */
    d.device_abi = SYMM_DEVICE_ABI_VERSION;
    SYMM_TRY_IN(fn, symm__proxy_device_rings(ctx, &d.rings, &d.n_rings));
    uint32_t size = dctx->struct_size < sizeof d ? dctx->struct_size : (uint32_t)sizeof d;
    d.struct_size = size;
    memcpy(dctx, &d, size);
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

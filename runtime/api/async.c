/* Asynchronous failures: recorded per context, read with symm_ctx_async_error. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "proxy/proxy.h"

symm_status symm_ctx_async_error(symm_ctx h, uint32_t flags, uint64_t msg_cap,
                                 symm_status *status, char *msg) {
    symm__err_clear();
    symm__ctx *ctx;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_CHECK(!(flags & ~SYMM_ASYNC_CLEAR), SYMM_ERR_INVALID_ARG,
               "symm_ctx_async_error: unknown flags 0x%x", (unsigned)flags);
    SYMM_CHECK(status, SYMM_ERR_INVALID_ARG, "symm_ctx_async_error: status is NULL");
    SYMM_CHECK(msg || msg_cap == 0, SYMM_ERR_INVALID_ARG,
               "symm_ctx_async_error: msg is NULL but msg_cap is %llu",
               (unsigned long long)msg_cap);
    if (ctx->ops && ctx->ops->async_poll) ctx->ops->async_poll(ctx);

    pthread_mutex_lock(&ctx->async_lock);
    symm_status st = ctx->async_count ? ctx->async_status : SYMM_SUCCESS;
    if (msg_cap > 0) {
        size_t cap = msg_cap > sizeof ctx->async_msg ? sizeof ctx->async_msg : (size_t)msg_cap;
        const char *text = ctx->async_count ? ctx->async_msg : "";
        size_t len = strnlen(text, cap - 1);
        memcpy(msg, text, len);
        msg[len] = '\0';
    }
    if (ctx->async_count > 1 && msg_cap > 0) {
        /* say that more failed, when it fits */
        char more[64];
        int n = snprintf(more, sizeof more, " (and %llu later failures)",
                         (unsigned long long)(ctx->async_count - 1));
        size_t len = strlen(msg);
        if (n > 0 && len + (size_t)n < msg_cap && len + (size_t)n < sizeof ctx->async_msg)
            memcpy(msg + len, more, (size_t)n + 1);
    }
    if (flags & SYMM_ASYNC_CLEAR) {
        symm__proxy_ack(ctx); /* the proxy's failures were recorded here */
        ctx->async_count = 0;
        ctx->async_status = SYMM_SUCCESS;
        ctx->async_msg[0] = '\0';
    }
    pthread_mutex_unlock(&ctx->async_lock);
    *status = st;
    return SYMM_SUCCESS;
}

/* Context lifecycle and queries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "proxy/proxy.h"
#include "teams.h"
#include "transports/registry.h"

symm_status symm_get_version(uint32_t *runtime_version) {
    symm__err_clear();
    SYMM_CHECK(runtime_version, SYMM_ERR_INVALID_ARG, "symm_get_version: runtime_version is NULL");
    *runtime_version = SYMM_VERSION;
    return SYMM_SUCCESS;
}

/* Answered by the loader; the runtime keeps this wrapper of the shared code
 * for its own use (config.c) and for tests linked against runtime objects. */
symm_status symm_init_attr_init(symm_init_attr *attr, uint32_t struct_size) {
    symm__err_clear();
    const char *why = symm__fill_init_attr(attr, struct_size);
    if (why) return symm__err(SYMM_ERR_INVALID_ARG, "symm_init_attr_init: %s (struct_size %u)", why, struct_size);
    return SYMM_SUCCESS;
}

/* ---- init / finalize ---- */

static void ctx_destroy(symm__ctx *ctx) {
    symm__watch_stop(ctx); /* first: it reads the bootstrap and the backend */
    /* The proxy's thread runs requests through the transport and the heap:
     * it ends (requests in flight complete or fail) before they go. */
    symm__proxy_destroy(ctx);
    while (ctx->bufs) {
        symm__buf *b = ctx->bufs;
        ctx->bufs = b->next;
        symm__handle_release(SYMM__KIND_BUF, b->handle);
        free(b);
    }
    symm__teams_fini(ctx);
    symm__tp_close(ctx); /* before the memory it reaches goes */
    if (ctx->ops && ctx->heap_base) ctx->ops->heap_fini(ctx);
    if (ctx->ops && ctx->ops->fini) ctx->ops->fini(ctx);
    symm__alloc_fini(&ctx->alloc);
    free(ctx->peer_base);
    free(ctx->remote);
    symm__boot_close(ctx->boot);
    if (ctx->handle) symm__handle_release(SYMM__KIND_CTX, ctx->handle);
    pthread_mutex_destroy(&ctx->lock);
    pthread_mutex_destroy(&ctx->async_lock);
    free(ctx);
}

/* Collective: every PE picks the same backend (the registry's choice for
 * the configuration) or every PE fails, naming the PE that could not. */
static symm_status pick_backend(symm__ctx *ctx) {
    /* Every PE must pick the same backend. */
    symm_status st = symm__backend_pick(ctx->cfg.backend, &ctx->ops, ctx->backend_why, sizeof ctx->backend_why);
    uint32_t mine[2] = {st == SYMM_SUCCESS ? ctx->ops->id : 0u, (uint32_t)st};
    uint32_t *all = calloc((size_t)ctx->n_pes, sizeof mine);
    if (!all) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    char saved[512];
    snprintf(saved, sizeof saved, "%s", symm__last_error());
    symm_status gst = symm__boot_allgather(ctx->boot, mine, all, sizeof mine);
    if (gst) {
        free(all);
        return gst;
    }
    for (int32_t pe = 0; pe < ctx->n_pes && st == SYMM_SUCCESS; pe++) {
        if (all[2 * pe + 1] != SYMM_SUCCESS) {
            st = symm__err((symm_status)all[2 * pe + 1], "symm_init: PE %d could not set up its backend", pe);
        } else if (all[2 * pe] != mine[0]) {
            st = symm__err(SYMM_ERR_MISMATCH,
                           "symm_init: PEs chose different backends (PE %d: %u, PE %d: %u); set SYMM_BACKEND",
                           ctx->my_pe, mine[0], pe, all[2 * pe]);
        }
    }
    free(all);
    if (st && mine[1] != SYMM_SUCCESS) symm__err((symm_status)mine[1], "%s", saved);
    return st;
}

/* Collective: reserve the heap, back and zero the system area, hand it to
 * the transport and start the allocator above it. */
static symm_status heap_setup(symm__ctx *ctx) {
    ctx->peer_base = calloc((size_t)ctx->n_pes, sizeof *ctx->peer_base);
    if (!ctx->peer_base) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    /* The system area grows with the job (a device barrier flag per PE in
     * every team slot); the cap keeps at least one chunk above it. */
    ctx->slot_bytes = symm__slot_bytes_for(ctx->n_pes);
    ctx->sys_bytes = (uint64_t)SYMM__MAX_TEAMS * ctx->slot_bytes;
    {
        uint64_t chunk = ctx->cfg.heap_chunk;
        uint64_t min_cap = (ctx->sys_bytes + chunk - 1) / chunk * chunk + chunk;
        if (ctx->cfg.heap_cap < min_cap) ctx->cfg.heap_cap = min_cap;
    }
    ctx->heap_cap = ctx->cfg.heap_cap;
    SYMM_TRY(ctx->ops->heap_init(ctx));
    /* Back the whole system area from the start. */
    uint64_t first = (ctx->sys_bytes + ctx->cfg.heap_chunk - 1) / ctx->cfg.heap_chunk *
                     ctx->cfg.heap_chunk;
    SYMM_TRY(ctx->ops->heap_grow(ctx, first));
    ctx->heap_mapped = first;
    SYMM_TRY(symm__tp_mem_add(ctx, ctx->heap_base, 0, first)); /* collective */
    SYMM_TRY(ctx->ops->memset0(ctx, 0, ctx->sys_bytes));
    return symm__alloc_init(&ctx->alloc, ctx->sys_bytes, ctx->heap_cap);
}

/* Kept whole (84 lines) on purpose: it is the order of initialisation, one
 * call a step with the one cleanup path after it, which reads as the list of
 * what a context is made of; cut in two, each half would need the other's
 * state to clean up. */
symm_status symm_init(const symm_init_attr *attr, symm_ctx *out) {
    symm__err_clear();
    symm__log_setup();
    symm__lifetime_init();
    SYMM_CHECK(out, SYMM_ERR_INVALID_ARG, "symm_init: ctx out-parameter is NULL");
    symm__ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&ctx->lock, &ma);
    pthread_mutexattr_destroy(&ma);
    pthread_mutex_init(&ctx->async_lock, NULL);
    ctx->init_thread = pthread_self();

    symm_status st = symm__config_load(attr, &ctx->cfg);
    if (st) goto fail;
    ctx->thread_level = ctx->cfg.thread_level;

    symm__boot_params bp = {.bootstrap = ctx->cfg.bootstrap,
                            .timeout_ms = ctx->cfg.timeout_ms,
                            .peer_timeout_ms = ctx->cfg.peer_timeout_ms,
                            .uid_rank = ctx->cfg.uid_rank,
                            .uid_n_pes = ctx->cfg.uid_n_pes,
                            .unique_id = ctx->cfg.unique_id};
    st = symm__boot_open(&bp, &ctx->boot, &ctx->boot_info);
    if (st) goto fail;
    ctx->my_pe = ctx->boot_info.rank;
    symm__log_set_pe(ctx->my_pe);
    ctx->n_pes = ctx->boot_info.n_pes;
    ctx->local_pe = ctx->boot_info.local_rank;
    ctx->local_n_pes = ctx->boot_info.local_n_pes;

    st = pick_backend(ctx);
    if (st) goto fail;
    /* PEs of other hosts go through a transport (none for one host). */
    st = symm__routes_init(ctx);
    if (st) goto fail;
    const char *const *tp_names;
    size_t n_tp_names = symm__transport_names(&tp_names);
    st = symm__tp_open(ctx, tp_names, n_tp_names);
    if (st) goto fail;

    st = heap_setup(ctx);
    if (st) goto fail;
    st = symm__teams_init(ctx);
    if (st) goto fail;
    /* Nobody touches a peer's system area before it is zeroed. */
    st = symm__boot_barrier(ctx->boot);
    if (st) goto fail;

    /* The GPU proxy: GPU code (kernels, stream forms) reaches PEs of other
     * hosts through it (docs/PROXY.md). Only with PEs of other hosts and a
     * device backend, or SYMM_PROXY_FORCE=1 (tests). */
    {
        symm__proxy_opts po;
        st = symm__proxy_opts_env(&po);
        if (st) goto fail;
        const char *force = getenv("SYMM_PROXY_FORCE");
        po.flags |= SYMM__PROXY_NEED_GPU;
        if (force && strcmp(force, "1") == 0) po.flags |= SYMM__PROXY_FORCE;
        st = symm__proxy_start(ctx, &po);
        if (st) goto fail;
    }

    ctx->handle = symm__handle_new(SYMM__KIND_CTX, ctx);
    if (!ctx->handle) { st = symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: handle table full"); goto fail; }
    symm__watch_start(ctx);
    *out = (symm_ctx)(uintptr_t)ctx->handle;
    symm__log_init_summary(ctx);
    return SYMM_SUCCESS;

fail:;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", symm__last_error());
    SYMM_INFO(SYMM_LOG_INIT, "symm_init failed with %s: %s", symm__status_name(st), msg);
    if (ctx->boot) { /* the peers learn why, not that this PE "left the job" */
        char why[1100];
        snprintf(why, sizeof why, "symm_init failed (%s): %s", symm__status_name(st), msg);
        symm__boot_abort(ctx->boot, why);
    }
    ctx_destroy(ctx);
    return symm__err(st, "%s", msg);
}

static bool team_of_ctx(void *team, void *ctx) {
    return ((symm__team *)team)->ctx == ctx;
}

symm_status symm_finalize(symm_ctx *pctx) {
    const char *fn = "symm_finalize";
    symm__err_clear();
    if (!pctx || !*pctx) return SYMM_SUCCESS;
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(*pctx, &ctx));
    SYMM_TRY(symm__thread_check(ctx));
    /* INVALID_HANDLE when another thread's finalize got here first */
    SYMM_TRY(symm__ctx_lock(fn, ctx));
    symm_status st = symm__check_failed(ctx);
    /* requests GPU code posted complete (or fail) before the context goes */
    if (st == SYMM_SUCCESS) st = symm__proxy_quiet(ctx);
    if (st == SYMM_SUCCESS) st = symm__quiet(ctx);
    /* Peers may still be writing into this heap: leave together. */
    if (st == SYMM_SUCCESS) st = symm__boot_barrier(ctx->boot);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", symm__last_error());
    /* Unreachable first: the handles of the context, its buffers and its
     * teams go stale (waits in progress see closing and leave). */
    atomic_store(&ctx->closing, 1);
    symm__handle_release(SYMM__KIND_CTX, ctx->handle);
    ctx->handle = 0;
    for (symm__buf *b = ctx->bufs; b; b = b->next) {
        atomic_store(&b->closing, 1);
        symm__handle_release(SYMM__KIND_BUF, b->handle);
    }
    symm__handle_release_if(SYMM__KIND_TEAM, team_of_ctx, ctx);
    pthread_mutex_unlock(&ctx->lock);
    /* Then no call of another thread may still use it (its lock included). */
    symm__retire(ctx, NULL);
    ctx_destroy(ctx);
    *pctx = NULL;
    if (st) return symm__err(st, "symm_finalize: %s (local resources were released)", msg);
    return SYMM_SUCCESS;
}

int32_t symm_my_pe(symm_ctx h) {
    symm__ctx *ctx = symm__handle_get(SYMM__KIND_CTX, (uint64_t)(uintptr_t)h);
    return ctx ? ctx->my_pe : -1;
}

int32_t symm_n_pes(symm_ctx h) {
    symm__ctx *ctx = symm__handle_get(SYMM__KIND_CTX, (uint64_t)(uintptr_t)h);
    return ctx ? ctx->n_pes : -1;
}

symm_status symm_ctx_query(symm_ctx h, symm_ctx_info *info) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_CHECK(info, SYMM_ERR_INVALID_ARG, "symm_ctx_query: info is NULL");
    SYMM_CHECK(info->struct_size >= offsetof(symm_ctx_info, heap_cap), SYMM_ERR_INVALID_ARG,
               "symm_ctx_query: info->struct_size %u is too small (set it to sizeof(symm_ctx_info))",
               info->struct_size);
    symm_ctx_info d;
    memset(&d, 0, sizeof d);
    d.struct_size = info->struct_size < sizeof d ? info->struct_size : (uint32_t)sizeof d;
    d.backend = ctx->ops->id;
    d.thread_level = ctx->thread_level;
    d.my_pe = ctx->my_pe;
    d.n_pes = ctx->n_pes;
    d.local_pe = ctx->local_pe;
    d.local_n_pes = ctx->local_n_pes;
    d.device = ctx->ops->has_device ? ctx->cfg.device : -1;
    d.heap_cap = ctx->heap_cap;
    SYMM_TRY(symm__ctx_lock("symm_ctx_query", ctx));
    d.heap_mapped = ctx->heap_mapped;
    d.heap_used = ctx->alloc.used;
    pthread_mutex_unlock(&ctx->lock);
    memcpy(info, &d, d.struct_size);
    return SYMM_SUCCESS;
}

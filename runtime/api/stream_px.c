/* Stream forms to PEs of other hosts through the GPU proxy (stream_px.h). */
#include <stdlib.h>
#include <string.h>

#include "stream_px.h"

bool symm__px_stream_team(const symm__team *team) {
    const symm__ctx *ctx = team->ctx;
    return ctx->proxy && ctx->ops->ring_stream && symm__team_has_remote(team);
}

/* Post q on ring r from the stream: the stream waits on its wake word where
 * the backend can (no SM held while the proxy works: on one GPU shared by
 * two processes a resident waiting kernel made the other's GPU work wait a
 * time slice, probe_timeslice), else the backend's thread waits (also in a
 * capture: a graph may replay beside the stream's later work, and one word
 * a stream would be shared). */
static symm_status px_post(symm__ctx *ctx, uint32_t ring, const symm_ring *r,
                           const symm_ring_req *q, uint64_t inline_bytes, uint32_t n_inline,
                           symm_stream_t stream) {
    void *hs = symm__hook_stream(stream);
    const bool can = ctx->ops->ring_stream_wake && ctx->ops->ring_stream_wake(ctx, hs);
    symm__px_wake wk;
    const bool woken = can && symm__proxy_stream_wake(ctx, hs, ring, &wk) == SYMM_SUCCESS;
    if (can && !woken) symm__err_clear(); /* every word taken: the thread waits */
    return ctx->ops->ring_stream(ctx, r, q, inline_bytes, n_inline, woken ? &wk : NULL, hs);
}

symm_status symm__px_stream(symm__ctx *ctx, const symm_ring_req *q, uint64_t inline_bytes,
                            uint32_t n_inline, symm_stream_t stream) {
    symm_ring r;
    SYMM_TRY(symm__proxy_stream_ring(ctx, &r));
    return px_post(ctx, symm__proxy_n_rings(ctx) - 1u, &r, q, inline_bytes, n_inline, stream);
}

symm_status symm__px_stream_call(symm__ctx *ctx, symm__proxy_call_fn fn, const void *arg,
                                 size_t arg_bytes, symm_stream_t stream) {
    void *copy = malloc(arg_bytes);
    if (!copy) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    memcpy(copy, arg, arg_bytes);
    /* Kept (a captured graph replays the kernel, which posts the same number
     * again); the same call again reuses it (symm__proxy_call_add). */
    uint64_t id = 0;
    SYMM_TRY(symm__proxy_call_add(ctx, fn, copy, arg_bytes, free, false, &id));
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_CALL, 0);
    q.value = id;
    return symm__px_stream(ctx, &q, 0, 0, stream);
}

symm_status symm__px_team_call(symm__team *team, symm__proxy_call_fn fn, void *arg,
                               size_t arg_bytes, bool *counted, symm_stream_t stream) {
    symm__ctx *ctx = team->ctx;
    /* A graph's call runs at every replay, or never: it cannot be counted
     * (docs/PROXY.md: the application orders a graph's team calls itself). */
    *counted = !(ctx->ops->stream_capturing &&
                 ctx->ops->stream_capturing(ctx, symm__hook_stream(stream)));
    symm_status st = symm__px_stream_call(ctx, fn, arg, arg_bytes, stream);
    if (st == SYMM_SUCCESS && *counted) atomic_fetch_add(&team->px_issued, 1);
    return st;
}

void symm__px_team_done(symm__team *team, bool counted) {
    if (counted) atomic_fetch_add(&team->px_done, 1);
}

typedef struct drain_arg {
    symm__team *team;
    uint64_t want;
} drain_arg;

static bool drained(void *arg) {
    const drain_arg *a = arg;
    /* a stopped proxy runs nothing more: what it left fails the stream */
    return atomic_load(&a->team->px_done) >= a->want || !symm__proxy_running(a->team->ctx);
}

symm_status symm__team_px_drain(symm__team *team) {
    const uint64_t want = atomic_load(&team->px_issued);
    if (atomic_load(&team->px_done) >= want) return SYMM_SUCCESS;
    drain_arg a = {team, want};
    return symm__wait(team->ctx, drained, &a);
}

symm_status symm__px_stream_quiet(symm__ctx *ctx, symm_stream_t stream) {
    const uint32_t n = symm__proxy_n_rings(ctx);
    for (uint32_t i = 0; i < n; i++) {
        symm_ring r;
        SYMM_TRY(symm__proxy_ring(ctx, i, SYMM_RING_VERSION, &r));
        symm_ring_req q;
        symm__ring_req_init(&q, SYMM_RING_OP_QUIET, 0);
        SYMM_TRY(px_post(ctx, i, &r, &q, 0, 0, stream));
    }
    return SYMM_SUCCESS;
}

/*
 * Barriers and syncs over teams, blocking and on a stream. A barrier is a
 * quiet then a sync; the sync itself is the core's (core/sync.c) or, on a
 * stream, the backend's hook.
 */
#include "entry.h"
#include "stream_px.h"

/* A stream barrier over a team with PEs of other hosts: the blocking form,
 * run by the proxy's thread in stream order (stream_px.h). The team is named
 * by its handle, so a replay after the team's destroy fails cleanly. */
typedef struct px_sync_arg {
    symm_team team;
    bool quiet, counted;
} px_sync_arg;

static symm_status px_sync(symm__ctx *ctx, void *arg) {
    const px_sync_arg *a = arg;
    symm__team *t = symm__team_lookup(a->team);
    if (!t || t->ctx != ctx)
        return symm__err(SYMM_ERR_INVALID_HANDLE, "stream barrier: the team was destroyed");
    symm_status st = a->quiet ? symm__quiet(ctx) : SYMM_SUCCESS;
    if (st == SYMM_SUCCESS) st = symm__team_sync(t);
    symm__px_team_done(t, a->counted);
    return st;
}

/* quiet (when asked) then sync of team, blocking or on a stream. */
static symm_status team_sync(symm__team *team, bool quiet, symm__mode m) {
    symm__ctx *ctx = team->ctx;
    if (!m.on_stream || !ctx->ops->sync_stream) {
        if (m.on_stream) SYMM_TRY(symm__check_failed(ctx));
        /* after the team's stream barriers and collectives issued before */
        SYMM_TRY(symm__team_px_drain(team));
        if (quiet) SYMM_TRY(symm__quiet(ctx));
        return symm__team_sync(team);
    }
    SYMM_TRY(symm__check_failed(ctx));
    if (symm__px_stream_team(team)) {
        px_sync_arg a;
        memset(&a, 0, sizeof a); /* equal calls compare equal (symm__proxy_call_add) */
        a.team = (symm_team)(uintptr_t)team->handle;
        a.quiet = quiet;
        /* the stream's earlier requests to other hosts complete first */
        if (quiet) SYMM_TRY(symm__px_stream_quiet(ctx, m.stream));
        return symm__px_team_call(team, px_sync, &a, sizeof a, &a.counted, m.stream);
    }
    void *s = symm__hook_stream(m.stream);
    if (quiet && ctx->ops->quiet_stream) SYMM_TRY(ctx->ops->quiet_stream(ctx, s));
    return ctx->ops->sync_stream(ctx, team, s);
}

static symm_status world(const char *fn, symm_ctx h, bool quiet, symm__mode m) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__enter_ctx(fn, h, &ctx));
    SYMM_TRY_IN(fn, team_sync(ctx->predef[SYMM_TEAM_WORLD], quiet, m));
    return SYMM_SUCCESS;
}

static symm_status team(const char *fn, symm_team h, bool quiet, symm__mode m) {
    symm__team *t;
    SYMM_TRY(symm__enter_team(fn, h, &t));
    SYMM_TRY_IN(fn, team_sync(t, quiet, m));
    return SYMM_SUCCESS;
}

symm_status symm_barrier_all(symm_ctx h) {
    return world(__func__, h, true, SYMM__BLOCKING);
}

symm_status symm_sync_all(symm_ctx h) {
    return world(__func__, h, false, SYMM__BLOCKING);
}

symm_status symm_barrier(symm_team h) {
    return team(__func__, h, true, SYMM__BLOCKING);
}

symm_status symm_team_sync(symm_team h) {
    return team(__func__, h, false, SYMM__BLOCKING);
}

symm_status symm_barrier_all_on_stream(symm_ctx h, symm_stream_t stream) {
    return world(__func__, h, true, SYMM__ON_STREAM(stream));
}

symm_status symm_barrier_on_stream(symm_team h, symm_stream_t stream) {
    return team(__func__, h, true, SYMM__ON_STREAM(stream));
}

symm_status symm_team_sync_on_stream(symm_team h, symm_stream_t stream) {
    return team(__func__, h, false, SYMM__ON_STREAM(stream));
}

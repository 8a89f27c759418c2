/*
 * Barriers over teams: a dissemination barrier on the team's sync area.
 * Round r: PE i raises flag r of PE i + 2^r to the team's epoch, then waits
 * for its own flag r to reach the epoch. Flags only grow, so a PE that runs
 * ahead into the next barrier never confuses a slower one.
 */
#include <stdio.h>

#include "internal.h"
#include "teams.h"


typedef struct flag_wait {
    symm__ctx *ctx;
    uint64_t off, epoch;
    symm_status st;
} flag_wait;

static bool flag_reached(void *arg) {
    flag_wait *w = arg;
    uint64_t v = 0;
    w->st = w->ctx->ops->atomic(w->ctx, w->ctx->my_pe, w->off, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH,
                                NULL, NULL, &v);
    return w->st != SYMM_SUCCESS || v >= w->epoch;
}

static void describe_flag(const void *arg, char *buf, unsigned long cap) {
    const flag_wait *w = arg;
    snprintf(buf, cap, "the barrier flag at heap offset %llu to reach epoch %llu",
             (unsigned long long)w->off, (unsigned long long)w->epoch);
}

symm_status symm__team_sync(symm__team *team) {
    symm__ctx *ctx = team->ctx;
    SYMM_TRY(symm__check_failed(ctx));
    if (team->n_pes == 1) return SYMM_SUCCESS;
    if (ctx->ops->sync_stream) return ctx->ops->sync_stream(ctx, team, NULL);
    uint64_t epoch = ++team->epoch;
    uint64_t base = symm__team_sync_off(ctx, team->slot) + SYMM__SLOT_BARRIER_OFF;
    int round = 0;
    for (int32_t dist = 1; dist < team->n_pes; dist <<= 1, round++) {
        int32_t to = symm__team_world_pe(team, (team->my_pe + dist) % team->n_pes);
        uint64_t off = base + (uint64_t)round * sizeof(uint64_t);
        SYMM_TRY(ctx->ops->atomic(ctx, to, off, SYMM_DTYPE_UINT64, SYMM_AMO_SET, &epoch, NULL, NULL));
        flag_wait w = {ctx, off, epoch, SYMM_SUCCESS};
        const symm__wait_what what = {describe_flag, &w};
        symm__waiting = &what;
        symm_status wst = symm__wait(ctx, flag_reached, &w);
        symm__waiting = NULL;
        SYMM_TRY(wst);
        SYMM_TRY(w.st);
    }
    return SYMM_SUCCESS;
}

static symm_status team_entry(symm_team h, symm__team **t) {
    symm__err_clear();
    SYMM_TRY(symm__team_get(h, t));
    return symm__thread_check((*t)->ctx);
}

symm_status symm_barrier(symm_team h) {
    symm__team *t;
    SYMM_TRY(team_entry(h, &t));
    SYMM_TRY(t->ctx->ops->quiet(t->ctx));
    return symm__team_sync(t);
}

symm_status symm_team_sync(symm_team h) {
    symm__team *t;
    SYMM_TRY(team_entry(h, &t));
    return symm__team_sync(t);
}

static symm_status world_entry(symm_ctx h, symm__ctx **ctx) {
    symm__err_clear();
    SYMM_TRY(symm__ctx_get(h, ctx));
    return symm__thread_check(*ctx);
}

symm_status symm_barrier_all(symm_ctx h) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(world_entry(h, &ctx));
    SYMM_TRY(ctx->ops->quiet(ctx));
    return symm__team_sync(ctx->predef[SYMM_TEAM_WORLD]);
}

symm_status symm_sync_all(symm_ctx h) {
    symm__ctx *ctx = NULL;
    SYMM_TRY(world_entry(h, &ctx));
    return symm__team_sync(ctx->predef[SYMM_TEAM_WORLD]);
}

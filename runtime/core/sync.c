/*
 * Barriers over teams: a dissemination barrier on the team's sync area.
 * Round r: PE i raises flag r of PE i + 2^r to the team's epoch, then waits
 * for its own flag r to reach the epoch. Flags only grow, so a PE that runs
 * ahead into the next barrier never confuses a slower one.
 *
 * A team that spans hosts runs it hierarchically, so that traffic between
 * hosts is one message per host and round: each member adds 1 to its host
 * leader's arrival counter (load/store), the leaders run the dissemination
 * barrier among themselves (through the transport), then each leader raises
 * its members' release words to the epoch. Counters and release words only
 * grow too.
 */
#include <stdio.h>
#include <stdlib.h>

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
    w->st = symm__atomic(w->ctx, w->ctx->my_pe, w->off, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH,
                                NULL, NULL, &v);
    return w->st != SYMM_SUCCESS || v >= w->epoch;
}

static void describe_flag(const void *arg, char *buf, unsigned long cap) {
    const flag_wait *w = arg;
    snprintf(buf, cap, "the barrier flag at heap offset %llu to reach %llu",
             (unsigned long long)w->off, (unsigned long long)w->epoch);
}

static symm_status wait_flag(symm__ctx *ctx, uint64_t off, uint64_t target) {
    flag_wait w = {ctx, off, target, SYMM_SUCCESS};
    const symm__wait_what what = {describe_flag, &w};
    symm__waiting = &what;
    symm_status st = symm__wait(ctx, flag_reached, &w);
    symm__waiting = NULL;
    SYMM_TRY(st);
    return w.st;
}

const symm__team_hier *symm__team_hier_get(symm__team *team) {
    if (team->hier) return team->hier;
    const uint64_t *host = team->ctx->boot_info.host_id;
    const int32_t n = team->n_pes;
    const uint64_t mine = host[symm__team_world_pe(team, team->my_pe)];
    symm__team_hier *h = calloc(1, sizeof *h);
    int32_t *leaders = malloc((size_t)n * sizeof *leaders);
    int32_t *locals = malloc((size_t)n * sizeof *locals);
    if (!h || !leaders || !locals) {
        free(h);
        free(leaders);
        free(locals);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        uint64_t hi = host[symm__team_world_pe(team, i)];
        bool first = true;
        for (int32_t l = 0; l < h->n_leaders && first; l++)
            first = host[symm__team_world_pe(team, leaders[l])] != hi;
        if (first) {
            if (hi == mine) {
                h->my_leader = i;
                h->my_leader_rank = h->n_leaders;
            }
            leaders[h->n_leaders++] = i;
        }
        if (hi == mine) locals[h->n_locals++] = i;
    }
    h->leaders = leaders;
    h->locals = locals;
    team->hier = h;
    return h;
}

/* Dissemination over k participants; index i of mine, world PE of each via pe_of. */
static symm_status dissemination(symm__ctx *ctx, symm__team *team, const int32_t *idx, int32_t k,
                                 int32_t i, uint64_t base, uint64_t epoch) {
    int round = 0;
    for (int32_t dist = 1; dist < k; dist <<= 1, round++) {
        int32_t to = (i + dist) % k;
        int32_t pe = symm__team_world_pe(team, idx ? idx[to] : to);
        uint64_t off = base + (uint64_t)round * sizeof(uint64_t);
        SYMM_TRY(symm__atomic(ctx, pe, off, SYMM_DTYPE_UINT64, SYMM_AMO_SET, &epoch, NULL, NULL));
        SYMM_TRY(wait_flag(ctx, off, epoch));
    }
    return SYMM_SUCCESS;
}

static symm_status hier_sync(symm__team *team, uint64_t epoch, uint64_t slot) {
    symm__ctx *ctx = team->ctx;
    const symm__team_hier *h = symm__team_hier_get(team);
    if (!h) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "team barrier: out of host memory");
    const uint64_t arrive = slot + SYMM__SLOT_ARRIVE_OFF, release = slot + SYMM__SLOT_RELEASE_OFF;
    const uint64_t one = 1;
    if (team->my_pe != h->my_leader) {
        int32_t leader = symm__team_world_pe(team, h->my_leader);
        SYMM_TRY(symm__atomic(ctx, leader, arrive, SYMM_DTYPE_UINT64, SYMM_AMO_ADD, &one, NULL, NULL));
        return wait_flag(ctx, release, epoch);
    }
    SYMM_TRY(wait_flag(ctx, arrive, epoch * (uint64_t)(h->n_locals - 1)));
    SYMM_TRY(dissemination(ctx, team, h->leaders, h->n_leaders, h->my_leader_rank,
                           slot + SYMM__SLOT_BARRIER_OFF, epoch));
    for (int32_t l = 0; l < h->n_locals; l++) {
        if (h->locals[l] == team->my_pe) continue;
        int32_t pe = symm__team_world_pe(team, h->locals[l]);
        SYMM_TRY(symm__atomic(ctx, pe, release, SYMM_DTYPE_UINT64, SYMM_AMO_SET, &epoch, NULL, NULL));
    }
    return SYMM_SUCCESS;
}

symm_status symm__team_sync(symm__team *team) {
    symm__ctx *ctx = team->ctx;
    SYMM_TRY(symm__check_failed(ctx));
    if (team->n_pes == 1) return SYMM_SUCCESS;
    const bool remote = symm__team_has_remote(team);
    if (ctx->ops->sync_stream && !remote) return ctx->ops->sync_stream(ctx, team, NULL);
    uint64_t epoch = ++team->epoch;
    uint64_t slot = symm__team_sync_off(ctx, team->slot);
    if (remote) return hier_sync(team, epoch, slot);
    return dissemination(ctx, team, NULL, team->n_pes, team->my_pe, slot + SYMM__SLOT_BARRIER_OFF,
                         epoch);
}

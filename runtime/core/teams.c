/*
 * Teams: team objects, the predefined teams of a context and the record
 * exchange that every team collective starts with (the team entries, splits
 * and destroy are api/team.c).
 *
 * A team owns a slot (ctx->slot_bytes of the system area at the bottom
 * of the heap) on each of its members: barrier flags, then a scratch record
 * (teams.h). Different teams sharing a PE use different slots on it; disjoint
 * teams may use the same slot number.
 *
 * Thread safety: queries are "any thread". Split and destroy calls on one
 * context must not run concurrently from several threads (they choose slots
 * from one table), which holds when creation is serialised by the caller as
 * collectives on one team are.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "teams.h"

static pthread_mutex_t teams_lock = PTHREAD_MUTEX_INITIALIZER;
static symm__team_x *teams_head; /* every live team of every context */

/* ------------------------------------------------------------------------ */
/* Team objects                                                              */
/* ------------------------------------------------------------------------ */

void symm__team_free(symm__team_x *tx) {
    if (!tx) return;
    if (tx->t.handle) symm__handle_release(SYMM__KIND_TEAM, tx->t.handle);
    free(tx->t.members);
    if (tx->t.hier) {
        free(tx->t.hier->leaders);
        free(tx->t.hier->locals);
        free(tx->t.hier);
    }
    free(tx->xbuf);
    free(tx);
}

/* A team of n PEs; members[] (world PEs, team order) is copied unless it is
 * an arithmetic progression. my_pe is found in it (-1 if absent). */
symm__team_x *symm__team_new(symm__ctx *ctx, const int32_t *members, int32_t n) {
    symm__team_x *tx = calloc(1, sizeof *tx);
    if (!tx) return NULL;
    symm__team *t = &tx->t;
    t->ctx = ctx;
    t->n_pes = n;
    t->my_pe = -1;
    for (int32_t i = 0; i < n; i++)
        if (members[i] == ctx->my_pe) t->my_pe = i;
    bool strided = true;
    int32_t stride = n >= 2 ? members[1] - members[0] : 1;
    for (int32_t i = 2; i < n && strided; i++) strided = members[i] - members[i - 1] == stride;
    t->start = members[0];
    t->stride = stride;
    if (!strided) {
        t->members = malloc((size_t)n * sizeof *t->members);
        if (!t->members) goto fail;
        memcpy(t->members, members, (size_t)n * sizeof *members);
    }
    tx->xbuf = calloc((size_t)n, sizeof *tx->xbuf);
    if (!tx->xbuf) goto fail;
    t->config.struct_size = sizeof t->config;
    t->config.num_contexts = 0;
    t->handle = symm__handle_new(SYMM__KIND_TEAM, t);
    if (!t->handle) goto fail;
    return tx;
fail:
    symm__team_free(tx);
    return NULL;
}

void symm__team_link(symm__team_x *tx) {
    pthread_mutex_lock(&teams_lock);
    tx->prev = NULL;
    tx->next = teams_head;
    if (teams_head) teams_head->prev = tx;
    teams_head = tx;
    pthread_mutex_unlock(&teams_lock);
}

void symm__team_unlink(symm__team_x *tx) {
    pthread_mutex_lock(&teams_lock);
    if (tx->prev) tx->prev->next = tx->next;
    else if (teams_head == tx) teams_head = tx->next;
    if (tx->next) tx->next->prev = tx->prev;
    tx->next = tx->prev = NULL;
    pthread_mutex_unlock(&teams_lock);
}

symm_team symm__team_handle(const symm__team *t) {
    return (symm_team)(uintptr_t)t->handle;
}

/* ------------------------------------------------------------------------ */
/* Predefined teams                                                          */
/* ------------------------------------------------------------------------ */

static symm_status predef_make(symm__ctx *ctx, int which, const int32_t *list, int32_t n) {
    symm__team_x *tx = symm__team_new(ctx, list, n);
    if (!tx) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of memory for teams");
    if (tx->t.my_pe < 0) {
        symm__team_free(tx);
        return symm__err(SYMM_ERR_INTERNAL, "symm_init: PE %d is missing from predefined team %d",
                         ctx->my_pe, which);
    }
    tx->t.slot = which; /* slots 0..3, in SYMM_TEAM_* order */
    tx->t.predefined = true;
    ctx->team_slot_used[which] = 1;
    ctx->predef[which] = &tx->t;
    symm__team_link(tx);
    return SYMM_SUCCESS;
}

/* A team's members must all see the same member list. Reachability reported
 * by a backend might not be symmetric or transitive; check it over the whole
 * job (symm_init is collective) and, if any PE's list disagrees with one of
 * its members', fall back to SHARED = {this PE} everywhere. */
static symm_status shared_agree(symm__ctx *ctx, int32_t *list, int32_t *k) {
    const int32_t n = ctx->n_pes;
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the member list */
    for (int32_t i = 0; i < *k; i++) {
        h ^= (uint64_t)(uint32_t)list[i];
        h *= 1099511628211ull;
    }
    uint64_t *all = calloc((size_t)n, sizeof *all);
    if (!all) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of memory for teams");
    symm_status st = symm__boot_allgather(ctx->boot, &h, all, sizeof h);
    uint64_t ok = 1;
    for (int32_t i = 0; i < *k && st == SYMM_SUCCESS; i++) ok &= all[list[i]] == h;
    if (st == SYMM_SUCCESS) st = symm__boot_allgather(ctx->boot, &ok, all, sizeof ok);
    for (int32_t pe = 0; pe < n && st == SYMM_SUCCESS; pe++) ok &= all[pe];
    free(all);
    if (st == SYMM_SUCCESS && !ok) {
        list[0] = ctx->my_pe;
        *k = 1;
    }
    return st;
}

symm_status symm__teams_init(symm__ctx *ctx) {
    _Static_assert(SYMM_TEAM_WORLD == 0 && SYMM_TEAM_SHARED == 1 && SYMM_TEAM_NODE == 2 &&
                       SYMM_TEAM_SAME_LOCAL_PE == 3,
                   "predefined team numbers are their slots");
    const int32_t n = ctx->n_pes, me = ctx->my_pe;
    const uint64_t *host = ctx->boot_info.host_id;
    const int32_t *local = ctx->boot_info.local_index;
    if (n < 1) return symm__err(SYMM_ERR_INTERNAL, "symm_init: job of %d PEs", n);
    int32_t *list = calloc((size_t)n, sizeof *list);
    if (!list) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of memory for teams");
    symm_status st;
    int32_t k;

    for (k = 0; k < n; k++) list[k] = k;
    st = predef_make(ctx, SYMM_TEAM_WORLD, list, n);

    /* Node: PEs of this host, in world order. */
    k = 0;
    for (int32_t pe = 0; pe < n && st == SYMM_SUCCESS; pe++)
        if (pe == me || (host ? host[pe] == host[me] : ctx->local_n_pes == n)) list[k++] = pe;
    if (st == SYMM_SUCCESS) st = predef_make(ctx, SYMM_TEAM_NODE, list, k);

    /* Shared: PEs this one can load/store. A SYMM__REACH_HOST backend maps
     * exactly the PEs of its host; others report reachability in peer_base[]. */
    if (st == SYMM_SUCCESS && ctx->ops->reach == SYMM__REACH_PEER_BASE) {
        k = 0;
        for (int32_t pe = 0; pe < n; pe++)
            if (pe == me || (ctx->peer_base && ctx->peer_base[pe])) list[k++] = pe;
        st = shared_agree(ctx, list, &k);
    }
    if (st == SYMM_SUCCESS) st = predef_make(ctx, SYMM_TEAM_SHARED, list, k);

    /* Same local PE: one PE per host, those whose local index (rank among
     * the PEs of its own host, from the host ids) is mine. */
    k = 0;
    for (int32_t pe = 0; pe < n && st == SYMM_SUCCESS; pe++) {
        bool same = pe == me;
        if (!same && host && local) {
            int32_t idx = 0;
            for (int32_t q = 0; q < pe; q++) idx += host[q] == host[pe];
            same = idx == local[me];
        }
        if (same) list[k++] = pe;
    }
    if (st == SYMM_SUCCESS) st = predef_make(ctx, SYMM_TEAM_SAME_LOCAL_PE, list, k);
    free(list);
    return st; /* on failure symm_init calls symm__teams_fini */
}

void symm__teams_fini(symm__ctx *ctx) {
    pthread_mutex_lock(&teams_lock);
    symm__team_x **pp = &teams_head;
    symm__team_x *dead = NULL;
    while (*pp) {
        symm__team_x *tx = *pp;
        if (tx->t.ctx == ctx) {
            *pp = tx->next;
            if (tx->next) tx->next->prev = tx->prev;
            tx->next = dead;
            dead = tx;
        } else {
            pp = &tx->next;
        }
    }
    pthread_mutex_unlock(&teams_lock);
    while (dead) {
        symm__team_x *tx = dead;
        dead = tx->next;
        if (tx->t.slot >= 0 && tx->t.slot < SYMM__MAX_TEAMS) ctx->team_slot_used[tx->t.slot] = 0;
        symm__team_free(tx);
    }
    for (int i = 0; i < 4; i++) ctx->predef[i] = NULL;
}

/* ------------------------------------------------------------------------ */
/* The record exchange                                                       */

/* ------------------------------------------------------------------------ */

symm_status symm__team_exchange(symm__team *team, const symm__xrec *mine,
                                const symm__xrec **all) {
    symm__ctx *ctx = team->ctx;
    symm__team_x *tx = symm__team_x_of(team);
    uint64_t off = symm__team_sync_off(team->ctx, team->slot) + SYMM__SLOT_SCRATCH_OFF;
    SYMM_TRY(symm__put(ctx, ctx->my_pe, off, mine, sizeof *mine, 0));
    SYMM_TRY(symm__team_sync(team));
    for (int32_t i = 0; i < team->n_pes; i++) {
        if (i == team->my_pe) {
            tx->xbuf[i] = *mine;
            continue;
        }
        SYMM_TRY(symm__get(ctx, &tx->xbuf[i], symm__team_world_pe(team, i), off,
                               sizeof tx->xbuf[i], SYMM__NBI));
    }
    SYMM_TRY(symm__quiet(ctx));
    *all = tx->xbuf;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Configs                                                                   */
/* ------------------------------------------------------------------------ */

/* The team as GPU code sees it: start + i * stride. */
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

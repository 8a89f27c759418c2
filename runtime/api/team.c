/*
 * Team entries: queries, configuration, strided and 2-D splits, destroy.
 *
 * Split protocol (collective over the parent, all data through ctx->ops):
 *   1. each PE checks its own arguments and prepares its new team objects
 *      (allocation failures become its status);
 *   2. exchange over the parent: kind, status, triplet, free-slot bitmap;
 *   3. every PE checks every record (MISMATCH / a peer's argument error) and
 *      runs the same deterministic slot choice for every new team: the lowest
 *      slot free on all of that team's members (TEAM_EXHAUSTED if none) — so
 *      all PEs of the parent reach the same verdict;
 *   4. members zero their copy of the new slot; closing sync of the parent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "stream_px.h"
#include "teams.h"

#define CONFIG_MIN_SIZE ((uint32_t)sizeof(uint32_t)) /* struct_size alone */
#define CONFIG_HAS(size, field) \
    ((size) >= offsetof(symm_team_config, field) + sizeof(((symm_team_config *)0)->field))

/* Answered by the loader; kept here over the shared code for runtime tests. */
symm_status symm_team_config_init(symm_team_config *config, uint32_t struct_size) {
    symm__err_clear();
    const char *why = symm__fill_team_config(config, struct_size);
    if (why) return symm__err(SYMM_ERR_INVALID_ARG, "symm_team_config_init: %s (struct_size %u)", why, struct_size);
    return SYMM_SUCCESS;
}

/* Read a caller's config (NULL = defaults) into *out. */
static symm_status config_read(const char *fn, const char *which, const symm_team_config *in,
                               symm_team_config *out) {
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    if (!in) return SYMM_SUCCESS;
    SYMM_CHECK(in->struct_size >= CONFIG_MIN_SIZE, SYMM_ERR_INVALID_ARG,
               "%s: %s->struct_size %u is too small (use SYMM_TEAM_CONFIG_INIT)", fn, which,
               in->struct_size);
    if (CONFIG_HAS(in->struct_size, num_contexts)) out->num_contexts = in->num_contexts;
    SYMM_CHECK(out->num_contexts >= 0, SYMM_ERR_INVALID_ARG,
               "%s: %s->num_contexts is %d (must be >= 0)", fn, which, out->num_contexts);
    return SYMM_SUCCESS;
}

symm_status symm_team_get_config(symm_team h, symm_team_config *config) {
    symm__err_clear();
    symm__team *t;
    SYMM_TRY(symm__team_get(h, &t));
    SYMM_CHECK(config, SYMM_ERR_INVALID_ARG, "symm_team_get_config: config is NULL");
    SYMM_CHECK(config->struct_size >= CONFIG_MIN_SIZE, SYMM_ERR_INVALID_ARG,
               "symm_team_get_config: config->struct_size %u is too small (set it to "
               "sizeof(symm_team_config))", config->struct_size);
    symm_team_config d = t->config;
    d.struct_size = config->struct_size < sizeof d ? config->struct_size : (uint32_t)sizeof d;
    memcpy(config, &d, d.struct_size);
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */
/* ------------------------------------------------------------------------ */

symm_status symm_team_get(symm_ctx h, uint32_t which, symm_team *team) {
    symm__err_clear();
    symm__ctx *ctx = NULL;
    SYMM_TRY(symm__ctx_get(h, &ctx));
    SYMM_CHECK(team, SYMM_ERR_INVALID_ARG, "symm_team_get: team out-parameter is NULL");
    SYMM_CHECK(which <= SYMM_TEAM_SAME_LOCAL_PE, SYMM_ERR_INVALID_ARG,
               "symm_team_get: unknown predefined team %u (expected SYMM_TEAM_WORLD, _SHARED, "
               "_NODE or _SAME_LOCAL_PE)", which);
    SYMM_CHECK(ctx->predef[which], SYMM_ERR_INTERNAL, "symm_team_get: team %u was not created",
               which);
    *team = symm__team_handle(ctx->predef[which]);
    return SYMM_SUCCESS;
}

int32_t symm_team_my_pe(symm_team h) {
    symm__team *t = symm__team_lookup(h);
    return t ? t->my_pe : -1;
}

int32_t symm_team_n_pes(symm_team h) {
    symm__team *t = symm__team_lookup(h);
    return t ? t->n_pes : -1;
}

/* Team PE of world PE w in t, or -1. */
static int32_t team_index_of(const symm__team *t, int32_t w) {
    if (t->members) {
        for (int32_t i = 0; i < t->n_pes; i++)
            if (t->members[i] == w) return i;
        return -1;
    }
    int64_t d = (int64_t)w - t->start;
    if (d % t->stride != 0) return -1;
    int64_t i = d / t->stride;
    return i >= 0 && i < t->n_pes ? (int32_t)i : -1;
}

int32_t symm_team_translate_pe(symm_team src_h, int32_t src_pe, symm_team dst_h) {
    symm__team *s = symm__team_lookup(src_h);
    symm__team *d = symm__team_lookup(dst_h);
    if (!s || !d || s->ctx != d->ctx || src_pe < 0 || src_pe >= s->n_pes) return -1;
    return team_index_of(d, symm__team_world_pe(s, src_pe));
}

/* ------------------------------------------------------------------------ */
/* Splits                                                                    */
/* ------------------------------------------------------------------------ */

/* A new team as parent PE numbers start + k * stride, k < size. */
typedef struct split_spec {
    int32_t start, stride, size;
} split_spec;

static bool spec_has(const split_spec *s, int32_t p, int32_t *k) {
    int64_t d = (int64_t)p - s->start;
    if (d % s->stride != 0) return false;
    int64_t i = d / s->stride;
    if (i < 0 || i >= s->size) return false;
    if (k) *k = (int32_t)i;
    return true;
}

/* Check a triplet against a parent of n PEs. */
static symm_status spec_check(const char *fn, const split_spec *s, int32_t n) {
    SYMM_CHECK(s->stride != 0, SYMM_ERR_INVALID_ARG, "%s: stride is 0", fn);
    SYMM_CHECK(s->size >= 1, SYMM_ERR_INVALID_ARG, "%s: size is %d (must be >= 1)", fn, s->size);
    SYMM_CHECK(s->start >= 0 && s->start < n, SYMM_ERR_INVALID_ARG,
               "%s: start %d is outside the parent team [0, %d)", fn, s->start, n);
    int64_t last = (int64_t)s->start + (int64_t)(s->size - 1) * s->stride;
    SYMM_CHECK(last >= 0 && last < n, SYMM_ERR_INVALID_ARG,
               "%s: the last PE (%lld = %d + (%d - 1) * %d) is outside the parent team [0, %d)",
               fn, (long long)last, s->start, s->size, s->stride, n);
    return SYMM_SUCCESS;
}

/* A new team object for this PE (a member of spec) of the given parent. */
static symm__team_x *spec_team(symm__team *parent, const split_spec *s) {
    int32_t *list = malloc((size_t)s->size * sizeof *list);
    if (!list) return NULL;
    for (int32_t k = 0; k < s->size; k++)
        list[k] = symm__team_world_pe(parent, s->start + k * s->stride);
    symm__team_x *tx = symm__team_new(parent->ctx, list, s->size);
    free(list);
    return tx;
}

static void bitmap_of_free_slots(symm__ctx *ctx, uint8_t *bits) {
    memset(bits, 0, SYMM__SLOT_BITMAP_BYTES);
    symm__park(ctx); /* the split holds its parent (symm__team_get) */
    pthread_mutex_lock(&ctx->lock);
    for (int s = 0; s < SYMM__MAX_TEAMS; s++)
        if (!ctx->team_slot_used[s]) bits[s / 8] |= (uint8_t)(1u << (s % 8));
    pthread_mutex_unlock(&ctx->lock);
}

/* Choose a slot for every spec, in order, from the parent members' free-slot
 * bitmaps (avail: [parent n][bitmap], updated). Deterministic: every PE of the
 * parent computes the same slots[]. false when one spec finds none. */
static bool choose_slots(uint8_t *avail, const split_spec *specs, int n_specs, int32_t *slots,
                         int *failed) {
    for (int t = 0; t < n_specs; t++) {
        uint8_t common[SYMM__SLOT_BITMAP_BYTES];
        memset(common, 0xff, sizeof common);
        const split_spec *s = &specs[t];
        for (int32_t k = 0; k < s->size; k++) {
            const uint8_t *b = avail + (size_t)(s->start + k * s->stride) * SYMM__SLOT_BITMAP_BYTES;
            for (int i = 0; i < SYMM__SLOT_BITMAP_BYTES; i++) common[i] &= b[i];
        }
        int32_t slot = -1;
        for (int i = 0; i < SYMM__MAX_TEAMS && slot < 0; i++)
            if (common[i / 8] & (1u << (i % 8))) slot = i;
        if (slot < 0) {
            *failed = t;
            return false;
        }
        slots[t] = slot;
        for (int32_t k = 0; k < s->size; k++) {
            uint8_t *b = avail + (size_t)(s->start + k * s->stride) * SYMM__SLOT_BITMAP_BYTES;
            b[slot / 8] &= (uint8_t)~(1u << (slot % 8));
        }
    }
    return true;
}

/*
 * The split engine. specs describe every new team of the split (1 for
 * strided, rows then columns for 2-D); mine[] the (up to 2) specs this PE is
 * a member of (-1 = none) with their configs; outs[] the out-parameters.
 */
typedef struct split_call {
    const char *fn;
    uint32_t kind;
    symm__team *parent;
    int32_t arg[4];          /* published triplet / xrange (mismatch check) */
    symm_status local;       /* the PE's own argument checks               */
    split_spec *specs;       /* NULL when local != SUCCESS                 */
    int n_specs;
    int mine[2];             /* index into specs, -1 = not a member        */
    symm_team_config cfg[2];
    symm_team *outs[2];
} split_call;

/* 3. The verdict, the same on every PE: a different call, a peer's own
 * error or differing arguments is MISMATCH; this PE's own error (saved) is
 * its own. Then the slot of every new team (avail: scratch of a bitmap a
 * parent PE). */
static symm_status split_verdict(const split_call *c, const symm__xrec *all, const char *saved,
                                 uint8_t *avail, int32_t *slots) {
    const symm__team *parent = c->parent;
    for (int32_t i = 0; i < parent->n_pes; i++)
        if (all[i].kind != c->kind)
            return symm__err(SYMM_ERR_MISMATCH,
                             "%s: parent team PE %d made a different collective call (kind %u) "
                             "while PE %d called %s", c->fn, i, all[i].kind, parent->my_pe, c->fn);
    if (c->local != SYMM_SUCCESS) return symm__err(c->local, "%s", saved);
    for (int32_t i = 0; i < parent->n_pes; i++) {
        const symm__xrec *r = &all[i];
        if (r->status != SYMM_SUCCESS)
            return symm__err(SYMM_ERR_MISMATCH, "%s: parent team PE %d rejected the call (%s)",
                             c->fn, i, symm__status_name(r->status));
        if (memcmp(r->arg, c->arg, sizeof c->arg) != 0)
            return symm__err(SYMM_ERR_MISMATCH,
                             "%s: parent team PEs disagree on the arguments (PE %d: %d, %d, %d; "
                             "PE %d: %d, %d, %d)", c->fn, parent->my_pe, c->arg[0], c->arg[1],
                             c->arg[2], i, r->arg[0], r->arg[1], r->arg[2]);
    }
    for (int32_t i = 0; i < parent->n_pes; i++)
        memcpy(avail + (size_t)i * SYMM__SLOT_BITMAP_BYTES, all[i].free_slots,
               SYMM__SLOT_BITMAP_BYTES);
    int failed = 0;
    if (!choose_slots(avail, c->specs, c->n_specs, slots, &failed)) {
        const split_spec *s = &c->specs[failed];
        return symm__err(SYMM_ERR_TEAM_EXHAUSTED,
                         "%s: no team slot is free on all %d PEs of the new team (parent PEs "
                         "%d + k * %d); %d slots per context, destroy unused teams",
                         c->fn, s->size, s->start, s->stride, SYMM__MAX_TEAMS);
    }
    return SYMM_SUCCESS;
}

/* After a successful split: mark the slots used and hand out the handles
 * (made[i] then belongs to the caller's team list). */
static void split_publish(split_call *c, symm__team_x **made) {
    symm__ctx *ctx = c->parent->ctx;
    pthread_mutex_lock(&ctx->lock);
    for (int i = 0; i < 2; i++)
        if (made[i]) ctx->team_slot_used[made[i]->t.slot] = 1;
    pthread_mutex_unlock(&ctx->lock);
    for (int i = 0; i < 2; i++) {
        if (!c->outs[i]) continue;
        if (made[i]) {
            symm__team_link(made[i]);
            *c->outs[i] = symm__team_handle(&made[i]->t);
            made[i] = NULL;
        } else {
            *c->outs[i] = NULL;
        }
    }
}

static symm_status split_run(split_call *c) {
    symm__team *parent = c->parent;
    symm__ctx *ctx = parent->ctx;
    symm__team_x *made[2] = {NULL, NULL};
    char saved[512];
    saved[0] = '\0';

    /* 1. prepare (allocation failures are part of this PE's status) */
    for (int i = 0; i < 2 && c->local == SYMM_SUCCESS; i++) {
        if (c->mine[i] < 0) continue;
        made[i] = spec_team(parent, &c->specs[c->mine[i]]);
        if (!made[i])
            c->local = symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory for the team",
                                 c->fn);
    }
    uint8_t *avail = NULL;
    int32_t *slots = NULL;
    if (c->local == SYMM_SUCCESS) {
        avail = malloc((size_t)parent->n_pes * SYMM__SLOT_BITMAP_BYTES);
        slots = malloc((size_t)(c->n_specs > 0 ? c->n_specs : 1) * sizeof *slots);
        if (!avail || !slots)
            c->local = symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", c->fn);
    }
    if (c->local != SYMM_SUCCESS) snprintf(saved, sizeof saved, "%s", symm__last_error());

    /* 2. exchange */
    symm__xrec rec;
    memset(&rec, 0, sizeof rec);
    rec.kind = c->kind;
    rec.status = c->local;
    memcpy(rec.arg, c->arg, sizeof rec.arg);
    bitmap_of_free_slots(ctx, rec.free_slots);
    const symm__xrec *all = NULL;
    symm_status st = symm__team_exchange(parent, &rec, &all);
    if (st) goto out; /* PEER_FAILED and the like: the job is gone */

    st = split_verdict(c, all, saved, avail, slots);

    /* 4. members start from a zeroed slot, before anyone may use it */
    for (int i = 0; i < 2 && st == SYMM_SUCCESS; i++) {
        if (!made[i]) continue;
        made[i]->t.slot = slots[c->mine[i]];
        made[i]->t.epoch = 0;
        made[i]->t.config = c->cfg[i];
        st = ctx->ops->memset0(ctx, symm__team_sync_off(ctx, made[i]->t.slot), ctx->slot_bytes);
    }
    /* Closing sync: records were read, new slots are zeroed everywhere. */
    {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", symm__last_error());
        symm_status sst = symm__team_sync(parent);
        if (st == SYMM_SUCCESS) st = sst;
        else symm__err(st, "%s", msg);
    }
    if (st == SYMM_SUCCESS) split_publish(c, made);
out:
    for (int i = 0; i < 2; i++) symm__team_free(made[i]);
    free(avail);
    free(slots);
    return st;
}

static symm_status split_entry(const char *fn, symm_team h, symm__team **parent) {
    symm__err_clear();
    SYMM_TRY(symm__team_get(h, parent));
    SYMM_TRY(symm__thread_check((*parent)->ctx));
    /* after the parent's stream calls issued before (sync.c's rule) */
    return symm__team_px_drain(*parent);
}

symm_status symm_team_split_strided(symm_team parent_h, int32_t start, int32_t stride,
                                    int32_t size, const symm_team_config *config,
                                    symm_team *team) {
    const char *fn = "symm_team_split_strided";
    symm__team *parent;
    SYMM_TRY(split_entry(fn, parent_h, &parent));
    split_spec spec = {start, stride, size};
    split_call c;
    memset(&c, 0, sizeof c);
    c.fn = fn;
    c.kind = SYMM__X_SPLIT_STRIDED;
    c.parent = parent;
    c.arg[0] = start;
    c.arg[1] = stride;
    c.arg[2] = size;
    c.mine[0] = c.mine[1] = -1;
    c.outs[0] = team;
    c.local = team ? SYMM_SUCCESS
                   : symm__err(SYMM_ERR_INVALID_ARG, "%s: team out-parameter is NULL", fn);
    if (c.local == SYMM_SUCCESS) c.local = spec_check(fn, &spec, parent->n_pes);
    if (c.local == SYMM_SUCCESS) c.local = config_read(fn, "config", config, &c.cfg[0]);
    if (c.local == SYMM_SUCCESS) {
        c.specs = &spec;
        c.n_specs = 1;
        if (spec_has(&spec, parent->my_pe, NULL)) c.mine[0] = 0;
    }
    return split_run(&c);
}

symm_status symm_team_split_2d(symm_team parent_h, int32_t xrange,
                               const symm_team_config *xconfig,
                               const symm_team_config *yconfig, symm_team *xteam,
                               symm_team *yteam) {
    const char *fn = "symm_team_split_2d";
    symm__team *parent;
    SYMM_TRY(split_entry(fn, parent_h, &parent));
    split_call c;
    memset(&c, 0, sizeof c);
    c.fn = fn;
    c.kind = SYMM__X_SPLIT_2D;
    c.parent = parent;
    c.arg[0] = xrange;
    c.mine[0] = c.mine[1] = -1;
    c.outs[0] = xteam;
    c.outs[1] = yteam;
    int32_t n = parent->n_pes;
    c.local = xteam && yteam
                  ? SYMM_SUCCESS
                  : symm__err(SYMM_ERR_INVALID_ARG, "%s: xteam or yteam out-parameter is NULL", fn);
    if (c.local == SYMM_SUCCESS && xrange < 1)
        c.local = symm__err(SYMM_ERR_INVALID_ARG, "%s: xrange is %d (must be >= 1)", fn, xrange);
    if (c.local == SYMM_SUCCESS) c.local = config_read(fn, "xconfig", xconfig, &c.cfg[0]);
    if (c.local == SYMM_SUCCESS) c.local = config_read(fn, "yconfig", yconfig, &c.cfg[1]);
    split_spec *specs = NULL;
    if (c.local == SYMM_SUCCESS) {
        int32_t x = xrange < n ? xrange : n;          /* columns */
        int32_t rows = (int32_t)(((int64_t)n + x - 1) / x);
        specs = malloc((size_t)(rows + x) * sizeof *specs);
        if (!specs) {
            c.local = symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", fn);
        } else {
            for (int32_t r = 0; r < rows; r++)
                specs[r] = (split_spec){r * x, 1, (r + 1) * x <= n ? x : n - r * x};
            for (int32_t col = 0; col < x; col++)
                specs[rows + col] = (split_spec){col, x, (n - col + x - 1) / x};
            c.specs = specs;
            c.n_specs = rows + x;
            c.mine[0] = parent->my_pe / x;
            c.mine[1] = rows + parent->my_pe % x;
        }
    }
    symm_status st = split_run(&c);
    free(specs);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Destroy                                                                   */
/* ------------------------------------------------------------------------ */

symm_status symm_team_destroy(symm_team h) {
    const char *fn = "symm_team_destroy";
    symm__err_clear();
    if (!h) return SYMM_SUCCESS;
    symm__team *t;
    SYMM_TRY(symm__team_get(h, &t));
    symm__ctx *ctx = t->ctx;
    SYMM_TRY(symm__thread_check(ctx));
    SYMM_CHECK(!t->predefined, SYMM_ERR_INVALID_ARG,
               "%s: team %p is predefined (owned by its context)", fn, (void *)h);
    SYMM_TRY(symm__team_px_drain(t)); /* its stream calls issued before run first */

    symm__xrec rec;
    memset(&rec, 0, sizeof rec);
    rec.kind = SYMM__X_DESTROY;
    const symm__xrec *all = NULL;
    symm_status st = symm__team_exchange(t, &rec, &all);
    bool agreed = st == SYMM_SUCCESS;
    for (int32_t i = 0; i < t->n_pes && agreed; i++) {
        if (all[i].kind != SYMM__X_DESTROY) {
            agreed = false;
            st = symm__err(SYMM_ERR_MISMATCH,
                           "%s: team PE %d made a different collective call (kind %u) while PE %d "
                           "destroys the team; the team is kept", fn, i, all[i].kind, t->my_pe);
        }
    }
    if (st == SYMM_SUCCESS || !agreed) {
        /* After this sync no peer reads our record or writes our slot. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", symm__last_error());
        symm_status sst = symm__team_sync(t);
        if (st == SYMM_SUCCESS) st = sst;
        else symm__err(st, "%s", msg);
    }
    if (!agreed && st != SYMM_ERR_PEER_FAILED) return st;
    /* Agreed, or the job lost a PE: release everything local. */
    /* Unreachable first (calls on it in other threads leave), then the
     * grace period, then the slot and the object go. */
    symm__team_x *tx = symm__team_x_of(t);
    if (atomic_exchange(&t->closing, 1))
        return symm__err(SYMM_ERR_INVALID_HANDLE, "%s: another thread destroyed the team "
                         "during this call", fn);
    symm__handle_release(SYMM__KIND_TEAM, t->handle);
    symm__team_unlink(tx);
    symm__retire(ctx, &t->closing);
    pthread_mutex_lock(&ctx->lock);
    ctx->team_slot_used[t->slot] = 0;
    pthread_mutex_unlock(&ctx->lock);
    symm__team_free(tx);
    return st;
}

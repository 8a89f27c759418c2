/*
 * Collectives over teams: broadcast, fcollect, collect, alltoall, alltoallv,
 * reduce and reducescatter (blocking forms, and the checks of the stream forms).
 *
 * Every call first checks its own arguments (handles, one context, one dtype,
 * ranges, overlaps, root, op). Then:
 *  - if the backend has a `coll` hook, the call is handed to it as a
 *    symm__coll (collect first exchanges the per-PE counts: see below); the
 *    cross-PE checks below are not made on that path;
 *  - otherwise the generic algorithm runs over ctx->ops only (so it works on
 *    any backend whose peers are reachable by put/get):
 *      1. exchange: each PE publishes a symm__xrec (kind, its argument
 *         status, dtype, op, root, nelems, its src/dst offsets) in its team
 *         scratch and syncs the team; every PE reads every record;
 *      2. verdict, the same on all PEs: a different collective on some PE,
 *         or differing dtype/op/root/nelems, buffers, indices or in-place
 *         use is SYMM_ERR_MISMATCH (ranges_agree); a PE whose
 *         own checks failed returns its error, the others MISMATCH (so a bad
 *         argument on one PE does not leave the others hanging);
 *      3. each PE pulls what it needs with ops->get into its own dst (reads
 *         peers' src at the offsets they published), computing reductions
 *         in bounded chunks;
 *      4. closing sync: on return every peer has finished reading this PE's
 *         src, so it may be reused.
 *
 * Decisions documented here (symm.h leaves them open):
 *  - SYMM_OP_AND/OR/XOR on FLOAT16/BFLOAT16/FLOAT32/FLOAT64 is
 *    SYMM_ERR_NOT_SUPPORTED (the op and the dtype are each valid; the pair is
 *    not defined); an op number outside SYMM_OP_* is SYMM_ERR_INVALID_ARG.
 *  - Reductions combine team PEs in order 0, 1, ..., n-1 on every PE, so all
 *    PEs get bitwise-identical results (also across hosts: there one leader
 *    per host combines in that order and its host's PEs copy its result). Integer SUM/PROD wrap around
 *    (two's complement). Floating MIN/MAX follow fmin/fmax (a NaN operand is
 *    ignored unless all are NaN). FLOAT16/BFLOAT16 are accumulated in float32
 *    and rounded to nearest-even once, at the end.
 *  - In place: broadcast and reduce when dst range == src range; fcollect and
 *    collect when src is this PE's block of dst. Any other overlap of dst and
 *    src is SYMM_ERR_INVALID_ARG. alltoall, alltoallv and reducescatter are
 *    never in place.
 *  - alltoallv (counts in symmetric memory, read when the call gets there):
 *    the exchange record carries src_nelems as nelems and the send counts'
 *    offset, which must agree on every PE (MISMATCH otherwise), since the
 *    CUDA backend's kernel reads a peer at this PE's offsets. Generic: each
 *    PE reads from every PE j its counts up to its own entry (where j packed
 *    its elements, and how many), writes its receive counts and offsets, and
 *    pulls, unless the total exceeds dst_nelems or a piece lies beyond j's
 *    src_nelems (then it copies nothing: SYMM_ERR_OUT_OF_BOUNDS here only).
 *    With a backend hook (CUDA) the blocking form exchanges the records
 *    first (that check), then hands the call to the hook, as collect does.
 *  - nelems == 0 is a valid collective (it still synchronises the team).
 *
 * Thread safety: as every collective: any thread allowed by the context's
 * level, calls on one team serialised by the caller.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "reduce.h"
#include "teams.h"
#include "stream_px.h"

/* Elements per reduction chunk: the accumulator and the receive buffer are
 * 2 * 8 * COLL_CHUNK bytes of host memory per call. */
#ifndef SYMM__COLL_CHUNK
#define SYMM__COLL_CHUNK 32768u
#endif

/* ------------------------------------------------------------------------ */
/* dtypes and ops                                                            */
/* ------------------------------------------------------------------------ */

static const char *dtype_name(uint32_t dtype) {
    static const char *const names[] = {
        "?", "SYMM_DTYPE_INT8", "SYMM_DTYPE_INT16", "SYMM_DTYPE_INT32", "SYMM_DTYPE_INT64",
        "SYMM_DTYPE_UINT8", "SYMM_DTYPE_UINT16", "SYMM_DTYPE_UINT32", "SYMM_DTYPE_UINT64",
        "SYMM_DTYPE_FLOAT16", "SYMM_DTYPE_BFLOAT16", "SYMM_DTYPE_FLOAT32", "SYMM_DTYPE_FLOAT64"};
    return dtype < SYMM_DTYPE_COUNT ? names[dtype] : "?";
}

static const char *op_name(uint32_t op) {
    static const char *const names[] = {"SYMM_OP_SUM", "SYMM_OP_PROD", "SYMM_OP_MIN",
                                        "SYMM_OP_MAX", "SYMM_OP_AND", "SYMM_OP_OR",
                                        "SYMM_OP_XOR"};
    return op <= SYMM_OP_XOR ? names[op] : "?";
}

static bool dtype_is_float(uint32_t dtype) {
    return dtype == SYMM_DTYPE_FLOAT16 || dtype == SYMM_DTYPE_BFLOAT16 ||
           dtype == SYMM_DTYPE_FLOAT32 || dtype == SYMM_DTYPE_FLOAT64;
}

static bool dtype_is_half(uint32_t dtype) {
    return dtype == SYMM_DTYPE_FLOAT16 || dtype == SYMM_DTYPE_BFLOAT16;
}

static const char *stream_kind_name(uint32_t kind) {
    switch (kind) {
    case SYMM__COLL_BROADCAST: return "symm_broadcast_on_stream";
    case SYMM__COLL_FCOLLECT: return "symm_fcollect_on_stream";
    case SYMM__COLL_ALLTOALL: return "symm_alltoall_on_stream";
    case SYMM__COLL_ALLTOALLV: return "symm_alltoallv_on_stream";
    case SYMM__COLL_REDUCE: return "symm_reduce_on_stream";
    default: return "symm_reducescatter_on_stream";
    }
}

static const char *kind_name(uint32_t kind) {
    switch (kind) {
    case SYMM__COLL_BROADCAST: return "symm_broadcast";
    case SYMM__COLL_FCOLLECT: return "symm_fcollect";
    case SYMM__COLL_COLLECT: return "symm_collect";
    case SYMM__COLL_ALLTOALL: return "symm_alltoall";
    case SYMM__COLL_ALLTOALLV: return "symm_alltoallv";
    case SYMM__COLL_REDUCE: return "symm_reduce";
    case SYMM__COLL_REDUCESCATTER: return "symm_reducescatter";
    case SYMM__X_SPLIT_STRIDED: return "symm_team_split_strided";
    case SYMM__X_SPLIT_2D: return "symm_team_split_2d";
    case SYMM__X_DESTROY: return "symm_team_destroy";
    default: return "an unknown call";
    }
}

/* ------------------------------------------------------------------------ */
/* Argument checks                                                           */
/* ------------------------------------------------------------------------ */

typedef struct coll_call {
    uint32_t kind;
    symm_team team_h;
    symm_buf dst_h, src_h;
    uint64_t dst_index, src_index, nelems;
    int32_t root;
    uint32_t op;
    bool on_stream;       /* a *_on_stream entry                       */
    bool px_counted;      /* queued for the proxy, counted as issued    */
    symm_stream_t stream; /* its stream (the user's; NULL = legacy)     */
    /* alltoallv */
    uint64_t dst_nelems, src_nelems;
    symm_buf scount_h, rcount_h;
    uint64_t scount_index, rcount_index;
} coll_call;

/* What one PE's call resolved to. */
typedef struct coll_plan {
    const char *fn;
    symm__team *team;
    symm__ctx *ctx;
    uint32_t dtype, es;
    uint64_t dst_off, src_off, dst_end;
    bool inplace;
    uint64_t *counts; /* collect: [n_pes]; generic alltoallv: [4 * n_pes] */
    void *acc, *tmp;  /* reductions       */
    uint64_t scount_off, rcount_off; /* alltoallv: heap byte offsets       */
} coll_plan;

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) {
    return alen && blen && a < b + blen && b < a + alen;
}

/* Range [index, index + count) of buf, with count = nelems * mult. */
static symm_status check_range(const char *fn, const char *which, const symm__buf *b,
                               uint64_t index, uint64_t nelems, uint64_t mult) {
    if (mult > 1 && nelems > UINT64_MAX / mult)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS, "%s: %s range of %llu x %llu elements overflows",
                         fn, which, (unsigned long long)nelems, (unsigned long long)mult);
    symm_status st = symm__check_range(b, index, nelems * mult);
    return st ? symm__err(st, "%s: %s %s", fn, which, symm__last_error()) : SYMM_SUCCESS;
}

static symm_status check_op(const char *fn, uint32_t op, uint32_t dtype) {
    SYMM_CHECK(op <= SYMM_OP_XOR, SYMM_ERR_INVALID_ARG,
               "%s: unknown reduction op %u (expected SYMM_OP_SUM ... SYMM_OP_XOR)", fn, op);
    SYMM_CHECK(op < SYMM_OP_AND || !dtype_is_float(dtype), SYMM_ERR_NOT_SUPPORTED,
               "%s: %s is defined for integer dtypes only, not %s", fn, op_name(op),
               dtype_name(dtype));
    return SYMM_SUCCESS;
}

/* An alltoallv count buffer: UINT64 or INT64, in the context, len entries
 * from index in bounds; *off = heap byte offset of the first. */
static symm_status counts_range(const char *fn, const char *which, symm_buf h, uint64_t index,
                                uint64_t len, const symm__ctx *ctx, uint64_t *off) {
    symm__buf *b;
    symm_status st = symm__buf_get(h, &b);
    if (st)
        return symm__err(st, "%s: %s: invalid symm_buf (NULL, freed or not a buffer)", fn, which);
    SYMM_CHECK(b->ctx == ctx, SYMM_ERR_INVALID_ARG, "%s: %s must belong to the team's context", fn,
               which);
    SYMM_CHECK(b->dtype == SYMM_DTYPE_UINT64 || b->dtype == SYMM_DTYPE_INT64, SYMM_ERR_INVALID_ARG,
               "%s: %s is %s; counts are SYMM_DTYPE_UINT64 or SYMM_DTYPE_INT64", fn, which,
               dtype_name(b->dtype));
    SYMM_TRY(check_range(fn, which, b, index, len, 1));
    *off = b->off + index * 8u;
    return SYMM_SUCCESS;
}

/* alltoallv's own checks (dst and src are valid, of one dtype, in ctx). */
static symm_status a2av_check(const coll_call *c, coll_plan *p, const symm__buf *dst,
                              const symm__buf *src) {
    const char *fn = p->fn;
    const uint64_t n = (uint64_t)p->team->n_pes, es = p->es;
    SYMM_TRY(check_range(fn, "src", src, c->src_index, c->src_nelems, 1));
    SYMM_TRY(check_range(fn, "dst", dst, c->dst_index, c->dst_nelems, 1));
    SYMM_TRY(counts_range(fn, "send_counts", c->scount_h, c->scount_index, n, p->ctx,
                          &p->scount_off));
    SYMM_TRY(counts_range(fn, "recv_counts", c->rcount_h, c->rcount_index, 2 * n, p->ctx,
                          &p->rcount_off));
    p->dst_off = dst->off + c->dst_index * es;
    p->src_off = src->off + c->src_index * es;
    p->dst_end = dst->off + dst->count * es;
    const struct {
        const char *name;
        uint64_t off, len;
    } r[4] = {{"dst", p->dst_off, c->dst_nelems * es},
              {"src", p->src_off, c->src_nelems * es},
              {"send_counts", p->scount_off, n * 8u},
              {"recv_counts", p->rcount_off, 2 * n * 8u}};
    for (int i = 0; i < 4; i++)
        for (int k = i + 1; k < 4; k++)
            if (!(i == 1 && k == 2) && ranges_overlap(r[i].off, r[i].len, r[k].off, r[k].len))
                return symm__err(SYMM_ERR_INVALID_ARG, "%s: the %s and %s ranges overlap", fn,
                                 r[i].name, r[k].name);
    return SYMM_SUCCESS;
}

/* This PE's own checks. Fills p (offsets, in-place). */
static symm_status coll_check(const coll_call *c, coll_plan *p) {
    const char *fn = p->fn;
    symm__team *team = p->team;
    symm__buf *dst, *src;
    symm_status st = symm__buf_get(c->dst_h, &dst);
    if (st) return symm__err(st, "%s: dst: %s", fn, "invalid symm_buf (NULL, freed or not a buffer)");
    st = symm__buf_get(c->src_h, &src);
    if (st) return symm__err(st, "%s: src: %s", fn, "invalid symm_buf (NULL, freed or not a buffer)");
    SYMM_CHECK(dst->ctx == p->ctx && src->ctx == p->ctx, SYMM_ERR_INVALID_ARG,
               "%s: dst and src must belong to the team's context", fn);
    SYMM_CHECK(dst->dtype == src->dtype, SYMM_ERR_INVALID_ARG,
               "%s: dst is %s but src is %s", fn, dtype_name(dst->dtype), dtype_name(src->dtype));
    p->dtype = dst->dtype;
    p->es = dst->elem_size;
    if (c->kind == SYMM__COLL_ALLTOALLV) return a2av_check(c, p, dst, src);
    const uint64_t n = (uint64_t)team->n_pes, ne = c->nelems, es = p->es;
    uint64_t dmult = 1, smult = 1; /* range lengths in units of nelems */
    switch (c->kind) {
    case SYMM__COLL_BROADCAST:
        SYMM_CHECK(c->root >= 0 && c->root < team->n_pes, SYMM_ERR_INVALID_ARG,
                   "%s: root %d is outside the team [0, %d)", fn, c->root, team->n_pes);
        break;
    case SYMM__COLL_FCOLLECT: dmult = n; break;
    case SYMM__COLL_COLLECT: dmult = 0; break; /* known after the exchange */
    case SYMM__COLL_ALLTOALL: dmult = smult = n; break;
    case SYMM__COLL_REDUCE: SYMM_TRY(check_op(fn, c->op, p->dtype)); break;
    case SYMM__COLL_REDUCESCATTER:
        SYMM_TRY(check_op(fn, c->op, p->dtype));
        smult = n;
        break;
    }
    SYMM_TRY(check_range(fn, "src", src, c->src_index, ne, smult));
    if (dmult) SYMM_TRY(check_range(fn, "dst", dst, c->dst_index, ne, dmult));
    else SYMM_TRY(check_range(fn, "dst", dst, c->dst_index, 0, 1));
    p->dst_off = dst->off + c->dst_index * es;
    p->src_off = src->off + c->src_index * es;
    p->dst_end = dst->off + dst->count * es;

    const uint64_t dlen = ne * dmult * es, slen = ne * smult * es;
    if (c->kind == SYMM__COLL_COLLECT || !ranges_overlap(p->dst_off, dlen, p->src_off, slen))
        return SYMM_SUCCESS;
    switch (c->kind) {
    case SYMM__COLL_BROADCAST:
    case SYMM__COLL_REDUCE:
        SYMM_CHECK(p->dst_off == p->src_off, SYMM_ERR_INVALID_ARG,
                   "%s: dst and src ranges partially overlap (only identical ranges may be used "
                   "in place)", fn);
        p->inplace = true;
        return SYMM_SUCCESS;
    case SYMM__COLL_FCOLLECT:
        SYMM_CHECK(p->src_off == p->dst_off + (uint64_t)team->my_pe * ne * es,
                   SYMM_ERR_INVALID_ARG,
                   "%s: src overlaps dst but is not this PE's block of it (dst index + %d * %llu)",
                   fn, team->my_pe, (unsigned long long)ne);
        p->inplace = true;
        return SYMM_SUCCESS;
    default:
        return symm__err(SYMM_ERR_INVALID_ARG, "%s: dst and src overlap (%s is never in place)",
                         fn, fn);
    }
}

/* ------------------------------------------------------------------------ */
/* Cross-PE verdict                                                          */
/* ------------------------------------------------------------------------ */

/* Every PE must name the same dst and src ranges (buffer and index), and
 * be in place or not alike: a backend's kernels (CUDA) read and write a
 * peer's buffers at this PE's offsets. The generic algorithm would not need
 * it (it reads the offsets each PE published); the rule is the same on every
 * backend, so that a program that runs on one runs on all. alltoallv checks
 * its own (src and send counts; dst may differ). An in-place fcollect or
 * collect's src is its own block of dst, which differs by design; a collect
 * is in place when src is exactly where its block starts (whatever its
 * count: the CUDA hook decides so). */
static symm_status ranges_agree(const coll_call *c, const char *fn, const symm__xrec *all,
                                int32_t me, int32_t n, uint64_t es) {
    if (c->kind == SYMM__COLL_ALLTOALLV) return SYMM_SUCCESS;
    const bool collect = c->kind == SYMM__COLL_COLLECT;
    bool inplace = (all[me].flags & SYMM__XF_INPLACE) != 0;
    if (collect) {
        uint64_t at = all[me].dst_off;
        for (int32_t j = 0; j < me; j++) at += all[j].nelems * es;
        inplace = all[me].src_off == at;
    }
    uint64_t prefix = 0; /* collect: where PE i's block starts in dst, bytes */
    for (int32_t i = 0; i < n; prefix += all[i].nelems * es, i++) {
        const symm__xrec *r = &all[i];
        const bool ip = collect ? r->src_off == r->dst_off + prefix
                                : (r->flags & SYMM__XF_INPLACE) != 0;
        SYMM_CHECK(ip == inplace, SYMM_ERR_MISMATCH,
                   "%s: team PE %d calls it in place and team PE %d does not (in place or not "
                   "must be alike on every PE)", fn, inplace ? me : i, inplace ? i : me);
        SYMM_CHECK(r->dst_off == all[me].dst_off && (inplace || r->src_off == all[me].src_off),
                   SYMM_ERR_MISMATCH,
                   "%s: team PE %d and team PE %d name different %s ranges (a collective needs "
                   "the same buffers and indices on every PE)", fn, me, i,
                   r->dst_off != all[me].dst_off ? "dst" : "src");
    }
    return SYMM_SUCCESS;
}

static symm_status coll_verdict(const coll_call *c, coll_plan *p, const symm__xrec *all,
                                symm_status local, const char *saved) {
    const char *fn = p->fn;
    symm__team *team = p->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    for (int32_t i = 0; i < n; i++)
        if (all[i].kind != c->kind)
            return symm__err(SYMM_ERR_MISMATCH,
                             "%s: team PE %d called %s while team PE %d called %s (collectives "
                             "on a team must be made in the same order)",
                             fn, i, kind_name(all[i].kind), me, fn);
    if (local) return symm__err(local, "%s", saved);
    for (int32_t i = 0; i < n; i++)
        if (all[i].status)
            return symm__err(SYMM_ERR_MISMATCH, "%s: team PE %d rejected its arguments (%s)", fn,
                             i, symm__status_name(all[i].status));
    const symm__xrec *r0 = &all[me];
    for (int32_t i = 0; i < n; i++) {
        const symm__xrec *r = &all[i];
        SYMM_CHECK(r->dtype == r0->dtype, SYMM_ERR_MISMATCH,
                   "%s: dtype differs (team PE %d: %s, team PE %d: %s)", fn, me,
                   dtype_name(r0->dtype), i, dtype_name(r->dtype));
        SYMM_CHECK(r->op == r0->op, SYMM_ERR_MISMATCH,
                   "%s: op differs (team PE %d: %s, team PE %d: %s)", fn, me, op_name(r0->op), i,
                   op_name(r->op));
        SYMM_CHECK(r->root == r0->root, SYMM_ERR_MISMATCH,
                   "%s: root differs (team PE %d: %d, team PE %d: %d)", fn, me, r0->root, i,
                   r->root);
        SYMM_CHECK(c->kind == SYMM__COLL_COLLECT || r->nelems == r0->nelems, SYMM_ERR_MISMATCH,
                   "%s: %s differs (team PE %d: %llu, team PE %d: %llu)", fn,
                   c->kind == SYMM__COLL_ALLTOALLV ? "src_nelems" : "nelems", me,
                   (unsigned long long)r0->nelems, i, (unsigned long long)r->nelems);
        SYMM_CHECK(c->kind != SYMM__COLL_ALLTOALLV ||
                       (r->src_off == r0->src_off && r->aux_off == r0->aux_off),
                   SYMM_ERR_MISMATCH,
                   "%s: team PE %d and team PE %d name different src or send_counts ranges (the "
                   "same buffers and indices are needed on every PE)", fn, me, i);
    }
    if (c->kind != SYMM__COLL_COLLECT) return ranges_agree(c, fn, all, me, n, p->es);

    /* collect: counts, then every PE's dst bounds and overlap, judged by all */
    const uint64_t es = p->es;
    uint64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        p->counts[i] = all[i].nelems;
        SYMM_CHECK(all[i].nelems <= UINT64_MAX / es - total, SYMM_ERR_OUT_OF_BOUNDS,
                   "%s: the collected elements overflow", fn);
        total += all[i].nelems;
    }
    /* This PE's own range first (its specific error), then every peer's. */
    for (int pass = 0; pass < 2; pass++) {
        uint64_t prefix = 0;
        for (int32_t i = 0; i < n; prefix += all[i].nelems, i++) {
            if ((pass == 0) != (i == me)) continue;
            const symm__xrec *r = &all[i];
            bool oob = total * es > r->dst_end - r->dst_off;
            bool overlap = !oob && ranges_overlap(r->dst_off, total * es, r->src_off,
                                                  r->nelems * es);
            bool bad_overlap = overlap && r->src_off != r->dst_off + prefix * es;
            if (i == me && oob)
                return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                                 "%s: dst has room for %llu elements after its index, the team "
                                 "collects %llu", fn,
                                 (unsigned long long)((r->dst_end - r->dst_off) / es),
                                 (unsigned long long)total);
            if (i == me && bad_overlap)
                return symm__err(SYMM_ERR_INVALID_ARG,
                                 "%s: src overlaps dst but is not this PE's block of it (dst "
                                 "index + %llu)", fn, (unsigned long long)prefix);
            if (oob || bad_overlap)
                return symm__err(SYMM_ERR_MISMATCH, "%s: team PE %d's dst range is %s", fn, i,
                                 oob ? "out of bounds" : "overlapping its src");
            if (i == me) p->inplace = overlap;
        }
    }
    return ranges_agree(c, fn, all, me, n, p->es);
}

/* ------------------------------------------------------------------------ */
/* Generic data movement                                                     */
/* ------------------------------------------------------------------------ */

/* Pull n bytes of team PE j's heap at off into this PE's heap at dst_off. */
static symm_status pull(coll_plan *p, int32_t j, uint64_t off, uint64_t dst_off, uint64_t n) {
    if (n == 0) return SYMM_SUCCESS;
    symm__ctx *ctx = p->ctx;
    return symm__get(ctx, symm__local(ctx, dst_off), symm__team_world_pe(p->team, j), off, n,
                         SYMM__NBI);
}

static uint64_t sat_add(uint64_t a, uint64_t b) {
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Generic alltoallv (the counts: p->counts, 4 * n_pes entries). Counts are
 * read as uint64; sums saturate, so a huge or negative count cannot wrap
 * into a small one. */
static symm_status a2av_move(const coll_call *c, coll_plan *p, const symm__xrec *all) {
    const char *fn = p->fn;
    symm__ctx *ctx = p->ctx;
    symm__team *team = p->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t es = p->es, dst_cap = c->dst_nelems;
    uint64_t *rc = p->counts, *soff = rc + 2 * n, *tmp = soff + n;
    /* this PE's own send counts against its src */
    SYMM_TRY(symm__get(ctx, tmp, symm__team_world_pe(team, me), p->scount_off,
                       (uint64_t)n * 8u, 0));
    uint64_t sent = 0;
    for (int32_t j = 0; j < n; j++) sent = sat_add(sent, tmp[j]);
    /* from every PE j: its count for this PE, and where it packed them */
    int32_t bad_peer = -1;
    for (int32_t j = 0; j < n; j++) {
        SYMM_TRY(symm__get(ctx, tmp, symm__team_world_pe(team, j), all[j].aux_off,
                           (uint64_t)(me + 1) * 8u, 0));
        uint64_t off = 0;
        for (int32_t q = 0; q < me; q++) off = sat_add(off, tmp[q]);
        rc[j] = tmp[me];
        soff[j] = off;
        const uint64_t cap = all[j].nelems; /* src_nelems, the same on every PE */
        if (bad_peer < 0 && (off > cap || rc[j] > cap - off)) bad_peer = j;
    }
    uint64_t total = 0;
    for (int32_t j = 0; j < n; j++) {
        rc[n + j] = total;
        total = sat_add(total, rc[j]);
    }
    SYMM_TRY(symm__put(ctx, symm__team_world_pe(team, me), p->rcount_off, rc,
                       (uint64_t)(2 * n) * 8u, 0));
    if (bad_peer >= 0)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "%s: team PE %d's elements for this PE lie beyond its src range (its "
                         "counts up to this PE add up to more than src_nelems %llu); nothing was "
                         "received", fn, (int)bad_peer, (unsigned long long)all[bad_peer].nelems);
    if (total > dst_cap)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "%s: this PE would receive %llu elements, dst_nelems is %llu; nothing "
                         "was received (recv_counts says what would have come)", fn,
                         (unsigned long long)total, (unsigned long long)dst_cap);
    for (int32_t j = 0; j < n; j++)
        SYMM_TRY(pull(p, j, all[j].src_off + soff[j] * es, p->dst_off + rc[n + j] * es,
                      rc[j] * es));
    SYMM_TRY(symm__quiet(ctx));
    if (sent > all[me].nelems)
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS,
                         "%s: this PE's send counts add up to %llu elements, src_nelems is %llu",
                         fn, (unsigned long long)sent, (unsigned long long)all[me].nelems);
    return SYMM_SUCCESS;
}

/* Sync the team after a step that may have failed: the sync is made anyway
 * (peers are not stranded) and the first failure's message is kept. */
static symm_status sync_keep(symm__team *team, symm_status st) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", symm__last_error());
    symm_status sst = symm__team_sync(team);
    if (st == SYMM_SUCCESS) return sst;
    return symm__err(st, "%s", msg);
}

/* Reduce nelems elements of every PE's src (at its published offset + shift)
 * into this PE's dst, chunk by chunk. With chunk_sync (some PE reduces in
 * place), the team syncs between reading a chunk and writing it. After a
 * failure the remaining syncs are still made, so peers are not stranded.
 * With hier (a team that spans hosts), only each host's leader combines
 * (every PE's data, in team order: the result is the one-host result, bit
 * for bit); after a team sync its host's members copy the leader's dst by
 * load/store, so each PE's data crosses to another host once per host. */
static symm_status reduce_run(coll_plan *p, const coll_call *c, const symm__xrec *all,
                              uint64_t shift, bool chunk_sync, bool hier) {
    symm__ctx *ctx = p->ctx;
    symm__team *team = p->team;
    const uint64_t es = p->es, ne = c->nelems;
    const bool half = dtype_is_half(p->dtype);
    const symm__team_hier *h = hier ? symm__team_hier_get(team) : NULL;
    /* Out of memory for the grouping: this PE combines itself (same syncs). */
    const bool lead = !h || team->my_pe == h->my_leader;
    symm_status st = SYMM_SUCCESS;
    for (uint64_t c0 = 0; c0 < ne; c0 += SYMM__COLL_CHUNK) {
        size_t m = (size_t)(ne - c0 < SYMM__COLL_CHUNK ? ne - c0 : SYMM__COLL_CHUNK);
        uint64_t boff = c0 * es;
        for (int32_t j = 0; lead && j < team->n_pes && st == SYMM_SUCCESS; j++) {
            void *into = j == 0 && !half ? p->acc : p->tmp;
            st = symm__get(ctx, into, symm__team_world_pe(team, j),
                               all[j].src_off + shift + boff, m * es, 0);
            if (st) break;
            if (j > 0) symm__red_apply(p->dtype, c->op, p->acc, p->tmp, m);
            else if (half) symm__half_load(p->dtype, p->acc, p->tmp, m);
        }
        const void *out = p->acc;
        if (lead && st == SYMM_SUCCESS && half) {
            symm__half_store(p->dtype, p->tmp, p->acc, m);
            out = p->tmp;
        }
        if (chunk_sync) st = sync_keep(team, st);
        if (lead && st == SYMM_SUCCESS)
            st = symm__put(ctx, ctx->my_pe, p->dst_off + boff, out, m * es, 0);
        if (hier) {
            st = sync_keep(team, st);
            if (!lead && st == SYMM_SUCCESS) {
                st = symm__get(ctx, p->tmp, symm__team_world_pe(team, h->my_leader),
                               all[h->my_leader].dst_off + boff, m * es, 0);
                if (st == SYMM_SUCCESS)
                    st = symm__put(ctx, ctx->my_pe, p->dst_off + boff, p->tmp, m * es, 0);
            }
        }
        if (st && !chunk_sync && !hier) break;
    }
    return st;
}

static symm_status coll_move(const coll_call *c, coll_plan *p, const symm__xrec *all) {
    symm__ctx *ctx = p->ctx;
    symm__team *team = p->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t bytes = c->nelems * p->es;
    switch (c->kind) {
    case SYMM__COLL_BROADCAST:
        if (me != c->root || !p->inplace)
            SYMM_TRY(pull(p, c->root, all[c->root].src_off, p->dst_off, bytes));
        break;
    case SYMM__COLL_FCOLLECT:
        for (int32_t j = 0; j < n; j++)
            if (j != me || !p->inplace)
                SYMM_TRY(pull(p, j, all[j].src_off, p->dst_off + (uint64_t)j * bytes, bytes));
        break;
    case SYMM__COLL_COLLECT: {
        uint64_t at = p->dst_off;
        for (int32_t j = 0; j < n; j++) {
            uint64_t b = all[j].nelems * p->es;
            if (j != me || !p->inplace) SYMM_TRY(pull(p, j, all[j].src_off, at, b));
            at += b;
        }
        break;
    }
    case SYMM__COLL_ALLTOALL:
        for (int32_t j = 0; j < n; j++)
            SYMM_TRY(pull(p, j, all[j].src_off + (uint64_t)me * bytes,
                          p->dst_off + (uint64_t)j * bytes, bytes));
        break;
    case SYMM__COLL_REDUCE: {
        bool any_inplace = false;
        for (int32_t j = 0; j < n; j++) any_inplace |= (all[j].flags & SYMM__XF_INPLACE) != 0;
        return reduce_run(p, c, all, 0, any_inplace, symm__team_has_remote(team));
    }
    case SYMM__COLL_REDUCESCATTER:
        return reduce_run(p, c, all, (uint64_t)me * bytes, false, false);
    case SYMM__COLL_ALLTOALLV:
        return a2av_move(c, p, all);
    }
    return symm__quiet(ctx);
}

/* ------------------------------------------------------------------------ */
/* The driver                                                                */
/* ------------------------------------------------------------------------ */

/* The generic algorithm's name, for the TRACE line of each call. */
static const char *generic_algorithm(uint32_t kind) {
    switch (kind) {
    case SYMM__COLL_BROADCAST: return "generic: exchange, every PE pulls the root's block";
    case SYMM__COLL_FCOLLECT:
    case SYMM__COLL_COLLECT: return "generic: exchange, every PE pulls each PE's block";
    case SYMM__COLL_ALLTOALL: return "generic: exchange, every PE pulls its block from each PE";
    case SYMM__COLL_REDUCE: return "generic: exchange, chunked pull-and-reduce of every PE's data";
    case SYMM__COLL_REDUCESCATTER: return "generic: exchange, pull-and-reduce of this PE's block";
    case SYMM__COLL_ALLTOALLV:
        return "generic: exchange, every PE reads its counts from each PE and pulls its elements";
    default: return "?";
    }
}

static symm_status coll_hook(const coll_call *c, coll_plan *p) {
    symm__coll d;
    memset(&d, 0, sizeof d);
    d.kind = c->kind;
    d.team = p->team;
    d.dtype = p->dtype;
    d.elem_size = p->es;
    d.op = c->op;
    d.root = c->root;
    d.dst_off = p->dst_off;
    d.src_off = p->src_off;
    d.nelems = c->nelems;
    d.counts = p->counts;
    d.dst_cap = c->dst_nelems;
    d.src_cap = c->src_nelems;
    d.scount_off = p->scount_off;
    d.rcount_off = p->rcount_off;
    SYMM_TRY_IN(p->fn, symm__check_failed(p->ctx));
    /* The blocking forms run the hook blocking (NULL); stream forms pass the
     * user's stream, a NULL one as the legacy default stream. */
    void *stream = c->on_stream ? symm__hook_stream(c->stream) : NULL;
    SYMM_TRY_IN(p->fn, p->ctx->ops->coll(p->ctx, &d, stream));
    return SYMM_SUCCESS;
}

/* This PE's record of the call (what the exchange publishes and the agree
 * packs): its kind and own verdict, and when that passed its dtype, op,
 * root, in-place flag, nelems and ranges. */
static void call_record(const coll_call *c, const coll_plan *p, symm_status local,
                        symm__xrec *rec) {
    memset(rec, 0, sizeof *rec);
    rec->kind = c->kind;
    rec->status = local;
    if (local != SYMM_SUCCESS) return;
    const bool reduction = c->kind == SYMM__COLL_REDUCE || c->kind == SYMM__COLL_REDUCESCATTER;
    rec->dtype = p->dtype;
    rec->op = reduction ? c->op : 0;
    rec->root = c->kind == SYMM__COLL_BROADCAST ? c->root : 0;
    rec->flags = p->inplace ? SYMM__XF_INPLACE : 0;
    rec->nelems = c->kind == SYMM__COLL_ALLTOALLV ? c->src_nelems : c->nelems;
    rec->aux_off = p->scount_off;
    rec->src_off = p->src_off;
    rec->dst_off = p->dst_off;
    rec->dst_end = p->dst_end;
}

/* A blocking collective that the hook runs (not collect or alltoallv, which
 * exchange more): every PE gives its call record (call_record: its call and
 * its own verdict), packed in SYMM__AGREE_WORDS words, through
 * ops->coll_agree, one round on the backend's side, and the records are
 * judged as the host exchange's (coll_verdict), so a PE with bad arguments
 * gets its error and its peers MISMATCH before anything runs, and PEs whose
 * nelems, root, op, dtype or ranges differ all get MISMATCH. A PE that made
 * another team operation leaves no record: MISMATCH too. */
static symm_status coll_agreed(const coll_call *c, coll_plan *p, symm_status local) {
    char saved[1024] = "";
    if (local) snprintf(saved, sizeof saved, "%s", symm__last_error());
    symm__xrec rec;
    call_record(c, p, local, &rec);
    const uint64_t mine[SYMM__AGREE_WORDS] = {
        (uint32_t)rec.status,
        (uint64_t)(rec.kind & 0xffu) | (uint64_t)(rec.dtype & 0xffu) << 8 |
            (uint64_t)(rec.op & 0xffu) << 16 | (uint64_t)(rec.flags & 0xffu) << 24,
        (uint32_t)rec.root, rec.nelems, rec.dst_off, rec.src_off};
    const int32_t n = p->team->n_pes;
    uint64_t *words = malloc((size_t)n * sizeof mine);
    symm__xrec *all = calloc((size_t)n, sizeof *all);
    symm_status st = words && all ? SYMM_SUCCESS
                                  : symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", p->fn);
    if (st == SYMM_SUCCESS) {
        st = p->ctx->ops->coll_agree(p->ctx, p->team, mine, words);
        if (st) st = symm__err_prefix(p->fn, st);
    }
    for (int32_t i = 0; st == SYMM_SUCCESS && i < n; i++) {
        const uint64_t *w = words + (size_t)i * SYMM__AGREE_WORDS;
        if (w[0] == ~0ull) {
            st = symm__err(SYMM_ERR_MISMATCH, "%s: team PE %d made another team operation (a "
                           "barrier or a stream collective) while team PE %d called %s", p->fn, i,
                           (int)p->team->my_pe, p->fn);
            break;
        }
        all[i].status = (int32_t)(uint32_t)w[0];
        all[i].kind = (uint32_t)(w[1] & 0xffu);
        all[i].dtype = (uint32_t)(w[1] >> 8 & 0xffu);
        all[i].op = (uint32_t)(w[1] >> 16 & 0xffu);
        all[i].flags = (uint32_t)(w[1] >> 24 & 0xffu);
        all[i].root = (int32_t)(uint32_t)w[2];
        all[i].nelems = w[3];
        all[i].dst_off = w[4];
        all[i].src_off = w[5];
    }
    if (st == SYMM_SUCCESS) st = coll_verdict(c, p, all, local, saved);
    free(words);
    free(all);
    return st ? st : coll_hook(c, p);
}

static symm_status coll_run_x(const coll_call *c, bool in_proxy);

/* A stream collective over a team with PEs of other hosts: the blocking
 * form (the generic algorithm over routed put/get), run by the proxy's
 * thread in stream order (stream_px.h). Decision: one mechanism for every
 * collective and barrier across hosts, ordered and capturable like any
 * stream form, rather than a device kernel per collective; docs/PROXY.md. */
static symm_status coll_px(symm__ctx *ctx, void *arg) {
    (void)ctx;
    const coll_call *c = arg;
    symm_status st = coll_run_x(c, true);
    symm__team *t = symm__team_lookup(c->team_h);
    if (t) symm__px_team_done(t, c->px_counted);
    return st;
}

static symm_status coll_run(const coll_call *c) { return coll_run_x(c, false); }

/* A stream collective over a team with PEs of other hosts: its arguments
 * checked now (a bad call fails at once, on this PE), then the call queued
 * for the proxy's thread (coll_px) in stream order. */
static symm_status coll_enqueue_px(const coll_call *c, coll_plan *p) {
    SYMM_TRY(coll_check(c, p));
    coll_call b; /* field by field on zeroed bytes: equal calls compare equal */
    memset(&b, 0, sizeof b);
    b.kind = c->kind;
    b.team_h = c->team_h;
    b.dst_h = c->dst_h;
    b.src_h = c->src_h;
    b.dst_index = c->dst_index;
    b.src_index = c->src_index;
    b.nelems = c->nelems;
    b.root = c->root;
    b.op = c->op;
    b.dst_nelems = c->dst_nelems;
    b.src_nelems = c->src_nelems;
    b.scount_h = c->scount_h;
    b.rcount_h = c->rcount_h;
    b.scount_index = c->scount_index;
    b.rcount_index = c->rcount_index;
    return symm__px_team_call(p->team, coll_px, &b, sizeof b, &b.px_counted, c->stream);
}

/* Host memory the generic algorithm needs, taken before the exchange: a
 * failure is this PE's status, seen by all, not a hang. */
static symm_status coll_buffers(const coll_call *c, coll_plan *p, bool reduction, bool counts_a2av) {
    if (c->kind == SYMM__COLL_COLLECT || counts_a2av) {
        p->counts = malloc((size_t)p->team->n_pes * (counts_a2av ? 4u : 1u) * sizeof *p->counts);
        if (!p->counts) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", p->fn);
    }
    if (reduction && c->nelems) {
        p->acc = malloc((size_t)SYMM__COLL_CHUNK * 8);
        p->tmp = malloc((size_t)SYMM__COLL_CHUNK * 8);
        if (!p->acc || !p->tmp)
            return symm__err(SYMM_ERR_OUT_OF_MEMORY, "%s: out of host memory", p->fn);
    }
    return SYMM_SUCCESS;
}

static symm_status coll_run_x(const coll_call *c, bool in_proxy) {
    symm__err_clear();
    coll_plan p;
    memset(&p, 0, sizeof p);
    /* in the proxy: a stream form the caller made (its messages say so) */
    p.fn = c->on_stream || in_proxy ? stream_kind_name(c->kind) : kind_name(c->kind);
    symm_status st = symm__team_get(c->team_h, &p.team);
    if (st) return symm__err_prefix(p.fn, st);
    p.ctx = p.team->ctx;
    /* the proxy's thread runs a stream form the caller's thread enqueued */
    st = in_proxy ? SYMM_SUCCESS : symm__thread_check(p.ctx);
    /* a blocking call runs after the team's stream calls issued before it */
    if (!st && !in_proxy && !c->on_stream) st = symm__team_px_drain(p.team);
    if (st) return symm__err_prefix(p.fn, st);
    if (c->on_stream && symm__px_stream_team(p.team)) return coll_enqueue_px(c, &p);
    const int32_t hook_max = p.ctx->ops->coll_max_pes;
    /* Teams that span hosts run the generic algorithm over routed put/get. */
    const bool hook = p.ctx->ops->coll != NULL && (hook_max == 0 || p.team->n_pes <= hook_max) &&
                      !symm__team_has_remote(p.team);
    if (!hook && c->on_stream && p.ctx->ops->coll != NULL)
        return symm__err(SYMM_ERR_NOT_SUPPORTED,
                         "%s: the %s backend runs stream collectives on teams of up to %d PEs "
                         "(this team has %d); the blocking form works for any team",
                         p.fn, p.ctx->ops->name, (int)hook_max, (int)p.team->n_pes);
    const bool reduction = c->kind == SYMM__COLL_REDUCE || c->kind == SYMM__COLL_REDUCESCATTER;
    const bool a2av = c->kind == SYMM__COLL_ALLTOALLV;
    symm_status local = coll_check(c, &p);
    /* The hook's other blocking forms agree first where the backend can
     * (coll_agreed); collect and alltoallv exchange below. */
    const bool agree = hook && !c->on_stream && c->kind != SYMM__COLL_COLLECT && !a2av &&
                       p.ctx->ops->coll_agree && p.team->n_pes > 1;
    /* (the blocking alltoallv exchanges even then, so its peers hear of it) */
    if (hook && local && !agree && (c->on_stream || !a2av)) return local;
    SYMM_TRACE(SYMM_LOG_COLL, "%s: team of %d PEs, %llu elements of %u bytes: %s%s", p.fn,
               (int)p.team->n_pes, (unsigned long long)(a2av ? c->src_nelems : c->nelems), p.es,
               hook ? "the backend's hook, " : generic_algorithm(c->kind),
               hook ? p.ctx->ops->name : "");
    /* With a hook collect (its counts) and alltoallv (its cross-PE checks)
     * exchange arguments first, the other blocking forms agree (above);
     * stream forms cannot talk to peers from the host inside a stream or
     * capture. Without a hook (host backend) every form runs the generic
     * algorithm. */
    if (agree) return coll_agreed(c, &p, local);
    if (hook && (c->on_stream || (c->kind != SYMM__COLL_COLLECT && !a2av)))
        return coll_hook(c, &p);

    if (local == SYMM_SUCCESS) local = coll_buffers(c, &p, reduction, a2av && !hook);
    char saved[1024] = "";
    if (local) snprintf(saved, sizeof saved, "%s", symm__last_error());

    symm__xrec rec;
    call_record(c, &p, local, &rec);
    const symm__xrec *all = NULL;
    st = symm__team_exchange(p.team, &rec, &all);
    if (st == SYMM_SUCCESS) {
        st = coll_verdict(c, &p, all, local, saved);
        if (st == SYMM_SUCCESS && !hook) st = coll_move(c, &p, all);
        /* Closing sync: peers are done reading our record and our src. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", symm__last_error());
        symm_status sst = symm__team_sync(p.team);
        if (st == SYMM_SUCCESS) st = sst;
        else symm__err(st, "%s", msg);
        if (st == SYMM_SUCCESS && hook) st = coll_hook(c, &p);
    }
    free(p.counts);
    free(p.acc);
    free(p.tmp);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */
/* ------------------------------------------------------------------------ */

symm_status symm_broadcast(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                           uint64_t src_index, uint64_t nelems, int32_t root) {
    coll_call c = {.kind = SYMM__COLL_BROADCAST, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems, .root = root};
    return coll_run(&c);
}

symm_status symm_fcollect(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                          uint64_t src_index, uint64_t nelems) {
    coll_call c = {.kind = SYMM__COLL_FCOLLECT, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems};
    return coll_run(&c);
}

symm_status symm_collect(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                         uint64_t src_index, uint64_t nelems) {
    coll_call c = {.kind = SYMM__COLL_COLLECT, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems};
    return coll_run(&c);
}

symm_status symm_alltoall(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                          uint64_t src_index, uint64_t nelems) {
    coll_call c = {.kind = SYMM__COLL_ALLTOALL, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems};
    return coll_run(&c);
}

symm_status symm_reduce(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                        uint64_t src_index, uint64_t nelems, uint32_t op) {
    coll_call c = {.kind = SYMM__COLL_REDUCE, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems, .op = op};
    return coll_run(&c);
}

symm_status symm_reducescatter(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                               uint64_t src_index, uint64_t nelems, uint32_t op) {
    coll_call c = {.kind = SYMM__COLL_REDUCESCATTER, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems, .op = op};
    return coll_run(&c);
}

/* Stream forms: validated as above; with a backend hook the data movement is
 * enqueued on stream, without one (host) the blocking algorithm runs now. */

symm_status symm_broadcast_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                     symm_buf src, uint64_t src_index, uint64_t nelems,
                                     int32_t root, symm_stream_t stream) {
    coll_call c = {.kind = SYMM__COLL_BROADCAST, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems, .root = root,
                   .on_stream = true, .stream = stream};
    return coll_run(&c);
}

symm_status symm_fcollect_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                    symm_buf src, uint64_t src_index, uint64_t nelems,
                                    symm_stream_t stream) {
    coll_call c = {.kind = SYMM__COLL_FCOLLECT, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems,
                   .on_stream = true, .stream = stream};
    return coll_run(&c);
}

symm_status symm_alltoall_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                    symm_buf src, uint64_t src_index, uint64_t nelems,
                                    symm_stream_t stream) {
    coll_call c = {.kind = SYMM__COLL_ALLTOALL, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems,
                   .on_stream = true, .stream = stream};
    return coll_run(&c);
}

symm_status symm_reduce_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src,
                                  uint64_t src_index, uint64_t nelems, uint32_t op,
                                  symm_stream_t stream) {
    coll_call c = {.kind = SYMM__COLL_REDUCE, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems, .op = op,
                   .on_stream = true, .stream = stream};
    return coll_run(&c);
}

symm_status symm_reducescatter_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                         symm_buf src, uint64_t src_index, uint64_t nelems,
                                         uint32_t op, symm_stream_t stream) {
    coll_call c = {.kind = SYMM__COLL_REDUCESCATTER, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .nelems = nelems, .op = op,
                   .on_stream = true, .stream = stream};
    return coll_run(&c);
}

/* alltoallv: counts in symmetric memory (symm.h, "since 1.2"). */

symm_status symm_alltoallv(symm_team team, symm_buf dst, uint64_t dst_index, uint64_t dst_nelems,
                           symm_buf src, uint64_t src_index, uint64_t src_nelems,
                           symm_buf send_counts, uint64_t send_index, symm_buf recv_counts,
                           uint64_t recv_index) {
    coll_call c = {.kind = SYMM__COLL_ALLTOALLV, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .dst_nelems = dst_nelems,
                   .src_nelems = src_nelems, .scount_h = send_counts, .rcount_h = recv_counts,
                   .scount_index = send_index, .rcount_index = recv_index};
    return coll_run(&c);
}

symm_status symm_alltoallv_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                     uint64_t dst_nelems, symm_buf src, uint64_t src_index,
                                     uint64_t src_nelems, symm_buf send_counts,
                                     uint64_t send_index, symm_buf recv_counts,
                                     uint64_t recv_index, symm_stream_t stream) {
    coll_call c = {.kind = SYMM__COLL_ALLTOALLV, .team_h = team, .dst_h = dst, .src_h = src,
                   .dst_index = dst_index, .src_index = src_index, .on_stream = true,
                   .stream = stream, .dst_nelems = dst_nelems, .src_nelems = src_nelems,
                   .scount_h = send_counts, .rcount_h = recv_counts, .scount_index = send_index,
                   .rcount_index = recv_index};
    return coll_run(&c);
}

/*
 * symm_alltoallv / symm_alltoallv_on_stream on the CUDA backend (the coll
 * hook's SYMM__COLL_ALLTOALLV): one launch, so the counts are read on the
 * GPU when the stream gets there (docs/DECISIONS.md "alltoallv (counts in
 * GPU memory)"). Where the team's LL lines serve it (up to 8
 * PEs of one host, or one PE; SYMM_CUDA_COLL_ALGO auto or ll: cuda_tuning.c
 * symm__cu_a2av_ll_choose), symm_k_alltoallv_ll (kernels_a2av.cu "The LL form":
 * headers and small pieces in the lines, no team barrier); else
 * symm_k_alltoallv, the grid form of symm_device_coll.cuh (two team
 * barriers; docs/DECISIONS.md "alltoallv (counts in GPU memory)").
 *
 * Failures: a barrier that gave up (a dead peer, the timeout) sets the
 * context's error word as every runtime kernel does; a PE that copied
 * nothing (dst too small, a peer's piece beyond its src) or whose own send
 * counts exceed its src leaves the reason in a pinned word of the team's
 * slot: the blocking form's is read after the wait and returned; the stream
 * form's is taken by the next symm_ctx_async_error (cuda.c's async_poll) and
 * recorded there.
 */
#include <stdlib.h>

#include "cuda_coll.h"
#include "cuda_tuning.h"

/* The word of a call on team slot slot: the stream form's or the blocking
 * form's (cuda_internal.h CU_SLOT_*). */
static int *a2av_word(cu_state *s, int32_t slot, bool stream) {
    return (int *)&symm__cu_slot_words(s, slot)[stream ? CU_SLOT_A2AV_STREAM : CU_SLOT_A2AV];
}

/* The status and message of a reason the kernel left (SYMM__A2AV_*). */
static symm_status a2av_status(int why, const char *fn, uint64_t dst_cap, uint64_t src_cap,
                               bool record, symm__ctx *ctx) {
    const char *fmt;
    unsigned long long v;
    switch (why) {
    case CU_A2AV_DST:
        fmt = "%s: this PE would receive more elements than dst_nelems (%llu); nothing was "
              "received (recv_counts says what would have come)";
        v = (unsigned long long)dst_cap;
        break;
    case CU_A2AV_PEER_SRC:
        fmt = "%s: a team PE's elements for this PE lie beyond its src range (its counts up to "
              "this PE add up to more than src_nelems %llu); nothing was received";
        v = (unsigned long long)src_cap;
        break;
    case CU_A2AV_OWN_SRC:
        fmt = "%s: this PE's send counts add up to more than src_nelems (%llu)";
        v = (unsigned long long)src_cap;
        break;
    default:
        fmt = "%s: the GPU reported failure %llu";
        v = (unsigned long long)why;
        break;
    }
    if (record) {
        symm__async_record(ctx, SYMM_ERR_OUT_OF_BOUNDS, fmt, fn, v);
        return SYMM_ERR_OUT_OF_BOUNDS;
    }
    return symm__err(SYMM_ERR_OUT_OF_BOUNDS, fmt, fn, v);
}

void symm__cu_a2av_poll(cu_state *s) {
    if (!s->lane_pinned) return;
    for (int32_t slot = 0; slot < SYMM__MAX_TEAMS; slot++) {
        int *w = a2av_word(s, slot, true);
        if (!__atomic_load_n(w, __ATOMIC_RELAXED)) continue;
        int why = __atomic_exchange_n(w, 0, __ATOMIC_SEQ_CST);
        if (why)
            (void)a2av_status(why, "symm_alltoallv_on_stream", s->a2av_caps[slot][0],
                              s->a2av_caps[slot][1], true, s->ctx);
    }
}

symm_status symm__cu_a2av_setup(cu_state *s) {
    SYMM_TRY(symm__cu_get_fn(s, &s->f_a2av, "symm_k_alltoallv"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_a2av_ll, "symm_k_alltoallv_ll"));
    uint64_t blocks = 0;
    SYMM_TRY(symm__cu_env_size("SYMM_CUDA_A2AV_BLOCKS", 0, &blocks));
    const uint64_t sms = s->sms > 0 ? (uint64_t)s->sms : 1;
    if (blocks > sms)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "SYMM_CUDA_A2AV_BLOCKS=%llu: expected 0 (one block a SM) to %llu (the "
                         "SMs of this GPU: the grid is cooperative, one block a SM at most)",
                         (unsigned long long)blocks, (unsigned long long)sms);
    s->a2av_blocks = (unsigned)(blocks ? blocks : sms);
    return SYMM_SUCCESS;
}

/* The LL form of alltoallv (kernels_a2av.cu "The LL form"),
 * where symm__cu_a2av_ll_choose takes it: *p gets the team's bases, barrier
 * flags and lines, and the largest piece a pair sends inline: the choice's
 * threshold, less the header lines. Larger pieces are pulled. */
static symm_status a2av_ll(const symm__ctx *ctx, const cu_state *s, const symm__team *team,
                           symm__ka2avll_params *p, bool *ll, const char **why) {
    bool alone = false;
    uint64_t thr = 0;
    *ll = symm__cu_a2av_ll_choose(s, team, &alone, &thr, why);
    if (!*ll) return SYMM_SUCCESS;
    char *base[CU_PARAM_PES];
    SYMM_TRY(symm__cu_team_bases(ctx, team, base));
    CU_FILL_TEAM_PARAMS(*p);
    if (alone) return SYMM_SUCCESS;
    p->ll_off = s->span + (uint64_t)team->slot * s->ll_slot;
    p->ll_region = s->ll_region;
    p->ll_parity = s->ll_parity;
    const uint64_t room = (s->ll_region / 16 - SYMM__A2L_DATA) * 8;
    p->inline_max = min_u64(min_u64(thr, s->ll_max), room);
    return SYMM_SUCCESS;
}

/* One cooperative launch: cuLaunchKernelEx with the cooperative attribute,
 * else cuLaunchCooperativeKernel. */
static symm_status launch_coop(cu_state *s, CUfunction f, unsigned gx, unsigned bx,
                               unsigned smem, CUstream cs, void **args) {
    if (symm__cu.LaunchKernelEx) {
        CUlaunchAttribute a;
        memset(&a, 0, sizeof a);
        a.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        a.value.cooperative = 1;
        CUlaunchConfig c;
        symm__cu_launch_config(&c, &a, gx, 1, bx, smem, cs);
        CUresult r = symm__cu.LaunchKernelEx(&c, f, args, NULL);
        return r == CUDA_SUCCESS ? SYMM_SUCCESS
                                 : symm__cu_fail(r, "cuLaunchKernelEx(symm_k_alltoallv*, cooperative)");
    }
    if (symm__cu.LaunchCooperativeKernel) {
        CUresult r = symm__cu.LaunchCooperativeKernel(f, gx, 1, 1, bx, 1, 1, smem, cs, args);
        return r == CUDA_SUCCESS ? SYMM_SUCCESS
                                 : symm__cu_fail(r, "cuLaunchCooperativeKernel(symm_k_alltoallv*)");
    }
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "the CUDA driver has neither cuLaunchKernelEx nor "
                     "cuLaunchCooperativeKernel: alltoallv needs a cooperative launch");
}

symm_status symm__cu_alltoallv(symm__ctx *ctx, cu_state *s, const symm__coll *c, void *stream) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes; /* at most CU_PARAM_PES (the hook's limit) */
    SYMM_TRY(symm__cu_team_reachable(ctx, team));
    symm__ka2avll_params q;
    memset(&q, 0, sizeof q);
    bool ll = false;
    const char *why = "";
    SYMM_TRY(a2av_ll(ctx, s, team, &q, &ll, &why));
    symm__ka2av_params p;
    memset(&p, 0, sizeof p);
    SYMM_TRY(cu_enter(s));
    cu_lane *lane = NULL;
    if (!stream) SYMM_TRY(symm__cu_lane(s, team, &lane));
    int *word = a2av_word(s, team->slot, stream != NULL);
    if (ll) {
        q.dst_off = c->dst_off;
        q.src_off = c->src_off;
        q.scount_off = c->scount_off;
        q.rcount_off = c->rcount_off;
        q.dst_cap = c->dst_cap;
        q.src_cap = c->src_cap;
        q.unit_bytes = c->elem_size;
        q.word = word;
    } else {
        SYMM_TRY(ctx->ops->device_ctx(ctx, &p.ctx));
        SYMM_TRY(symm__device_team_of(team, &p.team));
        p.dst = symm__local(ctx, c->dst_off);
        p.src = symm__local(ctx, c->src_off);
        p.send_counts = (const uint64_t *)symm__local(ctx, c->scount_off);
        p.recv_counts = (uint64_t *)symm__local(ctx, c->rcount_off);
        p.recv_offsets = p.recv_counts + n;
        p.dst_cap = c->dst_cap;
        p.src_cap = c->src_cap;
        p.unit_bytes = c->elem_size;
        p.timeout_ns = s->timeout_ns;
        p.err = s->err_word;
        p.word = word;
    }
    CUstream cs = lane ? lane->stream : (CUstream)stream;
    if (stream) {
        s->a2av_caps[team->slot][0] = c->dst_cap; /* for the message: the latest call's */
        s->a2av_caps[team->slot][1] = c->src_cap;
    } else {
        __atomic_store_n(word, 0, __ATOMIC_SEQ_CST);
    }
    if (ll) {
        SYMM_TRACE(SYMM_LOG_COLL, "cuda: alltoallv on %d PEs: LL form (%s), pieces of up to %llu "
                   "bytes inline, larger ones pulled; one grid of %u block(s) x %u threads "
                   "(counts read on the GPU)", (int)n, why,
                   (unsigned long long)q.inline_max, s->a2av_blocks, (unsigned)SYMM__A2AV_THREADS);
        void *args[] = {&q};
        /* a plain (PDL) launch: the LL form needs no co-residency (kernels_a2av.cu) */
        SYMM_TRY(symm__cu_launch(s, s->f_a2av_ll, "cuLaunchKernel(symm_k_alltoallv_ll)",
                                 s->a2av_blocks, 1, SYMM__A2AV_THREADS, cs, args));
    } else {
        /* 3 uint64_t a PE of shared memory: 1.5 KiB for the largest team */
        const unsigned smem = 3u * 8u * (unsigned)n;
        SYMM_TRACE(SYMM_LOG_COLL, "cuda: alltoallv on %d PEs: grid form (LL form not taken: %s); "
                   "one cooperative grid of %u block(s) x %u threads (counts read on the GPU)",
                   (int)n, why, s->a2av_blocks, (unsigned)SYMM__A2AV_THREADS);
        void *args[] = {&p};
        SYMM_TRY(launch_coop(s, s->f_a2av, s->a2av_blocks, SYMM__A2AV_THREADS, smem, cs, args));
    }
    if (stream) return SYMM_SUCCESS;
    SYMM_TRY(symm__cu_lane_finish(s, lane, NULL, 0));
    const int w = __atomic_exchange_n(word, 0, __ATOMIC_SEQ_CST);
    return w ? a2av_status(w, "symm_alltoallv", c->dst_cap, c->src_cap, false, ctx)
             : SYMM_SUCCESS;
}

/*
 * CUDA backend: the barrier algorithms, which every collective can take and
 * which run wherever cuda_tuning.c chose no other form: the two-shot
 * all-reduce and the pulling reduce-scatter (kernels_reduce.cu), the
 * all-gather and all-to-all that push or pull, the broadcast and the
 * collect (kernels.cu symm_k_gather), between the team's barriers, which
 * the data kernels open and close themselves.
 */
#include "cuda_coll.h"
#include "cuda_tuning.h"

/* Whether the closing barrier runs in the (last) data kernel. The barrier
 * algorithms start with the team's barrier, fused into their (first) data
 * kernel, and end with it: fused into the last one too (its last block runs
 * it; one launch, so half the host time), except while the stream is being
 * captured into a CUDA graph, where host time is paid once and a barrier
 * kernel of its own after the data kernel is faster on the GPU (the kernel
 * boundary publishes the data sooner than every block's fence;
 * docs/DECISIONS.md "Barrier algorithms"; docs/GPU-RESULTS.md "2026-11-27:
 * one launch a call"). */
static symm_status fuses_closing(void *stream, CUstream cs, int32_t n, bool *fuse) {
    *fuse = n > 1;
    if (*fuse && stream) {
        CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
        SYMM__CU(StreamIsCapturing(cs, &cap));
        *fuse = cap == CU_STREAM_CAPTURE_STATUS_NONE;
    }
    return SYMM_SUCCESS;
}

/* All-reduce (two-shot) and reduce-scatter (each PE pulls and reduces its
 * own block): one kernel. */
static symm_status coll_reduce(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                               bool fuse, unsigned max_blocks) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t es = c->elem_size;
    CUfunction f = NULL;
    SYMM_TRY(symm__cu_reduce_fn(s, c->dtype, c->op, CU_RED_BARRIER, &f));
    symm__kreduce_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.enter = n > 1;
    p.dst_off = c->dst_off;
    if (c->kind == SYMM__COLL_REDUCE) {
        /* two-shot: PE r reduces slice r and writes it to every PE (in-place safe) */
        const uint64_t per = symm__slice_elems(c->nelems, n, es);
        p.src_off = c->src_off;
        p.lo = min_u64((uint64_t)me * per, c->nelems);
        p.hi = p.lo + symm__slice_count(c->nelems, per, me);
        p.push = 1;
    } else {
        p.src_off = c->src_off + (uint64_t)me * c->nelems * es;
        p.lo = 0;
        p.hi = c->nelems;
        p.push = 0;
    }
    uint64_t steps = (p.hi - p.lo + (16 / es) - 1) / (16 / es);
    unsigned blocks = (unsigned)min_u64(max_u64((steps + CU_THREADS - 1) / CU_THREADS, 1), max_blocks);
    p.leave = fuse;
    void *args[] = {&p};
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s kernel, %u block(s) x %d threads, elements [%llu, %llu)",
               c->kind == SYMM__COLL_REDUCE ? "two-shot reduce (reduce a slice, push it to all)"
                                            : "reduce-scatter (pull and reduce own block)",
               blocks, CU_THREADS, (unsigned long long)p.lo, (unsigned long long)p.hi);
    SYMM_TRY(symm__cu_launch(s, f, "cuLaunchKernel(symm_k_reduce)", blocks, 1, CU_THREADS, cs,
                             args));
    return SYMM_SUCCESS;
}

/* The gather kernel's parameters for c: push (this PE writes into the
 * peers) or pull (symm__cu_copy_pulls); *pairs: the pairs it copies. */
static symm_status gather_params(const cu_state *s, const symm__coll *c, char *const *base,
                                 symm__kgather_params *p, unsigned *pairs) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t es = c->elem_size;
    const bool push = !symm__cu_copy_pulls(s, c, n);
    CU_FILL_TEAM_PARAMS(*p);
    p->enter = n > 1;
    p->src_off = c->src_off;
    p->dst_off = c->dst_off;
    p->len = c->nelems * es;
    p->only_j = -1;
    *pairs = (unsigned)n;
    switch (c->kind) {
    case SYMM__COLL_BROADCAST:
        p->only_j = c->root;
        *pairs = 1;
        break;
    case SYMM__COLL_FCOLLECT:
        if (push) { /* my block to block me of every PE (in place too) */
            p->push = 1;
            p->dst_me_stride = p->len;
        } else { /* block j of dst from PE j's source (in place: its block j of dst) */
            p->dst_j_stride = p->len;
            if (c->src_off == c->dst_off + (uint64_t)me * p->len) {
                p->src_off = c->dst_off;
                p->src_j_stride = p->len;
            }
        }
        break;
    case SYMM__COLL_ALLTOALL:
        if (push) { /* my block j to block me of PE j */
            p->push = 1;
            p->src_j_stride = p->len;
            p->dst_me_stride = p->len;
        } else { /* block j of dst from block me of PE j's source */
            p->src_me_stride = p->len;
            p->dst_j_stride = p->len;
        }
        break;
    case SYMM__COLL_COLLECT:
        break;
    default:
        return symm__err(SYMM_ERR_INTERNAL, "unknown collective kind %u", c->kind);
    }
    return SYMM_SUCCESS;
}

/* Collect: one gather kernel a block, the last closing where it fuses. */
static symm_status coll_collect(cu_state *s, const symm__coll *c, CUstream cs,
                                symm__kgather_params *p, bool fuse, unsigned max_blocks) {
    const int32_t n = c->team->n_pes, me = c->team->my_pe;
    const uint64_t es = c->elem_size;
    if (!c->counts) return symm__err(SYMM_ERR_INTERNAL, "collect without counts");
    uint64_t at = c->dst_off, mine_at = c->dst_off;
    for (int32_t j = 0; j < me; j++) mine_at += c->counts[j] * es;
    /* in place: PE j's source is its own block of dst */
    const bool inplace = c->src_off == mine_at;
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: collect as %d gather kernel(s), one per block%s", n,
               inplace ? ", in place" : "");
    for (int32_t j = 0; j < n; j++) {
        p->only_j = j;
        p->dst_off = at; /* block j lands at the running offset */
        p->dst_j_stride = 0;
        p->src_off = inplace ? at : c->src_off;
        p->len = c->counts[j] * es;
        p->leave = j == n - 1 && fuse; /* the last kernel closes */
        at += p->len;
        void *args[] = {p};
        SYMM_TRY(symm__cu_launch(s, s->f_gather, "cuLaunchKernel(symm_k_gather)",
                        copy_blocks(p->len, CU_THREADS, max_blocks), 1, CU_THREADS, cs, args));
        p->enter = 0;
    }
    return SYMM_SUCCESS;
}

/* All-gather, all-to-all and broadcast: one gather kernel. */
static symm_status gather_launch(cu_state *s, const symm__coll *c, CUstream cs,
                                 symm__kgather_params *p, unsigned pairs, bool fuse,
                                 unsigned max_blocks) {
    const int32_t me = c->team->my_pe;
    /* Blocks (kernels.cu symm_k_gather): a push runs one block of
     * CU_PUSH_THREADS a SM, sms / 16 of them on the own pair and the
     * rest shared by the peers; a pull CU_THREADS a block, 2 a SM,
     * the same number on every pair. */
    const unsigned thr = p->push ? CU_PUSH_THREADS : CU_THREADS;
    const unsigned sms = s->sms > 0 ? (unsigned)s->sms : 64u;
    /* the own pair copies unless its source is its destination (in place) */
    const bool self = p->src_off + (uint64_t)me * (p->src_me_stride + p->src_j_stride) !=
                      p->dst_off + (uint64_t)me * (p->dst_me_stride + p->dst_j_stride);
    unsigned bx;
    if (pairs == 1) { /* broadcast, or a team of one */
        if (p->only_j < 0) p->only_j = 0;
        bx = copy_blocks(p->len, thr, max_blocks);
    } else {
        const unsigned self_cap = p->push ? sms / 16 : max_blocks / pairs;
        p->self_bx = self ? copy_blocks(p->len, thr, self_cap) : 0;
        const unsigned peer_cap = p->push ? (sms - p->self_bx) / (pairs - 1) : max_blocks / pairs;
        p->peer_bx = copy_blocks(p->len, thr, peer_cap);
        bx = p->self_bx + p->peer_bx * (pairs - 1);
    }
    p->leave = fuse;
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: gather kernel (%s), %u block(s) x %u threads (own pair %u, "
               "%u a peer), %llu bytes per pair", p->push ? "push" : "pull", bx, thr, p->self_bx,
               p->peer_bx, (unsigned long long)p->len);
    void *args[] = {p};
    SYMM_TRY(symm__cu_launch(s, s->f_gather, "cuLaunchKernel(symm_k_gather)", bx, 1, thr,
                             cs, args));
    return SYMM_SUCCESS;
}

/* The barrier algorithms on cs (stream: the caller's, NULL for a blocking
 * call on the team's lane) for the reason why. */
symm_status symm__cu_coll_barrier(cu_state *s, const symm__coll *c, char *const *base,
                                  void *stream, CUstream cs, const char *why) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes;
    const unsigned max_blocks = (unsigned)(s->sms > 0 ? 2 * s->sms : 128);
    const uint64_t pair_bytes = c->nelems * c->elem_size;
    bool fuse = false;
    SYMM_TRY(fuses_closing(stream, cs, n, &fuse));
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm %s (%s), "
               "closing barrier %s", symm__cu_coll_kind_name(c->kind),
               (unsigned long long)pair_bytes, (int)n,
               c->kind == SYMM__COLL_REDUCE ? "twoshot" : "copy", why,
               fuse ? "in the data kernel" : n > 1 ? "a kernel of its own (graph capture)" : "none");
    if (c->kind == SYMM__COLL_REDUCE || c->kind == SYMM__COLL_REDUCESCATTER) {
        SYMM_TRY(coll_reduce(s, c, base, cs, fuse, max_blocks));
    } else {
        symm__kgather_params p;
        unsigned pairs = 0;
        SYMM_TRY(gather_params(s, c, base, &p, &pairs));
        if (c->kind == SYMM__COLL_COLLECT)
            SYMM_TRY(coll_collect(s, c, cs, &p, fuse, max_blocks));
        else
            SYMM_TRY(gather_launch(s, c, cs, &p, pairs, fuse, max_blocks));
    }
    if (n > 1 && !fuse) SYMM_TRY(symm__cu_launch_barrier(s, team, base, 2, cs));
    return SYMM_SUCCESS;
}

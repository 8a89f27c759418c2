/*
 * CUDA backend: the staged reductions (kernels_staged.cuh): the all-reduce
 * and reduce-scatter through the staging slots of the scratch
 * (cuda_internal.h "Staged reductions"), with their variants: the peer
 * form, landing in the peer's dst and the in-place swap of 2 PEs.
 * cuda_tuning.c st_choose says when they run, and which variant.
 */
#include "cuda_coll.h"
#include "cuda_tuning.h"

/* Launch the staged reduction: slices (all-reduce on 2 PEs: every PE reduces
 * the whole vector, one shot; on more: slice j is PE j's share, gathered to
 * every PE after; reduce-scatter: block j of the input), then the grid:
 * blocks of at least st_chunk bytes per step, at most one per SM and
 * SYMM__ST_MAX_BLOCKS, and at least two slots of the staging per region, so
 * a block's next step overlaps its receiver's last one. On 2 PEs, where the
 * staging would not hold the call: landing out of place (pieces of up to
 * st_land), swap in place (up to st_swap_max, two of them in shared memory).
 * false (nothing launched) when the steps would overflow the flags' 24 bits. */
symm_status symm__cu_coll_staged(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                                 const char *why, bool *done) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t es = c->elem_size, ne = c->nelems;
    symm__kstaged_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.st_off = s->st_base + (uint64_t)team->slot * s->st_slot;
    p.st_region = s->st_region;
    p.st_parity = s->st_parity;
    p.src_off = c->src_off;
    p.dst_off = c->dst_off;
    /* the peer form: on 2 PEs an all-reduce in halves (symm__cu_st_halves, which
     * plans it), on more PEs wherever the staging holds the slices (below) */
    symm__st_plan plan;
    bool peer = false;
    if (c->kind == SYMM__COLL_REDUCESCATTER) {
        p.src_j_stride = ne * es;
        for (int32_t j = 0; j < n; j++) p.cnt[j] = ne;
    } else if (n == 2 && !(peer = symm__cu_st_halves(s, c, &plan))) {
        for (int32_t j = 0; j < n; j++) p.cnt[j] = ne;
    } else {
        const uint64_t per = symm__slice_elems(ne, n, es);
        p.src_j_stride = per * es;
        for (int32_t j = 0; j < n; j++) p.cnt[j] = symm__slice_count(ne, per, j);
        p.dst_off = c->dst_off + (uint64_t)me * per * es;
        p.gather = 1;
    }
    p.vec = (p.src_off | p.src_j_stride | p.dst_off) % 16 == 0;
    uint64_t len = 0; /* the longest slice, in bytes */
    for (int32_t j = 0; j < n; j++) len = max_u64(len, p.cnt[j] * es);
    /* swap only where the staging would be reused: what fits it is faster
     * staged (no save, no round trip; docs/GPU-RESULTS.md "2026-11-27:
     * landing and swap") */
    if (n > 2) peer = symm__cu_st_peer_shape(s, len, n, p.gather != 0, &plan);
    const bool land = !peer && symm__cu_st_can_land(s, c);
    const bool swap = !peer && !land && symm__cu_st_can_swap(s, c) && len > s->st_bytes;
    if (!peer && !symm__st_make_plan(len, s->sms > 0 ? (uint64_t)s->sms : 0,
                                     land ? min_u64(s->st_bytes, CU_ST_LAND_STAGED_MAX)
                                          : s->st_bytes,
                                     s->st_chunk, s->st_steps,
                                     land ? s->st_land : swap ? s->st_swap_max : 0, &plan)) {
        *done = false;
        return SYMM_SUCCESS;
    }
    const uint64_t blocks = peer ? plan.blocks * (uint64_t)(n - 1) : plan.blocks, chunk = plan.chunk;
    p.chunk = chunk;
    p.depth = swap ? 0 : (uint32_t)plan.depth;
    p.steps = (uint32_t)plan.steps;
    p.land = land && plan.steps > plan.depth;
    p.swap = swap;
    p.peer = peer;
    CUfunction f = NULL;
    SYMM_TRY(symm__cu_reduce_fn(s, c->dtype, c->op, CU_RED_STAGED, &f));
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm staged (%s), "
               "%s, %llu block(s) x %u threads, %u step(s) of %llu bytes per block, %s%u",
               symm__cu_coll_kind_name(c->kind), (unsigned long long)(ne * es), (int)n, why,
               c->kind == SYMM__COLL_REDUCESCATTER ? "reduce-scatter"
               : p.gather                          ? "reduce a slice, write it to every PE"
                                                   : "every PE reduces the whole vector",
               (unsigned long long)blocks, 2 * SYMM__ST_GROUP, p.steps, (unsigned long long)chunk,
               p.swap   ? "in place through shared memory, depth "
               : p.land ? "landing in the peer's dst after staged steps: "
               : p.peer ? "blocks dealt out to the peers, steps "
                        : "depth ", p.depth);
    void *args[] = {&p};
    *done = true;
    return symm__cu_launch_smem(s, f, "cuLaunchKernel(symm_k_streduce)", (unsigned)blocks, 1,
                       2 * SYMM__ST_GROUP, swap ? (unsigned)(2 * chunk) : 0, cs, args);
}

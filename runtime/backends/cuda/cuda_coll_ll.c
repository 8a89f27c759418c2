/*
 * CUDA backend: the one-shot LL and LL128 collectives (kernels_ll.cu,
 * kernels_ll128.cu): every PE stores its data with flags into the peers'
 * lines in the scratch (cuda_internal.h "One-shot LL collectives", "LL128
 * reductions") and reads the peers' from its own, in one kernel and with no
 * team barrier. cuda_tuning.c ll_choose and l8_choose say when they run.
 */
#include "cuda_coll.h"
#include "cuda_tuning.h"

/* The one-shot LL form (kernels_ll.cu): one kernel, pair_bytes a pair of
 * PEs, its lines in the team slot's LL area. */
symm_status symm__cu_coll_ll(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                             uint64_t pair_bytes, const char *why) {
    const symm__team *team = c->team;
    symm__kll_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.ll_off = s->span + (uint64_t)team->slot * s->ll_slot;
    p.ll_region = s->ll_region;
    p.ll_parity = s->ll_parity;
    p.src_off = c->src_off;
    p.dst_off = c->dst_off;
    p.nbytes = pair_bytes;
    CUfunction f = s->f_ll_copy;
    switch (c->kind) {
    case SYMM__COLL_REDUCE: SYMM_TRY(symm__cu_reduce_fn(s, c->dtype, c->op, CU_RED_LL, &f)); break;
    case SYMM__COLL_REDUCESCATTER:
        SYMM_TRY(symm__cu_reduce_fn(s, c->dtype, c->op, CU_RED_LL, &f));
        p.src_j_stride = pair_bytes;
        break;
    case SYMM__COLL_FCOLLECT: p.dst_j_stride = pair_bytes; break;
    case SYMM__COLL_ALLTOALL:
        p.src_j_stride = pair_bytes;
        p.dst_j_stride = pair_bytes;
        break;
    default: return symm__err(SYMM_ERR_INTERNAL, "no LL form of collective kind %u", c->kind);
    }
    uint64_t units = (pair_bytes + 7) / 8;
    /* at most one block per SM: every block must be resident, since blocks
     * wait for the peers' blocks of the same index */
    unsigned cap = (unsigned)(s->sms > 0 ? s->sms : 64);
    unsigned blocks = (unsigned)min_u64(max_u64((units + CU_THREADS - 1) / CU_THREADS, 1), cap);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm ll (one-shot, "
               "%s), %u block(s) x %u threads", symm__cu_coll_kind_name(c->kind),
               (unsigned long long)pair_bytes, (int)team->n_pes, why, blocks, CU_THREADS);
    void *args[] = {&p};
    return symm__cu_launch(s, f, "cuLaunchKernel(symm_k_ll*)", blocks, 1, CU_THREADS, cs, args);
}

/* An LL128 reduction (kernels_ll128.cu) of shape *sh, its lines after the
 * team slot's staging. */
symm_status symm__cu_coll_l8(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                             const symm__l8_shape *sh, const char *why) {
    const symm__team *team = c->team;
    symm__kl8_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.src_off = c->src_off;
    p.dst_off = c->dst_off;
    memcpy(p.len, sh->len, sizeof p.len);
    p.src_j_stride = sh->src_j_stride;
    p.l8_half = sh->half;
    p.gather = sh->gather;
    p.ll_off = s->st_base + (uint64_t)team->slot * s->st_slot + SYMM__ST_HDR + s->st_bytes + SYMM__ST_SLACK;
    p.ll_region = s->st_region;
    p.ll_parity = s->st_parity;
    CUfunction f = NULL;
    SYMM_TRY(symm__cu_reduce_fn(s, c->dtype, c->op, CU_RED_L8, &f));
    uint64_t most = 0;
    for (int32_t j = 0; j < team->n_pes; j++) most = max_u64(most, p.len[j]);
    /* a warp moves 4 lines at a time; at most one block per SM, as for LL,
     * and on as many SMs as there are quads of lines (each SM's own link
     * bandwidth is a fraction of the GPU's): blocks of 2 to 16 warps */
    const uint64_t quads = ((most + SYMM__L8_DATA - 1) / SYMM__L8_DATA + 3) / 4;
    const unsigned cap = (unsigned)(s->sms > 0 ? s->sms : 64);
    const uint64_t warps = min_u64(max_u64((quads + cap - 1) / cap, 2), CU_L8_THREADS / 32);
    const unsigned threads = (unsigned)(32 * warps);
    const unsigned blocks = (unsigned)min_u64(max_u64((quads + warps - 1) / warps, 1), cap);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm ll128 (%s), "
               "%s, %u block(s) x %u threads", symm__cu_coll_kind_name(c->kind),
               (unsigned long long)(c->nelems * c->elem_size), (int)team->n_pes, why,
               c->kind == SYMM__COLL_REDUCESCATTER ? "reduce-scatter"
               : p.gather                          ? "reduce a slice, store it to every PE"
                                                   : "one shot: every PE reduces the whole vector",
               blocks, threads);
    void *args[] = {&p};
    return symm__cu_launch(s, f, "cuLaunchKernel(symm_k_l8reduce)", blocks, 1, threads, cs, args);
}

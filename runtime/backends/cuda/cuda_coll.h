/*
 * CUDA backend: what the collective files share (private to
 * runtime/backends/cuda): the team kernels' parameter blocks, the functions
 * of cuda_coll_common.c every form builds on, and each form's entry point,
 * which cuda_coll.c's dispatch calls once cuda_tuning.c chose it. cuda.c's
 * opening comment maps the files.
 */
#ifndef SYMM_CUDA_COLL_H
#define SYMM_CUDA_COLL_H

#include "cuda_internal.h"

/* Every team kernel's parameter block (barriers of 2, 8 and 64 PEs, gather,
 * reduce) starts alike: the team's heap bases, this PE, the team's barrier
 * flags, the timeout and the error word. Zeroes the rest. */
#define CU_FILL_TEAM_PARAMS(p)                                                     \
    do {                                                                           \
        memset(&(p), 0, sizeof(p));                                                \
        memcpy((p).team.base, base, (size_t)team->n_pes * sizeof *base);           \
        (p).team.me = team->my_pe;                                                 \
        (p).team.n = team->n_pes;                                                  \
        (p).area_off = symm__team_sync_off(s->ctx, team->slot) + CU_BARRIER_OFF;   \
        (p).timeout_ns = s->timeout_ns;                                            \
        (p).err = s->err_word;                                                     \
    } while (0)

/* The reduction kernels' forms (symm__cu_reduce_fn):
 * symm_k_<form>reduce_<dtype>_<op>. */
enum { CU_RED_BARRIER, CU_RED_LL, CU_RED_STAGED, CU_RED_L8, CU_RED_CE };

/* cuda_coll_common.c: what every form builds on */

/* SYMM_SUCCESS when every PE of the team is load/store reachable, else
 * symm__cu_unreachable's status. */
symm_status symm__cu_team_reachable(const symm__ctx *ctx, const symm__team *team);
/* base[j]: team PE j's heap (a team of up to CU_PARAM_PES PEs). */
symm_status symm__cu_team_bases(const symm__ctx *ctx, const symm__team *team, char **base);
/* The team's barrier kernel on cs, epoch = counter + bump. */
symm_status symm__cu_launch_barrier(cu_state *s, const symm__team *team, char *const *base,
                                    uint64_t bump, CUstream cs);
/* The reduction kernel of a form (CU_RED_*) for dtype and op, looked up once. */
symm_status symm__cu_reduce_fn(cu_state *s, uint32_t dtype, uint32_t op, int form, CUfunction *f);
/* Look up (and so load) every reduction kernel now; how many there are. */
unsigned symm__cu_preload_reduce(cu_state *s);
/* "all-reduce", "all-gather"...: a collective kind, for the trace. */
const char *symm__cu_coll_kind_name(uint32_t kind);
/* ops->sync_stream: the team's barrier on a stream (NULL: blocking, on the
 * team's lane). */
symm_status symm__cuda_sync_stream(symm__ctx *ctx, struct symm__team *team, void *stream);
/* ops->coll_agree (symm_k_agree on the team's lane; the host waits for its
 * done word). */
symm_status symm__cuda_coll_agree(symm__ctx *ctx, struct symm__team *team, const uint64_t *mine,
                                  uint64_t *all);

/* The forms: each enqueues the call c on cs, with the team's heap bases
 * (symm__cu_team_bases) and why it was chosen (for the trace). */

/* cuda_coll_ll.c: one-shot LL (pair_bytes a pair) and LL128 (shape *sh). */
symm_status symm__cu_coll_ll(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                             uint64_t pair_bytes, const char *why);
symm_status symm__cu_coll_l8(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                             const symm__l8_shape *sh, const char *why);
/* cuda_coll_ce.c: the copy-engine forms, through the cached graphs; their
 * setup (kernel, streams, events, the cache: SYMM_CUDA_CE_GRAPHS) and the
 * cache's teardown (state_free). */
symm_status symm__cu_coll_ce_cached(cu_state *s, const symm__coll *c, char *const *base,
                                    CUstream cs, const char *why);
symm_status symm__cu_ce_setup(cu_state *s);
void symm__cu_ce_graphs_free(cu_state *s);
/* cuda_coll_staged.c: the staged reduction; *done false (nothing launched)
 * when its steps would overflow the flags, for the barrier algorithms. */
symm_status symm__cu_coll_staged(cu_state *s, const symm__coll *c, char *const *base,
                                 CUstream cs, const char *why, bool *done);
/* cuda_coll_barrier.c: the barrier algorithms, where no other form was
 * chosen; stream is the caller's (NULL: blocking, cs the team's lane). */
symm_status symm__cu_coll_barrier(cu_state *s, const symm__coll *c, char *const *base,
                                  void *stream, CUstream cs, const char *why);
/* cuda_a2av.c: the coll hook's SYMM__COLL_ALLTOALLV; setup (f_a2av,
 * SYMM_CUDA_A2AV_BLOCKS); a failure a stream-form call left for
 * symm_ctx_async_error. */
symm_status symm__cu_alltoallv(symm__ctx *ctx, cu_state *s, const symm__coll *c, void *stream);
symm_status symm__cu_a2av_setup(cu_state *s);
void symm__cu_a2av_poll(cu_state *s);

/* cuda_coll.c: the top of the collectives */

/* Read and agree on the collective configuration, create and share the
 * scratch (once, from cuda_heap_init; collective). */
symm_status symm__cu_coll_setup(symm__ctx *ctx, cu_state *s);
/* ops->coll: the dispatch. */
symm_status symm__cuda_coll(symm__ctx *ctx, const symm__coll *c, void *stream);

#endif /* SYMM_CUDA_COLL_H */

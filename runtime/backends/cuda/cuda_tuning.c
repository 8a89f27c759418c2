/*
 * CUDA backend: tuning. Which algorithm a collective takes, and every
 * threshold that choice compares against with what was measured for it, in
 * one place apart from the forms that run them (as NCCL keeps its tuning
 * apart from its algorithms): symm__cu_coll_choose picks the one-shot LL,
 * LL128, copy-engine, staged or barrier form of a call (SYMM_CUDA_COLL_ALGO
 * forces one), symm__cu_a2av_ll_choose alltoallv's form, and the staged and
 * barrier forms ask here which of their variants a call takes. Reads the
 * state only (cu_state's settings and scratch layout, coll_plan.c's shapes);
 * calls no other file of the backend. cuda_tuning.h holds the measured
 * defaults setup reads. docs/DECISIONS.md "Collectives on CUDA" says why each
 * choice is what it is and links to its measurement; the figures are in
 * docs/GPU-RESULTS.md, each section cited here by its heading.
 */
#include "cuda_tuning.h"

/* ------------------------------------------------------------------------ */
/* One-shot LL and LL128                                                     */
/* ------------------------------------------------------------------------ */

/* Largest payload per pair of PEs (bytes PE i sends PE j) for which "auto"
 * picks the one-shot LL algorithm (one kernel, no barrier, but twice the
 * bytes on the link), by team size and kind (copy: all-gather, all-to-all).
 * Reductions: 128 KiB up to 4 PEs, where LL128 takes over (faster from
 * there: docs/GPU-RESULTS.md "2026-11-27: LL thresholds from PyTorch").
 * Copies on 2 PEs: 512 KiB (in C graphs on 2 x H200 LL beat push up to
 * 512 KiB a pair and was slower at 1 MiB a pair: docs/GPU-RESULTS.md
 * "2026-11-27: LL for all-gather and all-to-all on 2 PEs"); copies on 3-4
 * PEs: 128 KiB, not remeasured since the polling storm was fixed. Teams of
 * 5-8 PEs: not measured, scaled down (each PE stores n - 1 copies and spins
 * on n - 1 peers). The default scratch (SYMM_CUDA_LL_BYTES) holds the largest
 * threshold of a team of the host's PEs: 512 KiB on 2-GPU hosts. */
uint64_t symm__cu_ll_threshold(int32_t n, bool copy) {
    if (copy && n == 2) return 512u << 10;
    return n <= 4 ? 128u << 10 : 32u << 10;
}

/* SYMM_CUDA_COLL_ALGO forces an algorithm other than `algo` (auto forces none) */
static bool forced_other(const cu_state *s, int algo) {
    return s->coll_algo != CU_ALGO_AUTO && s->coll_algo != algo;
}

/* Whether the LL lines serve a team (and SYMM_CUDA_COLL_ALGO lets them), or
 * false with why not (for the trace). */
static bool ll_team(const cu_state *s, const symm__team *team, const char **why) {
    if (team->n_pes < 2) return *why = "one PE", false;
    if (forced_other(s, CU_ALGO_LL)) return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->ll_slot) return *why = "no LL scratch (SYMM_CUDA_LL_BYTES=0 or one GPU per host)", false;
    if (team->n_pes > s->ll_pes) return *why = "team larger than the LL scratch serves", false;
    if (team->slot >= CU_LL_SLOTS) return *why = "team slot without LL scratch", false;
    return true;
}

/* The LL form of alltoallv (cuda_a2av.c, kernels_a2av.cu "The LL form"):
 * the bytes of a pair are known only on the GPU, so the team alone decides
 * (ll_team; a team of one PE always, unless another algorithm is forced:
 * *alone). *thr: the largest piece a pair sends inline, the LL threshold
 * of an all-to-all of the team's size (what the lines hold with
 * SYMM_CUDA_COLL_ALGO=ll), which the caller caps at what the lines hold
 * less the header lines. Larger pieces are pulled. */
bool symm__cu_a2av_ll_choose(const cu_state *s, const symm__team *team, bool *alone,
                             uint64_t *thr, const char **why) {
    /* one PE: the same kernel copies its own piece, with no lines to touch */
    *alone = team->n_pes == 1 && !forced_other(s, CU_ALGO_LL);
    if (*alone) return *why = "one PE: its own piece, no lines", true;
    if (!ll_team(s, team, why)) return false;
    *thr = s->coll_algo == CU_ALGO_LL ? s->ll_max : symm__cu_ll_threshold(team->n_pes, true);
    *why = s->coll_algo == CU_ALGO_LL ? "SYMM_CUDA_COLL_ALGO=ll"
                                      : "auto: the LL lines serve the team";
    return true;
}

/* One-shot LL form of a collective (kernels_ll.cu), or false with why not
 * (for the trace) when symm__cuda_coll should run the barrier algorithm. */
static bool ll_choose(const cu_state *s, const symm__coll *c, uint64_t pair_bytes,
                      const char **why) {
    const symm__team *team = c->team;
    if (c->kind == SYMM__COLL_COLLECT) return *why = "collect has per-PE sizes", false;
    /* The two parities are safe only when every PE needs a line from every
     * peer to finish a call (kernels_common.cuh "LL"): a broadcast's root needs none, so
     * it could run two calls ahead and overwrite lines not yet read. */
    if (c->kind == SYMM__COLL_BROADCAST) return *why = "broadcast (the root waits for nobody)", false;
    if (!ll_team(s, team, why)) return false;
    if (pair_bytes > s->ll_max) return *why = "above SYMM_CUDA_LL_BYTES", false;
    if (s->coll_algo == CU_ALGO_LL) return *why = "SYMM_CUDA_COLL_ALGO=ll", true;
    if (pair_bytes > symm__cu_ll_threshold(team->n_pes, c->kind == SYMM__COLL_FCOLLECT ||
                                                            c->kind == SYMM__COLL_ALLTOALL))
        return *why = "auto, above the LL threshold", false;
    return *why = "auto, at most the LL threshold", true;
}

/* LL128 for a reduction, with its shape (coll_plan.c) in *sh, or false
 * with why not (for the trace). "auto" takes it for every reduction above
 * LL's sizes that fits the lines. On 2 and 4 x H200 it beat the staged and
 * barrier algorithms at every size it holds, back to back and in graphs
 * (docs/GPU-RESULTS.md "2026-11-27: LL128 reductions"). The PyTorch-graph
 * stall that kept it opt-in for a while was a polling storm, now avoided
 * by the waiters' naps (kernels_common.cuh "polite polling";
 * docs/GPU-RESULTS.md "2026-11-27: the polling storm"). */
static bool l8_choose(const cu_state *s, const symm__coll *c, symm__l8_shape *sh,
                      const char **why) {
    const symm__team *team = c->team;
    if (c->kind != SYMM__COLL_REDUCE && c->kind != SYMM__COLL_REDUCESCATTER)
        return *why = "not a reduction", false;
    if (forced_other(s, CU_ALGO_LL128))
        return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->st_slot || !s->l8_lines)
        return *why = "no LL128 lines (SYMM_CUDA_LL128_BYTES=0 or one GPU per host)", false;
    if (team->n_pes < 2) return *why = "one PE", false;
    if (team->n_pes > s->ll_pes) return *why = "team larger than the LL128 lines serve", false;
    if (team->slot >= CU_ST_SLOTS) return *why = "team slot without LL128 lines", false;
    if (!symm__l8_make_shape(c->kind == SYMM__COLL_REDUCESCATTER, team->n_pes, c->nelems,
                             c->elem_size, s->l8_lines, s->l8_oneshot, sh))
        return *why = "above SYMM_CUDA_LL128_BYTES", false;
    if (s->coll_algo == CU_ALGO_LL128) return *why = "SYMM_CUDA_COLL_ALGO=ll128", true;
    return *why = "auto, above LL and within the LL128 lines", true;
}

/* ------------------------------------------------------------------------ */
/* Copy engines                                                              */
/* ------------------------------------------------------------------------ */

/* Auto takes it for a block of at least CU_CE_AUTO_MIN4 bytes a PE on 4 PEs
 * and CU_CE_AUTO_MIN3 on 3: on 4 x H200 (C graphs) the copy-engine
 * reduce-scatter was slower than the best other form (the peer form or the
 * pull) below these blocks and faster from them on, on 4 PEs and on 3
 * (docs/GPU-RESULTS.md "2026-11-28: the copy-engine reduce-scatter").
 * Not measured with more than 4 PEs. */
#define CU_CE_AUTO_MIN4 (24u << 20)
/* The copy-engine all-reduce on 4 PEs from this many bytes (the whole
 * vector): on 4 x H200 (C graphs, in place, against auto without it) it was
 * even at 64 MiB and faster from 96 MiB, the more so the larger the call
 * (docs/GPU-RESULTS.md "2026-11-28: the copy-engine all-reduce on 4 × H200").
 * Not measured on 3 PEs. */
#define CU_CE_AR_AUTO_MIN4 (96u << 20)
#define CU_CE_AUTO_MIN3 (32u << 20)
static bool ce_choose(const cu_state *s, const symm__coll *c, uint64_t pair_bytes,
                      const char **why) {
    const symm__team *team = c->team;
    const bool exchange = c->kind == SYMM__COLL_FCOLLECT || c->kind == SYMM__COLL_ALLTOALL;
    if (c->kind != SYMM__COLL_REDUCESCATTER && c->kind != SYMM__COLL_REDUCE && !exchange)
        return *why = "not a reduction, all-gather or all-to-all", false;
    if (forced_other(s, CU_ALGO_CE)) return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->ce_off) return *why = "no copy-engine area (no collective scratch)", false;
    if (!exchange && !s->ce_slot)
        return *why = "no copy-engine slots (SYMM_CUDA_CE_BYTES=0, or a host of 2 or more than 4 PEs)", false;
    if (team->slot != 0) return *why = "the copy-engine area serves the world team only", false;
    if (team->n_pes < 2 || team->n_pes > s->ll_pes) return *why = "team size", false;
    if (!atomic_load(&s->memops)) return *why = "no stream memory operations", false;
    if (s->coll_algo == CU_ALGO_CE) return *why = "SYMM_CUDA_COLL_ALGO=ce", true;
    /* the all-gather and all-to-all by the copy engines only when forced:
     * slower on 2 x H200, on 4 at most a little faster at the largest size
     * (docs/DECISIONS.md "Copy engines") */
    if (exchange) return *why = "auto: the copy-engine all-gather / all-to-all only when forced", false;
    /* the all-reduce (reduce-scatter, then all-gather by the copy engines):
     * on 4 PEs from CU_CE_AR_AUTO_MIN4 bytes; not measured on 3 */
    if (c->kind == SYMM__COLL_REDUCE) {
        if (team->n_pes == 4 && pair_bytes >= CU_CE_AR_AUTO_MIN4)
            return *why = "auto, all-reduce of 96 MiB or more on 4 PEs", true;
        return *why = "auto: the copy-engine all-reduce on 4 PEs from 96 MiB only", false;
    }
    if (team->n_pes == 4 && pair_bytes >= CU_CE_AUTO_MIN4)
        return *why = "auto, reduce-scatter of 24 MiB or more a PE on 4 PEs", true;
    if (team->n_pes == 3 && pair_bytes >= CU_CE_AUTO_MIN3)
        return *why = "auto, reduce-scatter of 32 MiB or more a PE on 3 PEs", true;
    return *why = "auto, where other forms were as fast or faster", false;
}

/* ------------------------------------------------------------------------ */
/* Staged reductions                                                         */
/* ------------------------------------------------------------------------ */

/* Whether a staged reduction may land its pieces in the peer's dst
 * (kernels_staged.cuh "Landing"): 2 PEs, landing on (SYMM_CUDA_STAGED_LAND),
 * and a dst that does not overlap the input, which the peer's pieces would
 * overwrite before this PE has sent it. */
bool symm__cu_st_can_land(const cu_state *s, const symm__coll *c) {
    const uint64_t out = c->nelems * c->elem_size;
    const uint64_t in = c->kind == SYMM__COLL_REDUCESCATTER ? 2 * out : out;
    return c->team->n_pes == 2 && s->st_land &&
           (c->dst_off + out <= c->src_off || c->src_off + in <= c->dst_off);
}

/* Whether a staged reduction may run the in-place form of 2 PEs
 * (kernels_staged.cuh "Swap"): an all-reduce in place, with the shared memory
 * for it (SYMM_CUDA_STAGED_SWAP). */
bool symm__cu_st_can_swap(const cu_state *s, const symm__coll *c) {
    return c->team->n_pes == 2 && s->st_swap_max && c->kind == SYMM__COLL_REDUCE &&
           c->dst_off == c->src_off;
}

/* The peer form's shape for slices of up to len bytes on n PEs
 * (symm__st_peer_plan, with this GPU's SMs and the staging settings), or
 * false where it does not apply: one PE, 2 PEs without gather (there a
 * reduce-scatter, or an all-reduce that every PE reduces whole, would
 * leave every result to the end), or more than the staging holds. */
bool symm__cu_st_peer_shape(const cu_state *s, uint64_t len, int32_t n, bool gather,
                            symm__st_plan *plan) {
    const uint64_t sms = min_u64(s->sms > 0 ? (uint64_t)s->sms : 64, SYMM__ST_MAX_BLOCKS);
    return (n > 2 || gather) &&
           symm__st_peer_plan(len, n, sms, s->st_bytes, s->st_peer_chunk, s->st_peer_steps,
                              SYMM__ST_PEER_STEPS, gather, plan);
}

/* Whether an all-reduce on 2 PEs takes the peer form in halves (each PE
 * reduces one half and writes it to both) rather than every PE reducing the
 * whole vector: where the staging holds the halves, in "auto" from
 * CU_ST_AUTO_PEER2_MIN (below it two-shot or LL128 was as fast; at 1 MiB
 * and less, which auto stages on 2 PEs only without LL128, the whole-vector
 * form is the one measured), with SYMM_CUDA_COLL_ALGO=staged at every size. */
#define CU_ST_AUTO_PEER2_MIN (6u << 20)
bool symm__cu_st_halves(const cu_state *s, const symm__coll *c, symm__st_plan *plan) {
    const uint64_t es = c->elem_size;
    return c->team->n_pes == 2 && c->kind == SYMM__COLL_REDUCE &&
           (s->coll_algo == CU_ALGO_STAGED || c->nelems * es >= CU_ST_AUTO_PEER2_MIN) &&
           symm__cu_st_peer_shape(s, symm__slice_elems(c->nelems, 2, es) * es, 2, true, plan);
}

/* Staged form of a reduction (kernels_staged.cuh), or false with why not
 * (for the trace) when symm__cuda_coll should run the barrier algorithm. Called
 * once LL was ruled out. "auto" takes it where it beat the two-shot / pull
 * kernels on 2, 3 and 4 x H200 (docs/DECISIONS.md "Staged reductions"):
 * - 2 PEs, up to 1 MiB a pair
 *   (docs/GPU-RESULTS.md "2026-11-27: staged reductions");
 * - 2 PEs, the all-reduce from 6 MiB in the peer form, where the staging
 *   holds its halves (at 4-5 MiB it was faster back to back but slower in
 *   graphs; docs/GPU-RESULTS.md "2026-11-27: the peer form on 2 GPUs");
 * - 2 PEs out of place, landing: every reduce-scatter and, beyond the peer
 *   form, the all-reduce from 16 MiB (at 4 MiB two-shot was faster); 2 PEs
 *   in place, swap: the all-reduce from 64 MiB (16 MiB even, 1-4 MiB
 *   slower; docs/GPU-RESULTS.md "2026-11-27: landing and swap");
 * - more PEs: the all-reduce from 4 MiB (of the sizes measured on 4 PEs one,
 *   32 MiB, was a little slower), and the reduce-scatter from 2 MiB a PE
 *   where the peer form holds it (beyond it the two-group form was slower
 *   than pulling; docs/GPU-RESULTS.md "2026-11-27: the peer form on 3 and 4
 *   GPUs");
 * - 3 PEs, the reduce-scatter up to CU_ST_AUTO_RS3_MAX a PE: when this was
 *   decided the staged kernel beat the pull there; the pull has since become
 *   the faster from 8 MiB a PE (docs/GPU-RESULTS.md "2026-11-28: the
 *   copy-engine reduce-scatter"), and 2-8 MiB a PE were not measured again,
 *   so they stay staged.
 * Teams of more than 4 PEs, not measured since, take it for the all-reduce
 * from 64 MiB (as 4 PEs did before the peer form). Elsewhere it was slower
 * or even. */
#define CU_ST_AUTO_PAIR_MAX (1u << 20)
#define CU_ST_AUTO_LAND_MIN (16u << 20)
#define CU_ST_AUTO_SWAP_MIN (64u << 20)
#define CU_ST_AUTO_WIDE_MIN (4u << 20)
#define CU_ST_AUTO_WIDE_RS_MIN (2u << 20)
#define CU_ST_AUTO_RS3_MAX (8u << 20)
#define CU_ST_AUTO_WIDER_MIN (64ull << 20)
static bool st_choose(const cu_state *s, const symm__coll *c, uint64_t pair_bytes,
                      const char **why) {
    const symm__team *team = c->team;
    if (c->kind != SYMM__COLL_REDUCE && c->kind != SYMM__COLL_REDUCESCATTER)
        return *why = "not a reduction", false;
    if (forced_other(s, CU_ALGO_STAGED))
        return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->st_slot || !s->st_bytes) return *why = "no staged scratch (SYMM_CUDA_STAGED_BYTES=0 or one GPU per host)", false;
    if (team->n_pes < 2) return *why = "one PE", false;
    if (team->n_pes > s->ll_pes) return *why = "team larger than the staged scratch serves", false;
    if (team->slot >= CU_ST_SLOTS) return *why = "team slot without staged scratch", false;
    if (s->coll_algo == CU_ALGO_STAGED) return *why = "SYMM_CUDA_COLL_ALGO=staged", true;
    if (team->n_pes == 2 && pair_bytes <= CU_ST_AUTO_PAIR_MAX)
        return *why = "auto, 2 PEs, above LL and at most 1 MiB a pair", true;
    symm__st_plan plan;
    if (symm__cu_st_halves(s, c, &plan))
        return *why = "auto, all-reduce of 6 MiB or more on 2 PEs, halves within the staging "
                      "(peer form)", true;
    if (symm__cu_st_can_land(s, c) && c->kind == SYMM__COLL_REDUCESCATTER)
        return *why = "auto, reduce-scatter on 2 PEs out of place (landing)", true;
    if (symm__cu_st_can_land(s, c) && pair_bytes >= CU_ST_AUTO_LAND_MIN)
        return *why = "auto, all-reduce on 2 PEs out of place from 16 MiB (landing)", true;
    if (symm__cu_st_can_swap(s, c) && pair_bytes >= CU_ST_AUTO_SWAP_MIN)
        return *why = "auto, all-reduce on 2 PEs in place from 64 MiB (swap)", true;
    /* 3 and 4 PEs measured; larger teams keep the earlier 64 MiB */
    const bool wide = team->n_pes > 2 && team->n_pes <= 4;
    if (team->n_pes > 2 && c->kind == SYMM__COLL_REDUCE &&
        pair_bytes >= (wide ? CU_ST_AUTO_WIDE_MIN : CU_ST_AUTO_WIDER_MIN))
        return *why = wide ? "auto, all-reduce of 4 MiB or more on 3 or 4 PEs"
                           : "auto, all-reduce of 64 MiB or more on more than 4 PEs", true;
    if (wide && c->kind == SYMM__COLL_REDUCESCATTER && pair_bytes >= CU_ST_AUTO_WIDE_RS_MIN) {
        if (team->n_pes == 3 && pair_bytes < CU_ST_AUTO_RS3_MAX)
            return *why = "auto, reduce-scatter of 2 to 8 MiB a PE on 3 PEs", true;
        if (team->n_pes == 3)
            return *why = "auto, reduce-scatter of 8 MiB or more a PE on 3 PEs: the pull was faster", false;
        if (symm__cu_st_peer_shape(s, pair_bytes, team->n_pes, false, &plan))
            return *why = "auto, reduce-scatter of 2 MiB or more a PE, within the staging (peer form)", true;
    }
    return *why = "auto, where the barrier algorithms were as fast or faster", false;
}

/* ------------------------------------------------------------------------ */
/* The barrier algorithms' all-gather and all-to-all                         */
/* ------------------------------------------------------------------------ */

/* Whether the barrier algorithm's all-gather / all-to-all pulls (each PE
 * reads the peers' blocks) instead of pushing (writes its own into the
 * peers'). SYMM_CUDA_COLL_COPY decides when set; auto pushes, which measured
 * faster at every size on 2 and 4 x H200, except an all-gather of more than
 * CU_PULL3_BYTES a PE on a team of 3, where pulling was faster (3 of 4 x
 * H200: from an all-gather of 16 MiB on; at 4 MiB pushing was). Why:
 * docs/DECISIONS.md "Barrier algorithms"; measurements: docs/GPU-RESULTS.md
 * "2026-11-27: the push layout". */
#define CU_PULL3_BYTES (2u << 20)
bool symm__cu_copy_pulls(const cu_state *s, const symm__coll *c, int32_t n) {
    if (s->coll_copy != CU_COPY_AUTO) return s->coll_copy == CU_COPY_PULL;
    return n == 3 && c->kind == SYMM__COLL_FCOLLECT && c->nelems * c->elem_size > CU_PULL3_BYTES;
}

/* ------------------------------------------------------------------------ */
/* The choice                                                                */
/* ------------------------------------------------------------------------ */

/* Algorithm by size (docs/DECISIONS.md "Choosing the algorithm"): one-shot
 * LL for small payloads, then for reductions LL128 within its lines, the
 * copy-engine forms and the staged kernels where they measured faster, else
 * the barrier algorithms. */
int symm__cu_coll_choose(const cu_state *s, const symm__coll *c, symm__l8_shape *l8,
                         const char **why) {
    const uint64_t pair_bytes = c->nelems * c->elem_size;
    /* A call of 0 elements still synchronises the team (core/coll.c), which
     * only the barrier algorithms do without data: LL, LL128 and the staged
     * kernels hear from a peer through its data, and a PE that heard from
     * nobody could run two calls ahead of a slow peer and overwrite lines of
     * the parity that peer still reads (gpu_coll "0 elements"). */
    if (!pair_bytes)
        return *why = "no data: the barrier algorithm synchronises the team", CU_ALGO_BASE;
    if (ll_choose(s, c, pair_bytes, why)) return CU_ALGO_LL;
    if (l8_choose(s, c, l8, why)) return CU_ALGO_LL128;
    if (ce_choose(s, c, pair_bytes, why)) return CU_ALGO_CE;
    if (st_choose(s, c, pair_bytes, why)) return CU_ALGO_STAGED;
    return CU_ALGO_BASE;
}

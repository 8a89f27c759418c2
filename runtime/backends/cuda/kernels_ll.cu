/*
 * One-shot low-latency (LL) collectives: symm_k_ll_copy (fcollect,
 * alltoall) and symm_k_llreduce_<dtype>_<op> (all-reduce, reduce-scatter).
 * How they work (lines, epoch, two parities, giving up) is described with
 * their line helpers in kernels_common.cuh "LL", which LL128 shares. One
 * kernel file of the CUDA backend (kernels.cu says how they are built and
 * loaded).
 */
#include "kernels_common.cuh"

/* ------------------------------------------------------------------------ */
/* One-shot low-latency (LL) collectives                                     */
/* ------------------------------------------------------------------------ */
/* kernels_common.cuh "LL": the design and the line helpers. */

/* fcollect, alltoall: receiver me writes what PE j sent at dst_off + j *
 * dst_j_stride, and its own block from src (unless in place). No broadcast:
 * its root would wait for nobody, which the two parities do not allow. */
extern "C" __global__ void symm_k_ll_copy(const __grid_constant__ symm__kll_params p) {
    symm__k_enter();
    const symm__ll_call c(p);
    const int me = p.team.me, n = p.team.n;
    const uint64_t units = (p.nbytes + 7) / 8;
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t nthr = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = tid; u < units; u += nthr) {
        const uint64_t rem = p.nbytes - 8 * u;
        for (int j = 0; j < n; j++) {
            const char *src = c.mine + p.src_off + (uint64_t)j * p.src_j_stride + 8 * u;
            if (j == me) {
                char *dst = c.mine + p.dst_off + (uint64_t)me * p.dst_j_stride + 8 * u;
                if (dst != src) symm__ll_st(dst, symm__ll_ld(src, rem), rem);
                continue;
            }
            symm__ll_put(p.team.base[j] + c.line_off(p, me, j, u), symm__ll_ld(src, rem), c.f);
        }
    }
    symm__ll_waiter w = {p.timeout_ns, p.err, 0, false};
    /* warp-uniform: lanes past the end wait for nothing */
    for (uint64_t u = tid; u - (threadIdx.x & 31u) < units && !w.dead; u += nthr) {
        const bool have = u < units;
        const uint64_t rem = have ? p.nbytes - 8 * u : 0;
        for (int j = 0; j < n; j++) {
            if (j == me) continue;
            char *line = c.mine + c.line_off(p, j, me, u);
            uint64_t d = 0;
            if (!w.get(have, line, c.f, d)) break;
            if (!have) continue;
            symm__ll_clear(line);
            symm__ll_st(c.mine + p.dst_off + (uint64_t)j * p.dst_j_stride + 8 * u, d, rem);
        }
    }
    c.finish(p);
}

/* all-reduce (src_j_stride 0) and reduce-scatter (src_j_stride = nbytes):
 * dst = op over team PEs j in order of PE j's contribution, as symm__reduce
 * (kernels_reduce.cu) combines them (same accumulation type, same order:
 * bitwise identical). */
template <typename T, typename Op>
__device__ __forceinline__ void symm__ll_reduce(const symm__kll_params &p) {
    typedef typename symm__acc<T>::type A;
    constexpr int V = 8 / (int)sizeof(T);
    symm__k_enter();
    const symm__ll_call c(p);
    const Op op;
    const int me = p.team.me, n = p.team.n;
    const uint64_t units = (p.nbytes + 7) / 8;
    const uint64_t tid = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const uint64_t nthr = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t u = tid; u < units; u += nthr) {
        const uint64_t rem = p.nbytes - 8 * u;
        /* all-reduce: one load for every peer */
        uint64_t d = p.src_j_stride ? 0 : symm__ll_ld(c.mine + p.src_off + 8 * u, rem);
        for (int j = 0; j < n; j++) {
            if (j == me) continue;
            if (p.src_j_stride)
                d = symm__ll_ld(c.mine + p.src_off + (uint64_t)j * p.src_j_stride + 8 * u, rem);
            symm__ll_put(p.team.base[j] + c.line_off(p, me, j, u), d, c.f);
        }
    }
    symm__ll_waiter w = {p.timeout_ns, p.err, 0, false};
    /* warp-uniform: lanes past the end wait for nothing */
    for (uint64_t u = tid; u - (threadIdx.x & 31u) < units && !w.dead; u += nthr) {
        const bool have = u < units;
        const uint64_t rem = have ? p.nbytes - 8 * u : 0;
        A acc[V];
        for (int j = 0; j < n; j++) {
            uint64_t d = 0;
            if (j == me) {
                if (have)
                    d = symm__ll_ld(c.mine + p.src_off + (uint64_t)me * p.src_j_stride + 8 * u, rem);
            } else {
                char *line = c.mine + c.line_off(p, j, me, u);
                if (!w.get(have, line, c.f, d)) break;
                if (have) symm__ll_clear(line);
            }
            const T *v = (const T *)&d;
#pragma unroll
            for (int k = 0; k < V; k++) acc[k] = j == 0 ? symm__to_acc<T>(v[k]) : op(acc[k], symm__to_acc<T>(v[k]));
        }
        if (w.dead || !have) continue;
        uint64_t out;
        T *o = (T *)&out;
#pragma unroll
        for (int k = 0; k < V; k++) o[k] = symm__from_acc<T>(acc[k]);
        symm__ll_st(c.mine + p.dst_off + 8 * u, out, rem);
    }
    c.finish(p);
}

/* symm_k_llreduce_<dtype>_<op>: names built by symm__cu_reduce_fn (cuda_coll_common.c). */
#define SYMM__K_LLREDUCE(tname, T, oname, Op) \
    SYMM__K_REDUCE_FORM(llreduce, symm__kll_params, symm__ll_reduce, tname, T, oname, Op)
SYMM__REDUCE_PAIRS(SYMM__K_LLREDUCE)

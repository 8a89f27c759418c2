/*
 * Reductions of the barrier algorithm (symm_k_reduce_<dtype>_<op>): every
 * PE reads every PE's input over NVLink, between a fused opening barrier
 * and the closing one. One kernel file of the CUDA backend (kernels.cu
 * says how they are built and loaded); shared device code in
 * kernels_common.cuh.
 */
#include "kernels_common.cuh"

/* ------------------------------------------------------------------------ */
/* Reductions (barrier algorithm)                                            */
/* ------------------------------------------------------------------------ */
/* Element i of [lo, hi): acc = op over team PEs j (in order) of
 * src(j)[src_off + i]; written to dst_off + i of this PE, or of every PE when
 * push. Accumulation type A: kernels_common.cuh (symm__acc). */

/* Up to SYMM__RED_BATCH PEs' 16-byte vectors are loaded before any is used,
 * so a thread has that many loads (most of them from peers, over NVLink) in
 * flight instead of one after another. */
#define SYMM__RED_BATCH 8

template <typename T, typename Op>
__device__ __forceinline__ void symm__reduce(const symm__kreduce_params &p) {
    typedef typename symm__acc<T>::type A;
    symm__k_enter();
    const bool ok = !p.enter || symm__coll_enter(p.team, p.area_off, p.timeout_ns, p.err);
    const int n = p.team.n;
    const Op op;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t nthr = (size_t)gridDim.x * blockDim.x;
    constexpr int V = 16 / (int)sizeof(T);
    uint64_t lo = p.lo, hi = ok ? p.hi : p.lo;
    /* vector body: V elements (16 bytes) per step when every address is 16-byte
     * aligned at lo (heap bases are), scalar otherwise and for the tail */
    bool vec = ((p.src_off + lo * sizeof(T)) % 16 == 0) && ((p.dst_off + lo * sizeof(T)) % 16 == 0);
    uint64_t vhi = vec ? lo + (hi - lo) / V * V : lo;
    for (uint64_t i = lo + tid * V; i < vhi; i += nthr * V) {
        A acc[V];
        for (int j0 = 0; j0 < n; j0 += SYMM__RED_BATCH) {
            uint4 raw[SYMM__RED_BATCH];
#pragma unroll
            for (int b = 0; b < SYMM__RED_BATCH; b++)
                if (j0 + b < n)
                    raw[b] = *(const uint4 *)(p.team.base[j0 + b] + p.src_off + i * sizeof(T));
#pragma unroll
            for (int b = 0; b < SYMM__RED_BATCH; b++) {
                if (j0 + b >= n) break;
                const T *v = (const T *)&raw[b];
#pragma unroll
                for (int k = 0; k < V; k++)
                    acc[k] = j0 + b == 0 ? symm__to_acc<T>(v[k]) : op(acc[k], symm__to_acc<T>(v[k]));
            }
        }
        uint4 out;
        T *o = (T *)&out;
#pragma unroll
        for (int k = 0; k < V; k++) o[k] = symm__from_acc<T>(acc[k]);
        if (p.push) {
            for (int j = 0; j < n; j++)
                *(uint4 *)(p.team.base[j] + p.dst_off + i * sizeof(T)) = out;
        } else {
            *(uint4 *)(p.team.base[p.team.me] + p.dst_off + i * sizeof(T)) = out;
        }
    }
    for (uint64_t i = vhi + tid; i < hi; i += nthr) {
        A acc = symm__to_acc<T>(*(const T *)(p.team.base[0] + p.src_off + i * sizeof(T)));
        for (int j = 1; j < n; j++)
            acc = op(acc, symm__to_acc<T>(*(const T *)(p.team.base[j] + p.src_off + i * sizeof(T))));
        T r = symm__from_acc<T>(acc);
        if (p.push) {
            for (int j = 0; j < n; j++) *(T *)(p.team.base[j] + p.dst_off + i * sizeof(T)) = r;
        } else {
            *(T *)(p.team.base[p.team.me] + p.dst_off + i * sizeof(T)) = r;
        }
    }
    if (p.leave) symm__coll_leave(p.team, p.area_off, ok, p.timeout_ns, p.err);
}

/* symm_k_reduce_<dtype>_<op>: names built by symm__cu_reduce_fn (cuda_coll_common.c). */
#define SYMM__K_REDUCE(tname, T, oname, Op) \
    SYMM__K_REDUCE_FORM(reduce, symm__kreduce_params, symm__reduce, tname, T, oname, Op)
SYMM__REDUCE_PAIRS(SYMM__K_REDUCE)

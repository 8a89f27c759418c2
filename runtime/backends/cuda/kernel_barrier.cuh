/*
 * The CUDA backend's kernel entry and team barrier, shared by its kernel
 * files (kernels*.cu, through kernels_common.cuh) and
 * tests/perf/probe_cuda.cu (which measures these very functions). Internal:
 * not installed.
 */
#ifndef SYMM_CUDA_KERNEL_BARRIER_CUH
#define SYMM_CUDA_KERNEL_BARRIER_CUH

#include <symm/symm_device.cuh>

#include "kernel_params.h"

/* Every runtime kernel starts with this. The host launches them with
 * programmatic stream serialization on sm_90+ (cuda_state.c, symm__cu_launch_smem), so one may
 * be scheduled while the previous kernel of its stream still runs:
 * launch_dependents lets the next kernel of the stream be scheduled early in
 * turn, and griddepcontrol.wait returns once every kernel before this one in
 * the stream has completed and its memory operations are visible. Without
 * PDL both are no-ops. */
__device__ __forceinline__ void symm__k_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* Heap base of team PE j, read from the parameter block. */
template <int N> struct symm__world_table {
    const symm__kteam<N> *t;
    __device__ __forceinline__ char *operator()(int j) const { return t->base[j]; }
};
/* Heap base of team PE j of a strided team, read from a device table. */
struct symm__world_wide {
    char *const *table;
    int start, stride;
    __device__ __forceinline__ char *operator()(int j) const { return table[start + j * stride]; }
};
/* Heap bases held in registers (constant indices only, so no stack copy). */
template <int N> struct symm__world_regs {
    char *b[N];
    __device__ __forceinline__ char *operator()(int j) const {
        char *r = b[0];
#pragma unroll
        for (int i = 1; i < N; i++)
            if (j == i) r = b[i];
        return r;
    }
};

/* The barrier itself (after symm__k_enter): epoch = counter + bump, announce,
 * wait, and thread 0 advances the counter once every thread has read it. */
template <typename World>
__device__ __forceinline__ void symm__kbarrier_body(const World &w, int me, int n,
                                                    uint64_t area_off, uint64_t bump,
                                                    uint64_t timeout_ns, int *err) {
    char *mine = w(me);
    uint64_t e = symm__barrier_epoch(mine, area_off, me) + bump;
    symm__barrier_arrive_wait(mine, area_off, me, n, w, e, threadIdx.x, blockDim.x, timeout_ns,
                              err);
    __syncthreads();
    if (threadIdx.x == 0) symm__barrier_advance(mine, area_off, me, e);
}

/* Any team size: parameters read from the block as they are used. */
template <int N>
__device__ __forceinline__ void symm__kbarrier(const symm__kbarrier_params<N> &p) {
    symm__k_enter();
    symm__kbarrier_body(symm__world_table<N>{&p.team}, p.team.me, p.team.n, p.area_off, p.bump,
                        p.timeout_ns, p.err);
}

/* Teams of up to N (2 or 8) PEs, the common case: every parameter is read
 * into a register before symm__k_enter, so fetching the block overlaps the
 * kernel before this one instead of following it (parameters are constant;
 * only global memory must wait). Measured with PDL on 2 x H200 (probe_cuda):
 * reading the 8-PE block before the wait made the stream barrier faster than
 * reading it after, and the one-line 2-PE block faster still
 * (docs/GPU-RESULTS.md "2026-11-21: PDL, the stream barrier, the copy
 * kernel"). */
template <int N>
__device__ __forceinline__ void symm__kbarrier_regs(const symm__kbarrier_params<N> &p) {
    symm__world_regs<N> w;
#pragma unroll
    for (int i = 0; i < N; i++) {
        w.b[i] = p.team.base[i];
        asm volatile("" : "+l"(w.b[i]));
    }
    int me = p.team.me, n = p.team.n;
    uint64_t area_off = p.area_off, bump = p.bump, timeout_ns = p.timeout_ns;
    int *err = p.err;
    asm volatile("" : "+r"(me), "+r"(n), "+l"(area_off), "+l"(bump), "+l"(timeout_ns), "+l"(err));
    symm__k_enter();
    symm__kbarrier_body(w, me, n, area_off, bump, timeout_ns, err);
}

#endif /* SYMM_CUDA_KERNEL_BARRIER_CUH */

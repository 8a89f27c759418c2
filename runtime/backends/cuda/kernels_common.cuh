/*
 * Device code shared by the CUDA backend's kernel files (kernels.cu,
 * kernels_reduce.cu, kernels_ll.cu, kernels_ll128.cu, kernels_staged_*.cu):
 * the start and end of a collective fused into its data kernel, the
 * reductions' accumulation types and operators with the list of (dtype, op)
 * pairs every reduction form instantiates, and the line helpers of the
 * one-shot LL and LL128 collectives. Each kernel file is compiled by nvcc on
 * its own into a fatbin of its own (no -rdc) and loaded as a module of its
 * own (meson.build, cuda.c), so everything here is inline or a template, and
 * nothing here may define a __device__ variable (each module would have its
 * own copy). Internal: not installed.
 */
#ifndef SYMM_CUDA_KERNELS_COMMON_CUH
#define SYMM_CUDA_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <symm/symm_device.cuh>

#include "kernel_barrier.cuh"
#include "kernel_params.h"

static_assert(CU_ERR_PEER_FAILED == SYMM_DEVICE_FAIL_PEER,
              "the runtime's error word and the device context's fail_word share values");

/* Struct parameters are __grid_constant__: the kernels take their address,
 * which would otherwise copy them to local memory first (a stack frame that
 * the barrier's system-scope fence then waits for). Every kernel starts with
 * symm__k_enter (kernel_barrier.cuh). */

/* ------------------------------------------------------------------------ */
/* Start and end of a collective (fused into its data kernel)                */
/* ------------------------------------------------------------------------ */
/* Start of a collective, fused into its data kernel: every block announces
 * epoch counter + 1 (idempotent) and waits for the others; the counter is
 * advanced by the closing barrier (bump 2). */
template <int N>
__device__ __forceinline__ bool symm__coll_enter(const symm__kteam<N> &t, uint64_t area_off,
                                                 uint64_t timeout_ns, int *err) {
    symm__world_table<N> w = {&t};
    char *mine = t.base[t.me];
    uint64_t e = symm__barrier_epoch(mine, area_off, t.me) + 1;
    bool ok = symm__barrier_arrive_wait(mine, area_off, t.me, t.n, w, e, threadIdx.x, blockDim.x,
                                        timeout_ns, err);
    __syncthreads();
    return ok;
}

/* The grid's last block: every block calls this once (all its threads), and
 * it returns 1 in the block that came last, -1 there instead if some block
 * said !ok, 0 in the others. With release, each block first releases its
 * earlier writes (to this GPU or to peers) at system scope, so that a
 * system-scope release by the last block (the closing barrier's) publishes
 * all of them. The counter is the slot's ticket word (CU_TICKET_BACK before
 * area_off; 0 between kernels: the last block puts it back). A failed block
 * adds CU_TICKET_FAILED as well. */
#define CU_TICKET_FAILED (1u << 24)
__device__ __forceinline__ int symm__grid_last(char *mine, uint64_t area_off, bool ok,
                                               bool release) {
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned total = gridDim.x * gridDim.y;
        int r = ok ? 1 : -1;
        if (total > 1) {
            unsigned *ticket = (unsigned *)(mine + area_off - CU_TICKET_BACK);
            /* acq_rel, not sc (__threadfence_system): faster on 2 and
             * 4 x H200 (docs/GPU-RESULTS.md "2026-11-27: one launch a
             * call") */
            if (release) symm__fence_acq_rel_sys();
            const unsigned old = atomicAdd(ticket, ok ? 1u : CU_TICKET_FAILED + 1u);
            if ((old & (CU_TICKET_FAILED - 1u)) != total - 1) {
                r = 0;
            } else {
                *(volatile unsigned *)ticket = 0;
                if (old >= CU_TICKET_FAILED) r = -1;
            }
        }
        last = r;
    }
    __syncthreads();
    return last;
}

/* End of a collective, fused into its (last) data kernel: once every block
 * is done, the last one runs the closing barrier (epoch counter + 2,
 * advanced), as symm_k_barrier_* with bump 2 would; skipped when a block
 * failed (its wait already gave up). The other blocks end at once. The
 * barrier's opening acq_rel fence is also the acquire of the ticket. */
template <int N>
__device__ __forceinline__ void symm__coll_leave(const symm__kteam<N> &t, uint64_t area_off,
                                                 bool ok, uint64_t timeout_ns, int *err) {
    symm__world_table<N> w = {&t};
    char *mine = t.base[t.me];
    if (symm__grid_last(mine, area_off, ok, true) != 1) return;
    uint64_t e = symm__barrier_epoch(mine, area_off, t.me) + 2;
    symm__barrier_arrive_wait(mine, area_off, t.me, t.n, w, e, threadIdx.x, blockDim.x, timeout_ns,
                              err);
    __syncthreads();
    if (threadIdx.x == 0) symm__barrier_advance(mine, area_off, t.me, e);
}

/* ------------------------------------------------------------------------ */
/* Reductions: accumulation, operators, (dtype, op) pairs                    */
/* ------------------------------------------------------------------------ */
/* Accumulation type A: float for half types, the type itself otherwise. */

template <typename T> struct symm__acc { typedef T type; };
template <> struct symm__acc<__half> { typedef float type; };
template <> struct symm__acc<__nv_bfloat16> { typedef float type; };

template <typename T> __device__ __forceinline__ typename symm__acc<T>::type symm__to_acc(T v) {
    return v;
}
template <> __device__ __forceinline__ float symm__to_acc<__half>(__half v) {
    return __half2float(v);
}
template <> __device__ __forceinline__ float symm__to_acc<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T symm__from_acc(typename symm__acc<T>::type v) {
    return (T)v;
}
template <> __device__ __forceinline__ __half symm__from_acc<__half>(float v) {
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 symm__from_acc<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

struct symm__op_sum {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (A)(a + b);
    }
};
struct symm__op_prod {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (A)(a * b);
    }
};
struct symm__op_min {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return b < a ? b : a;
    }
};
struct symm__op_max {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return a < b ? b : a;
    }
};
struct symm__op_and {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (A)(a & b);
    }
};
struct symm__op_or {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (A)(a | b);
    }
};
struct symm__op_xor {
    template <typename A> __device__ __forceinline__ A operator()(A a, A b) const {
        return (A)(a ^ b);
    }
};

/* Every (dtype, op) pair that has reduction kernels: X(tname, T, oname, Op).
 * Floating types have no AND/OR/XOR. Signed integer types have MIN and MAX
 * only: their sum, prod, and, or and xor are bit for bit the unsigned type's
 * (two's complement), and symm__cu_reduce_fn (cuda_coll_common.c) runs the
 * unsigned kernel for them, which saves compiling 20 of 72 pairs per form.
 * SYMM__REDUCE_PAIRS_<bits> are the pairs of the dtypes of one element size,
 * for a form whose kernels are spread over several files
 * (kernels_staged_<bits>.cu); SYMM__REDUCE_PAIRS is all of them. */
#define SYMM__REDUCE_ORDER(X, tname, T) \
    X(tname, T, min, symm__op_min)      \
    X(tname, T, max, symm__op_max)
#define SYMM__REDUCE_ARITH(X, tname, T) \
    X(tname, T, sum, symm__op_sum)      \
    X(tname, T, prod, symm__op_prod)    \
    SYMM__REDUCE_ORDER(X, tname, T)
#define SYMM__REDUCE_INT(X, tname, T) \
    SYMM__REDUCE_ARITH(X, tname, T)   \
    X(tname, T, and, symm__op_and)    \
    X(tname, T, or, symm__op_or)      \
    X(tname, T, xor, symm__op_xor)
#define SYMM__REDUCE_PAIRS_8(X)           \
    SYMM__REDUCE_ORDER(X, int8, int8_t)   \
    SYMM__REDUCE_INT(X, uint8, uint8_t)
#define SYMM__REDUCE_PAIRS_16(X)                   \
    SYMM__REDUCE_ORDER(X, int16, int16_t)          \
    SYMM__REDUCE_INT(X, uint16, uint16_t)          \
    SYMM__REDUCE_ARITH(X, float16, __half)         \
    SYMM__REDUCE_ARITH(X, bfloat16, __nv_bfloat16)
#define SYMM__REDUCE_PAIRS_32(X)            \
    SYMM__REDUCE_ORDER(X, int32, int32_t)   \
    SYMM__REDUCE_INT(X, uint32, uint32_t)   \
    SYMM__REDUCE_ARITH(X, float32, float)
#define SYMM__REDUCE_PAIRS_64(X)            \
    SYMM__REDUCE_ORDER(X, int64, int64_t)   \
    SYMM__REDUCE_INT(X, uint64, uint64_t)   \
    SYMM__REDUCE_ARITH(X, float64, double)
#define SYMM__REDUCE_PAIRS(X) \
    SYMM__REDUCE_PAIRS_8(X)   \
    SYMM__REDUCE_PAIRS_16(X)  \
    SYMM__REDUCE_PAIRS_32(X)  \
    SYMM__REDUCE_PAIRS_64(X)

/* One 16-byte vector of the result: op over the n inputs raw[0..n) in team
 * order, accumulated as in every reduction here (symm__acc). */
template <typename T, typename Op>
__device__ __forceinline__ uint4 symm__combine16(const uint4 *raw, int n) {
    typedef typename symm__acc<T>::type A;
    constexpr int V = 16 / (int)sizeof(T);
    const Op op;
    A acc[V];
#pragma unroll
    for (int j = 0; j < 8; j++) {
        if (j >= n) break;
        const T *x = (const T *)&raw[j];
#pragma unroll
        for (int k = 0; k < V; k++)
            acc[k] = j == 0 ? symm__to_acc<T>(x[k]) : op(acc[k], symm__to_acc<T>(x[k]));
    }
    uint4 r;
    T *o = (T *)&r;
#pragma unroll
    for (int k = 0; k < V; k++) o[k] = symm__from_acc<T>(acc[k]);
    return r;
}

/* One kernel of a reduction form per dtype and op: symm_k_<form>_<dtype>_<op>
 * (form: reduce, llreduce, l8reduce), running body<T, Op> on its parameter
 * block P. */
#define SYMM__K_REDUCE_FORM(form, P, body, tname, T, oname, Op)                             \
    extern "C" __global__ void symm_k_##form##_##tname##_##oname(const __grid_constant__ P p) { \
        body<T, Op>(p);                                                                     \
    }

/* ------------------------------------------------------------------------ */
/* Lines of the one-shot low-latency (LL) collectives                        */
/* ------------------------------------------------------------------------ */
/* One kernel, one round, no barrier. Every PE stores what it sends to team
 * PE j into j's scratch (the slot's LL area, beyond the heap: cuda_coll.c) as
 * 16-byte lines {data[0:4], flag, data[4:8], flag}, one st.v4 each; each
 * 8-byte half is written as a unit, so a receiver that reads a line and sees
 * the call's flag in both halves holds the call's 8 data bytes: no fence and
 * no separate flag. The receiver spins on its own scratch until every line
 * it needs carries the flag, combines or copies them into dst, and clears
 * each consumed line (back to 0, so a line can only ever hold 0 or the flag
 * of a call in flight).
 *
 * Epoch. E = the team's barrier epoch counter (PE me's own entry of the
 * slot's barrier flags, zeroed when the team is made, advanced in lockstep by
 * every barrier and collective of the team) + 1; the last block of the grid
 * stores E back (the slot's ticket word counts the blocks), so the
 * counter lives on the GPU and graph replays see it advance. The flag is
 * E's low 32 bits (1 in place of 0); the lines of parity E & 1 are used.
 *
 * Why two parities are enough (no exit barrier). PE A stores into PE B's
 * parity p only in a call c2; B last read (and cleared) parity p in call
 * c1 < c2. If a team operation c' of the team lies between c1 and c2, A
 * could only finish c' (and so start c2) after B took part in c', which B
 * does only after c1 completed on its stream. If none does, c1 and c2 are
 * consecutive LL calls, E2 = E1 + 1, and their parities differ. So A, which
 * needs each peer's lines to finish a call, is at most one call ahead of any
 * peer, and writes the other parity. One collective at a time per team, in
 * the same order on every PE: the rule every team operation already has.
 * This needs every call to hear from every peer: a call of 0 bytes would
 * hear from nobody, so cuda_tuning.c gives it to the barrier algorithms (LL128 and
 * the staged kernels too).
 *
 * Giving up: every wait checks *err (2: a PE died -> stop) and the timeout
 * (-> *err = 1) each 1024 spins, as symm__barrier_arrive_wait does, one lane
 * per warp (symm__ll_waiter); a warp that gave up skips the rest of its work,
 * the grid still ends normally. */

__device__ __forceinline__ void symm__ll_put(char *line, uint64_t d, uint32_t f) {
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(line),
                 "r"((uint32_t)d), "r"(f), "r"((uint32_t)(d >> 32)), "r"(f)
                 : "memory");
}
__device__ __forceinline__ bool symm__ll_try(const char *line, uint32_t f, uint64_t &d) {
    uint32_t a, fa, b, fb;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(fa), "=r"(b), "=r"(fb)
                 : "l"(line)
                 : "memory");
    d = (uint64_t)a | ((uint64_t)b << 32);
    return fa == f && fb == f;
}
__device__ __forceinline__ void symm__ll_clear(char *line) {
    *(uint4 *)line = make_uint4(0, 0, 0, 0);
}

/* A warp's waits: the 32 lanes wait together for their lines (a lane with
 * nothing to wait for passes ok = true) and lane 0 alone looks at *err and
 * the clock each 1024 rounds, for the warp: with one unit of 8 bytes per
 * thread, tens of thousands of threads each reading the host-memory error
 * word would flood PCIe. Once the warp gives up, every later wait fails at
 * once. Called by all lanes of a full warp (blockDim is a multiple of 32,
 * loops are warp-uniform).
 *
 * Polite polling. Every lane of every waiting warp rereads its lines each
 * round: with warps over every SM that is terabytes a second of reads of
 * the very L2 lines the peer's NVLink writes must land in, and it can starve
 * them. Once one PE waits long (a late peer: ranks that start a graph replay
 * milliseconds apart), its peer's lines arrive late, so the peer's next call
 * waits long too, and the storm feeds itself: on 2 x H200 whole graph
 * replays ran two orders of magnitude slower a call (bench_coll_stream
 * --skew-us reproduces it; docs/DECISIONS.md "One-shot LL";
 * docs/GPU-RESULTS.md "2026-11-27: the polling storm"). So after
 * SYMM__POLL_EAGER rounds a warp naps between reads, 32 ns doubling to
 * 512 ns: short waits are untouched, long ones read a few times less
 * often, and the storm does not start. */
#define SYMM__POLL_EAGER 8u
/* The nap before round polls + 1 of a wait: none for SYMM__POLL_EAGER
 * rounds, then 32 ns doubling to 32 << MaxShift (the LL waiters: 512 ns;
 * the copy-engine reduction's one poller a block: 1 us). */
template <unsigned MaxShift>
__device__ __forceinline__ void symm__poll_nap(unsigned polls) {
    if (polls < SYMM__POLL_EAGER) return;
    const unsigned k = polls - SYMM__POLL_EAGER;
    __nanosleep(k >= MaxShift ? 32u << MaxShift : 32u << k);
}
struct symm__ll_waiter {
    uint64_t timeout_ns;
    int *err;
    uint64_t t0;
    bool dead;
    /* every 1024 spins: lane 0 looks at *err and the clock for the warp */
    __device__ __forceinline__ bool give_up(unsigned spins) {
        if ((spins & 1023u) != 0) return false;
        int give = 0;
        if ((threadIdx.x & 31u) == 0) {
            if (err && *(volatile int *)err == CU_ERR_PEER_FAILED) { /* the host saw a PE die */
                give = 1;
            } else if (timeout_ns) {
                uint64_t t = symm__globaltimer();
                if (!t0) {
                    t0 = t;
                } else if (t - t0 > timeout_ns) {
                    if (err) atomicCAS_system(err, 0, 1);
                    give = 1;
                }
            }
        }
        dead = __shfl_sync(0xffffffffu, give, 0) != 0;
        return dead;
    }
    /* before round spins + 1 of a wait (above: polite polling) */
    __device__ __forceinline__ static void nap(unsigned spins) { symm__poll_nap<4>(spins); }
    __device__ __forceinline__ bool get(bool want, const char *line, uint32_t f, uint64_t &d) {
        if (dead) return false;
        bool ok = !want || symm__ll_try(line, f, d);
        unsigned spins = 0;
        while (!__all_sync(0xffffffffu, ok)) {
            nap(spins);
            if (!ok) ok = symm__ll_try(line, f, d);
            if (give_up(++spins)) return false;
        }
        return true;
    }
    /* An LL128 line (kernels_ll128.cu, which defines it): the 8 lanes of a
     * line pass the same want and their own 16 bytes of it; the line's last
     * lane holds the flag, which it shares with the other 7. */
    __device__ __forceinline__ bool get8(bool want, const char *part, uint64_t f, uint64_t &a,
                                         uint64_t &b);
};

/* Up to 8 bytes of a payload (rem bytes left), one load when aligned. */
__device__ __forceinline__ uint64_t symm__ll_ld(const char *a, uint64_t rem) {
    if (rem >= 8 && ((uintptr_t)a & 7u) == 0) return *(const uint64_t *)a;
    uint64_t v = 0;
    for (uint64_t k = 0; k < rem && k < 8; k++) v |= (uint64_t)(uint8_t)a[k] << (8 * k);
    return v;
}
__device__ __forceinline__ void symm__ll_st(char *a, uint64_t v, uint64_t rem) {
    if (rem >= 8 && ((uintptr_t)a & 7u) == 0) {
        *(uint64_t *)a = v;
        return;
    }
    for (uint64_t k = 0; k < rem && k < 8; k++) a[k] = (char)(v >> (8 * k));
}

/* What every LL and LL128 kernel computes first (after symm__k_enter). */
struct symm__ll_call {
    char *mine;
    uint64_t e;
    uint32_t f;
    uint64_t lines; /* offset of this parity's lines in every heap */
    template <typename P> __device__ __forceinline__ symm__ll_call(const P &p) {
        mine = p.team.base[p.team.me];
        e = symm__barrier_epoch(mine, p.area_off, p.team.me) + 1;
        f = (uint32_t)e ? (uint32_t)e : 1u;
        lines = p.ll_off + (e & 1) * p.ll_parity;
    }
    /* sender j's lines in receiver PE r's area (me: sender or receiver) */
    template <typename P>
    __device__ __forceinline__ uint64_t region_off(const P &p, int sender, int receiver) const {
        int k = sender < receiver ? sender : sender - 1;
        return lines + (uint64_t)k * p.ll_region;
    }
    /* LL: the line of unit u */
    __device__ __forceinline__ uint64_t line_off(const symm__kll_params &p, int sender, int receiver,
                                                 uint64_t u) const {
        return region_off(p, sender, receiver) + 16 * u;
    }
    /* The last block to get here advances the epoch counter to E (no fence:
     * nothing this grid wrote needs publishing, each line carries its flag). */
    template <typename P> __device__ __forceinline__ void finish(const P &p) const {
        if (symm__grid_last(mine, p.area_off, true, false) == 1 && threadIdx.x == 0)
            symm__barrier_advance(mine, p.area_off, p.team.me, e);
    }
};

#endif /* SYMM_CUDA_KERNELS_COMMON_CUH */

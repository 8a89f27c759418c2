/*
 * Kernels of the CUDA backend, compiled by nvcc at build time into a fatbin
 * that is embedded in the runtime (bin2c.py) and loaded with cuModuleLoadData.
 * Every entry is extern "C" so that the host finds it by name; parameter
 * structs mirror those in cuda.c (kernel_params.h is their single source).
 *
 * Barriers here are the ones of symm_device.cuh (same flags and epochs).
 */
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
/* Point-to-point                                                            */
/* ------------------------------------------------------------------------ */

/* Contiguous copy by the whole grid (puts and gets on streams). */
extern "C" __global__ void symm_k_copy(char *dst, const char *src, uint64_t n) {
    symm__k_enter();
    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t nthr = (size_t)gridDim.x * blockDim.x;
    symm__copy(dst, src, n, tid, nthr);
}

/* Store up to SYMM__INLINE_BYTES bytes carried in the parameter (values read
 * on the host at call time: p_on_stream, puts from pageable memory). */
extern "C" __global__ void symm_k_store(char *dst, const __grid_constant__ symm__inline_data data,
                                        uint32_t n) {
    symm__k_enter();
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = (char)data.bytes[i];
}

/* Signal update after everything earlier in the stream. */
extern "C" __global__ void symm_k_signal(uint64_t *sig, uint64_t value, uint32_t op) {
    symm__k_enter();
    __threadfence_system();
    if (op == SYMM_SIGNAL_ADD)
        atomicAdd_system((unsigned long long *)sig, (unsigned long long)value);
    else
        atomicExch_system((unsigned long long *)sig, (unsigned long long)value);
    __threadfence_system();
}

/* The stream waits until *sig compares true (one thread spins). */
extern "C" __global__ void symm_k_wait(const uint64_t *sig, uint32_t cmp, uint64_t value,
                                       uint64_t timeout_ns, int *err) {
    symm__k_enter();
    unsigned spins = 0;
    uint64_t t0 = 0;
    /* gives up when the host saw a PE die (CU_ERR_PEER_FAILED) or on timeout */
    while (!symm_dev_compare(symm__ld_acquire_u64(sig), (int)cmp, value))
        if (symm__spin_give_up(spins, t0, timeout_ns, err)) break;
    __threadfence_system();
}

/* One atomic memory operation on a (peer) address; the prior value goes to
 * *out (pinned host memory). size 4 or 8; is_float selects float semantics
 * for nothing but documentation: FETCH/SET/SWAP/CSWAP act on bits. */
template <typename U>
__device__ __forceinline__ U symm__amo(U *p, uint32_t op, U v, U cmp) {
    switch (op) {
    case SYMM_AMO_FETCH: {
        U x;
        if constexpr (sizeof(U) == 8)
            asm volatile("ld.relaxed.sys.u64 %0, [%1];" : "=l"(x) : "l"(p) : "memory");
        else
            asm volatile("ld.relaxed.sys.u32 %0, [%1];" : "=r"(x) : "l"(p) : "memory");
        return x;
    }
    case SYMM_AMO_SET:
    case SYMM_AMO_SWAP: return atomicExch_system(p, v);
    case SYMM_AMO_COMPARE_SWAP: return atomicCAS_system(p, cmp, v);
    case SYMM_AMO_FETCH_INC:
    case SYMM_AMO_INC: return atomicAdd_system(p, (U)1);
    case SYMM_AMO_FETCH_ADD:
    case SYMM_AMO_ADD: return atomicAdd_system(p, v);
    case SYMM_AMO_FETCH_AND:
    case SYMM_AMO_AND: return atomicAnd_system(p, v);
    case SYMM_AMO_FETCH_OR:
    case SYMM_AMO_OR: return atomicOr_system(p, v);
    case SYMM_AMO_FETCH_XOR:
    case SYMM_AMO_XOR: return atomicXor_system(p, v);
    default: return 0;
    }
}

extern "C" __global__ void symm_k_amo(void *addr, uint32_t size, uint32_t op, uint64_t value,
                                      uint64_t compare, uint64_t *out) {
    symm__k_enter();
    uint64_t r;
    if (size == 8)
        r = symm__amo((unsigned long long *)addr, op, (unsigned long long)value,
                      (unsigned long long)compare);
    else
        r = symm__amo((unsigned int *)addr, op, (unsigned int)value, (unsigned int)compare);
    __threadfence_system();
    if (out) *(volatile uint64_t *)out = r;
}

/* ------------------------------------------------------------------------ */
/* Team barrier (stream forms, and the end of every collective)              */
/* ------------------------------------------------------------------------ */

extern "C" __global__ void symm_k_barrier_2(const __grid_constant__ symm__kbarrier_params<2> p) {
    symm__kbarrier_regs(p);
}
extern "C" __global__ void symm_k_barrier_8(const __grid_constant__ symm__kbarrier_params<8> p) {
    symm__kbarrier_regs(p);
}
extern "C" __global__ void symm_k_barrier_64(const __grid_constant__ symm__kbarrier_params<64> p) {
    symm__kbarrier(p);
}
extern "C" __global__ void symm_k_barrier_wide(const __grid_constant__ symm__kbarrier_wide_params p) {
    symm__k_enter();
    symm__kbarrier_body(symm__world_wide{p.table, p.start, p.stride}, p.me, p.n, p.area_off, p.bump,
                        p.timeout_ns, p.err);
}

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
            /* acq_rel, not sc (__threadfence_system): 0.5-0.6 us less per
             * collective on 2 and 4 x H200 */
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
/* Data movement of broadcast / fcollect / collect / alltoall                */
/* ------------------------------------------------------------------------ */
/* Pair j (blockIdx.y, or only_j): copy len bytes from
 *   src_off + me * src_me_stride + j * src_j_stride  of PE j's heap (pull) or
 *                                                    of this PE's (push)
 * to
 *   dst_off + me * dst_me_stride + j * dst_j_stride  of this PE's heap (pull)
 *                                                    or of PE j's (push).
 * Pairs whose source and destination coincide are skipped. (cuda.c picks
 * push or pull by team size: docs/DECISIONS.md "Collectives".) */
extern "C" __global__ void symm_k_gather(const __grid_constant__ symm__kgather_params p) {
    symm__k_enter();
    const bool ok = !p.enter || symm__coll_enter(p.team, p.area_off, p.timeout_ns, p.err);
    const int j = p.only_j >= 0 ? p.only_j : (int)blockIdx.y, me = p.team.me;
    const uint64_t s_at = p.src_off + (uint64_t)me * p.src_me_stride + (uint64_t)j * p.src_j_stride;
    const uint64_t d_at = p.dst_off + (uint64_t)me * p.dst_me_stride + (uint64_t)j * p.dst_j_stride;
    if (ok && j < p.team.n && p.len != 0) {
        const char *src = p.team.base[p.push ? me : j] + s_at;
        char *dst = p.team.base[p.push ? j : me] + d_at;
        if (src != dst)
            symm__copy(dst, src, p.len, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                       (size_t)gridDim.x * blockDim.x);
    }
    if (p.leave) symm__coll_leave(p.team, p.area_off, ok, p.timeout_ns, p.err);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */
/* Element i of [lo, hi): acc = op over team PEs j (in order) of
 * src(j)[src_off + i]; written to dst_off + i of this PE, or of every PE when
 * push. Accumulation type A: float for half types, the type itself otherwise. */

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

/* Every (dtype, op) pair that has reduction kernels: X(tname, T, oname, Op).
 * Floating types have no AND/OR/XOR. */
#define SYMM__REDUCE_ARITH(X, tname, T) \
    X(tname, T, sum, symm__op_sum)      \
    X(tname, T, prod, symm__op_prod)    \
    X(tname, T, min, symm__op_min)      \
    X(tname, T, max, symm__op_max)
#define SYMM__REDUCE_INT(X, tname, T) \
    SYMM__REDUCE_ARITH(X, tname, T)   \
    X(tname, T, and, symm__op_and)    \
    X(tname, T, or, symm__op_or)      \
    X(tname, T, xor, symm__op_xor)
#define SYMM__REDUCE_PAIRS(X)                        \
    SYMM__REDUCE_INT(X, int8, int8_t)                \
    SYMM__REDUCE_INT(X, int16, int16_t)              \
    SYMM__REDUCE_INT(X, int32, int32_t)              \
    SYMM__REDUCE_INT(X, int64, int64_t)              \
    SYMM__REDUCE_INT(X, uint8, uint8_t)              \
    SYMM__REDUCE_INT(X, uint16, uint16_t)            \
    SYMM__REDUCE_INT(X, uint32, uint32_t)            \
    SYMM__REDUCE_INT(X, uint64, uint64_t)            \
    SYMM__REDUCE_ARITH(X, float16, __half)           \
    SYMM__REDUCE_ARITH(X, bfloat16, __nv_bfloat16)   \
    SYMM__REDUCE_ARITH(X, float32, float)            \
    SYMM__REDUCE_ARITH(X, float64, double)

/* symm_k_reduce_<dtype>_<op>: names built by reduce_fn in cuda.c. */
/* One kernel of a reduction form per dtype and op: symm_k_<form>_<dtype>_<op>
 * (form: reduce, llreduce, l8reduce), running body<T, Op> on its parameter
 * block P. */
#define SYMM__K_REDUCE_FORM(form, P, body, tname, T, oname, Op)                             \
    extern "C" __global__ void symm_k_##form##_##tname##_##oname(const __grid_constant__ P p) { \
        body<T, Op>(p);                                                                     \
    }
#define SYMM__K_REDUCE(tname, T, oname, Op) \
    SYMM__K_REDUCE_FORM(reduce, symm__kreduce_params, symm__reduce, tname, T, oname, Op)
SYMM__REDUCE_PAIRS(SYMM__K_REDUCE)

/* ------------------------------------------------------------------------ */
/* One-shot low-latency (LL) collectives                                     */
/* ------------------------------------------------------------------------ */
/* One kernel, one round, no barrier. Every PE stores what it sends to team
 * PE j into j's scratch (the slot's LL area, beyond the heap: cuda.c) as
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
 * replays ran at ~1.2 ms a call instead of 7 us (bench_coll_stream
 * --skew-us reproduces it; docs/DECISIONS.md "Collectives"). So after
 * SYMM__POLL_EAGER rounds a warp naps between reads, 32 ns doubling to
 * 512 ns: short waits are untouched, long ones read a few times less
 * often, and the storm does not start. */
#define SYMM__POLL_EAGER 8u
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
    __device__ __forceinline__ static void nap(unsigned spins) {
        if (spins < SYMM__POLL_EAGER) return;
        const unsigned k = spins - SYMM__POLL_EAGER;
        __nanosleep(k >= 4 ? 512u : 32u << k);
    }
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
    /* An LL128 line (kernels.cu "LL128"): the 8 lanes of a line pass the
     * same want and their own 16 bytes of it; the line's last lane holds the
     * flag, which it shares with the other 7. */
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
 * combines them (same accumulation type, same order: bitwise identical). */
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

/* symm_k_llreduce_<dtype>_<op>: names built by reduce_fn in cuda.c. */
#define SYMM__K_LLREDUCE(tname, T, oname, Op) \
    SYMM__K_REDUCE_FORM(llreduce, symm__kll_params, symm__ll_reduce, tname, T, oname, Op)
SYMM__REDUCE_PAIRS(SYMM__K_LLREDUCE)

/* ------------------------------------------------------------------------ */
/* LL128 reductions                                                          */
/* ------------------------------------------------------------------------ */
/* The LL idea with 128-byte lines: 15 data words and a flag word (the call's
 * epoch E, 64 bits), the 8 lanes of a line storing it in one warp
 * instruction (st.v2.u64 each) and reading it in one. NVLink delivers such a
 * line whole: `probe_cuda lines` rewrote 8 MiB of lines 4000 times from one
 * H200 while another read them and saw no torn line in 1.35e9 (2026-11-27).
 * So a receiver that sees E in a line's flag word holds its 120 data bytes,
 * with 94 % of the link carrying data (LL: 50 %), no fence and no separate
 * flag. Nothing is cleared: the lines of a parity carry the epoch of the
 * call that wrote them last, smaller than any later call's (a team's lines
 * are zeroed when it takes the slot; E >= 1), and the data words cannot
 * fake a flag, since the lines live apart from any other data. Two parities
 * as for LL (above): every PE needs lines from every peer to finish a call.
 *
 * Data word w of a slice rides in line w / 15, word w % 15; lane l of a warp
 * carries words 2 (l % 8) and 2 (l % 8) + 1 of line 4 q + l / 8 (lane 7 of
 * each line: word 14 and the flag), so a warp moves 4 lines, 480 data
 * bytes, per instruction. The same lane sends, reduces and writes the same
 * bytes of a slice in every phase, so the in-place forms are safe: a lane
 * writes a byte of dst only after it sent the byte of src it overwrites.
 *
 * Phases: (1) every lane sends its part of slice j to PE j's lines, for
 * every peer; (2) it waits for the peers' lines of its own slice and
 * reduces them with its own slice in team order into dst (with gather also
 * into every peer's result lines); (3) with gather it waits for the peers'
 * result lines and copies them into dst. */
__device__ __forceinline__ void symm__l8_put(char *part, uint64_t a, uint64_t b) {
    asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(part), "l"(a), "l"(b)
                 : "memory");
}
__device__ __forceinline__ void symm__l8_get(const char *part, uint64_t &a, uint64_t &b) {
    asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(part)
                 : "memory");
}
__device__ __forceinline__ bool symm__ll_waiter::get8(bool want, const char *part, uint64_t f,
                                                     uint64_t &a, uint64_t &b) {
    if (dead) return false;
    const int flagger = (int)(threadIdx.x & 31u) | 7;
    bool ok = true;
    if (want) {
        symm__l8_get(part, a, b);
        ok = b == f;
    }
    ok = __shfl_sync(0xffffffffu, ok, flagger);
    unsigned spins = 0;
    while (!__all_sync(0xffffffffu, ok)) {
        nap(spins);
        if (!ok) { /* the line's 8 lanes together: one warp instruction reads it */
            symm__l8_get(part, a, b);
            ok = b == f;
        }
        ok = __shfl_sync(0xffffffffu, ok, flagger);
        if (give_up(++spins)) return false;
    }
    return true;
}

/* A lane's bytes of line L of a slice of len bytes: the offset of its first
 * word and how many bytes of the slice are left from there (0: none). */
struct symm__l8_part {
    uint64_t at, rem;
    __device__ __forceinline__ symm__l8_part(uint64_t line, unsigned sub, uint64_t len) {
        at = line * SYMM__L8_DATA + 16u * sub;
        rem = at < len ? len - at : 0;
    }
    /* words of the slice at src (the flag lane's second: 0) */
    __device__ __forceinline__ void load(const char *src, unsigned sub, uint64_t &a,
                                         uint64_t &b) const {
        a = rem ? symm__ll_ld(src + at, rem) : 0;
        b = sub < 7 && rem > 8 ? symm__ll_ld(src + at + 8, rem - 8) : 0;
    }
    __device__ __forceinline__ void store(char *dst, unsigned sub, uint64_t a, uint64_t b) const {
        if (rem) symm__ll_st(dst + at, a, rem);
        if (sub < 7 && rem > 8) symm__ll_st(dst + at + 8, b, rem - 8);
    }
};

template <typename T, typename Op>
__device__ __forceinline__ void symm__l8_reduce(const symm__kl8_params &p) {
    typedef typename symm__acc<T>::type A;
    constexpr int V = 8 / (int)sizeof(T);
    symm__k_enter();
    const symm__ll_call c(p);
    const Op op;
    const int me = p.team.me, n = p.team.n;
    const unsigned lane = threadIdx.x & 31u, sub = lane & 7u;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const uint64_t warps = (uint64_t)gridDim.x * blockDim.x / 32;
    uint64_t most = 0; /* lines of the longest slice */
    for (int j = 0; j < n; j++) {
        const uint64_t l = (p.len[j] + SYMM__L8_DATA - 1) / SYMM__L8_DATA;
        most = l > most ? l : most;
    }
    const uint64_t mine_lines = (p.len[me] + SYMM__L8_DATA - 1) / SYMM__L8_DATA;
    const uint64_t part_off = 16u * lane; /* = 128 (lane / 8) + 16 sub */

    /* (1) send slice j to PE j, peers from me + 1 on (links evenly loaded) */
    for (uint64_t q = warp; 4 * q < most; q += warps) {
        const uint64_t line = 4 * q + lane / 8;
        for (int d = 1; d < n; d++) {
            const int j = me + d < n ? me + d : me + d - n;
            if (line * SYMM__L8_DATA >= p.len[j]) continue;
            const symm__l8_part w(line, sub, p.len[j]);
            uint64_t a, b;
            w.load(c.mine + p.src_off + (uint64_t)j * p.src_j_stride, sub, a, b);
            symm__l8_put(p.team.base[j] + c.region_off(p, me, j) + 128 * (4 * q) + part_off, a,
                         sub == 7 ? c.e : b);
        }
    }

    /* (2) reduce this PE's slice */
    symm__ll_waiter wt = {p.timeout_ns, p.err, 0, false};
    const char *src = c.mine + p.src_off + (uint64_t)me * p.src_j_stride;
    char *dst = c.mine + p.dst_off + (p.gather ? (uint64_t)me * p.src_j_stride : 0);
    for (uint64_t q = warp; 4 * q < mine_lines && !wt.dead; q += warps) {
        const uint64_t line = 4 * q + lane / 8;
        const bool have = line < mine_lines;
        const symm__l8_part w(line, sub, have ? p.len[me] : 0);
        A acc[2][V];
        for (int j = 0; j < n; j++) {
            uint64_t x[2] = {0, 0};
            if (j == me) {
                w.load(src, sub, x[0], x[1]);
            } else {
                if (!wt.get8(have, c.mine + c.region_off(p, j, me) + 128 * (4 * q) + part_off, c.e,
                             x[0], x[1]))
                    break;
                if (sub == 7) x[1] = 0;
            }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const T *v = (const T *)&x[h];
#pragma unroll
                for (int k = 0; k < V; k++)
                    acc[h][k] = j == 0 ? symm__to_acc<T>(v[k])
                                       : op(acc[h][k], symm__to_acc<T>(v[k]));
            }
        }
        if (wt.dead) break;
        uint64_t out[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            T *o = (T *)&out[h];
#pragma unroll
            for (int k = 0; k < V; k++) o[k] = symm__from_acc<T>(acc[h][k]);
        }
        if (!have) continue;
        w.store(dst, sub, out[0], out[1]);
        if (p.gather)
            for (int d = 1; d < n; d++) {
                const int j = me + d < n ? me + d : me + d - n;
                symm__l8_put(p.team.base[j] + c.region_off(p, me, j) + p.l8_half + 128 * (4 * q) +
                                 part_off,
                             out[0], sub == 7 ? c.e : out[1]);
            }
    }

    /* (3) gather: the peers' slices of the result */
    if (p.gather)
        for (uint64_t q = warp; 4 * q < most && !wt.dead; q += warps) {
            const uint64_t line = 4 * q + lane / 8;
            for (int j = 0; j < n; j++) {
                if (j == me) continue;
                const bool have = line * SYMM__L8_DATA < p.len[j];
                uint64_t a = 0, b = 0;
                if (!wt.get8(have, c.mine + c.region_off(p, j, me) + p.l8_half + 128 * (4 * q) +
                                       part_off,
                             c.e, a, b))
                    break;
                if (have)
                    symm__l8_part(line, sub, p.len[j])
                        .store(c.mine + p.dst_off + (uint64_t)j * p.src_j_stride, sub, a, b);
            }
        }
    c.finish(p);
}

/* symm_k_l8reduce_<dtype>_<op>: names built by reduce_fn in cuda.c. */
#define SYMM__K_L8REDUCE(tname, T, oname, Op) \
    SYMM__K_REDUCE_FORM(l8reduce, symm__kl8_params, symm__l8_reduce, tname, T, oname, Op)
SYMM__REDUCE_PAIRS(SYMM__K_L8REDUCE)

/* ------------------------------------------------------------------------ */
/* Staged reductions                                                         */
/* ------------------------------------------------------------------------ */
/* All-reduce and reduce-scatter above the LL sizes, in one kernel with no
 * barrier: every PE stores the part of its input that team PE j reduces
 * (slice j) into j's scratch (the slot's staged area, beyond the heap:
 * cuda.c) and raises a flag; j waits for the flags, reduces its slice from
 * its own input and the staged pieces, and writes the result to its dst
 * (with gather: to dst of every team PE as well, then raises a "done" flag,
 * which every PE awaits before it ends). Every byte crosses NVLink once, and
 * nobody reads another PE's memory.
 *
 * Pipeline. Block b of step s moves bytes [at, at + chunk) of every slice,
 * at = (s * blocks + b) * chunk, through slot s % depth of the sender's
 * region. A block is two groups of SYMM__ST_GROUP threads: the senders copy
 * step after step, waiting only for the receiver's ack of step s - depth
 * before reusing its slot; the receivers wait for the peers' flags of step s,
 * reduce and ack. So the link stays busy while the other group waits. The
 * same block index on every PE handles the same bytes, so each wait is
 * between two blocks of one index; every block must be resident (cuda.c
 * launches at most one per SM). Flags are 64-bit tags (E << 24) + s + 1 of
 * the call's epoch E and the step: they only grow, so a waiter compares with
 * >= and never clears anything. The receivers reduce step s only after their
 * own senders have read step s of the input (a shared counter): in place,
 * the result overwrites input that a peer may still need.
 *
 * Epoch and parity as in the LL collectives (above): E = the team's barrier
 * epoch counter + 1, stored back by the grid's last block; a call uses
 * parity E & 1 of the area, and the same argument shows that the other
 * parity is never still being read: a PE finishes a call only after every
 * peer has sent it all of its slice, which a peer does only after its
 * previous call ended. The gathered results go straight into the peers'
 * dst: PE j's dst is free once j has sent its first piece (j's kernel runs,
 * so j's earlier work on its stream has completed), and a piece of j's dst
 * that is also j's input (in place) was sent before its result comes back.
 *
 * Landing (land: 2 PEs, dst not overlapping the input, cuda.c): steps from
 * depth on do not go through the staging but straight into the peer's dst
 * at the same offset, where the peer reads its piece and writes the result
 * over it. No slot is reused, so there is no credit to wait for; the peer's
 * dst is free once the peer runs (as above), which each sender group learns
 * from a "hello" the peer's block raises first thing (the DONE word, unused
 * without gather: E << 24, above every earlier call's value there). The
 * first depth steps stay staged, so small calls never wait for the hello.
 *
 * Giving up: a wait that fails (symm__wait_ge_u64: timeout or a dead PE)
 * ends its group's steps; every block still reaches the end. */

/* Named barriers of one group (ids 1 and 2; __syncthreads is 0). */
__device__ __forceinline__ void symm__group_sync(unsigned id) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(SYMM__ST_GROUP) : "memory");
}
__device__ __forceinline__ bool symm__group_and(unsigned id, bool v) {
    unsigned r;
    asm volatile("{\n\t.reg .pred p, q;\n\tsetp.ne.u32 p, %1, 0;\n\t"
                 "bar.red.and.pred q, %2, %3, p;\n\tselp.u32 %0, 1, 0, q;\n\t}"
                 : "=r"(r)
                 : "r"((unsigned)v), "r"(id), "r"(SYMM__ST_GROUP)
                 : "memory");
    return r != 0;
}

/* Staged pieces are read around L1 (ld.global.cg): a block reads the same
 * slot again, refilled by the peer, depth steps later. */
template <typename T> __device__ __forceinline__ T symm__ldcg_elem(const char *a) {
    if constexpr (sizeof(T) == 8)
        return symm__bitcast<T>(__ldcg((const unsigned long long *)a));
    else
        return symm__bitcast<T>(__ldcg((const typename symm__uint<sizeof(T)>::type *)a));
}

/* One 16-byte vector of the result: op over the n inputs raw[0..n) in team
 * order, accumulated as in every reduction here (symm__acc). */
template <typename T, typename Op>
__device__ __forceinline__ uint4 symm__st_combine(const uint4 *raw, int n) {
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

/* Swap: the in-place all-reduce of 2 PEs (swap: cuda.c) without staging.
 * A block's receiver group first saves its own input of step s (bytes
 * [at, at + chunk)) into shared memory (two slots, by step parity) and tells
 * the peer (the ACK word: E << 24 + s + 1, "my bytes of step s are saved");
 * the peer's senders then push their input of step s, from their own saved
 * copy, straight into this PE's buffer over the saved bytes, and raise the
 * flag; the receivers reduce the saved copy and the landed piece, in team
 * order, into the buffer. The receivers save step s + 1 before they wait for
 * step s, so a peer's push never waits for a reduction; a slot is saved
 * again only after the senders pushed what it held (the "sent" counter).
 * Both groups give up on a failed wait and tell the other (DEAD), so no
 * spin outlives the call. */
#define SYMM__ST_DEAD 0xffffffffu
template <typename T, typename Op>
__device__ __forceinline__ void symm__st_swap(const symm__kstaged_params &p, bool sender,
                                              unsigned gt, bool server, uint64_t e24,
                                              char *mine, char *peer, uint64_t reg,
                                              volatile uint32_t &sent) {
    typedef typename symm__acc<T>::type A;
    constexpr int V = 16 / (int)sizeof(T);
    constexpr uint64_t es = sizeof(T);
    constexpr uint64_t GR = SYMM__ST_GROUP;
    extern __shared__ uint4 symm__st_smem[];
    __shared__ volatile uint32_t saved; /* steps the receivers saved */
    if (gt == 0 && !sender) saved = 0;
    __syncthreads();
    const unsigned G = gridDim.x, b = blockIdx.x;
    const uint64_t K = p.chunk, bytes = p.cnt[0] * es;
    const Op op;
    const int me = p.team.me;
    char *const slots = (char *)symm__st_smem;
    if (sender) {
        for (uint32_t s = 0; s < p.steps; s++) {
            const uint64_t at = ((uint64_t)s * G + b) * K;
            const uint64_t tag = e24 + s + 1;
            if (gt == 0) {
                while (saved <= s) {
                }
                __threadfence_block(); /* the saved bytes before the flag */
            }
            bool w = saved != SYMM__ST_DEAD &&
                     (!server || symm__wait_ge_u64((const uint64_t *)(mine + reg + SYMM__ST_ACK) + b,
                                                   tag, p.timeout_ns, p.err));
            if (!symm__group_and(1, w)) break;
            if (at < bytes)
                symm__copy(peer + p.dst_off + at, slots + (s & 1) * K,
                           bytes - at < K ? bytes - at : K, gt, GR);
            symm__group_sync(1);
            if (gt == 0) sent = s + 1;
            if (server) {
                symm__fence_acq_rel_sys();
                symm__st_relaxed_u64((uint64_t *)(peer + reg + SYMM__ST_FLAG) + b, tag);
            }
        }
        if (gt == 0) sent = SYMM__ST_DEAD;
        return;
    }
    /* receivers: save step t's input (once the senders pushed step t - 2's) */
    auto save = [&](uint32_t t) -> bool {
        const uint64_t at = ((uint64_t)t * G + b) * K;
        if (gt == 0) {
            while (sent != SYMM__ST_DEAD && sent + 1 < t) { /* sent >= t - 1 */
            }
            __threadfence_block();
        }
        if (!symm__group_and(2, sent != SYMM__ST_DEAD)) return false;
        if (at < bytes)
            symm__copy(slots + (t & 1) * K, mine + p.src_off + at, bytes - at < K ? bytes - at : K,
                       gt, GR);
        symm__group_sync(2);
        if (server) {
            symm__fence_acq_rel_sys();
            symm__st_relaxed_u64((uint64_t *)(peer + reg + SYMM__ST_ACK) + b, e24 + t + 1);
        }
        if (gt == 0) {
            __threadfence_block();
            saved = t + 1;
        }
        return true;
    };
    bool ok = p.steps == 0 || save(0);
    for (uint32_t s = 0; ok && s < p.steps; s++) {
        const uint64_t at = ((uint64_t)s * G + b) * K;
        if (s + 1 < p.steps && !save(s + 1)) {
            ok = false;
            break;
        }
        bool w = !server || symm__wait_ge_u64((const uint64_t *)(mine + reg + SYMM__ST_FLAG) + b,
                                              e24 + s + 1, p.timeout_ns, p.err);
        if (!symm__group_and(2, w)) {
            ok = false;
            break;
        }
        if (at >= bytes) continue;
        const uint64_t ne = (bytes - at < K ? bytes - at : K) / es;
        const char *const own = slots + (s & 1) * K;
        char *const buf = mine + p.dst_off + at; /* the peer's piece, then the result */
        const uint64_t nv = p.vec ? ne / V : 0;
        for (uint64_t v = gt; v < nv; v += GR) {
            const uint4 x = *(const uint4 *)(own + v * 16);
            const uint4 y = __ldcg((const uint4 *)(buf + v * 16));
            const uint4 raw[2] = {me == 0 ? x : y, me == 0 ? y : x};
            *(uint4 *)(buf + v * 16) = symm__st_combine<T, Op>(raw, 2);
        }
        for (uint64_t i = nv * V + gt; i < ne; i += GR) {
            const A x = symm__to_acc<T>(*(const T *)(own + i * es));
            const A y = symm__to_acc<T>(symm__ldcg_elem<T>(buf + i * es));
            *(T *)(buf + i * es) = symm__from_acc<T>(me == 0 ? op(x, y) : op(y, x));
        }
    }
    if (!ok && gt == 0) saved = SYMM__ST_DEAD;
}

template <typename T, typename Op>
__device__ __forceinline__ void symm__st_reduce(const symm__kstaged_params &p) {
    typedef typename symm__acc<T>::type A;
    constexpr int V = 16 / (int)sizeof(T);
    constexpr uint64_t es = sizeof(T);
    constexpr uint64_t GR = SYMM__ST_GROUP;
    __shared__ volatile uint32_t sent; /* steps whose input the senders have read */
    if (threadIdx.x == 0) sent = 0;
    __syncthreads();
    symm__k_enter();
    const int n = p.team.n, me = p.team.me;
    char *const mine = p.team.base[me];
    const uint64_t e = symm__barrier_epoch(mine, p.area_off, me) + 1;
    const uint64_t par = p.st_off + (e & 1) * p.st_parity;
    const unsigned G = gridDim.x, b = blockIdx.x;
    const bool sender = threadIdx.x < SYMM__ST_GROUP;
    const unsigned gt = sender ? threadIdx.x : threadIdx.x - SYMM__ST_GROUP;
    const uint64_t K = p.chunk;
    const Op op;
    /* thread gt < n - 1 of a group looks after the flags of one peer: pj */
    const bool server = (int)gt < n - 1;
    const int pj = (int)gt < me ? (int)gt : (int)gt + 1;
    /* sender s's region in receiver r's area (this parity) */
#define ST_REG(s_, r_) (par + (uint64_t)((s_) < (r_) ? (s_) : (s_) - 1) * p.st_region)
    const uint64_t e24 = e << 24;
    if (p.swap) {
        symm__st_swap<T, Op>(p, sender, gt, server, e24, mine, p.team.base[1 - me], par, sent);
    } else if (sender) {
        if (p.land && server) /* landing: tell the peer this PE runs */
            symm__st_relaxed_u64((uint64_t *)(p.team.base[pj] + ST_REG(me, pj) + SYMM__ST_DONE) + b,
                                 e24);
        for (uint32_t s = 0; s < p.steps; s++) {
            const uint64_t at = ((uint64_t)s * G + b) * K;
            const bool landed = p.land && s >= p.depth;
            const uint64_t slot = landed ? 0 : SYMM__ST_HDR + ((uint64_t)(s % p.depth) * G + b) * K;
            const uint64_t tag = e24 + s + 1;
            if (s >= p.depth && (!p.land || s == p.depth)) {
                /* staging: credit, every receiver consumed step s - depth;
                 * landing: the peer runs, so its dst is free */
                bool w = !server ||
                         (p.land ? symm__wait_ge_u64((const uint64_t *)(mine + ST_REG(pj, me) +
                                                                        SYMM__ST_DONE) + b,
                                                     e24, p.timeout_ns, p.err)
                                 : symm__wait_ge_u64((const uint64_t *)(mine + ST_REG(pj, me) +
                                                                        SYMM__ST_ACK) + b,
                                                     tag - p.depth, p.timeout_ns, p.err));
                if (!symm__group_and(1, w)) break;
            }
            for (int j = 0; j < n; j++) {
                const uint64_t bytes = p.cnt[j] * es;
                if (j == me || at >= bytes) continue;
                symm__copy(p.team.base[j] + (landed ? p.dst_off + at : ST_REG(me, j) + slot),
                           mine + p.src_off + (uint64_t)j * p.src_j_stride + at,
                           bytes - at < K ? bytes - at : K, gt, SYMM__ST_GROUP);
            }
            symm__group_sync(1);
            if (gt == 0) sent = s + 1;
            if (server) { /* release the group's pieces, then the flag */
                symm__fence_acq_rel_sys();
                symm__st_relaxed_u64(
                    (uint64_t *)(p.team.base[pj] + ST_REG(me, pj) + SYMM__ST_FLAG) + b, tag);
            }
        }
        if (gt == 0) sent = 0xffffffffu; /* done, or gave up: never hold the receivers */
    } else {
        const char *const my_src = mine + p.src_off + (uint64_t)me * p.src_j_stride;
        const uint64_t my_bytes = p.cnt[me] * es;
        bool ok = true;
        for (uint32_t s = 0; s < p.steps; s++) {
            const uint64_t at = ((uint64_t)s * G + b) * K;
            const bool landed = p.land && s >= p.depth;
            const uint64_t slot = landed ? 0 : SYMM__ST_HDR + ((uint64_t)(s % p.depth) * G + b) * K;
            const uint64_t tag = e24 + s + 1;
            bool w = !server || symm__wait_ge_u64((const uint64_t *)(mine + ST_REG(pj, me) +
                                                                    SYMM__ST_FLAG) + b,
                                                  tag, p.timeout_ns, p.err);
            if (gt == 0)
                while (sent <= s) {
                }
            if (!symm__group_and(2, w)) {
                ok = false;
                break;
            }
            if (at < my_bytes) {
                const uint64_t ne = (my_bytes - at < K ? my_bytes - at : K) / es;
                const uint64_t out = p.dst_off + at;
                const char *in[8];
#pragma unroll
                for (int j = 0; j < 8; j++)
                    in[j] = j == me  ? my_src + at
                            : j >= n ? my_src
                            : landed ? mine + out /* the peer's piece, where the result goes */
                                     : mine + ST_REG(j, me) + slot;
                const uint64_t nv = p.vec ? ne / V : 0;
                uint64_t v = gt;
                /* 2 PEs: U vectors of each input in flight (U = 2 but for
                 * 32-bit types: with 4, the 16-bit types' widened vectors
                 * and the 64-bit min / max spilled registers) */
                constexpr int U = sizeof(T) == 4 ? 4 : 2;
                if (n == 2 && !p.gather)
                    for (; v + (U - 1) * GR < nv; v += U * GR) {
                        uint4 raw[U][2];
#pragma unroll
                        for (int u = 0; u < U; u++) {
                            raw[u][0] = __ldcg((const uint4 *)(in[0] + (v + u * GR) * 16));
                            raw[u][1] = __ldcg((const uint4 *)(in[1] + (v + u * GR) * 16));
                        }
#pragma unroll
                        for (int u = 0; u < U; u++)
                            *(uint4 *)(mine + out + (v + u * GR) * 16) =
                                symm__st_combine<T, Op>(raw[u], 2);
                    }
                for (; v < nv; v += GR) {
                    uint4 raw[8];
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        if (j < n) raw[j] = __ldcg((const uint4 *)(in[j] + v * 16));
                    const uint4 r = symm__st_combine<T, Op>(raw, n);
                    *(uint4 *)(mine + out + v * 16) = r;
                    if (p.gather)
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            if (j < n && j != me) *(uint4 *)(p.team.base[j] + out + v * 16) = r;
                }
                for (uint64_t i = nv * V + gt; i < ne; i += GR) {
                    A acc = symm__to_acc<T>(symm__ldcg_elem<T>(in[0] + i * es));
#pragma unroll
                    for (int j = 1; j < 8; j++)
                        if (j < n)
                            acc = op(acc, symm__to_acc<T>(symm__ldcg_elem<T>(in[j] + i * es)));
                    const T r = symm__from_acc<T>(acc);
                    *(T *)(mine + out + i * es) = r;
                    if (p.gather)
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            if (j < n && j != me) *(T *)(p.team.base[j] + out + i * es) = r;
                }
            }
            /* ack the pieces (only where a sender will reuse the slot in
             * this call) and, with gather, announce the results written */
            const bool ack = !p.land && s + p.depth < p.steps;
            if (ack || p.gather) {
                symm__group_sync(2);
                if (server) {
                    symm__fence_acq_rel_sys();
                    char *r = p.team.base[pj] + ST_REG(me, pj);
                    if (ack) symm__st_relaxed_u64((uint64_t *)(r + SYMM__ST_ACK) + b, tag);
                    if (p.gather) symm__st_relaxed_u64((uint64_t *)(r + SYMM__ST_DONE) + b, tag);
                }
            }
        }
        if (ok && p.gather && p.steps) { /* every peer's results for these bytes are in */
            bool w = !server || symm__wait_ge_u64((const uint64_t *)(mine + ST_REG(pj, me) +
                                                                    SYMM__ST_DONE) + b,
                                                  e24 + p.steps, p.timeout_ns, p.err);
            symm__group_and(2, w);
        }
    }
#undef ST_REG
    /* the last block advances the epoch counter to E (no fence: what peers
     * must see was released with its flag) */
    if (symm__grid_last(mine, p.area_off, true, false) == 1 && threadIdx.x == 0)
        symm__barrier_advance(mine, p.area_off, me, e);
}

/* symm_k_streduce_<dtype>_<op>: names built by reduce_fn in cuda.c. */
#define SYMM__K_STREDUCE(tname, T, oname, Op)                                               \
    extern "C" __global__ void __launch_bounds__(2 * SYMM__ST_GROUP, 1)                     \
        symm_k_streduce_##tname##_##oname(const __grid_constant__ symm__kstaged_params p) {  \
        symm__st_reduce<T, Op>(p);                                                          \
    }
SYMM__REDUCE_PAIRS(SYMM__K_STREDUCE)

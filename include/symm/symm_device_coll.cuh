/*
 * symm — device collectives (CUDA C++, header-only; included by
 * symm_device.cuh, or include this header alone).
 *
 * Collectives over a device team (symm_device_team_get) called from inside a
 * kernel, on load/store peers only (like the rest of the device API). Every
 * team PE runs the same sequence of collectives on a team, each call made by
 * one block (_block: every thread of the block, same arguments) or one warp
 * (_warp: all 32 lanes) per PE. No two collectives or barriers run
 * concurrently on one team (they share the team slot's barrier flags, also
 * used by the runtime's stream and host barriers, which they may be mixed
 * with in one order on every PE).
 *
 * Buffers are symmetric addresses (this PE's copy, as from symm_buf_ptr) of
 * the same size on every PE; nelems and root are the same on every PE. Sizes
 * are in elements of T (the *mem forms: bytes). No scratch memory is used:
 * every collective is
 *     barrier; move data with loads/stores to peers' copies; barrier
 * so on entry every PE's src is complete (as written before the call by any
 * thread whose writes the caller ordered before it, e.g. by __syncthreads or
 * a previous kernel) and no peer still uses its dst; on return dst holds the
 * result on this PE, every peer has finished reading this PE's src (it may be
 * reused at once) and writing this PE's dst.
 *
 * Every collective returns SYMM_SUCCESS, or SYMM_ERR_PEER_FAILED (the same in
 * every thread of the scope) when a peer PE died while it waited: the
 * context's fail_word (symm_device.cuh), which a runtime thread sets; dst is
 * then undefined and the context unusable.
 *
 * Reductions (ops SYMM_OP_*, T one of int8_t .. uint64_t, __half,
 * __nv_bfloat16, float, double) follow symm_reduce: the team's PEs are
 * combined in team order, each element by one PE, so every PE gets
 * bitwise-identical results; integer SUM/PROD wrap around; floating MIN/MAX
 * follow fmin/fmax; __half/__nv_bfloat16 accumulate in float and round to
 * nearest-even once. AND/OR/XOR on floating types return
 * SYMM_ERR_NOT_SUPPORTED, an op outside SYMM_OP_* SYMM_ERR_INVALID_ARG; both
 * before any synchronisation (every PE passes the same op, so every PE
 * returns without waiting). nelems 0 still synchronises.
 *
 * Cost: two team barriers per call; the data moves in one pass (each element
 * read once from its owner and stored once at each destination). One block
 * moves at the rate one SM can drive; kernels that need more spread the work
 * over blocks themselves (and synchronise those blocks before one of them
 * calls the collective).
 */
#ifndef SYMM_SYMM_DEVICE_COLL_CUH
#define SYMM_SYMM_DEVICE_COLL_CUH

#include <symm/symm_device.cuh>

#include <cooperative_groups.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

/* ------------------------------------------------------------------------ */
/* Scopes (internal): who shares the work, and how it synchronises           */
/* ------------------------------------------------------------------------ */

struct symm__scope_block {
    static __device__ __forceinline__ unsigned tid() { return symm__block_tid(); }
    static __device__ __forceinline__ unsigned nthr() { return symm__block_nthreads(); }
    static __device__ __forceinline__ void sync() { __syncthreads(); }
};
struct symm__scope_warp {
    static __device__ __forceinline__ unsigned tid() { return symm__block_tid() & 31u; }
    static __device__ __forceinline__ unsigned nthr() { return 32u; }
    static __device__ __forceinline__ void sync() { __syncwarp(); }
};

/* Team barrier shared by the threads of scope S: the block barrier itself,
 * or its steps with warp synchronisation. False (in every thread of the
 * scope) when a peer PE died (the context's fail_word). */
template <class S>
__device__ __forceinline__ bool symm__team_barrier_scope(const symm_device_ctx &c,
                                                         const symm_device_team &t) {
    if constexpr (std::is_same<S, symm__scope_block>::value) {
        return symm_dev_team_barrier_block(c, t) == SYMM_SUCCESS;
    } else {
        symm__world_strided w = {&c, t.start, t.stride};
        char *base = (char *)c.heap_base;
        uint64_t off = (uint64_t)t.slot * c.slot_bytes + SYMM_DEVICE_BARRIER_OFF;
        S::sync();
        uint64_t e = symm__barrier_epoch(base, off, t.my_pe) + 1;
        S::sync();
        const bool ok = symm__barrier_arrive_wait(base, off, t.my_pe, t.n_pes, w, e, S::tid(),
                                                  S::nthr(), 0, symm__fail_word(c));
        if (!__all_sync(0xffffffffu, ok)) return false;
        if (S::tid() == 0) symm__barrier_advance(base, off, t.my_pe, e);
        __threadfence_system();
        S::sync();
        return true;
    }
}
#define SYMM__TEAM_BARRIER(S, c, t)                                    \
    do {                                                               \
        if (!symm__team_barrier_scope<S>(c, t)) return SYMM_ERR_PEER_FAILED; \
    } while (0)

/* Barrier over a team, by all 32 lanes of one warp per PE. */
SYMM_DEV_FN symm_status symm_dev_team_barrier_warp(const symm_device_ctx &c,
                                                   const symm_device_team &t) {
    return symm__team_barrier_scope<symm__scope_warp>(c, t) ? SYMM_SUCCESS : SYMM_ERR_PEER_FAILED;
}

/* pe's copy of sym for team PE j. */
template <typename T>
__device__ __forceinline__ T *symm__team_ptr(const symm_device_ctx &c, const symm_device_team &t,
                                             T *sym, int j) {
    return (T *)symm_dev_ptr(c, (const void *)sym, symm_dev_team_world_pe(t, j));
}

/* ------------------------------------------------------------------------ */
/* Data movement: broadcast, fcollect, alltoall                              */
/* ------------------------------------------------------------------------ */

/* Every PE pulls root's src (one pass, spread over the PEs' links). */
template <class S>
__device__ __forceinline__ symm_status symm__broadcastmem(const symm_device_ctx &c,
                                                   const symm_device_team &t, void *dst,
                                                   const void *src, size_t nbytes, int root) {
    SYMM__TEAM_BARRIER(S, c, t);
    if (!(t.my_pe == root && dst == src))
        symm__copy(dst, symm__team_ptr(c, t, src, root), nbytes, S::tid(), S::nthr());
    SYMM__TEAM_BARRIER(S, c, t);
    return SYMM_SUCCESS;
}

/* Every PE pushes its src into block my_pe of every PE's dst, starting with
 * the next PE so that the PEs' stores spread over the links. */
template <class S>
__device__ __forceinline__ symm_status symm__fcollectmem(const symm_device_ctx &c,
                                                  const symm_device_team &t, void *dst,
                                                  const void *src, size_t nbytes) {
    SYMM__TEAM_BARRIER(S, c, t);
    char *mine = (char *)dst + (size_t)t.my_pe * nbytes;
    for (int k = 1; k <= t.n_pes; k++) {
        const int j = (t.my_pe + k) % t.n_pes;
        if (j == t.my_pe && mine == (const char *)src) continue; /* in place */
        symm__copy(symm__team_ptr(c, t, mine, j), src, nbytes, S::tid(), S::nthr());
    }
    SYMM__TEAM_BARRIER(S, c, t);
    return SYMM_SUCCESS;
}

/* Block j of src goes to block my_pe of PE j's dst (push). */
template <class S>
__device__ __forceinline__ symm_status symm__alltoallmem(const symm_device_ctx &c,
                                                  const symm_device_team &t, void *dst,
                                                  const void *src, size_t nbytes) {
    SYMM__TEAM_BARRIER(S, c, t);
    char *mine = (char *)dst + (size_t)t.my_pe * nbytes;
    for (int k = 1; k <= t.n_pes; k++) {
        const int j = (t.my_pe + k) % t.n_pes;
        symm__copy(symm__team_ptr(c, t, mine, j), (const char *)src + (size_t)j * nbytes, nbytes,
                   S::tid(), S::nthr());
    }
    SYMM__TEAM_BARRIER(S, c, t);
    return SYMM_SUCCESS;
}

/* root's (team PE number) nbytes of src are copied to every PE's dst (root's
 * too). In place (dst == src) is allowed on every PE. */
SYMM_DEV_FN symm_status symm_dev_team_broadcastmem_block(const symm_device_ctx &c,
                                                  const symm_device_team &t, void *dst,
                                                  const void *src, size_t nbytes, int root) {
    return symm__broadcastmem<symm__scope_block>(c, t, dst, src, nbytes, root);
}
SYMM_DEV_FN symm_status symm_dev_team_broadcastmem_warp(const symm_device_ctx &c,
                                                 const symm_device_team &t, void *dst,
                                                 const void *src, size_t nbytes, int root) {
    return symm__broadcastmem<symm__scope_warp>(c, t, dst, src, nbytes, root);
}
/* dst (n_pes * nbytes) receives team PE i's nbytes of src at i * nbytes, on
 * every PE. In place: src may be this PE's block of dst (dst + my_pe *
 * nbytes); no other overlap. */
SYMM_DEV_FN symm_status symm_dev_team_fcollectmem_block(const symm_device_ctx &c,
                                                 const symm_device_team &t, void *dst,
                                                 const void *src, size_t nbytes) {
    return symm__fcollectmem<symm__scope_block>(c, t, dst, src, nbytes);
}
SYMM_DEV_FN symm_status symm_dev_team_fcollectmem_warp(const symm_device_ctx &c,
                                                const symm_device_team &t, void *dst,
                                                const void *src, size_t nbytes) {
    return symm__fcollectmem<symm__scope_warp>(c, t, dst, src, nbytes);
}
/* src and dst hold n_pes blocks of nbytes: block j of src goes to block
 * my_pe of team PE j's dst. src and dst must not overlap. */
SYMM_DEV_FN symm_status symm_dev_team_alltoallmem_block(const symm_device_ctx &c,
                                                 const symm_device_team &t, void *dst,
                                                 const void *src, size_t nbytes) {
    return symm__alltoallmem<symm__scope_block>(c, t, dst, src, nbytes);
}
SYMM_DEV_FN symm_status symm_dev_team_alltoallmem_warp(const symm_device_ctx &c,
                                                const symm_device_team &t, void *dst,
                                                const void *src, size_t nbytes) {
    return symm__alltoallmem<symm__scope_warp>(c, t, dst, src, nbytes);
}

/* Typed forms: nelems elements of T (per block for fcollect/alltoall). */
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_broadcast_block(const symm_device_ctx &c,
                                                              const symm_device_team &t, T *dst,
                                                              const T *src, size_t nelems,
                                                              int root) {
    return symm_dev_team_broadcastmem_block(c, t, dst, src, nelems * sizeof(T), root);
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_broadcast_warp(const symm_device_ctx &c,
                                                             const symm_device_team &t, T *dst,
                                                             const T *src, size_t nelems,
                                                             int root) {
    return symm_dev_team_broadcastmem_warp(c, t, dst, src, nelems * sizeof(T), root);
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_fcollect_block(const symm_device_ctx &c,
                                                             const symm_device_team &t, T *dst,
                                                             const T *src, size_t nelems) {
    return symm_dev_team_fcollectmem_block(c, t, dst, src, nelems * sizeof(T));
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_fcollect_warp(const symm_device_ctx &c,
                                                            const symm_device_team &t, T *dst,
                                                            const T *src, size_t nelems) {
    return symm_dev_team_fcollectmem_warp(c, t, dst, src, nelems * sizeof(T));
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_alltoall_block(const symm_device_ctx &c,
                                                             const symm_device_team &t, T *dst,
                                                             const T *src, size_t nelems) {
    return symm_dev_team_alltoallmem_block(c, t, dst, src, nelems * sizeof(T));
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_alltoall_warp(const symm_device_ctx &c,
                                                            const symm_device_team &t, T *dst,
                                                            const T *src, size_t nelems) {
    return symm_dev_team_alltoallmem_warp(c, t, dst, src, nelems * sizeof(T));
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

/* Accumulator type, load and store (internal). */
template <typename T> struct symm__dacc {
    typedef T type;
    static __device__ __forceinline__ T load(const T *p) { return *p; }
    static __device__ __forceinline__ T out(T a) { return a; }
};
template <> struct symm__dacc<__half> {
    typedef float type;
    static __device__ __forceinline__ float load(const __half *p) { return __half2float(*p); }
    static __device__ __forceinline__ __half out(float a) { return __float2half_rn(a); }
};
template <> struct symm__dacc<__nv_bfloat16> {
    typedef float type;
    static __device__ __forceinline__ float load(const __nv_bfloat16 *p) {
        return __bfloat162float(*p);
    }
    static __device__ __forceinline__ __nv_bfloat16 out(float a) { return __float2bfloat16_rn(a); }
};

/* Combine a (earlier team PEs) with b (the next one) under op OP (internal).
 * Integer SUM/PROD in unsigned arithmetic of at least 32 bits: they wrap. */
template <typename A, int OP>
__device__ __forceinline__ A symm__combine(A a, A b) {
    if constexpr (std::is_floating_point<A>::value) {
        if constexpr (OP == SYMM_OP_SUM) return a + b;
        if constexpr (OP == SYMM_OP_PROD) return a * b;
        if constexpr (OP == SYMM_OP_MIN) return fmin(a, b);
        if constexpr (OP == SYMM_OP_MAX) return fmax(a, b);
        return a;
    } else {
        typedef typename std::conditional<sizeof(A) == 8, unsigned long long, unsigned>::type W;
        if constexpr (OP == SYMM_OP_SUM) return (A)((W)a + (W)b);
        if constexpr (OP == SYMM_OP_PROD) return (A)((W)a * (W)b);
        if constexpr (OP == SYMM_OP_MIN) return b < a ? b : a;
        if constexpr (OP == SYMM_OP_MAX) return a < b ? b : a;
        if constexpr (OP == SYMM_OP_AND) return (A)(a & b);
        if constexpr (OP == SYMM_OP_OR) return (A)(a | b);
        if constexpr (OP == SYMM_OP_XOR) return (A)(a ^ b);
        return a;
    }
}

/* Element i of team PEs' srcs combined in team order (internal). */
template <typename T, int OP>
__device__ __forceinline__ T symm__reduce_elem(const symm_device_ctx &c,
                                               const symm_device_team &t, const T *src, size_t i) {
    typedef symm__dacc<T> R;
    typename R::type a = R::load(symm__team_ptr(c, t, src, 0) + i);
    for (int j = 1; j < t.n_pes; j++)
        a = symm__combine<typename R::type, OP>(a, R::load(symm__team_ptr(c, t, src, j) + i));
    return R::out(a);
}

/* All-reduce: team PE p reduces segment p (16-byte aligned pieces) and stores
 * the result into every PE's dst. Each element is read and written by one PE
 * only, so dst == src is safe. */
template <class S, typename T, int OP>
__device__ __forceinline__ symm_status symm__reduce_run(const symm_device_ctx &c,
                                                 const symm_device_team &t, T *dst, const T *src,
                                                 size_t nelems) {
    const size_t unit = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
    const size_t units = (nelems + unit - 1) / unit;
    const size_t per = (units + (size_t)t.n_pes - 1) / (size_t)t.n_pes * unit;
    size_t lo = per * (size_t)t.my_pe, hi = lo + per;
    if (hi > nelems) hi = nelems;
    SYMM__TEAM_BARRIER(S, c, t);
    for (size_t i = lo + S::tid(); i < hi; i += S::nthr()) {
        const T v = symm__reduce_elem<T, OP>(c, t, src, i);
        for (int k = 1; k <= t.n_pes; k++)
            symm__team_ptr(c, t, dst, (t.my_pe + k) % t.n_pes)[i] = v;
    }
    SYMM__TEAM_BARRIER(S, c, t);
    return SYMM_SUCCESS;
}

/* Reduce-scatter: PE p reduces block p of every PE's src into its own dst. */
template <class S, typename T, int OP>
__device__ __forceinline__ symm_status symm__reducescatter_run(const symm_device_ctx &c,
                                                        const symm_device_team &t, T *dst,
                                                        const T *src, size_t nelems) {
    const T *blk = src + (size_t)t.my_pe * nelems;
    SYMM__TEAM_BARRIER(S, c, t);
    for (size_t i = S::tid(); i < nelems; i += S::nthr())
        dst[i] = symm__reduce_elem<T, OP>(c, t, blk, i);
    SYMM__TEAM_BARRIER(S, c, t);
    return SYMM_SUCCESS;
}

template <typename T> struct symm__is_float_type {
    static constexpr bool value = std::is_floating_point<T>::value ||
                                  std::is_same<T, __half>::value ||
                                  std::is_same<T, __nv_bfloat16>::value;
};

/* Dispatch a runtime op to the kernel-side template (internal). */
template <class S, bool SCATTER, typename T>
__device__ __forceinline__ symm_status symm__reduce_op(const symm_device_ctx &c,
                                                       const symm_device_team &t, T *dst,
                                                       const T *src, size_t nelems, int op) {
    static_assert(std::is_integral<T>::value || symm__is_float_type<T>::value,
                  "reductions take integer, __half, __nv_bfloat16, float or double elements");
#define SYMM__RED_CASE(OP)                                                         \
    case OP:                                                                       \
        if (SCATTER) return symm__reducescatter_run<S, T, OP>(c, t, dst, src, nelems); \
        return symm__reduce_run<S, T, OP>(c, t, dst, src, nelems);
    switch (op) {
        SYMM__RED_CASE(SYMM_OP_SUM)
        SYMM__RED_CASE(SYMM_OP_PROD)
        SYMM__RED_CASE(SYMM_OP_MIN)
        SYMM__RED_CASE(SYMM_OP_MAX)
    default: break;
    }
    if constexpr (!symm__is_float_type<T>::value) {
        switch (op) {
            SYMM__RED_CASE(SYMM_OP_AND)
            SYMM__RED_CASE(SYMM_OP_OR)
            SYMM__RED_CASE(SYMM_OP_XOR)
        default: break;
        }
    }
#undef SYMM__RED_CASE
    if (op >= SYMM_OP_AND && op <= SYMM_OP_XOR) return SYMM_ERR_NOT_SUPPORTED;
    return SYMM_ERR_INVALID_ARG;
}

/* Element-wise reduction of every team PE's nelems of src into every PE's
 * dst (all-reduce, like symm_reduce). dst == src (in place) is allowed; other
 * overlaps are not. Returns SYMM_SUCCESS, or NOT_SUPPORTED / INVALID_ARG for
 * the op (see above; nothing moved, no synchronisation). */
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_reduce_block(const symm_device_ctx &c,
                                                                  const symm_device_team &t,
                                                                  T *dst, const T *src,
                                                                  size_t nelems, int op) {
    return symm__reduce_op<symm__scope_block, false>(c, t, dst, src, nelems, op);
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_reduce_warp(const symm_device_ctx &c,
                                                                 const symm_device_team &t,
                                                                 T *dst, const T *src,
                                                                 size_t nelems, int op) {
    return symm__reduce_op<symm__scope_warp, false>(c, t, dst, src, nelems, op);
}
/* src holds n_pes blocks of nelems; this PE's dst (nelems) receives the
 * reduction of block my_pe of every team PE's src. dst may be this PE's own
 * block (src + my_pe * nelems); no other overlap. Returns as reduce. */
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_reducescatter_block(
    const symm_device_ctx &c, const symm_device_team &t, T *dst, const T *src, size_t nelems,
    int op) {
    return symm__reduce_op<symm__scope_block, true>(c, t, dst, src, nelems, op);
}
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_reducescatter_warp(
    const symm_device_ctx &c, const symm_device_team &t, T *dst, const T *src, size_t nelems,
    int op) {
    return symm__reduce_op<symm__scope_warp, true>(c, t, dst, src, nelems, op);
}

/* ------------------------------------------------------------------------ */
/* Variable-size all-to-all with counts in GPU memory (MoE dispatch/combine) */
/* ------------------------------------------------------------------------ */

/* a + b, saturating at UINT64_MAX: counts are user data in GPU memory, and a
 * huge (or negative int64) count must not wrap a sum into a small one. */
SYMM_DEV_FN uint64_t symm__sat_add(uint64_t a, uint64_t b) {
    return a > ~0ull - b ? ~0ull : a + b;
}

/* off[j] = cnt[0] + ... + cnt[j - 1] for j < n; returns the sum of all n
 * (one thread; saturating). */
SYMM_DEV_FN uint64_t symm__prefix_sums(const uint64_t *cnt, uint64_t *off, int n) {
    uint64_t sum = 0;
    for (int j = 0; j < n; j++) {
        off[j] = sum;
        sum = symm__sat_add(sum, cnt[j]);
    }
    return sum;
}

/* Why an alltoallv copied nothing, or what else went wrong (0: nothing). */
#define SYMM__A2AV_DST 1         /* this PE would receive more than dst_cap units   */
#define SYMM__A2AV_PEER_SRC 2    /* a peer's units for this PE lie beyond src_cap   */
#define SYMM__A2AV_OWN_SRC 3     /* this PE's send counts add up to more than src_cap */
#define SYMM__A2AV_PEER_FAILED 4 /* a team barrier gave up: a peer died             */

/* Is PE j's piece for this PE (cnt units from soff) inside its src? And does
 * the total fit dst (and its byte count a uint64_t)? One thread. */
SYMM_DEV_FN int symm__a2av_judge(const uint64_t *cnt, const uint64_t *soff, int n,
                                 uint64_t total, uint64_t dst_cap, uint64_t src_cap,
                                 size_t unit_bytes) {
    for (int j = 0; j < n; j++)
        if (soff[j] > src_cap || cnt[j] > src_cap - soff[j]) return SYMM__A2AV_PEER_SRC;
    if (total > dst_cap || total > ~0ull / (unit_bytes ? unit_bytes : 1)) return SYMM__A2AV_DST;
    return 0;
}

/* The largest src (in units) whose byte offsets fit a uint64_t: the bound the
 * forms without a src capacity check against. */
SYMM_DEV_FN uint64_t symm__a2av_no_cap(size_t unit_bytes) {
    return ~0ull / (unit_bytes ? unit_bytes : 1);
}

/* Every PE sends send_counts[j] units (unit_bytes each) to team PE j; src
 * holds them packed in team order (the units for PE 0, then for PE 1, ...).
 * send_counts (n_pes uint64_t) and src are symmetric: PE j reads its part of
 * this PE's src, and this PE's count for it, directly. dst (symmetric or not:
 * only this PE writes it) receives the units from PE 0, then from PE 1, ...;
 * recv_counts[j] and recv_offsets[j] (units, n_pes entries each, this PE's
 * memory, e.g. device memory or a symmetric buffer) say what came from PE j
 * and where it starts. dst_cap is dst's capacity in units: when the total
 * exceeds it, nothing is copied, recv_counts still say what would have come,
 * and SYMM_ERR_OUT_OF_BOUNDS is returned (on this PE only; the others
 * proceed). Counts are uint64_t; sums saturate, so a count so large that a
 * piece's byte offset would not fit 64 bits is SYMM_ERR_OUT_OF_BOUNDS too.
 * Combine (the reverse exchange) is the same call with recv_counts (in a
 * symmetric buffer) as send_counts and dst as src: each unit returns to the
 * slot it left from.
 * Called by every thread of one block per PE; barriers as the other
 * collectives (src and send_counts may be reused on return). */
SYMM_DEV_FN symm_status symm_dev_team_alltoallvmem_block(
    const symm_device_ctx &c, const symm_device_team &t, void *dst, uint64_t dst_cap,
    const void *src, const uint64_t *send_counts, size_t unit_bytes, uint64_t *recv_counts,
    uint64_t *recv_offsets) {
    __shared__ int sh_bad;
    const unsigned tid = symm__block_tid(), nthr = symm__block_nthreads();
    const int n = t.n_pes, me = t.my_pe;
    SYMM__TEAM_BARRIER(symm__scope_block, c, t);
    /* recv_offsets holds, until the copies are done, where PE j packed its
     * units for this PE */
    for (int j = (int)tid; j < n; j += (int)nthr) {
        const uint64_t *cj = symm__team_ptr(c, t, send_counts, j);
        uint64_t off = 0;
        for (int q = 0; q < me; q++) off = symm__sat_add(off, *(volatile const uint64_t *)(cj + q));
        recv_counts[j] = *(volatile const uint64_t *)(cj + me);
        recv_offsets[j] = off;
    }
    __syncthreads();
    if (tid == 0) {
        uint64_t total = 0;
        for (int j = 0; j < n; j++) total = symm__sat_add(total, recv_counts[j]);
        sh_bad = symm__a2av_judge(recv_counts, recv_offsets, n, total, dst_cap,
                                  symm__a2av_no_cap(unit_bytes), unit_bytes);
    }
    __syncthreads();
    const bool fits = sh_bad == 0;
    if (fits) {
        for (int k = 0; k < n; k++) {
            const int j = (me + k) % n;
            uint64_t at = 0; /* where PE j's units land: the counts before it */
            for (int q = 0; q < j; q++) at += recv_counts[q];
            const uint64_t cnt = recv_counts[j];
            const char *from =
                (const char *)symm__team_ptr(c, t, src, j) + recv_offsets[j] * unit_bytes;
            symm__copy((char *)dst + at * unit_bytes, from, cnt * unit_bytes, tid, nthr);
        }
    }
    __syncthreads(); /* every thread is done with recv_offsets */
    if (tid == 0) symm__prefix_sums(recv_counts, recv_offsets, n);
    SYMM__TEAM_BARRIER(symm__scope_block, c, t);
    return fits ? SYMM_SUCCESS : SYMM_ERR_OUT_OF_BOUNDS;
}
/* Typed form: units are elements of T. */
template <typename T>
__device__ __forceinline__ symm_status symm_dev_team_alltoallv_block(
    const symm_device_ctx &c, const symm_device_team &t, T *dst, uint64_t dst_cap, const T *src,
    const uint64_t *send_counts, uint64_t *recv_counts, uint64_t *recv_offsets) {
    return symm_dev_team_alltoallvmem_block(c, t, dst, dst_cap, src, send_counts, sizeof(T),
                                            recv_counts, recv_offsets);
}

/* Stream form (kernels + host launcher, for .cu files).
 *
 * symm_dev_alltoallv_on_stream_blocks runs the exchange as one cooperative
 * grid of `blocks` blocks of SYMM_DEV_COLL_THREADS threads (0: one a SM;
 * 1: the single-block kernel): block 0 runs the team barriers, and every
 * block copies an equal, contiguous share of the bytes this PE receives,
 * whichever peers they come from. Fewer blocks leave SMs to kernels that
 * run beside it. Teams too large for the grid's shared memory (more than
 * 2048 PEs) take one block. symm_dev_alltoallv_on_stream is the same with
 * blocks = 0.
 *
 * Arguments and results as symm_dev_team_alltoallvmem_block; *status
 * (device memory, may be NULL) receives the result when the stream gets
 * there. Returns the launch's cudaError_t. Ordered with the stream's other
 * work and capturable into CUDA graphs; it shares the team's barrier with
 * the runtime's stream collectives, so enqueue them on every PE in one order
 * (one stream per team, or streams the caller orders). A cooperative grid
 * needs all its blocks resident at once: the driver refuses a grid larger
 * than the GPU holds (cudaErrorCooperativeLaunchTooLarge). */
#ifndef SYMM_DEV_COLL_THREADS
#define SYMM_DEV_COLL_THREADS 512
#endif
template <int Threads>
__global__ void __launch_bounds__(Threads)
    symm__alltoallv_kernel(symm_device_ctx c, symm_device_team t, void *dst, uint64_t dst_cap,
                           const void *src, const uint64_t *send_counts, size_t unit_bytes,
                           uint64_t *recv_counts, uint64_t *recv_offsets, int *status) {
    symm_status st = symm_dev_team_alltoallvmem_block(c, t, dst, dst_cap, src, send_counts,
                                                      unit_bytes, recv_counts, recv_offsets);
    if (status && threadIdx.x == 0) *status = (int)st;
}

/* The grid form. Block 0 alone talks to the peers before the copies: after
 * the team barrier it reads the counts for this PE (one load a peer) and
 * where each peer packed them (that peer's counts before this PE), and
 * leaves them in recv_counts and recv_offsets, which are this PE's memory
 * and its output anyway; after the grid's sync every block takes them from
 * there (each reading the peers, or the fail word, itself cost a fixed time
 * a block, one block after another, so the grid's fixed cost grew with its
 * size: docs/GPU-RESULTS.md "2026-11-28: the alltoallv stream form as a
 * grid"), judges them (symm__a2av_judge, the same verdict in every block),
 * cuts the received bytes into equal shares and copies its own. After the second
 * sync block 0 writes the real offsets and runs the closing barrier. A
 * peer's death: block 0's barrier gives up and leaves zero counts, so no
 * block copies. src_cap: every PE's src capacity in units (the runtime's
 * symm_alltoallv_on_stream knows it; this header's form passes
 * symm__a2av_no_cap). timeout_ns and err as symm__barrier_block (0 and
 * NULL here; the runtime's kernel passes its own). Returns, in block 0, 0 or a SYMM__A2AV_* reason
 * (the own-src check only where src_cap is real); other blocks return 0.
 * Launched cooperatively, with 3 * n_pes uint64_t of dynamic shared memory. */
#define SYMM__A2AV_MIN_SHARE (16u << 10)
__device__ __forceinline__ int symm__alltoallv_grid(
    const symm_device_ctx &c, const symm_device_team &t, void *dst, uint64_t dst_cap,
    const void *src, uint64_t src_cap, const uint64_t *send_counts, size_t unit_bytes,
    uint64_t *recv_counts, uint64_t *recv_offsets, uint64_t timeout_ns, int *err) {
    extern __shared__ uint64_t symm__a2av_sh[];
    __shared__ uint64_t sh_total;
    __shared__ int sh_bad;
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const unsigned tid = threadIdx.x, nthr = blockDim.x;
    const int n = t.n_pes, me = t.my_pe;
    uint64_t *cnt = symm__a2av_sh, *roff = cnt + n, *soff = roff + n;
    bool ok = true;
    if (blockIdx.x == 0) {
        ok = symm__barrier_block(c, t.slot, me, n, t.start, t.stride, timeout_ns, err) ==
             SYMM_SUCCESS;
        for (int j = (int)tid; j < n; j += (int)nthr) {
            uint64_t cj = 0, o = 0;
            if (ok) {
                const uint64_t *pj = symm__team_ptr(c, t, send_counts, j);
                cj = *(volatile const uint64_t *)(pj + me);
                for (int q = 0; q < me; q++) o = symm__sat_add(o, *(volatile const uint64_t *)(pj + q));
            }
            recv_counts[j] = cj;
            recv_offsets[j] = o; /* for now: where PE j packed this PE's units */
        }
    }
    grid.sync();
    for (int j = (int)tid; j < n; j += (int)nthr) {
        cnt[j] = __ldcg(recv_counts + j);
        soff[j] = __ldcg(recv_offsets + j);
    }
    __syncthreads();
    if (tid == 0) {
        sh_total = symm__prefix_sums(cnt, roff, n);
        sh_bad = symm__a2av_judge(cnt, soff, n, sh_total, dst_cap, src_cap, unit_bytes);
    }
    __syncthreads();
    const uint64_t total = sh_total;
    const bool fits = sh_bad == 0;
    /* this block's share of the received bytes: [lo, hi) of dst, cut at
     * 256-byte multiples, at least SYMM__A2AV_MIN_SHARE (small exchanges
     * leave the later blocks idle) */
    const uint64_t bytes = fits ? total * unit_bytes : 0;
    uint64_t chunk = ((bytes + gridDim.x - 1) / gridDim.x + 255) / 256 * 256;
    if (chunk < SYMM__A2AV_MIN_SHARE) chunk = SYMM__A2AV_MIN_SHARE;
    const uint64_t lo0 = (uint64_t)blockIdx.x * chunk;
    const uint64_t lo = lo0 < bytes ? lo0 : bytes, hi = bytes - lo > chunk ? lo + chunk : bytes;
    for (int k = 0; k < n && lo < hi; k++) {
        const int j = (me + k) % n;
        const uint64_t jl = roff[j] * unit_bytes, jh = jl + cnt[j] * unit_bytes;
        const uint64_t a = lo > jl ? lo : jl, b = hi < jh ? hi : jh;
        if (a < b)
            symm__copy((char *)dst + a,
                       (const char *)symm__team_ptr(c, t, src, j) + soff[j] * unit_bytes + (a - jl),
                       b - a, tid, nthr);
    }
    grid.sync(); /* every block is done with the peers' src and with recv_offsets */
    if (blockIdx.x != 0) return 0;
    for (int j = (int)tid; j < n; j += (int)nthr) recv_offsets[j] = roff[j];
    if (tid == 0 && sh_bad == 0) { /* this PE's own sends against its src */
        uint64_t sent = 0;
        for (int j = 0; j < n; j++) sent = symm__sat_add(sent, send_counts[j]);
        if (sent > src_cap) sh_bad = SYMM__A2AV_OWN_SRC;
    }
    const bool done = ok && symm__barrier_block(c, t.slot, me, n, t.start, t.stride, timeout_ns,
                                                err) == SYMM_SUCCESS;
    return !done ? SYMM__A2AV_PEER_FAILED : sh_bad;
}

template <int Threads>
__global__ void __launch_bounds__(Threads)
    symm__alltoallv_grid_kernel(symm_device_ctx c, symm_device_team t, void *dst,
                                uint64_t dst_cap, const void *src, const uint64_t *send_counts,
                                size_t unit_bytes, uint64_t *recv_counts, uint64_t *recv_offsets,
                                int *status) {
    const int why = symm__alltoallv_grid(c, t, dst, dst_cap, src, symm__a2av_no_cap(unit_bytes),
                                         send_counts, unit_bytes, recv_counts, recv_offsets, 0,
                                         nullptr);
    if (status && blockIdx.x == 0 && threadIdx.x == 0)
        *status = why == SYMM__A2AV_PEER_FAILED ? (int)SYMM_ERR_PEER_FAILED
                  : why                         ? (int)SYMM_ERR_OUT_OF_BOUNDS
                                                : (int)SYMM_SUCCESS;
}

static inline cudaError_t symm_dev_alltoallv_on_stream_blocks(
    const symm_device_ctx &c, const symm_device_team &t, void *dst, uint64_t dst_cap,
    const void *src, const uint64_t *send_counts, size_t unit_bytes, uint64_t *recv_counts,
    uint64_t *recv_offsets, int *status, unsigned blocks, cudaStream_t stream) {
    const size_t smem = (size_t)3 * (size_t)(t.n_pes > 0 ? t.n_pes : 1) * sizeof(uint64_t);
    if (blocks == 1 || smem > (size_t)48 * 1024) {
        symm__alltoallv_kernel<SYMM_DEV_COLL_THREADS><<<1, SYMM_DEV_COLL_THREADS, 0, stream>>>(
            c, t, dst, dst_cap, src, send_counts, unit_bytes, recv_counts, recv_offsets, status);
        return cudaGetLastError();
    }
    if (blocks == 0) {
        int dev = 0, sms = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e != cudaSuccess) return e;
        blocks = sms > 0 ? (unsigned)sms : 1u;
    }
    symm_device_ctx ca = c;
    symm_device_team ta = t;
    void *args[] = {&ca, &ta, &dst, &dst_cap, (void *)&src, (void *)&send_counts, &unit_bytes,
                    &recv_counts, &recv_offsets, &status};
    return cudaLaunchCooperativeKernel((const void *)symm__alltoallv_grid_kernel<SYMM_DEV_COLL_THREADS>,
                                       dim3(blocks), dim3(SYMM_DEV_COLL_THREADS), args, smem,
                                       stream);
}

static inline cudaError_t symm_dev_alltoallv_on_stream(
    const symm_device_ctx &c, const symm_device_team &t, void *dst, uint64_t dst_cap,
    const void *src, const uint64_t *send_counts, size_t unit_bytes, uint64_t *recv_counts,
    uint64_t *recv_offsets, int *status, cudaStream_t stream) {
    return symm_dev_alltoallv_on_stream_blocks(c, t, dst, dst_cap, src, send_counts, unit_bytes,
                                               recv_counts, recv_offsets, status, 0, stream);
}

#undef SYMM__TEAM_BARRIER

#endif /* SYMM_SYMM_DEVICE_COLL_CUH */

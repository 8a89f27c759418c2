/*
 * symm — device collectives (CUDA C++, header-only; included by
 * symm_device.cuh, or include this header alone).
 *
 * Collectives over a device team (symm_device_team_get) called from inside a
 * kernel, on every team PE however it is reached (like the rest of the
 * device API): load/store for a PE with a peer_base, the calling block's
 * proxy ring for any other (a PE of another host; symm_device.cuh, docs/
 * PROXY.md). Every team PE runs the same sequence of collectives on a team,
 * each call made by one block (_block: every thread of the block, same
 * arguments) or one warp (_warp: all 32 lanes) per PE. No two collectives or
 * barriers run concurrently on one team (they share the team slot's barrier
 * flags, also used by the runtime's stream and host barriers, which they may
 * be mixed with in one order on every PE).
 *
 * Buffers are symmetric addresses (this PE's copy, as from symm_buf_ptr) of
 * the same size on every PE; nelems and root are the same on every PE. Sizes
 * are in elements of T (the *mem forms: bytes). No scratch memory is used:
 * every collective is
 *     barrier; move data to or from peers' copies; barrier
 * so on entry every PE's src is complete (as written before the call by any
 * thread whose writes the caller ordered before it, e.g. by __syncthreads or
 * a previous kernel) and no peer still uses its dst; on return dst holds the
 * result on this PE, every peer has finished reading this PE's src (it may be
 * reused at once) and writing this PE's dst.
 *
 * Peers behind the proxy. Which way each team PE goes is decided once a call
 * (one peer_base read a team PE); the load/store path is the same code as
 * when every PE is reachable. A proxied peer's piece moves as one put or get
 * posted to the calling block's ring (the opening barrier orders the block's
 * earlier writes before it) and completed by the closing barrier, which
 * quiets that ring before it announces (put/get/fcollect/alltoall/
 * broadcast/alltoallv; alltoallv reads a proxied peer's counts with one
 * proxied read each, up to this PE's). The reductions fetch a proxied peer's
 * elements chunk by chunk (SYMM__PX_CHUNK elements a thread, one get waited
 * for each, landing in this PE's dst, which only it writes during the call;
 * in place, its own src elements are read into registers first), combine in
 * the same team order and push the result to proxied peers with one put a
 * chunk. The barriers of a team with proxied PEs announce through the ring
 * (symm_device.cuh). Cost through the proxy: each proxied request is a round
 * trip to the proxy thread and over the transport (docs/PROXY.md "Figures"):
 * pieces overlap, a reduction's chunks do not.
 *
 * Every collective returns SYMM_SUCCESS, or SYMM_ERR_PEER_FAILED (the same in
 * every thread of the scope) when a peer PE died while it waited: the
 * context's fail_word (symm_device.cuh), which a runtime thread sets, ends
 * the barrier waits, and the ring ends a wait for a proxied request (the
 * ring's first failure is also in symm_ctx_async_error; a proxied request
 * that failed for another reason gives PEER_FAILED too); dst is then
 * undefined and the context unusable. A team PE that no route reaches
 * (no peer_base, and no ring this header can use) gives, before any
 * synchronisation, SYMM_ERR_ABI_MISMATCH for a context of another device
 * ABI or of a runtime older than 1.3 (as symm_dev_quiet(c)), and
 * SYMM_ERR_NOT_SUPPORTED for one without a proxy (GPUs of one host without
 * peer access).
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
 * read once from its owner and stored once at each destination; through the
 * proxy, see above). One block
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
    /* sync, and true in every thread when v is true in any */
    static __device__ __forceinline__ bool any(bool v) { return __syncthreads_or(v) != 0; }
};
struct symm__scope_warp {
    static __device__ __forceinline__ unsigned tid() { return symm__block_tid() & 31u; }
    static __device__ __forceinline__ unsigned nthr() { return 32u; }
    static __device__ __forceinline__ void sync() { __syncwarp(); }
    static __device__ __forceinline__ bool any(bool v) {
        __syncwarp(); /* memory order between the lanes (__any_sync has none) */
        return __any_sync(0xffffffffu, v) != 0;
    }
};

/* ------------------------------------------------------------------------ */
/* Team PEs reached through the proxy (internal)                             */
/* ------------------------------------------------------------------------ */

/* How the team's PEs are reached, decided once a call (one peer_base read a
 * team PE): 0 every one by load/store; 1 some through the calling block's
 * proxy ring; -1 some by neither (no ring this header can use). */
SYMM_DEV_FN int symm__coll_route(const symm_device_ctx &c, const symm_device_team &t) {
    if (!symm__team_proxied(c, t.n_pes, t.start, t.stride)) return 0;
    return symm__dev_ring(c) ? 1 : -1;
}

/* A put or get of n bytes between the local memory `local` and team-world PE
 * pe's copy of sym, through the calling block's ring: posted only (wait
 * false: it completes at the ring's next quiet, which the collective's
 * closing barrier performs), or posted and waited for. */
/* Posts out of line, with the ring and scalars as arguments (not the
 * context, which a call would copy to the stack): alltoallv's proxied reads
 * and gets, where this keeps the kernel's registers at those of its
 * load/store path (ptxas -v, sm_90: 48 for the block form, as before); in
 * the reductions the inline post needs fewer (docs/PROXY.md, "The device
 * collectives"). */
static __device__ __noinline__ symm_status symm__coll_ring_rma(const symm_ring *r, uint32_t op,
                                                               int pe, uint64_t off,
                                                               uint64_t local, uint64_t n,
                                                               bool wait) {
    if (!r) return SYMM_ERR_ABI_MISMATCH;
    symm_ring_req q;
    symm__ring_req_init(&q, op, pe);
    q.off = off;
    q.local = local;
    q.n = n;
    uint64_t t = 0;
    const symm_status st = symm_ring_post(r, &q, wait ? &t : (uint64_t *)0);
    return st != SYMM_SUCCESS || !wait ? st : symm_ring_wait(r, t);
}
static __device__ __noinline__ symm_status symm__coll_ring_g64(const symm_ring *r, int pe,
                                                               uint64_t off, uint64_t *v) {
    if (!r || !r->scratch) return SYMM_ERR_ABI_MISMATCH;
    uint64_t t = 0;
    symm_status st = symm_ring_claim(r, &t);
    if (st != SYMM_SUCCESS) return st;
    uint64_t *cell = symm_ring_cell(r, t);
    symm_ring_req q;
    symm__ring_req_init(&q, SYMM_RING_OP_GET, pe);
    q.off = off;
    q.local = (uint64_t)(uintptr_t)cell;
    q.n = sizeof(uint64_t);
    symm_ring_write(r, &q, t);
    st = symm_ring_wait(r, t + 1);
    *v = *(volatile uint64_t *)cell;
    return st;
}
SYMM_DEV_FN symm_status symm__coll_px_rma(const symm_device_ctx &c, uint32_t op, int pe,
                                          const void *sym, const void *local, size_t n,
                                          bool wait) {
    if (n == 0) return SYMM_SUCCESS;
    symm_ring_req q;
    symm__ring_req_init(&q, op, pe);
    q.off = symm__dev_off(c, sym);
    q.local = (uint64_t)(uintptr_t)local;
    q.n = n;
    return wait ? symm__px_post_wait(c, q) : symm__px_post(c, q);
}
/* The same out of line (where that needs fewer registers: alltoallv). */
SYMM_DEV_FN symm_status symm__coll_px_rma_nl(const symm_device_ctx &c, uint32_t op, int pe,
                                             const void *sym, const void *local, size_t n,
                                             bool wait) {
    if (n == 0) return SYMM_SUCCESS;
    return symm__coll_ring_rma(symm__dev_ring(c), op, pe, symm__dev_off(c, sym),
                               (uint64_t)(uintptr_t)local, n, wait);
}
/* pe's copy of the uint64_t at sym, through the ring (one round trip). */
SYMM_DEV_FN symm_status symm__coll_px_g64(const symm_device_ctx &c, int pe, const uint64_t *sym,
                                          uint64_t *v) {
    return symm__coll_ring_g64(symm__dev_ring(c), pe, symm__dev_off(c, sym), v);
}
/* A load that the proxy's writes cannot hide behind a stale L1 line (data a
 * proxied get left in local memory, read by threads other than the one whose
 * wait acquired it). */
template <typename T>
__device__ __forceinline__ T symm__coll_vload(const T *p) {
    typedef typename symm__uint<sizeof(T)>::type U;
    return symm__bitcast<T>(*(const volatile U *)p);
}

/* Team barrier shared by the threads of scope S: the block barrier itself,
 * or its steps with warp synchronisation. False (in every thread of the
 * scope) when a peer PE died (the context's fail_word), or when the ring's
 * quiet failed (team PEs reached through the proxy: the calling block's
 * earlier proxied requests complete before the announcement, as in the
 * block barrier). */
template <class S>
__device__ __forceinline__ bool symm__team_barrier_scope(const symm_device_ctx &c,
                                                         const symm_device_team &t) {
    if constexpr (std::is_same<S, symm__scope_block>::value) {
        return symm_dev_team_barrier_block(c, t) == SYMM_SUCCESS;
    } else {
        symm__world_strided w = {&c, t.start, t.stride};
        char *base = (char *)c.heap_base;
        uint64_t off = (uint64_t)t.slot * c.slot_bytes + SYMM_DEVICE_BARRIER_OFF;
        const bool px = symm__dev_ring(c) && symm__team_proxied(c, t.n_pes, t.start, t.stride);
        S::sync();
        if (px) {
            bool qerr = false;
            if (S::tid() == 0) qerr = symm_ring_quiet(symm__dev_ring(c)) != SYMM_SUCCESS;
            if (S::any(qerr)) return false;
        }
        uint64_t e = symm__barrier_epoch(base, off, t.my_pe) + 1;
        S::sync();
        const bool ok =
            px ? symm__barrier_arrive_wait_px(c, off, t.my_pe, t.n_pes, t.start, t.stride, e,
                                              S::tid(), S::nthr(), (int *)symm__fail_word(c),
                                              false)
               : symm__barrier_arrive_wait(base, off, t.my_pe, t.n_pes, w, e, S::tid(),
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
    bool px = false;
    const symm_status rs = symm__team_route(c, t.n_pes, t.start, t.stride, &px);
    if (rs != SYMM_SUCCESS) return rs;
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

/* Data movement with team PEs behind the proxy: a peer that is not load/store
 * reachable gets its piece as one put, or gives it as one get, posted to the
 * calling block's ring by one thread (piece k by thread k % nthr) and left
 * to complete at the closing barrier's quiet; load/store peers are copied as
 * before. SYMM__COLL_PX_END closes such a call: the barrier (the ring's
 * quiet first), then PEER_FAILED in every thread when a post failed. */
#define SYMM__COLL_PX_END(S, c, t, route, bad)                            \
    do {                                                                  \
        SYMM__TEAM_BARRIER(S, c, t);                                      \
        if ((route) > 0 && S::any(bad)) return SYMM_ERR_PEER_FAILED;      \
        return SYMM_SUCCESS;                                              \
    } while (0)

/* Every PE pulls root's src (one pass, spread over the PEs' links). */
template <class S>
__device__ __forceinline__ symm_status symm__broadcastmem(const symm_device_ctx &c,
                                                   const symm_device_team &t, void *dst,
                                                   const void *src, size_t nbytes, int root) {
    const int route = symm__coll_route(c, t);
    if (route < 0) return symm__dev_no_route(c);
    bool bad = false;
    SYMM__TEAM_BARRIER(S, c, t);
    if (!(t.my_pe == root && dst == src)) {
        const void *from = symm__team_ptr(c, t, src, root);
        if (from)
            symm__copy(dst, from, nbytes, S::tid(), S::nthr());
        else if (S::tid() == 0)
            bad = symm__coll_px_rma(c, SYMM_RING_OP_GET, symm_dev_team_world_pe(t, root), src,
                                    dst, nbytes, false) != SYMM_SUCCESS;
    }
    SYMM__COLL_PX_END(S, c, t, route, bad);
}

/* Every PE pushes its src into block my_pe of every PE's dst, starting with
 * the next PE so that the PEs' stores spread over the links. */
template <class S>
__device__ __forceinline__ symm_status symm__fcollectmem(const symm_device_ctx &c,
                                                  const symm_device_team &t, void *dst,
                                                  const void *src, size_t nbytes) {
    const int route = symm__coll_route(c, t);
    if (route < 0) return symm__dev_no_route(c);
    bool bad = false;
    SYMM__TEAM_BARRIER(S, c, t);
    char *mine = (char *)dst + (size_t)t.my_pe * nbytes;
    for (int k = 1; k <= t.n_pes; k++) {
        const int j = (t.my_pe + k) % t.n_pes;
        if (j == t.my_pe && mine == (const char *)src) continue; /* in place */
        char *to = symm__team_ptr(c, t, mine, j);
        if (to)
            symm__copy(to, src, nbytes, S::tid(), S::nthr());
        else if (S::tid() == (unsigned)k % S::nthr())
            bad |= symm__coll_px_rma(c, SYMM_RING_OP_PUT, symm_dev_team_world_pe(t, j), mine, src,
                                     nbytes, false) != SYMM_SUCCESS;
    }
    SYMM__COLL_PX_END(S, c, t, route, bad);
}

/* Block j of src goes to block my_pe of PE j's dst (push). */
template <class S>
__device__ __forceinline__ symm_status symm__alltoallmem(const symm_device_ctx &c,
                                                  const symm_device_team &t, void *dst,
                                                  const void *src, size_t nbytes) {
    const int route = symm__coll_route(c, t);
    if (route < 0) return symm__dev_no_route(c);
    bool bad = false;
    SYMM__TEAM_BARRIER(S, c, t);
    char *mine = (char *)dst + (size_t)t.my_pe * nbytes;
    for (int k = 1; k <= t.n_pes; k++) {
        const int j = (t.my_pe + k) % t.n_pes;
        const char *from = (const char *)src + (size_t)j * nbytes;
        char *to = symm__team_ptr(c, t, mine, j);
        if (to)
            symm__copy(to, from, nbytes, S::tid(), S::nthr());
        else if (S::tid() == (unsigned)k % S::nthr())
            bad |= symm__coll_px_rma(c, SYMM_RING_OP_PUT, symm_dev_team_world_pe(t, j), mine,
                                     from, nbytes, false) != SYMM_SUCCESS;
    }
    SYMM__COLL_PX_END(S, c, t, route, bad);
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
/* The same with op known at run time (symm__reduce_px). */
template <typename A>
__device__ __forceinline__ A symm__combine_rt(int op, A a, A b) {
    switch (op) {
    case SYMM_OP_SUM: return symm__combine<A, SYMM_OP_SUM>(a, b);
    case SYMM_OP_PROD: return symm__combine<A, SYMM_OP_PROD>(a, b);
    case SYMM_OP_MIN: return symm__combine<A, SYMM_OP_MIN>(a, b);
    case SYMM_OP_MAX: return symm__combine<A, SYMM_OP_MAX>(a, b);
    case SYMM_OP_AND: return symm__combine<A, SYMM_OP_AND>(a, b);
    case SYMM_OP_OR: return symm__combine<A, SYMM_OP_OR>(a, b);
    case SYMM_OP_XOR: return symm__combine<A, SYMM_OP_XOR>(a, b);
    default: return a;
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

/* Both reductions when some team PEs are reached through the proxy. This PE
 * reduces its range [lo, hi) (reduce: its segment, as symm__reduce_run;
 * reducescatter: all nelems of block my_pe) in chunks of SYMM__PX_CHUNK
 * elements a thread, the accumulators in registers: for each team PE in team
 * order, a load/store peer's elements are read in place, a proxied peer's
 * chunk is fetched (one get, waited for) into this PE's dst[i0, i1), which
 * only this PE writes during the call and whose src elements (in place) were
 * read into registers first; the result goes to dst[i0, i1) and (reduce) to
 * every peer's dst: stores to load/store peers, one put posted per proxied
 * peer (completed by the closing barrier's quiet). Same combining order as
 * the load/store path, so the results are bitwise the same. The op is an
 * argument, not a template parameter: one body a type and scope serves
 * every op (a kernel passing the op at run time compiled one body an op,
 * docs/PROXY.md "Compile time"); a constant op still folds to its combine. */
#ifndef SYMM__PX_CHUNK
#define SYMM__PX_CHUNK 2
#endif
template <class S, typename T, bool SCATTER>
__device__ __forceinline__ symm_status symm__reduce_px(const symm_device_ctx &c,
                                                    const symm_device_team &t, T *dst,
                                                    const T *src, size_t nelems, int op) {
    typedef symm__dacc<T> R;
    typedef typename R::type A;
    const int n = t.n_pes, me = t.my_pe;
    size_t lo = 0, hi = nelems;
    const T *in = src; /* symmetric: the elements this PE's range reads on every PE */
    if (SCATTER) {
        in = src + (size_t)me * nelems;
    } else {
        const size_t unit = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
        const size_t units = (nelems + unit - 1) / unit;
        const size_t per = (units + (size_t)n - 1) / (size_t)n * unit;
        lo = per * (size_t)me;
        hi = lo + per < nelems ? lo + per : nelems;
    }
    const unsigned tid = S::tid(), nthr = S::nthr();
    const size_t chunk = (size_t)nthr * SYMM__PX_CHUNK;
    bool bad = false;   /* a get failed (the same in every thread) */
    bool posterr = false; /* this thread's put post failed */
    SYMM__TEAM_BARRIER(S, c, t);
    for (size_t i0 = lo; i0 < hi; i0 += chunk) {
        const size_t i1 = hi - i0 > chunk ? i0 + chunk : hi;
        A own[SYMM__PX_CHUNK], acc[SYMM__PX_CHUNK];
#pragma unroll
        for (int k = 0; k < SYMM__PX_CHUNK; k++) {
            const size_t i = i0 + tid + (size_t)k * nthr;
            if (i < i1) {
                const T v = symm__coll_vload(in + i);
                own[k] = R::load(&v);
            }
        }
        for (int j = 0; j < n; j++) {
            const T *from = j == me ? in : symm__team_ptr(c, t, in, j);
            if (!from) { /* through the proxy, into dst[i0, i1) */
                S::sync(); /* every thread is done with the previous peer's chunk */
                bool err = false;
                if (tid == 0)
                    err = symm__coll_px_rma(c, SYMM_RING_OP_GET, symm_dev_team_world_pe(t, j),
                                            in + i0, dst + i0, (i1 - i0) * sizeof(T),
                                            true) != SYMM_SUCCESS;
                if (S::any(err)) {
                    bad = true;
                    break;
                }
                from = dst; /* staged */
            }
#pragma unroll
            for (int k = 0; k < SYMM__PX_CHUNK; k++) {
                const size_t i = i0 + tid + (size_t)k * nthr;
                if (i >= i1) continue;
                A x = own[k];
                if (j != me) {
                    const T v = symm__coll_vload(from + i);
                    x = R::load(&v);
                }
                acc[k] = j == 0 ? x : symm__combine_rt<A>(op, acc[k], x);
            }
        }
        if (bad) break; /* every thread of the scope agrees (S::any) */
        S::sync(); /* every thread is done with the staged chunk */
#pragma unroll
        for (int k = 0; k < SYMM__PX_CHUNK; k++) {
            const size_t i = i0 + tid + (size_t)k * nthr;
            if (i < i1) dst[i] = R::out(acc[k]);
        }
        if (SCATTER) continue;
        bool posted = false;
        for (int k = 1; k < n; k++) {
            const int j = (me + k) % n;
            T *to = symm__team_ptr(c, t, dst, j);
            if (to) {
#pragma unroll
                for (int m = 0; m < SYMM__PX_CHUNK; m++) {
                    const size_t i = i0 + tid + (size_t)m * nthr;
                    if (i < i1) to[i] = R::out(acc[m]);
                }
                continue;
            }
            if (!posted) S::sync(); /* dst[i0, i1) written before the puts read it */
            posted = true;
            if (tid == (unsigned)k % nthr)
                posterr |= symm__coll_px_rma(c, SYMM_RING_OP_PUT, symm_dev_team_world_pe(t, j),
                                             dst + i0, dst + i0, (i1 - i0) * sizeof(T),
                                             false) != SYMM_SUCCESS;
        }
    }
    SYMM__COLL_PX_END(S, c, t, 1, bad || posterr);
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
    const int route = symm__coll_route(c, t); /* once a call */
    bool op_ok = op >= SYMM_OP_SUM && op <= SYMM_OP_MAX;
    if constexpr (!symm__is_float_type<T>::value) op_ok = op >= SYMM_OP_SUM && op <= SYMM_OP_XOR;
    if (!op_ok) return op >= SYMM_OP_AND && op <= SYMM_OP_XOR ? SYMM_ERR_NOT_SUPPORTED
                                                              : SYMM_ERR_INVALID_ARG;
    if (route < 0) return symm__dev_no_route(c);
    /* the op checked above: one proxied body for every op (symm__reduce_px) */
    if (route > 0) return symm__reduce_px<S, T, SCATTER>(c, t, dst, src, nelems, op);
#define SYMM__RED_CASE(OP)                                                          \
    case OP:                                                                        \
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
    return SYMM_ERR_INVALID_ARG; /* not reached: op_ok */
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
    const int route = symm__coll_route(c, t);
    if (route < 0) return symm__dev_no_route(c);
    bool pxerr = false; /* a proxied read or post of this thread failed */
    SYMM__TEAM_BARRIER(symm__scope_block, c, t);
    /* recv_offsets holds, until the copies are done, where PE j packed its
     * units for this PE */
    for (int j = (int)tid; j < n; j += (int)nthr) {
        const uint64_t *cj = symm__team_ptr(c, t, send_counts, j);
        uint64_t off = 0, cnt = 0;
        if (cj) {
            for (int q = 0; q < me; q++)
                off = symm__sat_add(off, *(volatile const uint64_t *)(cj + q));
            cnt = *(volatile const uint64_t *)(cj + me);
        } else { /* through the proxy: PE j's counts up to this PE's, one read each */
            const int pe = symm_dev_team_world_pe(t, j);
            for (int q = 0; q <= me && !pxerr; q++) {
                uint64_t v = 0;
                pxerr = symm__coll_px_g64(c, pe, send_counts + q, &v) != SYMM_SUCCESS;
                if (q < me) off = symm__sat_add(off, v);
                else cnt = v;
            }
        }
        recv_counts[j] = cnt;
        recv_offsets[j] = off;
    }
    bool counts_failed = false;
    if (route > 0) counts_failed = symm__scope_block::any(pxerr);
    else __syncthreads();
    if (tid == 0) {
        uint64_t total = 0;
        for (int j = 0; j < n; j++) total = symm__sat_add(total, recv_counts[j]);
        sh_bad = counts_failed ? SYMM__A2AV_PEER_FAILED
                               : symm__a2av_judge(recv_counts, recv_offsets, n, total, dst_cap,
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
            const char *srcj = (const char *)symm__team_ptr(c, t, src, j);
            if (srcj)
                symm__copy((char *)dst + at * unit_bytes, srcj + recv_offsets[j] * unit_bytes,
                           cnt * unit_bytes, tid, nthr);
            else if (tid == (unsigned)k % nthr) /* one get, completed by the closing quiet */
                pxerr |= symm__coll_px_rma_nl(c, SYMM_RING_OP_GET, symm_dev_team_world_pe(t, j),
                                              (const char *)src + recv_offsets[j] * unit_bytes,
                                              (char *)dst + at * unit_bytes, cnt * unit_bytes,
                                              false) != SYMM_SUCCESS;
        }
    }
    __syncthreads(); /* every thread is done with recv_offsets */
    if (tid == 0) symm__prefix_sums(recv_counts, recv_offsets, n);
    SYMM__TEAM_BARRIER(symm__scope_block, c, t);
    if (route > 0 && (symm__scope_block::any(pxerr) || sh_bad == SYMM__A2AV_PEER_FAILED))
        return SYMM_ERR_PEER_FAILED;
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
    /* team PEs behind the proxy (the caller refuses a route of -1 before the
     * grid starts: symm__alltoallv_grid_kernel): block 0 alone reads their
     * counts and fetches their pieces, each as one get on its ring, which its
     * closing barrier quiets */
    const bool px = symm__coll_route(c, t) > 0;
    bool pxerr = false;
    if (blockIdx.x == 0) {
        ok = symm__barrier_block(c, t.slot, me, n, t.start, t.stride, timeout_ns, err) ==
             SYMM_SUCCESS;
        for (int j = (int)tid; j < n; j += (int)nthr) {
            uint64_t cj = 0, o = 0;
            if (ok) {
                const uint64_t *pj = symm__team_ptr(c, t, send_counts, j);
                if (pj) {
                    cj = *(volatile const uint64_t *)(pj + me);
                    for (int q = 0; q < me; q++)
                        o = symm__sat_add(o, *(volatile const uint64_t *)(pj + q));
                } else {
                    const int pe = symm_dev_team_world_pe(t, j);
                    for (int q = 0; q <= me && !pxerr; q++) {
                        uint64_t v = 0;
                        pxerr = symm__coll_px_g64(c, pe, send_counts + q, &v) != SYMM_SUCCESS;
                        if (q < me) o = symm__sat_add(o, v);
                        else cj = v;
                    }
                    if (pxerr) cj = o = 0;
                }
            }
            recv_counts[j] = cj;
            recv_offsets[j] = o; /* for now: where PE j packed this PE's units */
        }
        /* a failed read: no block copies (every count 0), and the call fails */
        if (px && symm__scope_block::any(pxerr)) {
            for (int j = (int)tid; j < n; j += (int)nthr) recv_counts[j] = 0;
            ok = false;
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
        const char *srcj = (const char *)symm__team_ptr(c, t, src, j);
        if (a < b && srcj) /* a proxied peer's piece: block 0, below */
            symm__copy((char *)dst + a, srcj + soff[j] * unit_bytes + (a - jl), b - a, tid, nthr);
    }
    if (px && blockIdx.x == 0 && bytes) {
        for (int k = 0; k < n; k++) {
            const int j = (me + k) % n;
            if (tid != (unsigned)k % nthr || !cnt[j] || symm__team_ptr(c, t, src, j)) continue;
            pxerr |= symm__coll_px_rma_nl(c, SYMM_RING_OP_GET, symm_dev_team_world_pe(t, j),
                                          (const char *)src + soff[j] * unit_bytes,
                                          (char *)dst + roff[j] * unit_bytes, cnt[j] * unit_bytes,
                                          false) != SYMM_SUCCESS;
        }
    }
    grid.sync(); /* every block is done with the peers' src and with recv_offsets */
    if (blockIdx.x != 0) return 0;
    if (px && symm__scope_block::any(pxerr)) ok = false;
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
    const int route = symm__coll_route(c, t); /* the same in every block */
    if (route < 0) {
        if (status && blockIdx.x == 0 && threadIdx.x == 0) *status = (int)symm__dev_no_route(c);
        return;
    }
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
#undef SYMM__COLL_PX_END

#endif /* SYMM_SYMM_DEVICE_COLL_CUH */

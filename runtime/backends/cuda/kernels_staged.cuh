/*
 * Staged reductions (symm_k_streduce_<dtype>_<op>: all-reduce and
 * reduce-scatter above the LL sizes), with the landing and the in-place
 * form of 2 PEs (swap) and the peer form of larger teams: the device code
 * and SYMM__K_STREDUCE, which the kernel files kernels_staged_{8,16,32,64}.cu
 * instantiate for the dtypes of one element size each
 * (SYMM__REDUCE_PAIRS_<bits>, kernels_common.cuh), so that the heaviest
 * form builds in four pieces in parallel. kernels.cu says
 * how kernel files are built and loaded; the rest of the shared device code
 * is in kernels_common.cuh.
 */
#ifndef SYMM_CUDA_KERNELS_STAGED_CUH
#define SYMM_CUDA_KERNELS_STAGED_CUH

#include "kernels_common.cuh"

/* ------------------------------------------------------------------------ */
/* Staged reductions                                                         */
/* ------------------------------------------------------------------------ */
/* All-reduce and reduce-scatter above the LL sizes, in one kernel with no
 * barrier: every PE stores the part of its input that team PE j reduces
 * (slice j) into j's scratch (the slot's staged area, beyond the heap:
 * cuda_coll.c) and raises a flag; j waits for the flags, reduces its slice from
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
 * between two blocks of one index; every block must be resident (cuda_coll_staged.c
 * launches at most one per SM). Flags are 64-bit tags (E << 24) + s + 1 of
 * the call's epoch E and the step: they only grow, so a waiter compares with
 * >= and never clears anything. The receivers reduce step s only after their
 * own senders have read step s of the input (a shared counter): in place,
 * the result overwrites input that a peer may still need.
 *
 * Epoch and parity as in the LL collectives (kernels_common.cuh "LL"): E =
 * the team's barrier epoch counter + 1, stored back by the grid's last
 * block; a call uses parity E & 1 of the area, and the same argument shows
 * that the other parity is never still being read: a PE finishes a call
 * only after every peer has sent it all of its slice, which a peer does
 * only after its previous call ended. The gathered results go straight into
 * the peers' dst: PE j's dst is free once j has sent its first piece (j's
 * kernel runs, so j's earlier work on its stream has completed), and a
 * piece of j's dst that is also j's input (in place) was sent before its
 * result comes back.
 *
 * Landing (land: 2 PEs, dst not overlapping the input, cuda_tuning.c): steps from
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

/* Sender s's region in receiver r's staged area of the parity at par. */
__device__ __forceinline__ uint64_t symm__st_reg(const symm__kstaged_params &p, uint64_t par, int s,
                                                 int r) {
    return par + (uint64_t)(s < r ? s : s - 1) * p.st_region;
}
/* The PEs a reduced piece goes to (bit j: PE j): with gather every team
 * PE, else this one. */
__device__ __forceinline__ unsigned symm__st_dests(const symm__kstaged_params &p) {
    return p.gather ? (1u << p.team.n) - 1 : 1u << p.team.me;
}

/* Reduce ne elements of the n inputs in[0..n) (team order) into offset
 * out_off of the heaps of the team PEs in the mask to (bit j: PE j): thread
 * gt of GR. 16-byte vectors where p.vec says the offsets allow them. */
template <typename T, typename Op>
__device__ __forceinline__ void symm__st_combine_range(const symm__kstaged_params &p,
                                                       const char *const *in, uint64_t out_off,
                                                       uint64_t ne, unsigned gt, unsigned GR,
                                                       unsigned to) {
    typedef typename symm__acc<T>::type A;
    constexpr int V = 16 / (int)sizeof(T);
    constexpr uint64_t es = sizeof(T);
    const Op op;
    const int n = p.team.n, me = p.team.me;
    const uint64_t nv = p.vec ? ne / V : 0;
    uint64_t v = gt;
    /* 2 PEs: U vectors of each input in flight (U = 2 but for 32-bit types:
     * with 4, the 16-bit types' widened vectors and the 64-bit min / max
     * spilled registers) */
    constexpr int U = sizeof(T) == 4 ? 4 : 2;
    if (n == 2 && to == 1u << me) {
        char *const out = p.team.base[me] + out_off;
        for (; v + (U - 1) * GR < nv; v += U * GR) {
            uint4 raw[U][2];
#pragma unroll
            for (int u = 0; u < U; u++) {
                raw[u][0] = __ldcg((const uint4 *)(in[0] + (v + u * GR) * 16));
                raw[u][1] = __ldcg((const uint4 *)(in[1] + (v + u * GR) * 16));
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                *(uint4 *)(out + (v + u * GR) * 16) = symm__combine16<T, Op>(raw[u], 2);
        }
    }
    for (; v < nv; v += GR) {
        uint4 raw[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < n) raw[j] = __ldcg((const uint4 *)(in[j] + v * 16));
        const uint4 r = symm__combine16<T, Op>(raw, n);
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < n && (to >> j & 1u)) *(uint4 *)(p.team.base[j] + out_off + v * 16) = r;
    }
    for (uint64_t i = nv * V + gt; i < ne; i += GR) {
        A acc = symm__to_acc<T>(symm__ldcg_elem<T>(in[0] + i * es));
#pragma unroll
        for (int j = 1; j < 8; j++)
            if (j < n) acc = op(acc, symm__to_acc<T>(symm__ldcg_elem<T>(in[j] + i * es)));
        const T r = symm__from_acc<T>(acc);
#pragma unroll
        for (int j = 0; j < 8; j++)
            if (j < n && (to >> j & 1u)) *(T *)(p.team.base[j] + out_off + i * es) = r;
    }
}

/* Swap: the in-place all-reduce of 2 PEs (swap: cuda_tuning.c) without staging.
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
            *(uint4 *)(buf + v * 16) = symm__combine16<T, Op>(raw, 2);
        }
        for (uint64_t i = nv * V + gt; i < ne; i += GR) {
            const A x = symm__to_acc<T>(*(const T *)(own + i * es));
            const A y = symm__to_acc<T>(symm__ldcg_elem<T>(buf + i * es));
            *(T *)(buf + i * es) = symm__from_acc<T>(me == 0 ? op(x, y) : op(y, x));
        }
    }
    if (!ok && gt == 0) saved = SYMM__ST_DEAD;
}

/* Blocks dealt out to the peers (peer: the staging holds the whole call,
 * so no slot is reused and nothing waits for credit; on 2 PEs only an
 * all-reduce in halves, with gather; the layout of the pushing all-gather,
 * kernels.cu symm_k_gather). Block x
 * serves the y-th peer, y = x % (n - 1), team PE q = (me + 1 + y) % n, as
 * that peer's xi-th block, xi = x / (n - 1), of Gx. The whole block first
 * sends every step s: bytes [at, at + chunk) of q's slice, at = (s * Gx +
 * xi) * chunk, into q's region for this PE, slot s, each piece followed by
 * FLAG[xi] there; then, step by step, once every sender's FLAG[xi] has the
 * step, the n - 1 blocks (xi, *) of this PE reduce its own slice's piece
 * together, block (xi, y) the y-th of n - 1 parts, into this PE's dst (with
 * gather: every PE's). Gather: after its last result a block raises
 * DONE[xi * (n - 1) + y] at every peer and waits for the same word from
 * every peer, whose block (xi, y) wrote the same part of the same pieces of
 * its own slice here. Epoch, parity and giving up as in symm__st_reduce. */
template <typename T, typename Op>
__device__ __forceinline__ void symm__st_peer(const symm__kstaged_params &p, char *mine,
                                              uint64_t par, uint64_t e24) {
    constexpr uint64_t es = sizeof(T);
    const int n = p.team.n, me = p.team.me, m = n - 1;
    const unsigned gt = threadIdx.x, GR = blockDim.x;
    const unsigned xi = blockIdx.x / (unsigned)m, y = blockIdx.x % (unsigned)m;
    const uint64_t Gx = gridDim.x / (unsigned)m;
    const int q = (me + 1 + (int)y) % n;
    const uint64_t K = p.chunk, P = p.steps;
    auto reg = [&](int s_, int r_) { return symm__st_reg(p, par, s_, r_); };
    auto slot = [&](uint64_t s) -> uint64_t { return SYMM__ST_HDR + (s * Gx + xi) * K; };
    /* thread t < n - 1 looks after the t-th peer, pt */
    const bool server = (int)gt < m;
    const int pt = (me + 1 + (int)gt) % n;
    const uint64_t q_bytes = p.cnt[q] * es, my_bytes = p.cnt[me] * es;
    const char *const to_q = mine + p.src_off + (uint64_t)q * p.src_j_stride;
    const char *const my_src = mine + p.src_off + (uint64_t)me * p.src_j_stride;
    char *const q_reg = p.team.base[q] + reg(me, q);
    for (uint64_t s = 0; s < P; s++) {
        const uint64_t at = (s * Gx + xi) * K;
        if (at < q_bytes)
            symm__copy(q_reg + slot(s), to_q + at, q_bytes - at < K ? q_bytes - at : K, gt, GR);
        __syncthreads();
        if (gt == 0) {
            symm__fence_acq_rel_sys();
            symm__st_relaxed_u64((uint64_t *)(q_reg + SYMM__ST_FLAG) + xi, e24 + s + 1);
        }
    }
    bool ok = true;
    for (uint64_t s = 0; ok && s < P; s++) {
        const bool w = !server || symm__wait_ge_u64((const uint64_t *)(mine + reg(pt, me) +
                                                                      SYMM__ST_FLAG) + xi,
                                                    e24 + s + 1, p.timeout_ns, p.err);
        ok = __syncthreads_and(w) != 0;
        const uint64_t at = (s * Gx + xi) * K;
        if (!ok || at >= my_bytes) continue;
        const uint64_t ne = (my_bytes - at < K ? my_bytes - at : K) / es;
        constexpr uint64_t L = SYMM__ST_ALIGN / es; /* part y of the piece, in whole lines */
        const uint64_t part = ((ne + m - 1) / m + L - 1) / L * L;
        const uint64_t lo = y * part < ne ? y * part : ne;
        const uint64_t cnt = ne - lo < part ? ne - lo : part;
        const char *in[8];
#pragma unroll
        for (int j = 0; j < 8; j++)
            in[j] = (j == me || j >= n ? my_src + at : mine + reg(j, me) + slot(s)) + lo * es;
        if (cnt)
            symm__st_combine_range<T, Op>(p, in, p.dst_off + at + lo * es, cnt, gt, GR,
                                          symm__st_dests(p));
    }
    if (ok && p.gather && P) { /* every peer's results for these parts are in */
        __syncthreads();
        bool w = true;
        if (server) {
            symm__fence_acq_rel_sys();
            symm__st_relaxed_u64((uint64_t *)(p.team.base[pt] + reg(me, pt) + SYMM__ST_DONE) +
                                     xi * m + y,
                                 e24 + P);
            w = symm__wait_ge_u64((const uint64_t *)(mine + reg(pt, me) + SYMM__ST_DONE) + xi * m + y,
                                  e24 + P, p.timeout_ns, p.err);
        }
        __syncthreads_and(w);
    }
}

template <typename T, typename Op>
__device__ __forceinline__ void symm__st_reduce(const symm__kstaged_params &p) {
    constexpr uint64_t es = sizeof(T);
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
    /* thread gt < n - 1 of a group looks after the flags of one peer: pj */
    const bool server = (int)gt < n - 1;
    const int pj = (int)gt < me ? (int)gt : (int)gt + 1;
#define ST_REG(s_, r_) symm__st_reg(p, par, (s_), (r_))
    const uint64_t e24 = e << 24;
    if (p.peer) {
        symm__st_peer<T, Op>(p, mine, par, e24);
    } else if (p.swap) {
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
                const char *in[8];
#pragma unroll
                for (int j = 0; j < 8; j++)
                    in[j] = j == me  ? my_src + at
                            : j >= n ? my_src
                            : landed ? mine + p.dst_off + at /* the peer's piece, where the result goes */
                                     : mine + ST_REG(j, me) + slot;
                symm__st_combine_range<T, Op>(p, in, p.dst_off + at,
                                              (my_bytes - at < K ? my_bytes - at : K) / es, gt,
                                              SYMM__ST_GROUP, symm__st_dests(p));
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

/* symm_k_streduce_<dtype>_<op>: names built by symm__cu_reduce_fn (cuda_coll_common.c). */
#define SYMM__K_STREDUCE(tname, T, oname, Op)                                               \
    extern "C" __global__ void __launch_bounds__(2 * SYMM__ST_GROUP, 1)                     \
        symm_k_streduce_##tname##_##oname(const __grid_constant__ symm__kstaged_params p) {  \
        symm__st_reduce<T, Op>(p);                                                          \
    }

#endif /* SYMM_CUDA_KERNELS_STAGED_CUH */

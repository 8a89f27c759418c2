/*
 * LL128 reductions (symm_k_l8reduce_<dtype>_<op>: all-reduce and
 * reduce-scatter), one-shot LL with 128-byte lines. One kernel file of the
 * CUDA backend (kernels.cu says how they are built and loaded); the LL line
 * helpers it shares with kernels_ll.cu, and the rest of the shared device
 * code, are in kernels_common.cuh.
 */
#include "kernels_common.cuh"

/* ------------------------------------------------------------------------ */
/* LL128 reductions                                                          */
/* ------------------------------------------------------------------------ */
/* The LL idea with 128-byte lines: 15 data words and a flag word (the call's
 * epoch E, 64 bits), the 8 lanes of a line storing it in one warp
 * instruction (st.v2.u64 each) and reading it in one. NVLink delivers such a
 * line whole: `probe_cuda lines`, one H200 rewriting lines in another's
 * memory while that one read them, saw no torn line (docs/GPU-RESULTS.md
 * "2026-11-27: LL128 reductions", call 1). So a receiver that sees E in a
 * line's flag word holds its 120 data bytes, with 15 of every 16 words on
 * the link carrying data (LL: half), no fence and no separate flag. Nothing
 * is cleared: the lines of a parity carry the epoch of the call that wrote
 * them last, smaller than any later call's (a team's lines are zeroed when
 * it takes the slot; E >= 1), and the data words cannot fake a flag, since
 * the lines live apart from any other data. Two parities as for LL
 * (kernels_common.cuh "LL"): every PE needs lines from every peer to finish
 * a call.
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

/* symm_k_l8reduce_<dtype>_<op>: names built by symm__cu_reduce_fn (cuda_coll_common.c). */
#define SYMM__K_L8REDUCE(tname, T, oname, Op) \
    SYMM__K_REDUCE_FORM(l8reduce, symm__kl8_params, symm__l8_reduce, tname, T, oname, Op)
SYMM__REDUCE_PAIRS(SYMM__K_L8REDUCE)

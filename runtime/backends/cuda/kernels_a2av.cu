/*
 * symm_alltoallv / symm_alltoallv_on_stream on the CUDA backend: the grid
 * form of the variable-size all-to-all of symm_device_coll.cuh (block 0
 * reads the counts from the peers, every block pulls an equal share of the
 * received bytes), launched cooperatively by cuda_a2av.c, with the
 * runtime's timeout on its two team barriers and the caller's src capacity.
 * A failure other than a barrier's (which sets the error word) leaves its
 * reason in the pinned word for the host (cuda_a2av.c).
 */
#include "kernels_common.cuh"

static_assert(CU_A2AV_DST == SYMM__A2AV_DST && CU_A2AV_PEER_SRC == SYMM__A2AV_PEER_SRC &&
                  CU_A2AV_OWN_SRC == SYMM__A2AV_OWN_SRC,
              "kernel_params.h and symm_device_coll.cuh name the alltoallv reasons alike");

extern "C" __global__ void __launch_bounds__(SYMM__A2AV_THREADS)
    symm_k_alltoallv(const __grid_constant__ symm__ka2av_params p) {
    const int why = symm__alltoallv_grid(p.ctx, p.team, p.dst, p.dst_cap, p.src, p.src_cap,
                                         p.send_counts, p.unit_bytes, p.recv_counts,
                                         p.recv_offsets, p.timeout_ns, p.err);
    if (blockIdx.x == 0 && threadIdx.x == 0 && why != 0 && why != SYMM__A2AV_PEER_FAILED)
        atomicExch_system(p.word, why);
}

/* ------------------------------------------------------------------------ */
/* The LL form (teams the LL lines serve; cuda_tuning.c chooses)             */
/* ------------------------------------------------------------------------ */
/* No team barrier and no grid sync: the grid form's fixed cost is two team
 * barriers, two grid syncs and a round trip to read the peers' counts.
 * Here every PE pushes to each peer, in the LL lines of the team's slot
 * (kernels_common.cuh "LL": flags in the data, two parities, the team's
 * epoch), a header of three lines: its count for that peer, where those
 * units start in its src, and how they travel (kernel_params.h
 * SYMM__A2L_*). A piece of up to inline_max bytes follows in the lines
 * themselves; the receiver copies it out of its own memory. A larger one
 * the receiver pulls from the sender's src, as the grid form does, and
 * then acks it in a line of the sender's; the sender's grid ends only when
 * every pulled piece is acked, so its src may be reused on return as
 * before. Every block waits (in its own memory) for the headers, judges
 * them as the grid form does (symm__a2av_judge: the same verdict in every
 * block), and takes a grid-wide share of the inline lines and an equal
 * share of the pulled bytes (its own piece among them). The last block
 * (the slot's ticket) acks, waits for the acks, clears the header lines,
 * writes the receive counts and offsets and any reason, and advances the
 * epoch. Every call hears from every peer (its header), which is what the
 * two parities need. A dead peer: the waits give up as the LL waits do,
 * no block copies anything, and the error word says why.
 * Launched plainly (with PDL), not cooperatively: it needs no co-residency.
 * Every block sends all it sends before it waits, and waits only for the
 * peers' block 0 (the headers), for the peer blocks that send its line
 * indices (with grids of one size, as by default, the blocks of its own
 * index), and, in the last block alone, for the peers' last blocks. Blocks
 * start in index order, so when other kernels hold SMs the lowest
 * unfinished blocks and the peer blocks they wait for still get to run. */
extern "C" __global__ void __launch_bounds__(SYMM__A2AV_THREADS)
    symm_k_alltoallv_ll(const __grid_constant__ symm__ka2avll_params p) {
    symm__k_enter();
    const symm__ll_call c(p);
    const int me = p.team.me, n = p.team.n;
    const unsigned tid = threadIdx.x, lane = tid & 31u;
    const uint64_t unit = p.unit_bytes ? p.unit_bytes : 1;
    const uint64_t gt = (uint64_t)blockIdx.x * blockDim.x + tid;
    const uint64_t nthr = (uint64_t)gridDim.x * blockDim.x;
    /* what this PE sends (s*) and receives (r*) per team PE; roff: where
     * PE j's units land in dst */
    __shared__ uint64_t scnt[8], ssoff[8], rcnt[8], rsoff[8], roff[8];
    __shared__ unsigned smode[8], rmode[8];
    __shared__ int bad, own_bad, dead; /* bad: a SYMM__A2AV_* reason, -1: a peer is gone */
    char *const mine = c.mine;
    const char *src = mine + p.src_off;
    char *dst = mine + p.dst_off;
    if (tid == 0) {
        const uint64_t *sc = (const uint64_t *)(mine + p.scount_off);
        uint64_t o = 0;
        for (int j = 0; j < n; j++) {
            const uint64_t k = sc[j];
            scnt[j] = k;
            ssoff[j] = o;
            const bool within = o <= p.src_cap && k <= p.src_cap - o;
            smode[j] = !within ? SYMM__A2L_NONE
                       : k <= p.inline_max / unit ? SYMM__A2L_INLINE
                                                  : SYMM__A2L_PULL;
            o = symm__sat_add(o, k);
        }
        own_bad = o > p.src_cap;
        dead = 0;
    }
    __syncthreads();
    /* the headers: block 0, a lane a peer */
    if (blockIdx.x == 0 && tid < (unsigned)n && (int)tid != me) {
        const int j = (int)tid;
        char *r = p.team.base[j] + c.region_off(p, me, j);
        /* a pulled piece: whatever wrote the src before this grid, before
         * the peer hears it may read it */
        if (smode[j] == SYMM__A2L_PULL) symm__fence_acq_rel_sys();
        symm__ll_put(r + 16 * SYMM__A2L_COUNT, scnt[j], c.f);
        symm__ll_put(r + 16 * SYMM__A2L_SOFF, ssoff[j], c.f);
        symm__ll_put(r + 16 * SYMM__A2L_MODE, smode[j], c.f);
    }
    /* the inline pieces, a line a thread of the grid */
    for (int k = 1; k < n; k++) {
        const int j = (me + k) % n;
        if (smode[j] != SYMM__A2L_INLINE) continue;
        const uint64_t bytes = scnt[j] * unit, units = (bytes + 7) / 8;
        const char *from = src + ssoff[j] * unit;
        char *r = p.team.base[j] + c.region_off(p, me, j) + 16 * SYMM__A2L_DATA;
        for (uint64_t u = gt; u < units; u += nthr)
            symm__ll_put(r + 16 * u, symm__ll_ld(from + 8 * u, bytes - 8 * u), c.f);
    }
    /* every block reads the headers for itself, in its own memory */
    symm__ll_waiter w = {p.timeout_ns, p.err, 0, false};
    if (tid < 32) {
        const bool want = lane < (unsigned)n && (int)lane != me;
        const char *r = mine + (want ? c.region_off(p, (int)lane, me) : 0);
        uint64_t k = 0, o = 0, m = 0;
        const bool ok = w.get(want, r + 16 * SYMM__A2L_COUNT, c.f, k) &&
                        w.get(want, r + 16 * SYMM__A2L_SOFF, c.f, o) &&
                        w.get(want, r + 16 * SYMM__A2L_MODE, c.f, m);
        if (!ok) {
            if (lane == 0) dead = 1;
        } else if (want) {
            rcnt[lane] = k;
            rsoff[lane] = o;
            rmode[lane] = m > SYMM__A2L_NONE ? SYMM__A2L_NONE : (unsigned)m;
        } else if ((int)lane == me) { /* its own piece: a local copy */
            rcnt[me] = scnt[me];
            rsoff[me] = ssoff[me];
            rmode[me] = smode[me] == SYMM__A2L_NONE ? SYMM__A2L_NONE : SYMM__A2L_PULL;
        }
    }
    __syncthreads();
    if (tid == 0) {
        int b = -1;
        if (!dead) {
            const uint64_t total = symm__prefix_sums(rcnt, roff, n);
            b = 0;
            for (int j = 0; j < n; j++)
                if (rmode[j] == SYMM__A2L_NONE) b = SYMM__A2AV_PEER_SRC;
            if (!b) b = symm__a2av_judge(rcnt, rsoff, n, total, p.dst_cap, p.src_cap, unit);
        }
        bad = b;
    }
    __syncthreads();
    const int verdict = bad;
    /* the inline pieces: every line is waited for and cleared, and copied
     * out when the verdict allows (warp-uniform: lanes past the end wait
     * for nothing) */
    if (verdict >= 0) {
        const uint64_t most = (p.inline_max + 7) / 8; /* a piece's lines, whatever the count says */
        for (int k = 1; k < n && !w.dead; k++) {
            const int j = (me + n - k) % n;
            if (rmode[j] != SYMM__A2L_INLINE) continue;
            const uint64_t bytes = rcnt[j] * unit;
            const uint64_t units = (bytes + 7) / 8 < most ? (bytes + 7) / 8 : most;
            char *r = mine + c.region_off(p, j, me) + 16 * SYMM__A2L_DATA;
            for (uint64_t u = gt; u - lane < units && !w.dead; u += nthr) {
                const bool have = u < units;
                uint64_t d = 0;
                if (!w.get(have, r + 16 * u, c.f, d)) break;
                if (!have) continue;
                symm__ll_clear(r + 16 * u);
                if (verdict == 0) symm__ll_st(dst + roff[j] * unit + 8 * u, d, bytes - 8 * u);
            }
        }
    }
    /* this PE's own piece and the pulled ones: an equal share of their
     * bytes a block, cut at 256-byte multiples, at least
     * SYMM__A2AV_MIN_SHARE (as the grid form) */
    if (verdict == 0) {
        uint64_t bulk = 0;
        for (int j = 0; j < n; j++)
            if (rmode[j] == SYMM__A2L_PULL) bulk += rcnt[j] * unit;
        uint64_t chunk = ((bulk + gridDim.x - 1) / gridDim.x + 255) / 256 * 256;
        if (chunk < SYMM__A2AV_MIN_SHARE) chunk = SYMM__A2AV_MIN_SHARE;
        const uint64_t lo0 = (uint64_t)blockIdx.x * chunk;
        const uint64_t lo = lo0 < bulk ? lo0 : bulk, hi = bulk - lo > chunk ? lo + chunk : bulk;
        uint64_t at = 0;
        for (int k = 0; k < n && lo < hi; k++) {
            const int j = (me + k) % n;
            if (rmode[j] != SYMM__A2L_PULL) continue;
            const uint64_t bytes = rcnt[j] * unit, a = lo > at ? lo : at;
            const uint64_t b = hi < at + bytes ? hi : at + bytes;
            if (a < b)
                symm__copy(dst + roff[j] * unit + (a - at),
                           p.team.base[j] + p.src_off + rsoff[j] * unit + (a - at), b - a, tid,
                           blockDim.x);
            at += bytes;
        }
    }
    if (w.dead) dead = 1;
    __syncthreads();
    const int last = symm__grid_last(mine, p.area_off, dead == 0, false);
    if (last == 0) return;
    /* the last block: every other block is done with the lines and the peers' src */
    if (tid < 32 && verdict >= 0) {
        const int j = (int)lane;
        const bool peer = j < n && j != me;
        /* the peers whose pieces this PE pulled (or would have) may reuse their src */
        if (peer && rmode[j] == SYMM__A2L_PULL)
            symm__ll_put(p.team.base[j] + c.region_off(p, me, j) + 16 * SYMM__A2L_ACK, 1, c.f);
        /* and this PE's src may be reused once every peer that pulls from it says so */
        symm__ll_waiter wa = {p.timeout_ns, p.err, 0, last != 1};
        const bool want = peer && smode[j] == SYMM__A2L_PULL;
        char *r = mine + (peer ? c.region_off(p, j, me) : 0);
        uint64_t d = 0;
        if (wa.get(want, r + 16 * SYMM__A2L_ACK, c.f, d) && want) symm__ll_clear(r + 16 * SYMM__A2L_ACK);
        if (wa.dead && lane == 0) dead = 1;
        if (peer) {
            symm__ll_clear(r + 16 * SYMM__A2L_COUNT);
            symm__ll_clear(r + 16 * SYMM__A2L_SOFF);
            symm__ll_clear(r + 16 * SYMM__A2L_MODE);
        }
    }
    __syncthreads();
    uint64_t *rc = (uint64_t *)(mine + p.rcount_off);
    for (int j = (int)tid; j < n; j += (int)blockDim.x) {
        rc[j] = verdict >= 0 ? rcnt[j] : 0;
        rc[n + j] = verdict >= 0 ? roff[j] : 0;
    }
    if (tid == 0) {
        const int why = verdict > 0 ? verdict : verdict == 0 && own_bad ? SYMM__A2AV_OWN_SRC : 0;
        if (why && !dead) atomicExch_system(p.word, why);
        symm__barrier_advance(mine, p.area_off, me, c.e);
    }
}

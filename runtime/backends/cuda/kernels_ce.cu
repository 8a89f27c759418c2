/*
 * The copy-engine reduce-scatter and all-reduce (symm_k_cereduce_<dtype>_<op>,
 * symm_k_ce_wait; cuda_coll_ce.c "Copy-engine reduce-scatter" says who sends what,
 * when). One kernel file of the CUDA backend (kernels.cu says how kernel
 * files are built and loaded); shared device code in kernels_common.cuh.
 *
 * The bytes move on the copy engines: in phase k each PE copies its block
 * for PE (me + 1 + k) mod n into that PE's slot k, the last phase in several
 * copies, and a stream write after each copy counts it in the receiver's
 * arrive[k]. This kernel runs meanwhile on the receiver's stream and
 * reduces: piece c of the round (the elements of the last phase's copy c)
 * once every slot holds it, in team order (the own block for j == me), as
 * every reduction here does. So all but the last piece are reduced while
 * later copies still fly. At the end of the round the grid's last block
 * puts arrive[] back to 0, tells every sender its slot is free (done), and
 * waits until every receiver of this PE's blocks has said the same: then no
 * copy of the next round or call can land in a slot still being read (the
 * next round's copies are ordered after this kernel on the stream), and the
 * flags hold only constants, so a CUDA graph may replay the call.
 *
 * Every slot hears from its sender every round, even when the block is
 * empty (an all-reduce's last slice can be, and so can a round past its
 * end): a copy of 0 bytes, i.e. only the signal. Without it a PE with
 * nothing to receive ran its round's end at once, a round ahead of the
 * others, and its "done" for round r + 1 landed in a sender's done word
 * still set from round r, which that sender then put back to 0: the sender
 * waited for it forever (4 PEs, 65537 int32 in 64 KiB slots, gpu_coll_ce_n4).
 * With the signal, a PE's round r + 1 ends only after every sender's round
 * r + 1 copies, which each sender enqueues after its own round r ended.
 *
 * The all-reduce (cuda_coll_ce.c coll_ce) then copies each PE's slice to every
 * peer in the same turns, counted in ag[k], and symm_k_ce_wait below waits
 * for the peers' slices. The all-gather and all-to-all (cuda_coll_ce.c
 * coll_ce_exchange) are only that last phase, after the team's barrier.
 *
 * Giving up: every wait checks *err and the timeout (symm__wait_ge_u64); a
 * block that gave up skips the rest, and the last block then sends nothing.
 */
#include "kernels_common.cuh"

/* Team PE j's input of the round: the own block, or slot (me - j - 1) mod n */
__device__ __forceinline__ const char *symm__ce_input(const symm__kce_params &p, int j) {
    const int n = p.team.n, me = p.team.me;
    char *mine = p.team.base[me];
    if (j == me) return mine + p.src_off;
    return mine + p.ce_off + SYMM__CE_HDR + (uint64_t)((me - j - 1 + n) % n) * p.ce_slot;
}

template <typename T>
__device__ __forceinline__ uint4 symm__ce_load(const char *in, bool own, uint64_t i) {
    const uint4 *q = (const uint4 *)(in + i * sizeof(T));
    return own ? *q : __ldcg(q); /* a slot: written by another GPU's copy engine */
}

/* symm__wait_ge_u64 with naps: after a few rounds a poller sleeps between
 * reads (32 ns doubling to 1 us), as the LL waiters do ("polite polling",
 * kernels_common.cuh): a block's poller per SM re-reading the line the
 * copy stream writes would otherwise load the L2 that the copy engines'
 * incoming bytes land in. */
__device__ __forceinline__ bool symm__ce_wait(const uint64_t *w, uint64_t want, uint64_t timeout_ns,
                                              int *err) {
    unsigned spins = 0, polls = 0;
    uint64_t t0 = 0;
    while (symm__ld_relaxed_u64(w) < want) {
        symm__poll_nap<5>(polls++);
        if ((timeout_ns || err) && symm__spin_give_up(spins, t0, timeout_ns, err)) return false;
    }
    (void)symm__ld_acquire_u64(w);
    return true;
}

template <typename T, typename Op>
__device__ __forceinline__ void symm__cereduce(const symm__kce_params &p) {
    typedef typename symm__acc<T>::type A;
    symm__k_enter();
    const int n = p.team.n, me = p.team.me;
    char *mine = p.team.base[me];
    char *hdr = mine + p.ce_off;
    uint64_t *arrive = (uint64_t *)(hdr + SYMM__CE_ARRIVE);
    const Op op;
    constexpr int V = 16 / (int)sizeof(T);
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t nthr = (size_t)gridDim.x * blockDim.x;
    T *out = (T *)(mine + p.dst_off);
    const char *in[8];
#pragma unroll
    for (int j = 0; j < 8; j++) in[j] = j < n ? symm__ce_input(p, j) : nullptr;
    __shared__ int ok_s;
    bool ok = true;
    /* an empty block still waits for its senders' signals (one each: cuda_coll_ce.c
     * sends a copy of 0 bytes), so that no PE ends a round before hearing
     * from every sender in it (the file's comment) */
    const uint64_t pieces = p.ne ? (p.ne + p.piece - 1) / p.piece : 1;
    for (uint64_t c = 0; c < pieces; c++) {
        if (threadIdx.x == 0) {
            bool good = true;
            for (int k = 0; k < n - 1 && good; k++)
                good = symm__ce_wait(&arrive[k], k == n - 2 ? c + 1 : 1, p.timeout_ns, p.err);
            ok_s = good;
        }
        __syncthreads();
        ok = ok_s != 0;
        __syncthreads();
        if (!ok) break;
        const uint64_t lo = c * p.piece, hi = min(p.ne, lo + p.piece);
        /* pieces start on whole 16-byte vectors (cuda_coll_ce.c makes them lines) */
        const uint64_t vhi = p.vec ? lo + (hi - lo) / V * V : lo;
        for (uint64_t i = lo + tid * V; i < vhi; i += nthr * V) {
            uint4 raw[8];
#pragma unroll
            for (int j = 0; j < 8; j++)
                if (j < n) raw[j] = symm__ce_load<T>(in[j], j == me, i);
            *(uint4 *)(out + i) = symm__combine16<T, Op>(raw, n);
        }
        for (uint64_t i = vhi + tid; i < hi; i += nthr) {
            A acc = symm__to_acc<T>(*(const T *)(in[0] + i * sizeof(T)));
#pragma unroll
            for (int j = 1; j < 8; j++)
                if (j < n) acc = op(acc, symm__to_acc<T>(*(const T *)(in[j] + i * sizeof(T))));
            out[i] = symm__from_acc<T>(acc);
        }
    }

    /* the round's end: the grid's last block (a ticket in the header; it
     * puts it back to 0) frees this PE's slots and waits for its receivers */
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *ticket = (unsigned *)(hdr + SYMM__CE_TICKET);
        const unsigned old = atomicAdd(ticket, ok ? 1u : CU_TICKET_FAILED + 1u);
        last = 0;
        if ((old & (CU_TICKET_FAILED - 1u)) == gridDim.x - 1) {
            *(volatile unsigned *)ticket = 0;
            last = ok && old < CU_TICKET_FAILED ? 1 : -1;
        }
    }
    __syncthreads();
    if (last != 1 || threadIdx.x != 0) return;
    for (int k = 0; k < n - 1; k++) *(volatile uint64_t *)&arrive[k] = 0;
    /* the resets (and every block's reads, which the ticket ordered before
     * this) before any sender hears that its slot is free */
    symm__fence_acq_rel_sys();
    for (int k = 0; k < n - 1; k++) {
        const int s = (me - 1 - k + n) % n; /* sent into slot k: its phase k */
        symm__st_relaxed_u64((uint64_t *)(p.team.base[s] + p.ce_off + SYMM__CE_DONE) + k, 1);
    }
    uint64_t *done = (uint64_t *)(hdr + SYMM__CE_DONE);
    for (int k = 0; k < n - 1; k++)
        if (!symm__wait_ge_u64(&done[k], 1, p.timeout_ns, p.err)) return;
    for (int k = 0; k < n - 1; k++) *(volatile uint64_t *)&done[k] = 0;
}

/* The all-reduce's last step (cuda_coll_ce.c coll_ce): wait until every peer's
 * slice has landed in this PE's dst (ag[k] from the phase-k sender), then
 * put the words back to 0. No peer writes them again before this PE's next
 * all-reduce has passed its reduce-scatter, which its stream runs after this
 * kernel. One thread. */
extern "C" __global__ void symm_k_ce_wait(const __grid_constant__ symm__kce_params p) {
    symm__k_enter();
    if (threadIdx.x != 0) return;
    uint64_t *ag = (uint64_t *)(p.team.base[p.team.me] + p.ce_off + SYMM__CE_AG);
    for (int k = 0; k < p.team.n - 1; k++)
        if (!symm__ce_wait(&ag[k], 1, p.timeout_ns, p.err)) return;
    for (int k = 0; k < p.team.n - 1; k++) *(volatile uint64_t *)&ag[k] = 0;
}

/* symm_k_cereduce_<dtype>_<op>: names built by symm__cu_reduce_fn (cuda_coll_common.c).
 * At most SYMM__CE_THREADS threads a block (cuda_coll_ce.c launches that many): the 8-bit
 * min / max took 134-136 registers without the bound, too many for 512. */
#define SYMM__K_CEREDUCE(tname, T, oname, Op)                                                  \
    extern "C" __global__ void __launch_bounds__(SYMM__CE_THREADS)                             \
        symm_k_cereduce_##tname##_##oname(const __grid_constant__ symm__kce_params p) {        \
        symm__cereduce<T, Op>(p);                                                             \
    }
SYMM__REDUCE_PAIRS(SYMM__K_CEREDUCE)

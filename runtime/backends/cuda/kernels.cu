/*
 * Kernels of the CUDA backend, compiled by nvcc at build time into fatbins
 * that are embedded in the runtime (bin2c.py) and loaded with cuModuleLoadData,
 * one module per kernel file (meson.build, cuda.c). This file holds the small
 * kernels: point-to-point copies, stores, signals, waits and atomics, the
 * stream barriers and the data movement of broadcast / fcollect / collect /
 * alltoall. The reductions are in kernels_reduce.cu (barrier algorithm),
 * kernels_ll.cu (one-shot LL, with the LL copy), kernels_ll128.cu,
 * kernels_ce.cu (the copy-engine reduce-scatter) and
 * kernels_staged_{8,16,32,64}.cu (code in kernels_staged.cuh); the device
 * code they share is in kernels_common.cuh.
 * Every entry is extern "C" so that the host finds it by name; parameter
 * structs mirror those of the host code (kernel_params.h is their single source).
 *
 * Barriers here are the ones of symm_device.cuh (same flags and epochs).
 */
#include "kernels_common.cuh"

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

/* A stream form to a PE of another host (backend op ring_stream): one thread
 * claims a ticket on a proxy ring, writes the request (an inline value goes
 * to the ticket's scratch cell first). With a wake word (word not NULL) it
 * names the word in the ticket's notify cell first and ends: the stream
 * waits for the word (cuStreamWaitValue32, no SM held) and the proxy sets it
 * when the request finished; if no ticket can be had (stopped proxy, lost
 * job) the thread sets it. Without, the thread waits until the proxy
 * finished it. Either way the stream goes on after the operation completed
 * remotely. A failure (dead PE, stopped proxy) ends the wait; the proxy
 * records it (symm_ctx_async_error). */
extern "C" __global__ void symm_k_ring(const __grid_constant__ symm_ring r,
                                       const __grid_constant__ symm_ring_req q, uint64_t inl,
                                       uint32_t n_inline, uint64_t *notify, uint32_t *word,
                                       uint64_t wake_cell) {
    symm__k_enter();
    if (threadIdx.x != 0) return;
    uint64_t t = 0;
    if (symm_ring_claim(&r, &t) != SYMM_SUCCESS) {
        if (word) {
            *(volatile uint32_t *)word = 1u;
            __threadfence_system();
        }
        return;
    }
    symm_ring_req x = q;
    if (n_inline) {
        uint64_t *cell = symm_ring_cell(&r, t);
        *(volatile uint64_t *)cell = inl;
        x.local = (uint64_t)(uintptr_t)cell;
    }
    if (word) *(volatile uint64_t *)(notify + (t & (r.depth - 1u))) = wake_cell;
    __threadfence_system(); /* the cells before the request's words */
    symm_ring_write(&r, &x, t);
    if (!word) (void)symm_ring_wait(&r, t + 1);
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

/* The stream waits until *sig compares true (one thread spins). It gives up
 * when the host saw a PE die (CU_ERR_PEER_FAILED) or on timeout, which it
 * reports as CU_ERR_WAIT_TIMEOUT: a point-to-point wait leaves the teams in
 * step, unlike a team wait's CU_ERR_TIMEOUT. */
extern "C" __global__ void symm_k_wait(const uint64_t *sig, uint32_t cmp, uint64_t value,
                                       uint64_t timeout_ns, int *err) {
    symm__k_enter();
    unsigned spins = 0;
    uint64_t t0 = 0;
    while (!symm_dev_compare(symm__ld_acquire_u64(sig), (int)cmp, value)) {
        if (symm__spin_give_up(spins, t0, timeout_ns, NULL)) {
            atomicCAS_system(err, 0, CU_ERR_WAIT_TIMEOUT);
            break;
        }
        if (spins % SYMM_DEVICE_FAIL_POLL == 0 && *(volatile int *)err == CU_ERR_PEER_FAILED)
            break;
    }
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

/* Before a blocking collective (ops->coll_agree, kernel_params.h): every PE
 * publishes its words in its own record, the team's barrier orders them
 * before every read (a release by the announcing threads after the block's
 * sync; acquire loads and a block sync on the way out), and each PE reads
 * every record into pinned memory, then says so in *done. The host spins on
 * that word rather than on the stream (the collective it launches next
 * follows this kernel on the stream anyway), which made an agree cheaper on
 * one H200 (docs/DECISIONS.md "Blocking calls: agreement, lanes, timeouts";
 * docs/GPU-RESULTS.md "2026-11-29: the agree's cost"). Two parities by
 * epoch: a PE can start the next agree only after a team operation this PE
 * took part in, or the very next epoch. */
extern "C" __global__ void symm_k_agree(const __grid_constant__ symm__kagree_params p) {
    symm__k_enter();
    const int me = p.team.me, n = p.team.n;
    char *mine = p.team.base[me];
    const uint64_t e = symm__barrier_epoch(mine, p.area_off, me) + 1;
    const uint64_t rec = p.rec_off + (e & 1) * 8 * CU_AGREE_WORDS;
    const uint64_t tag = (e & 0xffffffffull) << 32;
    if (threadIdx.x < CU_AGREE_WORDS) {
        const uint64_t w = p.words[threadIdx.x];
        ((volatile uint64_t *)(mine + rec))[threadIdx.x] =
            threadIdx.x == 0 ? tag | (w & 0xffffffffull) : w;
    }
    __syncthreads();
    const bool ok = symm__barrier_arrive_wait(mine, p.area_off, me, n,
                                              symm__world_table<64>{&p.team}, e, threadIdx.x,
                                              blockDim.x, p.timeout_ns, p.err, true);
    __syncthreads();
    for (int j = (int)threadIdx.x; j < n; j += (int)blockDim.x) {
        const volatile uint64_t *r = (const volatile uint64_t *)(p.team.base[j] + rec);
        uint64_t w[CU_AGREE_WORDS];
        for (int k = 0; k < CU_AGREE_WORDS; k++) w[k] = ok ? r[k] : ~0ull;
        if ((w[0] & ~0xffffffffull) != tag)
            for (int k = 0; k < CU_AGREE_WORDS; k++) w[k] = ~0ull;
        for (int k = 0; k < CU_AGREE_WORDS; k++) p.out[(uint64_t)j * CU_AGREE_WORDS + k] = w[k];
        __threadfence_system(); /* the records before *done, for the host */
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        symm__barrier_advance(mine, p.area_off, me, e);
        __threadfence_system();
        *(volatile uint64_t *)p.done = p.seq;
    }
}

/* ------------------------------------------------------------------------ */
/* Data movement of broadcast / fcollect / collect / alltoall                */
/* ------------------------------------------------------------------------ */
/* Pair j: copy len bytes from
 *   src_off + me * src_me_stride + j * src_j_stride  of PE j's heap (pull) or
 *                                                    of this PE's (push)
 * to
 *   dst_off + me * dst_me_stride + j * dst_j_stride  of this PE's heap (pull)
 *                                                    or of PE j's (push).
 * With only_j set every block copies that pair. Otherwise blocks [0, self_bx)
 * copy this PE's own pair and the rest are dealt out to the n - 1 peers in
 * turn (peer_bx each; the host gives the local copy fewer SMs than a link).
 * Pairs whose source and destination coincide are skipped. (cuda_tuning.c picks
 * push or pull, cuda_coll_barrier.c the blocks: docs/DECISIONS.md "Barrier
 * algorithms".) */
extern "C" __global__ void symm_k_gather(const __grid_constant__ symm__kgather_params p) {
    symm__k_enter();
    const bool ok = !p.enter || symm__coll_enter(p.team, p.area_off, p.timeout_ns, p.err);
    const int me = p.team.me, n = p.team.n;
    int j = p.only_j;
    unsigned x = blockIdx.x, gx = gridDim.x;
    if (j < 0 && x < p.self_bx) {
        j = me;
        gx = p.self_bx;
    } else if (j < 0) {
        x -= p.self_bx;
        j = (me + 1 + (int)(x % (unsigned)(n - 1))) % n; /* peers from me + 1 on, in turn */
        x /= (unsigned)(n - 1);
        gx = p.peer_bx;
    }
    const uint64_t s_at = p.src_off + (uint64_t)me * p.src_me_stride + (uint64_t)j * p.src_j_stride;
    const uint64_t d_at = p.dst_off + (uint64_t)me * p.dst_me_stride + (uint64_t)j * p.dst_j_stride;
    if (ok && j < n && p.len != 0) {
        const char *src = p.team.base[p.push ? me : j] + s_at;
        char *dst = p.team.base[p.push ? j : me] + d_at;
        if (src != dst)
            symm__copy(dst, src, p.len, (size_t)x * blockDim.x + threadIdx.x, (size_t)gx * blockDim.x);
    }
    if (p.leave) symm__coll_leave(p.team, p.area_off, ok, p.timeout_ns, p.err);
}

/*
 * probe_cuda: what the platform itself allows, measured without symm.
 *
 * One process drives two GPUs (peer access on, one host thread per GPU where
 * both take part; the mesh section drives all of them, up to 8) and measures
 * the floors the CUDA backend's design rests on:
 *
 *   launch   host time and GPU time per call of each way to enqueue work
 *            (kernel launch, launch with programmatic dependent launch,
 *            cuMemcpyAsync local/peer, stream memory ops), 2000 back-to-back
 *   latency  one enqueue + cuStreamSynchronize, median of 2000
 *   barrier  two-GPU stream barriers built in different ways, 2000
 *            back-to-back on both GPUs at once
 *   copy     GPU0 -> GPU1 bandwidth of the copy engine, an SM copy loop, and
 *            a Hopper bulk-copy (TMA) pipeline, plus write-only variants that
 *            show what the link takes; every copy is verified
 *   mesh     every GPU sending to every other at once (all GPUs, up to 8,
 *            released together by a host flag): per-GPU egress bandwidth of
 *            SM push/pull and copy-engine push/pull for 256 MiB and 16 MiB
 *            per GPU, which bounds the bus bandwidth of all-gather,
 *            reduce-scatter and all-reduce; every variant is verified
 *   floor    the least an all-reduce of S bytes can take on all the GPUs (up
 *            to 8): each sends 2 S / n to every peer (what any all-reduce
 *            must move, however it is split) and all meet in one barrier,
 *            per call in CUDA graphs of 20 calls as bench_coll_stream times
 *            a call; several ways to move the bytes (SM loops, copy engine,
 *            both at once), then what an all-reduce adds without its
 *            arithmetic (a hello before writing into a peer; results that
 *            wait for the peer's input), S = 4, 16 and 64 MiB; every copy
 *            verified
 *   rsce     a reduce-scatter (f32 sum, 128 and 256 MiB, all the GPUs) whose
 *            bytes the copy engine moves, one peer after another, with SM
 *            additions as each copy lands, beside the pulling form; verified
 *   lines    whether a 128-byte line one warp instruction stores reaches the
 *            peer whole (what a flag-in-every-line protocol such as NCCL's
 *            LL128 needs): torn lines seen by a reader on the peer GPU
 *
 *   probe_cuda [sections...]     (default: all; PROBE_SPIN=1 makes the
 *                                 contexts spin-wait instead of the default)
 *
 * Build: nvcc -O2 -std=c++17 -arch=sm_90 probe_cuda.cu -o probe_cuda -lcuda
 * NVLink multicast is never used.
 */
#include <cuda.h>
#include <cuda_runtime.h>

/* runtime/backends/cuda: the runtime's barrier kernels and copy loop
 * (header-only device code; no symm library is linked) */
#include "kernel_barrier.cuh"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                              \
    do {                                                                                   \
        cudaError_t e_ = (x);                                                              \
        if (e_ != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)
#define CD(x)                                                                   \
    do {                                                                        \
        CUresult r_ = (x);                                                      \
        if (r_ != CUDA_SUCCESS) {                                               \
            const char *s_ = "?";                                               \
            cuGetErrorString(r_, &s_);                                          \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_);      \
            std::exit(1);                                                       \
        }                                                                       \
    } while (0)

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}
static void row(const char *sec, const std::string &name, double v, const char *unit,
                const std::string &note = "") {
    printf("| %s | %s | %.3f %s | %s |\n", sec, name.c_str(), v, unit, note.c_str());
    fflush(stdout);
}

/* ---------------------------------------------------------------- kernels */
__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
__device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;"); }
__device__ __forceinline__ void st_release(uint64_t *p, uint64_t v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_relaxed(uint64_t *p, uint64_t v) {
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t ld_acquire(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ uint64_t ld_relaxed(const uint64_t *p) {
    uint64_t v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ void fence_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

__global__ void k_empty() {}
__global__ void k_params3(void *a, void *b, size_t n) {
    if (n == 1234567) *(int *)a = *(int *)b;
}
struct big_params {
    char *base[64];
    uint64_t x[2];
};
__global__ void k_big(big_params p) {
    if (p.x[0] == 1234567) *p.base[0] = 1;
}
__global__ void k_pdl_empty() {
    pdl_trigger();
    pdl_wait();
}
__global__ void k_store8(uint64_t *dst, const uint64_t *src) { *dst = *src; }
__global__ void k_store8_pdl(uint64_t *dst, const uint64_t *src) {
    pdl_trigger();
    pdl_wait();
    *dst = *src;
}
/* symm__copy_vec (symm_device.cuh) is the runtime's and the device API's
 * copy loop: 4 x 16-byte loads in flight per thread, then the stores */
template <bool PDL>
__global__ void k_copy(uint4 *d, const uint4 *s, size_t n) {
    if (PDL) {
        pdl_trigger();
        pdl_wait();
    }
    symm__copy_vec(d, s, n, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                   (size_t)gridDim.x * blockDim.x);
}
/* block-chunked copy like symm_dev_putmem_block called by G blocks */
__global__ void k_copy_chunked(uint4 *d, const uint4 *s, size_t n) {
    size_t chunk = (n + gridDim.x - 1) / gridDim.x, off = blockIdx.x * chunk;
    if (off >= n) return;
    symm__copy_vec(d + off, s + off, chunk < n - off ? chunk : n - off, threadIdx.x, blockDim.x);
}
__global__ void k_store_only(uint4 *d, size_t n) {
    size_t nthr = (size_t)gridDim.x * blockDim.x;
    uint4 v = make_uint4(threadIdx.x, blockIdx.x, 7, 9);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += nthr) d[i] = v;
}

/* Hopper bulk copies (cp.async.bulk), one issuing thread per block. */
__device__ __forceinline__ unsigned smem_u32(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned cnt) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(cnt) : "memory");
}
__device__ __forceinline__ void mbar_expect(uint64_t *b, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ bool mbar_try(uint64_t *b, unsigned parity) {
    unsigned ok;
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(ok)
        : "r"(smem_u32(b)), "r"(parity)
        : "memory");
    return ok;
}
__device__ __forceinline__ void bulk_load(void *sdst, const void *gsrc, unsigned bytes,
                                          uint64_t *b) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_u32(sdst)),
        "l"(gsrc), "r"(bytes), "r"(smem_u32(b))
        : "memory");
}
__device__ __forceinline__ void bulk_store(void *gdst, const void *ssrc, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gdst),
                 "r"(smem_u32(ssrc)), "r"(bytes)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void bulk_wait_all() {
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

/* chunks of C bytes, S stages of shared memory; chunk k of this block is
 * blockIdx.x + k * gridDim.x */
__global__ void k_tma_copy(char *d, const char *s, size_t n, unsigned C, unsigned S) {
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) uint64_t bars[16];
    if (threadIdx.x != 0) return;
    for (unsigned i = 0; i < S; i++) mbar_init(&bars[i], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    size_t nch = (n + C - 1) / C;
    size_t K = nch > blockIdx.x ? (nch - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    auto chunk = [&](size_t k) { return (size_t)blockIdx.x + k * gridDim.x; };
    auto bytes = [&](size_t k) { size_t r = n - chunk(k) * C; return (unsigned)(r < C ? r : C); };
    for (size_t k = 0; k < K && k < S; k++) {
        mbar_expect(&bars[k], bytes(k));
        bulk_load(smem + k * C, s + chunk(k) * C, bytes(k), &bars[k]);
    }
    for (size_t k = 0; k < K; k++) {
        unsigned st = (unsigned)(k % S), par = (unsigned)((k / S) & 1);
        while (!mbar_try(&bars[st], par)) {
        }
        bulk_store(d + chunk(k) * C, smem + st * C, bytes(k));
        if (k >= 1 && k - 1 + S < K) {
            bulk_wait_read<1>(); /* store k-1 has read its stage */
            size_t r = k - 1 + S;
            unsigned rs = (unsigned)((k - 1) % S);
            mbar_expect(&bars[rs], bytes(r));
            bulk_load(smem + rs * C, s + chunk(r) * C, bytes(r), &bars[rs]);
        }
    }
    bulk_wait_all();
}
__global__ void k_tma_store_only(char *d, size_t n, unsigned C) {
    extern __shared__ __align__(128) unsigned char smem[];
    if (threadIdx.x != 0) return;
    size_t nch = (n + C - 1) / C;
    for (size_t c = blockIdx.x; c < nch; c += gridDim.x) {
        size_t r = n - c * C;
        bulk_store(d + c * C, smem, (unsigned)(r < C ? r : C));
        bulk_wait_read<4>();
    }
    bulk_wait_all();
}

__global__ void k_fill(unsigned *p, size_t n, unsigned seed) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned)(i * 2654435761u) ^ seed;
}
__global__ void k_check(const unsigned *p, size_t n, unsigned seed, unsigned long long *bad) {
    unsigned long long b = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        b += p[i] != ((unsigned)(i * 2654435761u) ^ seed);
    if (b) atomicAdd(bad, b);
}

/* mesh section: holds its stream until the host writes epoch e to gate[0]
 * (host-pinned, mapped), so that what follows starts on every GPU together;
 * after 10 s it sets gate[1] and lets the stream go rather than hang the GPU */
__global__ void k_gate(volatile unsigned *gate, unsigned e) {
    uint64_t t0 = symm__globaltimer();
    while (gate[0] < e)
        if (symm__globaltimer() - t0 > 10000000000ull) {
            gate[1] = 1;
            break;
        }
}
/* mesh section: the blocks of row blockIdx.y copy pair y's n uint4 with the
 * runtime's copy loop */
static const int MESH_MAX = 8;
struct mesh_copy_params {
    uint4 *d[MESH_MAX - 1];
    const uint4 *s[MESH_MAX - 1];
    size_t n;
};
__global__ void k_mesh_copy(const __grid_constant__ mesh_copy_params p) {
    symm__copy_vec(p.d[blockIdx.y], p.s[blockIdx.y], p.n,
                   (size_t)blockIdx.x * blockDim.x + threadIdx.x, (size_t)gridDim.x * blockDim.x);
}

/* rsce section: f32 reduce-scatter pieces. Element i of what GPU g holds for
 * GPU r is a small integer, so every sum is exact. */
__device__ __host__ inline float rs_val(size_t i, unsigned g, unsigned r) {
    return (float)((i * 7 + g * 131 + r * 17) & 1023);
}
__global__ void k_rs_fill(float *p, size_t n, unsigned g, unsigned r) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = rs_val(i, g, r);
}
__global__ void k_rs_check(const float *p, size_t n, unsigned r, unsigned ngpu, unsigned long long *bad) {
    unsigned long long b = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float e = 0;
        for (unsigned g = 0; g < ngpu; g++) e += rs_val(i, g, r);
        b += p[i] != e;
    }
    if (b) atomicAdd(bad, b);
}
/* dst = a + b, n float4 */
__global__ void k_rs_add(float4 *dst, const float4 *a, const float4 *b, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 x = a[i], y = b[i];
        dst[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
/* The same additions in one kernel that waits for each copy's flag (written
 * by the sender's copy stream with cuStreamWriteValue64 into this GPU's
 * memory) instead of a stream event: copy (k, c) of split[k] copies adds
 * slot k's part c into dst. nap: sleep between polls. */
struct rs_flag_params {
    float4 *dst;
    const float4 *own;
    const float4 *slot[MESH_MAX - 1];
    const unsigned long long *flag; /* [k]: copies of phase k landed */
    int nphases, last_split, nap;
    size_t n, step; /* float4 of a pair; of each part of the last phase */
};
__global__ void k_rs_flag(const __grid_constant__ rs_flag_params p) {
    for (int k = 0; k < p.nphases; k++) {
        const int parts = k == p.nphases - 1 ? p.last_split : 1;
        for (int c = 0; c < parts; c++) {
            if (threadIdx.x == 0) {
                unsigned polls = 0;
                while (*(volatile const unsigned long long *)&p.flag[k] < (unsigned long long)(c + 1)) {
                    if (p.nap && polls >= 8) __nanosleep(polls - 8 >= 5 ? 1024u : 32u << (polls - 8));
                    polls++;
                }
                __threadfence();
            }
            __syncthreads();
            const size_t lo = parts == 1 ? 0 : c * p.step, hi = parts == 1 ? p.n : min(p.n, lo + p.step);
            const float4 *a = k == 0 ? p.own : p.dst;
            for (size_t i = lo + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < hi;
                 i += (size_t)gridDim.x * blockDim.x) {
                float4 x = a[i], y = __ldcg(&p.slot[k][i]);
                p.dst[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
            }
            __syncthreads();
        }
    }
}
/* dst = own + the peers' pieces, read from the peers (the pulling form) */
struct rs_pull_params {
    float4 *dst;
    const float4 *own;
    const float4 *peer[MESH_MAX - 1];
    int npeers;
    size_t n;
};
__global__ void k_rs_pull(const __grid_constant__ rs_pull_params p) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < p.n; i += (size_t)gridDim.x * blockDim.x) {
        float4 x = p.own[i];
        for (int j = 0; j < p.npeers; j++) {
            float4 y = p.peer[j][i];
            x = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        }
        p.dst[i] = x;
    }
}

/* barrier kernels: flags[0..] on each GPU; PE me writes epoch e into the
 * peer's slot `me` and waits for its own slot `peer` to reach e. */
enum { BAR_CUR, BAR_REL, BAR_NOFENCE };
template <int KIND, bool PDL>
__global__ void k_bar(uint64_t *mine, uint64_t *theirs, int me, int peer, uint64_t e) {
    if (PDL) {
        pdl_trigger();
        pdl_wait();
    }
    if (KIND == BAR_CUR) {
        /* epoch read from memory, full fence; counter next to the flags as in
         * the runtime's layout */
        const int ci = me;
        uint64_t ep = *(volatile uint64_t *)&mine[ci] + 1;
        fence_sys();
        if (threadIdx.x == 0) st_relaxed(&theirs[me], ep);
        if (threadIdx.x == 0) {
            while (ld_relaxed(&mine[peer]) < ep) {
            }
            (void)ld_acquire(&mine[peer]);
            *(volatile uint64_t *)&mine[ci] = ep;
        }
    } else if (threadIdx.x == 0) {
        if (KIND == BAR_REL)
            st_release(&theirs[me], e);
        else
            st_relaxed(&theirs[me], e);
        while (ld_relaxed(&mine[peer]) < e) {
        }
        (void)ld_acquire(&mine[peer]);
    }
}

/* The runtime's stream barrier kernels (kernel_barrier.cuh, as kernels.cu
 * instantiates them), and the 8-PE one reading its block after the wait. */
template <int N>
__global__ void k_bar_regs(const __grid_constant__ symm__kbarrier_params<N> p) {
    symm__kbarrier_regs(p);
}
__global__ void k_bar_late8(const __grid_constant__ symm__kbarrier_params<8> p) {
    symm__kbarrier(p);
}

/* floor section kernels. Grid (blocks a peer, n - 1): row y of blocks moves
 * this GPU's bytes for its y-th peer, as k_mesh_copy does. Barrier words on
 * each GPU: bar[0] its counter, bar[1 + p] the word from PE p. Block words
 * (a region per variant, so that no variant sees another's): blk[x * 8 + p]
 * is block x's word for what PE p sent it; a block's calls so far in
 * cnt[x * 8 + y]. */
struct floor_params {
    uint4 *d[MESH_MAX - 1];       /* y-th peer's receive slot for this GPU */
    const uint4 *s[MESH_MAX - 1]; /* this GPU's bytes for its y-th peer */
    uint64_t *bar[MESH_MAX - 1];  /* y-th peer's barrier words */
    uint64_t *blk[MESH_MAX - 1];  /* y-th peer's block words */
    int peer[MESH_MAX - 1];       /* y-th peer's PE */
    uint64_t *my_bar, *my_blk;    /* this GPU's */
    unsigned *cnt;
    size_t n;   /* uint4 a pair */
    int me, np; /* this PE, PEs */
    unsigned steps;
};
static const int FLOOR_BLK = 8 * 512; /* block words a variant (at most 512 blocks a peer) */

/* all PEs meet (one block of 32: thread t looks after the t-th peer) */
__global__ void k_floor_bar(const __grid_constant__ floor_params p) {
    const uint64_t e = *(volatile uint64_t *)&p.my_bar[0] + 1;
    if (threadIdx.x == 0) fence_sys(); /* this stream's earlier stores, before the flags */
    __syncthreads();
    const int t = threadIdx.x;
    if (t < p.np - 1) {
        st_relaxed(&p.bar[t][1 + p.me], e);
        while (ld_relaxed(&p.my_bar[1 + p.peer[t]]) < e) {
        }
        (void)ld_acquire(&p.my_bar[1 + p.peer[t]]);
    }
    __syncthreads();
    if (threadIdx.x == 0) *(volatile uint64_t *)&p.my_bar[0] = e;
}

/* HELLO: thread 0 of block (x, y) first tells the same block of the y-th
 * peer that this PE runs and waits for its word (what a landing all-reduce
 * does before writing into a peer's buffer); then the copy */
template <bool HELLO>
__global__ void k_floor_copy(const __grid_constant__ floor_params p) {
    const unsigned x = blockIdx.x, y = blockIdx.y;
    if (HELLO) {
        if (threadIdx.x == 0) {
            const uint64_t e = (uint64_t)p.cnt[x * 8 + y] + 1;
            st_relaxed(&p.blk[y][x * 8 + p.me], e);
            while (ld_relaxed(&p.my_blk[x * 8 + p.peer[y]]) < e) {
            }
            p.cnt[x * 8 + y] = (unsigned)e;
        }
        __syncthreads();
    }
    symm__copy_vec(p.d[y], p.s[y], p.n, (size_t)x * blockDim.x + threadIdx.x,
                   (size_t)gridDim.x * blockDim.x);
}

/* The dependency of an all-reduce without its arithmetic: block (x, y) sends
 * its pieces of the first half of the pair's bytes (steps pieces, a flag
 * after each, as the runtime's staged kernel), then for each step waits for
 * the y-th peer's flag of that step and sends its piece of the second half
 * (the "results", which in an all-reduce exist only once the peer's piece
 * came in). GROUPS == 1: the whole block sends every input piece first, then
 * the results in step order; GROUPS == 2: as the staged kernel, one half of
 * the block sends inputs while the other waits and sends results at once. */
__device__ __forceinline__ void group_bar(unsigned id, unsigned n) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
template <int GROUPS>
__global__ void k_floor_two_phase(const __grid_constant__ floor_params p) {
    const unsigned G = gridDim.x, x = blockIdx.x, y = blockIdx.y, P = p.steps;
    const unsigned gsize = blockDim.x / GROUPS;
    const unsigned grp = GROUPS == 2 ? threadIdx.x / gsize : 0, gt = threadIdx.x % gsize;
    const size_t half = p.n / 2; /* uint4 */
    const size_t K = (half + (size_t)G * P - 1) / ((size_t)G * P);
    const uint64_t base = (uint64_t)p.cnt[x * 8 + y] * P;
    auto piece = [&](size_t at, size_t from) {
        if (at >= half) return;
        const size_t k = half - at < K ? half - at : K;
        symm__copy_vec(p.d[y] + from + at, p.s[y] + from + at, k, gt, gsize);
    };
    auto sync = [&]() {
        if (GROUPS == 1) __syncthreads();
        else group_bar(1 + grp, gsize);
    };
    if (grp == 0 || GROUPS == 1)
        for (unsigned st = 0; st < P; st++) {
            piece(((size_t)st * G + x) * K, 0);
            sync();
            if (gt == 0) {
                fence_sys();
                st_relaxed(&p.blk[y][x * 8 + p.me], base + st + 1);
            }
        }
    if (grp == 1 || GROUPS == 1)
        for (unsigned st = 0; st < P; st++) {
            if (gt == 0) {
                uint64_t *w = &p.my_blk[x * 8 + p.peer[y]];
                while (ld_relaxed(w) < base + st + 1) {
                }
                (void)ld_acquire(w);
            }
            sync();
            piece(((size_t)st * G + x) * K, half);
        }
    __syncthreads();
    if (threadIdx.x == 0) p.cnt[x * 8 + y] += 1;
}

/* ------------------------------------------------------------------ setup */
struct Gpu {
    int dev;
    CUcontext ctx;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    char *buf;     /* 1 GiB + 4 KiB */
    uint64_t *flags; /* 64 KiB of flags */
};
static Gpu G[2];
static const size_t BUF = (1ull << 30);

static CUfunction fn(const void *k) {
    cudaFunction_t f;
    CK(cudaGetFuncBySymbol(&f, k));
    return (CUfunction)f;
}
static void launch(CUfunction f, unsigned gx, unsigned bx, CUstream s, void **args, int pdl,
                   unsigned smem = 0) {
    if (!pdl) {
        CD(cuLaunchKernel(f, gx, 1, 1, bx, 1, 1, smem, s, args, nullptr));
        return;
    }
    CUlaunchAttribute a[1];
    a[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a[0].value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig c = {};
    c.gridDimX = gx;
    c.gridDimY = c.gridDimZ = 1;
    c.blockDimX = bx;
    c.blockDimY = c.blockDimZ = 1;
    c.sharedMemBytes = smem;
    c.hStream = s;
    c.attrs = a;
    c.numAttrs = pdl == 2 ? 0 : 1; /* 2: cuLaunchKernelEx without attributes */
    CD(cuLaunchKernelEx(&c, f, args, nullptr));
}
static float ev_ms(Gpu &g) {
    float ms;
    CK(cudaEventElapsedTime(&ms, g.e0, g.e1));
    return ms;
}

static bool want(int argc, char **argv, const char *s) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], s)) return true;
    return false;
}

/* ---------------------------------------------------------------- launch */
static void sec_launch() {
    Gpu &g = G[0];
    CK(cudaSetDevice(0));
    CUstream s = (CUstream)g.s;
    uint64_t *lsrc = (uint64_t *)g.buf, *ldst = (uint64_t *)(g.buf + 4096);
    uint64_t *pdst = (uint64_t *)G[1].buf;
    size_t n64k = 65536 / 16, n1m = (1 << 20) / 16;
    uint4 *psrc4 = (uint4 *)g.buf, *pdst4 = (uint4 *)G[1].buf;
    big_params bp = {};
    void *z = nullptr;
    size_t n3 = 3;
    void *a3[] = {&z, &z, &n3};
    void *abig[] = {&bp};
    void *ast[] = {&pdst, &lsrc};
    void *ac64[] = {&pdst4, &psrc4, &n64k};
    void *ac1m[] = {&pdst4, &psrc4, &n1m};
    CUfunction fe = fn((void *)k_empty), f3 = fn((void *)k_params3), fb = fn((void *)k_big),
               fp = fn((void *)k_pdl_empty), fs = fn((void *)k_store8),
               fsp = fn((void *)k_store8_pdl), fc = fn((void *)k_copy<false>),
               fcp = fn((void *)k_copy<true>);
    CUstreamBatchMemOpParams bops[2] = {};
    bops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    bops[0].writeValue.address = (CUdeviceptr)(pdst + 64);
    bops[0].writeValue.value64 = 1;
    bops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
    bops[1].waitValue.address = (CUdeviceptr)(ldst + 64);
    bops[1].waitValue.value64 = 0;
    bops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    CK(cudaMemset(ldst, 0, 4096));
    struct V {
        const char *name;
        std::function<void()> op;
    } vs[] = {
        {"cuLaunchKernel empty <<<1,32>>>", [&] { launch(fe, 1, 32, s, nullptr, false); }},
        {"cuLaunchKernel 3 params", [&] { launch(f3, 1, 32, s, a3, false); }},
        {"cuLaunchKernel 528-byte param", [&] { launch(fb, 1, 32, s, abig, false); }},
        {"cuLaunchKernelEx PDL empty", [&] { launch(fp, 1, 32, s, nullptr, true); }},
        {"cuLaunchKernelEx no attribute, empty", [&] { launch(fe, 1, 32, s, nullptr, 2); }},
        {"cuLaunchKernelEx no attribute, 3 params", [&] { launch(f3, 1, 32, s, a3, 2); }},
        {"kernel 8 B store to peer", [&] { launch(fs, 1, 1, s, ast, false); }},
        {"kernel 8 B store to peer, PDL", [&] { launch(fsp, 1, 1, s, ast, true); }},
        {"kernel copy 64 KiB to peer 16x256", [&] { launch(fc, 16, 256, s, ac64, false); }},
        {"kernel copy 64 KiB to peer 16x256 PDL", [&] { launch(fcp, 16, 256, s, ac64, true); }},
        {"kernel copy 1 MiB to peer 128x512", [&] { launch(fc, 128, 512, s, ac1m, false); }},
        {"kernel copy 1 MiB to peer 128x512 PDL", [&] { launch(fcp, 128, 512, s, ac1m, true); }},
        {"cuMemcpyAsync 8 B local", [&] { CD(cuMemcpyAsync((CUdeviceptr)ldst, (CUdeviceptr)lsrc, 8, s)); }},
        {"cuMemcpyAsync 8 B peer", [&] { CD(cuMemcpyAsync((CUdeviceptr)pdst, (CUdeviceptr)lsrc, 8, s)); }},
        {"cuMemcpyDtoDAsync 8 B peer", [&] { CD(cuMemcpyDtoDAsync((CUdeviceptr)pdst, (CUdeviceptr)lsrc, 8, s)); }},
        {"cuMemcpyAsync 64 KiB peer", [&] { CD(cuMemcpyAsync((CUdeviceptr)pdst, (CUdeviceptr)lsrc, 65536, s)); }},
        {"cuMemcpyAsync 1 MiB peer", [&] { CD(cuMemcpyAsync((CUdeviceptr)pdst, (CUdeviceptr)lsrc, 1 << 20, s)); }},
        {"cuStreamWriteValue64 peer", [&] { CD(cuStreamWriteValue64(s, (CUdeviceptr)(pdst + 64), 1, 0)); }},
        {"cuStreamBatchMemOp write peer + wait local", [&] { CD(cuStreamBatchMemOp(s, 2, bops, 0)); }},
        {"cuEventRecord", [&] { CK(cudaEventRecord(g.e1, g.s)); }},
    };
    std::vector<V> more;
    static size_t szs[] = {4096, 65536, 262144, 1 << 20, 2 << 20, 4 << 20, 16 << 20};
    static unsigned cfg[][2] = {{16, 256}, {64, 256}, {132, 512}, {264, 512}};
    static size_t nn[7];
    for (int i = 0; i < 7; i++) {
        size_t sz = szs[i];
        nn[i] = sz / 16;
        char nm[96];
        snprintf(nm, sizeof nm, "cuMemcpyAsync peer %zu KiB", sz >> 10);
        more.push_back({strdup(nm), [&, sz] { CD(cuMemcpyAsync((CUdeviceptr)pdst4, (CUdeviceptr)psrc4, sz, s)); }});
        for (auto &c : cfg) {
            if (sz <= 65536 && c[0] > 64) continue;
            if (sz > 65536 && c[0] < 64) continue;
            snprintf(nm, sizeof nm, "PDL copy kernel peer %zu KiB %ux%u", sz >> 10, c[0], c[1]);
            unsigned gx = c[0], bx = c[1];
            size_t *np = &nn[i];
            more.push_back({strdup(nm), [&, gx, bx, np] {
                                void *a[] = {&pdst4, &psrc4, np};
                                launch(fcp, gx, bx, s, a, true);
                            }});
        }
    }
    std::vector<V> all(std::begin(vs), std::end(vs));
    all.insert(all.end(), more.begin(), more.end());
    for (auto &v : all) {
        for (int i = 0; i < 200; i++) v.op();
        CK(cudaStreamSynchronize(g.s));
        std::vector<double> host, gpu;
        for (int r = 0; r < 5; r++) {
            const int N = 2000;
            CK(cudaEventRecord(g.e0, g.s));
            double t0 = now_us();
            for (int i = 0; i < N; i++) v.op();
            double t1 = now_us();
            CK(cudaEventRecord(g.e1, g.s));
            CK(cudaEventSynchronize(g.e1));
            host.push_back((t1 - t0) / N);
            gpu.push_back(ev_ms(g) * 1000.0 / N);
        }
        char note[96];
        snprintf(note, sizeof note, "host %.2f us/call", median(host));
        row("launch", v.name, median(gpu), "us/call (stream)", note);
    }
}

/* ---------------------------------------------------------------- latency */
static void sec_latency() {
    Gpu &g = G[0];
    CK(cudaSetDevice(0));
    CUstream s = (CUstream)g.s;
    uint64_t *lsrc = (uint64_t *)g.buf, *ldst = (uint64_t *)(g.buf + 4096);
    uint64_t *pdst = (uint64_t *)G[1].buf;
    void *ast[] = {&pdst, &lsrc};
    CUfunction fs = fn((void *)k_store8), fsp = fn((void *)k_store8_pdl);
    struct V {
        const char *name;
        std::function<void()> op;
    } vs[] = {
        {"sync of an idle stream", [&] {}},
        {"cuMemcpyAsync 8 B local + sync", [&] { CD(cuMemcpyAsync((CUdeviceptr)ldst, (CUdeviceptr)lsrc, 8, s)); }},
        {"cuMemcpyAsync 8 B peer + sync", [&] { CD(cuMemcpyAsync((CUdeviceptr)pdst, (CUdeviceptr)lsrc, 8, s)); }},
        {"kernel 8 B to peer + sync", [&] { launch(fs, 1, 1, s, ast, false); }},
        {"kernel 8 B to peer PDL + sync", [&] { launch(fsp, 1, 1, s, ast, true); }},
        {"cuStreamWriteValue64 peer + sync", [&] { CD(cuStreamWriteValue64(s, (CUdeviceptr)(pdst + 64), 1, 0)); }},
    };
    for (auto &v : vs) {
        std::vector<double> t;
        for (int i = 0; i < 2300; i++) {
            double t0 = now_us();
            v.op();
            CD(cuStreamSynchronize(s));
            double t1 = now_us();
            if (i >= 300) t.push_back(t1 - t0);
        }
        std::vector<double> c = t;
        std::sort(c.begin(), c.end());
        char note[96];
        snprintf(note, sizeof note, "p10 %.2f p90 %.2f", c[c.size() / 10], c[c.size() * 9 / 10]);
        row("latency", v.name, median(t), "us", note);
    }
}

/* ---------------------------------------------------------------- barrier */
static void sec_barrier() {
    struct V {
        const char *name;
        const void *k;
        bool pdl;
        int memop; /* 0 kernel, 1 write+wait, 2 batch, 3 8-PE block, 4 2-PE block */
    } vs[] = {
        {"runtime's 2-PE kernel (56-byte block read before the PDL wait)", (void *)k_bar_regs<2>, true, 4},
        {"runtime's 8-PE kernel (104-byte block read before the PDL wait)", (void *)k_bar_regs<8>, true, 3},
        {"8-PE kernel, block read after the PDL wait", (void *)k_bar_late8, true, 3},
        {"8-PE kernel without PDL", (void *)k_bar_regs<8>, false, 3},
        {"minimal kernel (epoch in memory, fence.acq_rel.sys, one thread)", (void *)k_bar<BAR_CUR, false>, false, 0},
        {"minimal kernel, PDL", (void *)k_bar<BAR_CUR, true>, true, 0},
        {"minimal kernel, st.release.sys instead of the fence, PDL", (void *)k_bar<BAR_REL, true>, true, 0},
        {"minimal kernel with no release at all (NOT a correct barrier), PDL", (void *)k_bar<BAR_NOFENCE, true>, true, 0},
        {"memops: write peer + wait local (2 calls)", nullptr, false, 1},
        {"memops: one cuStreamBatchMemOp (write + wait)", nullptr, false, 2},
    };
    int nv = (int)(sizeof vs / sizeof vs[0]);
    std::atomic<int> go{0};
    std::vector<double> res_gpu(nv), res_host(nv);
    int *errw = nullptr;
    CK(cudaMallocHost(&errw, 64));
    /* the runtime's parameter block for a 2-PE team whose flags are variant v's */
    auto fill_bar = [&](auto &bp, int v, int me) {
        memset(&bp, 0, sizeof bp);
        bp.team.base[0] = (char *)(G[0].flags + 64 * v);
        bp.team.base[1] = (char *)(G[1].flags + 64 * v);
        bp.team.me = me;
        bp.team.n = 2;
        bp.bump = 1;
        bp.timeout_ns = 30000000000ull;
        bp.err = errw;
    };

    auto body = [&](int me) {
        Gpu &g = G[me], &p = G[1 - me];
        CK(cudaSetDevice(me));
        CUstream s = (CUstream)g.s;
        for (int v = 0; v < nv; v++) {
            CUfunction f = vs[v].k ? fn(vs[v].k) : nullptr;
            uint64_t *mine = g.flags + 64 * v, *theirs = p.flags + 64 * v;
            int peer = 1 - me;
            uint64_t e = 0;
            auto one = [&]() {
                e++;
                if (vs[v].memop == 0) {
                    void *args[] = {&mine, &theirs, &me, &peer, &e};
                    launch(f, 1, 32, s, args, vs[v].pdl);
                } else if (vs[v].memop >= 3) {
                    if (vs[v].memop == 4) {
                        symm__kbarrier_params<2> bp;
                        fill_bar(bp, v, me);
                        void *args[] = {&bp};
                        launch(f, 1, 32, s, args, vs[v].pdl);
                    } else {
                        symm__kbarrier_params<8> bp;
                        fill_bar(bp, v, me);
                        void *args[] = {&bp};
                        launch(f, 1, 32, s, args, vs[v].pdl);
                    }
                } else if (vs[v].memop == 1) {
                    CD(cuStreamWriteValue64(s, (CUdeviceptr)&theirs[me], e, 0));
                    CD(cuStreamWaitValue64(s, (CUdeviceptr)&mine[peer], e, CU_STREAM_WAIT_VALUE_GEQ));
                } else {
                    CUstreamBatchMemOpParams b[2] = {};
                    b[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
                    b[0].writeValue.address = (CUdeviceptr)&theirs[me];
                    b[0].writeValue.value64 = e;
                    b[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
                    b[1].waitValue.address = (CUdeviceptr)&mine[peer];
                    b[1].waitValue.value64 = e;
                    b[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
                    CD(cuStreamBatchMemOp(s, 2, b, 0));
                }
            };
            /* both threads start each variant together */
            go.fetch_add(1);
            while (go.load() < 2 * (v + 1)) {
            }
            for (int i = 0; i < 200; i++) one();
            CK(cudaStreamSynchronize(g.s));
            std::vector<double> gt, ht;
            for (int r = 0; r < 5; r++) {
                const int N = 2000;
                CK(cudaEventRecord(g.e0, g.s));
                double t0 = now_us();
                for (int i = 0; i < N; i++) one();
                double t1 = now_us();
                CK(cudaEventRecord(g.e1, g.s));
                CK(cudaEventSynchronize(g.e1));
                gt.push_back(ev_ms(g) * 1000.0 / N);
                ht.push_back((t1 - t0) / N);
            }
            if (me == 0) {
                res_gpu[v] = median(gt);
                res_host[v] = median(ht);
            }
        }
    };
    std::thread t1(body, 1);
    body(0);
    t1.join();
    for (int v = 0; v < nv; v++) {
        char note[64];
        snprintf(note, sizeof note, "host %.2f us/call", res_host[v]);
        row("barrier", vs[v].name, res_gpu[v], "us/barrier", note);
    }
}

/* ------------------------------------------------------------------- copy */
static void sec_copy() {
    Gpu &g0 = G[0], &g1 = G[1];
    CK(cudaSetDevice(0));
    CUstream s = (CUstream)g0.s;
    char *src = g0.buf, *dst = g1.buf;
    unsigned long long *bad;
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&bad, 8));
    CK(cudaSetDevice(0));
    const unsigned seed = 0x5eed1234u;
    k_fill<<<264, 1024, 0, g0.s>>>((unsigned *)src, BUF / 4, seed);
    CK(cudaStreamSynchronize(g0.s));
    CUfunction ftma = fn((void *)k_tma_copy), ftso = fn((void *)k_tma_store_only),
               fchunk = fn((void *)k_copy_chunked), fso = fn((void *)k_store_only);
    CD(cuFuncSetAttribute(ftma, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
    CD(cuFuncSetAttribute(ftso, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024));
    struct V {
        std::string name;
        std::function<void(size_t)> op;
        bool verify;
    };
    std::vector<V> vs;
    vs.push_back({"copy engine cuMemcpyAsync", [&](size_t n) {
                      CD(cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, n, s));
                  }, true});
    for (unsigned gx : {32u, 66u, 132u}) {
        vs.push_back({"SM v4 loop (as devput), " + std::to_string(gx) + " blocks x1024",
                      [&, gx](size_t n) {
                          uint4 *d = (uint4 *)dst, *sr = (uint4 *)src;
                          size_t n16 = n / 16;
                          void *a[] = {&d, &sr, &n16};
                          launch(fchunk, gx, 1024, s, a, false);
                      }, true});
    }
    struct TC {
        unsigned C, S, gx;
    } tcs[] = {{16384, 4, 32}, {16384, 4, 66}, {16384, 4, 132}, {32768, 4, 132},
               {8192, 8, 132}, {65536, 3, 132}, {16384, 4, 264}};
    for (TC t : tcs) {
        char nm[96];
        snprintf(nm, sizeof nm, "TMA bulk copy C=%uK S=%u, %u blocks", t.C / 1024, t.S, t.gx);
        vs.push_back({nm, [&, t](size_t n) {
                          size_t nn = n;
                          unsigned C = t.C, S = t.S;
                          void *a[] = {&dst, &src, &nn, &C, &S};
                          launch(ftma, t.gx, 32, s, a, false, C * S);
                      }, true});
    }
    vs.push_back({"write-only: SM v4 stores, 132x1024", [&](size_t n) {
                      uint4 *d = (uint4 *)dst;
                      size_t n16 = n / 16;
                      void *a[] = {&d, &n16};
                      launch(fso, 132, 1024, s, a, false);
                  }, false});
    for (unsigned gx : {132u, 264u}) {
        vs.push_back({"write-only: TMA stores C=16K, " + std::to_string(gx) + " blocks",
                      [&, gx](size_t n) {
                          size_t nn = n;
                          unsigned C = 16384;
                          void *a[] = {&dst, &nn, &C};
                          launch(ftso, gx, 32, s, a, false, C);
                      }, false});
    }
    /* CE and TMA at once on two streams (share = TMA's part) */
    cudaStream_t s2;
    cudaEvent_t ef, ej;
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&ef, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&ej, cudaEventDisableTiming));
    for (int share : {15, 30}) {
        vs.push_back({"copy engine + TMA (132 blocks) at once, TMA " + std::to_string(share) + "%",
                      [&, share](size_t n) {
                          size_t t = (n * share / 100) & ~(size_t)65535, c = n - t;
                          CK(cudaEventRecord(ef, g0.s));
                          CK(cudaStreamWaitEvent(s2, ef, 0));
                          CD(cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, c, s));
                          char *d2 = dst + c;
                          const char *s2p = src + c;
                          unsigned C = 16384, S = 4;
                          void *a[] = {&d2, &s2p, &t, &C, &S};
                          launch(ftma, 132, 32, (CUstream)s2, a, false, C * S);
                          CK(cudaEventRecord(ej, s2));
                          CK(cudaStreamWaitEvent(g0.s, ej, 0));
                      }, true});
    }
    for (size_t n : {(size_t)256 << 20, (size_t)1 << 30}) {
        for (auto &v : vs) {
            if (v.verify) {
                CK(cudaSetDevice(1));
                CK(cudaMemset(dst, 0, n));
                CK(cudaMemset(bad, 0, 8));
                CK(cudaDeviceSynchronize());
                CK(cudaSetDevice(0));
            }
            v.op(n); /* warm-up, and the copy we verify */
            CK(cudaStreamSynchronize(g0.s));
            CK(cudaGetLastError());
            unsigned long long hb = 0;
            if (v.verify) {
                CK(cudaSetDevice(1));
                k_check<<<264, 1024, 0, g1.s>>>((const unsigned *)dst, n / 4, seed, bad);
                CK(cudaMemcpy(&hb, bad, 8, cudaMemcpyDeviceToHost));
                CK(cudaSetDevice(0));
            }
            std::vector<double> t;
            for (int r = 0; r < 7; r++) {
                CK(cudaEventRecord(g0.e0, g0.s));
                v.op(n);
                CK(cudaEventRecord(g0.e1, g0.s));
                CK(cudaEventSynchronize(g0.e1));
                t.push_back(ev_ms(g0));
            }
            double ms = median(t);
            char note[64];
            snprintf(note, sizeof note, "%s, %.1f us", v.verify ? (hb ? "BAD DATA" : "verified") : "not verified", ms * 1000);
            row("copy", v.name + (n >> 20 == 1024 ? " 1 GiB" : " 256 MiB"), (double)n / (ms * 1e-3) / 1e9,
                "GB/s", note);
            if (hb) printf("   (%llu bad words)\n", hb);
        }
    }
}

/* ------------------------------------------------------------------- mesh */
/* Every GPU sends to every other at the same time: the per-GPU link
 * bandwidth a collective sees, where the copy section has GPU0 -> GPU1 with
 * the other direction idle. For all-gather, reduce-scatter and all-reduce the
 * bus bandwidth (NCCL's busbw) equals the per-GPU egress rate of an algorithm
 * that moves the minimum data, so the best rate here bounds all three.
 *
 * GPU g's j-th peer is (g + 1 + j) % n. g's source holds n-1 chunks of
 * `stride` bytes, chunk j (seed mesh_seed(g, j)) for its j-th peer; its
 * receive buffer has n-1 slots, slot j for what its j-th peer sends. Each
 * GPU's stream runs the gate kernel, the start event, its transfers and the
 * end event; the host opens the gates once every GPU's work is enqueued. A
 * GPU's time is its own start -> end; a run's time is the slowest GPU's. */
struct MeshGpu {
    Gpu g;                           /* stream, start/end events; buf: the source */
    char *recv;                      /* n-1 slots of `stride` bytes */
    cudaStream_t side[MESH_MAX - 1]; /* copy engines: one stream per peer */
    cudaEvent_t fork, join[MESH_MAX - 1];
    unsigned long long *bad;
    volatile unsigned *gate; /* this GPU's view of the host-pinned gate */
    int sms;
};
static unsigned mesh_seed(int g, int j) { return 0x5eed0000u ^ ((unsigned)g << 8) ^ (unsigned)j; }

/* Peer access between every pair of the first n GPUs (main enabled 0 <-> 1
 * already); enabled[a][b]: what this call turned on, for the section to undo.
 * false (and a line saying so) when a pair cannot have it. */
static bool all_peers(int n, const char *sec, bool enabled[MESH_MAX][MESH_MAX]) {
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int ok = 1;
            if (a != b) CK(cudaDeviceCanAccessPeer(&ok, a, b));
            if (!ok) {
                printf("   (%s skipped: GPU %d cannot access GPU %d)\n", sec, a, b);
                return false;
            }
        }
    for (int a = 0; a < n; a++) {
        CK(cudaSetDevice(a));
        for (int b = 0; b < n; b++) {
            if (a == b) continue;
            cudaError_t e = cudaDeviceEnablePeerAccess(b, 0);
            if (e == cudaErrorPeerAccessAlreadyEnabled)
                (void)cudaGetLastError();
            else {
                CK(e);
                enabled[a][b] = true;
            }
        }
    }
    return true;
}

/* The GPUs of the mesh and floor sections: peer access between every pair,
 * the host gate (gate[0]: the epoch the gates wait for; gate[1]: set by a
 * gate that timed out), and per GPU a stream with start / end events, a
 * side stream per peer (copy engines), n - 1 chunks of `chunk` bytes to send
 * (g.buf; chunk j, for the j-th peer, filled as mesh_seed(d, j) ^ salt) and
 * n - 1 receive slots (recv). false (a line says why) without peer access. */
struct MeshSet {
    int n = 0;
    std::vector<MeshGpu> M;
    unsigned *gate = nullptr;
    bool enabled[MESH_MAX][MESH_MAX] = {}; /* peer access turned on here, undone at close */
};
static bool mesh_open(MeshSet &ms, int n, size_t chunk, unsigned salt, const char *sec) {
    ms.n = n;
    if (!all_peers(n, sec, ms.enabled)) return false;
    CK(cudaHostAlloc(&ms.gate, 64, cudaHostAllocMapped | cudaHostAllocPortable));
    memset(ms.gate, 0, 64);
    ms.M.assign(n, MeshGpu{});
    for (int d = 0; d < n; d++) {
        MeshGpu &m = ms.M[d];
        CK(cudaSetDevice(d));
        m.g.dev = d;
        CK(cudaStreamCreateWithFlags(&m.g.s, cudaStreamNonBlocking));
        CK(cudaEventCreate(&m.g.e0));
        CK(cudaEventCreate(&m.g.e1));
        CK(cudaEventCreateWithFlags(&m.fork, cudaEventDisableTiming));
        for (int j = 0; j < n - 1; j++) {
            CK(cudaStreamCreateWithFlags(&m.side[j], cudaStreamNonBlocking));
            CK(cudaEventCreateWithFlags(&m.join[j], cudaEventDisableTiming));
        }
        CK(cudaMalloc(&m.g.buf, (n - 1) * chunk));
        CK(cudaMalloc(&m.recv, (n - 1) * chunk));
        CK(cudaMalloc(&m.bad, 8));
        CK(cudaHostGetDevicePointer((void **)&m.gate, ms.gate, 0));
        CK(cudaDeviceGetAttribute(&m.sms, cudaDevAttrMultiProcessorCount, d));
        for (int j = 0; j < n - 1; j++)
            k_fill<<<264, 1024, 0, m.g.s>>>((unsigned *)(m.g.buf + j * chunk), chunk / 4,
                                            mesh_seed(d, j) ^ salt);
        CK(cudaStreamSynchronize(m.g.s));
        CK(cudaGetLastError());
    }
    return true;
}
static void mesh_close(MeshSet &ms) {
    for (int d = 0; d < (int)ms.M.size(); d++) {
        MeshGpu &m = ms.M[d];
        CK(cudaSetDevice(d));
        CK(cudaDeviceSynchronize());
        CK(cudaFree(m.g.buf));
        CK(cudaFree(m.recv));
        CK(cudaFree(m.bad));
        for (int j = 0; j < ms.n - 1; j++) {
            CK(cudaStreamDestroy(m.side[j]));
            CK(cudaEventDestroy(m.join[j]));
        }
        CK(cudaEventDestroy(m.fork));
        CK(cudaEventDestroy(m.g.e0));
        CK(cudaEventDestroy(m.g.e1));
        CK(cudaStreamDestroy(m.g.s));
    }
    for (int d = 0; d < ms.n; d++) {
        CK(cudaSetDevice(d));
        for (int b = 0; b < ms.n; b++)
            if (ms.enabled[d][b]) CK(cudaDeviceDisablePeerAccess(b));
    }
    if (ms.gate) CK(cudaFreeHost(ms.gate));
    CK(cudaSetDevice(0));
}

static void sec_mesh() {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    n = std::min(n, MESH_MAX);
    if (n < 2) return;
    const size_t SRC = (size_t)256 << 20, GRAN = 65536;
    const size_t stride = (SRC / (n - 1)) & ~(GRAN - 1);
    auto peer = [n](int g, int j) { return (g + 1 + j) % n; }; /* g's j-th peer */
    auto idx = [n](int g, int p) { return (p - g - 1 + n) % n; }; /* p's index at g */

    MeshSet ms;
    if (!mesh_open(ms, n, stride, 0, "mesh")) return;
    std::vector<MeshGpu> &M = ms.M;
    unsigned *gate = ms.gate;

    /* GPU g's transfer with its j-th peer q: push writes g's chunk for q into
     * q's slot for g, pull reads q's chunk for g into g's slot for q */
    auto pair = [&](int g, int j, bool pull, char *&dst, const char *&src) {
        int q = peer(g, j);
        if (pull) {
            dst = M[g].recv + j * stride;
            src = M[q].g.buf + idx(q, g) * stride;
        } else {
            dst = M[q].recv + idx(q, g) * stride;
            src = M[g].g.buf + j * stride;
        }
    };
    /* SM: one kernel, blockIdx.y = peer, floor(SMs / (n-1)) blocks per peer:
     * one block of 1024 threads fits an SM, and rounding up would leave a
     * block of one peer for a second wave */
    const unsigned gx = (unsigned)std::max(1, M[0].sms / (n - 1));
    /* bytes [off, B) of each pair; with `mixed` (2(n-1) <= 7 rows, half the
     * blocks a row) rows 0..n-2 push and rows n-1.. pull, each half of it */
    auto sm_copy = [&](int g, size_t off, size_t B, bool pull, int npeers, bool mixed = false) {
        mesh_copy_params p = {};
        const size_t half = off + (((B - off) / 2) & ~(size_t)15);
        for (int j = 0; j < npeers; j++) {
            char *d;
            const char *s;
            pair(g, j, mixed ? false : pull, d, s);
            p.d[j] = (uint4 *)(d + off);
            p.s[j] = (const uint4 *)(s + off);
            if (mixed) {
                pair(g, j, true, d, s);
                p.d[npeers + j] = (uint4 *)(d + half);
                p.s[npeers + j] = (const uint4 *)(s + half);
            }
        }
        p.n = ((mixed ? half : B) - off) / 16;
        if (mixed)
            k_mesh_copy<<<dim3(std::max(1u, gx / 2), 2 * npeers), 1024, 0, M[g].g.s>>>(p);
        else
            k_mesh_copy<<<dim3(gx, npeers), 1024, 0, M[g].g.s>>>(p);
    };
    /* copy engine, one stream, the peers in turn: bytes [off, B) of each
     * pair in pieces of `piece`, piece k to every peer before piece k + 1 */
    auto ce_turns = [&](int g, size_t off, size_t B, size_t piece, cudaStream_t st) {
        for (size_t o = off; o < B; o += piece)
            for (int j = 0; j < n - 1; j++) {
                char *d;
                const char *s;
                pair(g, j, false, d, s);
                CD(cuMemcpyAsync((CUdeviceptr)(d + o), (CUdeviceptr)(s + o), std::min(piece, B - o),
                                 (CUstream)st));
            }
    };
    /* copy engine, one stream, the peers in turn, each pair in `parts`
     * copies one after another (a peer's copies before the next peer's) */
    auto ce_turns_pairwise = [&](int g, size_t B, int parts) {
        const size_t step = ((B / parts) + GRAN - 1) & ~(GRAN - 1);
        for (int j = 0; j < n - 1; j++)
            for (size_t o = 0; o < B; o += step) {
                char *d;
                const char *s;
                pair(g, j, false, d, s);
                CD(cuMemcpyAsync((CUdeviceptr)(d + o), (CUdeviceptr)(s + o), std::min(step, B - o),
                                 (CUstream)M[g].g.s));
            }
    };
    /* the first `frac16`/16 of each pair by the copy engine in turns (a side
     * stream), the rest by the SM push kernel on the GPU's stream, at once */
    auto ce_sm = [&](int g, size_t B, unsigned frac16) {
        MeshGpu &m = M[g];
        const size_t cut = (B * frac16 / 16) & ~(GRAN - 1);
        CK(cudaEventRecord(m.fork, m.g.s));
        CK(cudaStreamWaitEvent(m.side[0], m.fork, 0));
        ce_turns(g, 0, cut, cut, m.side[0]);
        CK(cudaEventRecord(m.join[0], m.side[0]));
        sm_copy(g, cut, B, false, n - 1);
        CK(cudaStreamWaitEvent(m.g.s, m.join[0], 0));
    };
    /* copy engines: fork one stream per peer off the GPU's stream, join back */
    auto ce_copy = [&](int g, size_t B, bool pull) {
        MeshGpu &m = M[g];
        CK(cudaEventRecord(m.fork, m.g.s));
        for (int j = 0; j < n - 1; j++) {
            char *d;
            const char *s;
            pair(g, j, pull, d, s);
            CK(cudaStreamWaitEvent(m.side[j], m.fork, 0));
            CD(cuMemcpyAsync((CUdeviceptr)d, (CUdeviceptr)s, B, (CUstream)m.side[j]));
            CK(cudaEventRecord(m.join[j], m.side[j]));
            CK(cudaStreamWaitEvent(m.g.s, m.join[j], 0));
        }
    };

    struct V {
        std::string name;
        std::function<void(int, size_t)> op; /* GPU g's transfers, B bytes a pair */
        bool one_way;                        /* only GPU 0 sends (n == 2) */
    };
    const std::string grid = std::to_string(gx) + "x" + std::to_string(n - 1) + " blocks x1024";
    std::vector<V> vs = {
        {"SM push (uint4 loop, blockIdx.y = peer, " + grid + ")",
         [&](int g, size_t B) { sm_copy(g, 0, B, false, n - 1); }, false},
        {"SM pull (uint4 loop, blockIdx.y = peer, " + grid + ")",
         [&](int g, size_t B) { sm_copy(g, 0, B, true, n - 1); }, false},
        {"copy engine push (cuMemcpyAsync, one stream per peer)",
         [&](int g, size_t B) { ce_copy(g, B, false); }, false},
        {"copy engine pull (cuMemcpyAsync on the receiver, one stream per peer)",
         [&](int g, size_t B) { ce_copy(g, B, true); }, false},
    };
    vs.push_back({"SM push, the peers in turn (one kernel a peer, " + std::to_string(M[0].sms) + " blocks x1024)",
                  [&](int g, size_t B) {
                      for (int j = 0; j < n - 1; j++) {
                          char *d;
                          const char *s;
                          pair(g, j, false, d, s);
                          mesh_copy_params p = {};
                          p.d[0] = (uint4 *)d;
                          p.s[0] = (const uint4 *)s;
                          p.n = B / 16;
                          k_mesh_copy<<<dim3(M[g].sms, 1), 1024, 0, M[g].g.s>>>(p);
                      }
                  },
                  false});
    vs.push_back({"copy engine push, one stream, the peers in turn (whole pair each)",
                  [&](int g, size_t B) { ce_turns(g, 0, B, B, M[g].g.s); }, false});
    vs.push_back({"copy engine push, one stream, the peers in turn, 4 MiB pieces",
                  [&](int g, size_t B) { ce_turns(g, 0, B, (size_t)4 << 20, M[g].g.s); }, false});
    vs.push_back({"copy engine push, one stream, the peers in turn, each pair in 2 copies",
                  [&](int g, size_t B) { ce_turns_pairwise(g, B, 2); }, false});
    vs.push_back({"copy engine push, one stream, the peers in turn, each pair in 4 copies",
                  [&](int g, size_t B) { ce_turns_pairwise(g, B, 4); }, false});
    vs.push_back({"copy engine push, one stream, the peers in turn, 1 MiB pieces",
                  [&](int g, size_t B) { ce_turns(g, 0, B, (size_t)1 << 20, M[g].g.s); }, false});
    for (unsigned f : {4u, 6u, 8u})
        vs.push_back({"copy engine in turns " + std::to_string(f) + "/16 + SM push the rest, at once",
                      [&, f](int g, size_t B) { ce_sm(g, B, f); }, false});
    if (2 * (n - 1) <= MESH_MAX - 1)
        vs.push_back({"SM push half + SM pull half, at once (" + std::to_string(gx / 2) + "x" +
                          std::to_string(2 * (n - 1)) + " blocks x1024)",
                      [&](int g, size_t B) { sm_copy(g, 0, B, false, n - 1, true); }, false});
    if (n == 2)
        vs.push_back({"SM push one direction only (GPU 0 -> 1, 1 idle; " + grid + ")",
                      [&](int g, size_t B) { sm_copy(g, 0, B, false, 1); }, true});

    /* one run of v with B bytes a pair; {slowest, fastest} sending GPU's ms */
    unsigned epoch = 0;
    auto run = [&](const V &v, size_t B) {
        epoch++;
        for (int g = 0; g < n; g++) {
            MeshGpu &m = M[g];
            CK(cudaSetDevice(g));
            k_gate<<<1, 1, 0, m.g.s>>>(m.gate, epoch);
            CK(cudaEventRecord(m.g.e0, m.g.s));
            if (!v.one_way || g == 0) v.op(g, B);
            CK(cudaEventRecord(m.g.e1, m.g.s));
            CK(cudaGetLastError());
        }
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ((volatile unsigned *)gate)[0] = epoch; /* open every gate */
        std::atomic_thread_fence(std::memory_order_seq_cst);
        double slow = 0, fast = 1e30;
        for (int g = 0; g < n; g++) {
            CK(cudaEventSynchronize(M[g].g.e1));
            if (v.one_way && g != 0) continue;
            double ms = ev_ms(M[g].g);
            slow = std::max(slow, ms);
            fast = std::min(fast, ms);
        }
        return std::make_pair(slow, fast);
    };
    /* bad words in every slot that a run of v filled */
    auto check = [&](const V &v, size_t B) {
        unsigned long long total = 0;
        for (int r = 0; r < n; r++) {
            MeshGpu &m = M[r];
            CK(cudaSetDevice(r));
            CK(cudaMemsetAsync(m.bad, 0, 8, m.g.s));
            for (int j = 0; j < n - 1; j++) {
                int s = peer(r, j);
                if (v.one_way && s != 0) continue;
                k_check<<<264, 1024, 0, m.g.s>>>((const unsigned *)(m.recv + j * stride), B / 4,
                                                 mesh_seed(s, idx(s, r)), m.bad);
            }
            unsigned long long hb = 0;
            CK(cudaMemcpyAsync(&hb, m.bad, 8, cudaMemcpyDeviceToHost, m.g.s));
            CK(cudaStreamSynchronize(m.g.s));
            total += hb;
        }
        return total;
    };

    /* 96 MiB: what a GPU sends in a 4-GPU reduce-scatter of 128 MiB */
    const size_t totals[] = {SRC, (size_t)96 << 20, (size_t)16 << 20};
    const int NT = 3;
    double best[NT] = {};
    std::string best_name[NT];
    for (int t = 0; t < NT; t++) {
        const size_t B = (totals[t] / (n - 1)) & ~(GRAN - 1);
        const std::string what =
            ", " + std::to_string(n) + " GPUs, " + std::to_string(totals[t] >> 20) + " MiB per GPU";
        for (auto &v : vs) {
            for (int r = 0; r < n; r++) {
                CK(cudaSetDevice(r));
                CK(cudaMemset(M[r].recv, 0, (n - 1) * stride));
            }
            for (int r = 0; r < n; r++) {
                CK(cudaSetDevice(r));
                CK(cudaDeviceSynchronize());
            }
            run(v, B); /* warm-up, and the run we verify */
            unsigned long long hb = check(v, B);
            std::vector<double> slow, fast;
            for (int r = 0; r < 7; r++) {
                auto st = run(v, B);
                slow.push_back(st.first);
                fast.push_back(st.second);
            }
            double ms = median(slow);
            size_t sent = v.one_way ? B : B * (n - 1); /* by one GPU */
            double gbps = (double)sent / (ms * 1e-3) / 1e9;
            bool late = ((volatile unsigned *)gate)[1] != 0;
            ((volatile unsigned *)gate)[1] = 0;
            char note[160];
            snprintf(note, sizeof note, "%s%s, slowest GPU %.1f us (fastest %.1f us), %.2f MiB a pair",
                     hb ? "BAD DATA" : "verified", late ? ", GATE TIMED OUT" : "", ms * 1000,
                     median(fast) * 1000, (double)B / (1 << 20));
            row("mesh", v.name + what, gbps, "GB/s", note);
            if (hb) printf("   (%llu bad words)\n", hb);
            if (!v.one_way && !hb && !late && gbps > best[t]) {
                best[t] = gbps;
                best_name[t] = v.name;
            }
        }
    }
    for (int t = 0; t < NT; t++)
        row("mesh",
            "bus-bandwidth bound of all-gather / reduce-scatter / all-reduce, " + std::to_string(n) +
                " GPUs, " + std::to_string(totals[t] >> 20) + " MiB per GPU",
            best[t], "GB/s", "best: " + (best_name[t].empty() ? std::string("none verified") : best_name[t]));

    mesh_close(ms);
}

/* ------------------------------------------------------------------- rsce */
/* A reduce-scatter of S bytes (f32 sum) on all the GPUs (up to 8) where the
 * copy engine moves the bytes: GPU g holds n pieces of S / n, piece r for GPU
 * r. In phase k (k = 0 .. n-2) g's copy engine (one side stream) copies its
 * piece for q = (g + 1 + k) % n whole into q's staging slot k; so in every
 * phase each GPU sends to one and receives from one. GPU r's own stream waits
 * for each phase's copy (an event of the sender's side stream) and adds the
 * slot into its output with an SM kernel, while the next phase is in flight:
 * only the last addition is not hidden. `split` cuts the last phase's copy
 * into that many copies, each added as it lands, to shorten that tail. The
 * pulling form (SM loads from the peers, reduced on the fly: what symm does
 * from 128 MiB on 4 GPUs) runs beside it. Released by the host gate as in the
 * mesh section; a run's time is the slowest GPU's; every output verified. */
static void sec_rsce() {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    n = std::min(n, MESH_MAX);
    if (n < 2) return;
    const size_t SMAX = (size_t)256 << 20;
    const size_t mmax = SMAX / n; /* bytes of one piece at the largest size */
    MeshSet ms;
    if (!mesh_open(ms, n, mmax, 0, "rsce")) return;
    std::vector<MeshGpu> &M = ms.M;
    std::vector<float *> own(n), dst(n);
    std::vector<unsigned long long *> flg(n);
    const int MAXSPLIT = 4;
    std::vector<cudaEvent_t> ev((size_t)n * (n - 1) * MAXSPLIT);
    auto EV = [&](int g, int k, int c) -> cudaEvent_t & { return ev[((size_t)g * (n - 1) + k) * MAXSPLIT + c]; };
    for (int g = 0; g < n; g++) {
        CK(cudaSetDevice(g));
        CK(cudaMalloc(&own[g], mmax));
        CK(cudaMalloc(&dst[g], mmax));
        CK(cudaMalloc(&flg[g], 64));
        for (int k = 0; k < n - 1; k++)
            for (int c = 0; c < MAXSPLIT; c++) CK(cudaEventCreateWithFlags(&EV(g, k, c), cudaEventDisableTiming));
    }
    /* g's piece for q lives in g.buf slot (q - g - 1) mod n, g's own in own[g] */
    auto fill = [&](size_t m) {
        for (int g = 0; g < n; g++) {
            CK(cudaSetDevice(g));
            k_rs_fill<<<264, 1024, 0, M[g].g.s>>>(own[g], m / 4, g, g);
            for (int k = 0; k < n - 1; k++)
                k_rs_fill<<<264, 1024, 0, M[g].g.s>>>((float *)(M[g].g.buf + k * mmax), m / 4, g,
                                                      (g + 1 + k) % n);
            CK(cudaMemsetAsync(dst[g], 0, m, M[g].g.s));
            CK(cudaStreamSynchronize(M[g].g.s));
        }
    };
    unsigned epoch = 0;
    const unsigned RB = (unsigned)M[0].sms * 2;
    /* one run; the slowest GPU's ms */
    auto run = [&](int split, size_t m, int sig = 0) {
        epoch++;
        if (sig) /* every flag back to 0 before any copy can start */
            for (int g = 0; g < n; g++) {
                CK(cudaSetDevice(g));
                CK(cudaMemsetAsync(flg[g], 0, 64, M[g].g.s));
                CK(cudaStreamSynchronize(M[g].g.s));
            }
        for (int g = 0; g < n; g++) { /* first every copy (and its events) */
            MeshGpu &x = M[g];
            CK(cudaSetDevice(g));
            k_gate<<<1, 1, 0, x.g.s>>>(x.gate, epoch);
            CK(cudaEventRecord(x.g.e0, x.g.s));
            if (split == 0) continue;
            CK(cudaEventRecord(x.fork, x.g.s));
            CK(cudaStreamWaitEvent(x.side[0], x.fork, 0));
            for (int k = 0; k < n - 1; k++) {
                const int q = (g + 1 + k) % n, parts = k == n - 2 ? split : 1;
                const size_t step = ((m / parts) + 65535) & ~(size_t)65535;
                for (int c = 0; c < parts; c++) {
                    const size_t o = c * step, len = std::min(step, m - o);
                    CD(cuMemcpyAsync((CUdeviceptr)(M[q].recv + k * mmax + o),
                                     (CUdeviceptr)(x.g.buf + k * mmax + o), len, (CUstream)x.side[0]));
                    if (sig)
                        CD(cuStreamWriteValue64((CUstream)x.side[0], (CUdeviceptr)(flg[q] + k), c + 1,
                                                CU_STREAM_WRITE_VALUE_DEFAULT));
                    else
                        CK(cudaEventRecord(EV(g, k, c), x.side[0]));
                }
            }
            CK(cudaEventRecord(x.join[0], x.side[0]));
        }
        for (int r = 0; r < n; r++) { /* then every GPU's additions */
            MeshGpu &x = M[r];
            CK(cudaSetDevice(r));
            if (split == 0) {
                rs_pull_params p = {};
                p.dst = (float4 *)dst[r];
                p.own = (const float4 *)own[r];
                for (int j = 0; j < n - 1; j++) {
                    const int q = (r + 1 + j) % n; /* q's piece for r: q's slot (r - q - 1) mod n */
                    p.peer[j] = (const float4 *)(M[q].g.buf + ((r - q - 1 + n) % n) * mmax);
                }
                p.npeers = n - 1;
                p.n = m / 16;
                k_rs_pull<<<M[r].sms, 1024, 0, x.g.s>>>(p);
            } else if (sig) {
                rs_flag_params p = {};
                p.dst = (float4 *)dst[r];
                p.own = (const float4 *)own[r];
                for (int k = 0; k < n - 1; k++) p.slot[k] = (const float4 *)(x.recv + k * mmax);
                p.flag = flg[r];
                p.nphases = n - 1;
                p.last_split = split;
                p.nap = sig >= 2;
                p.n = m / 16;
                p.step = (((m / split) + 65535) & ~(size_t)65535) / 16;
                if (sig == 3)
                    k_rs_flag<<<M[r].sms, 1024, 0, x.g.s>>>(p);
                else
                    k_rs_flag<<<RB, 512, 0, x.g.s>>>(p);
                CK(cudaStreamWaitEvent(x.g.s, x.join[0], 0));
            } else {
                for (int k = 0; k < n - 1; k++) {
                    const int s = (r - 1 - k + 2 * n) % n, parts = k == n - 2 ? split : 1;
                    const size_t step = ((m / parts) + 65535) & ~(size_t)65535;
                    for (int c = 0; c < parts; c++) {
                        const size_t o = c * step, len = std::min(step, m - o);
                        CK(cudaStreamWaitEvent(x.g.s, EV(s, k, c), 0));
                        const float4 *a = (const float4 *)((char *)(k == 0 ? own[r] : dst[r]) + o);
                        k_rs_add<<<RB, 512, 0, x.g.s>>>((float4 *)((char *)dst[r] + o), a,
                                                        (const float4 *)(x.recv + k * mmax + o), len / 16);
                    }
                }
                CK(cudaStreamWaitEvent(x.g.s, x.join[0], 0));
            }
            CK(cudaEventRecord(x.g.e1, x.g.s));
            CK(cudaGetLastError());
        }
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ((volatile unsigned *)ms.gate)[0] = epoch;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        double slow = 0;
        for (int g = 0; g < n; g++) {
            CK(cudaEventSynchronize(M[g].g.e1));
            slow = std::max(slow, (double)ev_ms(M[g].g));
        }
        return slow;
    };
    for (size_t S : {(size_t)128 << 20, SMAX}) {
        const size_t m = (S / n) & ~(size_t)65535;
        for (int variant : {0, 1, 2, 4, 14, 24, 34, 12, 22}) {
            const int split = variant % 10, sig = variant / 10;
            fill(m);
            run(split, m, sig);
            unsigned long long bad = 0;
            for (int r = 0; r < n; r++) {
                MeshGpu &x = M[r];
                CK(cudaSetDevice(r));
                CK(cudaMemsetAsync(x.bad, 0, 8, x.g.s));
                k_rs_check<<<264, 1024, 0, x.g.s>>>(dst[r], m / 4, r, n, x.bad);
                unsigned long long hb = 0;
                CK(cudaMemcpyAsync(&hb, x.bad, 8, cudaMemcpyDeviceToHost, x.g.s));
                CK(cudaStreamSynchronize(x.g.s));
                bad += hb;
            }
            std::vector<double> t;
            for (int i = 0; i < 9; i++) t.push_back(run(split, m, sig));
            const double ms_ = median(t);
            const double bus = (double)m * (n - 1) / (ms_ * 1e-3) / 1e9;
            bool late = ((volatile unsigned *)ms.gate)[1] != 0;
            ((volatile unsigned *)ms.gate)[1] = 0;
            std::string name = split == 0 ? "SM pull, reduced on the fly (" + std::to_string(M[0].sms) + " blocks x1024)"
                                          : "copy engine in turns, SM additions as each lands, last copy in " +
                                                std::to_string(split) +
                                                (sig == 0   ? " (stream events, a kernel a copy)"
                                                 : sig == 1 ? " (cuStreamWriteValue64 flags, one polling kernel)"
                                                 : sig == 2 ? " (flags, one kernel polling with naps)"
                                                            : " (flags, one kernel polling with naps, 1024-thread blocks)");
            char note[160];
            snprintf(note, sizeof note, "%s%s, %.1f us (slowest GPU), bus bandwidth %.1f GB/s",
                     bad ? "BAD DATA" : "verified", late ? ", GATE TIMED OUT" : "", ms_ * 1000, bus);
            row("rsce", name + ", " + std::to_string(n) + " GPUs, " + std::to_string(S >> 20) + " MiB", ms_ * 1000,
                "us", note);
            if (bad) printf("   (%llu bad elements)\n", bad);
        }
    }
    for (int g = 0; g < n; g++) {
        CK(cudaSetDevice(g));
        CK(cudaDeviceSynchronize());
        CK(cudaFree(own[g]));
        CK(cudaFree(dst[g]));
        CK(cudaFree(flg[g]));
        for (int k = 0; k < n - 1; k++)
            for (int c = 0; c < MAXSPLIT; c++) CK(cudaEventDestroy(EV(g, k, c)));
    }
    mesh_close(ms);
}

/* ------------------------------------------------------------------ floor */
/* What no all-reduce of S bytes on the n GPUs can beat, however it reduces:
 * each GPU must send 2 S (n - 1) / n bytes (its inputs for the others'
 * slices and its slice's results; on 2 GPUs the whole vector, either way),
 * evenly 2 S / n to each peer, and the call must end on every GPU together.
 * Here each GPU pushes 2 S / n bytes to every peer at once and all meet in
 * one barrier kernel: per call in a CUDA graph of R calls, the graphs of all
 * GPUs released together by a host gate (as in the mesh section), the
 * slowest GPU's time (as bench_coll_stream's graph figure). Variants move the
 * bytes in different ways, then add what a correct all-reduce needs besides
 * the bytes: a hello before writing into a peer, results that wait for the
 * peer's input. "barrier only" is the fixed cost. Every copy is verified. */
struct FloorWords {
    uint64_t *bar, *blk; /* barrier words; block words, FLOOR_BLK a variant */
    unsigned *cnt;       /* FLOOR_BLK a variant */
};
static void sec_floor() {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    n = std::min(n, MESH_MAX);
    if (n < 2) return;
    const int R = 20;
    const size_t SMAX = (size_t)64 << 20, C = 2 * SMAX / n / 65536 * 65536;
    auto peer = [n](int g, int j) { return (g + 1 + j) % n; };    /* g's j-th peer */
    auto idx = [n](int g, int q) { return (q - g - 1 + n) % n; }; /* q's index at g */
    MeshSet ms; /* chunk j of g.buf (C bytes) for the j-th peer; recv: slot j from it */
    if (!mesh_open(ms, n, C, 0xf100u, "floor")) return;
    std::vector<MeshGpu> &M = ms.M;
    unsigned *gate = ms.gate;
    const int NV = 16; /* variants at most */
    std::vector<FloorWords> W(n);
    for (int d = 0; d < n; d++) {
        FloorWords &w = W[d];
        CK(cudaSetDevice(d));
        CK(cudaMalloc(&w.bar, 64 * sizeof(uint64_t)));
        CK(cudaMemset(w.bar, 0, 64 * sizeof(uint64_t)));
        CK(cudaMalloc(&w.blk, NV * FLOOR_BLK * sizeof(uint64_t)));
        CK(cudaMemset(w.blk, 0, NV * FLOOR_BLK * sizeof(uint64_t)));
        CK(cudaMalloc(&w.cnt, NV * FLOOR_BLK * sizeof(unsigned)));
        CK(cudaMemset(w.cnt, 0, NV * FLOOR_BLK * sizeof(unsigned)));
    }
    struct V {
        std::string name;
        int kind;                    /* 0 barrier only, 1 SM, 2 CE, 3 CE + SM, 4 hello + SM, 5 two phases */
        unsigned per_sm, bx, ce_pct; /* blocks a SM of bx threads (split over the peers); CE share % */
        unsigned steps, groups;      /* two phases */
    };
    const std::vector<V> vs = {
        {"barrier kernel only (no bytes)", 0, 0, 0, 0, 0, 0},
        {"SM push, runtime copy loop, 1 block of 1024 a SM", 1, 1, 1024, 0, 0, 0},
        {"SM push, runtime copy loop, 2 blocks of 512 a SM", 1, 2, 512, 0, 0, 0},
        {"copy engine push (cudaMemcpyAsync, one stream per peer)", 2, 0, 0, 100, 0, 0},
        {"copy engine 50 % + SM push 50 % at once", 3, 1, 1024, 50, 0, 0},
        {"SM push after a hello from the peer's block (a landing all-reduce's start)", 4, 1, 1024, 0, 0, 0},
        {"two phases, 1 step: first half, flag, wait for the peer's, second half", 5, 1, 1024, 0, 1, 1},
        {"two phases, 2 steps, inputs first then results in step order", 5, 1, 1024, 0, 2, 1},
        {"two phases, 4 steps, inputs first then results in step order", 5, 1, 1024, 0, 4, 1},
        {"two phases, 2 steps, inputs and results at once (2 groups of 512, as the staged kernel)", 5, 1, 1024, 0, 2, 2},
    };
    if ((int)vs.size() > NV) return;
    unsigned epoch = 0;
    for (size_t S : {(size_t)4 << 20, (size_t)16 << 20, SMAX}) {
        const size_t B = std::min(C, 2 * S / n / 65536 * 65536); /* bytes a pair */
        for (size_t v = 0; v < vs.size(); v++) {
            const V &x = vs[v];
            if (x.kind == 0 && S != ((size_t)16 << 20)) continue;
            std::vector<cudaGraphExec_t> ge(n);
            for (int me = 0; me < n; me++) {
                MeshGpu &f = M[me];
                const FloorWords &w = W[me];
                CK(cudaSetDevice(me));
                floor_params p = {};
                for (int j = 0; j < n - 1; j++) {
                    const int q = peer(me, j);
                    p.d[j] = (uint4 *)(M[q].recv + idx(q, me) * C);
                    p.s[j] = (const uint4 *)(f.g.buf + j * C);
                    p.bar[j] = W[q].bar;
                    p.blk[j] = W[q].blk + v * FLOOR_BLK;
                    p.peer[j] = q;
                }
                p.my_bar = w.bar;
                p.my_blk = w.blk + v * FLOOR_BLK;
                p.cnt = w.cnt + v * FLOOR_BLK;
                p.n = B / 16;
                p.me = me;
                p.np = n;
                p.steps = x.steps;
                const dim3 grid(std::max(1u, x.per_sm * (unsigned)f.sms / (unsigned)(n - 1)), n - 1);
                cudaGraph_t g;
                CK(cudaStreamBeginCapture(f.g.s, cudaStreamCaptureModeRelaxed));
                for (int r = 0; r < R; r++) {
                    if (x.kind == 1) k_floor_copy<false><<<grid, x.bx, 0, f.g.s>>>(p);
                    if (x.kind == 4) k_floor_copy<true><<<grid, x.bx, 0, f.g.s>>>(p);
                    if (x.kind == 5 && x.groups == 1) k_floor_two_phase<1><<<grid, x.bx, 0, f.g.s>>>(p);
                    if (x.kind == 5 && x.groups == 2) k_floor_two_phase<2><<<grid, x.bx, 0, f.g.s>>>(p);
                    if (x.kind == 2 || x.kind == 3) {
                        const size_t c = x.kind == 2 ? B : (B * x.ce_pct / 100) & ~(size_t)65535;
                        CK(cudaEventRecord(f.fork, f.g.s));
                        for (int j = 0; j < n - 1; j++) {
                            CK(cudaStreamWaitEvent(f.side[j], f.fork, 0));
                            CK(cudaMemcpyAsync(p.d[j], p.s[j], c, cudaMemcpyDefault, f.side[j]));
                            CK(cudaEventRecord(f.join[j], f.side[j]));
                        }
                        if (x.kind == 3) {
                            floor_params q = p;
                            for (int j = 0; j < n - 1; j++) {
                                q.d[j] += c / 16;
                                q.s[j] += c / 16;
                            }
                            q.n = (B - c) / 16;
                            k_floor_copy<false><<<grid, x.bx, 0, f.g.s>>>(q);
                        }
                        for (int j = 0; j < n - 1; j++) CK(cudaStreamWaitEvent(f.g.s, f.join[j], 0));
                    }
                    k_floor_bar<<<1, 32, 0, f.g.s>>>(p);
                }
                CK(cudaStreamEndCapture(f.g.s, &g));
                CK(cudaGraphInstantiate(&ge[me], g, 0));
                CK(cudaGraphDestroy(g));
            }
            /* one graph launch on every GPU, released together; slowest GPU's us a call */
            auto run = [&]() {
                epoch++;
                for (int me = 0; me < n; me++) {
                    CK(cudaSetDevice(me));
                    k_gate<<<1, 1, 0, M[me].g.s>>>(M[me].gate, epoch);
                    CK(cudaEventRecord(M[me].g.e0, M[me].g.s));
                    CK(cudaGraphLaunch(ge[me], M[me].g.s));
                    CK(cudaEventRecord(M[me].g.e1, M[me].g.s));
                }
                std::atomic_thread_fence(std::memory_order_seq_cst);
                ((volatile unsigned *)gate)[0] = epoch;
                std::atomic_thread_fence(std::memory_order_seq_cst);
                double slow = 0;
                for (int me = 0; me < n; me++) {
                    CK(cudaEventSynchronize(M[me].g.e1));
                    float ms;
                    CK(cudaEventElapsedTime(&ms, M[me].g.e0, M[me].g.e1));
                    slow = std::max(slow, (double)ms * 1000.0 / R);
                }
                return slow;
            };
            unsigned long long hb = 0;
            if (x.kind != 0)
                for (int me = 0; me < n; me++) {
                    CK(cudaSetDevice(me));
                    CK(cudaMemset(M[me].recv, 0, (n - 1) * C));
                    CK(cudaDeviceSynchronize());
                }
            run(); /* warm-up, and the copies we verify */
            if (x.kind != 0)
                for (int r = 0; r < n; r++) {
                    MeshGpu &f = M[r];
                    CK(cudaSetDevice(r));
                    CK(cudaMemsetAsync(f.bad, 0, 8, f.g.s));
                    for (int j = 0; j < n - 1; j++) {
                        const int q = peer(r, j); /* slot j holds what q sent r */
                        k_check<<<264, 1024, 0, f.g.s>>>((const unsigned *)(f.recv + j * C), B / 4,
                                                       mesh_seed(q, idx(q, r)) ^ 0xf100u, f.bad);
                    }
                    unsigned long long h = 0;
                    CK(cudaMemcpyAsync(&h, f.bad, 8, cudaMemcpyDeviceToHost, f.g.s));
                    CK(cudaStreamSynchronize(f.g.s));
                    hb += h;
                }
            std::vector<double> t;
            for (int i = 0; i < 7; i++) t.push_back(run());
            const bool late = ((volatile unsigned *)gate)[1] != 0;
            ((volatile unsigned *)gate)[1] = 0;
            for (int me = 0; me < n; me++) {
                CK(cudaSetDevice(me));
                CK(cudaGraphExecDestroy(ge[me]));
            }
            const double us = median(t);
            char note[192];
            snprintf(note, sizeof note,
                     "%s%s; %.2f MiB to each peer, %.1f GB/s out of a GPU; min %.2f max %.2f us over 7 graphs",
                     x.kind == 0 ? "no data" : hb ? "BAD DATA" : "verified", late ? ", GATE TIMED OUT" : "",
                     (double)B / (1 << 20), x.kind == 0 ? 0.0 : (double)B * (n - 1) / (us * 1e-6) / 1e9,
                     *std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end()));
            row("floor", x.name + (x.kind ? " + barrier" : "") + ", all-reduce of " +
                             std::to_string(S >> 20) + " MiB on " + std::to_string(n) + " GPUs",
                us, "us/call", note);
            if (hb) printf("   (%llu bad words)\n", hb);
        }
    }
    for (int d = 0; d < n; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceSynchronize());
        CK(cudaFree(W[d].bar));
        CK(cudaFree(W[d].blk));
        CK(cudaFree(W[d].cnt));
    }
    mesh_close(ms);
}

/* ------------------------------------------------------------------ lines */
/* Whether a 128-byte line stored by one warp instruction reaches a peer GPU
 * whole, as a protocol with a flag in every line (NCCL's LL128) needs: GPU0
 * rewrites L lines of GPU1's memory, round after round, each line 15 data
 * words and a flag word (the round), every word stored in the same warp
 * instruction (W bytes a thread: 16, or 8); GPU1 reads the lines the same
 * way while that goes on and counts the lines whose flag is set but whose
 * data words belong to another round (torn). */
__device__ __forceinline__ uint64_t line_word(uint64_t r, uint64_t line, unsigned w) {
    return (r << 32) | ((line & 0xfffffffull) << 4) | w;
}
struct lines_ctl {
    unsigned long long checked, torn, rounds_seen, pad;
    unsigned done, finished;
};
template <int W>
__global__ void k_lines_write(uint64_t *lines, uint64_t nlines, unsigned rounds, lines_ctl *ctl) {
    constexpr unsigned per = 128 / W; /* threads of a line */
    const unsigned lane = threadIdx.x & 31u, part = lane % per;
    const uint64_t warps = (uint64_t)gridDim.x * blockDim.x / 32;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    for (unsigned r = 1; r <= rounds; r++)
        for (uint64_t base = warp * (32 / per); base < nlines; base += warps * (32 / per)) {
            const uint64_t line = base + lane / per;
            if (line >= nlines) continue;
            uint64_t *p = lines + line * 16 + part * (W / 8);
            if (W == 16) {
                const unsigned w = part * 2;
                const uint64_t a = line_word(r, line, w);
                const uint64_t b = w + 1 == 15 ? (uint64_t)r : line_word(r, line, w + 1);
                asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b)
                             : "memory");
            } else {
                const uint64_t a = part == 15 ? (uint64_t)r : line_word(r, line, part);
                asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(a) : "memory");
            }
        }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0 && atomicAdd(&ctl->finished, 1u) + 1 == gridDim.x)
        atomicExch_system(&ctl->done, 1u);
}
template <int W>
__global__ void k_lines_read(const uint64_t *lines, uint64_t nlines, lines_ctl *ctl) {
    constexpr unsigned per = 128 / W;
    const unsigned lane = threadIdx.x & 31u, part = lane % per;
    const uint64_t warps = (uint64_t)gridDim.x * blockDim.x / 32;
    const uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const unsigned group = ((1u << per) - 1u) << (lane / per * per); /* the line's lanes */
    unsigned long long checked = 0, torn = 0;
    unsigned last = 0;
    const uint64_t t0 = symm__globaltimer();
    for (bool stop = false; !stop;) {
        stop = *(volatile unsigned *)&ctl->done != 0 || symm__globaltimer() - t0 > 5000000000ull;
        for (uint64_t base = warp * (32 / per); base < nlines; base += warps * (32 / per)) {
            const uint64_t line = base + lane / per;
            const bool have = line < nlines;
            const uint64_t *p = lines + (have ? line : 0) * 16 + part * (W / 8);
            uint64_t a = 0, b = 0;
            if (W == 16)
                asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p)
                             : "memory");
            else
                asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(a) : "l"(p) : "memory");
            /* the flag: word 15, held by the line's last thread */
            const uint64_t f = __shfl_sync(0xffffffffu, W == 16 ? b : a,
                                           (lane / per) * per + per - 1);
            bool bad = false;
            if (W == 16) {
                const unsigned w = part * 2;
                bad = a != line_word(f, line, w) || (w + 1 < 15 && b != line_word(f, line, w + 1));
            } else {
                bad = part < 15 && a != line_word(f, line, part);
            }
            bad = bad && have && f != 0;
            const unsigned any = __ballot_sync(0xffffffffu, bad) & group;
            if (have && f != 0 && part == 0) {
                checked++;
                if (any) torn++;
                if ((unsigned)f > last) last = (unsigned)f;
            }
        }
    }
    atomicAdd(&ctl->checked, checked);
    atomicAdd(&ctl->torn, torn);
    atomicMax(&ctl->rounds_seen, (unsigned long long)last);
}

static void sec_lines() {
    const uint64_t nlines = 1u << 16; /* 8 MiB of lines */
    const unsigned rounds = 4000;     /* ~32 GB through the link per variant */
    CK(cudaSetDevice(1));
    uint64_t *lines = (uint64_t *)G[1].buf;
    lines_ctl *ctl;
    CK(cudaMalloc(&ctl, sizeof(lines_ctl)));
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 1));
    for (int W : {16, 8}) {
        CK(cudaSetDevice(1));
        CK(cudaMemset(lines, 0, nlines * 128));
        CK(cudaMemset(ctl, 0, sizeof(lines_ctl)));
        CK(cudaDeviceSynchronize());
        /* the reader first (it spins until the writer is done), then the writer */
        if (W == 16) k_lines_read<16><<<sms / 2, 512, 0, G[1].s>>>(lines, nlines, ctl);
        else k_lines_read<8><<<sms / 2, 512, 0, G[1].s>>>(lines, nlines, ctl);
        CK(cudaSetDevice(0));
        CK(cudaEventRecord(G[0].e0, G[0].s));
        if (W == 16) k_lines_write<16><<<sms, 512, 0, G[0].s>>>(lines, nlines, rounds, ctl);
        else k_lines_write<8><<<sms, 512, 0, G[0].s>>>(lines, nlines, rounds, ctl);
        CK(cudaEventRecord(G[0].e1, G[0].s));
        CK(cudaStreamSynchronize(G[0].s));
        CK(cudaSetDevice(1));
        CK(cudaStreamSynchronize(G[1].s));
        lines_ctl h;
        CK(cudaMemcpy(&h, ctl, sizeof h, cudaMemcpyDeviceToHost));
        const double gbps = (double)nlines * 128 * rounds / (ev_ms(G[0]) * 1e-3) / 1e9;
        char note[192];
        snprintf(note, sizeof note, "%llu torn of %llu lines read with their flag set (rounds "
                 "seen up to %llu of %u); writer %.1f GB/s", h.torn, h.checked, h.rounds_seen,
                 rounds, gbps);
        row("lines", std::to_string(W) + "-byte stores and loads a thread, GPU0 -> GPU1",
            (double)h.torn, "torn", note);
    }
    CK(cudaFree(ctl));
    CK(cudaSetDevice(0));
}

int main(int argc, char **argv) {
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    if (n < 2) {
        printf("SKIP: probe_cuda needs 2 GPUs (found %d)\n", n);
        return 77;
    }
    bool spin = getenv("PROBE_SPIN") && atoi(getenv("PROBE_SPIN"));
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        if (spin) CK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
        CK(cudaFree(0));
        CD(cuCtxGetCurrent(&G[d].ctx));
        G[d].dev = d;
        CK(cudaStreamCreateWithFlags(&G[d].s, cudaStreamNonBlocking));
        CK(cudaEventCreate(&G[d].e0));
        CK(cudaEventCreate(&G[d].e1));
        CK(cudaMalloc(&G[d].buf, BUF + 4096));
        CK(cudaMalloc(&G[d].flags, 65536));
        CK(cudaMemset(G[d].flags, 0, 65536));
        CK(cudaMemset(G[d].buf, 0, BUF + 4096));
    }
    for (int d = 0; d < 2; d++) {
        CK(cudaSetDevice(d));
        CK(cudaDeviceEnablePeerAccess(1 - d, 0));
    }
    CK(cudaDeviceSynchronize());
    printf("| section | what | median | note |\n|---|---|---|---|\n");
    if (want(argc, argv, "launch")) sec_launch();
    if (want(argc, argv, "latency")) sec_latency();
    if (want(argc, argv, "barrier")) sec_barrier();
    if (want(argc, argv, "copy")) sec_copy();
    if (want(argc, argv, "mesh")) sec_mesh();
    if (want(argc, argv, "floor")) sec_floor();
    if (want(argc, argv, "rsce")) sec_rsce();
    if (want(argc, argv, "lines")) sec_lines();
    return 0;
}

/*
 * CUDA backend, 2+ PEs: the header-only device API. Block puts + put_signal
 * around a ring checked inside the kernel, warp gets, p/g ping-pong, atomics
 * from every thread of every PE, compare_swap with one winner, put / get /
 * put_signal / signal_op / fence / quiet / barrier at thread, warp and block
 * scope, device barriers (world, block and team) mixed with stream and host
 * barriers.
 *
 * Every PE is addressed the way the device API routes it: load/store when it
 * has a peer_base, the proxy otherwise. Under symmrun --hosts 2 (suite
 * gpu-remote) every peer is on another simulated host: the test asserts that
 * it has no peer_base and that the context carries proxy rings, so every
 * check runs kernel -> ring -> proxy -> tcp -> the peer's GPU heap.
 * A failed check inside a kernel records the first one (line, got, want),
 * which the host prints with the PE.
 */
#include "gpu_test.h"

#include <symm/symm_device.cuh>

#include <vector>

/* The first failed check of a kernel (device memory, zeroed by the host). */
struct dfail {
    int count, line;
    long long got, want;
};
__device__ void dfail_note(dfail *f, int line, long long got, long long want) {
    if (atomicAdd(&f->count, 1) == 0) {
        f->line = line;
        f->got = got;
        f->want = want;
    }
}
#define DCHECK_EQ(f, got, want)                                          \
    do {                                                                 \
        const long long g_ = (long long)(got), w_ = (long long)(want);   \
        if (g_ != w_) dfail_note((f), __LINE__, g_, w_);                 \
    } while (0)

__device__ uint8_t dpat(int pe, int round, uint64_t i) {
    return (uint8_t)(((uint64_t)pe * 29u + (uint64_t)round * 3u + i * 5u) & 0xff);
}

/* One block per PE: put_signal a message to the next PE, wait for mine, check
 * it in the kernel. */
__global__ void ring_kernel(symm_device_ctx c, uint8_t *data, uint8_t *src, uint64_t n,
                            uint64_t *sig, int rounds, dfail *f) {
    const int me = c.my_pe, next = (me + 1) % c.n_pes, prev = (me + c.n_pes - 1) % c.n_pes;
    for (int r = 1; r <= rounds; r++) {
        for (uint64_t i = threadIdx.x; i < n; i += blockDim.x) src[i] = dpat(me, r, i);
        __syncthreads();
        symm_dev_putmem_signal_block(c, data, src, n, sig, (uint64_t)r, SYMM_SIGNAL_SET, next);
        if (threadIdx.x == 0) symm_dev_signal_wait_until(sig, SYMM_CMP_GE, (uint64_t)r);
        __syncthreads();
        for (uint64_t i = threadIdx.x; i < n; i += blockDim.x) {
            uint8_t v = *(volatile uint8_t *)&data[i];
            if (v != dpat(prev, r, i)) {
                dfail_note(f, __LINE__, v, dpat(prev, r, i));
                break;
            }
        }
        /* nobody overwrites a message before its reader checked it */
        symm_status st = symm_dev_barrier_all_block(c);
        if (threadIdx.x == 0) DCHECK_EQ(f, st, SYMM_SUCCESS);
    }
}

/* Every PE's heap base as device code sees it (struct entries for the first
 * SYMM_DEVICE_FAST_PES PEs, the device peer table for all). */
__global__ void peer_table_kernel(symm_device_ctx c, void **via_fn, void **via_table) {
    for (int pe = threadIdx.x; pe < c.n_pes; pe += blockDim.x) {
        via_fn[pe] = symm_dev_peer_base(c, pe);
        via_table[pe] = c.peer_table[pe];
    }
}

/* Warp get of the next PE's data + typed put/get. */
__global__ void warp_kernel(symm_device_ctx c, uint8_t *data, uint8_t *out, uint64_t n,
                            int64_t *words, dfail *f) {
    const int me = c.my_pe, next = (me + 1) % c.n_pes;
    symm_dev_getmem_warp(c, out, data, n, next);
    if (threadIdx.x == 0) {
        symm_dev_p(c, &words[0], (int64_t)me * 7, next);
        int64_t tmp[4] = {me, me + 1, me + 2, me + 3};
        symm_dev_put(c, &words[1], tmp, 4, next);
        symm_dev_quiet();
        DCHECK_EQ(f, symm_dev_quiet(c), SYMM_SUCCESS);
    }
    __syncwarp();
    if (threadIdx.x == 0) DCHECK_EQ(f, symm_dev_barrier_all(c), SYMM_SUCCESS);
    __syncwarp();
    if (threadIdx.x == 0) {
        const int prev = (me + c.n_pes - 1) % c.n_pes;
        DCHECK_EQ(f, *(volatile int64_t *)&words[0], (int64_t)prev * 7);
        int64_t g = symm_dev_g(c, &words[1], next); /* next holds mine */
        DCHECK_EQ(f, g, me);
        int64_t back[4];
        symm_dev_get(c, back, &words[1], 4, next);
        for (int k = 0; k < 4; k++) DCHECK_EQ(f, back[k], me + k);
    }
}

/* p/g ping-pong between PE 0 and PE 1 (one thread each). */
__global__ void pingpong_kernel(symm_device_ctx c, int *flag, int iters, dfail *f) {
    const int me = c.my_pe;
    if (me > 1) return;
    const int peer = 1 - me;
    for (int i = 1; i <= iters; i++) {
        if (me == 0) {
            symm_dev_p(c, flag, i, peer);
            symm_dev_wait_until(flag, SYMM_CMP_EQ, i);
        } else {
            symm_dev_wait_until(flag, SYMM_CMP_EQ, i);
            symm_dev_p(c, flag, i, peer);
        }
    }
    DCHECK_EQ(f, symm_dev_g(c, flag, peer), iters);
}

/* Atomics on PE 0 from every thread; then the block's quiet (non-fetching
 * atomics to a proxied PE complete there). */
__global__ void amo_kernel(symm_device_ctx c, unsigned long long *ctr, int *cas, int *wins,
                           int64_t *mix, int iters, dfail *f) {
    for (int i = 0; i < iters; i++) symm_dev_atomic_add(c, ctr, 1ull, 0);
    int old = symm_dev_atomic_compare_swap(c, cas, 0, 1 + c.my_pe * 1024 + (int)threadIdx.x, 0);
    if (old == 0) atomicAdd(wins, 1);
    if (threadIdx.x == 0) {
        symm_dev_atomic_or(c, mix, (int64_t)1 << c.my_pe, 0);
        symm_dev_atomic_fetch_xor(c, mix + 1, (int64_t)1 << (8 + c.my_pe), 0);
        symm_dev_atomic_inc(c, mix + 2, 0);
        symm_dev_atomic_fetch_and(c, mix + 3, ~((int64_t)1 << c.my_pe), 0);
        int64_t prev = symm_dev_atomic_swap(c, mix + 4, (int64_t)c.my_pe, 0);
        (void)prev;
    }
    __syncthreads();
    if (threadIdx.x == 0) DCHECK_EQ(f, symm_dev_quiet(c), SYMM_SUCCESS);
}

/* Barriers in a loop: write the round into the next PE, barrier, check mine. */
__global__ void barrier_kernel(symm_device_ctx c, symm_device_team t, int64_t *slot, int rounds,
                               int kind, dfail *f) {
    const int me = c.my_pe, next = (me + 1) % c.n_pes;
    for (int r = 1; r <= rounds; r++) {
        if (threadIdx.x == 0) symm_dev_p(c, slot, (int64_t)r, next);
        symm_status st = SYMM_SUCCESS;
        if (kind == 0) {
            if (threadIdx.x == 0) st = symm_dev_barrier_all(c);
            __syncthreads();
        } else if (kind == 1) {
            st = symm_dev_barrier_all_block(c);
        } else {
            st = symm_dev_team_barrier_block(c, t);
        }
        if (threadIdx.x == 0) {
            DCHECK_EQ(f, st, SYMM_SUCCESS);
            DCHECK_EQ(f, *(volatile int64_t *)slot, r);
        }
        __syncthreads();
        if (threadIdx.x == 0) DCHECK_EQ(f, symm_dev_sync_all(c), SYMM_SUCCESS);
        __syncthreads();
    }
}

/* put / get / put_signal / signal_op / fence / quiet / barrier at one scope:
 * 0 one thread, 1 one warp, 2 one block (the kernel is launched with 1, 32
 * and 256 threads). Round r (base + 1 .. base + rounds, so the signals only
 * grow across launches): fill src and Z, barrier; put src into the next
 * PE's X, fence, SET its sig[0] to r; put_signal src into its Y with sig[1]
 * SET to r; get the next PE's Z into out and check it; wait for my sig[0]
 * and sig[1] and check X and Y (the previous PE's data); quiet; barrier
 * (nobody overwrites what its reader has not checked). */
__device__ uint8_t spat(int pe, int r, int salt, uint64_t i) {
    return (uint8_t)((i * 11u + (uint64_t)pe * 37u + (uint64_t)r * 5u + (uint64_t)salt * 71u) &
                     0xffu);
}
template <int SCOPE>
__device__ void scope_sync() {
    if (SCOPE == 1) __syncwarp();
    if (SCOPE == 2) __syncthreads();
}
template <int SCOPE>
__device__ symm_status scope_barrier(const symm_device_ctx &c, const symm_device_team &t) {
    if (SCOPE == 0) return symm_dev_barrier_all(c);
    if (SCOPE == 1) return symm_dev_team_barrier_warp(c, t);
    return symm_dev_team_barrier_block(c, t);
}
template <int SCOPE>
__global__ void scope_kernel(symm_device_ctx c, symm_device_team t, uint8_t *X, uint8_t *Y,
                             uint8_t *Z, uint8_t *src, uint8_t *out, uint64_t n, uint64_t *sig,
                             int base, int rounds, dfail *f) {
    const int me = c.my_pe, next = (me + 1) % c.n_pes, prev = (me + c.n_pes - 1) % c.n_pes;
    const unsigned tid = threadIdx.x, nthr = blockDim.x;
    for (int r = base + 1; r <= base + rounds; r++) {
        for (uint64_t i = tid; i < n; i += nthr) {
            src[i] = spat(me, r, 1, i);
            Z[i] = spat(me, r, 3, i);
        }
        scope_sync<SCOPE>();
        symm_status st = scope_barrier<SCOPE>(c, t);
        if (tid == 0) DCHECK_EQ(f, st, SYMM_SUCCESS);
        /* put, fence, signal: a PE that sees the signal sees the data */
        if (SCOPE == 0) symm_dev_putmem(c, X, src, n, next);
        if (SCOPE == 1) symm_dev_putmem_warp(c, X, src, n, next);
        if (SCOPE == 2) symm_dev_putmem_block(c, X, src, n, next);
        if (tid == 0) {
            symm_dev_fence(c);
            symm_dev_signal_op(c, &sig[0], (uint64_t)r, SYMM_SIGNAL_SET, next);
        }
        scope_sync<SCOPE>();
        if (SCOPE == 0)
            symm_dev_putmem_signal(c, Y, src, n, &sig[1], (uint64_t)r, SYMM_SIGNAL_SET, next);
        if (SCOPE == 1)
            symm_dev_putmem_signal_warp(c, Y, src, n, &sig[1], (uint64_t)r, SYMM_SIGNAL_SET, next);
        if (SCOPE == 2)
            symm_dev_putmem_signal_block(c, Y, src, n, &sig[1], (uint64_t)r, SYMM_SIGNAL_SET, next);
        if (SCOPE == 0) symm_dev_getmem(c, out, Z, n, next);
        if (SCOPE == 1) symm_dev_getmem_warp(c, out, Z, n, next);
        if (SCOPE == 2) symm_dev_getmem_block(c, out, Z, n, next);
        for (uint64_t i = tid; i < n; i += nthr)
            if (out[i] != spat(next, r, 3, i)) {
                dfail_note(f, __LINE__, out[i], spat(next, r, 3, i));
                break;
            }
        if (tid == 0) {
            uint64_t seen = 0;
            DCHECK_EQ(f, symm_dev_signal_wait_until(c, &sig[0], SYMM_CMP_GE, (uint64_t)r, &seen),
                      SYMM_SUCCESS);
            DCHECK_EQ(f, seen, r);
            DCHECK_EQ(f, symm_dev_signal_wait_until(c, &sig[1], SYMM_CMP_GE, (uint64_t)r, &seen),
                      SYMM_SUCCESS);
            DCHECK_EQ(f, seen, r);
        }
        scope_sync<SCOPE>();
        for (uint64_t i = tid; i < n; i += nthr) {
            const uint8_t x = *(volatile uint8_t *)&X[i], y = *(volatile uint8_t *)&Y[i];
            if (x != spat(prev, r, 1, i)) {
                dfail_note(f, __LINE__, x, spat(prev, r, 1, i));
                break;
            }
            if (y != spat(prev, r, 1, i)) {
                dfail_note(f, __LINE__, y, spat(prev, r, 1, i));
                break;
            }
        }
        if (tid == 0) DCHECK_EQ(f, symm_dev_quiet(c), SYMM_SUCCESS);
        scope_sync<SCOPE>();
        st = scope_barrier<SCOPE>(c, t);
        if (tid == 0) DCHECK_EQ(f, st, SYMM_SUCCESS);
    }
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    symm_device_ctx dc;
    memset(&dc, 0, sizeof dc);
    dc.struct_size = sizeof dc;
    CHECK_OK(symm_device_ctx_get(ctx, &dc));
    ASSERT_EQ(dc.my_pe, gpu_me);
    ASSERT_EQ(dc.n_pes, gpu_n);
    ASSERT_TRUE(dc.peer_table != NULL);
    /* each PE's route: load/store, or the proxy (asserted under --hosts) */
    const int proxied = gpu_check_routes(dc, [&](int pe) -> void * {
        if (pe < SYMM_DEVICE_FAST_PES) return dc.peer_base[pe];
        void *b = NULL;
        CUDA_OK(cudaMemcpy(&b, dc.peer_table + pe, sizeof b, cudaMemcpyDeviceToHost));
        return b;
    });
    ASSERT_TRUE(dc.slot_bytes >= 1024 && dc.slot_bytes >= 512 + 8 * (uint64_t)gpu_n);
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    symm_device_team dt;
    memset(&dt, 0, sizeof dt);
    dt.struct_size = sizeof dt;
    CHECK_OK(symm_device_team_get(world, &dt));
    ASSERT_EQ(dt.n_pes, gpu_n);
    ASSERT_EQ(dt.my_pe, gpu_me);

    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    dfail *bad = NULL; /* the kernels' first failed check */
    CUDA_OK(cudaMalloc(&bad, sizeof *bad));
    CUDA_OK(cudaMemset(bad, 0, sizeof *bad));
    /* after a kernel: its failed checks, said with the line, got and want */
    auto kernel_checks = [&](const char *what) {
        dfail h;
        CUDA_OK(cudaMemcpy(&h, bad, sizeof h, cudaMemcpyDeviceToHost));
        if (h.count)
            TEST_FAIL_("%s (%d of %d peers through the proxy): %d failed check(s) in the kernel, "
                       "the first at gpu_device.cu:%d: got %lld, want %lld", what, proxied,
                       gpu_n - 1, h.count, h.line, h.got, h.want);
    };

    const uint64_t N = 1 << 20;
    symm_buf data = NULL, src = NULL, sig = NULL, words = NULL, misc = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 4, &sig));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 16, &words));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 64, &misc));
    CHECK_OK(symm_barrier_all(ctx));

    {   /* the device peer table agrees with the host's peer pointers */
        void **via_fn = NULL, **via_table = NULL;
        CUDA_OK(cudaMalloc(&via_fn, (size_t)gpu_n * sizeof(void *)));
        CUDA_OK(cudaMalloc(&via_table, (size_t)gpu_n * sizeof(void *)));
        peer_table_kernel<<<1, 128, 0, s>>>(dc, via_fn, via_table);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(s));
        std::vector<void *> a((size_t)gpu_n), b((size_t)gpu_n);
        CUDA_OK(cudaMemcpy(a.data(), via_fn, a.size() * sizeof(void *), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(b.data(), via_table, b.size() * sizeof(void *), cudaMemcpyDeviceToHost));
        void *my0 = gpu_ptr(data);
        for (int pe = 0; pe < gpu_n; pe++) {
            void *host_view = NULL;
            CHECK_OK(symm_buf_peer_ptr(data, pe, &host_view));
            uint64_t off = (uint64_t)((char *)my0 - (char *)dc.heap_base);
            ASSERT_TRUE(a[(size_t)pe] == b[(size_t)pe]);
            if (a[(size_t)pe]) ASSERT_TRUE((char *)a[(size_t)pe] + off == (char *)host_view);
            else ASSERT_TRUE(host_view == NULL); /* no load/store route from the host either */
        }
        CUDA_OK(cudaFree(via_fn));
        CUDA_OK(cudaFree(via_table));
    }

    ring_kernel<<<1, 1024, 0, s>>>(dc, (uint8_t *)gpu_ptr(data), (uint8_t *)gpu_ptr(src), N,
                                   (uint64_t *)gpu_ptr(sig), 5, bad);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(s));
    kernel_checks("ring_kernel (block put_signal)");

    uint8_t *out = NULL;
    CUDA_OK(cudaMalloc(&out, N));
    CHECK_OK(symm_barrier_all(ctx));
    warp_kernel<<<1, 32, 0, s>>>(dc, (uint8_t *)gpu_ptr(data), out, N, (int64_t *)gpu_ptr(words), bad);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(s));
    kernel_checks("warp_kernel (warp get, p, put from a thread's array, g, get)");
    {   /* out = next PE's data = what I put there in the last ring round */
        std::vector<uint8_t> h(N), want(N);
        CUDA_OK(cudaMemcpy(h.data(), out, N, cudaMemcpyDeviceToHost));
        gpu_read(want.data(), data, 0, N); /* my data came from prev; next's from me */
        int prev = (gpu_me + gpu_n - 1) % gpu_n;
        for (uint64_t i = 0; i < N; i += 1) {
            uint8_t mine = (uint8_t)(((uint64_t)gpu_me * 29u + 5u * 3u + i * 5u) & 0xff);
            uint8_t from_prev = (uint8_t)(((uint64_t)prev * 29u + 5u * 3u + i * 5u) & 0xff);
            ASSERT_EQ(h[i], mine);
            ASSERT_EQ(want[i], from_prev);
        }
    }
    CHECK_OK(symm_barrier_all(ctx));

    if (gpu_n >= 2) {
        const int iters = proxied ? 200 : 2000; /* a proxied p is a round trip */
        pingpong_kernel<<<1, 1, 0, s>>>(dc, (int *)gpu_ptr(words) + 20, iters, bad);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(s));
        kernel_checks("pingpong_kernel (p, wait_until, g)");
        CHECK_OK(symm_barrier_all(ctx));
    }

    /* atomics on PE 0 from 256 threads x 20 iterations of every PE */
    int *wins = NULL;
    CUDA_OK(cudaMalloc(&wins, sizeof *wins));
    CUDA_OK(cudaMemset(wins, 0, sizeof *wins));
    CUDA_OK(cudaDeviceSynchronize());
    int64_t *m = (int64_t *)gpu_ptr(misc);
    int64_t init[5] = {0, 0, 0, -1, -5};
    gpu_write(misc, 0, init, sizeof init);
    CHECK_OK(symm_barrier_all(ctx));
    amo_kernel<<<1, 256, 0, s>>>(dc, (unsigned long long *)(m + 8), (int *)(m + 10), wins, m, 20,
                                 bad);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaStreamSynchronize(s));
    kernel_checks("amo_kernel (quiet after the atomics)");
    CHECK_OK(symm_barrier_all(ctx));
    /* winners across PEs: gather everyone's count into PE 0 */
    int wins_h = 0;
    CUDA_OK(cudaMemcpy(&wins_h, wins, sizeof wins_h, cudaMemcpyDeviceToHost));
    int64_t w = wins_h, total = 0;
    CHECK_OK(symm_put(words, 8, &w, 1, gpu_me));
    CHECK_OK(symm_barrier_all(ctx));
    for (int pe = 0; pe < gpu_n; pe++) {
        int64_t x = 0;
        CHECK_OK(symm_get(&x, words, 8, 1, pe));
        total += x;
    }
    ASSERT_EQ(total, 1);
    if (gpu_me == 0) {
        int64_t h[12];
        gpu_read(h, misc, 0, sizeof h);
        ASSERT_EQ((uint64_t)h[8], 256ull * 20 * (uint64_t)gpu_n);
        int64_t all = 0;
        for (int pe = 0; pe < gpu_n; pe++) all |= (int64_t)1 << pe;
        ASSERT_EQ(h[0], all);
        ASSERT_EQ(h[1], all << 8);
        ASSERT_EQ(h[2], gpu_n);
        ASSERT_EQ(h[3], ~all);
        ASSERT_TRUE(h[4] >= 0 && h[4] < gpu_n);
        int32_t c32[2];
        memcpy(c32, &h[10], sizeof c32);
        ASSERT_TRUE(c32[0] != 0);
    }
    CHECK_OK(symm_barrier_all(ctx));

    /* device barriers, then mixed with stream and host barriers */
    int64_t *slot = (int64_t *)gpu_ptr(words) + 12;
    for (int kind = 0; kind < 3; kind++) {
        barrier_kernel<<<1, 128, 0, s>>>(dc, dt, slot, 50, kind, bad);
        CUDA_OK(cudaGetLastError());
        CHECK_OK(symm_barrier_all_on_stream(ctx, s));
        CUDA_OK(cudaStreamSynchronize(s));
        CHECK_OK(symm_barrier_all(ctx));
        kernel_checks(kind == 0 ? "barrier_kernel (thread barrier_all)"
                      : kind == 1 ? "barrier_kernel (block barrier_all)"
                                  : "barrier_kernel (block team barrier)");
    }

    /* put / get / put_signal / signal_op / fence / quiet / barrier at thread,
     * warp and block scope; sources and get destinations outside the heap */
    {
        const uint64_t M = 1 << 17;
        symm_buf X = NULL, Y = NULL, Z = NULL, sg = NULL;
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, M, &X));
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, M, &Y));
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, M, &Z));
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 2, &sg));
        const uint64_t zero[2] = {0, 0};
        gpu_write(sg, 0, zero, sizeof zero);
        uint8_t *ssrc = NULL, *sout = NULL;
        CUDA_OK(cudaMalloc(&ssrc, M));
        CUDA_OK(cudaMalloc(&sout, M));
        CHECK_OK(symm_barrier_all(ctx));
        uint8_t *x = (uint8_t *)gpu_ptr(X), *y = (uint8_t *)gpu_ptr(Y), *z = (uint8_t *)gpu_ptr(Z);
        uint64_t *sp = (uint64_t *)gpu_ptr(sg);
        const int rounds = 4;
        scope_kernel<0><<<1, 1, 0, s>>>(dc, dt, x, y, z, ssrc, sout, 1001, sp, 0, rounds, bad);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(s));
        kernel_checks("scope_kernel<thread> (1001 bytes)");
        scope_kernel<1><<<1, 32, 0, s>>>(dc, dt, x, y, z, ssrc, sout, 4099, sp, 100, rounds, bad);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(s));
        kernel_checks("scope_kernel<warp> (4099 bytes)");
        scope_kernel<2><<<1, 256, 0, s>>>(dc, dt, x, y, z, ssrc, sout, 65539, sp, 200, rounds,
                                          bad);
        CUDA_OK(cudaGetLastError());
        CUDA_OK(cudaStreamSynchronize(s));
        kernel_checks("scope_kernel<block> (65539 bytes)");
        CHECK_OK(symm_barrier_all(ctx));
        CUDA_OK(cudaFree(ssrc));
        CUDA_OK(cudaFree(sout));
        CHECK_OK(symm_buf_free(sg));
        CHECK_OK(symm_buf_free(Z));
        CHECK_OK(symm_buf_free(Y));
        CHECK_OK(symm_buf_free(X));
    }

    CUDA_OK(cudaFree(out));
    CUDA_OK(cudaFree(bad));
    CUDA_OK(cudaFree(wins));
    CUDA_OK(cudaStreamDestroy(s));
    CHECK_OK(symm_buf_free(misc));
    CHECK_OK(symm_buf_free(words));
    CHECK_OK(symm_buf_free(sig));
    CHECK_OK(symm_buf_free(src));
    CHECK_OK(symm_buf_free(data));
    gpu_test_fini(&ctx);
    return 0;
}

/*
 * CUDA backend, 2+ PEs: stream-ordered operations. Puts and gets of many sizes
 * from heap, cudaMalloc, pinned and pageable memory; p_on_stream;
 * put_signal_on_stream with the consumer's stream waiting on the signal (every
 * comparison); quiet/barrier/team sync on streams; a chain of dependent
 * stream operations mixed with the user's kernels (nothing may overtake the
 * work it depends on, PDL launches included); host allocations while a
 * stream barrier and reduction are still queued; and a CUDA graph that
 * captures put + put_signal + barrier, replayed several times.
 */
#include "gpu_test.h"

#include <vector>

__host__ __device__ static uint8_t pat(int pe, int round, uint64_t i) {
    return (uint8_t)(((uint64_t)pe * 131u + (uint64_t)round * 17u + i * 7u + (i >> 9)) & 0xff);
}

static void check_bytes(const std::vector<uint8_t> &got, uint64_t n, int pe, int round,
                        const char *what) {
    for (uint64_t i = 0; i < n; i++)
        if (got[i] != pat(pe, round, i))
            TEST_FAIL_("%s: byte %llu of %llu is %u, expected %u", what, (unsigned long long)i,
                       (unsigned long long)n, got[i], pat(pe, round, i));
}

static void test_put_get(symm_ctx ctx, cudaStream_t s) {
    const uint64_t MAX = 8ull << 20;
    const uint64_t sizes[] = {1, 7, 8, 64, 100, 4096, 65536 + 3, (256 << 10) + 5, 1 << 20, MAX};
    const int next = (gpu_me + 1) % gpu_n, prev = (gpu_me + gpu_n - 1) % gpu_n;
    symm_buf dst = NULL, src = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, MAX, &dst));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, MAX, &src));
    uint8_t *dmem = NULL, *pinned = NULL;
    CUDA_OK(cudaMalloc(&dmem, MAX));
    CUDA_OK(cudaMallocHost(&pinned, MAX));
    std::vector<uint8_t> host(MAX), got(MAX);
    int round = 0;
    for (uint64_t n : sizes) {
        /* 0: heap src, 1: cudaMalloc src, 2: pinned src, 3: pageable src */
        for (int kind = 0; kind < 4; kind++) {
            round++;
            for (uint64_t i = 0; i < n; i++) host[i] = pat(gpu_me, round, i);
            const void *from = NULL;
            switch (kind) {
            case 0: gpu_write(src, 0, host.data(), n); from = gpu_ptr(src); break;
            case 1: CUDA_OK(cudaMemcpy(dmem, host.data(), n, cudaMemcpyHostToDevice)); from = dmem; break;
            case 2: memcpy(pinned, host.data(), n); from = pinned; break;
            default: from = host.data(); break;
            }
            CUDA_OK(cudaDeviceSynchronize());
            gpu_trace("put_get: %llu bytes, source kind %d", (unsigned long long)n, kind);
            if (kind == 1 || n % 2)
                CHECK_OK(symm_put_on_stream(dst, 0, from, n, next, s));
            else
                CHECK_OK(symm_putmem_on_stream(ctx, gpu_ptr(dst), from, n, next, s));
            CHECK_OK(symm_quiet_on_stream(ctx, s));
            CHECK_OK(symm_barrier_all_on_stream(ctx, s));
            gpu_trace("put_get: put, quiet and barrier enqueued; synchronizing");
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_trace("put_get: put done; get");
            gpu_read(got.data(), dst, 0, n);
            char what[64];
            snprintf(what, sizeof what, "put_on_stream kind %d", kind);
            check_bytes(got, n, prev, round, what);

            /* get it back from the next PE (it holds my pattern) */
            void *into = kind == 0 ? gpu_ptr(src) : kind == 1 ? (void *)dmem
                       : kind == 2 ? (void *)pinned : (void *)got.data();
            if (kind == 3) memset(got.data(), 0, n);
            if (kind == 0)
                CHECK_OK(symm_get_nbi_on_stream(into, dst, 0, n, next, s));
            else if (kind == 2)
                CHECK_OK(symm_getmem_on_stream(ctx, into, gpu_ptr(dst), n, next, s));
            else
                CHECK_OK(symm_get_on_stream(into, dst, 0, n, next, s));
                    CHECK_OK(symm_quiet_on_stream(ctx, s));
            CUDA_OK(cudaStreamSynchronize(s));
            gpu_trace("put_get: get done");
            if (kind == 0) gpu_read(got.data(), src, 0, n);
            if (kind == 1) CUDA_OK(cudaMemcpy(got.data(), dmem, n, cudaMemcpyDeviceToHost));
            if (kind == 2) memcpy(got.data(), pinned, n);
            snprintf(what, sizeof what, "get_on_stream kind %d", kind);
            check_bytes(got, n, gpu_me, round, what);
            CHECK_OK(symm_barrier_all(ctx));
        }
    }
    /* p_on_stream: value read at call time */
    symm_buf words = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 64, &words));
    for (int i = 0; i < 64; i++) {
        int64_t v = (int64_t)gpu_me * 1000 + i;
        CHECK_OK(symm_p_on_stream(words, (uint64_t)i, &v, next, s));
        v = -1; /* must not matter */
    }
    CHECK_OK(symm_barrier_all_on_stream(ctx, s));
    CUDA_OK(cudaStreamSynchronize(s));
    int64_t w[64];
    gpu_read(w, words, 0, sizeof w);
    for (int i = 0; i < 64; i++) ASSERT_EQ(w[i], (int64_t)prev * 1000 + i);
    CHECK_STATUS(symm_put_on_stream(dst, MAX - 1, host.data(), 2, next, s), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_p_on_stream(words, 0, NULL, next, s), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(words));
    CUDA_OK(cudaFree(dmem));
    CUDA_OK(cudaFreeHost(pinned));
    CHECK_OK(symm_buf_free(src));
    CHECK_OK(symm_buf_free(dst));
}

/* Producer PE 0 -> consumer PE 1: data + signal on the producer's stream; the
 * consumer's stream waits for the signal, then copies the data out. */
static void test_signal_stream(symm_ctx ctx, cudaStream_t s) {
    const uint64_t N = 1 << 20;
    symm_buf data = NULL, sig = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8, &sig));
    uint8_t *src = NULL, *out = NULL;
    CUDA_OK(cudaMalloc(&src, N));
    CUDA_OK(cudaMalloc(&out, N));
    std::vector<uint8_t> host(N), got(N);
    const bool producer = gpu_me == 0, consumer = gpu_me == 1;
    for (int r = 1; r <= 8; r++) {
        if (producer) {
            for (uint64_t i = 0; i < N; i++) host[i] = pat(0, r, i);
            CUDA_OK(cudaMemcpy(src, host.data(), N, cudaMemcpyHostToDevice));
            CUDA_OK(cudaDeviceSynchronize());
            /* SET carries the round (odd rounds), ADD counts it (even rounds) */
            if (r % 2)
                CHECK_OK(symm_put_signal_on_stream(data, 0, src, N, sig, 0, (uint64_t)r,
                                                   SYMM_SIGNAL_SET, 1, s));
            else
                CHECK_OK(symm_put_signal_on_stream(data, 0, src, N, sig, 0, 1, SYMM_SIGNAL_ADD,
                                                   1, s));
            CUDA_OK(cudaStreamSynchronize(s));
        }
        if (consumer) {
            CHECK_OK(symm_signal_wait_until_on_stream(sig, 0, r % 2 ? SYMM_CMP_EQ : SYMM_CMP_GE,
                                                      (uint64_t)r, s));
            CUDA_OK(cudaMemcpyAsync(out, gpu_ptr(data), N, cudaMemcpyDeviceToDevice, s));
            CUDA_OK(cudaStreamSynchronize(s));
            CUDA_OK(cudaMemcpy(got.data(), out, N, cudaMemcpyDeviceToHost));
            check_bytes(got, N, 0, r, "data after signal wait on stream");
        }
        CHECK_OK(symm_barrier_all(ctx)); /* the producer may overwrite */
    }
    /* every comparison, waited on the stream; the producer sets 100 late */
    const uint32_t cmps[6] = {SYMM_CMP_EQ, SYMM_CMP_NE, SYMM_CMP_GT,
                              SYMM_CMP_GE, SYMM_CMP_LT, SYMM_CMP_LE};
    const uint64_t vals[6] = {100, 8, 99, 100, 101, 100};
    if (consumer)
        for (int c = 0; c < 6; c++)
            CHECK_OK(symm_signal_wait_until_on_stream(sig, 1 + (uint64_t)(c == 4 ? 1 : 0),
                                                      cmps[c], vals[c], s));
    if (producer) {
        usleep(20000);
        CHECK_OK(symm_signal_op_on_stream(sig, 2, 100, SYMM_SIGNAL_SET, 1, s)); /* LT slot */
        CHECK_OK(symm_signal_op_on_stream(sig, 1, 40, SYMM_SIGNAL_ADD, 1, s));
        CHECK_OK(symm_signal_op_on_stream(sig, 1, 60, SYMM_SIGNAL_ADD, 1, s));
        CUDA_OK(cudaStreamSynchronize(s));
    }
    if (consumer) CUDA_OK(cudaStreamSynchronize(s));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_STATUS(symm_signal_wait_until_on_stream(sig, 0, 9, 1, s), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_wait_until_on_stream(data, 0, SYMM_CMP_EQ, 1, s),
                 SYMM_ERR_INVALID_ARG);
    CUDA_OK(cudaFree(src));
    CUDA_OK(cudaFree(out));
    CHECK_OK(symm_buf_free(sig));
    CHECK_OK(symm_buf_free(data));
}

static void test_barriers_on_stream(symm_ctx ctx, cudaStream_t s) {
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    symm_buf slot = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1, &slot));
    const int next = (gpu_me + 1) % gpu_n;
    /* stream and host barriers share epochs: mix them */
    for (int64_t r = 1; r <= 100; r++) {
        CHECK_OK(symm_p_on_stream(slot, 0, &r, next, s));
        if (r % 4 == 0) {
            CUDA_OK(cudaStreamSynchronize(s));
            CHECK_OK(symm_barrier_all(ctx));
        } else if (r % 4 == 1) {
            CHECK_OK(symm_barrier_on_stream(world, s));
        } else {
            CHECK_OK(symm_barrier_all_on_stream(ctx, s));
        }
        CUDA_OK(cudaStreamSynchronize(s));
        int64_t v = 0;
        gpu_read(&v, slot, 0, 8);
        ASSERT_EQ(v, r);
        CHECK_OK(symm_team_sync_on_stream(world, s));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    /* host nbi puts joined by quiet_on_stream */
    int64_t v = 4242;
    CHECK_OK(symm_put_nbi(slot, 0, &v, 1, next));
    CHECK_OK(symm_quiet_on_stream(ctx, s));
    CHECK_OK(symm_barrier_all_on_stream(ctx, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_barrier_all(ctx));
    gpu_read(&v, slot, 0, 8);
    ASSERT_EQ(v, 4242);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(slot));
}

/* Host calls while the stream still has a barrier and a collective to run
 * (what a framework does: it allocates its next tensor while the last
 * collective is queued): symm_buf_alloc large enough to grow the heap, a
 * free, a reduction enqueued after them; then the results. Across hosts the
 * proxy's thread runs the stream calls meanwhile. */
static void test_alloc_while_queued(symm_ctx ctx, cudaStream_t s) {
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    symm_buf v = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 64, &v));
    std::vector<int64_t> mine(64, (int64_t)gpu_me + 1);
    gpu_write(v, 0, mine.data(), 64 * sizeof(int64_t));
    CHECK_OK(symm_barrier_all(ctx));
    for (int r = 0; r < 3; r++) {
        gpu_trace("alloc_while_queued: round %d: barrier and all-reduce enqueued", r);
        CHECK_OK(symm_barrier_all_on_stream(ctx, s));
        CHECK_OK(symm_reduce_on_stream(world, v, 0, v, 0, 64, SYMM_OP_SUM, s));
        symm_buf big = NULL; /* 3 MiB: more than the heap's free chunk (SYMM_HEAP_CHUNK 1M) */
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 3u << 20, &big));
        gpu_trace("alloc_while_queued: round %d: allocated", r);
        CHECK_OK(symm_buf_free(big));
        CHECK_OK(symm_barrier_all_on_stream(ctx, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_trace("alloc_while_queued: round %d: stream done", r);
        std::vector<int64_t> got(64);
        gpu_read(got.data(), v, 0, 64 * sizeof(int64_t));
        int64_t want = (int64_t)gpu_n * (gpu_n + 1) / 2;
        for (int k = 0; k < r; k++) want *= gpu_n;
        for (int i = 0; i < 64; i++)
            if (got[i] != want)
                TEST_FAIL_("alloc while queued, round %d: element %d is %lld, expected %lld", r, i,
                           (long long)got[i], (long long)want);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(v));
}

/* put + put_signal + barrier captured once, replayed R times. */
static void test_graph(symm_ctx ctx, cudaStream_t s) {
    const uint64_t N = 256 << 10;
    const int next = (gpu_me + 1) % gpu_n, prev = (gpu_me + gpu_n - 1) % gpu_n;
    symm_buf a = NULL, b = NULL, src = NULL, sig = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N, &a));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N, &b));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N, &src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &sig));
    CHECK_OK(symm_barrier_all(ctx));
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_OK(symm_put_on_stream(a, 0, gpu_ptr(src), N, next, s));
    CHECK_OK(symm_put_signal_on_stream(b, 0, gpu_ptr(src), N, sig, 0, 1, SYMM_SIGNAL_ADD, next, s));
    CHECK_OK(symm_barrier_all_on_stream(ctx, s));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<uint8_t> host(N), got(N);
    const int R = 10;
    for (int r = 1; r <= R; r++) {
        for (uint64_t i = 0; i < N; i++) host[i] = pat(gpu_me, 100 + r, i);
        gpu_write(src, 0, host.data(), N);
        CHECK_OK(symm_barrier_all(ctx)); /* peers finished reading the previous round */
        CUDA_OK(cudaGraphLaunch(ge, s));
        CUDA_OK(cudaStreamSynchronize(s));
        gpu_read(got.data(), a, 0, N);
        check_bytes(got, N, prev, 100 + r, "graph put");
        gpu_read(got.data(), b, 0, N);
        check_bytes(got, N, prev, 100 + r, "graph put_signal");
        uint64_t sv = 0;
        gpu_read(&sv, sig, 0, 8);
        ASSERT_U64_EQ(sv, (uint64_t)r);
        CHECK_OK(symm_barrier_all(ctx));
    }
    CUDA_OK(cudaGraphExecDestroy(ge));
    CUDA_OK(cudaGraphDestroy(g));

    /* p_on_stream and a collective inside a relaxed-mode capture */
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    int64_t v = 7 + gpu_me;
    CHECK_OK(symm_p_on_stream(sig, 0, &v, next, s)); /* sig is UINT64: 8 bytes */
    CHECK_OK(symm_reduce_on_stream(world, a, 0, src, 0, 4096, SYMM_OP_MAX, s));
    CUDA_OK(cudaStreamEndCapture(s, &g));
    CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    CUDA_OK(cudaGraphLaunch(ge, s));
    CUDA_OK(cudaGraphLaunch(ge, s));
    CUDA_OK(cudaStreamSynchronize(s));
    CHECK_OK(symm_barrier_all(ctx));
    uint64_t sv = 0;
    gpu_read(&sv, sig, 0, 8);
    ASSERT_U64_EQ(sv, (uint64_t)(7 + prev));
    CUDA_OK(cudaGraphExecDestroy(ge));
    CUDA_OK(cudaGraphDestroy(g));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(sig));
    CHECK_OK(symm_buf_free(src));
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_buf_free(a));
}

/* The user's kernels of the chain test: fill with pat(), add one to every byte. */
__global__ void fill_pat(uint8_t *p, uint64_t n, int pe, int round) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = pat(pe, round, i);
}
__global__ void add_one(uint8_t *p, uint64_t n) {
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
         i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = (uint8_t)(p[i] + 1);
}

/* Everything on one stream, no host synchronisation until the end. Per size:
 * a user kernel fills slot 0; then R rounds of: put slot r to the next PE's
 * slot r + 1, barrier_all_on_stream, user kernel adds one to slot r + 1; then
 * a local chain (puts to this PE) copies slot R along K more slots. Slot
 * R + K must hold pat(PE me - R) + R: any operation that overtook the one
 * before it would leave stale bytes. Sizes cover both copy paths. */
static void test_chain(symm_ctx ctx, cudaStream_t s) {
    const int R = 12, K = 12;
    const uint64_t sizes[] = {8, 4096, 65536 + 16, 1 << 20, 2 << 20};
    const int next = (gpu_me + 1) % gpu_n;
    for (uint64_t n : sizes) {
        symm_buf slots = NULL;
        CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, n * (R + K + 1), &slots));
        uint8_t *base = (uint8_t *)gpu_ptr(slots);
        CUDA_OK(cudaMemset(base, 0, n * (R + K + 1)));
        CUDA_OK(cudaDeviceSynchronize());
        CHECK_OK(symm_barrier_all(ctx));
        gpu_trace("chain: %llu bytes", (unsigned long long)n);
        fill_pat<<<64, 256, 0, s>>>(base, n, gpu_me, 7);
        CUDA_OK(cudaGetLastError());
        for (int r = 0; r < R; r++) {
            CHECK_OK(symm_putmem_on_stream(ctx, base + (uint64_t)(r + 1) * n, base + (uint64_t)r * n,
                                           n, next, s));
            CHECK_OK(symm_barrier_all_on_stream(ctx, s));
            gpu_trace("chain: round %d: put and barrier enqueued, launching add_one", r);
            add_one<<<64, 256, 0, s>>>(base + (uint64_t)(r + 1) * n, n);
            CUDA_OK(cudaGetLastError());
            gpu_trace("chain: round %d: add_one launched", r);
        }
        for (int k = 0; k < K; k++)
            CHECK_OK(symm_putmem_on_stream(ctx, base + (uint64_t)(R + k + 1) * n,
                                           base + (uint64_t)(R + k) * n, n, gpu_me, s));
        CUDA_OK(cudaStreamSynchronize(s));
        std::vector<uint8_t> got(n);
        gpu_read(got.data(), slots, (uint64_t)(R + K) * n, n);
        const int from = ((gpu_me - R) % gpu_n + gpu_n) % gpu_n;
        for (uint64_t i = 0; i < n; i++)
            if (got[i] != (uint8_t)(pat(from, 7, i) + R))
                TEST_FAIL_("chain of %llu-byte operations: byte %llu is %u, expected %u",
                           (unsigned long long)n, (unsigned long long)i, got[i],
                           (uint8_t)(pat(from, 7, i) + R));
        CHECK_OK(symm_barrier_all(ctx));
        CHECK_OK(symm_buf_free(slots));
    }
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* Under CUDA's lazy loading a kernel is loaded at its first launch, and the
     * load waits for the device's queued work: launched first while a stream
     * waits for a PE of another host (the chain's add_one after a stream
     * barrier), it can hang the job. So this test's kernels are loaded before
     * (docs/PROXY.md "Lazy loading"; GPU_TEST_NO_WARMUP=1 leaves them lazy). */
    if (!getenv("GPU_TEST_NO_WARMUP")) {
        cudaFuncAttributes fa;
        CUDA_OK(cudaFuncGetAttributes(&fa, fill_pat));
        CUDA_OK(cudaFuncGetAttributes(&fa, add_one));
    }
    gpu_trace("put_get");
    test_put_get(ctx, s);
    gpu_trace("signal_stream");
    if (gpu_n >= 2) test_signal_stream(ctx, s);
    gpu_trace("barriers_on_stream");
    test_barriers_on_stream(ctx, s);
    gpu_trace("chain");
    test_chain(ctx, s);
    gpu_trace("alloc_while_queued");
    test_alloc_while_queued(ctx, s);
    gpu_trace("graph");
    test_graph(ctx, s);
    gpu_trace("done");
    CUDA_OK(cudaStreamDestroy(s));
    gpu_test_fini(&ctx);
    return 0;
}

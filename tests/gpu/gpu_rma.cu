/*
 * CUDA backend, 2+ PEs: heap allocation and growth (zeroed contents, stable
 * addresses), put/get/p/g and their nbi forms with host and device local
 * memory, quiet, fence, raw putmem/getmem, direct peer pointers, and argument
 * errors.
 */
#include "gpu_test.h"

#include <vector>

static void test_heap(symm_ctx ctx) {
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(ctx, &info));
    const uint64_t mapped0 = info.heap_mapped;

    /* a buffer far larger than the first chunk makes every PE grow its heap */
    const uint64_t big_n = 96ull << 20;
    symm_buf small = NULL, big = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 1000, &small));
    void *small_p0 = gpu_ptr(small);
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, big_n, &big));
    CHECK_OK(symm_ctx_query(ctx, &info));
    ASSERT_TRUE(info.heap_mapped >= mapped0 + big_n);
    ASSERT_TRUE(gpu_ptr(small) == small_p0); /* growth keeps addresses */

    std::vector<uint8_t> h(big_n);
    gpu_read(h.data(), big, 0, big_n);
    for (uint64_t i = 0; i < big_n; i += 4093) ASSERT_EQ(h[i], 0); /* starts zeroed */
    ASSERT_EQ(h[big_n - 1], 0);

    /* every PE fills its copy; the next PE reads it all back */
    CUDA_OK(cudaMemset(gpu_ptr(big), 0x11 * (gpu_me + 1), big_n));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_barrier_all(ctx));
    int peer = (gpu_me + 1) % gpu_n;
    CHECK_OK(symm_get(h.data(), big, 0, big_n, peer));
    for (uint64_t i = 0; i < big_n; i += 1)
        if (h[i] != (uint8_t)(0x11 * (peer + 1)))
            TEST_FAIL_("big[%llu] = %u, expected %u", (unsigned long long)i, h[i],
                       (unsigned)(uint8_t)(0x11 * (peer + 1)));

    /* direct peer pointers: the peer's copy is readable through them */
    void *pp = NULL;
    CHECK_OK(symm_buf_peer_ptr(big, peer, &pp));
    if (pp) {
        uint8_t b[4096];
        CUDA_OK(cudaMemcpy(b, (char *)pp + 12345, sizeof b, cudaMemcpyDefault));
        for (int i = 0; i < 4096; i++) ASSERT_EQ(b[i], (uint8_t)(0x11 * (peer + 1)));
        void *pp2 = NULL;
        CHECK_OK(symm_ptr(ctx, (char *)gpu_ptr(big) + 12345, peer, &pp2));
        ASSERT_TRUE(pp2 == (char *)pp + 12345);
    } else {
        printf("[pe %d] note: PE %d is not load/store reachable (no P2P)\n", gpu_me, peer);
    }
    void *self = NULL;
    CHECK_OK(symm_buf_peer_ptr(big, gpu_me, &self));
    ASSERT_TRUE(self == gpu_ptr(big));
    CHECK_STATUS(symm_buf_peer_ptr(big, gpu_n, &self), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(big));

    /* freed space is reused and zeroed again */
    symm_buf again = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 1 << 20, &again));
    std::vector<uint8_t> z(1 << 20);
    gpu_read(z.data(), again, 0, z.size());
    for (size_t i = 0; i < z.size(); i++) ASSERT_EQ(z[i], 0);
    CHECK_OK(symm_buf_free(again));
    CHECK_OK(symm_buf_free(small));
}

static int64_t pat(int pe, uint64_t i) { return ((int64_t)pe << 40) ^ (int64_t)(i * 2654435761u); }

static void test_rma(symm_ctx ctx) {
    const uint64_t N = 1 << 16;
    const int next = (gpu_me + 1) % gpu_n, prev = (gpu_me + gpu_n - 1) % gpu_n;
    symm_buf buf = NULL, flag = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 4 * N, &buf));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 8, &flag));
    std::vector<int64_t> src(N), got(N);
    for (uint64_t i = 0; i < N; i++) src[i] = pat(gpu_me, i);

    /* blocking put from pageable host memory, element range 0 */
    CHECK_OK(symm_put(buf, 0, src.data(), N, next));
    /* from device memory (cudaMalloc), range 1 */
    int64_t *dsrc = NULL;
    CUDA_OK(cudaMalloc(&dsrc, N * sizeof(int64_t)));
    CUDA_OK(cudaMemcpy(dsrc, src.data(), N * sizeof(int64_t), cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_put(buf, N, dsrc, N, next));
    /* nbi puts in pieces, range 2, then quiet */
    for (uint64_t k = 0; k < 16; k++)
        CHECK_OK(symm_put_nbi(buf, 2 * N + k * (N / 16), src.data() + k * (N / 16), N / 16, next));
    CHECK_OK(symm_quiet(ctx));
    /* p into range 3 */
    for (uint64_t i = 0; i < 64; i++) {
        int64_t v = pat(gpu_me, i) + 7;
        CHECK_OK(symm_p(buf, 3 * N + i, &v, next));
    }
    CHECK_OK(symm_barrier_all(ctx));
    for (int r = 0; r < 3; r++) {
        gpu_read(got.data(), buf, (uint64_t)r * N * 8, N * 8);
        for (uint64_t i = 0; i < N; i++)
            if (got[i] != pat(prev, i))
                TEST_FAIL_("range %d element %llu = %lld, expected %lld", r, (unsigned long long)i,
                           (long long)got[i], (long long)pat(prev, i));
    }
    for (uint64_t i = 0; i < 64; i++) {
        int64_t v = 0;
        CHECK_OK(symm_g(buf, 3 * N + i, gpu_me, &v));
        ASSERT_EQ(v, pat(prev, i) + 7);
    }

    /* gets: blocking to host, nbi to device memory, g */
    CHECK_OK(symm_get(got.data(), buf, 0, N, next));
    for (uint64_t i = 0; i < N; i++) ASSERT_EQ(got[i], pat(gpu_me, i)); /* next holds mine */
    CUDA_OK(cudaMemset(dsrc, 0, N * 8));
    CUDA_OK(cudaDeviceSynchronize());
    CHECK_OK(symm_get_nbi(dsrc, buf, N, N, next));
    CHECK_OK(symm_quiet(ctx));
    CUDA_OK(cudaMemcpy(got.data(), dsrc, N * 8, cudaMemcpyDeviceToHost));
    for (uint64_t i = 0; i < N; i++) ASSERT_EQ(got[i], pat(gpu_me, i));
    int64_t g = 0;
    CHECK_OK(symm_g(buf, 3 * N + 5, next, &g));
    ASSERT_EQ(g, pat(gpu_me, 5) + 7);

    /* fence: data then flag; the target sees the data once it sees the flag */
    CHECK_OK(symm_barrier_all(ctx));
    for (int64_t round = 1; round <= 20; round++) {
        for (uint64_t i = 0; i < 256; i++) src[i] = pat(gpu_me, i) + round;
        CHECK_OK(symm_put_nbi(buf, 0, src.data(), 256, next));
        CHECK_OK(symm_fence(ctx));
        CHECK_OK(symm_p(flag, 0, &round, next));
        CHECK_OK(symm_wait_until(flag, 0, SYMM_CMP_GE, &round));
        gpu_read(got.data(), buf, 0, 256 * 8);
        for (uint64_t i = 0; i < 256; i++) ASSERT_EQ(got[i], pat(prev, i) + round);
        CHECK_OK(symm_barrier_all(ctx));
    }

    /* raw byte forms on symmetric addresses */
    char *base = (char *)gpu_ptr(buf);
    const char msg[] = "symmetric hello";
    CHECK_OK(symm_putmem(ctx, base + 1001, msg, sizeof msg, next));
    CHECK_OK(symm_putmem_nbi(ctx, base + 2001, msg, sizeof msg, next));
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_barrier_all(ctx));
    char back[sizeof msg];
    CHECK_OK(symm_getmem(ctx, back, base + 1001, sizeof msg, gpu_me));
    ASSERT_TRUE(memcmp(back, msg, sizeof msg) == 0);
    CHECK_OK(symm_getmem_nbi(ctx, back, base + 2001, sizeof msg, next));
    CHECK_OK(symm_quiet(ctx));
    ASSERT_TRUE(memcmp(back, msg, sizeof msg) == 0);

    /* argument errors */
    CHECK_STATUS(symm_put(buf, 4 * N - 1, src.data(), 2, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put(buf, 0, src.data(), 1, gpu_n), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_get(NULL, buf, 0, 1, next), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_putmem(ctx, src.data(), msg, 4, next), SYMM_ERR_OUT_OF_BOUNDS);

    CHECK_OK(symm_barrier_all(ctx));
    CUDA_OK(cudaFree(dsrc));
    CHECK_OK(symm_buf_free(flag));
    CHECK_OK(symm_buf_free(buf));
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    test_heap(ctx);
    test_rma(ctx);
    gpu_test_fini(&ctx);
    return 0;
}

/*
 * CUDA backend, 2+ PEs: barriers (barrier_all, sync_all, team barrier),
 * signals (put_signal SET/ADD, nbi, signal_op, fetch, every comparison of
 * signal_wait_until) and atomics (every op on 32/64-bit integers, fetch/set/
 * swap/compare_swap on floats, concurrent fetch_add from every PE).
 */
#include "gpu_test.h"

#include <vector>

static void test_barriers(symm_ctx ctx) {
    /* each round: write the round into the next PE, barrier, check mine */
    symm_buf slot = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1, &slot));
    const int next = (gpu_me + 1) % gpu_n;
    symm_team world = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    for (int64_t r = 1; r <= 300; r++) {
        CHECK_OK(symm_p(slot, 0, &r, next));
        if (r % 3 == 0)
            CHECK_OK(symm_barrier(world));
        else
            CHECK_OK(symm_barrier_all(ctx));
        int64_t v = 0;
        gpu_read(&v, slot, 0, 8);
        ASSERT_EQ(v, r);
        CHECK_OK(symm_sync_all(ctx)); /* nobody overwrites before everyone read */
    }
    CHECK_OK(symm_team_sync(world));
    CHECK_OK(symm_buf_free(slot));
}

static int64_t pat(int pe, int round, uint64_t i) {
    return ((int64_t)pe << 40) ^ ((int64_t)round << 20) ^ (int64_t)i;
}

static void test_signals(symm_ctx ctx) {
    const uint64_t N = 4096;
    const int next = (gpu_me + 1) % gpu_n, prev = (gpu_me + gpu_n - 1) % gpu_n;
    symm_buf data = NULL, sig = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 2 * N, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8, &sig));
    std::vector<int64_t> msg(N), got(N);
    for (int r = 1; r <= 10; r++) {
        for (uint64_t i = 0; i < N; i++) msg[i] = pat(gpu_me, r, i);
        CHECK_OK(symm_put_signal(data, 0, msg.data(), N, sig, 0, (uint64_t)r, SYMM_SIGNAL_SET, next));
        CHECK_OK(symm_put_signal_nbi(data, N, msg.data(), N, sig, 1, 1, SYMM_SIGNAL_ADD, next));
        uint64_t seen = 0;
        CHECK_OK(symm_signal_wait_until(sig, 0, SYMM_CMP_GE, (uint64_t)r, &seen));
        ASSERT_U64_EQ(seen, (uint64_t)r);
        CHECK_OK(symm_signal_wait_until(sig, 1, SYMM_CMP_EQ, (uint64_t)r, NULL));
        for (int half = 0; half < 2; half++) {
            gpu_read(got.data(), data, (uint64_t)half * N * 8, N * 8);
            for (uint64_t i = 0; i < N; i++) ASSERT_EQ(got[i], pat(prev, r, i));
        }
        CHECK_OK(symm_quiet(ctx));
        CHECK_OK(symm_barrier_all(ctx)); /* the sender may overwrite now */
    }
    /* signal_op + fetch: every PE adds to PE 0's slot 2 */
    for (int k = 0; k < 5; k++) CHECK_OK(symm_signal_op(sig, 2, 3, SYMM_SIGNAL_ADD, 0));
    CHECK_OK(symm_barrier_all(ctx));
    if (gpu_me == 0) {
        uint64_t v = 0;
        CHECK_OK(symm_signal_fetch(sig, 2, &v));
        ASSERT_U64_EQ(v, 15ull * gpu_n);
    }
    /* every comparison: PE 0 sets 10 in everyone's slot 3 */
    if (gpu_me == 0)
        for (int pe = 0; pe < gpu_n; pe++) CHECK_OK(symm_signal_op(sig, 3, 10, SYMM_SIGNAL_SET, pe));
    const uint32_t cmps[6] = {SYMM_CMP_EQ, SYMM_CMP_NE, SYMM_CMP_GT,
                              SYMM_CMP_GE, SYMM_CMP_LT, SYMM_CMP_LE};
    const uint64_t vals[6] = {10, 9, 9, 10, 11, 10};
    for (int c = 0; c < 6; c++) {
        uint64_t seen = 0;
        CHECK_OK(symm_signal_wait_until(sig, 3, cmps[c], vals[c], &seen));
        ASSERT_U64_EQ(seen, 10);
    }
    CHECK_STATUS(symm_signal_op(data, 0, 1, SYMM_SIGNAL_SET, next), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_op(sig, 0, 1, 7, next), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(sig));
    CHECK_OK(symm_buf_free(data));
}

template <typename T> static void amo_int(symm_ctx ctx, uint32_t dtype) {
    symm_buf b = NULL;
    CHECK_OK(symm_buf_alloc(ctx, dtype, 8, &b));
    const int K = 50;
    /* concurrent fetch_add from every PE on PE 0's element 0 */
    std::vector<T> seen;
    for (int k = 0; k < K; k++) {
        T one = 1, old = 0;
        CHECK_OK(symm_atomic(b, 0, SYMM_AMO_FETCH_ADD, &one, NULL, 0, &old));
        seen.push_back(old);
        CHECK_OK(symm_atomic(b, 1, SYMM_AMO_INC, NULL, NULL, 0, NULL));
    }
    for (int k = 1; k < K; k++) ASSERT_TRUE(seen[k] > seen[k - 1]);
    CHECK_OK(symm_barrier_all(ctx));
    T v = 0;
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_FETCH, NULL, NULL, 0, &v));
    ASSERT_EQ(v, (T)(K * gpu_n));
    CHECK_OK(symm_atomic(b, 1, SYMM_AMO_FETCH, NULL, NULL, 0, &v));
    ASSERT_EQ(v, (T)(K * gpu_n));
    CHECK_OK(symm_barrier_all(ctx));
    /* single-PE semantics on the next PE's element 2 + my PE */
    const int next = (gpu_me + 1) % gpu_n;
    const uint64_t e = 2 + (uint64_t)gpu_me % 6;
    T x = (T)0x5a, old = 0, cmp = 0;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_SET, &x, NULL, next, NULL));
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH, NULL, NULL, next, &old));
    ASSERT_EQ(old, (T)0x5a);
    x = (T)0x0f;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH_AND, &x, NULL, next, &old));
    ASSERT_EQ(old, (T)0x5a);
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH, NULL, NULL, next, &old));
    ASSERT_EQ(old, (T)0x0a);
    x = (T)0x30;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_OR, &x, NULL, next, NULL));
    x = (T)0x3f;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH_XOR, &x, NULL, next, &old));
    ASSERT_EQ(old, (T)0x3a);
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH, NULL, NULL, next, &old));
    ASSERT_EQ(old, (T)0x05);
    x = (T)77;
    cmp = (T)4; /* fails */
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_COMPARE_SWAP, &x, &cmp, next, &old));
    ASSERT_EQ(old, (T)5);
    cmp = (T)5; /* succeeds */
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_COMPARE_SWAP, &x, &cmp, next, &old));
    ASSERT_EQ(old, (T)5);
    x = (T)-3;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_SWAP, &x, NULL, next, &old));
    ASSERT_EQ(old, (T)77);
    x = (T)10;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH_ADD, &x, NULL, next, &old));
    ASSERT_EQ(old, (T)-3);
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_FETCH_INC, NULL, NULL, next, &old));
    ASSERT_EQ(old, (T)7);
    x = (T)1;
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_XOR, &x, NULL, next, NULL));
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_AND, &x, NULL, next, NULL));
    CHECK_OK(symm_atomic(b, e, SYMM_AMO_ADD, &x, NULL, next, NULL));
    CHECK_OK(symm_atomic_nbi(b, e, SYMM_AMO_FETCH, NULL, NULL, next, &old));
    CHECK_OK(symm_quiet(ctx));
    ASSERT_EQ(old, (T)2); /* 8 ^ 1 = 9, & 1 = 1, + 1 = 2 */
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(b));
}

template <typename T> static void amo_float(symm_ctx ctx, uint32_t dtype) {
    symm_buf b = NULL;
    CHECK_OK(symm_buf_alloc(ctx, dtype, 4, &b));
    const int next = (gpu_me + 1) % gpu_n;
    T x = (T)1.5, old = 0, cmp = 0;
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_SET, &x, NULL, next, NULL));
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_FETCH, NULL, NULL, next, &old));
    ASSERT_TRUE(old == (T)1.5);
    x = (T)-2.25;
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_SWAP, &x, NULL, next, &old));
    ASSERT_TRUE(old == (T)1.5);
    cmp = (T)-2.25;
    x = (T)8.0;
    /* the core defines FETCH, SET and SWAP on floats, not COMPARE_SWAP */
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_COMPARE_SWAP, &x, &cmp, next, &old),
                 SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_SET, &x, NULL, next, NULL));
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_FETCH, NULL, NULL, next, &old));
    ASSERT_TRUE(old == (T)8.0);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_ADD, &x, NULL, next, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(b));
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    test_barriers(ctx);
    test_signals(ctx);
    amo_int<int32_t>(ctx, SYMM_DTYPE_INT32);
    amo_int<uint32_t>(ctx, SYMM_DTYPE_UINT32);
    amo_int<int64_t>(ctx, SYMM_DTYPE_INT64);
    amo_int<uint64_t>(ctx, SYMM_DTYPE_UINT64);
    amo_float<float>(ctx, SYMM_DTYPE_FLOAT32);
    amo_float<double>(ctx, SYMM_DTYPE_FLOAT64);
    gpu_test_fini(&ctx);
    return 0;
}

/* Multi-PE RMA on the foundation API: ring put/get, p/g, nbi + quiet, raw
 * putmem/getmem, fence ordering, barriers, symm_ptr, ctx_query. */
#include <string.h>

#include "symm_test.h"

static symm_ctx ctx;
static int me, n;

static int64_t val(int pe, uint64_t i) { return (int64_t)pe * 1000003 + (int64_t)i * 7 - 11; }

static void test_ring_put_get(void) {
    enum { N = 1000 };
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, N, &buf));
    static int64_t local[N];
    symm_test_read_local(ctx, buf, 0, N, local);
    for (uint64_t i = 0; i < N; i++) ASSERT_EQ(local[i], 0); /* zeroed */
    CHECK_OK(symm_barrier_all(ctx)); /* nobody writes before everyone checked */
    int64_t src[N];
    for (uint64_t i = 0; i < N; i++) src[i] = val(me, i);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK_OK(symm_put(buf, 0, src, N, next));
    CHECK_OK(symm_barrier_all(ctx));
    symm_test_read_local(ctx, buf, 0, N, local);
    for (uint64_t i = 0; i < N; i++) ASSERT_EQ(local[i], val(prev, i));
    /* get from the next PE what it received (from me) */
    int64_t back[N];
    CHECK_OK(symm_get(back, buf, 0, N, next));
    for (uint64_t i = 0; i < N; i++) ASSERT_EQ(back[i], val(me, i));
    /* partial ranges at an offset */
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_put(buf, 500, src + 10, 7, next));
    CHECK_OK(symm_barrier_all(ctx));
    symm_test_read_local(ctx, buf, 0, N, local);
    for (uint64_t i = 0; i < 7; i++) ASSERT_EQ(local[500 + i], val(prev, 10 + i));
    ASSERT_EQ(local[499], val(prev, 499));
    ASSERT_EQ(local[507], val(prev, 507));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
}

static void test_p_g(void) {
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, (uint64_t)n, &buf));
    /* every PE writes its value into slot me on every PE */
    for (int pe = 0; pe < n; pe++) {
        double v = me + 0.25 * pe;
        CHECK_OK(symm_p(buf, (uint64_t)me, &v, pe));
    }
    CHECK_OK(symm_barrier_all(ctx));
    for (int pe = 0; pe < n; pe++) {
        for (int k = 0; k < n; k++) {
            double got = -1;
            CHECK_OK(symm_g(buf, (uint64_t)k, pe, &got));
            ASSERT_DBL_NEAR(got, k + 0.25 * pe, 0);
        }
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
}

static void test_nbi_quiet(void) {
    enum { CHUNK = 64, K = 32 };
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT32, CHUNK * K, &buf));
    static uint32_t src[CHUNK * K];
    for (uint32_t i = 0; i < CHUNK * K; i++) src[i] = (uint32_t)me << 20 | i;
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    for (int k = 0; k < K; k++) CHECK_OK(symm_put_nbi(buf, (uint64_t)k * CHUNK, src + k * CHUNK, CHUNK, next));
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_barrier_all(ctx));
    static uint32_t local[CHUNK * K];
    symm_test_read_local(ctx, buf, 0, CHUNK * K, local);
    for (uint32_t i = 0; i < CHUNK * K; i++) ASSERT_EQ(local[i], (uint32_t)prev << 20 | i);
    static uint32_t got[CHUNK * K];
    for (int k = 0; k < K; k++) CHECK_OK(symm_get_nbi(got + k * CHUNK, buf, (uint64_t)k * CHUNK, CHUNK, next));
    CHECK_OK(symm_quiet(ctx));
    for (uint32_t i = 0; i < CHUNK * K; i++) ASSERT_EQ(got[i], (uint32_t)me << 20 | i);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
}

static void test_raw(void) {
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 4096, &buf));
    uint8_t *base;
    CHECK_OK(symm_buf_ptr(buf, (void **)&base));
    uint8_t msg[100];
    for (int i = 0; i < 100; i++) msg[i] = (uint8_t)(me * 31 + i);
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK_OK(symm_putmem(ctx, base + 123, msg, sizeof msg, next));
    CHECK_OK(symm_putmem_nbi(ctx, base + 1000, msg, 10, next));
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_barrier_all(ctx));
    uint8_t mine[4096];
    symm_test_read_local(ctx, buf, 0, sizeof mine, mine);
    for (int i = 0; i < 100; i++) ASSERT_EQ(mine[123 + i], (uint8_t)(prev * 31 + i));
    for (int i = 0; i < 10; i++) ASSERT_EQ(mine[1000 + i], (uint8_t)(prev * 31 + i));
    uint8_t got[100];
    CHECK_OK(symm_getmem(ctx, got, base + 123, sizeof got, next));
    for (int i = 0; i < 100; i++) ASSERT_EQ(got[i], (uint8_t)(me * 31 + i));
    memset(got, 0, sizeof got);
    CHECK_OK(symm_getmem_nbi(ctx, got, base + 123, sizeof got, prev));
    CHECK_OK(symm_quiet(ctx));
    int pp = (prev + n - 1) % n;
    for (int i = 0; i < 100; i++) ASSERT_EQ(got[i], (uint8_t)(pp * 31 + i));
    /* symm_ptr gives a direct mapping (host memory on the host backend) */
    void *peer = NULL;
    CHECK_OK(symm_ptr(ctx, base + 123, next, &peer));
    /* ... for PEs of this host only: NULL for other (simulated) hosts */
    ASSERT_EQ(peer != NULL, symm_test_shared(ctx, next));
    for (int pe = 0; pe < n; pe++) {
        void *q = NULL;
        CHECK_OK(symm_buf_peer_ptr(buf, pe, &q));
        ASSERT_EQ(q != NULL, symm_test_shared(ctx, pe));
    }
    symm_ctx_info bi = {.struct_size = sizeof bi};
    CHECK_OK(symm_ctx_query(ctx, &bi));
    if (bi.backend == SYMM_BACKEND_HOST && peer) ASSERT_EQ(((uint8_t *)peer)[0], (uint8_t)(me * 31));
    /* outside the heap */
    uint8_t stack_var = 0;
    CHECK_STATUS(symm_putmem(ctx, &stack_var, msg, 1, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_getmem(ctx, got, &stack_var, 1, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_ptr(ctx, &stack_var, next, &peer), SYMM_ERR_OUT_OF_BOUNDS);
    symm_ctx_info info = {.struct_size = sizeof info};
    CHECK_OK(symm_ctx_query(ctx, &info));
    CHECK_STATUS(symm_putmem(ctx, base, msg, info.heap_mapped, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
}

/* fence: data then flag to the same PE; a reader that sees the flag sees the
 * data. Repeated to give reordering a chance. */
static void test_fence(void) {
    enum { ROUNDS = 200, LEN = 256 };
    symm_buf data, flag;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, LEN, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1, &flag));
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    int64_t src[LEN], ldata[LEN];
    for (int r = 1; r <= ROUNDS; r++) {
        for (int i = 0; i < LEN; i++) src[i] = (int64_t)r * 100000 + me * 1000 + i;
        CHECK_OK(symm_put(data, 0, src, LEN, next));
        CHECK_OK(symm_fence(ctx));
        int64_t rv = r;
        CHECK_OK(symm_p(flag, 0, &rv, next));
        int64_t want = r;
        CHECK_OK(symm_wait_until(flag, 0, SYMM_CMP_GE, &want));
        symm_test_read_local(ctx, data, 0, LEN, ldata);
        for (int i = 0; i < LEN; i++) ASSERT_EQ(ldata[i], (int64_t)r * 100000 + prev * 1000 + i);
        CHECK_OK(symm_barrier_all(ctx));
    }
    CHECK_OK(symm_buf_free(flag));
    CHECK_OK(symm_buf_free(data));
}

/* barrier: every PE increments a counter on every PE between barriers; after
 * each barrier everyone must see the full count. */
static void test_barrier(void) {
    symm_buf cnt;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, (uint64_t)n, &cnt));
    int64_t local[64];
    for (int r = 1; r <= 100; r++) {
        for (int pe = 0; pe < n; pe++) {
            int64_t v = r;
            CHECK_OK(symm_p(cnt, (uint64_t)me, &v, pe));
        }
        CHECK_OK(symm_barrier_all(ctx));
        symm_test_read_local(ctx, cnt, 0, (uint64_t)n, local);
        for (int pe = 0; pe < n; pe++) ASSERT_EQ(local[pe], r);
        CHECK_OK(symm_sync_all(ctx));
    }
    CHECK_OK(symm_buf_free(cnt));
}

static void test_query(void) {
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(ctx, &info));
    ASSERT_EQ(info.my_pe, me);
    ASSERT_EQ(info.n_pes, n);
    ASSERT_TRUE(info.local_n_pes >= 1 && info.local_n_pes <= n);
    ASSERT_TRUE(info.local_pe >= 0 && info.local_pe < n);
    ASSERT_TRUE(info.heap_mapped >= (1u << 20));
    ASSERT_TRUE(info.heap_cap >= info.heap_mapped);
    /* an older, smaller struct is filled only up to its size */
    struct { symm_ctx_info i; char tail[16]; } small;
    memset(&small, 0x5a, sizeof small);
    small.i.struct_size = (uint32_t)offsetof(symm_ctx_info, heap_cap);
    CHECK_OK(symm_ctx_query(ctx, &small.i));
    ASSERT_EQ(small.i.my_pe, me);
    ASSERT_EQ(((unsigned char *)&small.i)[offsetof(symm_ctx_info, heap_cap)], 0x5a);
    uint32_t v = 0;
    CHECK_OK(symm_get_version(&v));
    ASSERT_EQ(v, SYMM_VERSION);
}

int main(void) {
    ctx = symm_test_init(SYMM_BACKEND_AUTO);
    me = symm_my_pe(ctx);
    n = symm_n_pes(ctx);
    ASSERT_TRUE(n >= 1 && me >= 0 && me < n);
    test_query();
    test_ring_put_get();
    test_p_g();
    test_nbi_quiet();
    test_raw();
    test_fence();
    test_barrier();
    CHECK_OK(symm_finalize(&ctx));
    ASSERT_TRUE(ctx == NULL);
    if (me == 0) printf("rma: %d PEs passed\n", n);
    return 0;
}

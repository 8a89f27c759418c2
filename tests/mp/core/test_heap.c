/* Collective allocation: many sizes, interleaved frees, growth past the first
 * chunk, identical offsets on every PE, mismatch detection, the cap, errors on
 * bad handles and bounds, several contexts in one process, thread levels. */
#include <dirent.h>
#include <pthread.h>
#include <string.h>

#include "symm_test.h"

static symm_ctx ctx;
static int me, n;

/* Every PE must hold the same offset for the same allocation. */
static void check_same_offset(symm_buf b) {
    uint64_t off;
    CHECK_OK(symm_buf_query(b, NULL, NULL, &off));
    symm_buf offs;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, (uint64_t)n, &offs));
    for (int pe = 0; pe < n; pe++) CHECK_OK(symm_p(offs, (uint64_t)me, &off, pe));
    CHECK_OK(symm_barrier_all(ctx));
    uint64_t all[64];
    symm_test_read_local(ctx, offs, 0, (uint64_t)n, all);
    for (int pe = 0; pe < n; pe++) ASSERT_U64_EQ(all[pe], off);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(offs));
}

static void test_sequences(void) {
    enum { K = 40 };
    symm_buf bufs[K] = {0};
    uint64_t counts[K];
    unsigned seed = 777; /* same on every PE: a collective sequence */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    for (int step = 0; step < 200; step++) {
        int i = (int)(rand_r(&seed) % K);
        if (bufs[i]) {
            /* verify contents written earlier, then free */
            for (uint64_t k = 0; k < counts[i]; k += 97) {
                int32_t v;
                symm_test_read_local(ctx, bufs[i], k, 1, &v);
                ASSERT_EQ(v, (int32_t)(prev * 7 + i + (int)k));
            }
            CHECK_OK(symm_buf_free(bufs[i]));
            bufs[i] = NULL;
        } else {
            /* sizes from 0 to ~3 MiB: growth past the 1 MiB test chunk */
            uint64_t c = rand_r(&seed) % 4 == 0 ? (uint64_t)(rand_r(&seed) % (800 * 1024))
                                                : (uint64_t)(rand_r(&seed) % 5000);
            counts[i] = c;
            CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, c, &bufs[i]));
            uint32_t dt;
            uint64_t cnt;
            CHECK_OK(symm_buf_query(bufs[i], &dt, &cnt, NULL));
            ASSERT_EQ(dt, SYMM_DTYPE_INT32);
            ASSERT_U64_EQ(cnt, c);
            for (uint64_t k = 0; k < c; k += 97) {
                int32_t v = -1;
                symm_test_read_local(ctx, bufs[i], k, 1, &v);
                ASSERT_EQ(v, 0);
            }
            CHECK_OK(symm_barrier_all(ctx)); /* nobody writes before everyone checked */
            for (uint64_t k = 0; k < c; k += 97) {
                int32_t v = (int32_t)(me * 7 + i + (int)k);
                CHECK_OK(symm_p(bufs[i], k, &v, next));
            }
            CHECK_OK(symm_barrier_all(ctx));
        }
        if (step % 50 == 0 && bufs[i]) check_same_offset(bufs[i]);
    }
    symm_ctx_info info = {.struct_size = sizeof info};
    CHECK_OK(symm_ctx_query(ctx, &info));
    ASSERT_TRUE(info.heap_mapped > (1u << 20)); /* it grew past the first chunk */
    for (int i = 0; i < K; i++) CHECK_OK(symm_buf_free(bufs[i]));
    CHECK_OK(symm_ctx_query(ctx, &info));
    ASSERT_U64_EQ(info.heap_used, 0);
}

static void test_mismatch(void) {
    symm_buf b = NULL;
    if (n > 1) {
        /* PE 0 asks for a different count: every PE gets MISMATCH, nothing is
         * allocated, and the heap keeps working. */
        CHECK_STATUS(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, me == 0 ? 10 : 20, &b), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(b == NULL);
        CHECK_STATUS(symm_buf_alloc(ctx, me == 0 ? SYMM_DTYPE_INT32 : SYMM_DTYPE_FLOAT32, 10, &b),
                     SYMM_ERR_MISMATCH);
        /* One PE's own argument error: it gets that error, the others
         * MISMATCH naming it at once (nobody waits for it), nothing is
         * allocated. */
        const int bad = n - 1;
        CHECK_STATUS(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, me == bad ? 1ull << 60 : 10, &b),
                     me == bad ? SYMM_ERR_OUT_OF_MEMORY : SYMM_ERR_MISMATCH);
        ASSERT_TRUE(b == NULL);
        char want[64];
        snprintf(want, sizeof want, "PE %d rejected its arguments", bad);
        if (me == bad) ASSERT_TRUE(strstr(symm_last_error(), "heap cap") != NULL);
        else ASSERT_TRUE(strstr(symm_last_error(), want) != NULL);
        CHECK_STATUS(symm_buf_alloc(ctx, me == bad ? 99u : SYMM_DTYPE_INT32, 10, &b),
                     me == bad ? SYMM_ERR_INVALID_ARG : SYMM_ERR_MISMATCH);
        ASSERT_TRUE(b == NULL);
        CHECK_STATUS(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 10, me == bad ? NULL : &b),
                     me == bad ? SYMM_ERR_INVALID_ARG : SYMM_ERR_MISMATCH);
        ASSERT_TRUE(b == NULL);
        symm_ctx_info info = {.struct_size = sizeof info};
        CHECK_OK(symm_ctx_query(ctx, &info));
        ASSERT_U64_EQ(info.heap_used, 0);
    }
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 10, &b));
    check_same_offset(b);
    CHECK_OK(symm_buf_free(b));
}

static void test_cap_and_errors(void) {
    symm_buf b = NULL;
    /* beyond the cap: every PE fails the same way, nothing changes */
    CHECK_STATUS(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1ull << 60, &b), SYMM_ERR_OUT_OF_MEMORY);
    CHECK_STATUS(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, (128ull << 20) / 8, &b), SYMM_ERR_OUT_OF_MEMORY);
    ASSERT_TRUE(b == NULL);
    CHECK_STATUS(symm_buf_alloc(ctx, 99, 10, &b), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_buf_alloc(ctx, SYMM_DTYPE_INT8, 10, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_buf_alloc(NULL, SYMM_DTYPE_INT8, 10, &b), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_buf_alloc((symm_ctx)(uintptr_t)0x1234, SYMM_DTYPE_INT8, 10, &b), SYMM_ERR_INVALID_HANDLE);

    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT16, 100, &b));
    int16_t v[200] = {0};
    int next = (me + 1) % n;
    CHECK_STATUS(symm_put(b, 0, v, 101, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put(b, 100, v, 1, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put(b, UINT64_MAX, v, 2, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_get(v, b, 1, UINT64_MAX, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_p(b, 100, v, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_g(b, 100, next, v), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put_nbi(b, 99, v, 2, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_get_nbi(v, b, 99, 2, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put(b, 0, v, 1, n), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_put(b, 0, v, 1, -1), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_put(b, 0, NULL, 1, next), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_put(b, 100, NULL, 0, next)); /* empty range at the end is fine */
    CHECK_STATUS(symm_put((symm_buf)(uintptr_t)0xdeadbeef, 0, v, 1, next), SYMM_ERR_INVALID_HANDLE);
    /* the exact last element works */
    int16_t x = 42;
    CHECK_OK(symm_p(b, 99, &x, next));
    CHECK_OK(symm_barrier_all(ctx));
    int16_t last = 0;
    symm_test_read_local(ctx, b, 99, 1, &last);
    ASSERT_EQ(last, 42);
    CHECK_OK(symm_buf_free(b));
    /* stale handle after free */
    CHECK_STATUS(symm_put(b, 0, v, 1, next), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_buf_free(b), SYMM_ERR_INVALID_HANDLE);
    void *p;
    CHECK_STATUS(symm_buf_ptr(b, &p), SYMM_ERR_INVALID_HANDLE);
    CHECK_OK(symm_buf_free(NULL));
    /* a zero-element buffer is valid and empty */
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 0, &b));
    CHECK_STATUS(symm_p(b, 0, v, next), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_OK(symm_buf_free(b));
    /* registering caller memory is a CUDA feature: a clear status elsewhere */
    symm_ctx_info ci = {.struct_size = sizeof ci};
    CHECK_OK(symm_ctx_query(ctx, &ci));
    if (ci.backend == SYMM_BACKEND_HOST) {
        static int32_t mine[16];
        b = NULL;
        CHECK_STATUS(symm_buf_register(ctx, mine, SYMM_DTYPE_INT32, 16, &b), SYMM_ERR_NOT_SUPPORTED);
        ASSERT_TRUE(b == NULL);
        CHECK_STATUS(symm_buf_register(ctx, NULL, SYMM_DTYPE_INT32, 16, &b), SYMM_ERR_INVALID_ARG);
    }
    ASSERT_EQ(symm_my_pe(NULL), -1);
    ASSERT_EQ(symm_n_pes((symm_ctx)(uintptr_t)77), -1);
    CHECK_STATUS(symm_barrier_all(NULL), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_quiet(NULL), SYMM_ERR_INVALID_HANDLE);
}

static int count_fds(void) {
    int count = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return -1;
    while (readdir(d)) count++;
    closedir(d);
    return count;
}

/* A second, independent context in the same process (two libraries); its
 * init/finalize cycle leaves no descriptor behind. */
static void test_two_contexts(void) {
    int fds_before = count_fds();
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    symm_ctx_info ci = {.struct_size = sizeof ci};
    CHECK_OK(symm_ctx_query(ctx, &ci));
    attr.backend = ci.backend;
    attr.heap_cap = 8u << 20;
    symm_ctx c2 = NULL;
    CHECK_OK(symm_init(&attr, &c2));
    ASSERT_EQ(symm_my_pe(c2), me);
    ASSERT_EQ(symm_n_pes(c2), n);
    symm_buf a, b;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 4, &a));
    CHECK_OK(symm_buf_alloc(c2, SYMM_DTYPE_INT32, 4, &b));
    int32_t va = 100 + me, vb = 200 + me;
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    CHECK_OK(symm_p(a, 0, &va, next));
    CHECK_OK(symm_p(b, 0, &vb, next));
    CHECK_OK(symm_barrier_all(c2));
    CHECK_OK(symm_barrier_all(ctx));
    int32_t va2 = 0, vb2 = 0;
    void *pa, *pb;
    symm_test_read_local(ctx, a, 0, 1, &va2);
    symm_test_read_local(c2, b, 0, 1, &vb2);
    ASSERT_EQ(va2, 100 + prev);
    ASSERT_EQ(vb2, 200 + prev);
    CHECK_OK(symm_buf_ptr(a, &pa));
    CHECK_OK(symm_buf_ptr(b, &pb));
    ASSERT_TRUE(pa != pb);
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_finalize(&c2));
    CHECK_STATUS(symm_buf_ptr(b, &pb), SYMM_ERR_INVALID_HANDLE);
    CHECK_OK(symm_finalize(&c2)); /* NULL now: accepted */
    ASSERT_EQ(count_fds(), fds_before);
    CHECK_OK(symm_buf_free(a));
}

/* SYMM_THREAD_MULTIPLE: several threads doing RMA at once. */
typedef struct targ { symm_buf b; int t; } targ;
static void *worker(void *p) {
    targ *a = p;
    int next = (me + 1) % n;
    for (int i = 0; i < 200; i++) {
        int64_t v = (int64_t)me * 1000000 + a->t * 1000 + i;
        if (symm_p(a->b, (uint64_t)(a->t * 200 + i), &v, next) != SYMM_SUCCESS) return (void *)1;
    }
    return NULL;
}

static void test_threads(void) {
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.thread_level = SYMM_THREAD_MULTIPLE;
    symm_ctx_info ci = {.struct_size = sizeof ci};
    CHECK_OK(symm_ctx_query(ctx, &ci));
    attr.backend = ci.backend;
    symm_ctx c3 = NULL;
    CHECK_OK(symm_init(&attr, &c3));
    symm_ctx_info info = {.struct_size = sizeof info};
    CHECK_OK(symm_ctx_query(c3, &info));
    ASSERT_EQ(info.thread_level, SYMM_THREAD_MULTIPLE);
    enum { T = 4 };
    symm_buf b;
    CHECK_OK(symm_buf_alloc(c3, SYMM_DTYPE_INT64, T * 200, &b));
    pthread_t th[T];
    targ args[T];
    for (int t = 0; t < T; t++) {
        args[t] = (targ){b, t};
        ASSERT_EQ(pthread_create(&th[t], NULL, worker, &args[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        void *r;
        pthread_join(th[t], &r);
        ASSERT_TRUE(r == NULL);
    }
    CHECK_OK(symm_barrier_all(c3));
    static int64_t p[T * 200];
    symm_test_read_local(c3, b, 0, T * 200, p);
    int prev = (me + n - 1) % n;
    for (int t = 0; t < T; t++)
        for (int i = 0; i < 200; i++) ASSERT_EQ(p[t * 200 + i], (int64_t)prev * 1000000 + t * 1000 + i);
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_finalize(&c3));
}

/* FUNNELED: another thread gets THREAD_LEVEL, not a silent race. */
static void *funneled_other(void *p) {
    symm_ctx c = p;
    return (void *)(intptr_t)symm_quiet(c);
}

static void test_funneled(void) {
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.thread_level = SYMM_THREAD_FUNNELED;
    symm_ctx_info ci = {.struct_size = sizeof ci};
    CHECK_OK(symm_ctx_query(ctx, &ci));
    attr.backend = ci.backend;
    symm_ctx c4 = NULL;
    CHECK_OK(symm_init(&attr, &c4));
    CHECK_OK(symm_quiet(c4));
    pthread_t th;
    void *r;
    ASSERT_EQ(pthread_create(&th, NULL, funneled_other, c4), 0);
    pthread_join(th, &r);
    ASSERT_EQ((intptr_t)r, SYMM_ERR_THREAD_LEVEL);
    CHECK_OK(symm_finalize(&c4));
}

int main(void) {
    ctx = symm_test_init(SYMM_BACKEND_AUTO);
    me = symm_my_pe(ctx);
    n = symm_n_pes(ctx);
    test_sequences();
    test_mismatch();
    test_cap_and_errors();
    test_two_contexts();
    test_threads();
    test_funneled();
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("heap: %d PEs passed\n", n);
    return 0;
}

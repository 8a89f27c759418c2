/* The small entries on the host backend's direct path (api/entry.h,
 * symm__cpu_peer: the copy, CPU atomic or fence done inline): every check
 * still runs and names its entry (stale handles, FUNNELED from another
 * thread, a PE outside the job, an element outside the buffer), fence orders
 * puts and atomics before later ones (data then flag, many rounds), and a
 * same-PE putmem whose source overlaps its target moves like memmove. */
#include <pthread.h>
#include <stdatomic.h>

#include "symm_test.h"

static symm_ctx ctx;
static int me, n;

#define CHECK_NAMED(call, expected, name)                                                       \
    do {                                                                                        \
        CHECK_STATUS(call, expected);                                                           \
        if (!strstr(symm_last_error(), name))                                                   \
            TEST_FAIL_("%s: message \"%s\" does not name %s", #call, symm_last_error(), name); \
    } while (0)

static void test_stale(void) {
    symm_buf b, s;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 4, &b));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &s));
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_buf_free(s));
    int64_t v = 1, old = 0;
    uint64_t sv = 0;
    const int pe = (me + 1) % n;
    CHECK_NAMED(symm_p(b, 0, &v, pe), SYMM_ERR_INVALID_HANDLE, "symm_p");
    CHECK_NAMED(symm_g(b, 0, pe, &v), SYMM_ERR_INVALID_HANDLE, "symm_g");
    CHECK_NAMED(symm_put_nbi(b, 0, &v, 1, pe), SYMM_ERR_INVALID_HANDLE, "symm_put_nbi");
    CHECK_NAMED(symm_get(&v, b, 0, 1, pe), SYMM_ERR_INVALID_HANDLE, "symm_get");
    CHECK_NAMED(symm_atomic(b, 0, SYMM_AMO_FETCH_ADD, &v, NULL, pe, &old),
                SYMM_ERR_INVALID_HANDLE, "symm_atomic");
    CHECK_NAMED(symm_signal_op(s, 0, 1, SYMM_SIGNAL_ADD, pe), SYMM_ERR_INVALID_HANDLE,
                "symm_signal_op");
    CHECK_NAMED(symm_signal_fetch(s, 0, &sv), SYMM_ERR_INVALID_HANDLE, "symm_signal_fetch");

    /* a finalized context's handle */
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    symm_ctx c2 = NULL;
    CHECK_OK(symm_init(&attr, &c2));
    symm_ctx stale = c2;
    CHECK_OK(symm_finalize(&c2));
    char buf[8];
    CHECK_NAMED(symm_putmem(stale, buf, buf, 8, pe), SYMM_ERR_INVALID_HANDLE, "symm_putmem");
    CHECK_NAMED(symm_getmem(stale, buf, buf, 8, pe), SYMM_ERR_INVALID_HANDLE, "symm_getmem");
    CHECK_NAMED(symm_quiet(stale), SYMM_ERR_INVALID_HANDLE, "symm_quiet");
    CHECK_NAMED(symm_fence(stale), SYMM_ERR_INVALID_HANDLE, "symm_fence");
}

static void test_bad_args(void) {
    symm_buf b, s;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 4, &b));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 2, &s));
    int64_t v = 1, old = 0;
    CHECK_NAMED(symm_p(b, 0, &v, n), SYMM_ERR_INVALID_ARG, "symm_p");
    CHECK_NAMED(symm_g(b, 0, -1, &v), SYMM_ERR_INVALID_ARG, "symm_g");
    CHECK_NAMED(symm_atomic(b, 0, SYMM_AMO_COMPARE_SWAP, &v, &v, n, &old), SYMM_ERR_INVALID_ARG,
                "symm_atomic");
    CHECK_NAMED(symm_signal_op(s, 0, 1, SYMM_SIGNAL_SET, n), SYMM_ERR_INVALID_ARG,
                "symm_signal_op");
    CHECK_NAMED(symm_p(b, 4, &v, me), SYMM_ERR_OUT_OF_BOUNDS, "symm_p");
    CHECK_NAMED(symm_get(&v, b, 3, 2, me), SYMM_ERR_OUT_OF_BOUNDS, "symm_get");
    CHECK_NAMED(symm_atomic(b, UINT64_MAX, SYMM_AMO_FETCH, NULL, NULL, me, &old),
                SYMM_ERR_OUT_OF_BOUNDS, "symm_atomic");
    CHECK_NAMED(symm_atomic(b, 0, SYMM_AMO_FETCH_ADD, NULL, NULL, me, &old),
                SYMM_ERR_INVALID_ARG, "needs value");
    CHECK_NAMED(symm_atomic(b, 0, SYMM_AMO_FETCH_ADD, &v, NULL, me, NULL), SYMM_ERR_INVALID_ARG,
                "needs fetched");
    CHECK_NAMED(symm_atomic(b, 0, 14, &v, NULL, me, &old), SYMM_ERR_INVALID_ARG, "unknown");
    CHECK_NAMED(symm_signal_op(s, 2, 1, SYMM_SIGNAL_SET, me), SYMM_ERR_OUT_OF_BOUNDS,
                "symm_signal_op");
    int64_t *base;
    CHECK_OK(symm_buf_ptr(b, (void **)&base));
    CHECK_NAMED(symm_putmem(ctx, base, NULL, 8, me), SYMM_ERR_INVALID_ARG, "symm_putmem");
    CHECK_NAMED(symm_getmem(ctx, &v, base, 8, n), SYMM_ERR_INVALID_ARG, "symm_getmem");
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(s));
    CHECK_OK(symm_buf_free(b));
}

/* FUNNELED: another thread's small calls get THREAD_LEVEL. */
typedef struct other {
    symm_ctx c;
    symm_buf b, s;
    int64_t *base;
    symm_status st[6];
} other;

static void *funneled_other(void *p) {
    other *o = p;
    int64_t v = 1, old = 0;
    o->st[0] = symm_p(o->b, 0, &v, me);
    o->st[1] = symm_g(o->b, 0, me, &v);
    o->st[2] = symm_atomic(o->b, 0, SYMM_AMO_FETCH_ADD, &v, NULL, me, &old);
    o->st[3] = symm_signal_op(o->s, 0, 1, SYMM_SIGNAL_SET, me);
    o->st[4] = symm_putmem(o->c, o->base, &v, 8, me);
    o->st[5] = symm_fence(o->c);
    return NULL;
}

static void test_funneled(void) {
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.thread_level = SYMM_THREAD_FUNNELED;
    attr.backend = SYMM_BACKEND_HOST;
    other o = {0};
    CHECK_OK(symm_init(&attr, &o.c));
    CHECK_OK(symm_buf_alloc(o.c, SYMM_DTYPE_INT64, 1, &o.b));
    CHECK_OK(symm_buf_alloc(o.c, SYMM_DTYPE_UINT64, 1, &o.s));
    CHECK_OK(symm_buf_ptr(o.b, (void **)&o.base));
    int64_t v = 5;
    CHECK_OK(symm_p(o.b, 0, &v, me)); /* the init thread may */
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, funneled_other, &o), 0);
    pthread_join(th, NULL);
    for (int i = 0; i < 6; i++) ASSERT_EQ(o.st[i], SYMM_ERR_THREAD_LEVEL);
    CHECK_OK(symm_g(o.b, 0, me, &v));
    ASSERT_EQ(v, 5); /* the refused calls changed nothing */
    CHECK_OK(symm_buf_free(o.s));
    CHECK_OK(symm_buf_free(o.b));
    CHECK_OK(symm_finalize(&o.c));
}

/* Each PE streams rounds of data to the next, each followed by symm_fence
 * and a flag (a put, or an atomic ADD): the next PE, seeing flag r, must see
 * round r's data. */
static void test_fence_order(void) {
    enum { ROUNDS = 500, W = 8 };
    symm_buf data, flag;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, W, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 2, &flag));
    CHECK_OK(symm_barrier_all(ctx));
    const int next = (me + 1) % n;
    int64_t *mine, *myflag;
    CHECK_OK(symm_buf_ptr(data, (void **)&mine));
    CHECK_OK(symm_buf_ptr(flag, (void **)&myflag));
    for (int64_t r = 1; r <= ROUNDS; r++) {
        int64_t src[W];
        for (int k = 0; k < W; k++) src[k] = r * 100 + k;
        if (r % 2)
            CHECK_OK(symm_put_nbi(data, 0, src, W, next));
        else
            CHECK_OK(symm_putmem_nbi(ctx, mine, src, sizeof src, next));
        CHECK_OK(symm_fence(ctx));
        if (r % 3) {
            CHECK_OK(symm_p(flag, 0, &r, next));
        } else {
            int64_t one = 1;
            CHECK_OK(symm_atomic(flag, 1, SYMM_AMO_ADD, &one, NULL, next, NULL));
            CHECK_OK(symm_fence(ctx));
            CHECK_OK(symm_p(flag, 0, &r, next));
        }
        /* wait for my own round r, then check its data, then let the
         * previous PE go on (it must not overwrite round r before) */
        CHECK_OK(symm_wait_until(flag, 0, SYMM_CMP_GE, &r));
        for (int k = 0; k < W; k++)
            ASSERT_EQ(__atomic_load_n(&mine[k], __ATOMIC_RELAXED), r * 100 + k);
        ASSERT_EQ(__atomic_load_n(&myflag[1], __ATOMIC_RELAXED), r / 3);
        CHECK_OK(symm_barrier_all(ctx));
    }
    CHECK_OK(symm_buf_free(flag));
    CHECK_OK(symm_buf_free(data));
}

/* A same-PE putmem whose source overlaps its target: memmove's result. */
static void test_overlap(void) {
    enum { N = 64 };
    symm_buf b;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, N + 16, &b));
    uint8_t *p, want[N + 16];
    CHECK_OK(symm_buf_ptr(b, (void **)&p));
    for (int i = 0; i < N + 16; i++) p[i] = (uint8_t)i;
    memcpy(want, p, sizeof want);
    memmove(want + 8, want, N);
    CHECK_OK(symm_putmem(ctx, p + 8, p, N, me)); /* forwards: the source is read first */
    ASSERT_EQ(memcmp(p, want, sizeof want), 0);
    memmove(want, want + 8, N);
    CHECK_OK(symm_getmem(ctx, p, p + 8, N, me)); /* backwards */
    ASSERT_EQ(memcmp(p, want, sizeof want), 0);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(b));
}

int main(void) {
    ctx = symm_test_init(SYMM_BACKEND_HOST);
    me = symm_my_pe(ctx);
    n = symm_n_pes(ctx);
    symm_test_pe = me;
    test_stale();
    test_bad_args();
    test_funneled();
    test_fence_order();
    test_overlap();
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("small: %d PEs passed\n", n);
    return 0;
}

/*
 * Handle tables and handle lifetime (runtime/core/handles.c), linked against
 * the runtime's objects:
 *   reuse     a slot released and reused 2^24 + 2 times never gives back a
 *             stale handle's generation (the 24-bit generation of the first
 *             design came round after 2^23 reuses)
 *   retire    a slot whose generation would pass the last one a handle can
 *             carry is retired, not reused (a test hook sets the generation
 *             near the end)
 *   grace     symm__retire waits for calls inside on other threads, not for
 *             parked calls that hold something else, and for parked calls
 *             that hold the object until they leave; 300 live threads (more
 *             than the direct slot table) each get a slot of their own
 *   stress    rounds of threads resolving, reading and parking on an object
 *             while it is released, retired and freed (sanitizer runs see
 *             any read after the free)
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

#define IDX_MASK ((1ull << 21) - 1)
#define GEN_LAST ((1ull << 41) - 1)

static void test_reuse(void) {
    int x, y;
    uint64_t h0 = symm__handle_new(SYMM__KIND_BUF, &x);
    ASSERT_TRUE(h0 != 0);
    symm__handle_release(SYMM__KIND_BUF, h0);
    const uint64_t cycles = (1ull << 24) + 2;
    for (uint64_t k = 0; k < cycles; k++) {
        uint64_t h = symm__handle_new(SYMM__KIND_BUF, &y);
        ASSERT_TRUE(h != 0);
        ASSERT_U64_EQ(h & IDX_MASK, h0 & IDX_MASK); /* the same slot, reused */
        if (h == h0 || symm__handle_get(SYMM__KIND_BUF, h0) != NULL)
            TEST_FAIL_("after %llu reuses of its slot the stale handle %#llx names a live "
                       "object", (unsigned long long)k + 1, (unsigned long long)h0);
        symm__handle_release(SYMM__KIND_BUF, h);
    }
}

static void test_retire(void) {
    int x, y, z;
    uint64_t h = symm__handle_new(SYMM__KIND_TEAM, &x);
    ASSERT_TRUE(h != 0);
    /* the hook only names live handles with a valid generation */
    ASSERT_U64_EQ(symm__handle_set_gen_for_test(SYMM__KIND_TEAM, h, 0), 0);
    ASSERT_U64_EQ(symm__handle_set_gen_for_test(SYMM__KIND_TEAM, h, GEN_LAST + 1), 0);
    uint64_t h1 = symm__handle_set_gen_for_test(SYMM__KIND_TEAM, h, GEN_LAST - 1);
    ASSERT_TRUE(h1 != 0 && h1 != h);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h) == NULL);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == &x);
    symm__handle_release(SYMM__KIND_TEAM, h1);
    /* the slot's last generation */
    uint64_t h2 = symm__handle_new(SYMM__KIND_TEAM, &y);
    ASSERT_U64_EQ(h2 & IDX_MASK, h1 & IDX_MASK);
    ASSERT_TRUE(h2 != h1);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == NULL);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h2) == &y);
    symm__handle_release(SYMM__KIND_TEAM, h2);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h2) == NULL);
    /* out of generations: retired, never handed out again */
    for (int k = 0; k < 100; k++) {
        uint64_t h3 = symm__handle_new(SYMM__KIND_TEAM, &z);
        ASSERT_TRUE(h3 != 0);
        ASSERT_TRUE((h3 & IDX_MASK) != (h2 & IDX_MASK));
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h3) == &z);
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h2) == NULL);
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == NULL);
        ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h) == NULL);
        symm__handle_release(SYMM__KIND_TEAM, h3);
    }
    /* a forged handle with the retired slot and any high generation is refused */
    uint64_t forged = (h2 & ~(GEN_LAST << 21)) | (GEN_LAST << 21);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, forged) == NULL);
}

/* ---- grace periods ---- */

typedef struct victim {
    int mode;            /* 0: inside a call; 1: parked holding the object; 2: parked, not */
    symm__ctx *ctx;
    atomic_int *obj;
    atomic_int ready, go, left;
} victim;

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void *victim_run(void *arg) {
    victim *v = arg;
    symm__tslot *s = symm__call_enter();
    ASSERT_TRUE(s != NULL);
    if (v->mode == 1) symm__hold(v->obj);
    if (v->mode >= 1) symm__park(v->ctx);
    atomic_store(&v->ready, 1);
    /* mode 1 leaves when it sees the object closing (as waits do) */
    while (!atomic_load(&v->go) && !(v->mode == 1 && atomic_load(v->obj))) nap_ms(1);
    nap_ms(50);
    atomic_store(&v->left, 1);
    symm__call_leave(s);
    return NULL;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void grace_case(int mode) {
    symm__lifetime_init();
    symm__ctx *ctx = calloc(1, sizeof *ctx);
    ASSERT_TRUE(ctx != NULL);
    atomic_int closing = 0;
    victim v = {.mode = mode, .ctx = ctx, .obj = &closing};
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, victim_run, &v), 0);
    while (!atomic_load(&v.ready)) nap_ms(1);
    double t0 = now_ms();
    if (mode == 0) atomic_store(&v.go, 1); /* the call ends on its own, 50 ms later */
    atomic_store(&closing, 1);
    symm__retire(ctx, &closing);
    double waited = now_ms() - t0;
    if (mode == 2) {
        /* parked on something else: not waited for */
        ASSERT_TRUE(!atomic_load(&v.left));
        atomic_store(&v.go, 1);
    } else {
        /* inside, or parked holding the object: waited for */
        if (!atomic_load(&v.left))
            TEST_FAIL_("mode %d: symm__retire returned after %.1f ms, before the call left", mode,
                       waited);
    }
    pthread_join(th, NULL);
    /* a finalize (obj NULL) waits for a call parked on the context */
    if (mode == 2) {
        victim v2 = {.mode = 2, .ctx = ctx, .obj = &closing};
        ASSERT_EQ(pthread_create(&th, NULL, victim_run, &v2), 0);
        while (!atomic_load(&v2.ready)) nap_ms(1);
        atomic_store(&v2.go, 1);
        symm__retire(ctx, NULL);
        ASSERT_TRUE(atomic_load(&v2.left));
        pthread_join(th, NULL);
    }
    free(ctx);
}

/* A call that started before the object went stale and one that parked
 * holding it both report INVALID_HANDLE through symm__check_closing. */
static void test_check_closing(void) {
    symm__ctx *ctx = calloc(1, sizeof *ctx);
    ASSERT_TRUE(ctx != NULL);
    atomic_int closing = 0;
    symm__tslot *s = symm__call_enter();
    ASSERT_TRUE(s != NULL);
    symm__hold(&closing);
    symm__park(ctx);
    CHECK_OK(symm__check_closing(ctx));
    atomic_store(&closing, 1);
    CHECK_STATUS(symm__check_closing(ctx), SYMM_ERR_INVALID_HANDLE);
    atomic_store(&closing, 0);
    atomic_store(&ctx->closing, 1);
    CHECK_STATUS(symm__check_closing(ctx), SYMM_ERR_INVALID_HANDLE);
    symm__call_leave(s);
    /* the holds went with the call */
    atomic_store(&ctx->closing, 0);
    atomic_store(&closing, 1);
    s = symm__call_enter();
    CHECK_OK(symm__check_closing(ctx));
    symm__call_leave(s);
    free(ctx);
}

/* Many rounds of: worker threads resolve a handle, read the object, some
 * park holding it and poll it until it closes; the main thread closes and
 * releases it, retires it and frees it. Under ASan/TSan any read after
 * the free is reported. */
typedef struct stress_obj {
    atomic_int closing;
    uint64_t payload[8];
} stress_obj;

typedef struct stress_arg {
    symm__ctx *ctx;
    uint64_t handle;
    int park;
    atomic_int *started;
} stress_arg;

static void *stress_worker(void *p) {
    stress_arg *a = p;
    atomic_fetch_add(a->started, 1);
    for (;;) {
        symm__tslot *s = symm__call_enter();
        stress_obj *o = symm__handle_get(SYMM__KIND_BUF, a->handle);
        if (!o) {
            symm__call_leave(s);
            return NULL;
        }
        uint64_t sum = 0;
        for (int k = 0; k < 8; k++) sum += o->payload[k];
        if (sum != 8 * 7) TEST_FAIL_("object changed under a call: %llu", (unsigned long long)sum);
        if (a->park) {
            symm__hold(&o->closing);
            symm__park(a->ctx);
            while (!atomic_load(&o->closing)) {
                sum = 0;
                for (int k = 0; k < 8; k++) sum += o->payload[k];
                if (sum != 8 * 7) TEST_FAIL_("object changed under a parked call");
                sched_yield();
            }
        }
        symm__call_leave(s);
    }
}

static void test_stress(int rounds) {
    symm__lifetime_init();
    symm__ctx *ctx = calloc(1, sizeof *ctx);
    ASSERT_TRUE(ctx != NULL);
    enum { N_THREADS = 6 };
    for (int r = 0; r < rounds; r++) {
        stress_obj *o = calloc(1, sizeof *o);
        ASSERT_TRUE(o != NULL);
        for (int k = 0; k < 8; k++) o->payload[k] = 7;
        uint64_t h = symm__handle_new(SYMM__KIND_BUF, o);
        ASSERT_TRUE(h != 0);
        atomic_int started = 0;
        stress_arg args[N_THREADS];
        pthread_t th[N_THREADS];
        for (int i = 0; i < N_THREADS; i++) {
            args[i] = (stress_arg){ctx, h, i % 2, &started};
            ASSERT_EQ(pthread_create(&th[i], NULL, stress_worker, &args[i]), 0);
        }
        if (r % 2) /* half the rounds: end while the workers are still starting */
            while (atomic_load(&started) < N_THREADS) sched_yield();
        atomic_store(&o->closing, 1);
        symm__handle_release(SYMM__KIND_BUF, h);
        symm__retire(ctx, &o->closing);
        memset(o->payload, 0xff, sizeof o->payload); /* a late reader would see it */
        free(o);
        for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    }
    free(ctx);
}

/* More live threads than the direct table has entries: every one gets a
 * slot of its own (the rest in the overflow map), and a free waits for all
 * of them while they are inside. */
enum { MANY = 300 };
static pthread_barrier_t many_bar;
static symm__tslot *many_slot[MANY];
static atomic_int many_left;

static void *many_run(void *arg) {
    long i = (long)arg;
    symm__tslot *s = symm__call_enter();
    ASSERT_TRUE(s != NULL);
    ASSERT_TRUE(symm__tslot_self() == s);
    many_slot[i] = s;
    pthread_barrier_wait(&many_bar); /* all inside */
    pthread_barrier_wait(&many_bar); /* the main thread is retiring */
    nap_ms(20);
    atomic_fetch_add(&many_left, 1);
    symm__call_leave(s);
    return NULL;
}

static void test_many_threads(void) {
    symm__lifetime_init();
    symm__ctx *ctx = calloc(1, sizeof *ctx);
    ASSERT_TRUE(ctx != NULL);
    atomic_int closing = 1;
    pthread_t th[MANY];
    ASSERT_EQ(pthread_barrier_init(&many_bar, NULL, MANY + 1), 0);
    for (long i = 0; i < MANY; i++)
        ASSERT_EQ(pthread_create(&th[i], NULL, many_run, (void *)i), 0);
    pthread_barrier_wait(&many_bar);
    for (int i = 0; i < MANY; i++)
        for (int k = 0; k < i; k++) ASSERT_TRUE(many_slot[i] != many_slot[k]);
    pthread_barrier_wait(&many_bar);
    symm__retire(ctx, &closing);
    ASSERT_EQ(atomic_load(&many_left), MANY); /* waited for every one */
    for (int i = 0; i < MANY; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&many_bar);
    free(ctx);
}


/* The word's MSG bit: a status call clears it when it starts and sets it when
 * it fails; a query call leaves it; every call advances the sequence. */
static void test_msg_bit(void) {
    symm__tslot *s = symm__call_enter_as(true);
    ASSERT_TRUE(s != NULL);
    uint64_t w0 = atomic_load(&s->word);
    ASSERT_TRUE((w0 & SYMM__CALL_IN) && !(w0 & SYMM__CALL_MSG));
    symm__call_leave_as(s, true); /* failed */
    uint64_t w1 = atomic_load(&s->word);
    ASSERT_TRUE(!(w1 & SYMM__CALL_IN) && (w1 & SYMM__CALL_MSG));
    ASSERT_TRUE(w1 / SYMM__CALL_SEQ == w0 / SYMM__CALL_SEQ + 1);
    s = symm__call_enter(); /* a query: the failure's message still counts */
    ASSERT_TRUE(atomic_load(&s->word) & SYMM__CALL_MSG);
    symm__call_leave(s);
    ASSERT_TRUE(atomic_load(&s->word) & SYMM__CALL_MSG);
    ASSERT_TRUE(symm__tslot_peek() == s);
    s = symm__call_enter_as(true); /* the next status call clears it */
    ASSERT_TRUE(!(atomic_load(&s->word) & SYMM__CALL_MSG));
    symm__call_leave_as(s, false);
    ASSERT_TRUE(!(atomic_load(&s->word) & (SYMM__CALL_MSG | SYMM__CALL_IN)));
    /* a parked call's slow leave keeps the same rules */
    s = symm__call_enter_as(true);
    symm__park(NULL);
    symm__call_leave_as(s, true);
    uint64_t w2 = atomic_load(&s->word);
    ASSERT_TRUE((w2 & SYMM__CALL_MSG) && !(w2 & (SYMM__CALL_IN | SYMM__CALL_PARKED)));
}

/* What the hold costs a call (a benchmark, not run by the suite): an empty
 * function called through a pointer, bare and inside the hold. */
__attribute__((noinline)) static symm_status empty_call(int x) {
    __asm__ __volatile__("" ::: "memory");
    return x ? SYMM_SUCCESS : SYMM_SUCCESS;
}
static symm_status (*volatile empty_fn)(int) = empty_call;

static double cost_ns(bool hold, long n) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        if (hold) {
            symm__tslot *s = symm__call_enter_as(true);
            symm_status r = empty_fn((int)i);
            symm__call_leave_as(s, r != 0);
        } else {
            (void)empty_fn((int)i);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_cost(void) {
    symm__lifetime_init();
    enum { R = 21 };
    double bare[R], held[R];
    for (int r = 0; r < R; r++) {
        bare[r] = cost_ns(false, 2000000);
        held[r] = cost_ns(true, 2000000);
    }
    qsort(bare, R, sizeof bare[0], cmp_d);
    qsort(held, R, sizeof held[0], cmp_d);
    printf("RESULT hold: empty call %.2f ns, inside the hold %.2f ns (+%.2f ns; medians of %d "
           "rounds; membarrier %s)\n", bare[R / 2], held[R / 2], held[R / 2] - bare[R / 2], R,
           atomic_load(&symm__lt_fence) ? "unavailable: calls fence" : "in use");
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "reuse") == 0) test_reuse();
    if (!only || strcmp(only, "retire") == 0) test_retire();
    if (!only || strcmp(only, "grace") == 0) {
        for (int mode = 0; mode < 3; mode++) grace_case(mode);
        test_check_closing();
        test_many_threads();
        test_msg_bit();
    }
    if (!only || strcmp(only, "stress") == 0) test_stress(only ? 1000 : 200);
    if (only && strcmp(only, "cost") == 0) bench_cost();
    printf("handles%s%s: passed\n", only ? " " : "", only ? only : "");
    return 0;
}

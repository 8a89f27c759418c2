/*
 * The proxy ring's round trip with a CPU producer, beside its floor measured
 * in the same run (docs/PROXY.md has the figures).
 *
 *   bench_proxy_ring [--iters N] [--rounds R] [--depth D] [--pin] [--idle]
 *
 * ring:  one producer thread posts a NOP (symm_ring_nop) and waits for its
 *        completion (symm_ring_wait); the engine's thread (runtime/proxy)
 *        takes it. Per-iteration times, median and p10/p90 of the last 90 %.
 * floor: two threads ping-pong one word each way (store seq, the other side
 *        spins on it and stores the ack): the least any ring round trip
 *        between two threads can cost on this machine (the anchors'
 *        proxy_bound is the same floor between a GPU thread and a host
 *        thread).
 * Rounds alternate ring and floor. --pin puts the producer (and the floor's
 * first thread) on CPU 0 and the engine (and the floor's second thread) on
 * CPU 1. --idle adds the wake-up after the engine went idle (a NOP posted
 * 0.2, 2 and 20 ms after the last one: spin phase, naps, longest nap) and the
 * idle engine's CPU use over one second, for the default nap bound and
 * others.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "proxy.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats {
    double median, p10, p90;
} stats;

/* Median and p10/p90 (µs) of the last 90 % of n samples (ns). */
static stats summarize(uint64_t *ns, size_t n) {
    size_t skip = n / 10, m = n - skip;
    uint64_t *s = ns + skip;
    qsort(s, m, sizeof *s, cmp_u64);
    stats r = {s[m / 2] / 1e3, s[m / 10] / 1e3, s[m * 9 / 10] / 1e3};
    return r;
}

static bool pin;

static void pin_to(int cpu) {
    if (!pin) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set))
        TEST_FAIL_("pthread_setaffinity_np(%d) failed", cpu);
}

static symm_status no_run(void *arg, const symm_ring_req *q, bool *pending) {
    (void)arg;
    (void)pending;
    return symm__err(SYMM_ERR_INTERNAL, "bench: request op %u reached the executor", q->op);
}
static symm_status no_flush(void *arg) {
    (void)arg;
    return SYMM_SUCCESS;
}
static const symm__proxy_exec exec = {NULL, no_run, no_flush, NULL, NULL, NULL};

/* An engine whose thread runs on CPU 1 (--pin): threads inherit the
 * creator's affinity. */
static symm__engine *engine(uint32_t depth, uint32_t spin_us, uint32_t idle_us) {
    symm__proxy_opts o = {1, depth, spin_us, idle_us, 0};
    symm__engine *e = NULL;
    CHECK_OK(symm__engine_create(&o, &exec, NULL, &e));
    pin_to(1);
    CHECK_OK(symm__engine_start(e));
    pin_to(0);
    return e;
}

static stats ring_round(symm__engine *e, uint64_t *ns, size_t iters) {
    symm_ring r;
    CHECK_OK(symm__engine_ring(e, 0, SYMM_RING_VERSION, &r));
    for (size_t i = 0; i < iters; i++) {
        uint64_t t0 = now_ns(), t = 0;
        CHECK_OK(symm_ring_nop(&r, &t));
        CHECK_OK(symm_ring_wait(&r, t));
        ns[i] = now_ns() - t0;
    }
    return summarize(ns, iters);
}

/* ---- the floor: one word each way ---- */

typedef struct pingpong {
    _Alignas(64) atomic_uint_fast64_t req;
    _Alignas(64) atomic_uint_fast64_t ack;
    _Alignas(64) atomic_int stop;
} pingpong;

static void *pong(void *arg) {
    pingpong *p = arg;
    pin_to(1);
    uint64_t last = 0;
    while (!atomic_load_explicit(&p->stop, memory_order_relaxed)) {
        uint64_t v = atomic_load_explicit(&p->req, memory_order_acquire);
        if (v != last) {
            last = v;
            atomic_store_explicit(&p->ack, v, memory_order_release);
        }
    }
    return NULL;
}

static stats floor_round(uint64_t *ns, size_t iters) {
    pingpong *p = aligned_alloc(64, sizeof *p);
    ASSERT_TRUE(p != NULL);
    atomic_init(&p->req, 0);
    atomic_init(&p->ack, 0);
    atomic_init(&p->stop, 0);
    pthread_t th;
    ASSERT_EQ(pthread_create(&th, NULL, pong, p), 0);
    for (size_t i = 1; i <= iters; i++) {
        uint64_t t0 = now_ns();
        atomic_store_explicit(&p->req, i, memory_order_release);
        while (atomic_load_explicit(&p->ack, memory_order_acquire) != i) {
        }
        ns[i - 1] = now_ns() - t0;
    }
    atomic_store(&p->stop, 1);
    pthread_join(th, NULL);
    free(p);
    return summarize(ns, iters);
}

/* ---- idle: wake-up and CPU use ---- */

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static void sleep_ms(double ms) {
    const long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)};
    nanosleep(&ts, NULL);
}

static void idle_report(uint32_t spin_us, uint32_t idle_us) {
    symm__engine *e = engine(1024, spin_us, idle_us);
    symm_ring r;
    CHECK_OK(symm__engine_ring(e, 0, SYMM_RING_VERSION, &r));
    const double gaps_ms[] = {0.2, 2.0, 20.0};
    printf("idle (spin %u us, naps up to %u us):", spin_us, idle_us);
    for (int g = 0; g < 3; g++) {
        enum { N = 40 };
        uint64_t ns[N];
        for (int i = 0; i < N; i++) {
            sleep_ms(gaps_ms[g]);
            uint64_t t0 = now_ns(), t = 0;
            CHECK_OK(symm_ring_nop(&r, &t));
            CHECK_OK(symm_ring_wait(&r, t));
            ns[i] = now_ns() - t0;
        }
        qsort(ns, N, sizeof ns[0], cmp_u64);
        printf("  after %.1f ms idle: median %.1f us, max %.1f us;", gaps_ms[g], ns[N / 2] / 1e3,
               ns[N - 1] / 1e3);
    }
    sleep_ms(50);
    double c0 = cpu_s();
    uint64_t w0 = now_ns();
    sleep_ms(1000);
    double used = (cpu_s() - c0) / ((now_ns() - w0) * 1e-9);
    symm__proxy_stats s;
    symm__engine_stats(e, &s);
    printf("  idle CPU %.2f %% of a core\n", used * 100.0);
    symm__engine_destroy(e);
}

int main(int argc, char **argv) {
    size_t iters = 20000;
    int rounds = 3;
    uint32_t depth = 1024;
    bool idle = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = (size_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--depth") && i + 1 < argc) depth = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pin")) pin = true;
        else if (!strcmp(argv[i], "--idle")) idle = true;
        else {
            fprintf(stderr, "usage: bench_proxy_ring [--iters N] [--rounds R] [--depth D] "
                            "[--pin] [--idle]\n");
            return 2;
        }
    }
    if (iters < 10) iters = 10;
    uint64_t *ns = malloc(iters * sizeof *ns);
    ASSERT_TRUE(ns != NULL);
    pin_to(0);
    printf("proxy ring round trip (NOP posted, completion awaited) vs. the two-thread word "
           "ping-pong floor; %zu iterations, median of the last 90 %%, depth %u%s\n", iters, depth,
           pin ? ", pinned to CPUs 0 and 1" : "");
    symm__engine *e = engine(depth, SYMM__PROXY_DEFAULT_SPIN_US, SYMM__PROXY_DEFAULT_IDLE_US);
    for (int k = 0; k < rounds; k++) {
        stats rs = ring_round(e, ns, iters);
        stats fs = floor_round(ns, iters);
        printf("round %d: ring %.3f us (p10 %.3f, p90 %.3f)  floor %.3f us (p10 %.3f, p90 %.3f)"
               "  ratio %.2f\n", k, rs.median, rs.p10, rs.p90, fs.median, fs.p10, fs.p90,
               rs.median / fs.median);
        fflush(stdout);
    }
    symm__proxy_stats s;
    symm__engine_stats(e, &s);
    ASSERT_EQ(s.failed, 0);
    ASSERT_U64_EQ(s.requests, (uint64_t)rounds * iters);
    symm__engine_destroy(e);
    if (idle) {
        idle_report(SYMM__PROXY_DEFAULT_SPIN_US, SYMM__PROXY_DEFAULT_IDLE_US);
        idle_report(SYMM__PROXY_DEFAULT_SPIN_US, 1000);
        idle_report(SYMM__PROXY_DEFAULT_SPIN_US, 20);
    }
    free(ns);
    return 0;
}

/*
 * Where the nanoseconds of a small host call go: each small entry timed
 * through the loader (libsymm.so.1's trampoline, what programs call) and
 * through the runtime's dispatch table directly (no trampoline), beside the
 * floors: an indirect call of an empty function, a store + fence to the peer,
 * a CPU fetch-add on the peer's word. loader - table is the trampoline's
 * cost; table - floor is the runtime's (the lifetime hold, the entry's
 * checks, the backend). Cycles come from the time-stamp counter (x86_64) or
 * the virtual counter (aarch64), per call, median of batches.
 *   symmrun -n 2 bench_small_cost [rounds] [calls per batch]
 * (any backend: SYMM_BACKEND=cuda times the CUDA backend's host entries,
 * without the floors, which store into the heap from the host). A batch is
 * 4000 calls on the host backend and 100 on any other: there most rows are
 * a copy or a kernel on the GPU plus a stream synchronisation per call
 * (microseconds, not nanoseconds), and at 4000 a round was 32 batches x 25
 * rows x 4000 = 3.2 million calls, past half a minute. PE 1 meanwhile waits
 * in the closing barrier, which on CUDA is a GPU-side wait that gives up at
 * SYMM_TIMEOUT_MS (60 s): keep rounds x batch small there.
 * Rows: cost <op> <path> <ns_median> <ns_p10> <ns_p90> <cycles_median>
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <symm/symm.h>

#include "symm_dispatch.h"

#define BATCH_HOST 4000
#define BATCH_DEVICE 100
#define BATCHES 31

static int batch = BATCH_HOST; /* calls per batch */

static inline uint64_t ticks(void) {
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *op, const char *path, double *ns, double *cy) {
    qsort(ns, BATCHES, sizeof *ns, cmp);
    qsort(cy, BATCHES, sizeof *cy, cmp);
    printf("cost %-14s %-6s %7.1f %7.1f %7.1f %8.0f\n", op, path, ns[BATCHES / 2],
           ns[BATCHES / 10], ns[BATCHES - 1 - BATCHES / 10], cy[BATCHES / 2]);
    fflush(stdout);
}

#define FAIL(what)                                                                             \
    do {                                                                                       \
        fprintf(stderr, "bench_small_cost: %s failed: %s\n", what, symm_last_error());         \
        exit(1);                                                                               \
    } while (0)

/* Time BODY (one call, status in st_) BATCHES x BATCH times on PE 0. */
#define TIME(op, path, BODY)                                                                   \
    do {                                                                                       \
        double ns_[BATCHES], cy_[BATCHES];                                                     \
        for (int b_ = -1; b_ < BATCHES; b_++) { /* batch -1 warms up */                        \
            double t0_ = now_ns();                                                             \
            uint64_t c0_ = ticks();                                                            \
            for (int i = 0; i < batch; i++) {                                                  \
                symm_status st_ = (BODY);                                                      \
                if (st_) FAIL(op);                                                             \
            }                                                                                  \
            uint64_t c1_ = ticks();                                                            \
            if (b_ < 0) continue;                                                              \
            ns_[b_] = (now_ns() - t0_) / batch;                                                \
            cy_[b_] = (double)(c1_ - c0_) / batch;                                             \
        }                                                                                      \
        report(op, path, ns_, cy_);                                                            \
    } while (0)

__attribute__((noinline)) static symm_status empty(symm_ctx c) {
    __asm__ __volatile__("" ::: "memory");
    return c ? SYMM_SUCCESS : SYMM_SUCCESS;
}
static symm_status (*volatile empty_fn)(symm_ctx) = empty;

static symm_status store_fence(volatile int64_t *p, int64_t v) {
    *p = v;
    atomic_thread_fence(memory_order_seq_cst);
    return SYMM_SUCCESS;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    symm_ctx ctx;
    if (symm_init(NULL, &ctx)) FAIL("symm_init");
    int me = symm_my_pe(ctx);
    if (symm_n_pes(ctx) != 2) {
        fprintf(stderr, "bench_small_cost: run on 2 PEs (symmrun -n 2)\n");
        return 1;
    }
    /* The runtime's table, as the loader got it. */
    void *rt = dlopen(symm_loader_runtime_path(), RTLD_NOW | RTLD_NOLOAD);
    symm_runtime_negotiate_fn neg;
    void *sym = rt ? dlsym(rt, SYMM_RUNTIME_NEGOTIATE_SYMBOL) : NULL;
    memcpy(&neg, &sym, sizeof neg);
    symm_runtime_negotiation n;
    memset(&n, 0, sizeof n);
    n.struct_size = sizeof n;
    n.loader_abi_major = SYMM_ABI_MAJOR;
    n.loader_abi_minor = SYMM_ABI_MINOR;
    if (!neg || neg(&n) != SYMM_SUCCESS || !n.dispatch) {
        fprintf(stderr, "bench_small_cost: cannot reach the runtime's table (%s)\n", dlerror());
        return 1;
    }
    const symm_dispatch *d = n.dispatch;

    symm_buf buf;
    if (symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 64, &buf)) FAIL("symm_buf_alloc");
    int64_t *base;
    if (symm_buf_ptr(buf, (void **)&base)) FAIL("symm_buf_ptr");
    volatile int64_t *peer;
    if (symm_ptr(ctx, base, 1, (void **)&peer)) FAIL("symm_ptr");
    /* The floors store into the peer's heap from the host: host backend only
     * (on CUDA the heap is GPU memory; the entries' rows still run). */
    symm_ctx_info info = {.struct_size = sizeof info};
    if (symm_ctx_query(ctx, &info)) FAIL("symm_ctx_query");
    const int host_heap = info.backend == SYMM_BACKEND_HOST && peer;
    batch = argc > 2 ? atoi(argv[2]) : info.backend == SYMM_BACKEND_HOST ? BATCH_HOST
                                                                         : BATCH_DEVICE;
    if (batch < 1) {
        fprintf(stderr, "bench_small_cost: calls per batch must be at least 1\n");
        return 1;
    }
    if (me == 0) printf("# %d rounds, %d batches of %d calls\n", rounds, BATCHES, batch);
    int64_t v = 1, cmpv = 0, old = 0, src = 7;
    uint64_t sig = 0;
    int32_t sat = 0;
    symm_buf sbuf, done;
    if (symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8, &sbuf)) FAIL("symm_buf_alloc");
    if (symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &done)) FAIL("symm_buf_alloc");
    if (symm_barrier_all(ctx)) FAIL("symm_barrier_all"); /* done is zero on both */
    for (int r = 0; r < rounds && me == 0; r++) {
        TIME("empty_call", "floor", empty_fn(ctx));
        if (host_heap) {
            TIME("store_fence", "floor", store_fence(peer, 1));
            TIME("cpu_fetch_add", "floor",
                 (atomic_fetch_add((_Atomic int64_t *)(peer + 1), 1), SYMM_SUCCESS));
        }
        TIME("my_pe", "loader", symm_my_pe(ctx) == 0 ? SYMM_SUCCESS : SYMM_ERR_INTERNAL);
        TIME("my_pe", "table", d->symm_my_pe(ctx) == 0 ? SYMM_SUCCESS : SYMM_ERR_INTERNAL);
        TIME("putmem8", "loader", symm_putmem(ctx, base, &src, 8, 1));
        TIME("putmem8", "table", d->symm_putmem(ctx, base, &src, 8, 1));
        TIME("putmem8_nbi", "loader", symm_putmem_nbi(ctx, base, &src, 8, 1));
        TIME("putmem8_nbi", "table", d->symm_putmem_nbi(ctx, base, &src, 8, 1));
        TIME("getmem8", "loader", symm_getmem(ctx, &src, base, 8, 1));
        TIME("getmem8", "table", d->symm_getmem(ctx, &src, base, 8, 1));
        TIME("p", "loader", symm_p(buf, 0, &v, 1));
        TIME("p", "table", d->symm_p(buf, 0, &v, 1));
        TIME("g", "loader", symm_g(buf, 0, 1, &v));
        TIME("g", "table", d->symm_g(buf, 0, 1, &v));
        TIME("put1", "loader", symm_put(buf, 0, &v, 1, 1));
        TIME("get1", "loader", symm_get(&v, buf, 0, 1, 1));
        TIME("fetch_add", "loader", symm_atomic(buf, 1, SYMM_AMO_FETCH_ADD, &v, NULL, 1, &old));
        TIME("fetch_add", "table",
             d->symm_atomic(buf, 1, SYMM_AMO_FETCH_ADD, &v, NULL, 1, &old));
        TIME("compare_swap", "loader",
             symm_atomic(buf, 2, SYMM_AMO_COMPARE_SWAP, &v, &cmpv, 1, &old));
        TIME("add", "loader", symm_atomic(buf, 3, SYMM_AMO_ADD, &v, NULL, 1, NULL));
        TIME("signal_set", "loader", symm_signal_op(sbuf, 0, 1, SYMM_SIGNAL_SET, 1));
        TIME("signal_fetch", "loader", symm_signal_fetch(sbuf, 0, &sig));
        TIME("quiet", "loader", symm_quiet(ctx));
        TIME("quiet", "table", d->symm_quiet(ctx));
        TIME("fence", "loader", symm_fence(ctx));
        TIME("test", "loader",
             symm_test(buf, 5, SYMM_CMP_GE, &cmpv, &sat));
    }
    /* PE 1 sleeps until PE 0 is done: a barrier's wait would spin, yield
     * and wake every 50 us, which on a PE sharing PE 0's core cost PE 0's
     * rows up to several times their time. */
    if (me == 0) {
        uint64_t one = 1;
        if (symm_p(done, 0, &one, 1) || symm_quiet(ctx)) FAIL("symm_p");
    } else {
        for (uint64_t seen = 0; !seen;) {
            if (symm_g(done, 0, me, &seen)) FAIL("symm_g");
            struct timespec nap = {0, 2000000};
            if (!seen) nanosleep(&nap, NULL);
        }
    }
    if (symm_barrier_all(ctx)) FAIL("symm_barrier_all");
    if (symm_buf_free(done) || symm_buf_free(sbuf) || symm_buf_free(buf)) FAIL("symm_buf_free");
    if (symm_finalize(&ctx)) FAIL("symm_finalize");
    return 0;
}

/*
 * The small-operations benchmark, written once for both sides: symm's API
 * (bench_small.c) and OpenSHMEM's (bench_small_shmem.c) define the OPS below
 * and include this file, so both run the same loops, batches and statistics.
 *
 * PE 0 times each operation against PE 1 (the other PE of a 2-PE job on one
 * host) in batches of BATCH calls; a figure is the median of the batches' mean
 * nanoseconds per call (its spread: the 10th and 90th percentiles). PE 1 only
 * takes part in the barriers. Rows:
 *   small <impl> <op> <bytes> <ns_median> <ns_p10> <ns_p90>
 */
#ifndef SYMM_BENCH_SMALL_H
#define SYMM_BENCH_SMALL_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 2000
#define BATCHES 41
/* Calls per batch: BATCH unless the program sets it (bench_small.c on a
 * device backend, where each call waits for the GPU). */
static int bs_batch = BATCH;
#define WINDOW 64 /* the put rate: nbi puts between quiets */

static double bs_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bs_cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void bs_report(const char *impl, const char *op, size_t bytes, double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bs_cmp);
    printf("small %s %s %zu %.1f %.1f %.1f\n", impl, op, bytes, v[n / 2], v[n / 10],
           v[n - 1 - n / 10]);
    fflush(stdout);
}

/* Time BODY (one call; `i` is its index in the batch) on PE 0. */
#define BS_TIME(impl, op, bytes, per_call, BODY)                                               \
    do {                                                                                       \
        double v_[BATCHES];                                                                    \
        if (me == 0) {                                                                         \
            for (int b_ = 0; b_ < BATCHES; b_++) {                                             \
                double t0_ = bs_now_ns();                                                      \
                for (int i = 0; i < bs_batch; i++) { BODY; }                                   \
                v_[b_] = (bs_now_ns() - t0_) / ((double)bs_batch * (per_call));                \
            }                                                                                  \
            bs_report(impl, op, bytes, v_, BATCHES);                                           \
        }                                                                                      \
        BARRIER();                                                                             \
    } while (0)

#endif

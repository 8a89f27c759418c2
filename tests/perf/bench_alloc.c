/*
 * The cost of collective allocation against the number of live buffers:
 * with L buffers live (L = 100, 5000, 50000 by default), the time of one
 * symm_buf_alloc and of one symm_buf_free (of the buffer just made), as the
 * median over rounds of the mean of a round. Two layouts of the live buffers:
 *   packed  allocated back to back (one free range above them)
 *   holes   every other one of 2L freed again (L free ranges between them,
 *           too small for the timed allocation, which is larger)
 * Run: symmrun -n P bench_alloc [rounds] [iters] [L ...] with SYMM_HEAP_CAP
 * large enough (50000 live buffers of 256 bytes, holes: twice that). Result
 * lines: RESULT alloc_<layout>_<L> <median us> us, likewise free_.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "symm_test.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void measure(symm_ctx ctx, const char *layout, long live, int rounds, int iters) {
    symm_buf *bufs = calloc((size_t)live * 2, sizeof *bufs);
    double *ta = calloc((size_t)rounds, sizeof *ta), *tf = calloc((size_t)rounds, sizeof *tf);
    ASSERT_TRUE(bufs && ta && tf);
    const bool holes = layout[0] == 'h';
    long made = holes ? 2 * live : live;
    for (long i = 0; i < made; i++) CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &bufs[i]));
    if (holes)
        for (long i = 0; i < made; i += 2) CHECK_OK(symm_buf_free(bufs[i]));
    /* the timed buffer does not fit a hole (256 bytes): 1 KiB */
    for (int r = 0; r < rounds; r++) {
        double a = 0, f = 0;
        for (int k = 0; k < iters; k++) {
            symm_buf b;
            double t0 = now_us();
            CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 128, &b));
            double t1 = now_us();
            CHECK_OK(symm_buf_free(b));
            double t2 = now_us();
            a += t1 - t0;
            f += t2 - t1;
        }
        ta[r] = a / iters;
        tf[r] = f / iters;
    }
    qsort(ta, (size_t)rounds, sizeof *ta, cmp_double);
    qsort(tf, (size_t)rounds, sizeof *tf, cmp_double);
    if (symm_my_pe(ctx) == 0) {
        printf("RESULT alloc_%s_%ld %.2f us min %.2f max %.2f\n", layout, live, ta[rounds / 2],
               ta[0], ta[rounds - 1]);
        printf("RESULT free_%s_%ld %.2f us min %.2f max %.2f\n", layout, live, tf[rounds / 2],
               tf[0], tf[rounds - 1]);
        fflush(stdout);
    }
    for (long i = holes ? 1 : 0; i < made; i += holes ? 2 : 1) CHECK_OK(symm_buf_free(bufs[i]));
    free(bufs);
    free(ta);
    free(tf);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 11;
    int iters = argc > 2 ? atoi(argv[2]) : 200;
    if (rounds < 1 || iters < 1) {
        fprintf(stderr, "usage: bench_alloc [rounds] [iters] [live ...]\n");
        return 2;
    }
    long def[] = {100, 5000, 50000};
    long *lives = def;
    int n_lives = 3;
    if (argc > 3) {
        lives = calloc((size_t)(argc - 3), sizeof *lives);
        ASSERT_TRUE(lives != NULL);
        n_lives = argc - 3;
        for (int i = 0; i < n_lives; i++) lives[i] = atol(argv[3 + i]);
    }
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_HOST);
    for (int i = 0; i < n_lives; i++) {
        measure(ctx, "packed", lives[i], rounds, iters);
        measure(ctx, "holes", lives[i], rounds, iters);
    }
    CHECK_OK(symm_finalize(&ctx));
    return 0;
}

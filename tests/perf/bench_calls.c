/*
 * The cost of small calls on the host backend (no GPU): PE 0 times
 *   putmem8: symm_putmem of 8 bytes to PE 1, then symm_quiet
 *   p8:      symm_p of one uint64 to PE 1
 *   g8:      symm_g of one uint64 from PE 1
 * as the median over rounds of the mean time per iteration of one round.
 * Other PEs wait in a barrier. Run: symmrun -n 2 bench_calls [rounds] [iters]
 * (defaults 31 and 200000). The result lines are
 *   RESULT <key> <median ns> ns min <min ns> max <max ns>
 * and the loader picks the runtime from SYMM_RUNTIME, so two builds of the
 * runtime can be compared run by run with the same binary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "symm_test.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { PUTMEM8, P8, G8, N_KINDS };
static const char *const names[N_KINDS] = {"putmem8_quiet", "p8", "g8"};

static double round_ns(int kind, symm_ctx ctx, symm_buf buf, void *sym, long iters) {
    uint64_t v = 1;
    double t0 = now_ns();
    for (long i = 0; i < iters; i++) {
        v++;
        switch (kind) {
        case PUTMEM8:
            if (symm_putmem(ctx, sym, &v, 8, 1) || symm_quiet(ctx)) return -1;
            break;
        case P8:
            if (symm_p(buf, 0, &v, 1)) return -1;
            break;
        default:
            if (symm_g(buf, 0, 1, &v)) return -1;
            break;
        }
    }
    return (now_ns() - t0) / (double)iters;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 31;
    long iters = argc > 2 ? atol(argv[2]) : 200000;
    if (rounds < 1 || iters < 1) {
        fprintf(stderr, "usage: bench_calls [rounds >= 1] [iters >= 1]\n");
        return 2;
    }
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_HOST);
    if (symm_n_pes(ctx) < 2) {
        printf("SKIP: needs 2 PEs\n");
        CHECK_OK(symm_finalize(&ctx));
        return 77;
    }
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8, &buf));
    void *sym;
    CHECK_OK(symm_buf_ptr(buf, &sym));
    CHECK_OK(symm_barrier_all(ctx));
    if (symm_my_pe(ctx) == 0) {
        double *t = calloc((size_t)rounds, sizeof *t);
        ASSERT_TRUE(t != NULL);
        for (int k = 0; k < N_KINDS; k++) {
            round_ns(k, ctx, buf, sym, iters / 10 + 1); /* warm up */
            for (int r = 0; r < rounds; r++) {
                t[r] = round_ns(k, ctx, buf, sym, iters);
                ASSERT_TRUE(t[r] >= 0);
            }
            qsort(t, (size_t)rounds, sizeof *t, cmp_double);
            printf("RESULT %s %.2f ns min %.2f max %.2f (rounds %d x %ld)\n", names[k],
                   t[rounds / 2], t[0], t[rounds - 1], rounds, iters);
        }
        free(t);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
    CHECK_OK(symm_finalize(&ctx));
    return 0;
}

/*
 * What the diagnostic log costs when it is off (scripts/bench-log.sh runs
 * this under symmrun -n 2 with SYMM_DEBUG unset, WARN, INFO for another
 * subsystem, and against a runtime built with -DSYMM_NO_LOG).
 *
 * Three loops, each timed in 7 samples (median ns per call, PE 0 prints):
 * symm_p to self (no log call on its path: the control), symm_barrier_all
 * (a long-wait describer per flag wait, the wait subsystem's check), and an
 * 8-element symm_broadcast (a TRACE line per call, off).
 */
#include <time.h>

#include "symm_test.h"

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define SAMPLES 7

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1) scale = 1;
    symm_ctx ctx;
    CHECK_OK(symm_init(NULL, &ctx));
    int me = symm_my_pe(ctx);
    symm_test_pe = me;
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 8, &buf));
    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    const char *names[3] = {"symm_p (self)", "symm_barrier_all", "symm_broadcast 8 x int64"};
    const int iters[3] = {200000 * scale, 4000 * scale, 2000 * scale};
    double med[3];
    for (int t = 0; t < 3; t++) {
        double s[SAMPLES];
        for (int k = 0; k < SAMPLES; k++) {
            CHECK_OK(symm_barrier_all(ctx));
            double t0 = now_ns();
            for (int i = 0; i < iters[t]; i++) {
                int64_t v = i;
                if (t == 0) CHECK_OK(symm_p(buf, (uint64_t)(i & 7), &v, me));
                else if (t == 1) CHECK_OK(symm_barrier_all(ctx));
                else CHECK_OK(symm_broadcast(world, buf, 0, buf, 0, 8, 0));
            }
            s[k] = (now_ns() - t0) / iters[t];
        }
        qsort(s, SAMPLES, sizeof s[0], cmp_d);
        med[t] = s[SAMPLES / 2];
    }
    if (me == 0)
        for (int t = 0; t < 3; t++) printf("BENCH %s: %.1f ns/call\n", names[t], med[t]);
    CHECK_OK(symm_buf_free(buf));
    CHECK_OK(symm_finalize(&ctx));
    return 0;
}

/*
 * A PE that waits in symm serves its peers from its own thread (the core's
 * waits call the transport's progress hook at every pass): run under symmrun
 * with 2 PEs on 2 simulated hosts over the ofi transport, its progress thread
 * held off (SYMM_OFI_TEST_NAP_US: it reads the CQ only every 50 ms).
 *
 * PE 1 fills a buffer, then waits in symm_wait_until for a flag. PE 0 makes
 * GETS blocking 8-byte gets from PE 1 (every value checked against what PE 1
 * wrote), then sets the flag. Each get is served only when PE 1's thread reads
 * its CQ, so their median says who served them: the waiting thread, at every
 * pass (tens of microseconds at most), or the thread's 50 ms naps, or a wait
 * that drives progress once a millisecond (at least 1 ms a get). The median
 * must stay under LIMIT_US.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "symm_test.h"

#define GETS 300
#define ELEMS 64u
#define LIMIT_US 500.0

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_HOST);
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    if (n != 2 || symm_test_shared(ctx, 1 - me)) {
        printf("SKIP: needs 2 PEs on 2 hosts (symmrun -n 2 --hosts 2)\n");
        symm_finalize(&ctx);
        return 77;
    }
    symm_buf data = NULL, flag = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, ELEMS, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &flag));
    uint64_t zero = 0, one = 1;
    CHECK_OK(symm_p(flag, 0, &zero, me));
    if (me == 1)
        for (uint64_t i = 0; i < ELEMS; i++) {
            uint64_t v = 0x5157000000000000ull | (i * 7919u + 1u);
            CHECK_OK(symm_p(data, i, &v, me));
        }
    CHECK_OK(symm_barrier_all(ctx));
    if (me == 1) {
        CHECK_OK(symm_wait_until(flag, 0, SYMM_CMP_NE, &zero));
    } else {
        static double t[GETS];
        for (int k = 0; k < GETS; k++) {
            uint64_t i = (uint64_t)k % ELEMS, v = 0;
            double t0 = now_us();
            CHECK_OK(symm_g(data, i, 1, &v));
            t[k] = now_us() - t0;
            if (v != (0x5157000000000000ull | (i * 7919u + 1u)))
                TEST_FAIL_("get %d of element %llu: 0x%llx", k, (unsigned long long)i,
                           (unsigned long long)v);
        }
        CHECK_OK(symm_p(flag, 0, &one, 1));
        qsort(t, GETS, sizeof t[0], cmp_d);
        double med = t[GETS / 2];
        printf("test_ofi_wait: %d gets from a PE waiting in symm_wait_until: median %.1f us, "
               "90th percentile %.1f us (limit %.0f us)\n", GETS, med, t[GETS * 9 / 10],
               LIMIT_US);
        if (med > LIMIT_US)
            TEST_FAIL_("median get %.1f us > %.0f us: the waiting PE did not serve the gets "
                       "from its wait", med, LIMIT_US);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(data));
    CHECK_OK(symm_buf_free(flag));
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("test_ofi_wait: PASS\n");
    return 0;
}

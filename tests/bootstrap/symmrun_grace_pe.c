/*
 * A PE for symmrun's grace-period tests (test_symmrun.c): it joins the job,
 * PE 1 then SIGKILLs itself (once the others told it they passed the first
 * barrier), and every other PE handles the failure:
 *   handle SEC   barrier -> SYMM_ERR_PEER_FAILED, print "PE r handled
 *                PEER_FAILED", work SEC seconds more, print "PE r finished",
 *                exit 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "symm_test.h"

int main(int argc, char **argv) {
    if (argc != 3 || strcmp(argv[1], "handle") != 0) {
        fprintf(stderr, "usage: symmrun_grace_pe handle SEC\n");
        return 2;
    }
    double sec = atof(argv[2]);
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_HOST);
    int me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_buf left;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1, &left));
    CHECK_OK(symm_barrier_all(ctx));
    /* PE 1 dies once every other PE has left that barrier: a PE still inside
     * it when PE 1 died would rightly get PEER_FAILED there (a slow PE under
     * ASan on a loaded machine did). */
    if (me == 1) {
        const int64_t all = n - 1;
        CHECK_OK(symm_wait_until(left, 0, SYMM_CMP_GE, &all));
        kill(getpid(), SIGKILL);
        pause();
    }
    const int64_t one = 1;
    CHECK_OK(symm_atomic(left, 0, SYMM_AMO_ADD, &one, NULL, 1, NULL));
    CHECK_STATUS(symm_barrier_all(ctx), SYMM_ERR_PEER_FAILED);
    printf("PE %d handled PEER_FAILED\n", me);
    fflush(stdout);
    struct timespec ts = {(time_t)sec, (long)((sec - (double)(time_t)sec) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
    CHECK_STATUS(symm_finalize(&ctx), SYMM_ERR_PEER_FAILED);
    printf("PE %d finished\n", me);
    return 0;
}

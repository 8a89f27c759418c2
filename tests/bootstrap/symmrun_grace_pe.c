/*
 * A PE for symmrun's grace-period tests (test_symmrun.c): it joins the job,
 * PE 1 then SIGKILLs itself, and every other PE handles the failure:
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
    int me = symm_my_pe(ctx);
    CHECK_OK(symm_barrier_all(ctx));
    if (me == 1) {
        kill(getpid(), SIGKILL);
        pause();
    }
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

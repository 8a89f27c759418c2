/*
 * A PE dies (SIGKILL) while the others wait on signals and elements it would
 * have updated: signal_wait_until, the wait_until forms, a polling loop over
 * symm_test, a barrier and a collective free must all end with
 * SYMM_ERR_PEER_FAILED within seconds, and finalize still releases the
 * context.
 * Runs without symmrun (which would end the job itself): the test forks its
 * PEs and forms the job with a unique id.
 *
 *   p2p_death VICTIM_RANK N
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "p2p_util.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void expect_failed(const char *what, symm_status st, double t0) {
    double dt = now() - t0;
    if (st != SYMM_ERR_PEER_FAILED)
        TEST_FAIL_("%s returned %s (%s), expected SYMM_ERR_PEER_FAILED", what,
                   symm_status_string(st), symm_last_error());
    if (dt > 10.0) TEST_FAIL_("%s took %.1f s to notice the dead PE", what, dt);
}

static int run_pe(int rank, int n, int victim, const symm_unique_id *id) {
    symm_test_pe = rank;
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.rank = rank;
    attr.n_pes = n;
    attr.unique_id = *id;
    attr.timeout_ms = 20000;
    symm_ctx ctx = NULL;
    CHECK_OK(symm_init(&attr, &ctx));
    symm_buf sig = NULL, elems = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 4, &sig));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 8, &elems));
    CHECK_OK(symm_barrier_all(ctx));
    if (rank == victim) {
        kill(getpid(), SIGKILL); /* no finalize, no goodbye */
        pause();
    }

    /* The first wait notices the death; the others must fail too. */
    double t0 = now();
    expect_failed("symm_signal_wait_until",
                  symm_signal_wait_until(sig, 0, SYMM_CMP_EQ, 1, NULL), t0);
    double first = now() - t0;
    int32_t one = 1, sat = -1;
    uint64_t found = 0;
    t0 = now();
    expect_failed("symm_wait_until", symm_wait_until(elems, 0, SYMM_CMP_EQ, &one), t0);
    t0 = now();
    expect_failed("symm_wait_until_any",
                  symm_wait_until_any(elems, 0, 8, NULL, SYMM_CMP_GT, &one, &found), t0);
    ASSERT_U64_EQ(found, 0); /* untouched */
    t0 = now();
    symm_status st = SYMM_SUCCESS;
    for (long i = 0; i < 100000000 && st == SYMM_SUCCESS; i++) {
        st = symm_test_all(elems, 0, 8, NULL, SYMM_CMP_EQ, &one, &sat);
        if (st == SYMM_SUCCESS) ASSERT_EQ(sat, 0);
    }
    expect_failed("polling symm_test_all", st, t0);
    /* A satisfied test still answers (element 3 is 0, and 0 != 1). */
    CHECK_OK(symm_test(elems, 3, SYMM_CMP_NE, &one, &sat));
    ASSERT_EQ(sat, 1);
    /* Collectives fail the same way, and finalize still releases everything. */
    t0 = now();
    expect_failed("symm_barrier_all", symm_barrier_all(ctx), t0);
    CHECK_STATUS(symm_buf_free(elems), SYMM_ERR_PEER_FAILED);
    CHECK_STATUS(symm_finalize(&ctx), SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(ctx == NULL);
    printf("PE %d: waits saw the death of PE %d after %.3f s\n", rank, victim, first);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    int victim = argc > 1 ? atoi(argv[1]) : 1;
    int n = argc > 2 ? atoi(argv[2]) : 3;
    if (n < 2 || n > 16 || victim < 0 || victim >= n) {
        fprintf(stderr, "usage: p2p_death VICTIM_RANK N (2 <= N <= 16)\n");
        return 2;
    }
    int pfd[2];
    ASSERT_EQ(pipe(pfd), 0);
    pid_t pids[16];
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            symm_unique_id id;
            if (r == 0) {
                CHECK_OK(symm_get_unique_id(&id));
                for (int k = 1; k < n; k++)
                    ASSERT_EQ(write(pfd[1], &id, sizeof id), (ssize_t)sizeof id);
            } else {
                ASSERT_EQ(read(pfd[0], &id, sizeof id), (ssize_t)sizeof id);
            }
            close(pfd[0]);
            close(pfd[1]);
            _exit(run_pe(r, n, victim, &id));
        }
    }
    close(pfd[0]);
    close(pfd[1]);
    int failures = 0;
    for (int r = 0; r < n; r++) {
        int status;
        ASSERT_EQ(waitpid(pids[r], &status, 0), pids[r]);
        if (r == victim) {
            if (!(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)) {
                fprintf(stderr, "victim PE %d ended unexpectedly (status 0x%x)\n", r, status);
                failures++;
            }
        } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            fprintf(stderr, "PE %d failed (status 0x%x)\n", r, status);
            failures++;
        }
    }
    if (failures) return 1;
    printf("p2p peer death of PE %d among %d: every wait and test got SYMM_ERR_PEER_FAILED\n",
           victim, n);
    return 0;
}

/*
 * A PE dies (SIGKILL) while the others wait in a barrier: they must get
 * SYMM_ERR_PEER_FAILED within seconds, not hang, and finalize must still
 * release everything. Runs without symmrun (which would end the job itself):
 * the test forks its PEs and forms the job with a unique id.
 *
 *   test_peer_death VICTIM_RANK N
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symm_test.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
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
    symm_buf b;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 16, &b));
    CHECK_OK(symm_barrier_all(ctx));
    if (rank == victim) {
        kill(getpid(), SIGKILL); /* no finalize, no goodbye */
        pause();
    }
    double t0 = now();
    symm_status st = SYMM_SUCCESS;
    /* The victim never arrives: the barrier must fail, not hang. */
    for (int i = 0; i < 1000 && st == SYMM_SUCCESS; i++) st = symm_barrier_all(ctx);
    double dt = now() - t0;
    if (st != SYMM_ERR_PEER_FAILED)
        TEST_FAIL_("barrier returned %s (%s), expected SYMM_ERR_PEER_FAILED", symm_status_string(st),
                   symm_last_error());
    if (dt > 10.0) TEST_FAIL_("noticing the dead PE took %.1f s", dt);
    /* Every later collective fails the same way; finalize releases anyway. */
    CHECK_STATUS(symm_buf_free(b), SYMM_ERR_PEER_FAILED);
    CHECK_STATUS(symm_finalize(&ctx), SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(ctx == NULL);
    printf("PE %d: saw the death of PE %d after %.3f s\n", rank, victim, dt);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    int victim = argc > 1 ? atoi(argv[1]) : 1;
    int n = argc > 2 ? atoi(argv[2]) : 3;
    int pfd[2];
    ASSERT_EQ(pipe(pfd), 0);
    pid_t pids[16];
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            symm_unique_id id;
            if (r == 0) {
                /* rank 0 makes the id and hands it to the others */
                CHECK_OK(symm_get_unique_id(&id));
                for (int k = 1; k < n; k++) ASSERT_EQ(write(pfd[1], &id, sizeof id), (ssize_t)sizeof id);
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
    printf("peer death of PE %d among %d: all survivors got SYMM_ERR_PEER_FAILED\n", victim, n);
    return 0;
}

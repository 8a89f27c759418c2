/*
 * The fork-and-kill harness of the dead-peer tests (tests/mp/fault/
 * test_dead_ops.c on the host and CUDA backends, tests/gpu/gpu_dead.cu).
 *
 * symm_kill_run forks n_pes PEs that share a unique id (PE 0's child makes it;
 * symmrun is not used, since it would end the job itself). Each child calls
 * setup(rank) when given, then pe_main(rank, &id, ready_fd), and exits with
 * its return value; pe_main writes one byte to ready_fd when it is about to
 * run the call under test (the victim then waits to be killed). Once every PE
 * is ready, the parent waits pause_ms, notes the time in *symm_kill_t (shared
 * memory, 0 until then) and SIGKILLs the victim; once the kernel has torn the
 * victim down (waitpid), it notes that time in *symm_gone_t. A latency bound is
 * measured from the later of the two (symm_kill_since_ms): on a loaded machine
 * the teardown of a process with a large heap has been seen to take over a
 * second, and its sockets close only then. Then it collects the
 * survivors: 0 when each exited 0, 77 when one skipped (exit 77: no usable
 * GPU) and none failed, 1 otherwise. A survivor still running give_up_s after
 * the kill is killed and counted as failed: a hang is a failure of the test,
 * not a timeout of the test runner. The parent itself calls neither symm nor
 * CUDA.
 */
#ifndef SYMM_KILL_HARNESS_H
#define SYMM_KILL_HARNESS_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symm_test.h"

#define SYMM_KILL_MAX_PES 16

/* What a detection bound allows beyond SYMM_PEER_TIMEOUT_MS. The bound tells
 * an error from a hang (detection takes under 30 ms on an idle or busy 2-core
 * machine); the slack absorbs a CI machine that stops scheduling a process
 * for a second, which has been seen. Latencies are printed, not judged. */
#define SYMM_KILL_SLACK_MS 2900.0

typedef int (*symm_kill_pe_fn)(int rank, const symm_unique_id *id, int ready_fd);

/* CLOCK_MONOTONIC seconds (one clock for every process of the host). */
static inline double symm_kill_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* When the victim was killed and when it was gone (symm_kill_now), 0 before;
 * shared with the PEs. */
static volatile double *symm_kill_t, *symm_gone_t;

/* Milliseconds from the victim's end to t: from when it was reaped when the
 * parent has reaped it, else from the kill (a PE may notice the death before
 * the parent reaps the victim; that counts from the kill, never below 0). */
static inline double symm_kill_since_ms(double t) {
    double from = *symm_gone_t > *symm_kill_t ? *symm_gone_t : *symm_kill_t;
    if (from > t) from = *symm_kill_t;
    return (t - from) * 1e3;
}

static inline void symm_kill_sleep_ms(double ms) {
    const long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)};
    nanosleep(&ts, NULL);
}

static inline int symm_kill_run(int n_pes, int victim, double pause_ms, double give_up_s,
                                void (*setup)(int rank), symm_kill_pe_fn pe_main) {
    symm_kill_t = (volatile double *)mmap(NULL, 2 * sizeof(double), PROT_READ | PROT_WRITE,
                                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    ASSERT_TRUE(symm_kill_t != MAP_FAILED);
    symm_gone_t = symm_kill_t + 1;
    *symm_kill_t = 0;
    *symm_gone_t = 0;
    int idp[2], readyp[2];
    ASSERT_EQ(pipe(idp), 0);
    ASSERT_EQ(pipe(readyp), 0);
    pid_t pids[SYMM_KILL_MAX_PES];
    for (int r = 0; r < n_pes; r++) {
        pids[r] = fork();
        ASSERT_TRUE(pids[r] >= 0);
        if (pids[r] == 0) {
            close(readyp[0]);
            if (setup) setup(r);
            symm_unique_id id;
            if (r == 0) {
                CHECK_OK(symm_get_unique_id(&id));
                for (int k = 1; k < n_pes; k++)
                    ASSERT_EQ(write(idp[1], &id, sizeof id), (ssize_t)sizeof id);
            } else {
                ASSERT_EQ(read(idp[0], &id, sizeof id), (ssize_t)sizeof id);
            }
            close(idp[0]);
            close(idp[1]);
            _exit(pe_main(r, &id, readyp[1]));
        }
    }
    close(idp[0]);
    close(idp[1]);
    close(readyp[1]);
    /* Every PE (the victim too) is past init and about to run the call. */
    for (int k = 0; k < n_pes; k++) {
        char c;
        if (read(readyp[0], &c, 1) != 1) {
            int skips = 0;
            for (int r = 0; r < n_pes; r++) {
                int status;
                kill(pids[r], SIGKILL);
                waitpid(pids[r], &status, 0);
                skips += WIFEXITED(status) && WEXITSTATUS(status) == 77;
            }
            if (skips) return 77; /* no usable GPU */
            fprintf(stderr, "a PE ended before it was ready\n");
            return 1;
        }
    }
    close(readyp[0]);
    symm_kill_sleep_ms(pause_ms); /* let the survivors enter the call */
    *symm_kill_t = symm_kill_now();
    kill(pids[victim], SIGKILL);
    int failures = 0, skipped = 0, left = n_pes - 1;
    bool done[SYMM_KILL_MAX_PES] = {false};
    /* SIGKILL cannot be caught: the victim ends (a driver call may hold it a while) */
    while (waitpid(pids[victim], NULL, WNOHANG) == 0 && symm_kill_now() - *symm_kill_t < give_up_s)
        symm_kill_sleep_ms(0.2);
    *symm_gone_t = symm_kill_now();
    done[victim] = true;
    while (left > 0) {
        for (int r = 0; r < n_pes; r++) {
            int status;
            if (done[r] || waitpid(pids[r], &status, WNOHANG) == 0) continue;
            done[r] = true;
            left--;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
                skipped++;
            } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                fprintf(stderr, "PE %d failed (status 0x%x)\n", r, status);
                failures++;
            }
        }
        if (left > 0 && symm_kill_now() - *symm_kill_t > give_up_s) {
            for (int r = 0; r < n_pes; r++) {
                if (done[r]) continue;
                fprintf(stderr, "PE %d still runs %.0f s after PE %d was killed: a hang\n", r,
                        give_up_s, victim);
                kill(pids[r], SIGKILL);
                waitpid(pids[r], NULL, 0);
                failures++;
            }
            break;
        }
        symm_kill_sleep_ms(5);
    }
    if (failures) return 1;
    return skipped ? 77 : 0;
}

#endif /* SYMM_KILL_HARNESS_H */

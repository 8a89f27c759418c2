/*
 * What the bootstrap tells a PE about the others, checked by its text
 * (docs/BAD-INPUT.md, misleading messages):
 *
 *   test_boot_news source   env mode without symmrun (SYMM_RANK/SYMM_N_PES
 *                           set by another launcher) does not name symmrun;
 *                           under symmrun (SYMM_LAUNCHER) it does
 *   test_boot_news emfile   a PE out of descriptors (RLIMIT_NOFILE) while
 *                           receiving a peer's descriptor says so, not that
 *                           the peer "sent nothing within N ms", and the
 *                           peer learns it at once
 *   test_boot_news abort    a PE that gives up (symm__boot_abort, as a failed
 *                           symm_init does) is reported to the others with
 *                           its reason, not as a PE that "left the job
 *                           (finalized)"
 *   test_boot_news interrupt  SYMM_INTERRUPT_FD: SIGINT (its handler writes
 *                           to the pipe, as Python's signal.set_wakeup_fd
 *                           does) ends a PE's wait for a peer that never
 *                           comes within 100 ms, in a polled wait
 *                           (symm__boot_check, as the runtime's waits do) and
 *                           in a bootstrap barrier; the peer learns why
 *
 * Linked with the bootstrap library; the PEs are forked (env bootstrap on an
 * abstract socket; rank 0 serves).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/wire.h"
#include "symm_test.h"

#define TIMEOUT_MS 4000

/* The bootstrap library alone: no public API (symm_last_error) here. */
#define OK(call)                                                                        \
    do {                                                                                \
        symm_status st_ = (call);                                                       \
        if (st_ != SYMM_SUCCESS) TEST_FAIL_("%s -> %d (%s)", #call, st_, symm__last_error()); \
    } while (0)
#define EXPECT(call, status)                                                            \
    do {                                                                                \
        symm_status st_ = (call);                                                       \
        if (st_ != (status))                                                            \
            TEST_FAIL_("%s -> %d, expected %d (%s)", #call, st_, status, symm__last_error()); \
    } while (0)

static char job_addr[128];
static char job_secret[65];

static void clean_env(void) {
    static const char *const vars[] = {
        "SYMM_RANK", "SYMM_N_PES", "SYMM_BOOTSTRAP_ADDR", "SYMM_JOB_SECRET", "SYMM_LAUNCHER",
        "RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
        "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid", "SLURM_PROCID", "SLURM_NTASKS",
        "SLURM_STEP_NUM_TASKS", "SLURM_JOB_ID", NULL};
    for (size_t i = 0; vars[i]; i++) unsetenv(vars[i]);
}

static void setenv_int(const char *name, long v) {
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    setenv(name, b, 1);
}

static void expect_in(const char *what, const char *text, const char *want) {
    if (!strstr(text, want)) TEST_FAIL_("%s: \"%s\" lacks \"%s\"", what, text, want);
}

static void expect_not_in(const char *what, const char *text, const char *bad) {
    if (strstr(text, bad)) TEST_FAIL_("%s: \"%s\" says \"%s\"", what, text, bad);
}

/* ---- source ---- */

static int case_source(void) {
    clean_env();
    setenv("SYMM_RANK", "1", 1);
    setenv("SYMM_N_PES", "2", 1);
    int32_t rank, n;
    char addr[128];
    /* No address, no launcher of symm's: the launcher is not symmrun. */
    EXPECT(symm__boot_env_probe(&rank, &n, addr, sizeof addr), SYMM_ERR_BOOTSTRAP);
    expect_in("SYMM_RANK without symmrun", symm__last_error(), "SYMM_RANK/SYMM_N_PES");
    expect_not_in("SYMM_RANK without symmrun", symm__last_error(), "symmrun");
    /* symmrun says it runs the job: then it is named. */
    setenv("SYMM_LAUNCHER", "symmrun", 1);
    EXPECT(symm__boot_env_probe(&rank, &n, addr, sizeof addr), SYMM_ERR_BOOTSTRAP);
    expect_in("SYMM_RANK under symmrun", symm__last_error(), "(symmrun");
    /* No launcher variables at all: SYMM_RANK is not called symmrun's. */
    clean_env();
    setenv("SYMM_RANK", "0", 1);
    EXPECT(symm__boot_env_probe(&rank, &n, addr, sizeof addr), SYMM_ERR_BOOTSTRAP);
    expect_not_in("no size", symm__last_error(), "symmrun's");
    expect_in("no size", symm__last_error(), "SYMM_RANK/SYMM_N_PES");
    printf("source: ok\n");
    return 0;
}

/* ---- jobs of two forked PEs ---- */

typedef void (*pe_fn)(int32_t rank, symm__boot *b);
static void (*prepare)(int32_t rank); /* before joining, in the PE */

static void pe_start(int32_t r, symm__boot **b) {
    setenv_int("SYMM_RANK", r);
    setenv_int("SYMM_N_PES", 2);
    setenv("SYMM_BOOTSTRAP_ADDR", job_addr, 1);
    setenv("SYMM_JOB_SECRET", job_secret, 1);
    symm__boot_params cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.bootstrap = SYMM_BOOTSTRAP_ENV;
    cfg.timeout_ms = TIMEOUT_MS;
    symm__boot_info info;
    OK(symm__boot_open(&cfg, b, &info));
    ASSERT_EQ(info.local_n_pes, 2);
    OK(symm__boot_barrier(*b));
}

static int run_job(const char *name, pe_fn fn) {
    pid_t pids[2];
    fflush(NULL);
    for (int32_t r = 0; r < 2; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(30);
            symm_test_pe = r;
            clean_env();
            symm__boot *b = NULL;
            if (prepare) prepare(r);
            pe_start(r, &b);
            fn(r, b);
            symm__boot_close(b);
            fflush(NULL);
            exit(0);
        }
    }
    int failed = 0;
    for (int32_t r = 0; r < 2; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "%s: PE %d failed (status 0x%x)\n", name, r, st);
            failed++;
        }
    }
    printf("%s: %s\n", name, failed ? "FAILED" : "ok");
    return failed;
}

/* ---- emfile ---- */

/* Fill the descriptor table but `keep` slots (under a soft limit of 64). */
static void leave_free_descriptors(int keep) {
    struct rlimit lim;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
    if (lim.rlim_cur > 64) lim.rlim_cur = 64;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
    int taken[64], n = 0;
    for (;;) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            ASSERT_EQ(errno, EMFILE);
            break;
        }
        ASSERT_LT(n, 64);
        taken[n++] = fd;
    }
    ASSERT_TRUE(n >= keep);
    for (int i = 0; i < keep; i++) close(taken[--n]);
}

static void pe_emfile(int32_t r, symm__boot *b) {
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    if (r == 1) {
        /* Two free: one for share_fd's copy of the descriptor, one for the
         * socket that sends it, then accepts PE 0's: none for PE 0's
         * descriptor itself. */
        leave_free_descriptors(2);
        int fds[2] = {-1, -1};
        int64_t t0 = symm__now_ms();
        EXPECT(symm__boot_share_fd(b, p[0], fds), SYMM_ERR_SYSTEM);
        expect_in("PE 1", symm__last_error(), "RLIMIT_NOFILE");
        expect_in("PE 1", symm__last_error(), "PE 0 sent its descriptor");
        expect_not_in("PE 1", symm__last_error(), "sent nothing");
        ASSERT_LT(symm__now_ms() - t0, TIMEOUT_MS / 2);
    } else {
        int fds[2] = {-1, -1};
        int64_t t0 = symm__now_ms();
        EXPECT(symm__boot_share_fd(b, p[0], fds), SYMM_ERR_PEER_FAILED);
        expect_in("PE 0", symm__last_error(), "lost PE 1");
        expect_in("PE 0", symm__last_error(), "RLIMIT_NOFILE");
        ASSERT_LT(symm__now_ms() - t0, TIMEOUT_MS / 2);
    }
}

/* ---- abort ---- */

static void pe_abort(int32_t r, symm__boot *b) {
    if (r == 1) {
        struct timespec ts = {0, 100 * 1000000}; /* PE 0 waits in the barrier */
        nanosleep(&ts, NULL);
        symm__boot_abort(b, "symm_init failed (OUT_OF_MEMORY): backing the heap");
        return;
    }
    int64_t t0 = symm__now_ms();
    EXPECT(symm__boot_barrier(b), SYMM_ERR_PEER_FAILED);
    expect_in("PE 0", symm__last_error(), "lost PE 1");
    expect_in("PE 0", symm__last_error(), "symm_init failed (OUT_OF_MEMORY): backing the heap");
    expect_not_in("PE 0", symm__last_error(), "finalized");
    ASSERT_LT(symm__now_ms() - t0, TIMEOUT_MS / 2);
}

/* ---- interrupt ---- */

static int intr_pipe[2] = {-1, -1};
static volatile int64_t signalled_ms; /* when the handler ran */

static void on_sigint(int sig) {
    (void)sig;
    int saved = errno;
    signalled_ms = symm__now_ms(); /* clock_gettime: async-signal-safe */
    char c = 2;
    ssize_t w = write(intr_pipe[1], &c, 1);
    (void)w;
    errno = saved;
}

static void *send_sigint_later(void *arg) {
    (void)arg;
    struct timespec ts = {0, 300 * 1000000};
    nanosleep(&ts, NULL);
    kill(getpid(), SIGINT);
    return NULL;
}

/* PE 0 waits for PE 1, which does not come for 2 s; SIGINT after 300 ms. */
static void prepare_interrupt(int32_t r) {
    if (r != 0) return;
    ASSERT_EQ(pipe2(intr_pipe, O_CLOEXEC | O_NONBLOCK), 0);
    char v[16];
    snprintf(v, sizeof v, "%d", intr_pipe[0]);
    setenv("SYMM_INTERRUPT_FD", v, 1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    ASSERT_EQ(sigaction(SIGINT, &sa, NULL), 0);
}

static bool interrupt_in_barrier;

static void pe_interrupt(int32_t r, symm__boot *b) {
    if (r == 1) {
        struct timespec ts = {2, 0};
        nanosleep(&ts, NULL);
        EXPECT(symm__boot_barrier(b), SYMM_ERR_PEER_FAILED);
        expect_in("PE 1", symm__last_error(), "lost PE 0");
        expect_in("PE 1", symm__last_error(), "interrupted");
        return;
    }
    pthread_t t;
    ASSERT_EQ(pthread_create(&t, NULL, send_sigint_later, NULL), 0);
    symm_status st;
    if (interrupt_in_barrier) {
        st = symm__boot_barrier(b);
    } else { /* a polled wait, as symm__wait: check about every millisecond */
        while ((st = symm__boot_check(b)) == SYMM_SUCCESS) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    int64_t ended = symm__now_ms();
    pthread_join(t, NULL);
    ASSERT_EQ(st, SYMM_ERR_PEER_FAILED);
    expect_in("PE 0", symm__last_error(), "interrupted");
    ASSERT_TRUE(signalled_ms > 0);
    printf("interrupt%s: the wait ended %lld ms after SIGINT\n",
           interrupt_in_barrier ? " (barrier)" : " (polled)", (long long)(ended - signalled_ms));
    ASSERT_LT(ended - signalled_ms, 100);
}

static int case_interrupt(void) {
    /* A value that is not an open descriptor is refused before joining. */
    clean_env();
    setenv("SYMM_INTERRUPT_FD", "abc", 1);
    symm__boot_params cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.bootstrap = SYMM_BOOTSTRAP_SINGLE;
    symm__boot *b = NULL;
    symm__boot_info info;
    EXPECT(symm__boot_open(&cfg, &b, &info), SYMM_ERR_INVALID_ARG);
    expect_in("bad fd", symm__last_error(), "SYMM_INTERRUPT_FD");
    setenv("SYMM_INTERRUPT_FD", "999", 1);
    EXPECT(symm__boot_open(&cfg, &b, &info), SYMM_ERR_INVALID_ARG);
    unsetenv("SYMM_INTERRUPT_FD");
    prepare = prepare_interrupt;
    int failed = run_job("interrupt (polled)", pe_interrupt);
    interrupt_in_barrier = true;
    failed += run_job("interrupt (barrier)", pe_interrupt);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "";
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(how, "source") == 0) return case_source();
    uint8_t rnd[8], sec[32];
    OK(symm__random(rnd, sizeof rnd));
    OK(symm__random(sec, sizeof sec));
    char tag[17];
    symm__hex(tag, rnd, sizeof rnd);
    snprintf(job_addr, sizeof job_addr, "unix:@symm-test-news-%s", tag);
    symm__hex(job_secret, sec, sizeof sec);
    if (strcmp(how, "emfile") == 0) return run_job("emfile", pe_emfile) ? 1 : 0;
    if (strcmp(how, "abort") == 0) return run_job("abort", pe_abort) ? 1 : 0;
    if (strcmp(how, "interrupt") == 0) return case_interrupt();
    fprintf(stderr, "usage: test_boot_news source|emfile|abort|interrupt\n");
    return 2;
}

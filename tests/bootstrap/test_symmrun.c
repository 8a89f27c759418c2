/*
 * symmrun as a program: exit-status propagation, stopping the job when a PE
 * fails or dies, the grace period survivors get (--grace, --no-kill,
 * SYMMRUN_GRACE), --timeout, signal forwarding, a stop signal ending the job
 * (the first SIGINT: exit 130; a second: SIGKILL), PEs dying with symmrun,
 * usage errors, the CPUs --bind gives each PE.
 *
 *   test_symmrun SYMMRUN PE_PROGRAM GRACE_PE_PROGRAM
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symm_test.h"

static const char *symmrun, *pe_prog, *grace_prog;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct result {
    int code;      /* shell-style exit status */
    double secs;
    char out[8192], err[8192];
} result;

static void drain(int fd, char *buf, size_t cap) {
    size_t len = strlen(buf);
    for (;;) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
        if (len == cap - 1) break;
    }
    buf[len] = '\0';
}

static void nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* Run symmrun with argv (NULL-terminated); kill_after > 0 sends sig to
 * symmrun after that many seconds, then again_after > 0 sends sig2 that much
 * later. */
static void run2(result *r, double kill_after, int sig, double again_after, int sig2,
                 const char *const *args) {
    int out[2], err[2];
    ASSERT_EQ(pipe(out), 0);
    ASSERT_EQ(pipe(err), 0);
    const char *argv[32] = {symmrun};
    int n = 1;
    for (; args[n - 1]; n++) argv[n] = args[n - 1];
    argv[n] = NULL;
    double t0 = now_s();
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        setpgid(0, 0); /* keep test signals away from us */
        execv(symmrun, (char **)argv);
        _exit(99);
    }
    close(out[1]);
    close(err[1]);
    int status;
    if (kill_after > 0) {
        nap(kill_after);
        kill(pid, sig);
    }
    if (again_after > 0) {
        nap(again_after);
        kill(pid, sig2);
    }
    r->out[0] = r->err[0] = '\0';
    drain(out[0], r->out, sizeof r->out);
    drain(err[0], r->err, sizeof r->err);
    waitpid(pid, &status, 0);
    r->secs = now_s() - t0;
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    close(out[0]);
    close(err[0]);
}

static void run(result *r, double kill_after, int sig, const char *const *args) {
    run2(r, kill_after, sig, 0, 0, args);
}

#define RUN(r, ...)                                                                 \
    do {                                                                            \
        const char *a_[] = {__VA_ARGS__, NULL};                                     \
        run((r), 0, 0, a_);                                                         \
    } while (0)

static void expect_text(const char *where, const char *text, const char *needle) {
    if (!strstr(text, needle)) TEST_FAIL_("%s lacks \"%s\":\n%s", where, needle, text);
}

/* "PE <rank> cpus <cpu[lo..hi) comma-separated>." as symmrun_pe affinity prints it */
static void cpus_line(char *buf, size_t cap, int rank, const int *cpu, int lo, int hi) {
    int len = snprintf(buf, cap, "PE %d cpus ", rank);
    for (int i = lo; i < hi; i++)
        len += snprintf(buf + len, cap - (size_t)len, "%s%d", i > lo ? "," : "", cpu[i]);
    snprintf(buf + len, cap - (size_t)len, ".");
}

/* --bind: each PE's CPUs, out of the ones this process may use. */
static void test_bind(void) {
    static result r;
    cpu_set_t own;
    ASSERT_EQ(sched_getaffinity(0, sizeof own, &own), 0);
    static int cpu[CPU_SETSIZE];
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &own)) cpu[n++] = c;
    static char want[16384];
    /* none: symmrun's own set */
    RUN(&r, "-n", "2", "--bind", "none", pe_prog, "affinity");
    ASSERT_EQ(r.code, 0);
    for (int pe = 0; pe < 2; pe++) {
        cpus_line(want, sizeof want, pe, cpu, 0, n);
        expect_text("--bind none", r.out, want);
    }
    if (n >= 2) {
        /* auto (the default) on 2 PEs: spread, halves; core: each half's first CPU */
        RUN(&r, "-n", "2", pe_prog, "affinity");
        ASSERT_EQ(r.code, 0);
        cpus_line(want, sizeof want, 0, cpu, 0, n / 2);
        expect_text("--bind auto", r.out, want);
        cpus_line(want, sizeof want, 1, cpu, n / 2, n);
        expect_text("--bind auto", r.out, want);
        setenv("SYMMRUN_BIND", "core", 1);
        RUN(&r, "-n", "2", pe_prog, "affinity");
        unsetenv("SYMMRUN_BIND");
        ASSERT_EQ(r.code, 0);
        cpus_line(want, sizeof want, 0, cpu, 0, 1);
        expect_text("SYMMRUN_BIND=core", r.out, want);
        cpus_line(want, sizeof want, 1, cpu, n / 2, n / 2 + 1);
        expect_text("SYMMRUN_BIND=core", r.out, want);
    } else {
        printf("test_symmrun: one CPU here: the 2-CPU --bind cases are not run\n");
    }
    /* symmrun on one CPU: auto leaves 2 PEs sharing it; core is a usage error */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu[0], &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    RUN(&r, "-n", "2", pe_prog, "affinity");
    ASSERT_EQ(r.code, 0);
    for (int pe = 0; pe < 2; pe++) {
        cpus_line(want, sizeof want, pe, cpu, 0, 1);
        expect_text("--bind auto on one CPU", r.out, want);
    }
    RUN(&r, "-n", "2", "--bind", "core", pe_prog, "affinity");
    ASSERT_EQ(r.code, 2);
    expect_text("stderr", r.err, "--bind core needs a CPU per PE: 2 PEs, 1 CPUs");
    RUN(&r, "-n", "2", "--bind", "nearest", pe_prog, "affinity");
    ASSERT_EQ(r.code, 2);
    expect_text("stderr", r.err, "--bind wants auto, spread, core or none, not \"nearest\"");
    ASSERT_EQ(sched_setaffinity(0, sizeof own, &own), 0);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: test_symmrun SYMMRUN PE_PROGRAM GRACE_PE_PROGRAM\n");
        return 2;
    }
    symmrun = argv[1];
    pe_prog = argv[2];
    grace_prog = argv[3];
    static result r;

    test_bind();

    /* Everyone exits 0: 0; the environment is as documented. */
    RUN(&r, "-n", "4", pe_prog, "env");
    ASSERT_EQ(r.code, 0);
    RUN(&r, "-n1", "--", pe_prog, "env");
    ASSERT_EQ(r.code, 0);
    RUN(&r, "--np=3", "--timeout=30", pe_prog, "env");
    ASSERT_EQ(r.code, 0);

    /* One PE exits 3: symmrun exits 3 and stops the sleeping others after
     * the default grace period (3 s), or at once with --grace 0. */
    RUN(&r, "-n", "4", pe_prog, "exit", "2", "3");
    ASSERT_EQ(r.code, 3);
    ASSERT_TRUE(r.secs >= 3.0 && r.secs < 6.0);
    expect_text("stderr", r.err, "PE 2");
    expect_text("stderr", r.err, "exited with status 3");
    expect_text("stderr", r.err, "the other 3 PEs get 3 s to finish");
    /* One survivor: singular ("the other 1 PE get 3 s" before). */
    RUN(&r, "-n", "2", pe_prog, "exit", "1", "3");
    ASSERT_EQ(r.code, 3);
    expect_text("stderr", r.err, "the other PE gets 3 s to finish");
    if (strstr(r.err, "1 PE get")) TEST_FAIL_("plural for one PE:\n%s", r.err);
    RUN(&r, "-n", "4", "--grace", "0", pe_prog, "exit", "2", "3");
    ASSERT_EQ(r.code, 3);
    ASSERT_LT(r.secs, 2.5);
    expect_text("stderr", r.err, "stopping the other 3 PEs");

    /* Survivors that handle SYMM_ERR_PEER_FAILED: they finish within the
     * default grace period; --grace 1 ends them after 1 s; --no-kill,
     * --grace=inf and SYMMRUN_GRACE=inf let them run as long as they need.
     * symmrun names the dead PE and its signal every time. */
    RUN(&r, "-n", "3", grace_prog, "handle", "0.5");
    ASSERT_EQ(r.code, 137);
    ASSERT_LT(r.secs, 3.0);
    expect_text("stderr", r.err, "PE 1 (pid");
    expect_text("stderr", r.err, "killed by signal 9");
    expect_text("stdout", r.out, "PE 0 handled PEER_FAILED");
    expect_text("stdout", r.out, "PE 0 finished");
    expect_text("stdout", r.out, "PE 2 finished");
    RUN(&r, "-n", "3", "--grace", "1", grace_prog, "handle", "30");
    ASSERT_EQ(r.code, 137);
    ASSERT_TRUE(r.secs >= 1.0 && r.secs < 4.5);
    expect_text("stdout", r.out, "PE 2 handled PEER_FAILED");
    if (strstr(r.out, "finished")) TEST_FAIL_("--grace 1 let a PE finish 30 s of work:\n%s", r.out);
    expect_text("stderr", r.err, "grace period is over");
    RUN(&r, "-n", "3", "--no-kill", grace_prog, "handle", "3.5");
    ASSERT_EQ(r.code, 137);
    ASSERT_TRUE(r.secs >= 3.5);
    expect_text("stdout", r.out, "PE 0 finished");
    expect_text("stdout", r.out, "PE 2 finished");
    expect_text("stderr", r.err, "symmrun waits for them");
    RUN(&r, "-n", "2", "--grace=inf", grace_prog, "handle", "0.2");
    ASSERT_EQ(r.code, 137);
    expect_text("stdout", r.out, "PE 0 finished");
    setenv("SYMMRUN_GRACE", "inf", 1);
    RUN(&r, "-n", "2", grace_prog, "handle", "3.5");
    unsetenv("SYMMRUN_GRACE");
    ASSERT_EQ(r.code, 137);
    ASSERT_TRUE(r.secs >= 3.5);
    expect_text("stdout", r.out, "PE 0 finished");

    /* A PE killed by SIGKILL: 128 + 9. */
    RUN(&r, "-n", "3", pe_prog, "kill", "1");
    ASSERT_EQ(r.code, 137);
    ASSERT_LT(r.secs, 5.0);
    expect_text("stderr", r.err, "PE 1");
    expect_text("stderr", r.err, "signal 9");

    /* PEs that ignore SIGTERM get SIGKILL 2 s later. */
    RUN(&r, "-n", "3", "--grace", "0", pe_prog, "term-ignore");
    ASSERT_EQ(r.code, 5);
    ASSERT_TRUE(r.secs >= 2.0 && r.secs < 6.0);

    /* --timeout: 124. */
    RUN(&r, "-n", "2", "--timeout", "1", pe_prog, "sleep", "30");
    ASSERT_EQ(r.code, 124);
    ASSERT_TRUE(r.secs >= 1.0 && r.secs < 5.0);
    expect_text("stderr", r.err, "timed out");

    /* A program that does not exist: 127 from the PE. */
    RUN(&r, "-n", "2", "/nonexistent/program");
    ASSERT_EQ(r.code, 127);
    expect_text("stderr", r.err, "cannot run");

    /* SIGTERM to symmrun reaches the PEs: they die of it, symmrun reports 143. */
    {
        const char *a[] = {"-n", "2", pe_prog, "sleep", "30", NULL};
        run(&r, 0.5, SIGTERM, a);
        ASSERT_EQ(r.code, 128 + SIGTERM);
        ASSERT_LT(r.secs, 4.0);
    }

    /* The first SIGINT stops the job, even PEs that ignore it (SIGTERM 1 s
     * later): symmrun says so and exits 130. A second one kills them at once. */
    {
        const char *a[] = {"-n", "3", pe_prog, "int-ignore", NULL};
        run(&r, 0.5, SIGINT, a);
        ASSERT_EQ(r.code, 128 + SIGINT);
        ASSERT_TRUE(r.secs >= 1.4 && r.secs < 4.0);
        expect_text("stderr", r.err, "symmrun: SIGINT");
        expect_text("stderr", r.err, "stopping the job (3 PEs running)");
        expect_text("stderr", r.err, "did not end on the signal");
    }
    {
        const char *a[] = {"-n", "2", pe_prog, "int-ignore", NULL};
        run2(&r, 0.5, SIGINT, 0.2, SIGINT, a);
        ASSERT_EQ(r.code, 128 + SIGINT);
        ASSERT_LT(r.secs, 1.4);
        expect_text("stderr", r.err, "second Interrupt: killing the PEs");
    }

    /* symmrun killed with SIGKILL: its PEs die too (PR_SET_PDEATHSIG). */
    {
        char dir[] = "/tmp/symmrun-test-XXXXXX";
        ASSERT_TRUE(mkdtemp(dir) != NULL);
        const char *a[] = {"-n", "3", pe_prog, "pidfile", dir, NULL};
        run(&r, 1.0, SIGKILL, a);
        ASSERT_EQ(r.code, 128 + SIGKILL);
        for (int rank = 0; rank < 3; rank++) {
            char path[256];
            snprintf(path, sizeof path, "%s/%d.pid", dir, rank);
            FILE *f = fopen(path, "r");
            ASSERT_TRUE(f != NULL);
            int pid = 0;
            ASSERT_EQ(fscanf(f, "%d", &pid), 1);
            fclose(f);
            unlink(path);
            bool gone = false;
            for (int k = 0; k < 200 && !gone; k++) {
                char stat[64], buf[512] = "";
                snprintf(stat, sizeof stat, "/proc/%d/stat", pid);
                FILE *s = fopen(stat, "r");
                if (!s) {
                    gone = true;
                    break;
                }
                size_t len = fread(buf, 1, sizeof buf - 1, s);
                buf[len] = '\0';
                fclose(s);
                const char *close_paren = strrchr(buf, ')');
                if (close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z') gone = true;
                else {
                    struct timespec ts = {0, 10 * 1000000};
                    nanosleep(&ts, NULL);
                }
            }
            if (!gone) TEST_FAIL_("PE %d (pid %d) outlived symmrun", rank, pid);
        }
        rmdir(dir);
    }

    /* Usage errors: 2, with a message; --help: 0 with the usage on stdout. */
    RUN(&r, "--help");
    ASSERT_EQ(r.code, 0);
    expect_text("stdout", r.out, "usage: symmrun -n N");
    {
        const char *bad[][6] = {
            {NULL},
            {"-n", NULL},
            {"-n", "0", pe_prog, NULL},
            {"-n", "abc", pe_prog, NULL},
            {"-n", "99999999", pe_prog, NULL},
            {"-n", "2", NULL},
            {"--bogus", "-n", "2", pe_prog, NULL},
            {pe_prog, "env", NULL},
            {"-n", "2", "--timeout", "-1", pe_prog, NULL},
            {"-n", "2", "--timeout", "soon", pe_prog, NULL},
            {"-n", "2", "--grace", "-1", pe_prog, NULL},
            {"-n", "2", "--grace", "later", pe_prog, NULL},
            {"-n", "2", "--grace=", pe_prog, NULL},
            {"-n", "2", "--grace", NULL},
            {"-n", "2", "--hosts", "0", pe_prog, NULL},
            {"-n", "2", "--hosts", "3", pe_prog, NULL},
            {"-n", "2", "--hosts", "two", pe_prog, NULL},
            {"-n", "2", "--hosts=", pe_prog, NULL},
            {"-n", "2", "--hosts", NULL},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            run(&r, 0, 0, bad[i]);
            if (r.code != 2) TEST_FAIL_("usage case %zu: exit %d, expected 2\n%s", i, r.code, r.err);
            expect_text("stderr", r.err, "symmrun: ");
        }
        setenv("SYMMRUN_GRACE", "soon", 1);
        RUN(&r, "-n", "2", pe_prog, "env");
        unsetenv("SYMMRUN_GRACE");
        ASSERT_EQ(r.code, 2);
        expect_text("stderr", r.err, "SYMMRUN_GRACE");
    }
    /* --hosts: contiguous simulated hosts (5 PEs on 2 hosts: 0-2 and 3-4). */
    RUN(&r, "-n", "5", "--hosts", "2", pe_prog, "hosts", "2");
    if (r.code != 0) TEST_FAIL_("--hosts 2: exit %d\n%s", r.code, r.err);
    RUN(&r, "-n", "4", "--hosts=4", pe_prog, "hosts", "4");
    if (r.code != 0) TEST_FAIL_("--hosts=4: exit %d\n%s", r.code, r.err);
    RUN(&r, "-n", "3", "-H", "1", pe_prog, "hosts", "1");
    if (r.code != 0) TEST_FAIL_("-H 1: exit %d\n%s", r.code, r.err);
    printf("test_symmrun: ok\n");
    return 0;
}

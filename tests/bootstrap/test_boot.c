/*
 * Bootstrap client tests (runtime/core/bootstrap.c + wire + rendezvous linked
 * in directly, so they run before and without the rest of the runtime).
 *
 *   test_boot              forks jobs of PEs for each scenario below
 *   test_boot --pe basic   one PE of a job launched by symmrun
 *
 * Scenarios: SYMM_* variables with rank 0 serving, torchrun, Open MPI and
 * Slurm variables (TCP and the abstract-socket fallback), unique id, rank 0
 * starting late, several contexts (sessions), hosts split by SYMM_HOST_ID,
 * descriptor passing, a dying PE (ABORT to the others, boot_check), timeouts,
 * a wrong secret, and no descriptor leaks. Secrets without SYMM_JOB_SECRET:
 * refused for addresses other hosts reach; for local ones derived with this
 * user's key file, so a process without that file (another user) is refused;
 * rank 0 listens on exactly the address given.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symm_test.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/wire.h"

#define OK(call)                                                                        \
    do {                                                                                \
        symm_status st_ = (call);                                                       \
        if (st_ != SYMM_SUCCESS) TEST_FAIL_("%s -> %s (%s)", #call, status_name(st_), symm__last_error()); \
    } while (0)
#define EXPECT(call, status, needle)                                                    \
    do {                                                                                \
        symm__err_clear();                                                              \
        symm_status st_ = (call);                                                       \
        if (st_ != (status))                                                            \
            TEST_FAIL_("%s -> %s, expected %s (%s)", #call, status_name(st_),           \
                       status_name(status), symm__last_error());                        \
        if (!strstr(symm__last_error(), (needle)))                                      \
            TEST_FAIL_("%s: message \"%s\" lacks \"%s\"", #call, symm__last_error(), (needle)); \
    } while (0)

static const char *status_name(symm_status st) {
    static const char *names[] = {"SUCCESS", "INVALID_ARG", "INVALID_HANDLE", "OUT_OF_BOUNDS",
                                  "OUT_OF_MEMORY", "LIBRARY_NOT_FOUND", "ABI_MISMATCH",
                                  "NOT_SUPPORTED", "NO_DEVICE", "BOOTSTRAP", "PEER_FAILED",
                                  "TIMEOUT", "MISMATCH", "TEAM_EXHAUSTED", "CUDA", "SYSTEM",
                                  "THREAD_LEVEL", "INTERNAL"};
    return st >= 0 && st < SYMM_STATUS_COUNT ? names[st] : "?";
}

static int count_fds(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) n += e->d_name[0] != '.';
    if (d) closedir(d);
    return n - 1; /* the directory itself */
}

static void clean_env(void) {
    static const char *vars[] = {"SYMM_RANK", "SYMM_N_PES", "SYMM_LOCAL_RANK", "SYMM_LOCAL_N_PES",
                                 "SYMM_BOOTSTRAP_ADDR", "SYMM_JOB_SECRET", "SYMM_LAUNCHER",
                                 "SYMM_HOST_ID", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                 "MASTER_PORT", "TORCHELASTIC_RUN_ID", "OMPI_COMM_WORLD_RANK",
                                 "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                                 "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_ess_base_jobid",
                                 "SLURM_PROCID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS",
                                 "SLURM_LOCALID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                                 "SLURM_STEP_NUM_NODES", "SLURM_NNODES", NULL};
    for (int i = 0; vars[i]; i++) unsetenv(vars[i]);
}

static void setenv_int(const char *name, long v) {
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    setenv(name, b, 1);
}

static symm__boot_params config(uint32_t mode, uint32_t timeout_ms) {
    symm__boot_params c;
    memset(&c, 0, sizeof c);
    c.bootstrap = mode;
    c.timeout_ms = timeout_ms;
    return c;
}

/* ------------------------------------------------------------------------ */
/* What a PE does in a healthy job                                           */
/* ------------------------------------------------------------------------ */

/* allgather/barrier/share_fd/check over an open boot. */
static void exercise(symm__boot *b, const symm__boot_info *in) {
    int32_t me = in->rank, n = in->n_pes;
    ASSERT_TRUE(in->local_rank >= 0 && in->local_rank < in->local_n_pes);
    ASSERT_EQ(in->local_index[me], in->local_rank);
    ASSERT_EQ(in->pid[me], getpid());
    int32_t locals = 0;
    for (int32_t i = 0; i < n; i++) locals += in->host_id[i] == in->host_id[me];
    ASSERT_EQ(locals, in->local_n_pes);

    /* allgather of several sizes, including 0 and one over a socket buffer */
    size_t sizes[] = {0, 4, 1000, 300000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        uint8_t *mine = malloc(len + 1), *all = malloc(len * (size_t)n + 1);
        for (size_t i = 0; i < len; i++) mine[i] = (uint8_t)(me * 13 + i);
        OK(symm__boot_allgather(b, mine, all, len));
        for (int32_t q = 0; q < n; q++)
            for (size_t i = 0; i < len; i++)
                if (all[(size_t)q * len + i] != (uint8_t)(q * 13 + i))
                    TEST_FAIL_("allgather(%zu): byte %zu of PE %d wrong", len, i, q);
        free(mine);
        free(all);
    }
    for (int i = 0; i < 20; i++) OK(symm__boot_barrier(b));
    OK(symm__boot_check(b));

    /* Descriptor passing: each PE shares a memfd holding its rank, 3 rounds. */
    for (int round = 0; round < 3; round++) {
        int fd = memfd_create("symm-test", MFD_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        int32_t tag = me * 100 + round;
        ASSERT_EQ(pwrite(fd, &tag, sizeof tag, 0), (ssize_t)sizeof tag);
        int *fds = malloc(sizeof(int) * (size_t)in->local_n_pes);
        OK(symm__boot_share_fd(b, fd, fds));
        close(fd);
        for (int32_t q = 0; q < n; q++) {
            int32_t li = in->local_index[q];
            if (li < 0) continue;
            int32_t got = -1;
            ASSERT_EQ(pread(fds[li], &got, sizeof got, 0), (ssize_t)sizeof got);
            ASSERT_EQ(got, q * 100 + round);
        }
        for (int32_t i = 0; i < in->local_n_pes; i++) close(fds[i]);
        free(fds);
    }
    OK(symm__boot_check(b));
}

static void pe_basic(uint32_t mode, const symm__boot_params *cfg_in, int32_t expect_n) {
    /* A unique id's socket is taken over (and closed) by rank 0's open. */
    int fds0 = count_fds() - (mode == SYMM_BOOTSTRAP_UID && cfg_in->uid_rank == 0);
    symm__boot_params cfg = cfg_in ? *cfg_in : config(mode, 20000);
    symm__boot *b = NULL;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    symm_test_pe = in.rank;
    if (expect_n > 0) ASSERT_EQ(in.n_pes, expect_n);
    exercise(b, &in);
    symm__boot_close(b);
    ASSERT_EQ(count_fds(), fds0);
}

/* ------------------------------------------------------------------------ */
/* Jobs of forked PEs                                                         */
/* ------------------------------------------------------------------------ */

typedef void (*pe_fn)(int32_t rank, int32_t n, void *arg);

/* With arg == &killed_rank, that PE is expected to die of SIGKILL. */
static int32_t killed_rank = -1;

/* Fork n PEs running fn; returns how many failed. delay_rank0_ms starts
 * rank 0 last and late. */
static int run_job(const char *name, int32_t n, pe_fn fn, void *arg, int delay_rank0_ms) {
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    fflush(NULL);
    for (int32_t i = 0; i < n; i++) {
        int32_t r = delay_rank0_ms ? (i + 1) % n : i;
        if (r == 0 && delay_rank0_ms) {
            struct timespec ts = {delay_rank0_ms / 1000, (long)(delay_rank0_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        pid_t pid = fork();
        if (pid == 0) {
            alarm(60);
            symm_test_pe = r;
            fn(r, n, arg);
            fflush(NULL);
            exit(0); /* not _exit: leak checkers run at exit */
        }
        pids[r] = pid;
    }
    int failed = 0;
    for (int32_t r = 0; r < n; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        bool victim = arg == (void *)&killed_rank && r == killed_rank;
        if (victim ? !(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
                   : !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "%s: PE %d failed (status 0x%x)\n", name, r, st);
            failed++;
        }
    }
    free(pids);
    printf("%-28s %s\n", name, failed ? "FAILED" : "ok");
    fflush(stdout);
    return failed;
}

static char job_addr[128];
static char job_secret[65];

static void env_symm(int32_t r, int32_t n) {
    setenv_int("SYMM_RANK", r);
    setenv_int("SYMM_N_PES", n);
    setenv("SYMM_BOOTSTRAP_ADDR", job_addr, 1);
    setenv("SYMM_JOB_SECRET", job_secret, 1);
}

static void pe_env_symm(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    pe_basic(SYMM_BOOTSTRAP_ENV, NULL, n);
}

/* Several contexts: two at once (sessions 0 and 1), then a third after both
 * closed (rank 0 restarts its server). */
static void pe_sessions(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    int fds0 = count_fds();
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_AUTO, 20000);
    symm__boot *a, *b, *c;
    symm__boot_info ia, ib, ic;
    OK(symm__boot_open(&cfg, &a, &ia));
    OK(symm__boot_open(&cfg, &b, &ib));
    int32_t x = r, all[16];
    OK(symm__boot_allgather(b, &x, all, sizeof x));
    OK(symm__boot_barrier(a));
    for (int32_t i = 0; i < n; i++) ASSERT_EQ(all[i], i);
    exercise(a, &ia);
    symm__boot_close(a);
    exercise(b, &ib);
    symm__boot_close(b);
    OK(symm__boot_open(&cfg, &c, &ic));
    exercise(c, &ic);
    symm__boot_close(c);
    ASSERT_EQ(count_fds(), fds0);
}

static int free_tcp_port(void) {
    symm__addr a, bound;
    int fd;
    OK(symm__addr_parse("tcp:127.0.0.1:0", &a));
    OK(symm__addr_listen(&a, false, &fd, &bound));
    close(fd);
    return bound.port;
}

static int master_port;

static void pe_torchrun(int32_t r, int32_t n, void *arg) {
    setenv_int("RANK", r);
    setenv_int("WORLD_SIZE", n);
    setenv_int("LOCAL_RANK", r);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv_int("MASTER_PORT", master_port);
    pe_basic(SYMM_BOOTSTRAP_AUTO, NULL, n);
}

static void pe_ompi(int32_t r, int32_t n, void *arg) {
    setenv_int("OMPI_COMM_WORLD_RANK", r);
    setenv_int("OMPI_COMM_WORLD_SIZE", n);
    setenv_int("OMPI_COMM_WORLD_LOCAL_RANK", r);
    setenv_int("OMPI_COMM_WORLD_LOCAL_SIZE", n);
    setenv("OMPI_MCA_ess_base_jobid", job_addr + 7, 1); /* unique per test run */
    pe_basic(SYMM_BOOTSTRAP_ENV, NULL, n);
}

static void pe_slurm(int32_t r, int32_t n, void *arg) {
    setenv_int("SLURM_PROCID", r);
    setenv_int("SLURM_NTASKS", n);
    setenv_int("SLURM_LOCALID", r);
    setenv("SLURM_JOB_ID", job_addr + 7, 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_NNODES", "1", 1);
    pe_basic(SYMM_BOOTSTRAP_AUTO, NULL, n);
}

/* Two fake hosts: PEs 0..n/2-1 on "a", the rest on "b". */
static void pe_two_hosts(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    setenv("SYMM_HOST_ID", r < n / 2 ? "host-a" : "host-b", 1);
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 20000);
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    ASSERT_EQ(in.local_n_pes, r < n / 2 ? n / 2 : n - n / 2);
    ASSERT_EQ(in.local_rank, r < n / 2 ? r : r - n / 2);
    for (int32_t q = 0; q < n; q++)
        ASSERT_EQ(in.local_index[q], (q < n / 2) == (r < n / 2) ? (q < n / 2 ? q : q - n / 2) : -1);
    exercise(b, &in);
    symm__boot_close(b);
}

/* Every PE on its own host: share_fd only synchronises. */
static void pe_no_local_peers(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    char h[16];
    snprintf(h, sizeof h, "host-%d", r);
    setenv("SYMM_HOST_ID", h, 1);
    pe_basic(SYMM_BOOTSTRAP_ENV, NULL, n);
}

/* ---- unique id ---- */

static int uid_pipe[2];
static symm_unique_id uid;

static void pe_uid(int32_t r, int32_t n, void *arg) {
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_UID, 20000);
    cfg.uid_rank = r;
    cfg.uid_n_pes = n;
    if (r == 0) {
        int fds0 = count_fds();
        OK(symm_get_unique_id(&cfg.unique_id));
        ASSERT_EQ(write(uid_pipe[1], &cfg.unique_id, sizeof cfg.unique_id),
                  (ssize_t)sizeof cfg.unique_id);
        pe_basic(SYMM_BOOTSTRAP_UID, &cfg, n);
        ASSERT_EQ(count_fds(), fds0);
        /* An id serves one context. */
        symm__boot *b;
        symm__boot_info in;
        EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "symm_get_unique_id");
    } else {
        cfg.unique_id = uid;
        pe_basic(SYMM_BOOTSTRAP_UID, &cfg, n);
    }
}

static int run_uid_job(int32_t n) {
    /* Rank 0 makes the id in its own process; the others get it by pipe. */
    ASSERT_EQ(pipe(uid_pipe), 0);
    fflush(NULL);
    pid_t p0 = fork();
    if (p0 == 0) {
        alarm(60);
        symm_test_pe = 0;
        pe_uid(0, n, NULL);
        exit(0);
    }
    ASSERT_EQ(read(uid_pipe[0], &uid, sizeof uid), (ssize_t)sizeof uid);
    close(uid_pipe[0]);
    close(uid_pipe[1]);
    int failed = 0;
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    for (int32_t r = 1; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(60);
            symm_test_pe = r;
            pe_uid(r, n, NULL);
            exit(0); /* not _exit: leak checkers run at exit */
        }
    }
    pids[0] = p0;
    for (int32_t r = 0; r < n; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "uid: PE %d failed (0x%x)\n", r, st);
            failed++;
        }
    }
    free(pids);
    printf("%-28s %s\n", "unique id", failed ? "FAILED" : "ok");
    return failed;
}

/* ---- failures ---- */

/* PE n-1 dies after joining; the others learn it from their barrier (PEs
 * 0..n-3) or from boot_check while not in a collective (PE n-2). */
static void pe_death(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 20000);
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    OK(symm__boot_barrier(b));
    if (r == n - 1) {
        struct timespec ts = {0, 100 * 1000000};
        nanosleep(&ts, NULL);
        kill(getpid(), SIGKILL);
    }
    int64_t t0 = symm__now_ms();
    if (r == n - 2) {
        symm_status st;
        while ((st = symm__boot_check(b)) == SYMM_SUCCESS && symm__now_ms() - t0 < 10000) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        ASSERT_EQ(st, SYMM_ERR_PEER_FAILED);
    } else {
        char msg[32];
        snprintf(msg, sizeof msg, "PE %d", n - 1);
        EXPECT(symm__boot_barrier(b), SYMM_ERR_PEER_FAILED, msg);
    }
    ASSERT_LT(symm__now_ms() - t0, 5000);
    /* Sticky: every later call reports it. */
    EXPECT(symm__boot_check(b), SYMM_ERR_PEER_FAILED, "disconnected");
    EXPECT(symm__boot_barrier(b), SYMM_ERR_PEER_FAILED, "disconnected");
    int32_t x = 0, all[8];
    EXPECT(symm__boot_allgather(b, &x, all, sizeof x), SYMM_ERR_PEER_FAILED, "disconnected");
    int fds[8];
    EXPECT(symm__boot_share_fd(b, 0, fds), SYMM_ERR_PEER_FAILED, "disconnected");
    symm__boot_close(b);
}

/* The timeout bounds forming the job, not collectives: a PE that joins a
 * barrier long after the others (here 1.5 s with a 400 ms timeout, as after a
 * long phase of work) still completes it, and nobody reports a failure. */
static void pe_barrier_timeout(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 20000);
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    symm__boot_close(b);
    cfg.timeout_ms = 400; /* a second context with a short timeout */
    OK(symm__boot_open(&cfg, &b, &in));
    if (r == 1) {
        int64_t t0 = symm__now_ms();
        while (symm__now_ms() - t0 < 1500) {
            OK(symm__boot_check(b));
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
    int64_t t0 = symm__now_ms();
    OK(symm__boot_barrier(b));
    if (r != 1) ASSERT_GE(symm__now_ms() - t0, 1000);
    OK(symm__boot_check(b));
    symm__boot_close(b);
}

/* check() from other threads while one thread waits in an allgather. */
typedef struct {
    symm__boot *b;
    atomic_int stop;
    int bad;
} checker_arg;

static void *checker(void *p) {
    checker_arg *c = p;
    while (!atomic_load(&c->stop))
        if (symm__boot_check(c->b) != SYMM_SUCCESS) c->bad++;
    return NULL;
}

static void pe_check_threads(int32_t r, int32_t n, void *arg) {
    env_symm(r, n);
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 20000);
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    checker_arg c = {b, 0, 0};
    pthread_t th[3];
    for (int i = 0; i < 3; i++) pthread_create(&th[i], NULL, checker, &c);
    for (int k = 0; k < 30; k++) {
        if (r == k % n) {
            struct timespec ts = {0, 10 * 1000000};
            nanosleep(&ts, NULL);
        }
        int32_t x = r * 1000 + k, all[16];
        OK(symm__boot_allgather(b, &x, all, sizeof x));
        for (int32_t q = 0; q < n; q++) ASSERT_EQ(all[q], q * 1000 + k);
    }
    atomic_store(&c.stop, 1);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    ASSERT_EQ(c.bad, 0);
    symm__boot_close(b);
}

/* An intruder with the wrong secret is refused; the job forms without it. */
static void pe_intruder(int32_t r, int32_t n, void *arg) {
    if (r == n - 1) { /* the intruder claims rank 1 of an (n-1)-PE job */
        env_symm(1, n - 1);
        /* 64 hex digits: the key itself (a text would spend its PBKDF2
         * while the job forms without it) */
        setenv("SYMM_JOB_SECRET",
               "0badc0de0badc0de0badc0de0badc0de" "0badc0de0badc0de0badc0de0badc0de", 1);
        symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 5000);
        symm__boot *b;
        symm__boot_info in;
        EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "secret");
        return;
    }
    struct timespec ts = {0, r == 1 ? 300 * 1000000 : 0};
    nanosleep(&ts, NULL); /* the real PE 1 comes after the intruder */
    env_symm(r, n - 1);
    pe_basic(SYMM_BOOTSTRAP_ENV, NULL, n - 1);
}

/* A torchrun job on 127.0.0.1 without SYMM_JOB_SECRET; PE n-1 is a process
 * of "another user" (another key file) that knows every public value and
 * claims rank 1: refused. Rank 0 listens on 127.0.0.1 only. */
static char other_key_dir[64];

static bool listens_only_on_loopback(int port) {
    /* /proc/net/tcp{,6}: "sl local_address rem_address st ..." in hex */
    const char *files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
    int found = 0;
    for (int f = 0; f < 2; f++) {
        FILE *in = fopen(files[f], "r");
        if (!in) continue;
        char line[512], local[64], state[8];
        unsigned p;
        while (fgets(line, sizeof line, in)) {
            if (sscanf(line, " %*d: %63[0-9A-Fa-f]:%x %*s %7s", local, &p, state) != 3) continue;
            if ((int)p != port || strcmp(state, "0A") != 0) continue; /* LISTEN */
            found++;
            if (strcmp(local, "0100007F") != 0) {
                fprintf(stderr, "port %d listens on %s in %s\n", port, local, files[f]);
                fclose(in);
                return false;
            }
        }
        fclose(in);
    }
    return found > 0;
}

static void pe_derived_intruder(int32_t r, int32_t n, void *arg) {
    setenv_int("WORLD_SIZE", n - 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv_int("MASTER_PORT", master_port);
    setenv("TORCHELASTIC_RUN_ID", "public-run-id", 1);
    if (r == n - 1) {
        setenv("XDG_RUNTIME_DIR", other_key_dir, 1);
        setenv_int("RANK", 1);
        symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 5000);
        symm__boot *b;
        symm__boot_info in;
        EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "secret");
        return;
    }
    struct timespec ts = {0, r == 1 ? 300 * 1000000 : 0};
    nanosleep(&ts, NULL); /* the real PE 1 comes after the intruder */
    setenv_int("RANK", r);
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_ENV, 20000);
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    if (r == 0 && !listens_only_on_loopback(master_port + 1))
        TEST_FAIL_("rank 0 does not listen on exactly 127.0.0.1:%d", master_port + 1);
    exercise(b, &in);
    symm__boot_close(b);
}

/* ---- single-process checks ---- */

static int single_checks(void) {
    clean_env();
    int fds0 = count_fds();
    /* AUTO with no launcher: one PE, no sockets. */
    symm__boot_params cfg = config(SYMM_BOOTSTRAP_AUTO, 1000);
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    ASSERT_EQ(in.rank, 0);
    ASSERT_EQ(in.n_pes, 1);
    ASSERT_EQ(in.local_n_pes, 1);
    exercise(b, &in);
    symm__boot_close(b);
    symm__boot_close(NULL);
    /* torchrun with WORLD_SIZE=1 needs no server either. */
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "1", 1);
    OK(symm__boot_open(&cfg, &b, &in));
    ASSERT_EQ(in.n_pes, 1);
    symm__boot_close(b);
    clean_env();

    /* ENV without variables, bad variables, multi-host without an address. */
    cfg.bootstrap = SYMM_BOOTSTRAP_ENV;
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "no launcher variables");
    setenv("SYMM_RANK", "x", 1);
    setenv("SYMM_N_PES", "2", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "SYMM_RANK");
    setenv("SYMM_RANK", "2", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "not below");
    clean_env();
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("SLURM_JOB_ID", "99", 1);
    setenv("SLURM_NNODES", "2", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "SYMM_BOOTSTRAP_ADDR");
    clean_env();
    /* An address other hosts can reach needs SYMM_JOB_SECRET. */
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "192.0.2.1", 1);
    setenv("MASTER_PORT", "5000", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "SYMM_JOB_SECRET");
    setenv("RANK", "0", 1); /* rank 0 too, before it listens anywhere */
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "SYMM_JOB_SECRET");
    clean_env();
    setenv("SYMM_RANK", "1", 1);
    setenv("SYMM_N_PES", "2", 1);
    setenv("SYMM_BOOTSTRAP_ADDR", "tcp:192.0.2.1:5000", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "SYMM_JOB_SECRET");
    clean_env();
    {   /* A local job's key file that others may read is refused. */
        char saved[256], dir[] = "/tmp/symm-test-badkey-XXXXXX", path[300];
        snprintf(saved, sizeof saved, "%s", getenv("XDG_RUNTIME_DIR"));
        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(path, sizeof path, "%s/.symm-job-key", dir);
        FILE *f = fopen(path, "w");
        ASSERT_TRUE(f != NULL);
        fprintf(f, "%064d\n", 7);
        fclose(f);
        ASSERT_EQ(chmod(path, 0644), 0);
        setenv("XDG_RUNTIME_DIR", dir, 1);
        setenv("RANK", "1", 1);
        setenv("WORLD_SIZE", "2", 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("MASTER_PORT", "5000", 1);
        EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "mode 0600");
        unlink(path);
        rmdir(dir);
        setenv("XDG_RUNTIME_DIR", saved, 1);
        clean_env();
    }
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    setenv("OMPI_MCA_ess_base_jobid", "1234", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "several hosts");
    clean_env();
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "MASTER_PORT");
    setenv("SYMM_BOOTSTRAP_ADDR", "bogus:1", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_INVALID_ARG, "bogus");
    clean_env();

    /* Nobody serves: a bounded wait whose message names the address. */
    setenv("SYMM_RANK", "1", 1);
    setenv("SYMM_N_PES", "2", 1);
    char nobody[64];
    snprintf(nobody, sizeof nobody, "unix:@symm-test-nobody-home-%d", (int)getpid());
    setenv("SYMM_BOOTSTRAP_ADDR", nobody, 1);
    cfg.timeout_ms = 300;
    int64_t t0 = symm__now_ms();
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_TIMEOUT, nobody);
    ASSERT_GE(symm__now_ms() - t0, 290);
    ASSERT_LT(symm__now_ms() - t0, 3000);
    /* Rank 0 alone: it serves, but nobody else comes. */
    setenv("SYMM_RANK", "0", 1);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_TIMEOUT, "not all 2 PEs joined");
    clean_env();

    /* Unique ids: garbage, wrong rank/size, not made here. */
    cfg.bootstrap = SYMM_BOOTSTRAP_UID;
    cfg.uid_rank = 0;
    cfg.uid_n_pes = 2;
    memset(&cfg.unique_id, 0, sizeof cfg.unique_id);
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_INVALID_ARG, "unique id");
    symm_unique_id id;
    OK(symm_get_unique_id(&id));
    cfg.unique_id = id;
    cfg.uid_rank = 2;
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_INVALID_ARG, "rank");
    /* A valid id this process did not make cannot be served by it. */
    uint8_t other_secret[SYMM__SECRET_BYTES];
    OK(symm__random(other_secret, sizeof other_secret));
    OK(symm__wire_encode_uid(cfg.unique_id.bytes, other_secret, "tcp:127.0.0.1:9"));
    cfg.uid_rank = 0;
    EXPECT(symm__boot_open(&cfg, &b, &in), SYMM_ERR_BOOTSTRAP, "symm_get_unique_id");
    cfg.unique_id = id;
    /* One PE: the id's socket is released. */
    cfg.uid_rank = 0;
    cfg.uid_n_pes = 1;
    OK(symm__boot_open(&cfg, &b, &in));
    symm__boot_close(b);
    EXPECT(symm_get_unique_id(NULL), SYMM_ERR_INVALID_ARG, "NULL");
    setenv("SYMM_BOOTSTRAP_ADDR", "unix:/tmp/nope", 1);
    EXPECT(symm_get_unique_id(&id), SYMM_ERR_NOT_SUPPORTED, "tcp:HOST");
    clean_env();
    ASSERT_EQ(count_fds(), fds0);
    printf("%-28s ok\n", "single-process checks");
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "--pe") == 0) { /* under symmrun */
        ASSERT_TRUE(getenv("SYMM_LAUNCHER") != NULL);
        pe_basic(SYMM_BOOTSTRAP_AUTO, NULL, atoi(getenv("SYMM_N_PES")));
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Derived secrets use this user's key file: a private one for the test. */
    static char key_dir[] = "/tmp/symm-test-keys-XXXXXX";
    ASSERT_TRUE(mkdtemp(key_dir) != NULL);
    setenv("XDG_RUNTIME_DIR", key_dir, 1);
    int failed = single_checks();
    uint8_t rnd[8];
    OK(symm__random(rnd, sizeof rnd));
    char tag[17];
    symm__hex(tag, rnd, sizeof rnd);
    snprintf(job_addr, sizeof job_addr, "unix:@symm-test-boot-%s", tag);
    uint8_t sec[32];
    OK(symm__random(sec, sizeof sec));
    symm__hex(job_secret, sec, sizeof sec);

    failed += run_job("env SYMM_* (4 PEs)", 4, pe_env_symm, NULL, 0);
    failed += run_job("env, rank 0 starts late", 3, pe_env_symm, NULL, 700);
    failed += run_job("env, 1 PE", 1, pe_env_symm, NULL, 0);
    failed += run_job("sessions (3 contexts)", 3, pe_sessions, NULL, 0);
    master_port = free_tcp_port() - 1;
    failed += run_job("torchrun (tcp, 3 PEs)", 3, pe_torchrun, NULL, 0);
    failed += run_job("Open MPI fallback address", 3, pe_ompi, NULL, 0);
    failed += run_job("Slurm fallback address", 2, pe_slurm, NULL, 0);
    failed += run_job("two hosts (SYMM_HOST_ID)", 4, pe_two_hosts, NULL, 0);
    failed += run_job("no local peers", 3, pe_no_local_peers, NULL, 0);
    failed += run_uid_job(3);
    killed_rank = 3;
    failed += run_job("PE death -> ABORT", 4, pe_death, &killed_rank, 0);
    failed += run_job("late barrier", 2, pe_barrier_timeout, NULL, 0);
    failed += run_job("check() from threads", 3, pe_check_threads, NULL, 0);
    failed += run_job("wrong secret refused", 4, pe_intruder, NULL, 0);
    snprintf(other_key_dir, sizeof other_key_dir, "%s/other-user", key_dir);
    ASSERT_EQ(mkdir(other_key_dir, 0700), 0);
    master_port = free_tcp_port() - 1;
    failed += run_job("derived secret, other user", 3, pe_derived_intruder, NULL, 0);
    {   /* the key file: this user's, mode 0600 */
        char path[128];
        struct stat st;
        snprintf(path, sizeof path, "%s/.symm-job-key", key_dir);
        ASSERT_EQ(stat(path, &st), 0);
        ASSERT_EQ(st.st_mode & 0777, 0600);
        ASSERT_EQ(st.st_uid, getuid());
        unlink(path);
        snprintf(path, sizeof path, "%s/.symm-job-key", other_key_dir);
        unlink(path);
        rmdir(other_key_dir);
        rmdir(key_dir);
    }
    if (failed) {
        fprintf(stderr, "test_boot: %d failures\n", failed);
        return 1;
    }
    printf("test_boot: ok\n");
    return 0;
}

/*
 * symmrun: run N processing elements of one symm job on this host.
 *
 *   symmrun -n N [--hosts H] [--bind MODE] [--timeout SEC] [--grace SEC|inf] [--no-kill]
 *           [--] program [args...]
 *   (options, --help text and man page: man/symmrun.txt)
 *
 * symmrun makes a random job secret, serves the job's rendezvous on an
 * abstract Unix socket from its own event loop (rendezvous.c), and starts N
 * copies of the program with
 *   SYMM_RANK, SYMM_N_PES, SYMM_LOCAL_RANK, SYMM_LOCAL_N_PES,
 *   SYMM_BOOTSTRAP_ADDR (unix:@symmrun-...), SYMM_JOB_SECRET (64 hex digits),
 *   SYMM_LAUNCHER=symmrun (so no PE starts a server of its own),
 *   SYMM_RUNTIME=<symmrun's directory>/libsymm_runtime.so.1 when SYMM_RUNTIME
 *     is unset and that file exists (the build tree lays them out this way;
 *     an installed symmrun lives in bin/ and the loader finds the runtime).
 * Each PE gets SIGKILL if symmrun dies (PR_SET_PDEATHSIG).
 *
 * --hosts H splits the PEs into H simulated hosts of contiguous ranks: PE r
 * is on host floor(r * H / N) (-n 4 --hosts 2: PEs 0,1 on host 0, PEs 2,3 on
 * host 1) and gets SYMM_HOST_ID=symmrun-host-<h> and its local rank/count
 * within that host, so PEs of different simulated hosts share no memory and
 * reach each other through a transport (SYMM_TRANSPORT).
 *
 * Exit status: 0 when every PE exits 0. When a PE exits non-zero or dies of a
 * signal, symmrun names it and its status on stderr, gives the others the
 * grace period to finish (--grace SEC, or SYMMRUN_GRACE; default 3 s: their
 * symm calls return SYMM_ERR_PEER_FAILED meanwhile, so they can save work
 * and exit), then sends SIGTERM, SIGKILL 2 s later, and exits with that first
 * failing PE's status (its exit code, or 128 + signal). --grace inf (or
 * --no-kill) never ends them: symmrun waits for every PE.
 * --timeout SEC: the job is stopped the same way after SEC seconds and
 * symmrun exits 124.
 *
 * The first SIGINT (Ctrl-C), SIGTERM or SIGHUP stops the job, and symmrun
 * says so on stderr: the PEs get the signal (forwarded, unless it came from
 * the terminal, which sent it to them too), symmrun closes the job's
 * rendezvous, so every symm call of every PE that waits for peers (a barrier,
 * a collective, a wait) fails at once with SYMM_ERR_PEER_FAILED and a PE that
 * handles the signal (Python raises KeyboardInterrupt) gets control back;
 * the PEs still running 1 s later get SIGTERM, and SIGKILL 2 s after that
 * (after a SIGTERM to symmrun: SIGKILL 2 s later). A second signal sends
 * SIGKILL at once. symmrun then exits 128 + the signal's number (130 for
 * Ctrl-C). Usage errors exit 2.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "runtime_beside.h"
#include "symmrun_args.h"
#include "symmrun_usage.h" /* generated from man/symmrun.txt, as is symmrun.1 */
#include "symm_dispatch.h"  /* SYMM_ABI_MAJOR/MINOR */
#include "bootstrap/bootstrap.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/wire.h"

#define KILL_GRACE_MS 2000
#define STOP_GRACE_MS 1000 /* after a stop signal, before SIGTERM */
#define EXIT_USAGE 2
#define EXIT_TIMEOUT 124
#define EXIT_INTERNAL 1

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "symmrun: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(symmrun --help shows the usage)\n");
    return EXIT_USAGE;
}

typedef struct pe {
    pid_t pid;
    bool running;
} pe;

static void signal_all(pe *pes, int n, int sig) {
    for (int i = 0; i < n; i++)
        if (pes[i].running) kill(pes[i].pid, sig);
}

static int running_count(const pe *pes, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += pes[i].running;
    return k;
}

/* Point SYMM_RUNTIME at the runtime next to symmrun (the build tree). */
static void set_runtime_path(void) {
    char path[PATH_MAX + 32];
    if (!getenv("SYMM_RUNTIME") && symm__runtime_beside(path, sizeof path))
        setenv("SYMM_RUNTIME", path, 1);
}

/* Simulated host of rank r (see --hosts): contiguous groups. */
static long host_of(long r, long n, long hosts) { return r * hosts / n; }

/*
 * --bind: the CPUs each PE may run on, from symmrun's own (sched_getaffinity,
 * so taskset and cgroup cpusets are respected), in the kernel's order: PE r
 * of n gets the r-th of n contiguous groups (spread) or the first CPU of that
 * group (core). auto is spread when the job's PEs are at most the CPUs, else
 * none: a PE per CPU is what mpirun and oshrun do by default, and it keeps
 * two PEs that spin on each other's words off one core; with more PEs than
 * CPUs pinning would only stop the scheduler from balancing them. Simulated
 * hosts share this machine, so every PE of the job counts. docs/DECISIONS.md
 * "symmrun binds PEs to CPUs" has the figures.
 */
typedef struct bind_plan {
    int mode;  /* SYMMRUN_BIND_SPREAD, _CORE or _NONE (auto resolved) */
    int ncpu;
    int cpu[CPU_SETSIZE];
} bind_plan;

static int plan_bind(bind_plan *b, int mode, long n) {
    cpu_set_t own;
    b->ncpu = 0;
    if (sched_getaffinity(0, sizeof own, &own) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &own)) b->cpu[b->ncpu++] = c;
    if (mode == SYMMRUN_BIND_AUTO)
        mode = b->ncpu > 0 && n <= b->ncpu ? SYMMRUN_BIND_SPREAD : SYMMRUN_BIND_NONE;
    if (mode != SYMMRUN_BIND_NONE && n > b->ncpu) {
        fprintf(stderr, "symmrun: --bind %s needs a CPU per PE: %ld PEs, %d CPUs this process "
                "may use\n(--bind auto or none lets them share)\n",
                mode == SYMMRUN_BIND_CORE ? "core" : "spread", n, b->ncpu);
        return EXIT_USAGE;
    }
    b->mode = mode;
    return 0;
}

/* In PE rank's child, before exec (the program and its threads inherit it). */
static void apply_bind(const bind_plan *b, long rank, long n) {
    if (b->mode == SYMMRUN_BIND_NONE) return;
    long lo = rank * b->ncpu / n, hi = (rank + 1) * b->ncpu / n;
    if (b->mode == SYMMRUN_BIND_CORE) hi = lo + 1;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (long i = lo; i < hi; i++) CPU_SET(b->cpu[i], &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        fprintf(stderr, "symmrun: PE %ld: not bound to CPUs %d-%d (%s); runs unbound\n", rank,
                b->cpu[lo], b->cpu[hi - 1], strerror(errno));
}

static void child_exec(int rank, long n, long hosts, const bind_plan *bind, pid_t parent,
                       const sigset_t *mask, char **argv) {
    sigprocmask(SIG_SETMASK, mask, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(EXIT_INTERNAL); /* symmrun died before prctl */
    apply_bind(bind, rank, n);
    char v[48]; /* "symmrun-host-" + a long */
    snprintf(v, sizeof v, "%d", rank);
    setenv("SYMM_RANK", v, 1);
    setenv("SYMM_LOCAL_RANK", v, 1);
    if (hosts > 0) {
        long h = host_of(rank, n, hosts), first = rank, count = 0;
        while (first > 0 && host_of(first - 1, n, hosts) == h) first--;
        for (long r = first; r < n && host_of(r, n, hosts) == h; r++) count++;
        snprintf(v, sizeof v, "symmrun-host-%ld", h);
        setenv("SYMM_HOST_ID", v, 1);
        snprintf(v, sizeof v, "%ld", rank - first);
        setenv("SYMM_LOCAL_RANK", v, 1);
        snprintf(v, sizeof v, "%ld", count);
        setenv("SYMM_LOCAL_N_PES", v, 1);
    }
    execvp(argv[0], argv);
    int e = errno;
    fprintf(stderr, "symmrun: PE %d: cannot run %s: %s\n", rank, argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* Status as a shell reports it, and a sentence for the message. */
static int describe(int status, char *text, size_t n) {
    if (WIFEXITED(status)) {
        snprintf(text, n, "exited with status %d", WEXITSTATUS(status));
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(text, n, "was killed by signal %d (%s)%s", sig, strsignal(sig),
                 WCOREDUMP(status) ? ", core dumped" : "");
        return 128 + sig;
    }
    snprintf(text, n, "ended with wait status 0x%x", status);
    return EXIT_INTERNAL;
}

/* A running job: its rendezvous server, its PEs and the clock of its ending. */
typedef struct job {
    long n, hosts;
    double timeout_s, grace_s;
    char addr_text[96];
    char secret_hex[2 * SYMM__SECRET_BYTES + 1];
    symm__rdv *rdv;   /* NULL once a stop signal closed it */
    int sig_fd;       /* SIGCHLD, SIGINT, SIGTERM, SIGHUP  */
    sigset_t old_mask; /* what the PEs get back             */
    pe *pes;
    int exit_code, first_failed;
    bool timed_out;
    int stop_sig;     /* the first SIGINT/SIGTERM/SIGHUP: the job is being stopped */
    int64_t deadline; /* --timeout, 0: none                                     */
    int64_t term_at;  /* SIGTERM whatever still runs at this time (grace)       */
    int64_t kill_at;  /* SIGKILL whatever still runs at this time               */
    bind_plan bind;   /* --bind                                                 */
} job;

/* The job's secret, address and rendezvous server (symmrun serves it). */
static int job_serve(job *j) {
    uint8_t secret[SYMM__SECRET_BYTES];
    char tag[17];
    if (symm__random(secret, sizeof secret) != SYMM_SUCCESS) {
        fprintf(stderr, "symmrun: %s\n", symm__last_error());
        return EXIT_INTERNAL;
    }
    symm__hex(j->secret_hex, secret, sizeof secret);
    uint8_t tag_bytes[8]; /* the socket name is public: not from the secret */
    if (symm__random(tag_bytes, sizeof tag_bytes) != SYMM_SUCCESS) {
        fprintf(stderr, "symmrun: %s\n", symm__last_error());
        return EXIT_INTERNAL;
    }
    symm__hex(tag, tag_bytes, sizeof tag_bytes);
    snprintf(j->addr_text, sizeof j->addr_text, "unix:@symmrun-%d-%s", (int)getpid(), tag);
    symm__addr addr;
    int listen_fd = -1;
    symm__rdv_config rc;
    memset(&rc, 0, sizeof rc);
    if (symm__addr_parse(j->addr_text, &addr) != SYMM_SUCCESS ||
        symm__addr_listen(&addr, false, &listen_fd, NULL) != SYMM_SUCCESS) {
        fprintf(stderr, "symmrun: %s\n", symm__last_error());
        return EXIT_INTERNAL;
    }
    rc.listen_fd = listen_fd;
    rc.addr_text = j->addr_text;
    rc.log_prefix = "symmrun";
    memcpy(rc.secret, secret, sizeof secret);
    rc.n_pes = (int32_t)j->n;
    /* the PEs' own bootstrap timeout */
    rc.hello_timeout_ms = symmrun_parse_timeout_ms(getenv("SYMM_TIMEOUT_MS"), SYMM__DEFAULT_TIMEOUT_MS);
    if (symm__rdv_create(&rc, &j->rdv) != SYMM_SUCCESS) {
        fprintf(stderr, "symmrun: %s\n", symm__last_error());
        return EXIT_INTERNAL;
    }
    return 0;
}

/* Signals arrive through a signalfd; the PEs get the old mask back. */
static int job_signals(job *j) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &j->old_mask);
    j->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (j->sig_fd < 0) {
        fprintf(stderr, "symmrun: signalfd: %s\n", strerror(errno));
        return EXIT_INTERNAL;
    }
    return 0;
}

/* The PEs' environment, then one process each. */
static int job_spawn(job *j, char **prog) {
    char v[32];
    snprintf(v, sizeof v, "%ld", j->n);
    setenv("SYMM_N_PES", v, 1);
    setenv("SYMM_LOCAL_N_PES", v, 1);
    setenv("SYMM_BOOTSTRAP_ADDR", j->addr_text, 1);
    setenv("SYMM_JOB_SECRET", j->secret_hex, 1);
    setenv("SYMM_LAUNCHER", "symmrun", 1);
    set_runtime_path();
    j->pes = calloc((size_t)j->n, sizeof *j->pes);
    if (!j->pes) {
        fprintf(stderr, "symmrun: out of memory\n");
        return EXIT_INTERNAL;
    }
    fflush(NULL);
    pid_t self = getpid();
    for (int r = 0; r < j->n; r++) {
        pid_t pid = fork();
        if (pid == 0) child_exec(r, j->n, j->hosts, &j->bind, self, &j->old_mask, prog);
        if (pid < 0) {
            fprintf(stderr, "symmrun: cannot start PE %d: %s; stopping the job\n", r,
                    strerror(errno));
            signal_all(j->pes, r, SIGKILL);
            j->exit_code = EXIT_INTERNAL;
            j->first_failed = r;
            break;
        }
        j->pes[r].pid = pid;
        j->pes[r].running = true;
    }
    return 0;
}

/* A stop signal: the first stops the job, a second kills it. */
static void on_stop_signal(job *j, const struct signalfd_siginfo *si) {
    int sig = (int)si->ssi_signo, n = (int)j->n;
    if (j->stop_sig) {
        fprintf(stderr, "symmrun: second %s: killing the PEs\n", strsignal(sig));
        signal_all(j->pes, n, SIGKILL);
        return;
    }
    j->stop_sig = sig;
    int left = running_count(j->pes, n);
    fprintf(stderr, "symmrun: %s (%s): stopping the job (%d PE%s running): %s\n",
            sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP",
            strsignal(sig), left, left == 1 ? "" : "s",
            sig == SIGTERM ? "SIGKILL in 2 s; a second signal kills them now"
                           : "SIGTERM in 1 s, SIGKILL 2 s later; a second signal kills "
                             "them now");
    /* A signal from the terminal reached the PEs too (same process group). */
    if (si->ssi_code != SI_KERNEL) signal_all(j->pes, n, sig);
    /* Closing the rendezvous ends every PE's symm calls that wait for peers
     * (SYMM_ERR_PEER_FAILED at their next check, within milliseconds): a PE
     * blocked in a barrier cannot act on its signal otherwise. */
    symm__rdv_destroy(j->rdv);
    j->rdv = NULL;
    int64_t now = symm__now_ms();
    if (sig == SIGTERM) {
        j->term_at = 0;
        if (!j->kill_at || j->kill_at > now + KILL_GRACE_MS) j->kill_at = now + KILL_GRACE_MS;
    } else if (!j->term_at || j->term_at > now + STOP_GRACE_MS) {
        j->term_at = now + STOP_GRACE_MS;
    }
}

/* A PE ended: the first failure names it and starts the grace period. */
static void on_exit_status(job *j, int r, pid_t pid, int status) {
    j->pes[r].running = false;
    char text[128];
    int code = describe(status, text, sizeof text);
    if (code == 0 || j->first_failed >= 0 || j->timed_out || j->stop_sig) return;
    j->first_failed = r;
    j->exit_code = code;
    int others = running_count(j->pes, (int)j->n);
    /* "the other PE gets", "the other 3 PEs get" */
    char who[32];
    if (others == 1) snprintf(who, sizeof who, "the other PE");
    else snprintf(who, sizeof who, "the other %d PEs", others);
    if (others == 0) {
        fprintf(stderr, "symmrun: PE %d (pid %d) %s\n", r, (int)pid, text);
    } else if (isinf(j->grace_s)) {
        fprintf(stderr, "symmrun: PE %d (pid %d) %s; %s may finish (--grace inf: symmrun waits "
                "for %s)\n", r, (int)pid, text, who, others == 1 ? "it" : "them");
    } else if (j->grace_s > 0) {
        fprintf(stderr, "symmrun: PE %d (pid %d) %s; %s %s %g s to finish (--grace), then "
                "SIGTERM\n", r, (int)pid, text, who, others == 1 ? "gets" : "get", j->grace_s);
        j->term_at = symm__now_ms() + (int64_t)(j->grace_s * 1000.0);
    } else {
        fprintf(stderr, "symmrun: PE %d (pid %d) %s; stopping %s\n", r, (int)pid, text, who);
        signal_all(j->pes, (int)j->n, SIGTERM);
        j->kill_at = symm__now_ms() + KILL_GRACE_MS;
    }
}

/* The clock: --timeout, the grace period's SIGTERM, the last SIGKILL. */
static void on_timers(job *j) {
    int n = (int)j->n;
    int64_t now = symm__now_ms();
    if (j->deadline && !j->timed_out && now >= j->deadline && running_count(j->pes, n) > 0) {
        j->timed_out = true;
        fprintf(stderr, "symmrun: the job timed out after %g s; stopping %d PE%s\n", j->timeout_s,
                running_count(j->pes, n), running_count(j->pes, n) == 1 ? "" : "s");
        signal_all(j->pes, n, SIGTERM);
        j->term_at = 0;
        if (!j->kill_at) j->kill_at = now + KILL_GRACE_MS;
    }
    if (j->term_at && now >= j->term_at) {
        int left = running_count(j->pes, n);
        if (left > 0)
            fprintf(stderr, "symmrun: %s; stopping %d PE%s\n",
                    j->stop_sig ? "the PEs did not end on the signal"
                                : "the grace period is over", left, left == 1 ? "" : "s");
        signal_all(j->pes, n, SIGTERM);
        j->term_at = 0;
        if (!j->kill_at) j->kill_at = now + KILL_GRACE_MS;
    }
    if (j->kill_at && now >= j->kill_at) {
        signal_all(j->pes, n, SIGKILL);
        j->kill_at = 0;
    }
}

/* Until every PE has ended: serve the rendezvous, read signals, reap. */
static void job_supervise(job *j) {
    int n = (int)j->n;
    j->deadline = j->timeout_s > 0 ? symm__now_ms() + (int64_t)(j->timeout_s * 1000.0) : 0;
    while (running_count(j->pes, n) > 0) {
        int64_t now = symm__now_ms(), wake = INT64_MAX;
        if (j->deadline && !j->timed_out) wake = j->deadline;
        if (j->term_at && j->term_at < wake) wake = j->term_at;
        if (j->kill_at && j->kill_at < wake) wake = j->kill_at;
        int wait_ms = -1;
        if (wake != INT64_MAX) wait_ms = wake <= now ? 0 : (int)(wake - now > 1000000 ? 1000000 : wake - now);
        struct pollfd sp = {.fd = j->sig_fd, .events = POLLIN};
        if (!j->rdv) { /* closed by a stop signal: only signals are left to wait for */
            sp.revents = 0;
            if (poll(&sp, 1, wait_ms) < 0 && errno != EINTR) sp.revents = POLLIN;
        } else if (symm__rdv_step(j->rdv, &sp, 1, wait_ms) != SYMM_SUCCESS) {
            fprintf(stderr, "symmrun: %s; stopping the job\n", symm__last_error());
            signal_all(j->pes, n, SIGKILL);
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
        struct signalfd_siginfo si;
        while ((sp.revents & POLLIN) && read(j->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
            if (si.ssi_signo != SIGCHLD) on_stop_signal(j, &si); /* children: reaped below */
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
            int r = 0;
            while (r < n && j->pes[r].pid != pid) r++;
            if (r < n) on_exit_status(j, r, pid, status);
        }
        on_timers(j);
    }
}

/* parse -> serve the rendezvous -> spawn -> supervise. */
int main(int argc, char **argv) {
    symmrun_opts opt;
    char err[512];
    switch (symmrun_parse_args(argc, argv, getenv("SYMMRUN_GRACE"), getenv("SYMMRUN_BIND"), &opt,
                               err, sizeof err)) {
    case SYMMRUN_ARGS_HELP:
        fputs(symmrun_usage_text, stdout);
        return 0;
    case SYMMRUN_ARGS_VERSION:
        printf("symmrun (symm) %d.%d.%d\nABI %d.%d\n", SYMM_VERSION_MAJOR, SYMM_VERSION_MINOR,
               SYMM_VERSION_PATCH, SYMM_ABI_MAJOR, SYMM_ABI_MINOR);
        return 0;
    case SYMMRUN_ARGS_USAGE:
        return usage_error("%s", err);
    default:
        break;
    }
    job j = {.n = opt.n, .hosts = opt.hosts, .timeout_s = opt.timeout_s, .grace_s = opt.grace_s,
             .sig_fd = -1, .first_failed = -1};
    int rc = plan_bind(&j.bind, opt.bind, opt.n);
    if (rc) return rc;
    rc = job_serve(&j);
    if (rc) return rc;
    rc = job_signals(&j);
    if (!rc) rc = job_spawn(&j, argv + opt.prog);
    if (rc) {
        if (j.sig_fd >= 0) close(j.sig_fd);
        symm__rdv_destroy(j.rdv);
        return rc;
    }
    job_supervise(&j);
    free(j.pes);
    close(j.sig_fd);
    symm__rdv_destroy(j.rdv);
    if (j.stop_sig) return 128 + j.stop_sig;
    return j.timed_out ? EXIT_TIMEOUT : j.exit_code;
}

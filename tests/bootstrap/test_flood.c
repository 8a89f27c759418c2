/*
 * The rendezvous server under a connection flood: a
 * job forms while a local process keeps hundreds of idle connections open to
 * its rendezvous socket (loopback TCP, bounded, stopping by itself after
 * FLOOD_MS), and the server neither spins nor floods its log.
 *
 *   test_flood form|emfile
 *
 * form:   rank 0 runs with RLIMIT_NOFILE 256 and the flood (FLOOD_CONNS idle
 *         connections, renewed while it lasts) is queued before the server
 *         starts; the job must form and work.
 * emfile: as form, but rank 0 also holds all but a few descriptors, so the
 *         server's accept() fails with EMFILE during the flood: it must back
 *         off (rank 0's CPU time stays well below its wall time) and rate
 *         limit its lines, and the job still forms.
 * Both count the lines rank 0 writes to stderr (LOG_LIMIT).
 *
 * The PEs use the unique-id bootstrap through the public API (rank 0 serves
 * the job on a thread); the flooder reads the address from the id (layout in
 * runtime/core/wire.h: address length at byte 6, text at byte 40).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symm_test.h"

#define FLOOD_CONNS 600
#define FLOOD_MS 3000
#define RANK0_NOFILE 256
#define LOG_LIMIT 80

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static void set_nofile(rlim_t want) {
    struct rlimit lim;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &lim), 0);
    lim.rlim_cur = want < lim.rlim_max ? want : lim.rlim_max;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lim), 0);
}

static int open_fds(void) {
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

/* ---- the flooder ---- */

static int flood_connect(const struct sockaddr_in *sa) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (const struct sockaddr *)sa, sizeof *sa) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

static void flooder(const symm_unique_id *id, int go_fd) {
    char addr[128] = "";
    unsigned len = (unsigned)id->bytes[6] | ((unsigned)id->bytes[7] << 8);
    ASSERT_TRUE(len > 0 && len < sizeof addr && 40 + len <= sizeof id->bytes);
    memcpy(addr, id->bytes + 40, len);
    unsigned port = 0;
    char host[64];
    if (sscanf(addr, "tcp:%63[^:]:%u", host, &port) != 2)
        TEST_FAIL_("flooder: unexpected address %s", addr);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    ASSERT_EQ(inet_pton(AF_INET, host, &sa.sin_addr), 1);
    set_nofile(FLOOD_CONNS + 64);
    static int fds[FLOOD_CONNS];
    int n = 0;
    for (; n < FLOOD_CONNS; n++)
        if ((fds[n] = flood_connect(&sa)) < 0) break;
    printf("flooder: %d idle connections to %s\n", n, addr);
    fflush(stdout);
    char go = 1;
    ASSERT_EQ(write(go_fd, &go, 1), 1);
    /* Renew the oldest connections while the flood lasts. */
    double end = now_s() + FLOOD_MS / 1000.0;
    int next = 0, renewed = 0;
    while (now_s() < end && n > 0) {
        for (int k = 0; k < 30; k++, next = (next + 1) % n) {
            close(fds[next]);
            fds[next] = flood_connect(&sa);
            renewed += fds[next] >= 0;
        }
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0) close(fds[i]);
    printf("flooder: renewed %d connections, stopped\n", renewed);
    _exit(0);
}

/* ---- the PEs ---- */

static int run_pe(int rank, const symm_unique_id *id, int go_fd, bool emfile) {
    symm_test_pe = rank;
    char go;
    ASSERT_EQ(read(go_fd, &go, 1), 1);
    int hold[RANK0_NOFILE];
    int n_hold = 0;
    if (rank == 0 && emfile) { /* all but a few descriptors */
        while (open_fds() < RANK0_NOFILE - 24 && n_hold < RANK0_NOFILE)
            hold[n_hold++] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.rank = rank;
    attr.n_pes = 2;
    attr.unique_id = *id;
    attr.timeout_ms = 30000;
    double t0 = now_s(), c0 = cpu_s();
    symm_ctx ctx = NULL;
    CHECK_OK(symm_init(&attr, &ctx));
    double wall = now_s() - t0, cpu = cpu_s() - c0;
    for (int i = 0; i < n_hold; i++) close(hold[i]);
    /* The job works: a buffer, a put to the other PE, a barrier. */
    symm_buf b;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 4, &b));
    int64_t v = 100 + rank, got = 0;
    CHECK_OK(symm_put(b, 0, &v, 1, 1 - rank));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_get(&got, b, 0, 1, rank));
    ASSERT_EQ(got, 100 + (1 - rank));
    CHECK_OK(symm_buf_free(b));
    CHECK_OK(symm_finalize(&ctx));
    printf("PE %d: the job formed in %.2f s under the flood (CPU %.2f s)\n", rank, wall, cpu);
    fflush(stdout);
    /* The server thread runs in rank 0: spinning on a failing accept() would
     * cost about as much CPU as wall time. */
    if (rank == 0 && wall > 0.5 && cpu > 0.5 * wall + 0.2)
        TEST_FAIL_("rank 0 used %.2f s of CPU in %.2f s of init: the server spins", cpu, wall);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "form";
    bool emfile = strcmp(mode, "emfile") == 0;
    if (!emfile && strcmp(mode, "form") != 0) {
        fprintf(stderr, "usage: test_flood form|emfile\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    int log_fd = memfd_create("rank0-stderr", 0);
    ASSERT_TRUE(log_fd >= 0);
    int idp[2], go0[2], go1[2], flood_go[2];
    ASSERT_EQ(pipe(idp), 0);
    ASSERT_EQ(pipe(go0), 0);
    ASSERT_EQ(pipe(go1), 0);
    ASSERT_EQ(pipe(flood_go), 0);
    pid_t pe0 = fork();
    ASSERT_TRUE(pe0 >= 0);
    if (pe0 == 0) {
        set_nofile(RANK0_NOFILE);
        dup2(log_fd, 2);
        symm_unique_id id;
        CHECK_OK(symm_get_unique_id(&id));
        ASSERT_EQ(write(idp[1], &id, sizeof id), (ssize_t)sizeof id);
        ASSERT_EQ(write(idp[1], &id, sizeof id), (ssize_t)sizeof id);
        _exit(run_pe(0, &id, go0[0], emfile));
    }
    symm_unique_id id;
    ASSERT_EQ(read(idp[0], &id, sizeof id), (ssize_t)sizeof id);
    pid_t pe1 = fork();
    ASSERT_TRUE(pe1 >= 0);
    if (pe1 == 0) {
        symm_unique_id id1;
        ASSERT_EQ(read(idp[0], &id1, sizeof id1), (ssize_t)sizeof id1);
        _exit(run_pe(1, &id1, go1[0], emfile));
    }
    pid_t fl = fork();
    ASSERT_TRUE(fl >= 0);
    if (fl == 0) flooder(&id, flood_go[1]);
    char go;
    ASSERT_EQ(read(flood_go[0], &go, 1), 1); /* the flood is queued */
    ASSERT_EQ(write(go0[1], &go, 1), 1);
    ASSERT_EQ(write(go1[1], &go, 1), 1);
    int failures = 0;
    pid_t pids[3] = {pe0, pe1, fl};
    for (int i = 0; i < 3; i++) {
        int status;
        ASSERT_EQ(waitpid(pids[i], &status, 0), pids[i]);
        if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            fprintf(stderr, "%s failed (status 0x%x)\n", i < 2 ? (i ? "PE 1" : "PE 0") : "flooder",
                    status);
            failures++;
        }
    }
    /* Rank 0's stderr: its server's lines about the stray connections. */
    off_t size = lseek(log_fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)size + 1);
    ASSERT_TRUE(text != NULL);
    ASSERT_EQ(pread(log_fd, text, (size_t)size, 0), (ssize_t)size);
    int lines = 0;
    for (off_t i = 0; i < size; i++) lines += text[i] == '\n';
    printf("rank 0 wrote %d lines to stderr (%lld bytes)%s\n", lines, (long long)size,
           lines ? "; the first and last:" : "");
    char *first_nl = strchr(text, '\n'), *last = text;
    for (char *p = text; first_nl && p < text + size - 1; p++)
        if (*p == '\n') last = p + 1;
    if (first_nl) printf("  %.*s\n  %s", (int)(first_nl - text), text, last);
    free(text);
    if (lines > LOG_LIMIT) {
        fprintf(stderr, "rank 0 wrote %d lines (limit %d): logging is not rate limited\n", lines,
                LOG_LIMIT);
        failures++;
    }
    if (failures) return 1;
    printf("%s: the job formed under a flood of %d connections\n", mode, FLOOD_CONNS);
    return 0;
}

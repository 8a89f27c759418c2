/*
 * The job secret never crosses the bootstrap's sockets (docs/BAD-INPUT.md,
 * "Wire and bootstrap messages"; docs/BOOTSTRAP.md, Secrets). Bootstrap
 * library linked in (symm__boot_open as symm_init calls it).
 *
 *   test_handshake capture-hex   a 3-PE env job (rank 0 serves on TCP); PEs 1
 *                                and 2 reach the server through a relay that
 *                                records every byte both ways: the job forms
 *                                and works, and the recording holds neither
 *                                the key, nor its hex text, nor any 12-byte
 *                                piece of the key
 *   test_handshake capture-text  the same with a text secret: neither the
 *                                text nor the key derived from it is seen
 *   test_handshake impostor      a PE meets a server that does not know the
 *                                key (it answers HELLO with a made-up proof):
 *                                symm__boot_open fails with BOOTSTRAP, and the
 *                                impostor got the HELLO only (no proof of the
 *                                PE, nothing of the key)
 *   test_handshake short-secret  SYMM_JOB_SECRET below 16 characters is
 *                                INVALID_ARG naming the variable and the
 *                                minimum; 16 characters and 64 hex digits are
 *                                accepted
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symm_test.h"
#include "base/error.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/crypto.h"
#include "bootstrap/wire.h"

#define OK(call)                                                                              \
    do {                                                                                      \
        symm_status st_ = (call);                                                             \
        if (st_ != SYMM_SUCCESS) TEST_FAIL_("%s -> %d (%s)", #call, st_, symm__last_error()); \
    } while (0)

/* ---- what a relay or an impostor saw ---------------------------------- */

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *rec;
static size_t rec_len, rec_cap;

static void record(const void *p, size_t n) {
    pthread_mutex_lock(&rec_lock);
    if (rec_len + n > rec_cap) {
        rec_cap = (rec_len + n) * 2;
        rec = realloc(rec, rec_cap);
        ASSERT_TRUE(rec != NULL);
    }
    memcpy(rec + rec_len, p, n);
    rec_len += n;
    pthread_mutex_unlock(&rec_lock);
}

static bool recorded(const void *needle, size_t n) {
    pthread_mutex_lock(&rec_lock);
    bool found = rec_len >= n && memmem(rec, rec_len, needle, n) != NULL;
    pthread_mutex_unlock(&rec_lock);
    return found;
}

/* The key must not appear whole, as text, or in any 12-byte piece. */
static void expect_no_key(const uint8_t key[32], const char *text) {
    ASSERT_TRUE(rec_len > 0);
    if (recorded(key, 32)) TEST_FAIL_("the job key crossed the socket");
    char hex[65];
    symm__hex(hex, key, 32);
    if (recorded(hex, 64)) TEST_FAIL_("the job key's hex text crossed the socket");
    for (size_t i = 0; i + 12 <= 32; i++)
        if (recorded(key + i, 12)) TEST_FAIL_("bytes %zu..%zu of the job key crossed the socket", i,
                                              i + 11);
    if (text && recorded(text, strlen(text))) TEST_FAIL_("the text secret crossed the socket");
}

/* ---- a recording relay -------------------------------------------------- */

static symm__addr server_addr;

static void *relay_conn(void *arg) {
    int a = (int)(intptr_t)arg, b = -1;
    if (symm__addr_connect(&server_addr, symm__now_ms() + 10000, &b) != SYMM_SUCCESS) {
        close(a);
        return NULL;
    }
    int fds[2] = {a, b};
    bool open_[2] = {true, true};
    uint8_t buf[65536];
    while (open_[0] || open_[1]) {
        struct pollfd p[2] = {{a, open_[0] ? POLLIN : 0, 0}, {b, open_[1] ? POLLIN : 0, 0}};
        if (poll(p, 2, 30000) <= 0) break;
        for (int i = 0; i < 2; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (n <= 0) {
                open_[i] = false;
                shutdown(fds[1 - i], SHUT_WR);
                continue;
            }
            record(buf, (size_t)n);
            for (ssize_t off = 0; off < n;) {
                ssize_t w = send(fds[1 - i], buf + off, (size_t)(n - off), MSG_NOSIGNAL);
                if (w < 0 && errno == EAGAIN) {
                    struct pollfd q = {fds[1 - i], POLLOUT, 0};
                    poll(&q, 1, 1000);
                    continue;
                }
                if (w <= 0) break;
                off += w;
            }
        }
    }
    close(a);
    close(b);
    return NULL;
}

static int relay_listen;
static unsigned relayed;

static void *relay_main(void *arg) {
    (void)arg;
    for (;;) {
        struct pollfd p = {relay_listen, POLLIN, 0};
        if (poll(&p, 1, -1) < 0 && errno != EINTR) break;
        int c = accept4(relay_listen, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINVAL || errno == EBADF) break; /* shut down */
            continue;
        }
        __atomic_add_fetch(&relayed, 1, __ATOMIC_SEQ_CST);
        pthread_t t;
        pthread_create(&t, NULL, relay_conn, (void *)(intptr_t)c);
        pthread_detach(t);
    }
    return NULL;
}

static int free_port(void) {
    symm__addr a, bound;
    int fd;
    OK(symm__addr_parse("tcp:127.0.0.1:0", &a));
    OK(symm__addr_listen(&a, false, &fd, &bound));
    close(fd);
    return bound.port;
}

static void setenv_int(const char *name, long v) {
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    setenv(name, b, 1);
}

/* One PE of the job: form it, exchange data, leave. */
static void pe(int32_t rank, int32_t n, const char *addr, const char *secret) {
    setenv_int("SYMM_RANK", rank);
    setenv_int("SYMM_N_PES", n);
    setenv("SYMM_BOOTSTRAP_ADDR", addr, 1);
    setenv("SYMM_JOB_SECRET", secret, 1);
    unsetenv("SYMM_LAUNCHER");
    symm__boot_params cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.bootstrap = SYMM_BOOTSTRAP_ENV;
    cfg.timeout_ms = 20000;
    symm__boot *b;
    symm__boot_info in;
    OK(symm__boot_open(&cfg, &b, &in));
    ASSERT_EQ(in.rank, rank);
    ASSERT_EQ(in.n_pes, n);
    int32_t mine[4] = {rank, rank * 3, -rank, 77}, all[16];
    OK(symm__boot_allgather(b, mine, all, sizeof mine));
    for (int32_t q = 0; q < n; q++) ASSERT_EQ(all[q * 4 + 1], q * 3);
    OK(symm__boot_barrier(b));
    symm__boot_close(b);
}

static int capture(const char *secret) {
    int port = free_port();
    char real[64], via[64];
    snprintf(real, sizeof real, "tcp:127.0.0.1:%d", port);
    OK(symm__addr_parse(real, &server_addr));
    symm__addr ra, bound;
    OK(symm__addr_parse("tcp:127.0.0.1:0", &ra));
    OK(symm__addr_listen(&ra, false, &relay_listen, &bound));
    int fl = fcntl(relay_listen, F_GETFL);
    fcntl(relay_listen, F_SETFL, fl & ~O_NONBLOCK);
    snprintf(via, sizeof via, "tcp:127.0.0.1:%u", bound.port);
    const int32_t n = 3;
    pid_t pids[3];
    fflush(NULL);
    /* Every PE is forked before the relay's threads start: a child forked
     * while a relay thread holds the allocator's lock (ASan's, glibc's) would
     * hang in its first malloc. Connections wait in the listen backlog. */
    for (int32_t r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(60);
            close(relay_listen);
            symm_test_pe = r;
            pe(r, n, r == 0 ? real : via, secret);
            exit(0);
        }
    }
    pthread_t rt;
    pthread_create(&rt, NULL, relay_main, NULL);
    for (int32_t r = 0; r < n; r++) {
        int st;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) TEST_FAIL_("PE %d failed (0x%x)", r, st);
    }
    shutdown(relay_listen, SHUT_RDWR);
    close(relay_listen);
    pthread_join(rt, NULL);
    struct timespec ts = {0, 100 * 1000000}; /* the relay's connections finish */
    nanosleep(&ts, NULL);
    ASSERT_GE(__atomic_load_n(&relayed, __ATOMIC_SEQ_CST), 2);
    /* The relay saw the handshakes and the collectives of PEs 1 and 2. */
    ASSERT_GE(rec_len, 2 * (16 + SYMM__WIRE_HELLO_BYTES));

    /* The key this job used, computed the way the runtime does. */
    setenv("SYMM_JOB_SECRET", secret, 1);
    uint8_t key[32];
    if (!symm__unhex(key, sizeof key, secret))
        symm__pbkdf2_sha256(secret, strlen(secret), "symm job secret v2", 18, 100000, key, 32);
    expect_no_key(key, secret);
    printf("capture: %zu bytes through the relay, %u connections; no key in them\n", rec_len,
           relayed);
    return 0;
}

/* ---- an impostor server --------------------------------------------------- */

static int imp_listen;
static bool got_more_than_hello;

static void *impostor_main(void *arg) {
    (void)arg;
    for (int k = 0; k < 8; k++) {
        struct pollfd p = {imp_listen, POLLIN, 0};
        if (poll(&p, 1, 15000) <= 0) break;
        int c = accept4(imp_listen, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) continue;
        uint8_t buf[4096];
        size_t got = 0;
        int64_t until = symm__now_ms() + 3000;
        bool answered = false;
        while (symm__now_ms() < until) {
            struct pollfd q = {c, POLLIN, 0};
            if (poll(&q, 1, 100) <= 0) continue;
            ssize_t n = recv(c, buf + got, sizeof buf - got, MSG_DONTWAIT);
            if (n <= 0) break;
            record(buf + got, (size_t)n);
            got += (size_t)n;
            if (!answered && got >= 16 + SYMM__WIRE_HELLO_BYTES) {
                /* A CHALLENGE in the right format with a proof it cannot make. */
                uint8_t msg[16 + SYMM__WIRE_CHALLENGE_BYTES];
                symm__wire_encode_header(msg, SYMM__MSG_CHALLENGE, SYMM__WIRE_CHALLENGE_BYTES, 0);
                symm__random(msg + 16, SYMM__WIRE_CHALLENGE_BYTES);
                (void)!send(c, msg, sizeof msg, MSG_NOSIGNAL);
                answered = true;
            }
            if (got > 16 + SYMM__WIRE_HELLO_BYTES) got_more_than_hello = true;
        }
        close(c);
    }
    return NULL;
}

static int impostor(void) {
    symm__addr a, bound;
    OK(symm__addr_parse("tcp:127.0.0.1:0", &a));
    OK(symm__addr_listen(&a, false, &imp_listen, &bound));
    pthread_t t;
    pthread_create(&t, NULL, impostor_main, NULL);
    char addr[64], secret[65];
    uint8_t key[32];
    OK(symm__random(key, sizeof key));
    symm__hex(secret, key, sizeof key);
    snprintf(addr, sizeof addr, "tcp:127.0.0.1:%u", bound.port);
    setenv("SYMM_RANK", "1", 1);
    setenv("SYMM_N_PES", "2", 1);
    setenv("SYMM_LAUNCHER", "symmrun", 1); /* the server is elsewhere: the impostor */
    setenv("SYMM_BOOTSTRAP_ADDR", addr, 1);
    setenv("SYMM_JOB_SECRET", secret, 1);
    symm__boot_params cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.bootstrap = SYMM_BOOTSTRAP_ENV;
    cfg.timeout_ms = 3000;
    symm__boot *b = NULL;
    symm__boot_info in;
    symm__err_clear();
    symm_status st = symm__boot_open(&cfg, &b, &in);
    if (st == SYMM_SUCCESS) TEST_FAIL_("joined an impostor's job");
    printf("impostor: symm__boot_open -> %d: %s\n", st, symm__last_error());
    close(imp_listen);
    pthread_join(t, NULL);
    expect_no_key(key, NULL);
    if (got_more_than_hello) TEST_FAIL_("the PE answered an impostor's CHALLENGE");
    ASSERT_EQ(st, SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(strstr(symm__last_error(), "could not prove") != NULL);
    return 0;
}

/* ---- the shortest secret ---------------------------------------------------- */

static symm_status probe(const char *secret) {
    setenv("SYMM_RANK", "0", 1);
    setenv("SYMM_N_PES", "2", 1);
    setenv("SYMM_BOOTSTRAP_ADDR", "tcp:10.1.2.3:5000", 1);
    setenv("SYMM_JOB_SECRET", secret, 1);
    symm__err_clear();
    return symm__boot_env_probe(NULL, NULL, NULL, 0);
}

static int short_secret(void) {
    static const char *const refused[] = {"x", "hunter2", "fifteen chars..", "0123456789abcde"};
    for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
        symm_status st = probe(refused[i]);
        if (st != SYMM_ERR_INVALID_ARG)
            TEST_FAIL_("SYMM_JOB_SECRET=\"%s\" -> %d, expected INVALID_ARG (%s)", refused[i], st,
                       symm__last_error());
        if (!strstr(symm__last_error(), "SYMM_JOB_SECRET") || !strstr(symm__last_error(), "16"))
            TEST_FAIL_("message \"%s\" names neither the variable nor the minimum",
                       symm__last_error());
    }
    OK(probe("sixteen chars..."));
    OK(probe("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"));
    printf("short-secret: refused below 16 characters\n");
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "capture-hex")) {
        uint8_t k[32];
        char hex[65];
        OK(symm__random(k, sizeof k));
        symm__hex(hex, k, sizeof k);
        return capture(hex);
    }
    if (!strcmp(mode, "capture-text")) return capture("correct horse battery staple, 42 times");
    if (!strcmp(mode, "impostor")) return impostor();
    if (!strcmp(mode, "short-secret")) return short_secret();
    fprintf(stderr, "usage: test_handshake capture-hex|capture-text|impostor|short-secret\n");
    return 2;
}

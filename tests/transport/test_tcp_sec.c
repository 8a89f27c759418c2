/*
 * The tcp transport under hostile or broken peers (docs/BAD-INPUT.md,
 * "Transports"): PEs forked by tp_world with the real plugin, and raw
 * sockets playing strangers, liars and stuck peers.
 *
 *   test_tcp_sec PLUGIN CASE
 *
 * stranger  a process without the job key connects to PE 0's port and sends
 *           a PUT, a GET, a version-1 HELLO, a HELLO with a made-up proof:
 *           each connection is closed with nothing answered but a
 *           CHALLENGE; PE 0's heap is untouched; PE 1's own puts still work
 * claim     PE 2 says it is PE 1 (with PE 2's proof), or addresses PE 1 at
 *           PE 0's port: refused; as itself it is accepted, and its requests
 *           outside registered memory get OUT_OF_BOUNDS without a write
 * stall     PE 2 leaves a stranger's half HELLO, an authenticated half
 *           request and an authenticated 32 MiB GET whose reply it never
 *           reads on PE 0's service: PE 1's 8-byte puts to PE 0 stay fast
 *           (each under STALL_BOUND_MS, median under 50 ms)
 * stopped   PE 1 stops (SIGSTOP) with SYMM_PEER_STALL_MS=1000: PE 0's put to
 *           it returns SYMM_ERR_TIMEOUT after 1 s (within 1 s + 2 s), later
 *           operations on PE 1 fail at once with TIMEOUT; after SIGCONT the
 *           job closes normally
 * flood     PE 0 runs short of descriptors (RLIMIT_NOFILE lowered to what it
 *           holds + 4) while PE 1 opens 400 idle connections to it: PE 1's
 *           puts keep working, the strangers are dropped (90% or more are
 *           closed by PE 0 within the handshake deadline + 3 s), and PE 0's
 *           service does not spin (its CPU time over the flood stays under
 *           half of the wall time)
 * impostor  PE 1 finds an impostor at PE 0's address (it answers HELLO with a
 *           made-up proof): PE 1's open fails with BOOTSTRAP and it sends
 *           nothing after the CHALLENGE
 * badenv    SYMM_PEER_STALL_MS junk, 0, above 3600000: open is INVALID_ARG on
 *           every PE, naming the variable
 * Exit 0 pass, 1 fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <symm/symm.h>

#include "runtime/transports/tcp/tcp_proto.h"
#include "tp_world.h"

#define HEAP (40u << 20)
#define STALL_BOUND_MS 2000

static const char *mode;
static uint8_t *heap;
static int ports[8];
static int pids[8];

#define FAILF(...)                                                                             \
    do {                                                                                       \
        fprintf(stderr, "[pe %d] FAIL %s:%d: ", w->me, __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, " (last error: %s)\n", tp_last_error());                              \
        return 1;                                                                              \
    } while (0)
#define OK(call)                                                                               \
    do {                                                                                       \
        int32_t rc_ = (call);                                                                  \
        if (rc_) FAILF("%s -> status %d", #call, rc_);                                         \
    } while (0)

static uint8_t pattern(uint64_t i) {
    return (uint8_t)(i * 131u + (i >> 9) + 7u);
}

/* Open the transport, register a patterned heap, learn ports and pids. */
static int setup(tp_world *w) {
    heap = aligned_alloc(4096, HEAP);
    if (!heap) FAILF("no memory");
    for (uint64_t i = 0; i < HEAP; i++) heap[i] = pattern(i);
    OK(w->ops->open(&w->core, 0, &w->state, &w->info));
    int port = 0;
    const char *p = strstr(w->info.device, "port ");
    if (!p || sscanf(p, "port %d", &port) != 1) FAILF("no port in \"%s\"", w->info.device);
    int mine[2] = {port, (int)getpid()}, all[16];
    OK(w->core.allgather(w->core.core, mine, all, sizeof mine));
    for (int32_t i = 0; i < w->n; i++) ports[i] = all[2 * i], pids[i] = all[2 * i + 1];
    /* the first MiB is the registered heap; the rest is this PE's own memory
     * (requests there must be refused) */
    OK(w->ops->mem_add(w->state, heap, 0, 1u << 20, SYMM_TP_MEM_HOST, -1));
    OK(w->ops->mem_add(w->state, heap + (2u << 20), 2u << 20, HEAP - (2u << 20), SYMM_TP_MEM_HOST,
                       -1));
    return 0;
}

static int heap_intact(void) {
    for (uint64_t i = 0; i < HEAP; i++)
        if (heap[i] != pattern(i)) return 0;
    return 1;
}

static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_raw(int fd, const void *p, size_t n) {
    (void)!send(fd, p, n, MSG_NOSIGNAL);
}

/* Read what comes for up to ms, or until cap bytes came: returns the bytes
 * read, *closed = 1 when the peer closed (EOF or reset) in that time. */
static size_t drain(int fd, int ms, uint8_t *buf, size_t cap, int *closed) {
    size_t got = 0;
    *closed = 0;
    uint64_t end = tp_now_ms() + (uint64_t)ms;
    while (tp_now_ms() < end && got < cap) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 20) <= 0) continue;
        uint8_t junk[4096];
        uint8_t *dst = got < cap ? buf + got : junk;
        size_t room = got < cap ? cap - got : sizeof junk;
        ssize_t k = recv(fd, dst, room, MSG_DONTWAIT);
        if (k > 0) {
            got += (size_t)k;
            continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
            *closed = 1;
            return got;
        }
    }
    return got;
}

/* The caller's side of the handshake on fd, saying it is `from`, proving it
 * as `signer` (tp_world_mac: the job key). 1: ACCEPT came; 0: closed. */
static int handshake_as(int fd, int32_t from, int32_t to, int32_t signer) {
    uint8_t hello[TCP_HELLO_BYTES], chal[TCP_CHALLENGE_BYTES], auth[TCP_AUTH_BYTES];
    uint8_t nonce[TCP_NONCE], msg[TCP_PROOF_MSG_MAX];
    if (getrandom(nonce, sizeof nonce, 0) != (ssize_t)sizeof nonce) return 0;
    tcp_hs_head(hello, TCP_HS_HELLO);
    tcp_put32(hello + TCP_HS_HEAD, (uint32_t)from);
    tcp_put32(hello + TCP_HS_HEAD + 4, (uint32_t)to);
    memcpy(hello + TCP_HS_HEAD + 8, nonce, TCP_NONCE);
    send_raw(fd, hello, sizeof hello);
    int closed;
    if (drain(fd, 300, chal, sizeof chal, &closed) != sizeof chal || closed) return 0;
    if (tcp_hs_check(chal, TCP_HS_CHALLENGE) != 0) return 0;
    size_t len = tcp_proof_msg(msg, TCP_PROOF_LABEL_CALLER, from, to, nonce, chal + TCP_HS_HEAD);
    tcp_hs_head(auth, TCP_HS_AUTH);
    tp_world_mac(signer, msg, len, auth + TCP_HS_HEAD);
    send_raw(fd, auth, sizeof auth);
    uint8_t acc[TCP_ACCEPT_BYTES];
    size_t got = drain(fd, 300, acc, sizeof acc, &closed);
    return got == sizeof acc && tcp_hs_check(acc, TCP_HS_ACCEPT) == 0;
}

static tcp_req request(uint32_t type, uint64_t off, uint64_t n) {
    tcp_req q;
    memset(&q, 0, sizeof q);
    q.magic = TCP_MAGIC;
    q.type = type;
    q.off = off;
    q.n = n;
    return q;
}

/* ---- stranger -------------------------------------------------------------- */

static int attack(tp_world *w, const char *what, const void *bytes, size_t n, size_t allowed) {
    int fd = raw_connect(ports[0]);
    if (fd < 0) FAILF("%s: cannot connect to PE 0's port %d", what, ports[0]);
    send_raw(fd, bytes, n);
    uint8_t got[4096]; /* more than any honest answer: read on until closed */
    int closed;
    size_t k = drain(fd, 3000, got, sizeof got, &closed);
    close(fd);
    if (!closed) FAILF("%s: PE 0 kept the connection open", what);
    if (k > allowed) FAILF("%s: PE 0 answered %zu bytes", what, k);
    fprintf(stderr, "[pe %d] %s: closed, %zu bytes answered\n", w->me, what, k);
    return 0;
}

static int run_stranger(tp_world *w) {
    if (setup(w)) return 1;
    OK(tp_barrier(w));
    if (w->me == 1) {
        uint8_t buf[sizeof(tcp_req) + 64];
        tcp_req q = request(REQ_PUT, 0, 64);
        memcpy(buf, &q, sizeof q);
        memset(buf + sizeof q, 0xee, 64);
        if (attack(w, "a PUT before any handshake", buf, sizeof buf, 0)) return 1;
        q = request(REQ_GET, 0, 4096);
        if (attack(w, "a GET before any handshake", &q, sizeof q, 0)) return 1;
        q = request(REQ_AMO, 64, 8);
        q.dtype = SYMM_DTYPE_UINT64;
        q.op = SYMM_AMO_SET;
        if (attack(w, "an atomic before any handshake", &q, sizeof q, 0)) return 1;
        q = request(1, 1, 0); /* version 1's HELLO: type 1, off = the PE */
        q.flags = SYMM_TP_NBI;
        memcpy(buf, &q, sizeof q);
        q = request(REQ_PUT, 128, 8);
        memcpy(buf + sizeof q, &q, sizeof q); /* ...and a PUT right after it */
        if (attack(w, "a version-1 HELLO and a PUT", buf, 2 * sizeof q, 0)) return 1;
        /* a HELLO, then an AUTH with a made-up proof: only the CHALLENGE comes back */
        uint8_t hs[TCP_HELLO_BYTES + TCP_AUTH_BYTES];
        tcp_hs_head(hs, TCP_HS_HELLO);
        tcp_put32(hs + TCP_HS_HEAD, 1);
        tcp_put32(hs + TCP_HS_HEAD + 4, 0);
        memset(hs + TCP_HS_HEAD + 8, 1, TCP_NONCE);
        tcp_hs_head(hs + TCP_HELLO_BYTES, TCP_HS_AUTH);
        memset(hs + TCP_HELLO_BYTES + TCP_HS_HEAD, 0x5a, TCP_MAC);
        if (attack(w, "a HELLO and a made-up proof", hs, sizeof hs, TCP_CHALLENGE_BYTES)) return 1;
        /* a HELLO, a made-up proof, then a PUT in the same write */
        uint8_t hp[sizeof hs + sizeof(tcp_req) + 8];
        memcpy(hp, hs, sizeof hs);
        q = request(REQ_PUT, 256, 8);
        memcpy(hp + sizeof hs, &q, sizeof q);
        memset(hp + sizeof hs + sizeof q, 0xee, 8);
        if (attack(w, "a made-up proof and a PUT", hp, sizeof hp, TCP_CHALLENGE_BYTES)) return 1;
    }
    OK(tp_barrier(w));
    if (w->me == 0 && !heap_intact()) FAILF("a stranger changed PE 0's heap");
    OK(tp_barrier(w));
    /* The job's own traffic still works. */
    uint64_t v = 0x1234567890abcdefull;
    if (w->me == 1) OK(w->ops->put(w->state, 0, 4096, &v, 8, 0));
    OK(tp_barrier(w));
    if (w->me == 0 && memcmp(heap + 4096, &v, 8) != 0) FAILF("PE 1's put did not land");
    OK(tp_barrier(w));
    w->ops->close(w->state);
    return 0;
}

/* ---- claim ----------------------------------------------------------------- */

static int run_claim(tp_world *w) {
    if (setup(w)) return 1;
    OK(tp_barrier(w));
    if (w->me == 2) {
        int fd = raw_connect(ports[0]);
        if (handshake_as(fd, 1, 0, 2)) FAILF("PE 2 passed for PE 1 at PE 0");
        close(fd);
        fd = raw_connect(ports[0]);
        if (handshake_as(fd, 2, 1, 2)) FAILF("PE 0 accepted a HELLO meant for PE 1");
        close(fd);
        fd = raw_connect(ports[0]);
        if (handshake_as(fd, 2, 0, 0)) FAILF("PE 0 accepted PE 0's proof for PE 2");
        close(fd);
        /* As itself PE 2 is a peer: in-range puts work, the rest is refused. */
        fd = raw_connect(ports[0]);
        if (!handshake_as(fd, 2, 0, 2)) FAILF("PE 2 was refused as itself");
        uint64_t offs[] = {(1u << 20) - 4, 1u << 20, (1u << 20) + 4096, HEAP, UINT64_MAX - 3};
        for (size_t i = 0; i < sizeof offs / sizeof *offs; i++) {
            uint8_t buf[sizeof(tcp_req) + 8];
            tcp_req q = request(REQ_PUT, offs[i], 8);
            memcpy(buf, &q, sizeof q);
            memset(buf + sizeof q, 0xee, 8);
            send_raw(fd, buf, sizeof buf);
            tcp_rep r;
            int closed;
            if (drain(fd, 2000, (uint8_t *)&r, sizeof r, &closed) != sizeof r || closed)
                FAILF("no reply to a put at %llu", (unsigned long long)offs[i]);
            if (r.status != SYMM_ERR_OUT_OF_BOUNDS)
                FAILF("a put at %llu (outside registered memory) -> %d",
                      (unsigned long long)offs[i], r.status);
        }
        uint8_t buf[sizeof(tcp_req) + 8];
        tcp_req q = request(REQ_PUT, 8192, 8);
        memcpy(buf, &q, sizeof q);
        memcpy(buf + sizeof q, "claimed!", 8);
        send_raw(fd, buf, sizeof buf);
        tcp_rep r;
        int closed;
        if (drain(fd, 2000, (uint8_t *)&r, sizeof r, &closed) != sizeof r || r.status != 0)
            FAILF("PE 2's own put was refused");
        close(fd);
    }
    OK(tp_barrier(w));
    if (w->me == 0) {
        if (memcmp(heap + 8192, "claimed!", 8) != 0) FAILF("PE 2's put did not land");
        memcpy(heap + 8192, "\0\0\0\0\0\0\0\0", 8);
        for (uint64_t i = 8192; i < 8200; i++) heap[i] = pattern(i);
        if (!heap_intact()) FAILF("a refused request changed PE 0's heap");
    }
    OK(tp_barrier(w));
    w->ops->close(w->state);
    return 0;
}

/* ---- stall ----------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int run_stall(tp_world *w) {
    if (setup(w)) return 1;
    OK(tp_barrier(w));
    int rogue[3] = {-1, -1, -1};
    if (w->me == 2) {
        /* a stranger's half HELLO */
        rogue[0] = raw_connect(ports[0]);
        uint8_t hello[TCP_HELLO_BYTES];
        tcp_hs_head(hello, TCP_HS_HELLO);
        send_raw(rogue[0], hello, 10);
        /* an authenticated half request */
        rogue[1] = raw_connect(ports[0]);
        if (handshake_as(rogue[1], 2, 0, 2)) {
            tcp_req q = request(REQ_PUT, 0, 1u << 20);
            send_raw(rogue[1], &q, 20);
        }
        /* an authenticated 32 MiB GET whose reply is never read */
        rogue[2] = raw_connect(ports[0]);
        if (handshake_as(rogue[2], 2, 0, 2)) {
            int small = 4096;
            setsockopt(rogue[2], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
            tcp_req q = request(REQ_GET, 2u << 20, 32u << 20);
            send_raw(rogue[2], &q, sizeof q);
        }
        struct timespec ts = {0, 200 * 1000000}; /* let the service take them */
        nanosleep(&ts, NULL);
    }
    OK(tp_barrier(w));
    if (w->me == 1) {
        alarm(60); /* a put that never returns fails the test */
        enum { N = 200 };
        uint64_t lat[N], v = 42;
        for (int i = 0; i < N; i++) {
            uint64_t t0 = tp_now_ms();
            OK(w->ops->put(w->state, 0, 4096 + 8u * (uint64_t)(i % 64), &v, 8, 0));
            lat[i] = tp_now_ms() - t0;
        }
        alarm(0);
        qsort(lat, N, sizeof *lat, cmp_u64);
        fprintf(stderr, "[pe 1] 8-byte puts to PE 0 beside stuck connections: median %llu ms, "
                "max %llu ms\n", (unsigned long long)lat[N / 2], (unsigned long long)lat[N - 1]);
        if (lat[N - 1] > STALL_BOUND_MS || lat[N / 2] > 50)
            FAILF("puts were held up (median %llu ms, max %llu ms)", (unsigned long long)lat[N / 2],
                  (unsigned long long)lat[N - 1]);
    }
    OK(tp_barrier(w));
    for (int i = 0; i < 3; i++)
        if (rogue[i] >= 0) close(rogue[i]);
    OK(tp_barrier(w));
    w->ops->close(w->state);
    return 0;
}

/* ---- stopped --------------------------------------------------------------- */

static char proc_state(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : '?';
}

static int run_stopped(tp_world *w) {
    if (setup(w)) return 1;
    OK(tp_barrier(w));
    if (w->me == 1) {
        raise(SIGSTOP); /* until PE 0 sends SIGCONT */
    } else {
        uint64_t t0 = tp_now_ms();
        while (proc_state(pids[1]) != 'T') {
            if (tp_now_ms() - t0 > 5000) FAILF("PE 1 did not stop");
            struct timespec ts = {0, 5 * 1000000};
            nanosleep(&ts, NULL);
        }
        alarm(60);
        uint64_t v = 7;
        t0 = tp_now_ms();
        int32_t rc = w->ops->put(w->state, 1, 4096, &v, 8, 0);
        uint64_t dt = tp_now_ms() - t0;
        fprintf(stderr, "[pe 0] put to the stopped PE 1: status %d after %llu ms: %s\n", rc,
                (unsigned long long)dt, tp_last_error());
        if (rc != SYMM_ERR_TIMEOUT) FAILF("a put to a stopped PE returned %d, not TIMEOUT", rc);
        if (dt < 1000 || dt > 3000) FAILF("TIMEOUT after %llu ms (SYMM_PEER_STALL_MS=1000)",
                                          (unsigned long long)dt);
        t0 = tp_now_ms();
        uint64_t got;
        rc = w->ops->get(w->state, &got, 1, 4096, 8, 0);
        if (rc != SYMM_ERR_TIMEOUT || tp_now_ms() - t0 > 100)
            FAILF("a later get returned %d after %llu ms", rc,
                  (unsigned long long)(tp_now_ms() - t0));
        alarm(0);
        kill(pids[1], SIGCONT);
    }
    OK(tp_barrier(w));
    w->ops->close(w->state);
    return 0;
}

/* ---- flood ----------------------------------------------------------------- */

static int open_fds(void) {
    int n = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0) n = fd + 1;
    return n;
}

static double cpu_s(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static int run_flood(tp_world *w) {
    if (setup(w)) return 1;
    struct rlimit old;
    getrlimit(RLIMIT_NOFILE, &old);
    if (w->me == 0) { /* short of descriptors: accept() fails with EMFILE */
        struct rlimit lim = {(rlim_t)open_fds() + 4, old.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &lim) != 0) FAILF("setrlimit");
    } else {
        struct rlimit lim = {old.rlim_max < 4096 ? old.rlim_max : 4096, old.rlim_max};
        setrlimit(RLIMIT_NOFILE, &lim);
    }
    OK(tp_barrier(w));
    double cpu0 = cpu_s();
    uint64_t wall0 = tp_now_ms();
    enum { FLOOD = 400 };
    int fds[FLOOD];
    if (w->me == 1) {
        alarm(120);
        uint64_t worst = 0, v = 5;
        for (int i = 0; i < FLOOD; i++) {
            fds[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)ports[0])};
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (fds[i] >= 0) (void)!connect(fds[i], (struct sockaddr *)&sa, sizeof sa);
            if (i % 20 == 0) { /* the job's own puts, in between */
                uint64_t t0 = tp_now_ms();
                OK(w->ops->put(w->state, 0, 4096, &v, 8, 0));
                if (tp_now_ms() - t0 > worst) worst = tp_now_ms() - t0;
                struct timespec ts = {0, 100 * 1000000};
                nanosleep(&ts, NULL);
            }
        }
        fprintf(stderr, "[pe 1] %d idle connections opened; slowest put meanwhile %llu ms\n", FLOOD,
                (unsigned long long)worst);
        if (worst > STALL_BOUND_MS) FAILF("a put took %llu ms during the flood",
                                          (unsigned long long)worst);
        /* The handshake deadline is 5 s (a tenth of the 60 s timeout): every
         * stranger PE 0 took must be gone 3 s after it. */
        struct timespec ts = {8, 0};
        nanosleep(&ts, NULL);
        int closed = 0;
        for (int i = 0; i < FLOOD; i++) {
            if (fds[i] < 0) continue;
            uint8_t b[64];
            ssize_t k = recv(fds[i], b, sizeof b, MSG_DONTWAIT);
            if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed++;
            close(fds[i]);
        }
        fprintf(stderr, "[pe 1] PE 0 closed %d of the %d idle connections\n", closed, FLOOD);
        if (closed < FLOOD * 9 / 10) FAILF("PE 0 keeps idle strangers (%d of %d closed)", closed,
                                           FLOOD);
        OK(w->ops->put(w->state, 0, 4096, &v, 8, 0));
        alarm(0);
    }
    OK(tp_barrier(w));
    if (w->me == 0) {
        double cpu = cpu_s() - cpu0, wall = (double)(tp_now_ms() - wall0) / 1000.0;
        fprintf(stderr, "[pe 0] CPU %.2f s over %.1f s of flood\n", cpu, wall);
        if (cpu > wall / 2) FAILF("the service spun (%.2f s of CPU in %.1f s)", cpu, wall);
        setrlimit(RLIMIT_NOFILE, &old);
    }
    OK(tp_barrier(w));
    w->ops->close(w->state);
    return 0;
}

/* ---- impostor --------------------------------------------------------------- */

/* PE 1 is told (through a wrapped allgather) that PE 0 listens where an
 * impostor does: a service that answers HELLO with a made-up proof. PE 1's
 * open must fail with BOOTSTRAP and send no proof of its own. */
static int imp_fd = -1;
static struct sockaddr_in imp_addr;
static int32_t (*real_allgather)(void *, const void *, void *, size_t);

static int32_t lying_allgather(void *c, const void *mine, void *all, size_t len) {
    int32_t rc = real_allgather(c, mine, all, len);
    /* the transport's address records: a sockaddr_storage, then its length */
    if (rc == 0 && len >= sizeof(struct sockaddr_storage) + 4) {
        memset(all, 0, sizeof(struct sockaddr_storage));
        memcpy(all, &imp_addr, sizeof imp_addr);
        uint32_t alen = sizeof imp_addr;
        memcpy((uint8_t *)all + sizeof(struct sockaddr_storage), &alen, sizeof alen);
    }
    return rc;
}

static void *impostor(void *arg) {
    size_t *after_challenge = arg;
    int c = accept(imp_fd, NULL, NULL);
    if (c < 0) return NULL;
    uint8_t hello[TCP_HELLO_BYTES];
    int closed;
    if (drain(c, 5000, hello, sizeof hello, &closed) == sizeof hello) {
        uint8_t chal[TCP_CHALLENGE_BYTES];
        tcp_hs_head(chal, TCP_HS_CHALLENGE);
        if (getrandom(chal + TCP_HS_HEAD, TCP_NONCE + TCP_MAC, 0) < 0) memset(chal + 8, 1, 64);
        send_raw(c, chal, sizeof chal);
        uint8_t rest[256];
        *after_challenge = drain(c, 2000, rest, sizeof rest, &closed);
    }
    close(c);
    return NULL;
}

static int run_impostor(tp_world *w) {
    heap = aligned_alloc(4096, 1u << 20);
    size_t after = 0;
    pthread_t t;
    if (w->me == 1) {
        imp_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        imp_addr = (struct sockaddr_in){.sin_family = AF_INET};
        imp_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t al = sizeof imp_addr;
        if (bind(imp_fd, (struct sockaddr *)&imp_addr, sizeof imp_addr) != 0 ||
            listen(imp_fd, 4) != 0 || getsockname(imp_fd, (struct sockaddr *)&imp_addr, &al) != 0)
            FAILF("cannot listen for the impostor");
        pthread_create(&t, NULL, impostor, &after);
        real_allgather = w->core.allgather;
        w->core.allgather = lying_allgather;
    }
    void *st = NULL;
    int32_t rc = w->ops->open(&w->core, 0, &st, &w->info);
    if (w->me == 1) {
        pthread_join(t, NULL);
        close(imp_fd);
        fprintf(stderr, "[pe 1] open beside an impostor: %d: %s\n", rc, tp_last_error());
        if (rc != SYMM_ERR_BOOTSTRAP || !strstr(tp_last_error(), "could not prove"))
            FAILF("open with an impostor at PE 0's address -> %d", rc);
        if (after) FAILF("PE 1 sent %zu bytes after the impostor's CHALLENGE", after);
    } else if (rc == 0) {
        w->ops->close(st);
    }
    free(heap);
    return 0;
}

/* ---- badenv ---------------------------------------------------------------- */

/* SYMM_PEER_STALL_MS that is not milliseconds in [1, 3600000]: open fails on
 * every PE with INVALID_ARG naming it (and nobody waits for anybody). */
static int run_badenv(tp_world *w) {
    static const char *const bad[] = {"abc", "0", "-5", "3600001", "10ms", " 5"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        setenv("SYMM_PEER_STALL_MS", bad[i], 1);
        void *st = NULL;
        int32_t rc = w->ops->open(&w->core, 0, &st, &w->info);
        if (rc != SYMM_ERR_INVALID_ARG || !strstr(tp_last_error(), "SYMM_PEER_STALL_MS"))
            FAILF("SYMM_PEER_STALL_MS=\"%s\": open -> %d", bad[i], rc);
        if (st) FAILF("a failed open left a state");
    }
    setenv("SYMM_PEER_STALL_MS", "250", 1);
    OK(w->ops->open(&w->core, 0, &w->state, &w->info));
    w->ops->close(w->state);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_tcp_sec PLUGIN "
                        "stranger|claim|stall|stopped|flood|impostor|badenv\n");
        return 2;
    }
    mode = argv[2];
    tp_world_opts o = {.plugin = argv[1], .n = 2, .hosts = 2, .news = 1, .require = 1,
                       .peer_timeout_ms = 100};
    int (*fn)(tp_world *) = NULL;
    if (!strcmp(mode, "stranger")) fn = run_stranger;
    else if (!strcmp(mode, "claim")) fn = run_claim, o.n = o.hosts = 3;
    else if (!strcmp(mode, "stall")) fn = run_stall, o.n = o.hosts = 3;
    else if (!strcmp(mode, "stopped")) fn = run_stopped, setenv("SYMM_PEER_STALL_MS", "1000", 1);
    else if (!strcmp(mode, "flood")) fn = run_flood;
    else if (!strcmp(mode, "badenv")) fn = run_badenv;
    else if (!strcmp(mode, "impostor")) fn = run_impostor;
    if (!fn) {
        fprintf(stderr, "test_tcp_sec: unknown case %s\n", mode);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int rc = tp_world_run(&o, fn);
    printf("test_tcp_sec %s: %s\n", mode, rc == 0 ? "PASS" : rc == 77 ? "SKIP" : "FAIL");
    return rc;
}

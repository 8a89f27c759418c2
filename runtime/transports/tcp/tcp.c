/*
 * The tcp transport: one-sided operations over plain sockets, for running
 * symm across hosts without RDMA (and for CI). No library beyond libc.
 *
 * Every PE listens on one socket; a service thread (tcp_svc.c) executes the
 * requests of authenticated peers against the memory given to mem_add:
 * puts (memcpy), gets (a reply with the bytes), atomics (__atomic builtins
 * on the target's own memory, hence CAP_ATOMIC_GLOBAL: they are atomic with
 * the CPU atomics of the target's host) and put-with-signal (data, then the
 * signal update). Each PE opens one connection to every PE it must reach;
 * the caller's thread sends requests and reads replies on it.
 *
 * GPU memory (a device backend's heap, a local GPU buffer) is never touched
 * directly: the core's GPU-memory service (transport.h, mem_copy and
 * mem_atomic) copies it through host memory and applies atomics with the
 * GPU's own atomics. The caller stages a GPU source or destination in
 * TCP_STAGE pieces; the service (tcp_svc.c) stages a GPU target, and
 * updates a put-with-signal's signal only after the data's copy returned.
 * docs/DECISIONS.md ("GPU memory over tcp: staged through the backend")
 * says why staging and what it costs.
 *
 * Who may connect: a connection proves, in a challenge-response handshake
 * (tcp_proto.h) made with the core's auth_mac / auth_verify, that it comes
 * from the PE it names, of this job; the service proves the same to the
 * caller first. Nothing else is served; requests may only touch registered
 * ranges (tcp_svc.h).
 *
 * Ordering and completion: a connection is a byte stream served in order,
 * so operations from one PE to another are executed in issue order (fence
 * has nothing to do). Blocking operations wait for their reply; nbi puts
 * send no reply, and quiet sends a QUIET request on every connection with
 * nbi traffic and waits for its reply, which comes after everything sent
 * before it has been executed (with the first error an nbi put met). nbi
 * gets and atomics complete at once (allowed: earlier than quiet).
 *
 * Failure: every wait polls in short slices and checks the core's failure
 * news (check_failed) and the peer_failed flag; a closed or reset
 * connection is the peer's death: SYMM_ERR_PEER_FAILED. A peer that is alive
 * but moves no byte of an operation for SYMM_PEER_STALL_MS (stopped, hung,
 * swamped; default 10 s) ends that operation with SYMM_ERR_TIMEOUT; its
 * connection is closed (the stream is mid-request) and later operations on
 * that PE fail with SYMM_ERR_TIMEOUT at once (docs/BAD-INPUT.md).
 *
 * Addresses: SYMM_TCP_ADDR (an IP or host name to listen on), else the local
 * address that reaches the bootstrap's TCP host (SYMM_BOOTSTRAP_ADDR
 * tcp:HOST:PORT or MASTER_ADDR), else 127.0.0.1 (the job meets on a Unix
 * socket, so all PEs share this machine).
 */

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <symm/symm.h>

#include "amo_cpu.h"
#include "tcp_proto.h"
#include "tcp_svc.h"
#include "transport.h"

typedef struct tcp {
    const symm_tp_core *core;
    int32_t me, n;
    int wake[2];
    tcp_svc *svc;
    pthread_t thread;
    bool thread_started;
    atomic_int stop, failed;
    int *out;          /* [n] connection to each PE (-1: none)                 */
    int32_t *gone;     /* [n] 0, or SYMM_ERR_TIMEOUT: that connection was given up */
    uint8_t *nbi;      /* [n] nbi puts sent since the last quiet               */
    uint32_t stall_ms;  /* SYMM_PEER_STALL_MS: no byte moved for this long: TIMEOUT */
    char addr_text[64];
    bool gpu;           /* the core offers the GPU-memory service (interface 3)   */
    uint8_t *stage;     /* [TCP_STAGE]: local GPU buffers go through it (gpu only) */
} tcp;

/* Local GPU buffers (a put's source, a get's destination) are copied
 * through host memory in pieces of this size: one copy (a DMA and its
 * wait) per piece, then the socket. */
#define TCP_STAGE (1u << 20)

/* ------------------------------------------------------------------------ */

static int32_t fail(const symm_tp_core *c, int32_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int32_t fail(const symm_tp_core *c, int32_t st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char full[560];
    snprintf(full, sizeof full, "tcp transport: %s", msg);
    return c->set_error(c->core, st, full);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------------------ */
/* Caller side: bounded, failure-aware send/receive                          */
/* ------------------------------------------------------------------------ */

/* 0, or PEER_FAILED (error set) when the job lost a PE. */
static int32_t check_failed(tcp *t, int32_t pe) {
    if (atomic_load(&t->failed) || t->core->check_failed(t->core->core)) {
        if (pe < 0)
            return fail(t->core, SYMM_ERR_PEER_FAILED, "the job lost a PE (quiet cannot complete)");
        return fail(t->core, SYMM_ERR_PEER_FAILED,
                    "the job lost a PE (an operation on PE %d cannot complete)", pe);
    }
    return 0;
}

static int32_t lost(tcp *t, int32_t pe, int err) {
    atomic_store(&t->failed, 1);
    return fail(t->core, SYMM_ERR_PEER_FAILED, "the connection to PE %d was lost (%s): it exited "
                "or died", pe, err ? strerror(err) : "closed by the peer");
}

/* The peer is alive (its connection is open, the job has not lost it) but
 * moved no byte for stall_ms: give its connection up (the stream is in the
 * middle of a request). */
static int32_t stalled(tcp *t, int32_t pe, const char *what) {
    close(t->out[pe]);
    t->out[pe] = -1;
    t->gone[pe] = SYMM_ERR_TIMEOUT;
    t->nbi[pe] = 0;
    return fail(t->core, SYMM_ERR_TIMEOUT, "PE %d made no progress for %u ms (%s; "
                "SYMM_PEER_STALL_MS): it is alive but stopped, hung or overloaded; its connection "
                "was closed and later operations on PE %d fail with SYMM_ERR_TIMEOUT", pe,
                t->stall_ms, what, pe);
}

/* Wait for fd to be ready: one slice (10 ms), then the failure news and the
 * no-progress bound. 0: try again. */
static int32_t wait_slice(tcp *t, int32_t pe, short events, uint64_t last, const char *what) {
    struct pollfd pf = {t->out[pe], events, 0};
    poll(&pf, 1, 10);
    int32_t st = check_failed(t, pe);
    if (st) return st;
    if (!pf.revents && now_ms() - last >= t->stall_ms) return stalled(t, pe, what);
    return 0;
}

static int32_t send_iov(tcp *t, int32_t pe, struct iovec *iov, int cnt, const char *what) {
    uint64_t last = now_ms();
    while (cnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            cnt--;
            continue;
        }
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)cnt;
        ssize_t k = sendmsg(t->out[pe], &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) {
            last = now_ms();
            size_t done = (size_t)k;
            while (cnt > 0 && done >= iov->iov_len) {
                done -= iov->iov_len;
                iov++;
                cnt--;
            }
            if (cnt > 0) {
                iov->iov_base = (uint8_t *)iov->iov_base + done;
                iov->iov_len -= done;
            }
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return lost(t, pe, errno);
        int32_t st = wait_slice(t, pe, POLLOUT, last, what);
        if (st) return st;
    }
    return 0;
}

static int32_t send_all(tcp *t, int32_t pe, const void *a, uint64_t alen, const void *b,
                        uint64_t blen, const char *what) {
    struct iovec iov[2] = {{(void *)a, alen}, {(void *)b, blen}};
    /* sendmsg takes at most 2 GiB at a time: a larger payload goes in pieces */
    while (iov[1].iov_len > (1u << 30)) {
        size_t part = 1u << 30;
        struct iovec io2[2] = {iov[0], {iov[1].iov_base, part}};
        int32_t st = send_iov(t, pe, io2, 2, what);
        if (st) return st;
        iov[0].iov_len = 0;
        iov[1].iov_base = (uint8_t *)iov[1].iov_base + part;
        iov[1].iov_len -= part;
    }
    return send_iov(t, pe, iov, 2, what);
}

static int32_t recv_all(tcp *t, int32_t pe, void *buf, uint64_t len, const char *what) {
    uint8_t *p = buf;
    uint64_t last = now_ms();
    while (len > 0) {
        ssize_t k = recv(t->out[pe], p, len > (1u << 30) ? (1u << 30) : len, MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            len -= (uint64_t)k;
            last = now_ms();
            continue;
        }
        if (k == 0) return lost(t, pe, 0);
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return lost(t, pe, errno);
        int32_t st = wait_slice(t, pe, POLLIN, last, what);
        if (st) return st;
    }
    return 0;
}

static int32_t reply_status(tcp *t, int32_t pe, const char *what, uint64_t off, uint64_t n,
                            int32_t st) {
    if (st == 0) return 0;
    return fail(t->core, st, "%s of %llu bytes at heap offset %llu of PE %d failed on that PE (%s)",
                what, (unsigned long long)n, (unsigned long long)off, pe,
                st == SYMM_ERR_OUT_OF_BOUNDS ? "outside the memory it registered"
                : st == SYMM_ERR_CUDA ? "a copy or atomic on its GPU memory failed there"
                                      : "the target refused the request");
}

static int32_t need_conn(tcp *t, int32_t pe) {
    if (pe >= 0 && pe < t->n && t->gone[pe] == SYMM_ERR_TIMEOUT)
        return fail(t->core, t->gone[pe], "PE %d stopped making progress earlier and its "
                    "connection was given up (SYMM_PEER_STALL_MS=%u)", pe, t->stall_ms);
    if (pe >= 0 && pe < t->n && t->gone[pe])
        return fail(t->core, t->gone[pe], "the connection to PE %d was given up earlier: a "
                    "copy out of local GPU memory failed in the middle of a request", pe);
    if (pe < 0 || pe >= t->n || t->out[pe] < 0)
        return fail(t->core, SYMM_ERR_INTERNAL, "no connection to PE %d (not a remote PE and no "
                    "loopback requested)", pe);
    if (atomic_load(&t->failed)) return check_failed(t, pe);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Local GPU memory: through the core's mem_copy (transport.h)               */
/* ------------------------------------------------------------------------ */

/* Is the local buffer p GPU memory (one query of the core per operation)? */
static bool local_gpu(const tcp *t, const void *p) {
    return t->gpu && p && t->core->mem_kind(t->core->core, p) == SYMM_TP_MEM_CUDA;
}

/* n (<= 8) bytes from/to a local buffer that may be GPU memory. */
static int32_t load_word(const tcp *t, void *dst, const void *src, uint32_t n) {
    if (local_gpu(t, src)) return t->core->mem_copy(t->core->core, dst, src, n);
    memcpy(dst, src, n);
    return 0;
}
static int32_t store_word(const tcp *t, void *dst, const void *src, uint32_t n) {
    if (local_gpu(t, dst)) return t->core->mem_copy(t->core->core, dst, src, n);
    memcpy(dst, src, n);
    return 0;
}

/* The request q with n bytes of src. From GPU memory the payload goes
 * through the staging buffer piece by piece; the first piece is copied
 * before anything is sent, so a GPU that cannot copy fails the operation
 * and leaves the connection as it was. A later piece that cannot be copied
 * leaves the stream in the middle of a request: the connection is given up. */
static int32_t send_req(tcp *t, int32_t pe, const tcp_req *q, const void *src, uint64_t n,
                        const char *what) {
    if (!n || !local_gpu(t, src)) return send_all(t, pe, q, sizeof *q, src, n, what);
    const uint8_t *s8 = src;
    uint64_t m = n < TCP_STAGE ? n : TCP_STAGE;
    int32_t st = t->core->mem_copy(t->core->core, t->stage, s8, m);
    if (!st) st = send_all(t, pe, q, sizeof *q, t->stage, m, what);
    for (uint64_t done = m; !st && done < n; done += m) {
        m = n - done < TCP_STAGE ? n - done : TCP_STAGE;
        if ((st = t->core->mem_copy(t->core->core, t->stage, s8 + done, m))) {
            close(t->out[pe]);
            t->out[pe] = -1;
            t->gone[pe] = st;
            t->nbi[pe] = 0;
            return st;
        }
        st = send_all(t, pe, NULL, 0, t->stage, m, what);
    }
    return st;
}

/* A GET's n bytes into dst; into GPU memory through the staging buffer
 * (the stream is read to the end even when a copy fails: first error). */
static int32_t recv_into(tcp *t, int32_t pe, void *dst, uint64_t n, const char *what) {
    if (!n || !local_gpu(t, dst)) return recv_all(t, pe, dst, n, what);
    int32_t first = 0;
    for (uint64_t done = 0, m; done < n; done += m) {
        m = n - done < TCP_STAGE ? n - done : TCP_STAGE;
        int32_t st = recv_all(t, pe, t->stage, m, what);
        if (st) return st;
        if (!first) first = t->core->mem_copy(t->core->core, (uint8_t *)dst + done, t->stage, m);
    }
    return first;
}

/* ------------------------------------------------------------------------ */
/* Set-up                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct addr_rec {
    struct sockaddr_storage sa;
    uint32_t len, pad;
} addr_rec;

/* The host part of "tcp:HOST:PORT", "HOST:PORT", "[V6]:PORT" or "HOST". */
static void host_of(const char *text, char *out, size_t cap) {
    if (strncmp(text, "tcp:", 4) == 0) text += 4;
    if (text[0] == '[') {
        const char *end = strchr(text, ']');
        snprintf(out, cap, "%.*s", end ? (int)(end - text - 1) : 0, text + 1);
        return;
    }
    const char *colon = strrchr(text, ':');
    if (colon && strchr(text, ':') == colon) snprintf(out, cap, "%.*s", (int)(colon - text), text);
    else snprintf(out, cap, "%s", text);
}

/* Pick the local address to listen on (see the top of the file). */
static int32_t local_addr(tcp *t, struct sockaddr_storage *sa, socklen_t *len) {
    const symm_tp_core *c = t->core;
    const char *own = c->getenv(c->core, "SYMM_TCP_ADDR");
    const char *boot = c->getenv(c->core, "SYMM_BOOTSTRAP_ADDR");
    const char *master = c->getenv(c->core, "MASTER_ADDR");
    char host[256] = "";
    bool listen_here = false;
    if (own && *own) {
        host_of(own, host, sizeof host);
        listen_here = true;
    } else if (boot && strncmp(boot, "tcp:", 4) == 0) {
        host_of(boot, host, sizeof host);
    } else if (master && *master && !(boot && *boot)) {
        host_of(master, host, sizeof host);
    }
    if (!host[0]) {
        struct sockaddr_in *in = (struct sockaddr_in *)sa;
        memset(sa, 0, sizeof *sa);
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        *len = sizeof *in;
        return 0;
    }
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_socktype = listen_here ? SOCK_STREAM : SOCK_DGRAM;
    int rc = getaddrinfo(host, "9", &hints, &ai);
    if (rc != 0 || !ai)
        return fail(c, SYMM_ERR_SYSTEM, "cannot resolve \"%s\" (%s)", host, gai_strerror(rc));
    int32_t st = 0;
    if (listen_here) {
        memcpy(sa, ai->ai_addr, ai->ai_addrlen);
        *len = (socklen_t)ai->ai_addrlen;
    } else {
        /* The address this host uses towards the bootstrap's host. */
        int s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        *len = sizeof *sa;
        if (s < 0 || connect(s, ai->ai_addr, ai->ai_addrlen) != 0 ||
            getsockname(s, (struct sockaddr *)sa, len) != 0)
            st = fail(c, SYMM_ERR_SYSTEM, "no local address reaches %s: %s", host, strerror(errno));
        if (s >= 0) close(s);
    }
    freeaddrinfo(ai);
    if (st == 0) {
        if (sa->ss_family == AF_INET) ((struct sockaddr_in *)sa)->sin_port = 0;
        else if (sa->ss_family == AF_INET6) ((struct sockaddr_in6 *)sa)->sin6_port = 0;
    }
    return st;
}

static void tcp_close(void *state);

/* Blocking I/O of the handshake on fd, bounded by deadline. 0 or an errno
 * (ECONNRESET when the peer closed). */
static int hs_io(int fd, void *buf, size_t len, bool sending, uint64_t deadline) {
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t k = sending ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, p, len, MSG_DONTWAIT);
        if (k > 0) {
            p += k;
            len -= (size_t)k;
            continue;
        }
        if (k == 0) return ECONNRESET;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return errno;
        uint64_t now = now_ms();
        if (now >= deadline) return ETIMEDOUT;
        struct pollfd pf = {fd, sending ? POLLOUT : POLLIN, 0};
        poll(&pf, 1, deadline - now > 100 ? 100 : (int)(deadline - now));
    }
    return 0;
}

/* The caller's side of the handshake (tcp_proto.h) on a connected fd.
 * 0; EAGAIN-like errno values when the connection broke (worth another
 * try); or -1 with an error set when the peer could not prove it is PE pe. */
static int handshake(tcp *t, int32_t pe, int fd, uint64_t deadline) {
    const symm_tp_core *c = t->core;
    uint8_t hello[TCP_HELLO_BYTES], chal[TCP_CHALLENGE_BYTES], auth[TCP_AUTH_BYTES];
    uint8_t nonce_c[TCP_NONCE], msg[TCP_PROOF_MSG_MAX], accept_[TCP_ACCEPT_BYTES];
    if (getrandom(nonce_c, sizeof nonce_c, 0) != (ssize_t)sizeof nonce_c) return errno;
    tcp_hs_head(hello, TCP_HS_HELLO);
    tcp_put32(hello + TCP_HS_HEAD, (uint32_t)t->me);
    tcp_put32(hello + TCP_HS_HEAD + 4, (uint32_t)pe);
    memcpy(hello + TCP_HS_HEAD + 8, nonce_c, TCP_NONCE);
    int e = hs_io(fd, hello, sizeof hello, true, deadline);
    if (!e) e = hs_io(fd, chal, sizeof chal, false, deadline);
    if (e) return e;
    size_t len = tcp_proof_msg(msg, TCP_PROOF_LABEL_SERVICE, t->me, pe, nonce_c,
                               chal + TCP_HS_HEAD);
    if (tcp_hs_check(chal, TCP_HS_CHALLENGE) != 0 ||
        c->auth_verify(c->core, pe, msg, len, chal + TCP_HS_HEAD + TCP_NONCE) != 0) {
        fail(c, SYMM_ERR_BOOTSTRAP, "the process at PE %d's address could not prove that it is "
             "PE %d of this job (another job's transport, or an impostor); not talking to it", pe,
             pe);
        return -1;
    }
    len = tcp_proof_msg(msg, TCP_PROOF_LABEL_CALLER, t->me, pe, nonce_c, chal + TCP_HS_HEAD);
    tcp_hs_head(auth, TCP_HS_AUTH);
    c->auth_mac(c->core, msg, len, auth + TCP_HS_HEAD);
    e = hs_io(fd, auth, sizeof auth, true, deadline);
    if (!e) e = hs_io(fd, accept_, sizeof accept_, false, deadline);
    if (!e && tcp_hs_check(accept_, TCP_HS_ACCEPT) != 0) e = EPROTO;
    return e;
}

static int32_t connect_to(tcp *t, int32_t pe, const addr_rec *a) {
    const symm_tp_core *c = t->core;
    uint64_t deadline = now_ms() + (c->timeout_ms ? c->timeout_ms : 60000u);
    for (;;) {
        int fd = socket(a->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return fail(c, SYMM_ERR_SYSTEM, "socket: %s", strerror(errno));
        int rc = connect(fd, (const struct sockaddr *)&a->sa, a->len);
        if (rc != 0 && errno == EINPROGRESS) {
            struct pollfd pf = {fd, POLLOUT, 0};
            while ((rc = poll(&pf, 1, 50)) == 0) {
                if (c->check_failed(c->core) || now_ms() > deadline) break;
            }
            int err = 0;
            socklen_t el = sizeof err;
            if (rc > 0) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
            rc = rc > 0 && err == 0 ? 0 : -1;
            errno = rc == 0 ? 0 : (err ? err : ETIMEDOUT);
        }
        if (rc == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            rc = handshake(t, pe, fd, deadline);
            if (rc == 0) {
                t->out[pe] = fd;
                return 0;
            }
            if (rc < 0) {
                close(fd);
                return SYMM_ERR_BOOTSTRAP; /* error set */
            }
            errno = rc; /* the connection broke in the handshake: try again */
        }
        int e = errno;
        close(fd);
        if (c->check_failed(c->core))
            return fail(c, SYMM_ERR_PEER_FAILED, "a PE failed while connecting to PE %d", pe);
        if (now_ms() > deadline)
            return fail(c, SYMM_ERR_TIMEOUT, "cannot connect to PE %d within %u ms: %s", pe,
                        c->timeout_ms, strerror(e));
        struct timespec nap = {0, 20 * 1000000L};
        nanosleep(&nap, NULL);
    }
}

static void *service(void *arg) {
    tcp *t = arg;
    while (!atomic_load(&t->stop))
        if (tcp_svc_step(t->svc, t->wake[0], 1000)) break;
    return NULL;
}

/* Does this core's table reach the handshake services (interface 2)? */
static bool core_has_auth(const symm_tp_core *core) {
    return core->size >= offsetof(symm_tp_core, auth_verify) + sizeof core->auth_verify;
}

static int32_t tcp_probe(const symm_tp_core *core, char *why, size_t why_len) {
    if (!core_has_auth(core)) {
        snprintf(why, why_len, "the core's services end before auth_mac/auth_verify (a core of "
                 "transport interface 1; the tcp transport needs 2)");
        return SYMM_ERR_NOT_SUPPORTED;
    }
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(why, why_len, "cannot create a TCP socket: %s", strerror(errno));
        return SYMM_ERR_NOT_SUPPORTED;
    }
    close(s);
    return 0;
}

/* SYMM_PEER_STALL_MS: how long an operation waits on a PE that is alive but
 * moves no byte (1..3600000 ms, default 10 s). Not SYMM_PEER_TIMEOUT_MS (the
 * bound on news of a dead PE, 100 ms by default): that news is an event, a
 * stall is a guess, and on a loaded machine a healthy peer's reply was
 * measured 669 ms late (docs/BAD-INPUT.md). */
#define STALL_DEFAULT_MS 10000u
static int32_t stall_bound(const symm_tp_core *core, uint32_t *out) {
    const char *v = core->getenv(core->core, "SYMM_PEER_STALL_MS");
    *out = STALL_DEFAULT_MS;
    if (!v || !*v) return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (v[0] < '0' || v[0] > '9' || errno || *end || x < 1 || x > 3600000)
        return fail(core, SYMM_ERR_INVALID_ARG, "SYMM_PEER_STALL_MS=\"%.64s\": expected "
                    "milliseconds in [1, 3600000]", v);
    *out = (uint32_t)x;
    return 0;
}

/* The instance with its tables (t->out all -1); NULL when out of memory. */
static tcp *tcp_new(const symm_tp_core *core) {
    tcp *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->core = core;
    t->me = core->my_pe;
    t->n = core->n_pes;
    t->wake[0] = t->wake[1] = -1;
    t->gpu = symm_tp_core_has_gpu_mem(core);
    t->out = malloc((size_t)t->n * sizeof *t->out);
    t->gone = calloc((size_t)t->n, sizeof *t->gone);
    t->nbi = calloc((size_t)t->n, 1);
    for (int32_t pe = 0; t->out && pe < t->n; pe++) t->out[pe] = -1;
    if (!t->out || !t->gone || !t->nbi) {
        tcp_close(t);
        return NULL;
    }
    return t;
}

/* "tcp HOST port PORT" for the logs and symm_tp_info.device. */
static void addr_text(tcp *t, const struct sockaddr_storage *sa) {
    char host[64] = "?";
    int port = 0;
    if (sa->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(t->addr_text, sizeof t->addr_text, "tcp %.46s port %d", host, port);
}

/* Listen, create the service (may: [n] who may connect) and start its
 * thread. mine receives the address the others connect to. Local. */
static int32_t tcp_listen(tcp *t, const uint8_t *may, addr_rec *mine) {
    const symm_tp_core *core = t->core;
    socklen_t len = sizeof mine->sa;
    int32_t st = local_addr(t, &mine->sa, &len);
    if (st) return st;
    int lfd = socket(mine->sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&mine->sa, len) != 0 ||
        listen(lfd, t->n + 16 < 4096 ? t->n + 16 : 4096) != 0 ||
        getsockname(lfd, (struct sockaddr *)&mine->sa, &len) != 0 ||
        pipe2(t->wake, O_CLOEXEC) != 0) {
        st = fail(core, SYMM_ERR_SYSTEM, "cannot listen for peers: %s", strerror(errno));
        if (lfd >= 0) close(lfd);
        return st;
    }
    mine->len = (uint32_t)len;
    /* A new connection finishes its handshake within a tenth of the job's
     * timeout, 1 to 5 s (as the rendezvous server's HELLO). */
    uint32_t job = core->timeout_ms ? core->timeout_ms : 60000u, hs = job / 10;
    uint32_t lo = job < 1000 ? job : 1000;
    tcp_svc_cfg sc = {.core = core, .may_connect = may, .listen_fd = lfd,
                      .handshake_ms = hs < lo ? lo : hs > 5000 ? 5000 : hs};
    if ((st = tcp_svc_create(&sc, &t->svc))) return st;
    addr_text(t, &mine->sa);
    /* The service thread takes no signals: they stay with the application. */
    sigset_t sigs, old;
    sigfillset(&sigs);
    pthread_sigmask(SIG_SETMASK, &sigs, &old);
    if (pthread_create(&t->thread, NULL, service, t) != 0)
        st = fail(core, SYMM_ERR_SYSTEM, "cannot start the service thread");
    else
        t->thread_started = true;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return st;
}

/* Collective: exchange addresses (mine->len 0: this PE failed st) and
 * connect to every PE this one reaches; everybody takes part even after a
 * local failure, so no PE waits for one that gave up. */
static int32_t tcp_connect_all(tcp *t, uint32_t loopback, addr_rec *mine, int32_t st) {
    const symm_tp_core *core = t->core;
    addr_rec *all = calloc((size_t)t->n, sizeof *all);
    if (!all && !st) st = fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st) mine->len = 0; /* tells the others this PE cannot be reached */
    addr_rec dummy[1];
    int32_t gst = core->allgather(core->core, mine, all ? all : dummy, sizeof *mine);
    if (st == 0 && gst) st = gst;
    for (int32_t pe = 0; st == 0 && pe < t->n; pe++) {
        if (!core->remote[pe] && !loopback) continue;
        if (all[pe].len == 0) {
            st = fail(core, SYMM_ERR_SYSTEM, "PE %d could not listen for peers", pe);
            break;
        }
        st = connect_to(t, pe, &all[pe]);
    }
    free(all);
    int32_t bst = core->barrier(core->core);
    return st ? st : bst;
}

static int32_t tcp_open(const symm_tp_core *core, uint32_t loopback, void **state,
                        symm_tp_info *info) {
    if (!core_has_auth(core) || !core->auth_mac || !core->auth_verify)
        return fail(core, SYMM_ERR_NOT_SUPPORTED, "the core offers no handshake proofs "
                    "(auth_mac/auth_verify): nothing could prove the PEs' identities");
    tcp *t = tcp_new(core);
    uint8_t *may = calloc((size_t)core->n_pes, 1);
    addr_rec mine;
    memset(&mine, 0, sizeof mine);
    /* local failures: still collective below */
    int32_t st = t && may ? stall_bound(core, &t->stall_ms)
                          : fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int32_t pe = 0; may && pe < core->n_pes; pe++) may[pe] = loopback || core->remote[pe];
    if (st == 0 && t->gpu && !(t->stage = malloc(TCP_STAGE)))
        st = fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    if (st == 0) st = tcp_listen(t, may, &mine);
    free(may);
    if (!t) { /* take part in the collectives all the same */
        tcp dummy = {.core = core, .n = core->n_pes};
        return tcp_connect_all(&dummy, loopback, &mine, st);
    }
    if ((st = tcp_connect_all(t, loopback, &mine, st))) {
        tcp_close(t);
        return st;
    }
    uint32_t caps = SYMM_TP_CAP_ATOMIC_GLOBAL | SYMM_TP_CAP_LOOPBACK;
    if (t->gpu) caps |= SYMM_TP_CAP_GPU_MEM; /* staged through the core's service */
    /* Testing knob: report atomics as NIC-only, so the core routes every
     * atomic update through the transport (the ibverbs rule on one machine). */
    const char *ng = core->getenv(core->core, "SYMM_TCP_NO_GLOBAL_ATOMICS");
    if (ng && strcmp(ng, "1") == 0) caps &= ~SYMM_TP_CAP_ATOMIC_GLOBAL;
    if (info) {
        info->caps = caps;
        info->max_msg = 0;
        snprintf(info->device, sizeof info->device, "%.63s", t->addr_text);
    }
    char line[128];
    snprintf(line, sizeof line, "listening on %s", t->addr_text);
    core->log(core->core, 1, line);
    *state = t;
    return 0;
}

static int32_t tcp_mem_add(void *state, void *base, uint64_t heap_off, uint64_t len,
                           uint32_t mem_kind, int dmabuf_fd) {
    tcp *t = state;
    int32_t st = 0;
    (void)dmabuf_fd; /* GPU memory is staged through the core's service, not mapped */
    if (mem_kind != SYMM_TP_MEM_HOST && mem_kind != SYMM_TP_MEM_CUDA)
        st = fail(t->core, SYMM_ERR_INVALID_ARG, "unknown memory kind %u", mem_kind);
    else if (mem_kind == SYMM_TP_MEM_CUDA && !t->gpu)
        st = fail(t->core, SYMM_ERR_NOT_SUPPORTED, "GPU memory to register, but the core offers "
                  "no GPU-memory service (a core of transport interface %u; 3 has it)",
                  t->core->iface);
    if (!st) st = tcp_svc_mem_add_kind(t->svc, base, heap_off, len, mem_kind == SYMM_TP_MEM_CUDA);
    /* Collective: nobody targets the range before every PE has added it. */
    int32_t all_st[1] = {st};
    int32_t *all = calloc((size_t)t->n, sizeof *all);
    int32_t gst = all ? t->core->allgather(t->core->core, all_st, all, sizeof all_st)
                      : fail(t->core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int32_t pe = 0; st == 0 && gst == 0 && pe < t->n; pe++)
        if (all[pe]) st = fail(t->core, all[pe], "PE %d could not register heap memory", pe);
    free(all);
    return st ? st : gst;
}

static void tcp_mem_remove(void *state, uint64_t heap_off, uint64_t len) {
    tcp *t = state;
    tcp_svc_mem_remove(t->svc, heap_off, len);
}

static int32_t tcp_put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    tcp_req q = {TCP_MAGIC, REQ_PUT, 0, 0, flags & SYMM_TP_NBI, 0, off, n, 0, 0, 0};
    if ((st = send_req(t, pe, &q, src, n, "put"))) return st;
    if (flags & SYMM_TP_NBI) {
        t->nbi[pe] = 1;
        return 0;
    }
    tcp_rep r;
    if ((st = recv_all(t, pe, &r, sizeof r, "put"))) return st;
    return reply_status(t, pe, "put", off, n, r.status);
}

static int32_t tcp_get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    tcp_req q = {TCP_MAGIC, REQ_GET, 0, 0, 0, 0, off, n, 0, 0, 0};
    tcp_rep r;
    if ((st = send_all(t, pe, &q, sizeof q, NULL, 0, "get")) ||
        (st = recv_all(t, pe, &r, sizeof r, "get")))
        return st;
    if (r.status) return reply_status(t, pe, "get", off, n, r.status);
    return recv_into(t, pe, dst, n, "get");
}

static int32_t tcp_atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched, uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    uint32_t size = symm__amo_size(dtype);
    if (!size) return fail(t->core, SYMM_ERR_INVALID_ARG, "atomics need a 32/64-bit dtype (got %u)", dtype);
    tcp_req q = {TCP_MAGIC, REQ_AMO, dtype, op, 0, 0, off, size, 0, 0, 0};
    if (value && (st = load_word(t, &q.value, value, size))) return st;
    if (compare && (st = load_word(t, &q.compare, compare, size))) return st;
    tcp_rep r;
    if ((st = send_all(t, pe, &q, sizeof q, NULL, 0, "atomic")) ||
        (st = recv_all(t, pe, &r, sizeof r, "atomic")))
        return st;
    if (r.status) return reply_status(t, pe, "atomic", off, size, r.status);
    return fetched ? store_word(t, fetched, &r.value, size) : 0;
}

static int32_t tcp_put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    tcp_req q = {TCP_MAGIC, REQ_PUT_SIGNAL, 0, sig_op, flags & SYMM_TP_NBI, 0, off, n, sig_value, 0,
                 sig_off};
    if ((st = send_req(t, pe, &q, src, n, "put with signal"))) return st;
    if (flags & SYMM_TP_NBI) {
        t->nbi[pe] = 1;
        return 0;
    }
    tcp_rep r;
    if ((st = recv_all(t, pe, &r, sizeof r, "put with signal"))) return st;
    return reply_status(t, pe, "put with signal", off, n, r.status);
}

static int32_t tcp_fence(void *state) {
    (void)state; /* one in-order stream per target, served in order */
    return 0;
}

static int32_t tcp_quiet(void *state) {
    tcp *t = state;
    int32_t first = 0;
    /* After the job lost a PE nothing can be said complete (as ibverbs). */
    if (atomic_load(&t->failed)) return check_failed(t, -1);
    for (int32_t pe = 0; pe < t->n; pe++) {
        if (!t->nbi[pe]) continue;
        int32_t st = need_conn(t, pe);
        tcp_req q = {TCP_MAGIC, REQ_QUIET, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        tcp_rep r = {0, 0, 0};
        if (!st) st = send_all(t, pe, &q, sizeof q, NULL, 0, "quiet");
        if (!st) st = recv_all(t, pe, &r, sizeof r, "quiet");
        if (!st) st = reply_status(t, pe, "an nbi put", 0, 0, r.status);
        t->nbi[pe] = 0;
        if (st && !first) first = st;
        if (st == SYMM_ERR_PEER_FAILED) break;
    }
    return first;
}

static void tcp_peer_failed(void *state) {
    atomic_store(&((tcp *)state)->failed, 1);
}

static void tcp_close(void *state) {
    tcp *t = state;
    if (!t) return;
    atomic_store(&t->stop, 1);
    if (t->wake[1] >= 0) {
        char b = 1;
        ssize_t k = write(t->wake[1], &b, 1);
        (void)k;
    }
    if (t->thread_started) pthread_join(t->thread, NULL);
    tcp_svc_destroy(t->svc);
    for (int32_t pe = 0; t->out && pe < t->n; pe++)
        if (t->out[pe] >= 0) close(t->out[pe]);
    if (t->wake[0] >= 0) close(t->wake[0]);
    if (t->wake[1] >= 0) close(t->wake[1]);
    free(t->out);
    free(t->gone);
    free(t->nbi);
    free(t->stage);
    free(t);
}

static const symm_tp_ops tcp_ops = {
    .size = sizeof(symm_tp_ops),
    .iface = SYMM_TP_IFACE,
    .name = "tcp",
    .probe = tcp_probe,
    .open = tcp_open,
    .mem_add = tcp_mem_add,
    .mem_remove = tcp_mem_remove,
    .put = tcp_put,
    .get = tcp_get,
    .atomic = tcp_atomic,
    .put_signal = tcp_put_signal,
    .fence = tcp_fence,
    .quiet = tcp_quiet,
    .progress = NULL,
    .peer_failed = tcp_peer_failed,
    .close = tcp_close,
};

/* Interface 2 and later: the handshake needs the core's auth services. */
__attribute__((visibility("default"))) const symm_tp_ops *symm_transport_plugin(uint32_t core_iface);
const symm_tp_ops *symm_transport_plugin(uint32_t core_iface) {
    return core_iface >= 2 ? &tcp_ops : NULL;
}

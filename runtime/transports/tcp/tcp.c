/*
 * The tcp transport: one-sided operations over plain sockets, for running
 * symm across hosts without RDMA (and for CI). No library beyond libc.
 *
 * Every PE listens on one socket and runs a service thread that executes
 * the requests arriving on its accepted connections against the memory
 * given to mem_add: puts (memcpy), gets (a reply with the bytes), atomics
 * (__atomic builtins on the target's own memory, hence CAP_ATOMIC_GLOBAL:
 * they are atomic with the CPU atomics of the target's host) and
 * put-with-signal (data, then the signal update). Each PE opens one
 * connection to every PE it must reach; the caller's thread sends requests
 * and reads replies on it.
 *
 * Ordering and completion: a connection is a byte stream served in order by
 * one thread, so operations from one PE to another are executed in issue
 * order (fence has nothing to do). Blocking operations wait for their
 * reply; nbi puts send no reply, and quiet sends a QUIET request on every
 * connection with nbi traffic and waits for its reply, which comes after
 * everything sent before it has been executed (with the first error an nbi
 * put met). nbi gets and atomics complete at once (allowed: earlier than
 * quiet).
 *
 * Failure: every wait polls in short slices, checks the core's failure news
 * (check_failed) and the peer_failed flag, and a closed or reset connection
 * is the peer's death: SYMM_ERR_PEER_FAILED, never a hang.
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
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <symm/symm.h>

#include "amo_cpu.h"
#include "transport.h"

#define TCP_MAGIC 0x53594d54u /* "SYMT" */
enum { REQ_HELLO = 1, REQ_PUT, REQ_GET, REQ_AMO, REQ_PUT_SIGNAL, REQ_QUIET };

typedef struct req {
    uint32_t magic, type;
    uint32_t dtype, op;   /* AMO; sig_op for PUT_SIGNAL                     */
    uint32_t flags, pad;  /* SYMM_TP_NBI: no reply                          */
    uint64_t off, n;      /* heap offset, payload bytes (HELLO: off = PE)   */
    uint64_t value, compare, sig_off;
} req;

typedef struct rep {
    int32_t status;
    uint32_t pad;
    uint64_t value; /* fetched (AMO) */
} rep;

typedef struct region {
    uint64_t off, len;
    uint8_t *base;
} region;

typedef struct peer_in { /* an accepted connection (service thread) */
    int fd;
    int32_t nbi_err;     /* first error of an nbi put since the last QUIET */
} peer_in;

typedef struct tcp {
    const symm_tp_core *core;
    int32_t me, n;
    int listen_fd, wake[2];
    pthread_t thread;
    bool thread_started;
    atomic_int stop, failed;
    int *out;          /* [n] connection to each PE (-1: none)            */
    uint8_t *nbi;      /* [n] nbi puts sent since the last quiet          */
    pthread_rwlock_t reg_lock;
    region *regs;
    size_t n_regs, cap_regs;
    char addr_text[64];
} tcp;

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

/* Local address of [off, off + n) or NULL. */
static uint8_t *lookup(tcp *t, uint64_t off, uint64_t n) {
    uint8_t *p = NULL;
    pthread_rwlock_rdlock(&t->reg_lock);
    for (size_t i = 0; i < t->n_regs; i++) {
        region *r = &t->regs[i];
        if (off >= r->off && off - r->off <= r->len && n <= r->len - (off - r->off)) {
            p = r->base + (off - r->off);
            break;
        }
    }
    pthread_rwlock_unlock(&t->reg_lock);
    return p;
}

/* ------------------------------------------------------------------------ */
/* Caller side: bounded, failure-aware send/receive                          */
/* ------------------------------------------------------------------------ */

/* 0, or PEER_FAILED (error set) when the job lost a PE. */
static int32_t check_failed(tcp *t, int32_t pe) {
    if (atomic_load(&t->failed) || t->core->check_failed(t->core->core))
        return fail(t->core, SYMM_ERR_PEER_FAILED,
                    "the job lost a PE (an operation on PE %d cannot complete)", pe);
    return 0;
}

static int32_t lost(tcp *t, int32_t pe, int err) {
    atomic_store(&t->failed, 1);
    return fail(t->core, SYMM_ERR_PEER_FAILED, "the connection to PE %d was lost (%s): it exited "
                "or died", pe, err ? strerror(err) : "closed by the peer");
}

static int32_t send_all(tcp *t, int32_t pe, const void *buf, uint64_t len) {
    const uint8_t *p = buf;
    int fd = t->out[pe];
    while (len > 0) {
        ssize_t k = send(fd, p, len > (1u << 30) ? (1u << 30) : len, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            len -= (uint64_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return lost(t, pe, errno);
        struct pollfd pf = {fd, POLLOUT, 0};
        poll(&pf, 1, 10);
        int32_t st = check_failed(t, pe);
        if (st) return st;
    }
    return 0;
}

static int32_t recv_all(tcp *t, int32_t pe, void *buf, uint64_t len) {
    uint8_t *p = buf;
    int fd = t->out[pe];
    while (len > 0) {
        ssize_t k = recv(fd, p, len > (1u << 30) ? (1u << 30) : len, 0);
        if (k > 0) {
            p += k;
            len -= (uint64_t)k;
            continue;
        }
        if (k == 0) return lost(t, pe, 0);
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return lost(t, pe, errno);
        struct pollfd pf = {fd, POLLIN, 0};
        poll(&pf, 1, 10);
        int32_t st = check_failed(t, pe);
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
                                             : "the target refused the request");
}

static int32_t need_conn(tcp *t, int32_t pe) {
    if (pe < 0 || pe >= t->n || t->out[pe] < 0)
        return fail(t->core, SYMM_ERR_INTERNAL, "no connection to PE %d (not a remote PE and no "
                    "loopback requested)", pe);
    if (atomic_load(&t->failed)) return check_failed(t, pe);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Service thread: executes requests on this PE's memory                     */
/* ------------------------------------------------------------------------ */

/* Blocking read of exactly len bytes; false on EOF, error or stop. */
static bool svc_read(tcp *t, int fd, void *buf, uint64_t len) {
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t k = recv(fd, p, len > (1u << 30) ? (1u << 30) : len, 0);
        if (k > 0) {
            p += k;
            len -= (uint64_t)k;
            continue;
        }
        if (k == 0) return false;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
        if (atomic_load(&t->stop)) return false;
        struct pollfd pf = {fd, POLLIN, 0};
        poll(&pf, 1, 100);
    }
    return true;
}

static bool svc_write(tcp *t, int fd, const void *buf, uint64_t len) {
    const uint8_t *p = buf;
    while (len > 0) {
        ssize_t k = send(fd, p, len > (1u << 30) ? (1u << 30) : len, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            len -= (uint64_t)k;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
        if (atomic_load(&t->stop)) return false;
        struct pollfd pf = {fd, POLLOUT, 0};
        poll(&pf, 1, 100);
    }
    return true;
}

/* Discard len bytes (a payload for memory we do not have). */
static bool svc_skip(tcp *t, int fd, uint64_t len) {
    uint8_t junk[4096];
    while (len > 0) {
        uint64_t k = len < sizeof junk ? len : sizeof junk;
        if (!svc_read(t, fd, junk, k)) return false;
        len -= k;
    }
    return true;
}

/* Serve one request; false when the connection is finished. */
static bool serve(tcp *t, peer_in *c) {
    req q;
    if (!svc_read(t, c->fd, &q, sizeof q) || q.magic != TCP_MAGIC) return false;
    rep r = {0, 0, 0};
    bool reply = !(q.flags & SYMM_TP_NBI);
    switch (q.type) {
    case REQ_HELLO:
        return true;
    case REQ_PUT:
    case REQ_PUT_SIGNAL: {
        uint8_t *dst = lookup(t, q.off, q.n);
        uint64_t *sig = q.type == REQ_PUT_SIGNAL ? (uint64_t *)lookup(t, q.sig_off, 8) : NULL;
        if (!dst || (q.type == REQ_PUT_SIGNAL && (!sig || (q.sig_off & 7)))) {
            if (!svc_skip(t, c->fd, q.n)) return false;
            r.status = SYMM_ERR_OUT_OF_BOUNDS;
        } else {
            if (!svc_read(t, c->fd, dst, q.n)) return false;
            if (sig) {
                if (q.op == SYMM_SIGNAL_ADD) __atomic_fetch_add(sig, q.value, __ATOMIC_SEQ_CST);
                else __atomic_store_n(sig, q.value, __ATOMIC_SEQ_CST);
            } else {
                atomic_thread_fence(memory_order_seq_cst);
            }
        }
        if (!reply) {
            if (r.status && !c->nbi_err) c->nbi_err = r.status;
            return true;
        }
        return svc_write(t, c->fd, &r, sizeof r);
    }
    case REQ_GET: {
        uint8_t *src = lookup(t, q.off, q.n);
        r.status = src ? 0 : SYMM_ERR_OUT_OF_BOUNDS;
        if (!svc_write(t, c->fd, &r, sizeof r)) return false;
        return !src || svc_write(t, c->fd, src, q.n);
    }
    case REQ_AMO: {
        uint32_t size = symm__amo_size(q.dtype);
        uint8_t *addr = size ? lookup(t, q.off, size) : NULL;
        if (!addr || (q.off & (size - 1))) r.status = SYMM_ERR_OUT_OF_BOUNDS;
        else r.status = symm__amo_cpu(addr, q.dtype, q.op, q.value, q.compare, &r.value);
        return svc_write(t, c->fd, &r, sizeof r);
    }
    case REQ_QUIET:
        atomic_thread_fence(memory_order_seq_cst);
        r.status = c->nbi_err;
        c->nbi_err = 0;
        return svc_write(t, c->fd, &r, sizeof r);
    default:
        return false;
    }
}

static void *service(void *arg) {
    tcp *t = arg;
    size_t cap = 16, n_in = 0;
    peer_in *in = calloc(cap, sizeof *in);
    struct pollfd *pf = calloc(cap + 2, sizeof *pf);
    while (in && pf && !atomic_load(&t->stop)) {
        pf[0] = (struct pollfd){t->wake[0], POLLIN, 0};
        pf[1] = (struct pollfd){t->listen_fd, POLLIN, 0};
        for (size_t i = 0; i < n_in; i++) pf[i + 2] = (struct pollfd){in[i].fd, POLLIN, 0};
        int k = poll(pf, (nfds_t)(n_in + 2), 1000);
        if (k < 0 && errno != EINTR) break;
        if (k <= 0) continue;
        if (pf[0].revents) break;
        /* Serve before accepting, so the indexes of pf stay those of in. */
        for (size_t i = 0; i < n_in; i++) {
            if (!pf[i + 2].revents) continue;
            if (!serve(t, &in[i])) {
                close(in[i].fd);
                in[i].fd = -1;
            }
        }
        size_t w = 0;
        for (size_t i = 0; i < n_in; i++)
            if (in[i].fd >= 0) in[w++] = in[i];
        n_in = w;
        if (pf[1].revents & POLLIN) {
            int fd = accept4(t->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0) {
                if (n_in == cap) {
                    peer_in *ni = realloc(in, 2 * cap * sizeof *in);
                    struct pollfd *np = ni ? realloc(pf, (2 * cap + 2) * sizeof *pf) : NULL;
                    if (ni) in = ni;
                    if (np) pf = np;
                    if (!ni || !np) {
                        close(fd);
                        continue;
                    }
                    cap *= 2;
                }
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                in[n_in++] = (peer_in){fd, 0};
            }
        }
    }
    for (size_t i = 0; in && i < n_in; i++) close(in[i].fd);
    free(in);
    free(pf);
    return NULL;
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
            t->out[pe] = fd;
            req hello = {TCP_MAGIC, REQ_HELLO, 0, 0, SYMM_TP_NBI, 0, (uint64_t)t->me, 0, 0, 0, 0};
            return send_all(t, pe, &hello, sizeof hello);
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

static int32_t tcp_probe(const symm_tp_core *core, char *why, size_t why_len) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) {
        snprintf(why, why_len, "cannot create a TCP socket: %s", strerror(errno));
        return SYMM_ERR_NOT_SUPPORTED;
    }
    close(s);
    return 0;
}

static int32_t tcp_open(const symm_tp_core *core, uint32_t loopback, void **state,
                        symm_tp_info *info) {
    tcp *t = calloc(1, sizeof *t);
    if (!t) return fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    t->core = core;
    t->me = core->my_pe;
    t->n = core->n_pes;
    t->listen_fd = t->wake[0] = t->wake[1] = -1;
    pthread_rwlock_init(&t->reg_lock, NULL);
    t->out = malloc((size_t)t->n * sizeof *t->out);
    t->nbi = calloc((size_t)t->n, 1);
    addr_rec *all = calloc((size_t)t->n, sizeof *all);
    int32_t st = 0;
    if (!t->out || !t->nbi || !all) st = fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    for (int32_t pe = 0; t->out && pe < t->n; pe++) t->out[pe] = -1;

    addr_rec mine;
    memset(&mine, 0, sizeof mine);
    socklen_t len = sizeof mine.sa;
    if (st == 0) st = local_addr(t, &mine.sa, &len);
    if (st == 0) {
        t->listen_fd = socket(mine.sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (t->listen_fd < 0 || bind(t->listen_fd, (struct sockaddr *)&mine.sa, len) != 0 ||
            listen(t->listen_fd, t->n + 16 < 4096 ? t->n + 16 : 4096) != 0 ||
            getsockname(t->listen_fd, (struct sockaddr *)&mine.sa, &len) != 0 ||
            pipe2(t->wake, O_CLOEXEC) != 0)
            st = fail(core, SYMM_ERR_SYSTEM, "cannot listen for peers: %s", strerror(errno));
        mine.len = (uint32_t)len;
    }
    if (st == 0) {
        char host[64] = "?";
        int port = 0;
        if (mine.sa.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&mine.sa)->sin_addr, host, sizeof host);
            port = ntohs(((struct sockaddr_in *)&mine.sa)->sin_port);
        } else if (mine.sa.ss_family == AF_INET6) {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&mine.sa)->sin6_addr, host, sizeof host);
            port = ntohs(((struct sockaddr_in6 *)&mine.sa)->sin6_port);
        }
        snprintf(t->addr_text, sizeof t->addr_text, "tcp %.46s port %d", host, port);
        if (pthread_create(&t->thread, NULL, service, t) != 0)
            st = fail(core, SYMM_ERR_SYSTEM, "cannot start the service thread");
        else
            t->thread_started = true;
    }
    /* Collective from here on: everybody takes part even after a local
     * failure, so no PE waits for one that gave up. */
    int32_t gst = core->allgather(core->core, &mine, all, sizeof mine);
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
    if (st == 0 && bst) st = bst;
    if (st) {
        tcp_close(t);
        return st;
    }
    uint32_t caps = SYMM_TP_CAP_ATOMIC_GLOBAL | SYMM_TP_CAP_LOOPBACK;
    /* Testing knob: report atomics as NIC-only, so the core routes every
     * atomic update through the transport (the ibverbs rule on one machine). */
    const char *ng = core->getenv(core->core, "SYMM_TCP_NO_GLOBAL_ATOMICS");
    if (ng && strcmp(ng, "1") == 0) caps &= ~SYMM_TP_CAP_ATOMIC_GLOBAL;
    if (info) {
        info->caps = caps;
        info->max_msg = 0;
        snprintf(info->device, sizeof info->device, "%.63s", t->addr_text);
    }
    *state = t;
    return 0;
}

static int32_t tcp_mem_add(void *state, void *base, uint64_t heap_off, uint64_t len,
                           uint32_t mem_kind, int dmabuf_fd) {
    tcp *t = state;
    int32_t st = 0;
    if (mem_kind != SYMM_TP_MEM_HOST)
        st = fail(t->core, SYMM_ERR_NOT_SUPPORTED, "GPU memory cannot be reached over tcp (host "
                  "memory only): run the host backend (SYMM_BACKEND=host) or use a transport with "
                  "GPU memory support");
    pthread_rwlock_wrlock(&t->reg_lock);
    region *last = t->n_regs ? &t->regs[t->n_regs - 1] : NULL;
    if (st) {
    } else if (last && last->off + last->len == heap_off && last->base + last->len == (uint8_t *)base) {
        last->len += len; /* the heap grows contiguously: one region */
    } else {
        if (t->n_regs == t->cap_regs) {
            size_t nc = t->cap_regs ? 2 * t->cap_regs : 8;
            region *nr = realloc(t->regs, nc * sizeof *nr);
            if (!nr) st = fail(t->core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
            else {
                t->regs = nr;
                t->cap_regs = nc;
            }
        }
        if (!st) t->regs[t->n_regs++] = (region){heap_off, len, base};
    }
    pthread_rwlock_unlock(&t->reg_lock);
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
    pthread_rwlock_wrlock(&t->reg_lock);
    for (size_t i = 0; i < t->n_regs; i++) {
        if (t->regs[i].off == heap_off && t->regs[i].len == len) {
            t->regs[i] = t->regs[--t->n_regs];
            break;
        }
    }
    pthread_rwlock_unlock(&t->reg_lock);
}

static int32_t tcp_put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    req q = {TCP_MAGIC, REQ_PUT, 0, 0, flags & SYMM_TP_NBI, 0, off, n, 0, 0, 0};
    if ((st = send_all(t, pe, &q, sizeof q)) || (st = send_all(t, pe, src, n))) return st;
    if (flags & SYMM_TP_NBI) {
        t->nbi[pe] = 1;
        return 0;
    }
    rep r;
    if ((st = recv_all(t, pe, &r, sizeof r))) return st;
    return reply_status(t, pe, "put", off, n, r.status);
}

static int32_t tcp_get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    req q = {TCP_MAGIC, REQ_GET, 0, 0, 0, 0, off, n, 0, 0, 0};
    rep r;
    if ((st = send_all(t, pe, &q, sizeof q)) || (st = recv_all(t, pe, &r, sizeof r))) return st;
    if (r.status) return reply_status(t, pe, "get", off, n, r.status);
    return recv_all(t, pe, dst, n);
}

static int32_t tcp_atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched, uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    uint32_t size = symm__amo_size(dtype);
    if (!size) return fail(t->core, SYMM_ERR_INVALID_ARG, "atomics need a 32/64-bit dtype (got %u)", dtype);
    req q = {TCP_MAGIC, REQ_AMO, dtype, op, 0, 0, off, size, 0, 0, 0};
    if (value) memcpy(&q.value, value, size);
    if (compare) memcpy(&q.compare, compare, size);
    rep r;
    if ((st = send_all(t, pe, &q, sizeof q)) || (st = recv_all(t, pe, &r, sizeof r))) return st;
    if (r.status) return reply_status(t, pe, "atomic", off, size, r.status);
    if (fetched) memcpy(fetched, &r.value, size);
    return 0;
}

static int32_t tcp_put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags) {
    tcp *t = state;
    int32_t st = need_conn(t, pe);
    if (st) return st;
    req q = {TCP_MAGIC, REQ_PUT_SIGNAL, 0, sig_op, flags & SYMM_TP_NBI, 0, off, n, sig_value, 0, sig_off};
    if ((st = send_all(t, pe, &q, sizeof q)) || (n && (st = send_all(t, pe, src, n)))) return st;
    if (flags & SYMM_TP_NBI) {
        t->nbi[pe] = 1;
        return 0;
    }
    rep r;
    if ((st = recv_all(t, pe, &r, sizeof r))) return st;
    return reply_status(t, pe, "put with signal", off, n, r.status);
}

static int32_t tcp_fence(void *state) {
    (void)state; /* one in-order stream per target, served in order */
    return 0;
}

static int32_t tcp_quiet(void *state) {
    tcp *t = state;
    int32_t first = 0;
    for (int32_t pe = 0; pe < t->n; pe++) {
        if (!t->nbi[pe]) continue;
        int32_t st = need_conn(t, pe);
        req q = {TCP_MAGIC, REQ_QUIET, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        rep r = {0, 0, 0};
        if (!st) st = send_all(t, pe, &q, sizeof q);
        if (!st) st = recv_all(t, pe, &r, sizeof r);
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
    for (int32_t pe = 0; t->out && pe < t->n; pe++)
        if (t->out[pe] >= 0) close(t->out[pe]);
    if (t->listen_fd >= 0) close(t->listen_fd);
    if (t->wake[0] >= 0) close(t->wake[0]);
    if (t->wake[1] >= 0) close(t->wake[1]);
    pthread_rwlock_destroy(&t->reg_lock);
    free(t->regs);
    free(t->out);
    free(t->nbi);
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

__attribute__((visibility("default"))) const symm_tp_ops *symm_transport_plugin(uint32_t core_iface);
const symm_tp_ops *symm_transport_plugin(uint32_t core_iface) {
    return core_iface >= 1 ? &tcp_ops : NULL;
}

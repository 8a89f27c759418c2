/* The tcp transport's service (tcp_svc.h). */
#include "tcp_svc.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <symm/symm.h>

#include "amo_cpu.h"
#include "tcp_proto.h"

/* Strangers, as the rendezvous server bounds them (tcp_svc.h). */
#define PENDING_MIN 8
#define PENDING_MAX 1024
#define PENDING_RESERVE 64
#define ACCEPT_PAUSE_MIN_MS 10
#define ACCEPT_PAUSE_MAX_MS 1000
#define LOG_BURST 10
#define LOG_WINDOW_MS 1000
/* Per connection and turn: this many requests or socket reads. */
#define SERVE_BUDGET 64
/* Input staging of an authenticated connection: small requests and their
 * payloads arrive in one read; a payload larger than half of it is read
 * straight into the heap. */
#define IN_CAP (64u << 10)
/* GPU memory (a range registered as SYMM_TP_MEM_CUDA) is reached only
 * through the core's mem_copy / mem_atomic: a PUT's payload gathers in a
 * connection's staging buffer of this size and goes to the GPU in one copy
 * when it is full or the payload ends; a GET's bytes come out piece by
 * piece through it. Large so that the copy's fixed cost (a DMA and its
 * wait) is paid seldom (not yet measured on a GPU). */
#define GPU_STAGE (1u << 20)

/* ---- ThreadSanitizer: the heap is shared with other processes ------------
 * The service reads and writes this PE's heap for other PEs, as a NIC would;
 * what orders those accesses against the application's is synchronisation
 * between processes (barriers, signals, replies over sockets), which TSan
 * cannot see. So the service's heap accesses (and only those: never the
 * transport's own state) are hidden from it. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TCP_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) && !defined(TCP_TSAN)
#define TCP_TSAN 1
#endif
#ifdef TCP_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
void AnnotateIgnoreSyncBegin(const char *file, int line);
void AnnotateIgnoreSyncEnd(const char *file, int line);
#define HEAP_BEGIN()                                                                         \
    (AnnotateIgnoreReadsBegin(__FILE__, __LINE__), AnnotateIgnoreWritesBegin(__FILE__, __LINE__), \
     AnnotateIgnoreSyncBegin(__FILE__, __LINE__))
#define HEAP_END()                                                                           \
    (AnnotateIgnoreSyncEnd(__FILE__, __LINE__), AnnotateIgnoreWritesEnd(__FILE__, __LINE__),  \
     AnnotateIgnoreReadsEnd(__FILE__, __LINE__))
#else
#define HEAP_BEGIN() ((void)0)
#define HEAP_END() ((void)0)
#endif

enum { CS_HELLO, CS_AUTH, CS_READY, CS_CLOSED };

typedef struct region {
    uint64_t off, len;
    uint8_t *base;
    bool gpu; /* SYMM_TP_MEM_CUDA: through the core's mem_copy / mem_atomic only */
} region;

typedef struct conn {
    int fd;
    int state;
    int32_t pe;          /* CS_AUTH: what HELLO claims; CS_READY: authenticated */
    uint64_t deadline;   /* CS_HELLO/CS_AUTH: the handshake ends by then (ms)    */
    uint64_t serial;     /* "connection N" in log lines                          */
    bool more;           /* served its budget with input staged: come back      */
    /* handshake */
    uint8_t hs[TCP_HELLO_BYTES];
    size_t hs_got;
    uint8_t nonce_c[TCP_NONCE], nonce_s[TCP_NONCE];
    /* input staging (CS_READY) */
    uint8_t *in;
    size_t in_off, in_len;
    /* the request whose payload is arriving */
    bool busy;
    tcp_req q;
    uint8_t *dst;        /* where the payload lands; NULL: discarded             */
    uint64_t *sig;       /* PUT_SIGNAL's signal word                              */
    bool dst_gpu, sig_gpu; /* ... in GPU memory (through the core's services)     */
    /* GPU staging (GPU_STAGE bytes, made on first use): a PUT's payload
     * waits here (gfill bytes, for dst) before its copy to the GPU; a GET's
     * next piece (big points into it) with gleft bytes to come from gsrc. */
    uint8_t *gbuf;
    size_t gfill;
    const uint8_t *gsrc;
    uint64_t gleft;
    uint64_t left;
    int32_t status;
    int32_t nbi_err;     /* first error of an nbi put since the last QUIET       */
    /* output: a small frame, then a GET's bytes straight from the heap */
    uint8_t out[TCP_CHALLENGE_BYTES];
    size_t out_off, out_len;
    const uint8_t *big;
    uint64_t big_left;
} conn;

struct tcp_svc {
    const symm_tp_core *core;
    int32_t me, n;
    uint8_t *may_connect; /* [n] */
    int listen_fd;
    uint32_t handshake_ms;
    conn **conns;
    size_t n_conns, cap_conns, n_pending, max_pending;
    uint64_t accept_paused_until, accept_pause_ms;
    uint64_t serial;
    uint64_t log_window, log_dropped;
    unsigned log_lines;
    tcp_svc_stats st;
    struct pollfd *pfd;
    size_t cap_pfd;
    pthread_rwlock_t reg_lock;
    region *regs;
    size_t n_regs, cap_regs;
};

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void svc_log(tcp_svc *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void svc_log(tcp_svc *s, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->core->log(s->core->core, 0, line);
}

/* Lines caused by strangers: at most LOG_BURST per LOG_WINDOW_MS, then one
 * line counting the rest. */
static void stranger_log(tcp_svc *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void stranger_log(tcp_svc *s, const char *fmt, ...) {
    uint64_t now = now_ms();
    if (now - s->log_window >= LOG_WINDOW_MS) {
        if (s->log_dropped)
            svc_log(s, "tcp service: %llu more lines about stray connections were not shown",
                    (unsigned long long)s->log_dropped);
        s->log_window = now;
        s->log_lines = 0;
        s->log_dropped = 0;
    }
    if (s->log_lines >= LOG_BURST) {
        s->log_dropped++;
        return;
    }
    s->log_lines++;
    char line[448];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    svc_log(s, "tcp service: %s", line);
}

/* ------------------------------------------------------------------------ */
/* Registered memory                                                         */
/* ------------------------------------------------------------------------ */

/* The registered range holding byte off, or NULL (reg_lock held). */
static const region *region_at(const tcp_svc *s, uint64_t off) {
    for (size_t i = 0; i < s->n_regs; i++) {
        const region *r = &s->regs[i];
        if (off >= r->off && off - r->off < r->len) return r;
    }
    return NULL;
}

/* Local address of [off, off + n) inside registered memory, or NULL; *gpu:
 * the range is GPU memory. The range may span ranges registered one after
 * the other (heap chunks: mem_add merges them only when nothing else was
 * registered between) as long as they are contiguous in the heap and in
 * local memory and of one kind. */
static uint8_t *lookup(tcp_svc *s, uint64_t off, uint64_t n, bool *gpu) {
    uint8_t *p = NULL;
    *gpu = false;
    pthread_rwlock_rdlock(&s->reg_lock);
    const region *r = region_at(s, off);
    if (r) {
        p = r->base + (off - r->off);
        *gpu = r->gpu;
        uint64_t have = r->len - (off - r->off);
        while (p && have < n) {
            const region *next = region_at(s, r->off + r->len);
            if (!next || next->off != r->off + r->len || next->base != r->base + r->len ||
                next->gpu != r->gpu)
                p = NULL;
            else {
                have += next->len;
                r = next;
            }
        }
    } else if (n == 0) {
        /* an empty range at the end of a registered one */
        for (size_t i = 0; i < s->n_regs && !p; i++)
            if (s->regs[i].off + s->regs[i].len == off) {
                p = s->regs[i].base + s->regs[i].len;
                *gpu = s->regs[i].gpu;
            }
    }
    pthread_rwlock_unlock(&s->reg_lock);
    return p;
}

int32_t tcp_svc_mem_add(tcp_svc *s, void *base, uint64_t off, uint64_t len) {
    return tcp_svc_mem_add_kind(s, base, off, len, false);
}

int32_t tcp_svc_mem_add_kind(tcp_svc *s, void *base, uint64_t off, uint64_t len, bool gpu) {
    int32_t st = 0;
    if (gpu && !symm_tp_core_has_gpu_mem(s->core))
        return s->core->set_error(s->core->core, SYMM_ERR_NOT_SUPPORTED,
                                  "tcp transport: GPU memory to register, but the core offers no "
                                  "GPU-memory service (transport interface 3)");
    pthread_rwlock_wrlock(&s->reg_lock);
    region *last = s->n_regs ? &s->regs[s->n_regs - 1] : NULL;
    if (last && last->gpu == gpu && last->off + last->len == off &&
        last->base + last->len == (uint8_t *)base) {
        last->len += len; /* the heap grows contiguously: one region */
    } else {
        if (s->n_regs == s->cap_regs) {
            size_t nc = s->cap_regs ? 2 * s->cap_regs : 8;
            region *nr = realloc(s->regs, nc * sizeof *nr);
            if (!nr) st = s->core->set_error(s->core->core, SYMM_ERR_OUT_OF_MEMORY,
                                             "tcp transport: out of host memory");
            else {
                s->regs = nr;
                s->cap_regs = nc;
            }
        }
        if (!st) s->regs[s->n_regs++] = (region){off, len, base, gpu};
    }
    pthread_rwlock_unlock(&s->reg_lock);
    return st;
}

void tcp_svc_mem_remove(tcp_svc *s, uint64_t off, uint64_t len) {
    pthread_rwlock_wrlock(&s->reg_lock);
    for (size_t i = 0; i < s->n_regs; i++) {
        if (s->regs[i].off == off && s->regs[i].len == len) {
            s->regs[i] = s->regs[--s->n_regs];
            break;
        }
    }
    pthread_rwlock_unlock(&s->reg_lock);
}

/* ------------------------------------------------------------------------ */
/* Connections                                                               */
/* ------------------------------------------------------------------------ */

static bool is_stranger(const conn *c) {
    return c->state == CS_HELLO || c->state == CS_AUTH;
}

static void conn_close(tcp_svc *s, conn *c) {
    if (c->state == CS_CLOSED) return;
    if (is_stranger(c)) s->n_pending--;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->state = CS_CLOSED;
    free(c->in);
    c->in = NULL;
    free(c->gbuf);
    c->gbuf = NULL;
    c->gleft = 0;
}

/* A stranger's connection ends: counted, logged (rate limited). */
static void refuse(tcp_svc *s, conn *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(tcp_svc *s, conn *c, const char *fmt, ...) {
    char why[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    s->st.refused++;
    stranger_log(s, "refused connection %llu: %s", (unsigned long long)c->serial, why);
    conn_close(s, c);
}

/* An authenticated peer broke the protocol: its connection ends (its
 * operations then fail at its side). */
static void peer_error(tcp_svc *s, conn *c, const char *what) {
    svc_log(s, "tcp service: closing the connection of PE %d: %s", c->pe, what);
    conn_close(s, c);
}

/* ---- GPU memory: through the core's services ---------------------------- */

static bool gpu_buf(conn *c) {
    if (!c->gbuf) c->gbuf = malloc(GPU_STAGE);
    return c->gbuf != NULL;
}

/* A PUT into GPU memory: the gathered bytes go to the GPU (complete when
 * mem_copy returns, so a later signal update comes after them). A failed
 * copy fails the request; the rest of its payload is read and dropped. */
static void gpu_put_flush(tcp_svc *s, conn *c) {
    if (c->gfill && c->dst && c->status == 0) {
        int32_t st = s->core->mem_copy(s->core->core, c->dst, c->gbuf, c->gfill);
        if (st) {
            c->status = st;
            c->dst = NULL;
        } else {
            c->dst += c->gfill;
        }
    }
    c->gfill = 0;
}

static void gpu_put_bytes(tcp_svc *s, conn *c, const uint8_t *p, size_t k) {
    while (k > 0 && c->dst) {
        size_t m = GPU_STAGE - c->gfill < k ? GPU_STAGE - c->gfill : k;
        memcpy(c->gbuf + c->gfill, p, m);
        c->gfill += m;
        p += m;
        k -= m;
        if (c->gfill == GPU_STAGE) gpu_put_flush(s, c);
    }
}

/* A GET from GPU memory: its next piece into the staging buffer. false when
 * the copy failed: the reply already promised the bytes, so the connection
 * ends (the caller's operation fails; the first piece is copied before the
 * reply, so an unusable GPU is an error status, not this). */
static bool gpu_get_refill(tcp_svc *s, conn *c) {
    size_t m = c->gleft < GPU_STAGE ? (size_t)c->gleft : GPU_STAGE;
    if (s->core->mem_copy(s->core->core, c->gbuf, c->gsrc, m) != 0) {
        peer_error(s, c, "a copy out of GPU memory failed in the middle of a GET reply");
        return false;
    }
    c->gsrc += m;
    c->gleft -= m;
    c->big = c->gbuf;
    c->big_left = m;
    return true;
}

/* Write what the socket takes now. true: all written; false: not yet (or
 * the connection ended). */
static bool conn_flush(tcp_svc *s, conn *c) {
    if (c->fd >= 0 && !c->big_left && c->out_off < c->out_len) { /* a reply alone: one send */
        ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) c->out_off += (size_t)w;
    }
    while (c->fd >= 0 && (c->out_off < c->out_len || c->big_left || c->gleft)) {
        if (!c->big_left && c->gleft && !gpu_get_refill(s, c)) return false;
        struct iovec iov[2];
        int k = 0;
        if (c->out_off < c->out_len)
            iov[k++] = (struct iovec){c->out + c->out_off, c->out_len - c->out_off};
        if (c->big_left)
            iov[k++] = (struct iovec){(void *)c->big,
                                      c->big_left > (1u << 30) ? (1u << 30) : c->big_left};
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)k;
        HEAP_BEGIN();
        ssize_t w = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        HEAP_END();
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
            if (c->state == CS_READY) peer_error(s, c, strerror(errno));
            else conn_close(s, c);
            return false;
        }
        size_t done = (size_t)w, small = c->out_len - c->out_off;
        if (done <= small) {
            c->out_off += done;
        } else {
            c->out_off = c->out_len;
            c->big += done - small;
            c->big_left -= done - small;
        }
    }
    if (c->fd < 0) return false;
    c->out_off = c->out_len = 0;
    return true;
}

static void conn_reply(tcp_svc *s, conn *c, int32_t status, uint64_t value, const uint8_t *big,
                       uint64_t big_n) {
    tcp_rep r = {status, 0, value};
    memcpy(c->out, &r, sizeof r);
    c->out_off = 0;
    c->out_len = sizeof r;
    c->big = big;
    c->big_left = big_n;
    conn_flush(s, c);
}

/* ---- handshake ---------------------------------------------------------- */

static void got_hello(tcp_svc *s, conn *c) {
    int32_t from = (int32_t)tcp_get32(c->hs + TCP_HS_HEAD);
    int32_t to = (int32_t)tcp_get32(c->hs + TCP_HS_HEAD + 4);
    if (to != s->me) {
        refuse(s, c, "its HELLO is meant for PE %d; this is PE %d", to, s->me);
        return;
    }
    if (from < 0 || from >= s->n || !s->may_connect[from]) {
        refuse(s, c, "its HELLO claims PE %d, which does not connect to this PE", from);
        return;
    }
    memcpy(c->nonce_c, c->hs + TCP_HS_HEAD + 8, TCP_NONCE);
    if (getrandom(c->nonce_s, sizeof c->nonce_s, 0) != (ssize_t)sizeof c->nonce_s) {
        refuse(s, c, "no random bytes for its challenge (%s)", strerror(errno));
        return;
    }
    uint8_t msg[TCP_PROOF_MSG_MAX];
    size_t len = tcp_proof_msg(msg, TCP_PROOF_LABEL_SERVICE, from, to, c->nonce_c, c->nonce_s);
    uint8_t *o = c->out;
    tcp_hs_head(o, TCP_HS_CHALLENGE);
    memcpy(o + TCP_HS_HEAD, c->nonce_s, TCP_NONCE);
    if (s->core->auth_mac(s->core->core, msg, len, o + TCP_HS_HEAD + TCP_NONCE) != 0) {
        refuse(s, c, "the core could not make this PE's proof");
        return;
    }
    c->pe = from;
    c->state = CS_AUTH;
    c->hs_got = 0;
    c->out_off = 0;
    c->out_len = TCP_CHALLENGE_BYTES;
    conn_flush(s, c);
}

static void got_auth(tcp_svc *s, conn *c) {
    uint8_t msg[TCP_PROOF_MSG_MAX];
    size_t len = tcp_proof_msg(msg, TCP_PROOF_LABEL_CALLER, c->pe, s->me, c->nonce_c, c->nonce_s);
    if (s->core->auth_verify(s->core->core, c->pe, msg, len, c->hs + TCP_HS_HEAD) != 0) {
        refuse(s, c, "its proof is not PE %d's (a process without the job key, or another PE "
               "claiming PE %d)", c->pe, c->pe);
        return;
    }
    c->in = malloc(IN_CAP);
    if (!c->in) {
        refuse(s, c, "out of memory for PE %d's connection", c->pe);
        return;
    }
    s->n_pending--;
    s->st.authenticated++;
    c->state = CS_READY;
    c->deadline = 0;
    tcp_hs_head(c->out, TCP_HS_ACCEPT);
    c->out_off = 0;
    c->out_len = TCP_ACCEPT_BYTES;
    conn_flush(s, c);
}

/* Read the handshake frame this state expects; anything else closes. */
static void conn_handshake(tcp_svc *s, conn *c) {
    while (c->fd >= 0 && is_stranger(c)) {
        if (c->out_off < c->out_len && !conn_flush(s, c)) return;
        uint32_t type = c->state == CS_HELLO ? TCP_HS_HELLO : TCP_HS_AUTH;
        size_t want = c->state == CS_HELLO ? TCP_HELLO_BYTES : TCP_AUTH_BYTES;
        ssize_t k = recv(c->fd, c->hs + c->hs_got, want - c->hs_got, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (k <= 0) {
            stranger_log(s, "connection %llu closed during the handshake",
                         (unsigned long long)c->serial);
            conn_close(s, c);
            return;
        }
        size_t before = c->hs_got;
        c->hs_got += (size_t)k;
        if (before < TCP_HS_HEAD && c->hs_got >= TCP_HS_HEAD && tcp_hs_check(c->hs, type) != 0) {
            if (tcp_get32(c->hs) == TCP_MAGIC && c->hs[4] == 1 && !c->hs[5] && !c->hs[6])
                refuse(s, c, "it speaks tcp transport version 1 (no handshake), this PE "
                       "version %u (are different symm versions mixed in one job?)", TCP_VERSION);
            else
                refuse(s, c, "it sent something other than a %s (a request before the "
                       "handshake, or not a symm peer)", type == TCP_HS_HELLO ? "HELLO" : "AUTH");
            return;
        }
        if (c->hs_got < want) continue;
        if (c->state == CS_HELLO) got_hello(s, c);
        else got_auth(s, c);
    }
}

/* ---- requests ------------------------------------------------------------ */

static void finish_put(tcp_svc *s, conn *c) {
    c->busy = false;
    s->st.requests++;
    if (c->status == 0 && c->sig && c->sig_gpu) {
        /* after the data: every gpu_put_flush has returned */
        uint32_t op = c->q.op == SYMM_SIGNAL_ADD ? SYMM_AMO_ADD : SYMM_AMO_SET;
        c->status = s->core->mem_atomic(s->core->core, c->sig, SYMM_DTYPE_UINT64, op, c->q.value,
                                        0, NULL);
    } else if (c->status == 0) {
        HEAP_BEGIN();
        if (c->sig) {
            if (c->q.op == SYMM_SIGNAL_ADD)
                __atomic_fetch_add(c->sig, c->q.value, __ATOMIC_SEQ_CST);
            else
                __atomic_store_n(c->sig, c->q.value, __ATOMIC_SEQ_CST);
        } else {
            atomic_thread_fence(memory_order_seq_cst);
        }
        HEAP_END();
    }
    if (c->q.flags & SYMM_TP_NBI) {
        if (c->status && !c->nbi_err) c->nbi_err = c->status;
        return;
    }
    conn_reply(s, c, c->status, 0, NULL, 0);
}

/* A request header arrived: start it (PUT) or answer it. */
static void start_request(tcp_svc *s, conn *c) {
    tcp_req *q = &c->q;
    if (q->magic != TCP_MAGIC) {
        peer_error(s, c, "a request with a bad magic number (a corrupted stream)");
        return;
    }
    switch (q->type) {
    case REQ_PUT:
    case REQ_PUT_SIGNAL: {
        c->dst = lookup(s, q->off, q->n, &c->dst_gpu);
        c->sig = NULL;
        c->sig_gpu = false;
        if (q->type == REQ_PUT_SIGNAL && !(q->sig_off & 7))
            c->sig = (uint64_t *)(void *)lookup(s, q->sig_off, 8, &c->sig_gpu);
        c->status = c->dst && (q->type == REQ_PUT || c->sig) ? 0 : SYMM_ERR_OUT_OF_BOUNDS;
        if (!c->status && c->dst_gpu && q->n && !gpu_buf(c)) c->status = SYMM_ERR_OUT_OF_MEMORY;
        if (c->status) c->dst = NULL, c->sig = NULL; /* the payload is read and dropped */
        c->gfill = 0;
        c->left = q->n;
        c->busy = true;
        if (c->left == 0) finish_put(s, c);
        return;
    }
    case REQ_GET: {
        bool gpu;
        const uint8_t *src = lookup(s, q->off, q->n, &gpu);
        s->st.requests++;
        if (src && gpu && q->n) {
            /* the first piece before the reply: an unusable GPU is a status */
            size_t m = q->n < GPU_STAGE ? (size_t)q->n : GPU_STAGE;
            int32_t st = gpu_buf(c) ? s->core->mem_copy(s->core->core, c->gbuf, src, m)
                                    : SYMM_ERR_OUT_OF_MEMORY;
            c->gsrc = src + m;
            c->gleft = st ? 0 : q->n - m;
            conn_reply(s, c, st, 0, st ? NULL : c->gbuf, st ? 0 : m);
            return;
        }
        conn_reply(s, c, src ? 0 : SYMM_ERR_OUT_OF_BOUNDS, 0, src, src ? q->n : 0);
        return;
    }
    case REQ_AMO: {
        uint32_t size = symm__amo_size(q->dtype);
        bool gpu = false;
        uint8_t *addr = size ? lookup(s, q->off, size, &gpu) : NULL;
        uint64_t fetched = 0;
        int32_t st;
        s->st.requests++;
        if (!size) st = SYMM_ERR_INVALID_ARG;
        else if (!addr || (q->off & (size - 1))) st = SYMM_ERR_OUT_OF_BOUNDS;
        else if (gpu)
            st = s->core->mem_atomic(s->core->core, addr, q->dtype, q->op, q->value, q->compare,
                                     &fetched);
        else {
            HEAP_BEGIN();
            st = symm__amo_cpu(addr, q->dtype, q->op, q->value, q->compare, &fetched);
            HEAP_END();
        }
        conn_reply(s, c, st, fetched, NULL, 0);
        return;
    }
    case REQ_QUIET: {
        s->st.requests++;
        atomic_thread_fence(memory_order_seq_cst);
        int32_t st = c->nbi_err;
        c->nbi_err = 0;
        conn_reply(s, c, st, 0, NULL, 0);
        return;
    }
    default: {
        char what[64];
        snprintf(what, sizeof what, "an unknown request type %u", q->type);
        peer_error(s, c, what);
        return;
    }
    }
}

/* A PUT's payload: its first bytes came with the header (staged). */
static void payload_staged(tcp_svc *s, conn *c, size_t staged) {
    size_t k = staged < c->left ? staged : (size_t)c->left;
    if (c->dst && c->dst_gpu) {
        gpu_put_bytes(s, c, c->in + c->in_off, k);
    } else if (c->dst) {
        HEAP_BEGIN();
        memcpy(c->dst, c->in + c->in_off, k);
        HEAP_END();
        c->dst += k;
    }
    c->in_off += k;
    c->left -= k;
}

/* A PUT's payload from the socket: a large one straight into the heap (or
 * the GPU staging), a small one through the input staging. recv's result. */
static ssize_t payload_recv(tcp_svc *s, conn *c) {
    c->in_off = c->in_len = 0;
    ssize_t k;
    if (c->dst && c->dst_gpu && c->left >= IN_CAP / 2) {
        uint64_t room = GPU_STAGE - c->gfill;
        k = recv(c->fd, c->gbuf + c->gfill, c->left < room ? c->left : room, MSG_DONTWAIT);
        if (k > 0) {
            c->gfill += (size_t)k;
            c->left -= (uint64_t)k;
            if (c->gfill == GPU_STAGE) gpu_put_flush(s, c);
        }
    } else if (c->dst && c->left >= IN_CAP / 2) {
        HEAP_BEGIN();
        k = recv(c->fd, c->dst, c->left > (1u << 30) ? (1u << 30) : c->left, MSG_DONTWAIT);
        HEAP_END();
        if (k > 0) {
            c->dst += k;
            c->left -= (uint64_t)k;
        }
    } else {
        k = recv(c->fd, c->in, IN_CAP, MSG_DONTWAIT);
        if (k > 0) c->in_len = (size_t)k;
    }
    return k;
}

/* Serve an authenticated connection: at most SERVE_BUDGET steps. */
static void conn_serve(tcp_svc *s, conn *c) {
    c->more = false;
    bool served = false; /* a request was taken since poll said readable */
    for (int step = 0; c->state == CS_READY; step++) {
        if (step == SERVE_BUDGET) {
            c->more = true; /* staged input waits for the next turn */
            return;
        }
        if ((c->out_off < c->out_len || c->big_left) && !conn_flush(s, c)) return;
        size_t staged = c->in_len - c->in_off;
        if (c->busy) {
            if (staged) {
                payload_staged(s, c, staged);
            } else {
                ssize_t k = payload_recv(s, c);
                if (k < 0 && errno == EINTR) continue;
                if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
                if (k <= 0) {
                    conn_close(s, c); /* the peer left (or died) in mid-request */
                    return;
                }
            }
            if (c->left == 0) {
                if (c->dst_gpu) gpu_put_flush(s, c);
                finish_put(s, c);
            }
            continue;
        }
        if (staged >= sizeof c->q) {
            memcpy(&c->q, c->in + c->in_off, sizeof c->q);
            c->in_off += sizeof c->q;
            served = true;
            start_request(s, c);
            continue;
        }
        /* Nothing staged after a request: back to poll, which says when more
         * comes (a read now would mostly find nothing: one system call per
         * request saved on the latency path). */
        if (served) return;
        if (c->in_off) {
            memmove(c->in, c->in + c->in_off, staged);
            c->in_off = 0;
            c->in_len = staged;
        }
        ssize_t k = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (k <= 0) {
            conn_close(s, c); /* the peer closed: it finalized, or died */
            return;
        }
        c->in_len += (size_t)k;
    }
}

/* ------------------------------------------------------------------------ */
/* Accepting                                                                 */
/* ------------------------------------------------------------------------ */

/* Close the stranger that has waited longest; false if there is none. */
static bool evict_oldest(tcp_svc *s, const char *why) {
    conn *oldest = NULL;
    for (size_t i = 0; i < s->n_conns; i++) {
        conn *c = s->conns[i];
        if (is_stranger(c) && (!oldest || c->deadline < oldest->deadline)) oldest = c;
    }
    if (!oldest) return false;
    s->st.evicted++;
    stranger_log(s, "dropped connection %llu, the oldest of %zu without a finished handshake: %s",
                 (unsigned long long)oldest->serial, s->n_pending, why);
    conn_close(s, oldest);
    return true;
}

void tcp_svc_adopt(tcp_svc *s, int fd) {
    if (s->n_pending >= s->max_pending) evict_oldest(s, "at the limit");
    if (s->n_conns == s->cap_conns) {
        size_t cap = s->cap_conns ? 2 * s->cap_conns : 16;
        conn **nc = realloc(s->conns, cap * sizeof *nc);
        if (!nc) {
            close(fd);
            return;
        }
        s->conns = nc;
        s->cap_conns = cap;
    }
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* fails on socketpairs: fine */
    c->fd = fd;
    c->state = CS_HELLO;
    c->pe = -1;
    c->serial = ++s->serial;
    c->deadline = now_ms() + s->handshake_ms;
    s->conns[s->n_conns++] = c;
    s->n_pending++;
    s->st.accepted++;
    conn_handshake(s, c); /* a peer sends HELLO at once */
}

static void accept_all(tcp_svc *s) {
    /* One bound's worth per turn: a flood cannot starve the peers. */
    for (size_t taken = 0; taken < s->max_pending; taken++) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            tcp_svc_adopt(s, fd);
            continue;
        }
        int e = errno;
        if (e == EINTR || e == ECONNABORTED) continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            s->accept_pause_ms = ACCEPT_PAUSE_MIN_MS;
            return;
        }
        /* Out of descriptors: hold fewer strangers and free one (each turn
         * takes a new connection off the queue, so this cannot spin); with
         * none to free, polling the still-readable socket again would spin:
         * pause accepting. */
        if (e == EMFILE || e == ENFILE) {
            if (s->n_pending / 2 < s->max_pending) {
                s->max_pending = s->n_pending > 2 ? s->n_pending / 2 : 1;
                stranger_log(s, "out of descriptors: from now on at most %zu connections may "
                             "wait for their handshake", s->max_pending);
            }
            bool freed = false;
            while (s->n_pending > s->max_pending - 1 && evict_oldest(s, strerror(e))) freed = true;
            if (freed) continue;
        }
        s->st.accept_pauses++;
        stranger_log(s, "accept failed: %s; not accepting for %llu ms", strerror(e),
                     (unsigned long long)s->accept_pause_ms);
        s->accept_paused_until = now_ms() + s->accept_pause_ms;
        s->accept_pause_ms = s->accept_pause_ms * 2 > ACCEPT_PAUSE_MAX_MS
                                 ? ACCEPT_PAUSE_MAX_MS
                                 : s->accept_pause_ms * 2;
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */
/* ------------------------------------------------------------------------ */

int32_t tcp_svc_create(const tcp_svc_cfg *cfg, tcp_svc **out) {
    const symm_tp_core *core = cfg->core;
    tcp_svc *s = calloc(1, sizeof *s);
    if (s) s->may_connect = calloc((size_t)core->n_pes, 1);
    if (!s || !s->may_connect) {
        if (s) free(s->may_connect);
        free(s);
        if (cfg->listen_fd >= 0) close(cfg->listen_fd);
        return core->set_error(core->core, SYMM_ERR_OUT_OF_MEMORY,
                               "tcp transport: out of host memory");
    }
    s->core = core;
    s->me = core->my_pe;
    s->n = core->n_pes;
    memcpy(s->may_connect, cfg->may_connect, (size_t)s->n);
    s->listen_fd = cfg->listen_fd;
    s->handshake_ms = cfg->handshake_ms ? cfg->handshake_ms : 5000;
    pthread_rwlock_init(&s->reg_lock, NULL);
    s->max_pending = cfg->max_pending;
    if (!s->max_pending) {
        struct rlimit nofile;
        uint64_t fds = 1024;
        if (getrlimit(RLIMIT_NOFILE, &nofile) == 0)
            fds = nofile.rlim_cur == RLIM_INFINITY ? 4 * PENDING_MAX : (uint64_t)nofile.rlim_cur;
        uint64_t used = 2 * (uint64_t)s->n + PENDING_RESERVE;
        uint64_t pending = fds > used ? (fds - used) / 2 : 0;
        s->max_pending = pending < PENDING_MIN   ? PENDING_MIN
                         : pending > PENDING_MAX ? PENDING_MAX
                                                 : (size_t)pending;
    }
    s->accept_pause_ms = ACCEPT_PAUSE_MIN_MS;
    s->log_window = now_ms();
    *out = s;
    return 0;
}

void tcp_svc_destroy(tcp_svc *s) {
    if (!s) return;
    for (size_t i = 0; i < s->n_conns; i++) {
        conn_close(s, s->conns[i]);
        free(s->conns[i]);
    }
    free(s->conns);
    if (s->listen_fd >= 0) close(s->listen_fd);
    pthread_rwlock_destroy(&s->reg_lock);
    free(s->regs);
    free(s->pfd);
    free(s->may_connect);
    free(s);
}

void tcp_svc_get_stats(const tcp_svc *s, tcp_svc_stats *out) {
    *out = s->st;
    out->pending = s->n_pending;
    out->max_pending = s->max_pending;
}

static int next_timeout(const tcp_svc *s, int timeout_ms) {
    for (size_t i = 0; i < s->n_conns; i++)
        if (s->conns[i]->more) return 0;
    /* Only the peers' connections and no pause: no clock to read. */
    if (!s->n_pending && !s->accept_paused_until) return timeout_ms;
    uint64_t now = now_ms(), best = timeout_ms < 0 ? UINT64_MAX : now + (uint64_t)timeout_ms;
    if (s->accept_paused_until && s->accept_paused_until < best) best = s->accept_paused_until;
    for (size_t i = 0; i < s->n_conns; i++) {
        const conn *c = s->conns[i];
        if (is_stranger(c) && c->deadline < best) best = c->deadline;
    }
    if (best == UINT64_MAX) return -1;
    return best <= now ? 0 : best - now > 1000000 ? 1000000 : (int)(best - now);
}

int tcp_svc_step(tcp_svc *s, int wake_fd, int timeout_ms) {
    if (s->accept_paused_until && now_ms() >= s->accept_paused_until) s->accept_paused_until = 0;
    size_t has_wake = wake_fd >= 0, has_listen = s->listen_fd >= 0 && !s->accept_paused_until;
    size_t base = has_wake + has_listen, n = base + s->n_conns;
    if (n > s->cap_pfd) {
        struct pollfd *p = realloc(s->pfd, n * sizeof *p);
        if (!p) return 0; /* try again next turn */
        s->pfd = p;
        s->cap_pfd = n;
    }
    if (has_wake) s->pfd[0] = (struct pollfd){wake_fd, POLLIN, 0};
    if (has_listen) s->pfd[has_wake] = (struct pollfd){s->listen_fd, POLLIN, 0};
    size_t n_conns = s->n_conns;
    for (size_t i = 0; i < n_conns; i++) {
        conn *c = s->conns[i];
        /* A connection with output pending is not read until it drains
         * (its peer waits for that reply first). */
        bool out = c->out_off < c->out_len || c->big_left;
        s->pfd[base + i] = (struct pollfd){c->fd, (short)(out ? POLLOUT : POLLIN), 0};
    }
    int rc = poll(s->pfd, (nfds_t)n, next_timeout(s, timeout_ms));
    int woken = rc > 0 && has_wake && (s->pfd[0].revents & POLLIN);
    for (size_t i = 0; i < n_conns; i++) {
        conn *c = s->conns[i];
        short ev = rc > 0 ? s->pfd[base + i].revents : 0;
        if (c->state == CS_CLOSED || (!ev && !c->more)) continue;
        if (is_stranger(c)) conn_handshake(s, c);
        else conn_serve(s, c);
    }
    if (rc > 0 && has_listen && (s->pfd[has_wake].revents & POLLIN)) accept_all(s);
    /* Handshake deadlines, then forget closed connections. */
    uint64_t now = s->n_pending ? now_ms() : 0;
    size_t j = 0;
    for (size_t i = 0; i < s->n_conns; i++) {
        conn *c = s->conns[i];
        if (is_stranger(c) && now >= c->deadline) {
            s->st.expired++;
            stranger_log(s, "dropped connection %llu: no finished handshake within %u ms",
                         (unsigned long long)c->serial, s->handshake_ms);
            conn_close(s, c);
        }
        if (c->state == CS_CLOSED) free(c);
        else s->conns[j++] = c;
    }
    s->n_conns = j;
    return woken;
}

/* Rendezvous server (rendezvous.h). */
#include "rendezvous.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap.h"
#include "crypto.h"

/* Connections that have not said HELLO yet: at most half of the descriptors
 * the process has left after the job's own (RLIMIT_NOFILE - n_pes -
 * PENDING_RESERVE), within [PENDING_MIN, PENDING_MAX], halved whenever
 * accept() runs out of descriptors. When full, the oldest stranger makes room
 * for the new connection, so a flood of idle connections cannot keep PEs
 * out. */
#define PENDING_MIN 8
#define PENDING_MAX 1024
#define PENDING_RESERVE 64
/* A new connection must say HELLO within a tenth of the job's timeout,
 * bounded to [HELLO_MIN_MS (or the timeout when shorter), HELLO_MAX_MS]: a PE
 * sends it right after connecting. */
#define HELLO_MIN_MS 1000
#define HELLO_MAX_MS 5000
/* accept() out of descriptors (EMFILE, ENFILE) or memory: stop polling the
 * listening socket for ACCEPT_PAUSE_MIN_MS, doubling to ACCEPT_PAUSE_MAX_MS. */
#define ACCEPT_PAUSE_MIN_MS 10
#define ACCEPT_PAUSE_MAX_MS 1000
/* Lines about strangers (refused, dropped, accept failures): at most
 * LOG_BURST per LOG_WINDOW_MS, then one line counting the rest. */
#define LOG_BURST 10
#define LOG_WINDOW_MS 1000

/* An encoded message (header + payload) shared by the queues it is in. */
typedef struct rdv_buf {
    int refs;
    size_t len;
    uint8_t data[];
} rdv_buf;

typedef struct rdv_out {
    rdv_buf *buf;
    size_t off;
    struct rdv_out *next;
} rdv_out;

/* C_HELLO: connected, no HELLO yet; C_AUTH: HELLO answered with CHALLENGE,
 * waiting for the PE's proof (both are strangers: bounded, with a deadline). */
enum { C_HELLO, C_AUTH, C_MEMBER, C_LEAVING, C_CLOSED };
enum { S_JOINING, S_RUNNING, S_ENDED };

struct rdv_session;

typedef struct rdv_conn {
    int fd;
    int state;
    struct rdv_session *sess; /* C_MEMBER, C_LEAVING */
    int32_t rank;
    symm__wire_rx rx;
    rdv_out *out, *out_tail;
    int64_t deadline;   /* C_HELLO: say HELLO by then; C_LEAVING: flush by then */
    int io_error;       /* a write failed (handled by the step's last pass)      */
    char peer[48];      /* "connection 12" or "PE 3 (pid 4567)"                  */
    /* C_AUTH: the HELLO as received and the nonce of the CHALLENGE */
    uint8_t hello[SYMM__WIRE_HELLO_BYTES];
    uint8_t nonce[SYMM__NONCE_BYTES];
} rdv_conn;

typedef struct rdv_session {
    uint32_t id;
    int state;
    int32_t n_joined, n_gone;
    rdv_conn **member;   /* [n_pes] live connection of each PE (NULL: none/gone) */
    bool *gone;          /* [n_pes] joined, then left (BYE) or was lost           */
    uint64_t *host_id;   /* [n_pes] */
    int32_t *pid;        /* [n_pes] */
    /* the collective in progress */
    bool coll_active;
    uint32_t coll_type, coll_seq, coll_len;
    int32_t coll_arrived, coll_first;
    bool *arrived;       /* [n_pes] */
    rdv_buf *coll_out;   /* the response being assembled */
    /* abort */
    bool aborted;
    int32_t abort_rank;
    char abort_reason[SYMM__WIRE_MAX_REASON + 1];
    struct rdv_session *next;
} rdv_session;

struct symm__rdv {
    int listen_fd;
    char addr[SYMM__ADDR_TEXT_MAX];
    char prefix[64];
    uint8_t secret[SYMM__SECRET_BYTES];
    int32_t n_pes;
    uint32_t hello_timeout_ms;
    bool draining;
    rdv_conn **conns;
    size_t n_conns, cap_conns, n_pending, max_pending;
    int64_t accept_paused_until; /* 0: accepting                              */
    int accept_pause_ms;         /* the next pause after a failed accept      */
    int64_t log_window;          /* start of the stranger-log window          */
    unsigned log_lines;          /* stranger lines printed in the window      */
    unsigned long log_dropped;   /* stranger lines left out in the window     */
    uint64_t conn_counter;
    rdv_session *sessions;
    struct pollfd *pfd;
    size_t cap_pfd;
};

__attribute__((format(printf, 2, 3))) static void rdv_log(const symm__rdv *r, const char *fmt, ...) {
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s (%s): %s\n", r->prefix, r->addr, line);
}

/* Count the lines left out in the last window, if any, and start a new one. */
static void log_window_roll(symm__rdv *r, int64_t now) {
    if (now - r->log_window < LOG_WINDOW_MS) return;
    if (r->log_dropped)
        rdv_log(r, "%lu more messages about stray connections in the last %.1f s were not shown",
                r->log_dropped, (double)(now - r->log_window) / 1000.0);
    r->log_window = now;
    r->log_lines = 0;
    r->log_dropped = 0;
}

/* rdv_log for events caused by strangers: rate limited (LOG_BURST). */
__attribute__((format(printf, 2, 3))) static void stranger_log(symm__rdv *r, const char *fmt, ...) {
    log_window_roll(r, symm__now_ms());
    if (r->log_lines >= LOG_BURST) {
        r->log_dropped++;
        return;
    }
    r->log_lines++;
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rdv_log(r, "%s", line);
}

/* ------------------------------------------------------------------------ */
/* Buffers and output queues                                                 */
/* ------------------------------------------------------------------------ */

static rdv_buf *buf_new(uint32_t type, uint32_t seq, size_t payload_len) {
    rdv_buf *b = malloc(sizeof *b + SYMM__WIRE_HEADER_BYTES + payload_len);
    if (!b) return NULL;
    b->refs = 1;
    b->len = SYMM__WIRE_HEADER_BYTES + payload_len;
    symm__wire_encode_header(b->data, type, (uint32_t)payload_len, seq);
    return b;
}

static void buf_unref(rdv_buf *b) {
    if (b && --b->refs == 0) free(b);
}

static rdv_buf *buf_abort(uint32_t type, int32_t rank, const char *reason) {
    rdv_buf *b = buf_new(type, 0, symm__wire_abort_bytes(reason));
    if (b) symm__wire_encode_abort(b->data + SYMM__WIRE_HEADER_BYTES, rank, reason);
    return b;
}

/* Write what the socket takes now; a failure is noted in io_error. */
static void conn_flush(rdv_conn *c) {
    while (c->out && c->fd >= 0 && !c->io_error) {
        rdv_out *o = c->out;
        ssize_t n = send(c->fd, o->buf->data + o->off, o->buf->len - o->off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) c->io_error = errno;
            return;
        }
        o->off += (size_t)n;
        if (o->off == o->buf->len) {
            c->out = o->next;
            if (!c->out) c->out_tail = NULL;
            buf_unref(o->buf);
            free(o);
        }
    }
}

static void conn_send(rdv_conn *c, rdv_buf *b) {
    if (!c || !b || c->fd < 0 || c->state == C_CLOSED) return;
    rdv_out *o = malloc(sizeof *o);
    if (!o) {
        c->io_error = ENOMEM;
        return;
    }
    b->refs++;
    o->buf = b;
    o->off = 0;
    o->next = NULL;
    if (c->out_tail) c->out_tail->next = o;
    else c->out = o;
    c->out_tail = o;
    conn_flush(c);
}

/* Close the socket; the struct is freed when the step compacts the list. */
static void conn_close(symm__rdv *r, rdv_conn *c) {
    if (c->state == C_CLOSED) return;
    if (c->state == C_HELLO || c->state == C_AUTH) r->n_pending--;
    if (c->state == C_MEMBER && c->sess && c->sess->member) c->sess->member[c->rank] = NULL;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->state = C_CLOSED;
    symm__wire_rx_reset(&c->rx);
    while (c->out) {
        rdv_out *o = c->out;
        c->out = o->next;
        buf_unref(o->buf);
        free(o);
    }
    c->out_tail = NULL;
}

/* Send REJECT and close once it is written. */
static void conn_reject(symm__rdv *r, rdv_conn *c, const char *reason) {
    rdv_buf *b = buf_abort(SYMM__MSG_REJECT, -1, reason);
    if (c->state == C_HELLO || c->state == C_AUTH) r->n_pending--;
    c->state = C_LEAVING;
    c->sess = NULL;
    c->deadline = symm__now_ms() + 2000;
    conn_send(c, b);
    buf_unref(b);
}

/* ------------------------------------------------------------------------ */
/* Sessions                                                                  */
/* ------------------------------------------------------------------------ */

static rdv_session *session_find(symm__rdv *r, uint32_t id) {
    for (rdv_session *s = r->sessions; s; s = s->next)
        if (s->id == id) return s;
    return NULL;
}

static void session_free_arrays(rdv_session *s) {
    free(s->member);
    free(s->gone);
    free(s->host_id);
    free(s->pid);
    free(s->arrived);
    buf_unref(s->coll_out);
    s->member = NULL;
    s->gone = NULL;
    s->host_id = NULL;
    s->pid = NULL;
    s->arrived = NULL;
    s->coll_out = NULL;
    s->coll_active = false;
}

static rdv_session *session_new(symm__rdv *r, uint32_t id) {
    rdv_session *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    size_t n = (size_t)r->n_pes;
    s->id = id;
    s->state = S_JOINING;
    s->member = calloc(n, sizeof *s->member);
    s->gone = calloc(n, sizeof *s->gone);
    s->host_id = calloc(n, sizeof *s->host_id);
    s->pid = calloc(n, sizeof *s->pid);
    s->arrived = calloc(n, sizeof *s->arrived);
    if (!s->member || !s->gone || !s->host_id || !s->pid || !s->arrived) {
        session_free_arrays(s);
        free(s);
        return NULL;
    }
    s->next = r->sessions;
    r->sessions = s;
    return s;
}

static int32_t session_live(const symm__rdv *r, const rdv_session *s) {
    int32_t live = 0;
    if (s->member)
        for (int32_t i = 0; i < r->n_pes; i++) live += s->member[i] != NULL;
    return live;
}

/* A session ends when every PE has left, or when it aborted and nobody is
 * connected any more. Its record stays to refuse late joiners. */
static void session_check_end(symm__rdv *r, rdv_session *s) {
    if (s->state == S_ENDED) return;
    bool all_gone = s->state == S_RUNNING && s->n_gone == r->n_pes;
    if (all_gone || (s->aborted && session_live(r, s) == 0)) {
        s->state = S_ENDED;
        session_free_arrays(s);
    }
}

static void session_abort(symm__rdv *r, rdv_session *s, int32_t rank, const char *reason) {
    if (s->aborted || s->state == S_ENDED) return;
    s->aborted = true;
    s->abort_rank = rank;
    snprintf(s->abort_reason, sizeof s->abort_reason, "%s", reason);
    buf_unref(s->coll_out);
    s->coll_out = NULL;
    s->coll_active = false;
    int32_t live = session_live(r, s);
    if (live > 0)
        rdv_log(r, "session %u: %s; aborting the %d remaining PE%s", s->id, reason, live,
                live == 1 ? "" : "s");
    rdv_buf *b = buf_abort(SYMM__MSG_ABORT, rank, reason);
    for (int32_t i = 0; i < r->n_pes; i++)
        if (s->member[i]) conn_send(s->member[i], b);
    buf_unref(b);
}

/* A member's connection broke or it misbehaved (not a BYE). */
static void member_lost(symm__rdv *r, rdv_conn *c, const char *why) {
    rdv_session *s = c->sess;
    int32_t rank = c->rank;
    conn_close(r, c);
    if (!s || s->state == S_ENDED) return;
    if (!s->gone[rank]) {
        s->gone[rank] = true;
        s->n_gone++;
    }
    char reason[SYMM__WIRE_MAX_REASON];
    snprintf(reason, sizeof reason, "PE %d (pid %d) %s", rank, s->pid[rank], why);
    session_abort(r, s, rank, reason);
    session_check_end(r, s);
}

static void conn_lost(symm__rdv *r, rdv_conn *c, const char *why) {
    if (c->state == C_MEMBER) member_lost(r, c, why);
    else conn_close(r, c);
}

/* ------------------------------------------------------------------------ */
/* Message handling                                                          */
/* ------------------------------------------------------------------------ */

/* HELLO: answer with a CHALLENGE (a fresh nonce and this server's proof of
 * the key); the PE is nobody until its AUTH proves the key in turn. */
static void handle_hello(symm__rdv *r, rdv_conn *c, const uint8_t *p, uint32_t len) {
    symm__wire_hello h;
    char reason[SYMM__WIRE_MAX_REASON];
    if (symm__wire_parse_hello(p, len, &h) != SYMM_SUCCESS) {
        snprintf(reason, sizeof reason, "bad HELLO: %s", symm__last_error());
        stranger_log(r, "refused %s: %s", c->peer, reason);
        conn_reject(r, c, reason);
        return;
    }
    rdv_buf *b = buf_new(SYMM__MSG_CHALLENGE, 0, SYMM__WIRE_CHALLENGE_BYTES);
    if (!b || symm__random(c->nonce, sizeof c->nonce) != SYMM_SUCCESS) {
        buf_unref(b);
        rdv_log(r, "cannot answer %s: %s", c->peer, b ? symm__last_error() : "out of memory");
        conn_close(r, c);
        return;
    }
    memcpy(c->hello, p, SYMM__WIRE_HELLO_BYTES);
    uint8_t *out = b->data + SYMM__WIRE_HEADER_BYTES;
    memcpy(out, c->nonce, SYMM__NONCE_BYTES);
    symm__wire_proof(r->secret, SYMM__PROOF_SERVER, c->hello, c->nonce, out + SYMM__NONCE_BYTES);
    c->state = C_AUTH;
    conn_send(c, b);
    buf_unref(b);
}

/* AUTH: the PE's proof; then it joins its session. */
static void handle_auth(symm__rdv *r, rdv_conn *c, const uint8_t *p, uint32_t len) {
    symm__wire_hello h;
    char reason[SYMM__WIRE_MAX_REASON];
    uint8_t want[SYMM__PROOF_BYTES];
    symm__wire_proof(r->secret, SYMM__PROOF_CLIENT, c->hello, c->nonce, want);
    bool ok = len == SYMM__PROOF_BYTES && symm__ct_equal(p, want, SYMM__PROOF_BYTES);
    symm__wipe(want, sizeof want);
    if (symm__wire_parse_hello(c->hello, sizeof c->hello, &h) != SYMM_SUCCESS) ok = false;
    if (!ok) {
        stranger_log(r, "refused %s claiming to be PE %d (pid %d): its proof does not match the "
                     "job key", c->peer, h.rank, h.pid);
        conn_reject(r, c, "wrong job secret: the proof does not match this job's key (is this "
                    "address used by another job?)");
        return;
    }
    if (h.n_pes != r->n_pes) {
        snprintf(reason, sizeof reason, "PE %d (pid %d) says the job has %d PEs, but it has %d",
                 h.rank, h.pid, h.n_pes, r->n_pes);
        stranger_log(r, "refused %s: %s", c->peer, reason);
        conn_reject(r, c, reason);
        return;
    }
    if (r->draining) { /* the PE retries and finds the next server */
        conn_close(r, c);
        return;
    }
    rdv_session *s = session_find(r, h.session);
    if (s && s->state == S_ENDED) {
        if (s->aborted)
            snprintf(reason, sizeof reason, "session %u of this job was aborted (%.900s)", h.session,
                     s->abort_reason);
        else
            snprintf(reason, sizeof reason, "session %u of this job has already ended", h.session);
        stranger_log(r, "refused PE %d (pid %d): %s", h.rank, h.pid, reason);
        conn_reject(r, c, reason);
        return;
    }
    if (s && (s->member[h.rank] || s->gone[h.rank])) {
        snprintf(reason, sizeof reason,
                 "duplicate rank: PE %d already joined session %u (pid %d); this is pid %d",
                 h.rank, h.session, s->pid[h.rank], h.pid);
        stranger_log(r, "refused %s: %s", c->peer, reason);
        conn_reject(r, c, reason);
        return;
    }
    if (!s) s = session_new(r, h.session);
    if (!s) {
        rdv_log(r, "out of memory for session %u", h.session);
        conn_reject(r, c, "rendezvous server out of memory");
        return;
    }
    r->n_pending--;
    c->state = C_MEMBER;
    c->sess = s;
    c->rank = h.rank;
    c->deadline = 0;
    snprintf(c->peer, sizeof c->peer, "PE %d (pid %d)", h.rank, h.pid);
    s->member[h.rank] = c;
    s->host_id[h.rank] = h.host_id;
    s->pid[h.rank] = h.pid;
    if (s->aborted) { /* joined an aborted, not yet ended session */
        rdv_buf *b = buf_abort(SYMM__MSG_ABORT, s->abort_rank, s->abort_reason);
        conn_send(c, b);
        buf_unref(b);
        return;
    }
    if (++s->n_joined < r->n_pes) return;
    s->state = S_RUNNING;
    rdv_buf *b = buf_new(SYMM__MSG_WELCOME, 0, symm__wire_welcome_bytes(r->n_pes));
    if (!b) {
        session_abort(r, s, -1, "rendezvous server out of memory for WELCOME");
        return;
    }
    symm__wire_encode_welcome(b->data + SYMM__WIRE_HEADER_BYTES, r->n_pes, s->host_id, s->pid);
    for (int32_t i = 0; i < r->n_pes; i++) conn_send(s->member[i], b);
    buf_unref(b);
}

static const char *coll_name(uint32_t type) {
    return type == SYMM__MSG_BARRIER ? "barrier" : "allgather";
}

static void handle_collective(symm__rdv *r, rdv_conn *c, const symm__wire_header *h,
                              const uint8_t *p) {
    rdv_session *s = c->sess;
    char reason[SYMM__WIRE_MAX_REASON];
    if (s->aborted) {
        rdv_buf *b = buf_abort(SYMM__MSG_ABORT, s->abort_rank, s->abort_reason);
        conn_send(c, b);
        buf_unref(b);
        return;
    }
    if (s->n_gone > 0) {
        int32_t left = 0;
        while (!s->gone[left]) left++;
        snprintf(reason, sizeof reason,
                 "PE %d started a %s after PE %d had left the job (finalized)", c->rank,
                 coll_name(h->type), left);
        session_abort(r, s, left, reason);
        return;
    }
    if (h->type == SYMM__MSG_ALLGATHER &&
        (uint64_t)h->length * (uint64_t)r->n_pes > SYMM__WIRE_MAX_PAYLOAD) {
        snprintf(reason, sizeof reason, "PE %d asked for an allgather of %u bytes x %d PEs, over "
                 "the %u-byte limit", c->rank, h->length, r->n_pes, SYMM__WIRE_MAX_PAYLOAD);
        session_abort(r, s, c->rank, reason);
        return;
    }
    if (!s->coll_active) {
        size_t out_len = h->type == SYMM__MSG_ALLGATHER ? (size_t)h->length * (size_t)r->n_pes : 0;
        s->coll_out = buf_new(h->type, h->seq, out_len);
        if (!s->coll_out) {
            session_abort(r, s, -1, "rendezvous server out of memory for a collective");
            return;
        }
        s->coll_active = true;
        s->coll_type = h->type;
        s->coll_seq = h->seq;
        s->coll_len = h->length;
        s->coll_arrived = 0;
        s->coll_first = c->rank;
        memset(s->arrived, 0, (size_t)r->n_pes * sizeof *s->arrived);
    } else if (h->type != s->coll_type || h->seq != s->coll_seq || h->length != s->coll_len) {
        snprintf(reason, sizeof reason,
                 "collective mismatch: PE %d called %s #%u (%u bytes) while PE %d called %s #%u "
                 "(%u bytes)", c->rank, coll_name(h->type), h->seq, h->length, s->coll_first,
                 coll_name(s->coll_type), s->coll_seq, s->coll_len);
        session_abort(r, s, c->rank, reason);
        return;
    }
    if (s->arrived[c->rank]) {
        member_lost(r, c, "sent a collective twice (protocol error)");
        return;
    }
    s->arrived[c->rank] = true;
    if (h->length)
        memcpy(s->coll_out->data + SYMM__WIRE_HEADER_BYTES + (size_t)c->rank * h->length, p,
               h->length);
    if (++s->coll_arrived < r->n_pes) return;
    rdv_buf *b = s->coll_out;
    s->coll_out = NULL;
    s->coll_active = false;
    for (int32_t i = 0; i < r->n_pes; i++) conn_send(s->member[i], b);
    buf_unref(b);
}

static void handle_bye(symm__rdv *r, rdv_conn *c) {
    rdv_session *s = c->sess;
    int32_t rank = c->rank;
    rdv_buf *b = buf_new(SYMM__MSG_BYE, 0, 0);
    conn_send(c, b);
    buf_unref(b);
    s->member[rank] = NULL;
    c->state = C_LEAVING;
    c->deadline = symm__now_ms() + 5000;
    if (!s->gone[rank]) {
        s->gone[rank] = true;
        s->n_gone++;
    }
    if (s->coll_active && !s->arrived[rank]) {
        char reason[SYMM__WIRE_MAX_REASON];
        snprintf(reason, sizeof reason, "PE %d left the job (finalized) while PE %d waits in a %s",
                 rank, s->coll_first, coll_name(s->coll_type));
        session_abort(r, s, rank, reason);
    }
    session_check_end(r, s);
}

static void handle_message(symm__rdv *r, rdv_conn *c, const symm__wire_header *h,
                           const uint8_t *p) {
    if (c->state == C_HELLO || c->state == C_AUTH) {
        uint32_t want = c->state == C_HELLO ? SYMM__MSG_HELLO : SYMM__MSG_AUTH;
        if (h->type != want) {
            stranger_log(r, "refused %s: it sent %s, not %s", c->peer,
                         symm__wire_type_name(h->type), symm__wire_type_name(want));
            conn_reject(r, c, c->state == C_HELLO ? "expected HELLO" : "expected AUTH");
            return;
        }
        if (c->state == C_HELLO) handle_hello(r, c, p, h->length);
        else handle_auth(r, c, p, h->length);
        return;
    }
    if (c->state != C_MEMBER) return; /* leaving: ignore the rest */
    rdv_session *s = c->sess;
    switch (h->type) {
    case SYMM__MSG_ALLGATHER:
    case SYMM__MSG_BARRIER:
        if (s->state != S_RUNNING) {
            member_lost(r, c, "sent a collective before WELCOME (protocol error)");
            return;
        }
        handle_collective(r, c, h, p);
        return;
    case SYMM__MSG_BYE:
        if (s->state != S_RUNNING) {
            member_lost(r, c, "left during bootstrap");
            return;
        }
        handle_bye(r, c);
        return;
    case SYMM__MSG_ABORT: {
        symm__wire_abort a;
        char why[SYMM__WIRE_MAX_REASON + 32];
        if (symm__wire_parse_abort(p, h->length, &a) == SYMM_SUCCESS)
            snprintf(why, sizeof why, "gave up: %s", a.reason);
        else
            snprintf(why, sizeof why, "sent a malformed ABORT");
        member_lost(r, c, why);
        return;
    }
    default: {
        char why[64];
        snprintf(why, sizeof why, "sent an unexpected %s (protocol error)",
                 symm__wire_type_name(h->type));
        member_lost(r, c, why);
        return;
    }
    }
}

/* Read everything available on c and handle complete messages. */
static void conn_read(symm__rdv *r, rdv_conn *c) {
    while (c->fd >= 0 && c->state != C_CLOSED) {
        if (c->state == C_LEAVING) { /* refused, or said BYE: the rest is ignored */
            uint8_t junk[512];
            ssize_t n = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT);
            if (n > 0 || (n < 0 && errno == EINTR)) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
            conn_close(r, c);
            return;
        }
        /* Strangers may send a HELLO and nothing bigger; members nothing an
         * allgather of this job could not use. Checked before allocating. */
        uint32_t member_limit = SYMM__WIRE_MAX_PAYLOAD / (uint32_t)r->n_pes;
        if (member_limit < 8 + SYMM__WIRE_MAX_REASON) member_limit = 8 + SYMM__WIRE_MAX_REASON;
        c->rx.limit = c->state == C_HELLO  ? SYMM__WIRE_HELLO_BYTES
                      : c->state == C_AUTH ? SYMM__WIRE_AUTH_BYTES
                                           : member_limit;
        uint8_t *buf;
        size_t want;
        symm__wire_rx_want(&c->rx, &buf, &want);
        ssize_t n = recv(c->fd, buf, want, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            char why[128];
            snprintf(why, sizeof why, "disconnected without finalizing (%s)", strerror(errno));
            conn_lost(r, c, why);
            return;
        }
        if (n == 0) {
            conn_lost(r, c, "disconnected without finalizing (the process exited or died)");
            return;
        }
        bool complete;
        if (symm__wire_rx_advance(&c->rx, (size_t)n, &complete) != SYMM_SUCCESS) {
            char why[SYMM__WIRE_MAX_REASON];
            snprintf(why, sizeof why, "sent an invalid message: %s", symm__last_error());
            if (c->state == C_MEMBER) {
                member_lost(r, c, why);
            } else if (c->state == C_HELLO && c->rx.got == SYMM__WIRE_HEADER_BYTES &&
                       c->rx.hdr_bytes[0] == 'S' && c->rx.hdr_bytes[1] == 'Y' &&
                       c->rx.hdr_bytes[2] == 'M' && c->rx.hdr_bytes[3] == 'M' &&
                       (c->rx.hdr_bytes[4] | c->rx.hdr_bytes[5] << 8) != SYMM__WIRE_VERSION) {
                /* A symm PE of another version: tell it (it cannot parse the
                 * REJECT, but its decoder names both versions). */
                unsigned v = (unsigned)(c->rx.hdr_bytes[4] | c->rx.hdr_bytes[5] << 8);
                snprintf(why, sizeof why, "protocol version %u; this server speaks version %u "
                         "(are different symm versions mixed in one job?)", v, SYMM__WIRE_VERSION);
                stranger_log(r, "refused %s: %s", c->peer, why);
                symm__wire_rx_reset(&c->rx);
                conn_reject(r, c, why);
            } else {
                stranger_log(r, "dropped %s: %s", c->peer, why);
                conn_close(r, c);
            }
            return;
        }
        if (complete) {
            symm__wire_header h;
            uint8_t *p = symm__wire_rx_take(&c->rx, &h);
            handle_message(r, c, &h, p);
            free(p);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */
/* ------------------------------------------------------------------------ */

symm_status symm__rdv_create(const symm__rdv_config *cfg, symm__rdv **out) {
    if (cfg->n_pes < 1 || cfg->n_pes > SYMM__WIRE_MAX_PES) {
        close(cfg->listen_fd);
        return symm__err(SYMM_ERR_INVALID_ARG, "rendezvous: %d PEs is outside [1, %d]",
                         cfg->n_pes, SYMM__WIRE_MAX_PES);
    }
    symm__rdv *r = calloc(1, sizeof *r);
    if (!r) {
        close(cfg->listen_fd);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "rendezvous: out of memory");
    }
    r->listen_fd = cfg->listen_fd;
    snprintf(r->addr, sizeof r->addr, "%s", cfg->addr_text ? cfg->addr_text : "?");
    snprintf(r->prefix, sizeof r->prefix, "%s",
             cfg->log_prefix ? cfg->log_prefix : "symm rendezvous");
    memcpy(r->secret, cfg->secret, SYMM__SECRET_BYTES);
    r->n_pes = cfg->n_pes;
    uint32_t job = cfg->hello_timeout_ms ? cfg->hello_timeout_ms : SYMM__DEFAULT_TIMEOUT_MS;
    uint32_t hello = job / 10, lo = job < HELLO_MIN_MS ? job : HELLO_MIN_MS;
    r->hello_timeout_ms = hello < lo ? lo : hello > HELLO_MAX_MS ? HELLO_MAX_MS : hello;
    struct rlimit nofile;
    uint64_t fds = 1024;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
        fds = (uint64_t)nofile.rlim_cur;
    else if (getrlimit(RLIMIT_NOFILE, &nofile) == 0)
        fds = PENDING_MAX * 2 + PENDING_RESERVE + (uint64_t)r->n_pes;
    uint64_t used = (uint64_t)r->n_pes + PENDING_RESERVE;
    uint64_t pending = fds > used ? (fds - used) / 2 : 0;
    r->max_pending = pending < PENDING_MIN ? PENDING_MIN : pending > PENDING_MAX ? PENDING_MAX : pending;
    r->accept_pause_ms = ACCEPT_PAUSE_MIN_MS;
    r->log_window = symm__now_ms();
    *out = r;
    return SYMM_SUCCESS;
}

/* Close the stranger that has waited longest for its HELLO; false if none. */
static bool evict_oldest_stranger(symm__rdv *r, const char *why) {
    rdv_conn *oldest = NULL;
    for (size_t i = 0; i < r->n_conns; i++) {
        rdv_conn *c = r->conns[i];
        if ((c->state == C_HELLO || c->state == C_AUTH) &&
            (!oldest || c->deadline < oldest->deadline))
            oldest = c;
    }
    if (!oldest) return false;
    stranger_log(r, "dropped %s, the oldest of %zu connections without HELLO: %s", oldest->peer,
                 r->n_pending, why);
    conn_close(r, oldest);
    return true;
}

static void accept_all(symm__rdv *r) {
    /* One backlog's worth per turn: a flood cannot starve the members. */
    for (size_t taken = 0; taken < r->max_pending; taken++) {
        int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            int e = errno;
            if (e == EINTR || e == ECONNABORTED) continue;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                r->accept_pause_ms = ACCEPT_PAUSE_MIN_MS;
                return;
            }
            /* Out of descriptors or memory, and the socket stays readable.
             * Free a descriptor held by a stranger and go on (each turn
             * takes a new connection off the queue, so it cannot spin);
             * without one, polling again at once would spin: pause. */
            if (e == EMFILE || e == ENFILE) {
                /* The process needs descriptors too: hold fewer strangers. */
                if (r->n_pending / 2 < r->max_pending) {
                    r->max_pending = r->n_pending > 2 ? r->n_pending / 2 : 1;
                    stranger_log(r, "out of descriptors: from now on at most %zu connections "
                                 "may wait for their HELLO", r->max_pending);
                }
                bool freed = false;
                while (r->n_pending > r->max_pending - 1 && evict_oldest_stranger(r, strerror(e)))
                    freed = true;
                if (freed) continue; /* from here on each new one replaces the oldest */
            }
            stranger_log(r, "accept failed: %s; not accepting for %d ms", strerror(e),
                         r->accept_pause_ms);
            r->accept_paused_until = symm__now_ms() + r->accept_pause_ms;
            r->accept_pause_ms = r->accept_pause_ms * 2 > ACCEPT_PAUSE_MAX_MS
                                     ? ACCEPT_PAUSE_MAX_MS
                                     : r->accept_pause_ms * 2;
            return;
        }
        if (r->n_pending >= r->max_pending) evict_oldest_stranger(r, "at the limit");
        if (r->n_conns == r->cap_conns) {
            size_t cap = r->cap_conns ? 2 * r->cap_conns : 16;
            rdv_conn **n = realloc(r->conns, cap * sizeof *n);
            if (!n) {
                close(fd);
                return;
            }
            r->conns = n;
            r->cap_conns = cap;
        }
        rdv_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* fails on unix: fine */
        c->fd = fd;
        c->state = C_HELLO;
        c->rank = -1;
        c->deadline = symm__now_ms() + r->hello_timeout_ms;
        snprintf(c->peer, sizeof c->peer, "connection %llu",
                 (unsigned long long)++r->conn_counter);
        r->conns[r->n_conns++] = c;
        r->n_pending++;
        /* A PE sends HELLO right after connecting: read what is there now,
         * so it becomes a member before any eviction can pick it. */
        conn_read(r, c);
    }
}

static int next_timeout(const symm__rdv *r, int timeout_ms) {
    int64_t now = symm__now_ms(), best = timeout_ms < 0 ? INT64_MAX : now + timeout_ms;
    if (r->accept_paused_until && r->accept_paused_until < best) best = r->accept_paused_until;
    if (r->log_dropped && r->log_window + LOG_WINDOW_MS < best) best = r->log_window + LOG_WINDOW_MS;
    for (size_t i = 0; i < r->n_conns; i++) {
        const rdv_conn *c = r->conns[i];
        if (c->state != C_CLOSED && c->deadline && c->deadline < best) best = c->deadline;
    }
    if (best == INT64_MAX) return -1;
    int64_t left = best - now;
    if (left < 0) left = 0;
    return left > 1000000 ? 1000000 : (int)left;
}

static void reap(symm__rdv *r) {
    /* Write failures and timers; a loss may cause more write failures. */
    for (bool again = true; again;) {
        again = false;
        int64_t now = symm__now_ms();
        for (size_t i = 0; i < r->n_conns; i++) {
            rdv_conn *c = r->conns[i];
            if (c->state == C_CLOSED) continue;
            if (c->io_error) {
                char why[128];
                snprintf(why, sizeof why, "disconnected without finalizing (%s)",
                         strerror(c->io_error));
                conn_lost(r, c, why);
                again = true;
            } else if (c->deadline && now >= c->deadline) {
                if (c->state == C_HELLO || c->state == C_AUTH)
                    stranger_log(r, "dropped %s: no %s within %u ms", c->peer,
                                 c->state == C_HELLO ? "HELLO" : "AUTH", r->hello_timeout_ms);
                conn_close(r, c);
            } else if (c->state == C_LEAVING && !c->out) {
                conn_close(r, c);
            }
        }
    }
    size_t j = 0;
    for (size_t i = 0; i < r->n_conns; i++) {
        if (r->conns[i]->state == C_CLOSED) free(r->conns[i]);
        else r->conns[j++] = r->conns[i];
    }
    r->n_conns = j;
}

symm_status symm__rdv_step(symm__rdv *r, struct pollfd *extra, size_t n_extra, int timeout_ms) {
    if (r->accept_paused_until && symm__now_ms() >= r->accept_paused_until)
        r->accept_paused_until = 0;
    size_t has_listen = r->listen_fd >= 0 && !r->accept_paused_until, n_conns = r->n_conns;
    size_t n = n_extra + has_listen + n_conns;
    if (n > r->cap_pfd) {
        struct pollfd *p = realloc(r->pfd, n * sizeof *p);
        if (!p) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "rendezvous: out of memory");
        r->pfd = p;
        r->cap_pfd = n;
    }
    for (size_t i = 0; i < n_extra; i++) r->pfd[i] = extra[i];
    if (has_listen) r->pfd[n_extra] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
    for (size_t i = 0; i < n_conns; i++) {
        rdv_conn *c = r->conns[i];
        r->pfd[n_extra + has_listen + i] =
            (struct pollfd){.fd = c->fd, .events = (short)(POLLIN | (c->out ? POLLOUT : 0))};
    }
    int rc = poll(r->pfd, (nfds_t)n, next_timeout(r, timeout_ms));
    for (size_t i = 0; i < n_extra; i++) extra[i].revents = rc > 0 ? r->pfd[i].revents : 0;
    if (rc < 0) {
        if (errno == EINTR) return SYMM_SUCCESS;
        return symm__err_errno(SYMM_ERR_SYSTEM, errno, "rendezvous: poll");
    }
    if (rc > 0) {
        for (size_t i = 0; i < n_conns; i++) {
            rdv_conn *c = r->conns[i];
            short ev = r->pfd[n_extra + has_listen + i].revents;
            if (!ev || c->state == C_CLOSED) continue;
            if (ev & POLLOUT) conn_flush(c);
            if (ev & (POLLIN | POLLHUP | POLLERR)) conn_read(r, c);
        }
        if (has_listen && r->listen_fd >= 0 && (r->pfd[n_extra].revents & POLLIN)) accept_all(r);
    }
    reap(r);
    log_window_roll(r, symm__now_ms());
    return SYMM_SUCCESS;
}

void symm__rdv_drain(symm__rdv *r) {
    if (r->draining) return;
    r->draining = true;
    if (r->listen_fd >= 0) close(r->listen_fd);
    r->listen_fd = -1;
    for (size_t i = 0; i < r->n_conns; i++) {
        rdv_conn *c = r->conns[i];
        if (c->state == C_HELLO || c->state == C_AUTH) conn_close(r, c);
        else if (c->state == C_MEMBER && c->sess->state == S_JOINING) conn_close(r, c);
    }
    /* Unstarted sessions are forgotten: their PEs retry with the next server. */
    for (rdv_session **ps = &r->sessions; *ps;) {
        rdv_session *s = *ps;
        if (s->state == S_JOINING) {
            *ps = s->next;
            session_free_arrays(s);
            free(s);
        } else {
            ps = &s->next;
        }
    }
    reap(r);
}

bool symm__rdv_idle(const symm__rdv *r) {
    for (const rdv_session *s = r->sessions; s; s = s->next)
        if (s->state == S_RUNNING) return false;
    for (size_t i = 0; i < r->n_conns; i++)
        if (r->conns[i]->state == C_LEAVING && r->conns[i]->out) return false;
    return true;
}

void symm__rdv_destroy(symm__rdv *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_conns; i++) {
        conn_close(r, r->conns[i]);
        free(r->conns[i]);
    }
    free(r->conns);
    while (r->sessions) {
        rdv_session *s = r->sessions;
        r->sessions = s->next;
        session_free_arrays(s);
        free(s);
    }
    if (r->listen_fd >= 0) close(r->listen_fd);
    free(r->pfd);
    free(r);
}

/* ------------------------------------------------------------------------ */
/* Thread                                                                    */
/* ------------------------------------------------------------------------ */

struct symm__rdv_thread {
    symm__rdv *rdv;
    pthread_t thread;
    int wake_fd;
    atomic_int stop;
    _Atomic int64_t stop_deadline;
};

static void *rdv_thread_main(void *arg) {
    symm__rdv_thread *t = arg;
    bool draining = false;
    for (;;) {
        int timeout = -1;
        if (atomic_load(&t->stop)) {
            if (!draining) {
                symm__rdv_drain(t->rdv);
                draining = true;
            }
            int64_t left = atomic_load(&t->stop_deadline) - symm__now_ms();
            if (symm__rdv_idle(t->rdv)) break;
            if (left <= 0) {
                rdv_log(t->rdv, "stopping with PEs still connected (they did not finalize in time)");
                break;
            }
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd wake = {.fd = t->wake_fd, .events = POLLIN};
        if (symm__rdv_step(t->rdv, &wake, 1, timeout) != SYMM_SUCCESS) {
            rdv_log(t->rdv, "stopping: %s", symm__last_error());
            break;
        }
        if (wake.revents & POLLIN) {
            uint64_t v;
            ssize_t n = read(t->wake_fd, &v, sizeof v);
            (void)n;
        }
    }
    return NULL;
}

symm_status symm__rdv_thread_start(symm__rdv *r, symm__rdv_thread **out) {
    symm__rdv_thread *t = calloc(1, sizeof *t);
    if (!t) {
        symm__rdv_destroy(r);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "rendezvous: out of memory");
    }
    t->rdv = r;
    t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (t->wake_fd < 0) {
        int e = errno;
        symm__rdv_destroy(r);
        free(t);
        return symm__err_errno(SYMM_ERR_SYSTEM, e, "rendezvous: eventfd");
    }
    /* The server thread takes no signals: they stay with the application. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->thread, NULL, rdv_thread_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(t->wake_fd);
        symm__rdv_destroy(r);
        free(t);
        return symm__err_errno(SYMM_ERR_SYSTEM, rc, "rendezvous: pthread_create");
    }
    *out = t;
    return SYMM_SUCCESS;
}

void symm__rdv_thread_stop(symm__rdv_thread *t, uint32_t timeout_ms) {
    if (!t) return;
    atomic_store(&t->stop_deadline, symm__now_ms() + (int64_t)timeout_ms);
    atomic_store(&t->stop, 1);
    uint64_t one = 1;
    ssize_t n = write(t->wake_fd, &one, sizeof one);
    (void)n;
    pthread_join(t->thread, NULL);
    symm__rdv_destroy(t->rdv);
    close(t->wake_fd);
    free(t);
}

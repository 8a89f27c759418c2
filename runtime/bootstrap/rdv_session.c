/* Rendezvous server (rendezvous.h): sessions and the protocol, from a
 * connection's HELLO to its BYE; rendezvous.c runs the connections. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap.h"
#include "crypto.h"
#include "rdv_internal.h"
#include "rendezvous.h"
#include "wire.h"

/* ------------------------------------------------------------------------ */
/* Sessions                                                                  */
/* ------------------------------------------------------------------------ */

static rdv_session *session_find(symm__rdv *r, uint32_t id) {
    for (rdv_session *s = r->sessions; s; s = s->next)
        if (s->id == id) return s;
    return NULL;
}

void symm__rdv_session_free_arrays(rdv_session *s) {
    free(s->member);
    free(s->gone);
    free(s->host_id);
    free(s->pid);
    free(s->arrived);
    symm__rdv_buf_unref(s->coll_out);
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
        symm__rdv_session_free_arrays(s);
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
        symm__rdv_session_free_arrays(s);
    }
}

static void session_abort(symm__rdv *r, rdv_session *s, int32_t rank, const char *reason) {
    if (s->aborted || s->state == S_ENDED) return;
    s->aborted = true;
    s->abort_rank = rank;
    snprintf(s->abort_reason, sizeof s->abort_reason, "%s", reason);
    symm__rdv_buf_unref(s->coll_out);
    s->coll_out = NULL;
    s->coll_active = false;
    int32_t live = session_live(r, s);
    if (live > 0)
        symm__rdv_log(r, "session %u: %s; aborting the %d remaining PE%s", s->id, reason, live,
                      live == 1 ? "" : "s");
    rdv_buf *b = symm__rdv_buf_abort(SYMM__MSG_ABORT, rank, reason);
    for (int32_t i = 0; i < r->n_pes; i++)
        if (s->member[i]) symm__rdv_conn_send(s->member[i], b);
    symm__rdv_buf_unref(b);
}

/* A member's connection broke or it misbehaved (not a BYE). */
static void member_lost(symm__rdv *r, rdv_conn *c, const char *why) {
    rdv_session *s = c->sess;
    int32_t rank = c->rank;
    symm__rdv_conn_close(r, c);
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

void symm__rdv_conn_lost(symm__rdv *r, rdv_conn *c, const char *why) {
    if (c->state == C_MEMBER) member_lost(r, c, why);
    else symm__rdv_conn_close(r, c);
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
        symm__rdv_stranger_log(r, "refused %s: %s", c->peer, reason);
        symm__rdv_conn_reject(r, c, reason);
        return;
    }
    rdv_buf *b = symm__rdv_buf_new(SYMM__MSG_CHALLENGE, 0, SYMM__WIRE_CHALLENGE_BYTES);
    if (!b || symm__random(c->nonce, sizeof c->nonce) != SYMM_SUCCESS) {
        symm__rdv_buf_unref(b);
        symm__rdv_log(r, "cannot answer %s: %s", c->peer, b ? symm__last_error() : "out of memory");
        symm__rdv_conn_close(r, c);
        return;
    }
    memcpy(c->hello, p, SYMM__WIRE_HELLO_BYTES);
    uint8_t *out = b->data + SYMM__WIRE_HEADER_BYTES;
    memcpy(out, c->nonce, SYMM__NONCE_BYTES);
    symm__wire_proof(r->secret, SYMM__PROOF_SERVER, c->hello, c->nonce, out + SYMM__NONCE_BYTES);
    c->state = C_AUTH;
    symm__rdv_conn_send(c, b);
    symm__rdv_buf_unref(b);
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
        symm__rdv_stranger_log(r, "refused %s claiming to be PE %d (pid %d): its proof does not "
                               "match the job key", c->peer, h.rank, h.pid);
        symm__rdv_conn_reject(r, c,
                              "wrong job secret: the proof does not match this job's key (is this "
                              "address used by another job?)");
        return;
    }
    if (h.n_pes != r->n_pes) {
        snprintf(reason, sizeof reason, "PE %d (pid %d) says the job has %d PEs, but it has %d",
                 h.rank, h.pid, h.n_pes, r->n_pes);
        symm__rdv_stranger_log(r, "refused %s: %s", c->peer, reason);
        symm__rdv_conn_reject(r, c, reason);
        return;
    }
    if (r->draining) { /* the PE retries and finds the next server */
        symm__rdv_conn_close(r, c);
        return;
    }
    rdv_session *s = session_find(r, h.session);
    if (s && s->state == S_ENDED) {
        if (s->aborted)
            snprintf(reason, sizeof reason, "session %u of this job was aborted (%.900s)", h.session,
                     s->abort_reason);
        else
            snprintf(reason, sizeof reason, "session %u of this job has already ended", h.session);
        symm__rdv_stranger_log(r, "refused PE %d (pid %d): %s", h.rank, h.pid, reason);
        symm__rdv_conn_reject(r, c, reason);
        return;
    }
    if (s && (s->member[h.rank] || s->gone[h.rank])) {
        snprintf(reason, sizeof reason,
                 "duplicate rank: PE %d already joined session %u (pid %d); this is pid %d",
                 h.rank, h.session, s->pid[h.rank], h.pid);
        symm__rdv_stranger_log(r, "refused %s: %s", c->peer, reason);
        symm__rdv_conn_reject(r, c, reason);
        return;
    }
    if (!s) s = session_new(r, h.session);
    if (!s) {
        symm__rdv_log(r, "out of memory for session %u", h.session);
        symm__rdv_conn_reject(r, c, "rendezvous server out of memory");
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
        rdv_buf *b = symm__rdv_buf_abort(SYMM__MSG_ABORT, s->abort_rank, s->abort_reason);
        symm__rdv_conn_send(c, b);
        symm__rdv_buf_unref(b);
        return;
    }
    if (++s->n_joined < r->n_pes) return;
    s->state = S_RUNNING;
    rdv_buf *b = symm__rdv_buf_new(SYMM__MSG_WELCOME, 0, symm__wire_welcome_bytes(r->n_pes));
    if (!b) {
        session_abort(r, s, -1, "rendezvous server out of memory for WELCOME");
        return;
    }
    symm__wire_encode_welcome(b->data + SYMM__WIRE_HEADER_BYTES, r->n_pes, s->host_id, s->pid);
    for (int32_t i = 0; i < r->n_pes; i++) symm__rdv_conn_send(s->member[i], b);
    symm__rdv_buf_unref(b);
}

static const char *coll_name(uint32_t type) {
    return type == SYMM__MSG_BARRIER ? "barrier" : "allgather";
}

static void handle_collective(symm__rdv *r, rdv_conn *c, const symm__wire_header *h,
                              const uint8_t *p) {
    rdv_session *s = c->sess;
    char reason[SYMM__WIRE_MAX_REASON];
    if (s->aborted) {
        rdv_buf *b = symm__rdv_buf_abort(SYMM__MSG_ABORT, s->abort_rank, s->abort_reason);
        symm__rdv_conn_send(c, b);
        symm__rdv_buf_unref(b);
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
        s->coll_out = symm__rdv_buf_new(h->type, h->seq, out_len);
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
    for (int32_t i = 0; i < r->n_pes; i++) symm__rdv_conn_send(s->member[i], b);
    symm__rdv_buf_unref(b);
}

static void handle_bye(symm__rdv *r, rdv_conn *c) {
    rdv_session *s = c->sess;
    int32_t rank = c->rank;
    rdv_buf *b = symm__rdv_buf_new(SYMM__MSG_BYE, 0, 0);
    symm__rdv_conn_send(c, b);
    symm__rdv_buf_unref(b);
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
            symm__rdv_stranger_log(r, "refused %s: it sent %s, not %s", c->peer,
                                   symm__wire_type_name(h->type), symm__wire_type_name(want));
            symm__rdv_conn_reject(r, c, c->state == C_HELLO ? "expected HELLO" : "expected AUTH");
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
void symm__rdv_conn_read(symm__rdv *r, rdv_conn *c) {
    while (c->fd >= 0 && c->state != C_CLOSED) {
        if (c->state == C_LEAVING) { /* refused, or said BYE: the rest is ignored */
            uint8_t junk[512];
            ssize_t n = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT);
            if (n > 0 || (n < 0 && errno == EINTR)) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
            symm__rdv_conn_close(r, c);
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
            symm__rdv_conn_lost(r, c, why);
            return;
        }
        if (n == 0) {
            symm__rdv_conn_lost(r, c,
                                "disconnected without finalizing (the process exited or died)");
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
                symm__rdv_stranger_log(r, "refused %s: %s", c->peer, why);
                symm__wire_rx_reset(&c->rx);
                symm__rdv_conn_reject(r, c, why);
            } else {
                symm__rdv_stranger_log(r, "dropped %s: %s", c->peer, why);
                symm__rdv_conn_close(r, c);
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

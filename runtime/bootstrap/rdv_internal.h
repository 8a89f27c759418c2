/*
 * The rendezvous server's private parts, shared by its two files (nothing
 * outside bootstrap/ includes this):
 *   rendezvous.c   connections, output queues, the poll loop, the thread
 *   rdv_session.c  sessions and the protocol (HELLO, AUTH, collectives, BYE)
 */
#ifndef SYMM_RDV_INTERNAL_H
#define SYMM_RDV_INTERNAL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto.h"
#include "rendezvous.h"
#include "wire.h"

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

/* rendezvous.c */

/* A line on stderr prefixed with the server's name and address. */
__attribute__((format(printf, 2, 3))) void symm__rdv_log(const symm__rdv *r, const char *fmt, ...);
/* symm__rdv_log for events caused by strangers: rate limited. */
__attribute__((format(printf, 2, 3))) void symm__rdv_stranger_log(symm__rdv *r, const char *fmt,
                                                                  ...);
/* A message of type with room for payload_len bytes after the header. */
rdv_buf *symm__rdv_buf_new(uint32_t type, uint32_t seq, size_t payload_len);
void symm__rdv_buf_unref(rdv_buf *b);
/* An ABORT or REJECT naming rank (-1: none) and the reason. */
rdv_buf *symm__rdv_buf_abort(uint32_t type, int32_t rank, const char *reason);
/* Queue b on c (one more reference) and write what the socket takes now. */
void symm__rdv_conn_send(rdv_conn *c, rdv_buf *b);
/* Close the socket; the struct is freed when the step compacts the list. */
void symm__rdv_conn_close(symm__rdv *r, rdv_conn *c);
/* Send REJECT and close once it is written. */
void symm__rdv_conn_reject(symm__rdv *r, rdv_conn *c, const char *reason);

/* rdv_session.c */

void symm__rdv_session_free_arrays(rdv_session *s);
/* c broke or misbehaved: a member's loss aborts its session. */
void symm__rdv_conn_lost(symm__rdv *r, rdv_conn *c, const char *why);
/* Read everything available on c and handle complete messages. */
void symm__rdv_conn_read(symm__rdv *r, rdv_conn *c);

#endif

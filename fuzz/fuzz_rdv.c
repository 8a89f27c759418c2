/*
 * Fuzz target: the rendezvous server's state machine (runtime/core/
 * rendezvous.c), fed a sequence of framed messages from several fake
 * clients over real sockets. Stateful: sessions form, collectives complete,
 * PEs leave and abort, strangers and broken frames arrive in between.
 *
 * Input: byte 0 picks the job size (1..4 PEs); then operations, each an op
 * byte, a client byte (6 clients) and op-specific bytes:
 *   CONNECT, RAW (len + bytes), HELLO (rank, size, session, pid; the client
 *   answers the server's CHALLENGE with an AUTH whose proof is right or
 *   wrong, as the flags byte says), ALLGATHER (seq, len + bytes), BARRIER (seq), BYE, ABORT
 *   (rank, len + reason), CLOSE, SHUT_WR, STEP (more turns of the loop),
 *   DRAIN, HEADER (a bare header with any type and length).
 * After each operation, twice: the server takes two turns (symm__rdv_step,
 * no waiting) and every client reads what it was sent.
 *
 * Oracles: everything the server sends is a valid frame whose payload
 * parses (REJECT/ABORT reasons, WELCOME of the job's size); a CHALLENGE
 * comes only after the client's HELLO and always proves the job's key; a
 * client never gets WELCOME, BYE or a collective's answer unless it proved
 * the key in its AUTH; no crash, leak or sanitizer report.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "internal.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/wire.h"

#define NCLI 6

enum { OP_CONNECT, OP_RAW, OP_HELLO, OP_ALLGATHER, OP_BARRIER, OP_BYE, OP_ABORT, OP_CLOSE,
       OP_SHUTWR, OP_STEP, OP_DRAIN, OP_HEADER, OP_COUNT };

typedef struct cli {
    int fd;
    bool hello_sent; /* said HELLO (hello[] holds it): a CHALLENGE may come */
    bool wrong;      /* its AUTH will carry a wrong proof                  */
    bool authed;     /* sent AUTH with the right proof                     */
    bool welcomed;   /* got WELCOME */
    uint8_t hello[SYMM__WIRE_HELLO_BYTES];
    symm__wire_rx rx;
} cli;

typedef struct in {
    const uint8_t *p;
    size_t n;
} in;

static unsigned take(in *s) {
    if (!s->n) return 0;
    s->n--;
    return *s->p++;
}

static const uint8_t job_secret[SYMM__SECRET_BYTES] = {
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 32};

static void send_all(cli *c, const void *buf, size_t len) {
    if (c->fd < 0) return;
    /* A full socket drops the rest: the server may stop reading a stranger. */
    (void)!send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void send_msg(cli *c, uint32_t type, uint32_t seq, const void *payload, size_t len) {
    uint8_t buf[SYMM__WIRE_HEADER_BYTES + 1200];
    if (len > sizeof buf - SYMM__WIRE_HEADER_BYTES) return;
    symm__wire_encode_header(buf, type, (uint32_t)len, seq);
    if (len) memcpy(buf + SYMM__WIRE_HEADER_BYTES, payload, len);
    send_all(c, buf, SYMM__WIRE_HEADER_BYTES + len);
}

/* One message the server sent to c: it must be well formed. */
static void check_from_server(cli *c, const symm__wire_header *h, const uint8_t *p,
                              int32_t n_pes) {
    switch (h->type) {
    case SYMM__MSG_CHALLENGE: {
        /* Only after this client's HELLO, and always with the server's
         * proof of the key; then this client proves it (or fails to). */
        if (!c->hello_sent || h->length != SYMM__WIRE_CHALLENGE_BYTES) __builtin_trap();
        uint8_t want[SYMM__PROOF_BYTES], proof[SYMM__PROOF_BYTES];
        symm__wire_proof(job_secret, SYMM__PROOF_SERVER, c->hello, p, want);
        if (memcmp(p + SYMM__NONCE_BYTES, want, sizeof want) != 0) __builtin_trap();
        symm__wire_proof(job_secret, SYMM__PROOF_CLIENT, c->hello, p, proof);
        if (c->wrong) proof[c->hello[0] % SYMM__PROOF_BYTES] ^= 0x80;
        c->hello_sent = false;
        if (!c->wrong && c->fd >= 0) c->authed = true;
        send_msg(c, SYMM__MSG_AUTH, 0, proof, sizeof proof);
        break;
    }
    case SYMM__MSG_WELCOME: {
        if (!c->authed) __builtin_trap(); /* joined without proving the key */
        int32_t n;
        if (symm__wire_welcome_count(p, h->length, &n) != SYMM_SUCCESS || n != n_pes)
            __builtin_trap();
        uint64_t host[4];
        int32_t pid[4];
        if (symm__wire_parse_welcome(p, h->length, n, host, pid) != SYMM_SUCCESS) __builtin_trap();
        c->welcomed = true;
        break;
    }
    case SYMM__MSG_REJECT:
    case SYMM__MSG_ABORT: {
        symm__wire_abort a;
        if (symm__wire_parse_abort(p, h->length, &a) != SYMM_SUCCESS) __builtin_trap();
        break;
    }
    case SYMM__MSG_ALLGATHER:
    case SYMM__MSG_BARRIER:
        if (!c->welcomed) __builtin_trap(); /* a collective's answer before WELCOME */
        if (h->type == SYMM__MSG_BARRIER && h->length != 0) __builtin_trap();
        break;
    case SYMM__MSG_BYE: /* the answer to a member's BYE */
        if (!c->authed || h->length != 0) __builtin_trap();
        break;
    default:
        __builtin_trap(); /* the server sends no HELLO */
    }
}

static void drain_client(cli *c, int32_t n_pes) {
    while (c->fd >= 0) {
        uint8_t *dst;
        size_t want;
        symm__wire_rx_want(&c->rx, &dst, &want);
        ssize_t got = recv(c->fd, dst, want, MSG_DONTWAIT);
        if (got <= 0) {
            if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(c->fd); /* the server closed us */
                c->fd = -1;
            }
            return;
        }
        bool complete = false;
        if (symm__wire_rx_advance(&c->rx, (size_t)got, &complete) != SYMM_SUCCESS)
            __builtin_trap(); /* the server sent a bad header */
        if (complete) {
            symm__wire_header h;
            uint8_t *p = symm__wire_rx_take(&c->rx, &h);
            check_from_server(c, &h, p, n_pes);
            free(p);
        }
    }
}

static int run(const uint8_t *data, size_t size) {
    static unsigned counter;
    in s = {data, size};
    int32_t n_pes = 1 + (int32_t)(take(&s) & 3);
    char name[96];
    snprintf(name, sizeof name, "unix:@symm-fuzz-rdv-%d-%u", (int)getpid(), counter++);
    symm__addr addr;
    int lfd = -1;
    if (symm__addr_parse(name, &addr) != SYMM_SUCCESS ||
        symm__addr_listen(&addr, false, &lfd, NULL) != SYMM_SUCCESS)
        __builtin_trap();
    symm__rdv_config rc;
    memset(&rc, 0, sizeof rc);
    rc.listen_fd = lfd;
    rc.addr_text = name;
    rc.log_prefix = "fuzz_rdv";
    memcpy(rc.secret, job_secret, sizeof job_secret);
    rc.n_pes = n_pes;
    rc.hello_timeout_ms = 60000;
    symm__rdv *r = NULL;
    if (symm__rdv_create(&rc, &r) != SYMM_SUCCESS) __builtin_trap();
    cli c[NCLI];
    memset(c, 0, sizeof c);
    for (int i = 0; i < NCLI; i++) c[i].fd = -1;

    for (int ops = 0; s.n && ops < 256; ops++) {
        unsigned op = take(&s) % OP_COUNT;
        cli *k = &c[take(&s) % NCLI];
        switch (op) {
        case OP_CONNECT:
            if (k->fd < 0) {
                symm__wire_rx_reset(&k->rx);
                k->authed = k->welcomed = k->hello_sent = k->wrong = false;
                if (symm__addr_connect(&addr, symm__now_ms() + 1000, &k->fd) != SYMM_SUCCESS)
                    k->fd = -1; /* a full backlog: the server drops strangers */
            }
            break;
        case OP_RAW: {
            size_t len = take(&s);
            if (len > s.n) len = s.n;
            send_all(k, s.p, len);
            s.p += len, s.n -= len;
            break;
        }
        case OP_HELLO: {
            symm__wire_hello h;
            memset(&h, 0, sizeof h);
            unsigned rank = take(&s), size_b = take(&s), sess = take(&s), flags = take(&s);
            h.rank = rank == 0xff ? -1 : (int32_t)(rank % 8);
            h.n_pes = size_b == 0 ? n_pes : (int32_t)size_b - 1;
            h.session = sess % 3;
            h.pid = flags & 0x40 ? 0 : 1000 + (int32_t)rank;
            h.host_id = 0x1234;
            for (size_t i = 0; i < sizeof h.nonce; i++) h.nonce[i] = (uint8_t)(flags + i);
            symm__wire_encode_hello(k->hello, &h);
            k->hello_sent = k->fd >= 0;
            k->wrong = flags & 1; /* the AUTH (sent on CHALLENGE) will not match */
            send_msg(k, SYMM__MSG_HELLO, 0, k->hello, sizeof k->hello);
            break;
        }
        case OP_ALLGATHER: {
            uint32_t seq = take(&s) % 4;
            size_t len = take(&s) % 32;
            uint8_t b[32] = {0};
            for (size_t i = 0; i < len; i++) b[i] = (uint8_t)take(&s);
            send_msg(k, SYMM__MSG_ALLGATHER, seq, b, len);
            break;
        }
        case OP_BARRIER: send_msg(k, SYMM__MSG_BARRIER, take(&s) % 4, NULL, 0); break;
        case OP_BYE: send_msg(k, SYMM__MSG_BYE, 0, NULL, 0); break;
        case OP_ABORT: {
            unsigned rank = take(&s);
            char reason[64];
            size_t len = take(&s) % sizeof reason;
            for (size_t i = 0; i < len; i++) reason[i] = (char)take(&s);
            uint8_t b[8 + sizeof reason];
            /* encode takes a C string: cut at the first NUL */
            reason[len < sizeof reason ? len : sizeof reason - 1] = '\0';
            size_t n = symm__wire_abort_bytes(reason);
            if (n > sizeof b) break;
            symm__wire_encode_abort(b, rank == 0xff ? -1 : (int32_t)(rank % 8), reason);
            send_msg(k, SYMM__MSG_ABORT, 0, b, n);
            break;
        }
        case OP_CLOSE:
            if (k->fd >= 0) close(k->fd);
            k->fd = -1;
            break;
        case OP_SHUTWR:
            if (k->fd >= 0) shutdown(k->fd, SHUT_WR);
            break;
        case OP_STEP:
            for (unsigned i = take(&s) % 4; i > 0; i--)
                if (symm__rdv_step(r, NULL, 0, 0) != SYMM_SUCCESS) __builtin_trap();
            break;
        case OP_DRAIN: symm__rdv_drain(r); break;
        case OP_HEADER: {
            uint8_t b[SYMM__WIRE_HEADER_BYTES];
            uint32_t type = take(&s) % 12, len = take(&s);
            len |= take(&s) << 8;
            len |= take(&s) << 24;
            symm__wire_encode_header(b, type, len, take(&s));
            send_all(k, b, sizeof b);
            break;
        }
        }
        /* Two rounds: a client's answer to a CHALLENGE (its AUTH) is served
         * in the second. */
        for (int round = 0; round < 2; round++) {
            for (int t = 0; t < 2; t++)
                if (symm__rdv_step(r, NULL, 0, 0) != SYMM_SUCCESS) __builtin_trap();
            for (int i = 0; i < NCLI; i++) drain_client(&c[i], n_pes);
        }
    }
    (void)symm__rdv_idle(r);
    symm__rdv_destroy(r);
    int welcomed = 0;
    for (int i = 0; i < NCLI; i++) {
        drain_client(&c[i], n_pes);
        welcomed += c[i].welcomed;
        if (c[i].fd >= 0) close(c[i].fd);
        symm__wire_rx_reset(&c[i].rx);
    }
    return welcomed > 0;
}

/* valid-*: some client was welcomed into a formed job. */
int symm_fuzz_valid(const uint8_t *data, size_t size) { return run(data, size); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 8192) return 0;
    run(data, size);
    return 0;
}

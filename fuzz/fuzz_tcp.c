/*
 * Fuzz target: the tcp transport's service (runtime/transports/tcp/
 * tcp_svc.c): its handshake and its request parser, fed by fake clients over
 * socket pairs, with a stand-in core (PE 0 of 4; the job key below) and two
 * registered ranges that are exact allocations (so ASan sees any access
 * outside them).
 *
 * Input: byte 0 is spare; then operations, each an op byte, a client byte
 * (4 clients) and op-specific bytes:
 *   CONNECT; HELLO (claimed PE, target PE, nonce byte); AUTH (signing PE,
 *   corrupt flag: the proof for the client's last CHALLENGE); REQ (type,
 *   offset choice, length choice, flags, dtype/op, payload bytes sent: all or
 *   a part); RAW (len + bytes); CLOSE; SHUT_WR; STEP.
 * After each operation the service takes two turns (no waiting) and every
 * client reads what it was sent.
 *
 * Oracles: the registered memory does not change unless some client proved
 * a PE of the job; a client that has not proved its PE gets nothing but one
 * CHALLENGE, whose proof is PE 0's; a client that did gets ACCEPT, then
 * replies whose status is one the service may give, each GET's bytes after a
 * successful reply; no crash, leak or sanitizer report.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <symm/symm.h>

#include "fuzz.h"
#include "bootstrap/crypto.h"
#include "tcp_proto.h"
#include "tcp_svc.h"

#define NCLI 4
#define N_PES 4
#define REG_A (64u << 10) /* at heap offset 0        */
#define REG_B (4u << 10)  /* at heap offset 1 MiB    */
#define OFF_B (1u << 20)

static const uint8_t job_key[32] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3,
                                    2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5};

static void mac_as(int32_t pe, const void *msg, size_t len, uint8_t out[32]) {
    uint8_t who[4] = {(uint8_t)pe, (uint8_t)((uint32_t)pe >> 8), (uint8_t)((uint32_t)pe >> 16),
                      (uint8_t)((uint32_t)pe >> 24)};
    symm__hmac m;
    symm__hmac_init(&m, job_key, sizeof job_key);
    symm__hmac_update(&m, who, sizeof who);
    symm__hmac_update(&m, msg, len);
    symm__hmac_final(&m, out);
}

/* ---- the stand-in core (PE 0) ---- */
static int32_t c_allgather(void *c, const void *mine, void *all, size_t len) {
    (void)c, (void)mine, (void)all, (void)len;
    return SYMM_ERR_INTERNAL;
}
static int32_t c_barrier(void *c) { (void)c; return SYMM_ERR_INTERNAL; }
static int32_t c_check_failed(void *c) { (void)c; return 0; }
static int32_t c_set_error(void *c, int32_t st, const char *msg) { (void)c, (void)msg; return st; }
static void c_log(void *c, int32_t level, const char *msg) { (void)c, (void)level, (void)msg; }
static const char *c_getenv(void *c, const char *name) { (void)c, (void)name; return NULL; }
static int32_t c_auth_mac(void *c, const void *msg, size_t len, uint8_t mac[32]) {
    (void)c;
    mac_as(0, msg, len, mac);
    return 0;
}
static int32_t c_auth_verify(void *c, int32_t pe, const void *msg, size_t len,
                             const uint8_t mac[32]) {
    (void)c;
    if (pe < 0 || pe >= N_PES) return SYMM_ERR_BOOTSTRAP;
    uint8_t want[32];
    mac_as(pe, msg, len, want);
    return symm__ct_equal(want, mac, 32) ? 0 : SYMM_ERR_BOOTSTRAP;
}

static const uint64_t host_ids[N_PES] = {0, 1, 2, 3};
static const uint8_t remote[N_PES] = {0, 1, 1, 1};
static const symm_tp_core core = {
    .size = sizeof(symm_tp_core), .iface = SYMM_TP_IFACE, .core = NULL, .my_pe = 0,
    .n_pes = N_PES, .host_id = host_ids, .remote = remote, .device = -1, .timeout_ms = 60000,
    .peer_timeout_ms = 100, .allgather = c_allgather, .barrier = c_barrier,
    .check_failed = c_check_failed, .set_error = c_set_error, .log = c_log, .getenv = c_getenv,
    .auth_mac = c_auth_mac, .auth_verify = c_auth_verify};

/* ---- clients ---- */

enum { OP_CONNECT, OP_HELLO, OP_AUTH, OP_REQ, OP_RAW, OP_CLOSE, OP_SHUTWR, OP_STEP, OP_COUNT };

typedef struct cli {
    int fd;
    /* handshake as the client saw it */
    bool hello_sent, challenged, proved, accepted;
    int32_t from, to;
    uint8_t nonce_c[TCP_NONCE], nonce_s[TCP_NONCE];
    /* what the service sent: parsed as it comes */
    uint8_t buf[128];
    size_t got;
    uint64_t get_bytes;  /* bytes of a GET reply still to come */
    uint32_t pending[64]; /* requests sent whole, replies due: type | GET length << 8 */
    uint64_t pend_n[64];
    unsigned n_pend;
    bool unknown;        /* sent what the harness does not model (raw bytes, part of a
                            request, a second HELLO...): its answers are read unchecked,
                            except that a stranger still gets at most a CHALLENGE */
    size_t stranger_rx;  /* bytes an unproved client got (at most one CHALLENGE) */
    uint8_t first[TCP_HS_HEAD];
    unsigned served;     /* successful replies */
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

static void send_bytes(cli *c, const void *p, size_t n) {
    if (c->fd >= 0 && n) (void)!send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* One frame or reply the service sent to c (checked against what c did). */
static void on_bytes(cli *c) {
    for (;;) {
        if (c->get_bytes) {
            size_t k = c->got < c->get_bytes ? c->got : (size_t)c->get_bytes;
            memmove(c->buf, c->buf + k, c->got - k);
            c->got -= k;
            c->get_bytes -= k;
            if (c->get_bytes) return;
            continue;
        }
        if (!c->challenged) {
            if (c->got < TCP_CHALLENGE_BYTES) return;
            /* only after this client's HELLO, and with PE 0's proof */
            if (!c->hello_sent || tcp_hs_check(c->buf, TCP_HS_CHALLENGE) != 0) __builtin_trap();
            uint8_t msg[TCP_PROOF_MSG_MAX];
            size_t len = tcp_proof_msg(msg, TCP_PROOF_LABEL_SERVICE, c->from, c->to, c->nonce_c,
                                       c->buf + TCP_HS_HEAD);
            if (c_auth_verify(NULL, 0, msg, len, c->buf + TCP_HS_HEAD + TCP_NONCE) != 0)
                __builtin_trap();
            memcpy(c->nonce_s, c->buf + TCP_HS_HEAD, TCP_NONCE);
            c->challenged = true;
            memmove(c->buf, c->buf + TCP_CHALLENGE_BYTES, c->got - TCP_CHALLENGE_BYTES);
            c->got -= TCP_CHALLENGE_BYTES;
            continue;
        }
        if (!c->accepted) {
            if (c->got == 0) return;
            if (!c->proved) __builtin_trap(); /* more than a CHALLENGE without a proof */
            if (c->got < TCP_ACCEPT_BYTES) return;
            if (tcp_hs_check(c->buf, TCP_HS_ACCEPT) != 0) __builtin_trap();
            c->accepted = true;
            memmove(c->buf, c->buf + TCP_ACCEPT_BYTES, c->got - TCP_ACCEPT_BYTES);
            c->got -= TCP_ACCEPT_BYTES;
            continue;
        }
        if (c->got < sizeof(tcp_rep)) return;
        if (!c->n_pend) __builtin_trap(); /* a reply nobody asked for */
        tcp_rep r;
        memcpy(&r, c->buf, sizeof r);
        if (r.status != 0 && r.status != SYMM_ERR_OUT_OF_BOUNDS && r.status != SYMM_ERR_INVALID_ARG)
            __builtin_trap();
        uint32_t type = c->pending[0] & 0xff;
        if (type == REQ_GET && r.status == 0) c->get_bytes = c->pend_n[0];
        if (r.status == 0) c->served++;
        memmove(c->pending, c->pending + 1, (c->n_pend - 1) * sizeof *c->pending);
        memmove(c->pend_n, c->pend_n + 1, (c->n_pend - 1) * sizeof *c->pend_n);
        c->n_pend--;
        memmove(c->buf, c->buf + sizeof r, c->got - sizeof r);
        c->got -= sizeof r;
    }
}

/* A client the harness no longer models: read what comes; a stranger's
 * bytes are still checked (one CHALLENGE at most, nothing after). */
static void drain_unknown(cli *c) {
    uint8_t junk[4096];
    ssize_t k;
    while (c->fd >= 0 && (k = recv(c->fd, junk, sizeof junk, MSG_DONTWAIT)) != 0) {
        if (k < 0) {
            if (errno != EAGAIN && errno != EINTR) {
                close(c->fd);
                c->fd = -1;
            }
            return;
        }
        if (c->proved) continue;
        for (ssize_t i = 0; i < k; i++, c->stranger_rx++)
            if (c->stranger_rx < TCP_HS_HEAD) c->first[c->stranger_rx] = junk[i];
        if (c->stranger_rx > TCP_CHALLENGE_BYTES) __builtin_trap(); /* more than a CHALLENGE */
        if (c->stranger_rx >= TCP_HS_HEAD && tcp_hs_check(c->first, TCP_HS_CHALLENGE) != 0)
            __builtin_trap();
    }
    if (k == 0 && c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

static void drain(cli *c) {
    if (c->unknown) {
        drain_unknown(c);
        return;
    }
    while (c->fd >= 0) {
        size_t room = sizeof c->buf - c->got;
        if (room == 0) {
            on_bytes(c);
            if (sizeof c->buf - c->got == 0) __builtin_trap(); /* unparsed data */
            continue;
        }
        ssize_t k = recv(c->fd, c->buf + c->got, room, MSG_DONTWAIT);
        if (k <= 0) {
            if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(c->fd);
                c->fd = -1;
            }
            on_bytes(c);
            return;
        }
        c->got += (size_t)k;
        on_bytes(c);
    }
}

static uint64_t pick_off(unsigned k) {
    static const uint64_t offs[] = {0, 8, 64, REG_A - 8, REG_A - 1, REG_A, OFF_B, OFF_B + 8,
                                    OFF_B + REG_B - 8, OFF_B + REG_B, 1u << 30, UINT64_MAX - 7};
    return offs[k % (sizeof offs / sizeof *offs)];
}

static uint64_t pick_len(unsigned k) {
    static const uint64_t lens[] = {0, 1, 8, 16, 200, 4096, REG_A, REG_A + 1, 1u << 20,
                                    UINT64_MAX};
    return lens[k % (sizeof lens / sizeof *lens)];
}

static int run(const uint8_t *data, size_t size) {
    in s = {data, size};
    (void)take(&s);
    uint8_t *reg_a = malloc(REG_A), *reg_b = malloc(REG_B), *snap = malloc(REG_A + REG_B);
    for (size_t i = 0; i < REG_A; i++) reg_a[i] = (uint8_t)(i * 7);
    for (size_t i = 0; i < REG_B; i++) reg_b[i] = (uint8_t)(i * 11 + 1);
    memcpy(snap, reg_a, REG_A);
    memcpy(snap + REG_A, reg_b, REG_B);
    tcp_svc *svc = NULL;
    uint8_t may[N_PES] = {0, 1, 1, 1};
    tcp_svc_cfg cfg = {.core = &core, .may_connect = may, .listen_fd = -1, .handshake_ms = 60000,
                       .max_pending = 3};
    if (tcp_svc_create(&cfg, &svc) != 0) __builtin_trap();
    if (tcp_svc_mem_add(svc, reg_a, 0, REG_A) || tcp_svc_mem_add(svc, reg_b, OFF_B, REG_B))
        __builtin_trap();
    cli c[NCLI];
    memset(c, 0, sizeof c);
    for (int i = 0; i < NCLI; i++) c[i].fd = -1;
    bool anyone_proved = false;

    for (int ops = 0; s.n && ops < 200; ops++) {
        unsigned op = take(&s) % OP_COUNT;
        cli *k = &c[take(&s) % NCLI];
        switch (op) {
        case OP_CONNECT: {
            if (k->fd >= 0) break;
            int sv[2];
            if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
                __builtin_trap();
            memset(k, 0, sizeof *k);
            k->fd = sv[0];
            tcp_svc_adopt(svc, sv[1]);
            break;
        }
        case OP_HELLO: {
            uint8_t h[TCP_HELLO_BYTES];
            k->from = (int32_t)(take(&s) % 6) - 1;
            k->to = (int32_t)(take(&s) % 3) - 1;
            memset(k->nonce_c, (int)take(&s), TCP_NONCE);
            tcp_hs_head(h, TCP_HS_HELLO);
            tcp_put32(h + TCP_HS_HEAD, (uint32_t)k->from);
            tcp_put32(h + TCP_HS_HEAD + 4, (uint32_t)k->to);
            memcpy(h + TCP_HS_HEAD + 8, k->nonce_c, TCP_NONCE);
            if (k->hello_sent) k->unknown = true; /* a second HELLO */
            if (k->fd >= 0) k->hello_sent = true;
            send_bytes(k, h, sizeof h);
            break;
        }
        case OP_AUTH: {
            int32_t signer = (int32_t)(take(&s) % N_PES);
            unsigned corrupt = take(&s) & 1;
            uint8_t a[TCP_AUTH_BYTES], msg[TCP_PROOF_MSG_MAX];
            size_t len = tcp_proof_msg(msg, TCP_PROOF_LABEL_CALLER, k->from, k->to, k->nonce_c,
                                       k->nonce_s);
            tcp_hs_head(a, TCP_HS_AUTH);
            mac_as(signer, msg, len, a + TCP_HS_HEAD);
            if (corrupt) a[TCP_HS_HEAD] ^= 1;
            /* The service accepts exactly this: its CHALLENGE came, the HELLO
             * named a PE that connects to PE 0 and addressed PE 0, and the
             * proof is that PE's. */
            bool valid = k->fd >= 0 && !k->unknown && k->challenged && !k->proved && !corrupt &&
                         signer == k->from && k->from >= 1 && k->from < N_PES && k->to == 0;
            if (!k->challenged || k->proved) k->unknown = true; /* out of turn */
            if (valid) k->proved = anyone_proved = true;
            send_bytes(k, a, sizeof a);
            break;
        }
        case OP_REQ: {
            tcp_req q;
            memset(&q, 0, sizeof q);
            q.magic = TCP_MAGIC;
            q.type = REQ_PUT + take(&s) % 6; /* one past QUIET: unknown */
            q.off = pick_off(take(&s));
            q.n = pick_len(take(&s));
            q.flags = take(&s) & SYMM_TP_NBI;
            unsigned dt = take(&s);
            q.dtype = dt & 15;
            q.op = dt >> 4;
            q.value = 0x0102030405060708ull;
            q.sig_off = pick_off(dt);
            if (q.type == REQ_AMO) q.n = 8;
            if (q.type == REQ_PUT_SIGNAL) q.op = dt & 1;
            unsigned part = take(&s);
            uint8_t pay[256];
            bool is_put = q.type == REQ_PUT || q.type == REQ_PUT_SIGNAL;
            size_t pay_n = is_put ? (q.n < sizeof pay ? (size_t)q.n : sizeof pay) : 0;
            memset(pay, 0xee, sizeof pay);
            bool whole = !(part & 0x80) && (!is_put || pay_n == q.n);
            size_t hdr_n = (part & 0x80) ? (part & 0x3f) % sizeof q : sizeof q;
            send_bytes(k, &q, hdr_n);
            if (hdr_n == sizeof q) send_bytes(k, pay, pay_n);
            /* Only a whole request on a proved connection earns a reply. */
            if (k->proved && (!whole || q.type > REQ_QUIET || k->n_pend == 64))
                k->unknown = true; /* its payload comes later, or the service closes it */
            if (k->fd >= 0 && k->proved && !k->unknown &&
                !((q.type == REQ_PUT || q.type == REQ_PUT_SIGNAL) && (q.flags & SYMM_TP_NBI))) {
                k->pending[k->n_pend] = q.type;
                k->pend_n[k->n_pend++] = q.n;
            }
            if (!k->proved && k->hello_sent && !k->challenged) k->unknown = true;
            break;
        }
        case OP_RAW: {
            size_t len = take(&s);
            if (len > s.n) len = s.n;
            send_bytes(k, s.p, len);
            s.p += len, s.n -= len;
            if (len) k->unknown = true;
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
            for (unsigned i = take(&s) % 4; i > 0; i--) tcp_svc_step(svc, -1, 0);
            break;
        }
        for (int round = 0; round < 2; round++) {
            tcp_svc_step(svc, -1, 0);
            tcp_svc_step(svc, -1, 0);
            for (int i = 0; i < NCLI; i++) drain(&c[i]);
        }
        if (!anyone_proved && (memcmp(snap, reg_a, REG_A) || memcmp(snap + REG_A, reg_b, REG_B)))
            __builtin_trap(); /* memory changed with no proved PE */
    }
    tcp_svc_stats st;
    tcp_svc_get_stats(svc, &st);
    if (!anyone_proved && (st.authenticated || st.requests)) __builtin_trap();
    unsigned served = 0;
    for (int i = 0; i < NCLI; i++) {
        drain(&c[i]);
        served += c[i].served;
        if (c[i].fd >= 0) close(c[i].fd);
    }
    tcp_svc_destroy(svc);
    free(reg_a);
    free(reg_b);
    free(snap);
    return served > 0;
}

/* valid-*: some request was served on a proved connection. */
int symm_fuzz_valid(const uint8_t *data, size_t size) { return run(data, size); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    run(data, size);
    return 0;
}

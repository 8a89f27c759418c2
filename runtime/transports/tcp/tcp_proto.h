/*
 * The tcp transport's wire format (version 2), shared by the plugin
 * (tcp.c), its service (tcp_svc.c), the fuzz harness (fuzz/fuzz_tcp.c) and
 * the tests that play strangers (tests/transport/test_tcp_auth.c).
 *
 * A connection goes from PE `from` (the caller) to PE `to` (whose service
 * executes its requests). Before any request it runs a handshake in which
 * each side proves, through the core's auth_mac / auth_verify services
 * (transport.h), that it is the PE it claims to be, of this job, without
 * the job key leaving either core:
 *
 *   caller -> service  HELLO      magic, version, type, i32 from, i32 to, u8 nonce_c[32]
 *   service -> caller  CHALLENGE  magic, version, type, u8 nonce_s[32], u8 proof_s[32]
 *   caller -> service  AUTH       magic, version, type, u8 proof_c[32]
 *   service -> caller  ACCEPT     magic, version, type
 *
 *   proof_s = PE to's   auth_mac("symm tcp v2 service\0" | from | to | nonce_c | nonce_s)
 *   proof_c = PE from's auth_mac("symm tcp v2 caller\0"  | from | to | nonce_c | nonce_s)
 *
 * (integers little-endian; auth_mac binds the signing PE's number itself).
 * The caller checks proof_s before it proves anything; the service checks
 * proof_c against the PE the HELLO names, so a connection can neither come
 * from a stranger nor claim another PE. Anything else on a connection that
 * has not finished the handshake closes it.
 *
 * Then requests (struct tcp_req, then the payload of PUT/PUT_SIGNAL) and
 * replies (struct tcp_rep, then the bytes of a GET) in host byte order: the
 * job is one architecture (the bootstrap exchanges raw structs too).
 */
#ifndef SYMM_TCP_PROTO_H
#define SYMM_TCP_PROTO_H

#include <stdint.h>
#include <string.h>

#define TCP_MAGIC 0x53594d54u /* "TMYS" in memory: any other stream is refused */
#define TCP_VERSION 2u

enum { TCP_HS_HELLO = 1, TCP_HS_CHALLENGE, TCP_HS_AUTH, TCP_HS_ACCEPT };

#define TCP_NONCE 32u
#define TCP_MAC 32u
#define TCP_HS_HEAD 8u /* magic, version, type */
#define TCP_HELLO_BYTES (TCP_HS_HEAD + 8u + TCP_NONCE)
#define TCP_CHALLENGE_BYTES (TCP_HS_HEAD + TCP_NONCE + TCP_MAC)
#define TCP_AUTH_BYTES (TCP_HS_HEAD + TCP_MAC)
#define TCP_ACCEPT_BYTES TCP_HS_HEAD
/* What the proofs cover: label (with its NUL), from, to, both nonces. */
#define TCP_PROOF_LABEL_SERVICE "symm tcp v2 service"
#define TCP_PROOF_LABEL_CALLER "symm tcp v2 caller"
#define TCP_PROOF_MSG_MAX (32u + 8u + 2u * TCP_NONCE)

static inline void tcp_put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint32_t tcp_get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* magic (4), version (2), type (2) */
static inline void tcp_hs_head(uint8_t *p, uint32_t type) {
    tcp_put32(p, TCP_MAGIC);
    p[4] = (uint8_t)TCP_VERSION;
    p[5] = 0;
    p[6] = (uint8_t)type;
    p[7] = 0;
}
/* 0 when p starts a version-2 handshake frame of this type. */
static inline int tcp_hs_check(const uint8_t *p, uint32_t type) {
    return tcp_get32(p) == TCP_MAGIC && p[4] == TCP_VERSION && p[5] == 0 && p[6] == type &&
                   p[7] == 0
               ? 0
               : -1;
}

/* The bytes a proof covers; returns their length. */
static inline size_t tcp_proof_msg(uint8_t *out, const char *label, int32_t from, int32_t to,
                                   const uint8_t *nonce_c, const uint8_t *nonce_s) {
    size_t n = strlen(label) + 1;
    memcpy(out, label, n);
    tcp_put32(out + n, (uint32_t)from);
    tcp_put32(out + n + 4, (uint32_t)to);
    memcpy(out + n + 8, nonce_c, TCP_NONCE);
    memcpy(out + n + 8 + TCP_NONCE, nonce_s, TCP_NONCE);
    return n + 8 + 2 * TCP_NONCE;
}

enum { REQ_PUT = 2, REQ_GET, REQ_AMO, REQ_PUT_SIGNAL, REQ_QUIET };

typedef struct tcp_req {
    uint32_t magic, type;
    uint32_t dtype, op;   /* AMO; sig_op for PUT_SIGNAL                     */
    uint32_t flags, pad;  /* SYMM_TP_NBI: no reply                          */
    uint64_t off, n;      /* heap offset, payload bytes                     */
    uint64_t value, compare, sig_off;
} tcp_req;

typedef struct tcp_rep {
    int32_t status;
    uint32_t pad;
    uint64_t value; /* fetched (AMO) */
} tcp_rep;

#endif /* SYMM_TCP_PROTO_H */

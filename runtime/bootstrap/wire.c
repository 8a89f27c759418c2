/* Wire protocol of the bootstrap: codecs, addresses and socket I/O (wire.h). */
#include "wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "crypto.h"

/* ------------------------------------------------------------------------ */
/* Little-endian fields                                                      */
/* ------------------------------------------------------------------------ */

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint16_t get16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get64(const uint8_t *p) {
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

uint64_t symm__hash64(uint64_t h, const void *data, size_t len) {
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint32_t hash32(const uint8_t *p, size_t len) {
    uint32_t h = 0x811c9dc5u;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x01000193u;
    }
    return h;
}

bool symm__secret_equal(const uint8_t a[SYMM__SECRET_BYTES], const uint8_t b[SYMM__SECRET_BYTES]) {
    return symm__ct_equal(a, b, SYMM__SECRET_BYTES);
}

void symm__key_derive(const uint8_t key[SYMM__SECRET_BYTES], const char *label,
                      uint8_t out[SYMM__SECRET_BYTES]) {
    symm__hmac_sha256(key, SYMM__SECRET_BYTES, label, strlen(label), out);
}

void symm__wire_proof(const uint8_t key[SYMM__SECRET_BYTES], uint32_t role,
                      const uint8_t hello[SYMM__WIRE_HELLO_BYTES],
                      const uint8_t server_nonce[SYMM__NONCE_BYTES],
                      uint8_t out[SYMM__PROOF_BYTES]) {
    uint8_t boot_key[SYMM__SECRET_BYTES];
    symm__key_derive(key, "symm bootstrap v2", boot_key);
    const char *label = role == SYMM__PROOF_SERVER ? "server" : "client";
    symm__hmac m;
    symm__hmac_init(&m, boot_key, sizeof boot_key);
    symm__hmac_update(&m, label, strlen(label) + 1);
    symm__hmac_update(&m, hello, SYMM__WIRE_HELLO_BYTES);
    symm__hmac_update(&m, server_nonce, SYMM__NONCE_BYTES);
    symm__hmac_final(&m, out);
    symm__wipe(boot_key, sizeof boot_key);
}

void symm__hex(char *out, const uint8_t *in, size_t n) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool symm__unhex(uint8_t *out, size_t n, const char *text) {
    if (strlen(text) != 2 * n) return false;
    for (size_t i = 0; i < n; i++) {
        int hi = hexval(text[2 * i]), lo = hexval(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

symm_status symm__random(void *buf, size_t n) {
    uint8_t *p = buf;
    while (n > 0) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            return symm__err_errno(SYMM_ERR_SYSTEM, errno, "getrandom(%zu bytes)", n);
        }
        p += r;
        n -= (size_t)r;
    }
    return SYMM_SUCCESS;
}

int64_t symm__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int symm__poll_one(int fd, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - symm__now_ms();
        if (left < 0) left = 0;
        struct pollfd p = {.fd = fd, .events = events};
        int r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
        if (r > 0) return 1;
        if (r == 0) {
            if (symm__now_ms() >= deadline_ms) return 0;
            continue;
        }
        if (errno != EINTR) return -1;
    }
}

/* ------------------------------------------------------------------------ */
/* Header                                                                    */
/* ------------------------------------------------------------------------ */

const char *symm__wire_type_name(uint32_t type) {
    switch (type) {
    case SYMM__MSG_HELLO: return "HELLO";
    case SYMM__MSG_WELCOME: return "WELCOME";
    case SYMM__MSG_REJECT: return "REJECT";
    case SYMM__MSG_ALLGATHER: return "ALLGATHER";
    case SYMM__MSG_BARRIER: return "BARRIER";
    case SYMM__MSG_BYE: return "BYE";
    case SYMM__MSG_ABORT: return "ABORT";
    case SYMM__MSG_CHALLENGE: return "CHALLENGE";
    case SYMM__MSG_AUTH: return "AUTH";
    default: return "unknown";
    }
}

void symm__wire_encode_header(uint8_t out[SYMM__WIRE_HEADER_BYTES], uint32_t type, uint32_t length,
                              uint32_t seq) {
    put32(out, SYMM__WIRE_MAGIC);
    put16(out + 4, (uint16_t)SYMM__WIRE_VERSION);
    put16(out + 6, (uint16_t)type);
    put32(out + 8, length);
    put32(out + 12, seq);
}

symm_status symm__wire_decode_header(const uint8_t *buf, size_t len, symm__wire_header *out) {
    if (!buf || len < SYMM__WIRE_HEADER_BYTES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: truncated header (%zu of %u bytes)", len,
                         SYMM__WIRE_HEADER_BYTES);
    uint32_t magic = get32(buf);
    if (magic != SYMM__WIRE_MAGIC)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "wire: bad magic 0x%08x (not a symm bootstrap peer, or a corrupted stream)",
                         magic);
    uint32_t version = get16(buf + 4);
    if (version != SYMM__WIRE_VERSION)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "wire: peer speaks protocol version %u, this build speaks %u "
                         "(are different symm versions mixed in one job?)",
                         version, SYMM__WIRE_VERSION);
    uint32_t type = get16(buf + 6), length = get32(buf + 8);
    uint64_t lo = 0, hi = 0;
    switch (type) {
    case SYMM__MSG_HELLO: lo = hi = SYMM__WIRE_HELLO_BYTES; break;
    case SYMM__MSG_CHALLENGE: lo = hi = SYMM__WIRE_CHALLENGE_BYTES; break;
    case SYMM__MSG_AUTH: lo = hi = SYMM__WIRE_AUTH_BYTES; break;
    case SYMM__MSG_WELCOME:
        lo = 4;
        hi = 4 + (uint64_t)SYMM__WIRE_WELCOME_ENTRY_BYTES * SYMM__WIRE_MAX_PES;
        break;
    case SYMM__MSG_REJECT:
    case SYMM__MSG_ABORT: lo = 8; hi = 8 + SYMM__WIRE_MAX_REASON; break;
    case SYMM__MSG_ALLGATHER: lo = 0; hi = SYMM__WIRE_MAX_PAYLOAD; break;
    case SYMM__MSG_BARRIER:
    case SYMM__MSG_BYE: lo = hi = 0; break;
    default: return symm__err(SYMM_ERR_BOOTSTRAP, "wire: unknown message type %u", type);
    }
    if (length < lo || length > hi)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "wire: %s payload of %u bytes is outside [%llu, %llu]",
                         symm__wire_type_name(type), length, (unsigned long long)lo,
                         (unsigned long long)hi);
    out->type = type;
    out->length = length;
    out->seq = get32(buf + 12);
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Payloads                                                                  */
/* ------------------------------------------------------------------------ */

void symm__wire_encode_hello(uint8_t out[SYMM__WIRE_HELLO_BYTES], const symm__wire_hello *h) {
    put32(out, (uint32_t)h->rank);
    put32(out + 4, (uint32_t)h->n_pes);
    put32(out + 8, h->session);
    put32(out + 12, (uint32_t)h->pid);
    put64(out + 16, h->host_id);
    memcpy(out + 24, h->nonce, SYMM__NONCE_BYTES);
}

symm_status symm__wire_parse_hello(const uint8_t *p, size_t len, symm__wire_hello *out) {
    if (!p || len != SYMM__WIRE_HELLO_BYTES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: HELLO of %zu bytes (expected %u)", len,
                         SYMM__WIRE_HELLO_BYTES);
    symm__wire_hello h;
    h.rank = (int32_t)get32(p);
    h.n_pes = (int32_t)get32(p + 4);
    h.session = get32(p + 8);
    h.pid = (int32_t)get32(p + 12);
    h.host_id = get64(p + 16);
    memcpy(h.nonce, p + 24, SYMM__NONCE_BYTES);
    if (h.n_pes < 1 || h.n_pes > SYMM__WIRE_MAX_PES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: HELLO with n_pes %d outside [1, %d]", h.n_pes,
                         SYMM__WIRE_MAX_PES);
    if (h.rank < 0 || h.rank >= h.n_pes)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: HELLO with rank %d outside [0, %d)", h.rank,
                         h.n_pes);
    if (h.pid <= 0) return symm__err(SYMM_ERR_BOOTSTRAP, "wire: HELLO with pid %d", h.pid);
    *out = h;
    return SYMM_SUCCESS;
}

size_t symm__wire_welcome_bytes(int32_t n_pes) {
    return 4 + (size_t)n_pes * SYMM__WIRE_WELCOME_ENTRY_BYTES;
}

void symm__wire_encode_welcome(uint8_t *out, int32_t n_pes, const uint64_t *host_id,
                               const int32_t *pid) {
    put32(out, (uint32_t)n_pes);
    for (int32_t i = 0; i < n_pes; i++) {
        uint8_t *e = out + 4 + (size_t)i * SYMM__WIRE_WELCOME_ENTRY_BYTES;
        put64(e, host_id[i]);
        put32(e + 8, (uint32_t)pid[i]);
    }
}

symm_status symm__wire_welcome_count(const uint8_t *p, size_t len, int32_t *n_pes) {
    if (!p || len < 4) return symm__err(SYMM_ERR_BOOTSTRAP, "wire: WELCOME of %zu bytes", len);
    uint32_t n = get32(p);
    if (n < 1 || n > SYMM__WIRE_MAX_PES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: WELCOME for %u PEs (outside [1, %d])", n,
                         SYMM__WIRE_MAX_PES);
    if (len != symm__wire_welcome_bytes((int32_t)n))
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: WELCOME for %u PEs has %zu bytes (expected %zu)",
                         n, len, symm__wire_welcome_bytes((int32_t)n));
    *n_pes = (int32_t)n;
    return SYMM_SUCCESS;
}

symm_status symm__wire_parse_welcome(const uint8_t *p, size_t len, int32_t n_pes,
                                     uint64_t *host_id, int32_t *pid) {
    int32_t n;
    SYMM_TRY(symm__wire_welcome_count(p, len, &n));
    if (n != n_pes)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: WELCOME for %d PEs, this job has %d", n, n_pes);
    for (int32_t i = 0; i < n; i++) {
        const uint8_t *e = p + 4 + (size_t)i * SYMM__WIRE_WELCOME_ENTRY_BYTES;
        int32_t v = (int32_t)get32(e + 8);
        if (v <= 0) return symm__err(SYMM_ERR_BOOTSTRAP, "wire: WELCOME gives PE %d pid %d", i, v);
    }
    for (int32_t i = 0; i < n; i++) {
        const uint8_t *e = p + 4 + (size_t)i * SYMM__WIRE_WELCOME_ENTRY_BYTES;
        host_id[i] = get64(e);
        pid[i] = (int32_t)get32(e + 8);
    }
    return SYMM_SUCCESS;
}

size_t symm__wire_abort_bytes(const char *reason) {
    size_t n = reason ? strlen(reason) : 0;
    return 8 + (n > SYMM__WIRE_MAX_REASON ? SYMM__WIRE_MAX_REASON : n);
}

void symm__wire_encode_abort(uint8_t *out, int32_t rank, const char *reason) {
    size_t n = symm__wire_abort_bytes(reason) - 8;
    put32(out, (uint32_t)rank);
    put32(out + 4, (uint32_t)n);
    if (n) memcpy(out + 8, reason, n);
}

symm_status symm__wire_parse_abort(const uint8_t *p, size_t len, symm__wire_abort *out) {
    if (!p || len < 8 || len > 8 + SYMM__WIRE_MAX_REASON)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: ABORT/REJECT of %zu bytes", len);
    int32_t rank = (int32_t)get32(p);
    uint32_t n = get32(p + 4);
    if (n != len - 8)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "wire: ABORT/REJECT reason of %u bytes in a %zu-byte payload", n, len);
    if (rank < -1 || rank >= SYMM__WIRE_MAX_PES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: ABORT/REJECT names PE %d", rank);
    out->rank = rank;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = p[8 + i];
        out->reason[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    out->reason[n] = '\0';
    return SYMM_SUCCESS;
}

void symm__wire_encode_fdmsg(uint8_t out[SYMM__FDMSG_BYTES], const symm__wire_fdmsg *m) {
    put32(out, SYMM__FDMSG_MAGIC);
    put32(out + 4, m->session);
    put32(out + 8, (uint32_t)m->rank);
    put32(out + 12, m->seq);
    memcpy(out + 16, m->tag, SYMM__SECRET_BYTES);
}

symm_status symm__wire_parse_fdmsg(const uint8_t *p, size_t len, symm__wire_fdmsg *out) {
    if (!p || len != SYMM__FDMSG_BYTES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: descriptor message of %zu bytes (expected %u)",
                         len, SYMM__FDMSG_BYTES);
    if (get32(p) != SYMM__FDMSG_MAGIC)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: descriptor message with bad magic");
    symm__wire_fdmsg m;
    m.session = get32(p + 4);
    m.rank = (int32_t)get32(p + 8);
    m.seq = get32(p + 12);
    memcpy(m.tag, p + 16, SYMM__SECRET_BYTES);
    if (m.rank < 0 || m.rank >= SYMM__WIRE_MAX_PES)
        return symm__err(SYMM_ERR_BOOTSTRAP, "wire: descriptor message from PE %d", m.rank);
    *out = m;
    return SYMM_SUCCESS;
}

void symm__wire_fdmsg_tag(const uint8_t key[SYMM__SECRET_BYTES], uint32_t session, int32_t from,
                          int32_t to, uint32_t seq, uint8_t out[SYMM__SECRET_BYTES]) {
    uint8_t k[SYMM__SECRET_BYTES], msg[16];
    symm__key_derive(key, "symm descriptor passing v1", k);
    put32(msg, session);
    put32(msg + 4, (uint32_t)from);
    put32(msg + 8, (uint32_t)to);
    put32(msg + 12, seq);
    symm__hmac_sha256(k, sizeof k, msg, sizeof msg, out);
    symm__wipe(k, sizeof k);
}

int symm__wire_take_fdmsg(const struct msghdr *msg, ssize_t n, const symm__fdmsg_expect *want,
                          symm__wire_fdmsg *out, int *fd) {
    int fds[SYMM__FDMSG_MAX_FDS], nfds = 0, extra = 0;
    for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(msg) : NULL; c;
         c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(0))
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int f;
            memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
            if (nfds < SYMM__FDMSG_MAX_FDS) fds[nfds++] = f;
            else if (f >= 0) close(f), extra++; /* more than a control buffer of ours holds */
        }
    }
    symm__wire_fdmsg m;
    const uint8_t *body = msg->msg_iovlen >= 1 ? msg->msg_iov[0].iov_base : NULL;
    bool ok = body && n == (ssize_t)SYMM__FDMSG_BYTES && msg->msg_iov[0].iov_len >= SYMM__FDMSG_BYTES &&
              !(msg->msg_flags & MSG_CTRUNC) && nfds == 1 && extra == 0 &&
              symm__wire_parse_fdmsg(body, SYMM__FDMSG_BYTES, &m) == SYMM_SUCCESS &&
              m.session == want->session && m.rank < want->n_pes && m.rank != want->self_rank &&
              (!want->local_index || want->local_index[m.rank] >= 0);
    if (ok) {
        uint8_t tag[SYMM__SECRET_BYTES];
        symm__wire_fdmsg_tag(want->key, m.session, m.rank, want->self_rank, m.seq, tag);
        ok = symm__ct_equal(tag, m.tag, sizeof tag);
    }
    if (!ok) {
        for (int i = 0; i < nfds; i++)
            if (fds[i] >= 0) close(fds[i]);
        return 0;
    }
    *out = m;
    *fd = fds[0];
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Incremental receiver                                                      */
/* ------------------------------------------------------------------------ */

void symm__wire_rx_reset(symm__wire_rx *rx) {
    free(rx->payload);
    memset(rx, 0, sizeof *rx);
}

void symm__wire_rx_want(symm__wire_rx *rx, uint8_t **buf, size_t *n) {
    if (rx->got < SYMM__WIRE_HEADER_BYTES) {
        *buf = rx->hdr_bytes + rx->got;
        *n = SYMM__WIRE_HEADER_BYTES - rx->got;
    } else {
        size_t off = rx->got - SYMM__WIRE_HEADER_BYTES;
        *buf = rx->payload + off;
        *n = rx->hdr.length - off;
    }
}

symm_status symm__wire_rx_advance(symm__wire_rx *rx, size_t n, bool *complete) {
    *complete = false;
    bool in_header = rx->got < SYMM__WIRE_HEADER_BYTES;
    rx->got += n;
    if (in_header && rx->got == SYMM__WIRE_HEADER_BYTES) {
        SYMM_TRY(symm__wire_decode_header(rx->hdr_bytes, SYMM__WIRE_HEADER_BYTES, &rx->hdr));
        if (rx->limit && rx->hdr.length > rx->limit)
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "wire: a %u-byte %s is over this connection's limit of %u bytes",
                             rx->hdr.length, symm__wire_type_name(rx->hdr.type), rx->limit);
        if (rx->hdr.length > 0) {
            rx->payload = malloc(rx->hdr.length);
            if (!rx->payload)
                return symm__err(SYMM_ERR_OUT_OF_MEMORY, "wire: no memory for a %u-byte %s",
                                 rx->hdr.length, symm__wire_type_name(rx->hdr.type));
        }
    }
    if (rx->got >= SYMM__WIRE_HEADER_BYTES &&
        rx->got == SYMM__WIRE_HEADER_BYTES + (size_t)rx->hdr.length)
        *complete = true;
    return SYMM_SUCCESS;
}

uint8_t *symm__wire_rx_take(symm__wire_rx *rx, symm__wire_header *hdr) {
    uint8_t *p = rx->payload;
    uint32_t limit = rx->limit;
    *hdr = rx->hdr;
    rx->payload = NULL;
    symm__wire_rx_reset(rx);
    rx->limit = limit;
    return p;
}

/* ------------------------------------------------------------------------ */
/* Unique id                                                                 */
/* ------------------------------------------------------------------------ */

#define UID_SECRET_OFF 8
#define UID_ADDR_OFF 40
#define UID_SUM_OFF 124

symm_status symm__wire_encode_uid(uint8_t out[SYMM_UNIQUE_ID_BYTES],
                                  const uint8_t secret[SYMM__SECRET_BYTES], const char *addr) {
    size_t n = strlen(addr);
    if (n < 1 || n > SYMM__UID_ADDR_MAX)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "unique id: address \"%s\" is longer than %u bytes", addr,
                         SYMM__UID_ADDR_MAX);
    memset(out, 0, SYMM_UNIQUE_ID_BYTES);
    put32(out, SYMM__UID_MAGIC);
    put16(out + 4, (uint16_t)SYMM__UID_VERSION);
    put16(out + 6, (uint16_t)n);
    memcpy(out + UID_SECRET_OFF, secret, SYMM__SECRET_BYTES);
    memcpy(out + UID_ADDR_OFF, addr, n);
    put32(out + UID_SUM_OFF, hash32(out, UID_SUM_OFF));
    return SYMM_SUCCESS;
}

symm_status symm__wire_decode_uid(const uint8_t in[SYMM_UNIQUE_ID_BYTES],
                                  uint8_t secret[SYMM__SECRET_BYTES],
                                  char addr[SYMM__UID_ADDR_MAX + 1]) {
    if (get32(in) != SYMM__UID_MAGIC)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "unique id: bad magic (not made by symm_get_unique_id, or not copied whole)");
    if (get16(in + 4) != SYMM__UID_VERSION)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "unique id: version %u, this runtime reads version %u", get16(in + 4),
                         SYMM__UID_VERSION);
    if (get32(in + UID_SUM_OFF) != hash32(in, UID_SUM_OFF))
        return symm__err(SYMM_ERR_INVALID_ARG, "unique id: checksum mismatch (corrupted in transit?)");
    size_t n = get16(in + 6);
    if (n < 1 || n > SYMM__UID_ADDR_MAX)
        return symm__err(SYMM_ERR_INVALID_ARG, "unique id: address length %zu", n);
    for (size_t i = 0; i < SYMM__UID_ADDR_MAX + 1; i++) {
        uint8_t c = in[UID_ADDR_OFF + i];
        bool ok = i < n ? (c > 0x20 && c < 0x7f) : c == 0;
        if (!ok) return symm__err(SYMM_ERR_INVALID_ARG, "unique id: malformed address field");
    }
    memcpy(secret, in + UID_SECRET_OFF, SYMM__SECRET_BYTES);
    memcpy(addr, in + UID_ADDR_OFF, n);
    addr[n] = '\0';
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Addresses                                                                 */
/* ------------------------------------------------------------------------ */

/* unix:@NAME (abstract) or unix:/PATH; text is the whole address. */
static symm_status parse_unix(const char *text, symm__addr *a) {
    const char *name = text + 5;
    size_t n = strlen(name);
    a->kind = SYMM__ADDR_UNIX;
    a->un.sun_family = AF_UNIX;
    if (name[0] == '@') {
        if (n < 2 || n > sizeof a->un.sun_path)
            return symm__err(SYMM_ERR_INVALID_ARG,
                             "bootstrap address \"%s\": abstract name must have 1 to %zu bytes",
                             text, sizeof a->un.sun_path - 1);
        memcpy(a->un.sun_path + 1, name + 1, n - 1); /* sun_path[0] = 0: abstract */
        a->un_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        if (n < 1 || n >= sizeof a->un.sun_path)
            return symm__err(SYMM_ERR_INVALID_ARG,
                             "bootstrap address \"%s\": socket path must have 1 to %zu bytes",
                             text, sizeof a->un.sun_path - 1);
        memcpy(a->un.sun_path, name, n);
        a->un_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    snprintf(a->text, sizeof a->text, "%s", text);
    return SYMM_SUCCESS;
}

/* The host of tcp:HOST:PORT or tcp:[HOST]:PORT into a->host; *port: the
 * port's text, or NULL when there is none. */
static symm_status parse_tcp_host(const char *text, symm__addr *a, const char **port) {
    const char *hp = text + 4;
    size_t hlen;
    *port = NULL;
    if (hp[0] == '[') {
        const char *close = strchr(hp, ']');
        if (!close || close == hp + 1)
            return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address \"%s\": bad [host]", text);
        hlen = (size_t)(close - hp - 1);
        if (hlen >= sizeof a->host)
            return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address \"%s\": host too long", text);
        memcpy(a->host, hp + 1, hlen);
        if (close[1] == ':') *port = close + 2;
        else if (close[1] != '\0')
            return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address \"%s\": junk after ]", text);
    } else {
        const char *colon = strrchr(hp, ':');
        hlen = colon ? (size_t)(colon - hp) : strlen(hp);
        if (colon) *port = colon + 1;
        if (hlen >= sizeof a->host)
            return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address \"%s\": host too long", text);
        memcpy(a->host, hp, hlen);
    }
    if (hlen == 0)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "bootstrap address \"%s\": expected tcp:HOST:PORT", text);
    for (size_t i = 0; i < hlen; i++) {
        unsigned char c = (unsigned char)a->host[i];
        if (c <= 0x20 || c >= 0x7f || c == '[' || c == ']' || c == '/')
            return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address \"%s\": bad host", text);
    }
    return SYMM_SUCCESS;
}

/* tcp:HOST[:PORT] or tcp:[HOST][:PORT]; the text is rewritten canonical. */
static symm_status parse_tcp(const char *text, symm__addr *a) {
    const char *port;
    a->kind = SYMM__ADDR_TCP;
    SYMM_TRY(parse_tcp_host(text, a, &port));
    if (port) {
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(port, &end, 10);
        if (!*port || *end || errno || v > 65535 || port[0] == '-' || port[0] == '+' ||
            port[0] == ' ')
            return symm__err(SYMM_ERR_INVALID_ARG,
                             "bootstrap address \"%s\": port must be 0..65535", text);
        a->port = (uint16_t)v;
    }
    bool v6 = strchr(a->host, ':') != NULL;
    snprintf(a->text, sizeof a->text, "tcp:%s%s%s:%u", v6 ? "[" : "", a->host, v6 ? "]" : "",
             a->port);
    return SYMM_SUCCESS;
}

symm_status symm__addr_parse(const char *text, symm__addr *out) {
    if (!text) return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address is NULL");
    symm__addr a;
    memset(&a, 0, sizeof a);
    size_t tlen = strlen(text);
    if (tlen >= sizeof a.text)
        return symm__err(SYMM_ERR_INVALID_ARG, "bootstrap address is longer than %zu bytes",
                         sizeof a.text - 1);
    if (strncmp(text, "unix:", 5) == 0) {
        SYMM_TRY(parse_unix(text, &a));
    } else if (strncmp(text, "tcp:", 4) == 0) {
        SYMM_TRY(parse_tcp(text, &a));
    } else {
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "bootstrap address \"%s\": expected unix:@NAME, unix:/PATH or tcp:HOST:PORT",
                         text);
    }
    *out = a;
    return SYMM_SUCCESS;
}

static void tcp_tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static symm_status tcp_resolve(const symm__addr *a, bool passive, struct addrinfo **res) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    char port[8];
    snprintf(port, sizeof port, "%u", a->port);
    int rc = getaddrinfo(a->host, port, &hints, res);
    if (rc != 0)
        return symm__err(SYMM_ERR_BOOTSTRAP, "cannot resolve host \"%s\": %s", a->host,
                         rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
    return SYMM_SUCCESS;
}

static symm_status listen_finish(int fd, const symm__addr *a, symm__addr *bound) {
    if (listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        close(fd);
        return symm__err_errno(SYMM_ERR_SYSTEM, e, "listen on %s", a->text);
    }
    if (bound) {
        *bound = *a;
        if (a->kind == SYMM__ADDR_TCP) {
            struct sockaddr_storage ss;
            socklen_t len = sizeof ss;
            if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0) {
                bound->port = ntohs(ss.ss_family == AF_INET6
                                        ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                        : ((struct sockaddr_in *)&ss)->sin_port);
            }
            bool v6 = strchr(bound->host, ':') != NULL;
            snprintf(bound->text, sizeof bound->text, "tcp:%s%s%s:%u", v6 ? "[" : "", bound->host,
                     v6 ? "]" : "", bound->port);
        }
    }
    return SYMM_SUCCESS;
}

static symm_status listen_unix(const symm__addr *a, int *out_fd, symm__addr *bound) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return symm__err_errno(SYMM_ERR_SYSTEM, errno, "socket(AF_UNIX)");
    if (bind(fd, (const struct sockaddr *)&a->un, a->un_len) != 0) {
        int e = errno;
        close(fd);
        return symm__err_errno(SYMM_ERR_BOOTSTRAP, e, "cannot listen on %s%s", a->text,
                               e == EADDRINUSE ? " (in use: another job or a stale socket file?)"
                                               : "");
    }
    SYMM_TRY(listen_finish(fd, a, bound));
    *out_fd = fd;
    return SYMM_SUCCESS;
}

/* Every interface: the dual-stack wildcard first, IPv4 when the host has no
 * IPv6. */
static symm_status listen_any_host(const symm__addr *a, int *out_fd, symm__addr *bound) {
    int one = 1;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0) {
        int zero = 0;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        struct sockaddr_in6 sa6;
        memset(&sa6, 0, sizeof sa6);
        sa6.sin6_family = AF_INET6;
        sa6.sin6_addr = in6addr_any;
        sa6.sin6_port = htons(a->port);
        if (bind(fd, (struct sockaddr *)&sa6, sizeof sa6) == 0) {
            SYMM_TRY(listen_finish(fd, a, bound));
            *out_fd = fd;
            return SYMM_SUCCESS;
        }
        int e = errno;
        close(fd);
        if (e == EADDRINUSE)
            return symm__err_errno(SYMM_ERR_BOOTSTRAP, e,
                                   "cannot listen on port %u of every interface (for %s)",
                                   a->port, a->text);
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return symm__err_errno(SYMM_ERR_SYSTEM, errno, "socket(AF_INET)");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    sa.sin_port = htons(a->port);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        return symm__err_errno(SYMM_ERR_BOOTSTRAP, e,
                               "cannot listen on port %u of every interface (for %s)", a->port,
                               a->text);
    }
    SYMM_TRY(listen_finish(fd, a, bound));
    *out_fd = fd;
    return SYMM_SUCCESS;
}

/* Exactly the host given: the first of its addresses that binds. */
static symm_status listen_host(const symm__addr *a, int *out_fd, symm__addr *bound) {
    int one = 1;
    struct addrinfo *res = NULL;
    SYMM_TRY(tcp_resolve(a, false, &res));
    int err = EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            freeaddrinfo(res);
            SYMM_TRY(listen_finish(fd, a, bound));
            *out_fd = fd;
            return SYMM_SUCCESS;
        }
        err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    return symm__err_errno(SYMM_ERR_BOOTSTRAP, err, "cannot listen on %s", a->text);
}

symm_status symm__addr_listen(const symm__addr *a, bool any_host, int *out_fd, symm__addr *bound) {
    if (a->kind == SYMM__ADDR_UNIX) return listen_unix(a, out_fd, bound);
    if (any_host) return listen_any_host(a, out_fd, bound);
    return listen_host(a, out_fd, bound);
}

/* Non-blocking connect of fd to sa, bounded by deadline_ms; 0 or an errno. */
static int connect_wait(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline_ms) {
    int r;
    do {
        r = connect(fd, sa, len);
    } while (r != 0 && errno == EINTR);
    if (r == 0) return 0;
    if (errno != EINPROGRESS) return errno;
    int p = symm__poll_one(fd, POLLOUT, deadline_ms);
    if (p == 0) return ETIMEDOUT;
    if (p < 0) return errno;
    int err = 0;
    socklen_t elen = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) return errno;
    return err;
}

symm_status symm__addr_connect(const symm__addr *a, int64_t deadline_ms, int *out_fd) {
    if (a->kind == SYMM__ADDR_UNIX) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return symm__err_errno(SYMM_ERR_SYSTEM, errno, "socket(AF_UNIX)");
        int e = connect_wait(fd, (const struct sockaddr *)&a->un, a->un_len, deadline_ms);
        if (e) {
            close(fd);
            return symm__err_errno(SYMM_ERR_BOOTSTRAP, e, "connect to %s", a->text);
        }
        *out_fd = fd;
        return SYMM_SUCCESS;
    }
    if (a->port == 0)
        return symm__err(SYMM_ERR_INVALID_ARG, "cannot connect to %s: no port", a->text);
    struct addrinfo *res = NULL;
    SYMM_TRY(tcp_resolve(a, false, &res));
    int err = EHOSTUNREACH;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                        ai->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        err = connect_wait(fd, ai->ai_addr, ai->ai_addrlen, deadline_ms);
        if (err == 0) {
            freeaddrinfo(res);
            tcp_tune(fd);
            *out_fd = fd;
            return SYMM_SUCCESS;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return symm__err_errno(SYMM_ERR_BOOTSTRAP, err, "connect to %s", a->text);
}

/* ------------------------------------------------------------------------ */
/* Blocking message I/O                                                      */
/* ------------------------------------------------------------------------ */

static symm_status send_iov(int fd, struct iovec *iov, int iovcnt, int64_t deadline_ms,
                            const char *peer, const char *what) {
    while (iovcnt > 0) {
        if (iov->iov_len == 0) {
            iov++;
            iovcnt--;
            continue;
        }
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)iovcnt;
        ssize_t r = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                int p = symm__poll_one(fd, POLLOUT, deadline_ms);
                if (p > 0) continue;
                if (p == 0)
                    return symm__err(SYMM_ERR_TIMEOUT, "timed out sending %s to %s", what, peer);
                return symm__err_errno(SYMM_ERR_SYSTEM, errno, "poll while sending %s to %s",
                                       what, peer);
            }
            if (errno == EPIPE || errno == ECONNRESET)
                return symm__err(SYMM_ERR_PEER_FAILED, "%s closed the connection (sending %s)",
                                 peer, what);
            return symm__err_errno(SYMM_ERR_SYSTEM, errno, "sending %s to %s", what, peer);
        }
        size_t done = (size_t)r;
        while (iovcnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return SYMM_SUCCESS;
}

symm_status symm__wire_send(int fd, uint32_t type, uint32_t seq, const void *payload, size_t len,
                            int64_t deadline_ms, const char *peer) {
    if (len > SYMM__WIRE_MAX_PAYLOAD)
        return symm__err(SYMM_ERR_INVALID_ARG, "a %s of %zu bytes exceeds the %u-byte wire limit",
                         symm__wire_type_name(type), len, SYMM__WIRE_MAX_PAYLOAD);
    uint8_t hdr[SYMM__WIRE_HEADER_BYTES];
    symm__wire_encode_header(hdr, type, (uint32_t)len, seq);
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)payload, len}};
    return send_iov(fd, iov, 2, deadline_ms, peer, symm__wire_type_name(type));
}

symm_status symm__wire_recv(int fd, symm__wire_header *hdr, uint8_t **payload,
                            int64_t deadline_ms, const char *peer) {
    symm__wire_rx rx;
    memset(&rx, 0, sizeof rx);
    for (;;) {
        uint8_t *buf;
        size_t want;
        symm__wire_rx_want(&rx, &buf, &want);
        ssize_t r = recv(fd, buf, want, MSG_DONTWAIT);
        if (r > 0) {
            bool complete;
            symm_status st = symm__wire_rx_advance(&rx, (size_t)r, &complete);
            if (st) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", symm__last_error());
                symm__wire_rx_reset(&rx);
                return symm__err(st, "invalid message from %s: %s", peer, msg);
            }
            if (complete) {
                *payload = symm__wire_rx_take(&rx, hdr);
                return SYMM_SUCCESS;
            }
            continue;
        }
        if (r == 0) {
            symm__wire_rx_reset(&rx);
            return symm__err(SYMM_ERR_PEER_FAILED, "%s closed the connection", peer);
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int p = symm__poll_one(fd, POLLIN, deadline_ms);
            if (p > 0) continue;
            symm__wire_rx_reset(&rx);
            if (p == 0) return symm__err(SYMM_ERR_TIMEOUT, "timed out waiting for %s", peer);
            return symm__err_errno(SYMM_ERR_SYSTEM, errno, "poll on the connection to %s", peer);
        }
        int e = errno;
        symm__wire_rx_reset(&rx);
        if (e == ECONNRESET)
            return symm__err(SYMM_ERR_PEER_FAILED, "%s reset the connection", peer);
        return symm__err_errno(SYMM_ERR_SYSTEM, e, "receiving from %s", peer);
    }
}

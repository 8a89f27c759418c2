/*
 * Wire protocol of the bootstrap: framing, message codecs, the unique-id
 * layout, socket addresses and blocking I/O helpers with deadlines.
 *
 * Shared by the runtime (bootstrap.c, rendezvous.c) and the symmrun launcher,
 * so it depends on libc and error.c only.
 *
 * Every message is a 16-byte header followed by `length` payload bytes. All
 * integers are little-endian on the wire, whatever the host:
 *
 *   offset  size  field
 *   0       4     magic   0x4d4d5953 (the bytes "SYMM")
 *   4       2     version SYMM__WIRE_VERSION; a peer of another version is refused
 *   6       2     type    SYMM__MSG_*
 *   8       4     length  payload bytes, <= SYMM__WIRE_MAX_PAYLOAD and the type's own limit
 *   12      4     seq     collective sequence number (ALLGATHER/BARRIER), else 0
 *
 * Payloads (i32/u32/u64 little-endian):
 *   HELLO     PE -> server: i32 rank, i32 n_pes, u32 session, i32 pid,
 *             u64 host_id, u8 nonce[32] (fresh random)         (56 bytes)
 *   CHALLENGE server -> PE: u8 nonce[32] (fresh random), u8 proof[32] (64 bytes)
 *   AUTH      PE -> server: u8 proof[32]                          (32 bytes)
 *   WELCOME   server -> PE: u32 n_pes, then n_pes x {u64 host_id, i32 pid}
 *   REJECT    server -> PE (handshake refused), same layout as ABORT
 *   ALLGATHER PE -> server: this PE's bytes; server -> PE: n_pes x len, rank order
 *   BARRIER   both ways, empty
 *   BYE       PE -> server: leaving; server -> PE: acknowledged. Empty.
 *   ABORT     both ways: i32 failed rank (-1 unknown), u32 reason length,
 *             reason bytes (<= SYMM__WIRE_MAX_REASON, not NUL-terminated)
 *
 * The handshake (version 2): HELLO, CHALLENGE, AUTH, then WELCOME once every
 * PE has joined. The job key never crosses the socket; each side proves it
 * holds it with an HMAC-SHA-256 over both nonces and the HELLO
 * (symm__wire_proof): the server first (a PE never gives its proof to a
 * server that could not make one), then the PE. Version 1 sent the secret in
 * HELLO; the versions refuse each other (a version-1 HELLO gets a REJECT
 * that names both versions).
 *
 * Decoders never trust a length: the header decoder enforces each type's
 * limit before anything is allocated, and payload parsers check exact sizes.
 * They are the targets of fuzz/fuzz_wire.c and fuzz/fuzz_uid.c.
 */
#ifndef SYMM_RUNTIME_WIRE_H
#define SYMM_RUNTIME_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <symm/symm.h>

#define SYMM__WIRE_MAGIC 0x4d4d5953u
#define SYMM__WIRE_VERSION 2u
#define SYMM__WIRE_HEADER_BYTES 16u
#define SYMM__WIRE_MAX_PAYLOAD (64u << 20)
#define SYMM__WIRE_MAX_PES (1 << 20)
#define SYMM__WIRE_MAX_REASON 1024u
#define SYMM__SECRET_BYTES 32u

#define SYMM__MSG_HELLO 1u
#define SYMM__MSG_WELCOME 2u
#define SYMM__MSG_REJECT 3u
#define SYMM__MSG_ALLGATHER 4u
#define SYMM__MSG_BARRIER 5u
#define SYMM__MSG_BYE 6u
#define SYMM__MSG_ABORT 7u
#define SYMM__MSG_CHALLENGE 8u
#define SYMM__MSG_AUTH 9u
#define SYMM__MSG_TYPE_MAX 9u

#define SYMM__WIRE_HELLO_BYTES 56u
#define SYMM__WIRE_CHALLENGE_BYTES 64u
#define SYMM__WIRE_AUTH_BYTES 32u
#define SYMM__NONCE_BYTES 32u
#define SYMM__PROOF_BYTES 32u
#define SYMM__WIRE_WELCOME_ENTRY_BYTES 12u

/* Name of a message type ("HELLO"), "unknown" otherwise. */
const char *symm__wire_type_name(uint32_t type);

typedef struct symm__wire_header {
    uint32_t type;
    uint32_t length;
    uint32_t seq;
} symm__wire_header;

void symm__wire_encode_header(uint8_t out[SYMM__WIRE_HEADER_BYTES], uint32_t type, uint32_t length,
                              uint32_t seq);
/* Validate magic, version, type and the type's length limit. len < 16 is an
 * error (callers that stream bytes wait for 16 first). */
symm_status symm__wire_decode_header(const uint8_t *buf, size_t len, symm__wire_header *out);

typedef struct symm__wire_hello {
    int32_t rank, n_pes;
    uint32_t session;
    int32_t pid;
    uint64_t host_id;
    uint8_t nonce[SYMM__NONCE_BYTES];
} symm__wire_hello;

void symm__wire_encode_hello(uint8_t out[SYMM__WIRE_HELLO_BYTES], const symm__wire_hello *h);
/* Checks 0 <= rank < n_pes <= SYMM__WIRE_MAX_PES and pid > 0. */
symm_status symm__wire_parse_hello(const uint8_t *p, size_t len, symm__wire_hello *out);

/* The handshake's proofs: HMAC-SHA-256 under the job key's bootstrap key
 * (symm__key_derive(key, "symm bootstrap v2")) of a role label ("server" or
 * "client"), the HELLO payload as sent (its 56 bytes: rank, size, session,
 * pid, host and the PE's nonce) and the server's nonce. */
#define SYMM__PROOF_SERVER 1u
#define SYMM__PROOF_CLIENT 2u
void symm__wire_proof(const uint8_t key[SYMM__SECRET_BYTES], uint32_t role,
                      const uint8_t hello[SYMM__WIRE_HELLO_BYTES],
                      const uint8_t server_nonce[SYMM__NONCE_BYTES],
                      uint8_t out[SYMM__PROOF_BYTES]);

/* WELCOME: payload bytes for n_pes entries; encode into a buffer of that size. */
size_t symm__wire_welcome_bytes(int32_t n_pes);
void symm__wire_encode_welcome(uint8_t *out, int32_t n_pes, const uint64_t *host_id,
                               const int32_t *pid);
/* Validate the structure and read the PE count. */
symm_status symm__wire_welcome_count(const uint8_t *p, size_t len, int32_t *n_pes);
/* Fill host_id[n_pes] and pid[n_pes]; the payload must hold exactly n_pes. */
symm_status symm__wire_parse_welcome(const uint8_t *p, size_t len, int32_t n_pes,
                                     uint64_t *host_id, int32_t *pid);

/* ABORT / REJECT. The reason is cut to SYMM__WIRE_MAX_REASON bytes. */
typedef struct symm__wire_abort {
    int32_t rank;
    char reason[SYMM__WIRE_MAX_REASON + 1]; /* NUL-terminated, unprintables replaced by '?' */
} symm__wire_abort;

size_t symm__wire_abort_bytes(const char *reason);
void symm__wire_encode_abort(uint8_t *out, int32_t rank, const char *reason);
symm_status symm__wire_parse_abort(const uint8_t *p, size_t len, symm__wire_abort *out);

/* Descriptor-passing message between PEs of one host (symm__boot_share_fd):
 * u32 magic 0x464d5953 (the bytes "SYMF"), u32 session, i32 rank (the
 * sender), u32 call number, u8 tag[32]; the descriptor rides along as
 * SCM_RIGHTS. The tag (symm__wire_fdmsg_tag) proves the job key for this
 * sender, receiver, session and call, so the key itself is never sent and a
 * message cannot be replayed to another PE or call. */
#define SYMM__FDMSG_MAGIC 0x464d5953u
#define SYMM__FDMSG_BYTES 48u

typedef struct symm__wire_fdmsg {
    uint32_t session;
    int32_t rank;
    uint32_t seq;
    uint8_t tag[SYMM__SECRET_BYTES];
} symm__wire_fdmsg;

void symm__wire_encode_fdmsg(uint8_t out[SYMM__FDMSG_BYTES], const symm__wire_fdmsg *m);
symm_status symm__wire_parse_fdmsg(const uint8_t *p, size_t len, symm__wire_fdmsg *out);
/* HMAC-SHA-256 under HMAC(key, "symm descriptor passing v1") of session,
 * sender, receiver and call number (4 bytes little-endian each). */
void symm__wire_fdmsg_tag(const uint8_t key[SYMM__SECRET_BYTES], uint32_t session, int32_t from,
                          int32_t to, uint32_t seq, uint8_t out[SYMM__SECRET_BYTES]);

/* Who may pass this PE a descriptor: PEs of its job, session and host. */
typedef struct symm__fdmsg_expect {
    const uint8_t *key; /* the job key, SYMM__SECRET_BYTES */
    uint32_t session;
    int32_t self_rank, n_pes;
    const int32_t *local_index; /* n_pes entries, < 0 for PEs of other hosts; NULL: all local */
} symm__fdmsg_expect;

/* The most descriptors a receiver's control buffer takes (one is expected). */
#define SYMM__FDMSG_MAX_FDS 4

/* Decide on one received descriptor message (recvmsg's msg and return value
 * n; msg_iov[0] holds the body): 1 and *fd when it is exactly one body of a
 * PE that want admits with exactly one descriptor; 0 otherwise. Every
 * descriptor the message carried that is not returned is closed. */
int symm__wire_take_fdmsg(const struct msghdr *msg, ssize_t n, const symm__fdmsg_expect *want,
                          symm__wire_fdmsg *out, int *fd);

/* ---- Incremental receiver (a stream of messages, any split) ------------- */

typedef struct symm__wire_rx {
    uint8_t hdr_bytes[SYMM__WIRE_HEADER_BYTES];
    symm__wire_header hdr;
    uint8_t *payload; /* allocated once the header is valid */
    size_t got;       /* bytes of the current message so far (header included) */
    uint32_t limit;   /* if not 0, a lower payload limit (checked before allocating) */
} symm__wire_rx;

/* Zero-initialised is ready; reset frees a partial message (and clears limit). */
void symm__wire_rx_reset(symm__wire_rx *rx);
/* Where the next bytes go and how many are wanted at most. */
void symm__wire_rx_want(symm__wire_rx *rx, uint8_t **buf, size_t *n);
/* n bytes were written at the place want gave. *complete: a whole message is
 * ready (take it). Errors: the header is invalid, or no memory for the payload. */
symm_status symm__wire_rx_advance(symm__wire_rx *rx, size_t n, bool *complete);
/* Hand over the complete message: *hdr, payload (malloc'd, NULL when empty;
 * the caller frees). The receiver is ready for the next message. */
uint8_t *symm__wire_rx_take(symm__wire_rx *rx, symm__wire_header *hdr);

/* ---- Unique id (symm_unique_id's 128 bytes) ----------------------------- */
/*
 *   offset  size  field
 *   0       4     magic 0x554d5953 (the bytes "SYMU")
 *   4       2     version 1
 *   6       2     address length (1..SYMM__UID_ADDR_MAX)
 *   8       32    job secret
 *   40      84    address text ("tcp:127.0.0.1:40123"), NUL padded
 *   124     4     FNV-1a 32 of bytes [0, 124)
 */
#define SYMM__UID_MAGIC 0x554d5953u
#define SYMM__UID_VERSION 1u
#define SYMM__UID_ADDR_MAX 83u

symm_status symm__wire_encode_uid(uint8_t out[SYMM_UNIQUE_ID_BYTES],
                                  const uint8_t secret[SYMM__SECRET_BYTES], const char *addr);
/* addr receives the NUL-terminated address text (SYMM__UID_ADDR_MAX + 1 bytes). */
symm_status symm__wire_decode_uid(const uint8_t in[SYMM_UNIQUE_ID_BYTES],
                                  uint8_t secret[SYMM__SECRET_BYTES],
                                  char addr[SYMM__UID_ADDR_MAX + 1]);

/* ---- Addresses ----------------------------------------------------------- */

#define SYMM__ADDR_UNIX 1
#define SYMM__ADDR_TCP 2
#define SYMM__ADDR_TEXT_MAX 300

/* "unix:@abstract", "unix:/path", "tcp:host:port", "tcp:[v6addr]:port". */
typedef struct symm__addr {
    int kind;
    char host[256];      /* tcp */
    uint16_t port;       /* tcp; 0 = pick one (listen only) */
    struct sockaddr_un un; /* unix */
    socklen_t un_len;
    char text[SYMM__ADDR_TEXT_MAX];
} symm__addr;

symm_status symm__addr_parse(const char *text, symm__addr *out);
/* Listen (SOCK_CLOEXEC, non-blocking). TCP: on every interface when any_host,
 * else on the address's host; port 0 picks one. *bound (optional) receives
 * the address with the real port. */
symm_status symm__addr_listen(const symm__addr *a, bool any_host, int *fd, symm__addr *bound);
/* One connection attempt (each resolved address in turn), bounded by
 * deadline_ms. Returns a non-blocking SOCK_CLOEXEC socket. */
symm_status symm__addr_connect(const symm__addr *a, int64_t deadline_ms, int *fd);

/* ---- Blocking I/O over non-blocking sockets ------------------------------ */

/* CLOCK_MONOTONIC in milliseconds. */
int64_t symm__now_ms(void);
/* Wait for events on fd until deadline_ms: >0 ready, 0 deadline passed, <0 error (errno). */
int symm__poll_one(int fd, short events, int64_t deadline_ms);

/* Send one message (header + payload), MSG_NOSIGNAL, retrying on EINTR and
 * short writes. `peer` names the other side in error messages. Errors: TIMEOUT,
 * PEER_FAILED (the peer closed), SYSTEM. */
symm_status symm__wire_send(int fd, uint32_t type, uint32_t seq, const void *payload, size_t len,
                            int64_t deadline_ms, const char *peer);
/* Receive one whole message; *payload is malloc'd (NULL when empty). Errors:
 * TIMEOUT, PEER_FAILED (EOF or reset), BOOTSTRAP (invalid message), SYSTEM,
 * OUT_OF_MEMORY. */
symm_status symm__wire_recv(int fd, symm__wire_header *hdr, uint8_t **payload,
                            int64_t deadline_ms, const char *peer);

/* ---- Small helpers ------------------------------------------------------- */

uint64_t symm__hash64(uint64_t h, const void *data, size_t len); /* FNV-1a 64; seed with SYMM__HASH64_INIT */
#define SYMM__HASH64_INIT 0xcbf29ce484222325ull
/* A key for one use of the job key: HMAC-SHA-256(key, label). The handshakes
 * of the bootstrap, descriptor passing and the transports each use their own,
 * so a proof made for one can never be replayed to another. */
void symm__key_derive(const uint8_t key[SYMM__SECRET_BYTES], const char *label,
                      uint8_t out[SYMM__SECRET_BYTES]);
/* Constant-time equality of two secrets. */
bool symm__secret_equal(const uint8_t a[SYMM__SECRET_BYTES], const uint8_t b[SYMM__SECRET_BYTES]);
/* Lower-case hex of n bytes into out (2n + 1 bytes). */
void symm__hex(char *out, const uint8_t *in, size_t n);
/* 2n hex digits -> n bytes; false on anything else. */
bool symm__unhex(uint8_t *out, size_t n, const char *text);
/* getrandom() with EINTR handling. */
symm_status symm__random(void *buf, size_t n);

#endif /* SYMM_RUNTIME_WIRE_H */

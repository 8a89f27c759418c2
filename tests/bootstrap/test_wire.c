/*
 * Wire codec unit tests (runtime/core/wire.c, linked in directly): every
 * message type round-trips; truncated, oversized, wrong-magic, wrong-version
 * and inconsistent inputs are refused with a message; the incremental
 * receiver reassembles any split; unique ids and addresses parse strictly.
 */
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symm_test.h"
#include "bootstrap/wire.h"
#include "internal.h"

#define EXPECT_ERR(call, status)                                                       \
    do {                                                                               \
        symm__err_clear();                                                             \
        symm_status st_ = (call);                                                      \
        if (st_ != (status))                                                           \
            TEST_FAIL_("%s -> %d, expected %d (%s)", #call, st_, (status), symm__last_error()); \
        if (symm__last_error()[0] == '\0') TEST_FAIL_("%s: no message", #call);       \
    } while (0)
#define EXPECT_OK(call)                                                                \
    do {                                                                               \
        symm_status st_ = (call);                                                      \
        if (st_ != SYMM_SUCCESS) TEST_FAIL_("%s -> %d (%s)", #call, st_, symm__last_error()); \
    } while (0)

static void test_header(void) {
    uint8_t h[SYMM__WIRE_HEADER_BYTES];
    symm__wire_header d;
    symm__wire_encode_header(h, SYMM__MSG_ALLGATHER, 1234, 77);
    /* Little-endian on the wire whatever the host. */
    ASSERT_TRUE(memcmp(h, "SYMM", 4) == 0);
    ASSERT_EQ(h[4], SYMM__WIRE_VERSION);
    ASSERT_EQ(h[4], 2);
    ASSERT_EQ(h[8], 1234 & 0xff);
    EXPECT_OK(symm__wire_decode_header(h, sizeof h, &d));
    ASSERT_EQ(d.type, SYMM__MSG_ALLGATHER);
    ASSERT_EQ(d.length, 1234);
    ASSERT_EQ(d.seq, 77);

    for (size_t n = 0; n < SYMM__WIRE_HEADER_BYTES; n++)
        EXPECT_ERR(symm__wire_decode_header(h, n, &d), SYMM_ERR_BOOTSTRAP);
    EXPECT_ERR(symm__wire_decode_header(NULL, 16, &d), SYMM_ERR_BOOTSTRAP);

    uint8_t bad[SYMM__WIRE_HEADER_BYTES];
    memcpy(bad, h, sizeof h);
    bad[0] ^= 1;
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(strstr(symm__last_error(), "magic") != NULL);
    memcpy(bad, h, sizeof h);
    bad[4] = 1; /* version 1 sent the job secret in HELLO */
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(strstr(symm__last_error(), "version 1") != NULL);
    bad[4] = 3;
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(strstr(symm__last_error(), "version") != NULL);
    /* The handshake's messages have exact sizes. */
    symm__wire_encode_header(bad, SYMM__MSG_CHALLENGE, SYMM__WIRE_CHALLENGE_BYTES, 0);
    EXPECT_OK(symm__wire_decode_header(bad, sizeof bad, &d));
    symm__wire_encode_header(bad, SYMM__MSG_CHALLENGE, SYMM__WIRE_CHALLENGE_BYTES - 1, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_AUTH, SYMM__WIRE_AUTH_BYTES, 0);
    EXPECT_OK(symm__wire_decode_header(bad, sizeof bad, &d));
    symm__wire_encode_header(bad, SYMM__MSG_AUTH, SYMM__WIRE_AUTH_BYTES + 1, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);

    /* Unknown types and each type's length limit. */
    symm__wire_encode_header(bad, 0, 0, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_TYPE_MAX + 1, 0, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_ALLGATHER, SYMM__WIRE_MAX_PAYLOAD + 1, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_ALLGATHER, 0xffffffffu, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_ALLGATHER, SYMM__WIRE_MAX_PAYLOAD, 0);
    EXPECT_OK(symm__wire_decode_header(bad, sizeof bad, &d));
    symm__wire_encode_header(bad, SYMM__MSG_HELLO, SYMM__WIRE_HELLO_BYTES + 1, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_BARRIER, 1, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_BYE, 4, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_ABORT, 8 + SYMM__WIRE_MAX_REASON + 1, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_header(bad, SYMM__MSG_WELCOME, 3, 0);
    EXPECT_ERR(symm__wire_decode_header(bad, sizeof bad, &d), SYMM_ERR_BOOTSTRAP);
    for (uint32_t t = 1; t <= SYMM__MSG_TYPE_MAX; t++)
        ASSERT_TRUE(strcmp(symm__wire_type_name(t), "unknown") != 0);
}

static void test_hello(void) {
    symm__wire_hello h = {.rank = 3, .n_pes = 8, .session = 2, .pid = 4242,
                          .host_id = 0x0123456789abcdefull};
    for (int i = 0; i < 32; i++) h.nonce[i] = (uint8_t)(i * 7);
    uint8_t p[SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_hello(p, &h);
    symm__wire_hello d;
    EXPECT_OK(symm__wire_parse_hello(p, sizeof p, &d));
    ASSERT_EQ(d.rank, 3);
    ASSERT_EQ(d.n_pes, 8);
    ASSERT_EQ(d.session, 2);
    ASSERT_EQ(d.pid, 4242);
    ASSERT_U64_EQ(d.host_id, 0x0123456789abcdefull);
    ASSERT_TRUE(memcmp(d.nonce, h.nonce, 32) == 0);
    ASSERT_TRUE(symm__secret_equal(d.nonce, h.nonce));
    d.nonce[31] ^= 0x80;
    ASSERT_TRUE(!symm__secret_equal(d.nonce, h.nonce));

    /* Proofs: each depends on the key, the role, every HELLO byte and the
     * server's nonce. */
    uint8_t key[32], key2[32], sn[32], pr[32], q[32];
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)i, key2[i] = (uint8_t)i, sn[i] = (uint8_t)(100 + i);
    key2[0] ^= 1;
    symm__wire_proof(key, SYMM__PROOF_SERVER, p, sn, pr);
    symm__wire_proof(key, SYMM__PROOF_SERVER, p, sn, q);
    ASSERT_TRUE(memcmp(pr, q, 32) == 0);
    symm__wire_proof(key, SYMM__PROOF_CLIENT, p, sn, q);
    ASSERT_TRUE(memcmp(pr, q, 32) != 0);
    symm__wire_proof(key2, SYMM__PROOF_SERVER, p, sn, q);
    ASSERT_TRUE(memcmp(pr, q, 32) != 0);
    for (size_t i = 0; i < sizeof p; i++) {
        p[i] ^= 1;
        symm__wire_proof(key, SYMM__PROOF_SERVER, p, sn, q);
        ASSERT_TRUE(memcmp(pr, q, 32) != 0);
        p[i] ^= 1;
    }
    sn[31] ^= 1;
    symm__wire_proof(key, SYMM__PROOF_SERVER, p, sn, q);
    ASSERT_TRUE(memcmp(pr, q, 32) != 0);

    EXPECT_ERR(symm__wire_parse_hello(p, sizeof p - 1, &d), SYMM_ERR_BOOTSTRAP);
    EXPECT_ERR(symm__wire_parse_hello(NULL, sizeof p, &d), SYMM_ERR_BOOTSTRAP);
    struct { int32_t rank, n_pes, pid; } bad[] = {
        {8, 8, 1}, {-1, 8, 1}, {0, 0, 1}, {0, -5, 1}, {0, SYMM__WIRE_MAX_PES + 1, 1}, {0, 2, 0},
        {0, 2, -3}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        symm__wire_hello x = h;
        x.rank = bad[i].rank;
        x.n_pes = bad[i].n_pes;
        x.pid = bad[i].pid;
        symm__wire_encode_hello(p, &x);
        EXPECT_ERR(symm__wire_parse_hello(p, sizeof p, &d), SYMM_ERR_BOOTSTRAP);
    }
}

static void test_welcome(void) {
    enum { N = 5 };
    uint64_t host[N] = {1, 1, 2, 2, 0xffffffffffffffffull};
    int32_t pid[N] = {10, 11, 12, 13, 0x7fffffff};
    size_t len = symm__wire_welcome_bytes(N);
    ASSERT_EQ(len, 4 + 12 * N);
    uint8_t p[4 + 12 * N];
    symm__wire_encode_welcome(p, N, host, pid);
    int32_t n;
    EXPECT_OK(symm__wire_welcome_count(p, len, &n));
    ASSERT_EQ(n, N);
    uint64_t h2[N];
    int32_t p2[N];
    EXPECT_OK(symm__wire_parse_welcome(p, len, N, h2, p2));
    for (int i = 0; i < N; i++) {
        ASSERT_U64_EQ(h2[i], host[i]);
        ASSERT_EQ(p2[i], pid[i]);
    }
    EXPECT_ERR(symm__wire_parse_welcome(p, len, N - 1, h2, p2), SYMM_ERR_BOOTSTRAP);
    EXPECT_ERR(symm__wire_welcome_count(p, len - 1, &n), SYMM_ERR_BOOTSTRAP);
    EXPECT_ERR(symm__wire_welcome_count(p, len + 12 - 12 - 3, &n), SYMM_ERR_BOOTSTRAP);
    EXPECT_ERR(symm__wire_welcome_count(p, 3, &n), SYMM_ERR_BOOTSTRAP);
    uint8_t zero[4] = {0};
    EXPECT_ERR(symm__wire_welcome_count(zero, 4, &n), SYMM_ERR_BOOTSTRAP);
    /* A count that would overflow size computations. */
    uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f};
    EXPECT_ERR(symm__wire_welcome_count(huge, 4, &n), SYMM_ERR_BOOTSTRAP);
    /* A pid of 0 is refused. */
    pid[2] = 0;
    symm__wire_encode_welcome(p, N, host, pid);
    EXPECT_ERR(symm__wire_parse_welcome(p, len, N, h2, p2), SYMM_ERR_BOOTSTRAP);
}

static void test_abort(void) {
    uint8_t p[8 + SYMM__WIRE_MAX_REASON];
    symm__wire_abort a;
    symm__wire_encode_abort(p, 7, "PE 7 died");
    size_t len = symm__wire_abort_bytes("PE 7 died");
    ASSERT_EQ(len, 8 + 9);
    EXPECT_OK(symm__wire_parse_abort(p, len, &a));
    ASSERT_EQ(a.rank, 7);
    ASSERT_TRUE(strcmp(a.reason, "PE 7 died") == 0);
    /* Empty reason, unknown rank. */
    symm__wire_encode_abort(p, -1, "");
    EXPECT_OK(symm__wire_parse_abort(p, 8, &a));
    ASSERT_EQ(a.rank, -1);
    ASSERT_EQ(a.reason[0], '\0');
    /* Long reasons are cut to the limit. */
    char longr[3000];
    memset(longr, 'x', sizeof longr - 1);
    longr[sizeof longr - 1] = '\0';
    ASSERT_EQ(symm__wire_abort_bytes(longr), 8 + SYMM__WIRE_MAX_REASON);
    symm__wire_encode_abort(p, 1, longr);
    EXPECT_OK(symm__wire_parse_abort(p, 8 + SYMM__WIRE_MAX_REASON, &a));
    ASSERT_EQ(strlen(a.reason), SYMM__WIRE_MAX_REASON);
    /* Control characters are neutralised. */
    symm__wire_encode_abort(p, 2, "a\033[2Jb\n");
    EXPECT_OK(symm__wire_parse_abort(p, symm__wire_abort_bytes("a\033[2Jb\n"), &a));
    ASSERT_TRUE(strchr(a.reason, '\033') == NULL && strchr(a.reason, '\n') == NULL);
    /* Inconsistent lengths and ranks. */
    symm__wire_encode_abort(p, 7, "PE 7 died");
    EXPECT_ERR(symm__wire_parse_abort(p, len - 1, &a), SYMM_ERR_BOOTSTRAP);
    EXPECT_ERR(symm__wire_parse_abort(p, 7, &a), SYMM_ERR_BOOTSTRAP);
    symm__wire_encode_abort(p, -2, "x");
    EXPECT_ERR(symm__wire_parse_abort(p, 9, &a), SYMM_ERR_BOOTSTRAP);
}

static void test_fdmsg(void) {
    symm__wire_fdmsg m = {.session = 4, .rank = 2, .seq = 9}, d;
    uint8_t key[32];
    memset(key, 0xab, sizeof key);
    symm__wire_fdmsg_tag(key, 4, 2, 0, 9, m.tag);
    /* The tag is not the key, and names sender, receiver, session and call. */
    ASSERT_TRUE(memcmp(m.tag, key, sizeof key) != 0);
    uint8_t other[32];
    symm__wire_fdmsg_tag(key, 4, 2, 1, 9, other);
    ASSERT_TRUE(memcmp(m.tag, other, 32) != 0);
    symm__wire_fdmsg_tag(key, 4, 2, 0, 10, other);
    ASSERT_TRUE(memcmp(m.tag, other, 32) != 0);
    symm__wire_fdmsg_tag(key, 5, 2, 0, 9, other);
    ASSERT_TRUE(memcmp(m.tag, other, 32) != 0);
    symm__wire_fdmsg_tag(key, 4, 3, 0, 9, other);
    ASSERT_TRUE(memcmp(m.tag, other, 32) != 0);
    uint8_t p[SYMM__FDMSG_BYTES];
    symm__wire_encode_fdmsg(p, &m);
    EXPECT_OK(symm__wire_parse_fdmsg(p, sizeof p, &d));
    ASSERT_EQ(d.session, 4);
    ASSERT_EQ(d.rank, 2);
    ASSERT_EQ(d.seq, 9);
    ASSERT_TRUE(symm__secret_equal(d.tag, m.tag));
    EXPECT_ERR(symm__wire_parse_fdmsg(p, sizeof p - 1, &d), SYMM_ERR_BOOTSTRAP);
    p[0] ^= 1;
    EXPECT_ERR(symm__wire_parse_fdmsg(p, sizeof p, &d), SYMM_ERR_BOOTSTRAP);
}

/* Feed a stream of messages to the receiver in pieces of every size. */
static void test_rx(void) {
    uint8_t stream[256];
    size_t len = 0;
    symm__wire_encode_header(stream, SYMM__MSG_BARRIER, 0, 5);
    len += 16;
    symm__wire_encode_header(stream + len, SYMM__MSG_ALLGATHER, 10, 6);
    len += 16;
    memcpy(stream + len, "0123456789", 10);
    len += 10;
    symm__wire_encode_header(stream + len, SYMM__MSG_ABORT, 12, 0);
    len += 16;
    symm__wire_encode_abort(stream + len, 1, "dead");
    len += 12;
    for (size_t piece = 1; piece <= len; piece++) {
        symm__wire_rx rx;
        memset(&rx, 0, sizeof rx);
        size_t off = 0;
        int msgs = 0;
        while (off < len) {
            uint8_t *dst;
            size_t want;
            symm__wire_rx_want(&rx, &dst, &want);
            size_t k = want < piece ? want : piece;
            if (k > len - off) k = len - off;
            memcpy(dst, stream + off, k);
            off += k;
            bool complete;
            EXPECT_OK(symm__wire_rx_advance(&rx, k, &complete));
            if (!complete) continue;
            symm__wire_header h;
            uint8_t *p = symm__wire_rx_take(&rx, &h);
            if (msgs == 0) ASSERT_TRUE(h.type == SYMM__MSG_BARRIER && h.seq == 5 && !p);
            if (msgs == 1) ASSERT_TRUE(h.type == SYMM__MSG_ALLGATHER && p && !memcmp(p, "0123456789", 10));
            if (msgs == 2) {
                symm__wire_abort a;
                ASSERT_EQ(h.type, SYMM__MSG_ABORT);
                EXPECT_OK(symm__wire_parse_abort(p, h.length, &a));
                ASSERT_TRUE(strcmp(a.reason, "dead") == 0);
            }
            free(p);
            msgs++;
        }
        ASSERT_EQ(msgs, 3);
        symm__wire_rx_reset(&rx);
    }
    /* A bad header is reported as soon as it is complete; nothing allocated. */
    symm__wire_rx rx;
    memset(&rx, 0, sizeof rx);
    uint8_t *dst;
    size_t want;
    bool complete;
    symm__wire_rx_want(&rx, &dst, &want);
    symm__wire_encode_header(dst, SYMM__MSG_ALLGATHER, 0xfffffff0u, 0);
    EXPECT_ERR(symm__wire_rx_advance(&rx, want, &complete), SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(rx.payload == NULL);
    symm__wire_rx_reset(&rx);
    /* A receiver's own limit applies before allocation, and survives take. */
    rx.limit = 8;
    symm__wire_rx_want(&rx, &dst, &want);
    symm__wire_encode_header(dst, SYMM__MSG_ALLGATHER, 8, 0);
    EXPECT_OK(symm__wire_rx_advance(&rx, want, &complete));
    symm__wire_rx_want(&rx, &dst, &want);
    ASSERT_EQ(want, 8);
    memset(dst, 1, 8);
    EXPECT_OK(symm__wire_rx_advance(&rx, want, &complete));
    ASSERT_TRUE(complete);
    symm__wire_header h;
    free(symm__wire_rx_take(&rx, &h));
    ASSERT_EQ(rx.limit, 8);
    symm__wire_rx_want(&rx, &dst, &want);
    symm__wire_encode_header(dst, SYMM__MSG_ALLGATHER, 9, 0);
    EXPECT_ERR(symm__wire_rx_advance(&rx, want, &complete), SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(rx.payload == NULL);
    symm__wire_rx_reset(&rx);
}

static void test_socket_io(void) {
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    static uint8_t big[1 << 20];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (uint8_t)(i * 31);
    /* More than the socket buffer: send from a child so both sides progress. */
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[1]);
        symm_status st = symm__wire_send(sv[0], SYMM__MSG_ALLGATHER, 3, big, sizeof big,
                                         symm__now_ms() + 10000, "test peer");
        _exit(st == SYMM_SUCCESS ? 0 : 1);
    }
    close(sv[0]);
    symm__wire_header h;
    uint8_t *p = NULL;
    EXPECT_OK(symm__wire_recv(sv[1], &h, &p, symm__now_ms() + 10000, "test peer"));
    ASSERT_EQ(h.type, SYMM__MSG_ALLGATHER);
    ASSERT_EQ(h.seq, 3);
    ASSERT_EQ(h.length, sizeof big);
    ASSERT_TRUE(memcmp(p, big, sizeof big) == 0);
    free(p);
    int status;
    waitpid(pid, &status, 0);
    ASSERT_EQ(status, 0);
    /* EOF is PEER_FAILED, a silent peer is TIMEOUT. */
    EXPECT_ERR(symm__wire_recv(sv[1], &h, &p, symm__now_ms() + 2000, "test peer"),
               SYMM_ERR_PEER_FAILED);
    close(sv[1]);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
    int64_t t0 = symm__now_ms();
    EXPECT_ERR(symm__wire_recv(sv[1], &h, &p, t0 + 100, "test peer"), SYMM_ERR_TIMEOUT);
    ASSERT_GE(symm__now_ms() - t0, 100);
    ASSERT_TRUE(strstr(symm__last_error(), "test peer") != NULL);
    /* Garbage is refused with BOOTSTRAP. */
    ASSERT_EQ(write(sv[0], "GET / HTTP/1.1\r\n\r\n", 18), 18);
    EXPECT_ERR(symm__wire_recv(sv[1], &h, &p, symm__now_ms() + 1000, "test peer"),
               SYMM_ERR_BOOTSTRAP);
    /* Oversized sends are refused before anything is written. */
    EXPECT_ERR(symm__wire_send(sv[0], SYMM__MSG_ALLGATHER, 0, big, (size_t)SYMM__WIRE_MAX_PAYLOAD + 1,
                               symm__now_ms() + 1000, "test peer"),
               SYMM_ERR_INVALID_ARG);
    /* Writing to a closed peer is PEER_FAILED, not SIGPIPE. */
    close(sv[1]);
    EXPECT_ERR(symm__wire_send(sv[0], SYMM__MSG_BARRIER, 0, NULL, 0, symm__now_ms() + 1000, "test peer"),
               SYMM_ERR_PEER_FAILED);
    close(sv[0]);
}

static void test_uid(void) {
    uint8_t secret[32], s2[32], id[SYMM_UNIQUE_ID_BYTES];
    char addr[SYMM__UID_ADDR_MAX + 1];
    EXPECT_OK(symm__random(secret, sizeof secret));
    EXPECT_OK(symm__wire_encode_uid(id, secret, "tcp:127.0.0.1:40123"));
    EXPECT_OK(symm__wire_decode_uid(id, s2, addr));
    ASSERT_TRUE(memcmp(secret, s2, 32) == 0);
    ASSERT_TRUE(strcmp(addr, "tcp:127.0.0.1:40123") == 0);
    /* Any flipped bit is caught (checksum, magic, version, padding). */
    for (size_t i = 0; i < SYMM_UNIQUE_ID_BYTES; i++) {
        uint8_t bad[SYMM_UNIQUE_ID_BYTES];
        memcpy(bad, id, sizeof bad);
        bad[i] ^= 0x10;
        EXPECT_ERR(symm__wire_decode_uid(bad, s2, addr), SYMM_ERR_INVALID_ARG);
    }
    uint8_t zero[SYMM_UNIQUE_ID_BYTES] = {0};
    EXPECT_ERR(symm__wire_decode_uid(zero, s2, addr), SYMM_ERR_INVALID_ARG);
    char longa[SYMM__UID_ADDR_MAX + 2];
    memset(longa, 'a', sizeof longa - 1);
    longa[sizeof longa - 1] = '\0';
    EXPECT_ERR(symm__wire_encode_uid(id, secret, longa), SYMM_ERR_BOOTSTRAP);
    longa[SYMM__UID_ADDR_MAX] = '\0';
    EXPECT_OK(symm__wire_encode_uid(id, secret, longa));
    EXPECT_OK(symm__wire_decode_uid(id, s2, addr));
    ASSERT_EQ(strlen(addr), SYMM__UID_ADDR_MAX);
}

static void test_addr(void) {
    symm__addr a;
    EXPECT_OK(symm__addr_parse("unix:@symm-test", &a));
    ASSERT_EQ(a.kind, SYMM__ADDR_UNIX);
    ASSERT_EQ(a.un.sun_path[0], '\0');
    EXPECT_OK(symm__addr_parse("unix:/tmp/x.sock", &a));
    ASSERT_EQ(a.un.sun_path[0], '/');
    EXPECT_OK(symm__addr_parse("tcp:node01:29501", &a));
    ASSERT_EQ(a.kind, SYMM__ADDR_TCP);
    ASSERT_TRUE(strcmp(a.host, "node01") == 0);
    ASSERT_EQ(a.port, 29501);
    EXPECT_OK(symm__addr_parse("tcp:[::1]:80", &a));
    ASSERT_TRUE(strcmp(a.host, "::1") == 0);
    ASSERT_TRUE(strcmp(a.text, "tcp:[::1]:80") == 0);
    EXPECT_OK(symm__addr_parse("tcp:10.0.0.1", &a)); /* port 0: listen anywhere */
    ASSERT_EQ(a.port, 0);
    const char *bad[] = {"", "udp:1.2.3.4:5", "tcp:", "tcp::5", "tcp:h:65536", "tcp:h:-1",
                         "tcp:h:1x", "tcp:[::1", "tcp:[]:5", "tcp:[::1]x", "unix:", "unix:@",
                         "tcp:a b:1", "tcp:h:", "tcp:h: 1",
                         ("unix:@0123456789012345678901234567890123456789012345678901234567890"
                          "123456789012345678901234567890123456789012345678")};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT_ERR(symm__addr_parse(bad[i], &a), SYMM_ERR_INVALID_ARG);
    /* A bracketed host longer than the host buffer (docs/BAD-INPUT.md: the
     * bracket branch copied it without a length check). The canary around
     * the struct catches the overflow without a sanitizer. */
    {
        struct {
            symm__addr a;
            unsigned char canary[64];
        } guarded;
        memset(guarded.canary, 0x5a, sizeof guarded.canary);
        char longb[SYMM__ADDR_TEXT_MAX];
        size_t hl = sizeof a.host + 20; /* 276 host bytes, text still < ADDR_TEXT_MAX */
        memcpy(longb, "tcp:[", 5);
        memset(longb + 5, 'h', hl);
        memcpy(longb + 5 + hl, "]:1", 4);
        ASSERT_TRUE(strlen(longb) < SYMM__ADDR_TEXT_MAX);
        EXPECT_ERR(symm__addr_parse(longb, &guarded.a), SYMM_ERR_INVALID_ARG);
        ASSERT_TRUE(strstr(symm__last_error(), "host too long") != NULL);
        for (size_t i = 0; i < sizeof guarded.canary; i++) ASSERT_EQ(guarded.canary[i], 0x5a);
        /* The longest host that fits is accepted, bracketed or not. */
        longb[5 + sizeof a.host - 1] = ']';
        longb[5 + sizeof a.host] = '\0';
        memset(longb + 5, 'h', sizeof a.host - 1);
        EXPECT_OK(symm__addr_parse(longb, &guarded.a));
        ASSERT_EQ(strlen(guarded.a.host), sizeof a.host - 1);
    }

    /* Listen on an ephemeral port and connect to it; abstract names too. */
    int lfd, cfd;
    symm__addr bound;
    EXPECT_OK(symm__addr_parse("tcp:127.0.0.1:0", &a));
    EXPECT_OK(symm__addr_listen(&a, false, &lfd, &bound));
    ASSERT_NE(bound.port, 0);
    EXPECT_OK(symm__addr_connect(&bound, symm__now_ms() + 2000, &cfd));
    close(cfd);
    close(lfd);
    /* Refused connections are reported with the address. */
    EXPECT_ERR(symm__addr_connect(&bound, symm__now_ms() + 2000, &cfd), SYMM_ERR_BOOTSTRAP);
    ASSERT_TRUE(strstr(symm__last_error(), bound.text) != NULL);
    char name[64];
    snprintf(name, sizeof name, "unix:@symm-test-wire-%d", (int)getpid());
    EXPECT_OK(symm__addr_parse(name, &a));
    EXPECT_OK(symm__addr_listen(&a, false, &lfd, NULL));
    int lfd2;
    EXPECT_ERR(symm__addr_listen(&a, false, &lfd2, NULL), SYMM_ERR_BOOTSTRAP);
    EXPECT_OK(symm__addr_connect(&a, symm__now_ms() + 2000, &cfd));
    close(cfd);
    close(lfd);
}

static void test_hex(void) {
    uint8_t in[4] = {0x00, 0xab, 0x10, 0xff}, out[4];
    char text[9];
    symm__hex(text, in, 4);
    ASSERT_TRUE(strcmp(text, "00ab10ff") == 0);
    ASSERT_TRUE(symm__unhex(out, 4, "00AB10ff"));
    ASSERT_TRUE(memcmp(in, out, 4) == 0);
    ASSERT_TRUE(!symm__unhex(out, 4, "00ab10f"));
    ASSERT_TRUE(!symm__unhex(out, 4, "00ab10fg"));
    ASSERT_TRUE(!symm__unhex(out, 4, "00ab10ff00"));
}

int main(void) {
    test_header();
    test_hello();
    test_welcome();
    test_abort();
    test_fdmsg();
    test_rx();
    test_socket_io();
    test_uid();
    test_addr();
    test_hex();
    printf("test_wire: ok\n");
    return 0;
}

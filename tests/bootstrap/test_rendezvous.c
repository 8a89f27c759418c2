/*
 * Rendezvous server tests (runtime/core/rendezvous.c on its thread), driven
 * by raw wire clients: job formation, the handshake (the server's proof,
 * a wrong proof, no proof, a version-1 HELLO), duplicate and
 * out-of-range ranks, allgather/barrier, mismatches, disconnect -> ABORT,
 * BYE, sessions, HELLO timeout and the bounded stop.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "symm_test.h"
#include "internal.h"
#include "bootstrap/rendezvous.h"
#include "bootstrap/wire.h"

#define N 3
static uint8_t secret[SYMM__SECRET_BYTES];
static symm__addr addr;

#define OK(call)                                                                        \
    do {                                                                                \
        symm_status st_ = (call);                                                       \
        if (st_ != SYMM_SUCCESS) TEST_FAIL_("%s -> %d (%s)", #call, st_, symm__last_error()); \
    } while (0)

static int cl_connect(void) {
    int fd;
    OK(symm__addr_connect(&addr, symm__now_ms() + 5000, &fd));
    return fd;
}

static uint8_t *cl_expect(int fd, uint32_t type, symm__wire_header *h);

/* The PE's side of the handshake: HELLO; the CHALLENGE must prove the job's
 * key; AUTH with a proof made with key (the job's, or a wrong one). */
static void cl_send_hello(int fd, int32_t rank, int32_t n, uint32_t session, const uint8_t *key) {
    symm__wire_hello h = {.rank = rank, .n_pes = n, .session = session, .pid = 1000 + rank,
                          .host_id = 77 + (uint64_t)rank};
    OK(symm__random(h.nonce, sizeof h.nonce));
    uint8_t p[SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_hello(p, &h);
    OK(symm__wire_send(fd, SYMM__MSG_HELLO, 0, p, sizeof p, symm__now_ms() + 5000, "server"));
    symm__wire_header hd;
    uint8_t *c = cl_expect(fd, SYMM__MSG_CHALLENGE, &hd);
    ASSERT_EQ(hd.length, SYMM__WIRE_CHALLENGE_BYTES);
    uint8_t want[SYMM__PROOF_BYTES], proof[SYMM__PROOF_BYTES];
    symm__wire_proof(secret, SYMM__PROOF_SERVER, p, c, want);
    ASSERT_TRUE(memcmp(c + SYMM__NONCE_BYTES, want, sizeof want) == 0);
    symm__wire_proof(key, SYMM__PROOF_CLIENT, p, c, proof);
    free(c);
    OK(symm__wire_send(fd, SYMM__MSG_AUTH, 0, proof, sizeof proof, symm__now_ms() + 5000,
                       "server"));
}

/* Receive one message of the given type; returns its payload (caller frees). */
static uint8_t *cl_expect(int fd, uint32_t type, symm__wire_header *h) {
    uint8_t *p = NULL;
    OK(symm__wire_recv(fd, h, &p, symm__now_ms() + 5000, "server"));
    if (h->type != type) {
        symm__wire_abort a = {0};
        if (h->type == SYMM__MSG_ABORT || h->type == SYMM__MSG_REJECT)
            symm__wire_parse_abort(p, h->length, &a);
        TEST_FAIL_("got %s (%s), expected %s", symm__wire_type_name(h->type), a.reason,
                   symm__wire_type_name(type));
    }
    return p;
}

static void cl_expect_reason(int fd, uint32_t type, int32_t rank, const char *needle) {
    symm__wire_header h;
    uint8_t *p = cl_expect(fd, type, &h);
    symm__wire_abort a;
    OK(symm__wire_parse_abort(p, h.length, &a));
    free(p);
    if (rank != -2) ASSERT_EQ(a.rank, rank);
    if (!strstr(a.reason, needle)) TEST_FAIL_("reason \"%s\" lacks \"%s\"", a.reason, needle);
}

static void cl_expect_eof(int fd) {
    symm__wire_header h;
    uint8_t *p = NULL;
    symm__err_clear();
    symm_status st = symm__wire_recv(fd, &h, &p, symm__now_ms() + 5000, "server");
    free(p);
    ASSERT_EQ(st, SYMM_ERR_PEER_FAILED);
}

/* N clients join a session; fds[] receives their sockets. */
static void form(uint32_t session, int *fds) {
    for (int r = N - 1; r >= 0; r--) { /* any order */
        fds[r] = cl_connect();
        cl_send_hello(fds[r], r, N, session, secret);
    }
    for (int r = 0; r < N; r++) {
        symm__wire_header h;
        uint8_t *p = cl_expect(fds[r], SYMM__MSG_WELCOME, &h);
        uint64_t host[N];
        int32_t pid[N];
        OK(symm__wire_parse_welcome(p, h.length, N, host, pid));
        for (int i = 0; i < N; i++) {
            ASSERT_U64_EQ(host[i], 77 + (uint64_t)i);
            ASSERT_EQ(pid[i], 1000 + i);
        }
        free(p);
    }
}

static void bye_all(int *fds) {
    for (int r = 0; r < N; r++)
        OK(symm__wire_send(fds[r], SYMM__MSG_BYE, 0, NULL, 0, symm__now_ms() + 5000, "server"));
    for (int r = 0; r < N; r++) {
        symm__wire_header h;
        free(cl_expect(fds[r], SYMM__MSG_BYE, &h));
        cl_expect_eof(fds[r]);
        close(fds[r]);
    }
}

static void barrier(int *fds, uint32_t seq) {
    for (int r = 0; r < N; r++)
        OK(symm__wire_send(fds[r], SYMM__MSG_BARRIER, seq, NULL, 0, symm__now_ms() + 5000, "server"));
    for (int r = 0; r < N; r++) {
        symm__wire_header h;
        free(cl_expect(fds[r], SYMM__MSG_BARRIER, &h));
        ASSERT_EQ(h.seq, seq);
    }
}

static symm__rdv_thread *start_server(uint32_t hello_timeout_ms) {
    char text[64];
    snprintf(text, sizeof text, "unix:@symm-test-rdv-%d", (int)getpid());
    OK(symm__addr_parse(text, &addr));
    int lfd;
    OK(symm__addr_listen(&addr, false, &lfd, NULL));
    symm__rdv_config c = {.listen_fd = lfd, .addr_text = addr.text, .log_prefix = "test rdv",
                          .n_pes = N, .hello_timeout_ms = hello_timeout_ms};
    memcpy(c.secret, secret, sizeof secret);
    symm__rdv *r;
    OK(symm__rdv_create(&c, &r));
    symm__rdv_thread *t;
    OK(symm__rdv_thread_start(r, &t));
    return t;
}

static void test_formation_and_collectives(void) {
    int fds[N];
    form(0, fds);
    /* allgather: rank-ordered concatenation, several sizes */
    uint32_t seq = 1;
    size_t sizes[] = {0, 1, 8, 100000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++, seq++) {
        size_t len = sizes[k];
        uint8_t *mine = malloc(len + 1);
        for (int r = 0; r < N; r++) {
            for (size_t i = 0; i < len; i++) mine[i] = (uint8_t)(r * 31 + i);
            OK(symm__wire_send(fds[r], SYMM__MSG_ALLGATHER, seq, mine, len, symm__now_ms() + 5000,
                               "server"));
        }
        for (int r = 0; r < N; r++) {
            symm__wire_header h;
            uint8_t *p = cl_expect(fds[r], SYMM__MSG_ALLGATHER, &h);
            ASSERT_EQ(h.length, len * N);
            ASSERT_EQ(h.seq, seq);
            for (int q = 0; q < N; q++)
                for (size_t i = 0; i < len; i++) ASSERT_EQ(p[q * len + i], (uint8_t)(q * 31 + i));
            free(p);
        }
        free(mine);
    }
    barrier(fds, seq++);

    /* Intruders are refused and the job goes on. */
    uint8_t wrong[SYMM__SECRET_BYTES];
    memcpy(wrong, secret, sizeof wrong);
    wrong[5] ^= 1;
    int x = cl_connect();
    cl_send_hello(x, 1, N, 0, wrong);
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "secret");
    close(x);
    x = cl_connect();
    cl_send_hello(x, 1, N, 0, secret);
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "duplicate rank");
    close(x);
    x = cl_connect();
    cl_send_hello(x, 1, N + 1, 0, secret);
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "PEs");
    close(x);
    x = cl_connect();
    symm__wire_hello h = {.rank = N, .n_pes = N, .pid = 5};
    uint8_t hp[SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_hello(hp, &h);
    OK(symm__wire_send(x, SYMM__MSG_HELLO, 0, hp, sizeof hp, symm__now_ms() + 5000, "server"));
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "rank");
    close(x);
    /* Anything but AUTH after the CHALLENGE is refused. */
    x = cl_connect();
    h = (symm__wire_hello){.rank = 2, .n_pes = N, .pid = 6};
    symm__wire_encode_hello(hp, &h);
    OK(symm__wire_send(x, SYMM__MSG_HELLO, 0, hp, sizeof hp, symm__now_ms() + 5000, "server"));
    symm__wire_header ch;
    free(cl_expect(x, SYMM__MSG_CHALLENGE, &ch));
    OK(symm__wire_send(x, SYMM__MSG_BARRIER, 0, NULL, 0, symm__now_ms() + 5000, "server"));
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "AUTH");
    close(x);
    /* A version-1 HELLO (the secret in clear, as old builds sent it) is
     * refused, naming both versions; its secret admits nobody. */
    x = cl_connect();
    uint8_t v1[SYMM__WIRE_HEADER_BYTES + SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_header(v1, SYMM__MSG_HELLO, SYMM__WIRE_HELLO_BYTES, 0);
    v1[4] = 1; /* version 1 */
    h = (symm__wire_hello){.rank = 2, .n_pes = N, .pid = 7};
    memcpy(h.nonce, secret, sizeof secret); /* where version 1 carried the secret */
    symm__wire_encode_hello(v1 + SYMM__WIRE_HEADER_BYTES, &h);
    ASSERT_EQ(write(x, v1, sizeof v1), (ssize_t)sizeof v1);
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "version 1");
    close(x);
    x = cl_connect();
    OK(symm__wire_send(x, SYMM__MSG_BARRIER, 0, NULL, 0, symm__now_ms() + 5000, "server"));
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "HELLO");
    close(x);
    /* A stranger announcing a large message is dropped before any allocation. */
    x = cl_connect();
    uint8_t hdr[SYMM__WIRE_HEADER_BYTES];
    symm__wire_encode_header(hdr, SYMM__MSG_ALLGATHER, SYMM__WIRE_MAX_PAYLOAD, 0);
    ASSERT_EQ(write(x, hdr, sizeof hdr), (ssize_t)sizeof hdr);
    cl_expect_eof(x);
    close(x);
    x = cl_connect();
    ASSERT_EQ(write(x, "garbage garbage garbage", 23), 23);
    cl_expect_eof(x);
    close(x);
    barrier(fds, seq++);
    bye_all(fds);

    /* An ended session refuses late joiners. */
    x = cl_connect();
    cl_send_hello(x, 0, N, 0, secret);
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "ended");
    close(x);
}

static void test_disconnect_aborts(void) {
    int fds[N];
    form(1, fds);
    barrier(fds, 1);
    /* PE 0 waits in a barrier; PE 2 dies. */
    OK(symm__wire_send(fds[0], SYMM__MSG_BARRIER, 2, NULL, 0, symm__now_ms() + 5000, "server"));
    close(fds[2]);
    cl_expect_reason(fds[0], SYMM__MSG_ABORT, 2, "disconnected");
    cl_expect_reason(fds[1], SYMM__MSG_ABORT, 2, "disconnected");
    /* Later collectives get the same ABORT; BYE is still acknowledged. */
    OK(symm__wire_send(fds[1], SYMM__MSG_BARRIER, 2, NULL, 0, symm__now_ms() + 5000, "server"));
    cl_expect_reason(fds[1], SYMM__MSG_ABORT, 2, "disconnected");
    OK(symm__wire_send(fds[1], SYMM__MSG_BYE, 0, NULL, 0, symm__now_ms() + 5000, "server"));
    symm__wire_header h;
    free(cl_expect(fds[1], SYMM__MSG_BYE, &h));
    close(fds[0]);
    close(fds[1]);
    int x = cl_connect();
    cl_send_hello(x, 2, N, 1, secret);
    cl_expect_reason(x, SYMM__MSG_REJECT, -1, "aborted");
    close(x);
}

static void test_mismatch_and_client_abort(void) {
    int fds[N];
    form(2, fds);
    OK(symm__wire_send(fds[0], SYMM__MSG_BARRIER, 1, NULL, 0, symm__now_ms() + 5000, "server"));
    OK(symm__wire_send(fds[1], SYMM__MSG_ALLGATHER, 1, "abcd", 4, symm__now_ms() + 5000, "server"));
    /* Named: whichever of PE 0 and PE 1 the server heard second (-2: any). */
    for (int r = 0; r < N; r++) cl_expect_reason(fds[r], SYMM__MSG_ABORT, -2, "mismatch");
    for (int r = 0; r < N; r++) close(fds[r]);

    form(3, fds);
    uint8_t p[8 + 64];
    symm__wire_encode_abort(p, 1, "out of patience");
    OK(symm__wire_send(fds[1], SYMM__MSG_ABORT, 0, p, symm__wire_abort_bytes("out of patience"),
                       symm__now_ms() + 5000, "server"));
    cl_expect_reason(fds[0], SYMM__MSG_ABORT, 1, "out of patience");
    cl_expect_reason(fds[2], SYMM__MSG_ABORT, 1, "out of patience");
    for (int r = 0; r < N; r++) close(fds[r]);

    /* Over the allgather limit (len x n_pes > 64 MiB): the session aborts. */
    form(4, fds);
    size_t len = SYMM__WIRE_MAX_PAYLOAD / N + 1;
    uint8_t *big = calloc(1, len);
    /* Refused from its header on: the rest of the send may fail. */
    symm__wire_send(fds[0], SYMM__MSG_ALLGATHER, 1, big, len, symm__now_ms() + 10000, "server");
    free(big);
    cl_expect_reason(fds[1], SYMM__MSG_ABORT, 0, "limit");
    for (int r = 0; r < N; r++) close(fds[r]);

    /* A PE leaving while others wait in a collective aborts it too. */
    form(5, fds);
    OK(symm__wire_send(fds[0], SYMM__MSG_BARRIER, 1, NULL, 0, symm__now_ms() + 5000, "server"));
    OK(symm__wire_send(fds[1], SYMM__MSG_BYE, 0, NULL, 0, symm__now_ms() + 5000, "server"));
    cl_expect_reason(fds[0], SYMM__MSG_ABORT, 1, "left");
    for (int r = 0; r < N; r++) close(fds[r]);
}

static void test_concurrent_sessions(void) {
    int a[N], b[N];
    form(10, a);
    form(11, b);
    barrier(b, 1);
    barrier(a, 1);
    /* Interleaved halves of two barriers. */
    for (int r = 0; r < N; r++)
        OK(symm__wire_send(a[r], SYMM__MSG_BARRIER, 2, NULL, 0, symm__now_ms() + 5000, "server"));
    barrier(b, 2);
    for (int r = 0; r < N; r++) {
        symm__wire_header h;
        free(cl_expect(a[r], SYMM__MSG_BARRIER, &h));
    }
    bye_all(a);
    barrier(b, 3);
    bye_all(b);
}

static void test_hello_timeout(void) {
    int x = cl_connect();
    int64_t t0 = symm__now_ms();
    cl_expect_eof(x); /* the server drops a silent connection */
    ASSERT_LT(symm__now_ms() - t0, 4000);
    close(x);
    /* ... and one that says HELLO but never proves the key. */
    x = cl_connect();
    symm__wire_hello h = {.rank = 0, .n_pes = N, .session = 50, .pid = 8};
    uint8_t hp[SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_hello(hp, &h);
    t0 = symm__now_ms();
    OK(symm__wire_send(x, SYMM__MSG_HELLO, 0, hp, sizeof hp, symm__now_ms() + 5000, "server"));
    symm__wire_header ch;
    free(cl_expect(x, SYMM__MSG_CHALLENGE, &ch));
    cl_expect_eof(x);
    ASSERT_LT(symm__now_ms() - t0, 4000);
    close(x);
}

typedef struct {
    symm__rdv_thread *t;
    uint32_t timeout;
    int64_t done_at;
} stop_arg;

static void *stopper(void *p) {
    stop_arg *s = p;
    symm__rdv_thread_stop(s->t, s->timeout);
    s->done_at = symm__now_ms();
    return NULL;
}

static void test_stop_waits_for_bye(void) {
    symm__rdv_thread *t = start_server(60000);
    int fds[N];
    form(0, fds);
    /* A PE of a session that has not formed yet is dropped at stop. */
    int y = cl_connect();
    cl_send_hello(y, 0, N, 1, secret);
    stop_arg s = {t, 10000, 0};
    pthread_t th;
    pthread_create(&th, NULL, stopper, &s);
    cl_expect_eof(y);
    close(y);
    barrier(fds, 1); /* a started session is still served */
    struct timespec ts = {0, 200 * 1000000};
    nanosleep(&ts, NULL);
    ASSERT_EQ(s.done_at, 0);
    int64_t bye_at = symm__now_ms();
    bye_all(fds);
    pthread_join(th, NULL);
    ASSERT_GE(s.done_at, bye_at);
    ASSERT_LT(s.done_at - bye_at, 2000);
    /* The address is free again. */
    int lfd;
    OK(symm__addr_listen(&addr, false, &lfd, NULL));
    close(lfd);

    /* A PE that never leaves: stop gives up after its timeout. */
    t = start_server(60000);
    form(0, fds);
    s = (stop_arg){t, 300, 0};
    int64_t t0 = symm__now_ms();
    pthread_create(&th, NULL, stopper, &s);
    pthread_join(th, NULL);
    ASSERT_GE(s.done_at - t0, 300);
    ASSERT_LT(s.done_at - t0, 3000);
    for (int r = 0; r < N; r++) {
        cl_expect_eof(fds[r]);
        close(fds[r]);
    }
}

int main(void) {
    OK(symm__random(secret, sizeof secret));
    symm__rdv_thread *t = start_server(500);
    test_formation_and_collectives();
    test_disconnect_aborts();
    test_mismatch_and_client_abort();
    test_concurrent_sessions();
    test_hello_timeout();
    symm__rdv_thread_stop(t, 5000);
    test_stop_waits_for_bye();
    printf("test_rendezvous: ok\n");
    return 0;
}

/*
 * The proxy ring in one process: producer threads running the producer code
 * of include/symm/symm_device_ring.h against the engine of runtime/proxy/
 * (its thread, or its drain loop called here), with a fake executor that
 * records what it runs. Linked against the runtime's objects.
 *
 *   test_proxy_ring CASE
 *
 * format   encode/decode of every field, the handle and header checks, a
 *          producer of another format version refused
 * laps     one producer, a 4-slot ring, 200k requests: every lap flag flip,
 *          nothing lost, duplicated or reordered
 * many     8 producers x 10000 requests on a 2-slot ring (back-pressure) and a slow consumer:
 *          each ring runs its requests in ticket order, each producer's in
 *          its own order, each exactly once; a wait returns only after its
 *          request ran
 * rings    4 rings, 2 producers each: per-ring order, rings independent
 * pending  requests the executor issues non-blocking do not complete before
 *          the flush; QUIET flushes; the host-side quiet
 * errors   a failing request: its ticket and later ones report it, earlier
 *          ones do not; a bad slot (wrong ticket tag) stops the ring
 * stop     stop ends a producer waiting for credit and one waiting for a
 *          request that was claimed but never written; requests written
 *          before the stop still run
 * failed   the executor's health check reports a dead peer: the fail word is
 *          set and every wait ends with PEER_FAILED, soon
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy.h"
#include "symm_test.h"

/* The loader answers these in applications; this test links the runtime's
 * objects directly. */
const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the fake executor ----
 * A request names its producer in pe and its sequence number in off; the
 * executor logs (ring, ticket, producer, seq) in run order and marks the
 * request done. */

#define MAX_PRODUCERS 16
#define MAX_SEQ 200000

typedef struct fake {
    uint8_t *done[MAX_PRODUCERS];               /* [MAX_SEQ]: 1 once run               */
    uint8_t *flushed[MAX_PRODUCERS];            /* [MAX_SEQ]: 1 once flushed            */
    int64_t last_seq[MAX_PRODUCERS];            /* per producer: order check            */
    uint64_t runs, flushes;
    uint32_t delay_every;                       /* slow consumer: a nap every N requests */
    bool pend_puts;                             /* PUT is non-blocking until flush      */
    uint64_t fail_seq;                          /* a request (producer 0) that fails     */
    bool fail_on;
    const uint32_t *wake_watch;                 /* must stay 0 until a flush ran        */
    atomic_int check_status;                    /* what the health check returns         */
    /* non-blocking requests since the last flush */
    int pend_p[4096];
    int64_t pend_s[4096];
    uint64_t pend_tag[4096];
    int n_pend;
    const symm_ring_header *hdr; /* when set: no pending request may complete before its flush */
    char err[256];
} fake;

static fake F;

static void fake_reset(void) {
    for (int p = 0; p < MAX_PRODUCERS; p++) {
        free(F.done[p]);
        free(F.flushed[p]);
    }
    memset(&F, 0, sizeof F);
    for (int p = 0; p < MAX_PRODUCERS; p++) {
        F.done[p] = calloc(MAX_SEQ, 1);
        F.flushed[p] = calloc(MAX_SEQ, 1);
        ASSERT_TRUE(F.done[p] && F.flushed[p]);
        F.last_seq[p] = -1;
    }
}

static symm_status fake_run(void *arg, const symm_ring_req *q, bool *pending) {
    (void)arg;
    if (q->op == SYMM_RING_OP_FENCE) return SYMM_SUCCESS;
    int p = q->pe;
    int64_t s = (int64_t)q->off;
    if (p < 0 || p >= MAX_PRODUCERS || s < 0 || s >= MAX_SEQ)
        TEST_FAIL_("a request names producer %d seq %lld", p, (long long)s);
    if (__atomic_load_n(&F.done[p][s], __ATOMIC_RELAXED))
        TEST_FAIL_("producer %d request %lld ran twice", p, (long long)s);
    if (s <= F.last_seq[p])
        TEST_FAIL_("producer %d: request %lld ran after %lld", p, (long long)s,
                   (long long)F.last_seq[p]);
    /* Each producer's payload is checked: value = seq * 3 + producer. */
    if (q->value != (uint64_t)s * 3u + (uint64_t)p)
        TEST_FAIL_("producer %d request %lld carries value %llu", p, (long long)s,
                   (unsigned long long)q->value);
    F.last_seq[p] = s;
    F.runs++;
    if (F.delay_every && F.runs % F.delay_every == 0) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    if (F.fail_on && p == 0 && (uint64_t)s == F.fail_seq) {
        __atomic_store_n(&F.done[p][s], 1, __ATOMIC_RELEASE);
        return symm__err(SYMM_ERR_OUT_OF_BOUNDS, "fake: request %lld fails on purpose",
                         (long long)s);
    }
    if (F.pend_puts && q->op == SYMM_RING_OP_PUT) {
        if (F.n_pend >= 4096) TEST_FAIL_("more than 4096 requests pending");
        F.pend_p[F.n_pend] = p;
        F.pend_s[F.n_pend] = s;
        F.pend_tag[F.n_pend++] = q->tag;
        *pending = true;
    }
    __atomic_store_n(&F.done[p][s], 1, __ATOMIC_RELEASE);
    return SYMM_SUCCESS;
}

static symm_status fake_flush(void *arg) {
    (void)arg;
    if (F.wake_watch && __atomic_load_n(F.wake_watch, __ATOMIC_ACQUIRE))
        TEST_FAIL_("a wake word was set before the flush that completes its put");
    for (int i = 0; i < F.n_pend; i++) {
        if (F.hdr && SYMM_RING_COMPLETED_COUNT(__atomic_load_n(&F.hdr->completed,
                                                               __ATOMIC_ACQUIRE)) > F.pend_tag[i])
            TEST_FAIL_("request %llu (non-blocking) was published complete before its flush",
                       (unsigned long long)F.pend_tag[i] + 1);
        __atomic_store_n(&F.flushed[F.pend_p[i]][F.pend_s[i]], 1, __ATOMIC_RELEASE);
    }
    F.n_pend = 0;
    F.flushes++;
    return SYMM_SUCCESS;
}

static symm_status fake_check(void *arg) {
    (void)arg;
    symm_status st = atomic_load(&F.check_status);
    return st ? symm__err(st, "fake: the job lost a PE") : SYMM_SUCCESS;
}

static void fake_failed(void *arg, uint32_t ring, uint64_t ticket, const symm_ring_req *q,
                        symm_status st, const char *msg) {
    (void)arg;
    (void)q;
    snprintf(F.err, sizeof F.err, "ring %u ticket %llu %s: %s", ring, (unsigned long long)ticket,
             symm__status_name(st), msg);
}

static const symm__proxy_exec fake_exec = {NULL, fake_run, fake_flush, fake_check, fake_failed,
                                           NULL};

static symm__engine *engine(uint32_t rings, uint32_t depth, bool thread) {
    symm__proxy_opts o = {rings, depth, 20, 50, 0};
    symm__engine *e = NULL;
    CHECK_OK(symm__engine_create(&o, &fake_exec, NULL, &e));
    if (thread) CHECK_OK(symm__engine_start(e));
    return e;
}

static symm_ring ring_of(symm__engine *e, uint32_t i) {
    symm_ring r;
    CHECK_OK(symm__engine_ring(e, i, SYMM_RING_VERSION, &r));
    CHECK_OK(symm_ring_check(&r));
    return r;
}

/* ---- producers ---- */

typedef struct producer {
    symm_ring ring;
    int id;
    int64_t count;
    uint32_t wait_every; /* wait for every Nth ticket and check it ran          */
    uint32_t op;         /* SYMM_RING_OP_* posted (PUT by default)              */
    symm_status end;     /* first failure                                        */
} producer;

static void *produce(void *arg) {
    producer *p = arg;
    for (int64_t s = 0; s < p->count; s++) {
        symm_ring_req q;
        memset(&q, 0, sizeof q);
        q.op = p->op ? p->op : SYMM_RING_OP_PUT;
        q.pe = p->id;
        q.off = (uint64_t)s;
        q.value = (uint64_t)s * 3u + (uint64_t)p->id;
        q.local = 0x1000u + (uint64_t)s;
        q.n = 8;
        uint64_t t = 0;
        symm_status st = symm_ring_post(&p->ring, &q, &t);
        if (st) {
            p->end = st;
            return NULL;
        }
        if (p->wait_every && (s + 1) % p->wait_every == 0) {
            st = symm_ring_wait(&p->ring, t);
            if (st) {
                p->end = st;
                return NULL;
            }
            if (!__atomic_load_n(&F.done[p->id][s], __ATOMIC_ACQUIRE))
                TEST_FAIL_("producer %d: wait for request %lld returned before it ran", p->id,
                           (long long)s);
            if (F.pend_puts && !__atomic_load_n(&F.flushed[p->id][s], __ATOMIC_ACQUIRE))
                TEST_FAIL_("producer %d: request %lld completed before its flush", p->id,
                           (long long)s);
        }
    }
    return NULL;
}

static void run_producers(producer *ps, int n) {
    pthread_t th[MAX_PRODUCERS];
    for (int i = 0; i < n; i++) ASSERT_EQ(pthread_create(&th[i], NULL, produce, &ps[i]), 0);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < n; i++)
        if (ps[i].end) TEST_FAIL_("producer %d ended with %s", i, symm__status_name(ps[i].end));
}

static void expect_all_ran(const producer *ps, int n) {
    for (int i = 0; i < n; i++) {
        int id = ps[i].id;
        ASSERT_EQ(F.last_seq[id], ps[i].count - 1);
        for (int64_t s = 0; s < ps[i].count; s++)
            if (!F.done[id][s]) TEST_FAIL_("producer %d request %lld never ran", id, (long long)s);
    }
}

/* ---- cases ---- */

static void case_format(void) {
    /* encode/decode: every field, 64-bit values with the top bit set */
    unsigned seed = 7;
    for (int k = 0; k < 100000; k++) {
        symm_ring_req q, d;
        q.op = 1u + (uint32_t)rand_r(&seed) % SYMM_RING_OP_LAST;
        q.sub = (uint32_t)rand_r(&seed) & 0xffu;
        q.dtype = (uint32_t)rand_r(&seed) & 0xffu;
        q.pe = rand_r(&seed);
        q.off = ((uint64_t)rand_r(&seed) << 31 ^ (uint64_t)rand_r(&seed)) & SYMM_RING_PAYLOAD;
        q.local = ((uint64_t)rand_r(&seed) << 20) & SYMM_RING_PAYLOAD;
        q.n = (uint64_t)rand_r(&seed);
        q.value = (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)rand_r(&seed) ^
                  (k & 1 ? 1ull << 63 : 0);
        q.compare = ~q.value;
        q.sig_off = (uint64_t)rand_r(&seed) * 8u;
        uint64_t t = (uint64_t)rand_r(&seed) << 20 ^ (uint64_t)k;
        uint32_t lg = (uint32_t)k % 21u;
        uint64_t w[SYMM_RING_WORDS];
        symm_ring_encode(&q, t, lg, w);
        const uint64_t f = symm_ring_flag(t, lg);
        for (uint32_t i = 0; i < SYMM_RING_WORDS; i++)
            ASSERT_U64_EQ(w[i] & SYMM_RING_FLAG_BIT, f);
        ASSERT_TRUE(symm_ring_slot_ready(w, f));
        ASSERT_TRUE(!symm_ring_slot_ready(w, f ^ SYMM_RING_FLAG_BIT));
        symm_ring_decode(w, &d);
        ASSERT_EQ(d.op, q.op);
        ASSERT_EQ(d.sub, q.sub);
        ASSERT_EQ(d.dtype, q.dtype);
        ASSERT_EQ(d.pe, q.pe);
        ASSERT_U64_EQ(d.off, q.off);
        ASSERT_U64_EQ(d.local, q.local);
        ASSERT_U64_EQ(d.n, q.n);
        ASSERT_U64_EQ(d.value, q.value);
        ASSERT_U64_EQ(d.compare, q.compare);
        ASSERT_U64_EQ(d.sig_off, q.sig_off);
        ASSERT_U64_EQ(d.tag, t & SYMM_RING_TAG_MASK);
    }
    /* the flag of lap 0 is 1 (a zeroed slot is "lap -1"), and it alternates */
    ASSERT_U64_EQ(symm_ring_flag(0, 2), SYMM_RING_FLAG_BIT);
    ASSERT_U64_EQ(symm_ring_flag(3, 2), SYMM_RING_FLAG_BIT);
    ASSERT_U64_EQ(symm_ring_flag(4, 2), 0);
    ASSERT_U64_EQ(symm_ring_flag(8, 2), SYMM_RING_FLAG_BIT);

    fake_reset();
    symm__engine *e = engine(2, 8, false);
    symm_ring r = ring_of(e, 1);
    ASSERT_EQ(r.depth, 8);
    ASSERT_EQ(r.hdr->ring_id, 1);
    ASSERT_U64_EQ(r.hdr->magic, SYMM_RING_MAGIC);
    /* a producer built against another format: refused by the runtime... */
    symm_ring other;
    CHECK_STATUS(symm__engine_ring(e, 0, SYMM_RING_VERSION + 1, &other), SYMM_ERR_ABI_MISMATCH);
    ASSERT_TRUE(strstr(symm_last_error(), "format 2") != NULL);
    CHECK_STATUS(symm__engine_ring(e, 2, SYMM_RING_VERSION, &other), SYMM_ERR_INVALID_ARG);
    /* ...and by the producer code, before it claims a slot */
    symm_ring bad = r;
    bad.version = SYMM_RING_VERSION + 1;
    uint64_t t = 0;
    ASSERT_EQ(symm_ring_nop(&bad, &t), SYMM_ERR_ABI_MISMATCH);
    ASSERT_EQ(symm_ring_wait(&bad, 1), SYMM_ERR_ABI_MISMATCH);
    ASSERT_EQ(symm_ring_check(&bad), SYMM_ERR_ABI_MISMATCH);
    bad = r;
    bad.slot_bytes = 32;
    ASSERT_EQ(symm_ring_put(&bad, 0, 0, &t, 8, &t), SYMM_ERR_ABI_MISMATCH);
    ASSERT_U64_EQ(*r.head, 0); /* nothing claimed */
    /* a header of another format */
    r.hdr->version = SYMM_RING_VERSION + 1;
    ASSERT_EQ(symm_ring_check(&r), SYMM_ERR_ABI_MISMATCH);
    r.hdr->version = SYMM_RING_VERSION;
    r.hdr->magic ^= 1;
    ASSERT_EQ(symm_ring_check(&r), SYMM_ERR_ABI_MISMATCH);
    r.hdr->magic ^= 1;
    CHECK_OK(symm_ring_check(&r));
    /* bad requests are refused by the producer */
    symm_ring_req q;
    memset(&q, 0, sizeof q);
    ASSERT_EQ(symm_ring_post(&r, &q, &t), SYMM_ERR_INVALID_ARG); /* op 0 */
    q.op = SYMM_RING_OP_LAST + 1;
    ASSERT_EQ(symm_ring_post(&r, &q, &t), SYMM_ERR_INVALID_ARG);
    q.op = SYMM_RING_OP_NOP;
    q.pe = -1;
    ASSERT_EQ(symm_ring_post(&r, &q, &t), SYMM_ERR_INVALID_ARG);
    /* a NOP round trip through the drain loop called here */
    CHECK_OK(symm_ring_nop(&r, &t));
    ASSERT_U64_EQ(t, 1);
    ASSERT_TRUE(!symm_ring_test(&r, t));
    ASSERT_EQ(symm__engine_poll(e), 1);
    ASSERT_TRUE(symm_ring_test(&r, t));
    CHECK_OK(symm_ring_wait(&r, t));
    ASSERT_U64_EQ(r.hdr->consumed, 1);
    symm__engine_destroy(e);
    printf("format: encode/decode, flags, handle and header checks, version refusal ok\n");
}

static void case_laps(void) {
    fake_reset();
    symm__engine *e = engine(1, 4, true);
    producer p = {ring_of(e, 0), 0, MAX_SEQ, 997, 0, 0};
    run_producers(&p, 1);
    CHECK_OK(symm__engine_quiet(e));
    expect_all_ran(&p, 1);
    ASSERT_U64_EQ(p.ring.hdr->completed, MAX_SEQ);
    ASSERT_U64_EQ(p.ring.hdr->consumed, MAX_SEQ);
    symm__proxy_stats s;
    symm__engine_stats(e, &s);
    ASSERT_U64_EQ(s.requests, MAX_SEQ);
    ASSERT_U64_EQ(s.failed, 0);
    symm__engine_destroy(e);
    printf("laps: %d requests through a 4-slot ring (%d laps) in order, each once\n", MAX_SEQ,
           MAX_SEQ / 4);
}

static void case_many(void) {
    fake_reset();
    F.delay_every = 64; /* a slow consumer now and then: producers queue up */
    symm__engine *e = engine(1, 2, true);
    enum { N = 8 };
    producer ps[N];
    for (int i = 0; i < N; i++) {
        producer p = {ring_of(e, 0), i, 10000, (uint32_t)(7 + i), 0, 0};
        ps[i] = p;
    }
    run_producers(ps, N);
    CHECK_OK(symm__engine_quiet(e));
    expect_all_ran(ps, N);
    ASSERT_U64_EQ(F.runs, N * 10000);
    ASSERT_U64_EQ(ps[0].ring.hdr->completed, N * 10000);
    symm__engine_destroy(e);
    printf("many: %d producers x 10000 requests through a 2-slot ring: each once, each "
           "producer's in order, waits after the run\n", N);
}

static void case_rings(void) {
    fake_reset();
    symm__engine *e = engine(4, 16, true);
    enum { N = 8 };
    producer ps[N];
    for (int i = 0; i < N; i++) {
        producer p = {ring_of(e, (uint32_t)i / 2), i, 30000, 101, 0, 0};
        ps[i] = p;
    }
    run_producers(ps, N);
    CHECK_OK(symm__engine_quiet(e));
    expect_all_ran(ps, N);
    for (uint32_t i = 0; i < 4; i++) ASSERT_U64_EQ(ps[2 * i].ring.hdr->completed, 60000);
    symm__engine_destroy(e);
    printf("rings: 4 rings x 2 producers x 30000 requests, independent and in order\n");
}

static void case_pending(void) {
    fake_reset();
    F.pend_puts = true;
    symm__engine *e = engine(1, 64, true);
    enum { N = 4 };
    producer ps[N];
    F.hdr = ring_of(e, 0).hdr;
    for (int i = 0; i < N; i++) {
        producer p = {ring_of(e, 0), i, 20000, 13, 0, 0};
        ps[i] = p;
    }
    run_producers(ps, N); /* each wait checks its put was flushed */
    CHECK_OK(symm__engine_quiet(e));
    for (int i = 0; i < N; i++)
        for (int64_t s = 0; s < 20000; s++)
            if (!F.flushed[i][s]) TEST_FAIL_("producer %d put %lld never flushed", i, (long long)s);
    ASSERT_TRUE(F.flushes > 0);
    /* one pass over a full ring flushes once, however many puts it took */
    symm__engine_stop(e);
    symm__engine_destroy(e);

    fake_reset();
    F.pend_puts = true;
    e = engine(1, 64, false);
    symm_ring r = ring_of(e, 0);
    F.hdr = r.hdr;
    uint64_t t = 0, tq = 0;
    for (int s = 0; s < 40; s++) {
        symm_ring_req q;
        memset(&q, 0, sizeof q);
        q.op = SYMM_RING_OP_PUT;
        q.off = (uint64_t)s;
        q.value = (uint64_t)s * 3u;
        CHECK_OK(symm_ring_post(&r, &q, &t));
        if (s == 19) {
            symm_ring_req qq;
            memset(&qq, 0, sizeof qq);
            qq.op = SYMM_RING_OP_QUIET;
            CHECK_OK(symm_ring_post(&r, &qq, &tq));
        }
    }
    ASSERT_EQ(symm__engine_poll(e), 41);
    ASSERT_U64_EQ(F.flushes, 2); /* the QUIET's and the end of the pass */
    ASSERT_U64_EQ(r.hdr->completed, 41);
    CHECK_OK(symm_ring_wait(&r, tq));
    CHECK_OK(symm__engine_quiet(e));
    symm__engine_destroy(e);
    printf("pending: non-blocking puts complete only with their flush; QUIET flushes\n");
}

static void case_errors(void) {
    fake_reset();
    F.fail_on = true;
    F.fail_seq = 50;
    symm__engine *e = engine(1, 8, true);
    symm_ring r = ring_of(e, 0);
    uint64_t tickets[100];
    for (int s = 0; s < 100; s++) {
        symm_ring_req q;
        memset(&q, 0, sizeof q);
        q.op = SYMM_RING_OP_AMO;
        q.off = (uint64_t)s;
        q.value = (uint64_t)s * 3u;
        CHECK_OK(symm_ring_post(&r, &q, &tickets[s]));
    }
    CHECK_OK(symm_ring_wait(&r, tickets[49]));   /* before the failure: fine */
    ASSERT_EQ(symm_ring_wait(&r, tickets[50]), SYMM_ERR_OUT_OF_BOUNDS);
    ASSERT_EQ(symm_ring_wait(&r, tickets[99]), SYMM_ERR_OUT_OF_BOUNDS); /* reported later on */
    uint64_t at = 0;
    ASSERT_EQ(symm_ring_error(&r, &at), SYMM_ERR_OUT_OF_BOUNDS);
    ASSERT_U64_EQ(at, tickets[50]);
    ASSERT_TRUE(strstr(F.err, "fails on purpose") != NULL);
    ASSERT_EQ(F.runs, 100); /* the ring goes on after a failed request */
    CHECK_OK(symm_ring_alive(&r));
    CHECK_STATUS(symm__engine_quiet(e), SYMM_ERR_OUT_OF_BOUNDS);
    /* the failure is flagged in the completed word itself (one read for waiters) */
    const uint64_t cw = __atomic_load_n(&r.hdr->completed, __ATOMIC_ACQUIRE);
    ASSERT_TRUE((cw & SYMM_RING_COMPLETED_FAILED) != 0);
    ASSERT_U64_EQ(SYMM_RING_COMPLETED_COUNT(cw), 100);
    /* The host's quiet returns a failure once (it was recorded for
     * symm_ctx_async_error when it happened); the GPU's view keeps it. */
    CHECK_OK(symm__engine_quiet(e));
    ASSERT_EQ(symm_ring_error(&r, &at), SYMM_ERR_OUT_OF_BOUNDS);
    /* a later failure: returned by the next quiet; one acknowledged
     * (symm_ctx_async_error cleared it) is not */
    for (int round = 0; round < 2; round++) {
        F.fail_seq = 100u + (uint64_t)round * 10u;
        for (int s = 0; s < 10; s++) {
            symm_ring_req q;
            memset(&q, 0, sizeof q);
            q.op = SYMM_RING_OP_AMO;
            q.off = 100u + (uint64_t)round * 10u + (uint64_t)s;
            q.value = q.off * 3u;
            CHECK_OK(symm_ring_post(&r, &q, &tickets[s]));
        }
        (void)symm_ring_wait(&r, tickets[9]);
        if (round == 1) symm__engine_ack(e);
        if (round == 0) CHECK_STATUS(symm__engine_quiet(e), SYMM_ERR_OUT_OF_BOUNDS);
        CHECK_OK(symm__engine_quiet(e));
    }
    ASSERT_EQ(F.runs, 120);
    symm__engine_destroy(e);

    /* a slot whose ticket tag is wrong (written for another lap): the ring
     * stops, nothing of it runs */
    fake_reset();
    e = engine(1, 4, false);
    r = ring_of(e, 0);
    symm_ring_req q;
    memset(&q, 0, sizeof q);
    q.op = SYMM_RING_OP_PUT;
    uint64_t w[SYMM_RING_WORDS];
    symm_ring_encode(&q, 4, r.log2_depth, w); /* ticket 4's words in ticket 0's flag... */
    for (uint32_t i = 0; i < SYMM_RING_WORDS; i++) w[i] ^= SYMM_RING_FLAG_BIT;
    memcpy(r.slots, w, sizeof w);
    *r.head = 1;
    ASSERT_EQ(symm__engine_poll(e), 1);
    ASSERT_EQ(F.runs, 0);
    ASSERT_EQ(symm_ring_wait(&r, 1), SYMM_ERR_INTERNAL);
    ASSERT_EQ(symm_ring_alive(&r), SYMM_ERR_INTERNAL);
    ASSERT_TRUE(strstr(F.err, "holds ticket 4 where 0 was due") != NULL);
    symm__engine_destroy(e);
    printf("errors: a failed request is reported at its ticket and later; a bad slot stops "
           "its ring\n");
}

typedef struct waiter {
    symm_ring ring;
    int kind; /* 0: post into a full ring; 1: wait for a ticket */
    uint64_t ticket;
    symm_status st;
    double t_end;
} waiter;

static void *wait_thread(void *arg) {
    waiter *w = arg;
    uint64_t t = 0;
    w->st = w->kind == 0 ? symm_ring_nop(&w->ring, &t) : symm_ring_wait(&w->ring, w->ticket);
    w->t_end = now_s();
    return NULL;
}

static void case_stop(void) {
    /* no thread: the ring fills up (depth 2), a third post waits for credit,
     * and a wait for the second request waits too; stop ends both */
    fake_reset();
    symm__engine *e = engine(1, 2, false);
    symm_ring r = ring_of(e, 0);
    uint64_t t1 = 0, t2 = 0;
    CHECK_OK(symm_ring_nop(&r, &t1));
    CHECK_OK(symm_ring_nop(&r, &t2));
    waiter wf = {r, 0, 0, SYMM_SUCCESS, 0}, ww = {r, 1, t2, SYMM_SUCCESS, 0};
    pthread_t a, b;
    ASSERT_EQ(pthread_create(&a, NULL, wait_thread, &wf), 0);
    ASSERT_EQ(pthread_create(&b, NULL, wait_thread, &ww), 0);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    ASSERT_TRUE(wf.t_end == 0 && ww.t_end == 0); /* both still wait */
    double t0 = now_s();
    symm__engine_stop(e);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ASSERT_EQ(wf.st, SYMM_ERR_INVALID_STATE);
    ASSERT_EQ(ww.st, SYMM_ERR_INVALID_STATE);
    ASSERT_TRUE(wf.t_end - t0 < 1.0 && ww.t_end - t0 < 1.0);
    symm__engine_destroy(e);

    /* with the thread: request 1 is claimed and never written (a producer
     * that stalls), request 2 is written; a wait for 2 ends at the stop */
    fake_reset();
    e = engine(1, 8, true);
    r = ring_of(e, 0);
    uint64_t t = 0;
    CHECK_OK(symm_ring_nop(&r, &t));
    CHECK_OK(symm_ring_wait(&r, t)); /* ticket 1 ran */
    __atomic_fetch_add(r.head, 1, __ATOMIC_RELAXED); /* ticket 2: claimed, never written */
    CHECK_OK(symm_ring_nop(&r, &t));                  /* ticket 3: written */
    ASSERT_U64_EQ(t, 3);
    waiter w3 = {r, 1, t, SYMM_SUCCESS, 0};
    ASSERT_EQ(pthread_create(&a, NULL, wait_thread, &w3), 0);
    nanosleep(&ts, NULL);
    ASSERT_TRUE(w3.t_end == 0);
    ASSERT_U64_EQ(r.hdr->completed, 1);
    t0 = now_s();
    symm__engine_stop(e);
    pthread_join(a, NULL);
    ASSERT_EQ(w3.st, SYMM_ERR_INVALID_STATE);
    ASSERT_TRUE(w3.t_end - t0 < 1.0);
    /* a post after the stop: the slot is free, the wait ends at once */
    CHECK_OK(symm_ring_nop(&r, &t));
    ASSERT_EQ(symm_ring_wait(&r, t), SYMM_ERR_INVALID_STATE);
    symm__engine_destroy(e);

    /* requests written before the stop run during it */
    fake_reset();
    e = engine(1, 64, false);
    r = ring_of(e, 0);
    for (int s = 0; s < 30; s++) {
        symm_ring_req q;
        memset(&q, 0, sizeof q);
        q.op = SYMM_RING_OP_PUT;
        q.off = (uint64_t)s;
        q.value = (uint64_t)s * 3u;
        CHECK_OK(symm_ring_post(&r, &q, &t));
    }
    CHECK_OK(symm__engine_start(e));
    symm__engine_stop(e);
    ASSERT_EQ(F.runs, 30);
    CHECK_OK(symm_ring_wait(&r, t)); /* completed before the stop: its own status */
    ASSERT_EQ(symm_ring_alive(&r), SYMM_ERR_INVALID_STATE);
    symm__engine_destroy(e);
    printf("stop: waits for credit and for a never-written slot end with INVALID_STATE; "
           "written requests run\n");
}

static void case_failed(void) {
    fake_reset();
    symm__engine *e = engine(2, 2, true);
    symm_ring r0 = ring_of(e, 0), r1 = ring_of(e, 1);
    uint64_t t = 0;
    CHECK_OK(symm_ring_nop(&r0, &t));
    CHECK_OK(symm_ring_wait(&r0, t));
    ASSERT_EQ(*symm__engine_fail_word(e), 0);
    /* a waiter on a never-written slot, a producer on a full ring */
    __atomic_fetch_add(r0.head, 1, __ATOMIC_RELAXED);
    CHECK_OK(symm_ring_nop(&r0, &t));
    waiter w0 = {r0, 1, t, SYMM_SUCCESS, 0}, wf = {r0, 0, 0, SYMM_SUCCESS, 0};
    pthread_t a, b;
    ASSERT_EQ(pthread_create(&a, NULL, wait_thread, &w0), 0);
    ASSERT_EQ(pthread_create(&b, NULL, wait_thread, &wf), 0);
    struct timespec ts = {0, 30000000};
    nanosleep(&ts, NULL);
    ASSERT_TRUE(w0.t_end == 0 && wf.t_end == 0);
    double t0 = now_s();
    atomic_store(&F.check_status, SYMM_ERR_PEER_FAILED);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    ASSERT_EQ(w0.st, SYMM_ERR_PEER_FAILED);
    ASSERT_EQ(wf.st, SYMM_ERR_PEER_FAILED);
    double ms = (now_s() - t0) * 1e3;
    printf("failed: waits ended with PEER_FAILED %.2f ms after the health check said so\n", ms);
    ASSERT_TRUE(ms < 500.0);
    ASSERT_EQ(*symm__engine_fail_word(e), 2);
    ASSERT_EQ(symm_ring_alive(&r1), SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(strstr(F.err, "lost a PE") != NULL);
    symm__engine_destroy(e);
}

/* Wake words: a producer names word w (cell w + 1) before it writes its
 * request; the engine sets the word once the request completed (a pending
 * put: after its flush), failed or not, clears the cell when it takes the
 * slot, and at stop sets the words of slots claimed but never written. */
static void post_woken(const symm_ring *r, uint64_t *notify, uint32_t op, uint64_t seq,
                       uint32_t word) {
    uint64_t t = 0;
    CHECK_OK(symm_ring_claim(r, &t));
    if (word != UINT32_MAX) __atomic_store_n(&notify[t & (r->depth - 1u)], (uint64_t)word + 1u,
                                             __ATOMIC_RELAXED);
    symm_ring_req q;
    memset(&q, 0, sizeof q);
    q.op = op;
    q.off = seq;
    q.value = seq * 3u;
    symm_ring_write(r, &q, t);
}

static void case_wake(void) {
    fake_reset();
    F.pend_puts = true;
    symm__engine *e = engine(1, 8, false);
    symm_ring r = ring_of(e, 0);
    F.hdr = r.hdr;
    uint64_t *notify = NULL;
    uint32_t *words = NULL;
    CHECK_OK(symm__engine_wake(e, 0, &notify, &words));
    ASSERT_TRUE(symm__engine_word_host(e, 0) == words);
    ASSERT_TRUE(symm__engine_word_host(e, SYMM__PROXY_WAKE_WORDS) == NULL);
    CHECK_STATUS(symm__engine_wake(e, 1, &notify, &words), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm__engine_wake(e, 0, &notify, &words));
    /* 100 requests over 8 slots (laps), words 2..5 in turn; every fourth a
     * put that completes only at the pass's flush */
    uint64_t seq = 0;
    for (int k = 0; k < 100; k++) {
        const uint32_t w = 2u + (uint32_t)(k % 4);
        const bool put = k % 4 == 0;
        F.wake_watch = put ? &words[w] : NULL;
        post_woken(&r, notify, put ? SYMM_RING_OP_PUT : SYMM_RING_OP_AMO, seq++, w);
        if (k % 3 == 0) post_woken(&r, notify, SYMM_RING_OP_AMO, seq++, UINT32_MAX);
        ASSERT_EQ(__atomic_load_n(&words[w], __ATOMIC_ACQUIRE), 0u); /* not run yet */
        ASSERT_TRUE(symm__engine_poll(e) >= 1);
        if (__atomic_load_n(&words[w], __ATOMIC_ACQUIRE) != 1u)
            TEST_FAIL_("request %d: its wake word %u was not set on completion", k, w);
        for (uint32_t i = 0; i < 8; i++)
            if (notify[i]) TEST_FAIL_("request %d: notify cell %u was not cleared", k, i);
        for (uint32_t i = 0; i < 16; i++)
            if (i != w && words[i]) TEST_FAIL_("request %d set word %u too", k, i);
        words[w] = 0; /* the stream's reset */
    }
    F.wake_watch = NULL;
    ASSERT_EQ(F.runs, (int)seq);
    /* a failed request wakes its waiter as well */
    F.fail_on = true;
    F.fail_seq = seq;
    post_woken(&r, notify, SYMM_RING_OP_AMO, seq++, 7);
    ASSERT_EQ(symm__engine_poll(e), 1);
    ASSERT_EQ(words[7], 1u);
    uint64_t at = 0;
    ASSERT_EQ(symm_ring_error(&r, &at), SYMM_ERR_OUT_OF_BOUNDS);
    /* a slot claimed and named but never written: the stop wakes it */
    uint64_t t = 0;
    CHECK_OK(symm_ring_claim(&r, &t));
    notify[t & 7u] = 9u + 1u;
    ASSERT_EQ(symm__engine_poll(e), 0);
    ASSERT_EQ(words[9], 0u);
    symm__engine_stop(e);
    ASSERT_EQ(words[9], 1u);
    ASSERT_U64_EQ(notify[t & 7u], 0);
    symm__engine_destroy(e);
    printf("wake: words set on completion (after the flush of a put), on failure, and at stop "
           "for a claimed slot; cells cleared\n");
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "format")) case_format();
    else if (!strcmp(c, "laps")) case_laps();
    else if (!strcmp(c, "many")) case_many();
    else if (!strcmp(c, "rings")) case_rings();
    else if (!strcmp(c, "pending")) case_pending();
    else if (!strcmp(c, "errors")) case_errors();
    else if (!strcmp(c, "stop")) case_stop();
    else if (!strcmp(c, "failed")) case_failed();
    else if (!strcmp(c, "wake")) case_wake();
    else {
        fprintf(stderr,
                "usage: test_proxy_ring format|laps|many|rings|pending|errors|stop|failed|wake\n");
        return 2;
    }
    return 0;
}

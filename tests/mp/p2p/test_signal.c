/*
 * Signals: put_signal (SET/ADD, blocking and nbi) with the data checked after
 * the signal wait, signal_op, signal_fetch, signal_wait_until with every
 * comparison, concurrent ADD signals from all PEs, and argument errors.
 */
#include <stdlib.h>

#include "p2p_util.h"

#define CHUNK 512 /* int64 elements per message */
#define ROUNDS 20

/* Signal slots (UINT64 buffer `sig`, per PE). */
enum {
    SIG_SET = 0,     /* put_signal SET: round number                   */
    SIG_ADD = 1,     /* put_signal ADD: +1 per round                   */
    SIG_NBI_SET = 2, /* put_signal_nbi SET                             */
    SIG_NBI_ADD = 3, /* put_signal_nbi ADD                             */
    SIG_ACK = 4,     /* consumer -> producer: rounds consumed (ADD)    */
    SIG_GATHER = 5,  /* all PEs ADD 1 into PE 0's                      */
    SIG_CMP = 6,     /* signal_wait_until comparisons                  */
    SIG_CMP_ACK = 7,
    SIG_OP = 8,      /* signal_op from every PE                        */
    SIG_BIG = 9,     /* large messages: SET to the round number        */
    SIG_BIG_ADD = 10, /* large messages: +1 per message                */
    SIG_BIG_GO = 11,  /* consumer -> producer: waiting now             */
    N_SIG = 16
};

static int64_t pattern(int32_t src, int32_t round, uint64_t i, int32_t kind) {
    return ((int64_t)src << 40) ^ ((int64_t)round << 24) ^ (int64_t)(i * 2654435761u) ^
           ((int64_t)kind << 56);
}

static void check_chunk(symm_buf data, uint64_t at, int32_t src, int32_t round, int32_t kind,
                        int32_t me) {
    int64_t got[CHUNK];
    CHECK_OK(symm_get(got, data, at, CHUNK, me));
    for (uint64_t i = 0; i < CHUNK; i++) {
        if (got[i] != pattern(src, round, i, kind))
            TEST_FAIL_("kind %d round %d from pe %d: element %llu is %lld, expected %lld", kind,
                       round, src, (unsigned long long)i, (long long)got[i],
                       (long long)pattern(src, round, i, kind));
    }
}

/* Ring: every PE sends ROUNDS messages to its right neighbour with one signal
 * form, waits for its left neighbour's, checks the data, acknowledges. */
static void ring_round_trip(symm_ctx ctx, symm_buf data, symm_buf sig, int kind) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    int32_t right = (me + 1) % n, left = (me + n - 1) % n;
    uint64_t slot = (uint64_t)kind * CHUNK;
    static uint64_t acks = 0; /* acknowledgements received so far (all kinds) */
    int64_t msg[CHUNK];
    for (int32_t r = 0; r < ROUNDS; r++) {
        for (uint64_t i = 0; i < CHUNK; i++) msg[i] = pattern(me, r, i, kind);
        switch (kind) {
        case SIG_SET:
            CHECK_OK(symm_put_signal(data, slot, msg, CHUNK, sig, SIG_SET, (uint64_t)r + 1,
                                     SYMM_SIGNAL_SET, right));
            break;
        case SIG_ADD:
            CHECK_OK(symm_put_signal(data, slot, msg, CHUNK, sig, SIG_ADD, 1, SYMM_SIGNAL_ADD,
                                     right));
            break;
        case SIG_NBI_SET:
            CHECK_OK(symm_put_signal_nbi(data, slot, msg, CHUNK, sig, SIG_NBI_SET,
                                         (uint64_t)r + 1, SYMM_SIGNAL_SET, right));
            CHECK_OK(symm_quiet(ctx));
            break;
        default:
            CHECK_OK(symm_put_signal_nbi(data, slot, msg, CHUNK, sig, SIG_NBI_ADD, 1,
                                         SYMM_SIGNAL_ADD, right));
            CHECK_OK(symm_quiet(ctx));
            break;
        }
        /* Consume the left neighbour's message r. */
        uint64_t seen = 0;
        uint32_t cmp = (kind == SIG_SET || kind == SIG_NBI_SET) ? SYMM_CMP_EQ : SYMM_CMP_GE;
        CHECK_OK(symm_signal_wait_until(sig, (uint64_t)kind, cmp, (uint64_t)r + 1, &seen));
        ASSERT_U64_EQ(seen, (uint64_t)r + 1); /* the producer waits for our ack */
        check_chunk(data, slot, left, r, kind, me);
        CHECK_OK(symm_signal_op(sig, SIG_ACK, 1, SYMM_SIGNAL_ADD, left));
        /* Flow control: the right neighbour consumed message r before r+1. */
        acks++;
        CHECK_OK(symm_signal_wait_until(sig, SIG_ACK, SYMM_CMP_GE, acks, NULL));
    }
    uint64_t v = 0;
    CHECK_OK(symm_signal_fetch(sig, (uint64_t)kind, &v));
    ASSERT_U64_EQ(v, ROUNDS);
}

/* Ordering under pressure: large messages (the copy takes a while) sent to a
 * consumer that is already spinning on the signal and checks every element
 * as soon as the signal shows. A signal that overtook its data is caught
 * here. One producer/consumer pair per round, so nothing else is in flight. */
#define BIG (1u << 20) /* int64 elements: 8 MiB */

static void big_messages(symm_ctx ctx, symm_buf big, symm_buf sig, uint32_t sig_op, bool nbi) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    static uint64_t rounds_done = 0, go_seen = 0, added = 0;
    int64_t *msg = malloc(BIG * sizeof *msg), *got = malloc(BIG * sizeof *got);
    ASSERT_TRUE(msg && got);
    CHECK_OK(symm_barrier_all(ctx));
    int32_t rounds = n < 3 ? 6 : 2 * n;
    for (int32_t r = 0; r < rounds; r++) {
        int32_t producer = r % n, consumer = (producer + 1) % n;
        uint64_t round = ++rounds_done;
        if (me == consumer) CHECK_OK(symm_signal_op(sig, SIG_BIG_GO, 1, SYMM_SIGNAL_ADD, producer));
        if (me == producer) {
            CHECK_OK(symm_signal_wait_until(sig, SIG_BIG_GO, SYMM_CMP_GE, ++go_seen, NULL));
            for (uint64_t i = 0; i < BIG; i++) msg[i] = pattern(me, (int32_t)round, i, 7);
            uint64_t sig_index = sig_op == SYMM_SIGNAL_SET ? SIG_BIG : SIG_BIG_ADD;
            uint64_t signal = sig_op == SYMM_SIGNAL_SET ? round : 1;
            if (nbi)
                CHECK_OK(symm_put_signal_nbi(big, 0, msg, BIG, sig, sig_index, signal, sig_op,
                                             consumer));
            else
                CHECK_OK(symm_put_signal(big, 0, msg, BIG, sig, sig_index, signal, sig_op,
                                         consumer));
        }
        if (me == consumer) {
            if (sig_op == SYMM_SIGNAL_SET)
                CHECK_OK(symm_signal_wait_until(sig, SIG_BIG, SYMM_CMP_EQ, round, NULL));
            else
                CHECK_OK(symm_signal_wait_until(sig, SIG_BIG_ADD, SYMM_CMP_GE, ++added, NULL));
            /* The last element first: a copy still running forward writes it last. */
            int64_t last = 0;
            CHECK_OK(symm_g(big, BIG - 1, me, &last));
            if (last != pattern(producer, (int32_t)round, BIG - 1, 7))
                TEST_FAIL_("big round %llu: the last element was not delivered when the signal "
                           "was", (unsigned long long)round);
            CHECK_OK(symm_get(got, big, 0, BIG, me));
            for (uint64_t i = 0; i < BIG; i++)
                if (got[i] != pattern(producer, (int32_t)round, i, 7))
                    TEST_FAIL_("big round %llu: element %llu not yet delivered when the signal "
                               "was (0x%llx)", (unsigned long long)round, (unsigned long long)i,
                               (unsigned long long)got[i]);
        }
        if (me == producer && nbi) CHECK_OK(symm_quiet(ctx)); /* before msg is refilled */
    }
    free(got);
    free(msg);
    CHECK_OK(symm_barrier_all(ctx));
}

/* Every PE sends its block and ADDs 1 to PE 0's gather signal; PE 0 waits for
 * exactly n and checks every block. */
static void gather(symm_ctx ctx, symm_buf data, symm_buf sig) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    int64_t msg[CHUNK];
    for (uint64_t i = 0; i < CHUNK; i++) msg[i] = pattern(me, 99, i, SIG_GATHER);
    uint64_t slot = (uint64_t)(N_SIG + me) * CHUNK;
    if (me % 2)
        CHECK_OK(symm_put_signal(data, slot, msg, CHUNK, sig, SIG_GATHER, 1, SYMM_SIGNAL_ADD, 0));
    else
        CHECK_OK(symm_put_signal_nbi(data, slot, msg, CHUNK, sig, SIG_GATHER, 1, SYMM_SIGNAL_ADD,
                                     0));
    if (me == 0) {
        uint64_t seen = 0;
        CHECK_OK(symm_signal_wait_until(sig, SIG_GATHER, SYMM_CMP_EQ, (uint64_t)n, &seen));
        ASSERT_U64_EQ(seen, n);
        for (int32_t p = 0; p < n; p++)
            check_chunk(data, (uint64_t)(N_SIG + p) * CHUNK, p, 99, SIG_GATHER, me);
    }
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_barrier_all(ctx));
}

/* signal_wait_until with each comparison, each blocking until the left
 * neighbour moves the signal so that the comparison turns true. */
static void wait_comparisons(symm_ctx ctx, symm_buf sig) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    int32_t right = (me + 1) % n;
    static const struct {
        uint32_t cmp;
        uint64_t threshold, set_to; /* before set_to the comparison is false */
    } steps[] = {
        {SYMM_CMP_EQ, 5, 5},           {SYMM_CMP_NE, 5, 7},
        {SYMM_CMP_GT, 10, 11},         {SYMM_CMP_GE, 20, 20},
        {SYMM_CMP_LT, 3, 2},           {SYMM_CMP_LE, 1, 1},
        {SYMM_CMP_GT, UINT64_MAX - 1, UINT64_MAX}, /* unsigned: no wrap to negative */
        {SYMM_CMP_LT, 1, 0},
    };
    for (uint64_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        /* Before the update the comparison must be false here. */
        uint64_t cur = 0;
        CHECK_OK(symm_signal_fetch(sig, SIG_CMP, &cur));
        uint64_t t = steps[s].threshold;
        bool pre = false;
        switch (steps[s].cmp) {
        case SYMM_CMP_EQ: pre = cur == t; break;
        case SYMM_CMP_NE: pre = cur != t; break;
        case SYMM_CMP_GT: pre = cur > t; break;
        case SYMM_CMP_GE: pre = cur >= t; break;
        case SYMM_CMP_LT: pre = cur < t; break;
        default: pre = cur <= t; break;
        }
        ASSERT_TRUE(!pre);
        /* Tell the left neighbour we checked: only then may it move our signal.
         * Wait until the right neighbour has checked its own. */
        CHECK_OK(symm_signal_op(sig, SIG_CMP_ACK, 1, SYMM_SIGNAL_ADD, (me + n - 1) % n));
        CHECK_OK(symm_signal_wait_until(sig, SIG_CMP_ACK, SYMM_CMP_EQ, s + 1, NULL));
        if (s % 2) p2p_sleep_us(2000); /* odd steps: the waiter really blocks */
        CHECK_OK(symm_signal_op(sig, SIG_CMP, steps[s].set_to, SYMM_SIGNAL_SET, right));
        uint64_t seen = 0;
        CHECK_OK(symm_signal_wait_until(sig, SIG_CMP, steps[s].cmp, t, &seen));
        if (seen != steps[s].set_to)
            TEST_FAIL_("step %llu (%s %llu): saw %llu, expected %llu", (unsigned long long)s,
                       p2p_cmp_names[steps[s].cmp], (unsigned long long)t,
                       (unsigned long long)seen, (unsigned long long)steps[s].set_to);
    }
    CHECK_OK(symm_barrier_all(ctx));
}

/* signal_op from every PE to every PE: ADD then SET, values checked exactly. */
static void signal_ops(symm_ctx ctx, symm_buf sig) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    for (int32_t p = 0; p < n; p++)
        CHECK_OK(symm_signal_op(sig, SIG_OP, (uint64_t)me + 1, SYMM_SIGNAL_ADD, p));
    CHECK_OK(symm_barrier_all(ctx));
    uint64_t v = 0;
    CHECK_OK(symm_signal_fetch(sig, SIG_OP, &v));
    ASSERT_U64_EQ(v, (uint64_t)n * (uint64_t)(n + 1) / 2);
    CHECK_OK(symm_barrier_all(ctx));
    /* One SET per target, from its right neighbour: exact value. */
    int32_t left = (me + n - 1) % n;
    CHECK_OK(symm_signal_op(sig, SIG_OP, 0xabc000u + (uint64_t)me, SYMM_SIGNAL_SET, left));
    CHECK_OK(symm_signal_wait_until(sig, SIG_OP, SYMM_CMP_EQ,
                                    0xabc000u + (uint64_t)((me + 1) % n), NULL));
    CHECK_OK(symm_barrier_all(ctx));
    /* ADD wraps modulo 2^64. */
    CHECK_OK(symm_signal_op(sig, SIG_OP, UINT64_MAX, SYMM_SIGNAL_SET, me));
    CHECK_OK(symm_signal_op(sig, SIG_OP, 2, SYMM_SIGNAL_ADD, me));
    CHECK_OK(symm_signal_fetch(sig, SIG_OP, &v));
    ASSERT_U64_EQ(v, 1);
    CHECK_OK(symm_barrier_all(ctx));
}

static void errors(symm_ctx ctx, symm_buf data, symm_buf sig) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    int64_t msg[4] = {1, 2, 3, 4};
    uint64_t v = 0x5a5a;

    /* A signal buffer must be UINT64 (data is INT64). */
    CHECK_STATUS(symm_put_signal(data, 0, msg, 4, data, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_op(data, 0, 1, SYMM_SIGNAL_ADD, me), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_fetch(data, 0, &v), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_wait_until(data, 0, SYMM_CMP_EQ, 0, &v), SYMM_ERR_INVALID_ARG);
    /* Unknown signal op and comparison. */
    CHECK_STATUS(symm_put_signal(data, 0, msg, 4, sig, 0, 1, 2, me), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_put_signal_nbi(data, 0, msg, 4, sig, 0, 1, 77, me), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_op(sig, 0, 1, 2, me), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_wait_until(sig, 0, 6, 0, &v), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_wait_until(sig, 0, UINT32_MAX, 0, &v), SYMM_ERR_INVALID_ARG);
    /* PE outside the job. */
    CHECK_STATUS(symm_put_signal(data, 0, msg, 4, sig, 0, 1, SYMM_SIGNAL_SET, n),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_put_signal_nbi(data, 0, msg, 4, sig, 0, 1, SYMM_SIGNAL_SET, -1),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_op(sig, 0, 1, SYMM_SIGNAL_SET, n), SYMM_ERR_INVALID_ARG);
    /* Ranges. */
    uint64_t dcount = 0, scount = 0;
    CHECK_OK(symm_buf_query(data, NULL, &dcount, NULL));
    CHECK_OK(symm_buf_query(sig, NULL, &scount, NULL));
    CHECK_STATUS(symm_put_signal(data, dcount - 3, msg, 4, sig, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put_signal(data, UINT64_MAX, msg, 4, sig, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_put_signal(data, 0, msg, 4, sig, scount, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_signal_op(sig, scount, 1, SYMM_SIGNAL_SET, me), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_signal_fetch(sig, UINT64_MAX, &v), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_signal_wait_until(sig, scount, SYMM_CMP_EQ, 0, &v),
                 SYMM_ERR_OUT_OF_BOUNDS);
    /* NULL pointers. */
    CHECK_STATUS(symm_put_signal(data, 0, NULL, 4, sig, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_signal_fetch(sig, 0, NULL), SYMM_ERR_INVALID_ARG);
    /* The signal may not sit inside the data it announces. */
    uint64_t words[4] = {0};
    CHECK_STATUS(symm_put_signal(sig, 10, words, 4, sig, 12, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_ARG);
    /* Handles. */
    CHECK_STATUS(symm_put_signal(NULL, 0, msg, 4, sig, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_put_signal(data, 0, msg, 4, NULL, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_signal_op((symm_buf)(uintptr_t)0x1234, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_HANDLE);
    symm_buf stale = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 4, &stale));
    CHECK_OK(symm_buf_free(stale));
    CHECK_STATUS(symm_signal_fetch(stale, 0, &v), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_signal_wait_until(stale, 0, SYMM_CMP_EQ, 0, &v), SYMM_ERR_INVALID_HANDLE);
    /* Failed calls leave the out-parameter alone. */
    ASSERT_U64_EQ(v, 0x5a5a);

    /* Data and signal from two different contexts (a second job membership). */
    symm_ctx ctx2 = symm_test_init(SYMM_BACKEND_AUTO);
    symm_buf sig2 = NULL;
    CHECK_OK(symm_buf_alloc(ctx2, SYMM_DTYPE_UINT64, 4, &sig2));
    CHECK_STATUS(symm_put_signal(data, 0, msg, 4, sig2, 0, 1, SYMM_SIGNAL_SET, me),
                 SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm_last_error(), "different contexts") != NULL);
    CHECK_OK(symm_signal_op(sig2, 1, 5, SYMM_SIGNAL_SET, me));
    CHECK_OK(symm_signal_fetch(sig2, 1, &v));
    ASSERT_U64_EQ(v, 5);
    CHECK_OK(symm_buf_free(sig2));
    CHECK_OK(symm_finalize(&ctx2));
    v = 0x5a5a;

    /* Messages name the function. */
    CHECK_STATUS(symm_signal_op(sig, 0, 1, SYMM_SIGNAL_SET, n), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm_last_error(), "symm_signal_op") != NULL);
    ASSERT_TRUE(strstr(symm_last_error(), "outside") != NULL);

    /* Zero-length put_signal still signals; value_out is optional. */
    CHECK_OK(symm_signal_op(sig, SIG_OP, 0, SYMM_SIGNAL_SET, me));
    CHECK_OK(symm_put_signal(data, 0, NULL, 0, sig, SIG_OP, 41, SYMM_SIGNAL_SET, me));
    CHECK_OK(symm_put_signal_nbi(data, dcount, NULL, 0, sig, SIG_OP, 1, SYMM_SIGNAL_ADD, me));
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_signal_wait_until(sig, SIG_OP, SYMM_CMP_EQ, 42, NULL));
    CHECK_OK(symm_barrier_all(ctx));
}

int main(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_AUTO);
    int32_t n = symm_n_pes(ctx);
    symm_buf data = NULL, sig = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, (uint64_t)(N_SIG + n) * CHUNK, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, N_SIG, &sig));

    for (int kind = SIG_SET; kind <= SIG_NBI_ADD; kind++) {
        ring_round_trip(ctx, data, sig, kind);
        CHECK_OK(symm_barrier_all(ctx));
    }
    symm_buf big = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, BIG, &big));
    big_messages(ctx, big, sig, SYMM_SIGNAL_SET, false);
    big_messages(ctx, big, sig, SYMM_SIGNAL_ADD, false);
    big_messages(ctx, big, sig, SYMM_SIGNAL_SET, true);
    big_messages(ctx, big, sig, SYMM_SIGNAL_ADD, true);
    CHECK_OK(symm_buf_free(big));
    gather(ctx, data, sig);
    wait_comparisons(ctx, sig);
    signal_ops(ctx, sig);
    errors(ctx, data, sig);

    CHECK_OK(symm_buf_free(sig));
    CHECK_OK(symm_buf_free(data));
    CHECK_OK(symm_finalize(&ctx));
    if (symm_test_pe == 0) printf("test_signal: ok (%d PEs)\n", n);
    return 0;
}

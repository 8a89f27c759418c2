/*
 * Point-to-point waits and tests: every comparison on every integer dtype
 * against a C reference, all/any/some (+ status masks, + vector forms) as
 * tests and as waits that really block on another PE, the empty and
 * all-excluded cases, and argument errors.
 */
#include "p2p_util.h"

#define N 24 /* elements per wait set */

/* Values that probe sign and width edges once truncated to each dtype. */
static const int64_t probes[] = {
    0, 1, -1, 2, -2, 127, -128, 255, 32767, -32768, 65535, INT32_MAX, INT32_MIN,
    (int64_t)UINT32_MAX, INT64_MAX, INT64_MIN,
};
#define N_PROBES (sizeof probes / sizeof probes[0])

/* ---- Single-PE semantics (test forms), every dtype ---- */

/* symm_test and symm_wait_until (when true) for every (element, value, cmp). */
static void comparisons(symm_ctx ctx, uint32_t dtype) {
    int32_t me = symm_my_pe(ctx);
    symm_buf buf = NULL;
    CHECK_OK(symm_buf_alloc(ctx, dtype, 3, &buf));
    uint8_t elem[8], ref[8];
    for (uint64_t a = 0; a < N_PROBES; a++) {
        p2p_store(dtype, elem, probes[a]);
        /* Index 1, so 1/2-byte elements sit inside a word with neighbours. */
        CHECK_OK(symm_p(buf, 1, elem, me));
        for (uint64_t b = 0; b < N_PROBES; b++) {
            p2p_store(dtype, ref, probes[b]);
            for (uint32_t cmp = SYMM_CMP_EQ; cmp <= SYMM_CMP_LE; cmp++) {
                bool want = p2p_ref_cmp(dtype, cmp, elem, ref);
                int32_t sat = -1;
                CHECK_OK(symm_test(buf, 1, cmp, ref, &sat));
                if (sat != (int32_t)want)
                    TEST_FAIL_("dtype %u: %lld %s %lld gave %d, expected %d", dtype,
                               (long long)probes[a], p2p_cmp_names[cmp], (long long)probes[b],
                               sat, want);
                if (want) CHECK_OK(symm_wait_until(buf, 1, cmp, ref));
            }
        }
    }
    CHECK_OK(symm_buf_free(buf));
}

/* Reference for all/any/some over elems[] (N elements of dtype). */
typedef struct expect {
    bool all, any;
    uint64_t first; /* UINT64_MAX if none */
    uint64_t nsome;
    uint64_t some[N];
} expect;

static expect reference(uint32_t dtype, const uint8_t *elems, const int32_t *status, uint32_t cmp,
                        const uint8_t *values, bool vector, uint64_t nelems) {
    uint32_t es = p2p_size(dtype);
    expect e = {.all = true, .first = UINT64_MAX};
    for (uint64_t i = 0; i < nelems; i++) {
        if (status && status[i]) continue;
        bool t = p2p_ref_cmp(dtype, cmp, elems + i * es, vector ? values + i * es : values);
        if (!t) e.all = false;
        if (t && !e.any) e.first = i;
        if (t) {
            e.any = true;
            e.some[e.nsome++] = i;
        }
    }
    return e;
}

/* Every test_* form against the reference for one configuration; the waits
 * too where they would return at once. */
static void check_sets(symm_buf buf, uint32_t dtype, const uint8_t *elems, const int32_t *status,
                       uint32_t cmp, const uint8_t *values, bool vector, uint64_t nelems) {
    expect e = reference(dtype, elems, status, cmp, values, vector, nelems);
    int32_t sat = -1;
    uint64_t found = 77, nfound = 77, idx[N];
    memset(idx, 0xee, sizeof idx);

    if (vector)
        CHECK_OK(symm_test_all_vector(buf, 0, nelems, status, cmp, values, &sat));
    else
        CHECK_OK(symm_test_all(buf, 0, nelems, status, cmp, values, &sat));
    ASSERT_EQ(sat, e.all);

    if (vector)
        CHECK_OK(symm_test_any_vector(buf, 0, nelems, status, cmp, values, &sat, &found));
    else
        CHECK_OK(symm_test_any(buf, 0, nelems, status, cmp, values, &sat, &found));
    ASSERT_EQ(sat, e.any);
    if (e.any) {
        /* Any satisfied, included element is a valid answer. */
        bool ok = false;
        for (uint64_t k = 0; k < e.nsome; k++) ok |= e.some[k] == found;
        ASSERT_TRUE(ok);
    } else {
        ASSERT_U64_EQ(found, UINT64_MAX);
    }

    if (vector)
        CHECK_OK(symm_test_some_vector(buf, 0, nelems, status, cmp, values, idx, &nfound));
    else
        CHECK_OK(symm_test_some(buf, 0, nelems, status, cmp, values, idx, &nfound));
    ASSERT_U64_EQ(nfound, e.nsome);
    for (uint64_t k = 0; k < e.nsome; k++) ASSERT_U64_EQ(idx[k], e.some[k]);

    if (e.all) {
        if (vector)
            CHECK_OK(symm_wait_until_all_vector(buf, 0, nelems, status, cmp, values));
        else
            CHECK_OK(symm_wait_until_all(buf, 0, nelems, status, cmp, values));
    }
    if (e.any) {
        found = 77;
        memset(idx, 0xee, sizeof idx);
        if (vector) {
            CHECK_OK(symm_wait_until_any_vector(buf, 0, nelems, status, cmp, values, &found));
            CHECK_OK(symm_wait_until_some_vector(buf, 0, nelems, status, cmp, values, idx,
                                                 &nfound));
        } else {
            CHECK_OK(symm_wait_until_any(buf, 0, nelems, status, cmp, values, &found));
            CHECK_OK(symm_wait_until_some(buf, 0, nelems, status, cmp, values, idx, &nfound));
        }
        bool ok = false;
        for (uint64_t k = 0; k < e.nsome; k++) ok |= e.some[k] == found;
        ASSERT_TRUE(ok);
        ASSERT_U64_EQ(nfound, e.nsome);
        for (uint64_t k = 0; k < e.nsome; k++) ASSERT_U64_EQ(idx[k], e.some[k]);
    }
}

/* Random element sets, masks and vectors on every dtype. */
static void sets(symm_ctx ctx, uint32_t dtype, uint64_t seed) {
    int32_t me = symm_my_pe(ctx);
    uint32_t es = p2p_size(dtype);
    symm_buf buf = NULL;
    CHECK_OK(symm_buf_alloc(ctx, dtype, N, &buf));
    uint64_t rng = seed ^ ((uint64_t)dtype << 32) ^ (uint64_t)me;
    uint8_t elems[N * 8], values[N * 8];
    int32_t status[N];
    for (int iter = 0; iter < 60; iter++) {
        uint64_t nelems = iter < 3 ? (uint64_t)iter : 1 + p2p_rand_below(&rng, N);
        /* Small values so that comparisons come out both ways. */
        for (uint64_t i = 0; i < N; i++) {
            p2p_store(dtype, elems + i * es, (int64_t)p2p_rand_below(&rng, 5) - 2);
            p2p_store(dtype, values + i * es, (int64_t)p2p_rand_below(&rng, 5) - 2);
            status[i] = p2p_rand_below(&rng, 4) == 0 ? 1 + (int32_t)p2p_rand_below(&rng, 3) : 0;
        }
        if (iter % 7 == 0) /* every element excluded */
            for (uint64_t i = 0; i < N; i++) status[i] = -1;
        CHECK_OK(symm_put(buf, 0, elems, N, me));
        uint32_t cmp = (uint32_t)p2p_rand_below(&rng, 6);
        bool masked = iter % 3 != 1;
        check_sets(buf, dtype, elems, masked ? status : NULL, cmp, values, false, nelems);
        check_sets(buf, dtype, elems, masked ? status : NULL, cmp, values, true, nelems);
    }
    CHECK_OK(symm_buf_free(buf));
}

/* Fixed cases whose answers are spelled out. */
static void spelled_out(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx);
    symm_buf buf = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 8, &buf));
    int32_t init[8] = {5, -3, 5, 9, 0, 5, -7, 2};
    CHECK_OK(symm_put(buf, 0, init, 8, me));
    int32_t five = 5, zero = 0, sat = -1;
    uint64_t found = 0, idx[8], nfound = 0;

    CHECK_OK(symm_test_some(buf, 0, 8, NULL, SYMM_CMP_EQ, &five, idx, &nfound));
    ASSERT_U64_EQ(nfound, 3);
    ASSERT_U64_EQ(idx[0], 0);
    ASSERT_U64_EQ(idx[1], 2);
    ASSERT_U64_EQ(idx[2], 5);
    int32_t mask[8] = {1, 0, 0, 0, 0, 1, 0, 0}; /* exclude 0 and 5 */
    CHECK_OK(symm_test_some(buf, 0, 8, mask, SYMM_CMP_EQ, &five, idx, &nfound));
    ASSERT_U64_EQ(nfound, 1);
    ASSERT_U64_EQ(idx[0], 2);
    CHECK_OK(symm_test_any(buf, 0, 8, mask, SYMM_CMP_EQ, &five, &sat, &found));
    ASSERT_EQ(sat, 1);
    ASSERT_U64_EQ(found, 2);
    /* Sub-range: index is the base of found/indices. */
    CHECK_OK(symm_test_any(buf, 3, 5, NULL, SYMM_CMP_LT, &zero, &sat, &found));
    ASSERT_EQ(sat, 1);
    ASSERT_U64_EQ(found, 3); /* element 6 = -7 */
    CHECK_OK(symm_test_some(buf, 1, 7, NULL, SYMM_CMP_LT, &zero, idx, &nfound));
    ASSERT_U64_EQ(nfound, 2);
    ASSERT_U64_EQ(idx[0], 0); /* element 1 */
    ASSERT_U64_EQ(idx[1], 5); /* element 6 */
    /* Signed: -3 < 0; the same bits as UINT32 are large. */
    CHECK_OK(symm_test(buf, 1, SYMM_CMP_LT, &zero, &sat));
    ASSERT_EQ(sat, 1);
    int32_t all_ne[8] = {0, -3, 0, 9, 1, 0, -7, 2};
    CHECK_OK(symm_test_all_vector(buf, 0, 8, mask, SYMM_CMP_NE, all_ne, &sat));
    ASSERT_EQ(sat, 0); /* element 1: -3 vs -3 is not NE */
    int32_t all_eq[8] = {99, -3, 5, 9, 0, 99, -7, 2};
    CHECK_OK(symm_test_all_vector(buf, 0, 8, mask, SYMM_CMP_EQ, all_eq, &sat));
    ASSERT_EQ(sat, 1); /* the two mismatches are masked */
    CHECK_OK(symm_test_all_vector(buf, 0, 8, NULL, SYMM_CMP_EQ, all_eq, &sat));
    ASSERT_EQ(sat, 0);
    CHECK_OK(symm_wait_until_all_vector(buf, 0, 8, mask, SYMM_CMP_EQ, all_eq));

    /* Empty and all-excluded sets. */
    int32_t none[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int k = 0; k < 2; k++) {
        uint64_t ne = k ? 8 : 0;
        const int32_t *st = k ? none : NULL;
        sat = -1;
        CHECK_OK(symm_test_all(buf, 0, ne, st, SYMM_CMP_EQ, &five, &sat));
        ASSERT_EQ(sat, 1);
        found = 0;
        CHECK_OK(symm_test_any(buf, 0, ne, st, SYMM_CMP_EQ, &five, &sat, &found));
        ASSERT_EQ(sat, 0);
        ASSERT_U64_EQ(found, UINT64_MAX);
        nfound = 9;
        CHECK_OK(symm_test_some(buf, 0, ne, st, SYMM_CMP_EQ, &five, idx, &nfound));
        ASSERT_U64_EQ(nfound, 0);
        CHECK_OK(symm_wait_until_all(buf, 0, ne, st, SYMM_CMP_EQ, &five));
        found = 0;
        CHECK_OK(symm_wait_until_any(buf, 0, ne, st, SYMM_CMP_EQ, &five, &found));
        ASSERT_U64_EQ(found, UINT64_MAX);
        nfound = 9;
        CHECK_OK(symm_wait_until_some(buf, 0, ne, st, SYMM_CMP_EQ, &five, idx, &nfound));
        ASSERT_U64_EQ(nfound, 0);
        CHECK_OK(symm_wait_until_all_vector(buf, 0, ne, st, SYMM_CMP_EQ, all_eq));
        CHECK_OK(symm_wait_until_any_vector(buf, 0, ne, st, SYMM_CMP_EQ, all_eq, &found));
        ASSERT_U64_EQ(found, UINT64_MAX);
    }
    /* nelems 0 needs no value pointer. */
    CHECK_OK(symm_wait_until_all(buf, 8, 0, NULL, SYMM_CMP_EQ, NULL));
    CHECK_OK(symm_test_any_vector(buf, 0, 0, NULL, SYMM_CMP_EQ, NULL, &sat, &found));
    ASSERT_EQ(sat, 0);
    /* Optional outputs of the waits. */
    CHECK_OK(symm_wait_until_any(buf, 0, 8, NULL, SYMM_CMP_EQ, &five, NULL));
    CHECK_OK(symm_wait_until_some(buf, 0, 8, NULL, SYMM_CMP_EQ, &five, NULL, NULL));
    CHECK_OK(symm_wait_until_some(buf, 0, 8, NULL, SYMM_CMP_EQ, &five, NULL, &nfound));
    ASSERT_U64_EQ(nfound, 3);
    CHECK_OK(symm_test_some(buf, 0, 8, NULL, SYMM_CMP_EQ, &five, NULL, &nfound));
    ASSERT_U64_EQ(nfound, 3);
    CHECK_OK(symm_buf_free(buf));
}

/* ---- Blocking waits across PEs ---- */

/* Control signals (UINT64 buffer ctl on each PE). */
enum { CTL_GO = 0, N_CTL = 4 };

/* Round r of a scenario: PE r waits, its left neighbour produces after PE r
 * said go (and after a pause, so the wait blocks). Returns the role. */
typedef struct roles {
    bool consumer, producer;
    int32_t peer; /* consumer: left (producer); producer: right (consumer) */
} roles_t;

static roles_t role(int32_t me, int32_t n, int32_t r) {
    roles_t ro = {me == r, me == (r + n - 1) % n, 0};
    ro.peer = ro.consumer ? (r + n - 1) % n : r;
    return ro;
}

static uint64_t go_count = 0; /* go signals received so far */

static void say_go(symm_buf ctl, int32_t producer) {
    CHECK_OK(symm_signal_op(ctl, CTL_GO, 1, SYMM_SIGNAL_ADD, producer));
}

static void await_go(symm_buf ctl) {
    go_count++;
    CHECK_OK(symm_signal_wait_until(ctl, CTL_GO, SYMM_CMP_GE, go_count, NULL));
    p2p_sleep_us(1500);
}

/* wait_until_all: the producer fills the elements one at a time, in a
 * scrambled order; the consumer's wait must not return before the last. */
static void blocking_all(symm_ctx ctx, symm_buf buf, symm_buf ctl, int32_t r) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    roles_t ro = role(me, n, r);
    int64_t target = 1000 + r;
    if (ro.consumer) {
        int32_t sat = -1;
        CHECK_OK(symm_test_all(buf, 0, N, NULL, SYMM_CMP_EQ, &target, &sat));
        ASSERT_EQ(sat, 0);
        say_go(ctl, ro.peer);
    }
    if (ro.producer) {
        await_go(ctl);
        for (uint64_t k = 0; k < N; k++) {
            uint64_t i = (k * 7 + 3) % N;
            CHECK_OK(symm_p(buf, i, &target, ro.peer));
            if (k % 6 == 0) p2p_sleep_us(200);
        }
    }
    if (ro.consumer) {
        CHECK_OK(symm_wait_until_all(buf, 0, N, NULL, SYMM_CMP_EQ, &target));
        int64_t got[N];
        CHECK_OK(symm_get(got, buf, 0, N, me));
        for (uint64_t i = 0; i < N; i++) ASSERT_EQ(got[i], target);
    }
    CHECK_OK(symm_barrier_all(ctx));
}

/* wait_until_any with a mask: an excluded element already satisfies the
 * comparison; the wait must return the included one the producer sets. */
static void blocking_any(symm_ctx ctx, symm_buf buf, symm_buf ctl, int32_t r, bool vector) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    roles_t ro = role(me, n, r);
    int64_t vals[N];
    for (uint64_t i = 0; i < N; i++) vals[i] = vector ? 5000 + (int64_t)i : 5000;
    uint64_t decoy = (uint64_t)r % N, pick = ((uint64_t)r * 5 + 11) % N;
    if (pick == decoy) pick = (pick + 1) % N;
    int32_t status[N] = {0};
    status[decoy] = 1;
    if (ro.consumer) {
        int64_t zero[N] = {0};
        CHECK_OK(symm_put(buf, 0, zero, N, me));
        CHECK_OK(symm_p(buf, decoy, &vals[decoy], me)); /* satisfied but excluded */
        int32_t sat = -1;
        uint64_t found = 0;
        CHECK_OK(symm_test_any_vector(buf, 0, N, status, SYMM_CMP_GE, vals, &sat, &found));
        ASSERT_EQ(sat, 0);
        ASSERT_U64_EQ(found, UINT64_MAX);
        say_go(ctl, ro.peer);
    }
    if (ro.producer) {
        await_go(ctl);
        int64_t v = vals[pick] + 3;
        CHECK_OK(symm_p(buf, pick, &v, ro.peer));
    }
    if (ro.consumer) {
        uint64_t found = UINT64_MAX - 1;
        if (vector)
            CHECK_OK(symm_wait_until_any_vector(buf, 0, N, status, SYMM_CMP_GE, vals, &found));
        else
            CHECK_OK(symm_wait_until_any(buf, 0, N, status, SYMM_CMP_GE, vals, &found));
        ASSERT_U64_EQ(found, pick);
    }
    CHECK_OK(symm_barrier_all(ctx));
}

/* wait_until_some: the producer sets a known subset with one put per element;
 * every index reported must be in the subset, and a later wait_until_all over
 * the subset completes it. */
static void blocking_some(symm_ctx ctx, symm_buf buf, symm_buf ctl, int32_t r, bool vector) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    roles_t ro = role(me, n, r);
    bool in_set[N];
    int64_t vals[N];
    for (uint64_t i = 0; i < N; i++) {
        in_set[i] = ((i * 13 + (uint64_t)r) % 5) == 0;
        vals[i] = vector ? -(int64_t)i - 1 : -1;
    }
    if (ro.consumer) {
        int64_t zero[N] = {0};
        CHECK_OK(symm_put(buf, 0, zero, N, me));
        uint64_t nfound = 99;
        CHECK_OK(symm_test_some(buf, 0, N, NULL, SYMM_CMP_LT, &vals[0], NULL, &nfound));
        ASSERT_U64_EQ(nfound, 0);
        say_go(ctl, ro.peer);
    }
    if (ro.producer) {
        await_go(ctl);
        for (uint64_t i = 0; i < N; i++) {
            if (!in_set[i]) continue;
            int64_t v = vals[i] - 1; /* strictly below */
            CHECK_OK(symm_p(buf, i, &v, ro.peer));
            p2p_sleep_us(100);
        }
    }
    if (ro.consumer) {
        uint64_t idx[N], nfound = 0;
        if (vector)
            CHECK_OK(symm_wait_until_some_vector(buf, 0, N, NULL, SYMM_CMP_LT, vals, idx, &nfound));
        else
            CHECK_OK(symm_wait_until_some(buf, 0, N, NULL, SYMM_CMP_LT, vals, idx, &nfound));
        ASSERT_TRUE(nfound >= 1);
        for (uint64_t k = 0; k < nfound; k++) {
            ASSERT_TRUE(idx[k] < N && in_set[idx[k]]);
            if (k) ASSERT_TRUE(idx[k] > idx[k - 1]);
        }
        int32_t status[N];
        for (uint64_t i = 0; i < N; i++) status[i] = !in_set[i];
        if (vector)
            CHECK_OK(symm_wait_until_all_vector(buf, 0, N, status, SYMM_CMP_LT, vals));
        else
            CHECK_OK(symm_wait_until_all(buf, 0, N, status, SYMM_CMP_LT, vals));
        CHECK_OK(symm_wait_until_some(buf, 0, N, NULL, SYMM_CMP_LT, vals, idx, &nfound));
        uint64_t expect_n = 0;
        for (uint64_t i = 0; i < N; i++) expect_n += in_set[i];
        ASSERT_U64_EQ(nfound, expect_n);
    }
    CHECK_OK(symm_barrier_all(ctx));
}

/* wait_until with each comparison on signed and unsigned 16-bit elements (read
 * through their containing word), each blocking until the producer's update. */
static void blocking_cmp(symm_ctx ctx, symm_buf buf16, symm_buf ubuf16, symm_buf ctl, int32_t r) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    roles_t ro = role(me, n, r);
    static const struct {
        uint32_t cmp;
        int64_t threshold, set_to;
    } steps[] = {
        {SYMM_CMP_EQ, -5, -5}, {SYMM_CMP_NE, -5, 300}, {SYMM_CMP_GT, 300, 301},
        {SYMM_CMP_GE, 1000, 1000}, {SYMM_CMP_LT, -1, -2}, {SYMM_CMP_LE, -30000, -32768},
    };
    uint64_t slot = 3; /* odd index: the upper half of its word */
    for (uint64_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        for (int u = 0; u < 2; u++) {
            symm_buf b = u ? ubuf16 : buf16;
            uint32_t dt = u ? SYMM_DTYPE_UINT16 : SYMM_DTYPE_INT16;
            uint8_t thr[2], val[2], cur[2];
            p2p_store(dt, thr, steps[s].threshold);
            p2p_store(dt, val, steps[s].set_to);
            bool pre = false;
            if (ro.consumer) {
                CHECK_OK(symm_g(b, slot, me, cur));
                pre = p2p_ref_cmp(dt, steps[s].cmp, cur, thr);
                int32_t sat = -1;
                CHECK_OK(symm_test(b, slot, steps[s].cmp, thr, &sat));
                ASSERT_EQ(sat, pre);
                say_go(ctl, ro.peer);
            }
            if (ro.producer) {
                await_go(ctl);
                /* Neighbouring elements change too: they must not disturb. */
                uint8_t junk[2] = {0xa5, 0x5a};
                CHECK_OK(symm_p(b, slot - 1, junk, ro.peer));
                CHECK_OK(symm_p(b, slot + 1, junk, ro.peer));
                CHECK_OK(symm_p(b, slot, val, ro.peer));
            }
            if (ro.consumer) {
                bool post = p2p_ref_cmp(dt, steps[s].cmp, val, thr);
                if (!pre && post) {
                    /* False before, true only once the producer's value lands. */
                    CHECK_OK(symm_wait_until(b, slot, steps[s].cmp, thr));
                    CHECK_OK(symm_g(b, slot, me, cur));
                    ASSERT_TRUE(memcmp(cur, val, 2) == 0);
                } else {
                    /* (As unsigned some steps hold already or never.) */
                    CHECK_OK(symm_wait_until(b, slot, SYMM_CMP_EQ, val));
                    int32_t sat = -1;
                    CHECK_OK(symm_test(b, slot, steps[s].cmp, thr, &sat));
                    ASSERT_EQ(sat, post);
                }
            }
            CHECK_OK(symm_barrier_all(ctx));
        }
    }
}

static void errors(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx);
    symm_buf fbuf = NULL, ibuf = NULL, hbuf = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, 4, &fbuf));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT16, 4, &hbuf));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 4, &ibuf));
    float f = 0;
    int32_t v = 0, vals[4] = {0}, sat = 7;
    uint64_t found = 7, nfound = 7, idx[4];
    (void)me;

    /* Integer dtypes only. */
    CHECK_STATUS(symm_wait_until(fbuf, 0, SYMM_CMP_EQ, &f), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm_last_error(), "symm_wait_until") != NULL);
    CHECK_STATUS(symm_test(fbuf, 0, SYMM_CMP_EQ, &f, &sat), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_test_all(hbuf, 0, 4, NULL, SYMM_CMP_EQ, &f, &sat), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_wait_until_any_vector(fbuf, 0, 4, NULL, SYMM_CMP_EQ, vals, &found),
                 SYMM_ERR_INVALID_ARG);
    /* Comparison codes. */
    CHECK_STATUS(symm_wait_until(ibuf, 0, 6, &v), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_test_some(ibuf, 0, 4, NULL, 100, &v, idx, &nfound), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_wait_until_all_vector(ibuf, 0, 4, NULL, UINT32_MAX, vals),
                 SYMM_ERR_INVALID_ARG);
    /* Ranges. */
    CHECK_STATUS(symm_wait_until(ibuf, 4, SYMM_CMP_EQ, &v), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_test_all(ibuf, 1, 4, NULL, SYMM_CMP_EQ, &v, &sat), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_wait_until_some(ibuf, UINT64_MAX, 2, NULL, SYMM_CMP_EQ, &v, idx, &nfound),
                 SYMM_ERR_OUT_OF_BOUNDS);
    ASSERT_TRUE(strstr(symm_last_error(), "symm_wait_until_some") != NULL);
    CHECK_STATUS(symm_test_any_vector(ibuf, 2, UINT64_MAX, NULL, SYMM_CMP_EQ, vals, &sat, &found),
                 SYMM_ERR_OUT_OF_BOUNDS);
    /* NULL value(s) and required outputs of tests. */
    CHECK_STATUS(symm_wait_until(ibuf, 0, SYMM_CMP_EQ, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_wait_until_all_vector(ibuf, 0, 4, NULL, SYMM_CMP_EQ, NULL),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_test(ibuf, 0, SYMM_CMP_EQ, &v, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_test_any(ibuf, 0, 4, NULL, SYMM_CMP_EQ, &v, NULL, &found),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_test_some_vector(ibuf, 0, 4, NULL, SYMM_CMP_EQ, vals, idx, NULL),
                 SYMM_ERR_INVALID_ARG);
    /* Handles. */
    CHECK_STATUS(symm_wait_until(NULL, 0, SYMM_CMP_EQ, &v), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_test_all((symm_buf)(uintptr_t)0xdead, 0, 1, NULL, SYMM_CMP_EQ, &v, &sat),
                 SYMM_ERR_INVALID_HANDLE);
    symm_buf stale = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 4, &stale));
    CHECK_OK(symm_buf_free(stale));
    CHECK_STATUS(symm_test_any(stale, 0, 1, NULL, SYMM_CMP_EQ, &v, &sat, &found),
                 SYMM_ERR_INVALID_HANDLE);
    /* Failed calls leave outputs alone. */
    ASSERT_EQ(sat, 7);
    ASSERT_U64_EQ(found, 7);
    ASSERT_U64_EQ(nfound, 7);

    CHECK_OK(symm_buf_free(ibuf));
    CHECK_OK(symm_buf_free(hbuf));
    CHECK_OK(symm_buf_free(fbuf));
}

int main(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_AUTO);
    int32_t n = symm_n_pes(ctx);
    uint64_t seed = p2p_seed(0x5eed0001);
    if (symm_test_pe == 0) printf("test_wait: seed 0x%llx\n", (unsigned long long)seed);

    for (uint64_t d = 0; d < P2P_N_INT_DTYPES; d++) {
        comparisons(ctx, p2p_int_dtypes[d]);
        sets(ctx, p2p_int_dtypes[d], seed);
    }
    spelled_out(ctx);
    CHECK_OK(symm_barrier_all(ctx));

    symm_buf buf = NULL, ctl = NULL, b16 = NULL, u16 = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, N, &buf));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, N_CTL, &ctl));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT16, 8, &b16));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT16, 8, &u16));
    for (int32_t r = 0; r < n; r++) {
        blocking_all(ctx, buf, ctl, r);
        blocking_any(ctx, buf, ctl, r, r % 2 == 0);
        blocking_any(ctx, buf, ctl, r, r % 2 == 1);
        blocking_some(ctx, buf, ctl, r, false);
        blocking_some(ctx, buf, ctl, r, true);
    }
    blocking_cmp(ctx, b16, u16, ctl, n - 1);
    if (n > 1) blocking_cmp(ctx, b16, u16, ctl, 0);
    errors(ctx);

    CHECK_OK(symm_buf_free(u16));
    CHECK_OK(symm_buf_free(b16));
    CHECK_OK(symm_buf_free(ctl));
    CHECK_OK(symm_buf_free(buf));
    CHECK_OK(symm_finalize(&ctx));
    if (symm_test_pe == 0) printf("test_wait: ok (%d PEs)\n", n);
    return 0;
}

/*
 * Atomics: every op on every allowed dtype against a computed reference, on
 * every PE; float/double FETCH/SET/SWAP bit-exact; concurrent atomics from all
 * PEs on one location (exact totals, unique tickets, a compare-swap lock and a
 * ticket lock guarding non-atomic updates, OR/AND/XOR/SWAP patterns);
 * rejected op x dtype pairs and argument errors.
 */
#include <stdlib.h>

#include "p2p_util.h"

#define K 200  /* operations per PE in the counting tests */
#define K_LOCK 25

static const uint32_t amo_int_dtypes[] = {SYMM_DTYPE_INT32, SYMM_DTYPE_INT64,
                                          SYMM_DTYPE_UINT32, SYMM_DTYPE_UINT64};

static bool op_fetches(uint32_t op) {
    return !(op == SYMM_AMO_SET || op == SYMM_AMO_INC || op == SYMM_AMO_ADD ||
             op == SYMM_AMO_AND || op == SYMM_AMO_OR || op == SYMM_AMO_XOR);
}

/* Reference result of op on a 32- or 64-bit word (two's complement: the same
 * bits for signed and unsigned dtypes). */
static uint64_t ref_op(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t mask) {
    switch (op) {
    case SYMM_AMO_FETCH: return old;
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: return v & mask;
    case SYMM_AMO_COMPARE_SWAP: return ((old & mask) == (cmp & mask) ? v : old) & mask;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: return (old + 1) & mask;
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: return (old + v) & mask;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: return old & v & mask;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: return (old | v) & mask;
    default: return (old ^ v) & mask;
    }
}

/* Element bits <-> uint64 for 4/8-byte dtypes. */
static void put_bits(uint32_t size, void *p, uint64_t x) {
    if (size == 4) {
        uint32_t v = (uint32_t)x;
        memcpy(p, &v, 4);
    } else {
        memcpy(p, &x, 8);
    }
}

static uint64_t get_bits(uint32_t size, const void *p) {
    if (size == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* ---- A: every op x integer dtype x target PE, against the reference ---- */

static void reference_ops(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    static const uint64_t inits[] = {0, 1, 0xffffffffffffffffull, 0x7fffffffull,
                                     0x80000000ffff0000ull};
    static const uint64_t operands[] = {3, 0xfffffffffffffff9ull /* -7 */, 0xf0f0f0f0a5a5a5a5ull,
                                        0x80000000ull};
    for (uint64_t d = 0; d < 4; d++) {
        uint32_t dtype = amo_int_dtypes[d], size = p2p_size(dtype);
        uint64_t mask = size == 4 ? 0xffffffffull : ~0ull;
        symm_buf buf = NULL;
        CHECK_OK(symm_buf_alloc(ctx, dtype, (uint64_t)n, &buf)); /* element me is mine */
        for (int32_t k = 0; k < n; k++) {
            int32_t pe = (me + k) % n;
            for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
                for (uint64_t a = 0; a < sizeof inits / sizeof inits[0]; a++) {
                    for (uint64_t b = 0; b < sizeof operands / sizeof operands[0]; b++) {
                        uint64_t init = inits[a] & mask;
                        /* COMPARE_SWAP: alternate a matching and a missing compare. */
                        uint64_t cmpv = (b % 2) ? init : init ^ 1;
                        uint8_t e[8], v[8], c[8], f[8];
                        put_bits(size, e, init);
                        put_bits(size, v, operands[b]);
                        put_bits(size, c, cmpv);
                        memset(f, 0xcc, sizeof f);
                        CHECK_OK(symm_p(buf, (uint64_t)me, e, pe));
                        CHECK_OK(symm_atomic(buf, (uint64_t)me, op, v, c, pe, f));
                        uint8_t after[8];
                        CHECK_OK(symm_g(buf, (uint64_t)me, pe, after));
                        uint64_t want = ref_op(op, init, operands[b], cmpv, mask);
                        if (get_bits(size, after) != want)
                            TEST_FAIL_("dtype %u op %u pe %d: 0x%llx op 0x%llx -> 0x%llx, "
                                       "expected 0x%llx", dtype, op, pe,
                                       (unsigned long long)init, (unsigned long long)operands[b],
                                       (unsigned long long)get_bits(size, after),
                                       (unsigned long long)want);
                        /* fetched: the prior value, or untouched. */
                        uint64_t untouched = size == 4 ? 0xccccccccull : 0xccccccccccccccccull;
                        ASSERT_U64_EQ(get_bits(size, f), op_fetches(op) ? init : untouched);
                    }
                }
            }
        }
        CHECK_OK(symm_barrier_all(ctx));
        CHECK_OK(symm_buf_free(buf));
    }
}

/* ---- B: FLOAT32/FLOAT64 FETCH/SET/SWAP, bit-exact ---- */

static void float_ops(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    int32_t right = (me + 1) % n;
    symm_buf f32 = NULL, f64 = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT32, (uint64_t)n, &f32));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, (uint64_t)n, &f64));
    static const uint32_t bits32[] = {0x3fc00000u /* 1.5 */, 0x80000000u /* -0 */,
                                      0x7f7fffffu /* FLT_MAX */, 0x00000001u /* denormal */,
                                      0x7fc01234u /* NaN with payload */};
    static const uint64_t bits64[] = {0x3ff8000000000000ull, 0x8000000000000000ull,
                                      0x7fefffffffffffffull, 0x0000000000000001ull,
                                      0x7ff8000000abcdefull};
    for (int32_t t = 0; t < 2; t++) {
        int32_t pe = t ? right : me;
        for (uint64_t i = 0; i < 5; i++) {
            uint64_t j = (i + 2) % 5;
            /* FLOAT32 */
            uint32_t init = bits32[i], val = bits32[j], got = 0, fetched = 0;
            CHECK_OK(symm_p(f32, (uint64_t)me, &init, pe));
            CHECK_OK(symm_atomic(f32, (uint64_t)me, SYMM_AMO_FETCH, NULL, NULL, pe, &fetched));
            ASSERT_U64_EQ(fetched, init);
            CHECK_OK(symm_atomic(f32, (uint64_t)me, SYMM_AMO_SWAP, &val, NULL, pe, &fetched));
            ASSERT_U64_EQ(fetched, init);
            CHECK_OK(symm_g(f32, (uint64_t)me, pe, &got));
            ASSERT_U64_EQ(got, val);
            CHECK_OK(symm_atomic(f32, (uint64_t)me, SYMM_AMO_SET, &init, NULL, pe, NULL));
            CHECK_OK(symm_g(f32, (uint64_t)me, pe, &got));
            ASSERT_U64_EQ(got, init);
            /* FLOAT64 */
            uint64_t init64 = bits64[i], val64 = bits64[j], got64 = 0, fetched64 = 0;
            CHECK_OK(symm_p(f64, (uint64_t)me, &init64, pe));
            CHECK_OK(symm_atomic(f64, (uint64_t)me, SYMM_AMO_FETCH, NULL, NULL, pe, &fetched64));
            ASSERT_U64_EQ(fetched64, init64);
            CHECK_OK(symm_atomic(f64, (uint64_t)me, SYMM_AMO_SWAP, &val64, NULL, pe, &fetched64));
            ASSERT_U64_EQ(fetched64, init64);
            CHECK_OK(symm_g(f64, (uint64_t)me, pe, &got64));
            ASSERT_U64_EQ(got64, val64);
            CHECK_OK(symm_atomic(f64, (uint64_t)me, SYMM_AMO_SET, &init64, NULL, pe, NULL));
            CHECK_OK(symm_g(f64, (uint64_t)me, pe, &got64));
            ASSERT_U64_EQ(got64, init64);
        }
    }
    /* Typed values, as a user writes them. */
    double d = -2.75, dold = 0;
    CHECK_OK(symm_atomic(f64, (uint64_t)me, SYMM_AMO_SWAP, &d, NULL, right, &dold));
    CHECK_OK(symm_atomic(f64, (uint64_t)me, SYMM_AMO_FETCH, NULL, NULL, right, &dold));
    ASSERT_DBL_NEAR(dold, -2.75, 0);
    float fl = 6.5f, flold = 0;
    CHECK_OK(symm_atomic(f32, (uint64_t)me, SYMM_AMO_SET, &fl, NULL, right, NULL));
    CHECK_OK(symm_atomic(f32, (uint64_t)me, SYMM_AMO_FETCH, NULL, NULL, right, &flold));
    ASSERT_DBL_NEAR(flold, 6.5, 0);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(f64));
    CHECK_OK(symm_buf_free(f32));
}

/* ---- C: concurrency ---- */

enum {
    C_SUM64 = 0, C_TICKETS, C_LOCK, C_NEXT, C_SERVING, C_SWAP, C_OR, C_AND, C_XOR, N_C64
};

static void spin_pause(uint64_t *spins) {
    if (++*spins % 64 == 0) p2p_sleep_us(20);
    else sched_yield();
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t xor_pattern(int32_t pe) {
    uint64_t s = 0xfeed0000u + (uint64_t)pe;
    return p2p_rand(&s);
}

static void concurrency(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_buf c64 = NULL, c32 = NULL, plain = NULL, gathered = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, N_C64, &c64));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 4, &c32));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 2, &plain));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, (uint64_t)n * K + (uint64_t)n, &gathered));
    uint64_t ones = ~0ull;
    CHECK_OK(symm_p(c64, C_AND, &ones, me));
    CHECK_OK(symm_barrier_all(ctx));

    /* 1. FETCH_ADD(pe + 1) K times on PE 0 (uint64), ADD on every PE (int32,
     *    negative increments), FETCH_INC tickets on PE 0, INC on every PE. */
    uint64_t mine = (uint64_t)me + 1, last = 0;
    int32_t minus = -(me + 1);
    uint64_t tickets[K];
    for (int i = 0; i < K; i++) {
        uint64_t f = 0;
        CHECK_OK(symm_atomic(c64, C_SUM64, SYMM_AMO_FETCH_ADD, &mine, NULL, 0, &f));
        if (i) ASSERT_TRUE(f > last); /* our own adds are ordered */
        last = f;
        CHECK_OK(symm_atomic(c64, C_TICKETS, SYMM_AMO_FETCH_INC, NULL, NULL, 0, &tickets[i]));
        int32_t pe = (me + i) % n;
        CHECK_OK(symm_atomic(c32, 0, SYMM_AMO_ADD, &minus, NULL, pe, NULL));
        CHECK_OK(symm_atomic(c32, 1, SYMM_AMO_INC, NULL, NULL, pe, NULL));
    }
    CHECK_OK(symm_put(gathered, (uint64_t)me * K, tickets, K, 0));

    /* 2. OR / AND / XOR patterns on every PE; FETCH_ forms check own bit. */
    uint64_t bit = 1ull << (me % 64), nbit = ~bit, pat = xor_pattern(me);
    for (int32_t p = 0; p < n; p++) {
        uint64_t f = 0;
        CHECK_OK(symm_atomic(c64, C_OR, SYMM_AMO_FETCH_OR, &bit, NULL, p, &f));
        ASSERT_TRUE((f & bit) == 0);
        CHECK_OK(symm_atomic(c64, C_AND, SYMM_AMO_FETCH_AND, &nbit, NULL, p, &f));
        ASSERT_TRUE((f & bit) != 0);
        /* XOR an odd number of times: 2*me + 1. */
        for (int32_t t = 0; t < 2 * me + 1; t++) {
            if (t % 2) CHECK_OK(symm_atomic(c64, C_XOR, SYMM_AMO_XOR, &pat, NULL, p, NULL));
            else CHECK_OK(symm_atomic(c64, C_XOR, SYMM_AMO_FETCH_XOR, &pat, NULL, p, &f));
        }
    }

    /* 3. One SWAP each on PE 0: the fetched values and the final value are a
     *    permutation of 0..n. */
    uint64_t swapped = 0;
    CHECK_OK(symm_atomic(c64, C_SWAP, SYMM_AMO_SWAP, &mine, NULL, 0, &swapped));
    CHECK_OK(symm_put(gathered, (uint64_t)n * K + (uint64_t)me, &swapped, 1, 0));

    /* 4. Compare-swap lock on PE 0 guarding a non-atomic increment. */
    for (int i = 0; i < K_LOCK; i++) {
        uint64_t zero = 0, f = 1, spins = 0;
        for (;;) {
            CHECK_OK(symm_atomic(c64, C_LOCK, SYMM_AMO_COMPARE_SWAP, &mine, &zero, 0, &f));
            if (f == 0) break;
            ASSERT_TRUE(f >= 1 && f <= (uint64_t)n && f != mine);
            spin_pause(&spins);
        }
        int64_t x = 0;
        CHECK_OK(symm_g(plain, 0, 0, &x));
        if (i % 5 == 0) sched_yield(); /* widen the race window */
        x++;
        CHECK_OK(symm_p(plain, 0, &x, 0));
        CHECK_OK(symm_quiet(ctx));
        CHECK_OK(symm_atomic(c64, C_LOCK, SYMM_AMO_COMPARE_SWAP, &zero, &mine, 0, &f));
        ASSERT_U64_EQ(f, mine); /* nobody else held it */
    }

    /* 5. Ticket lock on PE 0 guarding another non-atomic increment. */
    for (int i = 0; i < K_LOCK; i++) {
        uint64_t my = 0, serving = 0, spins = 0, one = 1;
        CHECK_OK(symm_atomic(c64, C_NEXT, SYMM_AMO_FETCH_INC, NULL, NULL, 0, &my));
        for (;;) {
            CHECK_OK(symm_atomic(c64, C_SERVING, SYMM_AMO_FETCH, NULL, NULL, 0, &serving));
            if (serving == my) break;
            ASSERT_TRUE(serving < my);
            spin_pause(&spins);
        }
        int64_t x = 0;
        CHECK_OK(symm_g(plain, 1, 0, &x));
        x++;
        CHECK_OK(symm_p(plain, 1, &x, 0));
        CHECK_OK(symm_quiet(ctx));
        CHECK_OK(symm_atomic(c64, C_SERVING, SYMM_AMO_ADD, &one, NULL, 0, NULL));
    }

    CHECK_OK(symm_barrier_all(ctx));

    /* Everything is quiet: check exact results. */
    uint64_t nn = (uint64_t)n, v[N_C64];
    CHECK_OK(symm_get(v, c64, 0, N_C64, me));
    uint64_t xor_all = 0;
    for (int32_t p = 0; p < n; p++) xor_all ^= xor_pattern(p);
    uint64_t bits_all = n >= 64 ? ~0ull : (1ull << n) - 1;
    ASSERT_U64_EQ(v[C_OR], bits_all);
    ASSERT_U64_EQ(v[C_AND], ~bits_all);
    ASSERT_U64_EQ(v[C_XOR], xor_all);
    /* PE p sent its i-th ADD/INC to PE (p + i) % n. */
    int64_t want_add = 0, want_inc = 0;
    for (int32_t p = 0; p < n; p++) {
        for (int i = 0; i < K; i++) {
            if ((p + i) % n != me) continue;
            want_add -= p + 1;
            want_inc++;
        }
    }
    int32_t c[2];
    CHECK_OK(symm_get(c, c32, 0, 2, me));
    ASSERT_EQ(c[0], want_add);
    ASSERT_EQ(c[1], want_inc);
    if (me == 0) {
        ASSERT_U64_EQ(v[C_SUM64], (uint64_t)K * nn * (nn + 1) / 2);
        ASSERT_U64_EQ(v[C_TICKETS], (uint64_t)K * nn);
        ASSERT_U64_EQ(v[C_LOCK], 0);
        ASSERT_U64_EQ(v[C_NEXT], (uint64_t)K_LOCK * nn);
        ASSERT_U64_EQ(v[C_SERVING], (uint64_t)K_LOCK * nn);
        int64_t counts[2];
        CHECK_OK(symm_get(counts, plain, 0, 2, me));
        ASSERT_EQ(counts[0], (int64_t)K_LOCK * n);
        ASSERT_EQ(counts[1], (int64_t)K_LOCK * n);
        /* Tickets: each of 0 .. K*n-1 exactly once. */
        uint64_t *all = malloc(sizeof(uint64_t) * (nn * K + nn + 1));
        ASSERT_TRUE(all != NULL);
        CHECK_OK(symm_get(all, gathered, 0, nn * K, me));
        qsort(all, nn * K, sizeof *all, cmp_u64);
        for (uint64_t i = 0; i < nn * K; i++) ASSERT_U64_EQ(all[i], i);
        /* Swaps: fetched values + final value = 0..n. */
        CHECK_OK(symm_get(all, gathered, nn * K, nn, me));
        all[nn] = v[C_SWAP];
        qsort(all, nn + 1, sizeof *all, cmp_u64);
        for (uint64_t i = 0; i <= nn; i++) ASSERT_U64_EQ(all[i], i);
        free(all);
    }
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(gathered));
    CHECK_OK(symm_buf_free(plain));
    CHECK_OK(symm_buf_free(c32));
    CHECK_OK(symm_buf_free(c64));
}

/* ---- D: nbi ---- */

static void nbi(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_buf b = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 1, &b));
    int64_t one = 1, f[16];
    for (int i = 0; i < 16; i++)
        CHECK_OK(symm_atomic_nbi(b, 0, SYMM_AMO_FETCH_ADD, &one, NULL, (me + 1) % n, &f[i]));
    CHECK_OK(symm_quiet(ctx));
    for (int i = 1; i < 16; i++) ASSERT_TRUE(f[i] > f[i - 1]);
    CHECK_OK(symm_barrier_all(ctx));
    int64_t total = 0;
    CHECK_OK(symm_atomic_nbi(b, 0, SYMM_AMO_FETCH, NULL, NULL, me, &total));
    CHECK_OK(symm_quiet(ctx));
    ASSERT_EQ(total, 16);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(b));
}

/* ---- E: rejected pairs and argument errors ---- */

static void errors(symm_ctx ctx) {
    int32_t me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    symm_buf bufs[SYMM_DTYPE_COUNT] = {NULL};
    for (uint32_t dt = 1; dt < SYMM_DTYPE_COUNT; dt++)
        CHECK_OK(symm_buf_alloc(ctx, dt, 2, &bufs[dt]));
    uint8_t val[9] = {0}, cmpv[9] = {0}, fetched[8];
    int pairs_ok = 0, pairs_rejected = 0;
    for (uint32_t dt = 1; dt < SYMM_DTYPE_COUNT; dt++) {
        bool is_int = dt == SYMM_DTYPE_INT32 || dt == SYMM_DTYPE_INT64 ||
                      dt == SYMM_DTYPE_UINT32 || dt == SYMM_DTYPE_UINT64;
        bool is_float = dt == SYMM_DTYPE_FLOAT32 || dt == SYMM_DTYPE_FLOAT64;
        for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
            bool allowed = is_int || (is_float && (op == SYMM_AMO_FETCH || op == SYMM_AMO_SET ||
                                                   op == SYMM_AMO_SWAP));
            memset(fetched, 0xab, sizeof fetched);
            /* Unaligned operand pointers are fine. */
            symm_status st = symm_atomic(bufs[dt], 1, op, val + 1, cmpv + 1, me, fetched);
            if (allowed) {
                CHECK_OK(st);
                pairs_ok++;
            } else {
                if (st != SYMM_ERR_INVALID_ARG)
                    TEST_FAIL_("dtype %u op %u: %s, expected SYMM_ERR_INVALID_ARG", dt, op,
                               symm_status_string(st));
                ASSERT_TRUE(strstr(symm_last_error(), "symm_atomic") != NULL);
                for (int i = 0; i < 8; i++) ASSERT_EQ(fetched[i], 0xab);
                CHECK_STATUS(symm_atomic_nbi(bufs[dt], 1, op, val, cmpv, me, fetched),
                             SYMM_ERR_INVALID_ARG);
                pairs_rejected++;
            }
        }
    }
    ASSERT_EQ(pairs_ok, 4 * 14 + 2 * 3);
    ASSERT_EQ(pairs_rejected, 12 * 14 - pairs_ok);

    symm_buf b = bufs[SYMM_DTYPE_INT64];
    int64_t v = 5, c = 0, f = 0x77;
    /* Unknown ops. */
    CHECK_STATUS(symm_atomic(b, 0, 14, &v, &c, me, &f), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_atomic(b, 0, UINT32_MAX, &v, &c, me, &f), SYMM_ERR_INVALID_ARG);
    /* Bounds and PEs. */
    CHECK_STATUS(symm_atomic(b, 2, SYMM_AMO_FETCH, NULL, NULL, me, &f), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_atomic(b, UINT64_MAX, SYMM_AMO_ADD, &v, NULL, me, NULL),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_atomic_nbi(b, 2, SYMM_AMO_SET, &v, NULL, me, NULL), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_FETCH, NULL, NULL, n, &f), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_ADD, &v, NULL, -1, NULL), SYMM_ERR_INVALID_ARG);
    /* Fetching ops need fetched; the others accept NULL. */
    for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
        if (op_fetches(op)) {
            CHECK_STATUS(symm_atomic(b, 0, op, &v, &c, me, NULL), SYMM_ERR_INVALID_ARG);
            CHECK_STATUS(symm_atomic_nbi(b, 0, op, &v, &c, me, NULL), SYMM_ERR_INVALID_ARG);
        } else {
            CHECK_OK(symm_atomic(b, 0, op, &v, NULL, me, NULL));
        }
    }
    /* value is needed except by FETCH, INC, FETCH_INC; compare by COMPARE_SWAP. */
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_SET, NULL, NULL, me, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_FETCH_ADD, NULL, NULL, me, &f), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_XOR, NULL, NULL, me, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_COMPARE_SWAP, &v, NULL, me, &f), SYMM_ERR_INVALID_ARG);
    ASSERT_EQ(f, 0x77);
    c = 0;
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_SET, &c, NULL, me, NULL));
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_INC, NULL, NULL, me, NULL));
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_FETCH_INC, NULL, NULL, me, &f));
    ASSERT_EQ(f, 1);
    CHECK_OK(symm_atomic(b, 0, SYMM_AMO_FETCH, NULL, NULL, me, &f));
    ASSERT_EQ(f, 2);
    /* Handles. */
    f = 0x77;
    CHECK_STATUS(symm_atomic(NULL, 0, SYMM_AMO_FETCH, NULL, NULL, me, &f),
                 SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_atomic((symm_buf)(uintptr_t)0xbad0, 0, SYMM_AMO_FETCH, NULL, NULL, me, &f),
                 SYMM_ERR_INVALID_HANDLE);
    symm_buf stale = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 2, &stale));
    CHECK_OK(symm_buf_free(stale));
    CHECK_STATUS(symm_atomic(stale, 0, SYMM_AMO_FETCH, NULL, NULL, me, &f),
                 SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_atomic_nbi(stale, 0, SYMM_AMO_FETCH, NULL, NULL, me, &f),
                 SYMM_ERR_INVALID_HANDLE);
    ASSERT_EQ(f, 0x77);

    CHECK_OK(symm_barrier_all(ctx));
    for (uint32_t dt = SYMM_DTYPE_COUNT - 1; dt >= 1; dt--) CHECK_OK(symm_buf_free(bufs[dt]));
}

int main(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_AUTO);
    int32_t n = symm_n_pes(ctx);
    reference_ops(ctx);
    float_ops(ctx);
    concurrency(ctx);
    nbi(ctx);
    errors(ctx);
    CHECK_OK(symm_finalize(&ctx));
    if (symm_test_pe == 0) printf("test_atomic: ok (%d PEs)\n", n);
    return 0;
}

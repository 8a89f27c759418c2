/*
 * Randomized sequence mixing RMA, atomics, signals and collectives across
 * teams. Every PE draws the same sequence from one seed (printed; set
 * SYMM_TEST_SEED to replay) and keeps a model of every PE's buffer, so each
 * step is checked against an independently computed expectation.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "symm_test.h"

#define LEN 512
#define STEPS 300

static symm_ctx ctx;
static int me, n;
static int64_t model[64][LEN]; /* model[pe][i] = expected data on pe */

static uint32_t rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static void check_mine(symm_buf data) {
    static int64_t got[LEN];
    symm_test_read_local(ctx, data, 0, LEN, got);
    for (int i = 0; i < LEN; i++)
        if (got[i] != model[me][i])
            TEST_FAIL_("data[%d] = %lld, model says %lld", i, (long long)got[i], (long long)model[me][i]);
}

int main(void) {
    ctx = symm_test_init(SYMM_BACKEND_AUTO);
    me = symm_my_pe(ctx);
    n = symm_n_pes(ctx);
    ASSERT_TRUE(n <= 64);
    uint64_t seed = 20261121;
    if (getenv("SYMM_TEST_SEED")) seed = strtoull(getenv("SYMM_TEST_SEED"), NULL, 0);
    if (me == 0) printf("random_mix: seed %llu, %d PEs\n", (unsigned long long)seed, n);

    symm_buf data, sig, ctr, red_src, red_dst;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, LEN, &data));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 1, &sig));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 4, &ctr));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, LEN, &red_src));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, (uint64_t)LEN * n, &red_dst));
    memset(model, 0, sizeof model);

    /* Teams: world, and (for n >= 2) the even PEs as a strided split. */
    symm_team world, evens = NULL;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    CHECK_OK(symm_team_split_strided(world, 0, 2, (n + 1) / 2, NULL, &evens));
    ASSERT_TRUE((me % 2 == 0) == (evens != NULL));
    static int64_t ctr_model[64][4]; /* expected counters on every PE */
    uint64_t sig_round = 0;

    int64_t buf[LEN];
    for (int step = 0; step < STEPS; step++) {
        uint64_t s = seed + (uint64_t)step * 0x9e3779b97f4a7c15ull;
        int kind = (int)(rnd(&s) % 5);
        int a = (int)(rnd(&s) % (uint32_t)n), b = (int)(rnd(&s) % (uint32_t)n);
        int off = (int)(rnd(&s) % LEN), cnt = (int)(rnd(&s) % (uint32_t)(LEN - off)) + 1;
        int64_t base = (int64_t)rnd(&s);
        switch (kind) {
        case 0: /* a puts a range into b; everyone checks after a barrier */
            for (int i = 0; i < cnt; i++) buf[i] = base + i * 3 + a;
            if (me == a) CHECK_OK(symm_put(data, (uint64_t)off, buf, (uint64_t)cnt, b));
            memcpy(&model[b][off], buf, (size_t)cnt * sizeof *buf);
            CHECK_OK(symm_barrier_all(ctx));
            check_mine(data);
            break;
        case 1: /* a gets b's range and compares with the model */
            if (me == a) {
                CHECK_OK(symm_get(buf, data, (uint64_t)off, (uint64_t)cnt, b));
                for (int i = 0; i < cnt; i++) ASSERT_EQ(buf[i], model[b][off + i]);
            }
            break;
        case 2: { /* every PE adds to one counter on b: the total is exact */
            int slot = (int)(rnd(&s) % 4);
            int64_t v = (int64_t)(me + 1) * (step + 1), old = 0;
            CHECK_OK(symm_atomic(ctr, (uint64_t)slot, SYMM_AMO_FETCH_ADD, &v, NULL, b, &old));
            /* the value fetched lies between the old total and the new one */
            int64_t before = ctr_model[b][slot];
            ctr_model[b][slot] += (int64_t)n * (n + 1) / 2 * (step + 1);
            ASSERT_TRUE(old >= before && old + v <= ctr_model[b][slot]);
            CHECK_OK(symm_barrier_all(ctx));
            if (me == b) {
                int64_t now = 0;
                symm_test_read_local(ctx, ctr, (uint64_t)slot, 1, &now);
                ASSERT_EQ(now, ctr_model[b][slot]);
            }
            break;
        }
        case 3: /* a sends a range to b with a signal; b waits and checks */
            sig_round++;
            for (int i = 0; i < cnt; i++) buf[i] = base - i;
            if (me == a && a != b)
                CHECK_OK(symm_put_signal(data, (uint64_t)off, buf, (uint64_t)cnt, sig, 0, sig_round,
                                         SYMM_SIGNAL_SET, b));
            if (a != b) {
                memcpy(&model[b][off], buf, (size_t)cnt * sizeof *buf);
                if (me == b) {
                    uint64_t seen = 0;
                    CHECK_OK(symm_signal_wait_until(sig, 0, SYMM_CMP_GE, sig_round, &seen));
                    ASSERT_U64_EQ(seen, sig_round);
                    check_mine(data);
                }
            }
            CHECK_OK(symm_barrier_all(ctx));
            break;
        default: { /* a collective on world or on the even PEs */
            bool on_evens = rnd(&s) % 2; /* same draw on every PE */
            if (on_evens && me % 2) { CHECK_OK(symm_barrier_all(ctx)); break; }
            symm_team t = on_evens ? evens : world;
            int tn = symm_team_n_pes(t);
            int m = (int)(rnd(&s) % 64) + 1;
            for (int i = 0; i < m; i++) buf[i] = base % 1000 + i + me * 7;
            CHECK_OK(symm_put(red_src, 0, buf, (uint64_t)m, me));
            CHECK_OK(symm_barrier(t));
            if (rnd(&s) % 2) {
                CHECK_OK(symm_reduce(t, red_dst, 0, red_src, 0, (uint64_t)m, SYMM_OP_SUM));
                symm_test_read_local(ctx, red_dst, 0, (uint64_t)m, buf);
                for (int i = 0; i < m; i++) {
                    int64_t want = 0;
                    for (int k = 0; k < tn; k++) want += base % 1000 + i + symm_team_translate_pe(t, k, world) * 7;
                    ASSERT_EQ(buf[i], want);
                }
            } else {
                CHECK_OK(symm_fcollect(t, red_dst, 0, red_src, 0, (uint64_t)m));
                static int64_t all[64 * 64];
                symm_test_read_local(ctx, red_dst, 0, (uint64_t)m * tn, all);
                for (int k = 0; k < tn; k++)
                    for (int i = 0; i < m; i++)
                        ASSERT_EQ(all[k * m + i], base % 1000 + i + symm_team_translate_pe(t, k, world) * 7);
            }
            CHECK_OK(symm_barrier_all(ctx));
            break;
        }
        }
        /* nobody starts the next step before every PE checked this one */
        CHECK_OK(symm_barrier_all(ctx));
    }
    /* the counters saw exactly the sum of all fetch-adds */
    CHECK_OK(symm_barrier_all(ctx));
    int64_t c[4];
    symm_test_read_local(ctx, ctr, 0, 4, c);
    for (int k = 0; k < 4; k++) ASSERT_EQ(c[k], ctr_model[me][k]);
    CHECK_OK(symm_team_destroy(evens));
    CHECK_OK(symm_buf_free(red_dst));
    CHECK_OK(symm_buf_free(red_src));
    CHECK_OK(symm_buf_free(ctr));
    CHECK_OK(symm_buf_free(sig));
    CHECK_OK(symm_buf_free(data));
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("random_mix: %d steps passed\n", STEPS);
    return 0;
}

/*
 * Reductions: symm_reduce and symm_reducescatter for every dtype with every
 * op it allows, in place and not, on several team shapes; the rejected
 * op x dtype pairs; FLOAT16/BFLOAT16 rounding (accumulated in float, rounded
 * to nearest even once); bitwise-deterministic float sums (team order);
 * chunked large reductions; bounds, overlap and mismatch errors.
 *
 * Each PE computes the expected result itself from the generator below.
 */
#include "reduce_ref.h"

#define CAPR 512    /* elements per buffer */
#define BIG 70001   /* larger than the runtime's reduction chunk */


static symm_buf bsrc[SYMM_DTYPE_COUNT], bdst[SYMM_DTYPE_COUNT];
static uint64_t g_tag = 1;

/* One reduce/reducescatter call, checked over the whole dst buffer. */
static void run_one(symm_team t, symm_buf src, symm_buf dst, uint64_t cap, uint32_t dt,
                    uint32_t op, int mode, uint64_t ne, bool inplace, bool scatter) {
    if (!t) return;
    const uint32_t es = esize(dt);
    const uint64_t tag = g_tag++, si = inplace ? 1 : 2, di = 1;
    const int32_t me = symm_team_my_pe(t);
    uint8_t *img = tu_xmalloc(cap * es), *want = tu_xmalloc(cap * es);
    for (uint64_t i = 0; i < cap; i++) gen(dt, op, mode, tag, tu_me, i, img + i * es);
    tu_write(src, 0, img, cap);
    if (inplace) {
        memcpy(want, img, cap * es);
    } else {
        memset(want, TU_SENTINEL, cap * es);
        tu_write(dst, 0, want, cap);
    }
    symm_buf d = inplace ? src : dst;
    if (scatter) CHECK_OK(symm_reducescatter(t, d, di, src, si, ne, op));
    else CHECK_OK(symm_reduce(t, d, di, src, si, ne, op));
    uint64_t shift = scatter ? (uint64_t)me * ne : 0;
    for (uint64_t i = 0; i < ne; i++) expect(dt, op, mode, tag, t, si + shift + i, want + (di + i) * es);
    uint8_t *got = tu_xmalloc(cap * es);
    tu_read(d, 0, got, cap);
    char what[160];
    snprintf(what, sizeof what, "%s %s dtype %u n %llu%s (team of %d)",
             scatter ? "reducescatter" : "reduce", op_names[op], dt, (unsigned long long)ne,
             inplace ? " in place" : "", symm_team_n_pes(t));
    ASSERT_IMAGE_EQ(got, want, cap, es, what);
    if (!inplace) { /* src untouched */
        tu_read(src, 0, got, cap);
        ASSERT_IMAGE_EQ(got, img, cap, es, "reduce src");
    }
    free(img);
    free(want);
    free(got);
}

/* Tags must agree among a team's PEs, and PEs outside a team skip its
 * tests: every PE re-bases its tag at each phase. */
static void tag_phase(void) {
    static uint64_t phase;
    g_tag = ++phase * 1000000;
}

static void all_pairs(symm_team t) {
    tag_phase();
    if (!t) return;
    int32_t n = symm_team_n_pes(t);
    for (int k = 0; k < N_DTYPES; k++) {
        uint32_t dt = all_dtypes[k];
        for (uint32_t op = SYMM_OP_SUM; op <= SYMM_OP_XOR; op++) {
            if (is_float(dt) && op >= SYMM_OP_AND) {
                CHECK_STATUS(symm_reduce(t, bdst[dt], 0, bsrc[dt], 0, 4, op),
                             SYMM_ERR_NOT_SUPPORTED);
                ASSERT_TRUE(strstr(symm_last_error(), op_names[op]) != NULL);
                ASSERT_TRUE(strstr(symm_last_error(), "FLOAT") != NULL);
                CHECK_STATUS(symm_reducescatter(t, bdst[dt], 0, bsrc[dt], 0, 1, op),
                             SYMM_ERR_NOT_SUPPORTED);
                continue;
            }
            run_one(t, bsrc[dt], bdst[dt], CAPR, dt, op, GEN_EXACT, 37, false, false);
            run_one(t, bsrc[dt], bdst[dt], CAPR, dt, op, GEN_EXACT, 29, true, false);
            run_one(t, bsrc[dt], bdst[dt], CAPR, dt, op, GEN_EXACT, (CAPR - 2) / (uint64_t)n < 13
                                                                     ? (CAPR - 2) / (uint64_t)n
                                                                     : 13,
                    false, true);
        }
        CHECK_STATUS(symm_reduce(t, bdst[dt], 0, bsrc[dt], 0, 4, 7), SYMM_ERR_INVALID_ARG);
        CHECK_STATUS(symm_reduce(t, bdst[dt], 0, bsrc[dt], 0, 4, UINT32_MAX), SYMM_ERR_INVALID_ARG);
        /* nelems 0 is a valid no-op. */
        run_one(t, bsrc[dt], bdst[dt], CAPR, dt, SYMM_OP_SUM, GEN_EXACT, 0, false, false);
    }
    /* Rounding of half types, and bitwise order of float sums. */
    run_one(t, bsrc[SYMM_DTYPE_FLOAT16], bdst[SYMM_DTYPE_FLOAT16], CAPR, SYMM_DTYPE_FLOAT16,
            SYMM_OP_SUM, GEN_ROUND, 200, false, false);
    run_one(t, bsrc[SYMM_DTYPE_BFLOAT16], bdst[SYMM_DTYPE_BFLOAT16], CAPR, SYMM_DTYPE_BFLOAT16,
            SYMM_OP_SUM, GEN_ROUND, 200, true, false);
    run_one(t, bsrc[SYMM_DTYPE_FLOAT32], bdst[SYMM_DTYPE_FLOAT32], CAPR, SYMM_DTYPE_FLOAT32,
            SYMM_OP_SUM, GEN_RANDOM, 300, false, false);
    run_one(t, bsrc[SYMM_DTYPE_FLOAT64], bdst[SYMM_DTYPE_FLOAT64], CAPR, SYMM_DTYPE_FLOAT64,
            SYMM_OP_SUM, GEN_RANDOM, 300, true, false);
}

static void test_large(void) {
    tag_phase();
    symm_team w = tu_world();
    const uint32_t dts[] = {SYMM_DTYPE_INT32, SYMM_DTYPE_FLOAT16, SYMM_DTYPE_FLOAT64};
    for (int k = 0; k < 3; k++) {
        uint32_t dt = dts[k];
        uint64_t cap = (uint64_t)BIG * (uint64_t)tu_n + 3;
        symm_buf s, d;
        CHECK_OK(symm_buf_alloc(tu_ctx, dt, cap, &s));
        CHECK_OK(symm_buf_alloc(tu_ctx, dt, cap, &d));
        run_one(w, s, d, cap, dt, SYMM_OP_SUM, GEN_EXACT, BIG, false, false);
        run_one(w, s, d, cap, dt, SYMM_OP_MAX, GEN_EXACT, BIG, true, false);
        run_one(w, s, d, cap, dt, SYMM_OP_SUM, GEN_EXACT, BIG, false, true);
        CHECK_OK(symm_buf_free(d));
        CHECK_OK(symm_buf_free(s));
    }
}

static void test_errors(void) {
    tag_phase();
    symm_team w = tu_world();
    symm_buf s = bsrc[SYMM_DTYPE_INT32], d = bdst[SYMM_DTYPE_INT32];
    CHECK_STATUS(symm_reduce(w, d, CAPR - 1, s, 0, 2, SYMM_OP_SUM), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_reduce(w, d, 0, s, CAPR, 1, SYMM_OP_SUM), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_reducescatter(w, d, 0, s, CAPR - (CAPR / (uint64_t)tu_n) * (uint64_t)tu_n + 1,
                                    CAPR / (uint64_t)tu_n, SYMM_OP_SUM),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_reducescatter(w, d, 0, s, 0, UINT64_MAX / 2, SYMM_OP_SUM),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_reduce(w, s, 0, s, 1, 4, SYMM_OP_SUM), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_reducescatter(w, s, 0, s, 0, 1, SYMM_OP_SUM), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_reduce(w, d, 0, bsrc[SYMM_DTYPE_UINT32], 0, 1, SYMM_OP_SUM),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_reduce(NULL, d, 0, s, 0, 1, SYMM_OP_SUM), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_reduce(w, d, 0, NULL, 0, 1, SYMM_OP_SUM), SYMM_ERR_INVALID_HANDLE);
    if (tu_n >= 2 && tu_xchecks) {
        CHECK_STATUS(symm_reduce(w, d, 0, s, 0, 4, tu_me == 0 ? SYMM_OP_MIN : SYMM_OP_MAX),
                     SYMM_ERR_MISMATCH);
        CHECK_STATUS(symm_reduce(w, d, 0, s, 0, tu_me == 0 ? 4 : 5, SYMM_OP_SUM),
                     SYMM_ERR_MISMATCH);
        symm_buf s2 = tu_me == 0 ? bsrc[SYMM_DTYPE_INT64] : s, d2 = tu_me == 0 ? bdst[SYMM_DTYPE_INT64] : d;
        CHECK_STATUS(symm_reduce(w, d2, 0, s2, 0, 4, SYMM_OP_SUM), SYMM_ERR_MISMATCH);
        /* One PE asks for a bitwise op on floats: it alone is NOT_SUPPORTED. */
        symm_buf fs = bsrc[SYMM_DTYPE_FLOAT32], fd = bdst[SYMM_DTYPE_FLOAT32];
        CHECK_STATUS(symm_reduce(w, fd, 0, fs, 0, 4, tu_me == 0 ? SYMM_OP_XOR : SYMM_OP_SUM),
                     tu_me == 0 ? SYMM_ERR_NOT_SUPPORTED : SYMM_ERR_MISMATCH);
        if (tu_me == 0) CHECK_STATUS(symm_reduce(w, d, 0, s, 0, 4, SYMM_OP_SUM), SYMM_ERR_MISMATCH);
        else CHECK_STATUS(symm_reducescatter(w, d, 0, s, 0, 1, SYMM_OP_SUM), SYMM_ERR_MISMATCH);
        /* Ranges must be the same on every PE (the CUDA kernels use this
         * PE's offsets for its peers): a dst or src index, a buffer, in
         * place on one PE only. */
        CHECK_STATUS(symm_reduce(w, d, tu_me == 0 ? 1 : 0, s, 0, 4, SYMM_OP_SUM), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "different dst ranges") != NULL);
        CHECK_STATUS(symm_reducescatter(w, d, 0, s, tu_me == tu_n - 1 ? 2 : 0, 1, SYMM_OP_SUM),
                     SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "different src ranges") != NULL);
        CHECK_STATUS(symm_reduce(w, tu_me == 0 ? s : d, 0, s, 0, 4, SYMM_OP_SUM), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "in place") != NULL);
    }
    /* Still in step. */
    run_one(w, s, d, CAPR, SYMM_DTYPE_INT32, SYMM_OP_SUM, GEN_EXACT, 16, false, false);
}

int main(void) {
    tu_init();
    for (int k = 0; k < N_DTYPES; k++) {
        uint32_t dt = all_dtypes[k];
        CHECK_OK(symm_buf_alloc(tu_ctx, dt, CAPR, &bsrc[dt]));
        CHECK_OK(symm_buf_alloc(tu_ctx, dt, CAPR, &bdst[dt]));
    }
    symm_team w = tu_world(), rev = NULL, even = NULL, x = NULL, y = NULL;
    CHECK_OK(symm_team_split_strided(w, tu_n - 1, -1, tu_n, NULL, &rev));
    CHECK_OK(symm_team_split_strided(w, 0, 2, (tu_n + 1) / 2, NULL, &even));
    CHECK_OK(symm_team_split_2d(w, 3, NULL, NULL, &x, &y));
    all_pairs(w);
    all_pairs(rev);
    all_pairs(even);
    all_pairs(y);
    test_large();
    test_errors();
    CHECK_OK(symm_team_destroy(x));
    CHECK_OK(symm_team_destroy(y));
    CHECK_OK(symm_team_destroy(even));
    CHECK_OK(symm_team_destroy(rev));
    for (int k = 0; k < N_DTYPES; k++) {
        CHECK_OK(symm_buf_free(bsrc[all_dtypes[k]]));
        CHECK_OK(symm_buf_free(bdst[all_dtypes[k]]));
    }
    if (tu_me == 0) printf("test_reduce: %d PEs ok\n", tu_n);
    tu_fini();
    return 0;
}

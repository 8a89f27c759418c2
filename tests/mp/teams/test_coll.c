/*
 * Data-movement collectives (broadcast, fcollect, collect, alltoall) on many
 * team shapes and dtypes, in place and not, with index offsets; every call is
 * checked against an image of the whole buffer computed independently on each
 * PE (elements outside the written range must keep their sentinel). Then
 * argument errors, bounds errors and cross-PE mismatches, after which the
 * team must still work.
 */
#include "teams_util.h"

#define CAP 512 /* elements per test buffer */

typedef struct bufpair {
    uint32_t dtype, es;
    symm_buf a, b; /* two buffers of CAP elements */
} bufpair;

static bufpair bps[4];
static const uint32_t bp_dtypes[4] = {SYMM_DTYPE_INT32, SYMM_DTYPE_UINT8, SYMM_DTYPE_FLOAT64,
                                      SYMM_DTYPE_INT16};
static uint64_t g_tag = 1; /* changes every call: stale data cannot pass */

/* Element i of world PE w's source image for tag. */
static uint8_t *pattern_img(uint32_t es, uint64_t tag, int32_t w) {
    uint8_t *img = tu_xmalloc((size_t)CAP * es);
    tu_pattern(img, CAP, es, tag, (uint64_t)w);
    return img;
}

static uint8_t *sentinel_img(uint32_t es) {
    uint8_t *img = tu_xmalloc((size_t)CAP * es);
    memset(img, TU_SENTINEL, (size_t)CAP * es);
    return img;
}

static void check_buf(symm_buf b, const uint8_t *want, uint32_t es, const char *what) {
    uint8_t *got = tu_xmalloc((size_t)CAP * es);
    tu_read(b, 0, got, CAP);
    ASSERT_IMAGE_EQ(got, want, CAP, es, what);
    free(got);
}

/* src (a) = pattern of this PE, dst (b) = sentinel. */
static void prep(const bufpair *p, uint64_t tag) {
    uint8_t *s = pattern_img(p->es, tag, tu_me), *d = sentinel_img(p->es);
    tu_write(p->a, 0, s, CAP);
    tu_write(p->b, 0, d, CAP);
    free(s);
    free(d);
}

static void check_src_intact(const bufpair *p, uint64_t tag) {
    uint8_t *s = pattern_img(p->es, tag, tu_me);
    check_buf(p->a, s, p->es, "src after the call");
    free(s);
}

static void t_broadcast(symm_team t, const bufpair *p) {
    int32_t n = symm_team_n_pes(t);
    const uint32_t es = p->es;
    for (int32_t root = 0; root < n; root++) {
        uint64_t tag = g_tag++, di = 3, si = 5, ne = 17 + (uint64_t)root;
        prep(p, tag);
        CHECK_OK(symm_broadcast(t, p->b, di, p->a, si, ne, root));
        uint8_t *want = sentinel_img(es), *src = pattern_img(es, tag, tu_world_pe(t, root));
        memcpy(want + di * es, src + si * es, ne * es);
        check_buf(p->b, want, es, "broadcast dst");
        check_src_intact(p, tag);
        free(want);
        free(src);

        /* In place: dst range == src range. */
        tag = g_tag++;
        prep(p, tag);
        CHECK_OK(symm_broadcast(t, p->a, 4, p->a, 4, ne, root));
        want = pattern_img(es, tag, tu_me);
        src = pattern_img(es, tag, tu_world_pe(t, root));
        memcpy(want + 4 * es, src + 4 * es, ne * es);
        check_buf(p->a, want, es, "in-place broadcast");
        free(want);
        free(src);
    }
}

static void t_fcollect(symm_team t, const bufpair *p) {
    int32_t n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint32_t es = p->es;
    const uint64_t di = 2, si = 1, ne = (CAP - 8) / (uint64_t)n < 9 ? (CAP - 8) / (uint64_t)n : 9;
    uint64_t tag = g_tag++;
    prep(p, tag);
    CHECK_OK(symm_fcollect(t, p->b, di, p->a, si, ne));
    uint8_t *want = sentinel_img(es);
    for (int32_t j = 0; j < n; j++) {
        uint8_t *src = pattern_img(es, tag, tu_world_pe(t, j));
        memcpy(want + (di + (uint64_t)j * ne) * es, src + si * es, ne * es);
        free(src);
    }
    check_buf(p->b, want, es, "fcollect dst");
    check_src_intact(p, tag);
    free(want);

    /* In place: src is this PE's block of dst. */
    tag = g_tag++;
    prep(p, tag);
    CHECK_OK(symm_fcollect(t, p->a, di, p->a, di + (uint64_t)me * ne, ne));
    want = pattern_img(es, tag, tu_me);
    for (int32_t j = 0; j < n; j++) {
        uint8_t *src = pattern_img(es, tag, tu_world_pe(t, j));
        uint64_t at = di + (uint64_t)j * ne;
        memcpy(want + at * es, src + at * es, ne * es);
        free(src);
    }
    check_buf(p->a, want, es, "in-place fcollect");
    free(want);
}

static uint64_t collect_count(int32_t j, uint64_t tag) {
    return ((uint64_t)j * 5 + tag) % 4; /* 0..3: some PEs send nothing */
}

static void t_collect(symm_team t, const bufpair *p) {
    int32_t n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint32_t es = p->es;
    for (int rep = 0; rep < 2; rep++) {
        uint64_t tag = g_tag++, di = 1, si = 3, prefix = 0, my_prefix = 0;
        prep(p, tag);
        CHECK_OK(symm_collect(t, p->b, di, p->a, si, collect_count(me, tag)));
        uint8_t *want = sentinel_img(es);
        for (int32_t j = 0; j < n; j++) {
            uint64_t c = collect_count(j, tag);
            uint8_t *src = pattern_img(es, tag, tu_world_pe(t, j));
            memcpy(want + (di + prefix) * es, src + si * es, c * es);
            if (j == me) my_prefix = prefix;
            prefix += c;
            free(src);
        }
        check_buf(p->b, want, es, "collect dst");
        check_src_intact(p, tag);
        free(want);

        /* In place. */
        tag = g_tag++;
        prep(p, tag);
        my_prefix = 0;
        for (int32_t j = 0; j < me; j++) my_prefix += collect_count(j, tag);
        CHECK_OK(symm_collect(t, p->a, di, p->a, di + my_prefix, collect_count(me, tag)));
        want = pattern_img(es, tag, tu_me);
        prefix = 0;
        for (int32_t j = 0; j < n; j++) {
            uint64_t c = collect_count(j, tag);
            uint8_t *src = pattern_img(es, tag, tu_world_pe(t, j));
            memcpy(want + (di + prefix) * es, src + (di + prefix) * es, c * es);
            prefix += c;
            free(src);
        }
        check_buf(p->a, want, es, "in-place collect");
        free(want);
    }
}

static void t_alltoall(symm_team t, const bufpair *p) {
    int32_t n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint32_t es = p->es;
    const uint64_t di = 1, si = 2, ne = 5;
    uint64_t tag = g_tag++;
    prep(p, tag);
    CHECK_OK(symm_alltoall(t, p->b, di, p->a, si, ne));
    uint8_t *want = sentinel_img(es);
    for (int32_t j = 0; j < n; j++) {
        uint8_t *src = pattern_img(es, tag, tu_world_pe(t, j));
        memcpy(want + (di + (uint64_t)j * ne) * es, src + (si + (uint64_t)me * ne) * es, ne * es);
        free(src);
    }
    check_buf(p->b, want, es, "alltoall dst");
    check_src_intact(p, tag);
    free(want);
}

static void t_empty(symm_team t, const bufpair *p) {
    uint64_t tag = g_tag++;
    prep(p, tag);
    CHECK_OK(symm_broadcast(t, p->b, 0, p->a, 0, 0, 0));
    CHECK_OK(symm_fcollect(t, p->b, CAP, p->a, CAP, 0));
    CHECK_OK(symm_collect(t, p->b, 0, p->a, 0, 0));
    CHECK_OK(symm_alltoall(t, p->b, 7, p->a, 7, 0));
    uint8_t *want = sentinel_img(p->es);
    check_buf(p->b, want, p->es, "dst after empty collectives");
    check_src_intact(p, tag);
    free(want);
}

/* Tags must agree among a team's PEs, and PEs outside a team skip its
 * tests: every PE re-bases its tag at each phase. */
static void tag_phase(void) {
    static uint64_t phase;
    g_tag = ++phase * 100000;
}

static void run_all(symm_team t) {
    tag_phase();
    if (!t) return;
    for (int k = 0; k < 4; k++) {
        t_broadcast(t, &bps[k]);
        t_fcollect(t, &bps[k]);
        t_collect(t, &bps[k]);
        t_alltoall(t, &bps[k]);
        t_empty(t, &bps[k]);
    }
}

/* Large transfers through the world team. */
static void t_large(void) {
    tag_phase();
    symm_team w = tu_world();
    const uint64_t ne = 100000, cap = ne * (uint64_t)tu_n;
    symm_buf src, dst;
    CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_UINT8, ne, &src));
    CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_UINT8, cap, &dst));
    uint8_t *mine = tu_xmalloc(ne), *got = tu_xmalloc(cap), *want = tu_xmalloc(ne);
    uint64_t tag = g_tag++;
    tu_pattern(mine, ne, 1, tag, (uint64_t)tu_me);
    tu_write(src, 0, mine, ne);
    CHECK_OK(symm_fcollect(w, dst, 0, src, 0, ne));
    tu_read(dst, 0, got, cap);
    for (int32_t j = 0; j < tu_n; j++) {
        tu_pattern(want, ne, 1, tag, (uint64_t)j);
        ASSERT_IMAGE_EQ(got + (uint64_t)j * ne, want, ne, 1, "large fcollect");
    }
    CHECK_OK(symm_broadcast(w, dst, 0, src, 0, ne, tu_n - 1));
    tu_read(dst, 0, got, ne);
    tu_pattern(want, ne, 1, tag, (uint64_t)(tu_n - 1));
    ASSERT_IMAGE_EQ(got, want, ne, 1, "large broadcast");
    free(mine);
    free(got);
    free(want);
    CHECK_OK(symm_buf_free(dst));
    CHECK_OK(symm_buf_free(src));
}

static void t_errors(void) {
    tag_phase();
    symm_team w = tu_world();
    const bufpair *p = &bps[0], *q = &bps[2]; /* INT32, FLOAT64 */
    uint64_t tag = g_tag++;
    prep(p, tag);
    /* Same bad call on every PE: every PE reports its own error. */
    CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, 0, 1, -1), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, 0, 1, tu_n), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_broadcast(w, p->b, CAP - 3, p->a, 0, 5, 0), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, CAP - 1, 2, 0), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_broadcast(w, p->b, CAP + 1, p->a, 0, 0, 0), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, 0, UINT64_MAX, 0), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_fcollect(w, p->b, 0, p->a, 0, CAP / (uint64_t)tu_n + 1),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_fcollect(w, p->b, 0, p->a, 0, UINT64_MAX / 2 + 1), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_alltoall(w, p->b, 0, p->a, CAP - (CAP / (uint64_t)tu_n) * (uint64_t)tu_n + 1,
                               CAP / (uint64_t)tu_n),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_broadcast(w, p->b, 0, q->a, 0, 1, 0), SYMM_ERR_INVALID_ARG); /* dtypes */
    CHECK_STATUS(symm_broadcast(w, NULL, 0, p->a, 0, 1, 0), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_fcollect(w, p->b, 0, NULL, 0, 1), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_alltoall(NULL, p->b, 0, p->a, 0, 1), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_collect((symm_team)(void *)p->a, p->b, 0, p->a, 0, 1),
                 SYMM_ERR_INVALID_HANDLE);
    /* Overlaps that are not in place. */
    CHECK_STATUS(symm_broadcast(w, p->a, 0, p->a, 1, 4, 0), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_alltoall(w, p->a, 0, p->a, 0, 1), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_alltoall(w, p->a, 1, p->a, 0, 2), SYMM_ERR_INVALID_ARG);
    /* fcollect with src at block 0 of dst: in place for PE 0 only. */
    if (tu_xchecks)
        CHECK_STATUS(symm_fcollect(w, p->a, 0, p->a, 0, 1),
                     tu_me == 0 ? (tu_n == 1 ? SYMM_SUCCESS : SYMM_ERR_MISMATCH)
                                : SYMM_ERR_INVALID_ARG);
    /* collect: the team's total does not fit. */
    CHECK_STATUS(symm_collect(w, p->b, 0, p->a, 0, CAP),
                 tu_n == 1 ? SYMM_SUCCESS : SYMM_ERR_OUT_OF_BOUNDS);
    /* collect: dst index leaves room on every PE but the last. */
    CHECK_STATUS(symm_collect(w, p->b, tu_me == tu_n - 1 ? CAP - 1 : 0, p->a, 0, 1),
                 tu_n == 1 ? SYMM_SUCCESS
                           : (tu_me == tu_n - 1 ? SYMM_ERR_OUT_OF_BOUNDS : SYMM_ERR_MISMATCH));
    /* collect: src overlapping dst but not at this PE's block. */
    CHECK_STATUS(symm_collect(w, p->a, 0, p->a, 2 * (uint64_t)tu_me + 1, 2), SYMM_ERR_INVALID_ARG);

    prep(p, tag);
    if (tu_n >= 2 && tu_xchecks) {
        /* Cross-PE disagreements: MISMATCH everywhere, nothing written. */
        CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, 0, tu_me == 0 ? 2 : 3, 0),
                     SYMM_ERR_MISMATCH);
        CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, 0, 2, tu_me == 0 ? 1 : 0),
                     SYMM_ERR_MISMATCH);
        CHECK_STATUS(symm_fcollect(w, p->b, 0, p->a, 0, tu_me == tu_n - 1 ? 1 : 2),
                     SYMM_ERR_MISMATCH);
        CHECK_STATUS(symm_alltoall(w, p->b, 0, p->a, 0, tu_me == 1 ? 1 : 2), SYMM_ERR_MISMATCH);
        const bufpair *r = tu_me == 0 ? q : p; /* dtype differs on PE 0 */
        CHECK_STATUS(symm_broadcast(w, r->b, 0, r->a, 0, 1, 0), SYMM_ERR_MISMATCH);
        /* Different collectives on one team. */
        if (tu_me == 0) CHECK_STATUS(symm_broadcast(w, p->b, 0, p->a, 0, 1, 0), SYMM_ERR_MISMATCH);
        else CHECK_STATUS(symm_fcollect(w, p->b, 0, p->a, 0, 1), SYMM_ERR_MISMATCH);
        /* Ranges must be the same on every PE (the CUDA kernels use this
         * PE's offsets for its peers). */
        CHECK_STATUS(symm_broadcast(w, p->b, tu_me == 0 ? 1 : 0, p->a, 0, 2, 0), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "different dst ranges") != NULL);
        CHECK_STATUS(symm_alltoall(w, p->b, 0, p->a, tu_me == tu_n - 1 ? 1 : 0, 1),
                     SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "different src ranges") != NULL);
        /* in place on PE 0 only (its src is its block of dst) */
        CHECK_STATUS(symm_fcollect(w, p->b, 0, tu_me == 0 ? p->b : p->a, 0, 1), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "in place") != NULL);
        /* collect: PE 1's src index differs */
        CHECK_STATUS(symm_collect(w, p->b, 0, p->a, tu_me == 1 ? 3 : 0, 1), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "different src ranges") != NULL);
        /* One PE's own bounds error: it reports it, the others MISMATCH. */
        CHECK_STATUS(symm_broadcast(w, p->b, tu_me == 1 ? CAP : 0, p->a, 0, 1, 0),
                     tu_me == 1 ? SYMM_ERR_OUT_OF_BOUNDS : SYMM_ERR_MISMATCH);
        ASSERT_TRUE(strstr(symm_last_error(), "symm_broadcast") != NULL);
        uint8_t *want = sentinel_img(p->es);
        check_buf(p->b, want, p->es, "dst after rejected calls");
        free(want);
    }
    /* The team is still in step. */
    t_broadcast(w, p);
    t_alltoall(w, p);
}

int main(void) {
    tu_init();
    for (int k = 0; k < 4; k++) {
        bps[k].dtype = bp_dtypes[k];
        bps[k].es = symm_dtype_size(bp_dtypes[k]);
        CHECK_OK(symm_buf_alloc(tu_ctx, bps[k].dtype, CAP, &bps[k].a));
        CHECK_OK(symm_buf_alloc(tu_ctx, bps[k].dtype, CAP, &bps[k].b));
    }
    symm_team w = tu_world(), even = NULL, rev = NULL, last3 = NULL, x = NULL, y = NULL;
    CHECK_OK(symm_team_split_strided(w, 0, 2, (tu_n + 1) / 2, NULL, &even));
    CHECK_OK(symm_team_split_strided(w, tu_n - 1, -1, tu_n, NULL, &rev));
    if (tu_n >= 3) CHECK_OK(symm_team_split_strided(w, tu_n - 1, -2, (tu_n + 1) / 2, NULL, &last3));
    CHECK_OK(symm_team_split_2d(w, 2, NULL, NULL, &x, &y)); /* pairs and stride-2 columns */

    run_all(w);
    run_all(even);
    run_all(rev);
    run_all(last3);
    run_all(x);
    run_all(y);
    t_large();
    t_errors();

    CHECK_OK(symm_team_destroy(y));
    CHECK_OK(symm_team_destroy(x));
    CHECK_OK(symm_team_destroy(last3));
    CHECK_OK(symm_team_destroy(rev));
    CHECK_OK(symm_team_destroy(even));
    for (int k = 0; k < 4; k++) {
        CHECK_OK(symm_buf_free(bps[k].a));
        CHECK_OK(symm_buf_free(bps[k].b));
    }
    if (tu_me == 0) printf("test_coll: %d PEs ok\n", tu_n);
    tu_fini();
    return 0;
}

/*
 * symm_alltoallv (counts in symmetric memory, since 1.2) over many team
 * shapes and dtypes: random per-pair counts (zeros included), index offsets,
 * UINT64 and INT64 count buffers; each PE checks its dst, its receive counts
 * and offsets, and that src and elements past the received ones keep their
 * values, against an image computed independently from the counts function.
 * Then the combine (the reverse exchange with the receive counts as send
 * counts) must bring every element back. Then the failures that must lose
 * nothing and leave the team working: a dst too small on one PE, send counts
 * beyond src (the sender and the receivers of the pieces past the end fail,
 * the others succeed), a negative INT64 count, and argument errors.
 * The stream form runs here on the host backend only (there it completes
 * before returning); tests/gpu/gpu_coll.cu covers it on GPUs.
 */
#include "teams_util.h"

#define CAP 600 /* elements of src and dst */

static uint64_t g_tag = 1;
static bool g_host;

static void tag_phase(void) {
    static uint64_t phase;
    g_tag = ++phase * 100000;
}

/* Elements team PE s sends to team PE r under tag: at most lim. */
static uint64_t cnt_of(uint64_t tag, int32_t s, int32_t r, uint64_t lim) {
    uint64_t x = tu_mix(tag * 131 + (uint64_t)s * 17 + (uint64_t)r);
    if (x % 5 == 0) return 0; /* some empty pairs */
    return x % (lim + 1);
}

typedef struct a2av_bufs {
    uint32_t dtype, es, cdtype;
    symm_buf src, dst, back, scnt, rcnt, rcnt2;
} a2av_bufs;

static void bufs_alloc(a2av_bufs *b, uint32_t dtype, uint32_t cdtype, int32_t n) {
    memset(b, 0, sizeof *b);
    b->dtype = dtype;
    b->es = symm_dtype_size(dtype);
    b->cdtype = cdtype;
    CHECK_OK(symm_buf_alloc(tu_ctx, dtype, CAP, &b->src));
    CHECK_OK(symm_buf_alloc(tu_ctx, dtype, CAP, &b->dst));
    CHECK_OK(symm_buf_alloc(tu_ctx, dtype, CAP, &b->back));
    CHECK_OK(symm_buf_alloc(tu_ctx, cdtype, (uint64_t)n + 3, &b->scnt));
    CHECK_OK(symm_buf_alloc(tu_ctx, cdtype, 2 * (uint64_t)n + 2, &b->rcnt));
    CHECK_OK(symm_buf_alloc(tu_ctx, cdtype, 2 * (uint64_t)n + 2, &b->rcnt2));
}

static void bufs_free(a2av_bufs *b) {
    CHECK_OK(symm_buf_free(b->rcnt2));
    CHECK_OK(symm_buf_free(b->rcnt));
    CHECK_OK(symm_buf_free(b->scnt));
    CHECK_OK(symm_buf_free(b->back));
    CHECK_OK(symm_buf_free(b->dst));
    CHECK_OK(symm_buf_free(b->src));
}

static uint8_t *img(uint32_t es, uint64_t tag, int32_t w) {
    uint8_t *p = tu_xmalloc((size_t)CAP * es);
    tu_pattern(p, CAP, es, tag, (uint64_t)w);
    return p;
}

static void fill(symm_buf b, uint32_t es, int byte) {
    uint8_t *p = tu_xmalloc((size_t)CAP * es);
    memset(p, byte, (size_t)CAP * es);
    tu_write(b, 0, p, CAP);
    free(p);
}

static uint64_t *u64s(size_t n) {
    return tu_xmalloc(n * sizeof(uint64_t));
}

/* One exchange on team t and its combine. si/di/ci/ri: indices of src, dst,
 * send and receive counts; lim: the largest count. */
static void one(symm_team t, const a2av_bufs *b, uint64_t si, uint64_t di, uint64_t ci,
                uint64_t ri, uint64_t lim, bool on_stream) {
    const int32_t n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint32_t es = b->es;
    const uint64_t tag = g_tag++, src_ne = CAP - si, dst_ne = CAP - di;
    /* send counts, src pattern, dst and back full of sentinels */
    uint64_t *sc = u64s((size_t)n), sent = 0;
    for (int32_t r = 0; r < n; r++) sent += sc[r] = cnt_of(tag, me, r, lim);
    ASSERT_TRUE(si + sent <= CAP);
    tu_write(b->scnt, ci, sc, (uint64_t)n);
    uint8_t *mine = img(es, tag, tu_me);
    tu_write(b->src, 0, mine, CAP);
    fill(b->dst, es, TU_SENTINEL);
    fill(b->back, es, TU_SENTINEL);
    if (on_stream)
        CHECK_OK(symm_alltoallv_on_stream(t, b->dst, di, dst_ne, b->src, si, src_ne, b->scnt, ci,
                                          b->rcnt, ri, NULL));
    else
        CHECK_OK(symm_alltoallv(t, b->dst, di, dst_ne, b->src, si, src_ne, b->scnt, ci, b->rcnt,
                                ri));

    /* expected: from each s in team order, s's piece for me */
    uint8_t *want = tu_xmalloc((size_t)CAP * es);
    memset(want, TU_SENTINEL, (size_t)CAP * es);
    uint64_t *wrc = u64s(2 * (size_t)n), at = 0;
    for (int32_t s = 0; s < n; s++) {
        uint64_t off = 0;
        for (int32_t q = 0; q < me; q++) off += cnt_of(tag, s, q, lim);
        const uint64_t c = cnt_of(tag, s, me, lim);
        uint8_t *theirs = img(es, tag, tu_world_pe(t, s));
        memcpy(want + (di + at) * es, theirs + (si + off) * es, c * es);
        free(theirs);
        wrc[s] = c;
        wrc[n + s] = at;
        at += c;
    }
    ASSERT_TRUE(di + at <= CAP);
    uint8_t *got = tu_xmalloc((size_t)CAP * es);
    tu_read(b->dst, 0, got, CAP);
    ASSERT_IMAGE_EQ(got, want, CAP, es, "alltoallv dst");
    uint64_t *grc = u64s(2 * (size_t)n);
    tu_read(b->rcnt, ri, grc, 2 * (uint64_t)n);
    ASSERT_IMAGE_EQ(grc, wrc, 2 * (uint64_t)n, 8, "alltoallv recv counts and offsets");
    tu_read(b->src, 0, got, CAP);
    ASSERT_IMAGE_EQ(got, mine, CAP, es, "alltoallv src after the call");

    /* combine: the receive counts as send counts, dst as src, into back */
    if (on_stream)
        CHECK_OK(symm_alltoallv_on_stream(t, b->back, si, src_ne, b->dst, di, dst_ne, b->rcnt, ri,
                                          b->rcnt2, 0, NULL));
    else
        CHECK_OK(symm_alltoallv(t, b->back, si, src_ne, b->dst, di, dst_ne, b->rcnt, ri, b->rcnt2,
                                0));
    memset(want, TU_SENTINEL, (size_t)CAP * es);
    memcpy(want + si * es, mine + si * es, sent * es);
    tu_read(b->back, 0, got, CAP);
    ASSERT_IMAGE_EQ(got, want, CAP, es, "combine: every element back where it left");
    tu_read(b->rcnt2, 0, grc, 2 * (uint64_t)n);
    for (int32_t r = 0, o = 0; r < n; o += (int32_t)sc[r], r++) {
        ASSERT_U64_EQ(grc[r], sc[r]);
        ASSERT_U64_EQ(grc[n + r], (uint64_t)o);
    }
    free(grc);
    free(got);
    free(wrc);
    free(want);
    free(mine);
    free(sc);
}

static void run_team(symm_team t, const a2av_bufs *bs, int nb) {
    tag_phase();
    if (!t) return;
    const uint64_t n = (uint64_t)symm_team_n_pes(t);
    for (int k = 0; k < nb; k++) {
        const a2av_bufs *b = &bs[k];
        one(t, b, 0, 0, 0, 0, (CAP / 2) / n, false);
        one(t, b, 3, 5, 2, 1, (CAP / 3) / n, false);
        one(t, b, 1, 0, 1, 2, 1, false); /* counts of 0 and 1 */
        one(t, b, 0, 0, 0, 0, 0, false); /* nothing at all: still synchronises */
        if (g_host) one(t, b, 7, 2, 3, 0, (CAP / 2) / n, true);
    }
}

/* Failures that must lose nothing; the team works afterwards. */
static void t_faults(const a2av_bufs *b) {
    tag_phase();
    symm_team w = tu_world();
    const int32_t n = tu_n, me = tu_me;
    const uint32_t es = b->es;
    uint64_t *sc = u64s((size_t)n), *rc = u64s(2 * (size_t)n);
    uint8_t *got = tu_xmalloc((size_t)CAP * es), *sent_img = img(es, g_tag, me);
    uint8_t *sentinel = tu_xmalloc((size_t)CAP * es);
    memset(sentinel, TU_SENTINEL, (size_t)CAP * es);
    tu_write(b->src, 0, sent_img, CAP);

    /* 1. dst too small on the last PE: it fails, keeps its dst, gets the
     * counts; every other PE succeeds. Every PE sends 4 to everyone. */
    for (int32_t r = 0; r < n; r++) sc[r] = 4;
    tu_write(b->scnt, 0, sc, (uint64_t)n);
    fill(b->dst, es, TU_SENTINEL);
    const bool small = me == n - 1;
    const uint64_t dst_ne = small ? 4 * (uint64_t)n - 1 : 4 * (uint64_t)n;
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, dst_ne, b->src, 0, CAP, b->scnt, 0, b->rcnt, 0),
                 small ? SYMM_ERR_OUT_OF_BOUNDS : SYMM_SUCCESS);
    if (small) ASSERT_TRUE(strstr(symm_last_error(), "dst_nelems") != NULL);
    tu_read(b->rcnt, 0, rc, 2 * (uint64_t)n);
    for (int32_t s = 0; s < n; s++) {
        ASSERT_U64_EQ(rc[s], 4);
        ASSERT_U64_EQ(rc[n + s], 4 * (uint64_t)s);
    }
    tu_read(b->dst, 0, got, CAP);
    if (small) ASSERT_IMAGE_EQ(got, sentinel, CAP, es, "dst of the PE that had no room");
    else
        for (int32_t s = 0; s < n; s++) {
            uint8_t *theirs = img(es, g_tag, s);
            ASSERT_IMAGE_EQ(got + 4 * (uint64_t)s * es, theirs + 4 * (uint64_t)me * es, 4, es,
                            "dst next to a PE that had no room");
            free(theirs);
        }

    /* 2. PE 0's counts run past its src_nelems (2 each, src_nelems 2n - 1):
     * PE 0 fails for its sends, the last PE receives nothing from anyone and
     * fails, the others succeed. */
    for (int32_t r = 0; r < n; r++) sc[r] = 2;
    tu_write(b->scnt, 0, sc, (uint64_t)n);
    fill(b->dst, es, TU_SENTINEL);
    /* src_nelems must agree: every PE passes 2n - 1; the others send 2 to
     * all but the last PE, to which they send 1. */
    if (me != 0) {
        sc[n - 1] = 1;
        tu_write(b->scnt, 0, sc, (uint64_t)n);
    }
    const bool last = me == n - 1;
    symm_status st = symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, 2 * (uint64_t)n - 1, b->scnt, 0,
                                    b->rcnt, 0);
    CHECK_STATUS(st, (me == 0 || last) ? SYMM_ERR_OUT_OF_BOUNDS : SYMM_SUCCESS);
    if (last) ASSERT_TRUE(strstr(symm_last_error(), "beyond its src") != NULL);
    else if (me == 0) ASSERT_TRUE(strstr(symm_last_error(), "send counts add up") != NULL);
    tu_read(b->dst, 0, got, CAP);
    if (last) {
        ASSERT_IMAGE_EQ(got, sentinel, CAP, es, "dst of a PE whose piece lay beyond src");
    } else {
        for (int32_t s = 0; s < n; s++) {
            uint8_t *theirs = img(es, g_tag, s);
            ASSERT_IMAGE_EQ(got + 2 * (uint64_t)s * es, theirs + 2 * (uint64_t)me * es, 2, es,
                            "dst of a PE whose pieces were in range");
            free(theirs);
        }
    }

    /* 3. a negative INT64 count (or UINT64_MAX) from PE 0 to PE 0: PE 0
     * fails; with more PEs the others read offsets past it only if they come
     * after it in PE 0's packing: all of them do. */
    for (int32_t r = 0; r < n; r++) sc[r] = me == 0 && r == 0 ? UINT64_MAX : 1;
    tu_write(b->scnt, 0, sc, (uint64_t)n);
    fill(b->dst, es, TU_SENTINEL);
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, b->scnt, 0, b->rcnt, 0),
                 SYMM_ERR_OUT_OF_BOUNDS);
    tu_read(b->dst, 0, got, CAP);
    ASSERT_IMAGE_EQ(got, sentinel, CAP, es, "dst after a huge count");

    /* 4. argument errors, the same on every PE: each PE reports its own */
    symm_buf f64 = NULL;
    CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_FLOAT64, 2 * (uint64_t)n, &f64));
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, f64, 0, b->rcnt, 0),
                 SYMM_ERR_INVALID_ARG); /* counts must be UINT64 or INT64 */
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, b->scnt, 0, b->rcnt, 3),
                 SYMM_ERR_OUT_OF_BOUNDS); /* 2n receive entries from 3 do not fit 2n + 2 */
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP + 1, b->scnt, 0, b->rcnt, 0),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_alltoallv(w, b->dst, 1, CAP, b->src, 0, CAP, b->scnt, 0, b->rcnt, 0),
                 SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_alltoallv(w, b->src, 0, CAP, b->src, 0, CAP, b->scnt, 0, b->rcnt, 0),
                 SYMM_ERR_INVALID_ARG); /* dst overlaps src */
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, b->rcnt, 1, b->rcnt, 0),
                 SYMM_ERR_INVALID_ARG); /* send and receive counts overlap */
    CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, NULL, 0, b->rcnt, 0),
                 SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_alltoallv(NULL, b->dst, 0, CAP, b->src, 0, CAP, b->scnt, 0, b->rcnt, 0),
                 SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_alltoallv_on_stream(w, b->dst, 0, CAP, b->src, 0, CAP, f64, 0, b->rcnt, 0,
                                          NULL),
                 SYMM_ERR_INVALID_ARG);
    /* src and send counts may overlap (both are only read) */
    for (int32_t r = 0; r < n; r++) sc[r] = 0;
    tu_write(b->scnt, 0, sc, (uint64_t)n);
    if (n >= 2) {
        /* src_nelems differs on PE 0: MISMATCH everywhere, on every backend
         * (the blocking form exchanges its arguments first) */
        CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, me == 0 ? CAP - 1 : CAP,
                                    b->scnt, 0, b->rcnt, 0),
                     SYMM_ERR_MISMATCH);
        /* one PE's own error: it reports it, the others MISMATCH */
        CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, me == 1 ? f64 : b->scnt,
                                    0, b->rcnt, 0),
                     me == 1 ? SYMM_ERR_INVALID_ARG : SYMM_ERR_MISMATCH);
        /* different collectives (the CUDA backend's alltoall does not
         * exchange arguments: host backend only) */
        if (!g_host) {
        } else if (me == 0) CHECK_STATUS(symm_alltoall(w, b->dst, 0, b->src, 0, 1), SYMM_ERR_MISMATCH);
        else
            CHECK_STATUS(symm_alltoallv(w, b->dst, 0, CAP, b->src, 0, CAP, b->scnt, 0, b->rcnt,
                                        0),
                         SYMM_ERR_MISMATCH);
    }
    CHECK_OK(symm_buf_free(f64));
    free(sentinel);
    free(sent_img);
    free(got);
    free(rc);
    free(sc);

    /* the team is still in step */
    one(w, b, 0, 0, 0, 0, (CAP / 2) / (uint64_t)n, false);
}

int main(void) {
    tu_init();
    g_host = tu_host;
    a2av_bufs bs[3];
    bufs_alloc(&bs[0], SYMM_DTYPE_FLOAT32, SYMM_DTYPE_UINT64, tu_n);
    bufs_alloc(&bs[1], SYMM_DTYPE_UINT8, SYMM_DTYPE_INT64, tu_n);
    bufs_alloc(&bs[2], SYMM_DTYPE_FLOAT64, SYMM_DTYPE_INT64, tu_n);
    symm_team w = tu_world(), even = NULL, rev = NULL, x = NULL, y = NULL;
    CHECK_OK(symm_team_split_strided(w, 0, 2, (tu_n + 1) / 2, NULL, &even));
    CHECK_OK(symm_team_split_strided(w, tu_n - 1, -1, tu_n, NULL, &rev));
    CHECK_OK(symm_team_split_2d(w, 2, NULL, NULL, &x, &y));

    run_team(w, bs, 3);
    run_team(even, bs, 2);
    run_team(rev, bs, 2);
    run_team(x, bs, 1);
    run_team(y, bs, 1);
    t_faults(&bs[1]);

    CHECK_OK(symm_team_destroy(y));
    CHECK_OK(symm_team_destroy(x));
    CHECK_OK(symm_team_destroy(rev));
    CHECK_OK(symm_team_destroy(even));
    for (int k = 0; k < 3; k++) bufs_free(&bs[k]);
    tu_fini();
    return 0;
}

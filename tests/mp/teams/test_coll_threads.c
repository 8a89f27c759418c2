/*
 * Blocking collectives on different teams from different threads at once
 * (symm.h: only collectives on one team are serialised by the caller). Three
 * threads a PE, each with its own team over every PE (the world, a copy of
 * it, the world reversed), run rounds of reduce, broadcast, fcollect,
 * alltoall, alltoallv and barrier at sizes from 1 element to past the small
 * message paths. Every PE skews its threads differently, so the PEs reach
 * the teams' calls in different orders: a backend that queued one team's
 * call behind another's wait (one internal stream for every team) waits
 * until its timeout, and one whose calls shared result words reads another
 * team's. Every result is checked against an image computed on each PE.
 */
#include <pthread.h>
#include <time.h>

#include "teams_util.h"

#define THREADS 3
#define ROUNDS 4
#define MAXE 12000 /* the largest nelems: 96 KB a pair of int64 */

static const uint64_t sizes[] = {1, 13, 700, MAXE};
#define NSIZES (sizeof sizes / sizeof sizes[0])

typedef struct lane {
    int k;
    symm_team team;
    int32_t me, n;
    symm_buf src, dst, scnt, rcnt; /* src, dst: n * MAXE int64; counts: 2n uint64 */
    uint64_t *img, *got;           /* host images of n * MAXE elements */
} lane;

static pthread_barrier_t g_start;

/* Element i of team PE p's src for (lane, round, size). */
static uint64_t val(const lane *l, int round, int si, int32_t p, uint64_t i) {
    return tu_mix(((uint64_t)l->k * 1000 + (uint64_t)round * 10 + (uint64_t)si) * 1000003ull +
                  (uint64_t)p * 7919ull + i);
}

static void skew(const lane *l, int step) {
    /* 0-400 us, different on every PE for the same thread and step */
    struct timespec ts = {0, (long)(((uint64_t)(tu_me * 5 + l->k * 3 + step) % 5) * 100000)};
    nanosleep(&ts, NULL);
}

static void put_src(const lane *l, int round, int si, uint64_t count) {
    for (uint64_t i = 0; i < count; i++) l->img[i] = val(l, round, si, l->me, i);
    tu_write(l->src, 0, l->img, count);
}

static void expect(const lane *l, uint64_t count, const char *what, int round, uint64_t ne) {
    tu_read(l->dst, 0, l->got, count);
    for (uint64_t i = 0; i < count; i++)
        if (l->got[i] != l->img[i])
            TEST_FAIL_("thread %d (team %d of %d PEs), round %d, %s of %llu: element %llu is "
                       "0x%llx, want 0x%llx", l->k, (int)l->me, (int)l->n, round, what,
                       (unsigned long long)ne, (unsigned long long)i,
                       (unsigned long long)l->got[i], (unsigned long long)l->img[i]);
}

/* Elements team PE s sends team PE r (alltoallv), at most ne. */
static uint64_t cnt(int round, int32_t s, int32_t r, uint64_t ne) {
    return tu_mix((uint64_t)round * 31 + (uint64_t)s * 7 + (uint64_t)r) % (ne + 1);
}

static void round_of(lane *l, int round, int si) {
    const uint64_t ne = sizes[si];
    const int32_t n = l->n, me = l->me;
    const int step = round * (int)NSIZES + si;

    /* reduce (int64 sum, wraps) */
    put_src(l, round, si, ne);
    skew(l, step);
    CHECK_OK(symm_reduce(l->team, l->dst, 0, l->src, 0, ne, SYMM_OP_SUM));
    for (uint64_t i = 0; i < ne; i++) {
        uint64_t s = 0;
        for (int32_t p = 0; p < n; p++) s += val(l, round, si, p, i);
        l->img[i] = s;
    }
    expect(l, ne, "reduce", round, ne);

    /* broadcast from a root that moves */
    const int32_t root = (round + si) % n;
    put_src(l, round, si, ne);
    skew(l, step + 1);
    CHECK_OK(symm_broadcast(l->team, l->dst, 0, l->src, 0, ne, root));
    for (uint64_t i = 0; i < ne; i++) l->img[i] = val(l, round, si, root, i);
    expect(l, ne, "broadcast", round, ne);

    /* fcollect */
    put_src(l, round, si, ne);
    skew(l, step + 2);
    CHECK_OK(symm_fcollect(l->team, l->dst, 0, l->src, 0, ne));
    for (int32_t p = 0; p < n; p++)
        for (uint64_t i = 0; i < ne; i++) l->img[(uint64_t)p * ne + i] = val(l, round, si, p, i);
    expect(l, (uint64_t)n * ne, "fcollect", round, ne);

    /* alltoall: block j of PE p's src goes to PE j's block p */
    put_src(l, round, si, (uint64_t)n * ne);
    skew(l, step + 3);
    CHECK_OK(symm_alltoall(l->team, l->dst, 0, l->src, 0, ne));
    for (int32_t p = 0; p < n; p++)
        for (uint64_t i = 0; i < ne; i++)
            l->img[(uint64_t)p * ne + i] = val(l, round, si, p, (uint64_t)me * ne + i);
    expect(l, (uint64_t)n * ne, "alltoall", round, ne);

    /* alltoallv: PE p sends cnt(p, j) elements to PE j, packed */
    uint64_t sc[2 * 64], off = 0;
    for (int32_t j = 0; j < n; j++) sc[j] = cnt(round, me, j, ne);
    CHECK_OK(symm_put(l->scnt, 0, sc, (uint64_t)n, tu_me));
    put_src(l, round, si, (uint64_t)n * ne);
    CHECK_OK(symm_barrier(l->team)); /* the peers' counts are in place */
    skew(l, step + 4);
    CHECK_OK(symm_alltoallv(l->team, l->dst, 0, (uint64_t)n * ne, l->src, 0, (uint64_t)n * ne,
                            l->scnt, 0, l->rcnt, 0));
    uint64_t rc[2 * 64];
    CHECK_OK(symm_get(rc, l->rcnt, 0, 2 * (uint64_t)n, tu_me));
    for (int32_t p = 0; p < n; p++) {
        uint64_t from = 0; /* where p's piece for me starts in p's src */
        for (int32_t j = 0; j < me; j++) from += cnt(round, p, j, ne);
        const uint64_t c = cnt(round, p, me, ne);
        if (rc[p] != c || rc[n + p] != off)
            TEST_FAIL_("thread %d, round %d, alltoallv of up to %llu: from team PE %d count %llu "
                       "at %llu, want %llu at %llu", l->k, round, (unsigned long long)ne, (int)p,
                       (unsigned long long)rc[p], (unsigned long long)rc[n + p],
                       (unsigned long long)c, (unsigned long long)off);
        for (uint64_t i = 0; i < c; i++) l->img[off + i] = val(l, round, si, p, from + i);
        off += c;
    }
    expect(l, off, "alltoallv", round, ne);

    skew(l, step + 5);
    CHECK_OK(symm_barrier(l->team));
}

static void *run_lane(void *arg) {
    lane *l = arg;
    pthread_barrier_wait(&g_start);
    for (int round = 0; round < ROUNDS; round++)
        for (int si = 0; si < (int)NSIZES; si++) round_of(l, round, si);
    return NULL;
}

int main(void) {
    tu_init();
    ASSERT_LE(tu_n, 64);
    lane lanes[THREADS];
    memset(lanes, 0, sizeof lanes);
    symm_team world = tu_world();
    for (int k = 0; k < THREADS; k++) {
        lane *l = &lanes[k];
        l->k = k;
        if (k == 0) l->team = world;
        else if (k == 1) CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, NULL, &l->team));
        else CHECK_OK(symm_team_split_strided(world, tu_n - 1, -1, tu_n, NULL, &l->team));
        l->me = symm_team_my_pe(l->team);
        l->n = symm_team_n_pes(l->team);
        ASSERT_EQ(l->n, tu_n);
        const uint64_t cap = (uint64_t)tu_n * MAXE;
        CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_INT64, cap, &l->src));
        CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_INT64, cap, &l->dst));
        CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_UINT64, 2 * (uint64_t)tu_n, &l->scnt));
        CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_UINT64, 2 * (uint64_t)tu_n, &l->rcnt));
        l->img = tu_xmalloc(cap * sizeof(uint64_t));
        l->got = tu_xmalloc(cap * sizeof(uint64_t));
    }
    ASSERT_EQ(pthread_barrier_init(&g_start, NULL, THREADS), 0);
    pthread_t th[THREADS];
    for (int k = 0; k < THREADS; k++) ASSERT_EQ(pthread_create(&th[k], NULL, run_lane, &lanes[k]), 0);
    for (int k = 0; k < THREADS; k++) ASSERT_EQ(pthread_join(th[k], NULL), 0);
    pthread_barrier_destroy(&g_start);
    CHECK_OK(symm_barrier_all(tu_ctx));
    for (int k = THREADS - 1; k >= 0; k--) {
        lane *l = &lanes[k];
        CHECK_OK(symm_buf_free(l->rcnt));
        CHECK_OK(symm_buf_free(l->scnt));
        CHECK_OK(symm_buf_free(l->dst));
        CHECK_OK(symm_buf_free(l->src));
        if (k) CHECK_OK(symm_team_destroy(l->team));
        free(l->img);
        free(l->got);
    }
    if (tu_me == 0) printf("PASS collectives on %d teams from %d threads at once, %d PEs\n",
                           THREADS, THREADS, (int)tu_n);
    tu_fini();
    return 0;
}

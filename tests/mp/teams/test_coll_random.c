/*
 * Randomised sequence of team operations: every collective, on a pool of
 * overlapping teams (world, evens, odds, reversed, 2-D rows and columns, first
 * half, and up to three random strided teams created and destroyed on the
 * way), with random dtypes, ops, sizes, offsets and in-place use, mixed with
 * barriers. PEs outside a step's team skip it, so collectives on different
 * teams overlap in time. Each result is checked over the whole dst buffer
 * against a reference computed on the PE.
 *
 * Every PE draws the same random numbers (same seed, same count per step),
 * whatever its membership. The seed is printed; SYMM_TEST_SEED and
 * SYMM_TEST_STEPS override it and the step count.
 */
#include "reduce_ref.h"

#define RCAP 4096u /* elements per buffer */
#define N_FIXED 7
#define N_DYN 3

static symm_buf ba[SYMM_DTYPE_COUNT], bb[SYMM_DTYPE_COUNT];
static uint64_t rng_state;

static uint64_t rnd(void) {
    rng_state += 0x9e3779b97f4a7c15ull;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t env_u64(const char *name, uint64_t dflt) {
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : dflt;
}

typedef struct step_args {
    uint64_t step;
    uint32_t kind, dt, op;
    uint64_t ne, di, si;
    int32_t root;
    bool inplace;
    uint64_t r[4]; /* spare random numbers */
} step_args;

static const char *kind_names[] = {"broadcast", "fcollect", "collect", "alltoall", "reduce",
                                   "reducescatter"};

static uint64_t collect_count(uint64_t step, int32_t j, uint64_t max) {
    return tu_mix(step * 31 + (uint64_t)j) % (max + 1);
}

/* Source image of world PE w for a data-movement step. */
static void src_img(const step_args *a, int32_t w, uint8_t *img) {
    uint32_t es = esize(a->dt);
    if (a->kind >= 4) {
        for (uint64_t i = 0; i < RCAP; i++) gen(a->dt, a->op, GEN_EXACT, a->step, w, i, img + i * es);
    } else {
        tu_pattern(img, RCAP, es, a->step, (uint64_t)w);
    }
}

/* The call's message, kept before the checks make other calls. */
static char g_err[1024];
static symm_status kept(symm_status st) {
    snprintf(g_err, sizeof g_err, "%s", st ? symm_last_error() : "");
    return st;
}

static void run_step(symm_team t, const step_args *a) {
    const int32_t n = symm_team_n_pes(t), me = symm_team_my_pe(t);
    const uint32_t es = esize(a->dt);
    uint8_t *mine = tu_xmalloc((size_t)RCAP * es), *want = tu_xmalloc((size_t)RCAP * es);
    uint8_t *peer = tu_xmalloc((size_t)RCAP * es), *got = tu_xmalloc((size_t)RCAP * es);
    src_img(a, tu_me, mine);
    symm_buf src = ba[a->dt], dst = a->inplace ? ba[a->dt] : bb[a->dt];
    tu_write(src, 0, mine, RCAP);
    if (a->inplace) {
        memcpy(want, mine, (size_t)RCAP * es);
    } else {
        memset(want, TU_SENTINEL, (size_t)RCAP * es);
        tu_write(dst, 0, want, RCAP);
    }
    uint64_t ne = a->ne, di = a->di, si = a->si;
    symm_status st = SYMM_ERR_INTERNAL;
    switch (a->kind) {
    case 0: /* broadcast */
        if (a->inplace) si = di;
        st = kept(symm_broadcast(t, dst, di, src, si, ne, a->root));
        src_img(a, tu_world_pe(t, a->root), peer);
        memcpy(want + di * es, peer + si * es, ne * es);
        break;
    case 1: /* fcollect */
        if (a->inplace) si = di + (uint64_t)me * ne;
        st = kept(symm_fcollect(t, dst, di, src, si, ne));
        for (int32_t j = 0; j < n; j++) {
            src_img(a, tu_world_pe(t, j), peer);
            uint64_t psi = a->inplace ? di + (uint64_t)j * ne : si;
            memcpy(want + (di + (uint64_t)j * ne) * es, peer + psi * es, ne * es);
        }
        break;
    case 2: { /* collect: per-PE counts */
        uint64_t prefix = 0, my_prefix = 0;
        for (int32_t j = 0; j < me; j++) my_prefix += collect_count(a->step, j, ne);
        if (a->inplace) si = di + my_prefix;
        st = kept(symm_collect(t, dst, di, src, si, collect_count(a->step, me, ne)));
        for (int32_t j = 0; j < n; j++) {
            uint64_t c = collect_count(a->step, j, ne);
            src_img(a, tu_world_pe(t, j), peer);
            uint64_t psi = a->inplace ? di + prefix : si;
            memcpy(want + (di + prefix) * es, peer + psi * es, c * es);
            prefix += c;
        }
        break;
    }
    case 3: /* alltoall */
        st = kept(symm_alltoall(t, dst, di, src, si, ne));
        for (int32_t j = 0; j < n; j++) {
            src_img(a, tu_world_pe(t, j), peer);
            memcpy(want + (di + (uint64_t)j * ne) * es, peer + (si + (uint64_t)me * ne) * es,
                   ne * es);
        }
        break;
    case 4: /* reduce */
        if (a->inplace) si = di;
        st = kept(symm_reduce(t, dst, di, src, si, ne, a->op));
        for (uint64_t i = 0; i < ne; i++)
            expect(a->dt, a->op, GEN_EXACT, a->step, t, si + i, want + (di + i) * es);
        break;
    case 5: /* reducescatter */
        st = kept(symm_reducescatter(t, dst, di, src, si, ne, a->op));
        for (uint64_t i = 0; i < ne; i++)
            expect(a->dt, a->op, GEN_EXACT, a->step, t, si + (uint64_t)me * ne + i,
                   want + (di + i) * es);
        break;
    }
    char what[200];
    snprintf(what, sizeof what,
             "step %llu: %s dtype %u op %u nelems %llu di %llu si %llu root %d%s (team of %d)",
             (unsigned long long)a->step, kind_names[a->kind], a->dt, a->op,
             (unsigned long long)ne, (unsigned long long)di, (unsigned long long)si, a->root,
             a->inplace ? " in place" : "", n);
    if (st != SYMM_SUCCESS)
        TEST_FAIL_("%s -> %s (%s)", what, symm_status_string(st), g_err);
    tu_read(dst, 0, got, RCAP);
    ASSERT_IMAGE_EQ(got, want, RCAP, es, what);
    free(mine);
    free(want);
    free(peer);
    free(got);
}

/* Draw a step's parameters for a team of n PEs (n unknown to non-members:
 * they draw the same numbers and ignore them). */
static void draw(step_args *a, uint64_t step, int32_t n) {
    uint64_t r[10];
    for (int i = 0; i < 10; i++) r[i] = rnd();
    memset(a, 0, sizeof *a);
    a->step = step;
    a->kind = (uint32_t)(r[0] % 6);
    a->dt = all_dtypes[r[1] % N_DTYPES];
    uint32_t nops = a->dt >= SYMM_DTYPE_FLOAT16 ? 4 : 7;
    a->op = (uint32_t)(r[2] % nops);
    a->inplace = r[3] % 4 == 0 && a->kind != 3 && a->kind != 5;
    a->di = r[4] % 8;
    a->si = r[5] % 8;
    if (n <= 0) return;
    a->root = (int32_t)(r[6] % (uint64_t)n);
    bool big = r[7] % 16 == 0;
    uint64_t room = RCAP - 16; /* after the offsets */
    uint64_t per = a->kind == 0 || a->kind == 4 ? room : room / (uint64_t)n;
    if (a->kind == 2) per = room / (uint64_t)n; /* collect: max count per PE */
    if (a->inplace && (a->kind == 1 || a->kind == 2)) a->si = 0; /* set by run_step */
    a->ne = big ? r[8] % (per + 1) : r[8] % (per < 40 ? per + 1 : 40);
    if (a->kind == 3 || a->kind == 5) { /* src holds n blocks */
        a->ne = a->ne < room / (uint64_t)n ? a->ne : room / (uint64_t)n;
    }
    memcpy(a->r, &r[6], sizeof a->r);
}

int main(void) {
    tu_init();
    const uint64_t seed = env_u64("SYMM_TEST_SEED", 20240917ull);
    const uint64_t steps = env_u64("SYMM_TEST_STEPS", 400);
    if (tu_me == 0) {
        printf("test_coll_random: seed %llu, %llu steps, %d PEs (SYMM_TEST_SEED / "
               "SYMM_TEST_STEPS to change)\n",
               (unsigned long long)seed, (unsigned long long)steps, tu_n);
        fflush(stdout);
    }
    rng_state = seed;
    for (int k = 0; k < N_DTYPES; k++) {
        CHECK_OK(symm_buf_alloc(tu_ctx, all_dtypes[k], RCAP, &ba[all_dtypes[k]]));
        CHECK_OK(symm_buf_alloc(tu_ctx, all_dtypes[k], RCAP, &bb[all_dtypes[k]]));
    }
    symm_team w = tu_world();
    symm_team pool[N_FIXED + N_DYN] = {NULL};
    bool alive[N_FIXED + N_DYN] = {false};
    int32_t size[N_FIXED + N_DYN] = {0};
    pool[0] = w;
    size[0] = tu_n;
    CHECK_OK(symm_team_split_strided(w, 0, 2, (tu_n + 1) / 2, NULL, &pool[1]));
    size[1] = (tu_n + 1) / 2;
    if (tu_n >= 2) CHECK_OK(symm_team_split_strided(w, 1, 2, tu_n / 2, NULL, &pool[2]));
    size[2] = tu_n / 2;
    CHECK_OK(symm_team_split_strided(w, tu_n - 1, -1, tu_n, NULL, &pool[3]));
    size[3] = tu_n;
    CHECK_OK(symm_team_split_2d(w, 2, NULL, NULL, &pool[4], &pool[5]));
    size[4] = size[5] = -1; /* differs per PE: members read it from the team */
    CHECK_OK(symm_team_split_strided(w, 0, 1, (tu_n + 1) / 2, NULL, &pool[6]));
    size[6] = (tu_n + 1) / 2;
    for (int k = 0; k < N_FIXED; k++) alive[k] = size[k] != 0;

    uint64_t counts[8] = {0};
    for (uint64_t s = 0; s < steps; s++) {
        uint64_t r0 = rnd(), r1 = rnd(), r2 = rnd(), r3 = rnd();
        if (r0 % 100 < 6) {
            /* create or destroy a random strided team of the world */
            int k = N_FIXED + (int)(r1 % N_DYN);
            if (!alive[k]) {
                int32_t start = (int32_t)(r2 % (uint64_t)tu_n);
                int32_t stride = (int32_t)(r3 % (uint64_t)(2 * tu_n + 1)) - tu_n;
                if (stride == 0) stride = 1;
                int32_t maxsize = stride > 0 ? (tu_n - 1 - start) / stride + 1 : start / -stride + 1;
                int32_t sz = 1 + (int32_t)((r3 >> 32) % (uint64_t)maxsize);
                CHECK_OK(symm_team_split_strided(w, start, stride, sz, NULL, &pool[k]));
                alive[k] = true;
                size[k] = sz;
                counts[6]++;
            } else {
                if (pool[k]) CHECK_OK(symm_team_destroy(pool[k]));
                pool[k] = NULL;
                alive[k] = false;
                counts[7]++;
            }
            continue;
        }
        int k = (int)(r1 % (N_FIXED + N_DYN));
        if (!alive[k]) continue;
        symm_team t = pool[k];
        if (r0 % 100 < 12) {
            if (t) CHECK_OK(r2 % 2 ? symm_barrier(t) : symm_team_sync(t));
            continue;
        }
        step_args a;
        draw(&a, s, t ? symm_team_n_pes(t) : 0);
        if (!t) continue;
        run_step(t, &a);
        counts[a.kind]++;
    }
    for (int k = N_FIXED; k < N_FIXED + N_DYN; k++)
        if (pool[k]) CHECK_OK(symm_team_destroy(pool[k]));
    for (int k = 1; k < N_FIXED; k++)
        if (pool[k]) CHECK_OK(symm_team_destroy(pool[k]));
    CHECK_OK(symm_barrier_all(tu_ctx));
    for (int k = 0; k < N_DTYPES; k++) {
        CHECK_OK(symm_buf_free(ba[all_dtypes[k]]));
        CHECK_OK(symm_buf_free(bb[all_dtypes[k]]));
    }
    printf("test_coll_random: PE %d ok: bcast %llu fcollect %llu collect %llu alltoall %llu "
           "reduce %llu reducescatter %llu, teams made %llu destroyed %llu\n",
           tu_me, (unsigned long long)counts[0], (unsigned long long)counts[1],
           (unsigned long long)counts[2], (unsigned long long)counts[3],
           (unsigned long long)counts[4], (unsigned long long)counts[5],
           (unsigned long long)counts[6], (unsigned long long)counts[7]);
    tu_fini();
    return 0;
}

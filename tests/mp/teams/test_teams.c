/*
 * Team API: predefined teams, queries, configs, strided and 2-D splits
 * (negative strides, size-1 teams, splits of splits), translate, destroy and
 * recreate, slot exhaustion, argument errors and cross-PE mismatches.
 * Membership is checked twice: by the queries, and by an fcollect of world
 * PE numbers over the new team (which must come back in team order).
 */
#include "teams_util.h"

/* Every member contributes its world PE; the result must list the team. */
static void check_members(symm_team t, const int32_t *want, int32_t n) {
    ASSERT_EQ(symm_team_n_pes(t), n);
    for (int32_t i = 0; i < n; i++) ASSERT_EQ(tu_world_pe(t, i), want[i]);
    int32_t mine = symm_team_my_pe(t);
    ASSERT_TRUE(mine >= 0 && mine < n);
    ASSERT_EQ(want[mine], tu_me);
}

static symm_buf g_src, g_dst; /* int32 buffers for membership fcollects */

static void check_members_coll(symm_team t, const int32_t *want, int32_t n) {
    check_members(t, want, n);
    int32_t v = tu_me;
    tu_write(g_src, 0, &v, 1);
    int32_t *fill = tu_xmalloc((size_t)(n + 2) * sizeof *fill);
    for (int32_t i = 0; i < n + 2; i++) fill[i] = -7;
    tu_write(g_dst, 0, fill, (uint64_t)n + 2);
    CHECK_OK(symm_fcollect(t, g_dst, 1, g_src, 0, 1));
    int32_t *got = tu_xmalloc((size_t)(n + 2) * sizeof *got);
    tu_read(g_dst, 0, got, (uint64_t)n + 2);
    ASSERT_EQ(got[0], -7);
    for (int32_t i = 0; i < n; i++) ASSERT_EQ(got[1 + i], want[i]);
    ASSERT_EQ(got[n + 1], -7);
    CHECK_OK(symm_team_sync(t));
    CHECK_OK(symm_barrier(t));
    free(fill);
    free(got);
}

static void test_predefined(void) {
    symm_team world, shared, node, slp, t;
    CHECK_OK(symm_team_get(tu_ctx, SYMM_TEAM_WORLD, &world));
    CHECK_OK(symm_team_get(tu_ctx, SYMM_TEAM_SHARED, &shared));
    CHECK_OK(symm_team_get(tu_ctx, SYMM_TEAM_NODE, &node));
    CHECK_OK(symm_team_get(tu_ctx, SYMM_TEAM_SAME_LOCAL_PE, &slp));
    ASSERT_TRUE(world && shared && node && slp);
    ASSERT_EQ(symm_team_my_pe(world), tu_me);
    ASSERT_EQ(symm_team_n_pes(world), tu_n);

    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(tu_ctx, &info));
    /* symmrun starts every PE on this host; with --hosts H it splits them
     * into H simulated hosts of contiguous ranks and tells each PE its local
     * rank and count (SYMM_LOCAL_RANK / SYMM_LOCAL_N_PES). */
    const char *lr_env = getenv("SYMM_LOCAL_RANK"), *ln_env = getenv("SYMM_LOCAL_N_PES");
    int32_t want_ln = ln_env ? atoi(ln_env) : tu_n, want_lr = lr_env ? atoi(lr_env) : tu_me;
    ASSERT_EQ(info.local_n_pes, want_ln);
    ASSERT_EQ(info.local_pe, want_lr);
    ASSERT_EQ(symm_team_n_pes(node), info.local_n_pes);
    ASSERT_EQ(symm_team_my_pe(node), info.local_pe);
    if (info.backend == SYMM_BACKEND_HOST) {
        ASSERT_EQ(symm_team_n_pes(shared), symm_team_n_pes(node));
        ASSERT_EQ(symm_team_my_pe(shared), symm_team_my_pe(node));
    }
    int32_t *all = tu_xmalloc((size_t)tu_n * sizeof *all);
    for (int32_t i = 0; i < tu_n; i++) all[i] = i;
    check_members_coll(world, all, tu_n);
    /* Node: my host's contiguous group. */
    int32_t first = tu_me - info.local_pe;
    check_members_coll(node, all + first, info.local_n_pes);
    for (int32_t i = 0; i < tu_n; i++)
        ASSERT_EQ(symm_team_translate_pe(world, i, node),
                  i >= first && i < first + info.local_n_pes ? i - first : -1);
    if (info.backend == SYMM_BACKEND_HOST) check_members_coll(shared, all + first, info.local_n_pes);
    /* Same local PE: every PE whose local rank is mine (one per host), from
     * an fcollect of everybody's local rank over the world. */
    int32_t v = info.local_pe, *lps = tu_xmalloc((size_t)tu_n * sizeof *lps), k = 0;
    tu_write(g_src, 0, &v, 1);
    CHECK_OK(symm_fcollect(world, g_dst, 0, g_src, 0, 1));
    tu_read(g_dst, 0, lps, (uint64_t)tu_n);
    CHECK_OK(symm_barrier(world));
    for (int32_t i = 0; i < tu_n; i++)
        if (lps[i] == info.local_pe) all[k++] = i;
    check_members_coll(slp, all, k);
    ASSERT_EQ(symm_team_translate_pe(slp, symm_team_my_pe(slp), world), tu_me);
    free(lps);
    free(all);

    /* Same handle every time. */
    CHECK_OK(symm_team_get(tu_ctx, SYMM_TEAM_WORLD, &t));
    ASSERT_TRUE(t == world);

    /* Errors. */
    CHECK_STATUS(symm_team_get(tu_ctx, 4, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_get(tu_ctx, UINT32_MAX, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_get(tu_ctx, SYMM_TEAM_WORLD, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_get(NULL, SYMM_TEAM_WORLD, &t), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_team_destroy(world), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_destroy(node), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_team_destroy(NULL));
    ASSERT_EQ(symm_team_n_pes(world), tu_n); /* still alive */

    ASSERT_EQ(symm_team_my_pe(NULL), -1);
    ASSERT_EQ(symm_team_n_pes(NULL), -1);
    ASSERT_EQ(symm_team_my_pe((symm_team)(uintptr_t)0x1234), -1);
    ASSERT_EQ(symm_team_translate_pe(NULL, 0, world), -1);
    ASSERT_EQ(symm_team_translate_pe(world, 0, NULL), -1);
    ASSERT_EQ(symm_team_translate_pe(world, -1, world), -1);
    ASSERT_EQ(symm_team_translate_pe(world, tu_n, world), -1);
    /* A buffer handle is not a team. */
    CHECK_STATUS(symm_team_sync((symm_team)(void *)g_src), SYMM_ERR_INVALID_HANDLE);
}

static void test_configs(void) {
    symm_team world = tu_world();
    symm_team_config c;
    memset(&c, 0x5a, sizeof c);
    CHECK_OK(SYMM_TEAM_CONFIG_INIT(&c));
    ASSERT_EQ(c.struct_size, sizeof c);
    ASSERT_EQ(c.num_contexts, 0);
    CHECK_STATUS(symm_team_config_init(NULL, sizeof c), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_config_init(&c, 0), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_config_init(&c, 3), SYMM_ERR_INVALID_ARG);

    /* An older, smaller struct: only what fits is written. */
    struct {
        symm_team_config c;
        uint32_t guard;
    } small;
    memset(&small, 0x5a, sizeof small);
    CHECK_OK(symm_team_config_init(&small.c, sizeof(uint32_t)));
    ASSERT_EQ(small.c.struct_size, sizeof(uint32_t));
    ASSERT_EQ((uint32_t)small.c.num_contexts, 0x5a5a5a5au);
    /* A newer, larger struct: the tail is zeroed. */
    struct {
        symm_team_config c;
        uint64_t future[2];
    } big;
    memset(&big, 0x5a, sizeof big);
    CHECK_OK(symm_team_config_init(&big.c, sizeof big));
    ASSERT_EQ(big.c.struct_size, sizeof(symm_team_config));
    ASSERT_EQ(big.c.num_contexts, 0);
    ASSERT_U64_EQ(big.future[0], 0);
    ASSERT_U64_EQ(big.future[1], 0);

    symm_team_config got;
    memset(&got, 0x11, sizeof got);
    got.struct_size = sizeof got;
    CHECK_OK(symm_team_get_config(world, &got));
    ASSERT_EQ(got.struct_size, sizeof got);
    ASSERT_EQ(got.num_contexts, 0);
    memset(&got, 0x11, sizeof got);
    got.struct_size = sizeof(uint32_t);
    CHECK_OK(symm_team_get_config(world, &got));
    ASSERT_EQ(got.struct_size, sizeof(uint32_t));
    ASSERT_EQ((uint32_t)got.num_contexts, 0x11111111u);
    got.struct_size = 0;
    CHECK_STATUS(symm_team_get_config(world, &got), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_get_config(world, NULL), SYMM_ERR_INVALID_ARG);
    got.struct_size = sizeof got;
    CHECK_STATUS(symm_team_get_config(NULL, &got), SYMM_ERR_INVALID_HANDLE);

    /* A split keeps the caller's num_contexts; an old config gets defaults. */
    symm_team t = NULL;
    c.num_contexts = 3;
    CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, &c, &t));
    got.struct_size = sizeof got;
    CHECK_OK(symm_team_get_config(t, &got));
    ASSERT_EQ(got.num_contexts, 3);
    CHECK_OK(symm_team_destroy(t));
    small.c.struct_size = sizeof(uint32_t);
    small.c.num_contexts = 9; /* beyond its struct_size: ignored */
    CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, &small.c, &t));
    CHECK_OK(symm_team_get_config(t, &got));
    ASSERT_EQ(got.num_contexts, 0);
    CHECK_OK(symm_team_destroy(t));
    c.num_contexts = -1;
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, tu_n, &c, &t), SYMM_ERR_INVALID_ARG);
    c.struct_size = 0;
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, tu_n, &c, &t), SYMM_ERR_INVALID_ARG);
}

/* Split parent by (start, stride, size) and check the result on every PE.
 * parent_pes: world PEs of the parent in its order. Returns the new team. */
static symm_team split_check(symm_team parent, const int32_t *parent_pes, int32_t pn,
                             int32_t start, int32_t stride, int32_t size) {
    symm_team t = (symm_team)(uintptr_t)0xdead; /* must be overwritten */
    CHECK_OK(symm_team_split_strided(parent, start, stride, size, NULL, &t));
    int32_t *want = tu_xmalloc((size_t)size * sizeof *want);
    int32_t my_index = -1, parent_me = symm_team_my_pe(parent);
    for (int32_t k = 0; k < size; k++) {
        int32_t p = start + k * stride;
        ASSERT_TRUE(p >= 0 && p < pn);
        want[k] = parent_pes[p];
        if (p == parent_me) my_index = k;
    }
    if (my_index < 0) {
        ASSERT_TRUE(t == NULL);
    } else {
        ASSERT_TRUE(t != NULL);
        ASSERT_EQ(symm_team_my_pe(t), my_index);
        check_members_coll(t, want, size);
        for (int32_t k = 0; k < size; k++) {
            ASSERT_EQ(symm_team_translate_pe(t, k, parent), start + k * stride);
            ASSERT_EQ(symm_team_translate_pe(parent, start + k * stride, t), k);
        }
        /* PEs of the parent outside the team translate to -1. */
        for (int32_t p = 0; p < pn; p++) {
            bool in = false;
            for (int32_t k = 0; k < size; k++) in |= start + k * stride == p;
            if (!in) ASSERT_EQ(symm_team_translate_pe(parent, p, t), -1);
        }
        symm_team_config got;
        got.struct_size = sizeof got;
        CHECK_OK(symm_team_get_config(t, &got));
        ASSERT_EQ(got.num_contexts, 0);
    }
    free(want);
    return t;
}

static void test_strided(void) {
    symm_team world = tu_world();
    int32_t *all = tu_xmalloc((size_t)tu_n * sizeof *all);
    for (int32_t i = 0; i < tu_n; i++) all[i] = i;

    /* The world again, evens, odds, reversed, every third from the end. */
    symm_team copy = split_check(world, all, tu_n, 0, 1, tu_n);
    symm_team even = split_check(world, all, tu_n, 0, 2, (tu_n + 1) / 2);
    symm_team odd = tu_n >= 2 ? split_check(world, all, tu_n, 1, 2, tu_n / 2) : NULL;
    symm_team rev = split_check(world, all, tu_n, tu_n - 1, -1, tu_n);
    symm_team third = split_check(world, all, tu_n, tu_n - 1, -3, (tu_n + 2) / 3);
    /* Size-1 teams, also with a stride that would leave the parent. */
    symm_team last = split_check(world, all, tu_n, tu_n - 1, 1, 1);
    symm_team first = split_check(world, all, tu_n, 0, -1000, 1);

    /* Splits of splits: evens of the reversed world, then reverse that. */
    int32_t rn = tu_n, *rev_pes = tu_xmalloc((size_t)rn * sizeof *rev_pes);
    for (int32_t i = 0; i < rn; i++) rev_pes[i] = tu_n - 1 - i;
    if (rev) {
        int32_t sn = (rn + 1) / 2;
        symm_team rev_even = split_check(rev, rev_pes, rn, 0, 2, sn);
        if (rev_even) {
            int32_t *pes = tu_xmalloc((size_t)sn * sizeof *pes);
            for (int32_t k = 0; k < sn; k++) pes[k] = rev_pes[2 * k];
            symm_team back = split_check(rev_even, pes, sn, sn - 1, -1, sn);
            ASSERT_TRUE(back != NULL); /* every member of rev_even is in it */
            /* translate across unrelated teams goes through the world. */
            for (int32_t k = 0; k < sn; k++)
                ASSERT_EQ(symm_team_translate_pe(back, k, world), pes[sn - 1 - k]);
            CHECK_OK(symm_team_destroy(back));
            free(pes);
        }
        CHECK_OK(symm_team_destroy(rev_even));
    }
    if (even) {
        int32_t en = (tu_n + 1) / 2, *pes = tu_xmalloc((size_t)en * sizeof *pes);
        for (int32_t k = 0; k < en; k++) pes[k] = 2 * k;
        symm_team ee = split_check(even, pes, en, 0, 2, (en + 1) / 2);
        CHECK_OK(symm_team_destroy(ee));
        free(pes);
    }
    /* Overlapping teams stay usable in any order. */
    if (even) CHECK_OK(symm_barrier(even));
    CHECK_OK(symm_barrier(copy));
    if (odd) CHECK_OK(symm_barrier(odd));
    CHECK_OK(symm_barrier(rev));

    /* Translate from the evens to the reversed world. */
    if (even && tu_n >= 2) {
        for (int32_t k = 0; k < symm_team_n_pes(even); k++)
            ASSERT_EQ(symm_team_translate_pe(even, k, rev), tu_n - 1 - 2 * k);
    }
    CHECK_OK(symm_team_destroy(copy));
    CHECK_OK(symm_team_destroy(even));
    CHECK_OK(symm_team_destroy(odd));
    CHECK_OK(symm_team_destroy(rev));
    CHECK_OK(symm_team_destroy(third));
    CHECK_OK(symm_team_destroy(last));
    CHECK_OK(symm_team_destroy(first));
    free(rev_pes);
    free(all);
}

static void test_2d_one(symm_team parent, const int32_t *pes, int32_t pn, int32_t xrange) {
    symm_team x = NULL, y = NULL;
    symm_team_config xc;
    CHECK_OK(SYMM_TEAM_CONFIG_INIT(&xc));
    xc.num_contexts = 2;
    CHECK_OK(symm_team_split_2d(parent, xrange, &xc, NULL, &x, &y));
    int32_t me = symm_team_my_pe(parent);
    if (me < 0) {
        ASSERT_TRUE(x == NULL && y == NULL);
        return;
    }
    ASSERT_TRUE(x != NULL && y != NULL);
    int32_t cols = xrange < pn ? xrange : pn;
    int32_t row = me / cols, col = me % cols;
    int32_t xn = (row + 1) * cols <= pn ? cols : pn - row * cols;
    int32_t yn = (pn - col + cols - 1) / cols;
    int32_t *want = tu_xmalloc((size_t)(xn > yn ? xn : yn) * sizeof *want);
    for (int32_t k = 0; k < xn; k++) want[k] = pes[row * cols + k];
    ASSERT_EQ(symm_team_my_pe(x), col);
    check_members_coll(x, want, xn);
    for (int32_t k = 0; k < yn; k++) want[k] = pes[col + k * cols];
    ASSERT_EQ(symm_team_my_pe(y), row);
    check_members_coll(y, want, yn);
    symm_team_config got;
    got.struct_size = sizeof got;
    CHECK_OK(symm_team_get_config(x, &got));
    ASSERT_EQ(got.num_contexts, 2);
    CHECK_OK(symm_team_get_config(y, &got));
    ASSERT_EQ(got.num_contexts, 0);
    /* Row and column cross at this PE only. */
    ASSERT_EQ(symm_team_translate_pe(x, col, y), row);
    for (int32_t k = 0; k < xn; k++)
        if (k != col) ASSERT_EQ(symm_team_translate_pe(x, k, y), -1);
    /* The two teams of one PE use different slots: interleave them. */
    CHECK_OK(symm_barrier(x));
    CHECK_OK(symm_barrier(y));
    CHECK_OK(symm_barrier(x));
    CHECK_OK(symm_team_destroy(y));
    CHECK_OK(symm_team_destroy(x));
    free(want);
}

static void test_2d(void) {
    symm_team world = tu_world();
    int32_t *all = tu_xmalloc((size_t)tu_n * sizeof *all);
    for (int32_t i = 0; i < tu_n; i++) all[i] = i;
    for (int32_t xr = 1; xr <= tu_n + 1; xr++) test_2d_one(world, all, tu_n, xr);
    test_2d_one(world, all, tu_n, INT32_MAX);
    if (tu_n >= 6) {
        /* A 2-D split of 6 PEs (the last 6, reversed): 2 x 3 and 3 + short. */
        symm_team six = NULL;
        CHECK_OK(symm_team_split_strided(world, tu_n - 1, -1, 6, NULL, &six));
        int32_t pes[6];
        for (int32_t i = 0; i < 6; i++) pes[i] = tu_n - 1 - i;
        if (six) {
            test_2d_one(six, pes, 6, 3);
            test_2d_one(six, pes, 6, 2);
            test_2d_one(six, pes, 6, 4); /* rows of 4 and 2: columns of 2, 2, 1, 1 */
        }
        CHECK_OK(symm_team_destroy(six));
    }
    symm_team x = NULL, y = NULL;
    CHECK_STATUS(symm_team_split_2d(world, 0, NULL, NULL, &x, &y), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_2d(world, -2, NULL, NULL, &x, &y), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_2d(world, 1, NULL, NULL, NULL, &y), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_2d(NULL, 1, NULL, NULL, &x, &y), SYMM_ERR_INVALID_HANDLE);
    ASSERT_TRUE(x == NULL && y == NULL);
    free(all);
}

static void test_invalid(void) {
    symm_team world = tu_world();
    symm_team t = (symm_team)(uintptr_t)0x1;
    CHECK_STATUS(symm_team_split_strided(world, 0, 0, 1, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, 0, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, -1, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, -1, 1, 1, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, tu_n, 1, 1, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, tu_n + 1, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, 0, -1, 2, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, 0, INT32_MAX, 3, NULL, &t), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, 1, NULL, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_team_split_strided(NULL, 0, 1, 1, NULL, &t), SYMM_ERR_INVALID_HANDLE);
    ASSERT_TRUE(t == (symm_team)(uintptr_t)0x1); /* untouched on failure */
    /* The errors left every PE in step: a split still works. */
    t = NULL;
    CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, NULL, &t));
    CHECK_OK(symm_team_destroy(t));

    if (tu_n >= 2) {
        /* PEs disagree on the triplet: MISMATCH everywhere, nothing made. */
        t = NULL;
        CHECK_STATUS(symm_team_split_strided(world, 0, 1, tu_me == 0 ? 1 : 2, NULL, &t),
                     SYMM_ERR_MISMATCH);
        ASSERT_TRUE(t == NULL);
        /* One PE's own argument error: it reports it, the others MISMATCH. */
        symm_status want = tu_me == tu_n - 1 ? SYMM_ERR_INVALID_ARG : SYMM_ERR_MISMATCH;
        CHECK_STATUS(symm_team_split_strided(world, 0, tu_me == tu_n - 1 ? 0 : 1, 1, NULL, &t),
                     want);
        CHECK_STATUS(symm_team_split_2d(world, tu_me == 0 ? 1 : 2, NULL, NULL, &t, &t),
                     SYMM_ERR_MISMATCH);
        /* Different calls on one team: split on some PEs, 2-D on others. */
        symm_team y = NULL;
        if (tu_me % 2 == 0)
            CHECK_STATUS(symm_team_split_strided(world, 0, 1, tu_n, NULL, &t), SYMM_ERR_MISMATCH);
        else
            CHECK_STATUS(symm_team_split_2d(world, 1, NULL, NULL, &t, &y), SYMM_ERR_MISMATCH);
        ASSERT_TRUE(t == NULL && y == NULL);
    }
    CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, NULL, &t));
    CHECK_OK(symm_barrier(t));
    CHECK_OK(symm_team_destroy(t));
}

static void test_destroy_recreate(void) {
    symm_team world = tu_world();
    for (int round = 0; round < 20; round++) {
        symm_team t = NULL;
        int32_t size = 1 + round % tu_n;
        CHECK_OK(symm_team_split_strided(world, 0, 1, size, NULL, &t));
        if (tu_me < size) {
            ASSERT_TRUE(t != NULL);
            CHECK_OK(symm_barrier(t));
            CHECK_OK(symm_team_destroy(t));
            /* Stale from now on. */
            ASSERT_EQ(symm_team_my_pe(t), -1);
            ASSERT_EQ(symm_team_n_pes(t), -1);
            ASSERT_EQ(symm_team_translate_pe(t, 0, world), -1);
            CHECK_STATUS(symm_team_destroy(t), SYMM_ERR_INVALID_HANDLE);
            CHECK_STATUS(symm_team_sync(t), SYMM_ERR_INVALID_HANDLE);
            symm_team_config got;
            got.struct_size = sizeof got;
            CHECK_STATUS(symm_team_get_config(t, &got), SYMM_ERR_INVALID_HANDLE);
        } else {
            ASSERT_TRUE(t == NULL);
        }
    }
}

/* Create copies of parent until TEAM_EXHAUSTED; returns how many. */
static int fill_slots(symm_team parent, symm_team *made, int cap) {
    int k = 0;
    for (;;) {
        ASSERT_LT(k, cap);
        symm_team t = NULL;
        int32_t pn = symm_team_n_pes(parent);
        symm_status st = symm_team_split_strided(parent, 0, 1, pn, NULL, &t);
        if (st == SYMM_ERR_TEAM_EXHAUSTED) {
            ASSERT_TRUE(t == NULL);
            ASSERT_TRUE(strstr(symm_last_error(), "slot") != NULL);
            return k;
        }
        CHECK_OK(st);
        ASSERT_TRUE(t != NULL);
        made[k++] = t;
    }
}

static void test_exhaustion(void) {
    symm_team world = tu_world();
    enum { CAP = 4096 };
    symm_team *made = tu_xmalloc(CAP * sizeof *made);
    int k1 = fill_slots(world, made, CAP);
    ASSERT_TRUE(k1 >= 8); /* the runtime promises a useful number of teams */
    /* Every team still works, the last one included. */
    CHECK_OK(symm_barrier(made[0]));
    CHECK_OK(symm_barrier(made[k1 - 1]));
    /* Exhausted parents can still not create; destroying one frees one. */
    CHECK_OK(symm_team_destroy(made[k1 / 2]));
    symm_team t = NULL;
    CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, NULL, &t));
    made[k1 / 2] = t;
    CHECK_STATUS(symm_team_split_strided(world, 0, 1, tu_n, NULL, &t), SYMM_ERR_TEAM_EXHAUSTED);
    /* Splitting an exhausted team's copy fails the same way. */
    CHECK_STATUS(symm_team_split_strided(made[0], 0, 1, 1, NULL, &t), SYMM_ERR_TEAM_EXHAUSTED);
    CHECK_STATUS(symm_team_split_2d(world, 1, NULL, NULL, &t, &t), SYMM_ERR_TEAM_EXHAUSTED);
    for (int i = k1 - 1; i >= 0; i--) CHECK_OK(symm_team_destroy(made[i]));
    int k2 = fill_slots(world, made, CAP);
    ASSERT_EQ(k2, k1);
    for (int i = 0; i < k2; i++) CHECK_OK(symm_team_destroy(made[i]));

    /* Disjoint teams may share a slot: even/odd pairs fit as many times as
     * world copies do. */
    if (tu_n >= 2) {
        int pairs = 0;
        for (;;) {
            symm_team e = NULL, o = NULL;
            symm_status st = symm_team_split_strided(world, 0, 2, (tu_n + 1) / 2, NULL, &e);
            if (st == SYMM_ERR_TEAM_EXHAUSTED) break;
            CHECK_OK(st);
            CHECK_OK(symm_team_split_strided(world, 1, 2, tu_n / 2, NULL, &o));
            ASSERT_TRUE((e != NULL) != (o != NULL));
            ASSERT_LT(pairs, CAP);
            made[pairs++] = e ? e : o;
        }
        ASSERT_EQ(pairs, k1);
        for (int i = 0; i < pairs; i++) CHECK_OK(symm_barrier(made[i]));
        for (int i = 0; i < pairs; i++) CHECK_OK(symm_team_destroy(made[i]));
    }
    /* All gone: a fresh split works. */
    CHECK_OK(symm_team_split_strided(world, 0, 1, tu_n, NULL, &t));
    CHECK_OK(symm_team_destroy(t));
    free(made);
}

int main(void) {
    tu_init();
    CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_INT32, 1, &g_src));
    CHECK_OK(symm_buf_alloc(tu_ctx, SYMM_DTYPE_INT32, (uint64_t)tu_n + 2, &g_dst));
    test_predefined();
    test_configs();
    test_strided();
    test_2d();
    test_invalid();
    test_destroy_recreate();
    test_exhaustion();
    CHECK_OK(symm_buf_free(g_src));
    CHECK_OK(symm_buf_free(g_dst));
    if (tu_me == 0) printf("test_teams: %d PEs ok\n", tu_n);
    tu_fini();
    return 0;
}

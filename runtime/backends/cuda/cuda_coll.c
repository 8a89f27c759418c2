/*
 * CUDA backend: collectives, the top of their files. Setup: the settings
 * every PE must share (SYMM_CUDA_COLL_ALGO, the scratch's sizes...) and the
 * collective scratch they size (LL lines, staging slots, the copy-engine
 * area; cuda_internal.h says where each lies). The dispatch (ops->coll):
 * cuda_tuning.c picks the form by kind, size and team, and the form's file
 * runs it: cuda_coll_ll.c (one-shot LL, LL128), cuda_coll_ce.c (copy
 * engines), cuda_coll_staged.c, cuda_coll_barrier.c (the barrier
 * algorithms), cuda_a2av.c (alltoallv). docs/DECISIONS.md "Collectives on
 * CUDA" says why each form is where it is.
 */
#include "cuda_coll.h"
#include "cuda_tuning.h"


/* ------------------------------------------------------------------------ */
/* Setup: the settings every PE shares and the collective scratch            */
/* ------------------------------------------------------------------------ */

/* The configuration every PE must share: SYMM_CUDA_COLL_ALGO (auto, ll,
 * staged, or twoshot / pull: the barrier algorithms only), SYMM_CUDA_LL_BYTES
 * (the largest LL payload per pair of PEs, 0: no LL), SYMM_CUDA_STAGED_BYTES,
 * _CHUNK, _STEPS, _LAND and _SWAP (staging per sender, 0: no staged
 * reductions; the smallest piece a block moves; steps aimed for; the largest
 * landed and swapped pieces), the shared memory every GPU lets a block opt
 * in to (the swap pieces depend on it), SYMM_CUDA_COLL_COPY (auto, push or pull: PEs that pushed
 * and pulled in one all-gather would leave blocks unwritten), and
 * SYMM_CUDA_CE_BYTES and _PIECES (the copy-engine reduce-scatter's slots, 0:
 * none; the copies of its last phase). */
typedef struct cu_coll_conf {
    int32_t status, algo, local_n, ll_set; /* ll_set: SYMM_CUDA_LL_BYTES given */
    int32_t copy, st_set; /* st_set: SYMM_CUDA_STAGED_BYTES given */
    int32_t chunk_set, steps_set; /* SYMM_CUDA_STAGED_CHUNK / _STEPS given */
    int32_t smem_optin, l8_set; /* l8_set: SYMM_CUDA_LL128_BYTES given */
    int32_t ce_set, pad;        /* ce_set: SYMM_CUDA_CE_BYTES given */
    uint64_t ll_max, st_bytes, st_chunk, st_steps, st_land, st_swap, l8_bytes, l8_oneshot;
    uint64_t ce_bytes, ce_pieces;
} cu_coll_conf;

/* SYMM_CUDA_COLL_ALGO and SYMM_CUDA_COLL_COPY (mine->status: a bad value). */
static void conf_read_algo(cu_coll_conf *mine) {
    const char *a = getenv("SYMM_CUDA_COLL_ALGO");
    if (a && *a && strcmp(a, "auto") != 0) {
        if (strcmp(a, "ll") == 0) {
            mine->algo = CU_ALGO_LL;
        } else if (strcmp(a, "ll128") == 0) {
            mine->algo = CU_ALGO_LL128;
        } else if (strcmp(a, "staged") == 0) {
            mine->algo = CU_ALGO_STAGED;
        } else if (strcmp(a, "ce") == 0) {
            mine->algo = CU_ALGO_CE;
        } else if (strcmp(a, "twoshot") == 0 || strcmp(a, "pull") == 0) {
            mine->algo = CU_ALGO_BASE;
        } else {
            mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_COLL_ALGO=%s: expected auto, "
                                     "ll, ll128, staged, ce, twoshot or pull", a);
        }
    }
    const char *cp = getenv("SYMM_CUDA_COLL_COPY");
    mine->copy = CU_COPY_AUTO;
    if (mine->status == SYMM_SUCCESS && cp && *cp && strcmp(cp, "auto") != 0) {
        if (strcmp(cp, "push") == 0)
            mine->copy = CU_COPY_PUSH;
        else if (strcmp(cp, "pull") == 0)
            mine->copy = CU_COPY_PULL;
        else
            mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_COLL_COPY=%s: expected auto, "
                                     "push or pull", cp);
    }
}

/* The sizes, and which of them were given (their defaults depend on the
 * host's PEs: conf_apply). */
static void conf_read_sizes(cu_coll_conf *mine) {
    mine->ll_set = getenv("SYMM_CUDA_LL_BYTES") && *getenv("SYMM_CUDA_LL_BYTES");
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_LL_BYTES", 0, &mine->ll_max);
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_STAGED_BYTES", 4u << 20, &mine->st_bytes);
    mine->st_set = getenv("SYMM_CUDA_STAGED_BYTES") && *getenv("SYMM_CUDA_STAGED_BYTES");
    mine->chunk_set = getenv("SYMM_CUDA_STAGED_CHUNK") && *getenv("SYMM_CUDA_STAGED_CHUNK");
    mine->steps_set = getenv("SYMM_CUDA_STAGED_STEPS") && *getenv("SYMM_CUDA_STAGED_STEPS");
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_STAGED_CHUNK", CU_ST_CHUNK_DEFAULT,
                                         &mine->st_chunk);
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_STAGED_STEPS", CU_ST_STEPS, &mine->st_steps);
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_STAGED_LAND", CU_ST_LAND_DEFAULT,
                                         &mine->st_land);
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_STAGED_SWAP", CU_ST_SWAP_DEFAULT,
                                         &mine->st_swap);
    mine->l8_set = getenv("SYMM_CUDA_LL128_BYTES") && *getenv("SYMM_CUDA_LL128_BYTES");
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_LL128_BYTES", CU_L8_BYTES_DEFAULT,
                                         &mine->l8_bytes);
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_LL128_ONESHOT", CU_L8_ONESHOT_DEFAULT,
                                         &mine->l8_oneshot);
    mine->ce_set = getenv("SYMM_CUDA_CE_BYTES") && *getenv("SYMM_CUDA_CE_BYTES");
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_CE_BYTES", CU_CE_BYTES_DEFAULT,
                                         &mine->ce_bytes);
    if (mine->status == SYMM_SUCCESS)
        mine->status = symm__cu_env_size("SYMM_CUDA_CE_PIECES", CU_CE_PIECES, &mine->ce_pieces);
}

/* The sizes' ranges. */
static void conf_check(cu_coll_conf *mine) {
    if (mine->status == SYMM_SUCCESS && mine->ce_bytes && mine->ce_bytes < 4096)
        mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_CE_BYTES=%llu: expected 0 (no "
                                 "copy-engine reduce-scatter) or at least 4096",
                                 (unsigned long long)mine->ce_bytes);
    if (mine->status == SYMM_SUCCESS && (mine->ce_pieces < 1 || mine->ce_pieces > CU_CE_PIECES_MAX))
        mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_CE_PIECES=%llu: expected 1 to %u",
                                 (unsigned long long)mine->ce_pieces, CU_CE_PIECES_MAX);
    if (mine->status == SYMM_SUCCESS && mine->l8_bytes > (256u << 20))
        mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_LL128_BYTES=%llu: expected at "
                                 "most 256 MiB", (unsigned long long)mine->l8_bytes);
    if (mine->status == SYMM_SUCCESS && (mine->st_steps < 1 || mine->st_steps > 64))
        mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_STAGED_STEPS=%llu: expected 1 "
                                 "to 64", (unsigned long long)mine->st_steps);
    if (mine->status == SYMM_SUCCESS && mine->st_bytes && mine->st_bytes < CU_ST_BYTES_MIN)
        mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_STAGED_BYTES=%llu: expected 0 "
                                 "(no staged reductions) or at least %u",
                                 (unsigned long long)mine->st_bytes, CU_ST_BYTES_MIN);
    if (mine->status == SYMM_SUCCESS && mine->st_bytes &&
        (mine->st_chunk < 16 || mine->st_chunk > mine->st_bytes / 2))
        mine->status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_STAGED_CHUNK=%llu: expected 16 "
                                 "up to half of SYMM_CUDA_STAGED_BYTES",
                                 (unsigned long long)mine->st_chunk);
}

/* This PE's configuration; msg gets its error message where it is bad. */
static void conf_read(const cu_state *s, cu_coll_conf *mine, char *msg, size_t cap) {
    memset(mine, 0, sizeof *mine);
    mine->status = SYMM_SUCCESS;
    mine->algo = CU_ALGO_AUTO;
    mine->local_n = s->local_n;
    mine->smem_optin = symm__cu.FuncSetAttribute ? s->smem_optin : 0; /* 0: no in-place 2-PE form */
    conf_read_algo(mine);
    conf_read_sizes(mine);
    conf_check(mine);
    if (mine->status != SYMM_SUCCESS) snprintf(msg, cap, "%s", symm__last_error());
}

/* Whether b chose other collective algorithms than a (any setting but the
 * GPU's and the host's part). */
static bool conf_differs(const cu_coll_conf *a, const cu_coll_conf *b) {
    return b->algo != a->algo || b->ll_max != a->ll_max ||
           b->ll_set != a->ll_set || b->copy != a->copy ||
           b->st_bytes != a->st_bytes || b->st_set != a->st_set ||
           b->st_chunk != a->st_chunk || b->chunk_set != a->chunk_set ||
           b->steps_set != a->steps_set ||
           b->st_steps != a->st_steps || b->st_land != a->st_land ||
           b->st_swap != a->st_swap || b->l8_bytes != a->l8_bytes ||
           b->l8_set != a->l8_set || b->l8_oneshot != a->l8_oneshot ||
           b->ce_set != a->ce_set || b->ce_bytes != a->ce_bytes ||
           b->ce_pieces != a->ce_pieces;
}

/* Every PE's configuration into all (collective): SYMM_SUCCESS where every
 * PE's is good and alike; then *max_local is the most PEs a host, *smem the
 * least shared memory a block may opt in to. */
static symm_status conf_agree(symm__ctx *ctx, const cu_coll_conf *mine, cu_coll_conf *all,
                              const char *msg, int32_t *max_local, int32_t *smem) {
    symm_status st = symm__boot_allgather(ctx->boot, mine, all, sizeof *mine);
    for (int32_t pe = 0; pe < ctx->n_pes && st == SYMM_SUCCESS; pe++) {
        if (all[pe].status != SYMM_SUCCESS)
            st = pe == ctx->my_pe ? symm__err(all[pe].status, "%s", msg)
                                  : symm__err(all[pe].status, "PE %d: bad CUDA collective "
                                              "settings (see its own error message)", (int)pe);
        else if (conf_differs(&all[0], &all[pe]))
            st = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_COLL_ALGO / SYMM_CUDA_LL_BYTES / "
                           "SYMM_CUDA_STAGED_BYTES / _CHUNK / _STEPS / _LAND / _SWAP / SYMM_CUDA_LL128_BYTES / _ONESHOT / "
                           "SYMM_CUDA_COLL_COPY / SYMM_CUDA_CE_BYTES / _PIECES "
                           "differ between PE 0 and PE %d: every PE must choose the same "
                           "collective algorithms", (int)pe);
        else if (all[pe].local_n > *max_local)
            *max_local = all[pe].local_n;
        if (st == SYMM_SUCCESS && all[pe].smem_optin < *smem) *smem = all[pe].smem_optin;
    }
    return st;
}

/* The settings from the agreed configuration, with the defaults that depend
 * on the host's PEs (written back to *mine). */
static void conf_apply(cu_state *s, cu_coll_conf *mine, int32_t max_local, int32_t smem) {
    s->coll_algo = mine->algo;
    s->coll_copy = mine->copy;
    s->ll_pes = max_local < CU_LL_MAX_PES ? max_local : CU_LL_MAX_PES;
    /* default SYMM_CUDA_LL_BYTES: the largest LL threshold of a team of the
     * host's PEs, so "auto" never lacks scratch: 32 MiB of it a GPU with 2
     * PEs a host, 24 MiB with 4, 14 MiB with 8 */
    if (!mine->ll_set) mine->ll_max = symm__cu_ll_threshold(s->ll_pes < 2 ? 2 : s->ll_pes, true);
    s->ll_max = align_up(mine->ll_max, 8);
    /* default staging: 16 MiB a sender with 2 PEs a host, 4 MiB with 3 or 4, 2 MiB with more */
    if (!mine->st_set && s->ll_pes == 2) mine->st_bytes = 16u << 20;
    if (!mine->st_set && s->ll_pes > 4) mine->st_bytes = 2u << 20;
    s->st_bytes = align_up(mine->st_bytes, 256);
    /* default LL128 lines: 2 MiB of payload a sender with up to 4 PEs a host, 1 MiB with more */
    if (!mine->l8_set && s->ll_pes > 4) mine->l8_bytes = 1u << 20;
    s->l8_oneshot = mine->l8_oneshot;
    s->l8_lines =
        align_up((mine->l8_bytes + SYMM__L8_DATA - 1) / SYMM__L8_DATA * SYMM__L8_LINE, 256);
    s->st_chunk = align_up(mine->st_chunk, 16);
    s->st_steps = mine->st_steps;
    s->st_peer_chunk = mine->chunk_set ? s->st_chunk : CU_ST_PEER_CHUNK;
    s->st_peer_steps = mine->steps_set ? s->st_steps : 0;
    s->st_land = align_up(mine->st_land, 16);
    /* the in-place 2-PE form keeps two pieces of a block in shared memory:
     * pieces of up to half what every PE's GPU lets a block opt in to */
    s->st_swap_max = 0;
    if (mine->st_swap && smem > 4096)
        s->st_swap_max =
            min_u64(align_up(mine->st_swap, 16), (uint64_t)(smem - 2048) / 2 / 16 * 16);
    /* default CE slots: SYMM_CUDA_CE_BYTES a sender with 3 or 4 PEs a host
     * (192 MiB of scratch a GPU with 4, 128 with 3), none with 2 (landing
     * is ahead there) or more than 4 (not measured) */
    if (!mine->ce_set && (s->ll_pes < 3 || s->ll_pes > 4)) mine->ce_bytes = 0;
    s->ce_slot = align_up(mine->ce_bytes, 256);
    s->ce_pieces = mine->ce_pieces;
    s->scratch_span = s->ll_slot = s->st_slot = s->ce_off = 0;
}

/* The scratch's layout: CU_LL_SLOTS slots of LL lines at span, then
 * CU_ST_SLOTS staged slots at st_base (*st_area_out bytes), then the
 * copy-engine area. Returns its size, whole granules. */
static uint64_t scratch_layout(cu_state *s, uint64_t *st_area_out) {
    uint64_t ll_area = 0, st_area = 0;
    if (s->ll_max) {
        s->ll_region = align_up(2 * s->ll_max, 256);
        s->ll_parity = s->ll_region * (uint64_t)(s->ll_pes - 1);
        s->ll_slot = 2 * s->ll_parity;
        ll_area = (uint64_t)CU_LL_SLOTS * s->ll_slot;
    }
    if (s->st_bytes || s->l8_lines) {
        s->st_region = SYMM__ST_HDR + s->st_bytes + SYMM__ST_SLACK + s->l8_lines;
        s->st_parity = s->st_region * (uint64_t)(s->ll_pes - 1);
        s->st_slot = 2 * s->st_parity;
        st_area = (uint64_t)CU_ST_SLOTS * s->st_slot;
    }
    s->st_base = s->span + ll_area;
    /* the header always (the all-gather and all-to-all need nothing else) */
    const uint64_t ce_area = SYMM__CE_HDR + s->ce_slot * (uint64_t)(s->ll_pes - 1);
    *st_area_out = st_area;
    return align_up(ll_area + st_area + ce_area, s->gran);
}

/* What setup made (SYMM_DEBUG=INFO). */
static void scratch_log(const cu_state *s, uint64_t span) {
    SYMM_INFO(SYMM_LOG_BACKEND, "cuda: collective scratch %llu bytes for teams of up to %d PEs: "
              "LL %llu bytes per pair (%d slots), staged %llu bytes per sender (%d slots, pieces "
              "of %llu bytes or more), LL128 lines of %llu bytes per sender (the same slots), "
              "copy-engine reductions %llu bytes per sender (the world team); "
              "algorithm choice %s", (unsigned long long)span,
              (int)s->ll_pes, (unsigned long long)(s->ll_slot ? s->ll_max : 0), CU_LL_SLOTS,
              (unsigned long long)(s->st_slot ? s->st_bytes : 0), CU_ST_SLOTS,
              (unsigned long long)s->st_chunk, (unsigned long long)(s->st_slot ? s->l8_lines : 0),
              (unsigned long long)(s->ce_off ? s->ce_slot : 0),
              s->coll_algo == CU_ALGO_LL       ? "ll (SYMM_CUDA_COLL_ALGO)"
              : s->coll_algo == CU_ALGO_CE     ? "ce (SYMM_CUDA_COLL_ALGO)"
              : s->coll_algo == CU_ALGO_LL128  ? "ll128 (SYMM_CUDA_COLL_ALGO)"
              : s->coll_algo == CU_ALGO_STAGED ? "staged (SYMM_CUDA_COLL_ALGO)"
                                               : "auto");
}

/* Called once by cuda_heap_init on every PE, after the reservations: read
 * the configuration, check that every PE has the same, then create, zero and
 * share the scratch like a heap chunk (kept in s->chunks, so heap_fini
 * releases it). Collective. */
symm_status symm__cu_coll_setup(symm__ctx *ctx, cu_state *s) {
    cu_coll_conf mine, *all = calloc((size_t)ctx->n_pes, sizeof *all);
    if (!all) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    char msg[512] = "";
    conf_read(s, &mine, msg, sizeof msg);
    int32_t max_local = 1, smem = INT32_MAX;
    symm_status st = conf_agree(ctx, &mine, all, msg, &max_local, &smem);
    free(all);
    if (st != SYMM_SUCCESS) return st;
    conf_apply(s, &mine, max_local, smem);
    /* the same verdict on every PE from here on (shared inputs) */
    if (s->ll_pes < 2 || s->coll_algo == CU_ALGO_BASE) return SYMM_SUCCESS;
    uint64_t st_area = 0;
    const uint64_t span = scratch_layout(s, &st_area);
    if (span > CU_SCRATCH_RESERVE)
        return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_LL_BYTES=%llu, SYMM_CUDA_STAGED_BYTES=%llu, "
                         "SYMM_CUDA_LL128_BYTES=%llu and SYMM_CUDA_CE_BYTES=%llu need %llu bytes of "
                         "collective scratch per GPU, more than %llu", (unsigned long long)s->ll_max,
                         (unsigned long long)s->st_bytes, (unsigned long long)mine.l8_bytes,
                         (unsigned long long)s->ce_slot,
                         (unsigned long long)span, (unsigned long long)CU_SCRATCH_RESERVE);
    st = s->ll_slot ? symm__cu_get_fn(s, &s->f_ll_copy, "symm_k_ll_copy") : SYMM_SUCCESS;
    if (st == SYMM_SUCCESS) st = symm__cu_ce_setup(s);
    st = symm__cu_map_new_chunk(ctx, s, s->span, span, "collective scratch", st);
    if (st != SYMM_SUCCESS) {
        s->ll_slot = s->st_slot = 0;
        return st;
    }
    s->scratch_span = span;
    s->ce_off = s->st_base + st_area;
    scratch_log(s, span);
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */
/* ------------------------------------------------------------------------ */

/* Enqueue the collective on cs: the user's stream, or (stream NULL, a
 * blocking call) the team's lane. */
static symm_status coll_enqueue(symm__ctx *ctx, cu_state *s, const symm__coll *c, void *stream,
                                CUstream cs) {
    char *base[CU_PARAM_PES];
    SYMM_TRY(symm__cu_team_bases(ctx, c->team, base));
    /* The algorithm (cuda_tuning.c), else the barrier algorithms. */
    const char *why = "";
    symm__l8_shape l8;
    switch (symm__cu_coll_choose(s, c, &l8, &why)) {
    case CU_ALGO_LL: return symm__cu_coll_ll(s, c, base, cs, c->nelems * c->elem_size, why);
    case CU_ALGO_LL128: return symm__cu_coll_l8(s, c, base, cs, &l8, why);
    case CU_ALGO_CE: return symm__cu_coll_ce_cached(s, c, base, cs, why);
    case CU_ALGO_STAGED: {
        bool done = false;
        SYMM_TRY(symm__cu_coll_staged(s, c, base, cs, why, &done));
        if (done) return SYMM_SUCCESS;
        why = "staged: too many steps";
        break;
    }
    default: break;
    }
    return symm__cu_coll_barrier(s, c, base, stream, cs, why);
}

symm_status symm__cuda_coll(symm__ctx *ctx, const symm__coll *c, void *stream) {
    cu_state *s = ctx->backend;
    SYMM_TRY(symm__cu_teams_ok(s));
    if (c->kind == SYMM__COLL_ALLTOALLV) return symm__cu_alltoallv(ctx, s, c, stream);
    SYMM_TRY(cu_enter(s));
    if (stream) return coll_enqueue(ctx, s, c, stream, (CUstream)stream);
    cu_lane *lane = NULL;
    SYMM_TRY(symm__cu_lane(s, c->team, &lane));
    SYMM_TRY(coll_enqueue(ctx, s, c, NULL, lane->stream));
    return symm__cu_lane_finish(s, lane, NULL, 0);
}

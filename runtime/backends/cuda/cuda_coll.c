/*
 * CUDA backend: collectives. The scratch they share (LL lines, staging
 * slots, the copy-engine area), the team barrier on a stream, and every
 * collective: cuda_coll picks the algorithm by kind, size and team
 * (SYMM_CUDA_COLL_ALGO overrides it) and runs the one-shot LL, LL128,
 * staged, copy-engine or barrier form (cuda_internal.h lists the backend's
 * files; docs/DECISIONS.md says why each form is where it is).
 */
#include "cuda_tuning.h"

static const char *const dtype_names[SYMM_DTYPE_COUNT] = {
    NULL, "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
};
static const char *const op_names[CU_N_OPS] = {"sum", "prod", "min", "max", "and", "or", "xor"};

/* ------------------------------------------------------------------------ */
/* Collective scratch: LL and staged (setup; used by symm__cuda_coll)             */
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

static symm_status ce_graphs_init(cu_state *s);

/* Called once by cuda_heap_init on every PE, after the reservations: read
 * the configuration, check that every PE has the same, then create, zero and
 * share the scratch like a heap chunk (kept in s->chunks, so heap_fini
 * releases it). Collective. */
symm_status symm__cu_coll_setup(symm__ctx *ctx, cu_state *s) {
    cu_coll_conf mine, *all = calloc((size_t)ctx->n_pes, sizeof *all);
    if (!all) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    memset(&mine, 0, sizeof mine);
    mine.status = SYMM_SUCCESS;
    mine.algo = CU_ALGO_AUTO;
    mine.local_n = s->local_n;
    mine.smem_optin = symm__cu.FuncSetAttribute ? s->smem_optin : 0; /* 0: no in-place 2-PE form */
    char msg[512] = "";
    const char *a = getenv("SYMM_CUDA_COLL_ALGO");
    if (a && *a && strcmp(a, "auto") != 0) {
        if (strcmp(a, "ll") == 0) {
            mine.algo = CU_ALGO_LL;
        } else if (strcmp(a, "ll128") == 0) {
            mine.algo = CU_ALGO_LL128;
        } else if (strcmp(a, "staged") == 0) {
            mine.algo = CU_ALGO_STAGED;
        } else if (strcmp(a, "ce") == 0) {
            mine.algo = CU_ALGO_CE;
        } else if (strcmp(a, "twoshot") == 0 || strcmp(a, "pull") == 0) {
            mine.algo = CU_ALGO_BASE;
        } else {
            mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_COLL_ALGO=%s: expected auto, "
                                    "ll, ll128, staged, ce, twoshot or pull", a);
        }
    }
    const char *cp = getenv("SYMM_CUDA_COLL_COPY");
    mine.copy = CU_COPY_AUTO;
    if (mine.status == SYMM_SUCCESS && cp && *cp && strcmp(cp, "auto") != 0) {
        if (strcmp(cp, "push") == 0)
            mine.copy = CU_COPY_PUSH;
        else if (strcmp(cp, "pull") == 0)
            mine.copy = CU_COPY_PULL;
        else
            mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_COLL_COPY=%s: expected auto, "
                                    "push or pull", cp);
    }
    mine.ll_set = getenv("SYMM_CUDA_LL_BYTES") && *getenv("SYMM_CUDA_LL_BYTES");
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_LL_BYTES", 0, &mine.ll_max);
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_STAGED_BYTES", 4u << 20, &mine.st_bytes);
    mine.st_set = getenv("SYMM_CUDA_STAGED_BYTES") && *getenv("SYMM_CUDA_STAGED_BYTES");
    mine.chunk_set = getenv("SYMM_CUDA_STAGED_CHUNK") && *getenv("SYMM_CUDA_STAGED_CHUNK");
    mine.steps_set = getenv("SYMM_CUDA_STAGED_STEPS") && *getenv("SYMM_CUDA_STAGED_STEPS");
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_STAGED_CHUNK", CU_ST_CHUNK_DEFAULT,
                                        &mine.st_chunk);
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_STAGED_STEPS", CU_ST_STEPS, &mine.st_steps);
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_STAGED_LAND", CU_ST_LAND_DEFAULT, &mine.st_land);
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_STAGED_SWAP", CU_ST_SWAP_DEFAULT, &mine.st_swap);
    mine.l8_set = getenv("SYMM_CUDA_LL128_BYTES") && *getenv("SYMM_CUDA_LL128_BYTES");
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_LL128_BYTES", CU_L8_BYTES_DEFAULT,
                                        &mine.l8_bytes);
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_LL128_ONESHOT", CU_L8_ONESHOT_DEFAULT,
                                        &mine.l8_oneshot);
    mine.ce_set = getenv("SYMM_CUDA_CE_BYTES") && *getenv("SYMM_CUDA_CE_BYTES");
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_CE_BYTES", CU_CE_BYTES_DEFAULT, &mine.ce_bytes);
    if (mine.status == SYMM_SUCCESS)
        mine.status = symm__cu_env_size("SYMM_CUDA_CE_PIECES", CU_CE_PIECES, &mine.ce_pieces);
    if (mine.status == SYMM_SUCCESS && mine.ce_bytes && mine.ce_bytes < 4096)
        mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_CE_BYTES=%llu: expected 0 (no "
                                "copy-engine reduce-scatter) or at least 4096",
                                (unsigned long long)mine.ce_bytes);
    if (mine.status == SYMM_SUCCESS && (mine.ce_pieces < 1 || mine.ce_pieces > CU_CE_PIECES_MAX))
        mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_CE_PIECES=%llu: expected 1 to %u",
                                (unsigned long long)mine.ce_pieces, CU_CE_PIECES_MAX);
    if (mine.status == SYMM_SUCCESS && mine.l8_bytes > (256u << 20))
        mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_LL128_BYTES=%llu: expected at "
                                "most 256 MiB", (unsigned long long)mine.l8_bytes);
    if (mine.status == SYMM_SUCCESS && (mine.st_steps < 1 || mine.st_steps > 64))
        mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_STAGED_STEPS=%llu: expected 1 "
                                "to 64", (unsigned long long)mine.st_steps);
    if (mine.status == SYMM_SUCCESS && mine.st_bytes && mine.st_bytes < CU_ST_BYTES_MIN)
        mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_STAGED_BYTES=%llu: expected 0 "
                                "(no staged reductions) or at least %u",
                                (unsigned long long)mine.st_bytes, CU_ST_BYTES_MIN);
    if (mine.status == SYMM_SUCCESS && mine.st_bytes &&
        (mine.st_chunk < 16 || mine.st_chunk > mine.st_bytes / 2))
        mine.status = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_STAGED_CHUNK=%llu: expected 16 "
                                "up to half of SYMM_CUDA_STAGED_BYTES",
                                (unsigned long long)mine.st_chunk);
    if (mine.status != SYMM_SUCCESS) snprintf(msg, sizeof msg, "%s", symm__last_error());
    symm_status st = symm__boot_allgather(ctx->boot, &mine, all, sizeof mine);
    int32_t max_local = 1, smem = INT32_MAX;
    for (int32_t pe = 0; pe < ctx->n_pes && st == SYMM_SUCCESS; pe++) {
        if (all[pe].status != SYMM_SUCCESS)
            st = pe == ctx->my_pe ? symm__err(all[pe].status, "%s", msg)
                                  : symm__err(all[pe].status, "PE %d: bad CUDA collective "
                                              "settings (see its own error message)", (int)pe);
        else if (all[pe].algo != all[0].algo || all[pe].ll_max != all[0].ll_max ||
                 all[pe].ll_set != all[0].ll_set || all[pe].copy != all[0].copy ||
                 all[pe].st_bytes != all[0].st_bytes || all[pe].st_set != all[0].st_set ||
                 all[pe].st_chunk != all[0].st_chunk || all[pe].chunk_set != all[0].chunk_set ||
                 all[pe].steps_set != all[0].steps_set ||
                 all[pe].st_steps != all[0].st_steps || all[pe].st_land != all[0].st_land ||
                 all[pe].st_swap != all[0].st_swap || all[pe].l8_bytes != all[0].l8_bytes ||
                 all[pe].l8_set != all[0].l8_set || all[pe].l8_oneshot != all[0].l8_oneshot ||
                 all[pe].ce_set != all[0].ce_set || all[pe].ce_bytes != all[0].ce_bytes ||
                 all[pe].ce_pieces != all[0].ce_pieces)
            st = symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_COLL_ALGO / SYMM_CUDA_LL_BYTES / "
                           "SYMM_CUDA_STAGED_BYTES / _CHUNK / _STEPS / _LAND / _SWAP / SYMM_CUDA_LL128_BYTES / _ONESHOT / "
                           "SYMM_CUDA_COLL_COPY / SYMM_CUDA_CE_BYTES / _PIECES "
                           "differ between PE 0 and PE %d: every PE must choose the same "
                           "collective algorithms", (int)pe);
        else if (all[pe].local_n > max_local)
            max_local = all[pe].local_n;
        if (st == SYMM_SUCCESS && all[pe].smem_optin < smem) smem = all[pe].smem_optin;
    }
    free(all);
    if (st != SYMM_SUCCESS) return st;
    s->coll_algo = mine.algo;
    s->coll_copy = mine.copy;
    s->ll_pes = max_local < CU_LL_MAX_PES ? max_local : CU_LL_MAX_PES;
    /* default SYMM_CUDA_LL_BYTES: the largest LL threshold of a team of the
     * host's PEs, so "auto" never lacks scratch: 32 MiB of it a GPU with 2
     * PEs a host, 24 MiB with 4, 14 MiB with 8 */
    if (!mine.ll_set) mine.ll_max = symm__cu_ll_threshold(s->ll_pes < 2 ? 2 : s->ll_pes, true);
    s->ll_max = align_up(mine.ll_max, 8);
    /* default staging: 16 MiB a sender with 2 PEs a host, 4 MiB with 3 or 4, 2 MiB with more */
    if (!mine.st_set && s->ll_pes == 2) mine.st_bytes = 16u << 20;
    if (!mine.st_set && s->ll_pes > 4) mine.st_bytes = 2u << 20;
    s->st_bytes = align_up(mine.st_bytes, 256);
    /* default LL128 lines: 2 MiB of payload a sender with up to 4 PEs a host, 1 MiB with more */
    if (!mine.l8_set && s->ll_pes > 4) mine.l8_bytes = 1u << 20;
    s->l8_oneshot = mine.l8_oneshot;
    s->l8_lines = align_up((mine.l8_bytes + SYMM__L8_DATA - 1) / SYMM__L8_DATA * SYMM__L8_LINE, 256);
    s->st_chunk = align_up(mine.st_chunk, 16);
    s->st_steps = mine.st_steps;
    s->st_peer_chunk = mine.chunk_set ? s->st_chunk : CU_ST_PEER_CHUNK;
    s->st_peer_steps = mine.steps_set ? s->st_steps : 0;
    s->st_land = align_up(mine.st_land, 16);
    /* the in-place 2-PE form keeps two pieces of a block in shared memory:
     * pieces of up to half what every PE's GPU lets a block opt in to */
    s->st_swap_max = 0;
    if (mine.st_swap && smem > 4096)
        s->st_swap_max = min_u64(align_up(mine.st_swap, 16), (uint64_t)(smem - 2048) / 2 / 16 * 16);
    /* default CE slots: SYMM_CUDA_CE_BYTES a sender with 3 or 4 PEs a host
     * (192 MiB of scratch a GPU with 4, 128 with 3), none with 2 (landing
     * is ahead there) or more than 4 (not measured) */
    if (!mine.ce_set && (s->ll_pes < 3 || s->ll_pes > 4)) mine.ce_bytes = 0;
    s->ce_slot = align_up(mine.ce_bytes, 256);
    s->ce_pieces = mine.ce_pieces;
    s->scratch_span = s->ll_slot = s->st_slot = s->ce_off = 0;
    /* the same verdict on every PE from here on (shared inputs) */
    if (s->ll_pes < 2 || s->coll_algo == CU_ALGO_BASE) return SYMM_SUCCESS;
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
    uint64_t span = align_up(ll_area + st_area + ce_area, s->gran);
    if (span > CU_SCRATCH_RESERVE)
        return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_LL_BYTES=%llu, SYMM_CUDA_STAGED_BYTES=%llu, "
                         "SYMM_CUDA_LL128_BYTES=%llu and SYMM_CUDA_CE_BYTES=%llu need %llu bytes of "
                         "collective scratch per GPU, more than %llu", (unsigned long long)s->ll_max,
                         (unsigned long long)s->st_bytes, (unsigned long long)mine.l8_bytes,
                         (unsigned long long)s->ce_slot,
                         (unsigned long long)span, (unsigned long long)CU_SCRATCH_RESERVE);
    st = s->ll_slot ? symm__cu_get_fn(s, &s->f_ll_copy, "symm_k_ll_copy") : SYMM_SUCCESS;
    if (st == SYMM_SUCCESS) st = symm__cu_get_fn(s, &s->f_ce_wait, "symm_k_ce_wait");
    if (st == SYMM_SUCCESS) {
        CUresult r = symm__cu.StreamCreate(&s->s_ce, CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS) r = symm__cu.StreamCreate(&s->s_ce_sig, CU_STREAM_NON_BLOCKING);
        for (size_t i = 0; i < sizeof s->ev_ce_copy / sizeof s->ev_ce_copy[0] && r == CUDA_SUCCESS; i++)
            r = symm__cu.EventCreate(&s->ev_ce_copy[i], CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS) r = symm__cu.EventCreate(&s->ev_ce_fork, CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS) r = symm__cu.EventCreate(&s->ev_ce_join, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) st = symm__cu_fail(r,
                                                  "cuStreamCreate / cuEventCreate (copy-engine collectives)");
    }
    if (st == SYMM_SUCCESS) st = ce_graphs_init(s);
    st = symm__cu_map_new_chunk(ctx, s, s->span, span, "collective scratch", st);
    if (st != SYMM_SUCCESS) {
        s->ll_slot = s->st_slot = 0;
        return st;
    }
    s->scratch_span = span;
    s->ce_off = s->st_base + st_area;
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
    return SYMM_SUCCESS;
}

/* A team slot's sync area is zeroed when a team takes the slot (teams.c) and
 * at init: zero its LL and staged areas with it (on the internal stream,
 * before the caller's finish), so a new team starts from clear lines and
 * flags (its epochs start again from 0). */
symm_status symm__cu_scratch_zero_slots(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t n) {
    if (!s->scratch_span || off >= ctx->sys_bytes || !n) return SYMM_SUCCESS;
    uint64_t end = min_u64(off + n, ctx->sys_bytes);
    uint64_t first = off / ctx->slot_bytes, last = (end - 1) / ctx->slot_bytes;
    const CUdeviceptr va = s->va[s->local_me];
    for (uint64_t slot = first; slot <= last; slot++) {
        if (s->ll_slot && slot < CU_LL_SLOTS)
            SYMM__CU(MemsetD8Async(va + s->span + slot * s->ll_slot, 0, s->ll_slot, s->s_int));
        if (s->st_slot && slot < CU_ST_SLOTS)
            SYMM__CU(MemsetD8Async(va + s->st_base + slot * s->st_slot, 0, s->st_slot, s->s_int));
    }
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Team barrier on a stream and collectives                                  */
/* ------------------------------------------------------------------------ */

/* Every team PE must be load/store reachable (the kernels store to peers). */
symm_status symm__cu_team_reachable(const symm__ctx *ctx, const symm__team *team) {
    for (int32_t j = 0; j < team->n_pes; j++) {
        int32_t pe = symm__team_world_pe(team, j);
        if (!ctx->peer_base[pe]) return symm__cu_unreachable(ctx, pe);
    }
    return SYMM_SUCCESS;
}

/* The heap bases of a team of up to CU_PARAM_PES PEs, for a parameter block. */
static symm_status team_bases(const symm__ctx *ctx, const symm__team *team, char **base) {
    if (team->n_pes > CU_PARAM_PES)
        return symm__err(SYMM_ERR_NOT_SUPPORTED,
                         "stream collectives on the CUDA backend support teams of up to %d PEs "
                         "(team has %d); the blocking forms work for any team",
                         CU_PARAM_PES, (int)team->n_pes);
    for (int32_t j = 0; j < team->n_pes; j++) {
        int32_t pe = symm__team_world_pe(team, j);
        base[j] = (char *)ctx->peer_base[pe];
        if (!base[j]) return symm__cu_unreachable(ctx, pe);
    }
    return SYMM_SUCCESS;
}

/* Every team kernel's parameter block (barriers of 2, 8 and 64 PEs, gather,
 * reduce) starts alike: the team's heap bases, this PE, the team's barrier
 * flags, the timeout and the error word. Zeroes the rest. */
#define CU_FILL_TEAM_PARAMS(p)                                                     \
    do {                                                                           \
        memset(&(p), 0, sizeof(p));                                                \
        memcpy((p).team.base, base, (size_t)team->n_pes * sizeof *base);           \
        (p).team.me = team->my_pe;                                                 \
        (p).team.n = team->n_pes;                                                  \
        (p).area_off = symm__team_sync_off(s->ctx, team->slot) + CU_BARRIER_OFF;   \
        (p).timeout_ns = s->timeout_ns;                                            \
        (p).err = s->err_word;                                                     \
    } while (0)
#define CU_FILL_BARRIER_PARAMS(p) \
    do {                          \
        CU_FILL_TEAM_PARAMS(p);   \
        (p).bump = bump;          \
    } while (0)

/* ops->coll_agree: one symm_k_agree on the team's lane, waited for; the
 * records land in the lane's pinned words. A kernel and a wait (not the host
 * exchange of teams.c: a copy to the heap, a barrier, a copy from every
 * peer, and the closing sync): the cost blocking collectives pay so that a
 * PE's bad arguments are its peers' MISMATCH, not a collective run alone. */
_Static_assert(CU_AGREE_WORDS == SYMM__AGREE_WORDS, "kernel_params.h and internal.h agree");
symm_status symm__cuda_coll_agree(symm__ctx *ctx, symm__team *team, const uint64_t *mine,
                                  uint64_t *all) {
    cu_state *s = ctx->backend;
    SYMM_TRY(symm__cu_teams_ok(s));
    char *base[CU_PARAM_PES];
    SYMM_TRY(team_bases(ctx, team, base));
    SYMM_TRY(cu_enter(s));
    cu_lane *lane = NULL;
    SYMM_TRY(symm__cu_lane(s, team, &lane));
    symm__kagree_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.rec_off = symm__team_sync_off(ctx, team->slot) + SYMM__SLOT_AGREE_OFF;
    memcpy(p.words, mine, sizeof p.words);
    p.out = lane->pinned + CU_LANE_AGREE;
    p.done = lane->pinned + CU_SLOT_DONE;
    p.seq = ++lane->agrees;
    void *args[] = {&p};
    SYMM_TRY(symm__cu_launch(s, s->f_agree, "cuLaunchKernel(symm_k_agree)", 1, 1, 64,
                             lane->stream, args));
    SYMM_TRY(symm__cu_lane_finish(s, lane, p.done, p.seq));
    memcpy(all, (const void *)p.out, (size_t)team->n_pes * sizeof p.words);
    return SYMM_SUCCESS;
}

/* Barrier kernel: epoch = counter + bump (1: a stream barrier; 2: the
 * closing barrier of a collective whose data kernel does not close it). */
static symm_status launch_barrier(cu_state *s, const symm__team *team, char *const *base,
                                  uint64_t bump, CUstream cs) {
    unsigned threads = team->n_pes <= 32 ? 32 : 64;
    if (team->n_pes <= 2) {
        symm__kbarrier_params2 p;
        CU_FILL_BARRIER_PARAMS(p);
        void *args[] = {&p};
        return symm__cu_launch(s, s->f_barrier2, "cuLaunchKernel(symm_k_barrier_2)", 1, 1, threads,
                               cs, args);
    }
    if (team->n_pes <= 8) {
        symm__kbarrier_params8 p;
        CU_FILL_BARRIER_PARAMS(p);
        void *args[] = {&p};
        return symm__cu_launch(s, s->f_barrier8, "cuLaunchKernel(symm_k_barrier_8)", 1, 1, threads,
                               cs, args);
    }
    symm__kbarrier_params64 p;
    CU_FILL_BARRIER_PARAMS(p);
    void *args[] = {&p};
    return symm__cu_launch(s, s->f_barrier64, "cuLaunchKernel(symm_k_barrier_64)", 1, 1, threads,
                           cs, args);
}

/* Barrier of a team larger than a parameter block holds: heap bases come
 * from the device peer table, so the team must be strided (split teams and
 * the world are; only the SHARED/NODE teams of irregular layouts are not). */
static symm_status launch_barrier_wide(cu_state *s, const symm__team *team, CUstream cs) {
    symm_device_team dt;
    if (symm__device_team_of(team, &dt) != SYMM_SUCCESS)
        return symm__err(SYMM_ERR_NOT_SUPPORTED,
                         "GPU barriers of teams over %d PEs need a strided team (this "
                         "team of %d PEs is not)", CU_PARAM_PES, (int)team->n_pes);
    symm__kbarrier_wide_params p;
    memset(&p, 0, sizeof p);
    p.table = (char *const *)(uintptr_t)s->peer_table;
    p.start = dt.start;
    p.stride = dt.stride;
    p.me = team->my_pe;
    p.n = team->n_pes;
    p.area_off = symm__team_sync_off(s->ctx, team->slot) + CU_BARRIER_OFF;
    p.bump = 1;
    p.timeout_ns = s->timeout_ns;
    p.err = s->err_word;
    void *args[] = {&p};
    return symm__cu_launch(s, s->f_barrier_wide, "cuLaunchKernel(symm_k_barrier_wide)", 1, 1, 256,
                           cs,
                  args);
}

symm_status symm__cuda_sync_stream(symm__ctx *ctx, struct symm__team *team, void *stream) {
    cu_state *s = ctx->backend;
    SYMM_TRY(symm__cu_teams_ok(s));
    SYMM_TRY(symm__cu_team_reachable(ctx, team));
    SYMM_TRY(cu_enter(s));
    cu_lane *lane = NULL;
    if (!stream) SYMM_TRY(symm__cu_lane(s, team, &lane));
    CUstream cs = lane ? lane->stream : (CUstream)stream;
    if (team->n_pes > CU_PARAM_PES) {
        SYMM_TRY(launch_barrier_wide(s, team, cs));
    } else if (team->n_pes > 1) {
        char *base[CU_PARAM_PES];
        SYMM_TRY(team_bases(ctx, team, base));
        SYMM_TRY(launch_barrier(s, team, base, 1, cs));
    }
    return lane ? symm__cu_lane_finish(s, lane, NULL, 0) : SYMM_SUCCESS;
}

/* The reduction kernel of an algorithm: symm_k_<form>reduce_<dtype>_<op>. */
enum { CU_RED_BARRIER, CU_RED_LL, CU_RED_STAGED, CU_RED_L8, CU_RED_CE };
static symm_status reduce_fn(cu_state *s, uint32_t dtype, uint32_t op, int form, CUfunction *f) {
    if (dtype >= SYMM_DTYPE_COUNT || !dtype_names[dtype] || op >= CU_N_OPS)
        return symm__err(SYMM_ERR_INVALID_ARG, "no reduction kernel for dtype %u op %u", dtype, op);
    _Atomic(CUfunction) *slot = form == CU_RED_LL       ? &s->f_llreduce[dtype][op]
                                : form == CU_RED_STAGED ? &s->f_streduce[dtype][op]
                                : form == CU_RED_L8     ? &s->f_l8reduce[dtype][op]
                                : form == CU_RED_CE     ? &s->f_cereduce[dtype][op]
                                                        : &s->f_reduce[dtype][op];
    CUfunction fn = atomic_load(slot);
    if (!fn) {
        char name[64];
        snprintf(name, sizeof name, "symm_k_%sreduce_%s_%s",
                 form == CU_RED_LL ? "ll" : form == CU_RED_STAGED ? "st" : form == CU_RED_L8 ? "l8"
                 : form == CU_RED_CE ? "ce" : "",
                 dtype_names[dtype],
                 op_names[op]);
        CUresult r = symm__cu_module_fn(s, &fn, name);
        if (r == CUDA_ERROR_NOT_FOUND)
            return symm__err(SYMM_ERR_INVALID_ARG, "reduction op %s is not defined for %s",
                             op_names[op], dtype_names[dtype]);
        if (r != CUDA_SUCCESS) return symm__cu_fail(r, name);
        /* the staged kernel's in-place 2-PE form: two pieces in shared memory */
        if (form == CU_RED_STAGED && s->st_swap_max) {
            r = symm__cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          (int)(2 * s->st_swap_max));
            if (r != CUDA_SUCCESS) return symm__cu_fail(r,
                                                        "cuFuncSetAttribute(max dynamic shared memory)");
        }
        atomic_store(slot, fn);
    }
    *f = fn;
    return SYMM_SUCCESS;
}

static const char *coll_kind_name(uint32_t kind) {
    switch (kind) {
    case SYMM__COLL_REDUCE: return "all-reduce";
    case SYMM__COLL_REDUCESCATTER: return "reduce-scatter";
    case SYMM__COLL_FCOLLECT: return "all-gather";
    case SYMM__COLL_ALLTOALL: return "all-to-all";
    case SYMM__COLL_BROADCAST: return "broadcast";
    default: return "collect";
    }
}

/* The LL form of alltoallv (cuda_a2av.c, kernels_a2av.cu "The LL form"),
 * where symm__cu_a2av_ll_choose takes it: *p gets the team's bases, barrier
 * flags and lines, and the largest piece a pair sends inline: the choice's
 * threshold, less the header lines. Larger pieces are pulled. */
symm_status symm__cu_a2av_ll(const symm__ctx *ctx, const cu_state *s, const symm__team *team,
                             symm__ka2avll_params *p, bool *ll, const char **why) {
    bool alone = false;
    uint64_t thr = 0;
    *ll = symm__cu_a2av_ll_choose(s, team, &alone, &thr, why);
    if (!*ll) return SYMM_SUCCESS;
    char *base[CU_PARAM_PES];
    SYMM_TRY(team_bases(ctx, team, base));
    CU_FILL_TEAM_PARAMS(*p);
    if (alone) return SYMM_SUCCESS;
    p->ll_off = s->span + (uint64_t)team->slot * s->ll_slot;
    p->ll_region = s->ll_region;
    p->ll_parity = s->ll_parity;
    const uint64_t room = (s->ll_region / 16 - SYMM__A2L_DATA) * 8;
    p->inline_max = min_u64(min_u64(thr, s->ll_max), room);
    return SYMM_SUCCESS;
}

static symm_status coll_ll(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                           uint64_t pair_bytes, const char *why) {
    const symm__team *team = c->team;
    symm__kll_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.ll_off = s->span + (uint64_t)team->slot * s->ll_slot;
    p.ll_region = s->ll_region;
    p.ll_parity = s->ll_parity;
    p.src_off = c->src_off;
    p.dst_off = c->dst_off;
    p.nbytes = pair_bytes;
    CUfunction f = s->f_ll_copy;
    switch (c->kind) {
    case SYMM__COLL_REDUCE: SYMM_TRY(reduce_fn(s, c->dtype, c->op, CU_RED_LL, &f)); break;
    case SYMM__COLL_REDUCESCATTER:
        SYMM_TRY(reduce_fn(s, c->dtype, c->op, CU_RED_LL, &f));
        p.src_j_stride = pair_bytes;
        break;
    case SYMM__COLL_FCOLLECT: p.dst_j_stride = pair_bytes; break;
    case SYMM__COLL_ALLTOALL:
        p.src_j_stride = pair_bytes;
        p.dst_j_stride = pair_bytes;
        break;
    default: return symm__err(SYMM_ERR_INTERNAL, "no LL form of collective kind %u", c->kind);
    }
    uint64_t units = (pair_bytes + 7) / 8;
    /* at most one block per SM: every block must be resident, since blocks
     * wait for the peers' blocks of the same index */
    unsigned cap = (unsigned)(s->sms > 0 ? s->sms : 64);
    unsigned blocks = (unsigned)min_u64(max_u64((units + CU_THREADS - 1) / CU_THREADS, 1), cap);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm ll (one-shot, "
               "%s), %u block(s) x %u threads", coll_kind_name(c->kind),
               (unsigned long long)pair_bytes, (int)team->n_pes, why, blocks, CU_THREADS);
    void *args[] = {&p};
    return symm__cu_launch(s, f, "cuLaunchKernel(symm_k_ll*)", blocks, 1, CU_THREADS, cs, args);
}

static symm_status coll_l8(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                           const symm__l8_shape *sh, const char *why) {
    const symm__team *team = c->team;
    symm__kl8_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.src_off = c->src_off;
    p.dst_off = c->dst_off;
    memcpy(p.len, sh->len, sizeof p.len);
    p.src_j_stride = sh->src_j_stride;
    p.l8_half = sh->half;
    p.gather = sh->gather;
    p.ll_off = s->st_base + (uint64_t)team->slot * s->st_slot + SYMM__ST_HDR + s->st_bytes + SYMM__ST_SLACK;
    p.ll_region = s->st_region;
    p.ll_parity = s->st_parity;
    CUfunction f = NULL;
    SYMM_TRY(reduce_fn(s, c->dtype, c->op, CU_RED_L8, &f));
    uint64_t most = 0;
    for (int32_t j = 0; j < team->n_pes; j++) most = max_u64(most, p.len[j]);
    /* a warp moves 4 lines at a time; at most one block per SM, as for LL,
     * and on as many SMs as there are quads of lines (each SM's own link
     * bandwidth is a fraction of the GPU's): blocks of 2 to 16 warps */
    const uint64_t quads = ((most + SYMM__L8_DATA - 1) / SYMM__L8_DATA + 3) / 4;
    const unsigned cap = (unsigned)(s->sms > 0 ? s->sms : 64);
    const uint64_t warps = min_u64(max_u64((quads + cap - 1) / cap, 2), CU_L8_THREADS / 32);
    const unsigned threads = (unsigned)(32 * warps);
    const unsigned blocks = (unsigned)min_u64(max_u64((quads + warps - 1) / warps, 1), cap);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm ll128 (%s), "
               "%s, %u block(s) x %u threads", coll_kind_name(c->kind),
               (unsigned long long)(c->nelems * c->elem_size), (int)team->n_pes, why,
               c->kind == SYMM__COLL_REDUCESCATTER ? "reduce-scatter"
               : p.gather                          ? "reduce a slice, store it to every PE"
                                                   : "one shot: every PE reduces the whole vector",
               blocks, threads);
    void *args[] = {&p};
    return symm__cu_launch(s, f, "cuLaunchKernel(symm_k_l8reduce)", blocks, 1, threads, cs, args);
}

/* ------------------------------------------------------------------------ */
/* Copy-engine reduce-scatter                                                */
/* ------------------------------------------------------------------------ */
/* kernels_ce.cu. The bytes of a reduce-scatter move on the copy engines, one
 * peer after another: in phase k = 0 .. n-2 every PE copies its block for PE
 * (me + 1 + k) mod n into that PE's CE slot k, so in each phase every GPU
 * sends to one peer and receives from one (4 x H200: 381 GB/s a GPU in
 * turns, against 345 for SM stores to all peers at once and 233 for the
 * copy engines to all at once; probe_cuda mesh). The last phase goes in
 * ce_pieces copies; after each copy a stream write counts it in the
 * receiver's arrive word. The copies run on the copy stream, forked off the
 * caller's stream with an event and joined back after; the reduction kernel
 * runs on the caller's stream meanwhile (kernels_ce.cu says what it does).
 * A call moves at most ce_slot bytes a pair in one round; larger calls take
 * several rounds, one after another. The stream writes need stream memory
 * operations (s->memops), and the area exists for the world team only.
 * cuda_tuning.c ce_choose says where "auto" takes it. */

/* One copy (or none, len 0) and its signal: the queue coll_ce fills and
 * ce_issue sends. */
typedef struct cu_ce_copy {
    CUdeviceptr dst, src, flag;
    uint64_t len, value;
} cu_ce_copy;

/* Fork the copy streams off cs, issue the copies in order on the copy stream
 * and each one's signal on the signal stream, and record the join event.
 * The stream write's memory barrier holds up the stream it is on (on the
 * copy stream: 2-4 us a copy), and each signal is enqueued after the next
 * copy, so that the graph a capture makes keeps the copies on one chain
 * (right after its copy: 342 us a call in a graph against 309 back to back,
 * 4 PEs, 128 MiB; one later: 303 and 305). A copy of 0 bytes is only its
 * signal. */
static symm_status ce_issue(cu_state *s, CUstream cs, const cu_ce_copy *cp, unsigned ncopy) {
    SYMM__CU(EventRecord(s->ev_ce_fork, cs));
    SYMM__CU(StreamWaitEvent(s->s_ce, s->ev_ce_fork, 0));
    SYMM__CU(StreamWaitEvent(s->s_ce_sig, s->ev_ce_fork, 0));
    for (unsigned i = 0; i <= ncopy; i++) {
        if (i < ncopy) {
            if (cp[i].len) SYMM__CU(MemcpyAsync(cp[i].dst, cp[i].src, cp[i].len, s->s_ce));
            SYMM__CU(EventRecord(s->ev_ce_copy[i], s->s_ce));
        }
        if (i > 0) {
            SYMM__CU(StreamWaitEvent(s->s_ce_sig, s->ev_ce_copy[i - 1], 0));
            SYMM__CU(StreamWriteValue64(s->s_ce_sig, cp[i - 1].flag, cp[i - 1].value,
                                        CU_STREAM_WRITE_VALUE_DEFAULT));
        }
    }
    SYMM__CU(EventRecord(s->ev_ce_join, s->s_ce_sig)); /* after every copy and signal */
    return SYMM_SUCCESS;
}

/* A block of len bytes to every peer, in the reduce-scatter's turns (copy k
 * to team PE (me + 1 + k) mod n: every GPU sends to one peer and receives
 * from one at a time): from src_off + q * src_q_stride of this heap to
 * dst_off of PE q's, each counted in q's ag word k; then the caller's stream
 * waits for them and, in symm_k_ce_wait, for the peers' blocks. The peers'
 * dst must be free to write: the all-reduce's reduce-scatter shows it, the
 * all-gather and all-to-all open with the team's barrier. */
static symm_status ce_spread(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                             uint64_t src_off, uint64_t src_q_stride, uint64_t dst_off,
                             uint64_t len) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    cu_ce_copy cp[CU_LL_MAX_PES - 1];
    for (int32_t k = 0; k < n - 1; k++) {
        const int32_t q = (me + 1 + k) % n;
        cp[k].src = (CUdeviceptr)(uintptr_t)(base[me] + src_off + (uint64_t)q * src_q_stride);
        cp[k].dst = (CUdeviceptr)(uintptr_t)(base[q] + dst_off);
        cp[k].len = len;
        cp[k].flag = (CUdeviceptr)(uintptr_t)(base[q] + s->ce_off + SYMM__CE_AG) + 8u * (uint64_t)k;
        cp[k].value = 1;
    }
    SYMM_TRY(ce_issue(s, cs, cp, (unsigned)(n - 1)));
    SYMM__CU(StreamWaitEvent(cs, s->ev_ce_join, 0));
    symm__kce_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.ce_off = s->ce_off;
    void *args[] = {&p};
    return symm__cu_launch(s, s->f_ce_wait, "cuLaunchKernel(symm_k_ce_wait)", 1, 1, 32, cs, args);
}

/* All-gather and all-to-all by the copy engines: the team's barrier (every
 * peer's dst is free), the own block into the own dst on the caller's
 * stream (unless in place) while the copy stream sends this PE's block(s) to
 * the peers in turns. */
static symm_status coll_ce_exchange(cu_state *s, const symm__coll *c, char *const *base,
                                    CUstream cs, const char *why) {
    const symm__team *team = c->team;
    const int32_t me = team->my_pe;
    const uint64_t m = c->nelems * c->elem_size;
    const bool a2a = c->kind == SYMM__COLL_ALLTOALL;
    const uint64_t dst_me = c->dst_off + (uint64_t)me * m;
    const uint64_t src_me = c->src_off + (a2a ? (uint64_t)me * m : 0);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm ce (%s), the "
               "team's barrier, then the copy engines in turns", coll_kind_name(c->kind),
               (unsigned long long)m, (int)team->n_pes, why);
    SYMM_TRY(launch_barrier(s, team, base, 1, cs));
    if (src_me != dst_me)
        SYMM__CU(MemcpyAsync((CUdeviceptr)(uintptr_t)(base[me] + dst_me),
                             (CUdeviceptr)(uintptr_t)(base[me] + src_me), m, cs));
    return ce_spread(s, c, base, cs, c->src_off, a2a ? m : 0, dst_me, m);
}

/* The reduce-scatter of blocks of blen[j] bytes, stride bytes apart in the
 * input, team PE j's into its dst at dst_j (an all-reduce: every PE's slice;
 * a reduce-scatter: equal blocks), round after round; then, for an
 * all-reduce, every PE's slice to every peer (ce_spread: the copies land in
 * the peers' dst, which the reduce-scatter's end of round shows them to be
 * done with). The all-gather and all-to-all go to coll_ce_exchange. */
static symm_status coll_ce(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                           const char *why) {
    if (c->kind == SYMM__COLL_FCOLLECT || c->kind == SYMM__COLL_ALLTOALL)
        return coll_ce_exchange(s, c, base, cs, why);
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t es = c->elem_size;
    const bool all = c->kind == SYMM__COLL_REDUCE;
    uint64_t blen[CU_LL_MAX_PES], stride, longest = 0;
    if (all) { /* slice j of the vector, as the other split forms cut it */
        const uint64_t per = symm__slice_elems(c->nelems, n, es);
        stride = per * es;
        for (int32_t j = 0; j < n; j++) blen[j] = symm__slice_count(c->nelems, per, j) * es;
    } else {
        stride = c->nelems * es;
        for (int32_t j = 0; j < n; j++) blen[j] = stride;
    }
    for (int32_t j = 0; j < n; j++) longest = max_u64(longest, blen[j]);
    const uint64_t my_dst = c->dst_off + (all ? (uint64_t)me * stride : 0);
    CUfunction f = NULL;
    SYMM_TRY(reduce_fn(s, c->dtype, c->op, CU_RED_CE, &f));
    symm__kce_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.ce_off = s->ce_off;
    p.ce_slot = s->ce_slot;
    /* rounds of whole 128-byte lines (ce_slot is a multiple of 256) */
    const uint64_t round = s->ce_slot;
    /* a block of 512 threads a SM: 2 a SM were 3-5 % slower at 128-256 MiB */
    const unsigned thr = SYMM__CE_THREADS, cap = (unsigned)(s->sms > 0 ? s->sms : 64);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per PE on %d PEs: algorithm ce (%s), %llu "
               "round(s), the last phase in up to %llu copies%s", coll_kind_name(c->kind),
               (unsigned long long)longest, (int)n, why, (unsigned long long)((longest + round - 1) / round),
               (unsigned long long)s->ce_pieces, all ? ", then the slices to every PE" : "");
    for (uint64_t off = 0; off < longest; off += round) {
        cu_ce_copy cp[CU_CE_COPIES_MAX];
        unsigned ncopy = 0;
        uint64_t my_len = 0, my_piece = 128;
        for (int32_t k = -1; k < n - 1; k++) {
            const int32_t q = (me + 1 + k) % n; /* k = -1: this PE, for its own kernel */
            const uint64_t len = blen[q] > off ? min_u64(round, blen[q] - off) : 0;
            uint64_t pieces = 0;
            const uint64_t piece = symm__ce_piece(len, s->ce_pieces, &pieces);
            if (k < 0) {
                my_len = len;
                my_piece = piece;
                continue;
            }
            const CUdeviceptr src = (CUdeviceptr)(uintptr_t)(base[me] + c->src_off + (uint64_t)q * stride + off);
            const CUdeviceptr dst = (CUdeviceptr)(uintptr_t)(base[q] + s->ce_off + SYMM__CE_HDR +
                                                             (uint64_t)k * s->ce_slot);
            const CUdeviceptr flag = (CUdeviceptr)(uintptr_t)(base[q] + s->ce_off + SYMM__CE_ARRIVE) +
                                     8u * (uint64_t)k;
            /* the last phase in pieces; an empty block is one copy of 0
             * bytes, i.e. its signal alone (kernels_ce.cu says why) */
            const uint64_t step = k == n - 2 ? piece : len, copies = k == n - 2 ? pieces : 1;
            for (uint64_t i = 0; i < copies; i++) {
                cp[ncopy].dst = dst + i * step;
                cp[ncopy].src = src + i * step;
                cp[ncopy].len = min_u64(step, len - i * step);
                cp[ncopy].flag = flag;
                cp[ncopy++].value = i + 1;
            }
        }
        SYMM_TRY(ce_issue(s, cs, cp, ncopy));
        p.src_off = c->src_off + (uint64_t)me * stride + off;
        p.dst_off = my_dst + off;
        p.ne = my_len / es;
        p.piece = my_piece / es;
        p.vec = (p.src_off | p.dst_off) % 16 == 0;
        void *args[] = {&p};
        symm_status st = symm__cu_launch(s, f, "cuLaunchKernel(symm_k_cereduce)",
                                copy_blocks(my_len, thr, cap), 1, thr, cs, args);
        /* joined back even when the launch failed: no stream stays forked */
        SYMM__CU(StreamWaitEvent(cs, s->ev_ce_join, 0));
        SYMM_TRY(st);
    }
    if (!all) return SYMM_SUCCESS;
    return ce_spread(s, c, base, cs, my_dst, 0, my_dst, blen[me]);
}

/* Cached graphs of the copy-engine forms (CU_CE_GRAPHS_DEFAULT says what
 * for). An entry is a shape: what coll_ce enqueues depends on nothing else
 * (the team's heap bases, the slots, the pieces and the SM count are fixed
 * for the context's life, and the flags are constants that every call puts
 * back to 0, so a graph replays as a user's captured one does: docs/
 * DECISIONS.md "No counters from the host"). A shape's first call is
 * enqueued call by call and only remembered, its second is captured on
 * s_cap and instantiated (30-90 us once, 2 x H200), every later one is one
 * cuGraphLaunch; so a program whose shapes never repeat pays a lookup, not
 * a capture, for each call. */
typedef struct cu_ce_graph {
    const symm__team *team;
    uint32_t kind, dtype, op;
    uint64_t src_off, dst_off, nelems, elem_size;
    CUgraphExec exec; /* NULL: seen once, not captured yet */
    uint64_t used;    /* ce_tick of its last call; 0: an empty entry */
} cu_ce_graph;

static bool ce_graph_is(const cu_ce_graph *g, const symm__coll *c) {
    return g->used && g->team == c->team && g->kind == c->kind && g->dtype == c->dtype &&
           g->op == c->op && g->src_off == c->src_off && g->dst_off == c->dst_off &&
           g->nelems == c->nelems && g->elem_size == c->elem_size;
}

static void ce_graphs_flush(cu_state *s) {
    for (uint32_t i = 0; i < s->ce_graphs_cap; i++) {
        /* a graph still running is freed when it completes (cuGraphExecDestroy) */
        if (s->ce_graphs[i].exec) symm__cu.GraphExecDestroy(s->ce_graphs[i].exec);
        memset(&s->ce_graphs[i], 0, sizeof s->ce_graphs[i]);
    }
}

/* SYMM_CUDA_CE_GRAPHS, the lock and the capture stream (collective setup,
 * after the copy streams). A PE's own choice: a cached graph does on the
 * GPU what the call would enqueue, so PEs need not agree. */
static symm_status ce_graphs_init(cu_state *s) {
    uint64_t n = CU_CE_GRAPHS_DEFAULT;
    SYMM_TRY(symm__cu_env_size("SYMM_CUDA_CE_GRAPHS", CU_CE_GRAPHS_DEFAULT, &n));
    if (n > CU_CE_GRAPHS_MAX)
        return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_CUDA_CE_GRAPHS=%llu: expected 0 (no cached "
                         "graphs) to %u", (unsigned long long)n, CU_CE_GRAPHS_MAX);
    if (!n) return SYMM_SUCCESS;
    if (!symm__cu.StreamBeginCapture || !symm__cu.StreamEndCapture ||
        !symm__cu.GraphInstantiateWithFlags || !symm__cu.GraphLaunch || !symm__cu.GraphDestroy ||
        !symm__cu.GraphExecDestroy) {
        SYMM_INFO(SYMM_LOG_BACKEND, "cuda: the driver lacks stream capture or graph launches; "
                  "copy-engine collectives are enqueued call by call");
        return SYMM_SUCCESS;
    }
    if (pthread_mutex_init(&s->ce_lock, NULL) != 0)
        return symm__err(SYMM_ERR_INTERNAL, "cuda backend: pthread_mutex_init failed");
    s->ce_lock_init = true;
    s->ce_graphs = calloc((size_t)n, sizeof *s->ce_graphs);
    if (!s->ce_graphs) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    SYMM__CU(StreamCreate(&s->s_cap, CU_STREAM_NON_BLOCKING));
    s->ce_graphs_cap = (uint32_t)n;
    return SYMM_SUCCESS;
}

void symm__cu_ce_graphs_free(cu_state *s) {
    if (s->ce_graphs) ce_graphs_flush(s);
    free(s->ce_graphs);
    s->ce_graphs = NULL;
    s->ce_graphs_cap = 0;
    if (s->s_cap) symm__cu.StreamDestroy(s->s_cap);
    s->s_cap = NULL;
    if (s->ce_lock_init) pthread_mutex_destroy(&s->ce_lock);
    s->ce_lock_init = false;
}

/* The call's work captured on s_cap (relaxed: the capture is ours alone,
 * and a kernel loaded on first use may load its module) and instantiated. */
static symm_status ce_graph_capture(cu_state *s, const symm__coll *c, char *const *base,
                                    const char *why, CUgraphExec *exec) {
    CUgraph g = NULL;
    *exec = NULL;
    SYMM__CU(StreamBeginCapture(s->s_cap, CU_STREAM_CAPTURE_MODE_RELAXED));
    symm_status st = coll_ce(s, c, base, s->s_cap, why);
    CUresult r = symm__cu.StreamEndCapture(s->s_cap, &g); /* ends it whatever happened */
    if (st == SYMM_SUCCESS && r != CUDA_SUCCESS) st = symm__cu_fail(r, "cuStreamEndCapture");
    if (st == SYMM_SUCCESS) {
        r = symm__cu.GraphInstantiateWithFlags(exec, g, 0);
        if (r != CUDA_SUCCESS) {
            *exec = NULL;
            st = symm__cu_fail(r, "cuGraphInstantiateWithFlags");
        }
    }
    if (g) symm__cu.GraphDestroy(g);
    return st;
}

static symm_status ce_cached_locked(cu_state *s, const symm__coll *c, char *const *base,
                                    CUstream cs, const char *why) {
    if (!s->ce_graphs_cap) return coll_ce(s, c, base, cs, why);
    const uint64_t gen = atomic_load(&s->heap_gen);
    if (gen != s->ce_gen) { /* a mapping went away: the graphs may copy from it */
        ce_graphs_flush(s);
        s->ce_gen = gen;
    }
    cu_ce_graph *e = NULL, *victim = &s->ce_graphs[0];
    for (uint32_t i = 0; i < s->ce_graphs_cap && !e; i++) {
        if (ce_graph_is(&s->ce_graphs[i], c)) e = &s->ce_graphs[i];
        else if (s->ce_graphs[i].used < victim->used) victim = &s->ce_graphs[i];
    }
    const uint64_t tick = ++s->ce_tick;
    if (!e) { /* first call of this shape: remember it, enqueue as always */
        if (victim->exec) symm__cu.GraphExecDestroy(victim->exec);
        victim->team = c->team;
        victim->kind = c->kind;
        victim->dtype = c->dtype;
        victim->op = c->op;
        victim->src_off = c->src_off;
        victim->dst_off = c->dst_off;
        victim->nelems = c->nelems;
        victim->elem_size = c->elem_size;
        victim->exec = NULL;
        victim->used = tick;
        return coll_ce(s, c, base, cs, why);
    }
    e->used = tick;
    if (!e->exec) { /* its second call: capture it */
        SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu elements: a shape seen before, captured into a "
                   "graph", coll_kind_name(c->kind), (unsigned long long)c->nelems);
        if (ce_graph_capture(s, c, base, why, &e->exec) != SYMM_SUCCESS) {
            /* nothing reached cs: enqueue it as always, and from now on */
            SYMM_WARN(SYMM_LOG_BACKEND, "cuda: a copy-engine collective could not be captured "
                      "into a graph (%s); these collectives are enqueued call by call from now "
                      "on", symm__last_error());
            ce_graphs_flush(s);
            s->ce_graphs_cap = 0;
            return coll_ce(s, c, base, cs, why);
        }
    }
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu elements on %d PEs: algorithm ce (%s), its cached "
               "graph", coll_kind_name(c->kind), (unsigned long long)c->nelems,
               (int)c->team->n_pes, why);
    SYMM__CU(GraphLaunch(e->exec, cs));
    return SYMM_SUCCESS;
}

/* coll_ce through the cache, unless the caller's stream is being captured
 * (its own graph then holds the work) or there is no cache. */
static symm_status coll_ce_cached(cu_state *s, const symm__coll *c, char *const *base,
                                  CUstream cs, const char *why) {
    if (!s->ce_lock_init) return coll_ce(s, c, base, cs, why);
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    SYMM__CU(StreamIsCapturing(cs, &cap));
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE) return coll_ce(s, c, base, cs, why);
    pthread_mutex_lock(&s->ce_lock);
    const symm_status st = ce_cached_locked(s, c, base, cs, why);
    pthread_mutex_unlock(&s->ce_lock);
    return st;
}

/* Launch the staged reduction: slices (all-reduce on 2 PEs: every PE reduces
 * the whole vector, one shot; on more: slice j is PE j's share, gathered to
 * every PE after; reduce-scatter: block j of the input), then the grid:
 * blocks of at least st_chunk bytes per step, at most one per SM and
 * SYMM__ST_MAX_BLOCKS, and at least two slots of the staging per region, so
 * a block's next step overlaps its receiver's last one. On 2 PEs, where the
 * staging would not hold the call: landing out of place (pieces of up to
 * st_land), swap in place (up to st_swap_max, two of them in shared memory).
 * false (nothing launched) when the steps would overflow the flags' 24 bits. */
static symm_status coll_staged(cu_state *s, const symm__coll *c, char *const *base, CUstream cs,
                               const char *why, bool *done) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    const uint64_t es = c->elem_size, ne = c->nelems;
    symm__kstaged_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.st_off = s->st_base + (uint64_t)team->slot * s->st_slot;
    p.st_region = s->st_region;
    p.st_parity = s->st_parity;
    p.src_off = c->src_off;
    p.dst_off = c->dst_off;
    /* the peer form: on 2 PEs an all-reduce in halves (st_halves, which
     * plans it), on more PEs wherever the staging holds the slices (below) */
    symm__st_plan plan;
    bool peer = false;
    if (c->kind == SYMM__COLL_REDUCESCATTER) {
        p.src_j_stride = ne * es;
        for (int32_t j = 0; j < n; j++) p.cnt[j] = ne;
    } else if (n == 2 && !(peer = symm__cu_st_halves(s, c, &plan))) {
        for (int32_t j = 0; j < n; j++) p.cnt[j] = ne;
    } else {
        const uint64_t per = symm__slice_elems(ne, n, es);
        p.src_j_stride = per * es;
        for (int32_t j = 0; j < n; j++) p.cnt[j] = symm__slice_count(ne, per, j);
        p.dst_off = c->dst_off + (uint64_t)me * per * es;
        p.gather = 1;
    }
    p.vec = (p.src_off | p.src_j_stride | p.dst_off) % 16 == 0;
    uint64_t len = 0; /* the longest slice, in bytes */
    for (int32_t j = 0; j < n; j++) len = max_u64(len, p.cnt[j] * es);
    /* swap only where the staging would be reused: what fits it is faster
     * staged (no save, no round trip: 2 PEs, 1 MiB in place 8.6 us against
     * 10.3) */
    if (n > 2) peer = symm__cu_st_peer_shape(s, len, n, p.gather != 0, &plan);
    const bool land = !peer && symm__cu_st_can_land(s, c);
    const bool swap = !peer && !land && symm__cu_st_can_swap(s, c) && len > s->st_bytes;
    if (!peer && !symm__st_make_plan(len, s->sms > 0 ? (uint64_t)s->sms : 0,
                                     land ? min_u64(s->st_bytes, CU_ST_LAND_STAGED_MAX)
                                          : s->st_bytes,
                                     s->st_chunk, s->st_steps,
                                     land ? s->st_land : swap ? s->st_swap_max : 0, &plan)) {
        *done = false;
        return SYMM_SUCCESS;
    }
    const uint64_t blocks = peer ? plan.blocks * (uint64_t)(n - 1) : plan.blocks, chunk = plan.chunk;
    p.chunk = chunk;
    p.depth = swap ? 0 : (uint32_t)plan.depth;
    p.steps = (uint32_t)plan.steps;
    p.land = land && plan.steps > plan.depth;
    p.swap = swap;
    p.peer = peer;
    CUfunction f = NULL;
    SYMM_TRY(reduce_fn(s, c->dtype, c->op, CU_RED_STAGED, &f));
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm staged (%s), "
               "%s, %llu block(s) x %u threads, %u step(s) of %llu bytes per block, %s%u",
               coll_kind_name(c->kind), (unsigned long long)(ne * es), (int)n, why,
               c->kind == SYMM__COLL_REDUCESCATTER ? "reduce-scatter"
               : p.gather                          ? "reduce a slice, write it to every PE"
                                                   : "every PE reduces the whole vector",
               (unsigned long long)blocks, 2 * SYMM__ST_GROUP, p.steps, (unsigned long long)chunk,
               p.swap   ? "in place through shared memory, depth "
               : p.land ? "landing in the peer's dst after staged steps: "
               : p.peer ? "blocks dealt out to the peers, steps "
                        : "depth ", p.depth);
    void *args[] = {&p};
    *done = true;
    return symm__cu_launch_smem(s, f, "cuLaunchKernel(symm_k_streduce)", (unsigned)blocks, 1,
                       2 * SYMM__ST_GROUP, swap ? (unsigned)(2 * chunk) : 0, cs, args);
}

/* Enqueue the collective on cs: the user's stream, or (stream NULL, a
 * blocking call) the team's lane. */
static symm_status coll_enqueue(symm__ctx *ctx, cu_state *s, const symm__coll *c, void *stream,
                                CUstream cs) {
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    char *base[CU_PARAM_PES];
    SYMM_TRY(team_bases(ctx, team, base));
    const uint64_t es = c->elem_size;
    const unsigned max_blocks = (unsigned)(s->sms > 0 ? 2 * s->sms : 128);

    /* The algorithm (cuda_tuning.c), else the barrier algorithms below. */
    const char *why = "";
    const uint64_t pair_bytes = c->nelems * es;
    symm__l8_shape l8;
    switch (symm__cu_coll_choose(s, c, &l8, &why)) {
    case CU_ALGO_LL: return coll_ll(s, c, base, cs, pair_bytes, why);
    case CU_ALGO_LL128: return coll_l8(s, c, base, cs, &l8, why);
    case CU_ALGO_CE: return coll_ce_cached(s, c, base, cs, why);
    case CU_ALGO_STAGED: {
        bool done = false;
        SYMM_TRY(coll_staged(s, c, base, cs, why, &done));
        if (done) return SYMM_SUCCESS;
        why = "staged: too many steps";
        break;
    }
    default: break;
    }
    /* The barrier algorithms start with the team's barrier, fused into their
     * (first) data kernel, and end with it: fused into the last one too (its
     * last block runs it; one launch, so half the host time), except while
     * the stream is being captured into a CUDA graph, where host time is
     * paid once and a barrier kernel of its own after the data kernel is
     * 0.5-1.5 us faster on the GPU (the kernel boundary publishes the data
     * sooner than every block's fence; docs/DECISIONS.md "Collectives"). */
    bool fuse = n > 1;
    if (fuse && stream) {
        CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
        SYMM__CU(StreamIsCapturing(cs, &cap));
        fuse = cap == CU_STREAM_CAPTURE_STATUS_NONE;
    }
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per pair on %d PEs: algorithm %s (%s), "
               "closing barrier %s", coll_kind_name(c->kind), (unsigned long long)pair_bytes, (int)n,
               c->kind == SYMM__COLL_REDUCE ? "twoshot" : "copy", why,
               fuse ? "in the data kernel" : n > 1 ? "a kernel of its own (graph capture)" : "none");

    if (c->kind == SYMM__COLL_REDUCE || c->kind == SYMM__COLL_REDUCESCATTER) {
        CUfunction f = NULL;
        SYMM_TRY(reduce_fn(s, c->dtype, c->op, CU_RED_BARRIER, &f));
        symm__kreduce_params p;
        CU_FILL_TEAM_PARAMS(p);
        p.enter = n > 1;
        p.dst_off = c->dst_off;
        if (c->kind == SYMM__COLL_REDUCE) {
            /* two-shot: PE r reduces slice r and writes it to every PE (in-place safe) */
            const uint64_t per = symm__slice_elems(c->nelems, n, es);
            p.src_off = c->src_off;
            p.lo = min_u64((uint64_t)me * per, c->nelems);
            p.hi = p.lo + symm__slice_count(c->nelems, per, me);
            p.push = 1;
        } else {
            p.src_off = c->src_off + (uint64_t)me * c->nelems * es;
            p.lo = 0;
            p.hi = c->nelems;
            p.push = 0;
        }
        uint64_t steps = (p.hi - p.lo + (16 / es) - 1) / (16 / es);
        unsigned blocks = (unsigned)min_u64(max_u64((steps + CU_THREADS - 1) / CU_THREADS, 1), max_blocks);
        p.leave = fuse;
        void *args[] = {&p};
        SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s kernel, %u block(s) x %d threads, elements [%llu, %llu)",
                   c->kind == SYMM__COLL_REDUCE ? "two-shot reduce (reduce a slice, push it to all)"
                                                : "reduce-scatter (pull and reduce own block)",
                   blocks, CU_THREADS, (unsigned long long)p.lo, (unsigned long long)p.hi);
        SYMM_TRY(symm__cu_launch(s, f, "cuLaunchKernel(symm_k_reduce)", blocks, 1, CU_THREADS, cs,
                                 args));
    } else {
        /* all-gather / all-to-all: push (this PE writes into the peers) or
         * pull (copy_pulls) */
        const bool push = !symm__cu_copy_pulls(s, c, n);
        symm__kgather_params p;
        CU_FILL_TEAM_PARAMS(p);
        p.enter = n > 1;
        p.src_off = c->src_off;
        p.dst_off = c->dst_off;
        p.len = c->nelems * es;
        p.only_j = -1;
        unsigned pairs = (unsigned)n;
        switch (c->kind) {
        case SYMM__COLL_BROADCAST:
            p.only_j = c->root;
            pairs = 1;
            break;
        case SYMM__COLL_FCOLLECT:
            if (push) { /* my block to block me of every PE (in place too) */
                p.push = 1;
                p.dst_me_stride = p.len;
            } else { /* block j of dst from PE j's source (in place: its block j of dst) */
                p.dst_j_stride = p.len;
                if (c->src_off == c->dst_off + (uint64_t)me * p.len) {
                    p.src_off = c->dst_off;
                    p.src_j_stride = p.len;
                }
            }
            break;
        case SYMM__COLL_ALLTOALL:
            if (push) { /* my block j to block me of PE j */
                p.push = 1;
                p.src_j_stride = p.len;
                p.dst_me_stride = p.len;
            } else { /* block j of dst from block me of PE j's source */
                p.src_me_stride = p.len;
                p.dst_j_stride = p.len;
            }
            break;
        case SYMM__COLL_COLLECT:
            break;
        default:
            return symm__err(SYMM_ERR_INTERNAL, "unknown collective kind %u", c->kind);
        }
        if (c->kind == SYMM__COLL_COLLECT) {
            if (!c->counts) return symm__err(SYMM_ERR_INTERNAL, "collect without counts");
            uint64_t at = c->dst_off, mine_at = c->dst_off;
            for (int32_t j = 0; j < me; j++) mine_at += c->counts[j] * es;
            /* in place: PE j's source is its own block of dst */
            const bool inplace = c->src_off == mine_at;
            SYMM_TRACE(SYMM_LOG_COLL, "cuda: collect as %d gather kernel(s), one per block%s", n,
                       inplace ? ", in place" : "");
            for (int32_t j = 0; j < n; j++) {
                p.only_j = j;
                p.dst_off = at; /* block j lands at the running offset */
                p.dst_j_stride = 0;
                p.src_off = inplace ? at : c->src_off;
                p.len = c->counts[j] * es;
                p.leave = j == n - 1 && fuse; /* the last kernel closes */
                at += p.len;
                void *args[] = {&p};
                SYMM_TRY(symm__cu_launch(s, s->f_gather, "cuLaunchKernel(symm_k_gather)",
                                copy_blocks(p.len, CU_THREADS, max_blocks), 1, CU_THREADS, cs, args));
                p.enter = 0;
            }
        } else {
            /* Blocks (kernels.cu symm_k_gather): a push runs one block of
             * CU_PUSH_THREADS a SM, sms / 16 of them on the own pair and the
             * rest shared by the peers; a pull CU_THREADS a block, 2 a SM,
             * the same number on every pair. */
            const unsigned thr = p.push ? CU_PUSH_THREADS : CU_THREADS;
            const unsigned sms = s->sms > 0 ? (unsigned)s->sms : 64u;
            /* the own pair copies unless its source is its destination (in place) */
            const bool self = p.src_off + (uint64_t)me * (p.src_me_stride + p.src_j_stride) !=
                              p.dst_off + (uint64_t)me * (p.dst_me_stride + p.dst_j_stride);
            unsigned bx;
            if (pairs == 1) { /* broadcast, or a team of one */
                if (p.only_j < 0) p.only_j = 0;
                bx = copy_blocks(p.len, thr, max_blocks);
            } else {
                const unsigned self_cap = p.push ? sms / 16 : max_blocks / pairs;
                p.self_bx = self ? copy_blocks(p.len, thr, self_cap) : 0;
                const unsigned peer_cap = p.push ? (sms - p.self_bx) / (pairs - 1) : max_blocks / pairs;
                p.peer_bx = copy_blocks(p.len, thr, peer_cap);
                bx = p.self_bx + p.peer_bx * (pairs - 1);
            }
            p.leave = fuse;
            SYMM_TRACE(SYMM_LOG_COLL, "cuda: gather kernel (%s), %u block(s) x %u threads (own pair %u, "
                       "%u a peer), %llu bytes per pair", p.push ? "push" : "pull", bx, thr, p.self_bx,
                       p.peer_bx, (unsigned long long)p.len);
            void *args[] = {&p};
            SYMM_TRY(symm__cu_launch(s, s->f_gather, "cuLaunchKernel(symm_k_gather)", bx, 1, thr,
                                     cs, args));
        }
    }
    if (n > 1 && !fuse) SYMM_TRY(launch_barrier(s, team, base, 2, cs));
    return SYMM_SUCCESS;
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


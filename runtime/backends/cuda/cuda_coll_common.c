/*
 * CUDA backend: what every collective form builds on (cuda_coll.h): the
 * team's heap bases for a kernel's parameter block, the team barrier
 * kernels (and the barrier on a stream, ops->sync_stream), the agree
 * (ops->coll_agree) and the reduction kernels of every form by dtype and
 * op. Calls only the state's helpers (cuda_state.c).
 */
#include "cuda_coll.h"

/* ------------------------------------------------------------------------ */
/* Teams: heap bases, barriers, the agree                                    */
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
symm_status symm__cu_team_bases(const symm__ctx *ctx, const symm__team *team, char **base) {
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
    SYMM_TRY(symm__cu_team_bases(ctx, team, base));
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

/* A barrier kernel's parameter block: the team's, and the bump. */
#define CU_FILL_BARRIER_PARAMS(p) \
    do {                          \
        CU_FILL_TEAM_PARAMS(p);   \
        (p).bump = bump;          \
    } while (0)

/* Barrier kernel: epoch = counter + bump (1: a stream barrier; 2: the
 * closing barrier of a collective whose data kernel does not close it). */
symm_status symm__cu_launch_barrier(cu_state *s, const symm__team *team, char *const *base,
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
        SYMM_TRY(symm__cu_team_bases(ctx, team, base));
        SYMM_TRY(symm__cu_launch_barrier(s, team, base, 1, cs));
    }
    return lane ? symm__cu_lane_finish(s, lane, NULL, 0) : SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Reduction kernels                                                         */
/* ------------------------------------------------------------------------ */

static const char *const dtype_names[SYMM_DTYPE_COUNT] = {
    NULL, "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
};
static const char *const op_names[CU_N_OPS] = {"sum", "prod", "min", "max", "and", "or", "xor"};

/* The reduction kernel of a form: symm_k_<form>reduce_<dtype>_<op>, looked
 * up on first use. A signed integer dtype has kernels for min and max only:
 * sum, prod, and, or and xor give the same bits in two's complement whether
 * the elements are read as signed or unsigned, so those run the unsigned
 * type's kernel of the same size (no second copy to compile; and the
 * unsigned kernel's wrap-around is defined where signed overflow is not). */
symm_status symm__cu_reduce_fn(cu_state *s, uint32_t dtype, uint32_t op, int form, CUfunction *f) {
    if (dtype >= SYMM_DTYPE_COUNT || !dtype_names[dtype] || op >= CU_N_OPS)
        return symm__err(SYMM_ERR_INVALID_ARG, "no reduction kernel for dtype %u op %u", dtype, op);
    if (op != SYMM_OP_MIN && op != SYMM_OP_MAX) {
        switch (dtype) {
        case SYMM_DTYPE_INT8: dtype = SYMM_DTYPE_UINT8; break;
        case SYMM_DTYPE_INT16: dtype = SYMM_DTYPE_UINT16; break;
        case SYMM_DTYPE_INT32: dtype = SYMM_DTYPE_UINT32; break;
        case SYMM_DTYPE_INT64: dtype = SYMM_DTYPE_UINT64; break;
        default: break;
        }
    }
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

/* Every reduction kernel of every form this configuration can run, looked
 * up now (so loaded, under CUDA's lazy loading, while no stream waits: a
 * lookup later would load the kernel then, and a load waits for the
 * device's queued work; docs/PROXY.md "Lazy loading"). Returns how many. */
unsigned symm__cu_preload_reduce(cu_state *s) {
    const struct { int form; bool on; } forms[] = {
        {CU_RED_BARRIER, true},           {CU_RED_LL, s->ll_slot != 0},
        {CU_RED_STAGED, s->st_slot != 0}, {CU_RED_L8, s->st_slot != 0 && s->l8_lines != 0},
        {CU_RED_CE, s->ce_slot != 0},
    };
    unsigned n = 0;
    for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++)
        for (uint32_t dtype = 1; forms[k].on && dtype < SYMM_DTYPE_COUNT; dtype++)
            for (uint32_t op = 0; op < CU_N_OPS; op++) {
                CUfunction f = NULL;
                if (symm__cu_reduce_fn(s, dtype, op, forms[k].form, &f) != SYMM_SUCCESS) continue;
                if (symm__cu.FuncLoad) symm__cu.FuncLoad(f);
                n++;
            }
    symm__err_clear(); /* the (dtype, op) pairs that have no kernel */
    return n;
}

const char *symm__cu_coll_kind_name(uint32_t kind) {
    switch (kind) {
    case SYMM__COLL_REDUCE: return "all-reduce";
    case SYMM__COLL_REDUCESCATTER: return "reduce-scatter";
    case SYMM__COLL_FCOLLECT: return "all-gather";
    case SYMM__COLL_ALLTOALL: return "all-to-all";
    case SYMM__COLL_BROADCAST: return "broadcast";
    default: return "collect";
    }
}

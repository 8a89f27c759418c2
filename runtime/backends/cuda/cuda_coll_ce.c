/*
 * CUDA backend: the copy-engine collectives (kernels_ce.cu): the
 * reduce-scatter and all-reduce whose bytes move on the copy engines in
 * turns while a kernel reduces what has come, the all-gather and all-to-all
 * by the copy engines, and the cached graphs that replay a shape seen
 * before. cuda_tuning.c ce_choose says when they run.
 */
#include "cuda_coll.h"
#include "cuda_tuning.h"

/* ------------------------------------------------------------------------ */
/* Copy-engine reduce-scatter                                                */
/* ------------------------------------------------------------------------ */
/* kernels_ce.cu. The bytes of a reduce-scatter move on the copy engines, one
 * peer after another: in phase k = 0 .. n-2 every PE copies its block for PE
 * (me + 1 + k) mod n into that PE's CE slot k, so in each phase every GPU
 * sends to one peer and receives from one (on 4 x H200 the copy engines
 * carry more in turns than SM stores, or the copy engines, to all peers at
 * once: probe_cuda mesh, docs/GPU-RESULTS.md "2026-11-28: copy engines in
 * turns"). The last phase goes in ce_pieces copies; after each copy a
 * stream write counts it in the receiver's arrive word. The copies run on the copy stream, forked off the
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
 * copy stream it delayed every copy), and each signal is enqueued after the
 * next copy, so that the graph a capture makes keeps the copies on one
 * chain (enqueued right after its copy, the signal made a call in a graph
 * slower than back to back; one copy later, both are as fast:
 * docs/GPU-RESULTS.md "2026-11-28: the copy-engine reduce-scatter"). A copy
 * of 0 bytes is only its signal. */
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
               "team's barrier, then the copy engines in turns", symm__cu_coll_kind_name(c->kind),
               (unsigned long long)m, (int)team->n_pes, why);
    SYMM_TRY(symm__cu_launch_barrier(s, team, base, 1, cs));
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
    SYMM_TRY(symm__cu_reduce_fn(s, c->dtype, c->op, CU_RED_CE, &f));
    symm__kce_params p;
    CU_FILL_TEAM_PARAMS(p);
    p.ce_off = s->ce_off;
    p.ce_slot = s->ce_slot;
    /* rounds of whole 128-byte lines (ce_slot is a multiple of 256) */
    const uint64_t round = s->ce_slot;
    /* a block of 512 threads a SM: 2 a SM were slower (docs/GPU-RESULTS.md
     * "2026-11-28: the copy-engine reduce-scatter") */
    const unsigned thr = SYMM__CE_THREADS, cap = (unsigned)(s->sms > 0 ? s->sms : 64);
    SYMM_TRACE(SYMM_LOG_COLL, "cuda: %s of %llu bytes per PE on %d PEs: algorithm ce (%s), %llu "
               "round(s), the last phase in up to %llu copies%s", symm__cu_coll_kind_name(c->kind),
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
 * back to 0, so a graph replays as a user's captured one does:
 * docs/DECISIONS.md "Copy engines"). A shape's first call is enqueued call
 * by call and only remembered, its second is captured on s_cap and
 * instantiated (a host cost paid once: docs/GPU-RESULTS.md "2026-11-28:
 * cached graphs of the copy-engine forms"), every later one is one
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

/* The copy-engine forms' last wait, their streams and events, and the
 * cached graphs (symm__cu_coll_setup, where there is a scratch). */
symm_status symm__cu_ce_setup(cu_state *s) {
    SYMM_TRY(symm__cu_get_fn(s, &s->f_ce_wait, "symm_k_ce_wait"));
    CUresult r = symm__cu.StreamCreate(&s->s_ce, CU_STREAM_NON_BLOCKING);
    if (r == CUDA_SUCCESS) r = symm__cu.StreamCreate(&s->s_ce_sig, CU_STREAM_NON_BLOCKING);
    for (size_t i = 0; i < sizeof s->ev_ce_copy / sizeof s->ev_ce_copy[0] && r == CUDA_SUCCESS; i++)
        r = symm__cu.EventCreate(&s->ev_ce_copy[i], CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) r = symm__cu.EventCreate(&s->ev_ce_fork, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) r = symm__cu.EventCreate(&s->ev_ce_join, CU_EVENT_DISABLE_TIMING);
    if (r != CUDA_SUCCESS)
        return symm__cu_fail(r, "cuStreamCreate / cuEventCreate (copy-engine collectives)");
    return ce_graphs_init(s);
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
                   "graph", symm__cu_coll_kind_name(c->kind), (unsigned long long)c->nelems);
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
               "graph", symm__cu_coll_kind_name(c->kind), (unsigned long long)c->nelems,
               (int)c->team->n_pes, why);
    SYMM__CU(GraphLaunch(e->exec, cs));
    return SYMM_SUCCESS;
}

/* coll_ce through the cache, unless the caller's stream is being captured
 * (its own graph then holds the work) or there is no cache. */
symm_status symm__cu_coll_ce_cached(cu_state *s, const symm__coll *c, char *const *base,
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

/*
 * CUDA backend: the shared state's helpers, at the bottom of the backend
 * (above the driver's entry points, cuda_driver.c): errors the GPU-side
 * waits leave in the pinned error word, kernel launches, the blocking waits
 * on the internal stream and the teams' lanes, and the lookup of the
 * embedded kernels and of size settings. Every other C file of the backend
 * calls these; they call none of them (cuda.c's opening comment maps the
 * files).
 */
#include "cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Errors, launches, blocking waits                                          */
/* ------------------------------------------------------------------------ */

/* A GPU-side wait that gave up set the pinned error word: record it on the
 * context (symm_ctx_async_error) and clear the word (CU_ERR_TIMEOUT, which
 * also marks the teams out of step, or CU_ERR_WAIT_TIMEOUT), or keep it
 * (CU_ERR_PEER_FAILED: the context stays unusable). Returns the word. */
int symm__cu_take_err_word(cu_state *s) {
    int w = *(volatile int *)s->err_word;
    if (!w) return 0;
    if (w == CU_ERR_PEER_FAILED) {
        if (!atomic_exchange(&s->failed_noted, true))
            symm__async_record(s->ctx, SYMM_ERR_PEER_FAILED, CU_PEER_FAILED_MSG);
        return w;
    }
    const int seen = w;
    __atomic_compare_exchange_n(s->err_word, &w, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    if (seen == CU_ERR_WAIT_TIMEOUT) {
        symm__async_record(s->ctx, SYMM_ERR_TIMEOUT, CU_WAIT_GAVE_UP_MSG,
                           (unsigned long long)(s->timeout_ns / 1000000u));
        return seen;
    }
    atomic_store(&s->out_of_step, true);
    symm__async_record(s->ctx, SYMM_ERR_TIMEOUT, CU_GAVE_UP_MSG,
                       (unsigned long long)(s->timeout_ns / 1000000u));
    return CU_ERR_TIMEOUT;
}

/* Blocking calls also report it as their own failure. */
symm_status symm__cu_check_err_word(cu_state *s) {
    int w = symm__cu_take_err_word(s);
    if (!w) return SYMM_SUCCESS;
    if (w == CU_ERR_PEER_FAILED) return symm__err(SYMM_ERR_PEER_FAILED, CU_PEER_FAILED_MSG);
    const unsigned long long ms = (unsigned long long)(s->timeout_ns / 1000000u);
    if (w == CU_ERR_WAIT_TIMEOUT) return symm__err(SYMM_ERR_TIMEOUT, CU_WAIT_GAVE_UP_MSG, ms);
    return symm__err(SYMM_ERR_TIMEOUT, CU_GAVE_UP_MSG, ms);
}

symm_status symm__cu_teams_ok(cu_state *s) {
    if (s->err_word) (void)symm__cu_take_err_word(s); /* a give-up not yet seen by the host */
    if (!atomic_load_explicit(&s->out_of_step, memory_order_relaxed)) return SYMM_SUCCESS;
    return symm__err(SYMM_ERR_TIMEOUT, CU_OUT_OF_STEP_MSG,
                     (unsigned long long)(s->timeout_ns / 1000000u));
}

symm_status symm__cu_unreachable(const symm__ctx *ctx, int32_t pe) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED,
                     "PE %d is not load/store reachable from PE %d (no P2P path between their "
                     "GPUs, or another host); remote transports are not available yet",
                     (int)pe, (int)ctx->my_pe);
}

void symm__cu_launch_config(CUlaunchConfig *c, CUlaunchAttribute *attr, unsigned gx,
                            unsigned gy, unsigned bx, unsigned smem, CUstream cs) {
    memset(c, 0, sizeof *c);
    c->gridDimX = gx;
    c->gridDimY = gy;
    c->gridDimZ = 1;
    c->blockDimX = bx;
    c->blockDimY = 1;
    c->blockDimZ = 1;
    c->sharedMemBytes = smem;
    c->hStream = cs;
    c->attrs = attr;
    c->numAttrs = 1;
}

/* Launch one of our kernels (every one starts with symm__k_enter, so PDL is
 * always safe). A PDL launch the driver refuses is retried plainly; if that
 * works, PDL stays off for this context. */
symm_status symm__cu_launch_smem(cu_state *s, CUfunction f, const char *name, unsigned gx,
                                 unsigned gy, unsigned bx, unsigned smem, CUstream cs,
                                 void **args) {
    const bool pdl = atomic_load_explicit(&s->pdl, memory_order_relaxed);
    if (pdl) {
        CUlaunchAttribute a;
        memset(&a, 0, sizeof a);
        a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        a.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig c;
        symm__cu_launch_config(&c, &a, gx, gy, bx, smem, cs);
        if (symm__cu.LaunchKernelEx(&c, f, args, NULL) == CUDA_SUCCESS) return SYMM_SUCCESS;
    }
    CUresult r = symm__cu.LaunchKernel(f, gx, gy, 1, bx, 1, 1, smem, cs, args, NULL);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, name);
    if (pdl && atomic_exchange(&s->pdl, false)) /* refused with PDL, fine without */
        SYMM_WARN(SYMM_LOG_BACKEND, "cuda: the driver refused a PDL launch of %s; kernels launch "
                  "without programmatic dependent launch from now on", name);
    return SYMM_SUCCESS;
}
symm_status symm__cu_launch(cu_state *s, CUfunction f, const char *name, unsigned gx, unsigned gy,
                            unsigned bx, CUstream cs, void **args) {
    return symm__cu_launch_smem(s, f, name, gx, gy, bx, 0, cs, args);
}

/* Wait for cs (the internal stream or a lane's), polling the job's health
 * (once per poll interval; symm__boot_check): when a PE died, the waiting
 * kernels are told to give up (cuda_peer_failed). With word, the wait ends
 * as soon as *word is want (the last kernel stores it when it is done with
 * what the host reads), and the stream is queried only every 16th look. */
static symm_status finish_on(cu_state *s, CUstream cs, const uint64_t *word, uint64_t want,
                             const char *what) {
    CUresult r = CUDA_ERROR_NOT_READY;
    uint64_t spins = 0, t0 = 0, note_at = 0;
    for (;; spins++) {
        if (word && __atomic_load_n(word, __ATOMIC_ACQUIRE) == want) return SYMM_SUCCESS;
        if (!word || (spins & 15) == 15) {
            r = symm__cu.StreamQuery(cs);
            if (r != CUDA_ERROR_NOT_READY) break;
        }
        if (s->ctx && symm__check_failed(s->ctx) != SYMM_SUCCESS) {
            r = symm__cu.StreamSynchronize(cs); /* the kernels end within 1024 spins */
            break;
        }
        if ((spins & 1023) == 1023 && symm__log_on(SYMM_LOG_INFO, SYMM_LOG_WAIT)) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
            if (!t0) {
                t0 = t;
                note_at = t + 1000000000ull;
            } else if (t >= note_at) { /* 1 s, then every 10 s */
                note_at = t + 10000000000ull;
                SYMM_INFO(SYMM_LOG_WAIT, "cuda: still waiting after %.1f s for %s of GPU %d",
                          (double)(t - t0) / 1e9, what, s->ordinal);
            }
        }
    }
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuStreamSynchronize");
    if (word && __atomic_load_n(word, __ATOMIC_ACQUIRE) != want)
        return symm__err(SYMM_ERR_INTERNAL, "cuda: %s ended without its done word", what);
    return SYMM_SUCCESS;
}

/* NULL stream = blocking: the work went to the internal stream; wait for it. */
symm_status symm__cu_finish(cu_state *s, void *stream) {
    if (stream) return SYMM_SUCCESS;
    /* what was posted before the wait is complete after it; later posts are
     * not (another thread's), so done only moves up to what this wait saw */
    uint64_t seen = atomic_load_explicit(&s->nbi_posted, memory_order_acquire);
    SYMM_TRY(finish_on(s, s->s_int, NULL, 0, "the internal stream (a blocking copy or atomic)"));
    uint64_t done = atomic_load_explicit(&s->nbi_done, memory_order_relaxed);
    while (done < seen && !atomic_compare_exchange_weak_explicit(&s->nbi_done, &done, seen,
                                                                 memory_order_release,
                                                                 memory_order_relaxed)) {
    }
    return symm__cu_check_err_word(s);
}

symm_status symm__cu_lane_finish(cu_state *s, const cu_lane *lane, const uint64_t *word,
                                 uint64_t want) {
    SYMM_TRY(finish_on(s, lane->stream, word, want,
                       "a team's stream (a blocking barrier or collective waiting on peers)"));
    return symm__cu_check_err_word(s);
}

void symm__cu_lane_free(cu_lane *l) {
    if (!l) return;
    if (l->stream) symm__cu.StreamDestroy(l->stream);
    if (l->nbi_ev) symm__cu.EventDestroy(l->nbi_ev);
    free(l);
}

/* A lane is made under the lock by calls that do not synchronize the device
 * (its pinned words were allocated at setup: cuMemHostAlloc may wait for the
 * device, and other threads' team kernels may be waiting on peers then). */
symm_status symm__cu_lane(cu_state *s, const symm__team *team, cu_lane **lane) {
    if (team->slot < 0 || team->slot >= SYMM__MAX_TEAMS)
        return symm__err(SYMM_ERR_INTERNAL, "cuda: team slot %d out of range", (int)team->slot);
    cu_lane *l = atomic_load_explicit(&s->lanes[team->slot], memory_order_acquire);
    if (!l) {
        pthread_mutex_lock(&s->lane_lock);
        l = atomic_load_explicit(&s->lanes[team->slot], memory_order_relaxed);
        symm_status st = SYMM_SUCCESS;
        if (!l) {
            cu_lane *nl = calloc(1, sizeof *nl);
            CUresult r = CUDA_SUCCESS;
            if (!nl) {
                st = symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
            } else if ((r = symm__cu.StreamCreate(&nl->stream, CU_STREAM_NON_BLOCKING)) !=
                           CUDA_SUCCESS ||
                       (r = symm__cu.EventCreate(&nl->nbi_ev, CU_EVENT_DISABLE_TIMING)) !=
                           CUDA_SUCCESS) {
                st = symm__cu_fail(r, "cuStreamCreate / cuEventCreate (a team's stream)");
            } else {
                nl->pinned = symm__cu_slot_words(s, team->slot);
                atomic_store_explicit(&s->lanes[team->slot], nl, memory_order_release);
                l = nl;
            }
            if (st) symm__cu_lane_free(nl);
        }
        pthread_mutex_unlock(&s->lane_lock);
        SYMM_TRY(st);
    }
    /* This PE's nbi puts and gets that no quiet waited for yet went to the
     * internal stream: the team's work follows them, as when it ran there
     * (gpu_coll's nbi case). The event is the lane's, used by its one caller. */
    if (cu_nbi_outstanding(s)) {
        CUresult r = symm__cu.EventRecord(l->nbi_ev, s->s_int);
        if (r == CUDA_SUCCESS) r = symm__cu.StreamWaitEvent(l->stream, l->nbi_ev, 0);
        if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuEventRecord / cuStreamWaitEvent");
    }
    *lane = l;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Kernels and settings                                                      */
/* ------------------------------------------------------------------------ */

/* Kernel name from the first module that has it; CUDA_ERROR_NOT_FOUND when
 * none does, the first other error of a module as it is. */
CUresult symm__cu_module_fn(cu_state *s, CUfunction *f, const char *name) {
    CUresult r = CUDA_ERROR_NOT_FOUND;
    for (int i = 0; i < SYMM__CUDA_FATBINS_N && r == CUDA_ERROR_NOT_FOUND; i++)
        r = symm__cu.ModuleGetFunction(f, s->mod[i], name);
    return r;
}

symm_status symm__cu_get_fn(cu_state *s, CUfunction *f, const char *name) {
    CUresult r = symm__cu_module_fn(s, f, name);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, name);
    /* load it now: loading lazily inside a stream capture would be slower */
    if (symm__cu.FuncLoad) symm__cu.FuncLoad(*f);
    return SYMM_SUCCESS;
}

symm_status symm__cu_env_size(const char *name, uint64_t dflt, uint64_t *v) {
    const char *e = getenv(name);
    *v = dflt;
    if (e && *e && !symm__parse_size(e, v))
        return symm__err(SYMM_ERR_INVALID_ARG, "%s=%s is not a size", name, e);
    return SYMM_SUCCESS;
}

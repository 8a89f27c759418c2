/*
 * CUDA backend: the symmetric heap in GPU memory, data movement by copy
 * engines and kernels, stream-ordered operations and collectives.
 *
 * Heap. Each PE reserves heap span (cap rounded to the allocation
 * granularity) of virtual address space for its own heap and one for each
 * load/store-reachable PE of its host. Growth creates one physical chunk per
 * PE (cuMemCreate, POSIX fd handle), maps it into the owner's range, exports
 * it as a file descriptor and passes it to the local PEs (symm__boot_share_fd);
 * each imports its peers' chunks and maps them at the same offset of their
 * ranges. So peer_base[pe] + off is pe's byte off, for every reachable pe, and
 * addresses never move when the heap grows.
 *
 * Streams. Blocking and nbi host operations run on one internal non-blocking
 * stream (nbi puts complete at quiet, which synchronises it). Stream forms
 * run on the caller's stream: puts from GPU memory of CU_COPY_KERNEL_MIN ..
 * CU_COPY_KERNEL_MAX bytes are a copy kernel, other puts and all gets the
 * copy engine; signals, waits and barriers are kernels. Nothing in a stream
 * form synchronises with the host, so all of them can be captured into CUDA
 * graphs. A NULL stream passed to a hook means "blocking": internal stream,
 * then wait (the core maps the user's NULL stream to CU_STREAM_LEGACY before
 * calling).
 *
 * Launches. On sm_90 and later every kernel is launched with programmatic
 * stream serialization (PDL): it may be scheduled while the kernel before it
 * in the stream is still running, and begins with griddepcontrol.wait (see
 * symm__k_enter in kernel_barrier.cuh), so it still observes everything that
 * kernel did. That hides most of the launch latency between back-to-back
 * stream operations (stream barrier 4.5 -> 3.7 us on 2 x H200 from PDL alone;
 * docs/GPU-RESULTS.md) and costs less host time per launch. SYMM_CUDA_PDL=0
 * turns it off.
 *
 * GPU-side waits (barriers, signal waits, collectives) give up after the
 * context's timeout and set a pinned error word that the next blocking call
 * reports as SYMM_ERR_TIMEOUT; after a team wait gave up, team operations
 * fail (symm__cu_teams_ok: the teams may be out of step across PEs). When
 * the host learns that a PE died
 * (symm__mark_failed -> cuda_peer_failed) it sets the word to CU_ERR_PEER_FAILED;
 * every waiting kernel of the context then gives up within 1024 spins and
 * blocking calls report SYMM_ERR_PEER_FAILED. Blocking calls poll their
 * stream and the job's health instead of sleeping in cuStreamSynchronize, so
 * a kernel stuck on a dead peer cannot hold them.
 *
 * This file: errors and launches, probe, setup and teardown, the heap, the
 * device context, the transports' hooks and the ops table; RMA and the
 * stream-ordered operations are in cuda_rma.c, collectives in cuda_coll.c
 * (cuda_internal.h: what they share).
 */
#include "cuda_internal.h"

/* ------------------------------------------------------------------------ */
/* Errors, launches, blocking waits                                          */
/* ------------------------------------------------------------------------ */

/* A GPU-side wait that gave up set the pinned error word: record it on the
 * context (symm_ctx_async_error) and clear the word (CU_ERR_TIMEOUT, which
 * also marks the teams out of step, or CU_ERR_WAIT_TIMEOUT), or keep it
 * (CU_ERR_PEER_FAILED: the context stays unusable). Returns the word. */
static int take_err_word(cu_state *s) {
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
static symm_status check_err_word(cu_state *s) {
    int w = take_err_word(s);
    if (!w) return SYMM_SUCCESS;
    if (w == CU_ERR_PEER_FAILED) return symm__err(SYMM_ERR_PEER_FAILED, CU_PEER_FAILED_MSG);
    const unsigned long long ms = (unsigned long long)(s->timeout_ns / 1000000u);
    if (w == CU_ERR_WAIT_TIMEOUT) return symm__err(SYMM_ERR_TIMEOUT, CU_WAIT_GAVE_UP_MSG, ms);
    return symm__err(SYMM_ERR_TIMEOUT, CU_GAVE_UP_MSG, ms);
}

symm_status symm__cu_teams_ok(cu_state *s) {
    if (s->err_word) (void)take_err_word(s); /* a give-up not yet seen by the host */
    if (!atomic_load_explicit(&s->out_of_step, memory_order_relaxed)) return SYMM_SUCCESS;
    return symm__err(SYMM_ERR_TIMEOUT, CU_OUT_OF_STEP_MSG,
                     (unsigned long long)(s->timeout_ns / 1000000u));
}

static void cuda_async_poll(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    /* Also look for a dead PE (one poll per interval): that ends the GPU
     * waits of this context (cuda_peer_failed), so an application that only
     * synchronizes its streams learns of it here. */
    (void)symm__check_failed(ctx);
    if (s && s->err_word) (void)take_err_word(s);
    if (s) symm__cu_a2av_poll(s);
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
                               unsigned gy, unsigned bx, unsigned smem, CUstream cs, void **args) {
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
    SYMM_TRY(finish_on(s, s->s_int, NULL, 0, "the internal stream (a blocking copy or atomic)"));
    atomic_store(&s->nbi_pending, false);
    return check_err_word(s);
}

symm_status symm__cu_lane_finish(cu_state *s, const cu_lane *lane, const uint64_t *word,
                                 uint64_t want) {
    SYMM_TRY(finish_on(s, lane->stream, word, want,
                       "a team's stream (a blocking barrier or collective waiting on peers)"));
    return check_err_word(s);
}

static void lane_free(cu_lane *l) {
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
            if (st) lane_free(nl);
        }
        pthread_mutex_unlock(&s->lane_lock);
        SYMM_TRY(st);
    }
    /* This PE's nbi puts and gets that no quiet waited for yet went to the
     * internal stream: the team's work follows them, as when it ran there
     * (gpu_coll's nbi case). The event is the lane's, used by its one caller. */
    if (atomic_load(&s->nbi_pending)) {
        CUresult r = symm__cu.EventRecord(l->nbi_ev, s->s_int);
        if (r == CUDA_SUCCESS) r = symm__cu.StreamWaitEvent(l->stream, l->nbi_ev, 0);
        if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuEventRecord / cuStreamWaitEvent");
    }
    *lane = l;
    return SYMM_SUCCESS;
}

static void cuda_peer_failed(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (s && s->err_word) __atomic_store_n(s->err_word, CU_ERR_PEER_FAILED, __ATOMIC_SEQ_CST);
}
/* ------------------------------------------------------------------------ */
/* Probe, setup and teardown                                                 */
/* ------------------------------------------------------------------------ */

static symm_status cuda_probe(void) {
    SYMM_TRY(symm__cu_load());
    int n = 0;
    SYMM__CU(DeviceGetCount(&n));
    if (n < 1) return symm__err(SYMM_ERR_NO_DEVICE, "the CUDA driver sees no GPU");
    return SYMM_SUCCESS;
}

static void map_release(cu_state *s, const cu_map *m) {
    for (int32_t li = 0; li < s->local_n; li++) {
        if (!m->h[li]) continue;
        symm__cu.MemUnmap(s->va[li] + m->off, m->size);
        symm__cu.MemRelease(m->h[li]);
    }
}

/* Everything but the heap mappings (see cuda_heap_fini). */
static void state_free(cu_state *s) {
    if (!s) return;
    if (s->cuctx) symm__cu.CtxSetCurrent(s->cuctx);
    symm__cu_ce_graphs_free(s); /* before the modules their kernels are in */
    if (s->s_int) symm__cu.StreamDestroy(s->s_int);
    if (s->ev_int) symm__cu.EventDestroy(s->ev_int);
    if (s->s_ce) symm__cu.StreamDestroy(s->s_ce);
    if (s->s_ce_sig) symm__cu.StreamDestroy(s->s_ce_sig);
    for (size_t i = 0; i < sizeof s->ev_ce_copy / sizeof s->ev_ce_copy[0]; i++)
        if (s->ev_ce_copy[i]) symm__cu.EventDestroy(s->ev_ce_copy[i]);
    if (s->ev_ce_fork) symm__cu.EventDestroy(s->ev_ce_fork);
    if (s->ev_ce_join) symm__cu.EventDestroy(s->ev_ce_join);
    if (s->pinned) symm__cu.MemFreeHost(s->pinned);
    for (int i = 0; i < SYMM__MAX_TEAMS; i++) lane_free(atomic_load(&s->lanes[i]));
    if (s->lane_pinned) symm__cu.MemFreeHost(s->lane_pinned);
    if (s->lane_lock_init) pthread_mutex_destroy(&s->lane_lock);
    for (int i = 0; i < SYMM__CUDA_FATBINS_N; i++)
        if (s->mod[i]) symm__cu.ModuleUnload(s->mod[i]); /* those loaded, if setup stopped */
    if (s->retained) symm__cu.DevicePrimaryCtxRelease(s->dev);
    if (s->amo_lock_init) pthread_mutex_destroy(&s->amo_lock);
    if (s->reg_lock_init) pthread_mutex_destroy(&s->reg_lock);
    free(s->local_pe);
    free(s->va);
    free(s->chunks);
    free(s->regs);
    free(s);
}

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

/* The PE-local part of init: device, context, kernels, streams. */
static symm_status setup_local(symm__ctx *ctx, cu_state *s) {
    SYMM_TRY(symm__cu_load());
    int count = 0;
    SYMM__CU(DeviceGetCount(&count));
    if (count < 1) return symm__err(SYMM_ERR_NO_DEVICE, "the CUDA driver sees no GPU");
    int ord = ctx->cfg.device >= 0 ? ctx->cfg.device : (ctx->local_pe >= 0 ? ctx->local_pe : 0) % count;
    if (ord >= count)
        return symm__err(SYMM_ERR_INVALID_ARG, "device %d requested, but only %d GPU(s) visible",
                         ord, count);
    s->ordinal = ord;
    ctx->cfg.device = ord; /* symm_ctx_query reports the device in use */
    SYMM__CU(DeviceGet(&s->dev, ord));
    int vmm = 0, fdh = 0, rdma = 0, memops = 0, cc_major = 0;
    SYMM__CU(DeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                s->dev));
    SYMM__CU(DeviceGetAttribute(&fdh, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                s->dev));
    SYMM__CU(DeviceGetAttribute(&s->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s->dev));
    if (symm__cu.DeviceGetAttribute(&s->smem_optin,
                                    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                    s->dev) != CUDA_SUCCESS)
        s->smem_optin = 0;
    symm__cu.DeviceGetAttribute(&rdma, CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED,
                                s->dev);
    symm__cu.DeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, s->dev);
    symm__cu.DeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s->dev);
    if (!vmm || !fdh)
        return symm__err(SYMM_ERR_NO_DEVICE,
                         "GPU %d lacks virtual memory management with POSIX fd handles "
                         "(VMM %d, fd handles %d)", ord, vmm, fdh);
    SYMM__CU(DevicePrimaryCtxRetain(&s->cuctx, s->dev));
    s->retained = true;
    SYMM__CU(CtxSetCurrent(s->cuctx));

    memset(&s->prop, 0, sizeof s->prop);
    s->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    s->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    s->prop.location.id = s->dev;
    s->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    s->prop.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
    size_t g = 0;
    SYMM__CU(MemGetAllocationGranularity(&g, &s->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    s->gran = g ? g : (2u << 20);

    for (int i = 0; i < SYMM__CUDA_FATBINS_N; i++) {
        CUresult r = symm__cu.ModuleLoadData(&s->mod[i], symm__cuda_fatbins[i].data);
        if (r != CUDA_SUCCESS) {
            char what[96];
            snprintf(what, sizeof what, "cuModuleLoadData(%s)", symm__cuda_fatbins[i].name);
            return symm__cu_fail(r, what);
        }
    }
    SYMM_TRY(symm__cu_get_fn(s, &s->f_copy, "symm_k_copy"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_store, "symm_k_store"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_signal, "symm_k_signal"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_wait, "symm_k_wait"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_amo, "symm_k_amo"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_barrier2, "symm_k_barrier_2"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_barrier8, "symm_k_barrier_8"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_barrier64, "symm_k_barrier_64"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_barrier_wide, "symm_k_barrier_wide"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_gather, "symm_k_gather"));
    SYMM_TRY(symm__cu_get_fn(s, &s->f_agree, "symm_k_agree"));
    SYMM_TRY(symm__cu_a2av_setup(s));

    SYMM__CU(StreamCreate(&s->s_int, CU_STREAM_NON_BLOCKING));
    SYMM__CU(EventCreate(&s->ev_int, CU_EVENT_DISABLE_TIMING));
    void *pinned = NULL;
    SYMM__CU(MemHostAlloc(&pinned, CU_PINNED_BYTES,
                          CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    s->pinned = pinned;
    memset(pinned, 0, CU_PINNED_BYTES);
    s->err_word = (int *)&s->pinned[1];
    void *lp = NULL; /* every team slot's lane words (symm__cu_lane), at once */
    SYMM__CU(MemHostAlloc(&lp, (size_t)SYMM__MAX_TEAMS * CU_LANE_PINNED_BYTES,
                          CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    s->lane_pinned = lp;
    memset(lp, 0, (size_t)SYMM__MAX_TEAMS * CU_LANE_PINNED_BYTES);
    if (pthread_mutex_init(&s->amo_lock, NULL) != 0)
        return symm__err(SYMM_ERR_SYSTEM, "pthread_mutex_init failed");
    s->amo_lock_init = true;
    if (pthread_mutex_init(&s->reg_lock, NULL) != 0)
        return symm__err(SYMM_ERR_SYSTEM, "pthread_mutex_init failed");
    s->reg_lock_init = true;
    if (pthread_mutex_init(&s->lane_lock, NULL) != 0)
        return symm__err(SYMM_ERR_SYSTEM, "pthread_mutex_init failed");
    s->lane_lock_init = true;

    atomic_store(&s->memops, memops && symm__cu.StreamWriteValue64 && symm__cu.StreamWaitValue64);
    s->timeout_ns = (uint64_t)(ctx->cfg.timeout_ms ? ctx->cfg.timeout_ms : SYMM__DEFAULT_TIMEOUT_MS) *
                    1000000u;
    const char *mo = getenv("SYMM_CUDA_STREAM_MEMOPS");
    s->stream_memops = mo && strcmp(mo, "1") == 0 && atomic_load(&s->memops);
    if (mo && strcmp(mo, "1") == 0 && !s->stream_memops)
        SYMM_WARN(SYMM_LOG_BACKEND, "cuda: SYMM_CUDA_STREAM_MEMOPS=1, but GPU %d has no 64-bit "
                  "stream memory operations; stream waits use a kernel", ord);
    const char *pd = getenv("SYMM_CUDA_PDL");
    atomic_store(&s->pdl, cc_major >= 9 && symm__cu.LaunchKernelEx && !(pd && strcmp(pd, "0") == 0));
    /* without PDL a kernel launch costs more host time than cuMemcpyAsync:
     * copy engine only, unless asked */
    SYMM_TRY(symm__cu_env_size("SYMM_CUDA_COPY_KERNEL_MIN", CU_COPY_KERNEL_MIN,
                               &s->copy_kernel_min));
    SYMM_TRY(symm__cu_env_size("SYMM_CUDA_COPY_KERNEL_MAX",
                               atomic_load(&s->pdl) ? CU_COPY_KERNEL_MAX : 0,
                      &s->copy_kernel_max));
    return SYMM_SUCCESS;
}

/* Exchanged by every PE at init. */
typedef struct cu_peer_info {
    int32_t status; /* SYMM_SUCCESS or why this PE has no usable GPU */
    uint32_t pad;
    uint64_t gran;
    uint8_t uuid[16];
} cu_peer_info;

/* Is the GPU with this UUID load/store reachable from ours? */
static bool peer_reachable(const cu_state *s, const uint8_t uuid[16]) {
    int count = 0;
    if (symm__cu.DeviceGetCount(&count) != CUDA_SUCCESS) return false;
    for (int i = 0; i < count; i++) {
        CUdevice d;
        CUuuid u;
        if (symm__cu.DeviceGet(&d, i) != CUDA_SUCCESS) continue;
        if (symm__cu.DeviceGetUuid(&u, d) != CUDA_SUCCESS) continue;
        if (memcmp(u.bytes, uuid, 16) != 0) continue;
        if (d == s->dev) return true;
        int can = 0;
        return symm__cu.DeviceCanAccessPeer(&can, s->dev, d) == CUDA_SUCCESS && can;
    }
    return false; /* not visible to this process */
}

static void cuda_heap_fini(symm__ctx *ctx);

static symm_status cuda_heap_init(symm__ctx *ctx) {
    cu_state *s = calloc(1, sizeof *s);
    cu_peer_info *all = calloc((size_t)ctx->n_pes, sizeof *all);
    symm_status st;
    if (!s || !all) {
        free(s);
        free(all);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    }
    s->ctx = ctx;
    s->local_n = ctx->local_n_pes > 0 ? ctx->local_n_pes : 1;
    s->local_me = ctx->local_pe >= 0 ? ctx->local_pe : 0;
    s->local_pe = calloc((size_t)s->local_n, sizeof *s->local_pe);
    s->va = calloc((size_t)s->local_n, sizeof *s->va);
    if (!s->local_pe || !s->va) {
        state_free(s);
        free(all);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    }

    /* Local setup first; every PE then learns every other PE's outcome, so a
     * PE without a GPU fails the job instead of hanging it. */
    cu_peer_info mine;
    memset(&mine, 0, sizeof mine);
    symm_status local = setup_local(ctx, s);
    char local_msg[512] = "";
    if (local != SYMM_SUCCESS) {
        snprintf(local_msg, sizeof local_msg, "%s", symm__last_error());
    } else {
        CUuuid u;
        CUresult r = symm__cu.DeviceGetUuid(&u, s->dev);
        if (r != CUDA_SUCCESS) {
            local = symm__cu_fail(r, "cuDeviceGetUuid");
            snprintf(local_msg, sizeof local_msg, "%s", symm__last_error());
        } else {
            memcpy(mine.uuid, u.bytes, 16);
        }
    }
    mine.status = local;
    mine.gran = s->gran;
    st = symm__boot_allgather(ctx->boot, &mine, all, sizeof mine);
    if (st != SYMM_SUCCESS) goto fail;
    if (local != SYMM_SUCCESS) {
        st = symm__err(local, "%s", local_msg);
        goto fail;
    }
    s->gran = 0;
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (all[pe].status != SYMM_SUCCESS) {
            st = symm__err(all[pe].status, "PE %d could not set up its GPU (%s; see its own "
                           "error message)", (int)pe, symm__status_name(all[pe].status));
            goto fail;
        }
        s->gran = max_u64(s->gran, all[pe].gran);
    }
    s->span = align_up(ctx->heap_cap, s->gran);
    s->reg_floor = s->span;
    s->heap_live = true; /* from here on cuda_heap_fini undoes what exists */

    /* local peers, their reachability and the reservations */
    const bool no_p2p = getenv("SYMM_CUDA_DISABLE_P2P") && strcmp(getenv("SYMM_CUDA_DISABLE_P2P"), "1") == 0;
    for (int32_t li = 0; li < s->local_n; li++) s->local_pe[li] = -1;
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        int32_t li = ctx->boot_info.local_index ? ctx->boot_info.local_index[pe]
                                                : (pe == ctx->my_pe ? 0 : -1);
        if (li >= 0 && li < s->local_n) s->local_pe[li] = pe;
    }
    s->local_pe[s->local_me] = ctx->my_pe;
    if (!ctx->peer_base) {
        ctx->peer_base = calloc((size_t)ctx->n_pes, sizeof *ctx->peer_base);
        if (!ctx->peer_base) {
            st = symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
            goto fail;
        }
        s->owns_peer_base = true;
    }
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) ctx->peer_base[pe] = NULL;
    for (int32_t li = 0; li < s->local_n; li++) {
        int32_t pe = s->local_pe[li];
        if (pe < 0) continue;
        if (li != s->local_me && (no_p2p || !peer_reachable(s, all[pe].uuid))) continue;
        CUresult r = symm__cu.MemAddressReserve(&s->va[li], s->span + CU_SCRATCH_RESERVE, s->gran, 0, 0);
        if (r != CUDA_SUCCESS) {
            s->va[li] = 0;
            st = symm__cu_fail(r, "cuMemAddressReserve(heap span)");
            goto fail;
        }
        ctx->peer_base[pe] = (uint8_t *)(uintptr_t)s->va[li];
    }
    ctx->heap_base = ctx->peer_base[ctx->my_pe];
    /* The device copy of the peer table: device contexts of any job size and
     * the barrier kernel of large teams read it. Reservations never move. */
    {
        size_t bytes = (size_t)ctx->n_pes * sizeof(void *);
        CUresult r = symm__cu.MemAlloc(&s->peer_table, bytes);
        if (r != CUDA_SUCCESS) {
            s->peer_table = 0;
            st = symm__cu_fail(r, "cuMemAlloc(peer table)");
            goto fail;
        }
        r = symm__cu.Memcpy(s->peer_table, (CUdeviceptr)(uintptr_t)ctx->peer_base, bytes);
        if (r != CUDA_SUCCESS) {
            st = symm__cu_fail(r, "cuMemcpy(peer table)");
            goto fail;
        }
    }
    /* LL scratch (collective: every PE gets here) */
    st = symm__cu_coll_setup(ctx, s);
    if (st != SYMM_SUCCESS) goto fail;
    ctx->backend = s;
    free(all);
    return SYMM_SUCCESS;

fail:
    free(all);
    ctx->backend = s;
    cuda_heap_fini(ctx);
    state_free(s);
    ctx->backend = NULL;
    return st;
}

static void cuda_heap_fini(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (!s || !s->heap_live) return;
    s->heap_live = false;
    if (s->cuctx) {
        symm__cu.CtxSetCurrent(s->cuctx);
        if (s->s_int) symm__cu.StreamSynchronize(s->s_int);
        symm__cu.CtxSynchronize(); /* user streams may still touch the heap */
    }
    for (size_t i = s->n_regs; i-- > 0;) {
        map_release(s, &s->regs[i]);
        free(s->regs[i].h);
    }
    s->n_regs = 0;
    for (size_t i = s->n_chunks; i-- > 0;) {
        map_release(s, &s->chunks[i]);
        free(s->chunks[i].h);
    }
    s->n_chunks = 0;
    s->backed = 0;
    for (int32_t li = 0; li < s->local_n; li++) {
        if (s->va[li]) symm__cu.MemAddressFree(s->va[li], s->span + CU_SCRATCH_RESERVE);
        s->va[li] = 0;
    }
    if (s->peer_table) symm__cu.MemFree(s->peer_table);
    s->peer_table = 0;
    if (ctx->peer_base) {
        for (int32_t pe = 0; pe < ctx->n_pes; pe++) ctx->peer_base[pe] = NULL;
        if (s->owns_peer_base) {
            free(ctx->peer_base);
            ctx->peer_base = NULL;
            s->owns_peer_base = false;
        }
    }
    ctx->heap_base = NULL;
}

static void cuda_fini(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (!s) return;
    cuda_heap_fini(ctx); /* in case the core did not: idempotent */
    state_free(s);
    ctx->backend = NULL;
}

/* ------------------------------------------------------------------------ */
/* Heap growth and registration                                              */
/* ------------------------------------------------------------------------ */

static symm_status map_at(cu_state *s, CUdeviceptr va, uint64_t size,
                          CUmemGenericAllocationHandle h) {
    SYMM__CU(MemMap(va, size, 0, h, 0));
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = s->dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CUresult r = symm__cu.MemSetAccess(va, size, &acc, 1);
    if (r != CUDA_SUCCESS) {
        symm__cu.MemUnmap(va, size);
        return symm__cu_fail(r, "cuMemSetAccess");
    }
    return SYMM_SUCCESS;
}

static symm_status push_map(cu_map **arr, size_t *n, size_t *cap, const cu_map *m) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        cu_map *na = realloc(*arr, nc * sizeof *na);
        if (!na) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = *m;
    return SYMM_SUCCESS;
}

/* The collective part of growth and registration: this PE's handle h (0 when
 * it failed locally, own mapping already made) is exported, exchanged with
 * the local PEs and every reachable peer's is mapped at off of its range.
 * m->h[local_me] must already be set (or 0). Always takes part in the
 * exchange. On failure everything in m is unmapped and released. */
static symm_status share_and_map(symm__ctx *ctx, cu_state *s, cu_map *m, symm_status st) {
    int fd = -1;
    char msg[512] = "";
    if (st == SYMM_SUCCESS) {
        CUresult r = symm__cu.MemExportToShareableHandle(&fd, m->h[s->local_me],
                                                         CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (r != CUDA_SUCCESS) {
            fd = -1;
            st = symm__cu_fail(r, "cuMemExportToShareableHandle(POSIX fd)");
        }
    }
    if (st != SYMM_SUCCESS) snprintf(msg, sizeof msg, "%s", symm__last_error());
    /* Every PE learns every PE's local outcome first: a PE that failed does
     * not take part in the descriptor exchange, and nobody waits for it. */
    int32_t mine = st, *all = calloc((size_t)ctx->n_pes, sizeof *all);
    int *fds = malloc((size_t)s->local_n * sizeof *fds);
    symm_status gst = SYMM_ERR_OUT_OF_MEMORY;
    if (all && fds) gst = symm__boot_allgather(ctx->boot, &mine, all, sizeof mine);
    else symm__err(gst, "cuda backend: out of host memory");
    if (gst != SYMM_SUCCESS) {
        free(all);
        free(fds);
        if (fd >= 0) close(fd);
        map_release(s, m);
        return gst;
    }
    for (int32_t pe = 0; pe < ctx->n_pes && st == SYMM_SUCCESS; pe++)
        if (all[pe] != SYMM_SUCCESS)
            st = symm__err(all[pe], "PE %d could not create or export its GPU memory (%s)",
                           (int)pe, symm__status_name(all[pe]));
    free(all);
    if (st != SYMM_SUCCESS) {
        if (msg[0]) symm__err(st, "%s", msg);
        free(fds);
        if (fd >= 0) close(fd);
        map_release(s, m);
        return st;
    }
    for (int32_t li = 0; li < s->local_n; li++) fds[li] = -1;
    symm_status sh = symm__boot_share_fd(ctx->boot, fd, fds);
    close(fd);
    if (sh != SYMM_SUCCESS) st = sh;
    for (int32_t li = 0; li < s->local_n; li++) {
        if (li == s->local_me) continue;
        if (st == SYMM_SUCCESS && s->va[li] && fds[li] < 0)
            st = symm__err(SYMM_ERR_PEER_FAILED, "PE %d could not share its GPU memory",
                           (int)s->local_pe[li]);
        if (st == SYMM_SUCCESS && s->va[li]) {
            CUmemGenericAllocationHandle h = 0;
            CUresult r = symm__cu.MemImportFromShareableHandle(
                &h, (void *)(uintptr_t)fds[li], CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
            if (r != CUDA_SUCCESS) {
                st = symm__cu_fail(r, "cuMemImportFromShareableHandle(peer fd)");
            } else {
                st = map_at(s, s->va[li] + m->off, m->size, h);
                if (st == SYMM_SUCCESS)
                    m->h[li] = h;
                else
                    symm__cu.MemRelease(h);
            }
        }
    }
    for (int32_t li = 0; li < s->local_n; li++)
        if (fds[li] >= 0) close(fds[li]);
    free(fds);
    if (st != SYMM_SUCCESS) {
        if (msg[0]) symm__err(st, "%s", msg);
        map_release(s, m);
    }
    return st;
}

/* Back [off, off + size) of every reachable heap reservation with new GPU
 * memory: made and zeroed here before any peer can see it, then shared with
 * the local peers and mapped at theirs (collective: st, this PE's outcome so
 * far, takes part in the exchange either way). Kept in s->chunks, so
 * heap_fini releases it. what names it in errors. */
symm_status symm__cu_map_new_chunk(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t size,
                                 const char *what, symm_status st) {
    cu_map m;
    m.off = off;
    m.size = size;
    m.h = calloc((size_t)s->local_n, sizeof *m.h);
    if (!m.h) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    if (st == SYMM_SUCCESS) {
        char call[128];
        CUmemGenericAllocationHandle h = 0;
        CUresult r = symm__cu.MemCreate(&h, size, &s->prop, 0);
        if (r != CUDA_SUCCESS) {
            snprintf(call, sizeof call, "cuMemCreate(%llu bytes of %s)", (unsigned long long)size,
                     what);
            st = symm__cu_fail(r, call);
        } else if ((st = map_at(s, s->va[s->local_me] + off, size, h)) != SYMM_SUCCESS) {
            symm__cu.MemRelease(h);
        } else {
            m.h[s->local_me] = h;
            r = symm__cu.MemsetD8Async(s->va[s->local_me] + off, 0, size, s->s_int);
            if (r == CUDA_SUCCESS) r = symm__cu.StreamSynchronize(s->s_int);
            if (r != CUDA_SUCCESS) {
                snprintf(call, sizeof call, "cuMemsetD8Async(%s)", what);
                st = symm__cu_fail(r, call);
            }
        }
    }
    st = share_and_map(ctx, s, &m, st); /* releases m on failure */
    if (st == SYMM_SUCCESS) {
        st = push_map(&s->chunks, &s->n_chunks, &s->cap_chunks, &m);
        if (st != SYMM_SUCCESS) map_release(s, &m);
    }
    if (st != SYMM_SUCCESS) free(m.h);
    return st;
}

static symm_status cuda_heap_grow(symm__ctx *ctx, uint64_t new_mapped) {
    cu_state *s = ctx->backend;
    uint64_t want = align_up(new_mapped, s->gran);
    if (want <= s->backed) {
        ctx->heap_mapped = new_mapped;
        return SYMM_SUCCESS;
    }
    if (want > s->reg_floor)
        return symm__err(SYMM_ERR_OUT_OF_MEMORY,
                         "heap cap reached: %llu bytes needed, %llu available below registered "
                         "memory (cap %llu)", (unsigned long long)want,
                         (unsigned long long)s->reg_floor, (unsigned long long)s->span);
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(symm__cu_map_new_chunk(ctx, s, s->backed, want - s->backed, "heap", SYMM_SUCCESS));
    s->backed = want;
    ctx->heap_mapped = new_mapped;
    return SYMM_SUCCESS;
}

static symm_status cuda_register(symm__ctx *ctx, void *ptr, uint64_t bytes, uint64_t off) {
    cu_state *s = ctx->backend;
    uint64_t size = align_up(bytes ? bytes : 1, s->gran);
    symm_status st = SYMM_SUCCESS;
    CUmemGenericAllocationHandle h = 0;
    cu_map m;
    m.off = off;
    m.size = size;
    m.h = calloc((size_t)s->local_n, sizeof *m.h);
    if (!m.h) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
    /* Local checks; a failure still takes part in the exchange below. */
    if ((st = cu_enter(s)) != SYMM_SUCCESS) {
    } else if (off % s->gran || off < s->backed || off + size > s->span) {
        st = symm__err(SYMM_ERR_INVALID_ARG,
                       "registration range [%llu, +%llu) must be %llu-aligned, above the backed "
                       "heap (%llu) and below the cap (%llu)", (unsigned long long)off,
                       (unsigned long long)size, (unsigned long long)s->gran,
                       (unsigned long long)s->backed, (unsigned long long)s->span);
    } else if ((uintptr_t)ptr % s->gran) {
        st = symm__err(SYMM_ERR_INVALID_ARG,
                       "symm_buf_register: ptr %p is not the start of a cuMemCreate mapping "
                       "(must be %llu-byte aligned)", ptr, (unsigned long long)s->gran);
    } else {
        CUresult r = symm__cu.MemRetainAllocationHandle(&h, ptr);
        if (r != CUDA_SUCCESS) {
            h = 0;
            symm__cu_fail(r, "cuMemRetainAllocationHandle");
            st = symm__err(SYMM_ERR_INVALID_ARG,
                           "symm_buf_register: %p is not memory mapped with cuMemMap (%s)", ptr,
                           symm__last_error());
        } else {
            CUmemAllocationProp prop;
            memset(&prop, 0, sizeof prop);
            CUdeviceptr base = 0;
            size_t range = 0;
            r = symm__cu.MemGetAllocationPropertiesFromHandle(&prop, h);
            if (r != CUDA_SUCCESS) {
                st = symm__cu_fail(r, "cuMemGetAllocationPropertiesFromHandle");
            } else if (!(prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
                       prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
                       prop.location.id != s->dev) {
                st = symm__err(SYMM_ERR_INVALID_ARG,
                               "symm_buf_register: the allocation must be device memory of GPU %d "
                               "created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR", s->ordinal);
            } else if (symm__cu.MemGetAddressRange(&base, &range, (CUdeviceptr)(uintptr_t)ptr) ==
                           CUDA_SUCCESS &&
                       (base != (CUdeviceptr)(uintptr_t)ptr || range < size)) {
                st = symm__err(SYMM_ERR_INVALID_ARG,
                               "symm_buf_register: %p must start its mapping and the mapping "
                               "must hold %llu bytes (it holds %zu from %p)", ptr,
                               (unsigned long long)size, range, (void *)(uintptr_t)base);
            } else {
                st = map_at(s, s->va[s->local_me] + off, size, h);
            }
            if (st == SYMM_SUCCESS) {
                m.h[s->local_me] = h;
            } else {
                symm__cu.MemRelease(h);
            }
        }
    }
    st = share_and_map(ctx, s, &m, st);
    if (st == SYMM_SUCCESS) {
        pthread_mutex_lock(&s->reg_lock);
        st = push_map(&s->regs, &s->n_regs, &s->cap_regs, &m);
        if (st == SYMM_SUCCESS && off < s->reg_floor) s->reg_floor = off;
        pthread_mutex_unlock(&s->reg_lock);
        if (st != SYMM_SUCCESS) map_release(s, &m);
    }
    if (st != SYMM_SUCCESS) free(m.h);
    return st;
}

static void cuda_unregister(symm__ctx *ctx, uint64_t off, uint64_t bytes) {
    cu_state *s = ctx->backend;
    if (!s) return;
    cu_enter(s);
    symm__cu.StreamSynchronize(s->s_int);
    for (int i = 0; i < SYMM__MAX_TEAMS; i++) { /* a team call that failed midway */
        const cu_lane *l = atomic_load(&s->lanes[i]);
        if (l) symm__cu.StreamSynchronize(l->stream);
    }
    pthread_mutex_lock(&s->reg_lock);
    for (size_t i = 0; i < s->n_regs; i++) {
        if (s->regs[i].off != off) continue;
        cu_map m = s->regs[i];
        s->regs[i] = s->regs[--s->n_regs];
        pthread_mutex_unlock(&s->reg_lock);
        map_release(s, &m);
        free(m.h);
        atomic_fetch_add(&s->heap_gen, 1); /* graphs that copied there are stale */
        return;
    }
    pthread_mutex_unlock(&s->reg_lock);
}

/* ------------------------------------------------------------------------ */
/* Device context                                                            */
/* ------------------------------------------------------------------------ */

static symm_status cuda_device_ctx(symm__ctx *ctx, symm_device_ctx *out) {
    memset(out, 0, sizeof *out);
    out->struct_size = (uint32_t)sizeof *out;
    out->my_pe = ctx->my_pe;
    out->n_pes = ctx->n_pes;
    out->team_slots = SYMM__MAX_TEAMS;
    out->heap_cap = ctx->heap_cap;
    out->heap_base = ctx->heap_base;
    out->slot_bytes = ctx->slot_bytes;
    out->peer_table = (void *const *)(uintptr_t)((cu_state *)ctx->backend)->peer_table;
    for (int32_t pe = 0; pe < ctx->n_pes && pe < SYMM_DEVICE_FAST_PES; pe++)
        out->peer_base[pe] = ctx->peer_base[pe];
    /* The pinned error word the runtime's own waiting kernels read (UVA: the
     * host address is the device address); cuda_peer_failed sets it to 2. */
    out->fail_word = (const int32_t *)((cu_state *)ctx->backend)->err_word;
    return SYMM_SUCCESS;
}

static void cuda_describe(symm__ctx *ctx, char *buf, size_t cap) {
    cu_state *s = ctx->backend;
    char name[128] = "?";
    int drv = 0, ccmaj = 0, ccmin = 0;
    symm__cu.DeviceGetName(name, (int)sizeof name, s->dev);
    symm__cu.DriverGetVersion(&drv);
    symm__cu.DeviceGetAttribute(&ccmaj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, s->dev);
    symm__cu.DeviceGetAttribute(&ccmin, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, s->dev);
    char peers[256] = "";
    size_t at = 0;
    for (int32_t pe = 0; pe < ctx->n_pes && at + 12 < sizeof peers; pe++)
        if (ctx->peer_base[pe] && pe != ctx->my_pe)
            at += (size_t)snprintf(peers + at, sizeof peers - at, "%s%d", at ? "," : "", pe);
    snprintf(buf, cap,
             "device %d \"%s\" sm_%d%d, %d SMs; CUDA driver API %d.%d; PDL %s; copy kernel "
             "for %llu..%llu bytes; stream memops %s (waits: %s); load/store peers: %s; "
             "heap granularity %llu",
             s->ordinal, name,
             ccmaj, ccmin, s->sms, drv / 1000, drv % 1000 / 10,
             atomic_load(&s->pdl) ? "on" : "off", (unsigned long long)s->copy_kernel_min,
             (unsigned long long)s->copy_kernel_max, atomic_load(&s->memops) ? "usable" : "off",
             s->stream_memops ? "memops" : "kernel", at ? peers : "none",
             (unsigned long long)s->gran);
}

/* ------------------------------------------------------------------------ */
/* For transports: dma-buf export, device buffers, staging copies            */
/* ------------------------------------------------------------------------ */

/* A dma-buf of [off, off + len) of this PE's heap for ibv_reg_dmabuf_mr, or
 * -1 (logged) when the driver or the GPU cannot export one; the transport
 * then tries the pointer itself (nvidia-peermem) or refuses with a reason. */
static int cuda_dmabuf_fd(symm__ctx *ctx, uint64_t off, uint64_t len) {
    cu_state *s = ctx->backend;
    if (!s || !ctx->heap_base) return -1;
    if (!symm__cu.MemGetHandleForAddressRange) {
        SYMM_INFO(SYMM_LOG_BACKEND, "cuda: the driver has no cuMemGetHandleForAddressRange: "
                  "no dma-buf for the transport");
        return -1;
    }
    char saved[512];
    snprintf(saved, sizeof saved, "%s", symm__last_error());
    int ok = 0, fd = -1;
    CUresult r = CUDA_SUCCESS;
    if (cu_enter(s) != SYMM_SUCCESS) {
        r = CUDA_ERROR_INVALID_CONTEXT;
    } else if (symm__cu.DeviceGetAttribute(&ok, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, s->dev) !=
                   CUDA_SUCCESS || !ok) {
        SYMM_INFO(SYMM_LOG_BACKEND, "cuda: the GPU does not export dma-bufs "
                  "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0)");
    } else {
        long page = sysconf(_SC_PAGESIZE);
        uint64_t span = align_up(len, page > 0 ? (uint64_t)page : 4096u);
        r = symm__cu.MemGetHandleForAddressRange(&fd, (CUdeviceptr)(uintptr_t)(ctx->heap_base + off),
                                                 span, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
        if (r != CUDA_SUCCESS) fd = -1;
    }
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        if (symm__cu.GetErrorName) symm__cu.GetErrorName(r, &name);
        SYMM_INFO(SYMM_LOG_BACKEND, "cuda: no dma-buf for heap [%llu, +%llu): %s",
                  (unsigned long long)off, (unsigned long long)len, name ? name : "error");
    }
    symm__err(SYMM_SUCCESS, "%s", saved); /* the probe is no caller's error */
    return fd;
}

/* Device memory the CPU cannot touch (managed memory it can). */
static bool cuda_is_device_mem(symm__ctx *ctx, const void *p) {
    (void)ctx;
    CUmemorytype type = (CUmemorytype)0;
    int managed = 0;
    CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&type, &managed};
    if (symm__cu.PointerGetAttributes(2, attrs, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
        return false;
    return type == CU_MEMORYTYPE_DEVICE && !managed;
}

/* Blocking copy between host and device memory (staging for transports). */
static symm_status cuda_local_copy(symm__ctx *ctx, void *dst, const void *src, uint64_t n) {
    cu_state *s = ctx->backend;
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(symm__cu_copy_async(s, (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
    return symm__cu_finish(s, NULL);
}

const symm__backend_ops symm__cuda_ops = {
    .name = "cuda",
    .id = SYMM_BACKEND_CUDA,
    .probe = cuda_probe,
    .has_device = true,
    .nic_coherent_atomics = false, /* the heap is GPU memory */
    .reach = SYMM__REACH_PEER_BASE, /* peers mapped where P2P works */
    .reg_align = 2ull << 20,        /* the VMM mapping granularity */
    .heap_init = cuda_heap_init,
    .heap_grow = cuda_heap_grow,
    .heap_fini = cuda_heap_fini,
    .put = symm__cuda_put,
    .get = symm__cuda_get,
    .atomic = symm__cuda_atomic,
    .quiet = symm__cuda_quiet,
    .fence = symm__cuda_fence,
    .memset0 = symm__cuda_memset0,
    .fini = cuda_fini,
    .coll = symm__cuda_coll,
    .coll_agree = symm__cuda_coll_agree,
    .put_stream = symm__cuda_put_stream,
    .get_stream = symm__cuda_get_stream,
    .signal_stream = symm__cuda_signal_stream,
    .wait_stream = symm__cuda_wait_stream,
    .quiet_stream = symm__cuda_quiet_stream,
    .sync_stream = symm__cuda_sync_stream,
    .register_mem = cuda_register,
    .unregister_mem = cuda_unregister,
    .device_ctx = cuda_device_ctx,
    .peer_failed = cuda_peer_failed,
    .async_poll = cuda_async_poll,
    .coll_max_pes = CU_PARAM_PES,
    .describe = cuda_describe,
    .dmabuf_fd = cuda_dmabuf_fd,
    .is_device_mem = cuda_is_device_mem,
    .local_copy = cuda_local_copy,
};


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
 * stream operations (PDL alone made the stream barrier on 2 x H200
 * markedly faster: docs/GPU-RESULTS.md "2026-11-21: PDL, the stream
 * barrier, the copy kernel") and costs less host time per launch.
 * SYMM_CUDA_PDL=0 turns it off.
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
 * Files, from the top down: a file includes and calls only files below it
 * (the forms never call each other; nor do cuda_tuning.c and
 * cuda_coll_common.c, or cuda_rma.c and the collective files).
 *   cuda.c             the top: probe, setup and teardown, the device
 *                      context, the transports' hooks, the ops table
 *                      (symm__cuda_ops)
 *   cuda_coll.c        the collectives' top: their settings and scratch
 *                      (setup) and the dispatch (symm__cuda_coll)
 *   the forms          cuda_coll_ll.c (one-shot LL, LL128), cuda_coll_ce.c
 *                      (copy engines, cached graphs), cuda_coll_staged.c,
 *                      cuda_coll_barrier.c (two-shot, gather by push or
 *                      pull), cuda_a2av.c (alltoallv)
 *   cuda_tuning.c      the choice of algorithm and every threshold it
 *                      compares against; cuda_tuning.h the measured defaults
 *   cuda_coll_common.c what the forms build on: the team's heap bases, the
 *                      barrier kernels, sync_stream, the agree, the
 *                      reduction kernels (cuda_coll.h: what the collective
 *                      files share)
 *   cuda_rma.c         host-initiated RMA and atomics; stream-ordered puts,
 *                      gets, signals and waits
 *   cuda_heap.c        the heap's chunks (shared with the local peers),
 *                      growth, registration, teardown; the scratch's zeroing
 *   cuda_state.c       errors, launches, blocking waits, the teams' lanes,
 *                      the kernels' lookup
 *   cuda_internal.h    the state (cu_state) and the functions of cuda_rma.c
 *                      and the files below it
 *   cuda_driver.c      the driver API's entry points (dlopen)
 *   coll_plan.c        the collectives' shapes (arithmetic only, unit-tested)
 *   kernels*.cu, *.cuh, kernel_params.h: the kernels and their parameter
 *   blocks.
 */
#include "cuda_internal.h"
#include "cuda_coll.h"
#include "cuda_tuning.h"
#include "cuda_tpmem.h"

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

/* Everything but the heap mappings (see symm__cuda_heap_fini). */
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
    for (int i = 0; i < SYMM__MAX_TEAMS; i++) symm__cu_lane_free(atomic_load(&s->lanes[i]));
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

/* What setup_local learns of the GPU that later steps of it turn features on
 * by. */
typedef struct cu_dev_caps {
    int rdma;     /* GPUDirect RDMA with VMM allocations */
    int memops;   /* 64-bit stream memory operations */
    int cc_major; /* compute capability (PDL from 9) */
} cu_dev_caps;

/* The GPU this PE uses (the configured device, else its local index modulo
 * the visible GPUs), checked for what the heap needs, and its primary
 * context, made current. */
static symm_status open_device(symm__ctx *ctx, cu_state *s, cu_dev_caps *caps) {
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
    int vmm = 0, fdh = 0;
    SYMM__CU(DeviceGetAttribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                s->dev));
    SYMM__CU(DeviceGetAttribute(&fdh, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                                s->dev));
    SYMM__CU(DeviceGetAttribute(&s->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, s->dev));
    if (symm__cu.DeviceGetAttribute(&s->smem_optin,
                                    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                    s->dev) != CUDA_SUCCESS)
        s->smem_optin = 0;
    symm__cu.DeviceGetAttribute(&caps->rdma,
                                CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WITH_CUDA_VMM_SUPPORTED, s->dev);
    symm__cu.DeviceGetAttribute(&caps->memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                s->dev);
    symm__cu.DeviceGetAttribute(&caps->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                s->dev);
    if (!vmm || !fdh)
        return symm__err(SYMM_ERR_NO_DEVICE,
                         "GPU %d lacks virtual memory management with POSIX fd handles "
                         "(VMM %d, fd handles %d)", ord, vmm, fdh);
    SYMM__CU(DevicePrimaryCtxRetain(&s->cuctx, s->dev));
    s->retained = true;
    SYMM__CU(CtxSetCurrent(s->cuctx));
    return SYMM_SUCCESS;
}

/* The heap's allocation properties and granularity. */
static symm_status heap_props(cu_state *s, int rdma) {
    memset(&s->prop, 0, sizeof s->prop);
    s->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    s->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    s->prop.location.id = s->dev;
    s->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    s->prop.allocFlags.gpuDirectRDMACapable = rdma ? 1 : 0;
    size_t g = 0;
    SYMM__CU(MemGetAllocationGranularity(&g, &s->prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    s->gran = g ? g : (2u << 20);
    return SYMM_SUCCESS;
}

/* Every embedded module, and the kernels every context uses. */
static symm_status load_kernels(cu_state *s) {
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
    SYMM_TRY(symm__cu_get_fn(s, &s->f_ring, "symm_k_ring"));
    SYMM_TRY(symm__cu_a2av_setup(s));
    return SYMM_SUCCESS;
}

/* The internal stream, the pinned words (the context's and every team
 * slot's) and the locks. */
static symm_status host_side(cu_state *s) {
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
    return SYMM_SUCCESS;
}

/* The settings: stream memory operations, the timeout, PDL and the copy
 * kernel's sizes. */
static symm_status read_settings(symm__ctx *ctx, cu_state *s, const cu_dev_caps *caps) {
    atomic_store(&s->memops,
                 caps->memops && symm__cu.StreamWriteValue64 && symm__cu.StreamWaitValue64);
    s->timeout_ns = (uint64_t)(ctx->cfg.timeout_ms ? ctx->cfg.timeout_ms : SYMM__DEFAULT_TIMEOUT_MS) *
                    1000000u;
    const char *mo = getenv("SYMM_CUDA_STREAM_MEMOPS");
    s->stream_memops = mo && strcmp(mo, "1") == 0 && atomic_load(&s->memops);
    if (mo && strcmp(mo, "1") == 0 && !s->stream_memops)
        SYMM_WARN(SYMM_LOG_BACKEND, "cuda: SYMM_CUDA_STREAM_MEMOPS=1, but GPU %d has no 64-bit "
                  "stream memory operations; stream waits use a kernel", s->ordinal);
    const char *pd = getenv("SYMM_CUDA_PDL");
    atomic_store(&s->pdl,
                 caps->cc_major >= 9 && symm__cu.LaunchKernelEx && !(pd && strcmp(pd, "0") == 0));
    /* without PDL a kernel launch costs more host time than cuMemcpyAsync:
     * copy engine only, unless asked */
    SYMM_TRY(symm__cu_env_size("SYMM_CUDA_COPY_KERNEL_MIN", CU_COPY_KERNEL_MIN,
                               &s->copy_kernel_min));
    SYMM_TRY(symm__cu_env_size("SYMM_CUDA_COPY_KERNEL_MAX",
                               atomic_load(&s->pdl) ? CU_COPY_KERNEL_MAX : 0,
                      &s->copy_kernel_max));
    return SYMM_SUCCESS;
}

/* The PE-local part of init: device, context, kernels, streams. */
static symm_status setup_local(symm__ctx *ctx, cu_state *s) {
    cu_dev_caps caps = {0, 0, 0};
    SYMM_TRY(open_device(ctx, s, &caps));
    SYMM_TRY(heap_props(s, caps.rdma));
    SYMM_TRY(load_kernels(s));
    SYMM_TRY(host_side(s));
    return read_settings(ctx, s, &caps);
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

/* Local setup first; every PE then learns every other PE's outcome, so a
 * PE without a GPU fails the job instead of hanging it. all[pe]: PE pe's
 * GPU; s->gran: the largest granularity of them all. */
static symm_status setup_and_share(symm__ctx *ctx, cu_state *s, cu_peer_info *all) {
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
    SYMM_TRY(symm__boot_allgather(ctx->boot, &mine, all, sizeof mine));
    if (local != SYMM_SUCCESS) return symm__err(local, "%s", local_msg);
    s->gran = 0;
    for (int32_t pe = 0; pe < ctx->n_pes; pe++) {
        if (all[pe].status != SYMM_SUCCESS)
            return symm__err(all[pe].status, "PE %d could not set up its GPU (%s; see its own "
                             "error message)", (int)pe, symm__status_name(all[pe].status));
        s->gran = max_u64(s->gran, all[pe].gran);
    }
    return SYMM_SUCCESS;
}

/* The local peers (s->local_pe), their reachability and the reservations:
 * heap span and the scratch's address space for this PE and each local peer
 * whose GPU ours reaches (ctx->peer_base; NULL for the others). */
static symm_status reserve_heaps(symm__ctx *ctx, cu_state *s, const cu_peer_info *all) {
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
        if (!ctx->peer_base)
            return symm__err(SYMM_ERR_OUT_OF_MEMORY, "cuda backend: out of host memory");
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
            return symm__cu_fail(r, "cuMemAddressReserve(heap span)");
        }
        ctx->peer_base[pe] = (uint8_t *)(uintptr_t)s->va[li];
    }
    ctx->heap_base = ctx->peer_base[ctx->my_pe];
    return SYMM_SUCCESS;
}

/* The device copy of the peer table: device contexts of any job size and
 * the barrier kernel of large teams read it. Reservations never move. */
static symm_status peer_table_init(symm__ctx *ctx, cu_state *s) {
    size_t bytes = (size_t)ctx->n_pes * sizeof(void *);
    CUresult r = symm__cu.MemAlloc(&s->peer_table, bytes);
    if (r != CUDA_SUCCESS) {
        s->peer_table = 0;
        return symm__cu_fail(r, "cuMemAlloc(peer table)");
    }
    r = symm__cu.Memcpy(s->peer_table, (CUdeviceptr)(uintptr_t)ctx->peer_base, bytes);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuMemcpy(peer table)");
    return SYMM_SUCCESS;
}

static symm_status cuda_heap_init(symm__ctx *ctx) {
    cu_state *s = calloc(1, sizeof *s);
    cu_peer_info *all = calloc((size_t)ctx->n_pes, sizeof *all);
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
    symm_status st = setup_and_share(ctx, s, all);
    if (st == SYMM_SUCCESS) {
        s->span = align_up(ctx->heap_cap, s->gran);
        s->reg_floor = s->span;
        s->heap_live = true; /* from here on symm__cuda_heap_fini undoes what exists */
        st = reserve_heaps(ctx, s, all);
    }
    if (st == SYMM_SUCCESS) st = peer_table_init(ctx, s);
    /* LL scratch (collective: every PE gets here) */
    if (st == SYMM_SUCCESS) st = symm__cu_coll_setup(ctx, s);
    free(all);
    ctx->backend = s;
    if (st == SYMM_SUCCESS) return SYMM_SUCCESS;
    symm__cuda_heap_fini(ctx);
    state_free(s);
    ctx->backend = NULL;
    return st;
}

static void cuda_fini(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (!s) return;
    symm__cuda_heap_fini(ctx); /* in case the core did not: idempotent */
    state_free(s);
    ctx->backend = NULL;
}

/* ------------------------------------------------------------------------ */
/* Failures: a dead PE, GPU-side waits that gave up                          */
/* ------------------------------------------------------------------------ */

static void cuda_peer_failed(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (s && s->err_word) __atomic_store_n(s->err_word, CU_ERR_PEER_FAILED, __ATOMIC_SEQ_CST);
}

static void cuda_async_poll(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    /* Also look for a dead PE (one poll per interval): that ends the GPU
     * waits of this context (cuda_peer_failed), so an application that only
     * synchronizes its streams learns of it here. */
    (void)symm__check_failed(ctx);
    if (s && s->err_word) (void)symm__cu_take_err_word(s);
    if (s) symm__cu_a2av_poll(s);
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

/* ---- memory of the proxy's rings (runtime/proxy) ---- */

/* Host memory the GPU reads and writes: pinned, mapped (UVA: the host address
 * is the device address). */
static void *cuda_pinned_alloc(symm__ctx *ctx, size_t bytes) {
    cu_state *s = ctx->backend;
    void *p = NULL;
    if (cu_enter(s) != SYMM_SUCCESS) return NULL;
    CUresult r = symm__cu.MemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE |
                                                      CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS) {
        symm__cu_fail(r, "cuMemHostAlloc (proxy rings)");
        return NULL;
    }
    memset(p, 0, bytes);
    return p;
}

static void cuda_pinned_free(symm__ctx *ctx, void *p, size_t bytes) {
    (void)bytes;
    if (p && cu_enter(ctx->backend) == SYMM_SUCCESS) symm__cu.MemFreeHost(p);
}

static void *cuda_pinned_device(symm__ctx *ctx, void *p) {
    (void)ctx;
    return p;
}

static void *cuda_device_alloc(symm__ctx *ctx, size_t bytes) {
    cu_state *s = ctx->backend;
    CUdeviceptr d = 0;
    if (cu_enter(s) != SYMM_SUCCESS) return NULL;
    CUresult r = symm__cu.MemAlloc(&d, bytes);
    if (r == CUDA_SUCCESS) r = symm__cu.MemsetD8Async(d, 0, bytes, s->s_int);
    if (r == CUDA_SUCCESS) r = symm__cu.StreamSynchronize(s->s_int);
    if (r != CUDA_SUCCESS) {
        if (d) symm__cu.MemFree(d);
        symm__cu_fail(r, "cuMemAlloc (proxy producer words)");
        return NULL;
    }
    return (void *)(uintptr_t)d;
}

static void cuda_device_free(symm__ctx *ctx, void *p, size_t bytes) {
    (void)bytes;
    if (p && cu_enter(ctx->backend) == SYMM_SUCCESS) symm__cu.MemFree((CUdeviceptr)(uintptr_t)p);
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
    .heap_grow = symm__cuda_heap_grow,
    .heap_fini = symm__cuda_heap_fini,
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
    .register_mem = symm__cuda_register,
    .unregister_mem = symm__cuda_unregister,
    .device_ctx = cuda_device_ctx,
    .peer_failed = cuda_peer_failed,
    .async_poll = cuda_async_poll,
    .coll_max_pes = CU_PARAM_PES,
    .describe = cuda_describe,
    .dmabuf_fd = cuda_dmabuf_fd,
    .is_device_mem = cuda_is_device_mem,
    .local_copy = cuda_local_copy,
    .pinned_alloc = cuda_pinned_alloc,
    .pinned_free = cuda_pinned_free,
    .pinned_device = cuda_pinned_device,
    .device_alloc = cuda_device_alloc,
    .device_free = cuda_device_free,
    .ring_stream = symm__cuda_ring_stream,
    .ring_stream_wake = symm__cuda_ring_stream_wake,
    .stream_capturing = symm__cuda_stream_capturing,
    .tp_gpu_open = symm__cuda_tp_gpu_open, /* cuda_tpmem.c */
};

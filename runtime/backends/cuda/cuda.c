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
 * reports as SYMM_ERR_TIMEOUT. When the host learns that a PE died
 * (symm__mark_failed -> cuda_peer_failed) it sets the word to CU_ERR_PEER_FAILED;
 * every waiting kernel of the context then gives up within 1024 spins and
 * blocking calls report SYMM_ERR_PEER_FAILED. Blocking calls poll their
 * stream and the job's health instead of sleeping in cuStreamSynchronize, so
 * a kernel stuck on a dead peer cannot hold them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "coll_plan.h"
#include "kernel_params.h"
#include "symm_cuda_fatbins.h" /* generated: symm__cuda_fatbins[], one per kernel file */
#include "teams.h"

/* Team slot layout (teams.h): [0, 256) host barrier flags, [256, 512) the
 * teams' scratch record, [512, slot_bytes) device/stream barrier flags, one
 * uint64 per team PE (SYMM__SLOT_DEVICE_OFF; symm_device.cuh
 * SYMM_DEVICE_BARRIER_OFF); ctx->slot_bytes grows with the job. */
#define CU_BARRIER_OFF SYMM__SLOT_DEVICE_OFF
_Static_assert(SYMM__SLOT_DEVICE_OFF == 512, "symm_device.cuh: SYMM_DEVICE_BARRIER_OFF is 512");
_Static_assert(CU_BARRIER_OFF - SYMM__SLOT_TICKET_OFF == CU_TICKET_BACK,
               "kernel_params.h: the grid ticket lies CU_TICKET_BACK bytes before the flags");

/* Teams of up to CU_PARAM_PES PEs carry their heap bases in the kernel's
 * parameter block; larger (strided) teams read them from the context's
 * device peer table (symm_k_barrier_wide), and their collectives run the
 * core's generic algorithm (blocking) or are NOT_SUPPORTED (stream forms). */
#define CU_PARAM_PES 64

#define CU_THREADS 256u
/* Threads a block of the pushing all-gather / all-to-all kernel, one block a
 * SM (cuda_coll; docs/DECISIONS.md "Collectives"): on 4 x H200 an all-gather
 * of 256 MiB took 577 us against 777 with blocks of 256, 2 a SM (more
 * writers than that into the links measured slower still: 1024 x 2 a SM
 * 995 us). */
#define CU_PUSH_THREADS 1024u
/* Stream puts from GPU memory of CU_COPY_KERNEL_MIN..MAX bytes run as a copy
 * kernel, others on the copy engine (SYMM_CUDA_COPY_KERNEL_MIN/_MAX override;
 * MAX=0 means copy engine only; without PDL the default is 0). Measured back
 * to back on 2 x H200 (NV18, driver 580; tests/perf/probe_cuda.cu and
 * bench_symm): the copy engine takes 2.1-2.5 us per put up to 64 KiB, 2.9 us
 * at 256 KiB and 4.8 us at 1 MiB; a PDL-launched copy kernel 2.0-2.6 us up to
 * 64 KiB (its host cost, which varies between machines, bounds it), 2.25 us
 * at 256 KiB and 4.4 us at 1 MiB; from 16 MiB up the copy engine is faster.
 * An isolated small put + stream synchronize takes 6.3 us on the copy engine
 * and 7.9 us as a kernel. So 128 KiB - 1 MiB are kernels; the rest stays on
 * the copy engine, which also leaves the SMs to compute that overlaps
 * communication. Gets always use the copy engine. */
#define CU_COPY_KERNEL_MIN (128u << 10)
#define CU_COPY_KERNEL_MAX (1u << 20)
/* Opt-in (SYMM_CUDA_STREAM_MEMOPS=1): EQ signal waits on a stream use
 * cuStreamWaitValue64 instead of a kernel. It needs no SM, but a wait on a
 * dead peer never gives up (the kernel form times out), so it is off by
 * default. */
#define CU_N_OPS 7

/* One-shot LL collectives (kernels_ll.cu, kernels_common.cuh "LL"; choice
 * in cuda_coll). The scratch: CU_LL_SLOTS team slots (the predefined teams'
 * four and the first split teams'), each two parities of (ll_pes - 1)
 * sender regions of 2 * SYMM_CUDA_LL_BYTES (16-byte lines of 8 data bytes).
 * It lives at byte span of every heap reservation, beyond the heap (so the
 * core's heap layout does not change), made and shared once at setup
 * (coll_setup): symmetric, never allocated in a call.
 * Teams of more than CU_LL_MAX_PES PEs, and teams of higher slots, use the
 * barrier algorithms. */
#define CU_LL_SLOTS 16
#define CU_LL_MAX_PES 8
/* Staged reductions (kernels_staged.cuh; choice in st_choose): the same
 * scratch allocation holds, after the LL slots, CU_ST_SLOTS team slots (the
 * predefined teams') of two parities of (ll_pes - 1) sender regions:
 * SYMM__ST_HDR bytes of flags, then SYMM_CUDA_STAGED_BYTES of staging
 * (default 16 MiB with 2 PEs a host, so that the peer form holds an
 * all-reduce of up to 32 MiB, such as DDP's 25 MiB buckets; 4 MiB with 3
 * or 4, 2 MiB with more: 128, 96 and 112 MiB of scratch a GPU with 2, 4
 * and 8). Teams of higher slots reduce with the barrier algorithms. */
#define CU_ST_SLOTS 4
#define CU_ST_BYTES_MIN (64u << 10)
/* A block moves at least this many bytes of a slice per step (fewer blocks
 * for smaller slices); SYMM_CUDA_STAGED_CHUNK overrides it for experiments. */
#define CU_ST_CHUNK_DEFAULT (8u << 10)
/* Steps a call aims for where pieces of the chunk allow (fewer blocks, more
 * steps): 1, as every step costs a fence and flag round trip (2 and 4 were
 * always slower on 2 and 4 x H200); SYMM_CUDA_STAGED_STEPS for experiments. */
#define CU_ST_STEPS 1
/* The peer form (kernels_staged.cuh symm__st_peer: the call within the
 * staging, and an all-reduce in halves on 2 PEs or any reduction on more;
 * symm__st_peer_plan): a block per CU_ST_PEER_CHUNK
 * bytes up to one a SM; a reduce-scatter takes one step, an all-reduce one
 * per CU_ST_PEER_CHUNK of each block's share, up to SYMM__ST_PEER_STEPS (3),
 * so that its results start out while pieces still come in. 4 x H200,
 * graph, all-reduce of 16 MiB (pieces of 16-byte vectors then; whole lines
 * since, SYMM__ST_ALIGN: 1.3-1.6 us less): 78.7-79.1 us in 3 steps of 44
 * blocks a peer, 79.7 in 4, 80.4-80.7 in 1, 83.1 in 6; of 8 MiB: 43.8-44.4
 * in 2 steps, 46.1-46.3 in 1; reduce-scatter of 8 / 16 MiB: 25.2 / 45.8 in 1
 * step, 27.0 / 47.3 in 2; 2 x H200, all-reduce of 16 MiB 51.6-51.9 in 2
 * steps, 53.3-53.4 in 1 or 3, 8 MiB 30.4 in 1 step, 32.0 in 3; pieces of
 * 8, 16 or 64 KiB no faster (docs/DECISIONS.md "Collectives").
 * SYMM_CUDA_STAGED_CHUNK and _STEPS, where given, apply. */
#define CU_ST_PEER_CHUNK (32u << 10)
/* Landing (kernels_staged.cuh "Landing"): on 2 PEs, out of place, the steps
 * beyond what the staging holds go straight into the peer's dst, pieces of up
 * to this many bytes a block, with no credit to wait for. 64 KiB was best on
 * 2 x H200 (all-reduce of 16 / 256 MiB: 54.8 / 750 us; 32 KiB 55.1 / 756,
 * 16 KiB 56.9 / 769, 128 KiB 58.3 / 756); SYMM_CUDA_STAGED_LAND (0: never)
 * for experiments. */
#define CU_ST_LAND_DEFAULT (64u << 10)
/* A landing call's first steps go through the staging (so that small calls
 * never wait for the peer's hello), at most this many bytes of it: the 4
 * MiB a sender that landing was tuned with. The larger staging of 2-PE hosts
 * (16 MiB, for the peer form) staged whole reduce-scatters of up to 16 MiB a
 * pair instead, and landing measured faster than staging before (the
 * staging's two parities double its footprint in L2; docs/DECISIONS.md). */
#define CU_ST_LAND_STAGED_MAX (4u << 20)
/* The in-place form of 2 PEs (kernels_staged.cuh "Swap") keeps two pieces of a
 * block in shared memory: pieces of up to this many bytes (and half what a
 * block may opt in to, less 2 KiB). 96 KiB was best on 2 x H200 (all-reduce of
 * 256 MiB: 767 us; 64 KiB 776, 32 KiB 847, 16 KiB 1040); SYMM_CUDA_STAGED_SWAP
 * (0: never) for experiments. */
#define CU_ST_SWAP_DEFAULT (96u << 10)
/* LL128 reductions (kernels_ll128.cu; choice in l8_choose): each staged
 * sender region holds, after its staging, the lines of SYMM_CUDA_LL128_BYTES
 * of payload (default 2 MiB with up to 4 PEs a host, 1 MiB with more: 17,
 * 51 and 60 MiB more scratch a GPU with 2, 4 and 8 PEs; 0: none). */
#define CU_L8_BYTES_DEFAULT (2u << 20)
#define CU_L8_THREADS 512u
/* All-reduce on more than 2 PEs up to this many bytes: one shot (every PE
 * sends its whole vector to every peer and reduces all of it), above it a
 * slice each, reduced and stored to every PE. 4 x H200, graph: 256 KiB 6.2
 * us one-shot against 7.0 sliced, 512 KiB 8.7 against 7.8.
 * SYMM_CUDA_LL128_ONESHOT. */
#define CU_L8_ONESHOT_DEFAULT (256u << 10)
/* The copy-engine reduce-scatter and all-reduce (kernels_ce.cu; coll_ce,
 * ce_choose): the
 * world team's CE area, after the staged slots, holds a header and ll_pes - 1
 * slots of SYMM_CUDA_CE_BYTES (default CU_CE_BYTES_DEFAULT with 3 or 4 PEs a
 * host, none otherwise: 192 MiB of scratch a GPU with 4 PEs); a call moves at
 * most that much a pair in one round, and each further round waits for the
 * last (4 x H200, 256 MiB in a graph: 576 us with 64 MiB slots, one round;
 * 613 with 32 MiB, two).
 * The last phase goes in CU_CE_PIECES copies (SYMM_CUDA_CE_PIECES, 1-7), so
 * that only the last piece's reduction follows the last byte. */
#define CU_CE_BYTES_DEFAULT (64u << 20)
#define CU_CE_PIECES 4u
#define CU_CE_PIECES_MAX 7u /* arrive words count up to it */
/* copies of a round: one a phase, the last in up to CU_CE_PIECES_MAX */
#define CU_CE_COPIES_MAX (CU_LL_MAX_PES - 2 + CU_CE_PIECES_MAX)
#define CU_SCRATCH_RESERVE (1ull << 30) /* address space kept for the scratch per PE */
enum { CU_ALGO_AUTO, CU_ALGO_LL, CU_ALGO_LL128, CU_ALGO_STAGED, CU_ALGO_CE, CU_ALGO_BASE };
/* How the barrier algorithm's all-gather and all-to-all move data
 * (SYMM_CUDA_COLL_COPY): auto = push, except an all-gather of more than
 * CU_PULL3_BYTES a PE on a team of 3, which pulls (copy_pulls). */
enum { CU_COPY_AUTO, CU_COPY_PUSH, CU_COPY_PULL };

typedef struct cu_map {
    uint64_t off, size;
    CUmemGenericAllocationHandle *h; /* [local_n]; 0 where not mapped */
} cu_map;

typedef struct cu_state {
    symm__ctx *ctx; /* owner (asynchronous failures are recorded on it) */
    /* device and kernels */
    int ordinal;
    CUdevice dev;
    CUcontext cuctx;
    bool retained;
    int sms;
    int smem_optin; /* shared memory a block may opt in to (0: unknown) */
    CUmodule mod[SYMM__CUDA_FATBINS_N]; /* symm__cuda_fatbins[i], loaded in order */
    CUfunction f_copy, f_store, f_signal, f_wait, f_amo, f_barrier2, f_barrier8, f_barrier64, f_gather;
    CUfunction f_barrier_wide;
    CUdeviceptr peer_table; /* device copy of ctx->peer_base (n_pes entries) */
    _Atomic(CUfunction) f_reduce[SYMM_DTYPE_COUNT][CU_N_OPS];

    /* host-initiated work */
    CUstream s_int;
    CUevent ev_int;
    atomic_bool nbi_pending;
    pthread_mutex_t amo_lock;
    bool amo_lock_init;
    uint64_t *pinned; /* [0]: atomic result, [1]: error word (int) */
    int *err_word;      /* CU_ERR_*, read by the runtime's waiting kernels */
    atomic_bool failed_noted; /* CU_ERR_PEER_FAILED recorded as async error  */
    uint64_t timeout_ns;
    atomic_bool memops; /* cuStreamWriteValue64 / WaitValue64 usable */
    bool stream_memops; /* SYMM_CUDA_STREAM_MEMOPS=1: memop signal waits */
    atomic_bool pdl;    /* launch with programmatic stream serialization */
    uint64_t copy_kernel_min, copy_kernel_max;

    /* heap */
    CUmemAllocationProp prop;
    uint64_t gran, span;
    int32_t local_n, local_me;
    int32_t *local_pe; /* [local_n] world PE of each local index */
    CUdeviceptr *va;   /* [local_n] reservation, 0 when not reachable */
    uint64_t backed;   /* [0, backed) of every reachable heap is mapped */
    uint64_t reg_floor; /* lowest offset ever registered (heap grows below) */
    cu_map *chunks;
    size_t n_chunks, cap_chunks;
    cu_map *regs;
    size_t n_regs, cap_regs;
    pthread_mutex_t reg_lock;
    bool reg_lock_init;
    bool owns_peer_base;
    bool heap_live; /* heap_init succeeded and heap_fini has not run */

    /* Collective scratch (cuda_coll; coll_setup): symmetric, at byte span
     * of every heap reservation (beyond the heap), scratch_span bytes (0 when
     * there is none): CU_LL_SLOTS team slots of ll_slot bytes for the
     * one-shot LL collectives (ll_slot 0: none), then at st_base CU_ST_SLOTS
     * slots of st_slot bytes for the staged reductions (st_slot 0: none). */
    uint64_t scratch_span;
    uint64_t ll_slot, ll_region, ll_parity;
    uint64_t st_base, st_slot, st_region, st_parity;
    uint64_t st_bytes, st_chunk, st_steps; /* SYMM_CUDA_STAGED_BYTES / _CHUNK / _STEPS */
    uint64_t st_peer_chunk, st_peer_steps; /* the peer form's (coll_staged; 0 steps: auto) */
    uint64_t st_land;                      /* SYMM_CUDA_STAGED_LAND (0: never)         */
    uint64_t st_swap_max; /* SYMM_CUDA_STAGED_SWAP within the shared memory (0: none)  */
    uint64_t l8_lines;    /* bytes of LL128 lines in a staged sender region (0: none)  */
    uint64_t l8_oneshot;  /* SYMM_CUDA_LL128_ONESHOT: largest one-shot all-reduce, > 2 PEs */
    uint64_t ll_max;   /* largest LL payload per pair of PEs (SYMM_CUDA_LL_BYTES) */
    int32_t ll_pes;    /* largest team the scratch serves (<= CU_LL_MAX_PES)     */
    int coll_algo;     /* CU_ALGO_* (SYMM_CUDA_COLL_ALGO)                         */
    int coll_copy;     /* CU_COPY_* (SYMM_CUDA_COLL_COPY)                         */
    CUfunction f_ll_copy;
    _Atomic(CUfunction) f_llreduce[SYMM_DTYPE_COUNT][CU_N_OPS];
    _Atomic(CUfunction) f_streduce[SYMM_DTYPE_COUNT][CU_N_OPS];
    _Atomic(CUfunction) f_l8reduce[SYMM_DTYPE_COUNT][CU_N_OPS];
    /* The copy-engine forms (coll_ce): the world team's CE area at ce_off of
     * every heap (0: none): its header, then ce_slot bytes a sender (0: no
     * slots, so no reductions there); the copies of the last phase; the copy
     * stream, the signal stream and the events that fork them off the
     * caller's stream and join them back. */
    uint64_t ce_off, ce_slot, ce_pieces;
    CUstream s_ce, s_ce_sig;
    CUevent ev_ce_fork, ev_ce_join, ev_ce_copy[CU_CE_COPIES_MAX];
    _Atomic(CUfunction) f_cereduce[SYMM_DTYPE_COUNT][CU_N_OPS];
    CUfunction f_ce_wait; /* the all-reduce's last wait (symm_k_ce_wait) */
} cu_state;

static const char *const dtype_names[SYMM_DTYPE_COUNT] = {
    NULL, "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "float16", "bfloat16", "float32", "float64",
};
static const char *const op_names[CU_N_OPS] = {"sum", "prod", "min", "max", "and", "or", "xor"};

static inline uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
static inline uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* Make our primary context current on the calling thread (cheap when it is). */
static inline symm_status cu_enter(const cu_state *s) {
    CUcontext cur = NULL;
    if (symm__cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == s->cuctx) return SYMM_SUCCESS;
    SYMM__CU(CtxSetCurrent(s->cuctx));
    return SYMM_SUCCESS;
}

#define CU_GAVE_UP_MSG                                                                  \
    "a GPU-side wait (barrier, collective or signal wait on a stream) gave up after %llu " \
    "ms: a peer PE died or did not take part"
#define CU_PEER_FAILED_MSG "a peer PE of this job failed; GPU-side waits of this context gave up"

/* A GPU-side wait that gave up set the pinned error word: record it on the
 * context (symm_ctx_async_error) and clear the word (CU_ERR_TIMEOUT), or keep
 * it (CU_ERR_PEER_FAILED: the context stays unusable). Returns the word. */
static int take_err_word(cu_state *s) {
    int w = *(volatile int *)s->err_word;
    if (!w) return 0;
    if (w == CU_ERR_PEER_FAILED) {
        if (!atomic_exchange(&s->failed_noted, true))
            symm__async_record(s->ctx, SYMM_ERR_PEER_FAILED, CU_PEER_FAILED_MSG);
        return w;
    }
    __atomic_compare_exchange_n(s->err_word, &w, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    symm__async_record(s->ctx, SYMM_ERR_TIMEOUT, CU_GAVE_UP_MSG,
                       (unsigned long long)(s->timeout_ns / 1000000u));
    return CU_ERR_TIMEOUT;
}

/* Blocking calls also report it as their own failure. */
static symm_status check_err_word(cu_state *s) {
    int w = take_err_word(s);
    if (!w) return SYMM_SUCCESS;
    if (w == CU_ERR_PEER_FAILED) return symm__err(SYMM_ERR_PEER_FAILED, CU_PEER_FAILED_MSG);
    return symm__err(SYMM_ERR_TIMEOUT, CU_GAVE_UP_MSG,
                     (unsigned long long)(s->timeout_ns / 1000000u));
}

static void cuda_async_poll(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    /* Also look for a dead PE (one poll per interval): that ends the GPU
     * waits of this context (cuda_peer_failed), so an application that only
     * synchronizes its streams learns of it here. */
    (void)symm__check_failed(ctx);
    if (s && s->err_word) (void)take_err_word(s);
}

static symm_status unreachable(const symm__ctx *ctx, int32_t pe) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED,
                     "PE %d is not load/store reachable from PE %d (no P2P path between their "
                     "GPUs, or another host); remote transports are not available yet",
                     (int)pe, (int)ctx->my_pe);
}

/* Launch one of our kernels (every one starts with symm__k_enter, so PDL is
 * always safe). A PDL launch the driver refuses is retried plainly; if that
 * works, PDL stays off for this context. */
static symm_status launch_smem(cu_state *s, CUfunction f, const char *name, unsigned gx,
                               unsigned gy, unsigned bx, unsigned smem, CUstream cs, void **args) {
    const bool pdl = atomic_load_explicit(&s->pdl, memory_order_relaxed);
    if (pdl) {
        CUlaunchAttribute a;
        memset(&a, 0, sizeof a);
        a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        a.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig c;
        memset(&c, 0, sizeof c);
        c.gridDimX = gx;
        c.gridDimY = gy;
        c.gridDimZ = 1;
        c.blockDimX = bx;
        c.blockDimY = 1;
        c.blockDimZ = 1;
        c.sharedMemBytes = smem;
        c.hStream = cs;
        c.attrs = &a;
        c.numAttrs = 1;
        if (symm__cu.LaunchKernelEx(&c, f, args, NULL) == CUDA_SUCCESS) return SYMM_SUCCESS;
    }
    CUresult r = symm__cu.LaunchKernel(f, gx, gy, 1, bx, 1, 1, smem, cs, args, NULL);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, name);
    if (pdl && atomic_exchange(&s->pdl, false)) /* refused with PDL, fine without */
        SYMM_WARN(SYMM_LOG_BACKEND, "cuda: the driver refused a PDL launch of %s; kernels launch "
                  "without programmatic dependent launch from now on", name);
    return SYMM_SUCCESS;
}
static symm_status launch(cu_state *s, CUfunction f, const char *name, unsigned gx, unsigned gy,
                          unsigned bx, CUstream cs, void **args) {
    return launch_smem(s, f, name, gx, gy, bx, 0, cs, args);
}

/* NULL stream = blocking: the work went to the internal stream; wait for it,
 * polling the job's health (once per poll interval; symm__boot_check): when a
 * PE died, the waiting kernels are told to give up (cuda_peer_failed). */
static symm_status finish(cu_state *s, void *stream) {
    if (stream) return SYMM_SUCCESS;
    CUresult r;
    uint64_t spins = 0, t0 = 0, note_at = 0;
    while ((r = symm__cu.StreamQuery(s->s_int)) == CUDA_ERROR_NOT_READY) {
        if (s->ctx && symm__check_failed(s->ctx) != SYMM_SUCCESS) {
            r = symm__cu.StreamSynchronize(s->s_int); /* the kernels end within 1024 spins */
            break;
        }
        if ((++spins & 1023) == 0 && symm__log_on(SYMM_LOG_INFO, SYMM_LOG_WAIT)) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
            if (!t0) {
                t0 = t;
                note_at = t + 1000000000ull;
            } else if (t >= note_at) { /* 1 s, then every 10 s */
                note_at = t + 10000000000ull;
                SYMM_INFO(SYMM_LOG_WAIT, "cuda: still waiting after %.1f s for the internal stream "
                          "of GPU %d (a blocking barrier, collective or copy waiting on peers)",
                          (double)(t - t0) / 1e9, s->ordinal);
            }
        }
    }
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuStreamSynchronize(internal stream)");
    atomic_store(&s->nbi_pending, false);
    return check_err_word(s);
}

static void cuda_peer_failed(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    if (s && s->err_word) __atomic_store_n(s->err_word, CU_ERR_PEER_FAILED, __ATOMIC_SEQ_CST);
}
static inline CUstream stream_of(const cu_state *s, void *stream) {
    return stream ? (CUstream)stream : s->s_int;
}

/* Blocks of thr threads for a copy of n bytes (16 a thread a round): at
 * least 1, at most cap (or 1 when cap is 0). */
static unsigned copy_blocks(uint64_t n, unsigned thr, unsigned cap) {
    const uint64_t b = (n + thr * 16u - 1) / (thr * 16u);
    return (unsigned)min_u64(max_u64(b, 1), max_u64(cap, 1));
}

/* ------------------------------------------------------------------------ */
/* Probe, setup and teardown                                                 */
/* ------------------------------------------------------------------------ */

symm_status symm__cuda_probe(void) {
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
    if (s->s_int) symm__cu.StreamDestroy(s->s_int);
    if (s->ev_int) symm__cu.EventDestroy(s->ev_int);
    if (s->s_ce) symm__cu.StreamDestroy(s->s_ce);
    if (s->s_ce_sig) symm__cu.StreamDestroy(s->s_ce_sig);
    for (size_t i = 0; i < sizeof s->ev_ce_copy / sizeof s->ev_ce_copy[0]; i++)
        if (s->ev_ce_copy[i]) symm__cu.EventDestroy(s->ev_ce_copy[i]);
    if (s->ev_ce_fork) symm__cu.EventDestroy(s->ev_ce_fork);
    if (s->ev_ce_join) symm__cu.EventDestroy(s->ev_ce_join);
    if (s->pinned) symm__cu.MemFreeHost(s->pinned);
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
static CUresult module_fn(cu_state *s, CUfunction *f, const char *name) {
    CUresult r = CUDA_ERROR_NOT_FOUND;
    for (int i = 0; i < SYMM__CUDA_FATBINS_N && r == CUDA_ERROR_NOT_FOUND; i++)
        r = symm__cu.ModuleGetFunction(f, s->mod[i], name);
    return r;
}

static symm_status get_fn(cu_state *s, CUfunction *f, const char *name) {
    CUresult r = module_fn(s, f, name);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, name);
    /* load it now: loading lazily inside a stream capture would be slower */
    if (symm__cu.FuncLoad) symm__cu.FuncLoad(*f);
    return SYMM_SUCCESS;
}

static symm_status env_size(const char *name, uint64_t dflt, uint64_t *v) {
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
    SYMM_TRY(get_fn(s, &s->f_copy, "symm_k_copy"));
    SYMM_TRY(get_fn(s, &s->f_store, "symm_k_store"));
    SYMM_TRY(get_fn(s, &s->f_signal, "symm_k_signal"));
    SYMM_TRY(get_fn(s, &s->f_wait, "symm_k_wait"));
    SYMM_TRY(get_fn(s, &s->f_amo, "symm_k_amo"));
    SYMM_TRY(get_fn(s, &s->f_barrier2, "symm_k_barrier_2"));
    SYMM_TRY(get_fn(s, &s->f_barrier8, "symm_k_barrier_8"));
    SYMM_TRY(get_fn(s, &s->f_barrier64, "symm_k_barrier_64"));
    SYMM_TRY(get_fn(s, &s->f_barrier_wide, "symm_k_barrier_wide"));
    SYMM_TRY(get_fn(s, &s->f_gather, "symm_k_gather"));

    SYMM__CU(StreamCreate(&s->s_int, CU_STREAM_NON_BLOCKING));
    SYMM__CU(EventCreate(&s->ev_int, CU_EVENT_DISABLE_TIMING));
    void *pinned = NULL;
    SYMM__CU(MemHostAlloc(&pinned, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    s->pinned = pinned;
    memset(pinned, 0, 64);
    s->err_word = (int *)&s->pinned[1];
    if (pthread_mutex_init(&s->amo_lock, NULL) != 0)
        return symm__err(SYMM_ERR_SYSTEM, "pthread_mutex_init failed");
    s->amo_lock_init = true;
    if (pthread_mutex_init(&s->reg_lock, NULL) != 0)
        return symm__err(SYMM_ERR_SYSTEM, "pthread_mutex_init failed");
    s->reg_lock_init = true;

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
    SYMM_TRY(env_size("SYMM_CUDA_COPY_KERNEL_MIN", CU_COPY_KERNEL_MIN, &s->copy_kernel_min));
    SYMM_TRY(env_size("SYMM_CUDA_COPY_KERNEL_MAX", atomic_load(&s->pdl) ? CU_COPY_KERNEL_MAX : 0,
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
static symm_status coll_setup(symm__ctx *ctx, cu_state *s);

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
    st = coll_setup(ctx, s);
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
static symm_status map_new_chunk(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t size,
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
    SYMM_TRY(map_new_chunk(ctx, s, s->backed, want - s->backed, "heap", SYMM_SUCCESS));
    s->backed = want;
    ctx->heap_mapped = new_mapped;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Collective scratch: LL and staged (setup; used by cuda_coll)             */
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

/* Largest payload per pair of PEs (bytes PE i sends PE j) for which "auto"
 * picks the one-shot LL algorithm (one kernel, no barrier, but twice the
 * bytes on the link), by team size and kind (copy: all-gather, all-to-all).
 * Reductions: 128 KiB up to 4 PEs, where LL128 takes over (faster from
 * there: 2 PEs, 512 KiB all-reduce 4.6-5.0 us against LL's 6.0). Copies on
 * 2 PEs: 512 KiB (2 x H200, C graphs, 2026-11-27 seventh round: all-gather
 * of 512 KiB a pair 6.1 us against 7.9 with push, 256 KiB 4.3 against 7.2;
 * at 1 MiB a pair LL was slower, 9.6 against 9.2); copies on 3-4 PEs: 128
 * KiB, not remeasured since the polling storm was fixed. Teams of 5-8 PEs:
 * not measured, scaled down (each PE stores n - 1 copies and spins on n - 1
 * peers). The default scratch (SYMM_CUDA_LL_BYTES) holds the largest
 * threshold of a team of the host's PEs: 512 KiB on 2-GPU hosts. */
static uint64_t ll_threshold(int32_t n, bool copy) {
    if (copy && n == 2) return 512u << 10;
    return n <= 4 ? 128u << 10 : 32u << 10;
}

/* Called once by cuda_heap_init on every PE, after the reservations: read
 * the configuration, check that every PE has the same, then create, zero and
 * share the scratch like a heap chunk (kept in s->chunks, so heap_fini
 * releases it). Collective. */
static symm_status coll_setup(symm__ctx *ctx, cu_state *s) {
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
        mine.status = env_size("SYMM_CUDA_LL_BYTES", 0, &mine.ll_max);
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_STAGED_BYTES", 4u << 20, &mine.st_bytes);
    mine.st_set = getenv("SYMM_CUDA_STAGED_BYTES") && *getenv("SYMM_CUDA_STAGED_BYTES");
    mine.chunk_set = getenv("SYMM_CUDA_STAGED_CHUNK") && *getenv("SYMM_CUDA_STAGED_CHUNK");
    mine.steps_set = getenv("SYMM_CUDA_STAGED_STEPS") && *getenv("SYMM_CUDA_STAGED_STEPS");
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_STAGED_CHUNK", CU_ST_CHUNK_DEFAULT, &mine.st_chunk);
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_STAGED_STEPS", CU_ST_STEPS, &mine.st_steps);
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_STAGED_LAND", CU_ST_LAND_DEFAULT, &mine.st_land);
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_STAGED_SWAP", CU_ST_SWAP_DEFAULT, &mine.st_swap);
    mine.l8_set = getenv("SYMM_CUDA_LL128_BYTES") && *getenv("SYMM_CUDA_LL128_BYTES");
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_LL128_BYTES", CU_L8_BYTES_DEFAULT, &mine.l8_bytes);
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_LL128_ONESHOT", CU_L8_ONESHOT_DEFAULT, &mine.l8_oneshot);
    mine.ce_set = getenv("SYMM_CUDA_CE_BYTES") && *getenv("SYMM_CUDA_CE_BYTES");
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_CE_BYTES", CU_CE_BYTES_DEFAULT, &mine.ce_bytes);
    if (mine.status == SYMM_SUCCESS)
        mine.status = env_size("SYMM_CUDA_CE_PIECES", CU_CE_PIECES, &mine.ce_pieces);
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
    if (!mine.ll_set) mine.ll_max = ll_threshold(s->ll_pes < 2 ? 2 : s->ll_pes, true);
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
    st = s->ll_slot ? get_fn(s, &s->f_ll_copy, "symm_k_ll_copy") : SYMM_SUCCESS;
    if (st == SYMM_SUCCESS) st = get_fn(s, &s->f_ce_wait, "symm_k_ce_wait");
    if (st == SYMM_SUCCESS) {
        CUresult r = symm__cu.StreamCreate(&s->s_ce, CU_STREAM_NON_BLOCKING);
        if (r == CUDA_SUCCESS) r = symm__cu.StreamCreate(&s->s_ce_sig, CU_STREAM_NON_BLOCKING);
        for (size_t i = 0; i < sizeof s->ev_ce_copy / sizeof s->ev_ce_copy[0] && r == CUDA_SUCCESS; i++)
            r = symm__cu.EventCreate(&s->ev_ce_copy[i], CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS) r = symm__cu.EventCreate(&s->ev_ce_fork, CU_EVENT_DISABLE_TIMING);
        if (r == CUDA_SUCCESS) r = symm__cu.EventCreate(&s->ev_ce_join, CU_EVENT_DISABLE_TIMING);
        if (r != CUDA_SUCCESS) st = symm__cu_fail(r, "cuStreamCreate / cuEventCreate (copy-engine collectives)");
    }
    st = map_new_chunk(ctx, s, s->span, span, "collective scratch", st);
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
static symm_status scratch_zero_slots(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t n) {
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
    pthread_mutex_lock(&s->reg_lock);
    for (size_t i = 0; i < s->n_regs; i++) {
        if (s->regs[i].off != off) continue;
        cu_map m = s->regs[i];
        s->regs[i] = s->regs[--s->n_regs];
        pthread_mutex_unlock(&s->reg_lock);
        map_release(s, &m);
        free(m.h);
        return;
    }
    pthread_mutex_unlock(&s->reg_lock);
}

/* ------------------------------------------------------------------------ */
/* Host-initiated RMA, atomics, ordering                                     */
/* ------------------------------------------------------------------------ */

/* Copy n bytes on the internal stream. cuMemcpy on overlapping ranges is
 * undefined (a same-PE put/get whose local side lies in the heap): those go
 * through a temporary device buffer, like memmove. */
static symm_status copy_async(cu_state *s, CUdeviceptr dst, CUdeviceptr src, uint64_t n) {
    if (!(dst < src + n && src < dst + n) || dst == src) {
        if (dst != src) SYMM__CU(MemcpyAsync(dst, src, n, s->s_int));
        return SYMM_SUCCESS;
    }
    CUdeviceptr tmp = 0;
    SYMM__CU(MemAlloc(&tmp, n));
    CUresult r = symm__cu.MemcpyAsync(tmp, src, n, s->s_int);
    if (r == CUDA_SUCCESS) r = symm__cu.MemcpyAsync(dst, tmp, n, s->s_int);
    CUresult r2 = symm__cu.StreamSynchronize(s->s_int);
    symm__cu.MemFree(tmp);
    if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuMemcpyAsync(overlapping same-PE copy)");
    if (r2 != CUDA_SUCCESS) return symm__cu_fail(r2, "cuStreamSynchronize(overlapping same-PE copy)");
    return SYMM_SUCCESS;
}

static symm_status cuda_put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                            uint32_t flags) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(copy_async(s, (CUdeviceptr)(uintptr_t)(b + off), (CUdeviceptr)(uintptr_t)src, n));
    if (flags & SYMM__NBI) {
        atomic_store(&s->nbi_pending, true);
        return SYMM_SUCCESS;
    }
    return finish(s, NULL);
}

static symm_status cuda_get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                            uint32_t flags) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM_TRY(copy_async(s, (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)(b + off), n));
    if (flags & SYMM__NBI) {
        atomic_store(&s->nbi_pending, true);
        return SYMM_SUCCESS;
    }
    return finish(s, NULL);
}

static uint32_t amo_size(uint32_t dtype) {
    switch (dtype) {
    case SYMM_DTYPE_INT32:
    case SYMM_DTYPE_UINT32:
    case SYMM_DTYPE_FLOAT32: return 4;
    case SYMM_DTYPE_INT64:
    case SYMM_DTYPE_UINT64:
    case SYMM_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static symm_status cuda_atomic(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype,
                               uint32_t op, const void *value, const void *compare,
                               void *fetched) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return unreachable(ctx, pe);
    uint32_t size = amo_size(dtype);
    if (!size) return symm__err(SYMM_ERR_INVALID_ARG, "atomics need a 4- or 8-byte dtype");
    if (op > SYMM_AMO_XOR) return symm__err(SYMM_ERR_INVALID_ARG, "unknown atomic op %u", op);
    uint64_t v = 0, c = 0;
    if (value) memcpy(&v, value, size);
    if (compare) memcpy(&c, compare, size);
    SYMM_TRY(cu_enter(s));
    void *addr = b + off;
    uint64_t *out = &s->pinned[0];
    void *args[] = {&addr, &size, &op, &v, &c, &out};
    pthread_mutex_lock(&s->amo_lock);
    symm_status st = launch(s, s->f_amo, "cuLaunchKernel(symm_k_amo)", 1, 1, 1, s->s_int, args);
    if (st == SYMM_SUCCESS) st = finish(s, NULL);
    uint64_t r = *(volatile uint64_t *)out;
    pthread_mutex_unlock(&s->amo_lock);
    if (st == SYMM_SUCCESS && fetched) memcpy(fetched, &r, size); /* little-endian */
    return st;
}

static symm_status cuda_quiet(symm__ctx *ctx) {
    cu_state *s = ctx->backend;
    SYMM_TRY(cu_enter(s));
    return finish(s, NULL);
}

static symm_status cuda_fence(symm__ctx *ctx) {
    (void)ctx; /* host operations share one in-order stream: already ordered */
    return SYMM_SUCCESS;
}

static symm_status cuda_memset0(symm__ctx *ctx, uint64_t off, uint64_t n) {
    cu_state *s = ctx->backend;
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    SYMM__CU(MemsetD8Async((CUdeviceptr)(uintptr_t)(ctx->heap_base + off), 0, n, s->s_int));
    SYMM_TRY(scratch_zero_slots(ctx, s, off, n));
    return finish(s, NULL);
}

/* ------------------------------------------------------------------------ */
/* Stream-ordered point-to-point                                             */
/* ------------------------------------------------------------------------ */

/* Where local memory p is, as kernels on our device see it: CU_MEM_GPU (our
 * GPU's memory, *dev its address; our heap needs no driver query),
 * CU_MEM_PINNED (host memory mapped for the device, *dev its device address)
 * or CU_MEM_OTHER (pageable host memory, another GPU's: copy engine only). */
enum { CU_MEM_OTHER, CU_MEM_PINNED, CU_MEM_GPU };
static int mem_kind(const symm__ctx *ctx, const cu_state *s, const void *p, CUdeviceptr *dev) {
    uintptr_t a = (uintptr_t)p;
    if (a >= (uintptr_t)ctx->heap_base && a < (uintptr_t)ctx->heap_base + s->span) {
        *dev = (CUdeviceptr)a;
        return CU_MEM_GPU;
    }
    unsigned int type = 0;
    CUdeviceptr dp = 0;
    int ord = -1;
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *data[3] = {&type, &dp, &ord};
    if (symm__cu.PointerGetAttributes(3, attrs, data, (CUdeviceptr)a) != CUDA_SUCCESS)
        return CU_MEM_OTHER;
    if (type == CU_MEMORYTYPE_HOST && dp) {
        *dev = dp;
        return CU_MEM_PINNED;
    }
    if (type == CU_MEMORYTYPE_DEVICE && ord == s->ordinal) {
        *dev = (CUdeviceptr)a;
        return CU_MEM_GPU;
    }
    return CU_MEM_OTHER;
}

/* 64 bytes per thread (4 x 16-byte loads in flight, then the stores): the
 * fastest shape in probe_cuda from 4 KiB to 4 MiB. */
static symm_status launch_copy(cu_state *s, CUdeviceptr dst, CUdeviceptr src, uint64_t n,
                               CUstream cs) {
    void *args[] = {&dst, &src, &n};
    uint64_t per_block = CU_THREADS * 64u, b = (n + per_block - 1) / per_block;
    unsigned cap = s->sms > 0 ? 4u * (unsigned)s->sms : 512u;
    return launch(s, s->f_copy, "cuLaunchKernel(symm_k_copy)", (unsigned)min_u64(max_u64(b, 1), cap),
                  1, CU_THREADS, cs, args);
}

/* Write one 4/8-byte word, read now, with a stream memory op (ordered after
 * the stream's earlier work). false: not possible, use a kernel. */
static bool write_value(cu_state *s, CUstream cs, CUdeviceptr dst, const void *src, uint32_t n) {
    CUresult r;
    if (n == 8) {
        uint64_t v;
        memcpy(&v, src, 8);
        r = symm__cu.StreamWriteValue64(cs, dst, v, CU_STREAM_WRITE_VALUE_DEFAULT);
    } else {
        uint32_t v;
        memcpy(&v, src, 4);
        r = symm__cu.StreamWriteValue32 ? symm__cu.StreamWriteValue32(cs, dst, v, CU_STREAM_WRITE_VALUE_DEFAULT)
                                        : CUDA_ERROR_NOT_SUPPORTED;
    }
    return r == CUDA_SUCCESS;
}

static symm_status cuda_put_stream(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                                   uint64_t n, void *stream) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    CUdeviceptr dst = (CUdeviceptr)(uintptr_t)(b + off), dsrc = 0;
    const bool kernel_size = n >= s->copy_kernel_min && n <= s->copy_kernel_max;
    const int kind = kernel_size || n <= SYMM__INLINE_BYTES ? mem_kind(ctx, s, src, &dsrc) : CU_MEM_OTHER;
    const bool dev_src = kind != CU_MEM_OTHER;
    const char *path = "copy engine (cuMemcpyAsync)";
    if (kind == CU_MEM_GPU && kernel_size) {
        path = "SM copy kernel";
        SYMM_TRY(launch_copy(s, dst, dsrc, n, cs));
    } else if (!dev_src && (n == 4 || n == 8) && dst % n == 0 && atomic_load(&s->memops) &&
               write_value(s, cs, dst, src, (uint32_t)n)) {
        /* one word from pageable memory: a stream memory op, no kernel */
        path = "stream memory op (cuStreamWriteValue)";
    } else if (!dev_src && n <= SYMM__INLINE_BYTES) {
        path = "store kernel, data in its parameters";
        /* pageable source: carried in the kernel parameter (capturable) */
        symm__inline_data d;
        memset(&d, 0, sizeof d);
        memcpy(d.bytes, src, n);
        uint32_t n32 = (uint32_t)n;
        void *args[] = {&dst, &d, &n32};
        SYMM_TRY(launch(s, s->f_store, "cuLaunchKernel(symm_k_store)", 1, 1, 64, cs, args));
    } else {
        SYMM__CU(MemcpyAsync(dst, (CUdeviceptr)(uintptr_t)src, n, cs));
    }
    SYMM_TRACE(SYMM_LOG_STREAM, "cuda: put of %llu bytes to PE %d at offset %llu%s: %s",
               (unsigned long long)n, (int)pe, (unsigned long long)off,
               stream ? "" : " (blocking)", path);
    return finish(s, stream);
}

static symm_status cuda_get_stream(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off,
                                   uint64_t n, void *stream) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return unreachable(ctx, pe);
    if (!n) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    CUdeviceptr src = (CUdeviceptr)(uintptr_t)(b + off);
    SYMM__CU(MemcpyAsync((CUdeviceptr)(uintptr_t)dst, src, n, cs));
    return finish(s, stream);
}

static symm_status cuda_signal_stream(symm__ctx *ctx, int32_t pe, uint64_t off, uint64_t value,
                                      uint32_t sig_op, void *stream) {
    cu_state *s = ctx->backend;
    uint8_t *b = ctx->peer_base[pe];
    if (!b) return unreachable(ctx, pe);
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    uint64_t *addr = (uint64_t *)(void *)(b + off);
    if (sig_op == SYMM_SIGNAL_SET && atomic_load(&s->memops)) {
        /* the default flags put a memory barrier before the write: earlier
         * work of the stream is visible first */
        CUresult r = symm__cu.StreamWriteValue64(cs, (CUdeviceptr)(uintptr_t)addr, value,
                                                 CU_STREAM_WRITE_VALUE_DEFAULT);
        if (r == CUDA_SUCCESS) return finish(s, stream);
        if (atomic_exchange(&s->memops, false)) /* e.g. not allowed on peer memory: use kernels */
            SYMM_WARN(SYMM_LOG_BACKEND, "cuda: cuStreamWriteValue64 failed (%d); stream signals "
                      "use a kernel from now on", (int)r);
    }
    void *args[] = {&addr, &value, &sig_op};
    SYMM_TRY(launch(s, s->f_signal, "cuLaunchKernel(symm_k_signal)", 1, 1, 1, cs, args));
    return finish(s, stream);
}

static symm_status cuda_wait_stream(symm__ctx *ctx, uint64_t off, uint32_t cmp, uint64_t value,
                                    void *stream) {
    cu_state *s = ctx->backend;
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    uint64_t *addr = (uint64_t *)(void *)(ctx->heap_base + off);
    /* cuStreamWaitValue64's GEQ is a cyclic comparison; only EQ is exact */
    if (cmp == SYMM_CMP_EQ && s->stream_memops && atomic_load(&s->memops)) {
        CUresult r = symm__cu.StreamWaitValue64(cs, (CUdeviceptr)(uintptr_t)addr, value,
                                                CU_STREAM_WAIT_VALUE_EQ);
        if (r == CUDA_SUCCESS) return finish(s, stream);
        if (atomic_exchange(&s->memops, false))
            SYMM_WARN(SYMM_LOG_BACKEND, "cuda: cuStreamWaitValue64 failed (%d); stream waits use "
                      "a kernel from now on (SYMM_CUDA_STREAM_MEMOPS ignored)", (int)r);
    }
    int *err = s->err_word;
    void *args[] = {&addr, &cmp, &value, &s->timeout_ns, &err};
    SYMM_TRY(launch(s, s->f_wait, "cuLaunchKernel(symm_k_wait)", 1, 1, 1, cs, args));
    return finish(s, stream);
}

static symm_status cuda_quiet_stream(symm__ctx *ctx, void *stream) {
    cu_state *s = ctx->backend;
    if (!stream) return cuda_quiet(ctx);
    /* Stream work completes in stream order: only host-issued nbi operations
     * (internal stream) need joining, and only outside a capture. */
    if (!atomic_load(&s->nbi_pending)) return SYMM_SUCCESS;
    SYMM_TRY(cu_enter(s));
    CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_NONE;
    SYMM__CU(StreamIsCapturing((CUstream)stream, &cap));
    if (cap != CU_STREAM_CAPTURE_STATUS_NONE) return SYMM_SUCCESS;
    SYMM__CU(EventRecord(s->ev_int, s->s_int));
    SYMM__CU(StreamWaitEvent((CUstream)stream, s->ev_int, 0));
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Team barrier on a stream and collectives                                  */
/* ------------------------------------------------------------------------ */

/* Every team PE must be load/store reachable (the kernels store to peers). */
static symm_status team_reachable(const symm__ctx *ctx, const symm__team *team) {
    for (int32_t j = 0; j < team->n_pes; j++) {
        int32_t pe = symm__team_world_pe(team, j);
        if (!ctx->peer_base[pe]) return unreachable(ctx, pe);
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
        if (!base[j]) return unreachable(ctx, pe);
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

/* Barrier kernel: epoch = counter + bump (1: a stream barrier; 2: the
 * closing barrier of a collective whose data kernel does not close it). */
static symm_status launch_barrier(cu_state *s, const symm__team *team, char *const *base,
                                  uint64_t bump, CUstream cs) {
    unsigned threads = team->n_pes <= 32 ? 32 : 64;
    if (team->n_pes <= 2) {
        symm__kbarrier_params2 p;
        CU_FILL_BARRIER_PARAMS(p);
        void *args[] = {&p};
        return launch(s, s->f_barrier2, "cuLaunchKernel(symm_k_barrier_2)", 1, 1, threads, cs, args);
    }
    if (team->n_pes <= 8) {
        symm__kbarrier_params8 p;
        CU_FILL_BARRIER_PARAMS(p);
        void *args[] = {&p};
        return launch(s, s->f_barrier8, "cuLaunchKernel(symm_k_barrier_8)", 1, 1, threads, cs, args);
    }
    symm__kbarrier_params64 p;
    CU_FILL_BARRIER_PARAMS(p);
    void *args[] = {&p};
    return launch(s, s->f_barrier64, "cuLaunchKernel(symm_k_barrier_64)", 1, 1, threads, cs, args);
}

/* Barrier of a team larger than a parameter block holds: heap bases come
 * from the device peer table, so the team must be strided (split teams and
 * the world are; only the SHARED/NODE teams of irregular layouts are not). */
static symm_status launch_barrier_wide(cu_state *s, const symm__team *team, CUstream cs) {
    symm__kbarrier_wide_params p;
    memset(&p, 0, sizeof p);
    p.table = (char *const *)(uintptr_t)s->peer_table;
    p.start = symm__team_world_pe(team, 0);
    p.stride = team->n_pes > 1 ? symm__team_world_pe(team, 1) - p.start : 1;
    for (int32_t j = 0; j < team->n_pes; j++)
        if (symm__team_world_pe(team, j) != p.start + j * p.stride)
            return symm__err(SYMM_ERR_NOT_SUPPORTED,
                             "GPU barriers of teams over %d PEs need a strided team (this "
                             "team of %d PEs is not)", CU_PARAM_PES, (int)team->n_pes);
    p.me = team->my_pe;
    p.n = team->n_pes;
    p.area_off = symm__team_sync_off(s->ctx, team->slot) + CU_BARRIER_OFF;
    p.bump = 1;
    p.timeout_ns = s->timeout_ns;
    p.err = s->err_word;
    void *args[] = {&p};
    return launch(s, s->f_barrier_wide, "cuLaunchKernel(symm_k_barrier_wide)", 1, 1, 256, cs,
                  args);
}

static symm_status cuda_sync_stream(symm__ctx *ctx, struct symm__team *team, void *stream) {
    cu_state *s = ctx->backend;
    SYMM_TRY(team_reachable(ctx, team));
    SYMM_TRY(cu_enter(s));
    if (team->n_pes > CU_PARAM_PES) {
        SYMM_TRY(launch_barrier_wide(s, team, stream_of(s, stream)));
    } else if (team->n_pes > 1) {
        char *base[CU_PARAM_PES];
        SYMM_TRY(team_bases(ctx, team, base));
        SYMM_TRY(launch_barrier(s, team, base, 1, stream_of(s, stream)));
    }
    return finish(s, stream);
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
        CUresult r = module_fn(s, &fn, name);
        if (r == CUDA_ERROR_NOT_FOUND)
            return symm__err(SYMM_ERR_INVALID_ARG, "reduction op %s is not defined for %s",
                             op_names[op], dtype_names[dtype]);
        if (r != CUDA_SUCCESS) return symm__cu_fail(r, name);
        /* the staged kernel's in-place 2-PE form: two pieces in shared memory */
        if (form == CU_RED_STAGED && s->st_swap_max) {
            r = symm__cu.FuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          (int)(2 * s->st_swap_max));
            if (r != CUDA_SUCCESS) return symm__cu_fail(r, "cuFuncSetAttribute(max dynamic shared memory)");
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

/* SYMM_CUDA_COLL_ALGO forces an algorithm other than `algo` (auto forces none) */
static bool forced_other(const cu_state *s, int algo) {
    return s->coll_algo != CU_ALGO_AUTO && s->coll_algo != algo;
}

/* One-shot LL form of a collective (kernels_ll.cu), or false with why not
 * (for the trace) when cuda_coll should run the barrier algorithm. */
static bool ll_choose(const cu_state *s, const symm__coll *c, uint64_t pair_bytes,
                      const char **why) {
    const symm__team *team = c->team;
    if (c->kind == SYMM__COLL_COLLECT) return *why = "collect has per-PE sizes", false;
    /* The two parities are safe only when every PE needs a line from every
     * peer to finish a call (kernels_common.cuh "LL"): a broadcast's root needs none, so
     * it could run two calls ahead and overwrite lines not yet read. */
    if (c->kind == SYMM__COLL_BROADCAST) return *why = "broadcast (the root waits for nobody)", false;
    if (team->n_pes < 2) return *why = "one PE", false;
    if (forced_other(s, CU_ALGO_LL))
        return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->ll_slot) return *why = "no LL scratch (SYMM_CUDA_LL_BYTES=0 or one GPU per host)", false;
    if (team->n_pes > s->ll_pes) return *why = "team larger than the LL scratch serves", false;
    if (team->slot >= CU_LL_SLOTS) return *why = "team slot without LL scratch", false;
    if (pair_bytes > s->ll_max) return *why = "above SYMM_CUDA_LL_BYTES", false;
    if (s->coll_algo == CU_ALGO_LL) return *why = "SYMM_CUDA_COLL_ALGO=ll", true;
    if (pair_bytes > ll_threshold(team->n_pes, c->kind == SYMM__COLL_FCOLLECT ||
                                                   c->kind == SYMM__COLL_ALLTOALL))
        return *why = "auto, above the LL threshold", false;
    return *why = "auto, at most the LL threshold", true;
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
    return launch(s, f, "cuLaunchKernel(symm_k_ll*)", blocks, 1, CU_THREADS, cs, args);
}

/* LL128 for a reduction, with its shape (coll_plan.c) in *sh, or false
 * with why not (for the trace). "auto" takes it for every reduction above
 * LL's sizes that fits the lines. On 2 and 4 x H200 it beat the staged and
 * barrier algorithms at every size it holds, back to back and in graphs
 * (2 PEs, all-reduce 1 MiB: 6.9 us in a graph against 8.5 staged and 9.3
 * two-shot, 7.8 back to back against 9.2; 4 PEs: 9.7-9.8 against 11.1
 * two-shot in a graph, 10.9 against 14.0 back to back). The PyTorch-graph
 * stall that kept it opt-in for a while was a polling storm, now avoided
 * by the waiters' naps (kernels_common.cuh "polite polling"). */
static bool l8_choose(const cu_state *s, const symm__coll *c, symm__l8_shape *sh,
                      const char **why) {
    const symm__team *team = c->team;
    if (c->kind != SYMM__COLL_REDUCE && c->kind != SYMM__COLL_REDUCESCATTER)
        return *why = "not a reduction", false;
    if (forced_other(s, CU_ALGO_LL128))
        return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->st_slot || !s->l8_lines)
        return *why = "no LL128 lines (SYMM_CUDA_LL128_BYTES=0 or one GPU per host)", false;
    if (team->n_pes < 2) return *why = "one PE", false;
    if (team->n_pes > s->ll_pes) return *why = "team larger than the LL128 lines serve", false;
    if (team->slot >= CU_ST_SLOTS) return *why = "team slot without LL128 lines", false;
    if (!symm__l8_make_shape(c->kind == SYMM__COLL_REDUCESCATTER, team->n_pes, c->nelems,
                             c->elem_size, s->l8_lines, s->l8_oneshot, sh))
        return *why = "above SYMM_CUDA_LL128_BYTES", false;
    if (s->coll_algo == CU_ALGO_LL128) return *why = "SYMM_CUDA_COLL_ALGO=ll128", true;
    return *why = "auto, above LL and within the LL128 lines", true;
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
    return launch(s, f, "cuLaunchKernel(symm_k_l8reduce)", blocks, 1, threads, cs, args);
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
 * operations (s->memops), and the area exists for the world team only. */
/* Auto takes it for a block of at least CU_CE_AUTO_MIN4 bytes a PE on 4 PEs
 * and CU_CE_AUTO_MIN3 on 3. 4 x H200, C graphs, reduce-scatter of (block x
 * 4): 32 MiB 106.7 us against 91.1 before (the peer form), 64 MiB 173.0
 * against 170.7 (pull), 96 MiB 241.4 against 255.4, 128 MiB 308.1 against
 * 329.5, 256 MiB 582.8 against 637.8, 512 MiB 1158.6 against 1244.6; on 3
 * PEs (block x 3) against the pull: 48 MiB 121.1 against 113.2, 96 MiB 210.7
 * against 215.8, 384 MiB 789.3 against 818.0 (docs/GPU-RESULTS.md, twelfth
 * round). Not measured with more than 4 PEs. */
#define CU_CE_AUTO_MIN4 (24u << 20)
#define CU_CE_AUTO_MIN3 (32u << 20)
static bool ce_choose(const cu_state *s, const symm__coll *c, uint64_t pair_bytes,
                      const char **why) {
    const symm__team *team = c->team;
    const bool exchange = c->kind == SYMM__COLL_FCOLLECT || c->kind == SYMM__COLL_ALLTOALL;
    if (c->kind != SYMM__COLL_REDUCESCATTER && c->kind != SYMM__COLL_REDUCE && !exchange)
        return *why = "not a reduction, all-gather or all-to-all", false;
    if (forced_other(s, CU_ALGO_CE)) return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->ce_off) return *why = "no copy-engine area (no collective scratch)", false;
    if (!exchange && !s->ce_slot)
        return *why = "no copy-engine slots (SYMM_CUDA_CE_BYTES=0, or a host of 2 or more than 4 PEs)", false;
    if (team->slot != 0) return *why = "the copy-engine area serves the world team only", false;
    if (team->n_pes < 2 || team->n_pes > s->ll_pes) return *why = "team size", false;
    if (!atomic_load(&s->memops)) return *why = "no stream memory operations", false;
    if (s->coll_algo == CU_ALGO_CE) return *why = "SYMM_CUDA_COLL_ALGO=ce", true;
    /* the all-gather and all-to-all by the copy engines only when forced
     * until measured */
    if (exchange) return *why = "auto: the copy-engine all-gather / all-to-all only when forced", false;
    /* the all-reduce (reduce-scatter, then all-gather by the copy engines)
     * only when forced: not measured on 3 or 4 GPUs yet */
    if (c->kind == SYMM__COLL_REDUCE) return *why = "auto: the copy-engine all-reduce only when forced", false;
    if (team->n_pes == 4 && pair_bytes >= CU_CE_AUTO_MIN4)
        return *why = "auto, reduce-scatter of 24 MiB or more a PE on 4 PEs", true;
    if (team->n_pes == 3 && pair_bytes >= CU_CE_AUTO_MIN3)
        return *why = "auto, reduce-scatter of 32 MiB or more a PE on 3 PEs", true;
    return *why = "auto, where other forms were as fast or faster", false;
}

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
    return launch(s, s->f_ce_wait, "cuLaunchKernel(symm_k_ce_wait)", 1, 1, 32, cs, args);
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
        symm_status st = launch(s, f, "cuLaunchKernel(symm_k_cereduce)",
                                copy_blocks(my_len, thr, cap), 1, thr, cs, args);
        /* joined back even when the launch failed: no stream stays forked */
        SYMM__CU(StreamWaitEvent(cs, s->ev_ce_join, 0));
        SYMM_TRY(st);
    }
    if (!all) return SYMM_SUCCESS;
    return ce_spread(s, c, base, cs, my_dst, 0, my_dst, blen[me]);
}

/* Whether a staged reduction may land its pieces in the peer's dst
 * (kernels_staged.cuh "Landing"): 2 PEs, landing on (SYMM_CUDA_STAGED_LAND),
 * and a dst that does not overlap the input, which the peer's pieces would
 * overwrite before this PE has sent it. */
static bool st_can_land(const cu_state *s, const symm__coll *c) {
    const uint64_t out = c->nelems * c->elem_size;
    const uint64_t in = c->kind == SYMM__COLL_REDUCESCATTER ? 2 * out : out;
    return c->team->n_pes == 2 && s->st_land &&
           (c->dst_off + out <= c->src_off || c->src_off + in <= c->dst_off);
}

/* Whether a staged reduction may run the in-place form of 2 PEs
 * (kernels_staged.cuh "Swap"): an all-reduce in place, with the shared memory
 * for it (SYMM_CUDA_STAGED_SWAP). */
static bool st_can_swap(const cu_state *s, const symm__coll *c) {
    return c->team->n_pes == 2 && s->st_swap_max && c->kind == SYMM__COLL_REDUCE &&
           c->dst_off == c->src_off;
}

/* The peer form's shape for slices of up to len bytes on n PEs
 * (symm__st_peer_plan, with this GPU's SMs and the staging settings), or
 * false where it does not apply: one PE, 2 PEs without gather (there a
 * reduce-scatter, or an all-reduce that every PE reduces whole, would
 * leave every result to the end), or more than the staging holds. */
static bool st_peer_shape(const cu_state *s, uint64_t len, int32_t n, bool gather,
                          symm__st_plan *plan) {
    const uint64_t sms = min_u64(s->sms > 0 ? (uint64_t)s->sms : 64, SYMM__ST_MAX_BLOCKS);
    return (n > 2 || gather) &&
           symm__st_peer_plan(len, n, sms, s->st_bytes, s->st_peer_chunk, s->st_peer_steps,
                              SYMM__ST_PEER_STEPS, gather, plan);
}

/* Whether an all-reduce on 2 PEs takes the peer form in halves (each PE
 * reduces one half and writes it to both) rather than every PE reducing the
 * whole vector: where the staging holds the halves, in "auto" from
 * CU_ST_AUTO_PEER2_MIN (below it two-shot or LL128 was as fast; at 1 MiB
 * and less, which auto stages on 2 PEs only without LL128, the whole-vector
 * form is the one measured), with SYMM_CUDA_COLL_ALGO=staged at every size. */
#define CU_ST_AUTO_PEER2_MIN (6u << 20)
static bool st_halves(const cu_state *s, const symm__coll *c, symm__st_plan *plan) {
    const uint64_t es = c->elem_size;
    return c->team->n_pes == 2 && c->kind == SYMM__COLL_REDUCE &&
           (s->coll_algo == CU_ALGO_STAGED || c->nelems * es >= CU_ST_AUTO_PEER2_MIN) &&
           st_peer_shape(s, symm__slice_elems(c->nelems, 2, es) * es, 2, true, plan);
}

/* Staged form of a reduction (kernels_staged.cuh), or false with why not
 * (for the trace) when cuda_coll should run the barrier algorithm. Called
 * once LL was ruled out. "auto" takes it where it beat the two-shot / pull
 * kernels on 2, 3 and 4 x H200 (docs/DECISIONS.md "Collectives"): on 2 PEs
 * up to 1 MiB a pair (all-reduce 1 MiB: 8.0-8.4 us in a graph against
 * 9.1-9.5; reduce-scatter of 512 KiB a pair: 6.4-6.7 against 8.1); on 2 PEs
 * the all-reduce from 6 MiB in the peer form, where the staging holds its
 * halves (16 MiB: 51.6-51.9 us against two-shot's 56.5-56.8 and landing's
 * 55.3, 32 MiB: 99.7-100.1 against 108.9-109.6, 6 MiB: 24.4 against 24.6;
 * back to back 1.6-1.9 us faster at 4-5 MiB too, but 0.3-0.9 slower in
 * graphs); on 2 PEs out of place, landing, for every reduce-scatter (128
 * MiB a pair: 383 us against 418) and, beyond the peer form, the all-reduce
 * from 16 MiB (256 MiB: 750-756 us against
 * 817, 16 MiB: 54.8-55.1 against 56.6; at 4 MiB two-shot was faster, 18.2
 * against 19.5-20.0); on 2 PEs in place (swap) for the all-reduce from 64
 * MiB (256 MiB: 767 us against 814, 64 MiB: 205-210 against 212; 16 MiB
 * even, 1-4 MiB slower). On more PEs: the all-reduce from 4 MiB (4 PEs, in
 * the peer form: 16 MiB 77.6 us against 86.6, 4 MiB 26.5 against 28.0; 256
 * MiB: 339 GB/s bus bandwidth against 316; 3 PEs: 12 MiB 52.7 against
 * 57.5, 32 MiB 150.7 against 155.8; 4 PEs at 32 MiB was 1.5 % slower, 172.9
 * against 170.3); the reduce-scatter from 2 MiB a PE where the peer form
 * holds it (4 PEs: 8 / 16 MiB 25.2 / 45.8 us against 28.6 / 48.3; beyond it
 * the two-group form was slower than pulling, 32 MiB 110.6 against 90.4),
 * and on 3 PEs from there up to CU_ST_AUTO_RS3_MAX a PE (when this was
 * decided the pull reached 150-170 GB/s there, the staged kernel 216-240;
 * the pull has since become faster: 8 / 16 MiB a PE 62.5-62.9 / 113.2-114.2
 * us against 72.9-74.0 / 136.4-137.7, twelfth round; 2-8 MiB a PE not
 * measured again, so they stay staged). Teams
 * of more than 4 PEs, not measured since, take it for the all-reduce from
 * 64 MiB (as 4 PEs did before the peer form). Elsewhere it was slower or
 * even. */
#define CU_ST_AUTO_PAIR_MAX (1u << 20)
#define CU_ST_AUTO_LAND_MIN (16u << 20)
#define CU_ST_AUTO_SWAP_MIN (64u << 20)
#define CU_ST_AUTO_WIDE_MIN (4u << 20)
#define CU_ST_AUTO_WIDE_RS_MIN (2u << 20)
#define CU_ST_AUTO_RS3_MAX (8u << 20)
#define CU_ST_AUTO_WIDER_MIN (64ull << 20)
static bool st_choose(const cu_state *s, const symm__coll *c, uint64_t pair_bytes,
                      const char **why) {
    const symm__team *team = c->team;
    if (c->kind != SYMM__COLL_REDUCE && c->kind != SYMM__COLL_REDUCESCATTER)
        return *why = "not a reduction", false;
    if (forced_other(s, CU_ALGO_STAGED))
        return *why = "SYMM_CUDA_COLL_ALGO", false;
    if (!s->st_slot || !s->st_bytes) return *why = "no staged scratch (SYMM_CUDA_STAGED_BYTES=0 or one GPU per host)", false;
    if (team->n_pes < 2) return *why = "one PE", false;
    if (team->n_pes > s->ll_pes) return *why = "team larger than the staged scratch serves", false;
    if (team->slot >= CU_ST_SLOTS) return *why = "team slot without staged scratch", false;
    if (s->coll_algo == CU_ALGO_STAGED) return *why = "SYMM_CUDA_COLL_ALGO=staged", true;
    if (team->n_pes == 2 && pair_bytes <= CU_ST_AUTO_PAIR_MAX)
        return *why = "auto, 2 PEs, above LL and at most 1 MiB a pair", true;
    symm__st_plan plan;
    if (st_halves(s, c, &plan))
        return *why = "auto, all-reduce of 6 MiB or more on 2 PEs, halves within the staging "
                      "(peer form)", true;
    if (st_can_land(s, c) && c->kind == SYMM__COLL_REDUCESCATTER)
        return *why = "auto, reduce-scatter on 2 PEs out of place (landing)", true;
    if (st_can_land(s, c) && pair_bytes >= CU_ST_AUTO_LAND_MIN)
        return *why = "auto, all-reduce on 2 PEs out of place from 16 MiB (landing)", true;
    if (st_can_swap(s, c) && pair_bytes >= CU_ST_AUTO_SWAP_MIN)
        return *why = "auto, all-reduce on 2 PEs in place from 64 MiB (swap)", true;
    /* 3 and 4 PEs measured; larger teams keep the earlier 64 MiB */
    const bool wide = team->n_pes > 2 && team->n_pes <= 4;
    if (team->n_pes > 2 && c->kind == SYMM__COLL_REDUCE &&
        pair_bytes >= (wide ? CU_ST_AUTO_WIDE_MIN : CU_ST_AUTO_WIDER_MIN))
        return *why = wide ? "auto, all-reduce of 4 MiB or more on 3 or 4 PEs"
                           : "auto, all-reduce of 64 MiB or more on more than 4 PEs", true;
    if (wide && c->kind == SYMM__COLL_REDUCESCATTER && pair_bytes >= CU_ST_AUTO_WIDE_RS_MIN) {
        if (team->n_pes == 3 && pair_bytes < CU_ST_AUTO_RS3_MAX)
            return *why = "auto, reduce-scatter of 2 to 8 MiB a PE on 3 PEs", true;
        if (team->n_pes == 3)
            return *why = "auto, reduce-scatter of 8 MiB or more a PE on 3 PEs: the pull was faster", false;
        if (st_peer_shape(s, pair_bytes, team->n_pes, false, &plan))
            return *why = "auto, reduce-scatter of 2 MiB or more a PE, within the staging (peer form)", true;
    }
    return *why = "auto, where the barrier algorithms were as fast or faster", false;
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
    } else if (n == 2 && !(peer = st_halves(s, c, &plan))) {
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
    if (n > 2) peer = st_peer_shape(s, len, n, p.gather != 0, &plan);
    const bool land = !peer && st_can_land(s, c);
    const bool swap = !peer && !land && st_can_swap(s, c) && len > s->st_bytes;
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
    return launch_smem(s, f, "cuLaunchKernel(symm_k_streduce)", (unsigned)blocks, 1,
                       2 * SYMM__ST_GROUP, swap ? (unsigned)(2 * chunk) : 0, cs, args);
}

/* Whether the barrier algorithm's all-gather / all-to-all pulls (each PE
 * reads the peers' blocks) instead of pushing (writes its own into the
 * peers'). SYMM_CUDA_COLL_COPY decides when set; auto pushes, which measured
 * faster at every size on 2 and 4 x H200, except an all-gather of more than
 * CU_PULL3_BYTES a PE on a team of 3, where pulling was faster (3 of 4 x
 * H200, 256 MiB: 587 us against 762; below 4 MiB pushing was). Measurements:
 * docs/DECISIONS.md "Collectives". */
#define CU_PULL3_BYTES (2u << 20)
static bool copy_pulls(const cu_state *s, const symm__coll *c, int32_t n) {
    if (s->coll_copy != CU_COPY_AUTO) return s->coll_copy == CU_COPY_PULL;
    return n == 3 && c->kind == SYMM__COLL_FCOLLECT && c->nelems * c->elem_size > CU_PULL3_BYTES;
}

static symm_status cuda_coll(symm__ctx *ctx, const symm__coll *c, void *stream) {
    cu_state *s = ctx->backend;
    const symm__team *team = c->team;
    const int32_t n = team->n_pes, me = team->my_pe;
    char *base[CU_PARAM_PES];
    SYMM_TRY(team_bases(ctx, team, base));
    SYMM_TRY(cu_enter(s));
    CUstream cs = stream_of(s, stream);
    const uint64_t es = c->elem_size;
    const unsigned max_blocks = (unsigned)(s->sms > 0 ? 2 * s->sms : 128);

    /* Algorithm by size (docs/DECISIONS.md "Collectives"): one-shot LL for
     * small payloads, then for reductions LL128 within its lines and the
     * staged kernels where they measured faster, else the barrier
     * algorithms below. */
    const char *why = "";
    const uint64_t pair_bytes = c->nelems * es;
    /* A call of 0 elements still synchronises the team (core/coll.c), which
     * only the barrier algorithms do without data: LL, LL128 and the staged
     * kernels hear from a peer through its data, and a PE that heard from
     * nobody could run two calls ahead of a slow peer and overwrite lines of
     * the parity that peer still reads (gpu_coll "0 elements"). */
    const bool data = pair_bytes > 0;
    if (!data) why = "no data: the barrier algorithm synchronises the team";
    if (data && ll_choose(s, c, pair_bytes, &why)) {
        SYMM_TRY(coll_ll(s, c, base, cs, pair_bytes, why));
        return finish(s, stream);
    }
    symm__l8_shape l8;
    if (data && l8_choose(s, c, &l8, &why)) {
        SYMM_TRY(coll_l8(s, c, base, cs, &l8, why));
        return finish(s, stream);
    }
    if (data && ce_choose(s, c, pair_bytes, &why)) {
        SYMM_TRY(coll_ce(s, c, base, cs, why));
        return finish(s, stream);
    }
    if (data && st_choose(s, c, pair_bytes, &why)) {
        bool done = false;
        SYMM_TRY(coll_staged(s, c, base, cs, why, &done));
        if (done) return finish(s, stream);
        why = "staged: too many steps";
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
        SYMM_TRY(launch(s, f, "cuLaunchKernel(symm_k_reduce)", blocks, 1, CU_THREADS, cs, args));
    } else {
        /* all-gather / all-to-all: push (this PE writes into the peers) or
         * pull (copy_pulls) */
        const bool push = !copy_pulls(s, c, n);
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
                SYMM_TRY(launch(s, s->f_gather, "cuLaunchKernel(symm_k_gather)",
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
            SYMM_TRY(launch(s, s->f_gather, "cuLaunchKernel(symm_k_gather)", bx, 1, thr, cs, args));
        }
    }
    if (n > 1 && !fuse) SYMM_TRY(launch_barrier(s, team, base, 2, cs));
    return finish(s, stream);
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
    SYMM_TRY(copy_async(s, (CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, n));
    return finish(s, NULL);
}

const symm__backend_ops symm__cuda_ops = {
    .name = "cuda",
    .id = SYMM_BACKEND_CUDA,
    .heap_init = cuda_heap_init,
    .heap_grow = cuda_heap_grow,
    .heap_fini = cuda_heap_fini,
    .put = cuda_put,
    .get = cuda_get,
    .atomic = cuda_atomic,
    .quiet = cuda_quiet,
    .fence = cuda_fence,
    .memset0 = cuda_memset0,
    .fini = cuda_fini,
    .coll = cuda_coll,
    .put_stream = cuda_put_stream,
    .get_stream = cuda_get_stream,
    .signal_stream = cuda_signal_stream,
    .wait_stream = cuda_wait_stream,
    .quiet_stream = cuda_quiet_stream,
    .sync_stream = cuda_sync_stream,
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

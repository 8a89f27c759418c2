/*
 * CUDA backend, shared by its files (private to runtime/backends/cuda): the
 * backend's state (cu_state, its lanes and heap maps), the constants its
 * layout depends on, and the functions of the files at the bottom of the
 * backend (cuda_state.c, cuda_heap.c) and of cuda_rma.c. cuda.c's opening
 * comment maps the files and the direction they include and call in.
 * Functions shared between the files are symm__cu_* (helpers) and
 * symm__cuda_* (backend hooks, which the ops table names); the rest stay
 * static.
 */
#ifndef SYMM_CUDA_INTERNAL_H
#define SYMM_CUDA_INTERNAL_H

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
#define CU_N_OPS 7

/* The context's pinned words (cu_state.pinned): 4. */
#define CU_PINNED_BYTES (4 * 8)
/* A team slot's pinned words (symm__cu_slot_words, one allocation for every
 * slot at setup): [CU_SLOT_A2AV] the blocking alltoallv's word and
 * [CU_SLOT_A2AV_STREAM] the stream form's (int, cuda_a2av.c), [CU_SLOT_DONE]
 * the agree's done word, from [CU_LANE_AGREE] the agree records
 * (symm__cuda_coll_agree). */
#define CU_SLOT_A2AV 0
#define CU_SLOT_DONE 1
#define CU_SLOT_A2AV_STREAM 2
#define CU_LANE_AGREE 8
#define CU_LANE_PINNED_BYTES ((CU_LANE_AGREE + CU_PARAM_PES * CU_AGREE_WORDS) * 8)
/* One-shot LL collectives (kernels_ll.cu, kernels_common.cuh "LL"; choice
 * in cuda_tuning.c). The scratch: CU_LL_SLOTS team slots (the predefined teams'
 * four and the first split teams'), each two parities of (ll_pes - 1)
 * sender regions of 2 * SYMM_CUDA_LL_BYTES (16-byte lines of 8 data bytes).
 * It lives at byte span of every heap reservation, beyond the heap (so the
 * core's heap layout does not change), made and shared once at setup
 * (symm__cu_coll_setup): symmetric, never allocated in a call.
 * Teams of more than CU_LL_MAX_PES PEs, and teams of higher slots, use the
 * barrier algorithms. */
#define CU_LL_SLOTS 16
#define CU_LL_MAX_PES 8
/* Staged reductions (kernels_staged.cuh; choice in cuda_tuning.c): the same
 * scratch allocation holds, after the LL slots, CU_ST_SLOTS team slots (the
 * predefined teams') of two parities of (ll_pes - 1) sender regions:
 * SYMM__ST_HDR bytes of flags, then SYMM_CUDA_STAGED_BYTES of staging
 * (default 16 MiB with 2 PEs a host, so that the peer form holds an
 * all-reduce of up to 32 MiB, such as DDP's 25 MiB buckets; 4 MiB with 3
 * or 4, 2 MiB with more: 128, 96 and 112 MiB of scratch a GPU with 2, 4
 * and 8). Teams of higher slots reduce with the barrier algorithms. */
#define CU_ST_SLOTS 4
#define CU_ST_BYTES_MIN (64u << 10)
/* The copy-engine forms (kernels_ce.cu; the area's default size and pieces:
 * cuda_tuning.h). */
#define CU_CE_PIECES_MAX 7u /* arrive words count up to it */
/* copies of a round: one a phase, the last in up to CU_CE_PIECES_MAX */
#define CU_CE_COPIES_MAX (CU_LL_MAX_PES - 2 + CU_CE_PIECES_MAX)
#define CU_SCRATCH_RESERVE (1ull << 30) /* address space kept for the scratch per PE */
enum { CU_ALGO_AUTO, CU_ALGO_LL, CU_ALGO_LL128, CU_ALGO_STAGED, CU_ALGO_CE, CU_ALGO_BASE };
/* How the barrier algorithm's all-gather and all-to-all move data
 * (SYMM_CUDA_COLL_COPY): auto = push, except an all-gather of more than
 * CU_PULL3_BYTES a PE on a team of 3, which pulls (cuda_tuning.c
 * symm__cu_copy_pulls). */
enum { CU_COPY_AUTO, CU_COPY_PUSH, CU_COPY_PULL };

typedef struct cu_map {
    uint64_t off, size;
    CUmemGenericAllocationHandle *h; /* [local_n]; 0 where not mapped */
} cu_map;

/* The lane of a team slot (symm__cu_lane): where the blocking operations of
 * the team in that slot (barrier, collectives, the agree) run and leave
 * their results. Threads may run blocking collectives on different teams
 * at once (symm.h), so each team has its own stream, made on first use
 * (its pinned words come from one allocation made at setup):
 * one team's kernels never queue behind another team's waits (with one
 * stream for all, two PEs that reached two teams' calls in opposite orders
 * waited on each other until the timeout), and its result words are its
 * own. docs/DECISIONS.md "Blocking calls: agreement, lanes, timeouts". */
typedef struct cu_lane {
    CUstream stream;
    CUevent nbi_ev;   /* recorded on the internal stream while nbi work is pending */
    uint64_t *pinned; /* its slot's words (symm__cu_slot_words) */
    uint64_t agrees;  /* agree kernels launched (the done word's value)     */
} cu_lane;

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
    CUfunction f_agree; /* symm_k_agree (symm__cuda_coll_agree) */
    CUfunction f_ring;  /* symm_k_ring (symm__cuda_ring_stream: stream forms via the proxy) */
    CUfunction f_a2av;     /* symm_k_alltoallv (cuda_a2av.c)                   */
    CUfunction f_a2av_ll;  /* symm_k_alltoallv_ll: its LL form                 */
    unsigned a2av_blocks;  /* its grid: SYMM_CUDA_A2AV_BLOCKS, 0 = one a SM     */
    uint64_t a2av_caps[SYMM__MAX_TEAMS][2]; /* by team slot: dst and src capacity of
                                               its latest stream-form call (message) */
    CUfunction f_barrier_wide;
    CUdeviceptr peer_table; /* device copy of ctx->peer_base (n_pes entries) */
    _Atomic(CUfunction) f_reduce[SYMM_DTYPE_COUNT][CU_N_OPS];

    /* host-initiated work */
    CUstream s_int;
    CUevent ev_int;
    /* host nbi puts/gets on s_int: posted counts them, done is the posted
     * count that a finish of s_int saw before it waited (so it covers them);
     * equal: nothing outstanding, and a quiet need not touch the device */
    _Atomic uint64_t nbi_posted, nbi_done;
    pthread_mutex_t amo_lock;
    bool amo_lock_init;
    uint64_t *pinned; /* [0]: atomic result, [1]: error word (int) */
    _Atomic(cu_lane *) lanes[SYMM__MAX_TEAMS]; /* by team slot, made on first use */
    uint64_t *lane_pinned;                     /* every slot's words (setup)       */
    pthread_mutex_t lane_lock;                 /* making one                      */
    bool lane_lock_init;
    int *err_word;      /* CU_ERR_*, read by the runtime's waiting kernels */
    atomic_bool failed_noted; /* CU_ERR_PEER_FAILED recorded as async error  */
    atomic_bool out_of_step;  /* a team wait gave up (CU_ERR_TIMEOUT): every
                                 later team operation fails (symm__cu_teams_ok) */
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

    /* Collective scratch (symm__cuda_coll; symm__cu_coll_setup): symmetric, at byte span
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
    /* Their cached graphs (coll_ce_cached): ce_graphs_cap entries
     * (SYMM_CUDA_CE_GRAPHS; 0: none), used under ce_lock and captured on
     * s_cap. heap_gen counts mappings taken away (cuda_unregister); a cache
     * that saw another count is emptied first. */
    struct cu_ce_graph *ce_graphs;
    uint32_t ce_graphs_cap;
    uint64_t ce_tick, ce_gen;
    atomic_uint_fast64_t heap_gen;
    pthread_mutex_t ce_lock;
    bool ce_lock_init;
    CUstream s_cap;
} cu_state;

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

/* Host nbi operations on the internal stream that no finish covered yet. */
static inline bool cu_nbi_outstanding(cu_state *s) {
    return atomic_load_explicit(&s->nbi_done, memory_order_acquire) !=
           atomic_load_explicit(&s->nbi_posted, memory_order_acquire);
}

#define CU_GAVE_UP_MSG                                                                  \
    "a GPU-side team wait (a barrier or collective) gave up after %llu ms: a peer PE died " \
    "or did not take part; the context's teams are out of step from now on"
#define CU_WAIT_GAVE_UP_MSG \
    "a GPU-side signal wait on a stream gave up after %llu ms (the signal never came)"
#define CU_OUT_OF_STEP_MSG                                                                    \
    "a GPU-side team wait of this context gave up at the timeout (%llu ms) earlier, so its "  \
    "teams may be out of step across PEs (a later call could pair with a peer's earlier "     \
    "one): team operations fail from now on; finalize the context (RMA still works)"
#define CU_PEER_FAILED_MSG "a peer PE of this job failed; GPU-side waits of this context gave up"

static inline CUstream stream_of(const cu_state *s, void *stream) {
    return stream ? (CUstream)stream : s->s_int;
}

/* Blocks of thr threads for a copy of n bytes (16 a thread a round): at
 * least 1, at most cap (or 1 when cap is 0). */
static inline unsigned copy_blocks(uint64_t n, unsigned thr, unsigned cap) {
    const uint64_t b = (n + thr * 16u - 1) / (thr * 16u);
    return (unsigned)min_u64(max_u64(b, 1), max_u64(cap, 1));
}

/* cuda_state.c: errors, launches, blocking waits, lanes, kernels */

/* Take the pinned error word a GPU-side wait left, if any: record it on the
 * context (symm_ctx_async_error) and clear or keep it; returns it (0: none). */
int symm__cu_take_err_word(cu_state *s);

/* PE pe is not load/store reachable from this one: SYMM_ERR_NOT_SUPPORTED. */
symm_status symm__cu_unreachable(const symm__ctx *ctx, int32_t pe);
/* *c for cuLaunchKernelEx: gx x gy blocks of bx threads, smem bytes of
 * dynamic shared memory, on cs, with the one attribute *attr. */
void symm__cu_launch_config(CUlaunchConfig *c, CUlaunchAttribute *attr, unsigned gx,
                            unsigned gy, unsigned bx, unsigned smem, CUstream cs);
/* Launch one of the runtime's kernels (gx x gy blocks of bx threads, smem
 * bytes of dynamic shared memory) on cs, with PDL where the driver takes it. */
symm_status symm__cu_launch_smem(cu_state *s, CUfunction f, const char *name, unsigned gx,
                                 unsigned gy, unsigned bx, unsigned smem, CUstream cs,
                                 void **args);
symm_status symm__cu_launch(cu_state *s, CUfunction f, const char *name, unsigned gx,
                            unsigned gy, unsigned bx, CUstream cs, void **args);
/* The end of every hook: a NULL stream means blocking, so wait for the
 * internal stream (watching the job's health) and report a GPU-side wait
 * that gave up; a stream returns at once. */
symm_status symm__cu_finish(cu_state *s, void *stream);
/* A GPU-side give-up recorded in the error word, as a blocking call's status. */
symm_status symm__cu_check_err_word(cu_state *s);
/* The team's lane (cu_lane), made on first use, with its stream ordered
 * after this context's unquieted nbi work on the internal stream (which it
 * followed when blocking team operations ran there). */
symm_status symm__cu_lane(cu_state *s, const symm__team *team, cu_lane **lane);
/* Destroy a lane (NULL: nothing); state_free. */
void symm__cu_lane_free(cu_lane *l);
/* Team slot slot's pinned words (CU_SLOT_*). */
static inline uint64_t *symm__cu_slot_words(const cu_state *s, int32_t slot) {
    return s->lane_pinned + (size_t)slot * (CU_LANE_PINNED_BYTES / 8);
}
/* Before a team operation: SYMM_ERR_TIMEOUT once a team wait of this
 * context gave up (cu_state.out_of_step; docs/DECISIONS.md "Blocking calls:
 * agreement, lanes, timeouts"), else SYMM_SUCCESS. */
symm_status symm__cu_teams_ok(cu_state *s);
/* Wait for a lane's stream as symm__cu_finish waits for the internal one;
 * with word, only until *word is want (a kernel's last store). */
symm_status symm__cu_lane_finish(cu_state *s, const cu_lane *lane, const uint64_t *word,
                                 uint64_t want);
/* A kernel of the embedded modules by name: the driver's result / a status. */
CUresult symm__cu_module_fn(cu_state *s, CUfunction *f, const char *name);
symm_status symm__cu_get_fn(cu_state *s, CUfunction *f, const char *name);
/* A size from the environment (symm__parse_size), dflt when unset. */
symm_status symm__cu_env_size(const char *name, uint64_t dflt, uint64_t *v);

/* cuda_heap.c: the heap's chunks, growth, registration and teardown, the
 * scratch's zeroing */

/* New GPU memory behind [off, off + size) of every reachable heap range
 * (collective; st: this PE's outcome so far). */
symm_status symm__cu_map_new_chunk(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t size,
                                   const char *what, symm_status st);
symm_status symm__cuda_heap_grow(symm__ctx *ctx, uint64_t new_mapped);
symm_status symm__cuda_register(symm__ctx *ctx, void *ptr, uint64_t bytes, uint64_t off);
void symm__cuda_unregister(symm__ctx *ctx, uint64_t off, uint64_t bytes);
/* Release every mapping and reservation of the heap (idempotent). */
void symm__cuda_heap_fini(symm__ctx *ctx);
/* Zero the scratch of the team slots that [off, off + n) of the system
 * area covers (a team took a slot; symm__cuda_memset0). */
symm_status symm__cu_scratch_zero_slots(symm__ctx *ctx, cu_state *s, uint64_t off, uint64_t n);

/* cuda_rma.c */
symm_status symm__cu_copy_async(cu_state *s, CUdeviceptr dst, CUdeviceptr src, uint64_t n);
symm_status symm__cuda_put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                           uint64_t n, uint32_t flags);
symm_status symm__cuda_get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                           uint32_t flags);
symm_status symm__cuda_atomic(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype,
                              uint32_t op, const void *value, const void *compare,
                              void *fetched);
symm_status symm__cuda_quiet(symm__ctx *ctx);
symm_status symm__cuda_fence(symm__ctx *ctx);
symm_status symm__cuda_memset0(symm__ctx *ctx, uint64_t off, uint64_t n);
symm_status symm__cuda_put_stream(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                                  uint64_t n, void *stream);
symm_status symm__cuda_get_stream(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off,
                                  uint64_t n, void *stream);
symm_status symm__cuda_signal_stream(symm__ctx *ctx, int32_t pe, uint64_t off,
                                     uint64_t value, uint32_t sig_op, void *stream);
symm_status symm__cuda_wait_stream(symm__ctx *ctx, uint64_t off, uint32_t cmp,
                                   uint64_t value, void *stream);
symm_status symm__cuda_quiet_stream(symm__ctx *ctx, void *stream);
symm_status symm__cuda_ring_stream(symm__ctx *ctx, const struct symm_ring *r,
                                   const struct symm_ring_req *q, uint64_t inline_bytes,
                                   uint32_t n_inline, const symm__px_wake *wake, void *stream);
bool symm__cuda_ring_stream_wake(symm__ctx *ctx, void *stream);
bool symm__cuda_stream_capturing(symm__ctx *ctx, void *stream);

#endif /* SYMM_CUDA_INTERNAL_H */

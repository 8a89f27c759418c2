/*
 * Parameter blocks of the backend's kernels, shared by the kernel files
 * (kernels*.cu, C++) and the C files (cuda*.c): one definition, so the layouts cannot
 * drift apart. Each block is passed by value as the kernel's single
 * parameter.
 */
#ifndef SYMM_CUDA_KERNEL_PARAMS_H
#define SYMM_CUDA_KERNEL_PARAMS_H

#include <stdint.h>

#include <symm/symm.h>

/* Values of the pinned error word (cu_state.err_word) that the waiting kernels
 * read and set; the device context hands the same word to user kernels as
 * symm_device_ctx.fail_word (kernels_common.cuh checks that
 * CU_ERR_PEER_FAILED is symm_device.cuh's SYMM_DEVICE_FAIL_PEER). */
#define CU_ERR_TIMEOUT 1      /* a team wait (barrier, collective) gave up after its
                                 timeout: the context's teams are out of step */
#define CU_ERR_PEER_FAILED 2  /* the host learned that a peer PE died     */
#define CU_ERR_WAIT_TIMEOUT 3 /* a stream signal wait gave up after its timeout */

/* A team slot's grid ticket (teams.h SYMM__SLOT_TICKET_OFF) lies this many
 * bytes before the slot's device barrier flags (area_off in the parameter
 * blocks below); cuda_internal.h checks the two layouts agree. */
#define CU_TICKET_BACK 264u

/* Bytes a put from pageable host memory (or p_on_stream) carries inline. */
#define SYMM__INLINE_BYTES 64
typedef struct symm__inline_data {
    uint8_t bytes[SYMM__INLINE_BYTES];
} symm__inline_data;

/* A team as the kernels see it: the heap base of every team PE's mapping in
 * this process, this PE's team index and the team size. Barrier parameter
 * blocks come in three sizes, for teams of up to 2, 8 and 64 PEs: the 2-PE
 * block (56 bytes) fits one 64-byte line, and a one-line block made a stream
 * barrier faster than the 104-byte 8-PE block on 2 x H200
 * (tests/perf/probe_cuda.cu; docs/GPU-RESULTS.md "2026-11-21: PDL, the
 * stream barrier, the copy kernel"). */
#ifdef __cplusplus
template <int N> struct symm__kteam {
    char *base[N];
    int32_t me, n;
};
template <int N> struct symm__kbarrier_params {
    symm__kteam<N> team;
    uint64_t area_off;   /* byte offset of the slot's barrier flags in each heap */
    uint64_t bump;       /* epoch = counter + bump; the counter becomes epoch   */
    uint64_t timeout_ns; /* 0: wait forever                                     */
    int *err;            /* 1: a wait timed out; 2: a PE died (pinned host memory) */
};
typedef symm__kteam<2> symm__kteam2;
typedef symm__kteam<8> symm__kteam8;
typedef symm__kteam<64> symm__kteam64;
typedef symm__kbarrier_params<2> symm__kbarrier_params2;
typedef symm__kbarrier_params<8> symm__kbarrier_params8;
typedef symm__kbarrier_params<64> symm__kbarrier_params64;
#else
typedef struct symm__kteam2 {
    char *base[2];
    int32_t me, n;
} symm__kteam2;
typedef struct symm__kteam8 {
    char *base[8];
    int32_t me, n;
} symm__kteam8;
typedef struct symm__kteam64 {
    char *base[64];
    int32_t me, n;
} symm__kteam64;
typedef struct symm__kbarrier_params2 {
    symm__kteam2 team;
    uint64_t area_off, bump, timeout_ns;
    int *err;
} symm__kbarrier_params2;
typedef struct symm__kbarrier_params8 {
    symm__kteam8 team;
    uint64_t area_off, bump, timeout_ns;
    int *err;
} symm__kbarrier_params8;
typedef struct symm__kbarrier_params64 {
    symm__kteam64 team;
    uint64_t area_off, bump, timeout_ns;
    int *err;
} symm__kbarrier_params64;
#endif

/* Barrier of a strided team of any size: team PE j's heap base is
 * table[start + j * stride] (the context's device peer table). */
typedef struct symm__kbarrier_wide_params {
    char *const *table;
    int32_t start, stride;
    int32_t me, n;
    uint64_t area_off, bump, timeout_ns;
    int *err;
} symm__kbarrier_wide_params;

/* symm_k_agree (kernels.cu): ops->coll_agree, before a blocking collective.
 * PE me stores its CU_AGREE_WORDS words (the first tagged with the epoch)
 * into its own record of parity epoch & 1 at rec_off, runs the team's
 * barrier, then reads every PE's record into out (pinned host memory, n *
 * CU_AGREE_WORDS words; a record without the epoch's tag: all ones), and
 * last stores seq in *done (pinned), which the host waits for. */
#define CU_AGREE_WORDS 6
typedef struct symm__kagree_params {
    symm__kteam64 team;
    uint64_t area_off, timeout_ns; /* the slot's barrier flags: PE me's entry is the epoch */
    int *err;
    uint64_t rec_off; /* the slot's agree records (teams.h SYMM__SLOT_AGREE_OFF)       */
    uint64_t words[CU_AGREE_WORDS];
    uint64_t *out;
    uint64_t *done, seq;
} symm__kagree_params;

/* symm_k_gather: see kernels.cu. */
typedef struct symm__kgather_params {
    symm__kteam64 team;
    uint64_t area_off, timeout_ns;
    int *err;
    uint64_t src_off, src_me_stride, src_j_stride;
    uint64_t dst_off, dst_me_stride, dst_j_stride;
    uint64_t len;
    int32_t only_j;   /* >= 0: every block copies pair only_j     */
    int32_t push;     /* 1: this PE writes into PE j's heap       */
    int32_t enter;    /* 1: start with the collective's barrier   */
    int32_t leave;    /* 1: end with it (the last kernel of one)  */
    uint32_t self_bx; /* only_j < 0: blocks [0, self_bx) copy the  */
    uint32_t peer_bx; /* own pair, then peer_bx blocks per peer    */
} symm__kgather_params;

/* symm_k_reduce_<dtype>_<op>: see kernels_reduce.cu. */
typedef struct symm__kreduce_params {
    symm__kteam64 team;
    uint64_t area_off, timeout_ns;
    int *err;
    uint64_t src_off, dst_off; /* byte offsets of element 0          */
    uint64_t lo, hi;           /* element range this PE reduces      */
    int32_t push;              /* 1: write the result to every PE    */
    int32_t enter;             /* 1: start with the barrier          */
    int32_t leave;             /* 1: end with it                     */
    int32_t pad;
} symm__kreduce_params;

/* symm_k_ll_copy and symm_k_llreduce_<dtype>_<op>: the one-shot low-latency
 * (LL) collectives of teams of up to 8 PEs (kernels_ll.cu, cuda_coll_ll.c). Every
 * PE stores what it sends to team PE j as 16-byte lines (8 data bytes, each
 * 4 beside a 32-bit flag) into j's scratch; receivers spin on the lines. */
typedef struct symm__kll_params {
    symm__kteam8 team;
    uint64_t area_off, timeout_ns; /* the slot's barrier flags: PE me's entry is the epoch */
    int *err;
    uint64_t ll_off;    /* the slot's LL area in every heap: 2 parities                   */
    uint64_t ll_region; /* bytes of one sender's lines in one parity                        */
    uint64_t ll_parity; /* bytes of one parity: (up to 7) sender regions                    */
    uint64_t src_off, src_j_stride; /* what goes to team PE j: src_off + j * src_j_stride   */
    uint64_t dst_off, dst_j_stride; /* copy: what PE j sent lands at dst_off + j * stride   */
    uint64_t nbytes;                /* payload per pair of PEs                              */
} symm__kll_params;

/* symm_k_l8reduce_<dtype>_<op>: the LL128 reductions of teams of up to 8 PEs
 * (kernels_ll128.cu, cuda_coll_ll.c). PE me stores what goes to PE j as
 * 128-byte lines, 120 data bytes and the call's 64-bit epoch as the last
 * word, each line one warp instruction (8 threads x 16 bytes), into j's
 * lines (in j's staged sender region for me, after the staging). Slice j of
 * the input (src_off + j * src_j_stride, len[j] bytes) goes to PE j, which
 * reduces it with its own slice; with gather, PE j then stores the result as
 * lines into every peer's second half of the lines (l8_half), and each PE
 * copies slice j of the result to dst_off + j * src_j_stride. */
#define SYMM__L8_LINE 128u /* bytes of a line                        */
#define SYMM__L8_DATA 120u /* data bytes of a line (the rest: flag)  */
typedef struct symm__kl8_params {
    symm__kteam8 team;
    uint64_t area_off, timeout_ns; /* the slot's barrier flags: PE me's entry is the epoch */
    int *err;
    uint64_t ll_off;    /* sender 0's lines of parity 0 in every heap                        */
    uint64_t ll_region; /* from one sender's lines to the next's                             */
    uint64_t ll_parity; /* from parity 0 to parity 1                                         */
    uint64_t l8_half;   /* gather: offset of the result lines within a sender's lines       */
    uint64_t src_off, src_j_stride; /* slice j of this PE's input (stride 0: the whole input) */
    uint64_t dst_off;               /* slice 0 of the result (gather) or this PE's result     */
    uint64_t len[8];                /* bytes of slice j                                       */
    int32_t gather;                 /* 1: the result's slices go to every team PE             */
    int32_t pad;
} symm__kl8_params;

/* symm_k_streduce_<dtype>_<op>: the staged reductions of teams of up to 8 PEs
 * (kernels_staged.cuh, cuda_coll_staged.c). PE me sends bytes [at, at + chunk) of its
 * slice j (src_off + j * src_j_stride, cnt[j] elements) into PE j's scratch,
 * block by block and step by step (at = (step * blocks + block) * chunk),
 * each piece followed by a flag; PE j reduces its own slice from its input
 * and the peers' pieces into dst_off (and, with gather, into dst_off of
 * every team PE too). A sender region: SYMM__ST_HDR bytes of words (per
 * block: flag, ack, done), then depth slots of blocks * chunk bytes. */
#define SYMM__ST_MAX_BLOCKS 256u
#define SYMM__ST_GROUP 256u /* threads of a sender or receiver group: 2 per block */
#define SYMM__ST_FLAG 0u     /* u64[256]: the sender's pieces of block b, up to a step */
#define SYMM__ST_ACK 2048u   /* u64[256]: the sender consumed mine, up to a step     */
#define SYMM__ST_DONE 4096u  /* u64[256]: the sender's gathered results, up to a step;
                              * landing: the sender runs (its epoch << 24)          */
#define SYMM__ST_HDR 8192u
/* The peer form's pieces (coll_plan.c symm__st_peer_plan) and the parts its
 * blocks reduce (kernels_staged.cuh symm__st_peer) are whole 128-byte lines:
 * pieces that began mid-line made the 4 x H200 all-reduce of 8 to 16 MiB
 * slower (docs/GPU-RESULTS.md "2026-11-27: whole lines for the peer form").
 * So are the slices of a split all-reduce (coll_plan.c symm__slice_elems):
 * on 2 x H200 sizes that are not a multiple of 256 bytes were slower with
 * slices of 16-byte vectors (docs/GPU-RESULTS.md "2026-11-27: the peer form
 * on 2 GPUs"). */
#define SYMM__ST_ALIGN 128u
typedef struct symm__kstaged_params {
    symm__kteam8 team;
    uint64_t area_off, timeout_ns; /* the slot's barrier flags: PE me's entry is the epoch */
    int *err;
    uint64_t st_off;    /* the slot's staged area in every heap: 2 parities              */
    uint64_t st_region; /* bytes of one sender's region in one parity                      */
    uint64_t st_parity; /* bytes of one parity: (up to 7) sender regions                   */
    uint64_t src_off, src_j_stride; /* slice j of this PE's input                          */
    uint64_t dst_off;               /* this PE's slice of the result, the same on every PE */
    uint64_t cnt[8];                /* elements of slice j                                 */
    uint64_t chunk;                 /* bytes per block per step (a multiple of 16)        */
    uint32_t depth, steps;          /* slots per region; steps of the grid                */
    int32_t gather;                 /* 1: write the result to every team PE               */
    int32_t vec;                    /* 1: src_off, src_j_stride, dst_off 16-byte aligned  */
    int32_t land;                   /* 1: steps >= depth land in the peer's dst (2 PEs)   */
    int32_t swap;                   /* 1: in place on 2 PEs, through shared memory       */
    int32_t peer;                   /* 1: blocks dealt out to the peers (the staging
                                     * holds the call): symm__st_peer                     */
} symm__kstaged_params;

/* symm_k_cereduce_<dtype>_<op>: the copy-engine reduce-scatter (kernels_ce.cu,
 * cuda_coll_ce.c "Copy-engine reduce-scatter"). Each PE's CE area (at ce_off in
 * every heap) starts with SYMM__CE_HDR bytes of words, then n - 1 slots of
 * ce_slot bytes: slot k holds what team PE (me - 1 - k) mod n sent in phase k.
 * arrive[k] is written by that sender's copy stream (the number of its
 * copies into slot k that have landed), done[k] by the PE this one sent to
 * in phase k (1: it has read it); both go back to 0 at the end of a round.
 * An all-reduce then copies its slice to every peer in the same turns, and
 * ag[k] counts the one from the phase-k sender (back to 0 by symm_k_ce_wait);
 * the all-gather and all-to-all use only the header and ag[]. */
#define SYMM__CE_THREADS 512u /* a block of the reduction kernel, one a SM */
#define SYMM__CE_HDR 256u
#define SYMM__CE_ARRIVE 0u   /* uint64 [8] */
#define SYMM__CE_DONE 64u    /* uint64 [8] */
#define SYMM__CE_TICKET 128u /* uint32: blocks done with the round */
#define SYMM__CE_AG 192u     /* uint64 [8]: the all-reduce's slices landed (1) */
typedef struct symm__kce_params {
    symm__kteam8 team;
    uint64_t area_off, timeout_ns; /* area_off: unused (the CE area has its own words) */
    int *err;
    uint64_t ce_off, ce_slot; /* the CE area; bytes from one slot to the next    */
    uint64_t src_off;         /* this PE's own block of the input, at the round  */
    uint64_t dst_off;         /* its block of the output, at the round           */
    uint64_t ne;              /* elements of the round                           */
    uint64_t piece;           /* elements of each copy of the last phase         */
    int32_t vec;              /* 1: src_off, dst_off 16-byte aligned             */
    int32_t pad;
} symm__kce_params;

/* symm_k_alltoallv (kernels_a2av.cu): symm_alltoallv / _on_stream as one
 * cooperative grid, the grid form of symm_device_coll.cuh with the
 * runtime's timeout and a src capacity. */
#define SYMM__A2AV_THREADS 512u
/* The reasons it leaves in its word (symm_device_coll.cuh's SYMM__A2AV_*;
 * kernels_a2av.cu checks they agree). */
#define CU_A2AV_DST 1      /* this PE would receive more than dst_cap        */
#define CU_A2AV_PEER_SRC 2 /* a peer's piece for this PE lies beyond its src */
#define CU_A2AV_OWN_SRC 3  /* this PE's send counts exceed its src           */
typedef struct symm__ka2av_params {
    symm_device_ctx ctx;
    symm_device_team team;
    void *dst;
    const void *src;
    const uint64_t *send_counts;
    uint64_t *recv_counts, *recv_offsets; /* recv_offsets = recv_counts + n */
    uint64_t dst_cap, src_cap, unit_bytes;
    uint64_t timeout_ns;
    int *err;  /* the error word (timeouts, dead peers)                  */
    int *word; /* pinned: a SYMM__A2AV_* reason when the call failed     */
} symm__ka2av_params;

/* symm_k_alltoallv_ll (kernels_a2av.cu "The LL form"): symm_alltoallv /
 * _on_stream for teams that the LL lines serve (cuda_a2av.c
 * a2av_ll), with no team barrier. PE s tells every peer r, in
 * lines of s's region at r (kernels_common.cuh "LL"), how many units it
 * sends r, where they start in its src and how they travel: inline, in the
 * lines that follow, when they fit inline_max bytes; else r pulls them from
 * s's src and then says so in line SYMM__A2L_ACK of r's region at s, which s
 * waits for before its grid ends; or not at all, when they lie beyond s's
 * src. */
#define SYMM__A2L_COUNT 0u  /* line: the units s sends r                       */
#define SYMM__A2L_SOFF 1u   /* line: where they start in s's src (units)        */
#define SYMM__A2L_MODE 2u   /* line: SYMM__A2L_INLINE, _PULL or _NONE           */
#define SYMM__A2L_ACK 3u    /* line of r's region at s: r has pulled s's units   */
#define SYMM__A2L_DATA 4u   /* first line of an inline piece (8 bytes a line)   */
#define SYMM__A2L_INLINE 0u /* the units follow in the lines                    */
#define SYMM__A2L_PULL 1u   /* the receiver reads them from s's src, then acks  */
#define SYMM__A2L_NONE 2u   /* beyond s's src: nothing comes (OUT_OF_BOUNDS)     */
typedef struct symm__ka2avll_params {
    symm__kteam8 team;
    uint64_t area_off, timeout_ns; /* the slot's barrier flags: PE me's entry is the epoch */
    int *err;
    uint64_t ll_off, ll_region, ll_parity; /* the team slot's lines, as symm__kll_params  */
    uint64_t dst_off, src_off;             /* heap offsets, the same on every PE          */
    uint64_t scount_off, rcount_off;       /* n send counts; n receive counts, n offsets  */
    uint64_t dst_cap, src_cap, unit_bytes; /* units, units, bytes a unit                  */
    uint64_t inline_max;                   /* bytes: a larger piece is pulled             */
    int *word; /* pinned: a SYMM__A2AV_* reason when the call failed              */
} symm__ka2avll_params;

#endif /* SYMM_CUDA_KERNEL_PARAMS_H */

/*
 * Grid of a staged reduction (kernels_staged.cuh) and shape of an LL128 one
 * (kernels_ll128.cu), computed on the host by cuda_coll_*.c for each call.
 * Plain C with no CUDA type, so the unit test checks their invariants on
 * machines without a GPU.
 */
#ifndef SYMM_CUDA_COLL_PLAN_H
#define SYMM_CUDA_COLL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel_params.h"

typedef struct symm__st_plan {
    uint64_t blocks; /* grid size: at most sms and SYMM__ST_MAX_BLOCKS          */
    uint64_t chunk;  /* bytes of a slice a block moves per step: a 16-byte
                      * multiple (the peer form: of SYMM__ST_ALIGN)              */
    uint64_t depth;  /* slots of the staging ring: blocks * chunk * depth <= bytes;
                      * landing: the steps staged (the rest land), <= steps      */
    uint64_t steps;  /* blocks * chunk * steps covers len, with no empty step   */
} symm__st_plan;

/* The plan for slices of up to len bytes: one block per chunk_min bytes (a
 * 16-byte multiple) up to one per SM and as many as the staging holds at
 * depth 2, want_steps (1 or more) steps where pieces of chunk_min allow,
 * pieces grown up to half the staging over the blocks. st_bytes (a
 * sender's staging) >= 32 and chunk_min >= 16, both 16-byte multiples, as
 * cuda_coll.c's setup guarantees. false when the steps would overflow the flags'
 * 24 step bits.
 *
 * land_max > 0: the pieces may land in the receiver's dst
 * (kernels_staged.cuh "Landing"), so the staging bounds neither the blocks
 * nor the pieces: up to one block per SM, pieces of chunk_min grown towards
 * want_steps steps but at most land_max (rounded down to 16, at least 16);
 * the first depth steps (as many as the staging holds, at most all) go
 * through it. */
bool symm__st_make_plan(uint64_t len, uint64_t sms, uint64_t st_bytes, uint64_t chunk_min,
                        uint64_t want_steps, uint64_t land_max, symm__st_plan *out);

/* The peer form (kernels_staged.cuh symm__st_peer; cuda_tuning.c st_peer_shape
 * takes it on 2 PEs with gather only) for slices of up to len bytes on n
 * PEs, when the staging holds the whole call: one block per piece bytes,
 * at most sms / (n - 1) per peer (the grid is blocks * (n - 1)); steps
 * (steps if nonzero; else with gather one per piece of each block's share,
 * up to max_steps, without it 1); each block's share split evenly over the
 * steps, in whole lines (SYMM__ST_ALIGN);
 * depth = steps (no slot is reused). false where the steps' pieces would
 * take more than st_bytes + SYMM__ST_SLACK, or sms < n - 1. piece >= 16.
 * The slack, beyond each sender's staging, holds what rounding the pieces
 * up to whole lines adds in up to SYMM__ST_PEER_STEPS steps of 256 blocks,
 * so that a call of exactly the staging still takes the peer form. */
#define SYMM__ST_PEER_STEPS 3u
#define SYMM__ST_SLACK (SYMM__ST_ALIGN * SYMM__ST_MAX_BLOCKS * SYMM__ST_PEER_STEPS)
bool symm__st_peer_plan(uint64_t len, int32_t n, uint64_t sms, uint64_t st_bytes, uint64_t piece,
                        uint64_t steps, uint64_t max_steps, bool gather, symm__st_plan *out);

/* Elements of the slice each of n PEs reduces when an all-reduce is split
 * (the last slices may be shorter or empty): an n-th of ne, rounded up to
 * whole 128-byte lines (SYMM__ST_ALIGN; es: element size, a power of two up
 * to 16), so that every slice of a line-aligned buffer starts on a line.
 * The staged, LL128 and barrier two-shot slices alike. */
uint64_t symm__slice_elems(uint64_t ne, int32_t n, uint64_t es);
/* Elements in slice j (of per = symm__slice_elems) of ne: what of
 * [j * per, (j + 1) * per) lies below ne. */
uint64_t symm__slice_count(uint64_t ne, uint64_t per, int32_t j);

/* The shape of an LL128 reduction (kernels_ll128.cu): slice j of the
 * input (at j * src_j_stride, len[j] bytes) goes to PE j. Reduce-scatter:
 * block j of the input; all-reduce on 2 PEs or of at most oneshot bytes:
 * the whole vector to every peer (stride 0); otherwise a slice each, whose
 * results travel as lines in the second half of a sender's lines (from
 * half, a multiple of 128). false when a slice's lines (120 data bytes a
 * line) would not fit the room: lines bytes a sender, or half of them. */
typedef struct symm__l8_shape {
    uint64_t len[8];
    uint64_t src_j_stride;
    uint64_t half;
    int32_t gather;
} symm__l8_shape;
bool symm__l8_make_shape(bool reduce_scatter, int32_t n, uint64_t ne, uint64_t es, uint64_t lines,
                         uint64_t oneshot, symm__l8_shape *out);

/* The last phase of a round of the copy-engine reduce-scatter (cuda_coll_ce.c
 * coll_ce, kernels_ce.cu): len bytes in at most `pieces` copies of whole
 * 128-byte lines, the last one shorter where len ends mid-way. Returns the
 * bytes of a copy; *count: the copies. The kernel reduces piece c (its
 * elements [c * piece / es, ...)) once copy c landed, so for every element
 * size es dividing len, ceil((len / es) / (piece / es)) == *count. len 0
 * (an all-reduce's empty slice) is one copy of 0 bytes: only its signal,
 * which every slot gets every round (kernels_ce.cu says why). */
uint64_t symm__ce_piece(uint64_t len, uint64_t pieces, uint64_t *count);

#endif /* SYMM_CUDA_COLL_PLAN_H */

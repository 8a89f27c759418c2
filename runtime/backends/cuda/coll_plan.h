/*
 * Grid of a staged reduction (kernels.cu "Staged"), computed on the host by
 * cuda.c for each call. Plain C with no CUDA type, so the unit test checks
 * its invariants on machines without a GPU.
 */
#ifndef SYMM_CUDA_COLL_PLAN_H
#define SYMM_CUDA_COLL_PLAN_H

#include <stdbool.h>
#include <stdint.h>

typedef struct symm__st_plan {
    uint64_t blocks; /* grid size: at most sms and SYMM__ST_MAX_BLOCKS          */
    uint64_t chunk;  /* bytes of a slice a block moves per step (16-byte multiple) */
    uint64_t depth;  /* slots of the staging ring: blocks * chunk * depth <= bytes;
                      * landing: the steps staged (the rest land), <= steps      */
    uint64_t steps;  /* blocks * chunk * steps covers len, with no empty step   */
} symm__st_plan;

/* The plan for slices of up to len bytes: one block per chunk_min bytes (a
 * 16-byte multiple) up to one per SM and as many as the staging holds at
 * depth 2, want_steps (1 or more) steps where pieces of chunk_min allow,
 * pieces grown up to half the staging over the blocks. st_bytes (a
 * sender's staging) >= 32 and chunk_min >= 16, both 16-byte multiples, as
 * cuda.c's setup guarantees. false when the steps would overflow the flags'
 * 24 step bits.
 *
 * land_max > 0: the pieces may land in the receiver's dst (kernels.cu
 * "Landing"), so the staging bounds neither the blocks nor the pieces: up
 * to one block per SM, pieces of chunk_min grown towards want_steps steps
 * but at most land_max (rounded down to 16, at least 16); the first depth
 * steps (as many as the staging holds, at most all) go through it. */
bool symm__st_make_plan(uint64_t len, uint64_t sms, uint64_t st_bytes, uint64_t chunk_min,
                        uint64_t want_steps, uint64_t land_max, symm__st_plan *out);

#endif /* SYMM_CUDA_COLL_PLAN_H */

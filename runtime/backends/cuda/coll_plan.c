/* Grid of a staged reduction: see coll_plan.h. */
#include "coll_plan.h"

#include "kernel_params.h"

static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

bool symm__st_make_plan(uint64_t len, uint64_t sms, uint64_t st_bytes, uint64_t chunk_min,
                        uint64_t want_steps, uint64_t land_max, symm__st_plan *out) {
    const uint64_t want = want_steps ? want_steps : 1;
    uint64_t cap = min64(sms ? sms : 64, SYMM__ST_MAX_BLOCKS);
    if (!land_max) cap = min64(cap, max64(st_bytes / (2 * chunk_min), 1));
    const uint64_t per_block = want * chunk_min;
    const uint64_t blocks = min64(max64((len + per_block - 1) / per_block, 1), cap);
    uint64_t chunk = ((len + want * blocks - 1) / (want * blocks) + 15) / 16 * 16;
    if (land_max)
        chunk = max64(min64(max64(chunk, chunk_min), land_max / 16 * 16), 16);
    else
        chunk = min64(max64(chunk, chunk_min), st_bytes / (2 * blocks) / 16 * 16);
    const uint64_t steps = (len + blocks * chunk - 1) / (blocks * chunk);
    if (steps >= (1u << 24)) return false;
    out->blocks = blocks;
    out->chunk = chunk;
    out->depth = st_bytes / (blocks * chunk);
    if (land_max) out->depth = min64(out->depth, steps);
    out->steps = steps;
    return true;
}

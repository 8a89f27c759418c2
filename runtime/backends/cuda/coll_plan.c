/* Grid of a staged reduction, shape of an LL128 one, pieces of the
 * copy-engine reduce-scatter: see coll_plan.h. */
#include "coll_plan.h"

_Static_assert(SYMM__ST_ALIGN % 16 == 0 && SYMM__ST_SLACK % 16 == 0, "whole 16-byte vectors");

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

bool symm__st_peer_plan(uint64_t len, int32_t n, uint64_t sms, uint64_t st_bytes, uint64_t piece,
                        uint64_t steps, uint64_t max_steps, bool gather, symm__st_plan *out) {
    const uint64_t gx = n > 1 ? sms / (uint64_t)(n - 1) : 0;
    if (gx == 0) return false;
    const uint64_t blocks = min64(max64((len + piece - 1) / piece, 1), gx);
    if (!steps) steps = gather ? min64(max64((len + blocks * piece - 1) / (blocks * piece), 1), max_steps) : 1;
    const uint64_t A = SYMM__ST_ALIGN;
    const uint64_t chunk = max64(((len + steps * blocks - 1) / (steps * blocks) + A - 1) / A * A, A);
    out->blocks = blocks;
    out->chunk = chunk;
    out->steps = out->depth = (len + blocks * chunk - 1) / (blocks * chunk);
    return out->steps * blocks * chunk <= st_bytes + SYMM__ST_SLACK;
}

uint64_t symm__slice_elems(uint64_t ne, int32_t n, uint64_t es) {
    const uint64_t v = SYMM__ST_ALIGN / es;
    return ((ne + (uint64_t)n - 1) / (uint64_t)n + v - 1) / v * v;
}

uint64_t symm__slice_count(uint64_t ne, uint64_t per, int32_t j) {
    const uint64_t lo = min64((uint64_t)j * per, ne);
    return min64(per, ne - lo);
}

bool symm__l8_make_shape(bool reduce_scatter, int32_t n, uint64_t ne, uint64_t es, uint64_t lines,
                         uint64_t oneshot, symm__l8_shape *out) {
    uint64_t room = lines, most = 0;
    for (int32_t j = 0; j < 8; j++) out->len[j] = 0;
    out->src_j_stride = out->half = 0;
    out->gather = 0;
    if (reduce_scatter) {
        out->src_j_stride = ne * es;
        for (int32_t j = 0; j < n; j++) out->len[j] = ne * es;
    } else if (n == 2 || ne * es <= oneshot) {
        for (int32_t j = 0; j < n; j++) out->len[j] = ne * es;
    } else {
        const uint64_t per = symm__slice_elems(ne, n, es);
        out->src_j_stride = per * es;
        for (int32_t j = 0; j < n; j++) out->len[j] = symm__slice_count(ne, per, j) * es;
        out->gather = 1;
        room = lines / 2 / SYMM__L8_LINE * SYMM__L8_LINE;
        out->half = room;
    }
    for (int32_t j = 0; j < n; j++) most = max64(most, out->len[j]);
    return (most + SYMM__L8_DATA - 1) / SYMM__L8_DATA * SYMM__L8_LINE <= room;
}

uint64_t symm__ce_piece(uint64_t len, uint64_t pieces, uint64_t *count) {
    const uint64_t k = pieces ? pieces : 1;
    const uint64_t piece = max64(((len + k - 1) / k + 127) / 128 * 128, 128);
    *count = len ? (len + piece - 1) / piece : 1; /* nothing to send: its signal alone */
    return piece;
}

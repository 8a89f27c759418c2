/*
 * Atomic memory operations on one element of a buffer on any PE.
 *
 * The core validates op x dtype and the pointers each op needs, copies the
 * operands into aligned temporaries and hands one 4/8-byte operation to the
 * backend (ops->atomic), which makes atomics from all PEs on one location
 * exact. fetched is written only on success.
 *
 * symm_atomic_nbi is implemented as the blocking operation: *fetched is
 * written before it returns, which is no later than the next quiet requires.
 */
#include <string.h>

#include "entry.h"

static const char *const op_names[] = {
    "SYMM_AMO_FETCH",     "SYMM_AMO_SET",       "SYMM_AMO_COMPARE_SWAP", "SYMM_AMO_SWAP",
    "SYMM_AMO_FETCH_INC", "SYMM_AMO_INC",       "SYMM_AMO_FETCH_ADD",    "SYMM_AMO_ADD",
    "SYMM_AMO_FETCH_AND", "SYMM_AMO_AND",       "SYMM_AMO_FETCH_OR",     "SYMM_AMO_OR",
    "SYMM_AMO_FETCH_XOR", "SYMM_AMO_XOR",
};
#define N_OPS (sizeof op_names / sizeof op_names[0])

/* Ops that return the prior value. */
static bool op_fetches(uint32_t op) {
    switch (op) {
    case SYMM_AMO_SET: case SYMM_AMO_INC: case SYMM_AMO_ADD:
    case SYMM_AMO_AND: case SYMM_AMO_OR: case SYMM_AMO_XOR:
        return false;
    default:
        return true;
    }
}

/* Ops that read *value. */
static bool op_takes_value(uint32_t op) {
    return op != SYMM_AMO_FETCH && op != SYMM_AMO_FETCH_INC && op != SYMM_AMO_INC;
}

/* Ops also defined on FLOAT32/FLOAT64. */
static bool op_allows_float(uint32_t op) {
    return op == SYMM_AMO_FETCH || op == SYMM_AMO_SET || op == SYMM_AMO_SWAP;
}

static bool dtype_is_amo_int(uint32_t dtype) {
    return dtype == SYMM_DTYPE_INT32 || dtype == SYMM_DTYPE_INT64 || dtype == SYMM_DTYPE_UINT32 ||
           dtype == SYMM_DTYPE_UINT64;
}

static bool dtype_is_amo_float(uint32_t dtype) {
    return dtype == SYMM_DTYPE_FLOAT32 || dtype == SYMM_DTYPE_FLOAT64;
}

/* An element of 4 or 8 bytes: constant-size copies, inline (no memcpy call). */
static inline void elem_copy(void *dst, const void *src, uint32_t size) {
    if (size == 8)
        memcpy(dst, src, 8);
    else
        memcpy(dst, src, 4);
}

static symm_status atomic_op(const char *fn, symm_buf h, uint64_t index, uint32_t op,
                             const void *value, const void *compare, int32_t pe, void *fetched) {
    symm__buf *buf;
    SYMM_TRY(symm__enter_buf(fn, h, &buf));
    symm__ctx *ctx = buf->ctx;
    SYMM_CHECK(op < N_OPS, SYMM_ERR_INVALID_ARG,
               "%s: unknown atomic op %u (expected SYMM_AMO_FETCH..SYMM_AMO_XOR)", fn, op);
    SYMM_CHECK(dtype_is_amo_int(buf->dtype) || (op_allows_float(op) && dtype_is_amo_float(buf->dtype)),
               SYMM_ERR_INVALID_ARG,
               "%s: %s is not defined on dtype %u (%s)", fn, op_names[op], buf->dtype,
               op_allows_float(op) ? "it needs a 32/64-bit integer or float buffer"
                                   : "it needs an INT32, INT64, UINT32 or UINT64 buffer");
    SYMM_TRY_IN(fn, symm__target_ok(ctx, pe));
    SYMM_TRY_IN(fn, symm__check_range(buf, index, 1));
    SYMM_CHECK(value || !op_takes_value(op), SYMM_ERR_INVALID_ARG, "%s: %s needs value", fn,
               op_names[op]);
    SYMM_CHECK(compare || op != SYMM_AMO_COMPARE_SWAP, SYMM_ERR_INVALID_ARG,
               "%s: SYMM_AMO_COMPARE_SWAP needs compare", fn);
    SYMM_CHECK(fetched || !op_fetches(op), SYMM_ERR_INVALID_ARG, "%s: %s needs fetched", fn,
               op_names[op]);

    /* Aligned copies: the caller's pointers need no alignment, and the backend
     * always gets readable operands (zero / one for ops without a value). */
    uint32_t size = buf->elem_size;
    uint64_t v = 0, cmp = 0, old = 0;
    if (op_takes_value(op)) {
        elem_copy(&v, value, size);
    } else if (op == SYMM_AMO_INC || op == SYMM_AMO_FETCH_INC) {
        if (size == 4) {
            uint32_t one = 1;
            memcpy(&v, &one, sizeof one);
        } else {
            v = 1;
        }
    }
    if (op == SYMM_AMO_COMPARE_SWAP) elem_copy(&cmp, compare, size);

    SYMM_TRY(symm__atomic(ctx, pe, buf->off + index * size, buf->dtype, op, &v,
                              op == SYMM_AMO_COMPARE_SWAP ? &cmp : NULL, &old));
    if (op_fetches(op)) elem_copy(fetched, &old, size);
    return SYMM_SUCCESS;
}

symm_status symm_atomic(symm_buf buf, uint64_t index, uint32_t op, const void *value,
                        const void *compare, int32_t pe, void *fetched) {
    return atomic_op(__func__, buf, index, op, value, compare, pe, fetched);
}

symm_status symm_atomic_nbi(symm_buf buf, uint64_t index, uint32_t op, const void *value,
                            const void *compare, int32_t pe, void *fetched) {
    return atomic_op(__func__, buf, index, op, value, compare, pe, fetched);
}

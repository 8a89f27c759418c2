/*
 * Atomic memory operations on one element of a buffer on any PE.
 *
 * The core validates op x dtype and the pointers each op needs, copies the
 * operands into aligned temporaries and hands one 4/8-byte operation to the
 * route (symm__atomic: the backend's ops->atomic or the transport), which
 * makes atomics from all PEs on one location exact; on the direct path
 * (entry.h) it is the CPU atomic of host_cpu.h, done here. fetched is
 * written only on success.
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

/* What each op takes and allows: one table load instead of a switch per
 * property. */
#define OP_FETCHES 1u /* returns the prior value: needs fetched             */
#define OP_VALUE 2u   /* reads *value                                      */
#define OP_COMPARE 4u /* reads *compare                                    */
#define OP_FLOAT 8u   /* also defined on FLOAT32/FLOAT64                   */
#define OP_ONE 16u    /* the operand is 1 (INC)                            */
static const uint8_t op_bits[] = {
    [SYMM_AMO_FETCH] = OP_FETCHES | OP_FLOAT,
    [SYMM_AMO_SET] = OP_VALUE | OP_FLOAT,
    [SYMM_AMO_COMPARE_SWAP] = OP_FETCHES | OP_VALUE | OP_COMPARE,
    [SYMM_AMO_SWAP] = OP_FETCHES | OP_VALUE | OP_FLOAT,
    [SYMM_AMO_FETCH_INC] = OP_FETCHES | OP_ONE,
    [SYMM_AMO_INC] = OP_ONE,
    [SYMM_AMO_FETCH_ADD] = OP_FETCHES | OP_VALUE,
    [SYMM_AMO_ADD] = OP_VALUE,
    [SYMM_AMO_FETCH_AND] = OP_FETCHES | OP_VALUE,
    [SYMM_AMO_AND] = OP_VALUE,
    [SYMM_AMO_FETCH_OR] = OP_FETCHES | OP_VALUE,
    [SYMM_AMO_OR] = OP_VALUE,
    [SYMM_AMO_FETCH_XOR] = OP_FETCHES | OP_VALUE,
    [SYMM_AMO_XOR] = OP_VALUE,
};
_Static_assert(sizeof op_bits == N_OPS, "a property entry per op");

/* Dtypes as bits (buffer dtypes are 1..SYMM_DTYPE_COUNT - 1). */
#define DT(d) (1u << (d))
#define AMO_INT (DT(SYMM_DTYPE_INT32) | DT(SYMM_DTYPE_INT64) | DT(SYMM_DTYPE_UINT32) | \
                 DT(SYMM_DTYPE_UINT64))
#define AMO_FLOAT (DT(SYMM_DTYPE_FLOAT32) | DT(SYMM_DTYPE_FLOAT64))
_Static_assert(SYMM_DTYPE_COUNT <= 32, "dtypes fit a 32-bit mask");

/* An element of 4 or 8 bytes: constant-size copies, inline (no memcpy call). */
static inline void elem_copy(void *dst, const void *src, uint32_t size) {
    if (size == 8)
        memcpy(dst, src, 8);
    else
        memcpy(dst, src, 4);
}

static inline __attribute__((always_inline)) symm_status
atomic_op(const char *fn, symm_buf h, uint64_t index, uint32_t op, const void *value,
          const void *compare, int32_t pe, void *fetched) {
    symm__buf *buf = NULL;
    SYMM_TRY(symm__enter_buf(fn, h, &buf));
    symm__ctx *ctx = buf->ctx;
    SYMM_CHECK(op < N_OPS, SYMM_ERR_INVALID_ARG,
               "%s: unknown atomic op %u (expected SYMM_AMO_FETCH..SYMM_AMO_XOR)", fn, op);
    const uint32_t bits = op_bits[op], dt = DT(buf->dtype & 31u);
    SYMM_CHECK((dt & AMO_INT) || ((bits & OP_FLOAT) && (dt & AMO_FLOAT)), SYMM_ERR_INVALID_ARG,
               "%s: %s is not defined on dtype %u (%s)", fn, op_names[op], buf->dtype,
               (bits & OP_FLOAT) ? "it needs a 32/64-bit integer or float buffer"
                                 : "it needs an INT32, INT64, UINT32 or UINT64 buffer");
    SYMM_TRY_IN(fn, symm__target_ok(ctx, pe));
    SYMM_TRY_IN(fn, symm__range_ok(buf, index, 1));
    SYMM_CHECK(value || !(bits & OP_VALUE), SYMM_ERR_INVALID_ARG, "%s: %s needs value", fn,
               op_names[op]);
    SYMM_CHECK(compare || !(bits & OP_COMPARE), SYMM_ERR_INVALID_ARG,
               "%s: SYMM_AMO_COMPARE_SWAP needs compare", fn);
    SYMM_CHECK(fetched || !(bits & OP_FETCHES), SYMM_ERR_INVALID_ARG, "%s: %s needs fetched", fn,
               op_names[op]);

    /* Aligned copies: the caller's pointers need no alignment, and the backend
     * always gets readable operands (zero / one for ops without a value). */
    const uint32_t size = buf->elem_size;
    const uint64_t off = buf->off + index * size;
    uint64_t v = (bits & OP_ONE) ? 1 : 0, cmp = 0, old = 0;
    if (bits & OP_VALUE) elem_copy(&v, value, size);
    if (bits & OP_COMPARE) elem_copy(&cmp, compare, size);

    uint8_t *peer = symm__cpu_peer(ctx, pe);
    if (__builtin_expect(peer != NULL, 1)) /* the direct path (entry.h) */
        old = symm__host_amo(peer + off, size, op, v, cmp);
    else
        SYMM_TRY(symm__atomic(ctx, pe, off, buf->dtype, op, &v,
                              (bits & OP_COMPARE) ? &cmp : NULL, &old));
    if (bits & OP_FETCHES) elem_copy(fetched, &old, size);
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

/*
 * One atomic operation on a 4- or 8-byte heap word with CPU atomics: what the
 * host backend runs on a mapped peer and what the tcp transport's service
 * thread runs for a remote PE. Header-only and free of the core's types, so a
 * transport plugin may include it (transport.h).
 *
 * Operands and the prior value travel as raw bits in the low bytes of a
 * uint64_t (little-endian hosts). Signed and unsigned integers share one
 * two's-complement path; floating types allow FETCH, SET, SWAP and
 * COMPARE_SWAP on their bits. Returns 0, or SYMM_ERR_INVALID_ARG for an op or
 * dtype it cannot run (the caller's checks make that unreachable).
 */
#ifndef SYMM_AMO_CPU_H
#define SYMM_AMO_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include <symm/symm.h>

/* Bytes of an atomic element of dtype; 0 when atomics do not take it. */
static inline uint32_t symm__amo_size(uint32_t dtype) {
    switch (dtype) {
    case SYMM_DTYPE_INT32: case SYMM_DTYPE_UINT32: case SYMM_DTYPE_FLOAT32: return 4;
    case SYMM_DTYPE_INT64: case SYMM_DTYPE_UINT64: case SYMM_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

#define SYMM__CPU_AMO(T)                                                                 \
    do {                                                                                 \
        T *p = (T *)addr, v = (T)value, c = (T)compare, old = 0;                         \
        switch (op) {                                                                    \
        case SYMM_AMO_FETCH: old = __atomic_load_n(p, __ATOMIC_SEQ_CST); break;          \
        case SYMM_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); break;              \
        case SYMM_AMO_SWAP: old = __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); break;    \
        case SYMM_AMO_COMPARE_SWAP:                                                      \
            old = c;                                                                     \
            __atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,             \
                                        __ATOMIC_SEQ_CST);                               \
            break;                                                                       \
        case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC:                                      \
            old = __atomic_fetch_add(p, (T)1, __ATOMIC_SEQ_CST); break;                  \
        case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD:                                      \
            old = __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); break;                     \
        case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND:                                      \
            old = __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); break;                     \
        case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR:                                        \
            old = __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); break;                      \
        case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR:                                      \
            old = __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); break;                     \
        default: return SYMM_ERR_INVALID_ARG;                                            \
        }                                                                                \
        *fetched = (uint64_t)old;                                                        \
    } while (0)

static inline int32_t symm__amo_cpu(void *addr, uint32_t dtype, uint32_t op, uint64_t value,
                                    uint64_t compare, uint64_t *fetched) {
    bool is_float = dtype == SYMM_DTYPE_FLOAT32 || dtype == SYMM_DTYPE_FLOAT64;
    if (is_float && op != SYMM_AMO_FETCH && op != SYMM_AMO_SET && op != SYMM_AMO_SWAP &&
        op != SYMM_AMO_COMPARE_SWAP)
        return SYMM_ERR_INVALID_ARG;
    switch (symm__amo_size(dtype)) {
    case 4: SYMM__CPU_AMO(uint32_t); return 0;
    case 8: SYMM__CPU_AMO(uint64_t); return 0;
    default: return SYMM_ERR_INVALID_ARG;
    }
}
#undef SYMM__CPU_AMO

#endif /* SYMM_AMO_CPU_H */

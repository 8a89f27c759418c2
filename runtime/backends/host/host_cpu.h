/*
 * The host backend's operations on a mapped peer, inline: host.c's put, get,
 * atomic and quiet are these, and so are the entries' direct paths for a
 * context whose backend set ctx->cpu_peers (api/entry.h), which skip the
 * route's calls and the ops table's indirect call. Free of the core's types.
 */
#ifndef SYMM_HOST_CPU_H
#define SYMM_HOST_CPU_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <symm/symm.h>

/* memmove: a same-PE put may overlap its source. One element (4 or 8 bytes:
 * p, g, an 8-byte putmem) is a load and a store, no call into libc. */
static inline void symm__host_copy(void *dst, const void *src, uint64_t n) {
    if (n == 8) {
        uint64_t v;
        memcpy(&v, src, 8);
        memcpy(dst, &v, 8);
    } else if (n == 4) {
        uint32_t v;
        memcpy(&v, src, 4);
        memcpy(dst, &v, 4);
    } else {
        memmove(dst, src, n);
    }
}

/* quiet: stores to a mapped peer complete when they are globally visible,
 * which a full fence orders before everything after it (loads included). */
static inline void symm__host_fence(void) { atomic_thread_fence(memory_order_seq_cst); }

/* fence: puts and atomics issued before it reach every PE before those
 * issued after it. Both are stores or read-modify-writes, which a release
 * fence orders (no instruction on x86-64's total store order, a `dmb ish`
 * on aarch64); nothing later needs to wait for them. */
static inline void symm__host_order(void) { atomic_thread_fence(memory_order_release); }

#define SYMM__HOST_AMO(T)                                                                \
    do {                                                                                 \
        T *p = (T *)addr, v = (T)value, c = (T)compare;                                  \
        switch (op) {                                                                    \
        case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD:                                      \
        case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: /* the caller's value is 1 */        \
            return (uint64_t)__atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                 \
        case SYMM_AMO_COMPARE_SWAP:                                                      \
            __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_SEQ_CST,               \
                                        __ATOMIC_SEQ_CST);                               \
            return (uint64_t)c;                                                          \
        case SYMM_AMO_FETCH: return (uint64_t)__atomic_load_n(p, __ATOMIC_SEQ_CST);      \
        case SYMM_AMO_SET: __atomic_store_n(p, v, __ATOMIC_SEQ_CST); return 0;           \
        case SYMM_AMO_SWAP: return (uint64_t)__atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); \
        case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND:                                      \
            return (uint64_t)__atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);                 \
        case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR:                                        \
            return (uint64_t)__atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                  \
        default: /* SYMM_AMO_FETCH_XOR, SYMM_AMO_XOR */                                  \
            return (uint64_t)__atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);                 \
        }                                                                                \
    } while (0)

/* One atomic on the aligned 4- or 8-byte word at addr; the caller checked
 * op (SYMM_AMO_FETCH..SYMM_AMO_XOR) against the dtype (floats: FETCH, SET,
 * SWAP, COMPARE_SWAP) and passes INC's 1 as value. Operands and the prior
 * value (returned) are the word's bits in the low bytes; signed and unsigned
 * share the two's-complement operations. */
static inline uint64_t symm__host_amo(void *addr, uint32_t size, uint32_t op, uint64_t value,
                                      uint64_t compare) {
    if (size == 8) SYMM__HOST_AMO(uint64_t);
    SYMM__HOST_AMO(uint32_t);
}
#undef SYMM__HOST_AMO

#endif /* SYMM_HOST_CPU_H */

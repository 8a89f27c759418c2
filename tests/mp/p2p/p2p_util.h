/*
 * Helpers shared by the p2p tests (signals, waits, atomics): typed element
 * access for every integer dtype, a seeded generator, and small job helpers.
 */
#ifndef SYMM_P2P_UTIL_H
#define SYMM_P2P_UTIL_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "symm_test.h"

static const uint32_t p2p_int_dtypes[] = {
    SYMM_DTYPE_INT8,  SYMM_DTYPE_INT16,  SYMM_DTYPE_INT32,  SYMM_DTYPE_INT64,
    SYMM_DTYPE_UINT8, SYMM_DTYPE_UINT16, SYMM_DTYPE_UINT32, SYMM_DTYPE_UINT64,
};
#define P2P_N_INT_DTYPES (sizeof p2p_int_dtypes / sizeof p2p_int_dtypes[0])

static const char *const p2p_cmp_names[] = {"EQ", "NE", "GT", "GE", "LT", "LE"};

static inline uint32_t p2p_size(uint32_t dtype) {
    switch (dtype) {
    case SYMM_DTYPE_INT8: case SYMM_DTYPE_UINT8: return 1;
    case SYMM_DTYPE_INT16: case SYMM_DTYPE_UINT16: case SYMM_DTYPE_FLOAT16:
    case SYMM_DTYPE_BFLOAT16: return 2;
    case SYMM_DTYPE_INT32: case SYMM_DTYPE_UINT32: case SYMM_DTYPE_FLOAT32: return 4;
    default: return 8;
    }
}

static inline bool p2p_signed(uint32_t dtype) {
    return dtype >= SYMM_DTYPE_INT8 && dtype <= SYMM_DTYPE_INT64;
}

/* Store x, converted to dtype (truncating, as a C cast does), at p. */
static inline void p2p_store(uint32_t dtype, void *p, int64_t x) {
    switch (dtype) {
    case SYMM_DTYPE_INT8: { int8_t v = (int8_t)x; memcpy(p, &v, sizeof v); break; }
    case SYMM_DTYPE_INT16: { int16_t v = (int16_t)x; memcpy(p, &v, sizeof v); break; }
    case SYMM_DTYPE_INT32: { int32_t v = (int32_t)x; memcpy(p, &v, sizeof v); break; }
    case SYMM_DTYPE_INT64: { int64_t v = x; memcpy(p, &v, sizeof v); break; }
    case SYMM_DTYPE_UINT8: { uint8_t v = (uint8_t)x; memcpy(p, &v, sizeof v); break; }
    case SYMM_DTYPE_UINT16: { uint16_t v = (uint16_t)x; memcpy(p, &v, sizeof v); break; }
    case SYMM_DTYPE_UINT32: { uint32_t v = (uint32_t)x; memcpy(p, &v, sizeof v); break; }
    default: { uint64_t v = (uint64_t)x; memcpy(p, &v, sizeof v); break; }
    }
}

/* Reference comparison "element cmp ref" on the real C types of dtype. */
#define P2P_CMP_(T)                                                            \
    do {                                                                       \
        T a_, b_;                                                              \
        memcpy(&a_, a, sizeof a_);                                             \
        memcpy(&b_, b, sizeof b_);                                             \
        switch (cmp) {                                                         \
        case SYMM_CMP_EQ: return a_ == b_;                                     \
        case SYMM_CMP_NE: return a_ != b_;                                     \
        case SYMM_CMP_GT: return a_ > b_;                                      \
        case SYMM_CMP_GE: return a_ >= b_;                                     \
        case SYMM_CMP_LT: return a_ < b_;                                      \
        default: return a_ <= b_;                                              \
        }                                                                      \
    } while (0)

static inline bool p2p_ref_cmp(uint32_t dtype, uint32_t cmp, const void *a, const void *b) {
    switch (dtype) {
    case SYMM_DTYPE_INT8: P2P_CMP_(int8_t);
    case SYMM_DTYPE_INT16: P2P_CMP_(int16_t);
    case SYMM_DTYPE_INT32: P2P_CMP_(int32_t);
    case SYMM_DTYPE_INT64: P2P_CMP_(int64_t);
    case SYMM_DTYPE_UINT8: P2P_CMP_(uint8_t);
    case SYMM_DTYPE_UINT16: P2P_CMP_(uint16_t);
    case SYMM_DTYPE_UINT32: P2P_CMP_(uint32_t);
    default: P2P_CMP_(uint64_t);
    }
}

/* splitmix64: small, seedable, identical on every PE. */
static inline uint64_t p2p_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t p2p_rand_below(uint64_t *state, uint64_t n) {
    return n ? p2p_rand(state) % n : 0;
}

static inline void p2p_sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Seed from SYMM_TEST_SEED when set, else the given default. */
static inline uint64_t p2p_seed(uint64_t fallback) {
    const char *s = getenv("SYMM_TEST_SEED");
    return s && *s ? strtoull(s, NULL, 0) : fallback;
}

#endif /* SYMM_P2P_UTIL_H */

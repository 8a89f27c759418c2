/*
 * Host reductions for the core's generic collectives: acc op= src on every
 * dtype and op, and the 16-bit float types through float32 accumulators
 * (rounded to nearest even once, at the end).
 */
#include <math.h>
#include <string.h>

#include "reduce.h"

/* ---- binary16 / bfloat16 <-> float32 (round to nearest even) ---- */

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0) {
        float f = (float)man * 0x1p-24f; /* zero or subnormal, exact */
        return sign ? -f : f;
    }
    if (exp == 31) bits = sign | 0x7f800000u | (man << 13); /* inf / nan */
    else bits = sign | ((exp + 112u) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, or nan kept quiet with its top payload */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to inf */
    if (ax >= 0x38800000u) { /* normal half */
        uint32_t h = ((((ax >> 23) - 112u) << 10) | ((ax & 0x7fffffu) >> 13));
        uint32_t rem = ax & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
    if (ax <= 0x33000000u) return (uint16_t)sign; /* <= 2^-25 rounds to zero */
    uint32_t e = ax >> 23, mant = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14..24 */
    uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (m & 1u))) m++;
    return (uint16_t)(sign | m);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet nan */
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}

/* ---- element-wise kernels: acc op= src ---- */

#define RED_LOOP(T, S, CONV, EXPR)                                             \
    do {                                                                       \
        T *a_ = acc;                                                           \
        const S *b_ = src;                                                     \
        for (size_t i_ = 0; i_ < n; i_++) {                                    \
            T x = a_[i_], y = CONV(b_[i_]);                                    \
            a_[i_] = (EXPR);                                                   \
        }                                                                      \
    } while (0)
#define RED_SAME(v) (v)

/* Integers: SUM/PROD in the unsigned type W (wrap-around, no UB). */
#define RED_INT(T, W)                                                          \
    do {                                                                       \
        switch (op) {                                                          \
        case SYMM_OP_SUM: RED_LOOP(T, T, RED_SAME, (T)((W)x + (W)y)); break;   \
        case SYMM_OP_PROD: RED_LOOP(T, T, RED_SAME, (T)((W)x * (W)y)); break;  \
        case SYMM_OP_MIN: RED_LOOP(T, T, RED_SAME, y < x ? y : x); break;      \
        case SYMM_OP_MAX: RED_LOOP(T, T, RED_SAME, y > x ? y : x); break;      \
        case SYMM_OP_AND: RED_LOOP(T, T, RED_SAME, (T)(x & y)); break;         \
        case SYMM_OP_OR: RED_LOOP(T, T, RED_SAME, (T)(x | y)); break;          \
        case SYMM_OP_XOR: RED_LOOP(T, T, RED_SAME, (T)(x ^ y)); break;         \
        }                                                                      \
    } while (0)

#define RED_FLOAT(T, S, CONV, FMIN, FMAX)                                      \
    do {                                                                       \
        switch (op) {                                                          \
        case SYMM_OP_SUM: RED_LOOP(T, S, CONV, x + y); break;                  \
        case SYMM_OP_PROD: RED_LOOP(T, S, CONV, x * y); break;                 \
        case SYMM_OP_MIN: RED_LOOP(T, S, CONV, FMIN(x, y)); break;             \
        case SYMM_OP_MAX: RED_LOOP(T, S, CONV, FMAX(x, y)); break;             \
        }                                                                      \
    } while (0)

/* acc (n accumulators) op= src (n elements of dtype). Ops are validated. */
void symm__red_apply(uint32_t dtype, uint32_t op, void *acc, const void *src, size_t n) {
    switch (dtype) {
    case SYMM_DTYPE_INT8: RED_INT(int8_t, uint32_t); break;
    case SYMM_DTYPE_INT16: RED_INT(int16_t, uint32_t); break;
    case SYMM_DTYPE_INT32: RED_INT(int32_t, uint32_t); break;
    case SYMM_DTYPE_INT64: RED_INT(int64_t, uint64_t); break;
    case SYMM_DTYPE_UINT8: RED_INT(uint8_t, uint32_t); break;
    case SYMM_DTYPE_UINT16: RED_INT(uint16_t, uint32_t); break;
    case SYMM_DTYPE_UINT32: RED_INT(uint32_t, uint32_t); break;
    case SYMM_DTYPE_UINT64: RED_INT(uint64_t, uint64_t); break;
    case SYMM_DTYPE_FLOAT16: RED_FLOAT(float, uint16_t, f16_to_f32, fminf, fmaxf); break;
    case SYMM_DTYPE_BFLOAT16: RED_FLOAT(float, uint16_t, bf16_to_f32, fminf, fmaxf); break;
    case SYMM_DTYPE_FLOAT32: RED_FLOAT(float, float, RED_SAME, fminf, fmaxf); break;
    case SYMM_DTYPE_FLOAT64: RED_FLOAT(double, double, RED_SAME, fmin, fmax); break;
    }
}

/* Half types: float accumulators <-> 16-bit elements. */
void symm__half_load(uint32_t dtype, float *acc, const uint16_t *src, size_t n) {
    for (size_t i = 0; i < n; i++)
        acc[i] = dtype == SYMM_DTYPE_FLOAT16 ? f16_to_f32(src[i]) : bf16_to_f32(src[i]);
}

void symm__half_store(uint32_t dtype, uint16_t *out, const float *acc, size_t n) {
    for (size_t i = 0; i < n; i++)
        out[i] = dtype == SYMM_DTYPE_FLOAT16 ? f32_to_f16(acc[i]) : f32_to_bf16(acc[i]);
}

/*
 * Reference reductions for the tests: a generator of source elements for
 * (dtype, op, tag, world PE, index) and the expected result of reducing them
 * over a team, computed independently of the runtime (own float16/bfloat16
 * codecs, double arithmetic on values whose results are exact).
 */
#ifndef SYMM_REDUCE_REF_H
#define SYMM_REDUCE_REF_H

#include <math.h>

#include "teams_util.h"

static const char *const op_names[] = {"SYMM_OP_SUM", "SYMM_OP_PROD", "SYMM_OP_MIN",
                                       "SYMM_OP_MAX", "SYMM_OP_AND", "SYMM_OP_OR",
                                       "SYMM_OP_XOR"};

static const uint32_t all_dtypes[] = {
    SYMM_DTYPE_INT8,   SYMM_DTYPE_INT16,  SYMM_DTYPE_INT32,    SYMM_DTYPE_INT64,
    SYMM_DTYPE_UINT8,  SYMM_DTYPE_UINT16, SYMM_DTYPE_UINT32,   SYMM_DTYPE_UINT64,
    SYMM_DTYPE_FLOAT16, SYMM_DTYPE_BFLOAT16, SYMM_DTYPE_FLOAT32, SYMM_DTYPE_FLOAT64};
#define N_DTYPES 12

static bool is_float(uint32_t dt) {
    return dt >= SYMM_DTYPE_FLOAT16;
}
static bool is_signed(uint32_t dt) {
    return dt <= SYMM_DTYPE_INT64;
}

/* ---- test-side float16/bfloat16 codecs (independent of the runtime) ---- */

static double f16_decode(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_decode(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round x to the nearest value with `mant` explicit mantissa bits (ties to
 * even) in the normal range; x must be normal for the format. */
static double round_to_bits(double x, int mant) {
    if (x == 0) return x;
    int ex;
    frexp(fabs(x), &ex);              /* |x| in [2^(ex-1), 2^ex) */
    double ulp = ldexp(1.0, ex - 1 - mant);
    return nearbyint(x / ulp) * ulp;  /* default rounding: to nearest even */
}

/* Exact value (already representable) -> bits. */
static uint16_t f16_encode(double v) {
    if (v == 0) return signbit(v) ? 0x8000 : 0;
    uint16_t s = v < 0 ? 0x8000 : 0;
    v = fabs(v);
    int ex;
    double m = frexp(v, &ex); /* v = m * 2^ex, m in [0.5, 1) */
    int e = ex - 1 + 15;
    if (e <= 0) return (uint16_t)(s | (uint16_t)llround(ldexp(v, 24))); /* subnormal */
    return (uint16_t)(s | (e << 10) | ((uint16_t)llround((m * 2 - 1) * 1024) & 1023));
}

static uint16_t bf16_encode(double v) {
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    return (uint16_t)(bits >> 16);
}

/* ---- element images ---- */

static uint32_t esize(uint32_t dt) {
    return symm_dtype_size(dt);
}

/* Double value of one element image (floats only). */
static double fdecode(uint32_t dt, const void *p) {
    switch (dt) {
    case SYMM_DTYPE_FLOAT16: { uint16_t h; memcpy(&h, p, 2); return f16_decode(h); }
    case SYMM_DTYPE_BFLOAT16: { uint16_t h; memcpy(&h, p, 2); return bf16_decode(h); }
    case SYMM_DTYPE_FLOAT32: { float f; memcpy(&f, p, 4); return f; }
    default: { double d; memcpy(&d, p, 8); return d; }
    }
}

static void fencode(uint32_t dt, double v, void *p) {
    switch (dt) {
    case SYMM_DTYPE_FLOAT16: { uint16_t h = f16_encode(v); memcpy(p, &h, 2); break; }
    case SYMM_DTYPE_BFLOAT16: { uint16_t h = bf16_encode(v); memcpy(p, &h, 2); break; }
    case SYMM_DTYPE_FLOAT32: { float f = (float)v; memcpy(p, &f, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* Integer element as int64 (sign- or zero-extended). */
static int64_t idecode(uint32_t dt, const void *p) {
    switch (dt) {
    case SYMM_DTYPE_INT8: { int8_t v; memcpy(&v, p, 1); return v; }
    case SYMM_DTYPE_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case SYMM_DTYPE_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case SYMM_DTYPE_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case SYMM_DTYPE_UINT8: { uint8_t v; memcpy(&v, p, 1); return v; }
    case SYMM_DTYPE_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case SYMM_DTYPE_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return (int64_t)v; }
    }
}

/* Modes of the float generator. */
#define GEN_EXACT 0   /* values whose op result is exact in every float type */
#define GEN_ROUND 1   /* half types: full-mantissa values, the sum needs rounding */
#define GEN_RANDOM 2  /* float32/64: arbitrary values (bitwise order check) */

/* Element i of world PE w's source, for (dtype, op, tag). */
static void gen(uint32_t dt, uint32_t op, int mode, uint64_t tag, int32_t w, uint64_t i, void *out) {
    uint64_t r = tu_mix(tag * 0x100000001b3ull + (uint64_t)w * 0x9e37ull + i);
    if (!is_float(dt)) {
        if (op == SYMM_OP_PROD) r |= 1; /* odd factors keep products non-zero */
        memcpy(out, &r, esize(dt));    /* little-endian truncation */
        return;
    }
    double v;
    if (mode == GEN_ROUND) {
        int mant = dt == SYMM_DTYPE_FLOAT16 ? 10 : 7;
        v = 1.0 + ldexp((double)(r % (1u << mant)), -mant);
    } else if (mode == GEN_RANDOM) {
        v = ((double)(r >> 11) * 0x1p-53 - 0.5) * 1000.0;
        if (dt == SYMM_DTYPE_FLOAT32) v = (float)v;
    } else if (op == SYMM_OP_SUM) {
        v = (double)(r % 17) - 8;
    } else if (op == SYMM_OP_PROD) {
        static const double f[] = {0.5, 1, 2, -0.5, -1, -2};
        v = f[r % 6];
    } else {
        v = ((double)(r % 201) - 100) / 4;
    }
    fencode(dt, v, out);
}

/* out = op over team PEs 0..n-1 (in order) of their element idx. */
static void expect(uint32_t dt, uint32_t op, int mode, uint64_t tag, symm_team t, uint64_t idx,
                   void *out) {
    int32_t n = symm_team_n_pes(t);
    uint8_t e[8];
    if (!is_float(dt)) {
        uint64_t acc = 0;
        for (int32_t j = 0; j < n; j++) {
            gen(dt, op, mode, tag, tu_world_pe(t, j), idx, e);
            int64_t v = idecode(dt, e);
            uint64_t u = (uint64_t)v;
            if (j == 0) { acc = u; continue; }
            switch (op) {
            case SYMM_OP_SUM: acc += u; break;
            case SYMM_OP_PROD: acc *= u; break;
            case SYMM_OP_MIN:
                if (is_signed(dt) ? v < (int64_t)acc : u < acc) acc = u;
                break;
            case SYMM_OP_MAX:
                if (is_signed(dt) ? v > (int64_t)acc : u > acc) acc = u;
                break;
            case SYMM_OP_AND: acc &= u; break;
            case SYMM_OP_OR: acc |= u; break;
            case SYMM_OP_XOR: acc ^= u; break;
            }
        }
        memcpy(out, &acc, esize(dt)); /* modular truncation */
        return;
    }
    if (mode == GEN_RANDOM) { /* the runtime's order and precision */
        float af = 0;
        double ad = 0;
        for (int32_t j = 0; j < n; j++) {
            gen(dt, op, mode, tag, tu_world_pe(t, j), idx, e);
            double v = fdecode(dt, e);
            if (dt == SYMM_DTYPE_FLOAT32) af = j == 0 ? (float)v : af + (float)v;
            else ad = j == 0 ? v : ad + v;
        }
        fencode(dt, dt == SYMM_DTYPE_FLOAT32 ? (double)af : ad, out);
        return;
    }
    double acc = 0;
    for (int32_t j = 0; j < n; j++) {
        gen(dt, op, mode, tag, tu_world_pe(t, j), idx, e);
        double v = fdecode(dt, e);
        if (j == 0) { acc = v; continue; }
        switch (op) {
        case SYMM_OP_SUM: acc += v; break; /* exact for these values */
        case SYMM_OP_PROD: acc *= v; break;
        case SYMM_OP_MIN: acc = v < acc ? v : acc; break;
        case SYMM_OP_MAX: acc = v > acc ? v : acc; break;
        }
    }
    if (mode == GEN_ROUND) acc = round_to_bits(acc, dt == SYMM_DTYPE_FLOAT16 ? 10 : 7);
    fencode(dt, acc, out);
}

#endif

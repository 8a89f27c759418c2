/*
 * Point-to-point waits and tests on this PE's buffer elements.
 *
 * Every public form (wait/test x single/all/any/some x scalar/vector) is a thin
 * call into one engine: a condition (cmp against one value or values[i], with
 * an optional status mask) evaluated by one pass over the elements. A wait
 * repeats the pass inside symm__wait (which also watches for dead peers); a
 * test runs it once. signal.c uses the same engine for signal waits.
 *
 * Elements are read through the backend's atomic FETCH on this PE's heap offset
 * (never by dereferencing heap memory), so each read is atomic and the same
 * code serves device memory. 1- and 2-byte elements are read as the aligned
 * 32-bit word that contains them (buffers are 256-byte aligned, so that word
 * lies inside the buffer's reservation) and the element's bytes are taken
 * from it.
 *
 * Semantics (OpenSHMEM 1.5):
 *  - _all: satisfied when every included element has compared true. Elements
 *    are passed in order: one that compared true is not read again (as in
 *    other OpenSHMEM implementations). No included element: returns at once.
 *  - _any: *found is the index (relative to index) of one included element
 *    that compared true. No included element: returns SYMM_SUCCESS at once
 *    with *found = UINT64_MAX (OpenSHMEM's SIZE_MAX); test_any then reports
 *    *satisfied = 0, and any unsatisfied test_any also sets *found = UINT64_MAX.
 *  - _some: waits until at least one included element compares true; one pass
 *    then records every included element that compares true, in increasing
 *    order. No included element: returns at once with *nfound = 0.
 * Out-parameters of waits (found, indices, nfound) are optional. Tests need
 * their primary result (satisfied, or nfound for the _some forms).
 * A test that finds its condition unsatisfied reports PEER_FAILED if the job
 * lost a PE, so a polling loop over a test cannot spin forever.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define MODE_ALL 0u
#define MODE_ANY 1u
#define MODE_SOME 2u

#define NOT_FOUND UINT64_MAX

typedef struct cond {
    symm__ctx *ctx;
    const symm__buf *buf;
    uint64_t index, nelems;
    const int32_t *status;  /* optional mask: status[i] != 0 excludes i   */
    uint32_t cmp;
    uint32_t mode;          /* MODE_*                                     */
    bool is_signed;
    const uint8_t *values;  /* vector form: nelems elements of the dtype  */
    uint64_t value;         /* scalar form: the value, widened            */
    /* progress and results */
    uint64_t cursor;        /* _all: elements before it compared true     */
    uint64_t found;         /* _any                                       */
    uint64_t *indices;      /* _some: optional, nelems capacity           */
    uint64_t nfound;        /* _some                                      */
    uint64_t seen;          /* value of the last element that compared true */
    symm_status err;        /* a read failed: stop and report it          */
} cond;

static bool dtype_is_integer(uint32_t dtype) {
    return dtype >= SYMM_DTYPE_INT8 && dtype <= SYMM_DTYPE_UINT64;
}

static bool dtype_is_signed(uint32_t dtype) {
    return dtype >= SYMM_DTYPE_INT8 && dtype <= SYMM_DTYPE_INT64;
}

/* One element of an integer dtype at p, widened to 64 bits (sign-extended for
 * signed dtypes, so signed comparisons can use int64_t). */
static uint64_t widen(uint32_t dtype, const void *p) {
    switch (dtype) {
    case SYMM_DTYPE_INT8: { int8_t v; memcpy(&v, p, sizeof v); return (uint64_t)(int64_t)v; }
    case SYMM_DTYPE_INT16: { int16_t v; memcpy(&v, p, sizeof v); return (uint64_t)(int64_t)v; }
    case SYMM_DTYPE_INT32: { int32_t v; memcpy(&v, p, sizeof v); return (uint64_t)(int64_t)v; }
    case SYMM_DTYPE_INT64: { int64_t v; memcpy(&v, p, sizeof v); return (uint64_t)v; }
    case SYMM_DTYPE_UINT8: { uint8_t v; memcpy(&v, p, sizeof v); return v; }
    case SYMM_DTYPE_UINT16: { uint16_t v; memcpy(&v, p, sizeof v); return v; }
    case SYMM_DTYPE_UINT32: { uint32_t v; memcpy(&v, p, sizeof v); return v; }
    default: { uint64_t v; memcpy(&v, p, sizeof v); return v; }
    }
}

static bool compare(uint32_t cmp, bool is_signed, uint64_t a, uint64_t b) {
    int order;
    if (is_signed)
        order = (int64_t)a < (int64_t)b ? -1 : (int64_t)a > (int64_t)b;
    else
        order = a < b ? -1 : a > b;
    switch (cmp) {
    case SYMM_CMP_EQ: return order == 0;
    case SYMM_CMP_NE: return order != 0;
    case SYMM_CMP_GT: return order > 0;
    case SYMM_CMP_GE: return order >= 0;
    case SYMM_CMP_LT: return order < 0;
    default: return order <= 0; /* SYMM_CMP_LE; cmp is validated on entry */
    }
}

symm_status symm__check_cmp(const char *fn, uint32_t cmp) {
    SYMM_CHECK(cmp <= SYMM_CMP_LE, SYMM_ERR_INVALID_ARG,
               "%s: unknown comparison %u (expected SYMM_CMP_EQ..SYMM_CMP_LE)", fn, cmp);
    return SYMM_SUCCESS;
}

/* Atomic read of element i (relative to c->index) of this PE's copy. */
static symm_status read_elem(cond *c, uint64_t i, uint64_t *out) {
    const symm__buf *b = c->buf;
    symm__ctx *ctx = c->ctx;
    uint64_t off = b->off + (c->index + i) * b->elem_size;
    uint64_t word = 0, zero = 0;
    if (b->elem_size >= 4) {
        symm_status st = symm__atomic(ctx, ctx->my_pe, off, b->dtype, SYMM_AMO_FETCH, &zero,
                                          NULL, &word);
        if (st != SYMM_SUCCESS) return st;
        *out = widen(b->dtype, &word);
        return SYMM_SUCCESS;
    }
    uint64_t word_off = off & ~(uint64_t)3;
    uint32_t w = 0;
    symm_status st = symm__atomic(ctx, ctx->my_pe, word_off, SYMM_DTYPE_UINT32,
                                      SYMM_AMO_FETCH, &zero, NULL, &w);
    if (st != SYMM_SUCCESS) return st;
    *out = widen(b->dtype, (const uint8_t *)&w + (off - word_off));
    return SYMM_SUCCESS;
}

static bool included(const cond *c, uint64_t i) {
    return !c->status || c->status[i] == 0;
}

/* Does element i compare true? Sets c->err (and answers true, to stop a wait)
 * when the read fails. */
static bool elem_true(cond *c, uint64_t i) {
    uint64_t v;
    symm_status st = read_elem(c, i, &v);
    if (st != SYMM_SUCCESS) {
        c->err = st;
        return true;
    }
    uint64_t ref = c->values ? widen(c->buf->dtype, c->values + i * c->buf->elem_size) : c->value;
    if (!compare(c->cmp, c->is_signed, v, ref)) return false;
    c->seen = v;
    return true;
}

/* One pass over the elements: is the condition met? */
static bool evaluate(cond *c) {
    switch (c->mode) {
    case MODE_ALL:
        for (; c->cursor < c->nelems; c->cursor++) {
            if (!included(c, c->cursor)) continue;
            if (!elem_true(c, c->cursor)) return false;
            if (c->err) return true;
        }
        return true;
    case MODE_ANY:
        for (uint64_t i = 0; i < c->nelems; i++) {
            if (!included(c, i) || !elem_true(c, i)) continue;
            if (c->err) return true;
            c->found = i;
            return true;
        }
        return false;
    default: /* MODE_SOME */
        c->nfound = 0;
        for (uint64_t i = 0; i < c->nelems; i++) {
            if (!included(c, i) || !elem_true(c, i)) continue;
            if (c->err) return true;
            if (c->indices) c->indices[c->nfound] = i;
            c->nfound++;
        }
        return c->nfound > 0;
    }
}

static bool poll_done(void *arg) {
    return evaluate(arg);
}

static void describe_cond(const void *arg, char *buf, unsigned long cap) {
    static const char *const cmps[] = {"==", "!=", ">", ">=", "<", "<="};
    static const char *const modes[] = {"all", "any", "some"};
    const cond *c = arg;
    char rhs[48];
    if (c->values) snprintf(rhs, sizeof rhs, "its value in the caller's vector");
    else if (c->is_signed) snprintf(rhs, sizeof rhs, "%lld", (long long)c->value);
    else snprintf(rhs, sizeof rhs, "%llu", (unsigned long long)c->value);
    snprintf(buf, cap, "%s of elements [%llu, %llu) of the buffer at heap offset %llu to be %s %s",
             modes[c->mode <= MODE_SOME ? c->mode : 0], (unsigned long long)c->index,
             (unsigned long long)(c->index + c->nelems), (unsigned long long)c->buf->off,
             c->cmp < sizeof cmps / sizeof cmps[0] ? cmps[c->cmp] : "?", rhs);
}

/* Wait (block) or test (one pass). On success the condition's results are in c;
 * *met tells a test whether it held. */
static symm_status engine(cond *c, bool block, bool *met) {
    c->cursor = 0;
    c->found = NOT_FOUND;
    c->nfound = 0;
    c->err = SYMM_SUCCESS;

    bool any_included = false;
    for (uint64_t i = 0; i < c->nelems && !any_included; i++) any_included = included(c, i);
    if (!any_included) {
        /* Vacuous: _all holds, _any and _some have nothing to report. */
        *met = c->mode == MODE_ALL;
        return SYMM_SUCCESS;
    }

    if (block) {
        const symm__wait_what what = {describe_cond, c};
        symm__waiting = &what;
        symm_status st = symm__wait_keep(c->ctx, (atomic_int *)&c->buf->closing, poll_done, c);
        symm__waiting = NULL;
        if (st != SYMM_SUCCESS) return st;
        *met = true;
    } else {
        *met = evaluate(c);
    }
    if (c->err != SYMM_SUCCESS) return c->err; /* the backend left its message */
    if (!*met) {
        SYMM_TRY(symm__check_failed(c->ctx));
    } else {
        /* Reads the caller makes after seeing the condition must not be
         * satisfied from before it. */
        atomic_thread_fence(memory_order_acquire);
    }
    return SYMM_SUCCESS;
}

/* Validate a public call and set up its condition. */
static symm_status prepare(const char *fn, symm_buf h, uint64_t index, uint64_t nelems,
                           const int32_t *status, uint32_t cmp, const void *values, bool vector,
                           uint32_t mode, cond *c) {
    symm__buf *buf;
    SYMM_TRY_IN(fn, symm__buf_get(h, &buf));
    SYMM_TRY_IN(fn, symm__thread_check(buf->ctx));
    SYMM_CHECK(dtype_is_integer(buf->dtype), SYMM_ERR_INVALID_ARG,
               "%s: waits and tests need an integer buffer (dtype %u is not)", fn, buf->dtype);
    SYMM_TRY(symm__check_cmp(fn, cmp));
    SYMM_TRY_IN(fn, symm__check_range(buf, index, nelems));
    SYMM_CHECK(values || nelems == 0, SYMM_ERR_INVALID_ARG, "%s: %s is NULL", fn,
               vector ? "values" : "value");
    memset(c, 0, sizeof *c);
    c->ctx = buf->ctx;
    c->buf = buf;
    c->index = index;
    c->nelems = nelems;
    c->status = status;
    c->cmp = cmp;
    c->mode = mode;
    c->is_signed = dtype_is_signed(buf->dtype);
    if (vector)
        c->values = values;
    else if (values)
        c->value = widen(buf->dtype, values);
    return SYMM_SUCCESS;
}

/* Out-parameters of every form; NULL where a form has none or the caller
 * passed none. */
typedef struct outs {
    int32_t *satisfied;
    uint64_t *found;
    uint64_t *indices;
    uint64_t *nfound;
} outs;

static symm_status run(const char *fn, symm_buf h, uint64_t index, uint64_t nelems,
                       const int32_t *status, uint32_t cmp, const void *values, bool vector,
                       uint32_t mode, bool block, outs o) {
    cond c;
    SYMM_TRY(prepare(fn, h, index, nelems, status, cmp, values, vector, mode, &c));
    if (!block) {
        if (mode == MODE_SOME)
            SYMM_CHECK(o.nfound, SYMM_ERR_INVALID_ARG, "%s: nfound is NULL", fn);
        else
            SYMM_CHECK(o.satisfied, SYMM_ERR_INVALID_ARG, "%s: satisfied is NULL", fn);
    }
    /* Only a pass that finds the condition met leaves entries in indices. */
    c.indices = o.indices;

    bool met = false;
    SYMM_TRY(engine(&c, block, &met));

    if (o.satisfied) *o.satisfied = met ? 1 : 0;
    if (o.found) *o.found = met ? c.found : NOT_FOUND;
    if (o.nfound) *o.nfound = met ? c.nfound : 0;
    return SYMM_SUCCESS;
}

symm_status symm__wait_elem(symm__buf *buf, uint64_t index, uint32_t cmp, uint64_t value,
                            uint64_t *seen) {
    cond c;
    memset(&c, 0, sizeof c);
    c.ctx = buf->ctx;
    c.buf = buf;
    c.index = index;
    c.nelems = 1;
    c.cmp = cmp;
    c.mode = MODE_ALL;
    c.is_signed = dtype_is_signed(buf->dtype);
    c.value = value;
    bool met = false;
    SYMM_TRY(engine(&c, true, &met));
    if (seen) *seen = c.seen;
    return SYMM_SUCCESS;
}

/* ---- Public entries: one line each over run() ---- */

#define OUTS(...) ((outs){__VA_ARGS__})

symm_status symm_wait_until(symm_buf buf, uint64_t index, uint32_t cmp, const void *value) {
    return run(__func__, buf, index, 1, NULL, cmp, value, false, MODE_ALL, true, OUTS(0));
}

symm_status symm_wait_until_all(symm_buf buf, uint64_t index, uint64_t nelems,
                                const int32_t *status, uint32_t cmp, const void *value) {
    return run(__func__, buf, index, nelems, status, cmp, value, false, MODE_ALL, true, OUTS(0));
}

symm_status symm_wait_until_any(symm_buf buf, uint64_t index, uint64_t nelems,
                                const int32_t *status, uint32_t cmp, const void *value,
                                uint64_t *found) {
    return run(__func__, buf, index, nelems, status, cmp, value, false, MODE_ANY, true,
               OUTS(.found = found));
}

symm_status symm_wait_until_some(symm_buf buf, uint64_t index, uint64_t nelems,
                                 const int32_t *status, uint32_t cmp, const void *value,
                                 uint64_t *indices, uint64_t *nfound) {
    return run(__func__, buf, index, nelems, status, cmp, value, false, MODE_SOME, true,
               OUTS(.indices = indices, .nfound = nfound));
}

symm_status symm_wait_until_all_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                       const int32_t *status, uint32_t cmp, const void *values) {
    return run(__func__, buf, index, nelems, status, cmp, values, true, MODE_ALL, true, OUTS(0));
}

symm_status symm_wait_until_any_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                       const int32_t *status, uint32_t cmp, const void *values,
                                       uint64_t *found) {
    return run(__func__, buf, index, nelems, status, cmp, values, true, MODE_ANY, true,
               OUTS(.found = found));
}

symm_status symm_wait_until_some_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                        const int32_t *status, uint32_t cmp, const void *values,
                                        uint64_t *indices, uint64_t *nfound) {
    return run(__func__, buf, index, nelems, status, cmp, values, true, MODE_SOME, true,
               OUTS(.indices = indices, .nfound = nfound));
}

symm_status symm_test(symm_buf buf, uint64_t index, uint32_t cmp, const void *value,
                      int32_t *satisfied) {
    return run(__func__, buf, index, 1, NULL, cmp, value, false, MODE_ALL, false,
               OUTS(.satisfied = satisfied));
}

symm_status symm_test_all(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status,
                          uint32_t cmp, const void *value, int32_t *satisfied) {
    return run(__func__, buf, index, nelems, status, cmp, value, false, MODE_ALL, false,
               OUTS(.satisfied = satisfied));
}

symm_status symm_test_any(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status,
                          uint32_t cmp, const void *value, int32_t *satisfied, uint64_t *found) {
    return run(__func__, buf, index, nelems, status, cmp, value, false, MODE_ANY, false,
               OUTS(.satisfied = satisfied, .found = found));
}

symm_status symm_test_some(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status,
                           uint32_t cmp, const void *value, uint64_t *indices, uint64_t *nfound) {
    return run(__func__, buf, index, nelems, status, cmp, value, false, MODE_SOME, false,
               OUTS(.indices = indices, .nfound = nfound));
}

symm_status symm_test_all_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                 const int32_t *status, uint32_t cmp, const void *values,
                                 int32_t *satisfied) {
    return run(__func__, buf, index, nelems, status, cmp, values, true, MODE_ALL, false,
               OUTS(.satisfied = satisfied));
}

symm_status symm_test_any_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                 const int32_t *status, uint32_t cmp, const void *values,
                                 int32_t *satisfied, uint64_t *found) {
    return run(__func__, buf, index, nelems, status, cmp, values, true, MODE_ANY, false,
               OUTS(.satisfied = satisfied, .found = found));
}

symm_status symm_test_some_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                  const int32_t *status, uint32_t cmp, const void *values,
                                  uint64_t *indices, uint64_t *nfound) {
    return run(__func__, buf, index, nelems, status, cmp, values, true, MODE_SOME, false,
               OUTS(.indices = indices, .nfound = nfound));
}

/*
 * Minimal test helpers shared by every C test: ASSERT_* print both values and
 * the failing PE, and end the test with a non-zero status (tests are separate
 * processes, so exiting from a failed test is the harness' job, not the
 * library's).
 */
#ifndef SYMM_TEST_H
#define SYMM_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <symm/symm.h>

static int symm_test_pe = -1; /* set by tests once they know their PE */

#define TEST_FAIL_(...)                                                        \
    do {                                                                       \
        fprintf(stderr, "FAIL %s:%d [pe %d]: ", __FILE__, __LINE__, symm_test_pe); \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        fflush(stderr);                                                        \
        exit(1);                                                               \
    } while (0)

#define ASSERT_TRUE(c)                                                         \
    do {                                                                       \
        if (!(c)) TEST_FAIL_("ASSERT_TRUE(%s)", #c);                           \
    } while (0)

#define ASSERT_INT_OP_(a, op, b)                                               \
    do {                                                                       \
        long long a_ = (long long)(a), b_ = (long long)(b);                    \
        if (!(a_ op b_)) TEST_FAIL_("%s %s %s (%lld vs %lld)", #a, #op, #b, a_, b_); \
    } while (0)
#define ASSERT_EQ(a, b) ASSERT_INT_OP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT_OP_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_OP_(a, <=, b)
#define ASSERT_GE(a, b) ASSERT_INT_OP_(a, >=, b)

#define ASSERT_U64_EQ(a, b)                                                    \
    do {                                                                       \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                       \
        if (a_ != b_) TEST_FAIL_("%s == %s (%" PRIu64 " vs %" PRIu64 ")", #a, #b, a_, b_); \
    } while (0)

#define ASSERT_DBL_NEAR(a, b, tol)                                             \
    do {                                                                       \
        double a_ = (double)(a), b_ = (double)(b);                             \
        if (!(a_ - b_ <= (tol) && b_ - a_ <= (tol)))                           \
            TEST_FAIL_("%s ~= %s (%.17g vs %.17g)", #a, #b, a_, b_);           \
    } while (0)

/* A symm call that must succeed: prints status name and message otherwise. */
#define CHECK_OK(call)                                                         \
    do {                                                                       \
        symm_status st_ = (call);                                              \
        if (st_ != SYMM_SUCCESS)                                               \
            TEST_FAIL_("%s -> %s (%s)", #call, symm_status_string(st_), symm_last_error()); \
    } while (0)

/* A symm call that must fail with a given status and leave a message. */
#define CHECK_STATUS(call, expected)                                           \
    do {                                                                       \
        symm_status st_ = (call);                                              \
        if (st_ != (expected))                                                 \
            TEST_FAIL_("%s -> %s, expected %s (%s)", #call, symm_status_string(st_), \
                       symm_status_string(expected), symm_last_error());       \
        if ((expected) != SYMM_SUCCESS && symm_last_error()[0] == '\0')        \
            TEST_FAIL_("%s: no error message", #call);                         \
    } while (0)

/* Init with the default bootstrap (symmrun env) and record the PE. The
 * backend is the host unless SYMM_TEST_BACKEND=cuda (the GPU suite sets it);
 * a CUDA run on a machine without a usable GPU is a skip (exit 77). */
/* Is world PE pe load/store reachable from this PE (in SYMM_TEAM_SHARED)?
 * False for PEs of other (simulated: symmrun --hosts) hosts. */
static inline int symm_test_shared(symm_ctx ctx, int pe) {
    symm_team w = NULL, s = NULL;
    if (symm_team_get(ctx, SYMM_TEAM_WORLD, &w) != SYMM_SUCCESS ||
        symm_team_get(ctx, SYMM_TEAM_SHARED, &s) != SYMM_SUCCESS)
        return 0;
    return symm_team_translate_pe(w, pe, s) >= 0;
}

static inline symm_ctx symm_test_init(uint32_t backend) {
    symm_init_attr attr;
    symm_ctx ctx = NULL;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    const char *b = getenv("SYMM_TEST_BACKEND");
    if (backend == SYMM_BACKEND_AUTO)
        backend = (b && strcmp(b, "cuda") == 0) ? SYMM_BACKEND_CUDA : SYMM_BACKEND_HOST;
    attr.backend = backend;
    symm_status st = symm_init(&attr, &ctx);
    if (st == SYMM_ERR_NO_DEVICE && backend == SYMM_BACKEND_CUDA) {
        printf("SKIP: no usable GPU (%s)\n", symm_last_error());
        exit(77);
    }
    if (st != SYMM_SUCCESS)
        TEST_FAIL_("symm_init -> %s (%s)", symm_status_string(st), symm_last_error());
    symm_test_pe = symm_my_pe(ctx);
    return ctx;
}

/* Read n elements of this PE's copy of buf into host memory (works for host
 * and device memory alike). */
static inline void symm_test_read_local(symm_ctx ctx, symm_buf buf, uint64_t index,
                                        uint64_t nelems, void *out) {
    CHECK_OK(symm_get(out, buf, index, nelems, symm_my_pe(ctx)));
}

#endif /* SYMM_TEST_H */

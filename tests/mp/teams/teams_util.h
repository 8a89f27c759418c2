/*
 * Helpers for the team and collective tests. Buffers are read and written
 * through symm_put/symm_get on this PE (never through symm_buf_ptr), so the
 * tests also run on backends whose heap is device memory.
 */
#ifndef SYMM_TEAMS_UTIL_H
#define SYMM_TEAMS_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symm_test.h"

static symm_ctx tu_ctx;
static int32_t tu_me, tu_n;
/* Cross-PE checks of the blocking collectives (MISMATCH, a peer's argument
 * error): the host backend's generic algorithm exchanges the calls, the CUDA
 * backend's hook agrees on them first (ops->coll_agree), so both make them.
 * A backend with a hook and no agree would check arguments locally only:
 * tu_xchecks says whether the cases whose arguments differ across PEs run.
 * tu_host: the host backend. Team creation checks always hold. */
static bool tu_xchecks, tu_host;

static inline symm_team tu_world(void) {
    symm_team t = NULL;
    CHECK_OK(symm_team_get(tu_ctx, SYMM_TEAM_WORLD, &t));
    return t;
}

static inline void tu_init(void) {
    tu_ctx = symm_test_init(SYMM_BACKEND_AUTO);
    tu_me = symm_my_pe(tu_ctx);
    tu_n = symm_n_pes(tu_ctx);
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(tu_ctx, &info));
    tu_host = info.backend == SYMM_BACKEND_HOST;
    tu_xchecks = tu_host || info.backend == SYMM_BACKEND_CUDA;
}

static inline void tu_fini(void) {
    CHECK_OK(symm_finalize(&tu_ctx));
    ASSERT_TRUE(tu_ctx == NULL);
}

/* Whole-buffer local access (this PE's copy). */
static inline void tu_write(symm_buf b, uint64_t index, const void *src, uint64_t n) {
    CHECK_OK(symm_put(b, index, src, n, tu_me));
}
static inline void tu_read(symm_buf b, uint64_t index, void *dst, uint64_t n) {
    CHECK_OK(symm_get(dst, b, index, n, tu_me));
}

static inline void *tu_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) TEST_FAIL_("out of memory (%zu bytes)", n);
    return p;
}

/* World PE of team PE i. */
static inline int32_t tu_world_pe(symm_team t, int32_t i) {
    return symm_team_translate_pe(t, i, tu_world());
}

/* Deterministic 64-bit mix for test data. */
static inline uint64_t tu_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Fill a byte image of n elements of size es with a pattern of (a, b). */
static inline void tu_pattern(void *dst, uint64_t n, uint32_t es, uint64_t a, uint64_t b) {
    uint8_t *p = dst;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v = tu_mix(a * 1000003ull + b * 7919ull + i);
        memcpy(p + i * es, &v, es);
    }
}

/* Sentinel bytes for "must stay untouched". */
#define TU_SENTINEL 0xA5

/* Find the first differing element of two images; -1 when equal. */
static inline int64_t tu_first_diff(const void *a, const void *b, uint64_t n, uint32_t es) {
    const uint8_t *x = a, *y = b;
    for (uint64_t i = 0; i < n; i++)
        if (memcmp(x + i * es, y + i * es, es) != 0) return (int64_t)i;
    return -1;
}

#define ASSERT_IMAGE_EQ(got, want, n, es, what)                                \
    do {                                                                       \
        int64_t d_ = tu_first_diff((got), (want), (n), (es));                  \
        if (d_ >= 0) {                                                         \
            uint64_t g_ = 0, w_ = 0;                                           \
            memcpy(&g_, (const uint8_t *)(got) + d_ * (es), (es));             \
            memcpy(&w_, (const uint8_t *)(want) + d_ * (es), (es));            \
            TEST_FAIL_("%s: element %lld differs (got 0x%llx, want 0x%llx)",   \
                       (what), (long long)d_, (unsigned long long)g_,          \
                       (unsigned long long)w_);                                \
        }                                                                      \
    } while (0)

#endif

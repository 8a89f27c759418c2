/*
 * The heap's edges, under symmrun at any PE count:
 *  - sysarea: symm_putmem/getmem/ptr (and their nbi forms) on an address of
 *    the runtime's system area (barrier flags, team scratch at the start of
 *    the heap) return SYMM_ERR_OUT_OF_BOUNDS with a message and change
 *    nothing; a barrier still synchronises afterwards.
 *  - overlap: same-PE put/get/putmem/getmem with overlapping ranges move the
 *    bytes like memmove. The test exports its own memcpy (the runtime binds
 *    to it), which fails the test when called on overlapping ranges: glibc's
 *    memcpy happens to tolerate overlap on x86-64, so the data alone would
 *    not show the bug. (Under ASan its interceptor reports it instead.)
 *
 *   fault_heap_guard sysarea|overlap
 */
#include <stdint.h>
#include <string.h>

#include "symm_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

#ifndef HAVE_ASAN
/* Every memcpy of the process that goes through the PLT (the runtime's do)
 * lands here: overlapping ranges are a bug (C11 7.24.2.1). */
static volatile int overlap_calls;
void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    volatile unsigned char *d = dst; /* volatile: never turned back into a memcpy call */
    const unsigned char *s = src;
    if (n && (const unsigned char *)d < s + n && s < (const unsigned char *)d + n) overlap_calls++;
    if ((const unsigned char *)d <= s) {
        for (size_t i = 0; i < n; i++) d[i] = s[i];
    } else {
        for (size_t i = n; i-- > 0;) d[i] = s[i];
    }
    return dst;
}
#else
static volatile int overlap_calls;
#endif

static void test_sysarea(symm_ctx ctx, int me, int n) {
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 16, &buf));
    uint64_t off;
    char *p;
    CHECK_OK(symm_buf_query(buf, NULL, NULL, &off));
    CHECK_OK(symm_buf_ptr(buf, (void **)&p));
    char *heap = p - off; /* the start of this PE's heap */
    ASSERT_TRUE(off >= 128 * 1024);
    int peer = (me + 1) % n;
    int64_t junk[4] = {-1, -1, -1, -1}, out[4];
    char *bad[] = {heap, heap + 8, heap + 512, heap + 128 * 1024 - 8};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_STATUS(symm_putmem(ctx, bad[i], junk, 8, peer), SYMM_ERR_OUT_OF_BOUNDS);
        if (!strstr(symm_last_error(), "system area"))
            TEST_FAIL_("message does not name the system area: %s", symm_last_error());
        CHECK_STATUS(symm_putmem_nbi(ctx, bad[i], junk, 8, peer), SYMM_ERR_OUT_OF_BOUNDS);
        CHECK_STATUS(symm_getmem(ctx, out, bad[i], 8, peer), SYMM_ERR_OUT_OF_BOUNDS);
        CHECK_STATUS(symm_getmem_nbi(ctx, out, bad[i], 8, peer), SYMM_ERR_OUT_OF_BOUNDS);
        void *q = (void *)1;
        CHECK_STATUS(symm_ptr(ctx, bad[i], peer, &q), SYMM_ERR_OUT_OF_BOUNDS);
        ASSERT_TRUE(q == (void *)1); /* not clobbered */
    }
    /* A range that starts below the first buffer and reaches into it. */
    CHECK_STATUS(symm_putmem(ctx, p - 8, junk, 16, peer), SYMM_ERR_OUT_OF_BOUNDS);
    /* The first byte after the system area is fine. */
    void *q = NULL;
    CHECK_OK(symm_ptr(ctx, heap + 128 * 1024, peer, &q));
    CHECK_OK(symm_putmem(ctx, p, junk, 8, peer));
    /* Barriers still synchronise: each PE writes its rank after a barrier and
     * checks its neighbour's write is there after the next. */
    int64_t mine = 1000 + me;
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_put(buf, 1, &mine, 1, peer));
    CHECK_OK(symm_barrier_all(ctx));
    int64_t seen = 0;
    symm_test_read_local(ctx, buf, 1, 1, &seen);
    ASSERT_EQ(seen, 1000 + (me + n - 1) % n);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
}

static void fill(uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + 3);
}

/* One same-PE copy through symm against memmove on a reference copy. */
static void check_move(symm_ctx ctx, symm_buf buf, uint8_t *heap_bytes, size_t dst, size_t src,
                       size_t len, int how) {
    enum { N = 4096 };
    uint8_t ref[N];
    fill(heap_bytes, N);
    fill(ref, N);
    memmove(ref + dst, ref + src, len);
    int me = symm_my_pe(ctx);
    overlap_calls = 0;
    switch (how) {
    case 0: CHECK_OK(symm_put(buf, dst, heap_bytes + src, len, me)); break;
    case 1: CHECK_OK(symm_get(heap_bytes + dst, buf, src, len, me)); break;
    case 2: CHECK_OK(symm_putmem(ctx, heap_bytes + dst, heap_bytes + src, len, me)); break;
    case 3: CHECK_OK(symm_getmem(ctx, heap_bytes + dst, heap_bytes + src, len, me)); break;
    case 4: CHECK_OK(symm_put_nbi(buf, dst, heap_bytes + src, len, me)); break;
    default: CHECK_OK(symm_get_nbi(heap_bytes + dst, buf, src, len, me)); break;
    }
    CHECK_OK(symm_quiet(ctx));
    if (overlap_calls)
        TEST_FAIL_("form %d, dst %zu src %zu len %zu: the runtime called memcpy on overlapping "
                   "ranges", how, dst, src, len);
    if (memcmp(heap_bytes, ref, N) != 0)
        TEST_FAIL_("form %d, dst %zu src %zu len %zu: result differs from memmove", how, dst, src,
                   len);
}

static void test_overlap(symm_ctx ctx) {
    symm_buf buf;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT8, 4096, &buf));
    uint8_t *p;
    CHECK_OK(symm_buf_ptr(buf, (void **)&p));
    static const size_t cases[][3] = {
        {1, 0, 3000}, {0, 1, 3000}, {64, 0, 4000}, {0, 64, 4000}, {100, 37, 1}, {5, 5, 100},
    };
    for (int how = 0; how < 6; how++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
            check_move(ctx, buf, p, cases[c][0], cases[c][1], cases[c][2], how);
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(buf));
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "sysarea";
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_AUTO);
    int me = symm_my_pe(ctx), n = symm_n_pes(ctx);
    if (strcmp(which, "sysarea") == 0) test_sysarea(ctx, me, n);
    else if (strcmp(which, "overlap") == 0) test_overlap(ctx);
    else TEST_FAIL_("unknown case %s", which);
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("heap_guard %s: ok on %d PEs\n", which, n);
    return 0;
}

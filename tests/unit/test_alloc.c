/*
 * The heap allocator (runtime/core/heap.c), linked against the runtime's
 * objects:
 *   model     random take / take_top / give sequences give the same answers
 *             as a reference model (a sorted array of free ranges scanned
 *             from the bottom or the top, written here), at many alignments
 *   scaling   the cost of a take + give does not grow with the number of
 *             free ranges: with 50000 ranges it stays within a small factor
 *             of the cost with 500 (the sorted array scanned and moved all
 *             of them: a factor of about 100)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "symm_test.h"

const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

/* ---- the reference: free ranges in a sorted array, first fit by scan ---- */

typedef struct model {
    uint64_t *off, *len;
    size_t n, cap;
    uint64_t used;
} model;

static void model_insert(model *m, size_t i, uint64_t off, uint64_t len) {
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 16;
        m->off = realloc(m->off, m->cap * sizeof *m->off);
        m->len = realloc(m->len, m->cap * sizeof *m->len);
        ASSERT_TRUE(m->off && m->len);
    }
    memmove(m->off + i + 1, m->off + i, (m->n - i) * sizeof *m->off);
    memmove(m->len + i + 1, m->len + i, (m->n - i) * sizeof *m->len);
    m->off[i] = off;
    m->len[i] = len;
    m->n++;
}

static void model_erase(model *m, size_t i) {
    memmove(m->off + i, m->off + i + 1, (m->n - i - 1) * sizeof *m->off);
    memmove(m->len + i, m->len + i + 1, (m->n - i - 1) * sizeof *m->len);
    m->n--;
}

/* Cut [start, start + len) out of range i. */
static void model_carve(model *m, size_t i, uint64_t start, uint64_t len) {
    uint64_t off = m->off[i], end = off + m->len[i];
    uint64_t head = start - off, tail = end - start - len;
    if (!head && !tail) {
        model_erase(m, i);
    } else if (!head) {
        m->off[i] = start + len;
        m->len[i] = tail;
    } else {
        m->len[i] = head;
        if (tail) model_insert(m, i + 1, start + len, tail);
    }
    m->used += len;
}

static bool model_take(model *m, uint64_t len, uint64_t align, uint64_t *out) {
    for (size_t i = 0; i < m->n; i++) {
        uint64_t s = (m->off[i] + align - 1) & ~(align - 1);
        if (s - m->off[i] > m->len[i] || m->len[i] - (s - m->off[i]) < len) continue;
        model_carve(m, i, s, len);
        *out = s;
        return true;
    }
    return false;
}

static bool model_take_top(model *m, uint64_t len, uint64_t align, uint64_t *out) {
    for (size_t i = m->n; i-- > 0;) {
        if (m->len[i] < len) continue;
        uint64_t s = (m->off[i] + m->len[i] - len) / align * align;
        if (s < m->off[i]) continue;
        model_carve(m, i, s, len);
        *out = s;
        return true;
    }
    return false;
}

static void model_give(model *m, uint64_t off, uint64_t len) {
    size_t i = 0;
    while (i < m->n && m->off[i] < off) i++;
    bool jp = i > 0 && m->off[i - 1] + m->len[i - 1] == off;
    bool jn = i < m->n && off + len == m->off[i];
    if (jp && jn) {
        m->len[i - 1] += len + m->len[i];
        model_erase(m, i);
    } else if (jp) {
        m->len[i - 1] += len;
    } else if (jn) {
        m->off[i] = off;
        m->len[i] += len;
    } else {
        model_insert(m, i, off, len);
    }
    m->used -= len;
}

/* ---- tests ---- */

/* Walk the tree in order: ranges sorted, disjoint, never adjacent
 * (coalesced), n_free of them, subtree maxima and heights right. */
static uint64_t check_tree(const symm__fnode *t, uint64_t *prev_end, size_t *count,
                           int32_t *height) {
    if (!t) {
        *height = 0;
        return 0;
    }
    int32_t hl, hr;
    uint64_t ml = check_tree(t->l, prev_end, count, &hl);
    ASSERT_TRUE(t->len > 0);
    if (*count) ASSERT_TRUE(t->off > *prev_end); /* disjoint and not adjacent */
    *prev_end = t->off + t->len;
    (*count)++;
    uint64_t mr = check_tree(t->r, prev_end, count, &hr);
    ASSERT_TRUE(hl - hr <= 1 && hr - hl <= 1);
    *height = 1 + (hl > hr ? hl : hr);
    ASSERT_EQ(t->height, *height);
    uint64_t m = t->len > ml ? t->len : ml;
    m = m > mr ? m : mr;
    ASSERT_U64_EQ(t->max, m);
    return m;
}

static void compare(const symm__alloc *a, const model *m) {
    uint64_t end = 0;
    size_t count = 0;
    int32_t h;
    check_tree(a->root, &end, &count, &h);
    ASSERT_EQ(count, m->n);
    ASSERT_EQ(a->n_free, m->n);
    ASSERT_U64_EQ(a->used, m->used);
}

static void test_model(void) {
    enum { START = 4096, END = 1 << 22, N = 2048 };
    symm__alloc a;
    model m = {0};
    CHECK_OK(symm__alloc_init(&a, START, END));
    model_insert(&m, 0, START, END - START);
    static uint64_t offs[N], lens[N];
    unsigned seed = 4242;
    long taken = 0, refused = 0;
    for (int step = 0; step < 200000; step++) {
        int i = rand_r(&seed) % N;
        if (lens[i]) {
            symm__alloc_give(&a, offs[i], lens[i]);
            model_give(&m, offs[i], lens[i]);
            lens[i] = 0;
        } else {
            /* runtime-like (256-aligned multiples of 256) most of the time,
             * odd lengths and alignments from 1 to 64 KiB the rest */
            bool odd = rand_r(&seed) % 4 == 0;
            uint64_t len = odd ? (uint64_t)(rand_r(&seed) % 9000 + 1)
                               : 256u * (uint64_t)(rand_r(&seed) % 40 + 1);
            uint64_t align = odd ? 1ull << (rand_r(&seed) % 17) : 256u;
            bool top = rand_r(&seed) % 8 == 0;
            uint64_t off = 0, ref = 0;
            bool ok = top ? symm__alloc_take_top(&a, len, align, &off)
                          : symm__alloc_take(&a, len, align, &off);
            bool ok_ref = top ? model_take_top(&m, len, align, &ref)
                              : model_take(&m, len, align, &ref);
            ASSERT_EQ(ok, ok_ref);
            taken += ok;
            refused += !ok;
            if (ok) {
                ASSERT_U64_EQ(off, ref);
                ASSERT_EQ(off % align, 0);
                offs[i] = off;
                lens[i] = len;
            }
        }
        if (step % 997 == 0) compare(&a, &m);
    }
    compare(&a, &m);
    /* both outcomes were exercised, and the heap got fragmented */
    ASSERT_TRUE(taken > 50000 && refused > 1000);
    for (int i = 0; i < N; i++) {
        if (!lens[i]) continue;
        symm__alloc_give(&a, offs[i], lens[i]);
        model_give(&m, offs[i], lens[i]);
    }
    compare(&a, &m);
    ASSERT_EQ(a.n_free, 1);
    ASSERT_U64_EQ(a.used, 0);
    symm__alloc_fini(&a);
    free(m.off);
    free(m.len);
}

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns per take + give of a range that fits none of the holes, with `holes`
 * free ranges below it; the least of several rounds (interference only adds). */
static double cost_with_holes(long holes) {
    symm__alloc a;
    CHECK_OK(symm__alloc_init(&a, 0, 1ull << 40));
    uint64_t off;
    for (long i = 0; i < 2 * holes; i++) ASSERT_TRUE(symm__alloc_take(&a, 256, 256, &off));
    for (long i = 0; i < 2 * holes; i += 2) symm__alloc_give(&a, (uint64_t)i * 256, 256);
    ASSERT_EQ(a.n_free, (size_t)holes + 1);
    double best = 1e30;
    for (int r = 0; r < 9; r++) {
        double t0 = now_ns();
        for (int k = 0; k < 2000; k++) {
            ASSERT_TRUE(symm__alloc_take(&a, 1024, 256, &off));
            symm__alloc_give(&a, off, 1024);
        }
        double t = (now_ns() - t0) / 2000;
        if (t < best) best = t;
    }
    symm__alloc_fini(&a);
    return best;
}

static void test_scaling(void) {
    double small = cost_with_holes(500), large = cost_with_holes(50000);
    printf("take + give: %.1f ns with 500 free ranges, %.1f ns with 50000\n", small, large);
    if (large > 8 * small + 200)
        TEST_FAIL_("take + give grows with the free ranges: %.1f ns at 500, %.1f ns at 50000",
                   small, large);
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strcmp(only, "model") == 0) test_model();
    if (!only || strcmp(only, "scaling") == 0) test_scaling();
    printf("alloc%s%s: passed\n", only ? " " : "", only ? only : "");
    return 0;
}

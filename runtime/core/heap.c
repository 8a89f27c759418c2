/*
 * The symmetric heap's allocator: a deterministic first fit over byte
 * offsets. Every PE runs it on the same call sequence (the collective buffer
 * calls, api/buf.c), so offsets agree.
 *
 * The free ranges live in an AVL tree ordered by offset, each node keeping
 * the longest range of its subtree. First fit (the lowest range that fits)
 * descends into the leftmost subtree whose longest range is long enough,
 * coalescing finds both neighbours by one descent each: O(log n) in the
 * number of free ranges, where the sorted array it replaces scanned and
 * moved O(n) entries per call (tens to hundreds of microseconds with tens of
 * thousands of ranges). The answers are the array's: same call sequence, same
 * offsets. A range that fits by length but not once aligned sends the search
 * on; with the runtime's allocations (256-byte aligned lengths and offsets)
 * that never happens, so a search visits one path.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef symm__fnode node;

static int32_t height(const node *n) {
    return n ? n->height : 0;
}

static uint64_t max_of(const node *n) {
    return n ? n->max : 0;
}

static void fix(node *n) {
    int32_t hl = height(n->l), hr = height(n->r);
    n->height = 1 + (hl > hr ? hl : hr);
    uint64_t m = n->len, ml = max_of(n->l), mr = max_of(n->r);
    n->max = m > ml ? (m > mr ? m : mr) : (ml > mr ? ml : mr);
}

static node *rotate_right(node *n) {
    node *l = n->l;
    n->l = l->r;
    l->r = n;
    fix(n);
    fix(l);
    return l;
}

static node *rotate_left(node *n) {
    node *r = n->r;
    n->r = r->l;
    r->l = n;
    fix(n);
    fix(r);
    return r;
}

static node *balance(node *n) {
    fix(n);
    int32_t bf = height(n->l) - height(n->r);
    if (bf > 1) {
        if (height(n->l->l) < height(n->l->r)) n->l = rotate_left(n->l);
        return rotate_right(n);
    }
    if (bf < -1) {
        if (height(n->r->r) < height(n->r->l)) n->r = rotate_right(n->r);
        return rotate_left(n);
    }
    return n;
}

static node *insert(node *t, node *n) {
    if (!t) return n;
    if (n->off < t->off) t->l = insert(t->l, n);
    else t->r = insert(t->r, n);
    return balance(t);
}

/* Detach the lowest node of t into *min. */
static node *take_min(node *t, node **min) {
    if (!t->l) {
        *min = t;
        return t->r;
    }
    t->l = take_min(t->l, min);
    return balance(t);
}

/* Remove the node at off (present) into *out. */
static node *erase(node *t, uint64_t off, node **out) {
    if (off < t->off) {
        t->l = erase(t->l, off, out);
    } else if (off > t->off) {
        t->r = erase(t->r, off, out);
    } else {
        *out = t;
        if (!t->l) return t->r;
        if (!t->r) return t->l;
        node *m;
        node *r = take_min(t->r, &m);
        m->l = t->l;
        m->r = r;
        return balance(m);
    }
    return balance(t);
}

/* The node at off (present) becomes [noff, noff + nlen): its neighbours
 * keep it in order (it shrinks within itself or grows into a gap). */
static node *update(node *t, uint64_t off, uint64_t noff, uint64_t nlen) {
    if (off < t->off) t->l = update(t->l, off, noff, nlen);
    else if (off > t->off) t->r = update(t->r, off, noff, nlen);
    else t->off = noff, t->len = nlen;
    fix(t);
    return t;
}

static node *node_new(symm__alloc *a, uint64_t off, uint64_t len) {
    node *n = a->spare;
    if (n) a->spare = n->r;
    else if (!(n = malloc(sizeof *n))) return NULL;
    *n = (node){off, len, len, NULL, NULL, 1};
    return n;
}

static void node_drop(symm__alloc *a, node *n) {
    n->r = a->spare;
    a->spare = n;
}

static void free_tree(node *t) {
    while (t) { /* the left spine iteratively, the right subtree recursively (depth O(log n)) */
        free_tree(t->r);
        node *l = t->l;
        free(t);
        t = l;
    }
}

/* ---- allocator ---- */

symm_status symm__alloc_init(symm__alloc *a, uint64_t start, uint64_t end) {
    memset(a, 0, sizeof *a);
    a->root = node_new(a, start, end - start);
    if (!a->root) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "allocator: out of host memory");
    a->n_free = 1;
    return SYMM_SUCCESS;
}

void symm__alloc_fini(symm__alloc *a) {
    free_tree(a->root);
    for (node *n = a->spare, *next; n; n = next) {
        next = n->r;
        free(n);
    }
    memset(a, 0, sizeof *a);
}

/* Take [start, start + len) out of range n (off, rlen), whatever pieces of
 * it remain on either side. spare: a node for a split (NULL when none is
 * needed). */
static void carve(symm__alloc *a, uint64_t off, uint64_t rlen, uint64_t start, uint64_t len,
                  node *spare) {
    uint64_t head = start - off, tail_off = start + len, tail = off + rlen - tail_off;
    if (!head && !tail) {
        node *gone;
        a->root = erase(a->root, off, &gone);
        node_drop(a, gone);
        a->n_free--;
    } else if (!head) {
        a->root = update(a->root, off, tail_off, tail);
    } else if (!tail) {
        a->root = update(a->root, off, off, head);
    } else {
        a->root = update(a->root, off, off, head);
        spare->off = tail_off;
        spare->len = spare->max = tail;
        a->root = insert(a->root, spare);
        a->n_free++;
        spare = NULL;
    }
    if (spare) node_drop(a, spare);
    a->used += len;
}

static bool fits_low(const node *n, uint64_t len, uint64_t align, uint64_t *start) {
    uint64_t s = (n->off + align - 1) & ~(align - 1);
    if (s - n->off > n->len || n->len - (s - n->off) < len) return false;
    *start = s;
    return true;
}

/* The lowest range of t that fits len at align. */
static node *first_fit(node *t, uint64_t len, uint64_t align, uint64_t *start) {
    if (!t || t->max < len) return NULL;
    node *n = first_fit(t->l, len, align, start);
    if (n) return n;
    if (fits_low(t, len, align, start)) return t;
    return first_fit(t->r, len, align, start);
}

bool symm__alloc_take(symm__alloc *a, uint64_t len, uint64_t align, uint64_t *off) {
    uint64_t start = 0;
    node *n = first_fit(a->root, len, align, &start);
    if (!n) return false;
    node *spare = node_new(a, 0, 0); /* before anything changes: a split needs it */
    if (!spare) return false;
    carve(a, n->off, n->len, start, len, spare);
    *off = start;
    return true;
}

static bool fits_high(const node *n, uint64_t len, uint64_t align, uint64_t *start) {
    if (n->len < len) return false;
    uint64_t s = (n->off + n->len - len) / align * align;
    if (s < n->off) return false;
    *start = s;
    return true;
}

/* The highest range of t that fits len at align from its top. */
static node *last_fit(node *t, uint64_t len, uint64_t align, uint64_t *start) {
    if (!t || t->max < len) return NULL;
    node *n = last_fit(t->r, len, align, start);
    if (n) return n;
    if (fits_high(t, len, align, start)) return t;
    return last_fit(t->l, len, align, start);
}

/* Take [off, off + len) at the highest aligned place that fits. */
bool symm__alloc_take_top(symm__alloc *a, uint64_t len, uint64_t align, uint64_t *off) {
    uint64_t start = 0;
    node *n = last_fit(a->root, len, align, &start);
    if (!n) return false;
    node *spare = node_new(a, 0, 0);
    if (!spare) return false;
    carve(a, n->off, n->len, start, len, spare);
    *off = start;
    return true;
}

void symm__alloc_give(symm__alloc *a, uint64_t off, uint64_t len) {
    /* the free ranges just below and just above off */
    node *prev = NULL, *next = NULL;
    for (node *t = a->root; t;) {
        if (t->off < off) {
            prev = t;
            t = t->r;
        } else {
            next = t;
            t = t->l;
        }
    }
    bool join_prev = prev && prev->off + prev->len == off;
    bool join_next = next && off + len == next->off;
    if (!join_prev && !join_next) {
        node *n = node_new(a, off, len);
        if (!n) return; /* leaks the range, never corrupts */
        a->root = insert(a->root, n);
        a->n_free++;
    } else if (join_prev && join_next) {
        uint64_t grown = prev->len + len + next->len;
        node *gone;
        a->root = erase(a->root, next->off, &gone);
        node_drop(a, gone);
        a->n_free--;
        a->root = update(a->root, prev->off, prev->off, grown);
    } else if (join_prev) {
        a->root = update(a->root, prev->off, prev->off, prev->len + len);
    } else {
        a->root = update(a->root, next->off, off, next->len + len);
    }
    a->used -= len;
}

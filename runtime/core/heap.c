/*
 * The symmetric heap's allocator: a deterministic first fit over byte
 * offsets. Every PE runs it on the same call sequence (the collective buffer
 * calls, api/buf.c), so offsets agree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- allocator ---- */

symm_status symm__alloc_init(symm__alloc *a, uint64_t start, uint64_t end) {
    memset(a, 0, sizeof *a);
    a->cap_free = 16;
    a->free_list = malloc(a->cap_free * sizeof *a->free_list);
    if (!a->free_list) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "allocator: out of host memory");
    a->free_list[0] = (symm__range){start, end - start};
    a->n_free = 1;
    return SYMM_SUCCESS;
}

void symm__alloc_fini(symm__alloc *a) {
    free(a->free_list);
    memset(a, 0, sizeof *a);
}

bool symm__alloc_take(symm__alloc *a, uint64_t len, uint64_t align, uint64_t *off) {
    for (size_t i = 0; i < a->n_free; i++) {
        symm__range *r = &a->free_list[i];
        uint64_t start = (r->off + align - 1) & ~(align - 1);
        uint64_t pad = start - r->off;
        if (pad > r->len || r->len - pad < len) continue;
        uint64_t tail_off = start + len, tail_len = r->len - pad - len;
        if (pad == 0 && tail_len == 0) {
            memmove(r, r + 1, (a->n_free - i - 1) * sizeof *r);
            a->n_free--;
        } else if (pad == 0) {
            *r = (symm__range){tail_off, tail_len};
        } else if (tail_len == 0) {
            r->len = pad;
        } else {
            if (a->n_free == a->cap_free) {
                symm__range *n = realloc(a->free_list, 2 * a->cap_free * sizeof *n);
                if (!n) return false;
                a->free_list = n;
                a->cap_free *= 2;
                r = &a->free_list[i];
            }
            memmove(r + 2, r + 1, (a->n_free - i - 1) * sizeof *r);
            r->len = pad;
            r[1] = (symm__range){tail_off, tail_len};
            a->n_free++;
        }
        a->used += len;
        *off = start;
        return true;
    }
    return false;
}

/* Take [off, off + len) at the highest aligned place that fits. */
bool symm__alloc_take_top(symm__alloc *a, uint64_t len, uint64_t align, uint64_t *off) {
    for (size_t i = a->n_free; i-- > 0;) {
        symm__range r = a->free_list[i];
        if (r.len < len) continue;
        uint64_t start = (r.off + r.len - len) / align * align;
        if (start < r.off) continue;
        /* split r into [r.off, start) + taken + [start + len, end) */
        uint64_t tail_off = start + len, tail_len = r.off + r.len - tail_off;
        uint64_t head_len = start - r.off;
        if (head_len && tail_len) {
            if (a->n_free == a->cap_free) {
                symm__range *nl = realloc(a->free_list, 2 * a->cap_free * sizeof *nl);
                if (!nl) return false;
                a->free_list = nl;
                a->cap_free *= 2;
            }
            memmove(&a->free_list[i + 2], &a->free_list[i + 1],
                    (a->n_free - i - 1) * sizeof(symm__range));
            a->free_list[i] = (symm__range){r.off, head_len};
            a->free_list[i + 1] = (symm__range){tail_off, tail_len};
            a->n_free++;
        } else if (head_len) {
            a->free_list[i].len = head_len;
        } else if (tail_len) {
            a->free_list[i] = (symm__range){tail_off, tail_len};
        } else {
            memmove(&a->free_list[i], &a->free_list[i + 1],
                    (a->n_free - i - 1) * sizeof(symm__range));
            a->n_free--;
        }
        a->used += len;
        *off = start;
        return true;
    }
    return false;
}

void symm__alloc_give(symm__alloc *a, uint64_t off, uint64_t len) {
    size_t i = 0;
    while (i < a->n_free && a->free_list[i].off < off) i++;
    bool join_prev = i > 0 && a->free_list[i - 1].off + a->free_list[i - 1].len == off;
    bool join_next = i < a->n_free && off + len == a->free_list[i].off;
    a->used -= len;
    if (join_prev && join_next) {
        a->free_list[i - 1].len += len + a->free_list[i].len;
        memmove(&a->free_list[i], &a->free_list[i + 1], (a->n_free - i - 1) * sizeof(symm__range));
        a->n_free--;
    } else if (join_prev) {
        a->free_list[i - 1].len += len;
    } else if (join_next) {
        a->free_list[i].off = off;
        a->free_list[i].len += len;
    } else {
        if (a->n_free == a->cap_free) {
            symm__range *n = realloc(a->free_list, 2 * a->cap_free * sizeof *n);
            if (!n) return; /* leaks the range, never corrupts */
            a->free_list = n;
            a->cap_free *= 2;
        }
        memmove(&a->free_list[i + 1], &a->free_list[i], (a->n_free - i) * sizeof(symm__range));
        a->free_list[i] = (symm__range){off, len};
        a->n_free++;
    }
}

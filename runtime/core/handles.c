/*
 * Handle tables. A handle is (kind << 56) | (generation << 32) | (slot + 1):
 * lookups never dereference a caller-supplied pointer, so stale, foreign or
 * garbage handles are reported instead of crashing.
 *
 * Slots live in pages that are never moved or freed while the process runs, so
 * a lookup racing with an allocation reads valid memory. The generation of a
 * slot is bumped on release; a released slot goes to a free list.
 */
#include <stdlib.h>

#include "internal.h"

#define PAGE_SLOTS 1024u
#define MAX_PAGES 1024u /* ~1M live handles per kind */
#define N_KINDS 4u

typedef struct slot {
    _Atomic(void *) obj;
    atomic_uint gen; /* 24 bits used */
    uint32_t next_free;
} slot;

typedef struct table {
    _Atomic(slot *) pages[MAX_PAGES];
    uint32_t n_slots;   /* slots handed out so far */
    uint32_t free_head; /* slot index + 1, 0 = empty */
} table;

static table tables[N_KINDS];
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

static slot *slot_at(table *t, uint32_t idx) {
    slot *page = atomic_load_explicit(&t->pages[idx / PAGE_SLOTS], memory_order_acquire);
    return page ? &page[idx % PAGE_SLOTS] : NULL;
}

uint64_t symm__handle_new(uint32_t kind, void *obj) {
    if (kind == 0 || kind >= N_KINDS || !obj) return 0;
    table *t = &tables[kind];
    uint64_t h = 0;
    pthread_mutex_lock(&tables_lock);
    uint32_t idx;
    if (t->free_head) {
        idx = t->free_head - 1;
        t->free_head = slot_at(t, idx)->next_free;
    } else {
        idx = t->n_slots;
        if (idx / PAGE_SLOTS >= MAX_PAGES) goto out;
        if (!atomic_load(&t->pages[idx / PAGE_SLOTS])) {
            slot *page = calloc(PAGE_SLOTS, sizeof *page);
            if (!page) goto out;
            atomic_store_explicit(&t->pages[idx / PAGE_SLOTS], page, memory_order_release);
        }
        t->n_slots++;
    }
    slot *s = slot_at(t, idx);
    uint32_t gen = (atomic_load(&s->gen) + 1) & 0xffffffu;
    if (gen == 0) gen = 1;
    atomic_store(&s->gen, gen);
    atomic_store_explicit(&s->obj, obj, memory_order_release);
    h = ((uint64_t)kind << 56) | ((uint64_t)gen << 32) | (uint64_t)(idx + 1);
out:
    pthread_mutex_unlock(&tables_lock);
    return h;
}

static slot *lookup(uint32_t kind, uint64_t h) {
    if (kind == 0 || kind >= N_KINDS) return NULL;
    if ((h >> 56) != kind) return NULL;
    uint32_t idx1 = (uint32_t)(h & 0xffffffffu);
    uint32_t gen = (uint32_t)((h >> 32) & 0xffffffu);
    if (idx1 == 0 || gen == 0) return NULL;
    table *t = &tables[kind];
    uint32_t idx = idx1 - 1;
    if (idx / PAGE_SLOTS >= MAX_PAGES) return NULL;
    slot *s = slot_at(t, idx);
    if (!s || atomic_load_explicit(&s->gen, memory_order_acquire) != gen) return NULL;
    return s;
}

void *symm__handle_get(uint32_t kind, uint64_t h) {
    slot *s = lookup(kind, h);
    return s ? atomic_load_explicit(&s->obj, memory_order_acquire) : NULL;
}

void symm__handle_release(uint32_t kind, uint64_t h) {
    pthread_mutex_lock(&tables_lock);
    slot *s = lookup(kind, h);
    if (s && atomic_load(&s->obj)) {
        table *t = &tables[kind];
        atomic_store(&s->obj, NULL);
        atomic_fetch_add(&s->gen, 1); /* stale from now on */
        s->next_free = t->free_head;
        t->free_head = (uint32_t)(h & 0xffffffffu);
    }
    pthread_mutex_unlock(&tables_lock);
}

/*
 * Handle tables, and the lifetime of the objects they name.
 *
 * A handle is (kind << 62) | (generation << 21) | (slot + 1): lookups never
 * dereference a caller-supplied pointer, so stale, foreign or garbage handles
 * are reported instead of crashing.
 *
 * Slots live in pages that are never moved or freed while the process runs, so
 * a lookup racing with an allocation reads valid memory. A slot's generation
 * (41 bits) advances once per release; a slot whose generation would pass the
 * largest one a handle can carry is retired for good instead of reused, so a
 * stale handle never names a later object, for the life of the process
 * (2^41 reuses of each of 2^20 slots per kind before the table is full).
 */
#include <stdlib.h>

#include "internal.h"

#define PAGE_SLOTS 1024u
#define MAX_PAGES 1024u /* ~1M live handles per kind: slot + 1 fits 21 bits */
#define N_KINDS 4u
#define IDX_BITS 21u
#define GEN_BITS 41u
#define GEN_LIMIT (1ull << GEN_BITS) /* generations are 1 .. GEN_LIMIT - 1 */
#define KIND_SHIFT (IDX_BITS + GEN_BITS)

_Static_assert(KIND_SHIFT + 2u == 64u, "kind (2 bits), generation and index fill 64 bits");
_Static_assert(N_KINDS <= 4u, "kinds fit 2 bits");
_Static_assert((uint64_t)PAGE_SLOTS * MAX_PAGES < (1ull << IDX_BITS), "slot + 1 fits");
_Static_assert(sizeof(void *) == 8, "handles are 64-bit opaque pointers");

typedef struct slot {
    _Atomic(void *) obj;
    _Atomic uint64_t gen; /* the live (or next) generation; GEN_LIMIT: retired */
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

static uint64_t encode(uint32_t kind, uint64_t gen, uint32_t idx) {
    return ((uint64_t)kind << KIND_SHIFT) | (gen << IDX_BITS) | (uint64_t)(idx + 1);
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
    uint64_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    if (gen == 0) { /* a fresh slot */
        gen = 1;
        atomic_store_explicit(&s->gen, gen, memory_order_relaxed);
    }
    /* release: a lookup that reads obj also reads the generation stored before it */
    atomic_store_explicit(&s->obj, obj, memory_order_release);
    h = encode(kind, gen, idx);
out:
    pthread_mutex_unlock(&tables_lock);
    return h;
}

static slot *lookup(uint32_t kind, uint64_t h, uint64_t *gen_out) {
    if (kind == 0 || kind >= N_KINDS) return NULL;
    if ((h >> KIND_SHIFT) != kind) return NULL;
    uint32_t idx1 = (uint32_t)(h & ((1u << IDX_BITS) - 1u));
    uint64_t gen = (h >> IDX_BITS) & (GEN_LIMIT - 1);
    if (idx1 == 0 || gen == 0) return NULL;
    table *t = &tables[kind];
    uint32_t idx = idx1 - 1;
    if (idx / PAGE_SLOTS >= MAX_PAGES) return NULL;
    slot *s = slot_at(t, idx);
    if (!s || atomic_load_explicit(&s->gen, memory_order_acquire) != gen) return NULL;
    *gen_out = gen;
    return s;
}

void *symm__handle_get(uint32_t kind, uint64_t h) {
    uint64_t gen;
    slot *s = lookup(kind, h, &gen);
    if (!s) return NULL;
    void *obj = atomic_load_explicit(&s->obj, memory_order_acquire);
    /* The slot may have been released and reused between the two loads: the
     * new object was stored after the new generation, so reading it means
     * reading that generation here. */
    if (atomic_load_explicit(&s->gen, memory_order_relaxed) != gen) return NULL;
    return obj;
}

void symm__handle_release(uint32_t kind, uint64_t h) {
    pthread_mutex_lock(&tables_lock);
    uint64_t gen;
    slot *s = lookup(kind, h, &gen);
    if (s && atomic_load(&s->obj)) {
        table *t = &tables[kind];
        atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
        /* stale from now on; a slot out of generations is never reused */
        atomic_store_explicit(&s->gen, gen + 1, memory_order_release);
        if (gen + 1 < GEN_LIMIT) {
            s->next_free = t->free_head;
            t->free_head = (uint32_t)(h & ((1u << IDX_BITS) - 1u));
        }
    }
    pthread_mutex_unlock(&tables_lock);
}

uint64_t symm__handle_set_gen_for_test(uint32_t kind, uint64_t h, uint64_t gen) {
    uint64_t out = 0, old;
    pthread_mutex_lock(&tables_lock);
    slot *s = lookup(kind, h, &old);
    if (s && gen > 0 && gen < GEN_LIMIT) {
        atomic_store(&s->gen, gen);
        out = encode(kind, gen, (uint32_t)(h & ((1u << IDX_BITS) - 1u)) - 1u);
    }
    pthread_mutex_unlock(&tables_lock);
    return out;
}

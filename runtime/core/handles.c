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
 *
 * The second half of the file keeps objects alive while calls use them
 * (internal.h, "Handle lifetime").
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define PAGE_SLOTS SYMM__H_PAGE_SLOTS
#define MAX_PAGES SYMM__H_MAX_PAGES /* ~1M live handles per kind: slot + 1 fits 21 bits */
#define N_KINDS SYMM__H_KINDS
#define IDX_BITS SYMM__H_IDX_BITS
#define GEN_BITS SYMM__H_GEN_BITS
#define GEN_LIMIT (1ull << GEN_BITS) /* generations are 1 .. GEN_LIMIT - 1 */
#define KIND_SHIFT (IDX_BITS + GEN_BITS)

_Static_assert(KIND_SHIFT + 2u == 64u, "kind (2 bits), generation and index fill 64 bits");
_Static_assert(N_KINDS <= 4u, "kinds fit 2 bits");
_Static_assert((uint64_t)PAGE_SLOTS * MAX_PAGES < (1ull << IDX_BITS), "slot + 1 fits");
_Static_assert(sizeof(void *) == 8, "handles are 64-bit opaque pointers");

typedef symm__hslot slot;

/* The pages are symm__hpages[kind] (read inline by symm__handle_get,
 * internal.h); the rest is the allocator's, under tables_lock. */
typedef struct table {
    uint32_t n_slots;   /* slots handed out so far */
    uint32_t free_head; /* slot index + 1, 0 = empty */
} table;

_Atomic(symm__hslot *) symm__hpages[SYMM__H_KINDS][SYMM__H_MAX_PAGES];
static table tables[N_KINDS];
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

static slot *slot_at(uint32_t kind, uint32_t idx) {
    slot *page = atomic_load_explicit(&symm__hpages[kind][idx / PAGE_SLOTS], memory_order_acquire);
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
        t->free_head = slot_at(kind, idx)->next_free;
    } else {
        idx = t->n_slots;
        if (idx / PAGE_SLOTS >= MAX_PAGES) goto out;
        if (!atomic_load(&symm__hpages[kind][idx / PAGE_SLOTS])) {
            slot *page = calloc(PAGE_SLOTS, sizeof *page);
            if (!page) goto out;
            atomic_store_explicit(&symm__hpages[kind][idx / PAGE_SLOTS], page,
                                  memory_order_release);
        }
        t->n_slots++;
    }
    slot *s = slot_at(kind, idx);
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
    uint32_t idx = idx1 - 1;
    if (idx / PAGE_SLOTS >= MAX_PAGES) return NULL;
    slot *s = slot_at(kind, idx);
    if (!s || atomic_load_explicit(&s->gen, memory_order_acquire) != gen) return NULL;
    *gen_out = gen;
    return s;
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

void symm__handle_release_if(uint32_t kind, bool (*match)(void *obj, void *arg), void *arg) {
    if (kind == 0 || kind >= N_KINDS) return;
    table *t = &tables[kind];
    pthread_mutex_lock(&tables_lock);
    for (uint32_t idx = 0; idx < t->n_slots; idx++) {
        slot *s = slot_at(kind, idx);
        void *obj = s ? atomic_load_explicit(&s->obj, memory_order_relaxed) : NULL;
        if (!obj || !match(obj, arg)) continue;
        uint64_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
        atomic_store_explicit(&s->obj, NULL, memory_order_relaxed);
        atomic_store_explicit(&s->gen, gen + 1, memory_order_release);
        if (gen + 1 < GEN_LIMIT) {
            s->next_free = t->free_head;
            t->free_head = idx + 1;
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

/* ------------------------------------------------------------------------ */
/* Lifetime: thread slots, parking and grace periods (internal.h)            */
/* ------------------------------------------------------------------------ */

/* The overflow map: thread pointer -> slot, for threads whose direct entry
 * was taken. Replaced maps stay readable (never freed). */
typedef struct symm__tmap {
    size_t mask;
    struct symm__tmap *older;
    struct {
        _Atomic uintptr_t key; /* a thread pointer; 0 empty */
        symm__tslot *slot;
    } e[];
} symm__tmap;

symm__tslot symm__tslot_direct[SYMM__TSLOT_DIRECT];
static _Atomic(symm__tmap *) symm__tmap_cur;
atomic_bool symm__lt_fence = true; /* until membarrier is known to work */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(symm__tslot *) reg_head; /* every slot ever made, newest first */
static size_t reg_count;
static symm__tmap *old_maps;            /* replaced maps stay readable (never freed) */
static bool use_membarrier;

static size_t tmap_index(const symm__tmap *m, uintptr_t tp) {
    return symm__tp_hash(tp) & m->mask;
}

/* The entry of tp in m, or NULL. */
static symm__tslot *tmap_find(const symm__tmap *m, uintptr_t tp) {
    if (!m) return NULL;
    for (size_t i = tmap_index(m, tp), n = 0; n <= m->mask; i = (i + 1) & m->mask, n++) {
        uintptr_t k = atomic_load_explicit(&m->e[i].key, memory_order_acquire);
        if (k == tp) return m->e[i].slot;
        if (k == 0) return NULL;
    }
    return NULL;
}

static void tmap_put(symm__tmap *m, uintptr_t tp, symm__tslot *s) {
    size_t i = tmap_index(m, tp);
    while (atomic_load_explicit(&m->e[i].key, memory_order_relaxed)) i = (i + 1) & m->mask;
    m->e[i].slot = s;
    atomic_store_explicit(&m->e[i].key, tp, memory_order_release);
}

/* The slot of tp if it has one (no registration). */
static symm__tslot *slot_known(uintptr_t tp) {
    symm__tslot *d = &symm__tslot_direct[symm__tp_hash(tp) % SYMM__TSLOT_DIRECT];
    if (atomic_load_explicit(&d->key, memory_order_acquire) == tp) return d;
    return tmap_find(atomic_load_explicit(&symm__tmap_cur, memory_order_acquire), tp);
}

symm__tslot *symm__tslot_peek(void) { return slot_known(symm__thread_ptr()); }

static void reg_link(symm__tslot *s) {
    s->next = atomic_load_explicit(&reg_head, memory_order_relaxed);
    atomic_store_explicit(&reg_head, s, memory_order_release);
    reg_count++;
}

symm__tslot *symm__tslot_find(uintptr_t tp) {
    symm__tslot *s = slot_known(tp);
    if (s) return s;
    pthread_mutex_lock(&reg_lock);
    s = slot_known(tp);
    if (s) goto out;
    /* A thread's first call: a slot for it, found by its thread pointer from
     * now on (a later thread with the same thread pointer inherits it: two
     * live threads never share one): its direct entry when free, else one in
     * the overflow map, which stays at most half full. */
    symm__tslot *d = &symm__tslot_direct[symm__tp_hash(tp) % SYMM__TSLOT_DIRECT];
    if (!atomic_load_explicit(&d->key, memory_order_relaxed)) {
        atomic_store_explicit(&d->key, tp, memory_order_release);
        reg_link(d);
        s = d;
        goto out;
    }
    symm__tmap *m = atomic_load_explicit(&symm__tmap_cur, memory_order_relaxed);
    if (!m || 2 * (reg_count + 1) > m->mask + 1) {
        size_t cap = m ? 2 * (m->mask + 1) : 256;
        symm__tmap *nm = calloc(1, sizeof *nm + cap * sizeof nm->e[0]);
        if (!nm) goto out;
        nm->mask = cap - 1;
        for (size_t i = 0; m && i <= m->mask; i++) {
            uintptr_t k = atomic_load_explicit(&m->e[i].key, memory_order_relaxed);
            if (k) tmap_put(nm, k, m->e[i].slot);
        }
        if (m) {
            m->older = old_maps;
            old_maps = m;
        }
        atomic_store_explicit(&symm__tmap_cur, nm, memory_order_release);
        m = nm;
    }
    symm__tslot *ns = aligned_alloc(64, sizeof *ns);
    if (!ns) goto out;
    memset(ns, 0, sizeof *ns);
    reg_link(ns);
    tmap_put(m, tp, ns);
    s = ns;
out:
    pthread_mutex_unlock(&reg_lock);
    return s;
}

/* The holds (held_ctx, n_held, held[]) are written by their thread only,
 * every store a release: a freer that reads one written after the call's
 * word changed (a reset, or a later call's) also sees the new word when it
 * reads it again (holds_now), so it never judges a parked call by another
 * call's holds. */

/* Slow leave: the call parked or declared holds. */
void symm__call_leave_slow(symm__tslot *s, uint64_t w, bool failed) {
    atomic_store_explicit(&s->word,
                          ((w & ~(uint64_t)SYMM__CALL_STATE) + SYMM__CALL_SEQ) |
                              (failed ? SYMM__CALL_MSG : 0u),
                          memory_order_release);
    atomic_store_explicit(&s->n_held, 0, memory_order_release);
    atomic_store_explicit(&s->held_ctx, NULL, memory_order_release);
}

void symm__hold(atomic_int *obj) {
    symm__tslot *s = symm__tslot_self();
    if (!s || !obj) return;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (!(w & SYMM__CALL_IN) || (w & SYMM__CALL_PARKED)) return; /* see internal.h */
    uint32_t n = atomic_load_explicit(&s->n_held, memory_order_relaxed);
    for (uint32_t i = 0; i < n && i < SYMM__HOLD_MAX; i++)
        if (atomic_load_explicit(&s->held[i], memory_order_relaxed) == obj) return;
    if (n < SYMM__HOLD_MAX) atomic_store_explicit(&s->held[n], obj, memory_order_release);
    atomic_store_explicit(&s->n_held, n + 1, memory_order_release); /* > MAX: holds all */
    if (!(w & SYMM__CALL_HOLDS))
        atomic_store_explicit(&s->word, w | SYMM__CALL_HOLDS, memory_order_relaxed);
}

void symm__park(symm__ctx *ctx) {
    symm__tslot *s = symm__tslot_self();
    if (!s) return;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (!(w & SYMM__CALL_IN) || (w & SYMM__CALL_PARKED)) return;
    atomic_store_explicit(&s->held_ctx, ctx, memory_order_release);
    /* release: the holds (and every use of an undeclared object) come first */
    atomic_store_explicit(&s->word, w | SYMM__CALL_PARKED | SYMM__CALL_HOLDS,
                          memory_order_release);
}

symm_status symm__check_closing(symm__ctx *ctx) {
    if (atomic_load_explicit(&ctx->closing, memory_order_relaxed))
        return symm__err(SYMM_ERR_INVALID_HANDLE,
                         "the context was finalized by another thread during this call");
    symm__tslot *s = symm__tslot_self();
    if (!s) return SYMM_SUCCESS;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (!(w & SYMM__CALL_HOLDS)) return SYMM_SUCCESS;
    uint32_t n = atomic_load_explicit(&s->n_held, memory_order_relaxed);
    for (uint32_t i = 0; i < n && i < SYMM__HOLD_MAX; i++) {
        const atomic_int *c = atomic_load_explicit(&s->held[i], memory_order_relaxed);
        if (atomic_load_explicit(c, memory_order_relaxed))
            return symm__err(SYMM_ERR_INVALID_HANDLE,
                             "a buffer or team of this call was freed or destroyed by another "
                             "thread during the call");
    }
    return SYMM_SUCCESS;
}

/* ---- the freeing side ---- */

static void lifetime_setup(void) {
#if defined(__NR_membarrier)
    long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0);
    if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0) {
        pthread_mutex_lock(&reg_lock);
        use_membarrier = true;
        pthread_mutex_unlock(&reg_lock);
        atomic_store(&symm__lt_fence, false);
        return;
    }
#endif
    SYMM_INFO(SYMM_LOG_INIT, "membarrier(PRIVATE_EXPEDITED) is not available (errno %d): every "
              "call fences when it starts", errno);
}

void symm__lifetime_init(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, lifetime_setup);
}

/* Does the parked call of slot s (word w) keep obj (of ctx) alive? obj
 * NULL: anything of ctx. *same: the word was still w after the holds were
 * read, so they were that call's (the stores above). */
static bool holds(symm__tslot *s, uint64_t w, const symm__ctx *ctx, const atomic_int *obj,
                  bool *same) {
    bool h = atomic_load_explicit(&s->held_ctx, memory_order_acquire) == ctx;
    if (h && obj) {
        uint32_t n = atomic_load_explicit(&s->n_held, memory_order_acquire);
        h = n > SYMM__HOLD_MAX;
        for (uint32_t i = 0; i < n && i < SYMM__HOLD_MAX && !h; i++)
            h = atomic_load_explicit(&s->held[i], memory_order_acquire) == obj;
    }
    *same = atomic_load_explicit(&s->word, memory_order_acquire) == w;
    return h;
}

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait until the call s was in when we looked (w0) cannot hold obj: it ended
 * (a later call of the thread started after obj's handle went stale) or it is
 * parked without holding obj. */
static void wait_slot(symm__tslot *s, uint64_t w0, const symm__ctx *ctx, const atomic_int *obj) {
    uint64_t start = 0, note_at = 0;
    for (unsigned spins = 0;; spins++) {
        uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
        if (!(w & SYMM__CALL_IN) || (w / SYMM__CALL_SEQ) != (w0 / SYMM__CALL_SEQ)) return;
        bool same = true;
        if ((w & SYMM__CALL_PARKED) && !holds(s, w, ctx, obj, &same) && same) return;
        if (!same) continue; /* look again at the new word */
        if (spins < 64) continue;
        uint64_t t = mono_ns();
        if (!start) {
            start = t;
            note_at = t + 5000000000ull;
        }
        if (t >= note_at) {
            note_at = t + 30000000000ull;
            SYMM_WARN(SYMM_LOG_INIT, "a %s has waited %llu s for another thread to leave a call "
                      "that uses the object", obj ? "free" : "finalize",
                      (unsigned long long)((t - start) / 1000000000ull));
        }
        if (t - start < 2000000ull) {
            sched_yield();
        } else {
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
        }
    }
}

void symm__retire(symm__ctx *ctx, const atomic_int *obj) {
    symm__tslot *self = slot_known(symm__thread_ptr());
    pthread_mutex_lock(&reg_lock);
    symm__tslot *head = atomic_load_explicit(&reg_head, memory_order_relaxed);
    size_t n = reg_count;
    bool mb = use_membarrier;
    pthread_mutex_unlock(&reg_lock);
    /* No other thread ever made a call: none can hold obj, and one that
     * starts now registers after this point and finds obj's handle stale. */
    if (n == 0 || (n == 1 && head == self)) return;
    /* The asymmetric half of the barrier: every thread of the process runs a
     * full fence, so a call that stored its "inside" word before it is seen
     * below, and one that did not reads the stale handle (or closing flag). */
    if (!mb) {
        atomic_thread_fence(memory_order_seq_cst); /* the callers fence themselves */
    } else if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0 &&
               /* a forked child inherits the flag, not the registration */
               (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) != 0 ||
                syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)) {
        /* Not expected; if it happens, calls fence from now on, and a
         * millisecond lets the stores of calls that started unfenced reach
         * memory (no store buffer holds a store that long). */
        atomic_store(&symm__lt_fence, true);
        atomic_thread_fence(memory_order_seq_cst);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    for (symm__tslot *s = head; s; s = s->next) {
        if (s == self) continue;
        uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
        if (w & SYMM__CALL_IN) wait_slot(s, w, ctx, obj);
    }
}

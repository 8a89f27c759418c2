/*
 * The proxy engine: the consumer of the request rings (include/symm/
 * symm_device_ring.h) and the thread that drains them. It knows no context:
 * requests run through an executor (proxy.h), which is the core's routing for
 * a context (proxy.c) and a fake in the ring unit test.
 *
 * Per ring, in ticket order: take a slot once its 8 words carry the ticket's
 * lap flag, copy it out, give the credit back (hdr->consumed), run it, and
 * publish hdr->completed. Puts and put-with-signal are issued non-blocking
 * (the executor says so): completed does not pass them until a flush (the
 * transport's quiet) has completed them, at the end of the pass or at a
 * QUIET request, so "completed >= t" always means remote completion while
 * puts still stream within a pass.
 *
 * Wake words (for waiters that cannot poll: a CUDA stream waiting with
 * cuStreamWaitValue32 holds no SM): a producer may put a word's number + 1
 * into the ticket's notify cell before it writes the request; the engine
 * reads and clears the cell when it takes the slot and stores 1 into that
 * word once the request counts as completed (published), failed or not.
 * The engine owns the words; the wiring hands them out (proxy.c).
 *
 * Idle: poll for spin_us after the last request, then nap with doubling
 * naps up to idle_us (the wake-up latency bound; the thread's timer slack is
 * set to 1 µs so a nap is not stretched by the kernel's default 50 µs).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "engine.h"
#include "symm_dispatch.h" /* symm__status_name */
#include "base/error.h"

#define PROXY_BUDGET 256u   /* requests per ring per pass: rings take turns  */
#define CHECK_NS 1000000ull /* poll the job's health about every millisecond */
#define PRODUCER_STRIDE 128u /* head and credit: a line each (128 B: GPU L2)   */

typedef struct ring_c {
    symm_ring_header *hdr;  /* the consumer's (host) view                     */
    uint64_t *slots;
    uint64_t *head;         /* producer words (read only by quiet)            */
    uint64_t *credit;
    uint64_t next;          /* next ticket index to take                      */
    uint64_t failed_bit;    /* SYMM_RING_COMPLETED_FAILED once error is set    */
    uint64_t pending_from;  /* first ticket (1-based) issued non-blocking     */
    bool pending;           /* non-blocking requests since the last flush     */
    bool broken;            /* a slot broke the format: run nothing more      */
    /* The host's view of failures (hdr->error keeps the first one for the
     * GPU): the latest failed ticket and its status, and the ticket up to
     * which a host call already returned them or symm_ctx_async_error
     * cleared them (symm__engine_quiet reports a failure once). */
    _Atomic uint64_t last_failed;
    _Atomic uint32_t last_failed_st;
    _Atomic uint64_t reported;
    uint64_t *notify;       /* depth cells: a wake word's number + 1, or 0    */
    uint32_t wake[PROXY_BUDGET]; /* words to set at the next publish         */
    uint32_t n_wake;
} ring_c;

struct symm__engine {
    symm__proxy_opts o;
    uint32_t log2;
    symm__proxy_exec x;
    symm__proxy_mem mem;
    uint8_t *shared;
    size_t shared_bytes;
    uint8_t *prod;
    size_t prod_bytes;
    int32_t *fail_word;   /* in shared: what producers' handles point at     */
    uint32_t *words;      /* in shared: SYMM__PROXY_WAKE_WORDS wake words     */
    uint32_t yield_mask;  /* spinning: yield the core every (mask + 1) rounds */
    ring_c *rings;

    pthread_mutex_t lock; /* start / stop                                    */
    pthread_t thread;
    bool started, joined;
    atomic_int stop;
    atomic_int fatal;     /* first fatal status (0: none)                    */
    uint64_t last_check;  /* engine thread: last health poll                 */

    atomic_uint_fast64_t n_requests, n_failed, n_flushes, n_naps, n_passes;
    /* where a request's time goes (engine thread writes, stats read) */
    atomic_uint_fast64_t run_ns, run_max_ns, flush_ns, flush_max_ns;
};

/* ---- memory (default: page-aligned host memory) ---- */

static size_t round_page(size_t n) { return (n + 4095u) & ~(size_t)4095u; }

static void *host_alloc(void *arg, size_t bytes) {
    (void)arg;
    void *p = aligned_alloc(4096, round_page(bytes));
    if (p) memset(p, 0, round_page(bytes));
    return p;
}

static void host_free(void *arg, void *p, size_t bytes) {
    (void)arg;
    (void)bytes;
    free(p);
}

static const symm__proxy_mem host_mem = {NULL, host_alloc, host_free, host_alloc, host_free,
                                         NULL, NULL};

/* Counters have one writer (the consumer): a plain store, not a locked
 * read-modify-write, on the drain's path. */
static inline void bump(atomic_uint_fast64_t *c, uint64_t k) {
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + k,
                          memory_order_relaxed);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

/* ---- options ---- */

static symm_status env_u32(const char *name, uint32_t lo, uint32_t hi, uint32_t *out) {
    const char *v = getenv(name);
    if (!v || !*v) return SYMM_SUCCESS;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x < lo || x > hi)
        return symm__err(SYMM_ERR_INVALID_ARG, "%s=%s: expected an integer in [%u, %u]", name, v,
                         lo, hi);
    *out = (uint32_t)x;
    return SYMM_SUCCESS;
}

symm_status symm__proxy_opts_env(symm__proxy_opts *o) {
    o->n_rings = SYMM__PROXY_DEFAULT_RINGS;
    o->depth = SYMM__PROXY_DEFAULT_DEPTH;
    o->spin_us = SYMM__PROXY_DEFAULT_SPIN_US;
    o->idle_us = SYMM__PROXY_DEFAULT_IDLE_US;
    o->flags = 0;
    SYMM_TRY(env_u32("SYMM_PROXY_RINGS", 1, SYMM__PROXY_MAX_RINGS, &o->n_rings));
    SYMM_TRY(env_u32("SYMM_PROXY_RING_DEPTH", SYMM_RING_MIN_DEPTH, SYMM_RING_MAX_DEPTH,
                     &o->depth));
    if (o->depth & (o->depth - 1))
        return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_PROXY_RING_DEPTH=%u: not a power of two",
                         o->depth);
    SYMM_TRY(env_u32("SYMM_PROXY_SPIN_US", 0, 1000000, &o->spin_us));
    return env_u32("SYMM_PROXY_IDLE_US", 1, 1000000, &o->idle_us);
}

static symm_status opts_check(const symm__proxy_opts *o) {
    if (o->n_rings < 1 || o->n_rings > SYMM__PROXY_MAX_RINGS)
        return symm__err(SYMM_ERR_INVALID_ARG, "proxy: %u rings (expected 1..%u)", o->n_rings,
                         SYMM__PROXY_MAX_RINGS);
    if (o->depth < SYMM_RING_MIN_DEPTH || o->depth > SYMM_RING_MAX_DEPTH ||
        (o->depth & (o->depth - 1)))
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "proxy: ring depth %u (expected a power of two in [%u, %u])", o->depth,
                         SYMM_RING_MIN_DEPTH, SYMM_RING_MAX_DEPTH);
    if (o->idle_us < 1)
        return symm__err(SYMM_ERR_INVALID_ARG, "proxy: idle nap bound 0 us (expected >= 1)");
    return SYMM_SUCCESS;
}

/* ---- creation ---- */

/* shared: [fail word line][header of each ring][slots of each ring] */
static size_t hdr_off(uint32_t i) { return SYMM_RING_HEADER_BYTES * (1u + (size_t)i); }

static size_t slots_off(const symm__engine *e, uint32_t i) {
    return hdr_off(e->o.n_rings) + (size_t)i * e->o.depth * SYMM_RING_SLOT_BYTES;
}

/* then the notify cells of each ring, then the wake words */
static size_t notify_off(const symm__engine *e, uint32_t i) {
    return slots_off(e, e->o.n_rings) + (size_t)i * e->o.depth * sizeof(uint64_t);
}

symm_status symm__engine_create(const symm__proxy_opts *o, const symm__proxy_exec *x,
                                const symm__proxy_mem *mem, symm__engine **out) {
    *out = NULL;
    SYMM_TRY(opts_check(o));
    if (!x || !x->run || !x->flush)
        return symm__err(SYMM_ERR_INTERNAL, "proxy: an executor needs run and flush");
    symm__engine *e = calloc(1, sizeof *e);
    if (!e) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "proxy: out of host memory");
    e->o = *o;
    while ((1u << e->log2) < o->depth) e->log2++;
    e->x = *x;
    e->mem = mem ? *mem : host_mem;
    e->yield_mask = mem ? 7u : 0u;
    pthread_mutex_init(&e->lock, NULL);
    e->shared_bytes = notify_off(e, o->n_rings) + SYMM__PROXY_WAKE_WORDS * sizeof(uint32_t);
    /* producer: [head, credit of each ring][scratch cells of each ring] */
    e->prod_bytes = (size_t)o->n_rings * 2 * PRODUCER_STRIDE +
                    (size_t)o->n_rings * o->depth * sizeof(uint64_t);
    e->shared = e->mem.alloc_shared(e->mem.arg, e->shared_bytes);
    e->prod = e->mem.alloc_producer(e->mem.arg, e->prod_bytes);
    e->rings = calloc(o->n_rings, sizeof *e->rings);
    if (!e->shared || !e->prod || !e->rings) {
        symm__engine_destroy(e);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY,
                         "proxy: out of memory for %u rings of %u slots (%zu bytes)", o->n_rings,
                         o->depth, e->shared_bytes);
    }
    e->fail_word = (int32_t *)e->shared;
    e->words = (uint32_t *)(e->shared + notify_off(e, o->n_rings));
    for (uint32_t i = 0; i < o->n_rings; i++) {
        ring_c *r = &e->rings[i];
        r->hdr = (symm_ring_header *)(e->shared + hdr_off(i));
        r->slots = (uint64_t *)(e->shared + slots_off(e, i));
        r->notify = (uint64_t *)(e->shared + notify_off(e, i));
        r->head = (uint64_t *)(e->prod + (size_t)i * 2 * PRODUCER_STRIDE);
        r->credit = (uint64_t *)(e->prod + ((size_t)i * 2 + 1) * PRODUCER_STRIDE);
        r->hdr->version = SYMM_RING_VERSION;
        r->hdr->slot_bytes = SYMM_RING_SLOT_BYTES;
        r->hdr->depth = o->depth;
        r->hdr->ring_id = i;
        __atomic_store_n(&r->hdr->magic, SYMM_RING_MAGIC, __ATOMIC_RELEASE);
    }
    *out = e;
    return SYMM_SUCCESS;
}

uint32_t symm__engine_n_rings(const symm__engine *e) { return e->o.n_rings; }

const int32_t *symm__engine_fail_word(const symm__engine *e) { return e->fail_word; }

symm_status symm__engine_wake(symm__engine *e, uint32_t i, uint64_t **notify, uint32_t **words) {
    if (i >= e->o.n_rings)
        return symm__err(SYMM_ERR_INVALID_ARG, "proxy: ring %u does not exist (%u rings)", i,
                         e->o.n_rings);
    *notify = e->mem.device ? e->mem.device(e->mem.arg, e->rings[i].notify) : e->rings[i].notify;
    *words = e->mem.device ? e->mem.device(e->mem.arg, e->words) : e->words;
    return SYMM_SUCCESS;
}

uint32_t *symm__engine_word_host(symm__engine *e, uint32_t w) {
    return w < SYMM__PROXY_WAKE_WORDS ? &e->words[w] : NULL;
}

static void *dev_view(const symm__engine *e, void *p) {
    return e->mem.device ? e->mem.device(e->mem.arg, p) : p;
}

symm_status symm__engine_ring(symm__engine *e, uint32_t i, uint32_t version, symm_ring *out) {
    if (version != SYMM_RING_VERSION)
        return symm__err(SYMM_ERR_ABI_MISMATCH,
                         "proxy: the producer was built against ring format %u and this "
                         "runtime speaks format %u (include/symm/symm_device_ring.h): rebuild it "
                         "against this symm", version, SYMM_RING_VERSION);
    if (i >= e->o.n_rings)
        return symm__err(SYMM_ERR_INVALID_ARG, "proxy: ring %u does not exist (%u rings)", i,
                         e->o.n_rings);
    ring_c *r = &e->rings[i];
    memset(out, 0, sizeof *out);
    out->version = SYMM_RING_VERSION;
    out->slot_bytes = SYMM_RING_SLOT_BYTES;
    out->depth = e->o.depth;
    out->log2_depth = e->log2;
    out->hdr = dev_view(e, r->hdr);
    out->slots = dev_view(e, r->slots);
    out->head = r->head;
    out->credit = r->credit;
    out->fail_word = dev_view(e, e->fail_word);
    out->scratch = (uint64_t *)(e->prod + (size_t)e->o.n_rings * 2 * PRODUCER_STRIDE +
                                (size_t)i * e->o.depth * sizeof(uint64_t));
    return SYMM_SUCCESS;
}

/* ---- failure ---- */

static void set_state(ring_c *r, symm_status st) {
    uint64_t zero = 0;
    __atomic_compare_exchange_n(&r->hdr->state, &zero, (uint64_t)(uint32_t)st, false,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

void symm__engine_fail(symm__engine *e, symm_status st) {
    if (!st) return;
    int zero = 0;
    atomic_compare_exchange_strong(&e->fatal, &zero, (int)st);
    if (st == SYMM_ERR_PEER_FAILED) __atomic_store_n(e->fail_word, 2, __ATOMIC_RELEASE);
    for (uint32_t i = 0; i < e->o.n_rings; i++) set_state(&e->rings[i], st);
}

/* The first failed request of a ring (engine thread only: one writer). */
static void request_failed(symm__engine *e, uint32_t idx, ring_c *r, uint64_t ticket,
                           const symm_ring_req *q, symm_status st) {
    bump(&e->n_failed, 1);
    atomic_store_explicit(&r->last_failed_st, (uint32_t)st, memory_order_relaxed);
    atomic_store_explicit(&r->last_failed, ticket, memory_order_release);
    if (__atomic_load_n(&r->hdr->error, __ATOMIC_RELAXED) == 0) {
        __atomic_store_n(&r->hdr->error_ticket, ticket, __ATOMIC_RELAXED);
        __atomic_store_n(&r->hdr->error, (uint64_t)(uint32_t)st, __ATOMIC_RELEASE);
        r->failed_bit = SYMM_RING_COMPLETED_FAILED; /* on every later publish */
    }
    if (e->x.failed) e->x.failed(e->x.arg, idx, ticket, q, st, symm__last_error());
    if (st == SYMM_ERR_PEER_FAILED) symm__engine_fail(e, st);
}

/* ---- the drain ---- */

static void wake_word(symm__engine *e, uint64_t cell) {
    if (cell && cell <= SYMM__PROXY_WAKE_WORDS)
        __atomic_store_n(&e->words[cell - 1], 1u, __ATOMIC_RELEASE);
}

static void publish(symm__engine *e, ring_c *r) {
    __atomic_store_n(&r->hdr->completed, r->next | r->failed_bit, __ATOMIC_RELEASE);
    for (uint32_t k = 0; k < r->n_wake; k++) wake_word(e, (uint64_t)r->wake[k] + 1u);
    r->n_wake = 0;
}

/* Complete what the ring issued non-blocking. A failure is recorded as the
 * first pending request's (SUCCESS returned then); with nothing pending it
 * is returned (a QUIET's own). */
/* One writer (the draining thread): relaxed load and store suffice. */
static void timed(atomic_uint_fast64_t *sum, atomic_uint_fast64_t *max, uint64_t t0) {
    const uint64_t d = now_ns() - t0;
    bump(sum, d);
    if (d > atomic_load_explicit(max, memory_order_relaxed))
        atomic_store_explicit(max, d, memory_order_relaxed);
}

static symm_status flush(symm__engine *e, uint32_t idx, ring_c *r) {
    bump(&e->n_flushes, 1);
    const uint64_t t0 = now_ns();
    symm_status st = e->x.flush(e->x.arg);
    timed(&e->flush_ns, &e->flush_max_ns, t0);
    if (st && r->pending) {
        request_failed(e, idx, r, r->pending_from, NULL, st);
        st = SYMM_SUCCESS;
    }
    r->pending = false;
    return st;
}

static symm_status run_one(symm__engine *e, uint32_t idx, ring_c *r, const symm_ring_req *q,
                           uint64_t ticket) {
    switch (q->op) {
    case SYMM_RING_OP_NOP:
        return SYMM_SUCCESS;
    case SYMM_RING_OP_QUIET:
        /* The flush completes the puts this ring issued non-blocking (a
         * failure among them is recorded as theirs) and, through the
         * executor, whatever else the transport holds. */
        return flush(e, idx, r);
    case SYMM_RING_OP_CALL: {
        /* A host call runs after the ring's earlier requests completed, so
         * what it reads (a collective's source) was written before it. */
        SYMM_TRY(flush(e, idx, r));
        bool pend = false;
        return e->x.run(e->x.arg, q, &pend);
    }
    default: {
        bool pend = false;
        const uint64_t t0 = now_ns();
        symm_status st = e->x.run(e->x.arg, q, &pend);
        timed(&e->run_ns, &e->run_max_ns, t0);
        if (pend && st == SYMM_SUCCESS && !r->pending) {
            r->pending = true;
            r->pending_from = ticket;
        }
        return st;
    }
    }
}

/* Take and run up to `budget` requests of ring idx. */
static size_t drain(symm__engine *e, uint32_t idx, size_t budget) {
    ring_c *r = &e->rings[idx];
    const uint64_t mask = e->o.depth - 1u;
    size_t n = 0;
    /* (the wake list holds a pass's requests: at most PROXY_BUDGET) */
    while (n < budget && r->n_wake < PROXY_BUDGET) {
        const uint64_t *s = r->slots + (r->next & mask) * SYMM_RING_WORDS;
        const uint64_t f = symm_ring_flag(r->next, e->log2);
        uint64_t w[SYMM_RING_WORDS];
        bool ready = true;
        for (uint32_t i = 0; i < SYMM_RING_WORDS && ready; i++) {
            w[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
            ready = (w[i] & SYMM_RING_FLAG_BIT) == f;
        }
        if (!ready) break;
        /* The words are the request's; what the producer wrote before them
         * (a put's source) is visible from here on. */
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        symm_ring_req q;
        symm_ring_decode(w, &q);
        /* its wake word: taken before the credit frees the cell */
        uint64_t *cell = &r->notify[r->next & mask];
        const uint64_t wk = __atomic_load_n(cell, __ATOMIC_RELAXED);
        if (wk) {
            __atomic_store_n(cell, 0, __ATOMIC_RELAXED);
            if (wk <= SYMM__PROXY_WAKE_WORDS) r->wake[r->n_wake++] = (uint32_t)(wk - 1u);
        }
        const uint64_t ticket = ++r->next;
        __atomic_store_n(&r->hdr->consumed, r->next, __ATOMIC_RELEASE); /* the credit */
        n++;
        symm_status st = SYMM_SUCCESS;
        const int fatal = atomic_load_explicit(&e->fatal, memory_order_acquire);
        if (q.tag != ((ticket - 1) & SYMM_RING_TAG_MASK)) {
            const uint64_t due = (ticket - 1) & SYMM_RING_TAG_MASK;
            st = symm__err(SYMM_ERR_INTERNAL,
                           "proxy ring %u: slot %" PRIu64 " holds ticket %" PRIu64
                           " where %" PRIu64 " was due (a producer of another format, or the "
                           "ring was overwritten)", idx, (ticket - 1) & mask, q.tag, due);
            r->broken = true;
            set_state(r, SYMM_ERR_INTERNAL);
        } else if (r->broken || fatal) {
            /* Taken, not run: the ring (or the job) is gone; completing it
             * keeps any producer that ignores the state from waiting. */
            st = r->broken ? SYMM_ERR_INTERNAL : (symm_status)fatal;
            symm__err(st, "proxy ring %u: request %" PRIu64 " not run (%s)", idx, ticket,
                      r->broken ? "the ring broke its format" : "the proxy stopped");
        } else if (q.op == 0 || q.op > SYMM_RING_OP_LAST) {
            st = symm__err(SYMM_ERR_INVALID_ARG, "proxy ring %u: request %" PRIu64
                           " has unknown op %u", idx, ticket, q.op);
        } else {
            st = run_one(e, idx, r, &q, ticket);
        }
        if (st) request_failed(e, idx, r, ticket, &q, st);
        if (!r->pending) publish(e, r);
    }
    if (r->pending) {
        (void)flush(e, idx, r); /* recorded as the pending requests' failure */
        publish(e, r);
    }
    if (n) bump(&e->n_requests, n);
    return n;
}

size_t symm__engine_poll(symm__engine *e) {
    size_t n = 0;
    for (uint32_t i = 0; i < e->o.n_rings; i++) n += drain(e, i, PROXY_BUDGET);
    bump(&e->n_passes, 1);
    return n;
}

/* ---- the thread ---- */

static void health(symm__engine *e, uint64_t t) {
    if (t - e->last_check < CHECK_NS || !e->x.check) return;
    e->last_check = t;
    if (atomic_load_explicit(&e->fatal, memory_order_relaxed)) return;
    symm_status st = e->x.check(e->x.arg);
    if (st == SYMM_SUCCESS) return;
    if (e->x.failed) e->x.failed(e->x.arg, 0, 0, NULL, st, symm__last_error());
    symm__engine_fail(e, st);
}

static void *engine_main(void *arg) {
    symm__engine *e = arg;
    prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0); /* naps of a few µs stay a few µs */
    prctl(PR_SET_NAME, "symm-proxy", 0, 0, 0);
    if (e->x.thread) e->x.thread(e->x.arg, true);
    const uint64_t spin_ns = (uint64_t)e->o.spin_us * 1000u;
    const uint64_t max_nap = (uint64_t)e->o.idle_us * 1000u;
    uint64_t last_work = now_ns(), nap = 1000;
    uint32_t rounds = 0;
    bool spinning = true;
    e->last_check = last_work;
    while (!atomic_load_explicit(&e->stop, memory_order_acquire)) {
        size_t n = symm__engine_poll(e);
        /* Spinning: 32 polls between clock reads keep the loop tight. */
        for (uint32_t k = 0; !n && spinning && k < 32; k++) {
            cpu_relax();
            n = symm__engine_poll(e);
        }
        uint64_t t = now_ns();
        health(e, t);
        if (n) {
            last_work = t;
            nap = 1000;
            spinning = true;
            continue;
        }
        spinning = t - last_work < spin_ns;
        if (spinning) {
            /* A CPU producer may share this core: let it run (returns at
             * once when nothing else is runnable here). With rings in GPU-
             * visible memory every 8th round only (256 polls): the syscall
             * is time a GPU's request waits unseen. */
            if ((++rounds & e->yield_mask) == 0) sched_yield();
            continue;
        }
        struct timespec ts = {0, (long)nap};
        nanosleep(&ts, NULL);
        bump(&e->n_naps, 1);
        nap = nap * 2 > max_nap ? max_nap : nap * 2;
    }
    /* Stopping: run what producers have written (every ring until one pass
     * finds nothing, bounded so a producer that keeps posting cannot hold
     * the stop), then the rings turn fatal (symm__engine_stop). */
    for (uint32_t pass = 0; pass < e->o.depth / PROXY_BUDGET + 2; pass++) {
        health(e, now_ns());
        if (!symm__engine_poll(e)) break;
    }
    if (e->x.thread) e->x.thread(e->x.arg, false);
    return NULL;
}

symm_status symm__engine_start(symm__engine *e) {
    pthread_mutex_lock(&e->lock);
    symm_status st = SYMM_SUCCESS;
    if (!e->started) {
        /* The thread takes no signals: they belong to the application. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        int rc = pthread_create(&e->thread, NULL, engine_main, e);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc)
            st = symm__err(SYMM_ERR_SYSTEM, "proxy: pthread_create: %s", strerror(rc));
        else
            e->started = true;
    }
    pthread_mutex_unlock(&e->lock);
    return st;
}

bool symm__engine_running(const symm__engine *e) { return e && e->started && !e->joined; }

void symm__engine_stop(symm__engine *e) {
    if (!e) return;
    pthread_mutex_lock(&e->lock);
    if (e->started && !e->joined) {
        atomic_store_explicit(&e->stop, 1, memory_order_release);
        pthread_join(e->thread, NULL);
        e->joined = true;
    }
    pthread_mutex_unlock(&e->lock);
    if (e->rings) {
        symm__engine_fail(e, atomic_load(&e->fatal) ? (symm_status)atomic_load(&e->fatal)
                                                    : SYMM_ERR_INVALID_STATE);
        /* A producer that claimed a slot and named its wake word but never
         * wrote the request (it saw the stop): its waiter ends too. */
        for (uint32_t i = 0; i < e->o.n_rings; i++)
            for (uint32_t k = 0; k < e->o.depth; k++)
                wake_word(e, __atomic_exchange_n(&e->rings[i].notify[k], 0, __ATOMIC_ACQ_REL));
    }
}

void symm__engine_destroy(symm__engine *e) {
    if (!e) return;
    symm__engine_stop(e);
    if (e->shared) e->mem.free_shared(e->mem.arg, e->shared, e->shared_bytes);
    if (e->prod) e->mem.free_producer(e->mem.arg, e->prod, e->prod_bytes);
    free(e->rings);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

/* ---- host-side quiet ---- */

static uint64_t read_head(const symm__engine *e, const ring_c *r) {
    if (e->mem.read_producer) return e->mem.read_producer(e->mem.arg, r->head);
    return __atomic_load_n(r->head, __ATOMIC_ACQUIRE);
}

symm_status symm__engine_quiet(symm__engine *e) {
    for (uint32_t i = 0; i < e->o.n_rings; i++) {
        ring_c *r = &e->rings[i];
        const uint64_t head = read_head(e, r);
        uint64_t nap = 1000;
        for (uint32_t spins = 0;; spins++) {
            if (SYMM_RING_COMPLETED_COUNT(__atomic_load_n(&r->hdr->completed, __ATOMIC_ACQUIRE)) >=
                head)
                break;
            uint64_t state = __atomic_load_n(&r->hdr->state, __ATOMIC_ACQUIRE);
            if (state)
                return symm__err((symm_status)state,
                                 "proxy ring %u: stopped (%s) before request %" PRIu64
                                 " finished", i, symm__status_name((symm_status)state), head);
            if (!symm__engine_running(e)) {
                symm__engine_poll(e); /* no thread: the caller drains */
                continue;
            }
            if (spins < 256) {
                cpu_relax();
            } else {
                struct timespec ts = {0, (long)nap};
                nanosleep(&ts, NULL);
                nap = nap * 2 > 100000 ? 100000 : nap * 2;
            }
        }
        /* A failure among the requests this quiet waited for, not yet
         * returned by an earlier quiet nor cleared with the async error (it
         * was recorded there when it happened): returned once. */
        uint64_t at = atomic_load_explicit(&r->last_failed, memory_order_acquire);
        uint64_t seen = atomic_load_explicit(&r->reported, memory_order_relaxed);
        if (at && at <= head && at > seen &&
            atomic_compare_exchange_strong(&r->reported, &seen, at)) {
            symm_status err = (symm_status)atomic_load_explicit(&r->last_failed_st,
                                                                memory_order_relaxed);
            return symm__err(err, "proxy ring %u: request %" PRIu64 " failed (%s; "
                             "symm_ctx_async_error has its message)", i, at,
                             symm__status_name(err));
        }
    }
    return SYMM_SUCCESS;
}

void symm__engine_ack(symm__engine *e) {
    if (!e) return;
    for (uint32_t i = 0; i < e->o.n_rings; i++) {
        ring_c *r = &e->rings[i];
        uint64_t at = atomic_load_explicit(&r->last_failed, memory_order_acquire);
        uint64_t seen = atomic_load_explicit(&r->reported, memory_order_relaxed);
        while (at > seen && !atomic_compare_exchange_weak(&r->reported, &seen, at)) {
        }
    }
}

void symm__engine_stats(const symm__engine *e, symm__proxy_stats *s) {
    memset(s, 0, sizeof *s);
    if (!e) return;
    s->requests = atomic_load_explicit(&e->n_requests, memory_order_relaxed);
    s->failed = atomic_load_explicit(&e->n_failed, memory_order_relaxed);
    s->flushes = atomic_load_explicit(&e->n_flushes, memory_order_relaxed);
    s->naps = atomic_load_explicit(&e->n_naps, memory_order_relaxed);
    s->passes = atomic_load_explicit(&e->n_passes, memory_order_relaxed);
    s->run_ns = atomic_load_explicit(&e->run_ns, memory_order_relaxed);
    s->run_max_ns = atomic_load_explicit(&e->run_max_ns, memory_order_relaxed);
    s->flush_ns = atomic_load_explicit(&e->flush_ns, memory_order_relaxed);
    s->flush_max_ns = atomic_load_explicit(&e->flush_max_ns, memory_order_relaxed);
}

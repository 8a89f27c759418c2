/*
 * The core's services: configuration, handles, the context, buffers, teams,
 * checks, waits, routing and the transport host. Everything here is hidden
 * (-fvisibility=hidden); internal names are symm__*.
 *
 * Layers, one way down: api/ (the public entries) -> core/ (these services)
 * -> bootstrap/ (job formation) -> base/ (errors, logs). Backends use the
 * core's services; the core reaches a backend only through the ops table its
 * context holds (backends/backend.h) and a transport only through its plugin
 * table (transports/transport.h), never by name.
 */
#ifndef SYMM_RUNTIME_INTERNAL_H
#define SYMM_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>

#include "backends/backend.h"
#include "base/error.h"
#include "base/log.h"
#include "bootstrap/bootstrap.h"
#include "symm_dispatch.h"

/* ------------------------------------------------------------------------ */
/* Configuration (config.c): environment, parsed once per symm_init          */
/* ------------------------------------------------------------------------ */

#define SYMM__DEFAULT_HEAP_CAP (16ull << 30)  /* per PE, virtual reservation */
#define SYMM__MAX_HEAP_BYTES (1ull << 47)   /* 128T: above any user address space we run on */
#define SYMM__DEFAULT_HEAP_CHUNK (64ull << 20)
#define SYMM__HEAP_ALIGN 256u

typedef struct symm__config {
    uint32_t backend;      /* SYMM_BACKEND_* after env override             */
    uint32_t bootstrap;    /* SYMM_BOOTSTRAP_*                              */
    uint32_t thread_level;
    uint64_t heap_cap;     /* rounded to the chunk size                     */
    uint64_t heap_chunk;   /* growth granularity (SYMM_HEAP_CHUNK)          */
    uint32_t timeout_ms;
    uint32_t peer_timeout_ms; /* SYMM_PEER_TIMEOUT_MS                      */
    int32_t device;
    int32_t uid_rank, uid_n_pes;
    symm_unique_id unique_id;
    bool heap_cap_attr, timeout_attr; /* set by the init attributes (log) */
} symm__config;

/* Parse "64M", "1G", "4096" into bytes; false on junk. */
bool symm__parse_size(const char *text, uint64_t *out);
symm_status symm__config_load(const symm_init_attr *attr, symm__config *cfg);

/* ------------------------------------------------------------------------ */
/* Handles (handles.c)                                                       */
/* ------------------------------------------------------------------------ */
/* A handle is never a pointer to runtime memory: it encodes kind, generation
 * and slot index, so a stale or foreign value is caught by lookup. */

#define SYMM__KIND_CTX 1u
#define SYMM__KIND_TEAM 2u
#define SYMM__KIND_BUF 3u

uint64_t symm__handle_new(uint32_t kind, void *obj);  /* 0 when the table is full */

/* The tables' read side, inline: every entry resolves a handle, and a call
 * into handles.c was a fifth of a small call's path. A slot's generation is
 * read before and after its object (a reuse stores the new generation before
 * the new object). handles.c writes the pages, under its lock. */
#define SYMM__H_PAGE_SLOTS 1024u
#define SYMM__H_MAX_PAGES 1024u
#define SYMM__H_KINDS 4u
#define SYMM__H_IDX_BITS 21u
#define SYMM__H_GEN_BITS 41u

typedef struct symm__hslot {
    _Atomic(void *) obj;
    _Atomic uint64_t gen; /* the live (or next) generation; 2^41: retired */
    uint32_t next_free;
} symm__hslot;
extern _Atomic(symm__hslot *) symm__hpages[SYMM__H_KINDS][SYMM__H_MAX_PAGES];

/* The object of a live handle of kind; NULL when invalid. */
static inline void *symm__handle_get(uint32_t kind, uint64_t h) {
    uint64_t idx1 = h & ((1u << SYMM__H_IDX_BITS) - 1u);
    uint64_t gen = (h >> SYMM__H_IDX_BITS) & ((1ull << SYMM__H_GEN_BITS) - 1u);
    if (kind == 0 || kind >= SYMM__H_KINDS ||
        (h >> (SYMM__H_IDX_BITS + SYMM__H_GEN_BITS)) != kind || idx1 == 0 || gen == 0 ||
        (idx1 - 1) / SYMM__H_PAGE_SLOTS >= SYMM__H_MAX_PAGES)
        return NULL;
    symm__hslot *page = atomic_load_explicit(&symm__hpages[kind][(idx1 - 1) / SYMM__H_PAGE_SLOTS],
                                             memory_order_acquire);
    if (!page) return NULL;
    symm__hslot *s = &page[(idx1 - 1) % SYMM__H_PAGE_SLOTS];
    if (atomic_load_explicit(&s->gen, memory_order_acquire) != gen) return NULL;
    void *obj = atomic_load_explicit(&s->obj, memory_order_acquire);
    if (atomic_load_explicit(&s->gen, memory_order_relaxed) != gen) return NULL;
    return obj;
}
void symm__handle_release(uint32_t kind, uint64_t handle);
/* Release every live handle of kind whose object match() accepts (under the
 * table's lock: objects must stay alive meanwhile). */
void symm__handle_release_if(uint32_t kind, bool (*match)(void *obj, void *arg), void *arg);
/* Tests only: give the live handle's slot generation gen (1 .. 2^41 - 1) and
 * return the handle that names it now (0 when handle is not live). */
uint64_t symm__handle_set_gen_for_test(uint32_t kind, uint64_t handle, uint64_t gen);

/* ------------------------------------------------------------------------ */
/* Handle lifetime (handles.c): objects stay alive while calls use them      */
/* ------------------------------------------------------------------------ */
/*
 * A context, buffer or team is freed while other threads may be inside calls
 * that resolved its handle. The free makes the object unreachable first (it
 * releases the handle, for a context also those of its buffers and teams,
 * and sets the object's `closing` flag, which blocking calls watch), then
 * waits out a grace period, then frees it. A racing call therefore either
 * completes on a live object or gets INVALID_HANDLE. Lookups go by the
 * handle table alone: they never read an object to learn whether it lives.
 *
 * Decision: an RCU-like scheme with one slot per thread, not a reference
 * count. A count would put an atomic read-modify-write on a shared line on
 * every call (tens of ns under contention, on a path of ~40 ns); here a call
 * costs a thread-pointer hash lookup, two plain stores to its own slot and a
 * compiler barrier (the dispatch table's wrappers, api/dispatch.c):
 *  - Each thread has a slot (found by its thread pointer, no TLS call: a
 *    dlopened library's TLS goes through __tls_get_addr). Its word holds
 *    IN (inside a call), PARKED, HOLDS and a call sequence number.
 *  - A call stores IN, then reads handles; the freer releases the handle,
 *    then runs membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (a full fence on
 *    every thread of the process, registered once by symm_init), then reads
 *    every slot: a call whose IN it does not see reads the stale handle. It
 *    waits for every call it sees inside to end. Where membarrier is not
 *    available every call fences after its store (symm__lt_fence).
 *  - A call that may block for long (waits, barriers, the context lock,
 *    bootstrap exchanges) parks first: it declares the objects it keeps
 *    using (symm__hold; its context by symm__park) and is then waited for
 *    only by the free of one of those. Blocking loops check the objects'
 *    closing flags (symm__check_closing) and leave with INVALID_HANDLE, so a
 *    free never waits on a wait that nothing would end. After parking a call
 *    resolves no handle.
 */
#define SYMM__CALL_IN 1u
#define SYMM__CALL_PARKED 2u
#define SYMM__CALL_HOLDS 4u  /* parked or held: the leave clears the holds */
#define SYMM__CALL_STATE 7u  /* what a call's leave clears                */
#define SYMM__CALL_MSG 8u    /* the last call failed: its message counts    */
#define SYMM__CALL_FLAGS 15u
#define SYMM__CALL_SEQ 16u   /* the word counts calls above the flags     */
#define SYMM__HOLD_MAX 6

typedef struct symm__tslot {
    _Alignas(64) _Atomic uint64_t word; /* a line of its own: no false sharing */
    _Atomic uintptr_t key;                      /* direct slots: the owner's thread pointer */
    _Atomic(struct symm__ctx *) held_ctx;       /* set by symm__park          */
    _Atomic(atomic_int *) held[SYMM__HOLD_MAX]; /* closing flags of held objects */
    _Atomic uint32_t n_held;                    /* > SYMM__HOLD_MAX: all of ctx */
    struct symm__tslot *next;                   /* every slot, newest first   */
} symm__tslot;

/* Slots live in a static table indexed by a hash of the thread pointer (one
 * load away: the call path reads the key and the word of one line); a thread
 * whose entry another thread took first gets a slot in an overflow map. */
#define SYMM__TSLOT_DIRECT 256u
extern symm__tslot symm__tslot_direct[SYMM__TSLOT_DIRECT];

static inline uintptr_t symm__thread_ptr(void) {
    uintptr_t tp;
#if defined(__x86_64__)
    __asm__("mov %%fs:0, %0" : "=r"(tp)); /* the TCB's self pointer */
#elif defined(__aarch64__)
    __asm__("mrs %0, tpidr_el0" : "=r"(tp));
#else
    tp = (uintptr_t)pthread_self();
#endif
    return tp;
}

static inline size_t symm__tp_hash(uintptr_t tp) {
    return (size_t)(((uint64_t)tp * 0x9E3779B97F4A7C15ull) >> 32);
}

/* This thread's slot (registered on its first call); NULL out of memory. */
symm__tslot *symm__tslot_find(uintptr_t tp);
static inline symm__tslot *symm__tslot_self(void) {
    uintptr_t tp = symm__thread_ptr();
    symm__tslot *s = &symm__tslot_direct[symm__tp_hash(tp) % SYMM__TSLOT_DIRECT];
    /* relaxed: only this thread (or a dead one of the same thread pointer,
     * whose slot it inherits) stored this key */
    if (__builtin_expect(atomic_load_explicit(&s->key, memory_order_relaxed) == tp, 1)) return s;
    return symm__tslot_find(tp);
}

extern atomic_bool symm__lt_fence;

/* Around every public entry (api/dispatch.c). Calls do not nest: the runtime
 * calls its own entries directly, not through the table. A status-returning
 * entry's call clears MSG when it starts and sets it when it fails, which is
 * how its message is cleared (symm_last_error reads "" without MSG: no
 * thread-local access per call); the queries that return a value leave it. */
static inline symm__tslot *symm__call_enter_as(bool clear_msg) {
    symm__tslot *s = symm__tslot_self();
    if (__builtin_expect(!s, 0)) return NULL;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (clear_msg) w &= ~(uint64_t)SYMM__CALL_MSG;
    atomic_store_explicit(&s->word, w | SYMM__CALL_IN, memory_order_relaxed);
    if (__builtin_expect(atomic_load_explicit(&symm__lt_fence, memory_order_relaxed), 0))
        atomic_thread_fence(memory_order_seq_cst);
    else
        atomic_signal_fence(memory_order_seq_cst); /* membarrier orders the rest */
    return s;
}
void symm__call_leave_slow(symm__tslot *s, uint64_t w, bool failed);
static inline void symm__call_leave_as(symm__tslot *s, bool failed) {
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    if (__builtin_expect(w & (SYMM__CALL_PARKED | SYMM__CALL_HOLDS), 0)) {
        symm__call_leave_slow(s, w, failed);
        return;
    }
    /* release: the call's reads of the object come before a freer sees it out */
    atomic_store_explicit(&s->word,
                          ((w & ~(uint64_t)SYMM__CALL_STATE) + SYMM__CALL_SEQ) |
                              (failed ? SYMM__CALL_MSG : 0u),
                          memory_order_release);
}
static inline symm__tslot *symm__call_enter(void) { return symm__call_enter_as(false); }
static inline void symm__call_leave(symm__tslot *s) { symm__call_leave_as(s, false); }
/* This thread's slot if it has one (no registration: symm_last_error). */
symm__tslot *symm__tslot_peek(void);

/* symm_init: register for membarrier once per process. */
void symm__lifetime_init(void);
/* The call keeps using the object whose closing flag this is across a park
 * (no-op outside a call and once parked: declare before blocking). */
void symm__hold(atomic_int *closing);
/* The call may block for long: from now on only a free of ctx or of an
 * object it holds waits for it. */
void symm__park(struct symm__ctx *ctx);
/* INVALID_HANDLE (with a message) when ctx or an object the call holds is
 * closing: blocking loops call it and leave. */
symm_status symm__check_closing(struct symm__ctx *ctx);
/* The grace period: the object (its closing flag; NULL: ctx itself and
 * everything of it) is already unreachable through handles; return when no
 * other thread's call can still use it. Never called with ctx->lock held. */
void symm__retire(struct symm__ctx *ctx, const atomic_int *obj);

/* ------------------------------------------------------------------------ */
/* Allocator (heap.c): deterministic first fit over [start, cap), O(log n)  */
/* ------------------------------------------------------------------------ */

typedef struct symm__range {
    uint64_t off, len;
} symm__range;

/* A free range in the allocator's balanced tree (heap.c). */
typedef struct symm__fnode {
    uint64_t off, len;
    uint64_t max;                 /* the longest range in this subtree      */
    struct symm__fnode *l, *r;    /* lower / higher offsets                 */
    int32_t height;
} symm__fnode;

typedef struct symm__alloc {
    symm__fnode *root;  /* free ranges by offset, coalesced (an AVL tree)   */
    symm__fnode *spare; /* unused nodes (linked through r)                 */
    size_t n_free;      /* ranges in the tree                               */
    uint64_t used;
} symm__alloc;

symm_status symm__alloc_init(symm__alloc *a, uint64_t start, uint64_t end);
/* Returns false when no range fits. Same call sequence => same offsets. */
bool symm__alloc_take(symm__alloc *a, uint64_t len, uint64_t align, uint64_t *off);
/* Take from the top of the highest range that fits (registrations). */
bool symm__alloc_take_top(symm__alloc *a, uint64_t len, uint64_t align, uint64_t *off);
void symm__alloc_give(symm__alloc *a, uint64_t off, uint64_t len);
void symm__alloc_fini(symm__alloc *a);

/* ------------------------------------------------------------------------ */
/* Teams                                                                     */
/* ------------------------------------------------------------------------ */

#define SYMM__MAX_TEAMS 128        /* team slots per context (sync areas)   */
/* A team slot's sync area: 1024 bytes for jobs of up to 64 PEs; larger jobs
 * get 512 + 8 * n_pes bytes, rounded up to 256, so the device barrier flags
 * (one uint64 per PE from byte 512, teams.h) fit any job. ctx->slot_bytes and
 * ctx->sys_bytes hold a context's values; SYMM__SYS_BYTES is the smallest
 * system area (what config.c reserves at least). */
#define SYMM__TEAM_SLOT_BYTES 1024
#define SYMM__AGREE_WORDS 6 /* ops->coll_agree: words a PE gives (coll.c packs them) */
#define SYMM__SYS_BYTES (SYMM__MAX_TEAMS * SYMM__TEAM_SLOT_BYTES)
static inline uint64_t symm__slot_bytes_for(int32_t n_pes) {
    uint64_t need = 512u + 8u * (uint64_t)(n_pes > 0 ? n_pes : 1);
    return need <= SYMM__TEAM_SLOT_BYTES ? SYMM__TEAM_SLOT_BYTES : (need + 255u) & ~(uint64_t)255u;
}

typedef struct symm__team {
    uint64_t handle;
    symm__ctx *ctx;
    int32_t my_pe, n_pes;   /* in the team                                  */
    int32_t start, stride;  /* world PE of team PE i = start + i * stride   */
    int32_t slot;           /* sync area index                              */
    bool predefined;
    int32_t *members;       /* [n_pes] world PEs (for non-strided teams)    */
    uint64_t epoch;         /* barrier epoch                                */
    symm_team_config config;
    struct symm__team_hier *hier; /* host grouping (sync.c), NULL until used */
    atomic_int closing;     /* being destroyed (handles.c, "Handle lifetime") */
    /* Stream barriers and collectives of this team that the proxy's thread
     * runs (api/stream_px.c): enqueued outside a capture / finished. A
     * blocking call of the team waits until those enqueued before it have
     * finished (symm__team_px_drain). */
    _Atomic uint64_t px_issued, px_done;
} symm__team;

/* A team's members grouped by host (teams that span hosts, sync.c): the
 * leader of a host is its first member in team order. */
typedef struct symm__team_hier {
    int32_t n_leaders, n_locals;
    int32_t my_leader;     /* team index of this PE's host leader           */
    int32_t my_leader_rank; /* index of my host among leaders (leader order) */
    int32_t *leaders;      /* [n_leaders] team indexes, team order           */
    int32_t *locals;       /* [n_locals] team indexes of my host, team order */
} symm__team_hier;
/* The grouping of a team (computed once); NULL when out of memory. */
const symm__team_hier *symm__team_hier_get(symm__team *team);

/* World PE of team PE i. */
static inline int32_t symm__team_world_pe(const symm__team *t, int32_t i) {
    return t->members ? t->members[i] : t->start + i * t->stride;
}
/* Byte offset of the sync area of a team slot (defined after symm__ctx). */
static inline uint64_t symm__team_sync_off(const struct symm__ctx *ctx, int32_t slot);

/* ------------------------------------------------------------------------ */
/* Buffers                                                                   */
/* ------------------------------------------------------------------------ */

#define SYMM__BUF_REGISTERED 1u /* caller-owned memory (symm_buf_register) */

typedef struct symm__buf {
    uint64_t handle;
    symm__ctx *ctx;
    uint32_t dtype, elem_size;
    uint64_t count;
    uint64_t off;   /* symmetric byte offset in the heap */
    uint64_t bytes; /* reserved bytes (aligned)          */
    uint32_t flags; /* SYMM__BUF_*                       */
    struct symm__buf *next, *prev; /* ctx's live list     */
    atomic_int closing; /* being freed: lookups and waits leave (handles.c) */
} symm__buf;

/* ------------------------------------------------------------------------ */
/* The context                                                               */
/* ------------------------------------------------------------------------ */

struct symm__ctx {
    uint64_t handle;
    symm__config cfg;
    int32_t my_pe, n_pes;
    int32_t local_pe, local_n_pes;
    uint32_t thread_level;
    pthread_t init_thread;
    symm__boot *boot;
    symm__boot_info boot_info;

    const symm__backend_ops *ops;
    void *backend; /* backend-private state */

    /* routes (route.c): PEs of other hosts go through the transport */
    uint8_t *remote;      /* [n_pes] 1: reached through ctx->tp            */
    int32_t n_remote;     /* PEs on other hosts                             */
    int32_t n_hosts;      /* distinct host ids in the job                   */
    struct symm__tp *tp;  /* NULL when every PE shares this PE's host       */
    bool amo_tp;          /* every atomic update goes through tp (no
                             SYMM_TP_CAP_ATOMIC_GLOBAL)                     */
    /* Set by a backend whose peer_base[] mappings are plain memory and
     * whose put, get, atomic, quiet and fence are exactly the CPU's loads,
     * stores, atomics and full fence (the host backend: host_cpu.h). Without
     * a transport the entries then do them inline (api/entry.h). */
    bool cpu_peers;
    /* The thread pointer (symm__thread_ptr) of the GPU proxy's thread while it
     * runs (0: none): its local copies take the transport's memory service
     * (route.c, "the GPU proxy's own copies"). */
    _Atomic uintptr_t svc_thread;

    /* heap */
    uint8_t *heap_base;   /* this PE's heap (local mapping)                  */
    uint8_t **peer_base;  /* [n_pes] load/store mapping, NULL if unreachable */
    uint64_t heap_cap;    /* reserved bytes per PE                           */
    uint64_t slot_bytes;  /* sync area per team slot (symm__slot_bytes_for)  */
    uint64_t sys_bytes;   /* system area: SYMM__MAX_TEAMS * slot_bytes        */
    uint64_t heap_mapped; /* backed bytes per PE (same on every PE)          */
    symm__alloc alloc;
    symm__buf *bufs;      /* live buffers                                    */
    uint64_t alloc_seq;   /* collective allocation counter (mismatch check)  */

    /* teams */
    symm__team *predef[4];             /* SYMM_TEAM_WORLD..SAME_LOCAL_PE */
    uint8_t team_slot_used[SYMM__MAX_TEAMS];

    pthread_mutex_t lock;   /* heap, teams, bootstrap traffic              */
    atomic_int failed;      /* a peer died: every wait returns PEER_FAILED */
    atomic_int closing;     /* being finalized: lookups and waits leave     */

    /* the job watcher (bootstrap/watch.c): marks the context failed as
     * soon as news of a dead PE arrives, for waits no host call polls */
    symm__boot_watch *watch;
    bool watched;         /* it ran from init on: calls need not poll     */

    /* asynchronous failures (async.c): the first one since the last clear */
    pthread_mutex_t async_lock;
    symm_status async_status;
    uint64_t async_count;
    char async_msg[512];

    char backend_why[512]; /* AUTO: what the registry skipped and why (log) */

    /* The GPU proxy (runtime/proxy, docs/PROXY.md): NULL unless the job has
     * PEs of other hosts and a device backend (or SYMM_PROXY_FORCE=1). Set by
     * symm_init, stopped and freed by ctx_destroy before the transport and
     * the heap go. */
    struct symm__proxy *proxy;
};

/* Record a failure that happened after its call returned (async.c). Keeps the
 * first one until symm_ctx_async_error clears it; counts the rest. Any
 * thread; never fails. */
void symm__async_record(symm__ctx *ctx, symm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline uint64_t symm__team_sync_off(const struct symm__ctx *ctx, int32_t slot) {
    return (uint64_t)slot * ctx->slot_bytes;
}

/* Resolve handles, recording INVALID_HANDLE on failure. */
symm_status symm__ctx_get(symm_ctx h, symm__ctx **ctx);
symm_status symm__buf_get(symm_buf h, symm__buf **buf);
symm_status symm__team_get(symm_team h, symm__team **team); /* and holds it (handles.c) */
/* The team of a handle for queries (no hold, no message); NULL when stale. */
symm__team *symm__team_lookup(symm_team h);
/* Lock ctx->lock for a call that may wait on it: parks first (handles.c);
 * INVALID_HANDLE (lock not held) when the context is being finalized. */
symm_status symm__ctx_lock(const char *fn, symm__ctx *ctx);

/* Thread-level check for an entry point (FUNNELED: only the init thread). */
symm_status symm__thread_check(const symm__ctx *ctx);

/* Validate pe in [0, n_pes) and an element range of buf. */
symm_status symm__check_pe(const symm__ctx *ctx, int32_t pe);
/* The target of a one-sided call: check_pe, then check_failed. */
symm_status symm__check_target(symm__ctx *ctx, int32_t pe);
symm_status symm__check_range(const symm__buf *buf, uint64_t index, uint64_t nelems);

/* Entry checks shared by the blocking and the stream forms (rma.c, signal.c):
 * a buffer element range on pe (fills *buf and the heap byte offset *off;
 * local may be NULL only when nelems is 0), a raw symmetric address range,
 * and a put-with-signal's arguments (fills dst, sig and the signal AMO). */
symm_status symm__rma_target(const char *fn, symm_buf h, uint64_t index, uint64_t nelems,
                             int32_t pe, const void *local, symm__buf **buf, uint64_t *off);
symm_status symm__sym_offset(const char *fn, const symm__ctx *ctx, const void *sym, uint64_t n,
                             uint64_t *off);
symm_status symm__check_signal(const char *fn, const symm__buf *sig, uint64_t sig_index);
symm_status symm__signal_amo(const char *fn, uint32_t sig_op, uint32_t *amo);
symm_status symm__put_signal_check(const char *fn, symm_buf dst_h, uint64_t dst_index,
                                   const void *src, uint64_t nelems, symm_buf sig_h,
                                   uint64_t sig_index, uint32_t sig_op, int32_t pe,
                                   symm__buf **dst, symm__buf **sig, uint32_t *amo);

/* The stream a hook gets for a public stream argument: hooks read NULL as
 * "blocking", so the user's NULL (the legacy default stream) becomes
 * CU_STREAM_LEGACY. */
static inline void *symm__hook_stream(symm_stream_t stream) {
    return stream ? stream : (void *)(uintptr_t)1;
}

/* Spin-wait helper: poll until done(arg) is true. Checks peer failure every
 * ~millisecond and yields the CPU when spinning long. A wait that outlasts
 * its first spins parks (handles.c) and returns INVALID_HANDLE when its
 * context is finalized or an object its call holds is freed meanwhile. */
symm_status symm__wait(symm__ctx *ctx, bool (*done)(void *arg), void *arg);
/* The same, for a call that keeps using the object of closing flag keep
 * (a buffer) while it waits: INVALID_HANDLE when it is freed meanwhile. */
symm_status symm__wait_keep(symm__ctx *ctx, atomic_int *keep, bool (*done)(void *arg),
                            void *arg);
/* Peer failure check (cheap, non-blocking: see symm__boot_check). Every
 * call that needs another PE makes it first, so a dead PE turns into
 * SYMM_ERR_PEER_FAILED within SYMM_PEER_TIMEOUT_MS on every path. */
symm_status symm__check_failed(symm__ctx *ctx);
/* Record that the job lost a PE (idempotent; tells the backend once). */
void symm__mark_failed(symm__ctx *ctx);
/* check.c: start the job watcher (bootstrap/watch.c) when the backend has GPU-side waits
 * (ops->peer_failed) and the job more than one PE; a failure to start is
 * logged and leaves those waits to their timeouts. Stop joins it (safe when
 * never started). */
void symm__watch_start(symm__ctx *ctx);
void symm__watch_stop(symm__ctx *ctx);

/* wait.c: INVALID_ARG unless cmp is a SYMM_CMP_* code. */
symm_status symm__check_cmp(const char *fn, uint32_t cmp);
/* wait.c: block until element index of this PE's copy of buf (an integer
 * dtype) compares true against value (widened: sign-extended for signed
 * dtypes); *seen (optional) receives the value that satisfied it. PEER_FAILED
 * when a peer dies. */
symm_status symm__wait_elem(symm__buf *buf, uint64_t index, uint32_t cmp, uint64_t value,
                            uint64_t *seen);

/* Team barrier / sync (sync.c), used by the collectives and alloc. */
symm_status symm__team_sync(symm__team *team);

/* api/init_log.c: the INFO block of symm_init (sets the PE of log lines
 * first). */
void symm__log_init_summary(symm__ctx *ctx);
/* The ABI the loader offered at negotiation (0.0: not yet); defined in
 * api/init_log.c, set by dispatch.c. */
extern uint32_t symm__loader_abi_major, symm__loader_abi_minor;

/* ------------------------------------------------------------------------ */
/* Routing (route.c) and transports (transport.c)                            */
/* ------------------------------------------------------------------------ */
/* Every one-sided operation of the core goes through these: a PE of this
 * host is reached through the backend (load/store), any other through the
 * transport plugin. quiet/fence cover both. */

symm_status symm__put(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                      uint32_t flags);
symm_status symm__get(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                      uint32_t flags);
/* Atomic updates go through the transport for remote PEs, and for every PE
 * when ctx->amo_tp; a plain SYMM_AMO_FETCH of a PE of this host stays a load. */
symm_status symm__atomic(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                         const void *value, const void *compare, void *fetched);
/* Put n bytes then update the signal word (amo: SYMM_AMO_SET or ADD); a PE
 * that sees the signal sees the data. */
symm_status symm__put_signal(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                             uint64_t n, uint64_t sig_off, uint64_t value, uint32_t amo,
                             uint32_t flags);
symm_status symm__quiet(symm__ctx *ctx);
symm_status symm__fence(symm__ctx *ctx);
/* Copy n bytes between local memories, one side or both the device's: the
 * backend's local_copy, on the proxy's thread the transport's service. */
symm_status symm__local_copy(symm__ctx *ctx, void *dst, const void *src, uint64_t n);
/* Drive the transport's completions (wait loops). Cheap; any thread. */
void symm__progress(symm__ctx *ctx);
/* The team as GPU code sees it (core/teams.c; NOT_SUPPORTED when it is not
 * strided). */
symm_status symm__device_team_of(const struct symm__team *t, symm_device_team *d);
/* Does the team hold a PE of another host? */
bool symm__team_has_remote(const struct symm__team *team);

/* Compute ctx->remote/n_remote/n_hosts from the bootstrap's host ids. */
symm_status symm__routes_init(symm__ctx *ctx);
/* Collective: pick (SYMM_TRANSPORT; auto: the first usable of names, the
 * transport registry's order), load and open the transport when the job
 * spans several hosts; nothing otherwise. */
symm_status symm__tp_open(symm__ctx *ctx, const char *const *names, size_t n_names);
/* The transport caps the core relies on (ATOMIC_GLOBAL only where the
 * backend's own atomics are coherent with a NIC's). */
uint32_t symm__tp_job_caps(const symm__ctx *ctx, uint32_t caps);
/* Collective: make [off, off + len) of this PE's heap (local address base)
 * reachable by the transport. No-op without one. */
symm_status symm__tp_mem_add(symm__ctx *ctx, void *base, uint64_t off, uint64_t len);
void symm__tp_mem_remove(symm__ctx *ctx, uint64_t off, uint64_t len);
/* The transport's GPU-memory service's copy (transport.h mem_copy): the
 * backend's (tp_gpu_open) when it has one, else local_copy or memmove. */
symm_status symm__tp_mem_copy(symm__ctx *ctx, void *dst, const void *src, uint64_t n);
/* Tell the transport that the job lost a PE (any thread). */
void symm__tp_peer_failed(symm__ctx *ctx);
/* Local: close the transport and unload the plugin. NULL tp accepted. */
void symm__tp_close(symm__ctx *ctx);

/* Local address of this PE's heap byte offset. */
static inline void *symm__local(const symm__ctx *ctx, uint64_t off) {
    return ctx->heap_base + off;
}

#endif /* SYMM_RUNTIME_INTERNAL_H */

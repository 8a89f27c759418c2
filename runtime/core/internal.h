/*
 * Internal contract of the runtime: the context, handles, the backend ops table
 * and the bootstrap interface. Everything here is hidden (-fvisibility=hidden);
 * internal names are symm__*.
 *
 * Dependency direction: core -> (backend ops table, bootstrap). A backend never
 * calls another backend; the core reaches a backend only through its ops.
 */
#ifndef SYMM_RUNTIME_INTERNAL_H
#define SYMM_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>

#include "loader/symm_dispatch.h"
#include "log.h"

/* ------------------------------------------------------------------------ */
/* Errors (error.c)                                                          */
/* ------------------------------------------------------------------------ */

/* Record status + formatted message in the thread-local last error; returns
 * status so callers can `return symm__err(...)`. */
symm_status symm__err(symm_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Like symm__err, appending ": strerror(errno_value)". */
symm_status symm__err_errno(symm_status status, int errno_value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Re-record the last error as "fn: <message>"; returns status. */
symm_status symm__err_prefix(const char *fn, symm_status status);
/* Clear the thread-local message (called at the start of each public entry). */
void symm__err_clear(void);
const char *symm__last_error(void);

/* One-line argument check: `SYMM_CHECK(cond, SYMM_ERR_INVALID_ARG, "fmt", ...)` */
#define SYMM_CHECK(cond, status, ...)                                          \
    do {                                                                       \
        if (!(cond)) return symm__err((status), __VA_ARGS__);                  \
    } while (0)
#define SYMM_TRY(expr)                                                         \
    do {                                                                       \
        symm_status symm__st_ = (expr);                                        \
        if (symm__st_ != SYMM_SUCCESS) return symm__st_;                       \
    } while (0)
/* SYMM_TRY that prefixes the failure's message with fn. */
#define SYMM_TRY_IN(fn, expr)                                                  \
    do {                                                                       \
        symm_status symm__st_ = (expr);                                        \
        if (symm__st_ != SYMM_SUCCESS) return symm__err_prefix((fn), symm__st_); \
    } while (0)

/* ------------------------------------------------------------------------ */
/* Configuration (config.c): environment, parsed once per symm_init          */
/* ------------------------------------------------------------------------ */

#define SYMM__DEFAULT_HEAP_CAP (16ull << 30)  /* per PE, virtual reservation */
#define SYMM__MAX_HEAP_BYTES (1ull << 47)   /* 128T: above any user address space we run on */
#define SYMM__DEFAULT_HEAP_CHUNK (64ull << 20)
#define SYMM__DEFAULT_TIMEOUT_MS 60000u
/* A call that needs a dead PE fails at most this long after the job's
 * rendezvous server saw it go (SYMM_PEER_TIMEOUT_MS). */
#define SYMM__DEFAULT_PEER_TIMEOUT_MS 100u
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
void *symm__handle_get(uint32_t kind, uint64_t handle); /* NULL when invalid      */
void symm__handle_release(uint32_t kind, uint64_t handle);

/* ------------------------------------------------------------------------ */
/* Bootstrap (bootstrap.c, wire.c)                                           */
/* ------------------------------------------------------------------------ */

typedef struct symm__boot symm__boot;

typedef struct symm__boot_info {
    int32_t rank, n_pes;
    int32_t local_rank, local_n_pes;
    int32_t *local_index;  /* [n_pes]: index among PEs of my host, or -1       */
    uint64_t *host_id;     /* [n_pes]: same value <=> same host                 */
    int32_t *pid;          /* [n_pes]                                           */
} symm__boot_info;

/* Form the job from cfg (symmrun, env, uid or single). On success *info is
 * filled (arrays owned by the boot object). */
symm_status symm__boot_open(const symm__config *cfg, symm__boot **boot, symm__boot_info *info);
/* all receives n_pes * len bytes, rank-ordered. Collective over the job. */
symm_status symm__boot_allgather(symm__boot *b, const void *mine, void *all, size_t len);
symm_status symm__boot_barrier(symm__boot *b);
/* Share an fd with every PE of this host: fds[local_index] receives each local
 * peer's descriptor (fds[my local index] = dup of mine). Collective over the
 * job (PEs without local peers still call). Caller closes the received fds. */
symm_status symm__boot_share_fd(symm__boot *b, int fd, int *fds);
/* Non-blocking: SYMM_ERR_PEER_FAILED when the job lost a PE, else success.
 * Polls the server at most once per poll interval (a quarter of
 * SYMM_PEER_TIMEOUT_MS, at most once per coarse-clock tick); between polls it
 * costs one coarse clock read (vDSO, no system call). */
symm_status symm__boot_check(symm__boot *b);
/* The same check at once, without the poll interval (the job watcher). */
symm_status symm__boot_check_now(symm__boot *b);
/* The socket that carries news of the job (a dead PE) to this PE: readable
 * when there is some; -1 for a single PE. Closed by symm__boot_close. */
int symm__boot_news_fd(const symm__boot *b);
/* Leave the job (no collective) and free everything. NULL accepted. */
void symm__boot_close(symm__boot *b);
/* Env bootstrap's reading of the environment (rank, size, address, secret
 * checks) without joining: for the fuzz harness and tests. */
symm_status symm__boot_env_probe(int32_t *rank, int32_t *n_pes, char *addr, size_t addr_cap);

/* ------------------------------------------------------------------------ */
/* Backends (runtime/backends/<name>)                                        */
/* ------------------------------------------------------------------------ */

typedef struct symm__ctx symm__ctx;
struct symm__team;
struct symm__coll;

/* Flags for put/get: */
#define SYMM__NBI 1u /* may complete at the next quiet */

typedef struct symm__backend_ops {
    const char *name;
    uint32_t id; /* SYMM_BACKEND_* */
    /* Reserve the heap (ctx->heap_cap bytes of address space for this PE and
     * each reachable peer), set ctx->heap_base / peer_base[]. Collective. */
    symm_status (*heap_init)(symm__ctx *ctx);
    /* Back [0, new_mapped) of every PE's heap (new_mapped > ctx->heap_mapped,
     * a multiple of the chunk). Collective; all PEs pass the same size. */
    symm_status (*heap_grow)(symm__ctx *ctx, uint64_t new_mapped);
    /* Release everything heap_init/heap_grow made. Local, never fails. */
    void (*heap_fini)(symm__ctx *ctx);
    /* Data movement between local memory and pe's heap at byte offset off. */
    symm_status (*put)(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags);
    symm_status (*get)(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags);
    /* Atomic op on a 4/8-byte element at pe's offset off (dtype of element). */
    symm_status (*atomic)(symm__ctx *ctx, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched);
    symm_status (*quiet)(symm__ctx *ctx);
    symm_status (*fence)(symm__ctx *ctx);
    /* Zero [off, off + n) of this PE's heap. */
    symm_status (*memset0)(symm__ctx *ctx, uint64_t off, uint64_t n);
    void (*fini)(symm__ctx *ctx); /* after heap_fini; NULL allowed */

    /* ---- Optional hooks (NULL: the core's fallback is used) ----
     * In every hook, stream == NULL means "blocking: complete before
     * returning". The public *_on_stream entries pass a user's NULL stream
     * (the legacy default stream) as (void *)1, i.e. CU_STREAM_LEGACY.
     * symm__team_sync (blocking barriers) calls sync_stream(ctx, team, NULL)
     * when the hook exists. */
    /* Collective data movement for one collective call. stream NULL means
     * blocking. NULL hook: the core's generic algorithm over put/get + sync
     * (blocking) or NOT_SUPPORTED (stream forms). */
    symm_status (*coll)(symm__ctx *ctx, const struct symm__coll *c, void *stream);
    /* Before a blocking collective that the coll hook runs: every team PE
     * gives SYMM__AGREE_WORDS words (its call and its own argument verdict)
     * and gets every PE's, in team order, into all[n * SYMM__AGREE_WORDS],
     * in one round among the team's PEs (coll.c judges them as the host
     * exchange's records, so a PE's bad arguments reach its peers and no PE
     * runs the collective alone). NULL: the hook's blocking forms check
     * arguments locally only. */
    symm_status (*coll_agree)(symm__ctx *ctx, struct symm__team *team, const uint64_t *mine,
                              uint64_t *all);
    /* Stream-ordered forms. NULL hook: the blocking form runs at call time. */
    symm_status (*put_stream)(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src,
                              uint64_t n, void *stream);
    symm_status (*get_stream)(symm__ctx *ctx, void *dst, int32_t pe, uint64_t off, uint64_t n,
                              void *stream);
    symm_status (*signal_stream)(symm__ctx *ctx, int32_t pe, uint64_t off, uint64_t value,
                                 uint32_t sig_op, void *stream);
    symm_status (*wait_stream)(symm__ctx *ctx, uint64_t off, uint32_t cmp, uint64_t value,
                               void *stream);
    symm_status (*quiet_stream)(symm__ctx *ctx, void *stream);
    symm_status (*sync_stream)(symm__ctx *ctx, struct symm__team *team, void *stream);
    /* Map caller-owned memory at [off, off + bytes) of every PE's heap
     * (collective) / undo it (local). NULL: registration not supported. */
    symm_status (*register_mem)(symm__ctx *ctx, void *ptr, uint64_t bytes, uint64_t off);
    void (*unregister_mem)(symm__ctx *ctx, uint64_t off, uint64_t bytes);
    /* Fill a device context. NULL: NOT_SUPPORTED. */
    symm_status (*device_ctx)(symm__ctx *ctx, symm_device_ctx *out);
    /* The context just learned that the job lost a PE (called once, from
     * symm__mark_failed): end GPU-side waits the backend launched. May be
     * NULL. Any thread. */
    void (*peer_failed)(symm__ctx *ctx);
    /* Look for failures that happened after their call returned (GPU-side
     * waits that gave up) and record them with symm__async_record. Local,
     * cheap, never blocks. NULL: the backend has none. */
    void (*async_poll)(symm__ctx *ctx);
    /* Largest team the coll hook serves (0: any). Larger teams run the core's
     * generic algorithm (blocking forms); their stream forms are NOT_SUPPORTED. */
    int32_t coll_max_pes;
    /* One line for the init log (device, versions, choices made). May be
     * NULL. Called once after a successful init, only when INFO logs. */
    void (*describe)(symm__ctx *ctx, char *buf, size_t cap);

    /* ---- For transports (NULL: the backend's memory is host memory) ----
     * A dma-buf file descriptor for [off, off + len) of this PE's heap, for
     * the transport's mem_add (the core closes it afterwards); -1 when the
     * device or driver cannot export one (the reason goes to the log). */
    int (*dmabuf_fd)(symm__ctx *ctx, uint64_t off, uint64_t len);
    /* Is p (a caller's local buffer) memory the CPU cannot read or write? */
    bool (*is_device_mem)(symm__ctx *ctx, const void *p);
    /* Synchronous copy of n bytes between any local memories (host or
     * device), for staging device buffers through host memory. */
    symm_status (*local_copy)(symm__ctx *ctx, void *dst, const void *src, uint64_t n);
} symm__backend_ops;

/* One collective call, validated by the core (offsets are heap byte offsets). */
#define SYMM__COLL_BROADCAST 1
#define SYMM__COLL_FCOLLECT 2
#define SYMM__COLL_COLLECT 3
#define SYMM__COLL_ALLTOALL 4
#define SYMM__COLL_REDUCE 5
#define SYMM__COLL_REDUCESCATTER 6
#define SYMM__COLL_ALLTOALLV 7

typedef struct symm__coll {
    uint32_t kind;          /* SYMM__COLL_*                                 */
    struct symm__team *team;
    uint32_t dtype, elem_size;
    uint32_t op;            /* SYMM_OP_* (reductions)                       */
    int32_t root;           /* team PE (broadcast)                          */
    uint64_t dst_off, src_off;
    uint64_t nelems;        /* per PE (per block for alltoall/reducescatter)*/
    const uint64_t *counts; /* collect: [team n_pes] elements per PE        */
    /* alltoallv: element capacities of dst and src (src's is the same on
     * every PE), heap byte offsets of the send counts (n) and of the receive
     * counts and offsets (2n), uint64 each */
    uint64_t dst_cap, src_cap, scount_off, rcount_off;
} symm__coll;

extern const symm__backend_ops symm__host_ops;
#ifdef SYMM_HAVE_CUDA
extern const symm__backend_ops symm__cuda_ops;
/* SYMM_SUCCESS when a GPU is usable (for AUTO); a status + message otherwise. */
symm_status symm__cuda_probe(void);
#endif

/* Registry (registry.c): the only file that names backends and transports. */
typedef struct symm__backend_entry {
    uint32_t id; /* SYMM_BACKEND_* */
    const char *name;
    symm_status (*probe)(void); /* SUCCESS when usable; else status + message */
    const symm__backend_ops *ops;
} symm__backend_entry;
/* The backend for cfg.backend (AUTO: the first usable one). why (why_cap
 * bytes) receives, for AUTO, the backends skipped and each probe's reason. */
symm_status symm__backend_pick(uint32_t want, const symm__backend_ops **out, char *why,
                               size_t why_cap);
/* Transport plugin names in SYMM_TRANSPORT=auto order. */
size_t symm__transport_names(const char *const **names);

/* ------------------------------------------------------------------------ */
/* Allocator (heap.c): deterministic first fit over [start, cap)             */
/* ------------------------------------------------------------------------ */

typedef struct symm__range {
    uint64_t off, len;
} symm__range;

typedef struct symm__alloc {
    symm__range *free_list; /* sorted by off, coalesced */
    size_t n_free, cap_free;
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

    /* the job watcher (watch.c): a thread that marks the context failed as
     * soon as news of a dead PE arrives, for waits no host call polls */
    pthread_t watch_thread;
    int watch_stop_fd;      /* eventfd: written to stop the watcher; -1    */
    bool watching;

    /* asynchronous failures (async.c): the first one since the last clear */
    pthread_mutex_t async_lock;
    symm_status async_status;
    uint64_t async_count;
    char async_msg[512];

    char backend_why[512]; /* AUTO: what the registry skipped and why (log) */
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
symm_status symm__team_get(symm_team h, symm__team **team);

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
 * ~millisecond and yields the CPU when spinning long. */
symm_status symm__wait(symm__ctx *ctx, bool (*done)(void *arg), void *arg);
/* Peer failure check (cheap, non-blocking: see symm__boot_check). Every
 * call that needs another PE makes it first, so a dead PE turns into
 * SYMM_ERR_PEER_FAILED within SYMM_PEER_TIMEOUT_MS on every path. */
symm_status symm__check_failed(symm__ctx *ctx);
/* Record that the job lost a PE (idempotent; tells the backend once). */
void symm__mark_failed(symm__ctx *ctx);
/* watch.c: start the job watcher when the backend has GPU-side waits
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

/* log.c: the INFO block of symm_init (sets the PE of log lines first). */
void symm__log_init_summary(symm__ctx *ctx);
/* The ABI the loader offered at negotiation (0.0: not yet); defined in
 * log.c, set by dispatch.c. */
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
/* Drive the transport's completions (wait loops). Cheap; any thread. */
void symm__progress(symm__ctx *ctx);
/* NOT_SUPPORTED (with fn in the message) when pe is on another host: the
 * stream-/kernel-initiated forms that the backend runs on a GPU stream. */
symm_status symm__stream_route(const char *fn, symm__ctx *ctx, int32_t pe);
/* The team as GPU code sees it (stream.c; NOT_SUPPORTED when it is not
 * strided). */
symm_status symm__device_team_of(const struct symm__team *t, symm_device_team *d);
/* Does the team hold a PE of another host? */
bool symm__team_has_remote(const struct symm__team *team);

/* Compute ctx->remote/n_remote/n_hosts from the bootstrap's host ids. */
symm_status symm__routes_init(symm__ctx *ctx);
/* Collective: pick (SYMM_TRANSPORT), load and open the transport when the
 * job spans several hosts; nothing otherwise. */
symm_status symm__tp_open(symm__ctx *ctx);
/* The transport caps the core relies on (a device backend never has ATOMIC_GLOBAL). */
uint32_t symm__tp_job_caps(const symm__ctx *ctx, uint32_t caps);
/* Collective: make [off, off + len) of this PE's heap (local address base)
 * reachable by the transport. No-op without one. */
symm_status symm__tp_mem_add(symm__ctx *ctx, void *base, uint64_t off, uint64_t len);
void symm__tp_mem_remove(symm__ctx *ctx, uint64_t off, uint64_t len);
/* Tell the transport that the job lost a PE (any thread). */
void symm__tp_peer_failed(symm__ctx *ctx);
/* Local: close the transport and unload the plugin. NULL tp accepted. */
void symm__tp_close(symm__ctx *ctx);

/* Local address of this PE's heap byte offset. */
static inline void *symm__local(const symm__ctx *ctx, uint64_t off) {
    return ctx->heap_base + off;
}

#endif /* SYMM_RUNTIME_INTERNAL_H */

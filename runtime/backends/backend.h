/*
 * The contract between the runtime's core and a memory backend (host, cuda):
 * one ops table that describes the backend (name, what it drives, how it
 * reaches peers) and carries its entries. The core reaches a backend only
 * through the table its context holds; the registry (registry.c, beside this
 * header) lists the tables, and only the top layer (runtime/api/init.c) asks
 * it. Backends may use the core's services (runtime/core/internal.h: the
 * context, teams, errors, logs) but never another backend.
 *
 * Conventions: every entry gets the context; offsets are symmetric heap byte
 * offsets (the same on every PE); "collective" entries are called by every
 * PE in the same order; a fallible entry returns a status and has recorded
 * a message (symm__err) first.
 */
#ifndef SYMM_BACKEND_H
#define SYMM_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>

typedef struct symm__ctx symm__ctx;
struct symm__team;
struct symm__tp_gpu;
struct symm__coll;
struct symm_ring;
struct symm_ring_req;

/* Flags for put/get: */
#define SYMM__NBI 1u /* may complete at the next quiet */

/* symm__backend_ops.reach */
#define SYMM__REACH_HOST 0u
#define SYMM__REACH_PEER_BASE 1u

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

/* A stream form's wake word (proxy.h symm__proxy_stream_wake): the ring's
 * notify cells and the 32-bit word the stream waits on, in the device's
 * view; cell is what goes into the ticket's notify cell. */
typedef struct symm__px_wake {
    uint64_t *notify;
    uint32_t *word;
    uint64_t cell;
} symm__px_wake;

typedef struct symm__backend_ops {
    /* ---- What the backend is: the core asks these, never which backend
     * it runs ---- */
    const char *name;       /* SYMM_BACKEND=<name>, logs                      */
    uint32_t id;            /* SYMM_BACKEND_* (what symm_ctx_query reports)   */
    /* Usable here? SUCCESS, or a status + message (for AUTO the reason is
     * logged and the next backend tried). NULL: always usable. */
    symm_status (*probe)(void);
    /* The PE drives a device (cfg.device is its ordinal; -1 is reported
     * otherwise) and the heap is its memory (transports register it as
     * SYMM_TP_MEM_CUDA, with a dmabuf_fd when there is one). */
    bool has_device;
    /* A NIC's atomics on the heap are atomic with respect to this backend's
     * own atomic updates (CPU atomics on host memory). Without it a
     * transport's SYMM_TP_CAP_ATOMIC_GLOBAL does not hold for this backend. */
    bool nic_coherent_atomics;
    /* How reachability is known: SYMM__REACH_HOST, every PE of this host is
     * mapped; SYMM__REACH_PEER_BASE, peer_base[] says which (the SHARED team
     * is agreed from it). */
    uint32_t reach;
    /* Alignment of registered memory (register_mem), e.g. the device's
     * mapping granularity. 0 when register_mem is NULL. */
    uint64_t reg_align;

    /* ---- Heap and data movement ---- */
    /* Reserve the heap (ctx->heap_cap bytes of address space for this PE and
     * each reachable peer), set ctx->heap_base / peer_base[]. Collective. */
    symm_status (*heap_init)(symm__ctx *ctx);
    /* Back [0, new_mapped) of every PE's heap (new_mapped > ctx->heap_mapped,
     * a multiple of the chunk). Collective; all PEs pass the same size. The
     * core owns ctx->heap_mapped (it registers [old, new) with the transport,
     * then moves it): a backend reads it, never writes it. */
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
    /* The GPU-memory service for transports that stage (symm_tp_core's
     * mem_kind / mem_copy / mem_atomic, runtime/transports/transport.h):
     * fill *out, or leave out->copy NULL when the heap and every local
     * buffer are host memory. Called once per transport, after heap_init
     * and before the first heap range is registered (no user kernel runs
     * yet: the service may allocate pinned memory then); out->close is
     * called before heap_fini. NULL: host memory only. */
    symm_status (*tp_gpu_open)(symm__ctx *ctx, struct symm__tp_gpu *out);

    /* ---- For the GPU proxy (runtime/proxy; docs/PROXY.md). NULL: host memory
     * and no stream forms to PEs of other hosts (the blocking form runs) ----
     * Zeroed host memory that the device can read and write (pinned, mapped)
     * and its device address; zeroed device memory. NULL on failure (message
     * recorded). Any thread. */
    void *(*pinned_alloc)(symm__ctx *ctx, size_t bytes);
    void (*pinned_free)(symm__ctx *ctx, void *p, size_t bytes);
    void *(*pinned_device)(symm__ctx *ctx, void *p);
    void *(*device_alloc)(symm__ctx *ctx, size_t bytes);
    void (*device_free)(symm__ctx *ctx, void *p, size_t bytes);
    /* Enqueue on stream one thread that runs a request through the proxy's
     * ring r (include/symm/symm_device_ring.h): claim a ticket, write the
     * request (with n_inline > 0, its first n_inline bytes of inline_bytes go
     * to the ticket's scratch cell first and the request's local address
     * becomes that cell), and have the stream wait for it to finish, so it
     * goes on only after the request completed remotely. With wake (not
     * NULL) the thread names wake->word in the ticket's notify cell and ends;
     * the stream itself waits for the word to become 1 (no SM held while
     * the proxy works) and resets it. Without, the thread waits. Stream-
     * ordered and capturable. */
    symm_status (*ring_stream)(symm__ctx *ctx, const struct symm_ring *r,
                               const struct symm_ring_req *q, uint64_t inline_bytes,
                               uint32_t n_inline, const symm__px_wake *wake, void *stream);
    /* Whether ring_stream can take a wake word on this stream now (the
     * stream is not being captured). NULL: never. */
    bool (*ring_stream_wake)(symm__ctx *ctx, void *stream);
    /* Whether stream is being captured into a graph now. NULL: never. */
    bool (*stream_capturing)(symm__ctx *ctx, void *stream);
} symm__backend_ops;

/* A backend's GPU-memory service for transports (tp_gpu_open). Every entry
 * may be called from any thread, concurrently; each serialises what it must.
 * Addresses are local: this PE's heap, a local buffer, or a heap address as
 * view gave it to the transport. */
typedef struct symm__tp_gpu {
    void *state;
    bool heap_is_gpu; /* the heap is GPU memory (registered SYMM_TP_MEM_CUDA) */
    /* Is p, a local buffer outside the heap, GPU memory? NULL: never. */
    bool (*is_gpu)(void *state, const void *p);
    /* n bytes between any two local memories, complete on return. */
    symm_status (*copy)(void *state, void *dst, const void *src, uint64_t n);
    /* SYMM_AMO_* on a 4/8-byte word, atomic with the device's atomics;
     * prior value (raw bits) in *fetched (NULL allowed). */
    symm_status (*atomic)(void *state, void *addr, uint32_t dtype, uint32_t op, uint64_t value,
                          uint64_t compare, uint64_t *fetched);
    /* The address a transport is given for heap address p (mem_add's base).
     * NULL: p itself. */
    void *(*view)(void *state, void *p);
    void (*close)(void *state); /* NULL allowed */
} symm__tp_gpu;

/* ---- The registry (registry.c) ---- */
/* The backend for want (SYMM_BACKEND_*; AUTO: the first usable one, in the
 * registry's order). why (why_cap bytes) receives, for AUTO, the backends
 * skipped and each probe's reason. */
symm_status symm__backend_pick(uint32_t want, const symm__backend_ops **out, char *why,
                               size_t why_cap);

#endif /* SYMM_BACKEND_H */

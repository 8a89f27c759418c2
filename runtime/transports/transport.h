/*
 * The contract between the runtime's core and a transport plugin.
 *
 * A transport carries one-sided operations to PEs that the backend cannot
 * reach by load/store (other hosts). Each transport is a shared object
 * (libsymm_transport_<name>.so) that the runtime opens with dlopen, so the
 * runtime loads on hosts without the transport's own library (libibverbs,
 * libfabric). The plugin exports one symbol:
 *
 *     const symm_tp_ops *symm_transport_plugin(uint32_t core_iface);
 *
 * The core passes the interface version it speaks (SYMM_TP_IFACE); the
 * plugin returns its ops table (ops->iface == the version it implements, at
 * most core_iface) or NULL when it cannot serve that core. Tables only ever
 * grow at the end: ops->size says how much of this struct the plugin fills,
 * and an entry the plugin does not fill is treated as NULL.
 *
 * This header is internal to the project (the core and the plugins in
 * runtime/transports/ are built together); it is not part of the public ABI.
 * It includes nothing of the core but <symm/symm.h> (status, SYMM_AMO_*,
 * SYMM_DTYPE_* and SYMM_SIGNAL_* constants): plugins reach the core only through the
 * symm_tp_core table below (bootstrap collectives, errors, logging, peer
 * failure, handshake proofs), never through core symbols (they are hidden). They may use the
 * header-only runtime/core/amo_cpu.h (CPU atomics on a heap word).
 *
 * Conventions
 *  - Every fallible entry returns a symm status code (int32_t, 0 = success)
 *    and, on failure, has called core->set_error with a message first.
 *  - Offsets are symmetric heap byte offsets (the same on every PE);
 *    "local" pointers are the caller's own memory (any kind of host memory,
 *    or GPU memory when mem_kind says so).
 *  - Collective entries (open, mem_add, mem_remove) are called by every PE
 *    of the job in the same order, including PEs without remote peers.
 *  - Thread safety: the core serialises calls on one transport instance
 *    (SYMM_THREAD_MULTIPLE contexts take a lock around them), except
 *    `progress` and `peer_failed`, which may come from any thread.
 *    One opening: while mem_add waits in core->allgather or core->barrier
 *    for the other PEs, the core lets other threads' calls in (a GPU
 *    proxy's puts and atomics must not wait for an application thread's
 *    collective: the peers it waits for may be waiting for that proxy). So
 *    mem_add keeps the plugin's state consistent across those calls and
 *    holds no lock of its own there that data operations take.
 */
#ifndef SYMM_TRANSPORT_H
#define SYMM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Interface version (bump when the tables change; append-only).
 *   1  the first tables
 *   2  symm_tp_core gains auth_mac and auth_verify (transport handshakes)
 *   3  symm_tp_core gains the GPU-memory service (mem_kind, mem_copy,
 *      mem_atomic) */
#define SYMM_TP_IFACE 3u
/* The symbol every plugin exports. */
#define SYMM_TP_ENTRY "symm_transport_plugin"

/* Memory kinds for mem_add / local buffers. */
#define SYMM_TP_MEM_HOST 0u /* CPU memory                                   */
#define SYMM_TP_MEM_CUDA 1u /* CUDA device memory (dmabuf_fd when available) */

/* Flags for put/get/atomic/put_signal. */
#define SYMM_TP_NBI 1u /* may complete at the next quiet (local buffers are
                          kept until then: the caller does not reuse them)    */

/* Capabilities (symm_tp_info.caps). */
/* NIC atomics are atomic with respect to CPU atomics on the same memory
 * (IBV_ATOMIC_GLOB). Without it the core routes every atomic and signal
 * update on the heap through the transport (self and same-host PEs
 * included) once the job has a remote PE, so CPU and NIC never race. */
#define SYMM_TP_CAP_ATOMIC_GLOBAL 1u
/* The transport reaches GPU memory: it registers it (dmabuf) or stages it
 * through the core's GPU-memory service (symm_tp_core.mem_copy). Without it
 * its mem_add refuses a SYMM_TP_MEM_CUDA range (the core reports the caps). */
#define SYMM_TP_CAP_GPU_MEM 2u
/* The transport can also reach PEs of this host (loopback): needed for the
 * "all atomics through the transport" rule above. */
#define SYMM_TP_CAP_LOOPBACK 4u

/* Services the core offers a transport instance. All function pointers are
 * non-NULL. `core` is opaque and passed back to each service. */
typedef struct symm_tp_core {
    uint32_t size; /* sizeof(symm_tp_core) as the core built it */
    uint32_t iface;
    void *core;

    int32_t my_pe, n_pes;
    const uint64_t *host_id; /* [n_pes]: equal <=> same host               */
    const uint8_t *remote;   /* [n_pes]: 1 = this transport must reach it;
                                0 = reached by the backend (load/store)     */
    int32_t device;          /* the PE's CUDA ordinal, -1 for host backend */
    uint32_t timeout_ms;      /* SYMM_TIMEOUT_MS: connection set-up bound    */
    uint32_t peer_timeout_ms; /* SYMM_PEER_TIMEOUT_MS: a lost peer becomes
                                 SYMM_ERR_PEER_FAILED within this bound      */

    /* Bootstrap collectives over the whole job (every PE calls them in the
     * same order). allgather: all receives n_pes * len bytes, PE-ordered. */
    int32_t (*allgather)(void *core, const void *mine, void *all, size_t len);
    int32_t (*barrier)(void *core);
    /* Non-blocking: SYMM_ERR_PEER_FAILED when the job has lost a PE (the
     * bootstrap's news), else 0. Cheap; call it in every wait loop. */
    int32_t (*check_failed)(void *core);
    /* Record status + message as the calling thread's last error; returns
     * status. */
    int32_t (*set_error)(void *core, int32_t status, const char *msg);
    /* Log a line (level: 0 warn, 1 info, 2 trace) in the core's format. */
    void (*log)(void *core, int32_t level, const char *msg);
    /* Configuration lookup: the core's view of the environment (getenv or
     * an override). NULL when unset. */
    const char *(*getenv)(void *core, const char *name);

    /* ---- from SYMM_TP_IFACE 2 (check size before use) ---- */
    /* Proofs for a transport's handshake, so that only PEs of this job talk
     * to each other and none can pass for another; the job key never leaves
     * the core. auth_mac: HMAC-SHA-256, under a key the core derives from
     * the job key for transports only, of (this PE's number as 4 bytes
     * little-endian, then msg); the core puts its own PE number in, so a
     * plugin can only ever sign as its own PE. Returns 0. auth_verify: 0
     * when mac is what PE pe's auth_mac gives for msg (compared in constant
     * time), else SYMM_ERR_BOOTSTRAP; it records no error (the caller says
     * what it refuses). A plugin makes msg unique per connection (both
     * sides' fresh nonces) and per role (a label), so a recorded proof never
     * passes again (runtime/transports/tcp/tcp_proto.h shows one). */
    int32_t (*auth_mac)(void *core, const void *msg, size_t len, uint8_t mac[32]);
    int32_t (*auth_verify)(void *core, int32_t pe, const void *msg, size_t len,
                           const uint8_t mac[32]);

    /* ---- from SYMM_TP_IFACE 3 (check size before use) ---- */
    /* The GPU-memory service, for transports that cannot register GPU
     * memory with their NIC (tcp; ofi where the provider has no FI_HMEM):
     * memory the CPU cannot touch is read and written only through it,
     * never with loads, stores, memcpy or send/recv on its address.
     *
     * Which memory: a range given to mem_add with mem_kind SYMM_TP_MEM_CUDA
     * (its base is an address for these services only), and a local buffer
     * (put's src, get's dst, a fetched word) for which mem_kind says so.
     *
     * mem_kind: SYMM_TP_MEM_HOST or SYMM_TP_MEM_CUDA for a local pointer
     *   (HOST for every pointer when the job's memory is host memory; cheap
     *   then, one driver query per call otherwise: ask once per operation).
     * mem_copy: n bytes between any two of host memory, a local GPU buffer
     *   and a registered GPU range, complete on return (the data is in GPU
     *   memory, visible to kernels, before it returns; reading GPU memory
     *   sees every earlier mem_copy and mem_atomic into it). Blocking, so a
     *   transport orders "data, then signal" by calling mem_copy first.
     * mem_atomic: SYMM_AMO_* op on a 4- or 8-byte element of SYMM_DTYPE_* at
     *   addr (aligned), atomic with the GPU's own atomics on that word
     *   (kernels', the backend's, other PEs' through load/store) and with
     *   every other mem_atomic; the prior value in *fetched (raw bits, low
     *   bytes; may be NULL). Signal updates are SYMM_AMO_SET / SYMM_AMO_ADD
     *   on SYMM_DTYPE_UINT64. On host memory it is a CPU atomic.
     * Any thread may call them, concurrently (the services serialise what
     * must be). They return 0 or a status (with the core's error set). A
     * core built without them (size too small) or a harness that leaves
     * them NULL offers host memory only. */
    uint32_t (*mem_kind)(void *core, const void *p);
    int32_t (*mem_copy)(void *core, void *dst, const void *src, uint64_t n);
    int32_t (*mem_atomic)(void *core, void *addr, uint32_t dtype, uint32_t op, uint64_t value,
                          uint64_t compare, uint64_t *fetched);
} symm_tp_core;

/* Does core offer the GPU-memory service (interface 3, every entry set)? */
static inline int symm_tp_core_has_gpu_mem(const symm_tp_core *core) {
    return core->size >= offsetof(symm_tp_core, mem_atomic) + sizeof core->mem_atomic &&
           core->iface >= 3 && core->mem_kind && core->mem_copy && core->mem_atomic;
}

/* What an instance tells the core after open. */
typedef struct symm_tp_info {
    uint32_t size;
    uint32_t caps;           /* SYMM_TP_CAP_*                              */
    uint64_t max_msg;        /* largest single put/get the plugin accepts;
                                the plugin splits larger ones itself, so
                                this is informational (0: unlimited)        */
    char device[64];         /* e.g. "rxe0:1 gid 1 (RoCE v2)"              */
} symm_tp_info;

typedef struct symm_tp_ops {
    uint32_t size;  /* sizeof the table the plugin filled                  */
    uint32_t iface; /* interface version it implements                     */
    const char *name;

    /* Can this transport run here? Local, no collectives, no side effects
     * that outlive the call. 0 when usable; otherwise a status (typically
     * SYMM_ERR_NOT_SUPPORTED or SYMM_ERR_NO_DEVICE) and `why` says what is
     * missing (library, device, port state). */
    int32_t (*probe)(const symm_tp_core *core, char *why, size_t why_len);

    /* Collective: set up an instance and connect to every remote PE (and,
     * with CAP_LOOPBACK, to the PE itself/same-host PEs when the core asks
     * for all-atomics routing through `loopback` = 1). *state receives the
     * instance; info is filled. On failure nothing is left behind. */
    int32_t (*open)(const symm_tp_core *core, uint32_t loopback, void **state,
                    symm_tp_info *info);

    /* Collective: make [heap_off, heap_off + len) of every PE's heap
     * reachable. `base` is this PE's local address of heap_off. Called for
     * each heap chunk as the heap grows and for registered buffers.
     * mem_kind: SYMM_TP_MEM_*; dmabuf_fd: a dma-buf of the range for GPU
     * memory (-1 when none; the plugin dups what it keeps). A plugin that
     * does not register GPU memory with its NIC reaches a SYMM_TP_MEM_CUDA
     * range through the core's mem_copy / mem_atomic only (symm_tp_core). */
    int32_t (*mem_add)(void *state, void *base, uint64_t heap_off, uint64_t len,
                       uint32_t mem_kind, int dmabuf_fd);
    /* Local: forget a range given to mem_add (registered buffer freed). */
    void (*mem_remove)(void *state, uint64_t heap_off, uint64_t len);

    /* One-sided data movement to/from PE pe's heap at byte offset off.
     * Blocking forms (no SYMM_TP_NBI) have completed remotely (put: the
     * data is visible at the target; get: the data is in dst) on return. */
    int32_t (*put)(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                   uint32_t flags);
    int32_t (*get)(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                   uint32_t flags);
    /* Atomic op (SYMM_AMO_*) on a 4- or 8-byte element of SYMM_DTYPE_* at
     * pe's offset off (aligned). value/compare may be NULL when the op takes
     * none; fetched (NULL allowed) receives the prior value for fetching
     * ops. Blocking unless SYMM_TP_NBI (then fetched is written by the next
     * quiet). The plugin builds the ops and widths the NIC lacks on the ones
     * it has (e.g. CMP_SWP loops). */
    int32_t (*atomic)(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                      const void *value, const void *compare, void *fetched, uint32_t flags);
    /* Put n bytes, then update the 64-bit signal at sig_off with sig_op
     * (SYMM_SIGNAL_SET/ADD) so that a PE that sees the new signal value
     * also sees the data. */
    int32_t (*put_signal)(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                          uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                          uint32_t flags);
    /* Ordering: fence orders this PE's earlier puts/atomics to each PE
     * before its later ones to that PE; quiet completes every outstanding
     * operation (nbi included) and writes every pending fetched value. */
    int32_t (*fence)(void *state);
    int32_t (*quiet)(void *state);
    /* Drive completions without blocking (may be NULL). Any thread. */
    void (*progress)(void *state);
    /* The core learned that the job lost a PE: end every wait the plugin
     * is in with SYMM_ERR_PEER_FAILED (may be NULL). Any thread. */
    void (*peer_failed)(void *state);
    /* Local: release everything (QPs, MRs, memory). Never fails. NULL ok. */
    void (*close)(void *state);
} symm_tp_ops;

typedef const symm_tp_ops *(*symm_tp_entry_fn)(uint32_t core_iface);

#ifdef __cplusplus
}
#endif
#endif /* SYMM_TRANSPORT_H */

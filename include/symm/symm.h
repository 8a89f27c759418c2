/*
 * symm — one-sided communication over a symmetric heap (host API).
 *
 * C99, compiles as C++. No CUDA header is needed: CUDA streams are passed as
 * symm_stream_t, an opaque pointer that is a CUstream / cudaStream_t.
 *
 * Conventions that hold for every function below (they are not repeated):
 *  - Fallible functions return symm_status: SYMM_SUCCESS (0) or a SYMM_ERR_*
 *    code. On failure a message is available from symm_last_error() on the same
 *    thread, and nothing has been changed (out-parameters are not written).
 *  - Out-parameters come last. Those documented as optional may be NULL.
 *  - Handles (symm_ctx, symm_team, symm_buf) are opaque. A stale, foreign or
 *    already-destroyed handle yields SYMM_ERR_INVALID_HANDLE, never a crash.
 *    Destroy/free functions accept NULL.
 *  - "Collective over T" means every PE of team T (or of the context for
 *    world-wide calls) must make the same call, in the same order, with
 *    matching arguments. Collectives on one team must not run concurrently.
 *  - Threads: the runtime is thread-safe at every level, and the default
 *    level is SYMM_THREAD_MULTIPLE: every function may be called from any
 *    thread at any time, except that collectives on one team (and team
 *    splits/destroys on one context) are serialised by the caller. Asking for
 *    SINGLE or SERIALIZED records the caller's promise and costs nothing;
 *    FUNNELED is enforced (calls from another thread get THREAD_LEVEL).
 *    Functions marked "any thread" ignore the thread level.
 *  - Pointers: unless a function says otherwise, it does not keep any pointer
 *    argument after it returns (the caller may free or reuse the memory at
 *    once). The exceptions, stated again at each function:
 *      _nbi RMA:      the local src (put) / dst (get) / fetched (atomic_nbi)
 *                     buffer is used until the next symm_quiet on the context
 *                     (or a barrier, which implies quiet);
 *      _on_stream:    src/dst (device or pinned memory) are used until the
 *                     stream reaches the operation; host scalars (value of
 *                     p_on_stream) are read at call time;
 *      buf_register:  ptr's memory is used until symm_buf_free of the buffer.
 *    Strings returned by the library (symm_status_string, symm_last_error,
 *    symm_loader_runtime_path) are owned by it; their lifetime is stated at
 *    each function.
 *  - No function aborts or exits the process.
 *  - Every prototype carries one contract line, which abi/gen_abi_json.py
 *    parses into abi/symm-abi.json (docs/ABI.md):
 *      Contract: <local | collective(ctx) | collective(team) | collective(buf)>;
 *        thread: <any | level>; errors: <none | codes without SYMM_ERR_>;
 *        keeps: <none | param until quiet|stream|buf_free, ...
 *                | return until process|next_call>.
 *    "collective(buf)": over the buffer's context. "thread: any": the call
 *    ignores the context's thread level; "level": FUNNELED is checked
 *    (THREAD_LEVEL). errors lists what the function itself can return; every
 *    entry the runtime answers can also get LIBRARY_NOT_FOUND or ABI_MISMATCH
 *    from the loader (NOT_SUPPORTED from an older runtime), and any fallible
 *    call INTERNAL. keeps names the pointer parameters used after return and
 *    until when; "return" is the lifetime of a returned string.
 *
 * ABI: symbols are versioned SYMM_1.0; see abi/ and docs/ABI.md.
 */
#ifndef SYMM_SYMM_H
#define SYMM_SYMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions                                                                  */
/* ------------------------------------------------------------------------ */

#define SYMM_VERSION_MAJOR 1
#define SYMM_VERSION_MINOR 3
#define SYMM_VERSION_PATCH 0
/* One integer that orders versions: major * 1000000 + minor * 1000 + patch. */
#define SYMM_VERSION_ENCODE(major, minor, patch) \
    ((uint32_t)(major) * 1000000u + (uint32_t)(minor) * 1000u + (uint32_t)(patch))
/* SYMM_VERSION_ENCODE(SYMM_VERSION_MAJOR, SYMM_VERSION_MINOR, SYMM_VERSION_PATCH),
 * spelled as a literal so binding generators (bindgen, cgo, translate-c) keep
 * it; tests/abi checks that the two agree. */
#define SYMM_VERSION 1003000u

/* Exported entry points. The runtime builds with SYMM_API defined empty: it
 * implements these functions hidden and exports only its negotiation entry. */
#ifndef SYMM_API
#if defined(__GNUC__)
#define SYMM_API __attribute__((visibility("default")))
#else
#define SYMM_API
#endif
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

typedef int32_t symm_status;

/* Every status code, once: X(name, value, description). The loader's names
 * (symm_status_string), abi/symm-abi.json and docs/ABI.md derive from this
 * table; the literal #defines below exist for binding generators and
 * tests/abi checks that they equal the table. Codes are never renumbered;
 * new ones are appended. */
#define SYMM_STATUS_TABLE(X)                                                                  \
    X(SYMM_SUCCESS, 0, "success")                                                             \
    X(SYMM_ERR_INVALID_ARG, 1, "an argument is out of its domain")                            \
    X(SYMM_ERR_INVALID_HANDLE, 2, "stale, foreign or NULL handle")                            \
    X(SYMM_ERR_OUT_OF_BOUNDS, 3, "element or byte range outside a buffer or the heap")        \
    X(SYMM_ERR_OUT_OF_MEMORY, 4, "heap cap reached or host memory exhausted")                 \
    X(SYMM_ERR_LIBRARY_NOT_FOUND, 5, "loader: no usable runtime was found")                   \
    X(SYMM_ERR_ABI_MISMATCH, 6, "loader: the runtime implements another ABI major")           \
    X(SYMM_ERR_NOT_SUPPORTED, 7, "entry or feature not available here")                       \
    X(SYMM_ERR_NO_DEVICE, 8, "a GPU backend was asked for and no GPU is usable")              \
    X(SYMM_ERR_BOOTSTRAP, 9, "could not form or talk to the job")                             \
    X(SYMM_ERR_PEER_FAILED, 10, "a peer PE died or left the job")                             \
    X(SYMM_ERR_TIMEOUT, 11, "a bounded wait expired")                                         \
    X(SYMM_ERR_MISMATCH, 12, "PEs disagree on a collective's arguments")                      \
    X(SYMM_ERR_TEAM_EXHAUSTED, 13, "no free team slot")                                       \
    X(SYMM_ERR_CUDA, 14, "the CUDA driver reported an error")                                 \
    X(SYMM_ERR_SYSTEM, 15, "an operating-system call failed (the message has errno)")         \
    X(SYMM_ERR_THREAD_LEVEL, 16, "the call violates the context's thread level")              \
    X(SYMM_ERR_INTERNAL, 17, "a bug in symm: please report it")                               \
    X(SYMM_ERR_INVALID_STATE, 18, "the call is not valid now (e.g. the runtime is loaded)")

#define SYMM_SUCCESS                 0
#define SYMM_ERR_INVALID_ARG         1
#define SYMM_ERR_INVALID_HANDLE      2
#define SYMM_ERR_OUT_OF_BOUNDS       3
#define SYMM_ERR_OUT_OF_MEMORY       4
#define SYMM_ERR_LIBRARY_NOT_FOUND   5
#define SYMM_ERR_ABI_MISMATCH        6
#define SYMM_ERR_NOT_SUPPORTED       7
#define SYMM_ERR_NO_DEVICE           8
#define SYMM_ERR_BOOTSTRAP           9
#define SYMM_ERR_PEER_FAILED        10
#define SYMM_ERR_TIMEOUT            11
#define SYMM_ERR_MISMATCH           12
#define SYMM_ERR_TEAM_EXHAUSTED     13
#define SYMM_ERR_CUDA               14
#define SYMM_ERR_SYSTEM             15
#define SYMM_ERR_THREAD_LEVEL       16
#define SYMM_ERR_INTERNAL           17
#define SYMM_ERR_INVALID_STATE      18
#define SYMM_STATUS_COUNT           19 /* number of codes (one past the last) */

/* Name of a status code ("SYMM_ERR_OUT_OF_BOUNDS"); unknown codes give
 * "SYMM_ERR_UNKNOWN". Any thread; answered by the loader without a runtime.
 * Contract: local; thread: any; errors: none; keeps: return until process. */
SYMM_API const char *symm_status_string(symm_status status);

/* Message describing the last failure on the calling thread ("" if none).
 * The pointer stays valid until the next symm call on this thread.
 * Any thread; answered even when no runtime could be loaded.
 * Contract: local; thread: any; errors: none; keeps: return until next_call. */
SYMM_API const char *symm_last_error(void);

/* ------------------------------------------------------------------------ */
/* The loader (answered by libsymm.so.1 itself, with or without a runtime)   */
/* ------------------------------------------------------------------------ */
/* The loader opens the runtime lazily, once, on the first call that needs it.
 * Search order: $SYMM_RUNTIME (when set and not empty: that path only), then
 * the path given to symm_loader_set_runtime (that path only), then the
 * loader's own directory, then the system search path (libsymm_runtime.so.1). */

/* Is symm usable here? Loads and negotiates with the runtime (once, lazily)
 * without initialising anything. SYMM_SUCCESS, SYMM_ERR_LIBRARY_NOT_FOUND (the
 * message lists every path tried) or SYMM_ERR_ABI_MISMATCH. Any thread.
 * Contract: local; thread: any; errors: LIBRARY_NOT_FOUND, ABI_MISMATCH; keeps: none. */
SYMM_API symm_status symm_loader_probe(void);

/* Use the runtime at path (a file name, not a directory) instead of searching
 * the loader's directory and the system path; NULL or "" restores the search.
 * $SYMM_RUNTIME, when set, still takes precedence, so a user can always
 * redirect a program. Valid only before the first load: once a load was
 * attempted (by any call that needs the runtime, or symm_loader_probe) it
 * returns SYMM_ERR_INVALID_STATE and changes nothing. path is copied (not
 * kept); INVALID_ARG when it does not fit PATH_MAX. Any thread.
 * Contract: local; thread: any; errors: INVALID_ARG, INVALID_STATE; keeps: none. */
SYMM_API symm_status symm_loader_set_runtime(const char *path);

/* Version of the loader (libsymm.so.1 or a binding's compiled-in copy), as
 * SYMM_VERSION_ENCODE(); compare with SYMM_VERSION to detect header/loader
 * skew. Never loads the runtime. Any thread.
 * Contract: local; thread: any; errors: INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_loader_get_version(uint32_t *loader_version);

/* Path of the runtime the loader opened, or "" when none is loaded (yet).
 * Never starts a load. The string is valid for the life of the process. Any
 * thread.
 * Contract: local; thread: any; errors: none; keeps: return until process. */
SYMM_API const char *symm_loader_runtime_path(void);

/* Version of the loaded runtime, as SYMM_VERSION_ENCODE(). Any thread.
 * Contract: local; thread: any; errors: INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_get_version(uint32_t *runtime_version);

/* ------------------------------------------------------------------------ */
/* Handles and constants                                                     */
/* ------------------------------------------------------------------------ */

typedef struct symm_ctx_s *symm_ctx;   /* one job membership + heap        */
typedef struct symm_team_s *symm_team; /* an ordered subset of a ctx's PEs */
typedef struct symm_buf_s *symm_buf;   /* a typed symmetric allocation     */
typedef void *symm_stream_t;           /* a CUstream / cudaStream_t        */

/* Backends (symm_init_attr.backend, symm_ctx_info.backend). */
#define SYMM_BACKEND_AUTO 0 /* CUDA when a usable GPU is present, else host */
#define SYMM_BACKEND_HOST 1 /* memfd shared memory, CPU loads/stores        */
#define SYMM_BACKEND_CUDA 2 /* GPU memory through the CUDA driver API       */

/* Bootstrap modes (symm_init_attr.bootstrap). */
#define SYMM_BOOTSTRAP_AUTO   0 /* symmrun, then launcher env, else single PE */
#define SYMM_BOOTSTRAP_ENV    1 /* symmrun/torchrun/Open MPI/Slurm variables  */
#define SYMM_BOOTSTRAP_UID    2 /* unique id + rank + n_pes from the attrs    */
#define SYMM_BOOTSTRAP_SINGLE 3 /* one PE, no peers                           */

/* Thread levels (requested in symm_init_attr, provided in symm_ctx_info). */
#define SYMM_THREAD_SINGLE     0
#define SYMM_THREAD_FUNNELED   1
#define SYMM_THREAD_SERIALIZED 2
#define SYMM_THREAD_MULTIPLE   3

/* Element types of symmetric buffers. */
#define SYMM_DTYPE_INT8     1
#define SYMM_DTYPE_INT16    2
#define SYMM_DTYPE_INT32    3
#define SYMM_DTYPE_INT64    4
#define SYMM_DTYPE_UINT8    5
#define SYMM_DTYPE_UINT16   6
#define SYMM_DTYPE_UINT32   7
#define SYMM_DTYPE_UINT64   8
#define SYMM_DTYPE_FLOAT16  9  /* IEEE binary16 */
#define SYMM_DTYPE_BFLOAT16 10
#define SYMM_DTYPE_FLOAT32  11
#define SYMM_DTYPE_FLOAT64  12
#define SYMM_DTYPE_COUNT    13

/* Size in bytes of one element of dtype, 0 for an unknown dtype. Any thread;
 * answered by the loader.
 * Contract: local; thread: any; errors: none; keeps: none. */
SYMM_API uint32_t symm_dtype_size(uint32_t dtype);

/* ------------------------------------------------------------------------ */
/* Initialisation                                                            */
/* ------------------------------------------------------------------------ */

#define SYMM_UNIQUE_ID_BYTES 128
/* Opaque bytes naming a job, made by symm_get_unique_id(). */
typedef struct symm_unique_id {
    uint8_t bytes[SYMM_UNIQUE_ID_BYTES];
} symm_unique_id;

typedef struct symm_init_attr {
    uint32_t struct_size;  /* sizeof(symm_init_attr), set by symm_init_attr_init */
    uint32_t backend;      /* SYMM_BACKEND_*; env SYMM_BACKEND overrides AUTO   */
    uint32_t bootstrap;    /* SYMM_BOOTSTRAP_*                                  */
    uint32_t thread_level; /* SYMM_THREAD_* requested                           */
    uint64_t heap_cap;     /* max heap bytes per PE; 0 = default (SYMM_HEAP_CAP)*/
    int32_t rank;          /* UID mode: this PE's rank in [0, n_pes)            */
    int32_t n_pes;         /* UID mode: number of PEs                           */
    int32_t device;        /* CUDA device ordinal; -1 = the local rank          */
    uint32_t timeout_ms;   /* bootstrap and peer-failure timeout; 0 = default   */
    symm_unique_id unique_id; /* UID mode: the id from symm_get_unique_id()     */
} symm_init_attr;

/* Fill *attr with defaults (AUTO backend and bootstrap, MULTIPLE thread level,
 * default cap and timeout, device -1). struct_size is the caller's
 * sizeof(symm_init_attr): older, smaller structs are accepted. Answered by the
 * loader (works without a runtime). Any thread.
 * Contract: local; thread: any; errors: INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_init_attr_init(symm_init_attr *attr, uint32_t struct_size);
#define SYMM_INIT_ATTR_INIT(attr) symm_init_attr_init((attr), (uint32_t)sizeof(*(attr)))

/* Make a unique id for a new job (UID bootstrap). The process that made the id
 * must then initialise as rank 0 with it; the application sends the bytes to
 * the other PEs over its own channel. The id carries a per-job secret and the
 * address rank 0 listens on (SYMM_BOOTSTRAP_ADDR, default 127.0.0.1). NOT_SUPPORTED
 * when that address cannot carry the id. Any thread.
 * Contract: local; thread: any; errors: INVALID_ARG, NOT_SUPPORTED, BOOTSTRAP, SYSTEM;
 *   keeps: none. */
SYMM_API symm_status symm_get_unique_id(symm_unique_id *id);

/* Join a job and set up the symmetric heap. attr may be NULL (defaults).
 * Collective over every PE of the job. Several contexts may exist in one
 * process (each is its own job membership and heap). NO_DEVICE: CUDA asked
 * for, none usable; MISMATCH: PEs chose different backends; NOT_SUPPORTED:
 * the host backend with PEs on several hosts.
 * Contract: collective(ctx); thread: any; errors: INVALID_ARG, OUT_OF_MEMORY, NOT_SUPPORTED,
 *   NO_DEVICE, BOOTSTRAP, PEER_FAILED, TIMEOUT, MISMATCH, CUDA, SYSTEM; keeps: none. */
SYMM_API symm_status symm_init(const symm_init_attr *attr, symm_ctx *ctx);

/* Leave the job: barrier, unmap and free everything the context holds
 * (buffers still allocated are released too) and set *ctx to NULL. ctx or *ctx
 * may be NULL. Collective over the context; if a peer died it still releases
 * every local resource and returns PEER_FAILED.
 * Contract: collective(ctx); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, BOOTSTRAP,
 *   PEER_FAILED, TIMEOUT, CUDA; keeps: none. */
SYMM_API symm_status symm_finalize(symm_ctx *ctx);

/* This PE's number in [0, n_pes), or -1 for an invalid ctx. Any thread.
 * Contract: local; thread: any; errors: none; keeps: none. */
SYMM_API int32_t symm_my_pe(symm_ctx ctx);
/* Number of PEs in the job, or -1 for an invalid ctx. Any thread.
 * Contract: local; thread: any; errors: none; keeps: none. */
SYMM_API int32_t symm_n_pes(symm_ctx ctx);

typedef struct symm_ctx_info {
    uint32_t struct_size;   /* set by the caller to sizeof(symm_ctx_info)  */
    uint32_t backend;       /* SYMM_BACKEND_HOST or SYMM_BACKEND_CUDA      */
    uint32_t thread_level;  /* provided level                              */
    int32_t my_pe;
    int32_t n_pes;
    int32_t local_pe;       /* rank among PEs of this host                 */
    int32_t local_n_pes;
    int32_t device;         /* CUDA ordinal, -1 on host                    */
    uint64_t heap_cap;      /* bytes                                       */
    uint64_t heap_mapped;   /* bytes currently backed                      */
    uint64_t heap_used;     /* bytes in live allocations                   */
} symm_ctx_info;

/* Describe a context. info->struct_size must be set; older structs accepted.
 * Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_ctx_query(symm_ctx ctx, symm_ctx_info *info);

/* Asynchronous failures: an operation that failed after its call returned (a
 * stream operation, or a GPU-side barrier/signal wait that gave up because a
 * peer died) is recorded on its context. The first such failure is kept until
 * cleared; later ones are counted but not kept. It is also reported by the
 * next blocking call on the context, as before.
 * *status receives the recorded status (SYMM_SUCCESS when none). msg (msg_cap
 * bytes, optional: NULL with msg_cap 0) receives its message, truncated and
 * always NUL-terminated when msg_cap > 0. With flags & SYMM_ASYNC_CLEAR the
 * record is cleared after reading. The call polls the backend first, so a GPU
 * wait that already gave up is seen without another blocking call.
 * INVALID_ARG: unknown flags, status NULL, or msg NULL with msg_cap > 0.
 * Any thread. */
#define SYMM_ASYNC_CLEAR 1u
/* Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_ctx_async_error(symm_ctx ctx, uint32_t flags, uint64_t msg_cap,
                                          symm_status *status, char *msg);

/* ------------------------------------------------------------------------ */
/* Typed symmetric buffers                                                   */
/* ------------------------------------------------------------------------ */

/* Allocate count elements of dtype on every PE at the same symmetric offset.
 * count may be 0 (a valid, empty buffer). Collective over the context: PEs
 * passing a different dtype or count all get SYMM_ERR_MISMATCH and nothing is
 * allocated. Contents start zeroed. OUT_OF_MEMORY when the cap is reached.
 * Contract: collective(ctx); thread: level; errors: INVALID_HANDLE, INVALID_ARG, THREAD_LEVEL,
 *   OUT_OF_MEMORY, BOOTSTRAP, PEER_FAILED, TIMEOUT, MISMATCH, CUDA, SYSTEM; keeps: none. */
SYMM_API symm_status symm_buf_alloc(symm_ctx ctx, uint32_t dtype, uint64_t count, symm_buf *buf);

/* Free a buffer (collective over its context; NULL is accepted and does
 * nothing). Completes outstanding operations first. The handle becomes stale.
 * Contract: collective(buf); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, OUT_OF_MEMORY,
 *   BOOTSTRAP, PEER_FAILED, TIMEOUT, MISMATCH, CUDA; keeps: none. */
SYMM_API symm_status symm_buf_free(symm_buf buf);

/* Local address of a buffer's first element (host memory on the host backend,
 * device memory on CUDA). Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_buf_ptr(symm_buf buf, void **ptr);

/* dtype, element count and symmetric byte offset of a buffer. Each out is
 * optional. Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE; keeps: none. */
SYMM_API symm_status symm_buf_query(symm_buf buf, uint32_t *dtype, uint64_t *count,
                                    uint64_t *offset);

/* ------------------------------------------------------------------------ */
/* RMA on buffers (element indices, bounds-checked)                          */
/* ------------------------------------------------------------------------ */
/* pe is a PE number of the buffer's context. src/dst "local" memory may be any
 * memory the calling side can read/write (host memory, or device memory on the
 * CUDA backend). Ranges outside the buffer give SYMM_ERR_OUT_OF_BOUNDS; a pe
 * outside [0, n_pes) gives SYMM_ERR_INVALID_ARG. Blocking forms return when the
 * local side may be reused and (puts) the data is visible at the target.
 * _nbi forms may return earlier: puts complete at the next quiet, gets are
 * readable after the next quiet. Kept pointers: an _nbi put reads src and an
 * _nbi get writes dst until the next symm_quiet (or barrier) on the context;
 * the blocking forms keep nothing. */

/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_put(symm_buf dst, uint64_t dst_index, const void *src,
                              uint64_t nelems, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_get(void *dst, symm_buf src, uint64_t src_index,
                              uint64_t nelems, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: src until quiet. */
SYMM_API symm_status symm_put_nbi(symm_buf dst, uint64_t dst_index, const void *src,
                                  uint64_t nelems, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: dst until quiet. */
SYMM_API symm_status symm_get_nbi(void *dst, symm_buf src, uint64_t src_index,
                                  uint64_t nelems, int32_t pe);
/* One element: value points to one element of the buffer's dtype.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_p(symm_buf dst, uint64_t index, const void *value, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_g(symm_buf src, uint64_t index, int32_t pe, void *value);

/* ------------------------------------------------------------------------ */
/* Raw byte RMA on symmetric addresses                                       */
/* ------------------------------------------------------------------------ */
/* A symmetric address is a local address inside this PE's heap (for example
 * from symm_buf_ptr plus a byte offset); it names the same offset on pe.
 * [addr, addr + nbytes) must lie inside the heap (SYMM_ERR_OUT_OF_BOUNDS). */

/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_putmem(symm_ctx ctx, void *dst_sym, const void *src,
                                 uint64_t nbytes, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_getmem(symm_ctx ctx, void *dst, const void *src_sym,
                                 uint64_t nbytes, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: src until quiet. */
SYMM_API symm_status symm_putmem_nbi(symm_ctx ctx, void *dst_sym, const void *src,
                                     uint64_t nbytes, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: dst until quiet. */
SYMM_API symm_status symm_getmem_nbi(symm_ctx ctx, void *dst, const void *src_sym,
                                     uint64_t nbytes, int32_t pe);

/* Address at which this process can load/store pe's copy of the symmetric
 * address sym, or NULL in *ptr when pe is not load/store reachable.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS; keeps: none. */
SYMM_API symm_status symm_ptr(symm_ctx ctx, const void *sym, int32_t pe, void **ptr);

/* ------------------------------------------------------------------------ */
/* Ordering and synchronisation                                              */
/* ------------------------------------------------------------------------ */

/* Complete every outstanding operation this PE issued on ctx (puts visible at
 * their targets, nbi gets and fetches written).
 * Contract: local; thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_quiet(symm_ctx ctx);
/* Order: puts/AMOs to each PE issued before the fence are delivered before
 * those issued after it.
 * Contract: local; thread: level; errors: INVALID_HANDLE, THREAD_LEVEL; keeps: none. */
SYMM_API symm_status symm_fence(symm_ctx ctx);
/* quiet, then wait until every PE of the context arrived. Collective.
 * Contract: collective(ctx); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_barrier_all(symm_ctx ctx);
/* Wait until every PE of the context arrived (no quiet). Collective.
 * Contract: collective(ctx); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_sync_all(symm_ctx ctx);


/* ------------------------------------------------------------------------ */
/* Teams                                                                     */
/* ------------------------------------------------------------------------ */
/* A team is an ordered subset of a context's PEs. Predefined teams are owned by
 * the context (destroying one is an INVALID_ARG error); split teams are
 * destroyed with symm_team_destroy (collective over the team). A PE that is not
 * in a new team gets NULL. */

/* A context has 128 team slots per PE; the 4 predefined teams use 4. A split
 * needs a slot free on all of the new team's members (teams with no PE in
 * common may share one), so up to 124 split teams can include one PE at a
 * time; the next split gives TEAM_EXHAUSTED on every PE of the parent.
 * Split and destroy calls on one context must not run concurrently from
 * several threads. PEs that disagree on a split's arguments all get MISMATCH. */

#define SYMM_TEAM_WORLD            0 /* every PE of the context                 */
#define SYMM_TEAM_SHARED           1 /* PEs load/store reachable from this PE   */
#define SYMM_TEAM_NODE             2 /* PEs of this host                        */
#define SYMM_TEAM_SAME_LOCAL_PE    3 /* PEs with this local_pe, one per host    */

typedef struct symm_team_config {
    uint32_t struct_size;  /* sizeof(symm_team_config)                      */
    int32_t num_contexts;  /* OpenSHMEM hint; recorded and reported, >= 0   */
} symm_team_config;

/* Fill *config with defaults. Answered by the loader (works without a
 * runtime). Any thread.
 * Contract: local; thread: any; errors: INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_team_config_init(symm_team_config *config, uint32_t struct_size);
#define SYMM_TEAM_CONFIG_INIT(c) symm_team_config_init((c), (uint32_t)sizeof(*(c)))

/* A predefined team (SYMM_TEAM_*). Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_team_get(symm_ctx ctx, uint32_t which, symm_team *team);

/* New team of the parent's PEs start, start+stride, ... (size PEs; stride may
 * be negative, not 0). config may be NULL. Collective over parent.
 * INVALID_ARG: stride 0, size < 1, PEs outside the parent; MISMATCH: PEs
 * passed different triplets. Non-members get NULL.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, THREAD_LEVEL,
 *   OUT_OF_MEMORY, MISMATCH, TEAM_EXHAUSTED, PEER_FAILED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_team_split_strided(symm_team parent, int32_t start, int32_t stride,
                                             int32_t size, const symm_team_config *config,
                                             symm_team *team);

/* Split the parent into a 2-D grid of rows of xrange PEs: *xteam is this PE's
 * row, *yteam its column (the last row may be short). Configs may be NULL.
 * Collective over parent. Errors as split_strided; xrange < 1 is INVALID_ARG.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, THREAD_LEVEL,
 *   OUT_OF_MEMORY, MISMATCH, TEAM_EXHAUSTED, PEER_FAILED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_team_split_2d(symm_team parent, int32_t xrange,
                                        const symm_team_config *xconfig,
                                        const symm_team_config *yconfig,
                                        symm_team *xteam, symm_team *yteam);

/* Destroy a split team (collective over it). NULL is accepted.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, THREAD_LEVEL,
 *   MISMATCH, PEER_FAILED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_team_destroy(symm_team team);

/* This PE's number in team, -1 if invalid. Any thread.
 * Contract: local; thread: any; errors: none; keeps: none. */
SYMM_API int32_t symm_team_my_pe(symm_team team);
/* Number of PEs in team, -1 if invalid. Any thread.
 * Contract: local; thread: any; errors: none; keeps: none. */
SYMM_API int32_t symm_team_n_pes(symm_team team);
/* The number in dst_team of src_team's PE src_pe, or -1 when that PE is not in
 * dst_team or an argument is invalid. Any thread.
 * Contract: local; thread: any; errors: none; keeps: none. */
SYMM_API int32_t symm_team_translate_pe(symm_team src_team, int32_t src_pe, symm_team dst_team);
/* The team's configuration. config->struct_size must be set. Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_team_get_config(symm_team team, symm_team_config *config);

/* ------------------------------------------------------------------------ */
/* Signals                                                                   */
/* ------------------------------------------------------------------------ */
/* A signal is one element of a SYMM_DTYPE_UINT64 buffer. */

#define SYMM_SIGNAL_SET 0
#define SYMM_SIGNAL_ADD 1

/* Comparisons for waits and tests. */
#define SYMM_CMP_EQ 0
#define SYMM_CMP_NE 1
#define SYMM_CMP_GT 2
#define SYMM_CMP_GE 3
#define SYMM_CMP_LT 4
#define SYMM_CMP_LE 5

/* Put nelems elements, then update pe's signal (sig[sig_index] op= signal)
 * after the data is visible. The nbi form completes at quiet.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_put_signal(symm_buf dst, uint64_t dst_index, const void *src,
                                     uint64_t nelems, symm_buf sig, uint64_t sig_index,
                                     uint64_t signal, uint32_t sig_op, int32_t pe);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: src until quiet. */
SYMM_API symm_status symm_put_signal_nbi(symm_buf dst, uint64_t dst_index, const void *src,
                                         uint64_t nelems, symm_buf sig, uint64_t sig_index,
                                         uint64_t signal, uint32_t sig_op, int32_t pe);
/* dst and sig must belong to one context, and the signal element may not lie
 * inside the data range (INVALID_ARG). nelems may be 0 (the signal is still
 * updated). SET/ADD act on the uint64 signal; ADD wraps modulo 2^64. */

/* Update pe's signal without data.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_signal_op(symm_buf sig, uint64_t sig_index, uint64_t signal,
                                    uint32_t sig_op, int32_t pe);
/* Read this PE's signal atomically.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_signal_fetch(symm_buf sig, uint64_t sig_index, uint64_t *value);
/* Wait until this PE's signal compares true against value; *value_out (optional)
 * receives the value that satisfied it. Returns PEER_FAILED if a peer dies.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_signal_wait_until(symm_buf sig, uint64_t sig_index, uint32_t cmp,
                                            uint64_t value, uint64_t *value_out);

/* ------------------------------------------------------------------------ */
/* Point-to-point waits and tests on this PE's buffer elements               */
/* ------------------------------------------------------------------------ */
/* Integer dtypes only (INVALID_ARG otherwise). value/values point to elements
 * of the buffer's dtype (host memory); comparisons are signed for INT*
 * dtypes, unsigned for UINT*. status (optional, nelems int32_t) excludes
 * element i when status[i] != 0. value/values may be NULL only when nelems is
 * 0. Waits return PEER_FAILED if a peer dies; a test that finds its condition
 * unsatisfied also returns PEER_FAILED once the job lost a PE, so polling
 * loops end.
 * Empty sets (nelems 0 or every element excluded) return at once: _all is
 * satisfied; _any gives *found = SYMM_INDEX_NONE and, for test_any,
 * *satisfied = 0; _some gives *nfound = 0.
 * _all passes the elements in order and does not re-read an element that has
 * compared true. _some reports every included element that compared true in
 * one pass, in increasing index order.
 * Out-parameters of waits (found, indices, nfound) are optional (NULL); tests
 * need their result (satisfied, or nfound for the _some forms). An
 * unsatisfied test_any sets *found = SYMM_INDEX_NONE. */
#define SYMM_INDEX_NONE 0xFFFFFFFFFFFFFFFFull /* UINT64_MAX */

/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until(symm_buf buf, uint64_t index, uint32_t cmp,
                                     const void *value);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until_all(symm_buf buf, uint64_t index, uint64_t nelems,
                                         const int32_t *status, uint32_t cmp, const void *value);
/* *found gets the index (relative to index) of one satisfied element.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until_any(symm_buf buf, uint64_t index, uint64_t nelems,
                                         const int32_t *status, uint32_t cmp, const void *value,
                                         uint64_t *found);
/* Waits until at least one is satisfied; indices (nelems capacity) receive all
 * satisfied ones, *nfound their number.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until_some(symm_buf buf, uint64_t index, uint64_t nelems,
                                          const int32_t *status, uint32_t cmp, const void *value,
                                          uint64_t *indices, uint64_t *nfound);
/* Vector forms: element i is compared against values[i].
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until_all_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                                const int32_t *status, uint32_t cmp,
                                                const void *values);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until_any_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                                const int32_t *status, uint32_t cmp,
                                                const void *values, uint64_t *found);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_wait_until_some_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                                 const int32_t *status, uint32_t cmp,
                                                 const void *values, uint64_t *indices,
                                                 uint64_t *nfound);
/* Tests: like the waits but never block; *satisfied is 1 or 0 (for _any: 1 and
 * *found set; for _some: *nfound may be 0).
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test(symm_buf buf, uint64_t index, uint32_t cmp, const void *value,
                               int32_t *satisfied);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test_all(symm_buf buf, uint64_t index, uint64_t nelems,
                                   const int32_t *status, uint32_t cmp, const void *value,
                                   int32_t *satisfied);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test_any(symm_buf buf, uint64_t index, uint64_t nelems,
                                   const int32_t *status, uint32_t cmp, const void *value,
                                   int32_t *satisfied, uint64_t *found);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test_some(symm_buf buf, uint64_t index, uint64_t nelems,
                                    const int32_t *status, uint32_t cmp, const void *value,
                                    uint64_t *indices, uint64_t *nfound);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test_all_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                          const int32_t *status, uint32_t cmp, const void *values,
                                          int32_t *satisfied);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test_any_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                          const int32_t *status, uint32_t cmp, const void *values,
                                          int32_t *satisfied, uint64_t *found);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_test_some_vector(symm_buf buf, uint64_t index, uint64_t nelems,
                                           const int32_t *status, uint32_t cmp,
                                           const void *values, uint64_t *indices,
                                           uint64_t *nfound);

/* ------------------------------------------------------------------------ */
/* Atomics                                                                   */
/* ------------------------------------------------------------------------ */
/* One entry for every atomic memory operation on element index of pe's copy.
 * Integer ops need a 32/64-bit integer buffer; FETCH, SET and SWAP also take
 * FLOAT32/FLOAT64. value and compare point to one element of the buffer's
 * dtype (compare only for COMPARE_SWAP); fetched (required for FETCH_* ops,
 * SWAP and COMPARE_SWAP, ignored otherwise) receives the prior value.
 * Atomics from all PEs on one location are exact. */

#define SYMM_AMO_FETCH         0
#define SYMM_AMO_SET           1
#define SYMM_AMO_COMPARE_SWAP  2
#define SYMM_AMO_SWAP          3
#define SYMM_AMO_FETCH_INC     4
#define SYMM_AMO_INC           5
#define SYMM_AMO_FETCH_ADD     6
#define SYMM_AMO_ADD           7
#define SYMM_AMO_FETCH_AND     8
#define SYMM_AMO_AND           9
#define SYMM_AMO_FETCH_OR      10
#define SYMM_AMO_OR            11
#define SYMM_AMO_FETCH_XOR     12
#define SYMM_AMO_XOR           13

/* symm_atomic_nbi currently completes before returning (allowed: earlier than
 * the next quiet). Operand pointers need no alignment. value and compare are
 * read at call time; symm_atomic_nbi may write *fetched until the next quiet
 * (keep it alive until then).
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_atomic(symm_buf buf, uint64_t index, uint32_t op, const void *value,
                                 const void *compare, int32_t pe, void *fetched);
/* Non-blocking: *fetched is written by the next quiet on the buffer's context.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA, TIMEOUT; keeps: fetched until quiet. */
SYMM_API symm_status symm_atomic_nbi(symm_buf buf, uint64_t index, uint32_t op,
                                     const void *value, const void *compare, int32_t pe,
                                     void *fetched);

/* ------------------------------------------------------------------------ */
/* Collectives over teams                                                    */
/* ------------------------------------------------------------------------ */
/* Collective over team. dst and src are buffers of the same dtype in the
 * team's context; ranges are element ranges (bounds-checked). In-place use
 * (dst range == src range) is allowed for broadcast, reduce and (when src is
 * this PE's block of dst) fcollect/collect; other overlaps are INVALID_ARG.
 * Every PE names the same dst and src (buffer and index; an in-place
 * fcollect/collect's src is its own block of dst) and is in place or not
 * alike: the GPU kernels read and write a peer's buffers at this PE's
 * offsets. The blocking forms check that and nelems, root, op and dtype
 * across PEs (MISMATCH); the _on_stream forms cannot. */

/* SYMM_OP_AND/OR/XOR on FLOAT16/BFLOAT16/FLOAT32/FLOAT64 return
 * SYMM_ERR_NOT_SUPPORTED; an op outside SYMM_OP_* is INVALID_ARG.
 * Reductions combine the team's PEs in team order on every PE, so every PE
 * gets bitwise-identical results; integer SUM/PROD wrap around; floating
 * MIN/MAX follow fmin/fmax; FLOAT16/BFLOAT16 are accumulated in float32 and
 * rounded to nearest-even once. nelems 0 is a valid call (it synchronises).
 * A PE whose own arguments are rejected returns its error and its team peers
 * return MISMATCH (no PE is left waiting; the _on_stream forms check this
 * PE's arguments only: its peers' collective then goes on without it, and
 * pairs with its next operation on the team or ends at the timeout). Once a
 * GPU-side team wait (barrier, collective) of a context gave up at the
 * timeout, the context's teams may be out of step across PEs: its team
 * operations then fail with TIMEOUT at once (RMA still works); finalize it.
 * On return every peer has finished reading this PE's src, which may be
 * reused at once. */

#define SYMM_OP_SUM  0
#define SYMM_OP_PROD 1
#define SYMM_OP_MIN  2
#define SYMM_OP_MAX  3
#define SYMM_OP_AND  4 /* integer dtypes only */
#define SYMM_OP_OR   5 /* integer dtypes only */
#define SYMM_OP_XOR  6 /* integer dtypes only */

/* quiet, then wait for all team PEs.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_barrier(symm_team team);
/* wait for all team PEs (no quiet).
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA, TIMEOUT; keeps: none. */
SYMM_API symm_status symm_team_sync(symm_team team);
/* root's src range is copied to every PE's dst range (root given in team PE
 * numbers; root's dst is written too).
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_broadcast(symm_team team, symm_buf dst, uint64_t dst_index,
                                    symm_buf src, uint64_t src_index, uint64_t nelems,
                                    int32_t root);
/* dst[i*nelems ...] receives team PE i's src range, on every PE.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_fcollect(symm_team team, symm_buf dst, uint64_t dst_index,
                                   symm_buf src, uint64_t src_index, uint64_t nelems);
/* Like fcollect with per-PE nelems: blocks are concatenated in team order.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_collect(symm_team team, symm_buf dst, uint64_t dst_index,
                                  symm_buf src, uint64_t src_index, uint64_t nelems);
/* Block j of src (nelems each) goes to team PE j's dst block i (i = my PE).
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_alltoall(symm_team team, symm_buf dst, uint64_t dst_index,
                                   symm_buf src, uint64_t src_index, uint64_t nelems);
/* Element-wise reduction of every PE's src range into every PE's dst range.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_reduce(symm_team team, symm_buf dst, uint64_t dst_index,
                                 symm_buf src, uint64_t src_index, uint64_t nelems,
                                 uint32_t op);
/* src holds n_pes blocks of nelems; PE i's dst receives the reduction of
 * every PE's block i.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_reducescatter(symm_team team, symm_buf dst, uint64_t dst_index,
                                        symm_buf src, uint64_t src_index, uint64_t nelems,
                                        uint32_t op);


/* ------------------------------------------------------------------------ */
/* Stream-ordered operations                                                 */
/* ------------------------------------------------------------------------ */
/* On the CUDA backend these are enqueued on stream (NULL = the legacy default
 * stream) and return at once; they are ordered with the stream's other work
 * and can be captured into CUDA graphs. Completion: a _on_stream put is
 * visible at its target when the stream reaches a later quiet_on_stream,
 * barrier_on_stream or a signal it carries. Argument errors are reported at
 * call time; failures while the stream runs are recorded on the context
 * (symm_ctx_async_error). On the host backend they run to completion before
 * returning and stream is ignored.
 * Kept pointers: local src/dst memory is read/written when the stream reaches
 * the operation, so it must stay valid (and, for host memory, pinned or
 * unchanged) until then; value of symm_p_on_stream is read at call time. */

/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: src until stream. */
SYMM_API symm_status symm_put_on_stream(symm_buf dst, uint64_t dst_index, const void *src,
                                        uint64_t nelems, int32_t pe, symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: dst until stream. */
SYMM_API symm_status symm_get_on_stream(void *dst, symm_buf src, uint64_t src_index,
                                        uint64_t nelems, int32_t pe, symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: src until stream. */
SYMM_API symm_status symm_put_nbi_on_stream(symm_buf dst, uint64_t dst_index, const void *src,
                                            uint64_t nelems, int32_t pe, symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: dst until stream. */
SYMM_API symm_status symm_get_nbi_on_stream(void *dst, symm_buf src, uint64_t src_index,
                                            uint64_t nelems, int32_t pe, symm_stream_t stream);
/* value is read at call time (host memory).
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: none. */
SYMM_API symm_status symm_p_on_stream(symm_buf dst, uint64_t index, const void *value, int32_t pe,
                                      symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: src until stream. */
SYMM_API symm_status symm_putmem_on_stream(symm_ctx ctx, void *dst_sym, const void *src,
                                           uint64_t nbytes, int32_t pe, symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: dst until stream. */
SYMM_API symm_status symm_getmem_on_stream(symm_ctx ctx, void *dst, const void *src_sym,
                                           uint64_t nbytes, int32_t pe, symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: src until stream. */
SYMM_API symm_status symm_put_signal_on_stream(symm_buf dst, uint64_t dst_index, const void *src,
                                               uint64_t nelems, symm_buf sig, uint64_t sig_index,
                                               uint64_t signal, uint32_t sig_op, int32_t pe,
                                               symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, NOT_SUPPORTED, CUDA; keeps: none. */
SYMM_API symm_status symm_signal_op_on_stream(symm_buf sig, uint64_t sig_index, uint64_t signal,
                                              uint32_t sig_op, int32_t pe, symm_stream_t stream);
/* The stream waits (on the GPU) until this PE's signal compares true.
 * Contract: local; thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_signal_wait_until_on_stream(symm_buf sig, uint64_t sig_index,
                                                      uint32_t cmp, uint64_t value,
                                                      symm_stream_t stream);
/* Contract: local; thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, CUDA;
 *   keeps: none. */
SYMM_API symm_status symm_quiet_on_stream(symm_ctx ctx, symm_stream_t stream);
/* Contract: collective(ctx); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA; keeps: none. */
SYMM_API symm_status symm_barrier_all_on_stream(symm_ctx ctx, symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA; keeps: none. */
SYMM_API symm_status symm_barrier_on_stream(symm_team team, symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, THREAD_LEVEL, PEER_FAILED,
 *   CUDA; keeps: none. */
SYMM_API symm_status symm_team_sync_on_stream(symm_team team, symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_broadcast_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                              symm_buf src, uint64_t src_index, uint64_t nelems,
                                              int32_t root, symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_fcollect_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                             symm_buf src, uint64_t src_index, uint64_t nelems,
                                             symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_alltoall_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                             symm_buf src, uint64_t src_index, uint64_t nelems,
                                             symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_reduce_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                           symm_buf src, uint64_t src_index, uint64_t nelems,
                                           uint32_t op, symm_stream_t stream);
/* Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA; keeps: none. */
SYMM_API symm_status symm_reducescatter_on_stream(symm_team team, symm_buf dst,
                                                  uint64_t dst_index, symm_buf src,
                                                  uint64_t src_index, uint64_t nelems, uint32_t op,
                                                  symm_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Variable-size all-to-all with counts in symmetric memory (since 1.2)      */
/* ------------------------------------------------------------------------ */
/* MoE dispatch and combine (PyTorch's all_to_all_vdev): every PE sends
 * send_counts[j] elements to team PE j, and the counts are read from
 * symmetric memory when the call (the stream) gets there, so counts that a
 * kernel just computed need no copy to the host.
 *  - src: src_nelems elements from src_index: those for team PE 0, then those
 *    for PE 1, ... (packed).
 *  - send_counts: a SYMM_DTYPE_UINT64 or SYMM_DTYPE_INT64 buffer, n entries
 *    from send_index (n = the team's size): elements for team PE j. Peers
 *    read it.
 *  - dst: room for dst_nelems elements from dst_index; receives PE 0's
 *    elements for this PE, then PE 1's, ... (packed).
 *  - recv_counts: UINT64 or INT64, 2 * n entries from recv_index, written:
 *    [j] the elements that came from PE j, [n + j] where they start in dst
 *    (relative to dst_index).
 * dst and src have one dtype; every buffer is in the team's context; dst,
 * src, send_counts and recv_counts ranges must not overlap (except src with
 * send_counts, both only read). src_index, src_nelems and send_index must be
 * the same on every PE (the GPU reads a peer at this PE's offsets): the
 * blocking form checks it (MISMATCH), the stream form cannot.
 * Counts are read as uint64 (a negative INT64 count is a huge one). When
 * this PE's counts add up to more than src_nelems, it returns
 * SYMM_ERR_OUT_OF_BOUNDS (it still receives what lies in range for it);
 * when what it would receive exceeds dst_nelems, or
 * some peer's elements for it lie beyond that peer's src_nelems, it copies
 * nothing, still writes recv_counts (what would have come), and returns
 * SYMM_ERR_OUT_OF_BOUNDS. Either way the other PEs finish normally.
 * Combine (the reverse exchange) is the same call with the forward call's
 * recv_counts (its first n entries, in a symmetric buffer) as send_counts
 * and its dst as src: every element returns to the slot it left from.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_alltoallv(symm_team team, symm_buf dst, uint64_t dst_index,
                                    uint64_t dst_nelems, symm_buf src, uint64_t src_index,
                                    uint64_t src_nelems, symm_buf send_counts,
                                    uint64_t send_index, symm_buf recv_counts,
                                    uint64_t recv_index);
/* Stream-ordered form: enqueued on stream (graph-capturable; on the CUDA
 * backend one kernel that reads the counts on the GPU). The
 * returned status is about the arguments; an OUT_OF_BOUNDS found on the GPU
 * is recorded on the context (symm_ctx_async_error), and recv_counts says
 * what would have come. On the host backend it runs to completion first and
 * returns the status itself, as the blocking form.
 * Contract: collective(team); thread: level; errors: INVALID_HANDLE, INVALID_ARG, OUT_OF_BOUNDS,
 *   THREAD_LEVEL, MISMATCH, NOT_SUPPORTED, OUT_OF_MEMORY, PEER_FAILED, CUDA, TIMEOUT;
 *   keeps: none. */
SYMM_API symm_status symm_alltoallv_on_stream(symm_team team, symm_buf dst, uint64_t dst_index,
                                              uint64_t dst_nelems, symm_buf src,
                                              uint64_t src_index, uint64_t src_nelems,
                                              symm_buf send_counts, uint64_t send_index,
                                              symm_buf recv_counts, uint64_t recv_index,
                                              symm_stream_t stream);

/* ------------------------------------------------------------------------ */
/* Direct access, registration and the device context                        */
/* ------------------------------------------------------------------------ */

/* Address at which this process can load/store pe's copy of buf (element 0),
 * or NULL in *ptr when pe is not load/store reachable. Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG; keeps: none. */
SYMM_API symm_status symm_buf_peer_ptr(symm_buf buf, int32_t pe, void **ptr);

/* Make an existing allocation symmetric: every PE passes its own buffer of
 * count elements of dtype (CUDA backend: memory from cuMemCreate with POSIX fd
 * handles, mapped with cuMemMap; host backend: not supported). The memory stays
 * the caller's; symm_buf_free unregisters it without freeing. Kept pointer:
 * ptr's memory is used until symm_buf_free of the buffer (do not free it
 * before). Collective.
 * Contract: collective(ctx); thread: level; errors: INVALID_HANDLE, INVALID_ARG, THREAD_LEVEL,
 *   NOT_SUPPORTED, OUT_OF_MEMORY, BOOTSTRAP, PEER_FAILED, TIMEOUT, MISMATCH, CUDA, SYSTEM;
 *   keeps: ptr until buf_free. */
SYMM_API symm_status symm_buf_register(symm_ctx ctx, void *ptr, uint32_t dtype, uint64_t count,
                                       symm_buf *buf);

/* PEs whose heap base a device context holds in the struct itself (kernel
 * parameter space, the fastest to read); the rest are read from peer_table. */
#define SYMM_DEVICE_FAST_PES 64

/* Plain data describing the context to GPU code (symm_device.cuh). Addresses
 * are device addresses. Copy it into a kernel parameter or device memory.
 * It addresses every PE of the job, whatever their number. */
typedef struct symm_device_ctx {
    uint32_t struct_size;
    int32_t my_pe;
    int32_t n_pes;
    int32_t team_slots;     /* number of team slots (sync areas)              */
    uint64_t heap_cap;      /* bytes each PE may address                      */
    void *heap_base;        /* this PE's heap                                 */
    uint64_t slot_bytes;    /* bytes of one team slot's sync area (grows with
                               n_pes; slot s starts at heap_base + s * this)  */
    void *const *peer_table; /* device memory, n_pes entries: each PE's heap
                                base, NULL if not load/store reachable; owned
                                by the context, valid until symm_finalize     */
    void *peer_base[SYMM_DEVICE_FAST_PES]; /* peer_table[0 .. 63], in the struct */
    const int32_t *fail_word; /* since 1.1: host-pinned word that GPU code can
                                 read: 0 while the job is healthy, 2 once the
                                 runtime learned that a peer PE died (it
                                 stays 2); the device waits that take the
                                 context give up then (symm_device.cuh).
                                 Filled when struct_size covers it.         */
    /* Since 1.3 (filled when struct_size covers them): the GPU proxy, through
     * which device code reaches PEs that are not load/store reachable (PEs of
     * other hosts; docs/PROXY.md). */
    uint32_t device_abi;    /* SYMM_DEVICE_ABI_VERSION of the runtime (2 at 1.3;
                               a 1.3 header refuses another value)           */
    uint32_t n_rings;       /* proxy rings for kernels (0: no proxy: every PE
                               the context reaches is load/store reachable)  */
    const void *rings;      /* device memory: n_rings symm_ring handles
                               (symm_device_ring.h), valid until finalize   */
} symm_device_ctx;

/* The device-side ABI version a runtime fills into symm_device_ctx.device_abi:
 * 2 since 1.3 (the proxy rings). symm_device.cuh compares it with its own. */
#define SYMM_DEVICE_ABI_VERSION 2u

/* A team as seen by GPU code. */
typedef struct symm_device_team {
    uint32_t struct_size;
    int32_t my_pe;         /* in the team                               */
    int32_t n_pes;         /* in the team                               */
    int32_t start;         /* world PE of team PE i: start + i * stride */
    int32_t stride;
    int32_t slot;          /* sync area index                           */
    uint64_t reserved;
} symm_device_team;

/* Fill *dctx (struct_size set by the caller). Valid until symm_finalize; heap
 * growth keeps addresses stable. NOT_SUPPORTED on the host backend. Any
 * thread. The runtime fills the fields struct_size covers (at most the ones
 * it knows) and sets struct_size to the bytes it filled, so device code can
 * tell whether a later field (fail_word, 1.1) was filled.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG, NOT_SUPPORTED; keeps: none. */
SYMM_API symm_status symm_device_ctx_get(symm_ctx ctx, symm_device_ctx *dctx);
/* A split team (strided) or predefined team as seen by GPU code. Any thread.
 * Contract: local; thread: any; errors: INVALID_HANDLE, INVALID_ARG, NOT_SUPPORTED; keeps: none. */
SYMM_API symm_status symm_device_team_get(symm_team team, symm_device_team *dteam);

#ifdef __cplusplus
}
#endif

#endif /* SYMM_SYMM_H */

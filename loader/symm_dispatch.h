/*
 * The contract between the loader (libsymm.so.1) and the runtime
 * (libsymm_runtime.so.1): the dispatch table and the one function the runtime
 * exports to hand it over.
 *
 * Rules (docs/ABI.md):
 *  - SYMM_DISPATCH_ENTRIES lists every runtime-served public function in table
 *    order. Entries are only ever appended, under a comment naming the minor
 *    version that added them; a loader treats an entry beyond the runtime's
 *    table size (or NULL) as SYMM_ERR_NOT_SUPPORTED.
 *  - The loader answers symm_status_string, symm_last_error (together with the
 *    runtime's last_error), symm_loader_probe and symm_dtype_size itself.
 *
 * X(ret, name, params, args, fail): fail is what the loader's trampoline
 * returns when it cannot call the runtime (_st is the loader's status).
 */
#ifndef SYMM_LOADER_DISPATCH_H
#define SYMM_LOADER_DISPATCH_H

#include <symm/symm.h>

#define SYMM_ABI_MAJOR 1
#define SYMM_ABI_MINOR 0

/* clang-format off */
#define SYMM_DISPATCH_ENTRIES(X) \
    /* ---- SYMM 1.0 ---- */ \
    X(symm_status, symm_get_version, (uint32_t *runtime_version), (runtime_version), _st) \
    X(symm_status, symm_init_attr_init, (symm_init_attr *attr, uint32_t struct_size), (attr, struct_size), _st) \
    X(symm_status, symm_get_unique_id, (symm_unique_id *id), (id), _st) \
    X(symm_status, symm_init, (const symm_init_attr *attr, symm_ctx *ctx), (attr, ctx), _st) \
    X(symm_status, symm_finalize, (symm_ctx *ctx), (ctx), _st) \
    X(int32_t, symm_my_pe, (symm_ctx ctx), (ctx), -1) \
    X(int32_t, symm_n_pes, (symm_ctx ctx), (ctx), -1) \
    X(symm_status, symm_ctx_query, (symm_ctx ctx, symm_ctx_info *info), (ctx, info), _st) \
    X(symm_status, symm_buf_alloc, (symm_ctx ctx, uint32_t dtype, uint64_t count, symm_buf *buf), (ctx, dtype, count, buf), _st) \
    X(symm_status, symm_buf_free, (symm_buf buf), (buf), _st) \
    X(symm_status, symm_buf_ptr, (symm_buf buf, void **ptr), (buf, ptr), _st) \
    X(symm_status, symm_buf_query, (symm_buf buf, uint32_t *dtype, uint64_t *count, uint64_t *offset), (buf, dtype, count, offset), _st) \
    X(symm_status, symm_put, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe), (dst, dst_index, src, nelems, pe), _st) \
    X(symm_status, symm_get, (void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe), (dst, src, src_index, nelems, pe), _st) \
    X(symm_status, symm_put_nbi, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe), (dst, dst_index, src, nelems, pe), _st) \
    X(symm_status, symm_get_nbi, (void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe), (dst, src, src_index, nelems, pe), _st) \
    X(symm_status, symm_p, (symm_buf dst, uint64_t index, const void *value, int32_t pe), (dst, index, value, pe), _st) \
    X(symm_status, symm_g, (symm_buf src, uint64_t index, int32_t pe, void *value), (src, index, pe, value), _st) \
    X(symm_status, symm_putmem, (symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe), (ctx, dst_sym, src, nbytes, pe), _st) \
    X(symm_status, symm_getmem, (symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe), (ctx, dst, src_sym, nbytes, pe), _st) \
    X(symm_status, symm_putmem_nbi, (symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe), (ctx, dst_sym, src, nbytes, pe), _st) \
    X(symm_status, symm_getmem_nbi, (symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe), (ctx, dst, src_sym, nbytes, pe), _st) \
    X(symm_status, symm_ptr, (symm_ctx ctx, const void *sym, int32_t pe, void **ptr), (ctx, sym, pe, ptr), _st) \
    X(symm_status, symm_quiet, (symm_ctx ctx), (ctx), _st) \
    X(symm_status, symm_fence, (symm_ctx ctx), (ctx), _st) \
    X(symm_status, symm_barrier_all, (symm_ctx ctx), (ctx), _st) \
    X(symm_status, symm_sync_all, (symm_ctx ctx), (ctx), _st) \
    X(symm_status, symm_team_config_init, (symm_team_config *config, uint32_t struct_size), (config, struct_size), _st) \
    X(symm_status, symm_team_get, (symm_ctx ctx, uint32_t which, symm_team *team), (ctx, which, team), _st) \
    X(symm_status, symm_team_split_strided, (symm_team parent, int32_t start, int32_t stride, int32_t size, const symm_team_config *config, symm_team *team), (parent, start, stride, size, config, team), _st) \
    X(symm_status, symm_team_split_2d, (symm_team parent, int32_t xrange, const symm_team_config *xconfig, const symm_team_config *yconfig, symm_team *xteam, symm_team *yteam), (parent, xrange, xconfig, yconfig, xteam, yteam), _st) \
    X(symm_status, symm_team_destroy, (symm_team team), (team), _st) \
    X(int32_t, symm_team_my_pe, (symm_team team), (team), -1) \
    X(int32_t, symm_team_n_pes, (symm_team team), (team), -1) \
    X(int32_t, symm_team_translate_pe, (symm_team src_team, int32_t src_pe, symm_team dst_team), (src_team, src_pe, dst_team), -1) \
    X(symm_status, symm_team_get_config, (symm_team team, symm_team_config *config), (team, config), _st) \
    X(symm_status, symm_put_signal, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe), (dst, dst_index, src, nelems, sig, sig_index, signal, sig_op, pe), _st) \
    X(symm_status, symm_put_signal_nbi, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe), (dst, dst_index, src, nelems, sig, sig_index, signal, sig_op, pe), _st) \
    X(symm_status, symm_signal_op, (symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe), (sig, sig_index, signal, sig_op, pe), _st) \
    X(symm_status, symm_signal_fetch, (symm_buf sig, uint64_t sig_index, uint64_t *value), (sig, sig_index, value), _st) \
    X(symm_status, symm_signal_wait_until, (symm_buf sig, uint64_t sig_index, uint32_t cmp, uint64_t value, uint64_t *value_out), (sig, sig_index, cmp, value, value_out), _st) \
    X(symm_status, symm_wait_until, (symm_buf buf, uint64_t index, uint32_t cmp, const void *value), (buf, index, cmp, value), _st) \
    X(symm_status, symm_wait_until_all, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value), (buf, index, nelems, status, cmp, value), _st) \
    X(symm_status, symm_wait_until_any, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, uint64_t *found), (buf, index, nelems, status, cmp, value, found), _st) \
    X(symm_status, symm_wait_until_some, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, uint64_t *indices, uint64_t *nfound), (buf, index, nelems, status, cmp, value, indices, nfound), _st) \
    X(symm_status, symm_wait_until_all_vector, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values), (buf, index, nelems, status, cmp, values), _st) \
    X(symm_status, symm_wait_until_any_vector, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, uint64_t *found), (buf, index, nelems, status, cmp, values, found), _st) \
    X(symm_status, symm_wait_until_some_vector, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, uint64_t *indices, uint64_t *nfound), (buf, index, nelems, status, cmp, values, indices, nfound), _st) \
    X(symm_status, symm_test, (symm_buf buf, uint64_t index, uint32_t cmp, const void *value, int32_t *satisfied), (buf, index, cmp, value, satisfied), _st) \
    X(symm_status, symm_test_all, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, int32_t *satisfied), (buf, index, nelems, status, cmp, value, satisfied), _st) \
    X(symm_status, symm_test_any, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, int32_t *satisfied, uint64_t *found), (buf, index, nelems, status, cmp, value, satisfied, found), _st) \
    X(symm_status, symm_test_some, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, uint64_t *indices, uint64_t *nfound), (buf, index, nelems, status, cmp, value, indices, nfound), _st) \
    X(symm_status, symm_test_all_vector, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, int32_t *satisfied), (buf, index, nelems, status, cmp, values, satisfied), _st) \
    X(symm_status, symm_test_any_vector, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, int32_t *satisfied, uint64_t *found), (buf, index, nelems, status, cmp, values, satisfied, found), _st) \
    X(symm_status, symm_test_some_vector, (symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, uint64_t *indices, uint64_t *nfound), (buf, index, nelems, status, cmp, values, indices, nfound), _st) \
    X(symm_status, symm_atomic, (symm_buf buf, uint64_t index, uint32_t op, const void *value, const void *compare, int32_t pe, void *fetched), (buf, index, op, value, compare, pe, fetched), _st) \
    X(symm_status, symm_atomic_nbi, (symm_buf buf, uint64_t index, uint32_t op, const void *value, const void *compare, int32_t pe, void *fetched), (buf, index, op, value, compare, pe, fetched), _st) \
    X(symm_status, symm_barrier, (symm_team team), (team), _st) \
    X(symm_status, symm_team_sync, (symm_team team), (team), _st) \
    X(symm_status, symm_broadcast, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t root), (team, dst, dst_index, src, src_index, nelems, root), _st) \
    X(symm_status, symm_fcollect, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems), (team, dst, dst_index, src, src_index, nelems), _st) \
    X(symm_status, symm_collect, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems), (team, dst, dst_index, src, src_index, nelems), _st) \
    X(symm_status, symm_alltoall, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems), (team, dst, dst_index, src, src_index, nelems), _st) \
    X(symm_status, symm_reduce, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op), (team, dst, dst_index, src, src_index, nelems, op), _st) \
    X(symm_status, symm_reducescatter, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op), (team, dst, dst_index, src, src_index, nelems, op), _st) \
    X(symm_status, symm_put_on_stream, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe, symm_stream_t stream), (dst, dst_index, src, nelems, pe, stream), _st) \
    X(symm_status, symm_get_on_stream, (void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe, symm_stream_t stream), (dst, src, src_index, nelems, pe, stream), _st) \
    X(symm_status, symm_put_nbi_on_stream, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe, symm_stream_t stream), (dst, dst_index, src, nelems, pe, stream), _st) \
    X(symm_status, symm_get_nbi_on_stream, (void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe, symm_stream_t stream), (dst, src, src_index, nelems, pe, stream), _st) \
    X(symm_status, symm_p_on_stream, (symm_buf dst, uint64_t index, const void *value, int32_t pe, symm_stream_t stream), (dst, index, value, pe, stream), _st) \
    X(symm_status, symm_putmem_on_stream, (symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe, symm_stream_t stream), (ctx, dst_sym, src, nbytes, pe, stream), _st) \
    X(symm_status, symm_getmem_on_stream, (symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe, symm_stream_t stream), (ctx, dst, src_sym, nbytes, pe, stream), _st) \
    X(symm_status, symm_put_signal_on_stream, (symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe, symm_stream_t stream), (dst, dst_index, src, nelems, sig, sig_index, signal, sig_op, pe, stream), _st) \
    X(symm_status, symm_signal_op_on_stream, (symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe, symm_stream_t stream), (sig, sig_index, signal, sig_op, pe, stream), _st) \
    X(symm_status, symm_signal_wait_until_on_stream, (symm_buf sig, uint64_t sig_index, uint32_t cmp, uint64_t value, symm_stream_t stream), (sig, sig_index, cmp, value, stream), _st) \
    X(symm_status, symm_quiet_on_stream, (symm_ctx ctx, symm_stream_t stream), (ctx, stream), _st) \
    X(symm_status, symm_barrier_all_on_stream, (symm_ctx ctx, symm_stream_t stream), (ctx, stream), _st) \
    X(symm_status, symm_barrier_on_stream, (symm_team team, symm_stream_t stream), (team, stream), _st) \
    X(symm_status, symm_team_sync_on_stream, (symm_team team, symm_stream_t stream), (team, stream), _st) \
    X(symm_status, symm_broadcast_on_stream, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t root, symm_stream_t stream), (team, dst, dst_index, src, src_index, nelems, root, stream), _st) \
    X(symm_status, symm_fcollect_on_stream, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, symm_stream_t stream), (team, dst, dst_index, src, src_index, nelems, stream), _st) \
    X(symm_status, symm_alltoall_on_stream, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, symm_stream_t stream), (team, dst, dst_index, src, src_index, nelems, stream), _st) \
    X(symm_status, symm_reduce_on_stream, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op, symm_stream_t stream), (team, dst, dst_index, src, src_index, nelems, op, stream), _st) \
    X(symm_status, symm_reducescatter_on_stream, (symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op, symm_stream_t stream), (team, dst, dst_index, src, src_index, nelems, op, stream), _st) \
    X(symm_status, symm_buf_peer_ptr, (symm_buf buf, int32_t pe, void **ptr), (buf, pe, ptr), _st) \
    X(symm_status, symm_buf_register, (symm_ctx ctx, void *ptr, uint32_t dtype, uint64_t count, symm_buf *buf), (ctx, ptr, dtype, count, buf), _st) \
    X(symm_status, symm_device_ctx_get, (symm_ctx ctx, symm_device_ctx *dctx), (ctx, dctx), _st) \
    X(symm_status, symm_device_team_get, (symm_team team, symm_device_team *dteam), (team, dteam), _st)

/* clang-format on */

typedef struct symm_dispatch {
    uint64_t struct_size;            /* bytes of the table the runtime has */
    const char *(*last_error)(void); /* the runtime's thread-local message  */
#define SYMM_DISPATCH_FIELD(ret, name, params, args, fail) ret(*name) params;
    SYMM_DISPATCH_ENTRIES(SYMM_DISPATCH_FIELD)
#undef SYMM_DISPATCH_FIELD
} symm_dispatch;

typedef struct symm_runtime_negotiation {
    uint32_t struct_size;       /* in: sizeof as the loader knows it          */
    uint32_t loader_abi_major;  /* in: SYMM_ABI_MAJOR of the loader           */
    uint32_t loader_abi_minor;  /* in: highest minor the loader knows         */
    uint32_t runtime_abi_major; /* out                                        */
    uint32_t runtime_abi_minor; /* out                                        */
    uint32_t runtime_version;   /* out: SYMM_VERSION_ENCODE of the runtime    */
    const symm_dispatch *dispatch; /* out: valid for the life of the process  */
} symm_runtime_negotiation;

/* The runtime's only exported symbol. Answers SYMM_ERR_ABI_MISMATCH when the
 * loader's major differs (and still fills the runtime_* fields). */
typedef symm_status (*symm_runtime_negotiate_fn)(symm_runtime_negotiation *n);
#define SYMM_RUNTIME_NEGOTIATE_SYMBOL "symm_runtime_negotiate"
#define SYMM_RUNTIME_SONAME "libsymm_runtime.so.1"

/* Names of status codes, shared by loader and runtime. */
static inline const char *symm__status_name(symm_status s) {
    static const char *const names[SYMM_STATUS_COUNT] = {
        "SYMM_SUCCESS",           "SYMM_ERR_INVALID_ARG",   "SYMM_ERR_INVALID_HANDLE",
        "SYMM_ERR_OUT_OF_BOUNDS", "SYMM_ERR_OUT_OF_MEMORY", "SYMM_ERR_LIBRARY_NOT_FOUND",
        "SYMM_ERR_ABI_MISMATCH",  "SYMM_ERR_NOT_SUPPORTED", "SYMM_ERR_NO_DEVICE",
        "SYMM_ERR_BOOTSTRAP",     "SYMM_ERR_PEER_FAILED",   "SYMM_ERR_TIMEOUT",
        "SYMM_ERR_MISMATCH",      "SYMM_ERR_TEAM_EXHAUSTED", "SYMM_ERR_CUDA",
        "SYMM_ERR_SYSTEM",        "SYMM_ERR_THREAD_LEVEL",  "SYMM_ERR_INTERNAL",
    };
    return (s >= 0 && s < SYMM_STATUS_COUNT) ? names[s] : "SYMM_ERR_UNKNOWN";
}

/* Element sizes of dtypes, shared by loader and runtime. */
static inline uint32_t symm__dtype_size(uint32_t dtype) {
    static const uint8_t sizes[SYMM_DTYPE_COUNT] = {0, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
    return dtype < SYMM_DTYPE_COUNT ? sizes[dtype] : 0;
}

#endif /* SYMM_LOADER_DISPATCH_H */

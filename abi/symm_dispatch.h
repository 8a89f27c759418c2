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
 *  - The loader answers itself, without a runtime: symm_status_string,
 *    symm_last_error (together with the runtime's last_error), the
 *    symm_loader_* functions, and the pure-data entries symm_dtype_size,
 *    symm_init_attr_init and symm_team_config_init (their code is below, shared
 *    with the runtime, which uses it internally).
 *
 * X(ret, name, params, args, fail): fail is what the loader's trampoline
 * returns when it cannot call the runtime (_st is the loader's status).
 */
#ifndef SYMM_LOADER_DISPATCH_H
#define SYMM_LOADER_DISPATCH_H

#include <stddef.h>
#include <string.h>

#include <symm/symm.h>

#define SYMM_ABI_MAJOR 1
#define SYMM_ABI_MINOR 3

/* clang-format off */
#define SYMM_DISPATCH_ENTRIES(X) \
    /* ---- SYMM 1.0 ---- */ \
    X(symm_status, symm_get_version, (uint32_t *runtime_version), (runtime_version), _st) \
    X(symm_status, symm_get_unique_id, (symm_unique_id *id), (id), _st) \
    X(symm_status, symm_init, (const symm_init_attr *attr, symm_ctx *ctx), (attr, ctx), _st) \
    X(symm_status, symm_finalize, (symm_ctx *ctx), (ctx), _st) \
    X(int32_t, symm_my_pe, (symm_ctx ctx), (ctx), -1) \
    X(int32_t, symm_n_pes, (symm_ctx ctx), (ctx), -1) \
    X(symm_status, symm_ctx_query, (symm_ctx ctx, symm_ctx_info *info), (ctx, info), _st) \
    X(symm_status, symm_ctx_async_error, (symm_ctx ctx, uint32_t flags, uint64_t msg_cap, symm_status *status, char *msg), (ctx, flags, msg_cap, status, msg), _st) \
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
    X(symm_status, symm_device_team_get, (symm_team team, symm_device_team *dteam), (team, dteam), _st) \
    /* ---- SYMM 1.2 ---- */ \
    X(symm_status, symm_alltoallv, (symm_team team, symm_buf dst, uint64_t dst_index, uint64_t dst_nelems, symm_buf src, uint64_t src_index, uint64_t src_nelems, symm_buf send_counts, uint64_t send_index, symm_buf recv_counts, uint64_t recv_index), (team, dst, dst_index, dst_nelems, src, src_index, src_nelems, send_counts, send_index, recv_counts, recv_index), _st) \
    X(symm_status, symm_alltoallv_on_stream, (symm_team team, symm_buf dst, uint64_t dst_index, uint64_t dst_nelems, symm_buf src, uint64_t src_index, uint64_t src_nelems, symm_buf send_counts, uint64_t send_index, symm_buf recv_counts, uint64_t recv_index, symm_stream_t stream), (team, dst, dst_index, dst_nelems, src, src_index, src_nelems, send_counts, send_index, recv_counts, recv_index, stream), _st)

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

/* Names of status codes (from SYMM_STATUS_TABLE), shared by loader and runtime. */
static inline const char *symm__status_name(symm_status s) {
    switch (s) {
#define SYMM__STATUS_NAME(name, value, description) \
    case value: return #name;
        SYMM_STATUS_TABLE(SYMM__STATUS_NAME)
#undef SYMM__STATUS_NAME
    default: return "SYMM_ERR_UNKNOWN";
    }
}

/* Pure-data defaults, shared by the loader (which answers symm_init_attr_init
 * and symm_team_config_init) and the runtime. Each returns NULL when it filled
 * the struct, or the reason it refused (nothing written then). struct_size is
 * the caller's sizeof: older, smaller structs get their known prefix; a newer,
 * larger struct gets its unknown tail zeroed. */
static inline const char *symm__fill_init_attr(symm_init_attr *attr, uint32_t struct_size) {
    if (!attr) return "attr is NULL";
    if (struct_size < offsetof(symm_init_attr, heap_cap))
        return "struct_size is smaller than any released symm_init_attr layout";
    symm_init_attr d;
    memset(&d, 0, sizeof d);
    d.struct_size = struct_size < sizeof d ? struct_size : (uint32_t)sizeof d;
    d.backend = SYMM_BACKEND_AUTO;
    d.bootstrap = SYMM_BOOTSTRAP_AUTO;
    d.thread_level = SYMM_THREAD_MULTIPLE;
    d.device = -1;
    if (struct_size > sizeof d) memset((char *)attr + sizeof d, 0, struct_size - sizeof d);
    memcpy(attr, &d, d.struct_size);
    return NULL;
}

static inline const char *symm__fill_team_config(symm_team_config *config,
                                                 uint32_t struct_size) {
    if (!config) return "config is NULL";
    if (struct_size < sizeof(uint32_t))
        return "struct_size is smaller than any released symm_team_config layout";
    symm_team_config d;
    memset(&d, 0, sizeof d);
    d.struct_size = struct_size < sizeof d ? struct_size : (uint32_t)sizeof d;
    d.num_contexts = 0;
    if (struct_size > sizeof d) memset((char *)config + sizeof d, 0, struct_size - sizeof d);
    memcpy(config, &d, d.struct_size);
    return NULL;
}

/* Element sizes of dtypes, shared by loader and runtime. */
static inline uint32_t symm__dtype_size(uint32_t dtype) {
    static const uint8_t sizes[SYMM_DTYPE_COUNT] = {0, 1, 2, 4, 8, 1, 2, 4, 8, 2, 2, 4, 8};
    return dtype < SYMM_DTYPE_COUNT ? sizes[dtype] : 0;
}

#endif /* SYMM_LOADER_DISPATCH_H */

/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_put_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_put_on_stream: not implemented yet");
}

symm_status symm_get_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_get_on_stream: not implemented yet");
}

symm_status symm_put_nbi_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_put_nbi_on_stream: not implemented yet");
}

symm_status symm_get_nbi_on_stream(void *dst, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_get_nbi_on_stream: not implemented yet");
}

symm_status symm_p_on_stream(symm_buf dst, uint64_t index, const void *value, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_p_on_stream: not implemented yet");
}

symm_status symm_putmem_on_stream(symm_ctx ctx, void *dst_sym, const void *src, uint64_t nbytes, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_putmem_on_stream: not implemented yet");
}

symm_status symm_getmem_on_stream(symm_ctx ctx, void *dst, const void *src_sym, uint64_t nbytes, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_getmem_on_stream: not implemented yet");
}

symm_status symm_put_signal_on_stream(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_put_signal_on_stream: not implemented yet");
}

symm_status symm_signal_op_on_stream(symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_signal_op_on_stream: not implemented yet");
}

symm_status symm_signal_wait_until_on_stream(symm_buf sig, uint64_t sig_index, uint32_t cmp, uint64_t value, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_signal_wait_until_on_stream: not implemented yet");
}

symm_status symm_quiet_on_stream(symm_ctx ctx, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_quiet_on_stream: not implemented yet");
}

symm_status symm_barrier_all_on_stream(symm_ctx ctx, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_barrier_all_on_stream: not implemented yet");
}

symm_status symm_barrier_on_stream(symm_team team, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_barrier_on_stream: not implemented yet");
}

symm_status symm_team_sync_on_stream(symm_team team, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_team_sync_on_stream: not implemented yet");
}

symm_status symm_broadcast_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t root, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_broadcast_on_stream: not implemented yet");
}

symm_status symm_fcollect_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_fcollect_on_stream: not implemented yet");
}

symm_status symm_alltoall_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_alltoall_on_stream: not implemented yet");
}

symm_status symm_reduce_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_reduce_on_stream: not implemented yet");
}

symm_status symm_reducescatter_on_stream(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op, symm_stream_t stream) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_reducescatter_on_stream: not implemented yet");
}

symm_status symm_buf_peer_ptr(symm_buf buf, int32_t pe, void **ptr) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_buf_peer_ptr: not implemented yet");
}

symm_status symm_buf_register(symm_ctx ctx, void *ptr, uint32_t dtype, uint64_t count, symm_buf *buf) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_buf_register: not implemented yet");
}

symm_status symm_device_ctx_get(symm_ctx ctx, symm_device_ctx *dctx) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_device_ctx_get: not implemented yet");
}

symm_status symm_device_team_get(symm_team team, symm_device_team *dteam) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_device_team_get: not implemented yet");
}

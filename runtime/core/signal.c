/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_put_signal(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_put_signal: not implemented yet");
}

symm_status symm_put_signal_nbi(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems, symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_put_signal_nbi: not implemented yet");
}

symm_status symm_signal_op(symm_buf sig, uint64_t sig_index, uint64_t signal, uint32_t sig_op, int32_t pe) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_signal_op: not implemented yet");
}

symm_status symm_signal_fetch(symm_buf sig, uint64_t sig_index, uint64_t *value) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_signal_fetch: not implemented yet");
}

symm_status symm_signal_wait_until(symm_buf sig, uint64_t sig_index, uint32_t cmp, uint64_t value, uint64_t *value_out) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_signal_wait_until: not implemented yet");
}

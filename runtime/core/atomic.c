/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_atomic(symm_buf buf, uint64_t index, uint32_t op, const void *value, const void *compare, int32_t pe, void *fetched) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_atomic: not implemented yet");
}

symm_status symm_atomic_nbi(symm_buf buf, uint64_t index, uint32_t op, const void *value, const void *compare, int32_t pe, void *fetched) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_atomic_nbi: not implemented yet");
}

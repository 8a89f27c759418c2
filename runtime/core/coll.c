/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_broadcast(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, int32_t root) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_broadcast: not implemented yet");
}

symm_status symm_fcollect(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_fcollect: not implemented yet");
}

symm_status symm_collect(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_collect: not implemented yet");
}

symm_status symm_alltoall(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_alltoall: not implemented yet");
}

symm_status symm_reduce(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_reduce: not implemented yet");
}

symm_status symm_reducescatter(symm_team team, symm_buf dst, uint64_t dst_index, symm_buf src, uint64_t src_index, uint64_t nelems, uint32_t op) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_reducescatter: not implemented yet");
}

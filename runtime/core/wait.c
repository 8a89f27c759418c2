/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_wait_until(symm_buf buf, uint64_t index, uint32_t cmp, const void *value) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until: not implemented yet");
}

symm_status symm_wait_until_all(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until_all: not implemented yet");
}

symm_status symm_wait_until_any(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, uint64_t *found) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until_any: not implemented yet");
}

symm_status symm_wait_until_some(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, uint64_t *indices, uint64_t *nfound) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until_some: not implemented yet");
}

symm_status symm_wait_until_all_vector(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until_all_vector: not implemented yet");
}

symm_status symm_wait_until_any_vector(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, uint64_t *found) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until_any_vector: not implemented yet");
}

symm_status symm_wait_until_some_vector(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, uint64_t *indices, uint64_t *nfound) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_wait_until_some_vector: not implemented yet");
}

symm_status symm_test(symm_buf buf, uint64_t index, uint32_t cmp, const void *value, int32_t *satisfied) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test: not implemented yet");
}

symm_status symm_test_all(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, int32_t *satisfied) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test_all: not implemented yet");
}

symm_status symm_test_any(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, int32_t *satisfied, uint64_t *found) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test_any: not implemented yet");
}

symm_status symm_test_some(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *value, uint64_t *indices, uint64_t *nfound) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test_some: not implemented yet");
}

symm_status symm_test_all_vector(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, int32_t *satisfied) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test_all_vector: not implemented yet");
}

symm_status symm_test_any_vector(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, int32_t *satisfied, uint64_t *found) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test_any_vector: not implemented yet");
}

symm_status symm_test_some_vector(symm_buf buf, uint64_t index, uint64_t nelems, const int32_t *status, uint32_t cmp, const void *values, uint64_t *indices, uint64_t *nfound) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_test_some_vector: not implemented yet");
}

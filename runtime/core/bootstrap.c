/* PLACEHOLDER: replaced by the real implementation. */
#include "internal.h"

symm_status symm_get_unique_id(symm_unique_id *id) {
    return symm__err(SYMM_ERR_NOT_SUPPORTED, "symm_get_unique_id: not implemented yet");
}

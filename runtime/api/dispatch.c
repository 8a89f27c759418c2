/* The runtime's one exported symbol: hands the dispatch table to the loader. */
#include "internal.h"

static const symm_dispatch table = {
    .struct_size = sizeof(symm_dispatch),
    .last_error = symm__last_error,
#define SYMM_DISPATCH_INIT(ret, name, params, args, fail) .name = name,
    SYMM_DISPATCH_ENTRIES(SYMM_DISPATCH_INIT)
#undef SYMM_DISPATCH_INIT
};

__attribute__((visibility("default"))) symm_status symm_runtime_negotiate(
    symm_runtime_negotiation *n);

symm_status symm_runtime_negotiate(symm_runtime_negotiation *n) {
    if (!n || n->struct_size < offsetof(symm_runtime_negotiation, dispatch) + sizeof(void *))
        return symm__err(SYMM_ERR_INVALID_ARG, "symm_runtime_negotiate: bad negotiation struct");
    symm__loader_abi_major = n->loader_abi_major; /* for the init log */
    symm__loader_abi_minor = n->loader_abi_minor;
    n->runtime_abi_major = SYMM_ABI_MAJOR;
    n->runtime_abi_minor = SYMM_ABI_MINOR;
    n->runtime_version = SYMM_VERSION;
    if (n->loader_abi_major != SYMM_ABI_MAJOR) {
        n->dispatch = NULL;
        return symm__err(SYMM_ERR_ABI_MISMATCH,
                         "runtime ABI %u.%u cannot serve a loader of ABI major %u", SYMM_ABI_MAJOR,
                         SYMM_ABI_MINOR, n->loader_abi_major);
    }
    n->dispatch = &table;
    return SYMM_SUCCESS;
}

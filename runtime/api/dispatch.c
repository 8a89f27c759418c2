/* The runtime's one exported symbol: hands the dispatch table to the loader.
 *
 * The table points at wrappers: each marks the calling thread inside a call
 * for the call's duration, which keeps every object the call resolves alive
 * until it returns (core/internal.h, "Handle lifetime"). The runtime calls
 * its own entries directly, so calls never nest. */
#include "internal.h"

#define SYMM_DISPATCH_GUARD(ret, name, params, args, fail)                    \
    static ret guarded_##name params {                                       \
        symm__tslot *slot_ = symm__call_enter();                             \
        if (__builtin_expect(!slot_, 0)) {                                   \
            symm_status _st = symm__err(SYMM_ERR_OUT_OF_MEMORY,              \
                                        "%s: out of host memory", #name);    \
            (void)_st;                                                       \
            return fail;                                                     \
        }                                                                    \
        ret ret_ = name args;                                                \
        symm__call_leave(slot_);                                             \
        return ret_;                                                         \
    }
SYMM_DISPATCH_ENTRIES(SYMM_DISPATCH_GUARD)
#undef SYMM_DISPATCH_GUARD

static const symm_dispatch table = {
    .struct_size = sizeof(symm_dispatch),
    .last_error = symm__last_error,
#define SYMM_DISPATCH_INIT(ret, name, params, args, fail) .name = guarded_##name,
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

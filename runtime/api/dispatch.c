/* The runtime's one exported symbol: hands the dispatch table to the loader.
 *
 * The table points at wrappers: each marks the calling thread inside a call
 * for the call's duration, which keeps every object the call resolves alive
 * until it returns (core/internal.h, "Handle lifetime"). The runtime calls
 * its own entries directly, so calls never nest. */
#include "internal.h"

/* A status-returning entry (its failure value is `_st`) clears the thread's
 * message by clearing MSG and sets MSG when it fails; the queries that
 * return a value (failure -1) leave the message alone. */
#define SYMM__RETURNS_STATUS(fail) (sizeof(#fail) == 4 && #fail[0] == '_')

#define SYMM_DISPATCH_GUARD(ret, name, params, args, fail)                    \
    static ret guarded_##name params {                                       \
        const bool st_ = SYMM__RETURNS_STATUS(fail);                         \
        symm__tslot *slot_ = symm__call_enter_as(st_);                       \
        if (__builtin_expect(!slot_, 0)) {                                   \
            symm_status _st = symm__err(SYMM_ERR_OUT_OF_MEMORY,              \
                                        "%s: out of host memory", #name);    \
            (void)_st;                                                       \
            return fail;                                                     \
        }                                                                    \
        ret ret_ = name args;                                                \
        symm__call_leave_as(slot_, st_ && ret_ != 0);                        \
        return ret_;                                                         \
    }
SYMM_DISPATCH_ENTRIES(SYMM_DISPATCH_GUARD)
#undef SYMM_DISPATCH_GUARD

/* The thread's message: the last status call's when it failed, else "". A
 * thread without a slot made no call (its message is empty) or could not get
 * one (out of memory: the message says so). */
static const char *last_error(void) {
    symm__tslot *s = symm__tslot_peek();
    if (s && !(atomic_load_explicit(&s->word, memory_order_relaxed) & SYMM__CALL_MSG))
        return "";
    return symm__last_error();
}

static const symm_dispatch table = {
    .struct_size = sizeof(symm_dispatch),
    .last_error = last_error,
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

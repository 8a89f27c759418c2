/*
 * A fake libsymm_runtime.so.1 for the loader suite. Knobs (compile-time):
 *   FAKE_NO_NEGOTIATE      export no symm_runtime_negotiate at all
 *   FAKE_ABI_MAJOR=n       ABI major it implements (default SYMM_ABI_MAJOR)
 *   FAKE_MISMATCH_SILENT   on a major mismatch answer SUCCESS anyway (a buggy
 *                          runtime: the loader must check the major itself)
 *   FAKE_NEGOTIATE_STATUS  status negotiate returns (default success)
 *   FAKE_TABLE_END=entry   the table stops right before this entry
 *   FAKE_NULL_ENTRY=entry  this entry is NULL
 *   FAKE_NEGOTIATE_DELAY_MS  negotiate sleeps this long (concurrency test)
 * Every entry counts its calls; a few answer something recognisable.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_runtime.h"

#ifndef FAKE_ABI_MAJOR
#define FAKE_ABI_MAJOR SYMM_ABI_MAJOR
#endif

#define FAKE_EXPORT __attribute__((visibility("default")))
FAKE_EXPORT fake_runtime_state *fake_runtime_get_state(void);
FAKE_EXPORT symm_status symm_runtime_negotiate(symm_runtime_negotiation *n);

static fake_runtime_state state;

fake_runtime_state *fake_runtime_get_state(void) { return &state; }

#ifndef FAKE_NO_NEGOTIATE

static _Thread_local const char *fake_error = "";

static void fake_record(int idx) {
    __atomic_fetch_add(&state.calls[idx], 1, __ATOMIC_SEQ_CST);
    fake_error = "";
}

static const char *fake_last_error(void) { return fake_error; }

/* Every entry: count the call, answer 0. */
#define FAKE_ENTRY(ret, name, params, args, fail)                              \
    static ret fake_##name params {                                            \
        fake_record(FAKE_IDX_##name);                                          \
        return (ret)0;                                                         \
    }
SYMM_DISPATCH_ENTRIES(FAKE_ENTRY)
#undef FAKE_ENTRY

/* A few entries answer something the test can recognise. */
static symm_status fake_get_version(uint32_t *v) {
    (void)fake_symm_get_version(v);
    if (v) *v = FAKE_RUNTIME_VERSION;
    return SYMM_SUCCESS;
}

static int32_t fake_my_pe(symm_ctx ctx) {
    (void)fake_symm_my_pe(ctx);
    return FAKE_MY_PE;
}

static symm_status fake_put(symm_buf dst, uint64_t dst_index, const void *src, uint64_t nelems,
                            int32_t pe) {
    (void)fake_symm_put(dst, dst_index, src, nelems, pe);
    state.last_u64 = dst_index + nelems * 1000u;
    state.last_pe = pe;
    return SYMM_SUCCESS;
}

static symm_status fake_buf_free(symm_buf buf) {
    (void)fake_symm_buf_free(buf);
    fake_error = FAKE_LAST_ERROR;
    return SYMM_ERR_INVALID_HANDLE;
}

static const symm_dispatch *fake_table(void) {
    static symm_dispatch full;
    full.struct_size = sizeof(full);
    full.last_error = fake_last_error;
#define FAKE_FILL(ret, name, params, args, fail) full.name = fake_##name;
    SYMM_DISPATCH_ENTRIES(FAKE_FILL)
#undef FAKE_FILL
    full.symm_get_version = fake_get_version;
    full.symm_my_pe = fake_my_pe;
    full.symm_put = fake_put;
    full.symm_buf_free = fake_buf_free;
#ifdef FAKE_NULL_ENTRY
    full.FAKE_NULL_ENTRY = NULL;
#endif
#ifdef FAKE_TABLE_END
    /* A real short table: memory ends where the runtime's table ends, so a
     * loader reading past struct_size reads outside the allocation. */
    static unsigned char *short_table;
    const uint64_t size = offsetof(symm_dispatch, FAKE_TABLE_END);
    if (!short_table) {
        short_table = (unsigned char *)malloc(size);
        if (!short_table) return NULL;
        memcpy(short_table, &full, size);
        memcpy(short_table + offsetof(symm_dispatch, struct_size), &size, sizeof(size));
    }
    return (const symm_dispatch *)(void *)short_table;
#else
    return &full;
#endif
}

symm_status symm_runtime_negotiate(symm_runtime_negotiation *n) {
    __atomic_fetch_add(&state.negotiate_calls, 1, __ATOMIC_SEQ_CST);
#ifdef FAKE_NEGOTIATE_DELAY_MS
    struct timespec ts = {0, (long)FAKE_NEGOTIATE_DELAY_MS * 1000000L};
    nanosleep(&ts, NULL);
#endif
    if (!n) return SYMM_ERR_INVALID_ARG;
    state.seen_struct_size = n->struct_size;
    state.seen_major = n->loader_abi_major;
    state.seen_minor = n->loader_abi_minor;
    n->runtime_abi_major = FAKE_ABI_MAJOR;
    n->runtime_abi_minor = 0;
    n->runtime_version = SYMM_VERSION_ENCODE(FAKE_ABI_MAJOR, 0, 7);
#ifdef FAKE_NEGOTIATE_STATUS
    n->dispatch = fake_table(); /* a table, but a failure: not to be used */
    return FAKE_NEGOTIATE_STATUS;
#else
#ifndef FAKE_MISMATCH_SILENT
    if (n->loader_abi_major != FAKE_ABI_MAJOR) return SYMM_ERR_ABI_MISMATCH;
#endif
    n->dispatch = fake_table();
    return n->dispatch ? SYMM_SUCCESS : SYMM_ERR_OUT_OF_MEMORY;
#endif
}

#endif /* FAKE_NO_NEGOTIATE */

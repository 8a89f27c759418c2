/*
 * Fake runtimes for the loader suite: one source (fake_runtime.c) built into
 * several shared objects whose negotiation or table misbehaves on purpose.
 * The test reads what the fake saw through fake_runtime_state(), found with
 * dlopen(RTLD_NOLOAD) on the path the loader opened.
 */
#ifndef SYMM_TEST_FAKE_RUNTIME_H
#define SYMM_TEST_FAKE_RUNTIME_H

#include <stdint.h>

#include "symm_dispatch.h"

/* Index of each dispatch entry, in table order. */
enum {
#define FAKE_INDEX(ret, name, params, args, fail) FAKE_IDX_##name,
    SYMM_DISPATCH_ENTRIES(FAKE_INDEX)
#undef FAKE_INDEX
    FAKE_ENTRY_COUNT
};

/* What every fake reports about itself. */
#define FAKE_RUNTIME_VERSION SYMM_VERSION_ENCODE(1, 0, 7)
#define FAKE_MY_PE 42            /* symm_my_pe's answer                     */
#define FAKE_LAST_ERROR "fake runtime: bad handle"
#define FAKE_STATE_SYMBOL "fake_runtime_get_state"

typedef struct fake_runtime_state {
    int negotiate_calls;              /* atomic increments                 */
    uint32_t seen_struct_size;        /* what the loader offered           */
    uint32_t seen_major, seen_minor;
    int calls[FAKE_ENTRY_COUNT];      /* per entry, atomic increments      */
    uint64_t last_u64;                /* symm_put: dst_index + nelems * 1000 */
    int32_t last_pe;
} fake_runtime_state;

typedef fake_runtime_state *(*fake_runtime_state_fn)(void);

#endif /* SYMM_TEST_FAKE_RUNTIME_H */

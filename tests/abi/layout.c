/*
 * ABI layout test: frozen copies of every public struct and of the
 * loader/runtime contract, compared field by field (offset, size, kind of
 * type) with what the headers say today; every SYMM_* constant compared
 * with its frozen value; the dispatch table's entry order frozen, so entries
 * may be appended but never inserted, removed or reordered.
 *
 * The frozen values below are the ABI. Never edit them to make this test pass:
 * a mismatch means the header broke binary compatibility. When an append that
 * docs/ABI.md allows is released, add the new fields/entries/constants here.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "symm_dispatch.h"

static int failures, checks;

static void expect_u64(const char *what, uint64_t got, uint64_t want) {
    checks++;
    if (got != want) {
        failures++;
        printf("FAIL %s: %llu, frozen %llu\n", what, (unsigned long long)got,
               (unsigned long long)want);
    }
}

static void expect_str(const char *what, const char *got, const char *want) {
    checks++;
    if (strcmp(got, want) != 0) {
        failures++;
        printf("FAIL %s: %s, frozen %s\n", what, got, want);
    }
}

/* The kind of a field's type, so int32_t -> uint32_t is caught too (arrays
 * decay to pointers to their element). */
#define KIND(x)                                                                \
    _Generic((x), int8_t: "int8", uint8_t: "uint8", int16_t: "int16",          \
             uint16_t: "uint16", int32_t: "int32", uint32_t: "uint32",         \
             int64_t: "int64", uint64_t: "uint64", void *: "pointer",          \
             uint8_t *: "uint8 array", void **: "pointer array",               \
             void *const *: "const pointer array",                             \
             default: "other")

/* Field f of the public struct T against the same field of frozen copy F. */
#define FIELD(T, F, f)                                                         \
    do {                                                                       \
        T t_;                                                                  \
        F f_;                                                                  \
        memset(&t_, 0, sizeof(t_));                                            \
        memset(&f_, 0, sizeof(f_));                                            \
        expect_u64("offsetof(" #T ", " #f ")", offsetof(T, f), offsetof(F, f)); \
        expect_u64("sizeof(" #T "." #f ")", sizeof(t_.f), sizeof(f_.f));      \
        expect_str("type of " #T "." #f, KIND(t_.f), KIND(f_.f));              \
    } while (0)
#define SIZE(T, F) expect_u64("sizeof(" #T ")", sizeof(T), sizeof(F))

/* ---- frozen copies (SYMM 1.0) ---- */

typedef struct frozen_unique_id {
    uint8_t bytes[128];
} frozen_unique_id;

typedef struct frozen_init_attr {
    uint32_t struct_size;
    uint32_t backend;
    uint32_t bootstrap;
    uint32_t thread_level;
    uint64_t heap_cap;
    int32_t rank;
    int32_t n_pes;
    int32_t device;
    uint32_t timeout_ms;
    frozen_unique_id unique_id;
} frozen_init_attr;

typedef struct frozen_ctx_info {
    uint32_t struct_size;
    uint32_t backend;
    uint32_t thread_level;
    int32_t my_pe;
    int32_t n_pes;
    int32_t local_pe;
    int32_t local_n_pes;
    int32_t device;
    uint64_t heap_cap;
    uint64_t heap_mapped;
    uint64_t heap_used;
} frozen_ctx_info;

typedef struct frozen_team_config {
    uint32_t struct_size;
    int32_t num_contexts;
} frozen_team_config;

typedef struct frozen_device_ctx {
    uint32_t struct_size;
    int32_t my_pe;
    int32_t n_pes;
    int32_t team_slots;
    uint64_t heap_cap;
    void *heap_base;
    uint64_t slot_bytes;
    void *const *peer_table;
    void *peer_base[64];
    /* 1.1 */
    const int32_t *fail_word;
    uint32_t device_abi; /* 1.3 */
    uint32_t n_rings;    /* 1.3 */
    const void *rings;   /* 1.3 */
} frozen_device_ctx;

typedef struct frozen_device_team {
    uint32_t struct_size;
    int32_t my_pe, n_pes;
    int32_t start, stride;
    int32_t slot;
    uint64_t reserved;
} frozen_device_team;

typedef struct frozen_negotiation {
    uint32_t struct_size;
    uint32_t loader_abi_major;
    uint32_t loader_abi_minor;
    uint32_t runtime_abi_major;
    uint32_t runtime_abi_minor;
    uint32_t runtime_version;
    void *dispatch;
} frozen_negotiation;

typedef struct frozen_dispatch_header {
    uint64_t struct_size;
    void *last_error;
} frozen_dispatch_header;

static void check_structs(void) {
    SIZE(symm_unique_id, frozen_unique_id);
    FIELD(symm_unique_id, frozen_unique_id, bytes);

    SIZE(symm_init_attr, frozen_init_attr);
    FIELD(symm_init_attr, frozen_init_attr, struct_size);
    FIELD(symm_init_attr, frozen_init_attr, backend);
    FIELD(symm_init_attr, frozen_init_attr, bootstrap);
    FIELD(symm_init_attr, frozen_init_attr, thread_level);
    FIELD(symm_init_attr, frozen_init_attr, heap_cap);
    FIELD(symm_init_attr, frozen_init_attr, rank);
    FIELD(symm_init_attr, frozen_init_attr, n_pes);
    FIELD(symm_init_attr, frozen_init_attr, device);
    FIELD(symm_init_attr, frozen_init_attr, timeout_ms);
    expect_u64("offsetof(symm_init_attr, unique_id)", offsetof(symm_init_attr, unique_id),
               offsetof(frozen_init_attr, unique_id));
    expect_u64("sizeof(symm_init_attr.unique_id)", sizeof(((symm_init_attr *)0)->unique_id),
               sizeof(frozen_unique_id));

    SIZE(symm_ctx_info, frozen_ctx_info);
    FIELD(symm_ctx_info, frozen_ctx_info, struct_size);
    FIELD(symm_ctx_info, frozen_ctx_info, backend);
    FIELD(symm_ctx_info, frozen_ctx_info, thread_level);
    FIELD(symm_ctx_info, frozen_ctx_info, my_pe);
    FIELD(symm_ctx_info, frozen_ctx_info, n_pes);
    FIELD(symm_ctx_info, frozen_ctx_info, local_pe);
    FIELD(symm_ctx_info, frozen_ctx_info, local_n_pes);
    FIELD(symm_ctx_info, frozen_ctx_info, device);
    FIELD(symm_ctx_info, frozen_ctx_info, heap_cap);
    FIELD(symm_ctx_info, frozen_ctx_info, heap_mapped);
    FIELD(symm_ctx_info, frozen_ctx_info, heap_used);

    SIZE(symm_team_config, frozen_team_config);
    FIELD(symm_team_config, frozen_team_config, struct_size);
    FIELD(symm_team_config, frozen_team_config, num_contexts);

    SIZE(symm_device_ctx, frozen_device_ctx);
    FIELD(symm_device_ctx, frozen_device_ctx, struct_size);
    FIELD(symm_device_ctx, frozen_device_ctx, my_pe);
    FIELD(symm_device_ctx, frozen_device_ctx, n_pes);
    FIELD(symm_device_ctx, frozen_device_ctx, team_slots);
    FIELD(symm_device_ctx, frozen_device_ctx, heap_cap);
    FIELD(symm_device_ctx, frozen_device_ctx, heap_base);
    FIELD(symm_device_ctx, frozen_device_ctx, slot_bytes);
    FIELD(symm_device_ctx, frozen_device_ctx, peer_table);
    FIELD(symm_device_ctx, frozen_device_ctx, peer_base);
    FIELD(symm_device_ctx, frozen_device_ctx, fail_word);
    FIELD(symm_device_ctx, frozen_device_ctx, device_abi);
    FIELD(symm_device_ctx, frozen_device_ctx, n_rings);
    FIELD(symm_device_ctx, frozen_device_ctx, rings);

    SIZE(symm_device_team, frozen_device_team);
    FIELD(symm_device_team, frozen_device_team, struct_size);
    FIELD(symm_device_team, frozen_device_team, my_pe);
    FIELD(symm_device_team, frozen_device_team, n_pes);
    FIELD(symm_device_team, frozen_device_team, start);
    FIELD(symm_device_team, frozen_device_team, stride);
    FIELD(symm_device_team, frozen_device_team, slot);
    FIELD(symm_device_team, frozen_device_team, reserved);

    SIZE(symm_runtime_negotiation, frozen_negotiation);
    FIELD(symm_runtime_negotiation, frozen_negotiation, struct_size);
    FIELD(symm_runtime_negotiation, frozen_negotiation, loader_abi_major);
    FIELD(symm_runtime_negotiation, frozen_negotiation, loader_abi_minor);
    FIELD(symm_runtime_negotiation, frozen_negotiation, runtime_abi_major);
    FIELD(symm_runtime_negotiation, frozen_negotiation, runtime_abi_minor);
    FIELD(symm_runtime_negotiation, frozen_negotiation, runtime_version);
    expect_u64("offsetof(symm_runtime_negotiation, dispatch)",
               offsetof(symm_runtime_negotiation, dispatch), offsetof(frozen_negotiation, dispatch));
    expect_u64("sizeof(symm_runtime_negotiation.dispatch)",
               sizeof(((symm_runtime_negotiation *)0)->dispatch), sizeof(void *));

#if UINTPTR_MAX == UINT64_MAX
    /* The same figures as numbers, for LP64 (what bindings hard-code). */
    expect_u64("LP64 sizeof(symm_init_attr)", sizeof(symm_init_attr), 168);
    expect_u64("LP64 sizeof(symm_ctx_info)", sizeof(symm_ctx_info), 56);
    expect_u64("LP64 sizeof(symm_team_config)", sizeof(symm_team_config), 8);
    expect_u64("LP64 sizeof(symm_unique_id)", sizeof(symm_unique_id), 128);
    expect_u64("LP64 sizeof(symm_device_ctx)", sizeof(symm_device_ctx), 584);
    expect_u64("LP64 offsetof(symm_device_ctx, peer_table)", offsetof(symm_device_ctx, peer_table), 40);
    expect_u64("LP64 offsetof(symm_device_ctx, peer_base)", offsetof(symm_device_ctx, peer_base), 48);
    expect_u64("LP64 offsetof(symm_device_ctx, fail_word)", offsetof(symm_device_ctx, fail_word), 560);
    expect_u64("LP64 offsetof(symm_device_ctx, device_abi)", offsetof(symm_device_ctx, device_abi), 568);
    expect_u64("LP64 offsetof(symm_device_ctx, rings)", offsetof(symm_device_ctx, rings), 576);
    expect_u64("LP64 sizeof(symm_device_team)", sizeof(symm_device_team), 32);
    expect_u64("LP64 sizeof(symm_runtime_negotiation)", sizeof(symm_runtime_negotiation), 32);
#endif
}

/* ---- the dispatch table: header, then every SYMM 1.0 entry in order ---- */

#define FROZEN_DISPATCH_1_0(FROZEN_ENTRY) \
    FROZEN_ENTRY(symm_get_version, 0) \
    FROZEN_ENTRY(symm_get_unique_id, 1) \
    FROZEN_ENTRY(symm_init, 2) \
    FROZEN_ENTRY(symm_finalize, 3) \
    FROZEN_ENTRY(symm_my_pe, 4) \
    FROZEN_ENTRY(symm_n_pes, 5) \
    FROZEN_ENTRY(symm_ctx_query, 6) \
    FROZEN_ENTRY(symm_ctx_async_error, 7) \
    FROZEN_ENTRY(symm_buf_alloc, 8) \
    FROZEN_ENTRY(symm_buf_free, 9) \
    FROZEN_ENTRY(symm_buf_ptr, 10) \
    FROZEN_ENTRY(symm_buf_query, 11) \
    FROZEN_ENTRY(symm_put, 12) \
    FROZEN_ENTRY(symm_get, 13) \
    FROZEN_ENTRY(symm_put_nbi, 14) \
    FROZEN_ENTRY(symm_get_nbi, 15) \
    FROZEN_ENTRY(symm_p, 16) \
    FROZEN_ENTRY(symm_g, 17) \
    FROZEN_ENTRY(symm_putmem, 18) \
    FROZEN_ENTRY(symm_getmem, 19) \
    FROZEN_ENTRY(symm_putmem_nbi, 20) \
    FROZEN_ENTRY(symm_getmem_nbi, 21) \
    FROZEN_ENTRY(symm_ptr, 22) \
    FROZEN_ENTRY(symm_quiet, 23) \
    FROZEN_ENTRY(symm_fence, 24) \
    FROZEN_ENTRY(symm_barrier_all, 25) \
    FROZEN_ENTRY(symm_sync_all, 26) \
    FROZEN_ENTRY(symm_team_get, 27) \
    FROZEN_ENTRY(symm_team_split_strided, 28) \
    FROZEN_ENTRY(symm_team_split_2d, 29) \
    FROZEN_ENTRY(symm_team_destroy, 30) \
    FROZEN_ENTRY(symm_team_my_pe, 31) \
    FROZEN_ENTRY(symm_team_n_pes, 32) \
    FROZEN_ENTRY(symm_team_translate_pe, 33) \
    FROZEN_ENTRY(symm_team_get_config, 34) \
    FROZEN_ENTRY(symm_put_signal, 35) \
    FROZEN_ENTRY(symm_put_signal_nbi, 36) \
    FROZEN_ENTRY(symm_signal_op, 37) \
    FROZEN_ENTRY(symm_signal_fetch, 38) \
    FROZEN_ENTRY(symm_signal_wait_until, 39) \
    FROZEN_ENTRY(symm_wait_until, 40) \
    FROZEN_ENTRY(symm_wait_until_all, 41) \
    FROZEN_ENTRY(symm_wait_until_any, 42) \
    FROZEN_ENTRY(symm_wait_until_some, 43) \
    FROZEN_ENTRY(symm_wait_until_all_vector, 44) \
    FROZEN_ENTRY(symm_wait_until_any_vector, 45) \
    FROZEN_ENTRY(symm_wait_until_some_vector, 46) \
    FROZEN_ENTRY(symm_test, 47) \
    FROZEN_ENTRY(symm_test_all, 48) \
    FROZEN_ENTRY(symm_test_any, 49) \
    FROZEN_ENTRY(symm_test_some, 50) \
    FROZEN_ENTRY(symm_test_all_vector, 51) \
    FROZEN_ENTRY(symm_test_any_vector, 52) \
    FROZEN_ENTRY(symm_test_some_vector, 53) \
    FROZEN_ENTRY(symm_atomic, 54) \
    FROZEN_ENTRY(symm_atomic_nbi, 55) \
    FROZEN_ENTRY(symm_barrier, 56) \
    FROZEN_ENTRY(symm_team_sync, 57) \
    FROZEN_ENTRY(symm_broadcast, 58) \
    FROZEN_ENTRY(symm_fcollect, 59) \
    FROZEN_ENTRY(symm_collect, 60) \
    FROZEN_ENTRY(symm_alltoall, 61) \
    FROZEN_ENTRY(symm_reduce, 62) \
    FROZEN_ENTRY(symm_reducescatter, 63) \
    FROZEN_ENTRY(symm_put_on_stream, 64) \
    FROZEN_ENTRY(symm_get_on_stream, 65) \
    FROZEN_ENTRY(symm_put_nbi_on_stream, 66) \
    FROZEN_ENTRY(symm_get_nbi_on_stream, 67) \
    FROZEN_ENTRY(symm_p_on_stream, 68) \
    FROZEN_ENTRY(symm_putmem_on_stream, 69) \
    FROZEN_ENTRY(symm_getmem_on_stream, 70) \
    FROZEN_ENTRY(symm_put_signal_on_stream, 71) \
    FROZEN_ENTRY(symm_signal_op_on_stream, 72) \
    FROZEN_ENTRY(symm_signal_wait_until_on_stream, 73) \
    FROZEN_ENTRY(symm_quiet_on_stream, 74) \
    FROZEN_ENTRY(symm_barrier_all_on_stream, 75) \
    FROZEN_ENTRY(symm_barrier_on_stream, 76) \
    FROZEN_ENTRY(symm_team_sync_on_stream, 77) \
    FROZEN_ENTRY(symm_broadcast_on_stream, 78) \
    FROZEN_ENTRY(symm_fcollect_on_stream, 79) \
    FROZEN_ENTRY(symm_alltoall_on_stream, 80) \
    FROZEN_ENTRY(symm_reduce_on_stream, 81) \
    FROZEN_ENTRY(symm_reducescatter_on_stream, 82) \
    FROZEN_ENTRY(symm_buf_peer_ptr, 83) \
    FROZEN_ENTRY(symm_buf_register, 84) \
    FROZEN_ENTRY(symm_device_ctx_get, 85) \
    FROZEN_ENTRY(symm_device_team_get, 86)

#define FROZEN_DISPATCH_1_0_COUNT 87

/* Appended by SYMM 1.2 (1.1 added no entry). */
#define FROZEN_DISPATCH_1_2(FROZEN_ENTRY) \
    FROZEN_ENTRY(symm_alltoallv, 87) \
    FROZEN_ENTRY(symm_alltoallv_on_stream, 88)

#define FROZEN_DISPATCH_1_2_COUNT 89

static void check_dispatch(void) {
    typedef void (*fnptr)(void);
    expect_u64("offsetof(symm_dispatch, struct_size)", offsetof(symm_dispatch, struct_size),
               offsetof(frozen_dispatch_header, struct_size));
    expect_u64("sizeof(symm_dispatch.struct_size)", sizeof(((symm_dispatch *)0)->struct_size), 8);
    expect_u64("offsetof(symm_dispatch, last_error)", offsetof(symm_dispatch, last_error),
               offsetof(frozen_dispatch_header, last_error));
    const size_t first = sizeof(frozen_dispatch_header);
    int n = 0;
#define CHECK_ENTRY(name, index)                                               \
    expect_u64("offsetof(symm_dispatch, " #name ")", offsetof(symm_dispatch, name), \
               first + (size_t)(index) * sizeof(fnptr));                       \
    expect_u64("sizeof(symm_dispatch." #name ")", sizeof(((symm_dispatch *)0)->name), \
               sizeof(fnptr));                                                 \
    n++;
    FROZEN_DISPATCH_1_0(CHECK_ENTRY)
    expect_u64("frozen SYMM 1.0 entries", (uint64_t)n, FROZEN_DISPATCH_1_0_COUNT);
    FROZEN_DISPATCH_1_2(CHECK_ENTRY)
#undef CHECK_ENTRY
    expect_u64("frozen SYMM 1.0 + 1.2 entries", (uint64_t)n, FROZEN_DISPATCH_1_2_COUNT);

    /* Entries now: at least the frozen ones; more only appended at the end. */
    int now = 0;
#define COUNT_ENTRY(ret, name, params, args, fail) now++;
    SYMM_DISPATCH_ENTRIES(COUNT_ENTRY)
#undef COUNT_ENTRY
    checks++;
    if (now < FROZEN_DISPATCH_1_2_COUNT) {
        failures++;
        printf("FAIL the dispatch table has %d entries, fewer than the %d of SYMM 1.2\n", now,
               FROZEN_DISPATCH_1_2_COUNT);
    } else if (now > FROZEN_DISPATCH_1_2_COUNT) {
        printf("note: %d entries appended after SYMM 1.2\n", now - FROZEN_DISPATCH_1_2_COUNT);
    }
    expect_u64("sizeof(symm_dispatch)", sizeof(symm_dispatch), first + (size_t)now * sizeof(fnptr));
}

/* ---- constants ---- */

/* FROZEN: never changes. GROWS: may only grow (counts, minor versions). The
 * list must hold every integer #define of symm.h: check_constants.py checks. */
static void check_constants(void) {
#define FROZEN(name, value) expect_u64(#name, (uint64_t)(name), (uint64_t)(value));
#define GROWS(name, min)                                                       \
    checks++;                                                                  \
    if ((uint64_t)(name) < (uint64_t)(min)) {                                  \
        failures++;                                                            \
        printf("FAIL %s: %llu, below its SYMM 1.0 value %llu\n", #name,         \
               (unsigned long long)(name), (unsigned long long)(min));         \
    }
    FROZEN(SYMM_VERSION_MAJOR, 1)
    GROWS(SYMM_VERSION_MINOR, 0)
    GROWS(SYMM_VERSION_PATCH, 0)
    FROZEN(SYMM_VERSION_ENCODE(1, 2, 3), 1002003)
    /* SYMM_VERSION is a literal for binding generators: it must equal the parts */
    FROZEN(SYMM_VERSION, SYMM_VERSION_ENCODE(SYMM_VERSION_MAJOR, SYMM_VERSION_MINOR,
                                             SYMM_VERSION_PATCH))
    FROZEN(SYMM_ABI_MAJOR, 1)
    GROWS(SYMM_ABI_MINOR, 0)
    FROZEN(SYMM_ABI_MAJOR, SYMM_VERSION_MAJOR)
    expect_str("SYMM_RUNTIME_NEGOTIATE_SYMBOL", SYMM_RUNTIME_NEGOTIATE_SYMBOL,
               "symm_runtime_negotiate");
    expect_str("SYMM_RUNTIME_SONAME", SYMM_RUNTIME_SONAME, "libsymm_runtime.so.1");

    FROZEN(SYMM_SUCCESS, 0)
    FROZEN(SYMM_ERR_INVALID_ARG, 1)
    FROZEN(SYMM_ERR_INVALID_HANDLE, 2)
    FROZEN(SYMM_ERR_OUT_OF_BOUNDS, 3)
    FROZEN(SYMM_ERR_OUT_OF_MEMORY, 4)
    FROZEN(SYMM_ERR_LIBRARY_NOT_FOUND, 5)
    FROZEN(SYMM_ERR_ABI_MISMATCH, 6)
    FROZEN(SYMM_ERR_NOT_SUPPORTED, 7)
    FROZEN(SYMM_ERR_NO_DEVICE, 8)
    FROZEN(SYMM_ERR_BOOTSTRAP, 9)
    FROZEN(SYMM_ERR_PEER_FAILED, 10)
    FROZEN(SYMM_ERR_TIMEOUT, 11)
    FROZEN(SYMM_ERR_MISMATCH, 12)
    FROZEN(SYMM_ERR_TEAM_EXHAUSTED, 13)
    FROZEN(SYMM_ERR_CUDA, 14)
    FROZEN(SYMM_ERR_SYSTEM, 15)
    FROZEN(SYMM_ERR_THREAD_LEVEL, 16)
    FROZEN(SYMM_ERR_INTERNAL, 17)
    FROZEN(SYMM_ERR_INVALID_STATE, 18)
    GROWS(SYMM_STATUS_COUNT, 19)
    /* the status table agrees with the literal #defines and is dense */
    {
        int rows = 0;
#define STATUS_ROW(name, value, description)                                   \
    expect_u64("SYMM_STATUS_TABLE row " #name, (uint64_t)(value), (uint64_t)(name)); \
    expect_u64("SYMM_STATUS_TABLE order at " #name, (uint64_t)(value), (uint64_t)rows); \
    checks++;                                                                  \
    if (!(description)[0]) {                                                   \
        failures++;                                                            \
        printf("FAIL %s has no description\n", #name);                         \
    }                                                                          \
    rows++;
        SYMM_STATUS_TABLE(STATUS_ROW)
#undef STATUS_ROW
        expect_u64("SYMM_STATUS_TABLE rows", (uint64_t)rows, (uint64_t)SYMM_STATUS_COUNT);
    }
    FROZEN(SYMM_BACKEND_AUTO, 0)
    FROZEN(SYMM_BACKEND_HOST, 1)
    FROZEN(SYMM_BACKEND_CUDA, 2)
    FROZEN(SYMM_BOOTSTRAP_AUTO, 0)
    FROZEN(SYMM_BOOTSTRAP_ENV, 1)
    FROZEN(SYMM_BOOTSTRAP_UID, 2)
    FROZEN(SYMM_BOOTSTRAP_SINGLE, 3)
    FROZEN(SYMM_THREAD_SINGLE, 0)
    FROZEN(SYMM_THREAD_FUNNELED, 1)
    FROZEN(SYMM_THREAD_SERIALIZED, 2)
    FROZEN(SYMM_THREAD_MULTIPLE, 3)
    FROZEN(SYMM_DTYPE_INT8, 1)
    FROZEN(SYMM_DTYPE_INT16, 2)
    FROZEN(SYMM_DTYPE_INT32, 3)
    FROZEN(SYMM_DTYPE_INT64, 4)
    FROZEN(SYMM_DTYPE_UINT8, 5)
    FROZEN(SYMM_DTYPE_UINT16, 6)
    FROZEN(SYMM_DTYPE_UINT32, 7)
    FROZEN(SYMM_DTYPE_UINT64, 8)
    FROZEN(SYMM_DTYPE_FLOAT16, 9)
    FROZEN(SYMM_DTYPE_BFLOAT16, 10)
    FROZEN(SYMM_DTYPE_FLOAT32, 11)
    FROZEN(SYMM_DTYPE_FLOAT64, 12)
    GROWS(SYMM_DTYPE_COUNT, 13)
    FROZEN(SYMM_UNIQUE_ID_BYTES, 128)
    FROZEN(SYMM_TEAM_WORLD, 0)
    FROZEN(SYMM_TEAM_SHARED, 1)
    FROZEN(SYMM_TEAM_NODE, 2)
    FROZEN(SYMM_TEAM_SAME_LOCAL_PE, 3)
    FROZEN(SYMM_SIGNAL_SET, 0)
    FROZEN(SYMM_SIGNAL_ADD, 1)
    FROZEN(SYMM_CMP_EQ, 0)
    FROZEN(SYMM_CMP_NE, 1)
    FROZEN(SYMM_CMP_GT, 2)
    FROZEN(SYMM_CMP_GE, 3)
    FROZEN(SYMM_CMP_LT, 4)
    FROZEN(SYMM_CMP_LE, 5)
    FROZEN(SYMM_AMO_FETCH, 0)
    FROZEN(SYMM_AMO_SET, 1)
    FROZEN(SYMM_AMO_COMPARE_SWAP, 2)
    FROZEN(SYMM_AMO_SWAP, 3)
    FROZEN(SYMM_AMO_FETCH_INC, 4)
    FROZEN(SYMM_AMO_INC, 5)
    FROZEN(SYMM_AMO_FETCH_ADD, 6)
    FROZEN(SYMM_AMO_ADD, 7)
    FROZEN(SYMM_AMO_FETCH_AND, 8)
    FROZEN(SYMM_AMO_AND, 9)
    FROZEN(SYMM_AMO_FETCH_OR, 10)
    FROZEN(SYMM_AMO_OR, 11)
    FROZEN(SYMM_AMO_FETCH_XOR, 12)
    FROZEN(SYMM_AMO_XOR, 13)
    FROZEN(SYMM_OP_SUM, 0)
    FROZEN(SYMM_OP_PROD, 1)
    FROZEN(SYMM_OP_MIN, 2)
    FROZEN(SYMM_OP_MAX, 3)
    FROZEN(SYMM_OP_AND, 4)
    FROZEN(SYMM_OP_OR, 5)
    FROZEN(SYMM_OP_XOR, 6)
    FROZEN(SYMM_DEVICE_FAST_PES, 64)
    FROZEN(SYMM_DEVICE_ABI_VERSION, 2)
    FROZEN(SYMM_ASYNC_CLEAR, 1)
    FROZEN(SYMM_INDEX_NONE, UINT64_MAX)
#undef FROZEN
#undef GROWS
    expect_u64("sizeof(symm_status)", sizeof(symm_status), 4);
    expect_str("symm_status is", KIND((symm_status)0), "int32");
}

int main(void) {
    check_structs();
    check_dispatch();
    check_constants();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}

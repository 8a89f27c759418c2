/* Unit tests of runtime internals: allocator, handle tables, size parsing,
 * attribute defaults, the asynchronous-error record, the routing of GPU
 * buffers to a transport (staging, dma-buf). Linked against the
 * runtime's objects directly. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "symm_test.h"
#include "tp.h"
#ifdef SYMM_HAVE_CUDA
#include "coll_plan.h"
#include "kernel_params.h"
#endif

/* The loader answers these in applications; the unit test links the runtime
 * objects directly, so it supplies them. */
const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

/* Reference model: a byte map of the range; checks allocations never overlap,
 * stay in range, honour alignment, and that freed space is reusable. */
static void test_alloc_random(void) {
    enum { START = 4096, END = 1 << 20, N = 256 };
    symm__alloc a, b;
    CHECK_OK(symm__alloc_init(&a, START, END));
    CHECK_OK(symm__alloc_init(&b, START, END));
    uint8_t *owner = calloc(END, 1);
    uint64_t offs[N] = {0}, lens[N] = {0};
    unsigned seed = 12345;
    for (int step = 0; step < 20000; step++) {
        int i = rand_r(&seed) % N;
        if (lens[i]) {
            for (uint64_t k = 0; k < lens[i]; k++) ASSERT_EQ(owner[offs[i] + k], (uint8_t)(i + 1));
            memset(owner + offs[i], 0, lens[i]);
            symm__alloc_give(&a, offs[i], lens[i]);
            symm__alloc_give(&b, offs[i], lens[i]);
            lens[i] = 0;
        } else {
            uint64_t len = (uint64_t)(rand_r(&seed) % 8192 + 1);
            uint64_t align = 1ull << (rand_r(&seed) % 9);
            uint64_t off, off2;
            bool ok = symm__alloc_take(&a, len, align, &off);
            bool ok2 = symm__alloc_take(&b, len, align, &off2);
            ASSERT_EQ(ok, ok2); /* determinism: same sequence, same answer */
            if (!ok) continue;
            ASSERT_U64_EQ(off, off2);
            ASSERT_EQ(off % align, 0);
            ASSERT_TRUE(off >= START && off + len <= END);
            for (uint64_t k = 0; k < len; k++) {
                ASSERT_EQ(owner[off + k], 0);
                owner[off + k] = (uint8_t)(i + 1);
            }
            offs[i] = off;
            lens[i] = len;
        }
    }
    for (int i = 0; i < N; i++)
        if (lens[i]) symm__alloc_give(&a, offs[i], lens[i]);
    /* Everything coalesces back into one range. */
    ASSERT_EQ(a.n_free, 1);
    ASSERT_U64_EQ(a.used, 0);
    uint64_t off;
    ASSERT_TRUE(symm__alloc_take(&a, END - START, 1, &off));
    ASSERT_U64_EQ(off, START);
    ASSERT_TRUE(!symm__alloc_take(&a, 1, 1, &off)); /* full */
    symm__alloc_fini(&a);
    symm__alloc_fini(&b);
    free(owner);
}

static void test_handles(void) {
    int x, y;
    uint64_t h1 = symm__handle_new(SYMM__KIND_BUF, &x);
    ASSERT_TRUE(h1 != 0);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_BUF, h1) == &x);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_TEAM, h1) == NULL); /* wrong kind */
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_BUF, 0) == NULL);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_BUF, 0xdeadbeefcafef00dull) == NULL);
    symm__handle_release(SYMM__KIND_BUF, h1);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_BUF, h1) == NULL); /* stale */
    uint64_t h2 = symm__handle_new(SYMM__KIND_BUF, &y);        /* reuses the slot */
    ASSERT_TRUE(h2 != h1);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_BUF, h1) == NULL);
    ASSERT_TRUE(symm__handle_get(SYMM__KIND_BUF, h2) == &y);
    symm__handle_release(SYMM__KIND_BUF, h2);
    symm__handle_release(SYMM__KIND_BUF, h2); /* double release is harmless */
    /* Many live handles, all distinct and resolvable. */
    enum { M = 5000 };
    static uint64_t hs[M];
    for (int i = 0; i < M; i++) hs[i] = symm__handle_new(SYMM__KIND_CTX, &hs[i]);
    for (int i = 0; i < M; i++) ASSERT_TRUE(symm__handle_get(SYMM__KIND_CTX, hs[i]) == &hs[i]);
    for (int i = 0; i < M; i++) symm__handle_release(SYMM__KIND_CTX, hs[i]);
    for (int i = 0; i < M; i++) ASSERT_TRUE(symm__handle_get(SYMM__KIND_CTX, hs[i]) == NULL);
}

static void test_parse_size(void) {
    uint64_t v;
    ASSERT_TRUE(symm__parse_size("4096", &v) && v == 4096);
    ASSERT_TRUE(symm__parse_size("64M", &v) && v == 64ull << 20);
    ASSERT_TRUE(symm__parse_size("2g", &v) && v == 2ull << 30);
    ASSERT_TRUE(symm__parse_size("1GiB", &v) && v == 1ull << 30);
    ASSERT_TRUE(symm__parse_size("3KB", &v) && v == 3072);
    ASSERT_TRUE(!symm__parse_size("", &v));
    ASSERT_TRUE(!symm__parse_size("12X", &v));
    ASSERT_TRUE(!symm__parse_size("-1", &v));
    ASSERT_TRUE(!symm__parse_size("99999999999999T", &v)); /* overflow */
    ASSERT_TRUE(!symm__parse_size("M", &v));
    /* Values that wrapped or saturated, signs, spaces (docs/BAD-INPUT.md). */
    v = 7;
    ASSERT_TRUE(!symm__parse_size("99999999999999999999", &v)); /* ERANGE */
    ASSERT_TRUE(!symm__parse_size("18446744073709551616", &v)); /* 2^64 */
    ASSERT_TRUE(symm__parse_size("18446744073709551615", &v) && v == UINT64_MAX);
    ASSERT_TRUE(!symm__parse_size(" -1", &v));
    ASSERT_TRUE(!symm__parse_size(" 1", &v));
    ASSERT_TRUE(!symm__parse_size("+1", &v));
    ASSERT_TRUE(!symm__parse_size("\t64M", &v));
    ASSERT_TRUE(!symm__parse_size("16777216T", &v)); /* 2^64: overflow with a suffix */
    ASSERT_TRUE(symm__parse_size("16777215T", &v) && v == 16777215ull << 40);
    ASSERT_TRUE(!symm__parse_size("1 M", &v));
    ASSERT_TRUE(!symm__parse_size("0x10", &v));
    ASSERT_TRUE(symm__parse_size("0", &v) && v == 0);
    ASSERT_TRUE(symm__parse_size("6b", &v) && v == 6); /* fuzz_env: bytes with a bare B */
    ASSERT_TRUE(!symm__parse_size("6iB", &v));
}

/* Sizes that parse but cannot be a heap (docs/BAD-INPUT.md): each is refused
 * with INVALID_ARG and a message naming the variable, never "reserving 0
 * bytes" later. */
static void test_config_sizes(void) {
    symm__config cfg;
    unsetenv("SYMM_HEAP_CAP");
    unsetenv("SYMM_HEAP_CHUNK");
    unsetenv("SYMM_TIMEOUT_MS");
    unsetenv("SYMM_PEER_TIMEOUT_MS");
    static const struct {
        const char *var, *val, *says;
    } bad[] = {
        {"SYMM_HEAP_CAP", "99999999999999999999", "SYMM_HEAP_CAP"},
        {"SYMM_HEAP_CAP", " -1", "SYMM_HEAP_CAP"},
        {"SYMM_HEAP_CAP", "-1", "SYMM_HEAP_CAP"},
        {"SYMM_HEAP_CAP", "18446744073709551615", "above 128T"},
        {"SYMM_HEAP_CAP", "16777215T", "above 128T"},
        {"SYMM_HEAP_CHUNK", "8388608T", "SYMM_HEAP_CHUNK"},
        {"SYMM_HEAP_CHUNK", "256T", "SYMM_HEAP_CHUNK"},
        {"SYMM_HEAP_CHUNK", " 64K", "SYMM_HEAP_CHUNK"},
        {"SYMM_TIMEOUT_MS", "99999999999999999999", "SYMM_TIMEOUT_MS"},
        {"SYMM_TIMEOUT_MS", " -1", "SYMM_TIMEOUT_MS"},
        {"SYMM_PEER_TIMEOUT_MS", "-5", "SYMM_PEER_TIMEOUT_MS"},
        {"SYMM_PEER_TIMEOUT_MS", "18446744073709551617", "SYMM_PEER_TIMEOUT_MS"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv(bad[i].var, bad[i].val, 1);
        CHECK_STATUS(symm__config_load(NULL, &cfg), SYMM_ERR_INVALID_ARG);
        if (!strstr(symm__last_error(), bad[i].says)) {
            fprintf(stderr, "%s=\"%s\": message \"%s\" lacks \"%s\"\n", bad[i].var, bad[i].val,
                    symm__last_error(), bad[i].says);
            exit(1);
        }
        unsetenv(bad[i].var);
    }
    /* The largest accepted cap rounds up without wrapping. */
    setenv("SYMM_HEAP_CAP", "128T", 1);
    CHECK_OK(symm__config_load(NULL, &cfg));
    ASSERT_U64_EQ(cfg.heap_cap, 128ull << 40);
    ASSERT_TRUE(cfg.heap_cap % cfg.heap_chunk == 0);
    unsetenv("SYMM_HEAP_CAP");
    /* attr->heap_cap = UINT64_MAX wrapped to 0 when rounded up to a chunk. */
    symm_init_attr a;
    symm_init_attr_init(&a, sizeof a);
    a.heap_cap = UINT64_MAX;
    CHECK_STATUS(symm__config_load(&a, &cfg), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm__last_error(), "heap_cap") != NULL);
    a.heap_cap = UINT64_MAX - (64ull << 20) + 2;
    CHECK_STATUS(symm__config_load(&a, &cfg), SYMM_ERR_INVALID_ARG);
    a.heap_cap = 1;
    CHECK_OK(symm__config_load(&a, &cfg));
    ASSERT_TRUE(cfg.heap_cap >= SYMM__SYS_BYTES + cfg.heap_chunk);
}

/* Run symm__config_load with stderr (where the log goes) captured into
 * out; its status. */
static symm_status config_load_captured(const symm_init_attr *attr, symm__config *cfg, char *out,
                                        size_t cap) {
    FILE *tmp = tmpfile();
    ASSERT_TRUE(tmp != NULL);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    ASSERT_TRUE(saved >= 0 && dup2(fileno(tmp), STDERR_FILENO) >= 0);
    symm_status st = symm__config_load(attr, cfg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(out, 1, cap - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    return st;
}

/* A cap below the smallest heap (the system area and one chunk, in whole
 * chunks) is raised to it with a WARN naming the variable and the size used,
 * never silently (4M and 64M both became 128 MiB without a word); an empty
 * SYMM_HEAP_CAP= is the default cap, as other empty variables are unset. */
static void test_heap_cap_minimum(void) {
    symm__config cfg;
    char log[4096];
    unsetenv("SYMM_HEAP_CHUNK");
    unsetenv("SYMM_DEBUG");
    const uint64_t min_cap = 128ull << 20; /* 128 KiB system area + one 64 MiB chunk */
    static const char *const small[] = {"4M", "64M", "0", "100M"};
    for (size_t i = 0; i < sizeof small / sizeof small[0]; i++) {
        setenv("SYMM_HEAP_CAP", small[i], 1);
        CHECK_OK(config_load_captured(NULL, &cfg, log, sizeof log));
        ASSERT_U64_EQ(cfg.heap_cap, min_cap);
        if (!strstr(log, "WARN") || !strstr(log, "SYMM_HEAP_CAP") || !strstr(log, "134217728")) {
            fprintf(stderr, "SYMM_HEAP_CAP=%s: no warning naming it and 134217728: \"%s\"\n",
                    small[i], log);
            exit(1);
        }
    }
    /* At the minimum, and above it: no warning. */
    setenv("SYMM_HEAP_CAP", "128M", 1);
    CHECK_OK(config_load_captured(NULL, &cfg, log, sizeof log));
    ASSERT_U64_EQ(cfg.heap_cap, min_cap);
    ASSERT_TRUE(strstr(log, "SYMM_HEAP_CAP") == NULL);
    /* A smaller chunk lowers the minimum (the test suites' 64M with 1M). */
    setenv("SYMM_HEAP_CHUNK", "1M", 1);
    setenv("SYMM_HEAP_CAP", "64M", 1);
    CHECK_OK(config_load_captured(NULL, &cfg, log, sizeof log));
    ASSERT_U64_EQ(cfg.heap_cap, 64ull << 20);
    ASSERT_TRUE(strstr(log, "SYMM_HEAP_CAP") == NULL);
    unsetenv("SYMM_HEAP_CHUNK");
    /* The attribute is named when it is the cap. */
    unsetenv("SYMM_HEAP_CAP");
    symm_init_attr a;
    symm_init_attr_init(&a, sizeof a);
    a.heap_cap = 1;
    CHECK_OK(config_load_captured(&a, &cfg, log, sizeof log));
    ASSERT_U64_EQ(cfg.heap_cap, min_cap);
    ASSERT_TRUE(strstr(log, "attr->heap_cap") != NULL);
    /* Empty sizes are unset: the defaults, no error. */
    static const char *const vars[] = {"SYMM_HEAP_CAP", "SYMM_HEAP_CHUNK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        setenv(vars[i], "", 1);
        CHECK_OK(config_load_captured(NULL, &cfg, log, sizeof log));
        unsetenv(vars[i]);
    }
    setenv("SYMM_HEAP_CAP", "", 1);
    CHECK_OK(config_load_captured(NULL, &cfg, log, sizeof log));
    ASSERT_U64_EQ(cfg.heap_cap, 16ull << 30);
    ASSERT_TRUE(strstr(log, "SYMM_HEAP_CAP") == NULL);
    unsetenv("SYMM_HEAP_CAP");
}

static void test_attr_defaults(void) {
    symm_init_attr a;
    memset(&a, 0xff, sizeof a);
    CHECK_OK(symm_init_attr_init(&a, sizeof a));
    ASSERT_EQ(a.struct_size, sizeof a);
    ASSERT_EQ(a.backend, SYMM_BACKEND_AUTO);
    ASSERT_EQ(a.device, -1);
    ASSERT_U64_EQ(a.heap_cap, 0);
    CHECK_STATUS(symm_init_attr_init(NULL, sizeof a), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_init_attr_init(&a, 4), SYMM_ERR_INVALID_ARG);
    /* An older, smaller struct: only its bytes are written. */
    unsigned char small[sizeof a + 8];
    memset(small, 0xab, sizeof small);
    uint32_t old_size = (uint32_t)offsetof(symm_init_attr, device);
    CHECK_OK(symm_init_attr_init((symm_init_attr *)small, old_size));
    for (size_t i = old_size; i < sizeof small; i++) ASSERT_EQ(small[i], 0xab);

    symm__config cfg;
    setenv("SYMM_HEAP_CHUNK", "3M", 1); /* not a power of two */
    CHECK_STATUS(symm__config_load(NULL, &cfg), SYMM_ERR_INVALID_ARG);
    setenv("SYMM_HEAP_CHUNK", "1M", 1);
    setenv("SYMM_HEAP_CAP", "10M", 1);
    CHECK_OK(symm__config_load(NULL, &cfg));
    ASSERT_U64_EQ(cfg.heap_cap, 10ull << 20);
    setenv("SYMM_HEAP_CAP", "lots", 1);
    CHECK_STATUS(symm__config_load(NULL, &cfg), SYMM_ERR_INVALID_ARG);
    unsetenv("SYMM_HEAP_CAP");
    setenv("SYMM_BACKEND", "quantum", 1);
    CHECK_STATUS(symm__config_load(NULL, &cfg), SYMM_ERR_INVALID_ARG);
    unsetenv("SYMM_BACKEND");
    symm_init_attr bad;
    symm_init_attr_init(&bad, sizeof bad);
    bad.thread_level = 9;
    CHECK_STATUS(symm__config_load(&bad, &cfg), SYMM_ERR_INVALID_ARG);
    symm_init_attr_init(&bad, sizeof bad);
    bad.bootstrap = SYMM_BOOTSTRAP_UID;
    bad.n_pes = 2;
    bad.rank = 2;
    CHECK_STATUS(symm__config_load(&bad, &cfg), SYMM_ERR_INVALID_ARG);
}

/* The asynchronous-error record as symm_ctx_async_error reports it: the first
 * failure is kept and later ones counted, messages are truncated with their NUL
 * inside msg_cap (nothing written past it), CLEAR empties the record. The host
 * backend never records one itself, so the test records through the runtime's
 * own entry (the GPU suite records a real one: tests/gpu/gpu_async.cu). */
static void test_async_record(void) {
    symm_init_attr attr;
    CHECK_OK(symm_init_attr_init(&attr, sizeof attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_SINGLE;
    symm_ctx h = NULL;
    CHECK_OK(symm_init(&attr, &h));
    symm__ctx *ctx = NULL;
    CHECK_OK(symm__ctx_get(h, &ctx));

    symm_status st = -1;
    char msg[128];
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_SUCCESS);
    ASSERT_TRUE(strcmp(msg, "") == 0);

    symm__async_record(ctx, SYMM_ERR_TIMEOUT, "wait gave up after %d ms", 5);
    const char *first = "wait gave up after 5 ms";
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT);
    ASSERT_TRUE(strcmp(msg, first) == 0);

    symm__async_record(ctx, SYMM_ERR_PEER_FAILED, "second failure");
    symm__async_record(ctx, SYMM_ERR_CUDA, "third failure");
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT); /* the first is kept */
    ASSERT_TRUE(strcmp(msg, "wait gave up after 5 ms (and 2 later failures)") == 0);

    /* Truncation: at most msg_cap bytes, NUL included; the note on later
     * failures only when it fits whole. */
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, 8, &st, msg));
    ASSERT_TRUE(strcmp(msg, "wait ga") == 0);
    ASSERT_EQ(msg[8], 'X');
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, strlen(first) + 1, &st, msg));
    ASSERT_TRUE(strcmp(msg, first) == 0);
    ASSERT_EQ(msg[strlen(first) + 1], 'X');
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, 1, &st, msg));
    ASSERT_EQ(msg[0], '\0');
    ASSERT_EQ(msg[1], 'X');
    st = -1;
    CHECK_OK(symm_ctx_async_error(h, 0, 0, &st, NULL)); /* status only */
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT);

    /* Reading without CLEAR kept it; CLEAR reports it once more, then empties. */
    CHECK_OK(symm_ctx_async_error(h, SYMM_ASYNC_CLEAR, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_ERR_TIMEOUT);
    ASSERT_TRUE(strcmp(msg, "wait gave up after 5 ms (and 2 later failures)") == 0);
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(h, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_SUCCESS);
    ASSERT_TRUE(strcmp(msg, "") == 0);
    /* A new failure after a clear is the new first one. */
    symm__async_record(ctx, SYMM_ERR_PEER_FAILED, "peer %d died", 3);
    CHECK_OK(symm_ctx_async_error(h, SYMM_ASYNC_CLEAR, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(strcmp(msg, "peer 3 died") == 0);

    /* Refusals write nothing. */
    st = -1;
    CHECK_STATUS(symm_ctx_async_error(h, 2, 0, &st, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_ctx_async_error(h, 0, 4, &st, NULL), SYMM_ERR_INVALID_ARG);
    ASSERT_EQ(st, -1);
    CHECK_OK(symm_finalize(&h));
}

static void test_status_names(void) {
    ASSERT_TRUE(strcmp(symm__status_name(SYMM_ERR_OUT_OF_BOUNDS), "SYMM_ERR_OUT_OF_BOUNDS") == 0);
    ASSERT_TRUE(strcmp(symm__status_name(-4), "SYMM_ERR_UNKNOWN") == 0);
    ASSERT_TRUE(strcmp(symm__status_name(SYMM_STATUS_COUNT), "SYMM_ERR_UNKNOWN") == 0);
    for (int s = 0; s < SYMM_STATUS_COUNT; s++) ASSERT_TRUE(strncmp(symm__status_name(s), "SYMM_", 5) == 0);
}

/* Bad arguments of the rows in docs/BAD-INPUT.md that no other test checks:
 * each gets its documented status, on a one-PE host context. */
static void test_bad_args(void) {
    symm_init_attr attr;
    CHECK_OK(symm_init_attr_init(&attr, sizeof attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_SINGLE;
    symm_ctx h = NULL;
    CHECK_STATUS(symm_init(&attr, NULL), SYMM_ERR_INVALID_ARG);
    symm_init_attr bad = attr;
    bad.struct_size = 4;
    CHECK_STATUS(symm_init(&bad, &h), SYMM_ERR_INVALID_ARG);
    bad = attr;
    bad.backend = 9;
    CHECK_STATUS(symm_init(&bad, &h), SYMM_ERR_INVALID_ARG);
    bad = attr;
    bad.bootstrap = 9;
    CHECK_STATUS(symm_init(&bad, &h), SYMM_ERR_INVALID_ARG);
    bad = attr;
    bad.heap_cap = UINT64_MAX;
    CHECK_STATUS(symm_init(&bad, &h), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_get_unique_id(NULL), SYMM_ERR_INVALID_ARG);
    CHECK_OK(symm_init(&attr, &h));

    /* context queries */
    ASSERT_EQ(symm_my_pe(NULL), -1);
    ASSERT_EQ(symm_n_pes(NULL), -1);
    CHECK_STATUS(symm_ctx_query(h, NULL), SYMM_ERR_INVALID_ARG);
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = 4;
    CHECK_STATUS(symm_ctx_query(h, &info), SYMM_ERR_INVALID_ARG);
    info.struct_size = sizeof info;
    CHECK_STATUS(symm_ctx_query(NULL, &info), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_fence(NULL), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_sync_all((symm_ctx)(uintptr_t)0x1234), SYMM_ERR_INVALID_HANDLE);

    /* buffers */
    symm_buf b = NULL;
    CHECK_OK(symm_buf_alloc(h, SYMM_DTYPE_INT32, 16, &b));
    CHECK_STATUS(symm_buf_alloc(h, SYMM_DTYPE_INT32, 16, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_buf_alloc(h, 0, 16, &b), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_buf_alloc(h, SYMM_DTYPE_INT64, UINT64_MAX / 4, &b), SYMM_ERR_OUT_OF_MEMORY);
    CHECK_STATUS(symm_buf_query((symm_buf)h, NULL, NULL, NULL), SYMM_ERR_INVALID_HANDLE);
    void *p = NULL;
    CHECK_STATUS(symm_buf_peer_ptr(b, 1, &p), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_buf_peer_ptr(b, 0, NULL), SYMM_ERR_INVALID_ARG);
    int32_t v[16] = {0};
    CHECK_STATUS(symm_put(b, 0, NULL, 1, 0), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_put(b, UINT64_MAX, v, 2, 0), SYMM_ERR_OUT_OF_BOUNDS); /* index + n wraps */
    CHECK_STATUS(symm_get(v, b, 0, 1, INT32_MIN), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_putmem(h, v, v, 4, 0), SYMM_ERR_OUT_OF_BOUNDS); /* not in the heap */
    CHECK_STATUS(symm_getmem(h, v, NULL, 4, 0), SYMM_ERR_OUT_OF_BOUNDS);
    CHECK_STATUS(symm_atomic(b, 0, 99, v, NULL, 0, NULL), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_atomic(b, 0, SYMM_AMO_FETCH, NULL, NULL, 0, NULL), SYMM_ERR_INVALID_ARG);
    int32_t sat = 0;
    CHECK_STATUS(symm_test(b, 0, 6, v, &sat), SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_wait_until_all(b, 0, UINT64_MAX, NULL, SYMM_CMP_EQ, v),
                 SYMM_ERR_OUT_OF_BOUNDS);

    /* teams */
    symm_team w = NULL;
    CHECK_OK(symm_team_get(h, SYMM_TEAM_WORLD, &w));
    ASSERT_EQ(symm_team_my_pe(NULL), -1);
    ASSERT_EQ(symm_team_n_pes((symm_team)b), -1);
    ASSERT_EQ(symm_team_translate_pe(w, 5, w), -1);
    CHECK_STATUS(symm_broadcast(w, b, 0, b, 0, 1, 1), SYMM_ERR_INVALID_ARG); /* root */
    CHECK_STATUS(symm_reduce(w, b, 0, b, 0, 1, 99), SYMM_ERR_INVALID_ARG);   /* op */

    /* host backend: no device context */
    symm_device_ctx dc;
    memset(&dc, 0, sizeof dc);
    dc.struct_size = sizeof dc;
    CHECK_STATUS(symm_device_ctx_get(h, &dc), SYMM_ERR_NOT_SUPPORTED);

    CHECK_OK(symm_finalize(NULL)); /* documented: ctx may be NULL */
    symm_ctx stale = h;
    CHECK_OK(symm_finalize(&h));
    ASSERT_TRUE(h == NULL);
    /* everything on the finalized context is a stale handle */
    CHECK_STATUS(symm_quiet(stale), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_put(b, 0, v, 1, 0), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_barrier(w), SYMM_ERR_INVALID_HANDLE);
    CHECK_STATUS(symm_finalize(&stale), SYMM_ERR_INVALID_HANDLE);
}

/* ---- routing to a transport with a GPU backend (fakes on both sides) ----
 * PE 0 of 2, PE 1 on another host. The fake backend calls a range of host
 * memory "device memory"; the fake transport keeps PE 1's heap in an array
 * and records every call. A device buffer outside the heap must reach the
 * transport as host memory (staged, blocking pieces, the signal with the last
 * piece); device memory inside the heap and host memory go as they are. */
#define FK_HEAP (4u << 20)
static uint8_t fk_remote[FK_HEAP];          /* PE 1's heap */
static uint8_t fk_dev[3u << 20];             /* "GPU memory" outside the heap */
static uint8_t *fk_heap;                     /* PE 0's heap ("GPU memory" too) */
static struct {
    int puts, gets, signals, copies, mem_adds, exports;
    int staged_ptr;   /* a transport call saw a pointer into fk_dev */
    int dev_partial;  /* ... or device bytes in a partial word */
    int small_puts, bputs, bput_partial, sig_at_puts;
    uint32_t last_flags;
    uint64_t max_piece;
    int fd, fd_open, kind;
} fk;

static bool fk_is_dev(symm__ctx *ctx, const void *p) {
    (void)ctx;
    const uint8_t *c = p;
    return (c >= fk_dev && c < fk_dev + sizeof fk_dev) || (c >= fk_heap && c < fk_heap + FK_HEAP);
}
static symm_status fk_copy(symm__ctx *ctx, void *dst, const void *src, uint64_t n) {
    (void)ctx;
    fk.copies++;
    memcpy(dst, src, n);
    return SYMM_SUCCESS;
}
static int fk_dmabuf(symm__ctx *ctx, uint64_t off, uint64_t len) {
    (void)ctx;
    (void)off;
    (void)len;
    fk.exports++;
    fk.fd = open("/dev/null", O_RDONLY);
    return fk.fd;
}
static void fk_seen(const void *p, uint64_t off, uint64_t n, uint32_t flags) {
    const uint8_t *c = p;
    if (c >= fk_dev && c < fk_dev + sizeof fk_dev) fk.staged_ptr = 1;
    /* device bytes in a partial 64-bit word: the plugin would read them with the CPU */
    if (n && ((off | n) & 7) && fk_is_dev(NULL, p)) fk.dev_partial = 1;
    if (n > fk.max_piece) fk.max_piece = n;
    fk.last_flags = flags;
}
static int32_t fk_put(void *st, int32_t pe, uint64_t off, const void *src, uint64_t n, uint32_t flags) {
    (void)st;
    if (pe < 0 || pe > 1 || off + n > FK_HEAP) return SYMM_ERR_INTERNAL;
    fk_seen(src, off, n, flags);
    fk.puts++;
    if (n < 8) fk.small_puts++;
    memcpy((pe ? fk_remote : fk_heap) + off, src, n);
    return 0;
}
/* the backend's own put (this host's PEs: PE 0 only here) */
static symm_status fk_bput(symm__ctx *ctx, int32_t pe, uint64_t off, const void *src, uint64_t n,
                           uint32_t flags) {
    (void)ctx;
    (void)flags;
    if (pe != 0 || off + n > FK_HEAP) return SYMM_ERR_INTERNAL;
    fk.bputs++;
    if ((off | n) & 7) fk.bput_partial++;
    memcpy(fk_heap + off, src, n);
    return SYMM_SUCCESS;
}
static symm_status fk_bfence(symm__ctx *ctx) {
    (void)ctx;
    return SYMM_SUCCESS;
}
static int32_t fk_get(void *st, void *dst, int32_t pe, uint64_t off, uint64_t n, uint32_t flags) {
    (void)st;
    if (pe != 1 || off + n > FK_HEAP) return SYMM_ERR_INTERNAL;
    fk_seen(dst, off, n, flags);
    fk.gets++;
    memcpy(dst, fk_remote + off, n);
    return 0;
}
static int32_t fk_put_signal(void *st, int32_t pe, uint64_t off, const void *src, uint64_t n,
                             uint64_t sig_off, uint64_t v, uint32_t sig_op, uint32_t flags) {
    int32_t rc = fk_put(st, pe, off, src, n, flags);
    if (rc) return rc;
    fk.sig_at_puts = fk.puts; /* puts made when the signal lands */
    fk.signals++;
    uint64_t s;
    memcpy(&s, fk_remote + sig_off, 8);
    s = sig_op == SYMM_SIGNAL_ADD ? s + v : v;
    memcpy(fk_remote + sig_off, &s, 8);
    return 0;
}
static int32_t fk_mem_add(void *st, void *base, uint64_t off, uint64_t len, uint32_t kind, int fd) {
    (void)st;
    (void)base;
    (void)off;
    (void)len;
    fk.mem_adds++;
    fk.kind = (int)kind;
    fk.fd_open = fd >= 0 && fd == fk.fd && fcntl(fd, F_GETFD) != -1;
    return 0;
}

static void test_route_gpu_staging(void) {
    static const symm_tp_ops tops = {.size = sizeof(symm_tp_ops), .iface = SYMM_TP_IFACE,
                                     .name = "fake", .put = fk_put, .get = fk_get,
                                     .put_signal = fk_put_signal, .mem_add = fk_mem_add};
    symm__backend_ops bops = {.name = "fakegpu", .id = SYMM_BACKEND_CUDA, .has_device = true,
                              .is_device_mem = fk_is_dev, .local_copy = fk_copy,
                              .dmabuf_fd = fk_dmabuf, .put = fk_bput, .fence = fk_bfence};
    fk_heap = calloc(1, FK_HEAP);
    ASSERT_TRUE(fk_heap != NULL);
    uint8_t remote[2] = {0, 1};
    struct symm__tp tp;
    memset(&tp, 0, sizeof tp);
    tp.ops = &tops;
    snprintf(tp.name, sizeof tp.name, "fake");
    pthread_mutex_init(&tp.lock, NULL);
    symm__ctx *ctx = calloc(1, sizeof *ctx);
    ASSERT_TRUE(ctx != NULL);
    ctx->ops = &bops;
    ctx->my_pe = 0;
    ctx->n_pes = 2;
    ctx->remote = remote;
    ctx->n_remote = 1;
    ctx->tp = &tp;
    ctx->heap_base = fk_heap;
    ctx->heap_cap = FK_HEAP;
    tp.state = &fk; /* anything non-NULL */

    /* mem_add: GPU kind, with the backend's dma-buf, closed afterwards */
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__tp_mem_add(ctx, fk_heap, 0, 2u << 20));
    ASSERT_EQ(fk.exports, 1);
    ASSERT_EQ(fk.mem_adds, 1);
    ASSERT_EQ(fk.kind, (int)SYMM_TP_MEM_CUDA);
    ASSERT_TRUE(fk.fd_open);                        /* valid during mem_add */
    ASSERT_TRUE(fcntl(fk.fd, F_GETFD) == -1);       /* the core closed it */

    /* put from a device buffer outside the heap: 2.5 MiB in 1 MiB pieces */
    const uint64_t n = (5u << 20) / 2;
    for (uint64_t i = 0; i < n; i++) fk_dev[i] = (uint8_t)(i * 13 + 1);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put(ctx, 1, 4096, fk_dev, n, SYMM__NBI));
    ASSERT_EQ(fk.staged_ptr, 0);
    ASSERT_EQ(fk.puts, 3);
    ASSERT_EQ(fk.copies, 3);
    ASSERT_TRUE(fk.max_piece <= (1u << 20));
    ASSERT_EQ(fk.last_flags, 0u); /* blocking: the staging buffer is reused */
    ASSERT_TRUE(memcmp(fk_remote + 4096, fk_dev, n) == 0);

    /* get into a device buffer outside the heap */
    for (uint64_t i = 0; i < n; i++) fk_remote[8192 + i] = (uint8_t)(i * 7 + 3);
    memset(fk_dev, 0, sizeof fk_dev);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__get(ctx, fk_dev, 1, 8192, n, 0));
    ASSERT_EQ(fk.staged_ptr, 0);
    ASSERT_EQ(fk.gets, 3);
    ASSERT_EQ(fk.copies, 3);
    ASSERT_TRUE(memcmp(fk_dev, fk_remote + 8192, n) == 0);

    /* put_signal from a device buffer: pieces first, the signal with the last */
    memset(fk_remote, 0, FK_HEAP);
    for (uint64_t i = 0; i < n; i++) fk_dev[i] = (uint8_t)(i * 5 + 2);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put_signal(ctx, 1, 0, fk_dev, n, FK_HEAP - 8, 41, SYMM_AMO_ADD, 0));
    ASSERT_EQ(fk.staged_ptr, 0);
    ASSERT_EQ(fk.signals, 1);
    ASSERT_EQ(fk.puts, 3); /* 2 plain pieces + the one that carries the signal */
    ASSERT_TRUE(memcmp(fk_remote, fk_dev, n) == 0);
    uint64_t sig;
    memcpy(&sig, fk_remote + FK_HEAP - 8, 8);
    ASSERT_EQ(sig, 41u);
    /* a piece-sized put_signal: one call, the signal with all of it */
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put_signal(ctx, 1, 0, fk_dev, 1u << 20, FK_HEAP - 8, 1, SYMM_AMO_ADD, 0));
    ASSERT_EQ(fk.puts, 1);
    ASSERT_EQ(fk.signals, 1);

    /* device memory inside the heap and host memory go as they are (nbi kept) */
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put(ctx, 1, 0, fk_heap + 64, 3u << 20, SYMM__NBI));
    ASSERT_EQ(fk.copies, 0);
    ASSERT_EQ(fk.puts, 1);
    ASSERT_EQ(fk.last_flags, SYMM_TP_NBI);
    uint8_t host[64] = {1, 2, 3};
    CHECK_OK(symm__put(ctx, 1, 0, host, sizeof host, SYMM__NBI));
    CHECK_OK(symm__get(ctx, host, 1, 0, sizeof host, 0));
    ASSERT_EQ(fk.copies, 0);
    /* zero bytes: nothing staged */
    CHECK_OK(symm__put(ctx, 1, 0, fk_dev, 0, 0));
    ASSERT_EQ(fk.copies, 0);

    /* partial 64-bit words from device memory (the heap too): the edges reach
     * the transport from host copies, whole words as they are */
    for (int i = 0; i < 64; i++) fk_heap[1024 + i] = (uint8_t)(0x40 + i);
    memset(fk_remote, 0, 4096);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put(ctx, 1, 5, fk_heap + 1024, 21, 0)); /* 3 + 16 + 2 */
    ASSERT_EQ(fk.dev_partial, 0);
    ASSERT_EQ(fk.puts, 3);
    ASSERT_EQ(fk.small_puts, 2);
    ASSERT_TRUE(memcmp(fk_remote + 5, fk_heap + 1024, 21) == 0);
    ASSERT_EQ(fk_remote[4], 0);
    ASSERT_EQ(fk_remote[26], 0);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put_signal(ctx, 1, 64 + 6, fk_heap + 1024, 13, 512, 7, SYMM_AMO_SET, 0));
    ASSERT_EQ(fk.dev_partial, 0);
    ASSERT_EQ(fk.signals, 1);
    ASSERT_EQ(fk.sig_at_puts, fk.puts); /* the signal came with the last piece */
    ASSERT_TRUE(memcmp(fk_remote + 70, fk_heap + 1024, 13) == 0);
    memcpy(&sig, fk_remote + 512, 8);
    ASSERT_EQ(sig, 7u);
    /* ... ending on a word boundary: the head first, the signal with the rest */
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put_signal(ctx, 1, 128 + 4, fk_heap + 1024, 12, 512, 9, SYMM_AMO_SET, 0));
    ASSERT_EQ(fk.dev_partial, 0);
    ASSERT_EQ(fk.puts, 2);
    ASSERT_EQ(fk.sig_at_puts, 2);
    ASSERT_TRUE(memcmp(fk_remote + 132, fk_heap + 1024, 12) == 0);

    /* atomics through the transport (amo_tp): this host's puts send their
     * partial edge words through it, whole words through the backend */
    ctx->amo_tp = true;
    uint8_t src13[13];
    memset(src13, 0x5c, sizeof src13);
    memset(fk_heap + 2048, 0x11, 32);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put(ctx, 0, 2048 + 4, src13, 13, SYMM__NBI)); /* 4 + 8 + 1 */
    ASSERT_EQ(fk.puts, 2);
    ASSERT_EQ(fk.small_puts, 2);
    ASSERT_EQ(fk.bputs, 1);
    ASSERT_EQ(fk.bput_partial, 0);
    for (int i = 0; i < 32; i++)
        ASSERT_EQ(fk_heap[2048 + i], (i >= 4 && i < 17) ? 0x5c : 0x11);
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put(ctx, 0, 2048, src13, 8, 0)); /* one whole word: backend only */
    ASSERT_EQ(fk.puts, 0);
    ASSERT_EQ(fk.bputs, 1);
    ctx->amo_tp = false;
    memset(&fk, 0, sizeof fk);
    CHECK_OK(symm__put(ctx, 0, 2048 + 4, src13, 12, 0)); /* no amo_tp: all load/store */
    ASSERT_EQ(fk.puts, 0);
    ASSERT_EQ(fk.bputs, 1);

    /* a GPU heap: NIC atomics are never taken as atomic with the GPU's */
    const uint32_t all = SYMM_TP_CAP_ATOMIC_GLOBAL | SYMM_TP_CAP_LOOPBACK | SYMM_TP_CAP_GPU_MEM;
    ASSERT_EQ(symm__tp_job_caps(ctx, all), all & ~SYMM_TP_CAP_ATOMIC_GLOBAL);
    symm__backend_ops hops = bops;
    hops.id = SYMM_BACKEND_HOST;
    hops.has_device = false;
    hops.nic_coherent_atomics = true; /* what the host backend declares */
    ctx->ops = &hops;
    ASSERT_EQ(symm__tp_job_caps(ctx, all), all);

    pthread_mutex_destroy(&tp.lock);
    free(ctx);
    free(fk_heap);
}

#ifdef SYMM_HAVE_CUDA
/* The staged reductions' grid (coll_plan.c, used by cuda_coll_staged.c for every call):
 * the cases docs/DECISIONS.md describes, then the invariants the kernel
 * relies on over random inputs. A violated one would overrun the staging
 * (blocks * chunk * depth > bytes), the flag arrays (blocks > 256), or
 * leave bytes unreduced (blocks * chunk * steps < len). */
static void check_plan(uint64_t len, uint64_t sms, uint64_t bytes, uint64_t cmin, uint64_t want) {
    symm__st_plan p;
    if (!symm__st_make_plan(len, sms, bytes, cmin, want, 0, &p)) {
        /* only when the steps would not fit the flags' 24 bits */
        ASSERT_TRUE(len / 16 / 256 >= (1u << 22));
        return;
    }
    const uint64_t per = p.blocks * p.chunk;
    if (!(p.blocks >= 1 && p.blocks <= SYMM__ST_MAX_BLOCKS && p.blocks <= (sms ? sms : 64) &&
          p.chunk >= 16 && p.chunk % 16 == 0 && p.depth >= 2 && per * p.depth <= bytes &&
          (len ? per * p.steps >= len && per * (p.steps - 1) < len : p.steps == 0) &&
          (p.chunk >= cmin || p.chunk == bytes / (2 * p.blocks) / 16 * 16) && p.steps < (1u << 24)))
        TEST_FAIL_("plan(len %llu, sms %llu, bytes %llu, chunk %llu, steps %llu) = %llu blocks x "
                   "%llu bytes, depth %llu, %llu steps", (unsigned long long)len,
                   (unsigned long long)sms, (unsigned long long)bytes, (unsigned long long)cmin,
                   (unsigned long long)want, (unsigned long long)p.blocks,
                   (unsigned long long)p.chunk, (unsigned long long)p.depth,
                   (unsigned long long)p.steps);
}

/* The landing plan (2 PEs, out of place) must cover len exactly as well,
 * stage no more than the staging holds (blocks * chunk * depth <= bytes) nor
 * more steps than there are, and keep pieces within [16, land] (at least
 * chunk_min where land allows). */
static void check_land_plan(uint64_t len, uint64_t sms, uint64_t bytes, uint64_t cmin,
                            uint64_t want, uint64_t land) {
    symm__st_plan p;
    if (!symm__st_make_plan(len, sms, bytes, cmin, want, land, &p)) {
        ASSERT_TRUE(len / (land > 16 ? land / 16 * 16 : 16) / 256 >= (1u << 22) ||
                    len / 16 / 256 >= (1u << 22));
        return;
    }
    const uint64_t per = p.blocks * p.chunk;
    const uint64_t lmax = land / 16 * 16 > 16 ? land / 16 * 16 : 16;
    if (!(p.blocks >= 1 && p.blocks <= SYMM__ST_MAX_BLOCKS && p.blocks <= (sms ? sms : 64) &&
          p.chunk >= 16 && p.chunk % 16 == 0 && p.chunk <= lmax &&
          (p.chunk >= cmin || p.chunk == lmax) && per * p.depth <= bytes && p.depth <= p.steps &&
          (len ? per * p.steps >= len && per * (p.steps - 1) < len : p.steps == 0) &&
          p.steps < (1u << 24)))
        TEST_FAIL_("land plan(len %llu, sms %llu, bytes %llu, chunk %llu, steps %llu, land %llu)"
                   " = %llu blocks x %llu bytes, depth %llu, %llu steps", (unsigned long long)len,
                   (unsigned long long)sms, (unsigned long long)bytes, (unsigned long long)cmin,
                   (unsigned long long)want, (unsigned long long)land,
                   (unsigned long long)p.blocks, (unsigned long long)p.chunk,
                   (unsigned long long)p.depth, (unsigned long long)p.steps);
}

/* The peer form's plan (an all-reduce on 2 PEs, any reduction on more; the
 * staging holds the call): it covers len with no empty step, in 1 to
 * sms / (n - 1) blocks of pieces of whole 128-byte lines (at least piece
 * where the blocks allow), within the staging and its slack, and within the
 * 256 flag words (blocks * (n - 1)); it says no only where the staging
 * cannot hold the call. */
static void check_peer_plan(uint64_t len, int32_t n, uint64_t sms, uint64_t bytes, uint64_t piece,
                            uint64_t steps, bool gather) {
    symm__st_plan p;
    const uint64_t gx = sms / (uint64_t)(n - 1);
    const bool ok = symm__st_peer_plan(len, n, sms, bytes, piece, steps, 3, gather, &p);
    if (!ok) {
        ASSERT_TRUE(gx == 0 || len + SYMM__ST_ALIGN * (steps ? steps : 3) * gx > bytes + SYMM__ST_SLACK);
        return;
    }
    const uint64_t per = p.blocks * p.chunk;
    if (!(p.blocks >= 1 && p.blocks <= gx && p.blocks * (uint64_t)(n - 1) <= SYMM__ST_MAX_BLOCKS &&
          p.chunk >= 16 && p.chunk % SYMM__ST_ALIGN == 0 && p.depth == p.steps &&
          (p.chunk >= piece || steps || p.blocks * p.steps * piece >= len) &&
          (steps == 0 || len == 0 || p.steps <= steps) && (gather || steps || p.steps <= 1) &&
          per * p.steps <= bytes + SYMM__ST_SLACK &&
          (len ? per * p.steps >= len && per * (p.steps - 1) < len : p.steps == 0)))
        TEST_FAIL_("peer plan(len %llu, n %d, sms %llu, bytes %llu, piece %llu, steps %llu, %s) = "
                   "%llu blocks x %llu bytes, %llu steps", (unsigned long long)len, (int)n,
                   (unsigned long long)sms, (unsigned long long)bytes, (unsigned long long)piece,
                   (unsigned long long)steps, gather ? "gather" : "no gather",
                   (unsigned long long)p.blocks, (unsigned long long)p.chunk,
                   (unsigned long long)p.steps);
}

/* The LL128 shape (coll_plan.c): slices within the input, of whole
 * elements, the whole vector in the one-shot forms, the split slices
 * covering it exactly, and "fits" exactly when every slice's lines fit the
 * room (a sender's lines, or half of them, 128-byte aligned, for the split
 * all-reduce, whose second half the results use). */
static void check_l8_shape(bool rs, int32_t n, uint64_t ne, uint64_t es, uint64_t lines,
                           uint64_t oneshot) {
    symm__l8_shape sh;
    const bool fits = symm__l8_make_shape(rs, n, ne, es, lines, oneshot, &sh);
    const uint64_t total = ne * es, in = rs ? (uint64_t)n * total : total;
    const bool whole = !rs && (n == 2 || total <= oneshot);
    const uint64_t room = sh.gather ? sh.half : lines;
    bool ok = sh.gather == (!rs && !whole) &&
              (sh.gather ? sh.half % 128 == 0 && 2 * sh.half <= lines : sh.half == 0);
    ok = ok && sh.src_j_stride == (rs ? total : whole ? 0 : sh.src_j_stride);
    uint64_t sum = 0, most = 0;
    for (int32_t j = 0; j < 8; j++) {
        if (j >= n) {
            ok = ok && sh.len[j] == 0;
            continue;
        }
        ok = ok && sh.len[j] % es == 0 &&
             (!sh.len[j] || (uint64_t)j * sh.src_j_stride + sh.len[j] <= in);
        if (rs || whole) ok = ok && sh.len[j] == total;
        if (sh.gather) ok = ok && (sh.len[j] == 0 || (uint64_t)j * sh.src_j_stride == sum);
        sum += sh.len[j];
        if (sh.len[j] > most) most = sh.len[j];
    }
    if (sh.gather) ok = ok && sum == total && sh.src_j_stride % 16 == 0;
    const uint64_t need = (most + SYMM__L8_DATA - 1) / SYMM__L8_DATA * SYMM__L8_LINE;
    ok = ok && fits == (need <= room);
    if (!ok)
        TEST_FAIL_("l8 shape(rs %d, n %d, ne %llu, es %llu, lines %llu, oneshot %llu): fits %d, "
                   "gather %d, half %llu, stride %llu, len[0] %llu", (int)rs, (int)n,
                   (unsigned long long)ne, (unsigned long long)es, (unsigned long long)lines,
                   (unsigned long long)oneshot, (int)fits, (int)sh.gather,
                   (unsigned long long)sh.half, (unsigned long long)sh.src_j_stride,
                   (unsigned long long)sh.len[0]);
}

static void test_l8_shape(void) {
    symm__l8_shape sh;
    /* default lines (2 MiB of payload: 17477 lines, rounded up to 256 bytes:
     * 17478, 2097360 bytes of payload): a 2-PE all-reduce of 2 MiB fits, and
     * of 2097360 bytes, one byte more does not */
    const uint64_t lines = (((2u << 20) + 119) / 120 * 128 + 255) / 256 * 256;
    ASSERT_EQ(lines, 17478 * 128);
    ASSERT_TRUE(symm__l8_make_shape(false, 2, 2u << 20, 1, lines, 256 << 10, &sh));
    ASSERT_EQ(sh.gather, 0);
    ASSERT_EQ(sh.src_j_stride, 0);
    ASSERT_EQ(sh.len[1], 2u << 20);
    ASSERT_TRUE(symm__l8_make_shape(false, 2, 2097360, 1, lines, 256 << 10, &sh));
    ASSERT_TRUE(!symm__l8_make_shape(false, 2, 2097361, 1, lines, 256 << 10, &sh));
    /* 4 PEs, 1 MiB of f32: split, 256 KiB a slice, results from half */
    ASSERT_TRUE(symm__l8_make_shape(false, 4, 1 << 18, 4, lines, 256 << 10, &sh));
    ASSERT_EQ(sh.gather, 1);
    ASSERT_EQ(sh.src_j_stride, 256 << 10);
    ASSERT_EQ(sh.half, lines / 2 / 128 * 128);
    ASSERT_EQ(sh.len[3], 256 << 10);
    /* 256 KiB on 4 PEs: one shot */
    ASSERT_TRUE(symm__l8_make_shape(false, 4, 1 << 16, 4, lines, 256 << 10, &sh));
    ASSERT_EQ(sh.gather, 0);
    ASSERT_EQ(sh.len[2], 256 << 10);
    /* gpu_coll_ll128_edge_n4: lines for 4092 bytes (4608), split at every
     * size: 1023 int32 fit (9 lines a slice of 18), 4095 do not (35);
     * reduce-scatter of 1023 fits (35 of 36 lines), 1080 fills them, 1081
     * does not */
    ASSERT_TRUE(symm__l8_make_shape(false, 4, 1023, 4, 4608, 0, &sh));
    ASSERT_TRUE(!symm__l8_make_shape(false, 4, 4095, 4, 4608, 0, &sh));
    ASSERT_TRUE(symm__l8_make_shape(true, 4, 1023, 4, 4608, 0, &sh));
    ASSERT_TRUE(symm__l8_make_shape(true, 4, 1080, 4, 4608, 0, &sh));
    ASSERT_TRUE(!symm__l8_make_shape(true, 4, 1081, 4, 4608, 0, &sh));
    unsigned seed = 4242;
    static const uint64_t sizes[] = {1, 2, 4, 8, 16};
    for (int i = 0; i < 200000; i++) {
        const int32_t n = 2 + rand_r(&seed) % 7;
        const uint64_t es = sizes[rand_r(&seed) % 5];
        const uint64_t ne = rand_r(&seed) % 3 == 0 ? (uint64_t)(rand_r(&seed) % 5000)
                                                   : (uint64_t)rand_r(&seed) % (1u << 20);
        const uint64_t room = ((uint64_t)(rand_r(&seed) % (8 << 20)) + 256) / 256 * 256;
        const uint64_t oneshot = rand_r(&seed) % 2 ? 0 : (uint64_t)(rand_r(&seed) % (1 << 20));
        check_l8_shape(rand_r(&seed) % 3 == 0, n, ne, es, room, oneshot);
    }
}

/* A documented grid (symm__st_make_plan on 132 SMs, want_steps 1): blocks
 * x chunk bytes, steps and depth as given. */
static void expect_plan(uint64_t len, uint64_t bytes, uint64_t cmin, uint64_t land, uint64_t blocks,
                        uint64_t chunk, uint64_t steps, uint64_t depth) {
    symm__st_plan p;
    if (!symm__st_make_plan(len, 132, bytes, cmin, 1, land, &p) || p.blocks != blocks ||
        p.chunk != chunk || p.steps != steps || p.depth != depth)
        TEST_FAIL_("plan(len %llu, bytes %llu, chunk %llu, land %llu) = %llu x %llu, %llu steps, "
                   "depth %llu; expected %llu x %llu, %llu, %llu", (unsigned long long)len,
                   (unsigned long long)bytes, (unsigned long long)cmin, (unsigned long long)land,
                   (unsigned long long)p.blocks, (unsigned long long)p.chunk,
                   (unsigned long long)p.steps, (unsigned long long)p.depth,
                   (unsigned long long)blocks, (unsigned long long)chunk,
                   (unsigned long long)steps, (unsigned long long)depth);
}

/* A documented peer plan (symm__st_peer_plan with the defaults: 132 SMs,
 * 32 KiB pieces, up to 3 steps): blocks a peer x chunk bytes in steps, or,
 * with blocks 0, none (the staging does not hold the call). */
static void expect_peer_plan(uint64_t len, int32_t n, uint64_t bytes, bool gather, uint64_t blocks,
                             uint64_t chunk, uint64_t steps) {
    symm__st_plan p = {0, 0, 0, 0};
    const bool ok = symm__st_peer_plan(len, n, 132, bytes, 32 << 10, 0, 3, gather, &p);
    if (ok != (blocks != 0) || (ok && (p.blocks != blocks || p.chunk != chunk || p.steps != steps)))
        TEST_FAIL_("peer plan(len %llu, n %d, bytes %llu, %s) = %s%llu x %llu, %llu steps; "
                   "expected %llu x %llu, %llu", (unsigned long long)len, (int)n,
                   (unsigned long long)bytes, gather ? "gather" : "no gather", ok ? "" : "none: ",
                   (unsigned long long)p.blocks, (unsigned long long)p.chunk,
                   (unsigned long long)p.steps, (unsigned long long)blocks,
                   (unsigned long long)chunk, (unsigned long long)steps);
}

/* The copy-engine reduce-scatter's last phase: whole lines, at most the
 * pieces asked for, covering the round exactly, and the kernel's count of
 * pieces (elements) equal to the host's count of copies for every element
 * size. */
static void test_ce_piece(void) {
    uint64_t count = 0;
    ASSERT_EQ(symm__ce_piece(32u << 20, 4, &count), 8u << 20);
    ASSERT_EQ(count, 4);
    ASSERT_EQ(symm__ce_piece(16, 4, &count), 128);
    ASSERT_EQ(count, 1);
    ASSERT_EQ(symm__ce_piece(1000, 3, &count), 384); /* 334 -> 384: 384 + 384 + 232 */
    ASSERT_EQ(count, 3);
    ASSERT_EQ(symm__ce_piece(1024, 7, &count), 256); /* 147 -> 256: 4 copies, not 7 */
    ASSERT_EQ(count, 4);
    /* an empty slice of an all-reduce: one copy of 0 bytes, its signal */
    ASSERT_EQ(symm__ce_piece(0, 4, &count), 128);
    ASSERT_EQ(count, 1);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const uint64_t es = 1u << (x & 3), pieces = 1 + (x >> 2) % 7;
        const uint64_t len = es * (1 + (x >> 8) % ((i & 1) ? 5000 : (64u << 20)));
        const uint64_t piece = symm__ce_piece(len, pieces, &count);
        ASSERT_TRUE(piece % 128 == 0 && count >= 1 && count <= pieces);
        ASSERT_TRUE((count - 1) * piece < len && len <= count * piece);
        const uint64_t ne = len / es, pe = piece / es;
        ASSERT_EQ((ne + pe - 1) / pe, count);
    }
}

static void test_staged_plan(void) {
    symm__st_plan p;
    /* 2-PE all-reduce of 1 MiB, defaults on an H200 (132 SMs): one step of
     * 128 blocks x 8 KiB */
    expect_plan(1 << 20, 4 << 20, 8 << 10, 0, 128, 8192, 1, 4);
    /* 256 MiB: every SM, pieces grown to half the staging over the blocks */
    expect_plan(256u << 20, 4 << 20, 8 << 10, 0, 132, 15872, 129, 2);
    /* gpu_coll_staged (64 KiB of staging, 1 KiB pieces), 70001 int32: many
     * steps, every slot reused */
    expect_plan(70001 * 4, 64 << 10, 1 << 10, 0, 32, 1024, 9, 2);
    /* nothing to do: no step */
    ASSERT_TRUE(symm__st_make_plan(0, 132, 4 << 20, 8 << 10, 1, 0, &p));
    ASSERT_EQ(p.steps, 0);
    /* more steps than the flags count */
    ASSERT_TRUE(!symm__st_make_plan(1ull << 62, 1, 64 << 10, 16, 1, 0, &p));
    /* landing, 2-PE all-reduce of 16 MiB, defaults (at most 4 MiB staged,
     * CU_ST_LAND_STAGED_MAX): every SM, 64 KiB pieces, none staged (4 MiB <
     * 132 x 64 KiB) */
    expect_plan(16u << 20, 4 << 20, 8 << 10, 64 << 10, 132, 65536, 2, 0);
    /* 1 MiB: as without landing, all of it staged */
    expect_plan(1 << 20, 4 << 20, 8 << 10, 64 << 10, 128, 8192, 1, 1);
    /* gpu_coll_staged_land (64 KiB staging, 1 KiB pieces, land 2 KiB):
     * 70001 int32 on 132 SMs: 133 blocks' worth, so 2 KiB pieces, 2 steps,
     * the first staged (64 KiB / (132 x 2 KiB) = 0: none) */
    expect_plan(70001 * 4, 64 << 10, 1 << 10, 2 << 10, 132, 2048, 2, 0);
    /* the peer form, defaults on 4 x H200 (4 MiB of staging): all-reduce of
     * 16 MiB (4 MiB slices) in 3 steps of 44 blocks a peer; of 8 MiB in 2;
     * of 4 MiB in one step of 32 x 32 KiB; reduce-scatter of 16 MiB in one
     * step of 44 blocks; pieces of whole 128-byte lines, 12 / 1.5 KiB over
     * the staging (in its slack) at 16 MiB; beyond the staging: none (the
     * two-group form's plan instead) */
    expect_peer_plan(4u << 20, 4, 4 << 20, true, 44, 31872, 3);
    expect_peer_plan(2u << 20, 4, 4 << 20, true, 44, 23936, 2);
    expect_peer_plan(1u << 20, 4, 4 << 20, true, 32, 32768, 1);
    expect_peer_plan(4u << 20, 4, 4 << 20, false, 44, 95360, 1);
    expect_peer_plan((4u << 20) + (128u << 10), 4, 4 << 20, false, 0, 0, 0);
    /* on 2 PEs (an all-reduce in halves; 16 MiB of staging there): 16 MiB
     * in 2 steps of 132 blocks, 32 MiB in 3 (the most, so pieces grow), 6
     * MiB in one step of 96 x 32 KiB, and 48 MiB beyond the staging */
    expect_peer_plan(8u << 20, 2, 16 << 20, true, 132, 31872, 2);
    expect_peer_plan(16u << 20, 2, 16 << 20, true, 132, 42368, 3);
    expect_peer_plan(3u << 20, 2, 16 << 20, true, 96, 32768, 1);
    expect_peer_plan(24u << 20, 2, 16 << 20, true, 0, 0, 0);
    unsigned seed = 777;
    for (int i = 0; i < 200000; i++) {
        const uint64_t len = rand_r(&seed) % 4 == 0 ? (uint64_t)(rand_r(&seed) % 100000)
                                                    : ((uint64_t)rand_r(&seed) << (rand_r(&seed) % 12));
        const uint64_t sms = (uint64_t)(rand_r(&seed) % 300);
        const uint64_t bytes = ((64u << 10) + (uint64_t)(rand_r(&seed) % (64 << 20))) / 256 * 256;
        uint64_t cmin = ((uint64_t)(rand_r(&seed) % (1 << 16)) + 16) / 16 * 16;
        if (cmin > bytes / 2) cmin = bytes / 2 / 16 * 16;
        const uint64_t want = (uint64_t)(rand_r(&seed) % 64) + 1;
        check_plan(len, sms, bytes, cmin, want);
        check_land_plan(len, sms, bytes, cmin, want, (uint64_t)(rand_r(&seed) % (1 << 18)) + 1);
        check_peer_plan(len / (1 + rand_r(&seed) % 8), 2 + rand_r(&seed) % 7,
                        sms > 256 ? 256 : sms, bytes, cmin,
                        rand_r(&seed) % 2 ? 0 : (uint64_t)(rand_r(&seed) % 64) + 1, rand_r(&seed) % 2);
    }
}
#endif

int main(void) {
    test_alloc_random();
    test_handles();
    test_parse_size();
    test_config_sizes();
    test_heap_cap_minimum();
    test_attr_defaults();
    test_status_names();
    test_async_record();
    test_bad_args();
    test_route_gpu_staging();
#ifdef SYMM_HAVE_CUDA
    test_staged_plan();
    test_l8_shape();
    test_ce_piece();
#else
    printf("unit: staged-plan test skipped (runtime built without the CUDA backend)\n");
#endif
    printf("unit: all passed\n");
    return 0;
}

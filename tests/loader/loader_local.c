/*
 * The loader-local entries of ABI 1.0 final: the pure-data defaults
 * (symm_init_attr_init, symm_team_config_init), symm_loader_get_version,
 * symm_loader_runtime_path and symm_loader_set_runtime. The load happens once
 * per process, so each scenario is its own process (its own meson test).
 *
 * usage: loader_local MODE [ARG...]
 *   no-runtime                   SYMM_RUNTIME names nothing: the loader-local
 *                                entries work and never start a load
 *   set-runtime RUNTIME          SYMM_RUNTIME unset: set_runtime(RUNTIME) is used
 *   set-runtime-missing PATH     SYMM_RUNTIME unset: PATH (absent) is the only
 *                                candidate, LIBRARY_NOT_FOUND names it
 *   set-runtime-env RUNTIME      SYMM_RUNTIME set: it wins over set_runtime(RUNTIME)
 *   set-runtime-reset PATH       set_runtime(PATH) then NULL (and ""): the search
 *                                is back, PATH is never tried
 *   set-runtime-long             a path that does not fit PATH_MAX is INVALID_ARG
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "symm_test.h"

#define ASSERT_STR_EQ(a, b)                                                     \
    do {                                                                        \
        const char *a_ = (a), *b_ = (b);                                        \
        if (strcmp(a_, b_) != 0) TEST_FAIL_("%s == %s (\"%s\" vs \"%s\")", #a, #b, a_, b_); \
    } while (0)
#define ASSERT_CONTAINS(hay, needle)                                            \
    do {                                                                        \
        const char *h_ = (hay), *n_ = (needle);                                 \
        if (!strstr(h_, n_)) TEST_FAIL_("%s does not contain \"%s\": \"%s\"", #hay, n_, h_); \
    } while (0)
#define ASSERT_NOT_CONTAINS(hay, needle)                                        \
    do {                                                                        \
        const char *h_ = (hay), *n_ = (needle);                                 \
        if (strstr(h_, n_)) TEST_FAIL_("%s contains \"%s\": \"%s\"", #hay, n_, h_); \
    } while (0)

/* The same file, whatever the spelling (the loader reports what dlopen saw). */
static void assert_same_file(const char *got, const char *want) {
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(got, a)) TEST_FAIL_("runtime path \"%s\" does not exist", got);
    if (!realpath(want, b)) TEST_FAIL_("\"%s\" does not exist", want);
    ASSERT_STR_EQ(a, b);
}

static int all_bytes(const void *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != v) return 0;
    return 1;
}

/* symm_init_attr_init: defaults, older and newer struct sizes, refusals. */
static void check_init_attr(void) {
    /* a newer caller's struct: 16 bytes this loader does not know */
    unsigned char raw[sizeof(symm_init_attr) + 16];
    symm_init_attr *attr = (symm_init_attr *)(void *)raw;
    memset(raw, 0xA5, sizeof raw);
    CHECK_OK(symm_init_attr_init(attr, (uint32_t)sizeof(symm_init_attr)));
    ASSERT_STR_EQ(symm_last_error(), "");
    ASSERT_EQ(attr->struct_size, sizeof(symm_init_attr));
    ASSERT_EQ(attr->backend, SYMM_BACKEND_AUTO);
    ASSERT_EQ(attr->bootstrap, SYMM_BOOTSTRAP_AUTO);
    ASSERT_EQ(attr->thread_level, SYMM_THREAD_MULTIPLE);
    ASSERT_U64_EQ(attr->heap_cap, 0);
    ASSERT_EQ(attr->rank, 0);
    ASSERT_EQ(attr->n_pes, 0);
    ASSERT_EQ(attr->device, -1);
    ASSERT_EQ(attr->timeout_ms, 0);
    ASSERT_TRUE(all_bytes(&attr->unique_id, sizeof attr->unique_id, 0));
    ASSERT_TRUE(all_bytes(raw + sizeof(symm_init_attr), 16, 0xA5)); /* beyond struct_size */

    memset(raw, 0xA5, sizeof raw);
    CHECK_OK(symm_init_attr_init(attr, (uint32_t)sizeof raw)); /* larger: tail zeroed */
    ASSERT_EQ(attr->struct_size, sizeof(symm_init_attr));
    ASSERT_EQ(attr->thread_level, SYMM_THREAD_MULTIPLE);
    ASSERT_TRUE(all_bytes(raw + sizeof(symm_init_attr), 16, 0));

    const uint32_t old = (uint32_t)offsetof(symm_init_attr, rank); /* an older, smaller layout */
    memset(raw, 0xA5, sizeof raw);
    CHECK_OK(symm_init_attr_init(attr, old));
    ASSERT_EQ(attr->struct_size, old);
    ASSERT_EQ(attr->thread_level, SYMM_THREAD_MULTIPLE);
    ASSERT_U64_EQ(attr->heap_cap, 0);
    ASSERT_TRUE(all_bytes(raw + old, sizeof raw - old, 0xA5)); /* nothing past its size */

    CHECK_OK(SYMM_INIT_ATTR_INIT(attr));
    ASSERT_EQ(attr->struct_size, sizeof(symm_init_attr));

    CHECK_STATUS(symm_init_attr_init(NULL, (uint32_t)sizeof(symm_init_attr)), SYMM_ERR_INVALID_ARG);
    ASSERT_CONTAINS(symm_last_error(), "symm_init_attr_init");
    ASSERT_CONTAINS(symm_last_error(), "attr is NULL");
    memset(raw, 0xA5, sizeof raw);
    CHECK_STATUS(symm_init_attr_init(attr, 8), SYMM_ERR_INVALID_ARG);
    ASSERT_CONTAINS(symm_last_error(), "struct_size 8");
    ASSERT_TRUE(all_bytes(raw, sizeof raw, 0xA5)); /* refused: nothing written */
    CHECK_STATUS(symm_init_attr_init(attr, 0), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(all_bytes(raw, sizeof raw, 0xA5));
    /* a success clears the thread's message */
    CHECK_OK(symm_init_attr_init(attr, (uint32_t)sizeof(symm_init_attr)));
    ASSERT_STR_EQ(symm_last_error(), "");
}

static void check_team_config(void) {
    unsigned char raw[sizeof(symm_team_config) + 8];
    symm_team_config *c = (symm_team_config *)(void *)raw;
    memset(raw, 0xA5, sizeof raw);
    CHECK_OK(symm_team_config_init(c, (uint32_t)sizeof(symm_team_config)));
    ASSERT_EQ(c->struct_size, sizeof(symm_team_config));
    ASSERT_EQ(c->num_contexts, 0);
    ASSERT_TRUE(all_bytes(raw + sizeof(symm_team_config), 8, 0xA5));
    memset(raw, 0xA5, sizeof raw);
    CHECK_OK(symm_team_config_init(c, (uint32_t)sizeof raw));
    ASSERT_EQ(c->struct_size, sizeof(symm_team_config));
    ASSERT_TRUE(all_bytes(raw + sizeof(symm_team_config), 8, 0));
    CHECK_OK(SYMM_TEAM_CONFIG_INIT(c));
    ASSERT_EQ(c->num_contexts, 0);

    CHECK_STATUS(symm_team_config_init(NULL, (uint32_t)sizeof(symm_team_config)),
                 SYMM_ERR_INVALID_ARG);
    ASSERT_CONTAINS(symm_last_error(), "symm_team_config_init");
    ASSERT_CONTAINS(symm_last_error(), "config is NULL");
    memset(raw, 0xA5, sizeof raw);
    CHECK_STATUS(symm_team_config_init(c, 2), SYMM_ERR_INVALID_ARG);
    ASSERT_CONTAINS(symm_last_error(), "struct_size 2");
    ASSERT_TRUE(all_bytes(raw, sizeof raw, 0xA5));
}

static void check_version(void) {
    uint32_t v = 0;
    CHECK_OK(symm_loader_get_version(&v));
    ASSERT_EQ(v, SYMM_VERSION);
    ASSERT_EQ(v, SYMM_VERSION_ENCODE(SYMM_VERSION_MAJOR, SYMM_VERSION_MINOR, SYMM_VERSION_PATCH));
    CHECK_STATUS(symm_loader_get_version(NULL), SYMM_ERR_INVALID_ARG);
    ASSERT_CONTAINS(symm_last_error(), "loader_version is NULL");
}

/* The entries that never load anything, checked before any load. */
static void check_local_entries(void) {
    ASSERT_STR_EQ(symm_loader_runtime_path(), "");
    ASSERT_STR_EQ(symm_status_string(SYMM_ERR_INVALID_STATE), "SYMM_ERR_INVALID_STATE");
    ASSERT_EQ(SYMM_ERR_INVALID_STATE + 1, SYMM_STATUS_COUNT);
    check_init_attr();
    check_team_config();
    check_version();
    ASSERT_STR_EQ(symm_loader_runtime_path(), "");
}

/* set_runtime after a load was attempted: INVALID_STATE, nothing changes. */
static void check_too_late(const char *path_before) {
    char before[PATH_MAX];
    snprintf(before, sizeof before, "%s", symm_loader_runtime_path());
    ASSERT_STR_EQ(before, path_before);
    CHECK_STATUS(symm_loader_set_runtime("/tmp/another/libsymm_runtime.so.1"),
                 SYMM_ERR_INVALID_STATE);
    ASSERT_CONTAINS(symm_last_error(), "symm_loader_set_runtime");
    CHECK_STATUS(symm_loader_set_runtime(NULL), SYMM_ERR_INVALID_STATE);
    ASSERT_STR_EQ(symm_loader_runtime_path(), before);
}

static void no_runtime(void) {
    const char *env = getenv("SYMM_RUNTIME");
    if (!env || strncmp(env, "/nonexistent", 12) != 0)
        TEST_FAIL_("run with SYMM_RUNTIME=/nonexistent/... (got %s)", env ? env : "(unset)");
    check_local_entries();
    /* None of that started a load: the path can still be set (and unset). */
    CHECK_OK(symm_loader_set_runtime("/tmp/never-used/libsymm_runtime.so.1"));
    CHECK_OK(symm_loader_set_runtime(NULL));
    /* The first call that needs the runtime reports it missing, not before. */
    symm_ctx ctx = NULL;
    CHECK_STATUS(symm_init(NULL, &ctx), SYMM_ERR_LIBRARY_NOT_FOUND);
    ASSERT_TRUE(ctx == NULL);
    ASSERT_CONTAINS(symm_last_error(), env);
    ASSERT_STR_EQ(symm_loader_runtime_path(), ""); /* after a failed load too */
    check_too_late("");
    /* The loader-local entries still work after the failed load. */
    check_init_attr();
    check_team_config();
    check_version();
    ASSERT_STR_EQ(symm_loader_runtime_path(), "");
}

static void set_runtime(const char *runtime) {
    unsetenv("SYMM_RUNTIME");
    CHECK_OK(symm_loader_set_runtime(runtime));
    ASSERT_STR_EQ(symm_last_error(), "");
    ASSERT_STR_EQ(symm_loader_runtime_path(), ""); /* set, not loaded yet */
    CHECK_OK(symm_loader_probe());
    assert_same_file(symm_loader_runtime_path(), runtime);
    uint32_t v = 0;
    CHECK_OK(symm_get_version(&v)); /* answered by that runtime */
    ASSERT_EQ(v, SYMM_VERSION);
    char loaded[PATH_MAX];
    snprintf(loaded, sizeof loaded, "%s", symm_loader_runtime_path());
    check_too_late(loaded);
    CHECK_OK(symm_get_version(&v));
}

static void set_runtime_missing(const char *path) {
    unsetenv("SYMM_RUNTIME");
    CHECK_OK(symm_loader_set_runtime(path));
    CHECK_STATUS(symm_loader_probe(), SYMM_ERR_LIBRARY_NOT_FOUND);
    const char *msg = symm_last_error();
    ASSERT_CONTAINS(msg, path);
    ASSERT_CONTAINS(msg, "(symm_loader_set_runtime)");
    /* that path only: no fallback to the loader's directory or the system */
    ASSERT_NOT_CONTAINS(msg, "loader's directory");
    ASSERT_NOT_CONTAINS(msg, "system search path");
    ASSERT_STR_EQ(symm_loader_runtime_path(), "");
    uint32_t v = 0;
    CHECK_STATUS(symm_get_version(&v), SYMM_ERR_LIBRARY_NOT_FOUND);
    check_too_late("");
}

static void set_runtime_env(const char *runtime) {
    const char *env = getenv("SYMM_RUNTIME");
    if (!env || !env[0]) TEST_FAIL_("run with SYMM_RUNTIME set");
    CHECK_OK(symm_loader_set_runtime(runtime));
    CHECK_OK(symm_loader_probe());
    assert_same_file(symm_loader_runtime_path(), env);
    char a[PATH_MAX], b[PATH_MAX];
    if (realpath(env, a) && realpath(runtime, b) && strcmp(a, b) == 0)
        TEST_FAIL_("SYMM_RUNTIME and the set path must differ for this test");
    check_too_late(symm_loader_runtime_path());
}

static void set_runtime_reset(const char *path) {
    unsetenv("SYMM_RUNTIME");
    CHECK_OK(symm_loader_set_runtime(path));
    CHECK_OK(symm_loader_set_runtime(NULL));
    CHECK_OK(symm_loader_set_runtime(path));
    CHECK_OK(symm_loader_set_runtime(""));
    /* The usual search runs; whether it finds a runtime depends on where the
     * loader lies, but path is never a candidate. */
    symm_status st = symm_loader_probe();
    if (st == SYMM_SUCCESS) {
        ASSERT_NOT_CONTAINS(symm_loader_runtime_path(), path);
    } else {
        ASSERT_EQ(st, SYMM_ERR_LIBRARY_NOT_FOUND);
        ASSERT_NOT_CONTAINS(symm_last_error(), path);
        ASSERT_NOT_CONTAINS(symm_last_error(), "symm_loader_set_runtime");
        ASSERT_CONTAINS(symm_last_error(), "loader's directory");
        ASSERT_CONTAINS(symm_last_error(), "system search path");
        ASSERT_STR_EQ(symm_loader_runtime_path(), "");
    }
}

static void set_runtime_long(void) {
    unsetenv("SYMM_RUNTIME");
    static char path[PATH_MAX + 2];
    memset(path, 'a', sizeof path - 1);
    path[0] = '/';
    path[PATH_MAX] = '\0'; /* PATH_MAX characters: no room for the NUL */
    CHECK_STATUS(symm_loader_set_runtime(path), SYMM_ERR_INVALID_ARG);
    ASSERT_CONTAINS(symm_last_error(), "symm_loader_set_runtime");
    path[PATH_MAX + 1] = '\0';
    path[PATH_MAX] = 'a';
    CHECK_STATUS(symm_loader_set_runtime(path), SYMM_ERR_INVALID_ARG);
    /* Nothing was recorded: the longest path that fits is accepted and used. */
    path[PATH_MAX - 1] = '\0';
    CHECK_OK(symm_loader_set_runtime(path));
    ASSERT_STR_EQ(symm_last_error(), "");
    CHECK_STATUS(symm_loader_probe(), SYMM_ERR_LIBRARY_NOT_FOUND);
    ASSERT_CONTAINS(symm_last_error(), "(symm_loader_set_runtime)");
    ASSERT_STR_EQ(symm_loader_runtime_path(), "");
}

int main(int argc, char **argv) {
    if (argc < 2) TEST_FAIL_("usage: loader_local MODE [ARG]");
    const char *mode = argv[1], *arg = argc > 2 ? argv[2] : NULL;
    if (strcmp(mode, "no-runtime") == 0) {
        no_runtime();
    } else if (strcmp(mode, "set-runtime") == 0 && arg) {
        set_runtime(arg);
    } else if (strcmp(mode, "set-runtime-missing") == 0 && arg) {
        set_runtime_missing(arg);
    } else if (strcmp(mode, "set-runtime-env") == 0 && arg) {
        set_runtime_env(arg);
    } else if (strcmp(mode, "set-runtime-reset") == 0 && arg) {
        set_runtime_reset(arg);
    } else if (strcmp(mode, "set-runtime-long") == 0) {
        set_runtime_long();
    } else {
        TEST_FAIL_("unknown mode %s", mode);
    }
    printf("ok %s\n", mode);
    return 0;
}

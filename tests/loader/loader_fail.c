/*
 * The loader when no runtime can be used: every entry, of every kind, answers
 * the load's status without crashing; the message says what was tried; the
 * loader-local functions keep working.
 *
 * usage: loader_fail STATUS [--hold PATH] [--absent SUBSTR]... [SUBSTR]...
 *   STATUS     expected status name (SYMM_ERR_LIBRARY_NOT_FOUND, ...)
 *   SUBSTR     text the load message must contain
 *   --absent   text the load message must not contain
 *   --hold     a fake runtime to keep open, so its negotiation can be checked
 *              after the loader has closed it again
 */
#include <dlfcn.h>
#include <string.h>

#include "entry_calls.h"
#include "fake_runtime.h"
#include "symm_test.h"

static symm_status status_by_name(const char *name) {
    for (symm_status s = 0; s < SYMM_STATUS_COUNT; s++)
        if (strcmp(symm_status_string(s), name) == 0) return s;
    TEST_FAIL_("unknown status name %s", name);
}

/* Loader-local functions work, and leave the thread's error alone. */
static void check_local_functions(const char *expected_error) {
    ASSERT_TRUE(strcmp(symm_status_string(SYMM_SUCCESS), "SYMM_SUCCESS") == 0);
    ASSERT_TRUE(strcmp(symm_status_string(SYMM_ERR_LIBRARY_NOT_FOUND),
                       "SYMM_ERR_LIBRARY_NOT_FOUND") == 0);
    ASSERT_TRUE(strcmp(symm_status_string(SYMM_ERR_INTERNAL), "SYMM_ERR_INTERNAL") == 0);
    ASSERT_TRUE(strcmp(symm_status_string(SYMM_STATUS_COUNT), "SYMM_ERR_UNKNOWN") == 0);
    ASSERT_TRUE(strcmp(symm_status_string(-1), "SYMM_ERR_UNKNOWN") == 0);
    ASSERT_TRUE(strcmp(symm_status_string(INT32_MAX), "SYMM_ERR_UNKNOWN") == 0);
    for (symm_status s = 0; s < SYMM_STATUS_COUNT; s++) {
        const char *n = symm_status_string(s);
        ASSERT_TRUE(strncmp(n, "SYMM_", 5) == 0);
        ASSERT_TRUE(strcmp(n, "SYMM_ERR_UNKNOWN") != 0);
        for (symm_status t = 0; t < s; t++) ASSERT_TRUE(strcmp(n, symm_status_string(t)) != 0);
    }
    ASSERT_EQ(symm_dtype_size(0), 0);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_INT8), 1);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_UINT16), 2);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_INT32), 4);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_UINT64), 8);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_FLOAT16), 2);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_BFLOAT16), 2);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_FLOAT32), 4);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_FLOAT64), 8);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_COUNT), 0);
    ASSERT_EQ(symm_dtype_size(UINT32_MAX), 0);
    ASSERT_TRUE(strcmp(symm_last_error(), expected_error) == 0);
}

int main(int argc, char **argv) {
    if (argc < 2) TEST_FAIL_("usage: loader_fail STATUS [--hold PATH] [--absent S]... [S]...");
    const symm_status expected = status_by_name(argv[1]);
    ASSERT_NE(expected, SYMM_SUCCESS);

    /* Nothing failed yet: no message, and asking does not load anything. */
    ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);
    check_local_functions("");

    fake_runtime_state *fake = NULL;
    for (int i = 2; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--hold") != 0) continue;
        void *h = dlopen(argv[i + 1], RTLD_NOW | RTLD_LOCAL);
        if (!h) TEST_FAIL_("cannot hold %s: %s", argv[i + 1], dlerror());
        fake_runtime_state_fn fn;
        void *sym = dlsym(h, FAKE_STATE_SYMBOL);
        ASSERT_TRUE(sym != NULL);
        memcpy(&fn, &sym, sizeof(fn));
        fake = fn();
        ASSERT_EQ(fake->negotiate_calls, 0);
    }

    /* The probe reports the failure and a message listing what was tried. */
    CHECK_STATUS(symm_loader_probe(), expected);
    const char *msg = symm_last_error();
    char load_msg[8192];
    ASSERT_LT(strlen(msg), sizeof(load_msg));
    strcpy(load_msg, msg);
    fprintf(stderr, "load message: %s\n", load_msg);
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--hold") == 0) {
            i++;
        } else if (strcmp(argv[i], "--absent") == 0 && i + 1 < argc) {
            if (strstr(load_msg, argv[i + 1])) TEST_FAIL_("message contains '%s'", argv[i + 1]);
            i++;
        } else if (!strstr(load_msg, argv[i])) {
            TEST_FAIL_("message lacks '%s'", argv[i]);
        }
    }

    /* Every entry gives the same answer: the status, or -1 for int getters. */
    for (int i = 0; i < LOADER_TEST_ENTRY_COUNT; i++) {
        const loader_test_entry *e = &loader_test_entries[i];
        int32_t r = e->call();
        if (r != (e->int_getter ? -1 : expected))
            TEST_FAIL_("%s returned %d, expected %d", e->name, r, e->int_getter ? -1 : expected);
        if (strcmp(symm_last_error(), load_msg) != 0)
            TEST_FAIL_("after %s: last error '%s'", e->name, symm_last_error());
    }
    ASSERT_EQ(LOADER_TEST_ENTRY_COUNT, FAKE_ENTRY_COUNT);

    /* Out-parameters are left alone on failure. */
    uint32_t version = 12345;
    CHECK_STATUS(symm_get_version(&version), expected);
    ASSERT_EQ(version, 12345);
    symm_ctx ctx = (symm_ctx)(uintptr_t)0x1000;
    CHECK_STATUS(symm_init(NULL, &ctx), expected);
    ASSERT_TRUE(ctx == (symm_ctx)(uintptr_t)0x1000);
    ASSERT_EQ(symm_my_pe(ctx), -1);
    ASSERT_EQ(symm_team_translate_pe(NULL, 0, NULL), -1);

    /* The outcome is final: a second probe answers the same, and the loader
     * functions still work and leave the message in place. */
    CHECK_STATUS(symm_loader_probe(), expected);
    ASSERT_TRUE(strcmp(symm_last_error(), load_msg) == 0);
    check_local_functions(load_msg);

    if (fake) {
        /* The loader negotiated once, offering its own ABI, and called no entry. */
        ASSERT_EQ(fake->negotiate_calls, 1);
        ASSERT_EQ(fake->seen_struct_size, sizeof(symm_runtime_negotiation));
        ASSERT_EQ(fake->seen_major, SYMM_ABI_MAJOR);
        ASSERT_EQ(fake->seen_minor, SYMM_ABI_MINOR);
        for (int i = 0; i < FAKE_ENTRY_COUNT; i++) ASSERT_EQ(fake->calls[i], 0);
    }
    printf("ok: %d entries answered %s\n", LOADER_TEST_ENTRY_COUNT, symm_status_string(expected));
    return 0;
}

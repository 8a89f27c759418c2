/*
 * The loader with a working (fake) runtime: loading is lazy; every entry the
 * runtime's table holds is forwarded with its arguments and result; an entry
 * past the table's struct_size, or NULL in it, answers NOT_SUPPORTED with a
 * message; symm_last_error switches between the loader's and the runtime's
 * message as calls go.
 *
 * usage: loader_forward [--end ENTRY] [--null ENTRY]   (SYMM_RUNTIME = fake)
 *   --end   the fake's table stops before ENTRY
 *   --null  the fake left ENTRY NULL
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "entry_calls.h"
#include "fake_runtime.h"
#include "symm_test.h"

static int index_of(const char *name) {
    for (int i = 0; i < LOADER_TEST_ENTRY_COUNT; i++)
        if (strcmp(loader_test_entries[i].name, name) == 0) return i;
    TEST_FAIL_("no dispatch entry %s", name);
}

static void *fake_handle(void) {
    const char *path = getenv("SYMM_RUNTIME");
    ASSERT_TRUE(path != NULL);
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
}

static char other_thread_error[256];
static void *read_error_elsewhere(void *arg) {
    (void)arg;
    snprintf(other_thread_error, sizeof(other_thread_error), "%s", symm_last_error());
    return NULL;
}

static void expect_missing(const char *name, int32_t r, int int_getter) {
    char want[256];
    snprintf(want, sizeof(want),
             "%s: the loaded runtime (version 1.0.7) does not provide this entry", name);
    if (r != (int_getter ? -1 : SYMM_ERR_NOT_SUPPORTED))
        TEST_FAIL_("%s returned %d, expected NOT_SUPPORTED", name, r);
    if (strcmp(symm_last_error(), want) != 0)
        TEST_FAIL_("%s: last error '%s', expected '%s'", name, symm_last_error(), want);
}

int main(int argc, char **argv) {
    ASSERT_EQ(LOADER_TEST_ENTRY_COUNT, FAKE_ENTRY_COUNT);
    int end = FAKE_ENTRY_COUNT, null_entry = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--end") == 0) end = index_of(argv[i + 1]);
        else if (strcmp(argv[i], "--null") == 0) null_entry = index_of(argv[i + 1]);
        else TEST_FAIL_("unknown argument %s", argv[i]);
    }
    const int idx_my_pe = index_of("symm_my_pe"), idx_buf_free = index_of("symm_buf_free");
    const int idx_put = index_of("symm_put"), idx_version = index_of("symm_get_version");
    ASSERT_TRUE(idx_put < end && idx_buf_free < end && idx_my_pe < end && idx_version < end);

    /* Lazy: the loader-local functions do not open the runtime. */
    ASSERT_TRUE(fake_handle() == NULL);
    ASSERT_EQ(symm_dtype_size(SYMM_DTYPE_FLOAT64), 8);
    ASSERT_TRUE(strcmp(symm_status_string(SYMM_ERR_NOT_SUPPORTED), "SYMM_ERR_NOT_SUPPORTED") == 0);
    ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);
    ASSERT_TRUE(fake_handle() == NULL);

    CHECK_OK(symm_loader_probe());
    ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);
    void *h = fake_handle();
    ASSERT_TRUE(h != NULL);
    void *sym = dlsym(h, FAKE_STATE_SYMBOL);
    ASSERT_TRUE(sym != NULL);
    fake_runtime_state_fn state_fn;
    memcpy(&state_fn, &sym, sizeof(state_fn));
    fake_runtime_state *fake = state_fn();

    /* One negotiation, with the loader's ABI and struct size. */
    ASSERT_EQ(fake->negotiate_calls, 1);
    ASSERT_EQ(fake->seen_struct_size, sizeof(symm_runtime_negotiation));
    ASSERT_EQ(fake->seen_major, SYMM_ABI_MAJOR);
    ASSERT_EQ(fake->seen_minor, SYMM_ABI_MINOR);
    CHECK_OK(symm_loader_probe());
    ASSERT_EQ(fake->negotiate_calls, 1);

    /* Arguments and results cross the trampoline unchanged. */
    uint32_t version = 0;
    CHECK_OK(symm_get_version(&version));
    ASSERT_EQ(version, FAKE_RUNTIME_VERSION);
    CHECK_OK(symm_put(NULL, 5, NULL, 7, 3));
    ASSERT_U64_EQ(fake->last_u64, 5 + 7 * 1000);
    ASSERT_EQ(fake->last_pe, 3);
    ASSERT_EQ(symm_my_pe(NULL), FAKE_MY_PE);

    /* Every entry: forwarded inside the table, NOT_SUPPORTED past it or NULL. */
    int forwarded = 0, missing = 0;
    for (int i = 0; i < LOADER_TEST_ENTRY_COUNT; i++) {
        const loader_test_entry *e = &loader_test_entries[i];
        const int before = fake->calls[i];
        const int32_t r = e->call();
        if (i < end && i != null_entry) {
            int32_t want = i == idx_my_pe ? FAKE_MY_PE
                         : i == idx_buf_free ? SYMM_ERR_INVALID_HANDLE : 0;
            if (r != want) TEST_FAIL_("%s returned %d, expected %d", e->name, r, want);
            if (fake->calls[i] != before + 1)
                TEST_FAIL_("%s: the runtime saw %d calls, expected %d", e->name, fake->calls[i],
                           before + 1);
            const char *want_msg = i == idx_buf_free ? FAKE_LAST_ERROR : "";
            if (strcmp(symm_last_error(), want_msg) != 0)
                TEST_FAIL_("after %s: last error '%s'", e->name, symm_last_error());
            forwarded++;
        } else {
            expect_missing(e->name, r, e->int_getter);
            if (fake->calls[i] != before) TEST_FAIL_("%s reached the runtime", e->name);
            missing++;
        }
    }
    ASSERT_EQ(forwarded + missing, FAKE_ENTRY_COUNT);
    ASSERT_EQ(missing, (FAKE_ENTRY_COUNT - end) + (null_entry >= 0 && null_entry < end));

    /* The last error follows the last call: loader message, then the
     * runtime's, then the loader's again, then none. */
    if (missing > 0) {
        const int m = null_entry >= 0 ? null_entry : end;
        const loader_test_entry *e = &loader_test_entries[m];
        expect_missing(e->name, e->call(), e->int_getter);
        /* Messages are per thread: another thread has none. */
        pthread_t t;
        ASSERT_EQ(pthread_create(&t, NULL, read_error_elsewhere, NULL), 0);
        ASSERT_EQ(pthread_join(t, NULL), 0);
        ASSERT_TRUE(strcmp(other_thread_error, "") == 0);
        ASSERT_TRUE(strstr(symm_last_error(), "does not provide this entry") != NULL);
        CHECK_OK(symm_loader_probe());
        ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);
        expect_missing(e->name, e->call(), e->int_getter);
    }
    CHECK_STATUS(symm_buf_free(NULL), SYMM_ERR_INVALID_HANDLE);
    ASSERT_TRUE(strcmp(symm_last_error(), FAKE_LAST_ERROR) == 0);
    /* A successful probe is a call that did not fail: no message after it. */
    CHECK_OK(symm_loader_probe());
    ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);
    CHECK_STATUS(symm_buf_free(NULL), SYMM_ERR_INVALID_HANDLE);
    ASSERT_TRUE(strcmp(symm_last_error(), FAKE_LAST_ERROR) == 0);
    if (missing > 0) {
        const loader_test_entry *e = &loader_test_entries[FAKE_ENTRY_COUNT - 1];
        if (end < FAKE_ENTRY_COUNT) expect_missing(e->name, e->call(), e->int_getter);
    }
    CHECK_OK(symm_put(NULL, 1, NULL, 1, 0));
    ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);
    ASSERT_EQ(fake->negotiate_calls, 1);

    printf("ok: %d entries forwarded, %d not supported\n", forwarded, missing);
    return 0;
}

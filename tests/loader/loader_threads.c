/*
 * First use from many threads at once: the runtime is opened and negotiated
 * once, every thread waits for that one load and gets the same status, and
 * each thread gets its own copy of the message.
 *
 * usage: loader_threads STATUS   (SYMM_RUNTIME = a slow fake, or a bad path)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "fake_runtime.h"
#include "symm_test.h"

#define NTHREADS 8

static pthread_barrier_t start;

typedef struct result {
    symm_status probe;
    int32_t my_pe;
    char error[1024];
} result;

static void *worker(void *arg) {
    result *r = (result *)arg;
    pthread_barrier_wait(&start);
    r->probe = symm_loader_probe();
    snprintf(r->error, sizeof(r->error), "%s", symm_last_error());
    r->my_pe = symm_my_pe(NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) TEST_FAIL_("usage: loader_threads STATUS");
    const int expect_ok = strcmp(argv[1], "SYMM_SUCCESS") == 0;

    result results[NTHREADS];
    pthread_t threads[NTHREADS];
    memset(results, 0, sizeof(results));
    ASSERT_EQ(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_EQ(pthread_create(&threads[i], NULL, worker, &results[i]), 0);
    for (int i = 0; i < NTHREADS; i++) ASSERT_EQ(pthread_join(threads[i], NULL), 0);
    pthread_barrier_destroy(&start);

    for (int i = 0; i < NTHREADS; i++) {
        if (strcmp(symm_status_string(results[i].probe), argv[1]) != 0)
            TEST_FAIL_("thread %d: %s, expected %s (%s)", i, symm_status_string(results[i].probe),
                       argv[1], results[i].error);
        ASSERT_EQ(results[i].probe, results[0].probe);
        ASSERT_TRUE(strcmp(results[i].error, results[0].error) == 0);
        ASSERT_EQ(results[i].my_pe, expect_ok ? FAKE_MY_PE : -1);
    }
    /* The main thread made no call: it has no message of its own. */
    ASSERT_TRUE(strcmp(symm_last_error(), "") == 0);

    if (expect_ok) {
        ASSERT_TRUE(strcmp(results[0].error, "") == 0);
        const char *path = getenv("SYMM_RUNTIME");
        ASSERT_TRUE(path != NULL);
        void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        ASSERT_TRUE(h != NULL);
        void *sym = dlsym(h, FAKE_STATE_SYMBOL);
        ASSERT_TRUE(sym != NULL);
        fake_runtime_state_fn fn;
        memcpy(&fn, &sym, sizeof(fn));
        fake_runtime_state *fake = fn();
        ASSERT_EQ(fake->negotiate_calls, 1);
        ASSERT_EQ(fake->calls[FAKE_IDX_symm_my_pe], NTHREADS);
    } else {
        ASSERT_TRUE(strstr(results[0].error, "tried") != NULL);
    }
    printf("ok: %d threads, one load, %s\n", NTHREADS, argv[1]);
    return 0;
}

/*
 * A symm_init that fails after the heap descriptor exchange releases
 * everything: 200 failed inits leave the number of open
 * file descriptors and (without ASan) the heap's bytes in use where they
 * were (after 50 failures that fill malloc's caches), and a normal init works afterwards.
 *
 *   fault_init_fail reserve|grow|env
 * reserve: the address-space reservation fails (RLIMIT_AS; skipped under ASan,
 *          whose shadow memory needs the address space);
 * grow:    backing the first chunk fails (RLIMIT_FSIZE caps the memfd).
 * env:     bad SYMM_PEER_TIMEOUT_MS values fail init with INVALID_ARG and a
 *          message naming the variable (and leak nothing either).
 * Single PE (SINGLE bootstrap): the descriptor exchange still runs.
 */
#include <dirent.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "symm_test.h"

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif

static int count_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    ASSERT_TRUE(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

static symm_status try_init(symm_ctx *ctx) {
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_SINGLE;
    return symm_init(&attr, ctx);
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "reserve";
    symm_test_pe = 0;
    /* Warm up: the loader, the runtime and their first allocations. */
    symm_ctx ctx = NULL;
    CHECK_OK(try_init(&ctx));
    CHECK_OK(symm_finalize(&ctx));

    if (strcmp(how, "env") == 0) {
        int fds0 = count_fds();
        const char *bad[] = {"0", "abc", "-5", "3600001", "", "12ms"};
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            setenv("SYMM_PEER_TIMEOUT_MS", bad[i], 1);
            symm_ctx c = NULL;
            CHECK_STATUS(try_init(&c), SYMM_ERR_INVALID_ARG);
            if (!strstr(symm_last_error(), "SYMM_PEER_TIMEOUT_MS"))
                TEST_FAIL_("\"%s\": message lacks the variable: %s", bad[i], symm_last_error());
            ASSERT_TRUE(c == NULL);
        }
        setenv("SYMM_PEER_TIMEOUT_MS", "250", 1);
        CHECK_OK(try_init(&ctx));
        CHECK_OK(symm_finalize(&ctx));
        unsetenv("SYMM_PEER_TIMEOUT_MS");
        ASSERT_EQ(count_fds(), fds0);
        printf("env: bad SYMM_PEER_TIMEOUT_MS values refused\n");
        return 0;
    }
    struct rlimit old;
    if (strcmp(how, "reserve") == 0) {
#ifdef HAVE_ASAN
        printf("SKIP: RLIMIT_AS cannot be lowered under AddressSanitizer\n");
        return 77;
#endif
        setenv("SYMM_HEAP_CAP", "16G", 1); /* far above the limit below */
        ASSERT_EQ(getrlimit(RLIMIT_AS, &old), 0);
        /* Room for what the process has mapped (read from /proc) + 1 GiB. */
        FILE *f = fopen("/proc/self/statm", "r");
        ASSERT_TRUE(f != NULL);
        unsigned long pages = 0;
        ASSERT_EQ(fscanf(f, "%lu", &pages), 1);
        fclose(f);
        struct rlimit lim = old;
        lim.rlim_cur = (rlim_t)pages * 4096u + (1ul << 30);
        ASSERT_EQ(setrlimit(RLIMIT_AS, &lim), 0);
    } else if (strcmp(how, "grow") == 0) {
        setenv("SYMM_HEAP_CHUNK", "1M", 1);
        signal(SIGXFSZ, SIG_IGN); /* ftruncate past the limit: EFBIG, not a signal */
        ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
        struct rlimit lim = old;
        lim.rlim_cur = 64 * 1024;
        ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
    } else {
        TEST_FAIL_("unknown case %s (reserve or grow)", how);
    }

    int fds0 = count_fds();
    size_t heap0 = 0;
    /* The first failures fill malloc's caches; the heap is measured after
     * them (the descriptors from the start). */
    for (int i = 0; i < 250; i++) {
        symm_ctx c = NULL;
        CHECK_STATUS(try_init(&c), SYMM_ERR_OUT_OF_MEMORY);
        ASSERT_TRUE(c == NULL);
        if (i == 0) printf("failed init: %s\n", symm_last_error());
#ifndef HAVE_ASAN
        if (i == 49) heap0 = mallinfo2().uordblks;
#endif
    }
    int fds1 = count_fds();
    printf("%s: open descriptors %d -> %d over 250 failed inits\n", how, fds0, fds1);
    ASSERT_EQ(fds1, fds0);
#ifndef HAVE_ASAN
    size_t heap1 = mallinfo2().uordblks;
    printf("%s: heap bytes in use %zu -> %zu\n", how, heap0, heap1);
    /* 200 leaked states of >= 24 bytes each would add >= 4800 bytes */
    (void)heap0;
    ASSERT_LT(heap1, heap0 + 2048);
#endif
    ASSERT_EQ(setrlimit(strcmp(how, "grow") == 0 ? RLIMIT_FSIZE : RLIMIT_AS, &old), 0);
    unsetenv("SYMM_HEAP_CAP");
    CHECK_OK(try_init(&ctx));
    CHECK_OK(symm_finalize(&ctx));
    return 0;
}

/* symm_ctx_async_error through the public API (any backend; the host backend
 * never records an asynchronous failure, so the record stays empty: recorded
 * ones are tested in tests/unit and, on a GPU, tests/gpu/gpu_async.cu), and
 * the default thread level of symm_init(NULL, ...). */
#include <pthread.h>
#include <string.h>

#include "symm_test.h"

static void *async_from_other_thread(void *arg) {
    symm_status st = -1;
    char msg[16];
    symm_status r = symm_ctx_async_error((symm_ctx)arg, 0, sizeof msg, &st, msg);
    if (r == SYMM_SUCCESS && st != SYMM_SUCCESS) r = SYMM_ERR_INTERNAL;
    /* a level-checked call from this thread is refused */
    if (r == SYMM_SUCCESS && symm_quiet((symm_ctx)arg) != SYMM_ERR_THREAD_LEVEL)
        r = SYMM_ERR_INTERNAL;
    return (void *)(intptr_t)r;
}

static void test_fresh_context(symm_ctx ctx) {
    symm_status st = -1;
    char msg[64];
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(ctx, 0, sizeof msg, &st, msg));
    ASSERT_EQ(st, SYMM_SUCCESS);
    ASSERT_EQ(msg[0], '\0');
    ASSERT_EQ(msg[1], 'X'); /* only the NUL was written */
    /* status only; CLEAR on an empty record */
    st = -1;
    CHECK_OK(symm_ctx_async_error(ctx, 0, 0, &st, NULL));
    ASSERT_EQ(st, SYMM_SUCCESS);
    st = -1;
    CHECK_OK(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR, 0, &st, NULL));
    ASSERT_EQ(st, SYMM_SUCCESS);
    /* msg_cap 1: an empty, terminated message and nothing past it */
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(ctx, 0, 1, &st, msg));
    ASSERT_EQ(msg[0], '\0');
    ASSERT_EQ(msg[1], 'X');
    /* a huge msg_cap is fine: the message is short */
    memset(msg, 'X', sizeof msg);
    CHECK_OK(symm_ctx_async_error(ctx, 0, UINT64_MAX, &st, msg));
    ASSERT_EQ(msg[0], '\0');
    ASSERT_EQ(msg[1], 'X');
}

static void test_refusals(symm_ctx ctx) {
    symm_status st = -1;
    char msg[16];
    memset(msg, 'X', sizeof msg);
    CHECK_STATUS(symm_ctx_async_error(ctx, 2, sizeof msg, &st, msg), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm_last_error(), "unknown flags") != NULL);
    CHECK_STATUS(symm_ctx_async_error(ctx, SYMM_ASYNC_CLEAR | 0x80000000u, 0, &st, NULL),
                 SYMM_ERR_INVALID_ARG);
    CHECK_STATUS(symm_ctx_async_error(ctx, 0, 8, &st, NULL), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm_last_error(), "msg is NULL") != NULL);
    CHECK_STATUS(symm_ctx_async_error(ctx, 0, sizeof msg, NULL, msg), SYMM_ERR_INVALID_ARG);
    ASSERT_TRUE(strstr(symm_last_error(), "status is NULL") != NULL);
    ASSERT_EQ(st, -1); /* refusals write nothing */
    ASSERT_EQ(msg[0], 'X');
    CHECK_STATUS(symm_ctx_async_error(NULL, 0, sizeof msg, &st, msg), SYMM_ERR_INVALID_HANDLE);
    ASSERT_EQ(st, -1);
    ASSERT_EQ(msg[0], 'X');
}

/* NULL attributes: the default thread level is MULTIPLE. A FUNNELED context
 * still answers symm_ctx_async_error from any thread (its contract says so)
 * and refuses a level-checked call there. The stale handle of a finalized
 * context is INVALID_HANDLE. */
static void test_default_level_and_stale(symm_ctx ctx) {
    symm_ctx dflt = NULL;
    CHECK_OK(symm_init(NULL, &dflt));
    symm_ctx_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(symm_ctx_query(dflt, &info));
    ASSERT_EQ(info.thread_level, SYMM_THREAD_MULTIPLE);
    ASSERT_EQ(info.n_pes, symm_n_pes(ctx));
    symm_ctx stale = dflt;
    CHECK_OK(symm_finalize(&dflt));
    ASSERT_TRUE(dflt == NULL);
    symm_status st = -1;
    char msg[8] = "XXXXXXX";
    CHECK_STATUS(symm_ctx_async_error(stale, 0, sizeof msg, &st, msg), SYMM_ERR_INVALID_HANDLE);
    ASSERT_EQ(st, -1);
    ASSERT_EQ(msg[0], 'X');

    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    ASSERT_EQ(attr.thread_level, SYMM_THREAD_MULTIPLE);
    symm_ctx_info ci = {.struct_size = sizeof ci};
    CHECK_OK(symm_ctx_query(ctx, &ci));
    attr.backend = ci.backend;
    attr.thread_level = SYMM_THREAD_FUNNELED;
    symm_ctx fun = NULL;
    CHECK_OK(symm_init(&attr, &fun));
    pthread_t th;
    void *r = NULL;
    ASSERT_EQ(pthread_create(&th, NULL, async_from_other_thread, fun), 0);
    pthread_join(th, &r);
    ASSERT_EQ((intptr_t)r, SYMM_SUCCESS);
    CHECK_OK(symm_finalize(&fun));
}

int main(void) {
    symm_ctx ctx = symm_test_init(SYMM_BACKEND_AUTO);
    test_fresh_context(ctx);
    test_refusals(ctx);
    test_default_level_and_stale(ctx);
    test_fresh_context(ctx); /* the refusals recorded nothing */
    CHECK_OK(symm_finalize(&ctx));
    printf("async: ok\n");
    return 0;
}

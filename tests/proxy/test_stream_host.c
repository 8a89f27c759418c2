/*
 * Stream forms to a PE of another host on the host backend (no GPU): the
 * host "stream" is synchronous, so every *_on_stream form to a remote PE runs
 * as the blocking host path and must give the blocking form's results (no
 * NOT_SUPPORTED anywhere). Run: symmrun -n 2 --hosts 2 test_stream_host
 * (SYMM_TRANSPORT=tcp). With SYMM_PROXY_FORCE=1 the context also has a proxy
 * (symm_init starts it, symm_quiet quiets it, symm_finalize stops it).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <symm/symm.h>

#include "internal.h"
#include "proxy.h"
#include "symm_test.h"

/* The loader answers these; this program links the runtime's objects. */
const char *symm_status_string(symm_status s) { return symm__status_name(s); }
const char *symm_last_error(void) { return symm__last_error(); }

int main(void) {
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    attr.backend = SYMM_BACKEND_HOST;
    symm_ctx ctx = NULL;
    CHECK_OK(symm_init(&attr, &ctx));
    const int me = symm_test_pe = symm_my_pe(ctx), peer = 1 - me;
    ASSERT_EQ(symm_n_pes(ctx), 2);
    symm__ctx *C = NULL;
    CHECK_OK(symm__ctx_get(ctx, &C));
    if (C->n_remote != 1) TEST_FAIL_("run under symmrun -n 2 --hosts 2: the peer is not remote");
    const char *force = getenv("SYMM_PROXY_FORCE");
    const bool forced = force && strcmp(force, "1") == 0;
    ASSERT_EQ(symm__proxy_running(C), forced); /* host backend: only when forced */

    enum { N = 4096 };
    symm_buf A, W, S, D, R;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, N, &A));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 16, &W));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 8, &S));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, N, &D));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_FLOAT64, 2 * N, &R));
    int32_t src[N], back[N];
    for (int i = 0; i < N; i++) src[i] = i * 3 + me * 100000;
    CHECK_OK(symm_barrier_all(ctx));

    CHECK_OK(symm_put_on_stream(A, 0, src, N, peer, NULL));
    const int64_t v = 5000 + me;
    CHECK_OK(symm_p_on_stream(W, 3, &v, peer, NULL));
    CHECK_OK(symm_signal_op_on_stream(S, 0, 7, SYMM_SIGNAL_SET, peer, NULL));
    CHECK_OK(symm_put_signal_on_stream(W, 4, &v, 1, S, 1, 2, SYMM_SIGNAL_ADD, peer, NULL));
    CHECK_OK(symm_quiet_on_stream(ctx, NULL));
    CHECK_OK(symm_signal_wait_until_on_stream(S, 1, SYMM_CMP_GE, 2, NULL));
    CHECK_OK(symm_barrier_all_on_stream(ctx, NULL));
    CHECK_OK(symm_get_on_stream(back, A, 0, N, peer, NULL));
    for (int i = 0; i < N; i++) ASSERT_EQ(back[i], src[i]); /* my data, at the peer */
    int32_t *a = NULL;
    CHECK_OK(symm_buf_ptr(A, (void **)&a));
    for (int i = 0; i < N; i++) ASSERT_EQ(a[i], i * 3 + peer * 100000);
    int64_t *w = NULL;
    uint64_t *s = NULL;
    CHECK_OK(symm_buf_ptr(W, (void **)&w));
    CHECK_OK(symm_buf_ptr(S, (void **)&s));
    ASSERT_EQ(w[3], 5000 + peer);
    ASSERT_EQ(w[4], 5000 + peer);
    ASSERT_U64_EQ(s[0], 7);
    ASSERT_U64_EQ(s[1], 2);

    /* collectives across hosts on a stream */
    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    double *d = NULL, *r = NULL;
    CHECK_OK(symm_buf_ptr(D, (void **)&d));
    CHECK_OK(symm_buf_ptr(R, (void **)&r));
    for (int i = 0; i < N; i++) d[i] = (double)(i % 31) + 1000.0 * me;
    CHECK_OK(symm_reduce_on_stream(world, R, 0, D, 0, N, SYMM_OP_SUM, NULL));
    for (int i = 0; i < N; i++) ASSERT_TRUE(r[i] == 2.0 * (double)(i % 31) + 1000.0);
    CHECK_OK(symm_fcollect_on_stream(world, R, 0, D, 0, N, NULL));
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < N; i++) ASSERT_TRUE(r[j * N + i] == (double)(i % 31) + 1000.0 * j);
    CHECK_OK(symm_barrier_on_stream(world, NULL));
    CHECK_OK(symm_quiet(ctx));
    CHECK_OK(symm_finalize(&ctx));
    if (me == 0) printf("PASS (proxy %s)\n", forced ? "forced" : "not started");
    return 0;
}

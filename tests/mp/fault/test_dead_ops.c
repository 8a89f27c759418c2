/*
 * Every kind of call that needs a dead PE returns SYMM_ERR_PEER_FAILED within
 * a bound once that PE is SIGKILLed: one-sided calls that
 * would otherwise keep succeeding (put, get, p/g, putmem/getmem, nbi + quiet,
 * atomics, signal_op, put_signal) and the blocking ones (waits, barrier,
 * collectives, team split, buffer alloc/free, finalize).
 *
 *   fault_dead_ops KIND [VICTIM [N]]
 *
 * The test forks N PEs (unique-id bootstrap: symmrun would end the job
 * itself). When every survivor is about to start KIND, the parent notes the
 * time in shared memory and SIGKILLs the victim; each survivor then runs KIND
 * against the victim until it fails, and checks the status and the latency
 * (limit: SYMM_PEER_TIMEOUT_MS, default 100 ms, plus SYMM_KILL_SLACK_MS for a
 * loaded machine, from when the victim was gone: symm_kill_since_ms; the
 * measured latency is printed).
 * Host backend, or the CUDA backend with SYMM_TEST_BACKEND=cuda (exit 77
 * without a usable GPU).
 * DEAD_OPS_HOSTS=H splits the PEs into H simulated hosts like symmrun --hosts
 * (PE r gets SYMM_HOST_ID from r * H / N), so the victim is reached through
 * the transport (SYMM_TRANSPORT) by the PEs of other hosts.
 */
#include <stdlib.h>
#include <string.h>

#include "symm_kill_harness.h"
#include "symm_test.h"

#define GIVE_UP_S 20.0

static const char *kind;
static int victim, n_pes, me;

static double now(void) { return symm_kill_now(); }

static double limit_ms(void) {
    const char *v = getenv("SYMM_PEER_TIMEOUT_MS");
    return (v ? atof(v) : 100.0) + SYMM_KILL_SLACK_MS;
}

/* The first failure of a call: PEER_FAILED, with a message, soon enough. */
static void expect_failed(const char *what, symm_status st) {
    double t = now();
    if (st != SYMM_ERR_PEER_FAILED)
        TEST_FAIL_("%s returned %s (%s), expected SYMM_ERR_PEER_FAILED", what,
                   symm_status_string(st), symm_last_error());
    if (symm_last_error()[0] == '\0') TEST_FAIL_("%s: PEER_FAILED without a message", what);
    if (*symm_kill_t == 0) TEST_FAIL_("%s failed before the victim was killed", what);
    double ms = symm_kill_since_ms(t);
    printf("PE %d: %s -> SYMM_ERR_PEER_FAILED %.1f ms after PE %d ended (killed %.1f ms "
           "before) (%s)\n", me, what, ms, victim, (t - *symm_kill_t) * 1e3, symm_last_error());
    fflush(stdout);
    if (ms > limit_ms()) TEST_FAIL_("%s noticed the dead PE after %.1f ms (limit %.0f)", what, ms,
                                    limit_ms());
}

/* Repeat one call until it fails; it must succeed until the death. */
#define UNTIL_FAILED(what, call)                                                  \
    do {                                                                          \
        symm_status st_ = SYMM_SUCCESS;                                           \
        double t0_ = now();                                                       \
        while (st_ == SYMM_SUCCESS && now() - t0_ < GIVE_UP_S) st_ = (call);      \
        if (st_ == SYMM_SUCCESS)                                                  \
            TEST_FAIL_("%s kept returning SYMM_SUCCESS for %.0f s after PE %d was killed", \
                       what, GIVE_UP_S, victim);                                  \
        expect_failed(what, st_);                                                 \
    } while (0)

static void run_kind(symm_ctx ctx, symm_buf buf, symm_buf sig, symm_buf src) {
    int64_t v = 7, got = 0;
    int64_t block[64] = {0};
    void *base = NULL;
    CHECK_OK(symm_buf_ptr(buf, &base));
    symm_team world;
    CHECK_OK(symm_team_get(ctx, SYMM_TEAM_WORLD, &world));
    if (strcmp(kind, "put") == 0) {
        UNTIL_FAILED("symm_put", symm_put(buf, 0, block, 64, victim));
    } else if (strcmp(kind, "get") == 0) {
        UNTIL_FAILED("symm_get", symm_get(block, buf, 0, 64, victim));
    } else if (strcmp(kind, "pg") == 0) {
        UNTIL_FAILED("symm_p", symm_p(buf, 1, &v, victim));
        /* the context is now failed: g fails at once */
        expect_failed("symm_g", symm_g(buf, 1, victim, &got));
    } else if (strcmp(kind, "mem") == 0) {
        UNTIL_FAILED("symm_putmem", symm_putmem(ctx, base, block, sizeof block, victim));
        expect_failed("symm_getmem", symm_getmem(ctx, block, base, sizeof block, victim));
        expect_failed("symm_putmem_nbi", symm_putmem_nbi(ctx, base, block, 8, victim));
        expect_failed("symm_getmem_nbi", symm_getmem_nbi(ctx, block, base, 8, victim));
    } else if (strcmp(kind, "nbi") == 0) {
        /* nbi calls until one fails, or the quiet after them does */
        symm_status st = SYMM_SUCCESS;
        double t0 = now();
        while (st == SYMM_SUCCESS && now() - t0 < GIVE_UP_S) {
            st = symm_put_nbi(buf, 0, block, 64, victim);
            if (st == SYMM_SUCCESS) st = symm_get_nbi(block, buf, 0, 64, victim);
            if (st == SYMM_SUCCESS) st = symm_quiet(ctx);
        }
        expect_failed("symm_put_nbi/get_nbi/quiet", st);
        expect_failed("symm_quiet", symm_quiet(ctx));
        expect_failed("symm_fence", symm_fence(ctx));
    } else if (strcmp(kind, "atomic") == 0) {
        UNTIL_FAILED("symm_atomic", symm_atomic(buf, 2, SYMM_AMO_FETCH_ADD, &v, NULL, victim, &got));
        expect_failed("symm_atomic_nbi",
                      symm_atomic_nbi(buf, 2, SYMM_AMO_ADD, &v, NULL, victim, NULL));
    } else if (strcmp(kind, "signal") == 0) {
        UNTIL_FAILED("symm_signal_op", symm_signal_op(sig, 0, 1, SYMM_SIGNAL_ADD, victim));
    } else if (strcmp(kind, "put_signal") == 0) {
        UNTIL_FAILED("symm_put_signal",
                     symm_put_signal(buf, 0, block, 8, sig, 1, 1, SYMM_SIGNAL_SET, victim));
        expect_failed("symm_put_signal_nbi",
                      symm_put_signal_nbi(buf, 0, block, 8, sig, 1, 1, SYMM_SIGNAL_SET, victim));
    } else if (strcmp(kind, "wait") == 0) {
        expect_failed("symm_signal_wait_until",
                      symm_signal_wait_until(sig, 2, SYMM_CMP_EQ, 12345, NULL));
        int64_t want = 99;
        expect_failed("symm_wait_until", symm_wait_until(buf, 3, SYMM_CMP_EQ, &want));
    } else if (strcmp(kind, "barrier") == 0) {
        expect_failed("symm_barrier_all", symm_barrier_all(ctx));
    } else if (strcmp(kind, "coll") == 0) {
        expect_failed("symm_broadcast", symm_broadcast(world, buf, 0, src, 0, 16, victim));
    } else if (strcmp(kind, "split") == 0) {
        symm_team t = NULL;
        expect_failed("symm_team_split_strided",
                      symm_team_split_strided(world, 0, 1, n_pes, NULL, &t));
        ASSERT_TRUE(t == NULL);
    } else if (strcmp(kind, "alloc") == 0) {
        symm_buf b = NULL;
        expect_failed("symm_buf_alloc", symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 128, &b));
        ASSERT_TRUE(b == NULL);
    } else if (strcmp(kind, "free") == 0) {
        expect_failed("symm_buf_free", symm_buf_free(src));
    } else if (strcmp(kind, "finalize") == 0) {
        expect_failed("symm_finalize", symm_finalize(&ctx));
        ASSERT_TRUE(ctx == NULL);
        return;
    } else {
        TEST_FAIL_("unknown kind %s", kind);
    }
    /* Whatever failed, finalize still releases the context. */
    CHECK_STATUS(symm_finalize(&ctx), SYMM_ERR_PEER_FAILED);
    ASSERT_TRUE(ctx == NULL);
}

static int run_pe(int rank, const symm_unique_id *id, int ready_fd) {
    me = symm_test_pe = rank;
    symm_init_attr attr;
    CHECK_OK(SYMM_INIT_ATTR_INIT(&attr));
    const char *be = getenv("SYMM_TEST_BACKEND");
    attr.backend = be && strcmp(be, "cuda") == 0 ? SYMM_BACKEND_CUDA : SYMM_BACKEND_HOST;
    attr.bootstrap = SYMM_BOOTSTRAP_UID;
    attr.rank = rank;
    attr.n_pes = n_pes;
    attr.unique_id = *id;
    attr.timeout_ms = 20000;
    symm_ctx ctx = NULL;
    symm_status st = symm_init(&attr, &ctx);
    if (st == SYMM_ERR_NO_DEVICE && attr.backend == SYMM_BACKEND_CUDA) {
        printf("SKIP: no usable GPU (%s)\n", symm_last_error());
        exit(77);
    }
    CHECK_OK(st);
    symm_buf buf = NULL, sig = NULL, src = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 64, &buf));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_UINT64, 4, &sig));
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT64, 16, &src));
    CHECK_OK(symm_barrier_all(ctx));
    char one = 1;
    ASSERT_EQ(write(ready_fd, &one, 1), 1);
    if (rank == victim) {
        for (;;) pause(); /* the parent kills it */
    }
    run_kind(ctx, buf, sig, src);
    return 0;
}

/* DEAD_OPS_HOSTS=H: PE r's simulated host (SYMM_HOST_ID) is r * H / N. */
static void set_host(int rank) {
    const char *hosts = getenv("DEAD_OPS_HOSTS");
    if (hosts && atoi(hosts) > 0) {
        char id[64];
        snprintf(id, sizeof id, "dead-ops-host-%d", rank * atoi(hosts) / n_pes);
        setenv("SYMM_HOST_ID", id, 1);
    }
}

int main(int argc, char **argv) {
    kind = argc > 1 ? argv[1] : "put";
    victim = argc > 2 ? atoi(argv[2]) : 1;
    n_pes = argc > 3 ? atoi(argv[3]) : 3;
    if (n_pes < 2 || n_pes > SYMM_KILL_MAX_PES || victim < 0 || victim >= n_pes) {
        fprintf(stderr, "usage: fault_dead_ops KIND [VICTIM [N]] (2 <= N <= %d)\n",
                SYMM_KILL_MAX_PES);
        return 2;
    }
    /* 20 ms to enter the loops; a survivor gives up on its own after GIVE_UP_S */
    int rc = symm_kill_run(n_pes, victim, 20.0, 2 * GIVE_UP_S, set_host, run_pe);
    if (rc == 0)
        printf("%s: every survivor got SYMM_ERR_PEER_FAILED after PE %d of %d was killed\n",
               kind, victim, n_pes);
    return rc;
}

/*
 * Handle lifetime under concurrency: threads of every PE call every kind of
 * entry on a SYMM_THREAD_MULTIPLE context and its buffers (put/get/p/g, raw
 * put/get, nbi + quiet, fence, atomics, signals, put-with-signal, tests,
 * waits that nothing satisfies, queries, and barriers in finalize mode)
 * while the main thread finalizes the context or frees the buffer, many
 * times over.
 *
 *   test_lifetime finalize [rounds]   each round: init, threads, finalize
 *   test_lifetime free [rounds]       one context; each round: alloc two
 *                                     buffers, threads, free them
 *
 * A racing call completes or returns INVALID_HANDLE; nothing crashes (ASan
 * and TSan runs: scripts/sanitize.sh), and every blocked wait (wait_until,
 * signal_wait_until, barriers) ends with INVALID_HANDLE once the object
 * goes: each worker stops at its first INVALID_HANDLE and the round joins
 * them all (symmrun's timeout catches a wait that never ends). Any other
 * status fails the test. The threads must have done work before the end
 * (successful calls are counted), so a round where they never started
 * proves nothing and fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "symm_test.h"

#define N_ELEMS 64
#define NEVER 0x5eadbeefull /* a value nothing stores: waits on it block */

enum { MODE_FINALIZE, MODE_FREE };

enum {
    W_MIX,        /* every non-blocking entry in turn                      */
    W_WAIT,       /* symm_wait_until on an element nobody sets             */
    W_WAIT_ANY,   /* symm_wait_until_any, likewise                         */
    W_SIG_WAIT,   /* symm_signal_wait_until, likewise                      */
    W_BARRIER,    /* symm_barrier_all in a loop (finalize mode only)       */
    W_QUERY,      /* context and buffer queries, the context lock          */
};

/* The round's objects; workers get a copy (the main thread's finalize
 * clears its own ctx variable). */
typedef struct shared {
    symm_ctx ctx;
    symm_buf data, sig; /* data: UINT64 [N_ELEMS]; sig: UINT64 [N_ELEMS]   */
    void *data_sym;     /* this PE's address of data (raw put/get)         */
    int32_t me, n_pes, mode;
    symm_buf keep;      /* free mode: lives across rounds                  */
    atomic_long ok_calls;   /* calls that returned SUCCESS                 */
    atomic_long stale;      /* calls that returned INVALID_HANDLE          */
    atomic_int started;     /* workers that made their first call          */
} shared;

typedef struct worker {
    shared *sh;
    int kind, id;
    pthread_t th;
    symm_ctx ctx;
    symm_buf data, sig;
} worker;

/* SUCCESS: go on; INVALID_HANDLE: the object went, stop; anything else fails. */
static bool outcome(shared *sh, const char *what, symm_status st) {
    if (st == SYMM_SUCCESS) {
        atomic_fetch_add(&sh->ok_calls, 1);
        return true;
    }
    if (st == SYMM_ERR_INVALID_HANDLE) {
        atomic_fetch_add(&sh->stale, 1);
        return false;
    }
    TEST_FAIL_("%s -> %s (%s), expected SUCCESS or INVALID_HANDLE", what, symm_status_string(st),
               symm_last_error());
    return false;
}

#define CALL(what, expr)                                                       \
    do {                                                                       \
        if (!outcome(sh, what, (expr))) return;                               \
    } while (0)

static void mix(worker *w) {
    shared *sh = w->sh;
    const int32_t peer = (sh->me + 1) % sh->n_pes;
    /* each worker its own 4 elements of the low half (the high half: waits) */
    const uint64_t i = (uint64_t)w->id * 4 % (N_ELEMS / 2);
    uint64_t v = (uint64_t)w->id, got = 0, vals[4] = {1, 2, 3, 4};
    for (unsigned long it = 0;; it++) {
        v++;
        switch (it % 20) {
        case 0: CALL("symm_put", symm_put(w->data, i, vals, 4, peer)); break;
        case 1: CALL("symm_get", symm_get(vals, w->data, i, 4, peer)); break;
        case 2: CALL("symm_p", symm_p(w->data, i, &v, peer)); break;
        case 3: CALL("symm_g", symm_g(w->data, i, peer, &got)); break;
        case 4:
            CALL("symm_put_nbi", symm_put_nbi(w->data, i, &v, 1, peer));
            CALL("symm_quiet", symm_quiet(w->ctx));
            break;
        case 5: CALL("symm_get_nbi", symm_get_nbi(&got, w->data, i, 1, peer)); break;
        case 6:
            /* raw addresses reach only the context; the buffer call after
             * them sees a freed buffer */
            CALL("symm_putmem", symm_putmem(w->ctx, (uint64_t *)sh->data_sym + i, &v, 8, peer));
            CALL("symm_getmem", symm_getmem(w->ctx, &got, (uint64_t *)sh->data_sym + i, 8, peer));
            CALL("symm_p", symm_p(w->data, i, &v, sh->me));
            break;
        case 7: CALL("symm_fence", symm_fence(w->ctx)); break;
        case 8: {
            uint64_t one = 1;
            CALL("symm_atomic FETCH_ADD",
                 symm_atomic(w->data, i, SYMM_AMO_FETCH_ADD, &one, NULL, peer, &got));
            break;
        }
        case 9: {
            uint64_t cmp = got, nv = v;
            CALL("symm_atomic COMPARE_SWAP",
                 symm_atomic(w->data, i, SYMM_AMO_COMPARE_SWAP, &nv, &cmp, peer, &got));
            break;
        }
        case 10: {
            uint64_t one = 1;
            CALL("symm_atomic_nbi INC",
                 symm_atomic_nbi(w->data, i, SYMM_AMO_INC, &one, NULL, peer, NULL));
            break;
        }
        case 11: CALL("symm_signal_op", symm_signal_op(w->sig, i, 1, SYMM_SIGNAL_ADD, peer)); break;
        case 12: CALL("symm_signal_fetch", symm_signal_fetch(w->sig, i, &got)); break;
        case 13:
            CALL("symm_put_signal",
                 symm_put_signal(w->data, i, &v, 1, w->sig, i, 1, SYMM_SIGNAL_ADD, peer));
            break;
        case 14:
            CALL("symm_put_signal_nbi",
                 symm_put_signal_nbi(w->data, i, &v, 1, w->sig, i, 1, SYMM_SIGNAL_SET, peer));
            break;
        case 15: {
            int32_t sat = -1;
            uint64_t never = NEVER;
            CALL("symm_test", symm_test(w->data, i, SYMM_CMP_EQ, &never, &sat));
            if (sat != 0) TEST_FAIL_("symm_test: satisfied by a value nobody stored");
            break;
        }
        case 16: {
            /* satisfied at once: a wait that completes */
            uint64_t zero = 0;
            CALL("symm_wait_until", symm_wait_until(w->sig, N_ELEMS - 1, SYMM_CMP_GE, &zero));
            break;
        }
        case 17: CALL("symm_quiet", symm_quiet(w->ctx)); break;
        case 18: {
            void *p = NULL;
            CALL("symm_buf_ptr", symm_buf_ptr(w->data, &p));
            if (p != sh->data_sym) TEST_FAIL_("symm_buf_ptr moved");
            break;
        }
        default: {
            uint64_t count = 0;
            CALL("symm_buf_query", symm_buf_query(w->data, NULL, &count, NULL));
            if (count != N_ELEMS) TEST_FAIL_("symm_buf_query: count %llu", (unsigned long long)count);
            break;
        }
        }
        if (it == 0) atomic_fetch_add(&sh->started, 1);
    }
}

static void blocking(worker *w) {
    shared *sh = w->sh;
    const uint64_t never = NEVER;
    uint64_t found = 0, seen = 0;
    atomic_fetch_add(&sh->started, 1);
    for (;;) {
        symm_status st;
        switch (w->kind) {
        case W_WAIT:
            st = symm_wait_until(w->data, N_ELEMS / 2 + (uint64_t)w->id % 8, SYMM_CMP_EQ, &never);
            break;
        case W_WAIT_ANY:
            st = symm_wait_until_any(w->data, N_ELEMS / 2, N_ELEMS / 2, NULL, SYMM_CMP_EQ, &never,
                                     &found);
            break;
        case W_SIG_WAIT:
            st = symm_signal_wait_until(w->sig, N_ELEMS / 2, SYMM_CMP_EQ, NEVER, &seen);
            break;
        default:
            st = symm_barrier_all(w->ctx);
            break;
        }
        if (w->kind != W_BARRIER && st == SYMM_SUCCESS)
            TEST_FAIL_("a wait on a value nobody stores returned SUCCESS");
        if (!outcome(sh, "a blocking call", st)) return;
    }
}

static void query(worker *w) {
    shared *sh = w->sh;
    for (unsigned long it = 0;; it++) {
        symm_ctx_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (sh->mode == MODE_FINALIZE) {
            CALL("symm_ctx_query", symm_ctx_query(w->ctx, &info));
            symm_team world = NULL;
            CALL("symm_team_get", symm_team_get(w->ctx, SYMM_TEAM_WORLD, &world));
            int32_t p = symm_team_my_pe(world);
            if (p != sh->me && p != -1) TEST_FAIL_("symm_team_my_pe: %d", p);
            p = symm_my_pe(w->ctx);
            if (p != sh->me && p != -1) TEST_FAIL_("symm_my_pe: %d", p);
        } else {
            CALL("symm_ctx_query", symm_ctx_query(w->ctx, &info));
        }
        uint32_t dtype = 0;
        CALL("symm_buf_query", symm_buf_query(w->sig, &dtype, NULL, NULL));
        CALL("symm_buf_query", symm_buf_query(w->data, &dtype, NULL, NULL));
        if (it == 0) atomic_fetch_add(&sh->started, 1);
    }
}

static void *run_worker(void *arg) {
    worker *w = arg;
    if (w->kind == W_MIX) mix(w);
    else if (w->kind == W_QUERY) query(w);
    else blocking(w);
    return NULL;
}

static const int kinds[] = {W_MIX, W_MIX, W_MIX, W_MIX, W_WAIT, W_WAIT_ANY, W_SIG_WAIT,
                            W_QUERY, W_BARRIER};
#define N_WORKERS (int)(sizeof kinds / sizeof kinds[0])

static void nap_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* Start the workers on sh's objects, let them run, end the objects, join. */
static void round_run(shared *sh, int round) {
    worker w[N_WORKERS];
    atomic_store(&sh->ok_calls, 0);
    atomic_store(&sh->stale, 0);
    atomic_store(&sh->started, 0);
    int n = 0;
    for (int k = 0; k < N_WORKERS; k++) {
        if (kinds[k] == W_BARRIER && sh->mode != MODE_FINALIZE) continue;
        w[n] = (worker){sh, kinds[k], k, 0, sh->ctx, sh->data, sh->sig};
        if (pthread_create(&w[n].th, NULL, run_worker, &w[n]) != 0) TEST_FAIL_("pthread_create");
        n++;
    }
    /* until every worker is inside its loop, and a little more, varied per
     * round so that the end meets calls at different points */
    for (int t = 0; atomic_load(&sh->started) < n; t++) {
        if (t > 20000) TEST_FAIL_("round %d: workers did not start", round);
        nap_us(100);
    }
    nap_us(200 + (round * 397) % 3000);
    if (sh->mode == MODE_FINALIZE) {
        symm_status st = symm_finalize(&sh->ctx);
        if (st != SYMM_SUCCESS)
            TEST_FAIL_("round %d: symm_finalize -> %s (%s)", round, symm_status_string(st),
                       symm_last_error());
    } else {
        symm_status st = symm_buf_free(sh->data);
        if (st == SYMM_SUCCESS) st = symm_buf_free(sh->sig);
        if (st != SYMM_SUCCESS)
            TEST_FAIL_("round %d: symm_buf_free -> %s (%s)", round, symm_status_string(st),
                       symm_last_error());
    }
    for (int k = 0; k < n; k++) pthread_join(w[k].th, NULL);
    if (atomic_load(&sh->ok_calls) == 0) TEST_FAIL_("round %d: no call succeeded", round);
    if (atomic_load(&sh->stale) < n)
        TEST_FAIL_("round %d: %ld INVALID_HANDLE for %d workers", round,
                   atomic_load(&sh->stale), n);
}

static void objects(shared *sh) {
    CHECK_OK(symm_buf_alloc(sh->ctx, SYMM_DTYPE_UINT64, N_ELEMS, &sh->data));
    CHECK_OK(symm_buf_alloc(sh->ctx, SYMM_DTYPE_UINT64, N_ELEMS, &sh->sig));
    CHECK_OK(symm_buf_ptr(sh->data, &sh->data_sym));
    CHECK_OK(symm_barrier_all(sh->ctx)); /* every PE's buffers exist */
}

int main(int argc, char **argv) {
    if (argc < 2 || (strcmp(argv[1], "finalize") != 0 && strcmp(argv[1], "free") != 0)) {
        fprintf(stderr, "usage: test_lifetime finalize|free [rounds]\n");
        return 2;
    }
    shared sh;
    memset(&sh, 0, sizeof sh);
    sh.mode = strcmp(argv[1], "finalize") == 0 ? MODE_FINALIZE : MODE_FREE;
    int rounds = argc > 2 ? atoi(argv[2]) : (sh.mode == MODE_FINALIZE ? 30 : 60);
    if (sh.mode == MODE_FINALIZE) {
        for (int r = 0; r < rounds; r++) {
            sh.ctx = symm_test_init(SYMM_BACKEND_HOST); /* THREAD_MULTIPLE: the default */
            sh.me = symm_my_pe(sh.ctx);
            sh.n_pes = symm_n_pes(sh.ctx);
            objects(&sh);
            round_run(&sh, r);
            ASSERT_TRUE(sh.ctx == NULL);
            /* every handle of the context is stale now */
            uint64_t v = 0;
            CHECK_STATUS(symm_p(sh.data, 0, &v, sh.me), SYMM_ERR_INVALID_HANDLE);
            CHECK_STATUS(symm_buf_free(sh.sig), SYMM_ERR_INVALID_HANDLE);
        }
    } else {
        sh.ctx = symm_test_init(SYMM_BACKEND_HOST);
        sh.me = symm_my_pe(sh.ctx);
        sh.n_pes = symm_n_pes(sh.ctx);
        CHECK_OK(symm_buf_alloc(sh.ctx, SYMM_DTYPE_UINT64, 1, &sh.keep));
        for (int r = 0; r < rounds; r++) {
            objects(&sh);
            round_run(&sh, r);
            uint64_t v = (uint64_t)r, got = 0;
            CHECK_STATUS(symm_p(sh.data, 0, &v, sh.me), SYMM_ERR_INVALID_HANDLE);
            CHECK_STATUS(symm_buf_free(sh.sig), SYMM_ERR_INVALID_HANDLE);
            /* the context and the other buffer still work */
            CHECK_OK(symm_p(sh.keep, 0, &v, sh.me));
            CHECK_OK(symm_g(sh.keep, 0, sh.me, &got));
            ASSERT_U64_EQ(got, v);
        }
        CHECK_OK(symm_buf_free(sh.keep));
        CHECK_OK(symm_finalize(&sh.ctx));
    }
    if (sh.me == 0) printf("lifetime %s: %d rounds, %d PEs passed\n", argv[1], rounds, sh.n_pes);
    return 0;
}

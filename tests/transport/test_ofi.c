/*
 * The ofi transport's own tests (tp_harness covers what every transport
 * must do; these cover what is particular to this one). N forked PEs on
 * simulated hosts (tp_world); the provider comes from SYMM_OFI_PROVIDER.
 *
 *   test_ofi PLUGIN TEST [-n N] [--hosts H] [--loopback] [--silent] [--iters K]
 *
 * dtypes    every SYMM_AMO_* op on every 4- and 8-byte dtype (int32, uint32,
 *           float32, int64, uint64, float64; floats take FETCH, SET, SWAP and
 *           COMPARE_SWAP, on their bits) against a reference, signed values
 *           and wrap-around included; then nbi fetching atomics, whose
 *           values quiet writes.
 * coherent  SYMM_TP_CAP_ATOMIC_GLOBAL, when claimed, holds: every PE adds to
 *           each reached PE's words through the transport while a thread of
 *           each target adds to the same words with __atomic builtins all
 *           along (K rounds, default 3000); no update may be lost (64- and
 *           32-bit). Not claimed: skip.
 * errors    an atomic outside the registered heap (SYMM_ERR_OUT_OF_BOUNDS),
 *           misaligned and unknown ops (SYMM_ERR_INVALID_ARG), GPU memory
 *           where it cannot be reached: no FI_HMEM and no GPU-memory service
 *           to stage it through (tp_world's core offers none:
 *           SYMM_ERR_NOT_SUPPORTED, naming both); the transport still works
 *           afterwards. (Staging through the service: test_tcp_gpumem.c.)
 * midstream the last PE is SIGKILLed while the others stream nbi puts,
 *           put_signals and atomics to it; each must get SYMM_ERR_PEER_FAILED
 *           within the bound (2 s with the harness's news, 15 s --silent),
 *           quiet must fail too, close must not hang.
 * idle      after open, 1 s with nothing to do may cost the process at most
 *           100 ms of CPU (the progress thread must not spin).
 * auth      PE 1 holds another job secret (its core's auth_mac/auth_verify use
 *           another key): open must fail on every PE with SYMM_ERR_BOOTSTRAP;
 *           the PEs that reach PE 1, and PE 1 itself, name the job secret,
 *           the others name the PE that failed. No heap range is ever added.
 * amkey     (2 PEs, SYMM_OFI_ATOMICS=am) PE 0 sends its atomic messages with a
 *           wrong key (SYMM_OFI_TEST_WRONG_AM_KEY=0): PE 1 must drop them
 *           unread, so its word stays 0 and PE 0's blocking fetch-add ends
 *           with SYMM_ERR_PEER_FAILED after the stall bound; PE 1's own
 *           fetch-add on PE 0 still applies.
 * config    (one process, no PEs) probe with an unknown SYMM_OFI_PROVIDER
 *           fails naming it; SYMM_OFI_ATOMICS=bogus is SYMM_ERR_INVALID_ARG.
 * Exit: 0 pass, 1 fail, 77 skip.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <symm/symm.h>

#include "runtime/bootstrap/crypto.h"
#include "tp_world.h"

#define HEAP (8u << 20)
#define WORDS 4096u          /* atomic words: [WORDS, 2 * WORDS) bytes */
#define DATA (1u << 20)      /* put areas */

static char *heap;
static const char *test;
static int silent;               /* midstream: no news from the harness */
static int coherent_iters = 3000;

#define FAILF(...)                                                                             \
    do {                                                                                       \
        fprintf(stderr, "[pe %d] FAIL %s:%d: ", w->me, __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                                          \
        fprintf(stderr, " (last error: %s)\n", tp_last_error());                              \
        return 1;                                                                              \
    } while (0)
#define OK(call)                                                                               \
    do {                                                                                       \
        int32_t rc_ = (call);                                                                  \
        if (rc_) FAILF("%s -> status %d", #call, rc_);                                         \
    } while (0)

static int setup(tp_world *w) {
    heap = aligned_alloc(4096, HEAP);
    if (!heap) FAILF("no memory");
    memset(heap, 0, HEAP);
    OK(w->ops->open(&w->core, w->loopback, &w->state, &w->info));
    if (w->me == 0)
        fprintf(stderr, "[pe 0] %s: %s (caps %#x)\n", w->ops->name, w->info.device, w->info.caps);
    OK(w->ops->mem_add(w->state, heap, 0, HEAP / 2, SYMM_TP_MEM_HOST, -1));
    OK(w->ops->mem_add(w->state, heap + HEAP / 2, HEAP / 2, HEAP / 2, SYMM_TP_MEM_HOST, -1));
    return 0;
}

static void teardown(tp_world *w) {
    w->ops->close(w->state);
    free(heap);
}

/* ---- dtypes --------------------------------------------------------------- */

typedef struct dt {
    uint32_t dtype, width;
    int is_float, is_signed;
    const char *name;
} dt;

static const dt DTS[] = {
    {SYMM_DTYPE_INT32, 4, 0, 1, "int32"},     {SYMM_DTYPE_UINT32, 4, 0, 0, "uint32"},
    {SYMM_DTYPE_FLOAT32, 4, 1, 0, "float32"}, {SYMM_DTYPE_INT64, 8, 0, 1, "int64"},
    {SYMM_DTYPE_UINT64, 8, 0, 0, "uint64"},   {SYMM_DTYPE_FLOAT64, 8, 1, 0, "float64"},
};

static int float_op(uint32_t op) {
    return op == SYMM_AMO_FETCH || op == SYMM_AMO_SET || op == SYMM_AMO_SWAP ||
           op == SYMM_AMO_COMPARE_SWAP;
}

static int fetches(uint32_t op) {
    return !(op == SYMM_AMO_SET || op == SYMM_AMO_INC || op == SYMM_AMO_ADD ||
             op == SYMM_AMO_AND || op == SYMM_AMO_OR || op == SYMM_AMO_XOR);
}

/* The reference: the new value of a width-byte element (bits, low bytes). */
static uint64_t ref_apply(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t mask) {
    switch (op) {
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: return v & mask;
    case SYMM_AMO_COMPARE_SWAP: return old == cmp ? v & mask : old;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: return (old + 1) & mask;
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: return (old + v) & mask;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: return old & v & mask;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: return (old | v) & mask;
    case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR: return (old ^ v) & mask;
    default: return old;
    }
}

/* Operand bits for round k: signed types get negative values (and sums
 * that wrap), floats get real float bits. */
static uint64_t operand(const dt *d, uint32_t op, int k) {
    if (d->is_float) {
        if (d->width == 4) {
            float f = (float)(k * 1.5 - 3.25);
            uint32_t b;
            memcpy(&b, &f, 4);
            return b;
        }
        double f = k * -2.75 + 1e10;
        uint64_t b;
        memcpy(&b, &f, 8);
        return b;
    }
    uint64_t mask = d->width == 8 ? ~0ull : 0xffffffffull;
    if (d->is_signed && (op == SYMM_AMO_FETCH_ADD || op == SYMM_AMO_ADD))
        return (uint64_t)(int64_t)(-1000003 * (k + 1)) & mask; /* negative: wraps below zero */
    return (0x9e3779b97f4a7c15ull * (uint64_t)(op + 7) * (uint64_t)(k + 3)) & mask;
}

static int run_dtypes(tp_world *w) {
    if (setup(w)) return 1;
    int words = 0;
    for (int32_t t = 0; t < w->n; t++) {
        if (!tp_reaches(w, t)) continue;
        for (unsigned di = 0; di < sizeof DTS / sizeof DTS[0]; di++) {
            const dt *d = &DTS[di];
            uint64_t mask = d->width == 8 ? ~0ull : 0xffffffffull;
            /* my own word of each dtype on t (16 B apart: neighbours of the
             * 4-byte ones are other PEs' words, which must stay untouched) */
            uint64_t off = WORDS + ((uint64_t)w->me * 8 + di) * 16 + (d->width == 4 ? 4 : 0);
            uint64_t ref = operand(d, SYMM_AMO_SET, 99);
            OK(w->ops->atomic(w->state, t, off, d->dtype, SYMM_AMO_SET, &ref, NULL, NULL, 0));
            for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
                if (d->is_float && !float_op(op)) continue;
                for (int k = 0; k < 3; k++) {
                    uint64_t v = operand(d, op, k), cmp = k == 1 ? ref ^ 1 : ref, got = ~0ull;
                    OK(w->ops->atomic(w->state, t, off, d->dtype, op, &v, &cmp, &got, 0));
                    if (fetches(op) && (got & mask) != ref)
                        FAILF("%s op %u round %d on PE %d: fetched %#llx, expected %#llx", d->name,
                              op, k, t, (unsigned long long)(got & mask), (unsigned long long)ref);
                    if (d->width == 4 && fetches(op) && (got >> 32) != 0xffffffffull)
                        FAILF("%s op %u: a 4-byte fetch wrote past its 4 bytes", d->name, op);
                    ref = ref_apply(op, ref, v, cmp, mask);
                    uint64_t now = 0;
                    OK(w->ops->atomic(w->state, t, off, d->dtype, SYMM_AMO_FETCH, NULL, NULL, &now, 0));
                    if ((now & mask) != ref)
                        FAILF("%s after op %u round %d on PE %d: %#llx, expected %#llx", d->name, op,
                              k, t, (unsigned long long)(now & mask), (unsigned long long)ref);
                }
            }
            words++;
        }
        /* nbi fetching atomics: 32 fetch-adds of 1, values written by quiet */
        uint64_t off = WORDS * 3 + (uint64_t)w->me * 8, zero = 0, one = 1, got[32];
        OK(w->ops->atomic(w->state, t, off, SYMM_DTYPE_UINT64, SYMM_AMO_SET, &zero, NULL, NULL, 0));
        for (int i = 0; i < 32; i++) {
            got[i] = ~0ull;
            OK(w->ops->atomic(w->state, t, off, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &one, NULL,
                              &got[i], SYMM_TP_NBI));
        }
        OK(w->ops->quiet(w->state));
        uint32_t seen = 0;
        for (int i = 0; i < 32; i++) {
            if (got[i] >= 32 || (seen >> got[i] & 1)) FAILF("nbi fetch-add %d on PE %d returned %llu", i,
                                                           t, (unsigned long long)got[i]);
            seen |= 1u << got[i];
        }
    }
    OK(tp_barrier(w));
    /* The 4 bytes beside each 4-byte word (the first half of its 8) stayed zero. */
    for (int32_t s = 0; s < w->n; s++)
        for (unsigned di = 0; di < sizeof DTS / sizeof DTS[0]; di++) {
            uint64_t b = WORDS + ((uint64_t)s * 8 + di) * 16;
            if (DTS[di].width == 4 && memcmp(heap + b, "\0\0\0\0", 4) != 0)
                FAILF("the bytes beside PE %d's %s word changed", s, DTS[di].name);
        }
    if (w->me == 0) fprintf(stderr, "[pe 0] dtypes: %d words checked\n", words);
    teardown(w);
    return 0;
}

/* ---- coherent ------------------------------------------------------------- */

/* The target's CPU: adds to its own words from a thread of its own for as
 * long as the remote updates arrive (the transport applies those on other
 * threads: its progress thread or a caller's poll). */
typedef struct hammer {
    uint64_t *w64;
    uint32_t *w32;
    atomic_int stop;
    uint64_t count;
} hammer;

static void *hammer_main(void *arg) {
    hammer *h = arg;
    while (!atomic_load_explicit(&h->stop, memory_order_relaxed)) {
        __atomic_fetch_add(h->w64, 1, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(h->w32, 3, __ATOMIC_SEQ_CST);
        if ((++h->count & 255) == 0) sched_yield(); /* PEs may outnumber cores */
    }
    return NULL;
}

static int run_coherent(tp_world *w) {
    if (setup(w)) return 1;
    if (!(w->info.caps & SYMM_TP_CAP_ATOMIC_GLOBAL)) {
        if (w->me == 0)
            fprintf(stderr, "[pe 0] %s does not claim SYMM_TP_CAP_ATOMIC_GLOBAL: nothing to check\n",
                    w->info.device);
        teardown(w);
        return 77;
    }
    const int K = coherent_iters;
    hammer h = {.w64 = (uint64_t *)(void *)(heap + WORDS), .w32 = (uint32_t *)(void *)(heap + WORDS + 8)};
    pthread_t th;
    OK(tp_barrier(w));
    if (pthread_create(&th, NULL, hammer_main, &h) != 0) FAILF("no thread");
    for (int i = 0; i < K; i++) {
        for (int32_t t = 0; t < w->n; t++) {
            if (!tp_reaches(w, t) || t == w->me) continue;
            uint64_t one = 1, got;
            uint32_t three = 3, got32;
            OK(w->ops->atomic(w->state, t, WORDS, SYMM_DTYPE_UINT64,
                              i & 1 ? SYMM_AMO_ADD : SYMM_AMO_FETCH_ADD, &one, NULL, &got, 0));
            OK(w->ops->atomic(w->state, t, WORDS + 8, SYMM_DTYPE_UINT32,
                              i & 1 ? SYMM_AMO_FETCH_ADD : SYMM_AMO_ADD, &three, NULL, &got32, 0));
        }
    }
    OK(w->ops->quiet(w->state));
    OK(tp_barrier(w)); /* every remote update has landed everywhere */
    atomic_store(&h.stop, 1);
    pthread_join(th, NULL);
    uint64_t writers = 0;
    for (int32_t s = 0; s < w->n; s++) writers += (uint64_t)(tp_reaches(w, s) && s != w->me);
    uint64_t want = writers * (uint64_t)K + h.count;
    if (*h.w64 != want || *h.w32 != (uint32_t)(3 * want))
        FAILF("lost updates: u64 %llu (expected %llu: %llu remote + %llu by the CPU), u32 %u "
              "(expected %u)", (unsigned long long)*h.w64, (unsigned long long)want,
              (unsigned long long)(writers * (uint64_t)K), (unsigned long long)h.count, *h.w32,
              (uint32_t)(3 * want));
    OK(tp_barrier(w));
    fprintf(stderr, "[pe %d] coherent: %llu remote and %llu CPU updates per word, none lost\n",
            w->me, (unsigned long long)(writers * (uint64_t)K), (unsigned long long)h.count);
    teardown(w);
    return 0;
}

/* ---- errors --------------------------------------------------------------- */

static int run_errors(tp_world *w) {
    if (setup(w)) return 1;
    int32_t t = -1;
    for (int32_t i = 0; i < w->n && t < 0; i++)
        if (tp_reaches(w, i)) t = i;
    if (t >= 0) {
        uint64_t v = 1, got;
        int32_t rc = w->ops->atomic(w->state, t, HEAP + 64, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD,
                                    &v, NULL, &got, 0);
        if (rc != SYMM_ERR_OUT_OF_BOUNDS) FAILF("atomic past the heap returned %d", rc);
        rc = w->ops->atomic(w->state, t, WORDS + 4, SYMM_DTYPE_UINT64, SYMM_AMO_ADD, &v, NULL, NULL, 0);
        if (rc != SYMM_ERR_INVALID_ARG) FAILF("misaligned atomic returned %d", rc);
        rc = w->ops->atomic(w->state, t, WORDS, SYMM_DTYPE_UINT64, 99, &v, NULL, NULL, 0);
        if (rc != SYMM_ERR_INVALID_ARG) FAILF("unknown op returned %d", rc);
        rc = w->ops->atomic(w->state, t, WORDS, SYMM_DTYPE_INT8, SYMM_AMO_ADD, &v, NULL, NULL, 0);
        if (rc != SYMM_ERR_INVALID_ARG) FAILF("an 8-bit atomic returned %d", rc);
        char buf[64] = {0};
        rc = w->ops->put(w->state, t, HEAP - 8, buf, 64, 0);
        if (rc != SYMM_ERR_OUT_OF_BOUNDS) FAILF("a put past the heap returned %d", rc);
        rc = w->ops->put_signal(w->state, t, 0, buf, 8, WORDS + 4, 1, SYMM_SIGNAL_SET, 0);
        if (rc != SYMM_ERR_INVALID_ARG) FAILF("a misaligned signal returned %d", rc);
        /* still usable */
        uint64_t x = 0x1234;
        OK(w->ops->put(w->state, t, WORDS * 2 + 8u * (uint64_t)w->me, &x, 8, 0));
        OK(w->ops->atomic(w->state, t, WORDS * 2 + 8u * (uint64_t)w->me, SYMM_DTYPE_UINT64,
                          SYMM_AMO_FETCH, NULL, NULL, &got, 0));
        if (got != 0x1234) FAILF("after the errors a put/fetch gave %#llx", (unsigned long long)got);
        OK(w->ops->quiet(w->state));
    }
    /* GPU memory without FI_HMEM nor the core's GPU-memory service (tp_world
     * offers none): every PE gets NOT_SUPPORTED naming both */
    if (!(w->info.caps & SYMM_TP_CAP_GPU_MEM)) {
        char *fake = aligned_alloc(4096, 65536);
        int32_t rc = w->ops->mem_add(w->state, fake, HEAP, 65536, SYMM_TP_MEM_CUDA, -1);
        if (rc != SYMM_ERR_NOT_SUPPORTED || !strstr(tp_last_error(), "FI_HMEM") ||
            !strstr(tp_last_error(), "GPU-memory service"))
            FAILF("GPU mem_add without FI_HMEM or the service returned %d: %s", rc,
                  tp_last_error());
        free(fake);
    }
    OK(tp_barrier(w));
    if (w->me == 0) fprintf(stderr, "[pe 0] errors: statuses as expected\n");
    teardown(w);
    return 0;
}

/* ---- auth ------------------------------------------------------------------ */

/* What a core with another job key gives: HMAC-SHA-256 of (pe | msg) under
 * a key the others do not hold. */
static const char WRONG_KEY[] = "the key of another job, not this one";
static void wrong_mac(int32_t pe, const void *msg, size_t len, uint8_t mac[32]) {
    uint8_t who[4] = {(uint8_t)pe, (uint8_t)((uint32_t)pe >> 8), (uint8_t)((uint32_t)pe >> 16),
                      (uint8_t)((uint32_t)pe >> 24)};
    symm__hmac m;
    symm__hmac_init(&m, WRONG_KEY, sizeof WRONG_KEY);
    symm__hmac_update(&m, who, sizeof who);
    symm__hmac_update(&m, msg, len);
    symm__hmac_final(&m, mac);
}
static int32_t wrong_auth_mac(void *c, const void *msg, size_t len, uint8_t mac[32]) {
    wrong_mac(((tp_world *)c)->me, msg, len, mac);
    return 0;
}
static int32_t wrong_auth_verify(void *c, int32_t pe, const void *msg, size_t len,
                                 const uint8_t mac[32]) {
    (void)c;
    uint8_t want[32];
    wrong_mac(pe, msg, len, want);
    return symm__ct_equal(want, mac, 32) ? 0 : SYMM_ERR_BOOTSTRAP;
}

static int run_auth(tp_world *w) {
    const int32_t bad = 1;
    if (w->me == bad) {
        w->core.auth_mac = wrong_auth_mac;
        w->core.auth_verify = wrong_auth_verify;
    }
    int32_t rc = w->ops->open(&w->core, w->loopback, &w->state, &w->info);
    const char *e = tp_last_error();
    fprintf(stderr, "[pe %d] open with PE %d holding another secret: %d: %s\n", w->me, bad, rc, e);
    if (rc == 0) {
        w->ops->close(w->state);
        FAILF("open succeeded although PE %d cannot prove the job secret", bad);
    }
    if (rc != SYMM_ERR_BOOTSTRAP) FAILF("open returned %d, not SYMM_ERR_BOOTSTRAP", rc);
    if (w->me == bad || tp_reaches(w, bad)) {
        if (!strstr(e, "job secret")) FAILF("the message does not name the job secret");
    } else if (!strstr(e, "PE ")) {
        FAILF("the message does not name the PE that failed");
    }
    if (w->me == 0) fprintf(stderr, "[pe 0] auth: every PE refused the job\n");
    return 0;
}

/* ---- amkey ----------------------------------------------------------------- */

static int run_amkey(tp_world *w) {
    const char *k = getenv("SYMM_OFI_TEST_WRONG_AM_KEY");
    if (!k || strcmp(k, "0") || !getenv("SYMM_OFI_ATOMICS") ||
        strcmp(getenv("SYMM_OFI_ATOMICS"), "am"))
        FAILF("amkey needs SYMM_OFI_ATOMICS=am and SYMM_OFI_TEST_WRONG_AM_KEY=0");
    if (w->n != 2 || !tp_reaches(w, 1 - w->me)) FAILF("amkey runs on 2 PEs of 2 hosts");
    if (setup(w)) return 1;
    uint64_t off = WORDS + 8u * (uint64_t)w->me, v = 5, got = 0;
    OK(tp_barrier(w));
    if (w->me == 0) { /* the liar: its message to PE 1 must be dropped unanswered */
        uint64_t t0 = tp_now_ms();
        int32_t rc = w->ops->atomic(w->state, 1, off, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &v,
                                    NULL, &got, 0);
        fprintf(stderr, "[pe 0] fetch-add with a wrong key: %d after %llu ms: %s\n", rc,
                (unsigned long long)(tp_now_ms() - t0), tp_last_error());
        if (rc != SYMM_ERR_PEER_FAILED) FAILF("a message with a wrong key returned %d", rc);
    } else { /* an honest message still applies (PE 0's wait serves it) */
        OK(w->ops->atomic(w->state, 0, off, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &v, NULL, &got,
                          0));
        if (got != 0) FAILF("fetch-add on PE 0 fetched %llu, not 0", (unsigned long long)got);
    }
    OK(tp_barrier(w));
    uint64_t word;
    memcpy(&word, heap + WORDS + 8u * (uint64_t)(1 - w->me), 8);
    if (w->me == 1 && word != 0)
        FAILF("PE 0's message with a wrong key was applied here: word %llu",
              (unsigned long long)word);
    if (w->me == 0 && word != 5)
        FAILF("PE 1's fetch-add left %llu here, not 5", (unsigned long long)word);
    OK(tp_barrier(w));
    if (w->me == 0) fprintf(stderr, "[pe 0] amkey: messages with a wrong key were dropped\n");
    teardown(w);
    return 0;
}

/* ---- midstream ------------------------------------------------------------- */


static int run_midstream(tp_world *w) {
    if (setup(w)) return 1;
    int32_t victim = w->n - 1;
    uint32_t bound = silent ? 15000 : 2000;
    OK(tp_barrier(w));
    if (w->me == victim) {
        tp_world_expect_death(w);
        usleep(300000); /* the others are streaming by now */
        raise(SIGKILL);
    }
    if (!tp_reaches(w, victim)) {
        while (!tp_world_death_ms(w)) usleep(1000);
        teardown(w);
        return 0;
    }
    char *src = malloc(DATA);
    memset(src, 0x5a, DATA);
    int32_t rc = 0;
    uint64_t start = tp_now_ms(), i = 0;
    while (!rc && tp_now_ms() - start < 120000) {
        uint64_t off = DATA + (uint64_t)w->me * DATA, one = 1, got;
        switch (i++ % 4) {
        case 0: rc = w->ops->put(w->state, victim, off, src, DATA, SYMM_TP_NBI); break;
        case 1: rc = w->ops->put_signal(w->state, victim, off, src, 4096, WORDS + 8u * (uint64_t)w->me,
                                        1, SYMM_SIGNAL_ADD, SYMM_TP_NBI); break;
        case 2: rc = w->ops->atomic(w->state, victim, WORDS * 2, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD,
                                    &one, NULL, &got, 0); break;
        default: rc = w->ops->quiet(w->state); break;
        }
    }
    uint64_t died = tp_world_death_ms(w), now = tp_now_ms();
    if (rc != SYMM_ERR_PEER_FAILED) FAILF("streaming to the dead PE %d returned %d", victim, rc);
    uint64_t after = died && now > died ? now - died : 0;
    fprintf(stderr, "[pe %d] midstream%s: PEER_FAILED %llu ms after PE %d died (%llu ops): %s\n",
            w->me, silent ? " (silent)" : "", (unsigned long long)after, victim,
            (unsigned long long)i, tp_last_error());
    if (after > bound) FAILF("PEER_FAILED came %llu ms after the death, bound %u ms",
                             (unsigned long long)after, bound);
    if (w->ops->quiet(w->state) != SYMM_ERR_PEER_FAILED) FAILF("quiet after the death did not fail");
    teardown(w); /* the endpoint closes before the nbi sources go */
    free(src);
    return 0;
}

/* ---- idle ------------------------------------------------------------------ */

static double cpu_ms(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int run_idle(tp_world *w) {
    if (setup(w)) return 1;
    OK(tp_barrier(w));
    usleep(500000); /* set-up's activity has died down (the short naps last 250 ms) */
    double c0 = cpu_ms();
    uint64_t t0 = tp_now_ms();
    usleep(1000000);
    double used = cpu_ms() - c0;
    uint64_t wall = tp_now_ms() - t0;
    fprintf(stderr, "[pe %d] idle: %.1f ms of CPU in %llu ms\n", w->me, used, (unsigned long long)wall);
    if (used > 100.0) FAILF("idle transport used %.1f ms of CPU in %llu ms", used, (unsigned long long)wall);
    OK(tp_barrier(w));
    teardown(w);
    return 0;
}

/* ---- config (one process) -------------------------------------------------- */

static char cfg_err[1024];
static const char *cfg_provider, *cfg_atomics;
static int32_t c_set_error(void *c, int32_t status, const char *msg) {
    (void)c;
    snprintf(cfg_err, sizeof cfg_err, "%s", msg);
    return status;
}
static const char *c_getenv(void *c, const char *name) {
    (void)c;
    if (!strcmp(name, "SYMM_OFI_PROVIDER")) return cfg_provider;
    if (!strcmp(name, "SYMM_OFI_ATOMICS")) return cfg_atomics;
    if (!strcmp(name, "SYMM_TRANSPORT")) return "ofi";
    return NULL;
}
static int32_t c_zero(void *c) { (void)c; return 0; }
static void c_log(void *c, int32_t level, const char *msg) { (void)c; (void)level; (void)msg; }

static int run_config(const char *plugin) {
    void *h = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "FAIL: cannot open %s: %s\n", plugin, dlerror());
        return 1;
    }
    symm_tp_entry_fn entry;
    *(void **)&entry = dlsym(h, SYMM_TP_ENTRY);
    const symm_tp_ops *ops = entry ? entry(SYMM_TP_IFACE) : NULL;
    if (!ops) {
        fprintf(stderr, "FAIL: %s has no usable entry\n", plugin);
        return 1;
    }
    uint8_t remote[2] = {0, 1};
    uint64_t host[2] = {0, 1};
    symm_tp_core core = {.size = sizeof core, .iface = SYMM_TP_IFACE, .my_pe = 0, .n_pes = 2,
                         .host_id = host, .remote = remote, .device = -1, .timeout_ms = 1000,
                         .peer_timeout_ms = 100, .check_failed = c_zero, .set_error = c_set_error,
                         .log = c_log, .getenv = c_getenv};
    char why[512] = "";
    cfg_provider = "no_such_provider";
    int32_t rc = ops->probe(&core, why, sizeof why);
    if (rc == SYMM_SUCCESS || !strstr(why, "no_such_provider")) {
        fprintf(stderr, "FAIL: probe with SYMM_OFI_PROVIDER=no_such_provider: %d (%s)\n", rc, why);
        return 1;
    }
    fprintf(stderr, "config: unknown provider: %s\n", why);
    cfg_provider = getenv("SYMM_OFI_PROVIDER");
    cfg_atomics = "bogus";
    why[0] = 0;
    rc = ops->probe(&core, why, sizeof why);
    if (rc != SYMM_ERR_INVALID_ARG || !strstr(why, "SYMM_OFI_ATOMICS")) {
        fprintf(stderr, "FAIL: probe with SYMM_OFI_ATOMICS=bogus: %d (%s)\n", rc, why);
        return 1;
    }
    fprintf(stderr, "config: bad atomics knob: %s\n", why);
    cfg_atomics = NULL;
    why[0] = 0;
    rc = ops->probe(&core, why, sizeof why);
    if (rc != SYMM_SUCCESS) {
        fprintf(stderr, "FAIL: probe with SYMM_OFI_PROVIDER=%s: %d (%s)\n",
                cfg_provider ? cfg_provider : "(unset)", rc, why);
        return 1;
    }
    fprintf(stderr, "config: all checks passed\n");
    return 0;
}

int main(int argc, char **argv) {
    tp_world_opts o = {.n = 2, .hosts = 2, .news = 1, .require = 1, .peer_timeout_ms = 100};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-n") && i + 1 < argc) o.n = atoi(argv[++i]);
        else if (!strcmp(a, "--hosts") && i + 1 < argc) o.hosts = atoi(argv[++i]);
        else if (!strcmp(a, "--loopback")) o.loopback = 1;
        else if (!strcmp(a, "--silent")) silent = 1;
        else if (!strcmp(a, "--iters") && i + 1 < argc) coherent_iters = atoi(argv[++i]);
        else if (a[0] != '-' && !o.plugin) o.plugin = a;
        else if (a[0] != '-' && !test) test = a;
        else {
            fprintf(stderr, "usage: test_ofi PLUGIN dtypes|coherent|errors|midstream|idle|auth|amkey|"
                            "config "
                            "[-n N] [--hosts H] [--loopback] [--silent] [--iters K]\n");
            return 2;
        }
    }
    if (!o.plugin || !test) {
        fprintf(stderr, "test_ofi: need PLUGIN and TEST\n");
        return 2;
    }
    o.news = !silent;
    if (!strcmp(test, "config")) return run_config(o.plugin);
    int (*fn)(tp_world *) = !strcmp(test, "dtypes")      ? run_dtypes
                            : !strcmp(test, "coherent")  ? run_coherent
                            : !strcmp(test, "errors")    ? run_errors
                            : !strcmp(test, "midstream") ? run_midstream
                            : !strcmp(test, "idle")      ? run_idle
                            : !strcmp(test, "auth")      ? run_auth
                            : !strcmp(test, "amkey")     ? run_amkey
                                                         : NULL;
    if (!fn) {
        fprintf(stderr, "test_ofi: unknown test %s\n", test);
        return 2;
    }
    int rc = tp_world_run(&o, fn);
    printf("test_ofi %s -n %d --hosts %d%s%s (SYMM_OFI_PROVIDER=%s): %s\n", test, o.n, o.hosts,
           o.loopback ? " --loopback" : "", silent ? " --silent" : "",
           getenv("SYMM_OFI_PROVIDER") ? getenv("SYMM_OFI_PROVIDER") : "(unset)",
           rc == 0 ? "PASS" : rc == 77 ? "SKIP" : "FAIL");
    return rc;
}

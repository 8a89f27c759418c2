/*
 * Standalone test of a transport plugin (any libsymm_transport_<name>.so):
 * N forked PEs on simulated hosts, with tp_world's stand-in core.
 *
 *   tp_harness PLUGIN [-n N] [--hosts H] [--loopback] [--require]
 *              [--test basic|dead] [--silent] [--bound-ms MS]
 *
 * basic: puts and gets of 8 B .. 5 MiB (inline, bounce and registered
 *   sources, across the two registered heap chunks), nbi puts/gets + quiet,
 *   fence, every atomic op x width against a reference, concurrent
 *   fetch-adds (64-bit and both 32-bit halves of one word), put_signal with
 *   SET and ADD (the target sees the signal, then checks the data).
 * dead: the last PE is SIGKILLed after connecting; every PE that reaches it
 *   must get SYMM_ERR_PEER_FAILED within --bound-ms (default 2000 with the
 *   harness's news of the death, 15000 with --silent, where the transport
 *   must notice alone), then close cleanly.
 * Exit: 0 pass, 1 fail, 77 when the plugin cannot run here (unless --require).
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <symm/symm.h>

#include "tp_world.h"

#define CHUNK (12u << 20)
#define HEAP (2u * CHUNK)
#define AREA ((5u << 20) + (64u << 10)) /* one writer's area on each target */
#define AREA0 (2u << 20)                /* first writer area (area 1 crosses the chunk edge) */
#define SCRATCH 0u                      /* registered local source/destination */
#define ATOM_OFF (AREA0 - 65536u)       /* atomic words */
#define SIG_OFF (AREA0 - 4096u)         /* signals, one per writer */

static const char *test = "basic";
static uint32_t bound_ms;
static int silent;

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

static char *heap;

static uint8_t pat(int32_t from, int32_t to, uint64_t i, uint32_t salt) {
    return (uint8_t)((uint64_t)from * 131u + (uint64_t)to * 31u + i * 7u + (i >> 11) + salt);
}

static uint64_t area(int32_t writer) {
    return AREA0 + (uint64_t)writer * AREA;
}

static int setup(tp_world *w) {
    heap = aligned_alloc(4096, HEAP);
    if (!heap) FAILF("no memory");
    memset(heap, 0, HEAP);
    OK(w->ops->open(&w->core, w->loopback, &w->state, &w->info));
    if (w->me == 0) fprintf(stderr, "[pe 0] %s: %s\n", w->ops->name, w->info.device);
    OK(w->ops->mem_add(w->state, heap, 0, CHUNK, SYMM_TP_MEM_HOST, -1));
    OK(w->ops->mem_add(w->state, heap + CHUNK, CHUNK, CHUNK, SYMM_TP_MEM_HOST, -1));
    return 0;
}

/* Every writer that reaches me wrote pat(writer, me, i, salt) to its area. */
static int check_areas(tp_world *w, uint64_t len, uint32_t salt, const char *what) {
    for (int32_t src = 0; src < w->n; src++) {
        if (!tp_reaches(w, src)) continue;
        const uint8_t *p = (const uint8_t *)heap + area(src);
        for (uint64_t i = 0; i < len; i++)
            if (p[i] != pat(src, w->me, i, salt))
                FAILF("%s of %llu B from PE %d: byte %llu is %u, expected %u", what,
                      (unsigned long long)len, src, (unsigned long long)i, p[i], pat(src, w->me, i, salt));
    }
    return 0;
}

static int test_puts(tp_world *w) {
    static const uint64_t sizes[] = {8, 200, 3000, 262144, 5u << 20};
    char *mal = malloc(5u << 20);
    for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        uint64_t len = sizes[k];
        uint32_t salt = k + 1;
        for (int32_t t = 0; t < w->n; t++) {
            if (!tp_reaches(w, t)) continue;
            /* 256 KiB from the registered scratch area, the rest from malloc */
            uint8_t *src = (uint8_t *)(len == 262144 ? heap + SCRATCH : mal);
            for (uint64_t i = 0; i < len; i++) src[i] = pat(w->me, t, i, salt);
            OK(w->ops->put(w->state, t, area(w->me), src, len, 0));
        }
        OK(tp_barrier(w));
        if (check_areas(w, len, salt, "put")) return 1;
        OK(tp_barrier(w));
    }
    /* nbi: 64 x 1 KiB per target from malloc, then quiet */
    for (int32_t t = 0; t < w->n; t++) {
        if (!tp_reaches(w, t)) continue;
        char *b = mal + (size_t)t * 65536; /* kept until quiet */
        for (uint64_t i = 0; i < 65536; i++) ((uint8_t *)b)[i] = pat(w->me, t, i, 77);
        for (int j = 0; j < 64; j++)
            OK(w->ops->put(w->state, t, area(w->me) + (uint64_t)j * 1024, b + j * 1024, 1024,
                           SYMM_TP_NBI));
    }
    OK(w->ops->quiet(w->state));
    OK(tp_barrier(w));
    free(mal);
    if (check_areas(w, 65536, 77, "nbi put")) return 1;
    OK(tp_barrier(w));
    return 0;
}

static int test_gets(tp_world *w) {
    static const uint64_t sizes[] = {8, 3000, 262144, 5u << 20};
    char *mal = malloc(5u << 20);
    for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        uint64_t len = sizes[k];
        uint32_t salt = 40 + k;
        /* my own area holds pat(me, 0, i, salt) for readers */
        for (uint64_t i = 0; i < len; i++) heap[area(w->me) + i] = (char)pat(w->me, 0, i, salt);
        OK(tp_barrier(w));
        for (int32_t t = 0; t < w->n; t++) {
            if (!tp_reaches(w, t)) continue;
            uint8_t *dst = (uint8_t *)(len == 262144 ? heap + SCRATCH : mal);
            memset(dst, 0xee, len);
            OK(w->ops->get(w->state, dst, t, area(t), len, 0));
            for (uint64_t i = 0; i < len; i++)
                if (dst[i] != pat(t, 0, i, salt))
                    FAILF("get of %llu B from PE %d: byte %llu is %u, expected %u",
                          (unsigned long long)len, t, (unsigned long long)i, dst[i], pat(t, 0, i, salt));
        }
        OK(tp_barrier(w));
    }
    /* nbi gets into malloc memory (bounce), written by quiet */
    for (int32_t t = 0; t < w->n; t++) {
        if (!tp_reaches(w, t)) continue;
        memset(mal, 0xee, 32 * 512);
        for (int j = 0; j < 32; j++)
            OK(w->ops->get(w->state, mal + j * 512, t, area(t) + (uint64_t)j * 512, 512, SYMM_TP_NBI));
        OK(w->ops->quiet(w->state));
        for (uint64_t i = 0; i < 32 * 512; i++)
            if ((uint8_t)mal[i] != pat(t, 0, i, 43))
                FAILF("nbi get from PE %d: byte %llu is %u after quiet", t, (unsigned long long)i,
                      (uint8_t)mal[i]);
    }
    OK(tp_barrier(w));
    free(mal);
    return 0;
}

/* Reference semantics of one op on a w-byte element. */
static uint64_t ref_apply(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t mask) {
    switch (op) {
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: return v & mask;
    case SYMM_AMO_COMPARE_SWAP: return old == cmp ? v & mask : old;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD:
        return (old + v) & mask;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: return old & v;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: return (old | v) & mask;
    case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR: return (old ^ v) & mask;
    default: return old;
    }
}

static int op_fetches(uint32_t op) {
    return !(op == SYMM_AMO_SET || op == SYMM_AMO_INC || op == SYMM_AMO_ADD ||
             op == SYMM_AMO_AND || op == SYMM_AMO_OR || op == SYMM_AMO_XOR);
}

static int test_atomics(tp_world *w) {
    /* every op x {u32 low half, u32 high half, u64} on my private words of each target */
    static const uint32_t dts[] = {SYMM_DTYPE_UINT32, SYMM_DTYPE_UINT32, SYMM_DTYPE_UINT64};
    for (int32_t t = 0; t < w->n; t++) {
        if (!tp_reaches(w, t)) continue;
        for (unsigned d = 0; d < 3; d++) {
            uint32_t width = d == 2 ? 8 : 4;
            uint64_t mask = width == 8 ? ~0ull : 0xffffffffull;
            uint64_t off = ATOM_OFF + 64 + (uint64_t)w->me * 16 + (d == 1 ? 4 : 0);
            uint64_t ref = 0x0123456789abcdefull & mask, v = 0, cmp = 0, got = 0;
            OK(w->ops->atomic(w->state, t, off, dts[d], SYMM_AMO_SET, &ref, NULL, NULL, 0));
            for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
                for (int rep = 0; rep < 2; rep++) {
                    v = (0x9e3779b97f4a7c15ull * (op + 1) * (uint64_t)(rep + 3)) & mask;
                    if (op == SYMM_AMO_INC || op == SYMM_AMO_FETCH_INC) v = 1;
                    cmp = rep == 0 ? ref : ref ^ 1; /* CAS hits, then misses */
                    got = 0xdeadbeefdeadbeefull;
                    OK(w->ops->atomic(w->state, t, off, dts[d], op, &v, &cmp, &got, 0));
                    if (op_fetches(op) && (got & mask) != ref)
                        FAILF("atomic op %u width %u on PE %d: fetched %llx, expected %llx", op,
                              width, t, (unsigned long long)(got & mask), (unsigned long long)ref);
                    ref = ref_apply(op, ref, v, cmp, mask);
                    uint64_t now = 0;
                    OK(w->ops->atomic(w->state, t, off, dts[d], SYMM_AMO_FETCH, NULL, NULL, &now, 0));
                    if ((now & mask) != ref)
                        FAILF("after atomic op %u width %u on PE %d: value %llx, expected %llx", op,
                              width, t, (unsigned long long)(now & mask), (unsigned long long)ref);
                }
            }
        }
    }
    OK(tp_barrier(w));
    /* concurrent: every PE adds to word 0 (u64) and both halves of word 1 (u32) of each target */
    const int K = 100;
    for (int32_t t = 0; t < w->n; t++) {
        if (!tp_reaches(w, t)) continue;
        for (int i = 0; i < K; i++) {
            uint64_t one = 1, got;
            uint32_t three = 3, got32;
            OK(w->ops->atomic(w->state, t, ATOM_OFF, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &one,
                              NULL, &got, 0));
            OK(w->ops->atomic(w->state, t, ATOM_OFF + 8, SYMM_DTYPE_UINT32, SYMM_AMO_FETCH_ADD,
                              &three, NULL, &got32, 0));
            OK(w->ops->atomic(w->state, t, ATOM_OFF + 12, SYMM_DTYPE_UINT32, SYMM_AMO_ADD, &one,
                              NULL, NULL, i & 1 ? SYMM_TP_NBI : 0));
        }
    }
    OK(w->ops->quiet(w->state));
    OK(tp_barrier(w));
    uint64_t writers = 0;
    for (int32_t src = 0; src < w->n; src++) writers += (uint64_t)tp_reaches(w, src);
    uint64_t c64;
    uint32_t lo, hi;
    memcpy(&c64, heap + ATOM_OFF, 8);
    memcpy(&lo, heap + ATOM_OFF + 8, 4);
    memcpy(&hi, heap + ATOM_OFF + 12, 4);
    if (c64 != writers * (uint64_t)K || lo != writers * 3u * (uint32_t)K || hi != writers * (uint32_t)K)
        FAILF("concurrent atomics: u64 %llu (expected %llu), u32 lo %u (%u), hi %u (%u)",
              (unsigned long long)c64, (unsigned long long)(writers * (uint64_t)K), lo,
              (uint32_t)(writers * 3u * (uint32_t)K), hi, (uint32_t)(writers * (uint32_t)K));
    OK(tp_barrier(w));
    return 0;
}

static uint64_t load64(uint64_t off) {
    return __atomic_load_n((uint64_t *)(void *)(heap + off), __ATOMIC_ACQUIRE);
}

static int test_signal(tp_world *w) {
    const uint64_t len = 65536;
    char *mal = malloc(len);
    for (uint32_t round = 0; round < 12; round++) {
        uint32_t sig_op = round & 1 ? SYMM_SIGNAL_SET : SYMM_SIGNAL_ADD;
        for (int32_t t = 0; t < w->n; t++) {
            if (!tp_reaches(w, t)) continue;
            for (uint64_t i = 0; i < len; i++) mal[i] = (char)pat(w->me, t, i, 100 + round);
            /* ADD 1 each round, SET to round + 1: the signal reads round + 1 either way */
            OK(w->ops->put_signal(w->state, t, area(w->me), mal, len, SIG_OFF + 8u * (uint64_t)w->me,
                                  sig_op == SYMM_SIGNAL_ADD ? 1 : round + 1, sig_op,
                                  round % 3 == 0 ? SYMM_TP_NBI : 0));
        }
        /* as a target: wait for each writer's signal, then the data must be there */
        for (int32_t src = 0; src < w->n; src++) {
            if (!tp_reaches(w, src)) continue;
            uint64_t t0 = tp_now_ms();
            while (load64(SIG_OFF + 8u * (uint64_t)src) != round + 1) {
                if (w->ops->progress) w->ops->progress(w->state);
                if (tp_now_ms() - t0 > 60000) FAILF("signal from PE %d never reached %u", src, round + 1);
            }
            const uint8_t *p = (const uint8_t *)heap + area(src);
            for (uint64_t i = 0; i < len; i++)
                if (p[i] != pat(src, w->me, i, 100 + round))
                    FAILF("put_signal round %u from PE %d: signal seen but byte %llu is %u", round,
                          src, (unsigned long long)i, p[i]);
        }
        OK(w->ops->quiet(w->state));
        OK(tp_barrier(w));
    }
    /* fence: data, fence, flag */
    for (int32_t t = 0; t < w->n; t++) {
        if (!tp_reaches(w, t)) continue;
        for (uint64_t i = 0; i < len; i++) mal[i] = (char)pat(w->me, t, i, 200);
        uint64_t flag = 0xf1a9;
        OK(w->ops->put(w->state, t, area(w->me), mal, len, SYMM_TP_NBI));
        OK(w->ops->fence(w->state));
        OK(w->ops->put(w->state, t, SIG_OFF + 2048 + 8u * (uint64_t)w->me, &flag, 8, SYMM_TP_NBI));
    }
    for (int32_t src = 0; src < w->n; src++) {
        if (!tp_reaches(w, src)) continue;
        uint64_t t0 = tp_now_ms();
        while (load64(SIG_OFF + 2048 + 8u * (uint64_t)src) != 0xf1a9) {
            if (w->ops->progress) w->ops->progress(w->state);
            if (tp_now_ms() - t0 > 60000) FAILF("fenced flag from PE %d never came", src);
        }
        const uint8_t *p = (const uint8_t *)heap + area(src);
        for (uint64_t i = 0; i < len; i++)
            if (p[i] != pat(src, w->me, i, 200)) FAILF("fence: flag from PE %d seen before its data", src);
    }
    OK(w->ops->quiet(w->state));
    OK(tp_barrier(w));
    free(mal);
    return 0;
}

static int run_basic(tp_world *w) {
    if (setup(w)) return 1;
    int rc = test_puts(w) || test_gets(w) || test_atomics(w) || test_signal(w);
    if (!rc) {
        /* mem_remove then close: nothing may hang or leak */
        w->ops->mem_remove(w->state, CHUNK, CHUNK);
        OK(tp_barrier(w));
        if (w->me == 0) fprintf(stderr, "[pe 0] basic: all checks passed on %d PEs\n", w->n);
    }
    w->ops->close(w->state);
    free(heap);
    return rc;
}

static int run_dead(tp_world *w) {
    if (setup(w)) return 1;
    int32_t victim = w->n - 1;
    OK(tp_barrier(w));
    if (w->me == victim) {
        tp_world_expect_death(w);
        OK(tp_barrier(w)); /* everyone knows the plan */
        raise(SIGKILL);
    }
    tp_barrier(w); /* fails or passes depending on timing: the victim is going */
    if (!tp_reaches(w, victim)) {
        w->ops->close(w->state);
        free(heap);
        return 0;
    }
    /* Operate on the victim until the transport says it failed. */
    char buf[4096];
    int32_t rc = 0;
    uint64_t start = tp_now_ms(), i = 0;
    while (!rc && tp_now_ms() - start < 120000) {
        switch (i++ % 3) {
        case 0: rc = w->ops->put(w->state, victim, area(w->me), buf, sizeof buf, 0); break;
        case 1: rc = w->ops->get(w->state, buf, victim, area(w->me), 8, 0); break;
        default: {
            uint64_t one = 1, got;
            rc = w->ops->atomic(w->state, victim, ATOM_OFF, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD,
                                &one, NULL, &got, 0);
        }
        }
    }
    uint64_t died = tp_world_death_ms(w), now = tp_now_ms();
    if (rc != SYMM_ERR_PEER_FAILED)
        FAILF("ops on the dead PE %d returned %d, expected SYMM_ERR_PEER_FAILED (%d)", victim, rc,
              SYMM_ERR_PEER_FAILED);
    uint64_t after = died && now > died ? now - died : 0;
    fprintf(stderr, "[pe %d] dead%s: PEER_FAILED %llu ms after PE %d died (%llu ops): %s\n", w->me,
            silent ? " (silent)" : "", (unsigned long long)after, victim, (unsigned long long)i,
            tp_last_error());
    if (after > bound_ms) FAILF("PEER_FAILED came %llu ms after the death, bound %u ms",
                                (unsigned long long)after, bound_ms);
    /* later ops fail fast, quiet reports it, close frees everything */
    uint64_t t0 = tp_now_ms();
    rc = w->ops->get(w->state, buf, victim, 0, 8, 0);
    if (rc != SYMM_ERR_PEER_FAILED) FAILF("a later get returned %d", rc);
    if (w->ops->quiet(w->state) != SYMM_ERR_PEER_FAILED) FAILF("quiet after the death did not fail");
    if (tp_now_ms() - t0 > bound_ms) FAILF("later ops took %llu ms", (unsigned long long)(tp_now_ms() - t0));
    w->ops->close(w->state);
    free(heap);
    return 0;
}

int main(int argc, char **argv) {
    tp_world_opts o = {.n = 2, .hosts = 2, .news = 1, .peer_timeout_ms = 100};
    int bound_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-n") && i + 1 < argc) o.n = atoi(argv[++i]);
        else if (!strcmp(a, "--hosts") && i + 1 < argc) o.hosts = atoi(argv[++i]);
        else if (!strcmp(a, "--loopback")) o.loopback = 1;
        else if (!strcmp(a, "--require")) o.require = 1;
        else if (!strcmp(a, "--silent")) silent = 1;
        else if (!strcmp(a, "--test") && i + 1 < argc) test = argv[++i];
        else if (!strcmp(a, "--bound-ms") && i + 1 < argc) { bound_ms = (uint32_t)atoi(argv[++i]); bound_set = 1; }
        else if (a[0] != '-' && !o.plugin) o.plugin = a;
        else {
            fprintf(stderr, "usage: tp_harness PLUGIN [-n N] [--hosts H] [--loopback] [--require] "
                            "[--test basic|dead] [--silent] [--bound-ms MS]\n");
            return 2;
        }
    }
    if (!o.plugin) {
        fprintf(stderr, "tp_harness: which plugin? (path of libsymm_transport_<name>.so)\n");
        return 2;
    }
    o.news = !silent;
    if (!bound_set) bound_ms = silent ? 15000 : 2000;
    int (*fn)(tp_world *) = !strcmp(test, "dead") ? run_dead : run_basic;
    if (strcmp(test, "dead") && strcmp(test, "basic")) {
        fprintf(stderr, "tp_harness: unknown --test %s\n", test);
        return 2;
    }
    int rc = tp_world_run(&o, fn);
    printf("tp_harness %s %s -n %d --hosts %d%s%s: %s\n", o.plugin, test, o.n, o.hosts,
           o.loopback ? " --loopback" : "", silent ? " --silent" : "",
           rc == 0 ? "PASS" : rc == 77 ? "SKIP" : "FAIL");
    return rc;
}

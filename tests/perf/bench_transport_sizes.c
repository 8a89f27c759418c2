/*
 * A transport plugin's latency and bandwidth at several sizes: the figures
 * of bench_ofi_raw.c (raw libfabric), through any libsymm_transport_<name>.so.
 * Two PEs on two simulated hosts (tests/transport's tp_world); PE 0 measures.
 * PE 1, the target, is in one of two states (--target):
 *   passive  (default) it sleeps in the harness's barrier, which never enters
 *            the plugin: only the plugin's own progress (its thread) serves
 *            PE 0, as in a job whose target computes or waits elsewhere;
 *   wait     it waits for a flag word in its heap that PE 0 puts at the end,
 *            calling the plugin's progress hook and sched_yield in a loop:
 *            what the core's waits (symm_wait_until, signal waits, barriers)
 *            do while they yield, the first 20 ms of a wait (they nap 50 us
 *            between passes after that). The counterpart of bench_ofi_raw's
 *            target, which spins in fi_cq_read.
 *
 *   bench_transport_sizes PLUGIN [--sizes "8 64 ..."] [--iters N] [--repeat N]
 *                        [--target passive|wait] [--amo fadd|cswap|fetch|swap]
 *
 * Rows: "symm <figure> <bytes> <iters> <metric> <value>":
 *   put_lat  t_typical_us  blocking put from registered memory (remote completion)
 *   get_lat  t_typical_us  blocking get into registered memory
 *   amo_lat  t_typical_us  one blocking 64-bit fetching atomic (8 B only): --amo fadd
 *                          (default) fetch-add, cswap compare-swap, fetch, swap
 *   put_bw   bw_avg_MBps   nbi puts of <bytes>, one quiet at the end (MB = 2^20 B)
 * t_typical is the median over the iterations; with --repeat N each figure
 * is the median of N runs.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <symm/symm.h>

#include "../transport/tp_world.h"

#define MAX_SIZE (4u << 20)
#define FLAG (2u * MAX_SIZE)  /* the heap word that ends a waiting target's wait */
#define HEAP (FLAG + 4096u)

static const char *sizes_arg = "8 64 512 4096 32768 262144 1048576 4194304";
static int iters_arg = 1000, repeat = 3, waiting = 0;
static const char *amo_arg = "fadd";
static char *heap;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define TRY(call)                                                                              \
    do {                                                                                       \
        int32_t rc_ = (call);                                                                  \
        if (rc_) {                                                                             \
            fprintf(stderr, "[pe %d] %s -> %d: %s\n", w->me, #call, rc_, tp_last_error());     \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

static int lat(tp_world *w, const char *what, uint64_t n, int iters, double *out) {
    double *t = malloc(sizeof *t * (size_t)iters);
    uint64_t one = 1, zero = 0, got;
    uint32_t aop = !strcmp(amo_arg, "cswap")  ? SYMM_AMO_COMPARE_SWAP
                   : !strcmp(amo_arg, "fetch") ? SYMM_AMO_FETCH
                   : !strcmp(amo_arg, "swap")  ? SYMM_AMO_SWAP
                                               : SYMM_AMO_FETCH_ADD;
    for (int i = -10; i < iters; i++) {
        double t0 = now_us();
        if (!strcmp(what, "put_lat")) TRY(w->ops->put(w->state, 1, 0, heap + MAX_SIZE, n, 0));
        else if (!strcmp(what, "get_lat")) TRY(w->ops->get(w->state, heap + MAX_SIZE, 1, 0, n, 0));
        else TRY(w->ops->atomic(w->state, 1, 0, SYMM_DTYPE_UINT64, aop, &one, &zero, &got, 0));
        if (i >= 0) t[i] = now_us() - t0;
    }
    *out = median(t, iters);
    free(t);
    return 0;
}

static int bw(tp_world *w, uint64_t n, uint64_t *iters_out, double *out) {
    uint64_t iters = (64u << 20) / n;
    if (iters < 64) iters = 64;
    if (iters > 20000) iters = 20000;
    double t0 = now_us();
    for (uint64_t i = 0; i < iters; i++)
        TRY(w->ops->put(w->state, 1, 0, heap + MAX_SIZE, n, SYMM_TP_NBI));
    TRY(w->ops->quiet(w->state));
    double dt = now_us() - t0;
    *iters_out = iters;
    *out = (double)(n * iters) / (dt / 1e6) / (1024.0 * 1024.0);
    return 0;
}

static int bench(tp_world *w) {
    heap = aligned_alloc(4096, HEAP);
    memset(heap, 0, HEAP);
    TRY(w->ops->open(&w->core, 0, &w->state, &w->info));
    TRY(w->ops->mem_add(w->state, heap, 0, HEAP, SYMM_TP_MEM_HOST, -1));
    TRY(tp_barrier(w)); /* both registered: PE 0 may reach PE 1's flag */
    if (w->me == 1 && waiting) {
        /* The core's wait, yield phase: progress, test the word, yield. */
        atomic_ullong *flag = (atomic_ullong *)(void *)(heap + FLAG);
        for (unsigned i = 1;; i++) {
            if (w->ops->progress) w->ops->progress(w->state); /* NULL: tcp plugin */
            if (atomic_load_explicit(flag, memory_order_acquire)) break;
            if (i % 1024 == 0 && w->core.check_failed(w->core.core)) /* PE 0 gave up */
                return 1;
            sched_yield();
        }
    }
    if (w->me == 0) {
        printf("# bench_transport_sizes: %s on %s, 2 PEs on 2 simulated hosts, %s target, "
               "amo %s, repeat %d\n", w->ops->name, w->info.device,
               waiting ? "waiting" : "passive", amo_arg, repeat);
        printf("%-7s %-14s %9s %6s %-13s %s\n", "#", "figure", "bytes", "iters", "metric", "value");
        char *list = strdup(sizes_arg), *save = NULL;
        double *r = malloc(sizeof *r * (size_t)repeat);
        for (char *tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
            uint64_t n = strtoull(tok, NULL, 10);
            if (n == 0 || n > MAX_SIZE) {
                fprintf(stderr, "bench_transport_sizes: size %s out of 1..%u\n", tok, MAX_SIZE);
                return 1;
            }
            int iters = n >= (1u << 20) ? iters_arg / 10 : iters_arg;
            if (iters < 10) iters = 10;
            static const char *figs[] = {"put_lat", "get_lat", "amo_lat"};
            for (int f = 0; f < 3; f++) {
                if (f == 2 && n != 8) continue;
                for (int k = 0; k < repeat; k++)
                    if (lat(w, figs[f], n, iters, &r[k])) return 1;
                printf("%-7s %-14s %9llu %6d %-13s %.2f\n", "symm", figs[f], (unsigned long long)n,
                       iters, "t_typical_us", median(r, repeat));
            }
            uint64_t bi = 0;
            for (int k = 0; k < repeat; k++)
                if (bw(w, n, &bi, &r[k])) return 1;
            printf("%-7s %-14s %9llu %6llu %-13s %.2f\n", "symm", "put_bw", (unsigned long long)n,
                   (unsigned long long)bi, "bw_avg_MBps", median(r, repeat));
            fflush(stdout);
        }
        free(r);
        free(list);
        if (waiting) { /* end PE 1's wait */
            static const uint64_t one = 1;
            TRY(w->ops->put(w->state, 1, FLAG, &one, sizeof one, 0));
        }
    }
    TRY(tp_barrier(w));
    w->ops->close(w->state);
    free(heap);
    return 0;
}

int main(int argc, char **argv) {
    tp_world_opts o = {.n = 2, .hosts = 2, .news = 1, .require = 1, .peer_timeout_ms = 100};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters_arg = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--target") && i + 1 < argc && !strcmp(argv[i + 1], "wait"))
            waiting = 1, i++;
        else if (!strcmp(argv[i], "--target") && i + 1 < argc && !strcmp(argv[i + 1], "passive"))
            waiting = 0, i++;
        else if (!strcmp(argv[i], "--amo") && i + 1 < argc) amo_arg = argv[++i];
        else if (argv[i][0] != '-' && !o.plugin) o.plugin = argv[i];
        else {
            fprintf(stderr, "usage: bench_transport_sizes PLUGIN [--sizes \"S ...\"] [--iters N] "
                            "[--repeat N] [--target passive|wait] "
                            "[--amo fadd|cswap|fetch|swap]\n");
            return 2;
        }
    }
    if (strcmp(amo_arg, "fadd") && strcmp(amo_arg, "cswap") && strcmp(amo_arg, "fetch") &&
        strcmp(amo_arg, "swap")) {
        fprintf(stderr, "bench_transport_sizes: --amo %s: expected fadd, cswap, fetch or swap\n",
                amo_arg);
        return 2;
    }
    if (!o.plugin || iters_arg < 1 || repeat < 1) {
        fprintf(stderr, "bench_transport_sizes: need PLUGIN, --iters >= 1, --repeat >= 1\n");
        return 2;
    }
    return tp_world_run(&o, bench);
}

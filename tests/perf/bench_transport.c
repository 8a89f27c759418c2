/*
 * Transport benchmark: two PEs on two simulated hosts (tests/transport's
 * tp_world), PE 0 drives a plugin the way perftest drives raw verbs, so the
 * figures sit beside ib_write_bw / ib_read_lat / ib_atomic_lat of the same
 * device (scripts/softroce/bench-transport.sh prints both with ratios).
 *
 *   bench_transport PLUGIN [--sizes "65536 262144 1048576"] [--bw-bytes B]
 *                   [--lat-iters N] [--repeat N]
 *
 * Rows: "symm <figure> <bytes> <iters> <metric> <value>":
 *   put_bw   bw_avg_MBps   nbi puts of <bytes> from registered memory, one
 *                          quiet at the end (MB = 2^20 B, as perftest)
 *   put_lat  t_typical_us  blocking 8-byte put (remote completion: a round trip)
 *   get_lat  t_typical_us  blocking 8-byte get into private memory (an RDMA READ
 *                          round trip, then a copy out of the bounce buffer)
 *   get_lat_heap           the same into registered (symmetric) memory
 *   amo_lat  t_typical_us  blocking 64-bit fetch-add
 * t_typical is the median over the iterations (perftest's t_typical); with
 * --repeat N each figure is the median of N runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <symm/symm.h>

#include "../transport/tp_world.h"

#define HEAP (8u << 20)

static const char *sizes_arg = "65536 262144 1048576";
static uint64_t bw_bytes = 16u << 20;
static int lat_iters = 1000, repeat = 3;

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

static char *heap;

/* Per-op timestamps: the TSC where there is one (clock_gettime is a full
 * system call in the TCG guest, whose clock is hpet, too dear to time one
 * operation with; perftest uses the TSC too), scaled by the wall clock over
 * the whole loop. */
#if defined(__x86_64__)
#include <x86intrin.h>
static double stamp(void) {
    return (double)__rdtsc();
}
#else
static double stamp(void) {
    return now_us();
}
#endif

/* One latency figure: the median of lat_iters timed blocking ops. */
static int lat(tp_world *w, const char *what, double *out) {
    double *t = malloc(sizeof *t * (size_t)lat_iters);
    uint64_t v = 1, got = 0;
    char buf[8] = {0};
    double wall0 = now_us(), c0 = stamp();
    for (int i = -10; i < lat_iters; i++) { /* 10 warm-up ops */
        double t0 = stamp();
        if (!strcmp(what, "put_lat")) TRY(w->ops->put(w->state, 1, 4096, buf, 8, 0));
        else if (!strcmp(what, "get_lat")) TRY(w->ops->get(w->state, buf, 1, 4096, 8, 0));
        else if (!strcmp(what, "get_lat_heap")) TRY(w->ops->get(w->state, heap + 64, 1, 4096, 8, 0));
        else TRY(w->ops->atomic(w->state, 1, 0, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &v, NULL, &got, 0));
        if (i >= 0) t[i] = stamp() - t0;
    }
    double per_us = (stamp() - c0) / (now_us() - wall0); /* stamps per microsecond */
    *out = median(t, lat_iters) / per_us;
    free(t);
    return 0;
}

static int bench(tp_world *w) {
    heap = aligned_alloc(4096, HEAP);
    memset(heap, 0, HEAP);
    TRY(w->ops->open(&w->core, 0, &w->state, &w->info));
    TRY(w->ops->mem_add(w->state, heap, 0, HEAP, SYMM_TP_MEM_HOST, -1));
    if (w->me == 0) {
        printf("# bench_transport: %s on %s, 2 PEs on 2 simulated hosts, repeat %d\n", w->ops->name,
               w->info.device, repeat);
        printf("%-7s %-14s %9s %6s %-13s %s\n", "#", "figure", "bytes", "iters", "metric", "value");
        char *list = strdup(sizes_arg), *save = NULL;
        for (char *tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
            uint64_t s = strtoull(tok, NULL, 10);
            if (s == 0 || s > HEAP / 2) {
                fprintf(stderr, "bench_transport: size %s out of 1..%u\n", tok, HEAP / 2);
                return 1;
            }
            uint64_t iters = bw_bytes / s < 20 ? 20 : bw_bytes / s;
            double *r = malloc(sizeof *r * (size_t)repeat);
            for (int k = 0; k < repeat; k++) {
                /* source: the first half of my registered heap; target: the peer's second half */
                double t0 = now_us();
                for (uint64_t i = 0; i < iters; i++)
                    TRY(w->ops->put(w->state, 1, HEAP / 2, heap, s, SYMM_TP_NBI));
                TRY(w->ops->quiet(w->state));
                double dt = now_us() - t0;
                r[k] = (double)(s * iters) / (dt / 1e6) / (1024.0 * 1024.0);
            }
            printf("%-7s %-14s %9llu %6llu %-13s %.2f\n", "symm", "put_bw", (unsigned long long)s,
                   (unsigned long long)iters, "bw_avg_MBps", median(r, repeat));
            free(r);
        }
        free(list);
        static const char *lats[] = {"put_lat", "get_lat", "get_lat_heap", "amo_lat"};
        for (int k = 0; k < 4; k++) {
            double *r = malloc(sizeof *r * (size_t)repeat);
            for (int j = 0; j < repeat; j++)
                if (lat(w, lats[k], &r[j])) return 1;
            printf("%-7s %-14s %9d %6d %-13s %.2f\n", "symm", lats[k], 8, lat_iters, "t_typical_us",
                   median(r, repeat));
            free(r);
        }
        fflush(stdout);
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
        else if (!strcmp(argv[i], "--bw-bytes") && i + 1 < argc) bw_bytes = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--lat-iters") && i + 1 < argc) lat_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (argv[i][0] != '-' && !o.plugin) o.plugin = argv[i];
        else {
            fprintf(stderr, "usage: bench_transport PLUGIN [--sizes \"S ...\"] [--bw-bytes B] "
                            "[--lat-iters N] [--repeat N]\n");
            return 2;
        }
    }
    if (!o.plugin || lat_iters < 1 || repeat < 1) {
        fprintf(stderr, "bench_transport: need PLUGIN, --lat-iters >= 1, --repeat >= 1\n");
        return 2;
    }
    return tp_world_run(&o, bench);
}

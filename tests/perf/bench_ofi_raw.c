/*
 * Raw libfabric beside symm's ofi transport: the same figures as
 * bench_transport_sizes.c, with no symm code in the path. Two processes on
 * this machine (fork), one RDM endpoint each; process 1 is the target and
 * only polls its CQ (a spinning target: the best case for latency), process 0
 * measures.
 *
 *   bench_ofi_raw PROVIDER [--sizes "8 64 ..."] [--iters N] [--repeat N]
 *                 [--amo fadd|cswap|fetch|swap] [--cq-wait none|fd]
 *
 * Completion semantics match the transport's: FI_DELIVERY_COMPLETE where the
 * provider offers it, else (shm) each write is followed by an 8-byte read of
 * the target (ordered after it, FI_ORDER_RAW) before it counts as done.
 * Rows: "raw <figure> <bytes> <iters> <metric> <value>":
 *   put_lat  t_typical_us  fi_write + its completion (remote), median
 *   get_lat  t_typical_us  fi_read + its completion, median
 *   amo_lat  t_typical_us  one 64-bit fetching atomic, median (8 B only): --amo fadd
 *                          (default) fi_fetch_atomic(FI_SUM), cswap fi_compare_atomic(FI_CSWAP),
 *                          fetch fi_fetch_atomic(FI_ATOMIC_READ), swap ...(FI_ATOMIC_WRITE)
 *   put_bw   bw_avg_MBps   64 writes in flight, then all completions (MB = 2^20 B)
 * With --repeat N each figure is the median of N runs. --cq-wait fd opens both
 * processes' CQs with a wait object (FI_WAIT_FD), as the ofi transport does so
 * that its progress thread can sleep on it, where the provider has one (shm has
 * none: fi_cq_open fails); default none, no wait object.
 */
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symm_bench_bind.h"

#define MAX_SIZE (4u << 20)
#define WINDOW 64

typedef struct shared {
    atomic_int ready, stop;
    char name[2][256];
    size_t name_len[2];
    uint64_t addr[2], key[2];
} shared;

static shared *S;
static const char *sizes_arg = "8 64 512 4096 32768 262144 1048576 4194304";
static int iters_arg = 1000, repeat = 3, cq_wait_fd = 0;
static const char *amo_arg = "fadd";

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

typedef struct ep {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    struct fid_mr *mr;
    char *buf; /* [0, MAX_SIZE): target area; [MAX_SIZE, 2 MAX_SIZE): local */
    fi_addr_t peer;
    int delivery;
    uint64_t raddr, rkey;
} ep_t;

#define CHECK(call)                                                                            \
    do {                                                                                       \
        int rc_ = (int)(call);                                                                 \
        if (rc_) {                                                                             \
            fprintf(stderr, "bench_ofi_raw: %s -> %d (%s)\n", #call, rc_, fi_strerror(-rc_));  \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)

static struct fi_info *query(const char *prov, uint64_t op_flags, uint64_t order) {
    struct fi_info *h = fi_allocinfo(), *info = NULL;
    h->caps = FI_RMA | FI_ATOMIC;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                              FI_MR_ENDPOINT;
    h->domain_attr->threading = FI_THREAD_SAFE;
    h->tx_attr->op_flags = op_flags;
    h->tx_attr->msg_order = order;
    h->rx_attr->msg_order = order;
    h->fabric_attr->prov_name = strdup(prov);
    int rc = fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, h, &info);
    fi_freeinfo(h);
    return rc ? NULL : info;
}

static int setup(ep_t *e, const char *prov, int me) {
    /* shm: delivery completion mixes up atomic results (libfabric 1.17), as
     * the transport found; it uses a read flush there, so does this. */
    e->info = strcmp(prov, "shm") ? query(prov, FI_DELIVERY_COMPLETE, 0) : NULL;
    e->delivery = e->info != NULL;
    if (!e->info) e->info = query(prov, 0, FI_ORDER_RAW);
    if (!e->info) {
        fprintf(stderr, "bench_ofi_raw: provider %s offers no RDM endpoint with RMA and atomics "
                        "(with delivery completion or FI_ORDER_RAW) here\n", prov);
        return -1;
    }
    CHECK(fi_fabric(e->info->fabric_attr, &e->fabric, NULL));
    CHECK(fi_domain(e->fabric, e->info, &e->domain, NULL));
    struct fi_cq_attr ca = {.format = FI_CQ_FORMAT_CONTEXT, .size = 1024,
                            .wait_obj = cq_wait_fd ? FI_WAIT_FD : FI_WAIT_NONE};
    CHECK(fi_cq_open(e->domain, &ca, &e->cq, NULL));
    struct fi_av_attr aa = {.type = FI_AV_TABLE, .count = 2};
    CHECK(fi_av_open(e->domain, &aa, &e->av, NULL));
    CHECK(fi_endpoint(e->domain, e->info, &e->ep, NULL));
    CHECK(fi_ep_bind(e->ep, &e->av->fid, 0));
    CHECK(fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(e->ep));
    e->buf = aligned_alloc(4096, 2 * (size_t)MAX_SIZE);
    memset(e->buf, me, 2 * (size_t)MAX_SIZE);
    CHECK(fi_mr_reg(e->domain, e->buf, 2 * (size_t)MAX_SIZE,
                    FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0x51 + (uint64_t)me, 0,
                    &e->mr, NULL));
    if (e->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        CHECK(fi_mr_bind(e->mr, &e->ep->fid, 0));
        CHECK(fi_mr_enable(e->mr));
    }
    S->name_len[me] = sizeof S->name[me];
    CHECK(fi_getname(&e->ep->fid, S->name[me], &S->name_len[me]));
    S->addr[me] = (e->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)e->buf : 0;
    S->key[me] = fi_mr_key(e->mr);
    atomic_fetch_add(&S->ready, 1);
    while (atomic_load(&S->ready) < 2) usleep(100);
    int other = 1 - me;
    if (fi_av_insert(e->av, S->name[other], 1, &e->peer, 0, NULL) != 1) {
        fprintf(stderr, "bench_ofi_raw: fi_av_insert failed\n");
        return -1;
    }
    e->raddr = S->addr[other];
    e->rkey = S->key[other];
    return 0;
}

/* Wait for n completions (progressing). */
static int reap(ep_t *e, int n) {
    struct fi_cq_entry c[16];
    while (n > 0) {
        ssize_t got = fi_cq_read(e->cq, c, n < 16 ? (size_t)n : 16);
        if (got > 0) {
            n -= (int)got;
        } else if (got == -FI_EAVAIL) {
            struct fi_cq_err_entry ee;
            memset(&ee, 0, sizeof ee);
            fi_cq_readerr(e->cq, &ee, 0);
            fprintf(stderr, "bench_ofi_raw: completion error %s\n", fi_strerror(ee.err));
            return -1;
        } else if (got != -FI_EAGAIN) {
            fprintf(stderr, "bench_ofi_raw: fi_cq_read: %s\n", fi_strerror((int)-got));
            return -1;
        }
    }
    return 0;
}

/* Post with -FI_EAGAIN retried after progress. */
#define POST(e, call)                                                                          \
    do {                                                                                       \
        ssize_t r_;                                                                            \
        while ((r_ = (call)) == -FI_EAGAIN) {                                                  \
            struct fi_cq_entry c_;                                                             \
            ssize_t g_ = fi_cq_read((e)->cq, &c_, 1);                                          \
            if (g_ > 0) pending--;                                                             \
        }                                                                                      \
        if (r_) {                                                                              \
            fprintf(stderr, "bench_ofi_raw: %s: %s\n", #call, fi_strerror((int)-r_));          \
            return -1;                                                                         \
        }                                                                                      \
        pending++;                                                                             \
    } while (0)

static int pending;
static struct fi_context2 ctxs[WINDOW + 4];

static int put_once(ep_t *e, size_t n) {
    void *desc = fi_mr_desc(e->mr);
    POST(e, fi_write(e->ep, e->buf + MAX_SIZE, n, desc, e->peer, e->raddr, e->rkey, &ctxs[0]));
    if (reap(e, pending)) return -1;
    pending = 0;
    if (!e->delivery) { /* the flush read */
        POST(e, fi_read(e->ep, e->buf + MAX_SIZE + MAX_SIZE - 8, 8, desc, e->peer, e->raddr, e->rkey,
                        &ctxs[1]));
        if (reap(e, pending)) return -1;
        pending = 0;
    }
    return 0;
}

static int get_once(ep_t *e, size_t n) {
    POST(e, fi_read(e->ep, e->buf + MAX_SIZE, n, fi_mr_desc(e->mr), e->peer, e->raddr, e->rkey,
                    &ctxs[0]));
    if (reap(e, pending)) return -1;
    pending = 0;
    return 0;
}

static int amo_once(ep_t *e) {
    uint64_t *op = (uint64_t *)(void *)(e->buf + MAX_SIZE), *res = op + 1, *cmp = op + 2;
    *op = 1;
    *cmp = 0;
    void *desc = fi_mr_desc(e->mr);
    if (!strcmp(amo_arg, "cswap"))
        POST(e, fi_compare_atomic(e->ep, op, 1, desc, cmp, desc, res, desc, e->peer, e->raddr,
                                  e->rkey, FI_UINT64, FI_CSWAP, &ctxs[0]));
    else
        POST(e, fi_fetch_atomic(e->ep, op, 1, desc, res, desc, e->peer, e->raddr, e->rkey,
                                FI_UINT64,
                                !strcmp(amo_arg, "fetch")  ? FI_ATOMIC_READ
                                : !strcmp(amo_arg, "swap") ? FI_ATOMIC_WRITE
                                                           : FI_SUM,
                                &ctxs[0]));
    if (reap(e, pending)) return -1;
    pending = 0;
    return 0;
}

static int lat(ep_t *e, const char *what, size_t n, int iters, double *out) {
    double *t = malloc(sizeof *t * (size_t)iters);
    for (int i = -10; i < iters; i++) {
        double t0 = now_us();
        int rc = !strcmp(what, "put_lat") ? put_once(e, n)
                 : !strcmp(what, "get_lat") ? get_once(e, n)
                                            : amo_once(e);
        if (rc) {
            free(t);
            return -1;
        }
        if (i >= 0) t[i] = now_us() - t0;
    }
    *out = median(t, iters);
    free(t);
    return 0;
}

static int bw(ep_t *e, size_t n, uint64_t *iters_out, double *out) {
    uint64_t iters = (64u << 20) / n;
    if (iters < 64) iters = 64;
    if (iters > 20000) iters = 20000;
    void *desc = fi_mr_desc(e->mr);
    double t0 = now_us();
    for (uint64_t i = 0; i < iters; i++) {
        if (pending >= WINDOW && reap(e, 1) == 0) pending--;
        POST(e, fi_write(e->ep, e->buf + MAX_SIZE, n, desc, e->peer, e->raddr, e->rkey,
                         &ctxs[i % WINDOW]));
    }
    if (reap(e, pending)) return -1;
    pending = 0;
    if (!e->delivery && put_once(e, 8)) return -1; /* the last data landed */
    double dt = now_us() - t0;
    *iters_out = iters;
    *out = (double)(n * iters) / (dt / 1e6) / (1024.0 * 1024.0);
    return 0;
}

static int measure(ep_t *e, const char *prov) {
    printf("# bench_ofi_raw: provider %s (%s completion), 2 processes on this machine, "
           "target spinning on its CQ, CQ wait object %s, amo %s, repeat %d\n",
           e->info->fabric_attr->prov_name, e->delivery ? "delivery" : "transmit + read flush",
           cq_wait_fd ? "fd" : "none", amo_arg, repeat);
    printf("%-7s %-14s %9s %6s %-13s %s\n", "#", "figure", "bytes", "iters", "metric", "value");
    (void)prov;
    char *list = strdup(sizes_arg), *save = NULL;
    double *r = malloc(sizeof *r * (size_t)repeat);
    for (char *tok = strtok_r(list, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
        size_t n = strtoull(tok, NULL, 10);
        if (n == 0 || n > MAX_SIZE) {
            fprintf(stderr, "bench_ofi_raw: size %s out of 1..%u\n", tok, MAX_SIZE);
            return -1;
        }
        int iters = n >= (1u << 20) ? iters_arg / 10 : iters_arg;
        if (iters < 10) iters = 10;
        static const char *figs[] = {"put_lat", "get_lat", "amo_lat"};
        for (int f = 0; f < 3; f++) {
            if (f == 2 && n != 8) continue;
            for (int k = 0; k < repeat; k++)
                if (lat(e, figs[f], n, iters, &r[k])) return -1;
            printf("%-7s %-14s %9zu %6d %-13s %.2f\n", "raw", figs[f], n, iters, "t_typical_us",
                   median(r, repeat));
        }
        uint64_t bi = 0;
        for (int k = 0; k < repeat; k++)
            if (bw(e, n, &bi, &r[k])) return -1;
        printf("%-7s %-14s %9zu %6llu %-13s %.2f\n", "raw", "put_bw", n, (unsigned long long)bi,
               "bw_avg_MBps", median(r, repeat));
        fflush(stdout);
    }
    free(r);
    free(list);
    return 0;
}

static int run(int me, const char *prov) {
    ep_t e;
    memset(&e, 0, sizeof e);
    if (setup(&e, prov, me)) return 1;
    int rc = 0;
    if (me == 0) {
        rc = measure(&e, prov) ? 1 : 0;
        atomic_store(&S->stop, 1);
    } else {
        struct fi_cq_entry c;
        while (!atomic_load(&S->stop)) fi_cq_read(e.cq, &c, 1); /* serve: progress only */
    }
    fi_close(&e.ep->fid);
    fi_close(&e.mr->fid);
    fi_close(&e.av->fid);
    fi_close(&e.cq->fid);
    fi_close(&e.domain->fid);
    fi_close(&e.fabric->fid);
    fi_freeinfo(e.info);
    free(e.buf);
    return rc;
}

int main(int argc, char **argv) {
    const char *prov = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc) sizes_arg = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters_arg = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--amo") && i + 1 < argc) amo_arg = argv[++i];
        else if (!strcmp(argv[i], "--cq-wait") && i + 1 < argc && !strcmp(argv[i + 1], "fd"))
            cq_wait_fd = 1, i++;
        else if (!strcmp(argv[i], "--cq-wait") && i + 1 < argc && !strcmp(argv[i + 1], "none"))
            cq_wait_fd = 0, i++;
        else if (argv[i][0] != '-' && !prov) prov = argv[i];
        else {
            fprintf(stderr, "usage: bench_ofi_raw PROVIDER [--sizes \"S ...\"] [--iters N] "
                            "[--repeat N] [--amo fadd|cswap|fetch|swap] [--cq-wait none|fd]\n");
            return 2;
        }
    }
    if (strcmp(amo_arg, "fadd") && strcmp(amo_arg, "cswap") && strcmp(amo_arg, "fetch") &&
        strcmp(amo_arg, "swap")) {
        fprintf(stderr, "bench_ofi_raw: --amo %s: expected fadd, cswap, fetch or swap\n", amo_arg);
        return 2;
    }
    if (!prov || iters_arg < 1 || repeat < 1) {
        fprintf(stderr, "bench_ofi_raw: need PROVIDER (e.g. \"tcp;ofi_rxm\", shm), --iters >= 1, "
                        "--repeat >= 1\n");
        return 2;
    }
    S = mmap(NULL, sizeof *S, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) return 1;
    fflush(NULL);
    pid_t kids[2];
    for (int me = 0; me < 2; me++) {
        kids[me] = fork();
        if (kids[me] == 0) {
            symm_bench_bind(me);
            int rc = run(me, prov);
            fflush(NULL);
            _exit(rc);
        }
    }
    int rc = 0;
    for (int me = 0; me < 2; me++) {
        int st;
        waitpid(kids[me], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st)) rc = 1;
        if (rc) atomic_store(&S->stop, 1); /* a failed measurer releases the target */
    }
    return rc;
}

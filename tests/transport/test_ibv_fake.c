/*
 * Unit tests of the ibverbs transport's logic against the fake verbs table
 * (fake_verbs.h): PEs are threads of this process, the core's collectives a
 * pthread barrier. No RDMA needed.
 *
 *   test_ibv_fake [select|connect|rma|completion|atomics|errors|gpu|mem]...
 * (no argument: all). Each case also checks that close() leaves no verbs
 * object alive.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <symm/symm.h>

#include "fake_verbs.h"

#define MAXPE 4
#define CHUNK (1u << 20)

typedef struct pe {
    symm_tp_core core;
    int32_t me;
    void *state;
    symm_tp_info info;
    int32_t open_rc;
    char *heap; /* 2 * CHUNK */
} pe;

static const symm_tp_ops *ops;
static int n_pes;
static uint64_t host[MAXPE];
static uint8_t remote[MAXPE][MAXPE];
static pthread_barrier_t bar;
static char slots[MAXPE][8192];
static volatile int job_failed;
static const char *envs[8][2];
static __thread char last_err[512];
static pe pes[MAXPE];
static int failures;

static int lb(pe *p);
static int mixed(pe *p);
static int fn_wc_error_any(pe *p);
static int fn_gpu_noreg(pe *p);

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                    \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, " (last error: %s)\n", last_err);                                  \
            __atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);                                \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)
#define OK(call)                                                                               \
    do {                                                                                       \
        int32_t rc_ = (call);                                                                  \
        CHECK(rc_ == 0, "%s -> %d", #call, rc_);                                               \
    } while (0)

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- the stand-in core ---- */

static int32_t c_barrier(void *c) {
    (void)c;
    pthread_barrier_wait(&bar);
    return 0;
}

static int32_t c_allgather(void *c, const void *mine, void *all, size_t len) {
    pe *p = c;
    memcpy(slots[p->me], mine, len);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < n_pes; i++) memcpy((char *)all + (size_t)i * len, slots[i], len);
    pthread_barrier_wait(&bar);
    return 0;
}

static int32_t c_check_failed(void *c) {
    (void)c;
    return job_failed ? SYMM_ERR_PEER_FAILED : 0;
}

static int32_t c_set_error(void *c, int32_t status, const char *msg) {
    (void)c;
    snprintf(last_err, sizeof last_err, "%s", msg);
    return status;
}

static void c_log(void *c, int32_t level, const char *msg) {
    if (level == 0 || getenv("SYMM_TP_VERBOSE")) fprintf(stderr, "[pe %d] %s\n", ((pe *)c)->me, msg);
}

static const char *c_getenv(void *c, const char *name) {
    (void)c;
    for (int i = 0; i < 8 && envs[i][0]; i++)
        if (!strcmp(envs[i][0], name)) return envs[i][1];
    return NULL;
}

static void set_env(const char *name, const char *value) {
    int i = 0;
    while (i < 7 && envs[i][0] && strcmp(envs[i][0], name)) i++;
    envs[i][0] = name;
    envs[i][1] = value;
}

/* n PEs, PE i on host hosts_of[i] (NULL: each its own host). */
static void world(int n, const int *hosts_of, uint32_t peer_timeout_ms) {
    n_pes = n;
    job_failed = 0;
    for (int i = 0; i < n; i++) host[i] = hosts_of ? (uint64_t)hosts_of[i] : (uint64_t)i;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) remote[i][j] = host[i] != host[j];
    for (int i = 0; i < n; i++) {
        pes[i] = (pe){.me = i};
        pes[i].core = (symm_tp_core){
            .size = sizeof(symm_tp_core), .iface = SYMM_TP_IFACE, .core = &pes[i], .my_pe = i,
            .n_pes = n, .host_id = host, .remote = remote[i], .device = -1, .timeout_ms = 10000,
            .peer_timeout_ms = peer_timeout_ms, .allgather = c_allgather, .barrier = c_barrier,
            .check_failed = c_check_failed, .set_error = c_set_error, .log = c_log,
            .getenv = c_getenv};
    }
}

typedef struct run_arg {
    int (*fn)(pe *);
    pe *p;
    int rc;
} run_arg;

static void *run_thread(void *a) {
    run_arg *r = a;
    r->rc = r->fn(r->p);
    return NULL;
}

/* Run fn on every PE (threads); returns how many returned non-zero. */
static int run(int (*fn)(pe *)) {
    pthread_t t[MAXPE];
    run_arg a[MAXPE];
    pthread_barrier_init(&bar, NULL, (unsigned)n_pes);
    for (int i = 0; i < n_pes; i++) {
        a[i] = (run_arg){.fn = fn, .p = &pes[i]};
        pthread_create(&t[i], NULL, run_thread, &a[i]);
    }
    int bad = 0;
    for (int i = 0; i < n_pes; i++) {
        pthread_join(t[i], NULL);
        bad += a[i].rc != 0;
    }
    pthread_barrier_destroy(&bar);
    return bad;
}

static int no_leaks(const char *when) {
    if (fake_stat.live_ctx || fake_stat.live_pd || fake_stat.live_cq || fake_stat.live_qp ||
        fake_stat.live_mr) {
        fprintf(stderr, "FAIL %s: verbs objects left: ctx %d pd %d cq %d qp %d mr %d\n", when,
                fake_stat.live_ctx, fake_stat.live_pd, fake_stat.live_cq, fake_stat.live_qp,
                fake_stat.live_mr);
        failures++;
        return 1;
    }
    return 0;
}

/* Open + two registered chunks on each PE. */
static int open_pe(pe *p, uint32_t loopback) {
    p->open_rc = ops->open(&p->core, loopback, &p->state, &p->info);
    if (p->open_rc) return 0;
    p->heap = aligned_alloc(4096, 2 * CHUNK);
    memset(p->heap, 0, 2 * CHUNK);
    OK(ops->mem_add(p->state, p->heap, 0, CHUNK, SYMM_TP_MEM_HOST, -1));
    OK(ops->mem_add(p->state, p->heap + CHUNK, CHUNK, CHUNK, SYMM_TP_MEM_HOST, -1));
    return 0;
}

static void close_pe(pe *p) {
    if (p->state) ops->close(p->state);
    p->state = NULL;
    free(p->heap);
    p->heap = NULL;
}

static int fn_open_close(pe *p) {
    p->open_rc = ops->open(&p->core, 0, &p->state, &p->info);
    if (!p->open_rc) close_pe(p);
    return 0;
}

static void base_devices(void) {
    fake_reset();
    fake_device down = fake_roce_device("down0", 9);
    down.port[0].state = IBV_PORT_DOWN;
    fake_add_device(&down);
    fake_device roce = fake_roce_device("roce0", 1);
    fake_add_device(&roce);
    fake_device ib = fake_roce_device("ib0", 2);
    ib.port[0].link_layer = IBV_LINK_LAYER_INFINIBAND;
    ib.port[0].lid = 7;
    ib.port[0].mtu = IBV_MTU_4096;
    fake_add_device(&ib);
    memset(envs, 0, sizeof envs);
}

/* ---- select: device, port, GID ---- */

static int t_select(void) {
    char why[256];
    symm_tp_core probe_core = pes[0].core;
    /* no library */
    const symm_tp_ops *none = symm__ibv_ops(NULL, "libibverbs.so.1 could not be opened (test)");
    world(2, NULL, 100);
    probe_core = pes[0].core;
    CHECK(none->probe(&probe_core, why, sizeof why) == SYMM_ERR_NOT_SUPPORTED, "probe without lib");
    CHECK(strstr(why, "libibverbs.so.1"), "why: %s", why);
    ops = symm__ibv_ops(&fake_fns, NULL);
    /* no devices */
    fake_reset();
    memset(envs, 0, sizeof envs);
    CHECK(ops->probe(&probe_core, why, sizeof why) == SYMM_ERR_NO_DEVICE, "probe, no devices");
    CHECK(strstr(why, "no RDMA device"), "why: %s", why);
    /* default: skip the DOWN device, take roce0 and its IPv4-mapped RoCE v2 GID (index 3) */
    base_devices();
    CHECK(ops->probe(&probe_core, why, sizeof why) == 0, "probe: %s", why);
    world(2, NULL, 100);
    CHECK(run(fn_open_close) == 0, "open");
    CHECK(pes[0].open_rc == 0 && pes[1].open_rc == 0, "open: %d %d", pes[0].open_rc, pes[1].open_rc);
    CHECK(!strncmp(pes[0].info.device, "roce0:1 gid 3 ::ffff:10.0.0.1", 29), "device %s", pes[0].info.device);
    CHECK(fake_stat.last_is_global == 1 && fake_stat.last_sgid_index == 3, "sgid %d",
          fake_stat.last_sgid_index);
    CHECK(pes[0].info.caps & SYMM_TP_CAP_LOOPBACK, "caps");
    CHECK(!(pes[0].info.caps & SYMM_TP_CAP_ATOMIC_GLOBAL), "rxe-like HCA atomics are not global");
    if (no_leaks("select default")) return 1;
    /* InfiniBand: LID, no GRH */
    set_env("SYMM_IB_DEVICE", "ib0");
    CHECK(run(fn_open_close) == 0 && pes[1].open_rc == 0, "open ib0: %d", pes[1].open_rc);
    CHECK(!strcmp(pes[1].info.device, "ib0:1 lid 7"), "device %s", pes[1].info.device);
    CHECK(fake_stat.last_is_global == 0 && fake_stat.last_dlid == 7, "dlid %u", fake_stat.last_dlid);
    CHECK(fake_stat.last_path_mtu == IBV_MTU_4096, "mtu");
    /* explicit GID index and port */
    set_env("SYMM_IB_DEVICE", "roce0:1");
    set_env("SYMM_IB_GID_INDEX", "2");
    CHECK(run(fn_open_close) == 0 && pes[0].open_rc == 0, "gid 2: %d", pes[0].open_rc);
    CHECK(fake_stat.last_sgid_index == 2, "sgid %d", fake_stat.last_sgid_index);
    /* errors: unknown device, DOWN port, missing port, bad GID index: every PE fails, nothing left */
    static const char *bad[][3] = {
        {"nope", NULL, "no such device"}, {"down0", NULL, "no ACTIVE port"},
        {"roce0:2", NULL, "not port 2"}, {"roce0", "99", "GID indexes 0..7"},
        {"roce0:x", NULL, "name[:port]"}};
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; k++) {
        memset(envs, 0, sizeof envs);
        set_env("SYMM_IB_DEVICE", bad[k][0]);
        if (bad[k][1]) set_env("SYMM_IB_GID_INDEX", bad[k][1]);
        CHECK(run(fn_open_close) == 0, "run");
        CHECK(pes[0].open_rc != 0 && pes[1].open_rc != 0, "%s: open did not fail", bad[k][0]);
        CHECK(ops->probe(&probe_core, why, sizeof why) != 0 || bad[k][1], "probe %s passed", bad[k][0]);
        if (!bad[k][1]) CHECK(strstr(why, bad[k][2]), "%s: why '%s'", bad[k][0], why);
        if (no_leaks(bad[k][0])) return 1;
    }
    /* a RoCE port with only link-local GIDs still works (RoCE v2 one preferred) */
    fake_reset();
    fake_device ll = fake_roce_device("ll0", 1);
    memset(ll.port[0].gid[2], 0, 16);
    memset(ll.port[0].gid[3], 0, 16);
    fake_add_device(&ll);
    memset(envs, 0, sizeof envs);
    CHECK(run(fn_open_close) == 0 && pes[0].open_rc == 0, "link-local");
    CHECK(fake_stat.last_sgid_index == 1, "sgid %d", fake_stat.last_sgid_index);
    /* a GLOB device advertises global atomics */
    fake_reset();
    fake_device glob = fake_roce_device("glob0", 1);
    glob.atomic_cap = IBV_ATOMIC_GLOB;
    fake_add_device(&glob);
    CHECK(run(fn_open_close) == 0 && (pes[0].info.caps & SYMM_TP_CAP_ATOMIC_GLOBAL), "glob caps");
    return no_leaks("select");
}

/* ---- connect: state machine, loopback, failures ---- */

static int t_connect(void) {
    base_devices();
    world(3, NULL, 100);
    CHECK(run(fn_open_close) == 0, "run");
    for (int i = 0; i < 3; i++) CHECK(pes[i].open_rc == 0, "open %d: %d", i, pes[i].open_rc);
    CHECK(fake_stat.to_init == 6 && fake_stat.to_rtr == 6 && fake_stat.to_rts == 6,
          "transitions %d %d %d", fake_stat.to_init, fake_stat.to_rtr, fake_stat.to_rts);
    CHECK(fake_stat.bad_transitions == 0, "bad transitions %d", fake_stat.bad_transitions);
    if (no_leaks("connect")) return 1;
    /* hosts {0,0,1}: PEs 0 and 1 share a host: without loopback they do not connect */
    int h[3] = {0, 0, 1};
    world(3, h, 100);
    memset(&fake_stat, 0, sizeof fake_stat);
    CHECK(run(fn_open_close) == 0 && pes[0].open_rc == 0, "open");
    CHECK(fake_stat.to_rts == 4, "rts %d (expected 4: 0<->2, 1<->2)", fake_stat.to_rts);
    /* loopback: every PE reaches every PE of its host too, itself included */
    world(2, (int[]){0, 0}, 100);
    memset(&fake_stat, 0, sizeof fake_stat);
    CHECK(run(lb) == 0, "loopback run");
    CHECK(fake_stat.to_rts == 4, "rts %d (expected 4: self and other, twice)", fake_stat.to_rts);
    if (no_leaks("loopback")) return 1;
    /* a failing transition on one PE: every PE's open fails, nothing left behind */
    static const enum ibv_qp_state fail_to[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
    for (int k = 0; k < 3; k++) {
        base_devices();
        world(3, NULL, 100);
        fake_knob.fail_modify_to = fail_to[k];
        fake_knob.fail_modify_count = 1;
        CHECK(run(fn_open_close) == 0, "run");
        int failed = 0;
        for (int i = 0; i < 3; i++) failed += pes[i].open_rc != 0;
        CHECK(failed == 3, "transition to %d failed once: %d PEs failed open", fail_to[k], failed);
        if (no_leaks("failed transition")) return 1;
    }
    /* a PE on InfiniBand and a PE on RoCE cannot talk: refused */
    base_devices();
    world(2, NULL, 100);
    CHECK(run(mixed) == 0, "mixed");
    CHECK(pes[0].open_rc != 0 && pes[1].open_rc != 0, "mixed fabrics opened");
    return no_leaks("connect");
}

/* PE 0 on ib0, PE 1 on roce0 (env is per process here: set per PE through the core's getenv) */
static const char *mixed_getenv(void *c, const char *name) {
    pe *p = c;
    if (!strcmp(name, "SYMM_IB_DEVICE")) return p->me == 0 ? "ib0" : "roce0";
    return NULL;
}

static int mixed(pe *p) {
    p->core.getenv = mixed_getenv;
    return fn_open_close(p);
}

static int lb(pe *p) {
    p->open_rc = ops->open(&p->core, 1, &p->state, &p->info);
    CHECK(p->open_rc == 0, "open loopback");
    p->heap = aligned_alloc(4096, 2 * CHUNK);
    OK(ops->mem_add(p->state, p->heap, 0, CHUNK, SYMM_TP_MEM_HOST, -1));
    OK(ops->mem_add(p->state, p->heap + CHUNK, CHUNK, CHUNK, SYMM_TP_MEM_HOST, -1));
    /* a put to myself and to my neighbour through the NIC */
    uint64_t v = 0xabc0 + (uint64_t)p->me, got = 0;
    OK(ops->put(p->state, p->me, 64, &v, 8, 0));
    OK(ops->put(p->state, 1 - p->me, 128, &v, 8, 0));
    OK(ops->atomic(p->state, p->me, 256, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &v, NULL, &got, 0));
    c_barrier(p);
    uint64_t a, b;
    memcpy(&a, p->heap + 64, 8);
    memcpy(&b, p->heap + 128, 8);
    CHECK(a == 0xabc0 + (uint64_t)p->me && b == 0xabc0 + (uint64_t)(1 - p->me), "loopback data %llx %llx",
          (unsigned long long)a, (unsigned long long)b);
    c_barrier(p);
    close_pe(p);
    return 0;
}

/* ---- RMA: chunking at max_msg, inline, bounce, chunk boundaries ---- */

static int fn_rma(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    int32_t other = 1 - p->me;
    const uint32_t len = 20000;
    /* from my registered heap, across the peer's chunk boundary */
    uint64_t off = CHUNK - 7000;
    for (uint32_t i = 0; i < len; i++) p->heap[i] = (char)(i * 3 + p->me);
    c_barrier(p);
    long posted = fake_stat.posted;
    c_barrier(p);
    OK(ops->put(p->state, other, off, p->heap, len, 0));
    c_barrier(p);
    for (uint32_t i = 0; i < len; i++)
        CHECK(p->heap[off + i] == (char)(i * 3 + other), "put byte %u", i);
    CHECK(fake_stat.posted - posted >= 2 * 6, "posted %ld (two PEs, >= 6 pieces each)", fake_stat.posted - posted);
    c_barrier(p);
    /* get into malloc memory (bounce), across the boundary */
    char *m = malloc(len);
    OK(ops->get(p->state, m, other, off, len, 0));
    for (uint32_t i = 0; i < len; i++) CHECK(m[i] == (char)(i * 3 + p->me), "get byte %u", i);
    /* inline: 64 bytes from the stack inline, 72 through the bounce buffer */
    char small[72];
    memset(small, 0x5a + p->me, sizeof small);
    c_barrier(p);
    long inl = fake_stat.inline_wrs;
    c_barrier(p);
    if (p->me == 0) OK(ops->put(p->state, other, 4096, small, 64, 0));
    c_barrier(p);
    CHECK(fake_stat.inline_wrs == inl + 1, "64 B put was not inline");
    c_barrier(p);
    if (p->me == 0) OK(ops->put(p->state, other, 4096, small, 72, 0));
    c_barrier(p);
    CHECK(fake_stat.inline_wrs == inl + 1, "72 B put went inline");
    if (p->me == 1) CHECK(p->heap[4096 + 71] == 0x5a, "72 B put data");
    c_barrier(p);
    /* partial 64-bit words at either end go as CMP_SWP merges (never a WRITE
     * that a concurrent 32-bit atomic on the word's other half could undo);
     * the other bytes of those words are kept; whole words are WRITEs */
    if (p->me == 1) memset(p->heap + 8192, 0x11, 32);
    c_barrier(p);
    long cas = fake_stat.cas_wrs, wr = fake_stat.write_wrs;
    c_barrier(p);
    if (p->me == 0) {
        char v[13];
        memset(v, 0x77, sizeof v);
        OK(ops->put(p->state, other, 8192 + 4, v, 4, 0));        /* high half of word 0 */
        OK(ops->put(p->state, other, 8192 + 13, v, 13, 0));      /* 3 B + word 2 + 2 B */
    }
    c_barrier(p);
    CHECK(fake_stat.cas_wrs == cas + 3, "partial-word CMP_SWPs: %ld", fake_stat.cas_wrs - cas);
    CHECK(fake_stat.write_wrs == wr + 1, "whole-word WRITEs: %ld", fake_stat.write_wrs - wr);
    if (p->me == 1) {
        static const char want[32] = {0x11, 0x11, 0x11, 0x11, 0x77, 0x77, 0x77, 0x77,
                                      0x11, 0x11, 0x11, 0x11, 0x11, 0x77, 0x77, 0x77,
                                      0x77, 0x77, 0x77, 0x77, 0x77, 0x77, 0x77, 0x77,
                                      0x77, 0x77, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};
        for (int i = 0; i < 32; i++)
            CHECK(p->heap[8192 + i] == want[i], "partial-word put byte %d: %#x", i,
                  (unsigned)(uint8_t)p->heap[8192 + i]);
    }
    c_barrier(p);
    /* a 1.5 MiB put from malloc crosses the bounce chunk and the region edge */
    char *big = malloc(3u << 19);
    for (uint32_t i = 0; i < (3u << 19); i++) big[i] = (char)(i * 7 + p->me);
    OK(ops->put(p->state, other, CHUNK / 4, big, 3u << 19, 0));
    c_barrier(p);
    for (uint32_t i = 0; i < (3u << 19); i++)
        CHECK(p->heap[CHUNK / 4 + i] == (char)(i * 7 + other), "big put byte %u", i);
    /* out of the registered range: OUT_OF_BOUNDS, nothing posted */
    CHECK(ops->put(p->state, other, 2 * CHUNK - 4, small, 8, 0) == SYMM_ERR_OUT_OF_BOUNDS, "oob put");
    free(big);
    free(m);
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int t_rma(void) {
    base_devices();
    fake_reset();
    fake_device d = fake_roce_device("roce0", 1);
    d.port[0].max_msg = 4096;
    fake_add_device(&d);
    world(2, NULL, 100);
    CHECK(run(fn_rma) == 0, "rma");
    CHECK(fake_stat.over_max_msg == 0 && fake_stat.max_len <= 4096, "a request of %llu B > max_msg 4096",
          (unsigned long long)fake_stat.max_len);
    CHECK(fake_stat.over_inline == 0, "inline above the QP's limit");
    return no_leaks("rma");
}

/* ---- completion accounting: nbi, quiet, fence, put_signal, queue depth ---- */

static int fn_completion(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    int32_t other = 1 - p->me;
    char *src = malloc(50 * 1024);
    for (int i = 0; i < 50 * 1024; i++) src[i] = (char)(i + 11 * p->me);
    c_barrier(p);
    for (int j = 0; j < 10; j++) /* fewer than the queue depth: nothing waits */
        OK(ops->put(p->state, other, 8192 + (uint64_t)j * 1024, src + j * 1024, 1024, SYMM_TP_NBI));
    c_barrier(p);
    /* requests run when their CQ is polled: nothing ran yet, so the data must not be there */
    CHECK(p->heap[8192] == 0, "nbi data arrived before any poll: the fake is not lazy");
    c_barrier(p);
    for (int j = 10; j < 50; j++) /* more than the queue depth: posting waits for room */
        OK(ops->put(p->state, other, 8192 + (uint64_t)j * 1024, src + j * 1024, 1024, SYMM_TP_NBI));
    OK(ops->quiet(p->state));
    c_barrier(p);
    for (int i = 0; i < 50 * 1024; i++) CHECK(p->heap[8192 + i] == (char)(i + 11 * other), "nbi byte %d", i);
    CHECK(fake_stat.max_outstanding <= 16, "queue depth %d > the device's 16", fake_stat.max_outstanding);
    /* nbi get into malloc: written by quiet, not before */
    char *dst = calloc(1, 4096);
    OK(ops->get(p->state, dst, other, 8192, 4096, SYMM_TP_NBI));
    CHECK(dst[1] == 0, "nbi get wrote before quiet");
    OK(ops->quiet(p->state));
    for (int i = 0; i < 4096; i++) CHECK(dst[i] == (char)(i + 11 * p->me), "nbi get byte %d", i);
    /* nbi fetch-add: fetched written by quiet */
    uint64_t one = 1, got = 12345;
    c_barrier(p);
    if (p->me == 0) {
        OK(ops->atomic(p->state, other, 0, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &one, NULL, &got, SYMM_TP_NBI));
        CHECK(got == 12345, "nbi fetched written early");
        OK(ops->quiet(p->state));
        CHECK(got == 0, "nbi fetched %llu", (unsigned long long)got);
        /* fence after WRITEs only: RC already orders them, nothing to wait for */
        OK(ops->put(p->state, other, 64, src, 8, SYMM_TP_NBI));
        OK(ops->fence(p->state));
        CHECK(fake_pending() > 0, "fence waited for WRITEs");
        OK(ops->put(p->state, other, 72, src, 8, SYMM_TP_NBI));
        OK(ops->quiet(p->state));
        /* fence after a READ still in flight: it completes before fence returns */
        char rd[8] = {0};
        OK(ops->get(p->state, rd, other, 64, 8, SYMM_TP_NBI));
        CHECK(rd[0] == 0 && fake_pending() > 0, "the lazy fake ran the READ early");
        OK(ops->fence(p->state));
        CHECK(!memcmp(rd, src, 8), "fence returned with a READ in flight");
        OK(ops->put(p->state, other, 64, src + 8, 8, SYMM_TP_NBI));
        CHECK(!(fake_stat.last_flags[1] & IBV_SEND_FENCE), "IBV_SEND_FENCE used");
        OK(ops->quiet(p->state));
        /* put_signal: the WRITE, then the signal's FETCH_ADD on the same QP */
        OK(ops->put_signal(p->state, other, 4096, src, 512, 256, 5, SYMM_SIGNAL_ADD, SYMM_TP_NBI));
        CHECK(fake_stat.last_opcodes[0] == IBV_WR_RDMA_WRITE &&
              fake_stat.last_opcodes[1] == IBV_WR_ATOMIC_FETCH_AND_ADD, "put_signal order %d %d",
              fake_stat.last_opcodes[0], fake_stat.last_opcodes[1]);
        OK(ops->quiet(p->state));
        OK(ops->put_signal(p->state, other, 4096, src, 512, 256, 77, SYMM_SIGNAL_SET, 0));
    }
    c_barrier(p);
    if (p->me == 1) {
        uint64_t s;
        memcpy(&s, p->heap + 256, 8);
        CHECK(s == 77, "signal %llu", (unsigned long long)s);
    }
    CHECK(fake_pending() == 0 || p->me == 1, "requests left after quiet");
    c_barrier(p);
    free(src);
    free(dst);
    close_pe(p);
    return 0;
}

static int t_completion(void) {
    fake_reset();
    fake_device d = fake_roce_device("roce0", 1);
    d.max_qp_wr = 16;
    fake_add_device(&d);
    memset(envs, 0, sizeof envs);
    fake_knob.delay_polls = 3;
    fake_knob.max_per_poll = 1;
    world(2, NULL, 100);
    CHECK(run(fn_completion) == 0, "completion");
    return no_leaks("completion");
}

/* ---- atomics: every op x width against a reference; concurrency ---- */

static uint64_t ref_op(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t mask) {
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

static int fetches(uint32_t op) {
    return !(op == SYMM_AMO_SET || op == SYMM_AMO_INC || op == SYMM_AMO_ADD || op == SYMM_AMO_AND ||
             op == SYMM_AMO_OR || op == SYMM_AMO_XOR);
}

static int fn_atomics(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    int32_t other = 1 - p->me;
    static const uint32_t dts[] = {SYMM_DTYPE_UINT32, SYMM_DTYPE_INT32, SYMM_DTYPE_FLOAT32,
                                   SYMM_DTYPE_UINT64, SYMM_DTYPE_INT64, SYMM_DTYPE_FLOAT64};
    for (unsigned d = 0; d < 6; d++) {
        uint32_t width = d < 3 ? 4 : 8;
        uint64_t mask = width == 8 ? ~0ull : 0xffffffffull;
        int is_float = dts[d] == SYMM_DTYPE_FLOAT32 || dts[d] == SYMM_DTYPE_FLOAT64;
        for (unsigned half = 0; half < (width == 4 ? 2u : 1u); half++) {
            /* my word on the other PE, and its neighbour half that must not change */
            uint64_t word = 65536 + (uint64_t)p->me * 4096 + d * 64;
            uint64_t off = word + half * 4;
            uint64_t ref = 0x0123456789abcdefull & mask, guard = 0x5555aaaa;
            OK(ops->atomic(p->state, other, off, dts[d], SYMM_AMO_SET, &ref, NULL, NULL, 0));
            if (width == 4) OK(ops->atomic(p->state, other, word + (1 - half) * 4, dts[d], SYMM_AMO_SET, &guard, NULL, NULL, 0));
            for (uint32_t op = SYMM_AMO_FETCH; op <= SYMM_AMO_XOR; op++) {
                if (is_float && op != SYMM_AMO_FETCH && op != SYMM_AMO_SET && op != SYMM_AMO_SWAP) continue;
                for (int rep = 0; rep < 2; rep++) {
                    uint64_t v = (0x9e3779b97f4a7c15ull * (op + 1) * (uint64_t)(rep + 3)) & mask;
                    if (op == SYMM_AMO_INC || op == SYMM_AMO_FETCH_INC) v = 1;
                    uint64_t cmp = rep ? ref ^ 1 : ref, got = 0xdeadbeefdeadbeefull;
                    OK(ops->atomic(p->state, other, off, dts[d], op, &v, &cmp, &got, 0));
                    if (fetches(op))
                        CHECK((got & mask) == ref, "dtype %u op %u half %u: fetched %llx, expected %llx",
                              dts[d], op, half, (unsigned long long)(got & mask), (unsigned long long)ref);
                    ref = ref_op(op, ref, v, cmp, mask);
                    uint64_t now = 0;
                    OK(ops->atomic(p->state, other, off, dts[d], SYMM_AMO_FETCH, NULL, NULL, &now, 0));
                    CHECK((now & mask) == ref, "dtype %u op %u: value %llx, expected %llx", dts[d], op,
                          (unsigned long long)(now & mask), (unsigned long long)ref);
                }
            }
            if (width == 4) {
                uint64_t g = 0;
                OK(ops->atomic(p->state, other, word + (1 - half) * 4, dts[d], SYMM_AMO_FETCH, NULL, NULL, &g, 0));
                CHECK((g & mask) == guard, "the other half changed: %llx", (unsigned long long)g);
            }
        }
    }
    /* misaligned: INVALID_ARG */
    uint64_t v = 1;
    CHECK(ops->atomic(p->state, other, 65536 + 2, SYMM_DTYPE_UINT32, SYMM_AMO_ADD, &v, NULL, NULL, 0) ==
          SYMM_ERR_INVALID_ARG, "misaligned atomic");
    /* concurrency: both PEs add into PE 0's words: u64, and u32 in both halves of one word */
    c_barrier(p);
    for (int i = 0; i < 300; i++) {
        uint64_t one = 1, got;
        uint32_t two = 2, g32;
        OK(ops->atomic(p->state, 0 == p->me ? 1 : 0, 0, SYMM_DTYPE_UINT64, SYMM_AMO_FETCH_ADD, &one, NULL, &got, 0));
        OK(ops->atomic(p->state, 0 == p->me ? 1 : 0, 8 + 4 * (uint64_t)p->me, SYMM_DTYPE_UINT32, SYMM_AMO_FETCH_ADD, &two, NULL, &g32, 0));
        OK(ops->atomic(p->state, 0 == p->me ? 1 : 0, 16 + 4 * (uint64_t)(i & 1), SYMM_DTYPE_UINT32, SYMM_AMO_ADD, &two, NULL, NULL, 0));
    }
    c_barrier(p);
    uint64_t c64;
    uint32_t lo, hi, a, b;
    memcpy(&c64, p->heap, 8);
    memcpy(&lo, p->heap + 8, 4);
    memcpy(&hi, p->heap + 12, 4);
    memcpy(&a, p->heap + 16, 4);
    memcpy(&b, p->heap + 20, 4);
    CHECK(c64 == 300 && lo + hi == 600 && a == 300 && b == 300, "concurrent: %llu %u %u %u %u",
          (unsigned long long)c64, lo, hi, a, b);
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int fn_contend(pe *p) {
    /* two PEs (threads) hammer the same 32-bit halves of PE 0's word: CAS loops must retry */
    if (open_pe(p, 1) || p->open_rc) return 1;
    c_barrier(p);
    for (int i = 0; i < 400; i++) {
        uint32_t one = 1;
        uint64_t big = 1ull << 40;
        OK(ops->atomic(p->state, 0, 24 + 4 * (uint64_t)(i & 1), SYMM_DTYPE_UINT32, SYMM_AMO_ADD, &one, NULL, NULL, 0));
        OK(ops->atomic(p->state, 0, 32, SYMM_DTYPE_UINT64, SYMM_AMO_XOR, &big, NULL, NULL, 0));
    }
    c_barrier(p);
    if (p->me == 0) {
        uint32_t a, b;
        uint64_t x;
        memcpy(&a, p->heap + 24, 4);
        memcpy(&b, p->heap + 28, 4);
        memcpy(&x, p->heap + 32, 8);
        CHECK(a == 400 && b == 400 && x == 0, "contended: %u %u %llx", a, b, (unsigned long long)x);
    }
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int t_atomics(void) {
    fake_reset();
    fake_device d = fake_roce_device("roce0", 1);
    fake_add_device(&d);
    memset(envs, 0, sizeof envs);
    world(2, NULL, 100);
    CHECK(run(fn_atomics) == 0, "atomics");
    if (no_leaks("atomics")) return 1;
    world(2, (int[]){0, 0}, 100);
    fake_knob.delay_polls = 2; /* completions late: CAS loops interleave */
    CHECK(run(fn_contend) == 0, "contend");
    return no_leaks("contend");
}

/* ---- errors: WC errors, lost peers, stalls, registration failures ---- */

static void *raise_news(void *arg) {
    usleep((useconds_t)(uintptr_t)arg * 1000);
    job_failed = 1;
    return NULL;
}

static void *call_peer_failed(void *arg) {
    usleep(150 * 1000);
    ops->peer_failed(arg);
    return NULL;
}

static int fn_stall(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    c_barrier(p);
    if (p->me == 0) {
        uint64_t v = 0;
        fake_knob.black_hole = 1; /* nothing completes any more */
        /* the core's news ends the wait */
        pthread_t t;
        pthread_create(&t, NULL, raise_news, (void *)(uintptr_t)150);
        uint64_t t0 = now_ms();
        int32_t rc = ops->get(p->state, &v, 1, 0, 8, 0);
        pthread_join(t, NULL);
        CHECK(rc == SYMM_ERR_PEER_FAILED, "stalled get with news: %d", rc);
        CHECK(now_ms() - t0 < 1000, "news took %llu ms", (unsigned long long)(now_ms() - t0));
        job_failed = 0;
        /* the abandoned get completes later: it must not write into the caller's buffer */
        v = 0x5e5e;
        fake_knob.black_hole = 0;
        for (int i = 0; i < 4; i++) ops->progress(p->state);
        CHECK(fake_pending() == 0, "the late request did not run");
        CHECK(v == 0x5e5e, "a late completion wrote %llx into a buffer its op had given back",
              (unsigned long long)v);
        fake_knob.black_hole = 1;
        OK(ops->put(p->state, 1, 0, &v, 8, SYMM_TP_NBI)); /* outstanding for quiet */
        /* peer_failed() from another thread ends it too */
        pthread_create(&t, NULL, call_peer_failed, p->state);
        t0 = now_ms();
        rc = ops->quiet(p->state);
        pthread_join(t, NULL);
        CHECK(rc == SYMM_ERR_PEER_FAILED, "stalled quiet with peer_failed(): %d", rc);
        CHECK(now_ms() - t0 < 1000, "peer_failed took %llu ms", (unsigned long long)(now_ms() - t0));
    }
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int fn_silent_stall(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    c_barrier(p);
    if (p->me == 0) {
        uint64_t v = 0;
        fake_knob.black_hole = 1;
        uint64_t t0 = now_ms();
        int32_t rc = ops->get(p->state, &v, 1, 0, 8, 0);
        uint64_t dt = now_ms() - t0;
        CHECK(rc == SYMM_ERR_PEER_FAILED, "silent stall: %d", rc);
        CHECK(strstr(last_err, "stopped answering"), "message %s", last_err);
        CHECK(dt < 20000, "silent stall took %llu ms", (unsigned long long)dt);
        fprintf(stderr, "silent stall detected after %llu ms\n", (unsigned long long)dt);
    }
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int fn_reg_fail(pe *p) {
    p->open_rc = ops->open(&p->core, 0, &p->state, &p->info);
    CHECK(p->open_rc == 0, "open");
    p->heap = aligned_alloc(4096, 2 * CHUNK);
    if (p->me == 1) fake_knob.fail_reg_addr = p->heap;
    c_barrier(p);
    int32_t rc = ops->mem_add(p->state, p->heap, 0, CHUNK, SYMM_TP_MEM_HOST, -1);
    CHECK(rc == SYMM_ERR_SYSTEM, "mem_add with PE 1 failing: %d", rc);
    if (p->me == 0) CHECK(strstr(last_err, "PE 1"), "message %s", last_err);
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int t_errors(void) {
    fake_reset();
    fake_device d = fake_roce_device("roce0", 1);
    fake_add_device(&d);
    memset(envs, 0, sizeof envs);
    world(3, NULL, 100);
    CHECK(run(fn_wc_error_any) == 0, "wc error");
    if (no_leaks("wc error")) return 1;
    world(2, NULL, 100);
    CHECK(run(fn_stall) == 0, "stall");
    fake_knob.black_hole = 0;
    if (no_leaks("stall")) return 1;
    world(2, NULL, 1);
    CHECK(run(fn_silent_stall) == 0, "silent stall");
    fake_knob.black_hole = 0;
    if (no_leaks("silent stall")) return 1;
    world(2, NULL, 100);
    CHECK(run(fn_reg_fail) == 0, "reg fail");
    fake_knob.fail_reg_addr = NULL;
    return no_leaks("errors");
}

static int fn_wc_error_any(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    c_barrier(p);
    /* the next request the fake runs (PE 0's put; the others wait) fails with RETRY_EXC */
    if (p->me == 0) {
        uint64_t v = 1;
        fake_knob.wc_error_status = IBV_WC_RETRY_EXC_ERR;
        fake_knob.wc_error_at = fake_stat.executed + 1;
        int32_t rc = ops->put(p->state, 1, 0, &v, 8, 0);
        CHECK(rc == SYMM_ERR_PEER_FAILED, "put to the lost PE: %d", rc);
        CHECK(strstr(last_err, "PE 1") && strstr(last_err, "retry"), "message: %s", last_err);
        fake_knob.wc_error_at = 0;
        uint64_t t0 = now_ms();
        CHECK(ops->get(p->state, &v, 1, 0, 8, 0) == SYMM_ERR_PEER_FAILED, "later get");
        CHECK(ops->atomic(p->state, 1, 0, SYMM_DTYPE_UINT64, SYMM_AMO_ADD, &v, NULL, NULL, 0) ==
              SYMM_ERR_PEER_FAILED, "later atomic");
        CHECK(now_ms() - t0 < 100, "later ops were slow");
        OK(ops->put(p->state, 2, 0, &v, 8, 0)); /* PE 2 still works */
        CHECK(ops->quiet(p->state) == SYMM_ERR_PEER_FAILED, "quiet hides the failure");
    }
    c_barrier(p);
    close_pe(p);
    return 0;
}

/* ---- GPU memory: dma-buf registration when the library has it, else a clear refusal ---- */

static int fn_gpu(pe *p) {
    p->open_rc = ops->open(&p->core, 0, &p->state, &p->info);
    CHECK(p->open_rc == 0, "open");
    p->heap = aligned_alloc(4096, CHUNK);
    memset(p->heap, 0, CHUNK);
    int32_t rc = ops->mem_add(p->state, p->heap, 0, CHUNK, SYMM_TP_MEM_CUDA, 5 /* a dma-buf fd */);
    if (fake_fns.reg_dmabuf_mr) {
        CHECK(rc == 0, "dmabuf mem_add: %d", rc);
        uint64_t v = 0x1234 + (uint64_t)p->me;
        OK(ops->put(p->state, 1 - p->me, 8, &v, 8, 0));
        c_barrier(p);
        uint64_t got;
        memcpy(&got, p->heap + 8, 8);
        CHECK(got == 0x1234 + (uint64_t)(1 - p->me), "dmabuf data %llx", (unsigned long long)got);
    } else {
        CHECK(rc == SYMM_ERR_NOT_SUPPORTED, "mem_add without dma-buf or peer memory: %d", rc);
        CHECK(strstr(last_err, "dma-buf"), "message %s", last_err);
    }
    c_barrier(p);
    close_pe(p);
    return 0;
}

static int t_gpu(void) {
    fake_reset();
    fake_device d = fake_roce_device("roce0", 1);
    fake_add_device(&d);
    memset(envs, 0, sizeof envs);
    world(2, NULL, 100);
    CHECK(run(fn_gpu) == 0, "gpu dmabuf");
    CHECK(fake_stat.dmabuf_regs == 2, "dmabuf registrations %d", fake_stat.dmabuf_regs);
    if (no_leaks("gpu")) return 1;
    /* no ibv_reg_dmabuf_mr and reg_mr refusing the pointer (no peer memory) */
    struct ibv_mr *(*saved)(struct ibv_pd *, uint64_t, size_t, uint64_t, int, int) = fake_fns.reg_dmabuf_mr;
    fake_fns.reg_dmabuf_mr = NULL;
    CHECK(run(fn_gpu_noreg) == 0, "gpu without dmabuf");
    fake_fns.reg_dmabuf_mr = saved;
    return no_leaks("gpu");
}

static int fn_gpu_noreg(pe *p) {
    /* reg_mr of the "GPU" range fails on every PE (no nvidia-peermem) */
    p->open_rc = ops->open(&p->core, 0, &p->state, &p->info);
    CHECK(p->open_rc == 0, "open");
    p->heap = aligned_alloc(4096, CHUNK);
    c_barrier(p);
    if (p->me == 0) fake_knob.fail_reg_addr = pes[0].heap;
    c_barrier(p);
    int32_t rc = ops->mem_add(p->state, p->heap, 0, CHUNK, SYMM_TP_MEM_CUDA, 5);
    CHECK(rc == SYMM_ERR_NOT_SUPPORTED, "PE %d: mem_add of unregistrable GPU memory: %d", p->me, rc);
    if (p->me == 0) CHECK(strstr(last_err, "dma-buf"), "message %s", last_err);
    c_barrier(p);
    fake_knob.fail_reg_addr = NULL;
    close_pe(p);
    return 0;
}

/* ---- registered buffers: mem_remove forgets the range (MR released) even
 * when the caller passes the aligned span; a later buffer at the same
 * offset is reached at its own address ---- */

static int fn_mem(pe *p) {
    if (open_pe(p, 0) || p->open_rc) return 1;
    int32_t other = 1 - p->me;
    const uint64_t off = 2 * CHUNK, bytes = 100;
    char *a = aligned_alloc(4096, 4096), *b = aligned_alloc(4096, 4096);
    memset(a, 0, 4096);
    memset(b, 0, 4096);
    c_barrier(p);
    int mr0 = fake_stat.live_mr;
    c_barrier(p);
    OK(ops->mem_add(p->state, a, off, bytes, SYMM_TP_MEM_HOST, -1));
    CHECK(fake_stat.live_mr == mr0 + 2, "MRs after add: %d, was %d", fake_stat.live_mr, mr0);
    uint64_t v = 0xa0 + (uint64_t)p->me;
    OK(ops->put(p->state, other, off + 8, &v, 8, 0));
    c_barrier(p);
    uint64_t got;
    memcpy(&got, a + 8, 8);
    CHECK(got == 0xa0 + (uint64_t)other, "first buffer data %llx", (unsigned long long)got);
    ops->mem_remove(p->state, off, 2u << 20); /* the aligned span, as the core once passed */
    c_barrier(p);
    CHECK(fake_stat.live_mr == mr0, "MRs after remove: %d, want %d", fake_stat.live_mr, mr0);
    CHECK(ops->put(p->state, other, off + 8, &v, 8, 0) == SYMM_ERR_OUT_OF_BOUNDS,
          "put to a removed range");
    c_barrier(p);
    OK(ops->mem_add(p->state, b, off, 2 * bytes, SYMM_TP_MEM_HOST, -1));
    v = 0xb0 + (uint64_t)p->me;
    OK(ops->put(p->state, other, off + 150, &v, 8, 0));
    c_barrier(p);
    memcpy(&got, b + 150, 8);
    CHECK(got == 0xb0 + (uint64_t)other, "second buffer data %llx", (unsigned long long)got);
    memcpy(&got, a + 8, 8);
    CHECK(got == 0xa0 + (uint64_t)other, "the first buffer was written again: %llx",
          (unsigned long long)got);
    ops->mem_remove(p->state, off, 2 * bytes);
    c_barrier(p);
    CHECK(fake_stat.live_mr == mr0, "MRs after the second remove: %d", fake_stat.live_mr);
    c_barrier(p);
    close_pe(p);
    free(a);
    free(b);
    return 0;
}

static int t_mem(void) {
    fake_reset();
    fake_device d = fake_roce_device("roce0", 1);
    fake_add_device(&d);
    memset(envs, 0, sizeof envs);
    world(2, NULL, 100);
    CHECK(run(fn_mem) == 0, "registered buffers");
    return no_leaks("mem");
}

int main(int argc, char **argv) {
    static const struct {
        const char *name;
        int (*fn)(void);
    } cases[] = {{"select", t_select}, {"connect", t_connect}, {"rma", t_rma},
                 {"completion", t_completion}, {"atomics", t_atomics}, {"errors", t_errors},
                 {"gpu", t_gpu}, {"mem", t_mem}};
    ops = symm__ibv_ops(&fake_fns, NULL);
    int ran = 0;
    for (unsigned k = 0; k < sizeof cases / sizeof *cases; k++) {
        int want = argc < 2;
        for (int i = 1; i < argc; i++) want |= !strcmp(argv[i], cases[k].name);
        if (!want) continue;
        int before = failures;
        int rc = cases[k].fn();
        if (rc && failures == before) failures++;
        printf("%s %s\n", failures == before ? "ok" : "FAIL", cases[k].name);
        ran++;
    }
    if (!ran) {
        fprintf(stderr, "unknown case\n");
        return 2;
    }
    return failures ? 1 : 0;
}

/* The stand-in core for transport tests (tp_world.h). */
#include "tp_world.h"

#include "symm_bench_bind.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <symm/symm.h>

#include "runtime/bootstrap/crypto.h"

#define SLOT (64u << 10)
#define MAX_PES 64

typedef struct shm {
    uint8_t key[32];           /* the job key (the core's, for auth_mac) */
    _Atomic uint32_t arrived, gen;
    _Atomic int dead;          /* some PE died                 */
    _Atomic uint64_t death_ms; /* when (the first one)         */
    _Atomic int victim[MAX_PES];
    char slots[];              /* n * SLOT */
} shm;

static shm *S;
static int news_mode;
static char last_err[1024];

uint64_t tp_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *tp_last_error(void) {
    return last_err;
}

int tp_reaches(const tp_world *w, int32_t pe) {
    return w->remote[pe] || (w->loopback && w->host_id[pe] == w->host_id[w->me]);
}

static int32_t w_barrier(void *c) {
    tp_world *w = c;
    uint32_t g = atomic_load(&S->gen);
    if (atomic_fetch_add(&S->arrived, 1) + 1 == (uint32_t)w->n) {
        atomic_store(&S->arrived, 0);
        atomic_fetch_add(&S->gen, 1);
        return 0;
    }
    for (unsigned i = 0; atomic_load(&S->gen) == g; i++) {
        if (atomic_load(&S->dead)) {
            snprintf(last_err, sizeof last_err, "harness barrier: a PE died");
            return SYMM_ERR_PEER_FAILED;
        }
        usleep(i < 200 ? 50 : 2000); /* a long wait (a benchmark's idle peer) wakes rarely */
    }
    return 0;
}

int32_t tp_barrier(tp_world *w) {
    return w_barrier(w);
}

static int32_t w_allgather(void *c, const void *mine, void *all, size_t len) {
    tp_world *w = c;
    if (len > SLOT) {
        snprintf(last_err, sizeof last_err, "harness allgather: %zu bytes > %u", len, SLOT);
        return SYMM_ERR_INTERNAL;
    }
    memcpy(S->slots + (size_t)w->me * SLOT, mine, len);
    int32_t rc = w_barrier(w);
    if (rc) return rc;
    for (int32_t i = 0; i < w->n; i++) memcpy((char *)all + (size_t)i * len, S->slots + (size_t)i * SLOT, len);
    return w_barrier(w);
}

static int32_t w_check_failed(void *c) {
    (void)c;
    return news_mode && atomic_load(&S->dead) ? SYMM_ERR_PEER_FAILED : 0;
}

static int32_t w_set_error(void *c, int32_t status, const char *msg) {
    (void)c;
    snprintf(last_err, sizeof last_err, "%s", msg);
    return status;
}

static void w_log(void *c, int32_t level, const char *msg) {
    tp_world *w = c;
    if (level == 0 || getenv("SYMM_TP_VERBOSE")) fprintf(stderr, "[pe %d] %s\n", w->me, msg);
}

static const char *w_getenv(void *c, const char *name) {
    (void)c;
    return getenv(name);
}

/* What the runtime's core does (symm__boot_auth_mac): HMAC-SHA-256 under
 * the job key of (pe, 4 bytes little-endian | msg). */
void tp_world_mac(int32_t pe, const void *msg, size_t len, uint8_t mac[32]) {
    uint8_t who[4] = {(uint8_t)pe, (uint8_t)((uint32_t)pe >> 8), (uint8_t)((uint32_t)pe >> 16),
                      (uint8_t)((uint32_t)pe >> 24)};
    symm__hmac m;
    symm__hmac_init(&m, S->key, sizeof S->key);
    symm__hmac_update(&m, who, sizeof who);
    symm__hmac_update(&m, msg, len);
    symm__hmac_final(&m, mac);
}

static int32_t w_auth_mac(void *c, const void *msg, size_t len, uint8_t mac[32]) {
    tp_world_mac(((tp_world *)c)->me, msg, len, mac);
    return 0;
}

static int32_t w_auth_verify(void *c, int32_t pe, const void *msg, size_t len,
                             const uint8_t mac[32]) {
    if (pe < 0 || pe >= ((tp_world *)c)->n) return SYMM_ERR_BOOTSTRAP;
    uint8_t want[32];
    tp_world_mac(pe, msg, len, want);
    return symm__ct_equal(want, mac, 32) ? 0 : SYMM_ERR_BOOTSTRAP;
}

void tp_world_expect_death(tp_world *w) {
    atomic_store(&S->victim[w->me], 1);
}

uint64_t tp_world_death_ms(tp_world *w) {
    (void)w;
    return atomic_load(&S->death_ms);
}

static int child(const tp_world_opts *o, int32_t me, int (*fn)(tp_world *w)) {
    tp_world w;
    memset(&w, 0, sizeof w);
    w.me = me;
    w.n = o->n;
    w.loopback = (uint32_t)o->loopback;
    w.remote = calloc((size_t)o->n, 1);
    w.host_id = calloc((size_t)o->n, sizeof *w.host_id);
    int32_t per_host = o->n / o->hosts;
    for (int32_t i = 0; i < o->n; i++) w.host_id[i] = (uint64_t)(i / per_host);
    for (int32_t i = 0; i < o->n; i++) w.remote[i] = w.host_id[i] != w.host_id[me];
    w.core = (symm_tp_core){
        .size = sizeof(symm_tp_core), .iface = SYMM_TP_IFACE, .core = &w,
        .my_pe = me, .n_pes = o->n, .host_id = w.host_id, .remote = w.remote, .device = -1,
        .timeout_ms = 60000, .peer_timeout_ms = o->peer_timeout_ms,
        .allgather = w_allgather, .barrier = w_barrier, .check_failed = w_check_failed,
        .set_error = w_set_error, .log = w_log, .getenv = w_getenv,
        .auth_mac = w_auth_mac, .auth_verify = w_auth_verify};
    void *h = dlopen(o->plugin, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "[pe %d] cannot open plugin %s: %s\n", me, o->plugin, dlerror());
        return 1;
    }
    symm_tp_entry_fn entry;
    *(void **)&entry = dlsym(h, SYMM_TP_ENTRY);
    if (!entry || !(w.ops = entry(SYMM_TP_IFACE))) {
        fprintf(stderr, "[pe %d] %s has no usable %s\n", me, o->plugin, SYMM_TP_ENTRY);
        return 1;
    }
    char why[512] = {0};
    int32_t rc = w.ops->probe(&w.core, why, sizeof why);
    if (rc) {
        fprintf(stderr, "[pe %d] %s cannot run here (status %d): %s\n", me, w.ops->name, rc, why);
        return o->require ? 1 : 77;
    }
    return fn(&w);
}

int tp_world_run(const tp_world_opts *o, int (*fn)(tp_world *w)) {
    if (o->n < 1 || o->n > MAX_PES || o->hosts < 1 || o->n % o->hosts) {
        fprintf(stderr, "tp_world: need 1 <= n <= %d and hosts dividing n\n", MAX_PES);
        return 2;
    }
    size_t sz = sizeof(shm) + (size_t)o->n * SLOT;
    S = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) return 1;
    FILE *rnd = fopen("/dev/urandom", "rb");
    if (!rnd || fread(S->key, 1, sizeof S->key, rnd) != sizeof S->key) return 1;
    fclose(rnd);
    news_mode = o->news;
    pid_t pids[MAX_PES];
    fflush(NULL);
    for (int32_t i = 0; i < o->n; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            symm_bench_bind(i);
            int rc = child(o, i, fn);
            fflush(NULL);
            _exit(rc);
        }
    }
    int status_all = 0, skips = 0, left = o->n;
    uint64_t deadline = tp_now_ms() + 600000;
    while (left > 0) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p == 0) {
            if (tp_now_ms() > deadline) {
                fprintf(stderr, "tp_world: PEs still running after 600 s: killing them\n");
                for (int32_t i = 0; i < o->n; i++) if (pids[i] > 0) kill(pids[i], SIGKILL);
                status_all = 1;
                deadline = UINT64_MAX;
            }
            usleep(1000);
            continue;
        }
        if (p < 0) break;
        int32_t pe = -1;
        for (int32_t i = 0; i < o->n; i++) if (pids[i] == p) pe = i;
        if (pe < 0) continue;
        pids[pe] = -1;
        left--;
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
            skips++;
            continue;
        }
        if (!ok) {
            uint64_t zero = 0;
            atomic_compare_exchange_strong(&S->death_ms, &zero, tp_now_ms());
            atomic_store(&S->dead, 1);
            if (atomic_load(&S->victim[pe]) && WIFSIGNALED(st)) {
                fprintf(stderr, "tp_world: PE %d died as planned (signal %d)\n", pe, WTERMSIG(st));
                continue;
            }
            if (WIFSIGNALED(st))
                fprintf(stderr, "tp_world: PE %d was killed by signal %d\n", pe, WTERMSIG(st));
            else
                fprintf(stderr, "tp_world: PE %d exited %d\n", pe, WEXITSTATUS(st));
            status_all = 1;
        }
    }
    if (status_all) return 1;
    return skips == o->n ? 77 : (skips ? 1 : 0);
}

/*
 * Transport plugins: lookup, agreement, open, memory registration.
 *
 * Only a job whose PEs span several hosts opens one; a single-host job never
 * calls dlopen. SYMM_TRANSPORT picks: auto (default: the registry's order,
 * the first whose plugin loads and whose probe passes), none, or a name.
 * libsymm_transport_<name>.so is looked up in SYMM_TRANSPORT_PATH (a ':'
 * list of folders), then beside the runtime, then in the runtime's
 * transports/<name>/ folder (the build tree). Every PE must pick the same
 * one: the choice is agreed through the bootstrap like the backend's.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tp.h"
#include "transports/amo_cpu.h"
#include "tp_path.h"

/* ---- services for the plugin ---- */

/* The transport whose collective entry (mem_add) this thread is in, holding
 * its lock. The bootstrap services let other threads' calls into the plugin
 * while they wait for the other PEs: a proxy thread must not wait for an
 * application thread's collective, whose peers may themselves wait for that
 * proxy (a peer's heap growth behind its stream's queued barrier;
 * transport.h, "Thread safety"). */
static _Thread_local struct symm__tp *tls_in_collective;

static struct symm__tp *collective_unlock(symm__ctx *ctx) {
    struct symm__tp *tp = tls_in_collective;
    if (!tp || tp != ctx->tp) return NULL;
    pthread_mutex_unlock(&tp->lock);
    return tp;
}
static void collective_relock(struct symm__tp *tp) {
    if (tp) pthread_mutex_lock(&tp->lock);
}
static int32_t svc_allgather(void *c, const void *mine, void *all, size_t len) {
    struct symm__tp *held = collective_unlock(c);
    int32_t st = symm__boot_allgather(((symm__ctx *)c)->boot, mine, all, len);
    collective_relock(held);
    return st;
}
static int32_t svc_barrier(void *c) {
    struct symm__tp *held = collective_unlock(c);
    int32_t st = symm__boot_barrier(((symm__ctx *)c)->boot);
    collective_relock(held);
    return st;
}
static int32_t svc_check_failed(void *c) {
    symm__ctx *ctx = c;
    return atomic_load_explicit(&ctx->failed, memory_order_relaxed) ||
                   (ctx->boot && symm__boot_check(ctx->boot) != SYMM_SUCCESS)
               ? SYMM_ERR_PEER_FAILED
               : SYMM_SUCCESS;
}
static int32_t svc_set_error(void *c, int32_t status, const char *msg) {
    (void)c;
    return symm__err((symm_status)status, "%s", msg);
}
static void svc_log(void *c, int32_t level, const char *msg) {
    symm__ctx *ctx = c;
    char line[1024];
    snprintf(line, sizeof line, "%s: %s", ctx->tp ? ctx->tp->name : "?", msg);
    symm__log_transport(c, level, line);
}
static const char *svc_getenv(void *c, const char *name) {
    (void)c;
    return getenv(name);
}
/* Handshake proofs: the job key stays in the bootstrap object. */
static int32_t svc_auth_mac(void *c, const void *msg, size_t len, uint8_t mac[32]) {
    symm__ctx *ctx = c;
    symm__boot_auth_mac(ctx->boot, ctx->my_pe, msg, len, mac);
    return SYMM_SUCCESS;
}
static int32_t svc_auth_verify(void *c, int32_t pe, const void *msg, size_t len,
                               const uint8_t mac[32]) {
    symm__ctx *ctx = c;
    if (pe < 0 || pe >= ctx->n_pes) return SYMM_ERR_BOOTSTRAP;
    return symm__boot_auth_verify(ctx->boot, pe, msg, len, mac) ? SYMM_SUCCESS
                                                                  : SYMM_ERR_BOOTSTRAP;
}

/* ---- the GPU-memory service (transport.h, interface 3) ----
 * The backend's service when it has one (tp_gpu_open), else host memory:
 * memmove and CPU atomics (a device backend without the service: its
 * local_copy, and no atomics on its memory). */
static const symm__tp_gpu *gpu_of(void *c) {
    struct symm__tp *tp = ((symm__ctx *)c)->tp;
    return tp && tp->gpu.copy ? &tp->gpu : NULL;
}
static uint32_t svc_mem_kind(void *c, const void *p) {
    const symm__ctx *ctx = c;
    const symm__tp_gpu *g = gpu_of(c);
    if (!p || (!g && !ctx->ops->has_device)) return SYMM_TP_MEM_HOST;
    const uint8_t *b = p;
    if (ctx->heap_base && b >= ctx->heap_base && (uint64_t)(b - ctx->heap_base) < ctx->heap_cap)
        return !g || g->heap_is_gpu ? SYMM_TP_MEM_CUDA : SYMM_TP_MEM_HOST;
    if (!g) return ctx->ops->is_device_mem && ctx->ops->is_device_mem((symm__ctx *)ctx, p)
                       ? SYMM_TP_MEM_CUDA : SYMM_TP_MEM_HOST;
    return g->is_gpu && g->is_gpu(g->state, p) ? SYMM_TP_MEM_CUDA : SYMM_TP_MEM_HOST;
}
static int32_t svc_mem_copy(void *c, void *dst, const void *src, uint64_t n) {
    return symm__tp_mem_copy(c, dst, src, n);
}
symm_status symm__tp_mem_copy(symm__ctx *ctx, void *dst, const void *src, uint64_t n) {
    const symm__tp_gpu *g = gpu_of(ctx);
    if (!n) return SYMM_SUCCESS;
    if (g) return g->copy(g->state, dst, src, n);
    if (ctx->ops->has_device) {
        if (!ctx->ops->local_copy)
            return symm__err(SYMM_ERR_NOT_SUPPORTED, "transport: the %s backend offers no copy "
                             "of GPU memory", ctx->ops->name);
        return ctx->ops->local_copy(ctx, dst, src, n);
    }
    memmove(dst, src, n);
    return SYMM_SUCCESS;
}
static int32_t svc_mem_atomic(void *c, void *addr, uint32_t dtype, uint32_t op, uint64_t value,
                              uint64_t compare, uint64_t *fetched) {
    const symm__tp_gpu *g = gpu_of(c);
    bool is_float = dtype == SYMM_DTYPE_FLOAT32 || dtype == SYMM_DTYPE_FLOAT64;
    if (!symm__amo_size(dtype) || op > SYMM_AMO_XOR ||
        (is_float && op != SYMM_AMO_FETCH && op != SYMM_AMO_SET && op != SYMM_AMO_SWAP &&
         op != SYMM_AMO_COMPARE_SWAP))
        return symm__err(SYMM_ERR_INVALID_ARG, "transport: atomic op %u on dtype %u", op, dtype);
    if (g) return g->atomic(g->state, addr, dtype, op, value, compare, fetched);
    if (((symm__ctx *)c)->ops->has_device)
        return symm__err(SYMM_ERR_NOT_SUPPORTED, "transport: the %s backend offers no atomics "
                         "on GPU memory for transports", ((symm__ctx *)c)->ops->name);
    uint64_t old = 0;
    if (symm__amo_cpu(addr, dtype, op, value, compare, &old) != 0)
        return symm__err(SYMM_ERR_INVALID_ARG, "atomic op %u on dtype %u", op, dtype);
    if (fetched) *fetched = old;
    return SYMM_SUCCESS;
}

/* Open the backend's service once, before the first range is registered
 * (the heap exists then and no user kernel runs yet). */
static symm_status gpu_open(symm__ctx *ctx, struct symm__tp *tp) {
    if (tp->gpu_opened) return SYMM_SUCCESS;
    tp->gpu_opened = true;
    memset(&tp->gpu, 0, sizeof tp->gpu);
    if (!ctx->ops->tp_gpu_open) return SYMM_SUCCESS;
    symm_status st = ctx->ops->tp_gpu_open(ctx, &tp->gpu);
    if (st) memset(&tp->gpu, 0, sizeof tp->gpu);
    return st;
}

static void gpu_close(struct symm__tp *tp) {
    if (tp->gpu.copy && tp->gpu.close) tp->gpu.close(tp->gpu.state);
    memset(&tp->gpu, 0, sizeof tp->gpu);
}

/* ---- lookup ---- */

static void appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t cap, const char *fmt, ...) {
    size_t len = strlen(buf);
    if (len + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, cap - len, fmt, ap);
    va_end(ap);
}

/* The folder of the runtime's own file (dladdr), "" when unknown. */
static void runtime_dir(char *out, size_t cap) {
    static const char anchor = 0;
    Dl_info di;
    out[0] = '\0';
    if (dladdr(&anchor, &di) && di.dli_fname) {
        const char *slash = strrchr(di.dli_fname, '/');
        if (slash) snprintf(out, cap, "%.*s", (int)(slash - di.dli_fname), di.dli_fname);
    }
}

/* Find name's plugin file (the search order of tp_path.h): 0 and *path, or -1
 * with the folders searched in why. */
static int find_plugin(const char *name, char *path, size_t cap, char *why, size_t why_cap) {
    char dirs[4096], rt[PATH_MAX];
    runtime_dir(rt, sizeof rt);
    symm__tp_plugin_dirs(rt, name, dirs, sizeof dirs);
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(path, cap, "%s/libsymm_transport_%s.so", d, name);
        if (access(path, F_OK) == 0) return 0;
        appendf(why, why_cap, "%s%s", why[0] ? ", " : "", d);
    }
    return -1;
}

/* Load and probe one plugin: its ops (dl kept open) or NULL + why. */
static const symm_tp_ops *load(const char *name, const symm_tp_core *core, void **dl_out,
                               char *why, size_t cap) {
    char path[PATH_MAX + 64], where[2048] = "";
    why[0] = '\0';
    if (find_plugin(name, path, sizeof path, where, sizeof where) != 0) {
        appendf(why, cap, "no libsymm_transport_%s.so in %s (set SYMM_TRANSPORT_PATH)", name,
                 where[0] ? where : "any folder");
        return NULL;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        appendf(why, cap, "cannot load %s: %s", path, e ? e : "unknown error");
        return NULL;
    }
    union { void *p; symm_tp_entry_fn f; } sym = {dlsym(dl, SYMM_TP_ENTRY)};
    symm_tp_entry_fn entry = sym.f;
    const symm_tp_ops *ops = entry ? entry(SYMM_TP_IFACE) : NULL;
    const size_t need = offsetof(symm_tp_ops, quiet) + sizeof ops->quiet;
    if (!entry) {
        appendf(why, cap, "%s has no %s symbol", path, SYMM_TP_ENTRY);
    } else if (!ops) {
        appendf(why, cap, "%s refuses transport interface %u", path, SYMM_TP_IFACE);
    } else if (ops->size < need || ops->iface < 1 || ops->iface > SYMM_TP_IFACE || !ops->probe ||
               !ops->open || !ops->mem_add || !ops->put || !ops->get || !ops->atomic ||
               !ops->put_signal || !ops->fence || !ops->quiet) {
        appendf(why, cap, "%s has a malformed ops table (size %u, interface %u)", path,
                 ops->size, ops->iface);
    } else {
        char pwhy[512] = "";
        int32_t st = ops->probe(core, pwhy, sizeof pwhy);
        if (st == SYMM_SUCCESS) {
            *dl_out = dl;
            return ops;
        }
        appendf(why, cap, "probe: %s (%s)", pwhy[0] ? pwhy : "not usable", symm__status_name(st));
    }
    dlclose(dl);
    return NULL;
}

/* ---- open ---- */

static void tp_free(struct symm__tp *tp) {
    if (!tp) return;
    if (tp->dl) dlclose(tp->dl);
    pthread_mutex_destroy(&tp->lock);
    free(tp);
}

static symm_status open_instance(symm__ctx *ctx, struct symm__tp *tp, uint32_t loopback) {
    memset(&tp->info, 0, sizeof tp->info);
    tp->info.size = sizeof tp->info;
    tp->state = NULL;
    symm_status st = (symm_status)tp->ops->open(&tp->core, loopback, &tp->state, &tp->info);
    if (st) return symm__err_prefix("symm_init: transport open", st);
    (void)ctx;
    return SYMM_SUCCESS;
}

/* This PE's choice (SYMM_TRANSPORT): the plugin loaded into tp, or a status.
 * tried receives each plugin skipped and why. */
static symm_status tp_choose(symm__ctx *ctx, struct symm__tp *tp, const char *want,
                             const char *const *names, size_t n_names, char *tried,
                             size_t tried_cap) {
    if (strcmp(want, "none") == 0) {
        snprintf(tried, tried_cap, "transports are turned off");
    } else if (strlen(want) >= sizeof tp->name || strchr(want, '/')) {
        char known[256] = "";
        for (size_t i = 0; i < n_names; i++)
            appendf(known, sizeof known, "%s%s", i ? ", " : "", names[i]);
        return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_TRANSPORT=\"%s\": expected auto, none or a "
                         "transport name (%s)", want, known);
    } else {
        bool any = strcmp(want, "auto") == 0;
        for (size_t i = 0; i < (any ? n_names : 1) && !tp->ops; i++) {
            const char *name = any ? names[i] : want;
            char why[1024] = "";
            tp->ops = load(name, &tp->core, &tp->dl, why, sizeof why);
            if (tp->ops) snprintf(tp->name, sizeof tp->name, "%s", name);
            else appendf(tried, tried_cap, "%s%s: %s", tried[0] ? "; " : "", name, why);
        }
    }
    if (tp->ops) return SYMM_SUCCESS;
    return symm__err(SYMM_ERR_NOT_SUPPORTED,
                     "symm_init: PE %d has %d PE(s) on other hosts (the job spans %d hosts) and no "
                     "usable transport (SYMM_TRANSPORT=%s; %s)",
                     ctx->my_pe, ctx->n_remote, ctx->n_hosts, want, tried);
}

/* Collective: every PE must pick the same transport; st is this PE's own
 * outcome (its message is the last error). */
static symm_status tp_agree(symm__ctx *ctx, const struct symm__tp *tp, symm_status st) {
    struct { char name[32]; int32_t st; } mine, *all = calloc((size_t)ctx->n_pes, sizeof mine);
    memset(&mine, 0, sizeof mine);
    snprintf(mine.name, sizeof mine.name, "%s", tp->name);
    mine.st = st;
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", symm__last_error());
    symm_status gst = all ? symm__boot_allgather(ctx->boot, &mine, all, sizeof mine)
                          : symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    if (gst) {
        st = gst;
    } else if (st) {
        symm__err(st, "%s", saved); /* my own reason first */
    } else {
        for (int32_t pe = 0; pe < ctx->n_pes && st == SYMM_SUCCESS; pe++) {
            if (all[pe].st)
                st = symm__err((symm_status)all[pe].st,
                               "symm_init: PE %d has no usable transport for the other hosts", pe);
            else if (strncmp(all[pe].name, mine.name, sizeof mine.name) != 0)
                st = symm__err(SYMM_ERR_MISMATCH,
                               "symm_init: PEs chose different transports (PE %d: %s, PE %d: "
                               "%.31s); set SYMM_TRANSPORT", ctx->my_pe, mine.name, pe, all[pe].name);
        }
    }
    free(all);
    return st;
}

/* Collective: open the instance; when the job's capabilities (the weakest
 * PE decides) leave atomics racing with the CPU's, reopen it with loopback
 * so that every atomic update goes through it. */
static symm_status tp_open_for_job(symm__ctx *ctx, struct symm__tp *tp) {
    SYMM_TRY(open_instance(ctx, tp, 0));
    uint32_t caps = tp->info.caps, *all_caps = calloc((size_t)ctx->n_pes, sizeof caps);
    symm_status st = all_caps ? symm__boot_allgather(ctx->boot, &caps, all_caps, sizeof caps)
                              : symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    for (int32_t pe = 0; st == SYMM_SUCCESS && pe < ctx->n_pes; pe++) caps &= all_caps[pe];
    free(all_caps);
    SYMM_TRY(st);
    caps = symm__tp_job_caps(ctx, caps);
    if (caps & SYMM_TP_CAP_ATOMIC_GLOBAL) return SYMM_SUCCESS;
    if (!(caps & SYMM_TP_CAP_LOOPBACK))
        return symm__err(SYMM_ERR_NOT_SUPPORTED,
                         "symm_init: transport %s (%s): its atomics are not atomic with CPU "
                         "atomics and it cannot reach this host's PEs (loopback), so atomics "
                         "of different hosts on one word would race", tp->name, tp->info.device);
    if (tp->ops->close) tp->ops->close(tp->state);
    tp->state = NULL;
    ctx->amo_tp = true;
    return open_instance(ctx, tp, 1);
}

symm_status symm__tp_open(symm__ctx *ctx, const char *const *names, size_t n_names) {
    if (ctx->n_hosts <= 1) return SYMM_SUCCESS;
    struct symm__tp *tp = calloc(1, sizeof *tp);
    if (!tp) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_init: out of host memory");
    pthread_mutex_init(&tp->lock, NULL);
    tp->core = (symm_tp_core){
        .size = sizeof tp->core, .iface = SYMM_TP_IFACE, .core = ctx,
        .my_pe = ctx->my_pe, .n_pes = ctx->n_pes,
        .host_id = ctx->boot_info.host_id, .remote = ctx->remote,
        .device = ctx->ops->has_device ? ctx->cfg.device : -1,
        .timeout_ms = ctx->cfg.timeout_ms, .peer_timeout_ms = ctx->cfg.peer_timeout_ms,
        .allgather = svc_allgather, .barrier = svc_barrier, .check_failed = svc_check_failed,
        .set_error = svc_set_error, .log = svc_log, .getenv = svc_getenv,
        .auth_mac = svc_auth_mac, .auth_verify = svc_auth_verify,
        .mem_kind = svc_mem_kind, .mem_copy = svc_mem_copy, .mem_atomic = svc_mem_atomic,
    };
    const char *want = getenv("SYMM_TRANSPORT");
    if (!want || !*want) want = "auto";
    char tried[2048] = "";
    symm_status st = tp_choose(ctx, tp, want, names, n_names, tried, sizeof tried);
    st = tp_agree(ctx, tp, st);
    if (st) {
        tp_free(tp);
        return st;
    }
    ctx->tp = tp;
    st = tp_open_for_job(ctx, tp);
    if (st) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", symm__last_error());
        symm__tp_close(ctx);
        return symm__err(st, "%s", msg);
    }
    SYMM_INFO(SYMM_LOG_TRANSPORT, "%s opened on %s (caps 0x%x%s); chosen by SYMM_TRANSPORT=%s%s%s",
              tp->name, tp->info.device, tp->info.caps,
              ctx->amo_tp ? ", every atomic update through the transport" : "", want,
              tried[0] ? "; skipped: " : "", tried);
    return SYMM_SUCCESS;
}

/* The caps the core may rely on. ATOMIC_GLOBAL means NIC atomics are atomic
 * with the CPU's; a GPU heap is updated by the GPU's atomics (the backend's
 * atomic kernel), which no NIC claims to be atomic with, so with a device
 * backend every atomic update goes through the transport as for ATOMIC_HCA. */
uint32_t symm__tp_job_caps(const symm__ctx *ctx, uint32_t caps) {
    if (!ctx->ops->nic_coherent_atomics) caps &= ~SYMM_TP_CAP_ATOMIC_GLOBAL;
    return caps;
}

symm_status symm__tp_mem_add(symm__ctx *ctx, void *base, uint64_t off, uint64_t len) {
    struct symm__tp *tp = ctx->tp;
    if (!tp || !tp->state) return SYMM_SUCCESS;
    SYMM_TRY(gpu_open(ctx, tp));
    bool gpu = ctx->ops->has_device || (tp->gpu.copy && tp->gpu.heap_is_gpu);
    uint32_t kind = gpu ? SYMM_TP_MEM_CUDA : SYMM_TP_MEM_HOST;
    /* GPU memory: a dma-buf of the range when the backend can export one
     * (cuMemGetHandleForAddressRange); the plugin dups what it keeps. */
    int fd = kind == SYMM_TP_MEM_CUDA && ctx->ops->dmabuf_fd ? ctx->ops->dmabuf_fd(ctx, off, len) : -1;
    /* A staging transport reaches the range through the service only: it
     * gets the address the service knows it by. */
    if (tp->gpu.copy && tp->gpu.view) base = tp->gpu.view(tp->gpu.state, base);
    pthread_mutex_lock(&tp->lock);
    tls_in_collective = tp;
    int32_t st = tp->ops->mem_add(tp->state, base, off, len, kind, fd);
    tls_in_collective = NULL;
    pthread_mutex_unlock(&tp->lock);
    if (fd >= 0) close(fd);
    if (st == SYMM_ERR_PEER_FAILED) symm__mark_failed(ctx);
    if (st) return symm__err_prefix(tp->name, (symm_status)st);
    return SYMM_SUCCESS;
}

void symm__tp_mem_remove(symm__ctx *ctx, uint64_t off, uint64_t len) {
    struct symm__tp *tp = ctx->tp;
    if (!tp || !tp->state || !tp->ops->mem_remove) return;
    pthread_mutex_lock(&tp->lock);
    tp->ops->mem_remove(tp->state, off, len);
    pthread_mutex_unlock(&tp->lock);
}

void symm__tp_peer_failed(symm__ctx *ctx) {
    struct symm__tp *tp = ctx->tp;
    if (tp && tp->state && tp->ops->peer_failed) tp->ops->peer_failed(tp->state);
}

void symm__tp_close(symm__ctx *ctx) {
    struct symm__tp *tp = ctx->tp;
    if (!tp) return;
    if (tp->state && tp->ops->close) tp->ops->close(tp->state);
    gpu_close(tp); /* after the plugin's threads are gone, before the heap goes */
    ctx->tp = NULL;
    tp_free(tp);
}

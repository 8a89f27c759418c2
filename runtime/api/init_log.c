/* The INFO block of symm_init: what this PE chose and why. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/names.h"
#include "internal.h"

/* Set by symm_runtime_negotiate (dispatch.c). */
uint32_t symm__loader_abi_major, symm__loader_abi_minor;

static const char *size_text(uint64_t b, char *buf, size_t cap) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, u++;
    snprintf(buf, cap, "%llu %s", (unsigned long long)b, units[u]);
    return buf;
}

static const char *from_env(const char *name) {
    return getenv(name) ? "env" : "default";
}

/* Where a value came from: the init attributes win over the environment. */
static const char *source(bool attr, const char *name) {
    return attr ? "init attributes" : from_env(name);
}

/* The NVIDIA kernel driver's release ("580.95.05"), or "" (sysfs). */
static void nvidia_driver(char *buf, size_t cap) {
    buf[0] = '\0';
    int fd = open("/sys/module/nvidia/version", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

static void version_text(uint32_t v, char *buf, size_t cap) {
    snprintf(buf, cap, "%u.%u.%u", v / 1000000u, v / 1000u % 1000u, v % 1000u);
}

/* Versions and files: the runtime knows itself; the loader, when the
 * program reached us through it, is found by its exported symbol. */
static void log_versions(void) {
    char a[32], b[32];
    Dl_info self;
    memset(&self, 0, sizeof self);
    const char *rt_path = dladdr((const void *)&symm__loader_abi_major, &self) && self.dli_fname
                              ? self.dli_fname : "?";
    version_text(SYMM_VERSION, a, sizeof a);
    char loader[640] = "not in this process (runtime linked directly)";
    void *sym = dlsym(RTLD_DEFAULT, "symm_loader_get_version");
    if (sym) {
        symm_status (*get)(uint32_t *);
        memcpy(&get, &sym, sizeof get);
        uint32_t lv = 0;
        Dl_info li;
        memset(&li, 0, sizeof li);
        if (get(&lv) == SYMM_SUCCESS) version_text(lv, b, sizeof b);
        else snprintf(b, sizeof b, "?");
        snprintf(loader, sizeof loader, "%s at %s", b,
                 dladdr(sym, &li) && li.dli_fname ? li.dli_fname : "?");
    }
    SYMM_INFO(SYMM_LOG_INIT, "symm runtime %s (ABI %d.%d) at %s; loader %s, negotiated ABI %u.%u",
              a, SYMM_ABI_MAJOR, SYMM_ABI_MINOR, rt_path, loader, symm__loader_abi_major,
              symm__loader_abi_minor);
}

/* The backend and why it was chosen. */
static void log_backend(symm__ctx *ctx) {
    const char *env_backend = getenv("SYMM_BACKEND");
    uint32_t want = ctx->cfg.backend;
    char why[600];
    if (want != SYMM_BACKEND_AUTO) {
        snprintf(why, sizeof why, "requested %s (%s)", symm__backend_const_name(want),
                 env_backend && strcasecmp(env_backend, "auto") != 0 ? "SYMM_BACKEND" : "init attributes");
    } else if (ctx->backend_why[0]) {
        snprintf(why, sizeof why, "auto: %s", ctx->backend_why);
    } else {
        snprintf(why, sizeof why, "auto: the first usable backend of this runtime's registry");
    }
    SYMM_INFO(SYMM_LOG_INIT, "backend %s (%s)", ctx->ops->name, why);
    if (ctx->ops->describe) {
        char desc[768] = "", drv[64];
        ctx->ops->describe(ctx, desc, sizeof desc);
        nvidia_driver(drv, sizeof drv);
        if (desc[0])
            SYMM_INFO(SYMM_LOG_INIT, "%s: %s%s%s", ctx->ops->name, desc,
                      drv[0] ? "; NVIDIA driver " : "", drv);
    }

}

void symm__log_init_summary(symm__ctx *ctx) {
    symm__log_set_pe(ctx->my_pe);
    if (!symm__log_on(SYMM_LOG_INFO, SYMM_LOG_INIT)) return;
    static const char *const boots[] = {"auto", "env", "uid", "single"};
    static const char *const threads[] = {"SINGLE", "FUNNELED", "SERIALIZED", "MULTIPLE"};
    char a[32], b[32], c[32], d[32];
    log_versions();
    log_backend(ctx);

    /* Where the PEs are. */
    int32_t hosts = 0;
    const uint64_t *hid = ctx->boot_info.host_id;
    for (int32_t i = 0; hid && i < ctx->n_pes; i++) {
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; j++) seen = hid[j] == hid[i];
        hosts += !seen;
    }
    const char *launcher = getenv("SYMM_LAUNCHER");
    uint32_t boot = ctx->cfg.bootstrap <= SYMM_BOOTSTRAP_SINGLE ? ctx->cfg.bootstrap : 0;
    SYMM_INFO(SYMM_LOG_INIT,
              "PE %d of %d on host %s (host id %016llx), local PE %d of %d, %d host(s) in the job; "
              "bootstrap %s%s%s",
              ctx->my_pe, ctx->n_pes, symm__log_host(),
              (unsigned long long)(hid ? hid[ctx->my_pe] : 0), ctx->local_pe, ctx->local_n_pes,
              hosts ? hosts : 1, boots[boot], launcher ? ", launcher " : "", launcher ? launcher : "");

    /* Heap, threads, timeouts. */
    SYMM_INFO(SYMM_LOG_INIT,
              "heap cap %s (%s), chunk %s (%s), system area %s, backed %s; thread level %s; "
              "SYMM_TIMEOUT_MS %u (%s), SYMM_PEER_TIMEOUT_MS %u (%s)",
              size_text(ctx->heap_cap, a, sizeof a), source(ctx->cfg.heap_cap_attr, "SYMM_HEAP_CAP"),
              size_text(ctx->cfg.heap_chunk, b, sizeof b), from_env("SYMM_HEAP_CHUNK"),
              size_text(ctx->sys_bytes, c, sizeof c), size_text(ctx->heap_mapped, d, sizeof d),
              ctx->thread_level <= SYMM_THREAD_MULTIPLE ? threads[ctx->thread_level] : "?",
              ctx->cfg.timeout_ms, source(ctx->cfg.timeout_attr, "SYMM_TIMEOUT_MS"),
              ctx->cfg.peer_timeout_ms,
              from_env("SYMM_PEER_TIMEOUT_MS"));
    if (!ctx->tp)
        SYMM_INFO(SYMM_LOG_INIT, "transport: none (every PE is reached through the %s backend)",
                  ctx->ops->name);
    else
        SYMM_INFO(SYMM_LOG_INIT, "transport: %d of %d PEs are on other hosts (transport line above)",
                  ctx->n_remote, ctx->n_pes);
}

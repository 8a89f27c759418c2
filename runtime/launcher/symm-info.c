/*
 * symm-info: what symm finds on this machine, without starting a job.
 *
 *   symm-info [--json] [--help] [--version]   (man/symm-info.txt: options, --help, man page)
 *
 * Reports the loader and the runtime it opens (paths, versions, ABI), the
 * backends and transports (compiled in, usable here: GPUs with compute
 * capability and the peer-access matrix; RDMA devices with ports, link layers
 * and GIDs), and the effective configuration from the environment, parsed by
 * the runtime's own config.c so it cannot drift. --json: the same as one
 * JSON object.
 *
 * Links the loader like an application; compiles in config.c (the parser),
 * error.c and, with CUDA, cuda_driver.c (libcuda opened with dlopen, as the
 * runtime does). libibverbs is opened with dlopen when present.
 *
 * Exit status: 0 when symm is usable here (a runtime was loaded and the
 * configuration parses), 1 when it is not (the report says why), 2 on a
 * usage error.
 */
#include <dlfcn.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "tp_path.h"
#include "runtime_beside.h"
#include "symm_info_usage.h" /* generated from man/symm-info.txt, as is symm-info.1 */
#include "transports/registry.h"
#include "transports/transport.h"
#ifdef SYMM_INFO_HAVE_CUDA
#include "cuda_driver.h"
#endif
#ifdef SYMM_INFO_HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

extern char **environ;

/* ---- a tiny JSON / text emitter ----------------------------------------- */

static bool json;
static int depth;
static bool need_comma[32];

static void jstr(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p == '\n') fputs("\\n", stdout);
        else if (*p == '\t') fputs("\\t", stdout);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

static void jkey(const char *key) {
    if (need_comma[depth]) putchar(',');
    need_comma[depth] = true;
    putchar('\n');
    for (int i = 0; i < depth; i++) fputs("  ", stdout);
    if (key) {
        jstr(key);
        fputs(": ", stdout);
    }
}
static void jopen(const char *key, char c) {
    jkey(key);
    putchar(c);
    need_comma[++depth] = false;
}
static void jclose(char c) {
    bool had = need_comma[depth];
    depth--;
    if (had) {
        putchar('\n');
        for (int i = 0; i < depth; i++) fputs("  ", stdout);
    }
    putchar(c);
}
static void jfield_s(const char *key, const char *v) {
    jkey(key);
    if (v) jstr(v);
    else fputs("null", stdout);
}
static void jfield_b(const char *key, bool v) {
    jkey(key);
    fputs(v ? "true" : "false", stdout);
}
static void jfield_i(const char *key, long long v) {
    jkey(key);
    printf("%lld", v);
}

static void version_text(uint32_t v, char *buf, size_t cap) {
    snprintf(buf, cap, "%u.%u.%u", v / 1000000u, v / 1000u % 1000u, v % 1000u);
}

/* ---- loader and runtime -------------------------------------------------- */

typedef struct report {
    bool runtime_ok, config_ok;
} report;

static void loader_runtime(report *r) {
    char lv[32] = "?", rv[32] = "?", hv[32];
    uint32_t v = 0;
    if (symm_loader_get_version(&v) == SYMM_SUCCESS) version_text(v, lv, sizeof lv);
    version_text(SYMM_VERSION, hv, sizeof hv);
    Dl_info li;
    memset(&li, 0, sizeof li);
    void *sym = dlsym(RTLD_DEFAULT, "symm_loader_get_version");
    const char *lpath = sym && dladdr(sym, &li) && li.dli_fname ? li.dli_fname : "?";
    symm_status st = symm_loader_probe();
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", st ? symm_last_error() : "");
    r->runtime_ok = st == SYMM_SUCCESS;
    if (r->runtime_ok && symm_get_version(&v) == SYMM_SUCCESS) version_text(v, rv, sizeof rv);
    const char *rpath = r->runtime_ok ? symm_loader_runtime_path() : NULL;
    const char *env_rt = getenv("SYMM_RUNTIME");
    char abi[16];
    snprintf(abi, sizeof abi, "%d.%d", SYMM_ABI_MAJOR, SYMM_ABI_MINOR);
    if (json) {
        jfield_s("symm_info_version", hv);
        jopen("loader", '{');
        jfield_s("path", lpath);
        jfield_s("version", lv);
        jfield_s("abi", abi);
        jclose('}');
        jopen("runtime", '{');
        jfield_b("found", r->runtime_ok);
        jfield_s("status", symm_status_string(st));
        jfield_s("path", rpath);
        jfield_s("version", r->runtime_ok ? rv : NULL);
        jfield_s("abi", r->runtime_ok ? abi : NULL); /* it accepted the loader's ABI at load */
        jfield_s("requested", env_rt);
        jfield_s("message", st ? msg : "");
        jclose('}');
        return;
    }
    printf("symm %s (this symm-info)\n\n", hv);
    printf("Loader   %s\n         version %s, ABI %d.%d\n", lpath, lv, SYMM_ABI_MAJOR,
           SYMM_ABI_MINOR);
    if (r->runtime_ok)
        printf("Runtime  %s\n         version %s, ABI %d.%d%s\n", rpath, rv, SYMM_ABI_MAJOR,
               SYMM_ABI_MINOR, env_rt ? " (from SYMM_RUNTIME)" : "");
    else
        printf("Runtime  NOT USABLE: %s\n         %s\n", symm_status_string(st), msg);
}

/* ---- backends ------------------------------------------------------------ */

typedef struct gpu {
    char name[128];
    int cc_major, cc_minor, sms, vmm, fd;
    size_t mem;
} gpu;

/* What the CUDA backend would find here. */
typedef struct cuda_report {
    bool compiled, ok;
    char why[512];
    char drv[32];  /* CUDA driver API version            */
    char kdrv[64]; /* the NVIDIA kernel driver's release */
    gpu gpus[64];
    int n;
    int access[64][64];
} cuda_report;

#ifdef SYMM_INFO_HAVE_CUDA
static void cuda_gpus(cuda_report *r, int count) {
    r->n = count < 64 ? count : 64;
    CUdevice dev[64];
    for (int i = 0; i < r->n; i++) {
        gpu *g = &r->gpus[i];
        memset(g, 0, sizeof *g);
        symm__cu.DeviceGet(&dev[i], i);
        symm__cu.DeviceGetName(g->name, (int)sizeof g->name, dev[i]);
        symm__cu.DeviceGetAttribute(&g->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev[i]);
        symm__cu.DeviceGetAttribute(&g->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev[i]);
        symm__cu.DeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev[i]);
        symm__cu.DeviceGetAttribute(&g->vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev[i]);
        symm__cu.DeviceGetAttribute(&g->fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev[i]);
    }
    int usable = 0;
    for (int i = 0; i < r->n; i++) {
        usable += r->gpus[i].vmm && r->gpus[i].fd;
        for (int j = 0; j < r->n; j++) {
            int can = i == j;
            if (i != j) symm__cu.DeviceCanAccessPeer(&can, dev[i], dev[j]);
            r->access[i][j] = can;
        }
    }
    r->ok = usable > 0;
    snprintf(r->why, sizeof r->why, "%d GPU(s), %d with VMM and POSIX fd handles; "
             "CUDA driver API %s%s%s", r->n, usable, r->drv, r->kdrv[0] ? ", NVIDIA driver " : "",
             r->kdrv);
}
#endif

static void cuda_probe(cuda_report *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->why, sizeof r->why, "this build has no CUDA backend (built without it: "
             "-Dcuda=disabled, or no nvcc/cuda.h)");
    /* The NVIDIA kernel driver's release (e.g. 580.95.05), beside the CUDA
     * driver API version libcuda reports. */
    FILE *kf = fopen("/sys/module/nvidia/version", "r");
    if (kf) {
        if (!fgets(r->kdrv, sizeof r->kdrv, kf)) r->kdrv[0] = '\0';
        fclose(kf);
        r->kdrv[strcspn(r->kdrv, "\n")] = '\0';
    }
#ifdef SYMM_INFO_HAVE_CUDA
    r->compiled = true;
    if (symm__cu_load() != SYMM_SUCCESS) {
        snprintf(r->why, sizeof r->why, "%s", symm__last_error());
        return;
    }
    int count = 0;
    snprintf(r->drv, sizeof r->drv, "%d.%d", symm__cu.driver_version / 1000,
             symm__cu.driver_version % 1000 / 10);
    if (symm__cu.DeviceGetCount(&count) != CUDA_SUCCESS || count < 1)
        snprintf(r->why, sizeof r->why, "the CUDA driver %s sees no GPU", r->drv);
    else
        cuda_gpus(r, count);
#endif
}

static void backends_json(bool host_ok, const char *host_why, const cuda_report *r) {
    jopen("backends", '[');
    jopen(NULL, '{');
    jfield_s("name", "host");
    jfield_b("compiled", true);
    jfield_b("usable", host_ok);
    jfield_s("detail", host_why);
    jclose('}');
    jopen(NULL, '{');
    jfield_s("name", "cuda");
    jfield_b("compiled", r->compiled);
    jfield_b("usable", r->ok);
    jfield_s("detail", r->why);
    jfield_s("driver_version", r->drv[0] ? r->drv : NULL);
    jfield_s("nvidia_driver", r->kdrv[0] ? r->kdrv : NULL);
    jopen("gpus", '[');
    for (int i = 0; i < r->n; i++) {
        char cc[16];
        snprintf(cc, sizeof cc, "%d.%d", r->gpus[i].cc_major, r->gpus[i].cc_minor);
        jopen(NULL, '{');
        jfield_i("ordinal", i);
        jfield_s("name", r->gpus[i].name);
        jfield_s("compute_capability", cc);
        jfield_i("sms", r->gpus[i].sms);
        jfield_b("vmm", r->gpus[i].vmm);
        jfield_b("posix_fd_handles", r->gpus[i].fd);
        jclose('}');
    }
    jclose(']');
    jopen("peer_access", '[');
    for (int i = 0; i < r->n; i++) {
        jopen(NULL, '[');
        for (int j = 0; j < r->n; j++) jfield_b(NULL, r->access[i][j]);
        jclose(']');
    }
    jclose(']');
    jclose('}');
    jclose(']');
}

static void backends_text(bool host_ok, const char *host_why, const cuda_report *r) {
    printf("\nBackends (compiled in / usable here)\n");
    printf("  host   yes / %-3s  %s\n", host_ok ? "yes" : "no", host_why);
    printf("  cuda   %-3s / %-3s  %s\n", r->compiled ? "yes" : "no", r->ok ? "yes" : "no", r->why);
    for (int i = 0; i < r->n; i++)
        printf("         GPU %d: %s, compute capability %d.%d, %d SMs, VMM %s, fd handles %s\n", i,
               r->gpus[i].name, r->gpus[i].cc_major, r->gpus[i].cc_minor, r->gpus[i].sms,
               r->gpus[i].vmm ? "yes" : "no", r->gpus[i].fd ? "yes" : "no");
    if (r->n > 1) {
        printf("         peer access (row can access column):\n              ");
        for (int j = 0; j < r->n; j++) printf(" %3d", j);
        printf("\n");
        for (int i = 0; i < r->n; i++) {
            printf("         %4d ", i);
            for (int j = 0; j < r->n; j++)
                printf(" %3s", i == j ? "-" : r->access[i][j] ? "yes" : "no");
            printf("\n");
        }
    }
}

static void backends(void) {
    /* host: memfd shared memory */
    int fd = memfd_create("symm-info", MFD_CLOEXEC);
    bool host_ok = fd >= 0;
    const char *host_why = host_ok ? "memfd shared memory among local PEs" : "memfd_create failed";
    if (fd >= 0) close(fd);
    static cuda_report r; /* 16 KiB of peer access table: not on the stack */
    cuda_probe(&r);
    if (json) backends_json(host_ok, host_why, &r);
    else backends_text(host_ok, host_why, &r);
}

/* ---- transports ---------------------------------------------------------- */

/* Services for a plugin's probe (local, no collectives): the environment and
 * nothing else. */
static const char *svc_getenv(void *c, const char *name) {
    (void)c;
    return getenv(name);
}
static int32_t svc_set_error(void *c, int32_t status, const char *msg) {
    (void)c;
    (void)msg;
    return status;
}
static void svc_log(void *c, int32_t level, const char *msg) {
    (void)c;
    (void)level;
    (void)msg;
}
static int32_t svc_none(void *c) {
    (void)c;
    return SYMM_SUCCESS;
}
static int32_t svc_allgather(void *c, const void *mine, void *all, size_t len) {
    (void)c;
    memcpy(all, mine, len); /* a job of one: never called by a probe */
    return SYMM_SUCCESS;
}

/* What the runtime would find for transport `name`: the plugin file (the
 * runtime's search, core/tp_path.h), whether it loads, and its probe's
 * verdict. */
typedef struct tp_report {
    char path[PATH_MAX + 64];
    bool found, loads, usable;
    char why[1024];
} tp_report;

static void tp_examine(const char *name, const char *runtime_path, tp_report *t) {
    memset(t, 0, sizeof *t);
    char dirs[4096], rtdir[PATH_MAX] = "";
    const char *env = getenv("SYMM_TRANSPORT_PATH");
    if (runtime_path) {
        const char *slash = strrchr(runtime_path, '/');
        if (slash) snprintf(rtdir, sizeof rtdir, "%.*s", (int)(slash - runtime_path), runtime_path);
    }
    symm__tp_plugin_dirs(rtdir, name, dirs, sizeof dirs);
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !t->found; d = strtok_r(NULL, ":", &save)) {
        snprintf(t->path, sizeof t->path, "%s/libsymm_transport_%s.so", d, name);
        t->found = access(t->path, F_OK) == 0;
    }
    if (!t->found) {
        t->path[0] = '\0';
        snprintf(t->why, sizeof t->why, "no libsymm_transport_%s.so in the runtime's folders%s",
                 name, env && *env ? " or in SYMM_TRANSPORT_PATH" : "");
        return;
    }
    void *dl = dlopen(t->path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        snprintf(t->why, sizeof t->why, "cannot load: %s", e ? e : "unknown error");
        return;
    }
    void *sym = dlsym(dl, SYMM_TP_ENTRY);
    symm_tp_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    const symm_tp_ops *ops = sym ? entry(SYMM_TP_IFACE) : NULL;
    if (!ops || !ops->probe) {
        snprintf(t->why, sizeof t->why, "%s", sym ? "refuses this transport interface"
                                                  : "not a symm transport plugin");
        dlclose(dl);
        return;
    }
    t->loads = true;
    symm_tp_core core = {
        .size = sizeof core, .iface = SYMM_TP_IFACE, .core = NULL, .my_pe = 0, .n_pes = 1,
        .device = -1, .timeout_ms = 60000, .peer_timeout_ms = 100,
        .allgather = svc_allgather, .barrier = svc_none, .check_failed = svc_none,
        .set_error = svc_set_error, .log = svc_log, .getenv = svc_getenv,
    };
    char why[512] = "";
    int32_t st = ops->probe(&core, why, sizeof why);
    t->usable = st == SYMM_SUCCESS;
    if (t->usable) snprintf(t->why, sizeof t->why, "usable here");
    else snprintf(t->why, sizeof t->why, "%s (%s)", why[0] ? why : "not usable",
                  symm_status_string((symm_status)st));
    dlclose(dl);
}

#ifdef SYMM_INFO_HAVE_IBVERBS
/* libibverbs' entry points by name (the library is optional at run time). */
typedef struct ibv_syms {
    struct ibv_device **(*get_list)(int *);
    void (*free_list)(struct ibv_device **);
    const char *(*dev_name)(struct ibv_device *);
    struct ibv_context *(*open_dev)(struct ibv_device *);
    int (*close_dev)(struct ibv_context *);
    int (*query_dev)(struct ibv_context *, struct ibv_device_attr *);
    int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *);
    int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
} ibv_syms;

static bool ibv_syms_load(void *lib, ibv_syms *f) {
    void *s;
#define SYMM_INFO_SYM(var, name) (s = lib ? dlsym(lib, name) : NULL, memcpy(&f->var, &s, sizeof s))
    SYMM_INFO_SYM(get_list, "ibv_get_device_list");
    SYMM_INFO_SYM(free_list, "ibv_free_device_list");
    SYMM_INFO_SYM(dev_name, "ibv_get_device_name");
    SYMM_INFO_SYM(open_dev, "ibv_open_device");
    SYMM_INFO_SYM(close_dev, "ibv_close_device");
    SYMM_INFO_SYM(query_dev, "ibv_query_device");
    SYMM_INFO_SYM(query_port, "ibv_query_port");
    SYMM_INFO_SYM(query_gid, "ibv_query_gid");
#undef SYMM_INFO_SYM
    return f->get_list && f->free_list && f->dev_name && f->open_dev && f->close_dev &&
           f->query_dev && f->query_port && f->query_gid;
}

/* The GIDs of one port that are set, with their RoCE type (sysfs). */
static void gid_rows(const ibv_syms *f, struct ibv_context *c, const char *name, uint8_t p,
                     int tbl_len) {
    for (int g = 0; g < tbl_len && g < 16; g++) {
        union ibv_gid gid;
        if (f->query_gid(c, p, g, &gid) != 0) break;
        bool zero = true;
        for (int k = 0; k < 16; k++) zero &= gid.raw[k] == 0;
        if (zero) continue;
        char t[48];
        int at = 0;
        for (int k = 0; k < 16; k += 2)
            at += snprintf(t + at, sizeof t - (size_t)at, "%s%02x%02x", k ? ":" : "",
                           gid.raw[k], gid.raw[k + 1]);
        /* RoCE v1 / v2 (sysfs; InfiniBand ports have no type) */
        char tp[64] = "", tpath[PATH_MAX];
        snprintf(tpath, sizeof tpath, "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d",
                 name, p, g);
        FILE *tf = fopen(tpath, "r");
        if (tf) {
            if (!fgets(tp, sizeof tp, tf)) tp[0] = '\0';
            fclose(tf);
            tp[strcspn(tp, "\n")] = '\0';
        }
        if (json) {
            jopen(NULL, '{');
            jfield_i("index", g);
            jfield_s("gid", t);
            jfield_s("type", tp[0] ? tp : NULL);
            jclose('}');
        } else {
            printf("      GID[%d] %s%s%s\n", g, t, tp[0] ? "  " : "", tp);
        }
    }
}

static void port_rows(const ibv_syms *f, struct ibv_context *c, const char *name) {
    struct ibv_device_attr da;
    memset(&da, 0, sizeof da);
    if (f->query_dev(c, &da) != 0) return;
    for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
        struct ibv_port_attr pa;
        memset(&pa, 0, sizeof pa);
        if (f->query_port(c, p, &pa) != 0) continue;
        const char *ll = pa.link_layer == IBV_LINK_LAYER_ETHERNET     ? "Ethernet"
                         : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
                                                                      : "unspecified";
        const char *state = pa.state == IBV_PORT_ACTIVE ? "ACTIVE"
                            : pa.state == IBV_PORT_DOWN ? "DOWN"
                            : pa.state == IBV_PORT_INIT ? "INIT"
                                                        : "other";
        if (json) {
            jopen(NULL, '{');
            jfield_i("port", p);
            jfield_s("state", state);
            jfield_s("link_layer", ll);
            jfield_i("active_mtu", 128 << pa.active_mtu);
            jopen("gids", '[');
        } else {
            printf("    port %u: %s, link layer %s, MTU %d\n", p, state, ll, 128 << pa.active_mtu);
        }
        gid_rows(f, c, name, p, pa.gid_tbl_len);
        if (json) {
            jclose(']');
            jclose('}');
        }
    }
}

/* Every RDMA device, its ports and GIDs; returns how many devices. */
static int ibv_devices(void *lib) {
    ibv_syms f;
    int ndev = 0;
    struct ibv_device **list = ibv_syms_load(lib, &f) ? f.get_list(&ndev) : NULL;
    for (int d = 0; list && d < ndev; d++) {
        const char *name = f.dev_name(list[d]);
        struct ibv_context *c = f.open_dev(list[d]);
        if (json) {
            jopen(NULL, '{');
            jfield_s("name", name);
            jfield_b("opened", c != NULL);
            jopen("ports", '[');
        } else {
            printf("  device %s%s\n", name, c ? "" : " (cannot open)");
        }
        if (c) port_rows(&f, c, name);
        if (c) f.close_dev(c);
        if (json) {
            jclose(']');
            jclose('}');
        }
    }
    if (list) f.free_list(list);
    return list ? ndev : 0;
}
#endif

static void plugin_json(const char *name, const tp_report *t) {
    jfield_s("name", name);
    jfield_b("compiled", t->found);
    jfield_s("plugin", t->found ? t->path : NULL);
    jfield_b("loads", t->loads);
    jfield_b("usable", t->usable);
    jfield_s("detail", t->why);
}

static void transports(const report *r) {
    const char *const *names;
    size_t n = symm__transport_names(&names); /* the registry's AUTO order */
    const char *rt = r->runtime_ok ? symm_loader_runtime_path() : NULL;
    tp_report tps[8];
    if (n > 8) n = 8;
    for (size_t i = 0; i < n; i++) tp_examine(names[i], rt, &tps[i]);
    const char *want = getenv("SYMM_TRANSPORT");
    char why[512];
    int ndev = 0;
    void *lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, sizeof why, "libibverbs.so.1 not found (%s)", e ? e : "dlopen failed");
    } else {
        snprintf(why, sizeof why, "libibverbs.so.1 found");
    }
    size_t ib = n; /* ibverbs comes last in the JSON, with its devices */
    if (json) {
        jfield_s("transport_choice", want && *want ? want : "auto");
        jopen("transports", '[');
        for (size_t i = 0; i < n; i++) {
            if (strcmp(names[i], "ibverbs") == 0) {
                ib = i;
                continue;
            }
            jopen(NULL, '{');
            plugin_json(names[i], &tps[i]);
            jclose('}');
        }
        jopen(NULL, '{');
        plugin_json("ibverbs", ib < n ? &tps[ib] : &(tp_report){0});
        jfield_b("library", lib != NULL);
        jfield_s("library_detail", why);
        jopen("devices", '[');
    } else {
        printf("\nTransports (to PEs on other hosts; SYMM_TRANSPORT=%s, AUTO order",
               want && *want ? want : "auto");
        for (size_t i = 0; i < n; i++) printf("%s %s", i ? "," : "", names[i]);
        printf(")\n");
        for (size_t i = 0; i < n; i++)
            printf("  %-8s %-3s / %-3s  %s%s%s\n", names[i], tps[i].found ? "yes" : "no",
                   tps[i].usable ? "yes" : "no", tps[i].why, tps[i].found ? "; " : "",
                   tps[i].found ? tps[i].path : "");
        printf("  ibverbs library: %s\n", why);
    }
#ifdef SYMM_INFO_HAVE_IBVERBS
    ndev = ibv_devices(lib);
#endif
    if (json) {
        jclose(']');
        jclose('}');
        jclose(']');
    } else if (!ndev) {
        printf("  RDMA devices: none\n");
    }
    if (lib) dlclose(lib);
}

/* ---- configuration ------------------------------------------------------- */

typedef struct var {
    const char *name, *meaning;
    bool secret;
} var;

/* Every variable symm reads (README, "Configuration"). */
static const var vars[] = {
    {"SYMM_RUNTIME", "runtime the loader opens", false},
    {"SYMM_BACKEND", "auto, host or cuda", false},
    {"SYMM_HEAP_CAP", "heap per PE (bytes, after rounding)", false},
    {"SYMM_HEAP_CHUNK", "heap growth granularity (bytes)", false},
    {"SYMM_TIMEOUT_MS", "bootstrap timeout (ms)", false},
    {"SYMM_PEER_TIMEOUT_MS", "dead-peer detection bound (ms)", false},
    {"SYMM_PROXY_RINGS", "GPU proxy: rings for kernels (docs/PROXY.md)", false},
    {"SYMM_PROXY_RING_DEPTH", "GPU proxy: slots a ring (power of two)", false},
    {"SYMM_PROXY_SPIN_US", "GPU proxy: idle polling before naps (us)", false},
    {"SYMM_PROXY_IDLE_US", "GPU proxy: longest idle nap (us)", false},
    {"SYMM_PROXY_FORCE", "GPU proxy: 1 starts it without PEs of other hosts (tests)", false},
    {"SYMM_JOB_SECRET", "job secret for ENV mode (value never shown)", true},
    {"SYMM_BOOTSTRAP_ADDR", "rendezvous address", false},
    {"SYMM_RANK", "rank (overrides launchers)", false},
    {"SYMM_N_PES", "job size (overrides launchers)", false},
    {"SYMM_LOCAL_RANK", "rank on this host", false},
    {"SYMM_LOCAL_N_PES", "PEs on this host", false},
    {"SYMM_HOST_ID", "simulated host id", false},
    {"SYMM_LAUNCHER", "set by symmrun", false},
    {"SYMM_INTERRUPT_FD", "descriptor readable on SIGINT: waits for peers give up", false},
    {"SYMMRUN_GRACE", "symmrun: grace after a failure (s)", false},
    {"SYMMRUN_BIND", "symmrun: CPUs of each PE (auto, spread, core, none)", false},
    {"SYMM_CUDA_PDL", "0: no programmatic dependent launch", false},
    {"SYMM_CUDA_COPY_KERNEL_MIN", "stream puts from GPU memory: SM copy from (bytes)", false},
    {"SYMM_CUDA_COPY_KERNEL_MAX", "... up to (bytes; 0: copy engine only)", false},
    {"SYMM_CUDA_STREAM_MEMOPS", "1: EQ stream waits with cuStreamWaitValue64", false},
    {"SYMM_CUDA_COLL_ALGO",
     "collectives: auto, ll (one-shot), ll128 (reductions), staged, ce (copy engines: reduce-scatter, all-reduce, all-gather, all-to-all), twoshot / pull (barrier); alltoallv: auto / ll its LL form, others its grid form", false},
    {"SYMM_CUDA_LL_BYTES", "one-shot LL collectives: bytes per pair of PEs (0: none)", false},
    {"SYMM_CUDA_LL128_BYTES", "LL128 reductions: payload bytes per sender (0: none)", false},
    {"SYMM_CUDA_LL128_ONESHOT", "LL128 all-reduce on > 2 PEs: largest one-shot payload", false},
    {"SYMM_CUDA_STAGED_BYTES", "staged reductions: staging per sender (0: none)", false},
    {"SYMM_CUDA_STAGED_CHUNK", "staged reductions: smallest piece per block (bytes; default 8K, 32K in the peer form)", false},
    {"SYMM_CUDA_STAGED_STEPS", "staged reductions: steps a call aims for (1-64; default 1, in the peer form up to 3)", false},
    {"SYMM_CUDA_STAGED_SWAP",
     "staged all-reduce on 2 PEs in place: largest piece held in shared memory (0: never)", false},
    {"SYMM_CUDA_STAGED_LAND",
     "staged reductions on 2 PEs, out of place: largest piece sent into the peer's dst (0: never)",
     false},
    {"SYMM_CUDA_CE_BYTES", "copy-engine reduce-scatter / all-reduce: slot per sender (0: none; default 64M with 3-4 PEs a host)", false},
    {"SYMM_CUDA_CE_PIECES", "copy-engine reduce-scatter / all-reduce: copies of the last phase (1-7; default 4)", false},
    {"SYMM_CUDA_CE_GRAPHS", "copy-engine collectives: shapes whose calls replay a cached CUDA graph (0: none; default 64)", false},
    {"SYMM_CUDA_A2AV_BLOCKS", "symm_alltoallv on CUDA: blocks of its grid (default 0: one a SM)", false},
    {"SYMM_CUDA_COLL_COPY", "all-gather/all-to-all above LL: auto (push; large 3-PE all-gathers pull), push, pull", false},
    {"SYMM_CUDA_DISABLE_P2P", "1: no load/store between GPUs", false},
    {"SYMM_TRANSPORT", "transport to other hosts: auto, none, ibverbs, tcp", false},
    {"SYMM_TRANSPORT_PATH", "folders searched first for transport plugins", false},
    {"SYMM_TCP_ADDR", "tcp transport: address to listen on", false},
    {"SYMM_TCP_NO_GLOBAL_ATOMICS", "tcp transport: test switch (atomics through it)", false},
    {"SYMM_TEST_HOST_DEFER_NBI", "host backend: test switch (1: nbi puts and gets run at the next operation of another kind, as on a stream)", false},
    {"SYMM_TEST_HOST_GPU_MEM", "host backend: test switch (1: transports see the heap as GPU memory)", false},
    {"SYMM_TEST_HOST_GPU_FAIL_BYTES", "host backend: test switch (copies of this size fail, with the above)", false},
    {"SYMM_PEER_STALL_MS", "tcp transport: ms a call waits on a live peer that moves no byte (default 10000)", false},
    {"SYMM_IB_DEVICE", "ibverbs: RDMA device name[:port]", false},
    {"SYMM_IB_GID_INDEX", "ibverbs, RoCE: GID table index", false},
    {"SYMM_OFI_PROVIDER", "ofi transport: libfabric provider (efa, cxi, verbs;ofi_rxm, tcp;ofi_rxm, shm)", false},
    {"SYMM_OFI_DOMAIN", "ofi transport: domain (NIC or interface) name as fi_info prints it", false},
    {"SYMM_OFI_ADDR", "ofi transport: this host's address on the fabric (source node)", false},
    {"SYMM_OFI_LIBRARY", "ofi transport: the libfabric to open (default libfabric.so.1)", false},
    {"SYMM_OFI_ATOMICS", "ofi transport, testing: native, cas or am (the atomics path)", false},
    {"SYMM_OFI_MAX_RMA", "ofi transport, testing: split transfers into posts of this many bytes", false},
    {"SYMM_OFI_FORCE_MR_LOCAL", "ofi transport, testing: 1 = registered descriptors and the bounce buffer", false},
    {"SYMM_OFI_STAGE_CHUNK", "ofi transport, testing: largest piece of a staged GPU-memory message, bytes", false},
    {"SYMM_OFI_SPIN_US", "ofi transport: microseconds the target's progress thread spins before blocking (shm: opt-in, 0)", false},
    {"SYMM_OFI_TEST_WRONG_AM_KEY", "ofi transport, testing: 1 = send atomic messages with a wrong key", false},
    {"SYMM_OFI_TEST_NAP_US", "ofi transport, testing: the progress thread reads the CQ only every N us", false},
    {"SYMM_OFI_TEST_CQ_WAIT", "ofi transport, testing: none = open the CQs without a wait object", false},
    {"SYMM_LOADER", "Python package: the loader it opens", false},
    {"SYMM_DEBUG", "log level: NONE, WARN, INFO, TRACE", false},
    {"SYMM_DEBUG_SUBSYS", "log subsystems", false},
    {"SYMM_DEBUG_FILE", "log file pattern (%h %p %r)", false},
};

static bool known_var(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (strlen(vars[i].name) == len && strncmp(vars[i].name, name, len) == 0) return true;
    return false;
}

static void configuration(report *r) {
    static const char *const backends[] = {"auto", "host", "cuda"};
    symm__config cfg;
    memset(&cfg, 0, sizeof cfg);
    symm_status st = symm__config_load(NULL, &cfg);
    char err[1024];
    snprintf(err, sizeof err, "%s", st ? symm__last_error() : "");
    r->config_ok = st == SYMM_SUCCESS;
    char eff[sizeof vars / sizeof vars[0]][64];
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *n = vars[i].name, *v = getenv(n);
        eff[i][0] = '\0';
        if (r->config_ok && strcmp(n, "SYMM_BACKEND") == 0)
            snprintf(eff[i], sizeof eff[i], "%s", backends[cfg.backend <= 2 ? cfg.backend : 0]);
        else if (r->config_ok && strcmp(n, "SYMM_HEAP_CAP") == 0)
            snprintf(eff[i], sizeof eff[i], "%llu", (unsigned long long)cfg.heap_cap);
        else if (r->config_ok && strcmp(n, "SYMM_HEAP_CHUNK") == 0)
            snprintf(eff[i], sizeof eff[i], "%llu", (unsigned long long)cfg.heap_chunk);
        else if (r->config_ok && strcmp(n, "SYMM_TIMEOUT_MS") == 0)
            snprintf(eff[i], sizeof eff[i], "%u", cfg.timeout_ms);
        else if (r->config_ok && strcmp(n, "SYMM_PEER_TIMEOUT_MS") == 0)
            snprintf(eff[i], sizeof eff[i], "%u", cfg.peer_timeout_ms);
        else if (v && vars[i].secret)
            snprintf(eff[i], sizeof eff[i], "(set, %zu characters)", strlen(v));
        else if (v)
            snprintf(eff[i], sizeof eff[i], "%.63s", v);
    }
    if (json) {
        jfield_b("config_valid", r->config_ok);
        jfield_s("config_error", err);
        jopen("config", '[');
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
            const char *v = getenv(vars[i].name);
            jopen(NULL, '{');
            jfield_s("name", vars[i].name);
            jfield_s("value", v && !vars[i].secret ? v : v ? "(set)" : NULL);
            jfield_s("effective", eff[i][0] ? eff[i] : NULL);
            jfield_s("source", v ? "env" : "default");
            jfield_s("meaning", vars[i].meaning);
            jclose('}');
        }
        jclose(']');
        jopen("unknown_env", '[');
    } else {
        printf("\nConfiguration (environment; effective values as symm_init parses them)\n");
        if (!r->config_ok) printf("  INVALID: %s\n", err);
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
            const char *v = getenv(vars[i].name);
            if (!v && !eff[i][0]) continue;
            printf("  %-26s %-22s %-8s %s\n", vars[i].name, eff[i][0] ? eff[i] : "-",
                   v ? "env" : "default", vars[i].meaning);
        }
    }
    /* SYMM_* variables nobody reads: usually a typo. */
    bool any = false;
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "SYMM_", 5) != 0 && strncmp(*e, "SYMMRUN_", 8) != 0) continue;
        size_t len = strcspn(*e, "=");
        if (known_var(*e, len)) continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(len < 127 ? len : 127), *e);
        if (strncmp(name, "SYMM_TEST_", 10) == 0) continue; /* the test suites' own */
        if (json) {
            jkey(NULL);
            jstr(name);
        } else {
            if (!any) printf("  not read by symm (a typo?):");
            printf(" %s", name);
        }
        any = true;
    }
    if (json) jclose(']');
    else if (any) printf("\n");
}

/* Like symmrun: a runtime next to this program is the one its jobs would use. */
static void runtime_beside(void) {
    char path[PATH_MAX + 32];
    if (!getenv("SYMM_RUNTIME") && symm__runtime_beside(path, sizeof path))
        symm_loader_set_runtime(path);
}

/* getopt_long, silent (opterr = 0): every error is our message, naming the option. */
static int parse_args(int argc, char **argv) {
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},    {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
    };
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+jhV", opts, NULL)) != -1) {
        const char *arg = argv[optind - 1];
        if (c == 'j') {
            json = true;
        } else if (c == 'h') {
            fputs(symm_info_usage_text, stdout);
            return 0;
        } else if (c == 'V') {
            printf("symm-info (symm) %d.%d.%d\nABI %d.%d\n", SYMM_VERSION_MAJOR,
                   SYMM_VERSION_MINOR, SYMM_VERSION_PATCH, SYMM_ABI_MAJOR, SYMM_ABI_MINOR);
            return 0;
        } else if (strncmp(arg, "--", 2) == 0) {
            int len = (int)strcspn(arg, "=");
            fprintf(stderr, "symm-info: %s %.*s (try --help)\n",
                    optopt ? "no value is taken by" : "unknown or ambiguous option", len, arg);
            return 2;
        } else {
            fprintf(stderr, "symm-info: unknown option -%c (try --help)\n", optopt);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "symm-info: unexpected argument '%s' (try --help)\n", argv[optind]);
        return 2;
    }
    return -1;
}

int main(int argc, char **argv) {
    int done = parse_args(argc, argv);
    if (done >= 0) return done;
    report r = {false, false};
    runtime_beside();
    if (json) {
        putchar('{');
        need_comma[depth] = false;
    }
    loader_runtime(&r);
    backends();
    transports(&r);
    configuration(&r);
    if (json) {
        jfield_b("usable", r.runtime_ok && r.config_ok);
        jclose('}');
        putchar('\n');
    } else {
        printf("\nsymm is %s here\n", r.runtime_ok && r.config_ok ? "usable" : "NOT usable");
    }
    fflush(stdout);
    return r.runtime_ok && r.config_ok ? 0 : 1;
}

/* The ibverbs transport: which device, port and address a PE uses. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibv_internal.h"

/* ---- device, port and GID --------------------------------------------- */

/* Parse SYMM_IB_DEVICE=name[:port]. */
static int32_t parse_device_env(const symm_tp_core *core, const char *v, char *name, size_t cap,
                                int *port) {
    const char *colon = strrchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : strlen(v);
    *port = 0;
    if (len == 0 || len >= cap)
        return ibv__fail(core, SYMM_ERR_INVALID_ARG, "SYMM_IB_DEVICE=\"%s\": expected name[:port]", v);
    memcpy(name, v, len);
    name[len] = 0;
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p < 1 || p > 255)
            return ibv__fail(core, SYMM_ERR_INVALID_ARG,
                        "SYMM_IB_DEVICE=\"%s\": the port after ':' must be 1..255", v);
        *port = (int)p;
    }
    return 0;
}

/* PCI distance between the GPU (CUDA ordinal) and an RDMA device: the number
 * of sysfs path components they share (more is nearer). -1 when unknown. */
static char gpu_sysfs[PATH_MAX];

static void gpu_path(int32_t ordinal) {
    gpu_sysfs[0] = 0;
    if (ordinal < 0) return;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return; /* the CUDA backend has it loaded when a GPU is in use */
    int (*get)(int *, int);
    int (*bus)(char *, int, int);
    *(void **)&get = dlsym(h, "cuDeviceGet");
    *(void **)&bus = dlsym(h, "cuDeviceGetPCIBusId");
    char id[64] = {0}, link[PATH_MAX];
    int dev;
    if (get && bus && get(&dev, ordinal) == 0 && bus(id, sizeof id, dev) == 0) {
        for (char *p = id; *p; p++)
            if (*p >= 'A' && *p <= 'F') *p = (char)(*p - 'A' + 'a');
        snprintf(link, sizeof link, "/sys/bus/pci/devices/%s", id);
        if (!realpath(link, gpu_sysfs)) gpu_sysfs[0] = 0;
    }
    dlclose(h);
}

static int pci_affinity(const char *ibdev) {
    char link[PATH_MAX], path[PATH_MAX];
    if (!gpu_sysfs[0]) return -1;
    snprintf(link, sizeof link, "/sys/class/infiniband/%s/device", ibdev);
    if (!realpath(link, path)) return -1;
    int common = 0;
    for (size_t i = 0; path[i] && path[i] == gpu_sysfs[i]; i++)
        if (path[i] == '/') common++;
    return common;
}

/* Open `dev` and find an active port (want_port, or the first). 0 on success. */
static int try_device(ibv_tp *st, struct ibv_device *dev, int want_port,
                      struct ibv_device_attr *da, struct ibv_port_attr *pa, char *why,
                      size_t why_len) {
    const char *name = F->get_device_name(dev);
    struct ibv_context *ctx = F->open_device(dev);
    if (!ctx) {
        snprintf(why, why_len, "%s: cannot open (%s)", name, strerror(errno));
        return -1;
    }
    memset(da, 0, sizeof *da);
    if (F->query_device(ctx, da) != 0) {
        snprintf(why, why_len, "%s: ibv_query_device failed", name);
        F->close_device(ctx);
        return -1;
    }
    int first = want_port ? want_port : 1, last = want_port ? want_port : da->phys_port_cnt;
    for (int p = first; p <= last; p++) {
        memset(pa, 0, sizeof *pa);
        if (F->query_port(ctx, (uint8_t)p, pa) != 0) continue;
        if (pa->state == IBV_PORT_ACTIVE) {
            st->ctx = ctx;
            st->port = (uint8_t)p;
            return 0;
        }
    }
    if (want_port && want_port > da->phys_port_cnt)
        snprintf(why, why_len, "%s has %u port(s), not port %d", name, da->phys_port_cnt,
                 want_port);
    else
        snprintf(why, why_len, "%s: no ACTIVE port%s", name, want_port ? " (as asked)" : "");
    F->close_device(ctx);
    return -1;
}

/* Choose and open the device; fills st->ctx/port and the attributes. */
int32_t ibv__pick_device(ibv_tp *st, struct ibv_device_attr *da, struct ibv_port_attr *pa,
                           char *why, size_t why_len) {
    const symm_tp_core *core = st->core;
    char want[64] = {0};
    int want_port = 0;
    const char *v = ibv__env(core, "SYMM_IB_DEVICE");
    if (v) {
        int32_t rc = parse_device_env(core, v, want, sizeof want, &want_port);
        if (rc) {
            snprintf(why, why_len, "SYMM_IB_DEVICE=\"%s\": expected name[:port] (port 1..255)", v);
            return rc;
        }
    }
    int num = 0;
    struct ibv_device **list = F->get_device_list(&num);
    if (!list || num == 0) {
        if (list) F->free_device_list(list);
        snprintf(why, why_len, "no RDMA device (ibv_get_device_list found none%s)",
                 errno == ENOSYS ? ": no kernel support" : "");
        return SYMM_ERR_NO_DEVICE;
    }
    char names[256] = {0}, last_why[256] = {0};
    /* Order: the named device; else by PCI affinity to the GPU, then listed order. */
    int order[64], n_order = 0;
    if (num > 64) num = 64;
    int aff[64];
    if (!want[0]) gpu_path(core->device);
    for (int i = 0; i < num; i++) {
        const char *name = F->get_device_name(list[i]);
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", name);
        if (want[0] && strcmp(name, want) != 0) continue;
        aff[n_order] = want[0] ? 0 : pci_affinity(name);
        order[n_order++] = i;
    }
    for (int i = 1; i < n_order; i++) /* stable insertion sort by affinity, nearest first */
        for (int j = i; j > 0 && aff[j] > aff[j - 1]; j--) {
            int t = aff[j]; aff[j] = aff[j - 1]; aff[j - 1] = t;
            t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    int32_t rc = SYMM_ERR_NO_DEVICE;
    for (int k = 0; k < n_order; k++) {
        if (try_device(st, list[order[k]], want_port, da, pa, last_why, sizeof last_why) == 0) {
            rc = 0;
            break;
        }
    }
    if (rc) {
        if (want[0] && n_order == 0)
            snprintf(why, why_len, "SYMM_IB_DEVICE=%s: no such device (found: %s)", v, names);
        else
            snprintf(why, why_len, "no usable RDMA port (%s; devices: %s)", last_why, names);
    }
    F->free_device_list(list);
    return rc;
}

/* Choose the GID (RoCE) or LID (InfiniBand). */
int32_t ibv__pick_address(ibv_tp *st, const struct ibv_port_attr *pa, char *why,
                            size_t why_len) {
    const symm_tp_core *core = st->core;
    const char *name = F->get_device_name(st->ctx->device);
    st->roce = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
    st->lid = pa->lid;
    st->gid_index = -1;
    const char *v = ibv__env(core, "SYMM_IB_GID_INDEX");
    if (v) {
        char *end;
        long i = strtol(v, &end, 10);
        if (*end || i < 0 || i >= pa->gid_tbl_len) {
            snprintf(why, why_len, "SYMM_IB_GID_INDEX=\"%s\": %s:%u has GID indexes 0..%d", v,
                     name, st->port, pa->gid_tbl_len - 1);
            return SYMM_ERR_INVALID_ARG;
        }
        if (F->query_gid(st->ctx, st->port, (int)i, &st->gid) != 0 || ibv__gid_is_zero(&st->gid)) {
            snprintf(why, why_len, "SYMM_IB_GID_INDEX=%ld: %s:%u has no GID there", i, name,
                     st->port);
            return SYMM_ERR_INVALID_ARG;
        }
        st->gid_index = (int)i;
        st->global = 1;
        return 0;
    }
    if (!st->roce) {
        if (st->lid == 0) {
            snprintf(why, why_len, "%s:%u is InfiniBand without a LID (is a subnet manager running?)",
                     name, st->port);
            return SYMM_ERR_NO_DEVICE;
        }
        st->global = 0;
        return 0;
    }
    /* RoCE: the IPv4-mapped RoCE v2 GID; else the best other non-empty one. */
    int best = -1, best_score = 0;
    for (int i = 0; i < pa->gid_tbl_len && best_score < 4; i++) {
        union ibv_gid g;
        if (F->query_gid(st->ctx, st->port, i, &g) != 0 || ibv__gid_is_zero(&g)) continue;
        int t = F->gid_type(st->ctx, st->port, i);
        int score = ibv__gid_is_v4mapped(&g) ? (t == SYMM_IBV_GID_ROCE_V2 ? 4 : t == SYMM_IBV_GID_UNKNOWN ? 3 : 1)
                                        : (t == SYMM_IBV_GID_ROCE_V2 ? 2 : 1);
        if (score > best_score) {
            best = i;
            best_score = score;
            st->gid = g;
        }
    }
    if (best < 0) {
        snprintf(why, why_len, "%s:%u (RoCE) has no GID: give its netdev an IP address", name,
                 st->port);
        return SYMM_ERR_NO_DEVICE;
    }
    st->gid_index = best;
    st->global = 1;
    return 0;
}


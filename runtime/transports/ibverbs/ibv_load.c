/*
 * The plugin entry: opens libibverbs.so.1 at run time and fills the verbs
 * table (ibv_fns.h). Nothing here runs before the core asks for the plugin,
 * and a host without libibverbs still gets a table whose probe says why.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ibv_fns.h"

static struct ibv_fns real;
static char load_why[256];
static int (*query_gid_ex)(struct ibv_context *, uint32_t, uint32_t, struct ibv_gid_entry *,
                           uint32_t, size_t);

/* The static inline data-path verbs, through the provider's ops. */
static int real_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    return qp->context->ops.post_send(qp, wr, bad);
}

static int real_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    return cq->context->ops.poll_cq(cq, n, wc);
}

/* GID type: _ibv_query_gid_ex (rdma-core >= 32), else the sysfs table. */
static int real_gid_type(struct ibv_context *ctx, uint8_t port, int index) {
    if (query_gid_ex) {
        struct ibv_gid_entry e;
        memset(&e, 0, sizeof e);
        if (query_gid_ex(ctx, port, (uint32_t)index, &e, 0, sizeof e) != 0)
            return SYMM_IBV_GID_UNKNOWN;
        return e.gid_type == IBV_GID_TYPE_ROCE_V2 ? SYMM_IBV_GID_ROCE_V2 : SYMM_IBV_GID_IB;
    }
    char path[512], buf[32] = {0};
    snprintf(path, sizeof path, "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%d",
             real.get_device_name(ctx->device), port, index);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SYMM_IBV_GID_UNKNOWN;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return SYMM_IBV_GID_UNKNOWN;
    return strstr(buf, "v2") ? SYMM_IBV_GID_ROCE_V2 : SYMM_IBV_GID_IB;
}

static const char *fallback_status_str(enum ibv_wc_status s) {
    (void)s;
    return "work completion error";
}

static int load(void) {
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_why, sizeof load_why,
                 "libibverbs.so.1 could not be opened (%s): install rdma-core's libibverbs1",
                 dlerror());
        return -1;
    }
#define SYM(field, name)                                                                       \
    do {                                                                                       \
        *(void **)&real.field = dlsym(h, name);                                                \
        if (!real.field) {                                                                     \
            snprintf(load_why, sizeof load_why, "libibverbs.so.1 lacks %s", name);             \
            dlclose(h);                                                                        \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)
    SYM(get_device_list, "ibv_get_device_list");
    SYM(free_device_list, "ibv_free_device_list");
    SYM(get_device_name, "ibv_get_device_name");
    SYM(open_device, "ibv_open_device");
    SYM(close_device, "ibv_close_device");
    SYM(query_device, "ibv_query_device");
    SYM(query_port, "ibv_query_port");
    SYM(query_gid, "ibv_query_gid");
    SYM(alloc_pd, "ibv_alloc_pd");
    SYM(dealloc_pd, "ibv_dealloc_pd");
    SYM(reg_mr, "ibv_reg_mr");
    SYM(dereg_mr, "ibv_dereg_mr");
    SYM(create_cq, "ibv_create_cq");
    SYM(destroy_cq, "ibv_destroy_cq");
    SYM(create_qp, "ibv_create_qp");
    SYM(modify_qp, "ibv_modify_qp");
    SYM(destroy_qp, "ibv_destroy_qp");
#undef SYM
    *(void **)&real.reg_dmabuf_mr = dlsym(h, "ibv_reg_dmabuf_mr");
    *(void **)&query_gid_ex = dlsym(h, "_ibv_query_gid_ex");
    *(void **)&real.wc_status_str = dlsym(h, "ibv_wc_status_str");
    if (!real.wc_status_str) real.wc_status_str = fallback_status_str;
    real.gid_type = real_gid_type;
    real.post_send = real_post_send;
    real.poll_cq = real_poll_cq;
    return 0; /* the library stays open for the life of the process */
}

__attribute__((visibility("default"))) const symm_tp_ops *symm_transport_plugin(uint32_t core_iface);

const symm_tp_ops *symm_transport_plugin(uint32_t core_iface) {
    static int loaded; /* 0 not tried, 1 ok, -1 failed; the core asks once per process */
    if (core_iface < 1) return NULL;
    if (!loaded) loaded = load() == 0 ? 1 : -1;
    return symm__ibv_ops(loaded == 1 ? &real : NULL, load_why);
}

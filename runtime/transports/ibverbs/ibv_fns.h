/*
 * The verbs the ibverbs transport uses, as one table of function pointers.
 *
 * libibverbs is opened at run time (ibv_load.c fills the table from
 * libibverbs.so.1), so the plugin loads on hosts without it, and the unit
 * tests replace the whole table with an in-process fake
 * (tests/transport/fake_verbs.c). The data-path verbs that verbs.h makes
 * static inline (ibv_post_send, ibv_poll_cq) go through the context's ops in
 * the real table; everything the plugin does to a device goes through here.
 */
#ifndef SYMM_IBV_FNS_H
#define SYMM_IBV_FNS_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "runtime/transports/transport.h"

/* GID types as the plugin sees them (gid_type below). */
#define SYMM_IBV_GID_IB      0 /* InfiniBand or RoCE v1 */
#define SYMM_IBV_GID_ROCE_V2 1
#define SYMM_IBV_GID_UNKNOWN 2

struct ibv_fns {
    struct ibv_device **(*get_device_list)(int *num);
    void (*free_device_list)(struct ibv_device **list);
    const char *(*get_device_name)(struct ibv_device *dev);
    struct ibv_context *(*open_device)(struct ibv_device *dev);
    int (*close_device)(struct ibv_context *ctx);
    int (*query_device)(struct ibv_context *ctx, struct ibv_device_attr *attr);
    int (*query_port)(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr);
    int (*query_gid)(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid);
    /* SYMM_IBV_GID_* of one GID table entry. */
    int (*gid_type)(struct ibv_context *ctx, uint8_t port, int index);
    struct ibv_pd *(*alloc_pd)(struct ibv_context *ctx);
    int (*dealloc_pd)(struct ibv_pd *pd);
    struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);
    /* NULL when libibverbs predates dma-buf registration (rdma-core < 34). */
    struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t len,
                                    uint64_t iova, int fd, int access);
    int (*dereg_mr)(struct ibv_mr *mr);
    struct ibv_cq *(*create_cq)(struct ibv_context *ctx, int cqe, void *cq_ctx,
                                struct ibv_comp_channel *ch, int vector);
    int (*destroy_cq)(struct ibv_cq *cq);
    struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
    int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
    int (*destroy_qp)(struct ibv_qp *qp);
    int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
    int (*poll_cq)(struct ibv_cq *cq, int n, struct ibv_wc *wc);
    const char *(*wc_status_str)(enum ibv_wc_status status);
};

/* The transport's ops over a verbs table (NULL: libibverbs is missing;
 * probe then says `why`). Used by the plugin entry and by the unit tests. */
const symm_tp_ops *symm__ibv_ops(const struct ibv_fns *fns, const char *why);

#endif

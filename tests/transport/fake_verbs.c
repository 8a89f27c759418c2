/* The fake verbs table (fake_verbs.h). */
#include "fake_verbs.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fake_knobs fake_knob;
fake_stats fake_stat;

#define MAX_DEV 8
#define MAX_OBJ 4096
#define QDEPTH 4096

typedef struct fk_dev {
    struct ibv_device dev;
    fake_device cfg;
} fk_dev;

typedef struct fk_ctx {
    struct ibv_context ctx;
    fk_dev *d;
} fk_ctx;

typedef struct fk_cq {
    struct ibv_cq cq;
    long polls;
    struct ibv_wc *wc;
    int n_wc, cap;
} fk_cq;

typedef struct fk_req {
    struct ibv_send_wr wr;
    struct ibv_sge sge;
    uint8_t inl[256];
    long due;
} fk_req;

typedef struct fk_qp {
    struct ibv_qp qp;
    fk_cq *cq;
    uint8_t port;
    uint32_t dest, max_inline;
    int dead;
    fk_req *q;
    int head, n;
} fk_qp;

typedef struct fk_mr {
    struct ibv_mr mr;
    int access;
} fk_mr;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static fk_dev devs[MAX_DEV];
static int n_devs;
static fk_qp *qps[MAX_OBJ];
static fk_mr *mrs[MAX_OBJ];
static uint32_t next_qpn = 0x100, next_key = 0x1000;

void fake_reset(void) {
    pthread_mutex_lock(&mu);
    n_devs = 0;
    memset(qps, 0, sizeof qps);
    memset(mrs, 0, sizeof mrs);
    memset(&fake_knob, 0, sizeof fake_knob);
    memset(&fake_stat, 0, sizeof fake_stat);
    pthread_mutex_unlock(&mu);
}

void fake_add_device(const fake_device *d) {
    pthread_mutex_lock(&mu);
    fk_dev *f = &devs[n_devs++];
    memset(f, 0, sizeof *f);
    f->cfg = *d;
    strncpy(f->dev.name, d->name, sizeof f->dev.name - 1);
    pthread_mutex_unlock(&mu);
}

fake_device fake_roce_device(const char *name, uint8_t ip_last) {
    fake_device d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "%s", name);
    d.n_ports = 1;
    d.atomic_cap = IBV_ATOMIC_HCA;
    d.max_qp_wr = 1024;
    d.max_cqe = 65536;
    d.max_qp_rd_atom = 16;
    d.max_inline = 64;
    fake_port *p = &d.port[0];
    p->state = IBV_PORT_ACTIVE;
    p->link_layer = IBV_LINK_LAYER_ETHERNET;
    p->mtu = IBV_MTU_1024;
    p->max_msg = 1u << 30;
    p->gid_tbl_len = FAKE_MAX_GIDS;
    static const uint8_t ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, ip_last};
    memcpy(p->gid[0], ll, 16); p->gid_type[0] = SYMM_IBV_GID_IB;
    memcpy(p->gid[1], ll, 16); p->gid_type[1] = SYMM_IBV_GID_ROCE_V2;
    memcpy(p->gid[2], v4, 16); p->gid_type[2] = SYMM_IBV_GID_IB;
    memcpy(p->gid[3], v4, 16); p->gid_type[3] = SYMM_IBV_GID_ROCE_V2;
    return d;
}

int fake_pending(void) {
    pthread_mutex_lock(&mu);
    int n = 0;
    for (int i = 0; i < MAX_OBJ; i++) if (qps[i]) n += qps[i]->n;
    pthread_mutex_unlock(&mu);
    return n;
}

/* ---- devices ---- */

static struct ibv_device **f_get_device_list(int *num) {
    pthread_mutex_lock(&mu);
    struct ibv_device **l = calloc((size_t)n_devs + 1, sizeof *l);
    for (int i = 0; i < n_devs; i++) l[i] = &devs[i].dev;
    if (num) *num = n_devs;
    pthread_mutex_unlock(&mu);
    return l;
}

static void f_free_device_list(struct ibv_device **l) {
    free(l);
}

static const char *f_get_device_name(struct ibv_device *d) {
    return d->name;
}

static struct ibv_context *f_open_device(struct ibv_device *d) {
    fk_ctx *c = calloc(1, sizeof *c);
    c->ctx.device = d;
    c->d = (fk_dev *)d;
    pthread_mutex_lock(&mu);
    fake_stat.live_ctx++;
    pthread_mutex_unlock(&mu);
    return &c->ctx;
}

static int f_close_device(struct ibv_context *c) {
    pthread_mutex_lock(&mu);
    fake_stat.live_ctx--;
    pthread_mutex_unlock(&mu);
    free(c);
    return 0;
}

static fk_dev *dev_of(struct ibv_context *c) {
    return ((fk_ctx *)c)->d;
}

static int f_query_device(struct ibv_context *c, struct ibv_device_attr *a) {
    fake_device *d = &dev_of(c)->cfg;
    memset(a, 0, sizeof *a);
    a->phys_port_cnt = (uint8_t)d->n_ports;
    a->atomic_cap = d->atomic_cap;
    a->max_qp_wr = d->max_qp_wr;
    a->max_cqe = d->max_cqe;
    a->max_qp_rd_atom = d->max_qp_rd_atom;
    a->max_qp_init_rd_atom = d->max_qp_rd_atom;
    return 0;
}

static fake_port *port_of(struct ibv_context *c, uint8_t p) {
    fake_device *d = &dev_of(c)->cfg;
    return p >= 1 && p <= d->n_ports ? &d->port[p - 1] : NULL;
}

static int f_query_port(struct ibv_context *c, uint8_t p, struct ibv_port_attr *a) {
    fake_port *fp = port_of(c, p);
    if (!fp) return EINVAL;
    memset(a, 0, sizeof *a);
    a->state = fp->state;
    a->link_layer = fp->link_layer;
    a->active_mtu = fp->mtu;
    a->max_mtu = fp->mtu;
    a->max_msg_sz = fp->max_msg;
    a->lid = fp->lid;
    a->gid_tbl_len = fp->gid_tbl_len;
    return 0;
}

static int f_query_gid(struct ibv_context *c, uint8_t p, int i, union ibv_gid *g) {
    fake_port *fp = port_of(c, p);
    if (!fp || i < 0 || i >= fp->gid_tbl_len) return EINVAL;
    memcpy(g->raw, fp->gid[i], 16);
    return 0;
}

static int f_gid_type(struct ibv_context *c, uint8_t p, int i) {
    fake_port *fp = port_of(c, p);
    return fp && i >= 0 && i < FAKE_MAX_GIDS ? fp->gid_type[i] : SYMM_IBV_GID_UNKNOWN;
}

/* ---- PD, MR, CQ ---- */

static struct ibv_pd *f_alloc_pd(struct ibv_context *c) {
    struct ibv_pd *pd = calloc(1, sizeof *pd);
    pd->context = c;
    pthread_mutex_lock(&mu);
    fake_stat.live_pd++;
    pthread_mutex_unlock(&mu);
    return pd;
}

static int f_dealloc_pd(struct ibv_pd *pd) {
    pthread_mutex_lock(&mu);
    fake_stat.live_pd--;
    pthread_mutex_unlock(&mu);
    free(pd);
    return 0;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t len, int access) {
    pthread_mutex_lock(&mu);
    if (addr == fake_knob.fail_reg_addr) {
        pthread_mutex_unlock(&mu);
        errno = EFAULT;
        return NULL;
    }
    fk_mr *m = calloc(1, sizeof *m);
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = len;
    m->mr.lkey = next_key++;
    m->mr.rkey = next_key++;
    m->access = access;
    for (int i = 0; i < MAX_OBJ; i++)
        if (!mrs[i]) { mrs[i] = m; break; }
    fake_stat.live_mr++;
    pthread_mutex_unlock(&mu);
    return &m->mr;
}

static struct ibv_mr *f_reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access) {
    return reg(pd, addr, len, access);
}

/* The fake's "GPU memory" is host memory named by its iova. */
static struct ibv_mr *f_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t off, size_t len, uint64_t iova,
                                      int fd, int access) {
    if (fd < 0) { errno = EBADF; return NULL; }
    struct ibv_mr *m = reg(pd, (void *)(uintptr_t)(iova + off), len, access);
    if (m) {
        pthread_mutex_lock(&mu);
        fake_stat.dmabuf_regs++;
        pthread_mutex_unlock(&mu);
    }
    return m;
}

static int f_dereg_mr(struct ibv_mr *mr) {
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_OBJ; i++)
        if (mrs[i] == (fk_mr *)mr) mrs[i] = NULL;
    fake_stat.live_mr--;
    pthread_mutex_unlock(&mu);
    free(mr);
    return 0;
}

static struct ibv_cq *f_create_cq(struct ibv_context *c, int cqe, void *cctx,
                                  struct ibv_comp_channel *ch, int vec) {
    (void)cctx; (void)ch; (void)vec;
    fk_cq *q = calloc(1, sizeof *q);
    q->cq.context = c;
    q->cq.cqe = cqe;
    q->cap = cqe;
    q->wc = calloc((size_t)cqe, sizeof *q->wc);
    pthread_mutex_lock(&mu);
    fake_stat.live_cq++;
    pthread_mutex_unlock(&mu);
    return &q->cq;
}

static int f_destroy_cq(struct ibv_cq *cq) {
    fk_cq *q = (fk_cq *)cq;
    pthread_mutex_lock(&mu);
    fake_stat.live_cq--;
    pthread_mutex_unlock(&mu);
    free(q->wc);
    free(q);
    return 0;
}

/* ---- QPs ---- */

static struct ibv_qp *f_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a) {
    fake_device *d = &dev_of(pd->context)->cfg;
    if (a->qp_type != IBV_QPT_RC || a->cap.max_send_wr > (uint32_t)d->max_qp_wr ||
        a->cap.max_inline_data > d->max_inline) {
        errno = EINVAL;
        return NULL;
    }
    fk_qp *q = calloc(1, sizeof *q);
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = a->send_cq;
    q->qp.recv_cq = a->recv_cq;
    q->qp.qp_type = IBV_QPT_RC;
    q->qp.state = IBV_QPS_RESET;
    q->cq = (fk_cq *)a->send_cq;
    q->max_inline = a->cap.max_inline_data;
    q->q = calloc(QDEPTH, sizeof *q->q);
    pthread_mutex_lock(&mu);
    q->qp.qp_num = next_qpn++;
    for (int i = 0; i < MAX_OBJ; i++)
        if (!qps[i]) { qps[i] = q; break; }
    fake_stat.live_qp++;
    pthread_mutex_unlock(&mu);
    return &q->qp;
}

static int f_destroy_qp(struct ibv_qp *qp) {
    fk_qp *q = (fk_qp *)qp;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAX_OBJ; i++)
        if (qps[i] == q) qps[i] = NULL;
    fake_stat.live_qp--;
    pthread_mutex_unlock(&mu);
    free(q->q);
    free(q);
    return 0;
}

static int has(int mask, int bits) {
    return (mask & bits) == bits;
}

static int f_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
    fk_qp *q = (fk_qp *)qp;
    pthread_mutex_lock(&mu);
    int rc = 0;
    enum ibv_qp_state from = qp->state, to = a->qp_state;
    if (!(mask & IBV_QP_STATE)) rc = EINVAL;
    else if (fake_knob.fail_modify_count > 0 && to == fake_knob.fail_modify_to &&
             (!fake_knob.fail_modify_qpn_parity || (int)(qp->qp_num & 1) == (fake_knob.fail_modify_qpn_parity & 1))) {
        fake_knob.fail_modify_count--;
        rc = EINVAL;
    } else if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
        if (!has(mask, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ||
            !port_of(qp->context, a->port_num) ||
            !(a->qp_access_flags & IBV_ACCESS_REMOTE_ATOMIC)) rc = EINVAL;
        else { q->port = a->port_num; fake_stat.to_init++; }
    } else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
        fake_port *p = port_of(qp->context, q->port);
        int roce = p->link_layer == IBV_LINK_LAYER_ETHERNET;
        if (!has(mask, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) ||
            a->path_mtu > p->mtu || a->max_dest_rd_atomic == 0) rc = EINVAL;
        else if (roce && (!a->ah_attr.is_global || a->ah_attr.grh.sgid_index >= p->gid_tbl_len ||
                          !memcmp(p->gid[a->ah_attr.grh.sgid_index], (uint8_t[16]){0}, 16)))
            rc = EINVAL; /* RoCE needs a GRH with a real source GID */
        else if (!roce && !a->ah_attr.is_global && a->ah_attr.dlid == 0) rc = EINVAL;
        else {
            q->dest = a->dest_qp_num;
            fake_stat.to_rtr++;
            fake_stat.last_is_global = a->ah_attr.is_global;
            fake_stat.last_sgid_index = a->ah_attr.grh.sgid_index;
            fake_stat.last_dlid = a->ah_attr.dlid;
            fake_stat.last_path_mtu = a->path_mtu;
        }
    } else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
        if (!has(mask, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_MAX_QP_RD_ATOMIC) || a->retry_cnt > 7 || a->timeout > 31)
            rc = EINVAL;
        else fake_stat.to_rts++;
    } else if (to == IBV_QPS_ERR || to == IBV_QPS_RESET) {
        /* always allowed */
    } else {
        rc = EINVAL;
    }
    if (rc) fake_stat.bad_transitions++;
    else qp->state = to;
    pthread_mutex_unlock(&mu);
    return rc;
}

static fk_qp *qp_by_num(uint32_t n) {
    for (int i = 0; i < MAX_OBJ; i++)
        if (qps[i] && qps[i]->qp.qp_num == n) return qps[i];
    return NULL;
}

static fk_mr *mr_by(uint32_t key, int remote, uint64_t addr, uint64_t len) {
    for (int i = 0; i < MAX_OBJ; i++) {
        fk_mr *m = mrs[i];
        if (!m || (remote ? m->mr.rkey : m->mr.lkey) != key) continue;
        uint64_t b = (uintptr_t)m->mr.addr;
        if (addr >= b && addr + len <= b + m->mr.length) return m;
        return NULL;
    }
    return NULL;
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    fk_qp *q = (fk_qp *)qp;
    pthread_mutex_lock(&mu);
    for (; wr; wr = wr->next) {
        if (qp->state != IBV_QPS_RTS || q->n == QDEPTH || wr->num_sge != 1) {
            *bad = wr;
            pthread_mutex_unlock(&mu);
            return EINVAL;
        }
        fk_req *r = &q->q[(q->head + q->n) % QDEPTH];
        r->wr = *wr;
        r->sge = wr->sg_list[0];
        r->wr.sg_list = &r->sge;
        r->wr.next = NULL;
        if (wr->send_flags & IBV_SEND_INLINE) {
            fake_stat.inline_wrs++;
            if (r->sge.length > q->max_inline || r->sge.length > sizeof r->inl) fake_stat.over_inline++;
            else memcpy(r->inl, (void *)(uintptr_t)r->sge.addr, r->sge.length);
        }
        fake_port *p = port_of(qp->context, q->port);
        if (r->sge.length > p->max_msg) fake_stat.over_max_msg++;
        if (r->sge.length > fake_stat.max_len) fake_stat.max_len = r->sge.length;
        if (wr->send_flags & IBV_SEND_FENCE) fake_stat.fenced++;
        if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) fake_stat.cas_wrs++;
        if (wr->opcode == IBV_WR_RDMA_WRITE) fake_stat.write_wrs++;
        fake_stat.last_opcodes[0] = fake_stat.last_opcodes[1];
        fake_stat.last_flags[0] = fake_stat.last_flags[1];
        fake_stat.last_opcodes[1] = wr->opcode;
        fake_stat.last_flags[1] = wr->send_flags;
        r->due = q->cq->polls + fake_knob.delay_polls;
        q->n++;
        fake_stat.posted++;
        if (q->n > fake_stat.max_outstanding) fake_stat.max_outstanding = q->n;
    }
    pthread_mutex_unlock(&mu);
    return 0;
}

/* Run one request; returns its completion status. */
static enum ibv_wc_status run(fk_qp *q, fk_req *r) {
    struct ibv_send_wr *wr = &r->wr;
    fake_stat.executed++;
    if (q->qp.state == IBV_QPS_ERR) return IBV_WC_WR_FLUSH_ERR;
    if (fake_knob.wc_error_at && fake_stat.executed == fake_knob.wc_error_at) return fake_knob.wc_error_status;
    if (fake_knob.wc_error_dest_qpn && q->dest == fake_knob.wc_error_dest_qpn) return fake_knob.wc_error_status;
    fk_qp *dst = qp_by_num(q->dest);
    if (!dst || dst->qp.state < IBV_QPS_RTR) return IBV_WC_RETRY_EXC_ERR;
    uint32_t len = r->sge.length;
    fake_port *p = port_of(q->qp.context, q->port);
    if (len > p->max_msg) return IBV_WC_LOC_LEN_ERR;
    void *local = (void *)(uintptr_t)r->sge.addr;
    int inl = (wr->send_flags & IBV_SEND_INLINE) != 0;
    if (inl) {
        if (wr->opcode != IBV_WR_RDMA_WRITE || len > q->max_inline) return IBV_WC_LOC_LEN_ERR;
        local = r->inl;
    } else if (!mr_by(r->sge.lkey, 0, r->sge.addr, len)) {
        return IBV_WC_LOC_PROT_ERR;
    }
    switch (wr->opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_READ: {
        fk_mr *m = mr_by(wr->wr.rdma.rkey, 1, wr->wr.rdma.remote_addr, len);
        int need = wr->opcode == IBV_WR_RDMA_WRITE ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
        if (!m || !(m->access & need)) return IBV_WC_REM_ACCESS_ERR;
        void *remote = (void *)(uintptr_t)wr->wr.rdma.remote_addr;
        if (wr->opcode == IBV_WR_RDMA_WRITE) memmove(remote, local, len);
        else memmove(local, remote, len);
        return IBV_WC_SUCCESS;
    }
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP: {
        uint64_t ra = wr->wr.atomic.remote_addr;
        fk_mr *m = mr_by(wr->wr.atomic.rkey, 1, ra, 8);
        if (!m || !(m->access & IBV_ACCESS_REMOTE_ATOMIC) || ra % 8 || len != 8)
            return IBV_WC_REM_ACCESS_ERR;
        uint64_t *t = (uint64_t *)(uintptr_t)ra, old = *t;
        if (wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) *t = old + wr->wr.atomic.compare_add;
        else if (old == wr->wr.atomic.compare_add) *t = wr->wr.atomic.swap;
        memcpy(local, &old, 8);
        return IBV_WC_SUCCESS;
    }
    default:
        return IBV_WC_LOC_QP_OP_ERR;
    }
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    fk_cq *c = (fk_cq *)cq;
    pthread_mutex_lock(&mu);
    c->polls++;
    if (!fake_knob.black_hole) {
        for (int i = 0; i < MAX_OBJ; i++) {
            fk_qp *q = qps[i];
            if (!q || q->cq != c) continue;
            while (q->n > 0 && q->q[q->head].due <= c->polls && c->n_wc < c->cap) {
                fk_req *r = &q->q[q->head];
                enum ibv_wc_status s = run(q, r);
                if (s != IBV_WC_SUCCESS) q->qp.state = IBV_QPS_ERR;
                if ((r->wr.send_flags & IBV_SEND_SIGNALED) || s != IBV_WC_SUCCESS) {
                    struct ibv_wc *w = &c->wc[c->n_wc++];
                    memset(w, 0, sizeof *w);
                    w->wr_id = r->wr.wr_id;
                    w->status = s;
                    w->qp_num = q->qp.qp_num;
                }
                q->head = (q->head + 1) % QDEPTH;
                q->n--;
            }
        }
    }
    int max = fake_knob.max_per_poll ? fake_knob.max_per_poll : n;
    if (max > n) max = n;
    int got = c->n_wc < max ? c->n_wc : max;
    memcpy(wc, c->wc, sizeof *wc * (size_t)got);
    memmove(c->wc, c->wc + got, sizeof *wc * (size_t)(c->n_wc - got));
    c->n_wc -= got;
    pthread_mutex_unlock(&mu);
    return got;
}

static const char *f_wc_status_str(enum ibv_wc_status s) {
    switch (s) {
    case IBV_WC_SUCCESS: return "success";
    case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
    case IBV_WC_REM_ACCESS_ERR: return "remote access error";
    case IBV_WC_WR_FLUSH_ERR: return "Work Request Flushed Error";
    default: return "other error";
    }
}

struct ibv_fns fake_fns = {
    .get_device_list = f_get_device_list,
    .free_device_list = f_free_device_list,
    .get_device_name = f_get_device_name,
    .open_device = f_open_device,
    .close_device = f_close_device,
    .query_device = f_query_device,
    .query_port = f_query_port,
    .query_gid = f_query_gid,
    .gid_type = f_gid_type,
    .alloc_pd = f_alloc_pd,
    .dealloc_pd = f_dealloc_pd,
    .reg_mr = f_reg_mr,
    .reg_dmabuf_mr = f_reg_dmabuf_mr,
    .dereg_mr = f_dereg_mr,
    .create_cq = f_create_cq,
    .destroy_cq = f_destroy_cq,
    .create_qp = f_create_qp,
    .modify_qp = f_modify_qp,
    .destroy_qp = f_destroy_qp,
    .post_send = f_post_send,
    .poll_cq = f_poll_cq,
    .wc_status_str = f_wc_status_str,
};

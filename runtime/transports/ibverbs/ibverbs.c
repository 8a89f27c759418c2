/*
 * The ibverbs transport: one RC queue pair to each PE it must reach, RDMA
 * WRITE/READ for puts and gets, NIC atomics for the atomic family.
 *
 * - Device/port: SYMM_IB_DEVICE=name[:port], else the active device nearest
 *   to the PE's GPU (PCI topology), else the first device with an active port.
 * - Addressing: RoCE uses a GID (SYMM_IB_GID_INDEX, else the IPv4-mapped
 *   RoCE v2 GID; never assumed to be index 0); InfiniBand uses the LID.
 * - Connections: QP numbers, GIDs and LIDs travel through core->allgather;
 *   every PE reports success or failure in the same exchange, so a PE that
 *   cannot connect makes all of them fail together instead of hanging.
 * - Memory: each heap chunk is registered at mem_add and the (address, rkey)
 *   of every PE is allgathered. Local buffers inside a registered chunk are
 *   used in place; others go inline (small puts) or through a registered
 *   bounce buffer.
 * - Completions: every work request is signalled and counted per peer;
 *   blocking ops wait for their peer's count to reach zero, quiet for all.
 *   Every wait polls core->check_failed and ends after a bound without
 *   completions, so a lost peer is SYMM_ERR_PEER_FAILED, not a hang.
 * - Atomics: 64-bit FETCH_ADD and CMP_SWP are native; every other op, and
 *   every 32-bit op (on the containing aligned 64-bit word), is a CMP_SWP
 *   loop that starts from an atomic read (FETCH_ADD of 0).
 */
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


#include "ibv_fns.h"
#include <symm/symm.h>
#include "ibv_internal.h"

const struct ibv_fns *ibv__F;
static const char *F_why = "";

/* ---- small helpers ---------------------------------------------------- */

int32_t ibv__fail(const symm_tp_core *core, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int32_t ibv__fail(const symm_tp_core *core, int32_t status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return core->set_error(core->core, status, msg);
}

void ibv__log(const symm_tp_core *core, int32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ibv__log(const symm_tp_core *core, int32_t level, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core->log(core->core, level, msg);
}

uint64_t ibv__now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *ibv__env(const symm_tp_core *core, const char *name) {
    const char *v = core->getenv(core->core, name);
    return v && *v ? v : NULL;
}

int ibv__gid_is_zero(const union ibv_gid *g) {
    static const uint8_t z[16];
    return memcmp(g->raw, z, 16) == 0;
}

int ibv__gid_is_v4mapped(const union ibv_gid *g) {
    static const uint8_t pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(g->raw, pre, 12) == 0;
}

static void gid_str(const union ibv_gid *g, char *out, size_t cap) {
    if (ibv__gid_is_v4mapped(g))
        snprintf(out, cap, "::ffff:%u.%u.%u.%u", g->raw[12], g->raw[13], g->raw[14], g->raw[15]);
    else
        snprintf(out, cap, "%02x%02x:%02x%02x:...:%02x%02x", g->raw[0], g->raw[1], g->raw[2],
                 g->raw[3], g->raw[14], g->raw[15]);
}

/* ---- probe ------------------------------------------------------------ */

static int32_t ibv_probe(const symm_tp_core *core, char *why, size_t why_len) {
    if (!F) {
        snprintf(why, why_len, "%s", F_why);
        return SYMM_ERR_NOT_SUPPORTED;
    }
    ibv_tp st;
    memset(&st, 0, sizeof st);
    st.core = core;
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    int32_t rc = ibv__pick_device(&st, &da, &pa, why, why_len);
    if (rc) return rc;
    F->close_device(st.ctx);
    return 0;
}

/* ---- memory ------------------------------------------------------------- */

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                IBV_ACCESS_REMOTE_ATOMIC)

static int32_t ibv_mem_add(void *state, void *base, uint64_t heap_off, uint64_t len,
                           uint32_t mem_kind, int dmabuf_fd) {
    ibv_tp *st = state;
    const symm_tp_core *core = st->core;
    pthread_mutex_lock(&st->mu);
    char why[300] = {0};
    int32_t status = 0;
    struct ibv_mr *mr = NULL;
    if (st->pd) {
        if (mem_kind == SYMM_TP_MEM_CUDA) {
            if (dmabuf_fd >= 0 && F->reg_dmabuf_mr)
                mr = F->reg_dmabuf_mr(st->pd, 0, len, (uintptr_t)base, dmabuf_fd, ACCESS);
            if (!mr) /* peer-memory kernel modules (nvidia-peermem) take the pointer itself */
                mr = F->reg_mr(st->pd, base, len, ACCESS);
            if (!mr) {
                status = SYMM_ERR_NOT_SUPPORTED;
                snprintf(why, sizeof why,
                         "GPU memory cannot be registered (%s%s): the NIC needs dma-buf support "
                         "(ibv_reg_dmabuf_mr) or nvidia-peermem", strerror(errno),
                         F->reg_dmabuf_mr ? "" : "; libibverbs has no ibv_reg_dmabuf_mr");
            }
        } else {
            mr = F->reg_mr(st->pd, base, len, ACCESS);
            if (!mr) {
                status = errno == ENOMEM ? SYMM_ERR_OUT_OF_MEMORY : SYMM_ERR_SYSTEM;
                snprintf(why, sizeof why, "ibv_reg_mr of %llu bytes failed (%s%s)",
                         (unsigned long long)len, strerror(errno),
                         errno == ENOMEM ? ": raise the locked-memory limit, ulimit -l" : "");
            }
        }
    }
    ibv_region *regs = realloc(st->regs, sizeof *regs * (size_t)(st->n_regs + 1));
    if (regs) st->regs = regs;
    if (!regs && !status) {
        status = SYMM_ERR_OUT_OF_MEMORY;
        snprintf(why, sizeof why, "out of host memory");
    }
    /* Data operations of other threads may run during the exchange
     * (transport.h, "Thread safety"): regs is consistent, mu released. */
    pthread_mutex_unlock(&st->mu);
    uint64_t *raddr, *rkey;
    int32_t rc = symm__tp_mem_exchange(core, "ibverbs: ", status, why, (uintptr_t)base,
                                       mr ? mr->rkey : 0, heap_off, len, &raddr, &rkey);
    if (rc) {
        if (mr) F->dereg_mr(mr);
        return rc;
    }
    pthread_mutex_lock(&st->mu);
    st->regs[st->n_regs++] = (ibv_region){
        .off = heap_off, .len = len, .base = base, .mr = mr, .raddr = raddr, .rkey = rkey};
    pthread_mutex_unlock(&st->mu);
    return 0;
}

static void release_mr(ibv_region *r) {
    F->dereg_mr(r->mr);
}

static void ibv_mem_remove(void *state, uint64_t heap_off, uint64_t len) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    symm__tp_region_remove(st->regs, &st->n_regs, heap_off, len, release_mr);
    pthread_mutex_unlock(&st->mu);
}

/* ---- connection set-up ------------------------------------------------ */

typedef struct conn_msg { /* followed by uint32_t qpn[n] */
    uint32_t status; /* 0, or why this PE could not open */
    uint32_t mtu;
    uint16_t lid;
    uint8_t roce, global;
    uint32_t pad;
    uint8_t gid[16];
} conn_msg;

static uint32_t psn_of(uint32_t qpn) {
    return (qpn * 2654435761u) & 0xffffffu;
}

static int32_t qp_init(ibv_tp *st, struct ibv_qp *qp, char *why, size_t why_len) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = st->port;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    int e = F->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (e) snprintf(why, why_len, "QP %u RESET->INIT failed (%s)", qp->qp_num, strerror(e));
    return e ? SYMM_ERR_SYSTEM : 0;
}

static int32_t qp_connect(ibv_tp *st, struct ibv_qp *qp, const conn_msg *peer, uint32_t qpn,
                          char *why, size_t why_len) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = (enum ibv_mtu)(peer->mtu < (uint32_t)st->mtu ? peer->mtu : (uint32_t)st->mtu);
    a.dest_qp_num = qpn;
    a.rq_psn = psn_of(qpn);
    a.max_dest_rd_atomic = (uint8_t)st->dest_rd_atomic;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = st->port;
    a.ah_attr.dlid = peer->lid;
    if (st->global || peer->global) {
        a.ah_attr.is_global = 1;
        memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
        a.ah_attr.grh.sgid_index = (uint8_t)st->gid_index;
        a.ah_attr.grh.hop_limit = 64;
    }
    int e = F->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                                     IBV_QP_MIN_RNR_TIMER);
    if (e) {
        snprintf(why, why_len, "QP %u INIT->RTR failed (%s)", qp->qp_num, strerror(e));
        return SYMM_ERR_SYSTEM;
    }
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = psn_of(qp->qp_num);
    a.timeout = st->ack_timeout;
    a.retry_cnt = RETRY_CNT;
    a.rnr_retry = 3;
    a.max_rd_atomic = (uint8_t)st->rd_atomic;
    e = F->modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
    if (e) {
        snprintf(why, why_len, "QP %u RTR->RTS failed (%s)", qp->qp_num, strerror(e));
        return SYMM_ERR_SYSTEM;
    }
    return 0;
}

static void ibv_close(void *state) {
    ibv_tp *st = state;
    if (!st) return;
    for (int32_t i = 0; st->peers && i < st->n; i++)
        if (st->peers[i].qp) F->destroy_qp(st->peers[i].qp);
    for (int i = 0; i < st->n_regs; i++) symm__tp_region_free(&st->regs[i], release_mr);
    if (st->bounce_mr) F->dereg_mr(st->bounce_mr);
    if (st->cq) F->destroy_cq(st->cq);
    if (st->pd) F->dealloc_pd(st->pd);
    if (st->ctx) F->close_device(st->ctx);
    free(st->bounce);
    free(st->regs);
    free(st->recs);
    free(st->peers);
    pthread_mutex_destroy(&st->mu);
    free(st);
}

/* The ACK timeout exponent (4.096 us * 2^t per try, RETRY_CNT + 1 tries):
 * the NIC gives up on a silent peer within about SYMM_PEER_TIMEOUT_MS, but
 * never sooner than ~2 s (software RoCE under load answers late). */
static void pick_timeouts(ibv_tp *st) {
    double per_try_us = (double)st->core->peer_timeout_ms * 1000.0 / (RETRY_CNT + 1);
    uint8_t t = 16;
    while (t < 24 && 4.096 * (double)(1u << t) < per_try_us) t++;
    st->ack_timeout = t;
    uint32_t nic_ms = (uint32_t)(4.096 * (double)(1u << t) * (RETRY_CNT + 1) / 1000.0);
    st->stall_ms = 2 * nic_ms + st->core->peer_timeout_ms;
}

/* Local part of open: device, PD, CQ, QPs in INIT, bounce buffer. */
static int32_t open_local(ibv_tp *st, const uint8_t *reach, int n_reach, char *why,
                          size_t why_len) {
    struct ibv_device_attr da;
    struct ibv_port_attr pa;
    int32_t rc = ibv__pick_device(st, &da, &pa, why, why_len);
    if (!rc) rc = ibv__pick_address(st, &pa, why, why_len);
    if (rc) return rc;
    st->mtu = pa.active_mtu;
    st->max_msg = pa.max_msg_sz;
    st->atomic_cap = da.atomic_cap;
    st->rd_atomic = da.max_qp_rd_atom < (int)RD_ATOMIC_MAX ? (uint32_t)da.max_qp_rd_atom : RD_ATOMIC_MAX;
    st->dest_rd_atomic =
        da.max_qp_init_rd_atom < (int)RD_ATOMIC_MAX ? (uint32_t)da.max_qp_init_rd_atom : RD_ATOMIC_MAX;
    if (st->rd_atomic == 0) st->rd_atomic = 1;
    if (st->dest_rd_atomic == 0) st->dest_rd_atomic = 1;
    uint32_t depth = SQ_DEPTH_MAX;
    if ((uint32_t)da.max_qp_wr < depth) depth = (uint32_t)da.max_qp_wr;
    if ((uint32_t)da.max_cqe / (uint32_t)n_reach < depth) depth = (uint32_t)da.max_cqe / (uint32_t)n_reach;
    if (depth < 2) {
        snprintf(why, why_len, "the device's queues are too small (max_qp_wr %d, max_cqe %d)",
                 da.max_qp_wr, da.max_cqe);
        return SYMM_ERR_NOT_SUPPORTED;
    }
    st->sq_depth = depth;
    pick_timeouts(st);
    st->pd = F->alloc_pd(st->ctx);
    if (!st->pd) {
        snprintf(why, why_len, "ibv_alloc_pd failed (%s)", strerror(errno));
        return SYMM_ERR_SYSTEM;
    }
    st->n_recs = (int32_t)(depth * (uint32_t)n_reach);
    st->cq = F->create_cq(st->ctx, st->n_recs, NULL, NULL, 0);
    st->recs = calloc((size_t)st->n_recs, sizeof *st->recs);
    st->bounce = aligned_alloc(4096, BOUNCE_BYTES);
    if (!st->cq || !st->recs || !st->bounce) {
        snprintf(why, why_len, "%s", !st->cq ? "ibv_create_cq failed" : "out of host memory");
        return !st->cq ? SYMM_ERR_SYSTEM : SYMM_ERR_OUT_OF_MEMORY;
    }
    for (int32_t i = 0; i < st->n_recs; i++) st->recs[i].next_free = i + 1 < st->n_recs ? i + 1 : -1;
    st->rec_free = 0;
    st->bounce_mr = F->reg_mr(st->pd, st->bounce, BOUNCE_BYTES, IBV_ACCESS_LOCAL_WRITE);
    if (!st->bounce_mr) {
        snprintf(why, why_len, "ibv_reg_mr of the %u-byte bounce buffer failed (%s)", BOUNCE_BYTES,
                 strerror(errno));
        return errno == ENOMEM ? SYMM_ERR_OUT_OF_MEMORY : SYMM_ERR_SYSTEM;
    }
    uint32_t inl = INLINE_WANT;
    for (int32_t pe = 0; pe < st->n; pe++) {
        if (!reach[pe]) continue;
        struct ibv_qp_init_attr qa;
        struct ibv_qp *qp;
        for (;;) {
            memset(&qa, 0, sizeof qa);
            qa.send_cq = st->cq;
            qa.recv_cq = st->cq;
            qa.qp_type = IBV_QPT_RC;
            qa.sq_sig_all = 0;
            qa.cap.max_send_wr = depth;
            qa.cap.max_recv_wr = 1;
            qa.cap.max_send_sge = 1;
            qa.cap.max_recv_sge = 1;
            qa.cap.max_inline_data = inl;
            qp = F->create_qp(st->pd, &qa);
            if (qp || inl == 0) break;
            inl = inl > 32 ? inl / 2 : 0; /* the device wants less inline data */
        }
        if (!qp) {
            snprintf(why, why_len, "ibv_create_qp failed (%s)", strerror(errno));
            return SYMM_ERR_SYSTEM;
        }
        st->peers[pe].qp = qp;
        st->max_inline = qa.cap.max_inline_data < inl ? qa.cap.max_inline_data : inl;
        rc = qp_init(st, qp, why, why_len);
        if (rc) return rc;
    }
    return 0;
}

/* First exchange: every PE learns who could not open and every QP number
 * (all: n records of msg_len bytes). status/why: this PE's own outcome. */
static int32_t exchange_qps(ibv_tp *st, int32_t status, const char *why, char *mine, char *all,
                            size_t msg_len) {
    const symm_tp_core *core = st->core;
    conn_msg *cm = (conn_msg *)mine;
    uint32_t *qpn = (uint32_t *)(mine + sizeof(conn_msg));
    cm->status = (uint32_t)status;
    cm->mtu = st->mtu;
    cm->lid = st->lid;
    cm->roce = (uint8_t)st->roce;
    cm->global = (uint8_t)st->global;
    memcpy(cm->gid, st->gid.raw, 16);
    for (int32_t i = 0; st->peers && i < st->n; i++)
        qpn[i] = st->peers[i].qp ? st->peers[i].qp->qp_num : 0;
    int32_t rc = core->allgather(core->core, mine, all, msg_len);
    if (status) return ibv__fail(core, status, "ibverbs: PE %d: %s", st->me, why);
    if (rc) return rc;
    for (int32_t i = 0; i < st->n; i++) {
        const conn_msg *pm = (const conn_msg *)(all + (size_t)i * msg_len);
        if (pm->status)
            return ibv__fail(core, (int32_t)pm->status,
                             "ibverbs: PE %d could not set up its RDMA device (status %u; its "
                             "error says why)", i, pm->status);
    }
    return 0;
}

/* Connect: RTR and RTS towards each reached PE, then a second exchange:
 * did every PE connect? (also a barrier: all are RTS). all is scratch for
 * that exchange when out of memory. */
static int32_t connect_qps(ibv_tp *st, const uint8_t *reach, char *all, size_t msg_len) {
    const symm_tp_core *core = st->core;
    const int32_t n = st->n, me = st->me;
    int32_t status = 0, rc;
    char why[400] = {0};
    for (int32_t i = 0; i < n && !status; i++) {
        if (!reach[i]) continue;
        const conn_msg *pm = (const conn_msg *)(all + (size_t)i * msg_len);
        const uint32_t *pq = (const uint32_t *)((const char *)pm + sizeof(conn_msg));
        if (pm->roce != st->roce) {
            status = SYMM_ERR_NOT_SUPPORTED;
            snprintf(why, sizeof why, "PE %d uses %s, this PE %s: one fabric kind per job", i,
                     pm->roce ? "RoCE" : "InfiniBand", st->roce ? "RoCE" : "InfiniBand");
            break;
        }
        status = qp_connect(st, st->peers[i].qp, pm, pq[me], why, sizeof why);
    }
    uint32_t ok = (uint32_t)status, *oks = calloc((uint32_t)n, sizeof *oks);
    rc = core->allgather(core->core, &ok, oks ? (void *)oks : (void *)all, sizeof ok);
    if (status) {
        rc = ibv__fail(core, status, "ibverbs: PE %d: %s", me, why);
    } else if (!rc) {
        for (int32_t i = 0; i < n && oks; i++)
            if (oks[i]) {
                rc = ibv__fail(core, (int32_t)oks[i],
                          "ibverbs: PE %d could not connect its queue pairs (status %u; its error says why)",
                          i, oks[i]);
                break;
            }
    }
    free(oks);
    return rc;
}

static void describe(ibv_tp *st, symm_tp_info *info) {
    info->caps = SYMM_TP_CAP_LOOPBACK |
                 (st->atomic_cap == IBV_ATOMIC_GLOB ? SYMM_TP_CAP_ATOMIC_GLOBAL : 0) |
                 (F->reg_dmabuf_mr ? SYMM_TP_CAP_GPU_MEM : 0);
    info->max_msg = st->max_msg;
    if (!st->ctx) {
        snprintf(info->device, sizeof info->device, "none (no peer to reach)");
        return;
    }
    char g[32];
    gid_str(&st->gid, g, sizeof g);
    if (st->roce || st->global)
        snprintf(info->device, sizeof info->device, "%.16s:%u gid %d %s",
                 F->get_device_name(st->ctx->device), st->port, st->gid_index, g);
    else
        snprintf(info->device, sizeof info->device, "%.32s:%u lid %u",
                 F->get_device_name(st->ctx->device), st->port, st->lid);
    ibv__log(st->core, 1, "ibverbs: %s, mtu %d, max_msg %llu, inline %u, queue depth %u, ack timeout 2^%u",
          info->device, 128 << st->mtu, (unsigned long long)st->max_msg, st->max_inline,
          st->sq_depth, st->ack_timeout);
}

static int32_t ibv_open(const symm_tp_core *core, uint32_t loopback, void **state,
                        symm_tp_info *info) {
    if (!F) return ibv__fail(core, SYMM_ERR_NOT_SUPPORTED, "ibverbs: %s", F_why);
    int32_t n = core->n_pes, me = core->my_pe;
    ibv_tp *st = calloc(1, sizeof *st);
    uint8_t *reach = calloc((size_t)n, 1);
    size_t msg_len = sizeof(conn_msg) + sizeof(uint32_t) * (size_t)n;
    char *all = calloc((size_t)n, msg_len);
    char *mine = calloc(1, msg_len);
    char why[400] = {0};
    int32_t status = 0;
    if (!st || !reach || !all || !mine) {
        free(st); free(reach); free(all); free(mine);
        return ibv__fail(core, SYMM_ERR_OUT_OF_MEMORY, "ibverbs: out of host memory");
    }
    pthread_mutex_init(&st->mu, NULL);
    st->core = core;
    st->n = n;
    st->me = me;
    st->peers = calloc((size_t)n, sizeof *st->peers);
    int n_reach = 0;
    for (int32_t i = 0; i < n; i++) {
        reach[i] = core->remote[i] || (loopback && core->host_id[i] == core->host_id[me]);
        n_reach += reach[i];
    }
    if (!st->peers) {
        status = SYMM_ERR_OUT_OF_MEMORY;
        snprintf(why, sizeof why, "out of host memory");
    } else if (n_reach) {
        status = open_local(st, reach, n_reach, why, sizeof why);
    }
    int32_t rc = exchange_qps(st, status, why, mine, all, msg_len);
    if (!rc) rc = connect_qps(st, reach, all, msg_len);
    free(all);
    free(mine);
    free(reach);
    if (rc) {
        ibv_close(st);
        return rc;
    }
    if (info) describe(st, info);
    *state = st;
    return 0;
}

static const symm_tp_ops ops = {
    .size = sizeof(symm_tp_ops),
    .iface = SYMM_TP_IFACE,
    .name = "ibverbs",
    .probe = ibv_probe,
    .open = ibv_open,
    .mem_add = ibv_mem_add,
    .mem_remove = ibv_mem_remove,
    .put = ibv__put,
    .get = ibv__get,
    .atomic = ibv__atomic,
    .put_signal = ibv__put_signal,
    .fence = ibv__fence,
    .quiet = ibv__quiet,
    .progress = ibv__progress,
    .peer_failed = ibv__peer_failed,
    .close = ibv_close,
};

const symm_tp_ops *symm__ibv_ops(const struct ibv_fns *fns, const char *why) {
    F = fns;
    F_why = why ? why : "libibverbs is not available";
    return &ops;
}


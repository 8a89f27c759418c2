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

#ifndef SQ_DEPTH_MAX
#define SQ_DEPTH_MAX   256u
#endif
#define INLINE_WANT    128u
#define BOUNCE_BYTES   (4u << 20)
#define BOUNCE_CHUNK   (1u << 20)
#define RD_ATOMIC_MAX  16u
#define RETRY_CNT      7u
#ifndef SPINS_BEFORE_YIELD
#define SPINS_BEFORE_YIELD 64u /* empty polls before a waiter starts yielding its CPU */
#endif

static const struct ibv_fns *F;
static const char *F_why = "";

typedef struct ibv_peer {
    struct ibv_qp *qp;   /* NULL: not reached by this transport          */
    uint32_t inflight;   /* signalled work requests not yet completed     */
    uint32_t reads;      /* ... of which READs and atomics                */
    uint64_t bytes;      /* ... and the bytes they move                   */
    int failed;          /* a completion error or a stall: 1 + wc status  */
} ibv_peer;

typedef struct ibv_region {
    uint64_t off, len;
    char *base;
    struct ibv_mr *mr;
    uint64_t *raddr; /* [n_pes] */
    uint32_t *rkey;  /* [n_pes] */
} ibv_region;

typedef struct ibv_rec { /* one outstanding work request */
    int32_t pe;
    int32_t next_free;
    int live;           /* posted, not yet completed */
    int read;           /* a READ or an atomic (what a later request may pass) */
    uint64_t bytes;
    int bounce;         /* holds a piece of the bounce buffer */
    void *copy_to;      /* on success: memcpy(copy_to, copy_from, copy_len) */
    const void *copy_from;
    size_t copy_len;
} ibv_rec;

typedef struct ibv_tp {
    const symm_tp_core *core;
    int32_t me, n;
    pthread_mutex_t mu;
    volatile int news; /* peer_failed() was called */

    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *cq;
    uint8_t port;
    int roce, global, gid_index;
    union ibv_gid gid;
    uint16_t lid;
    enum ibv_mtu mtu;
    uint64_t max_msg;
    uint32_t max_inline, sq_depth, rd_atomic, dest_rd_atomic;
    int atomic_cap;
    uint8_t ack_timeout;
    uint32_t stall_ms;

    ibv_peer *peers; /* [n] */
    uint32_t inflight;
    uint64_t bytes;  /* moved by the requests in flight */
    ibv_rec *recs;
    int32_t rec_free, n_recs;

    ibv_region *regs;
    int n_regs;

    char *bounce;
    struct ibv_mr *bounce_mr;
    size_t bounce_used;
    uint32_t bounce_refs;
} ibv_tp;

/* ---- small helpers ---------------------------------------------------- */

static int32_t fail(const symm_tp_core *core, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int32_t fail(const symm_tp_core *core, int32_t status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return core->set_error(core->core, status, msg);
}

static void logf_(const symm_tp_core *core, int32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(const symm_tp_core *core, int32_t level, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core->log(core->core, level, msg);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *env(const symm_tp_core *core, const char *name) {
    const char *v = core->getenv(core->core, name);
    return v && *v ? v : NULL;
}

static int gid_is_zero(const union ibv_gid *g) {
    static const uint8_t z[16];
    return memcmp(g->raw, z, 16) == 0;
}

static int gid_is_v4mapped(const union ibv_gid *g) {
    static const uint8_t pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(g->raw, pre, 12) == 0;
}

static void gid_str(const union ibv_gid *g, char *out, size_t cap) {
    if (gid_is_v4mapped(g))
        snprintf(out, cap, "::ffff:%u.%u.%u.%u", g->raw[12], g->raw[13], g->raw[14], g->raw[15]);
    else
        snprintf(out, cap, "%02x%02x:%02x%02x:...:%02x%02x", g->raw[0], g->raw[1], g->raw[2],
                 g->raw[3], g->raw[14], g->raw[15]);
}

/* ---- device, port and GID --------------------------------------------- */

/* Parse SYMM_IB_DEVICE=name[:port]. */
static int32_t parse_device_env(const symm_tp_core *core, const char *v, char *name, size_t cap,
                                int *port) {
    const char *colon = strrchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : strlen(v);
    *port = 0;
    if (len == 0 || len >= cap)
        return fail(core, SYMM_ERR_INVALID_ARG, "SYMM_IB_DEVICE=\"%s\": expected name[:port]", v);
    memcpy(name, v, len);
    name[len] = 0;
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p < 1 || p > 255)
            return fail(core, SYMM_ERR_INVALID_ARG,
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
static int32_t pick_device(ibv_tp *st, struct ibv_device_attr *da, struct ibv_port_attr *pa,
                           char *why, size_t why_len) {
    const symm_tp_core *core = st->core;
    char want[64] = {0};
    int want_port = 0;
    const char *v = env(core, "SYMM_IB_DEVICE");
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
static int32_t pick_address(ibv_tp *st, const struct ibv_port_attr *pa, char *why,
                            size_t why_len) {
    const symm_tp_core *core = st->core;
    const char *name = F->get_device_name(st->ctx->device);
    st->roce = pa->link_layer == IBV_LINK_LAYER_ETHERNET;
    st->lid = pa->lid;
    st->gid_index = -1;
    const char *v = env(core, "SYMM_IB_GID_INDEX");
    if (v) {
        char *end;
        long i = strtol(v, &end, 10);
        if (*end || i < 0 || i >= pa->gid_tbl_len) {
            snprintf(why, why_len, "SYMM_IB_GID_INDEX=\"%s\": %s:%u has GID indexes 0..%d", v,
                     name, st->port, pa->gid_tbl_len - 1);
            return SYMM_ERR_INVALID_ARG;
        }
        if (F->query_gid(st->ctx, st->port, (int)i, &st->gid) != 0 || gid_is_zero(&st->gid)) {
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
        if (F->query_gid(st->ctx, st->port, i, &g) != 0 || gid_is_zero(&g)) continue;
        int t = F->gid_type(st->ctx, st->port, i);
        int score = gid_is_v4mapped(&g) ? (t == SYMM_IBV_GID_ROCE_V2 ? 4 : t == SYMM_IBV_GID_UNKNOWN ? 3 : 1)
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
    int32_t rc = pick_device(&st, &da, &pa, why, why_len);
    if (rc) return rc;
    F->close_device(st.ctx);
    return 0;
}

/* ---- completions -------------------------------------------------------- */

static int32_t peer_error(ibv_tp *st, int32_t pe) {
    int f = st->peers[pe].failed;
    if (f == 1 + (int)IBV_WC_SUCCESS) /* a stall, not a work completion error */
        return fail(st->core, SYMM_ERR_PEER_FAILED,
                    "ibverbs: PE %d stopped answering (no completion for %u ms)", pe, st->stall_ms);
    if (f == -1)
        return fail(st->core, SYMM_ERR_PEER_FAILED,
                    "ibverbs: cannot post to PE %d: its queue pair is in error", pe);
    return fail(st->core, SYMM_ERR_PEER_FAILED, "ibverbs: PE %d failed: %s (wc status %d)", pe,
                F->wc_status_str((enum ibv_wc_status)(f - 1)), f - 1);
}

/* Poll the CQ once; returns completions seen, or -1 (error set). */
static int poll_once(ibv_tp *st) {
    struct ibv_wc wc[16];
    int got = F->poll_cq(st->cq, 16, wc);
    if (got < 0) {
        fail(st->core, SYMM_ERR_SYSTEM, "ibverbs: ibv_poll_cq failed (%d)", got);
        return -1;
    }
    for (int i = 0; i < got; i++) {
        int32_t idx = (int32_t)wc[i].wr_id - 1;
        if (idx < 0 || idx >= st->n_recs) continue; /* not ours: cannot happen */
        ibv_rec *r = &st->recs[idx];
        ibv_peer *p = &st->peers[r->pe];
        if (wc[i].status == IBV_WC_SUCCESS) {
            if (r->copy_to) memcpy(r->copy_to, r->copy_from, r->copy_len);
        } else if (!p->failed) {
            p->failed = 1 + (int)wc[i].status;
            logf_(st->core, 0, "ibverbs: PE %d: work completion error %s (%d)", r->pe,
                  F->wc_status_str(wc[i].status), (int)wc[i].status);
        }
        p->inflight--;
        st->inflight--;
        p->reads -= (uint32_t)r->read;
        p->bytes -= r->bytes;
        st->bytes -= r->bytes;
        if (r->bounce && --st->bounce_refs == 0) st->bounce_used = 0;
        r->copy_to = NULL;
        r->live = 0;
        r->next_free = st->rec_free;
        st->rec_free = idx;
    }
    return got;
}

/* A wait gave up: results still in flight must not land later in buffers
 * the caller has given back (blocking ops fetch into their stack frames). */
static int32_t give_up(ibv_tp *st, int32_t rc) {
    for (int32_t i = 0; i < st->n_recs; i++)
        if (st->recs[i].live) st->recs[i].copy_to = NULL;
    return rc;
}

/* How long a wait may see no completion before it declares the peer lost:
 * the NIC's own retry bound (st->stall_ms), plus the time the bytes in
 * flight need at a floor rate of 128 KiB/s (one 1 MiB WRITE on a loaded
 * software RoCE can take seconds; it completes only at its end). */
static uint64_t stall_limit(ibv_tp *st, int32_t pe) {
    uint64_t bytes = pe >= 0 ? st->peers[pe].bytes : st->bytes;
    return st->stall_ms + bytes / 131u;
}

/* Wait until pe's (or, pe < 0, everyone's) outstanding count is <= max.
 * The clock is read only every 256 empty polls: in a VM without a vDSO
 * clock (hpet) clock_gettime is a system call of ~1.5 us. */
static int32_t wait_for(ibv_tp *st, int32_t pe, uint32_t max) {
    const symm_tp_core *core = st->core;
    uint64_t last = 0; /* when completions were last seen moving; 0: not yet read */
    int moved = 0;
    for (uint32_t spins = 0;; spins++) {
        int got = poll_once(st);
        if (got < 0) return give_up(st, SYMM_ERR_SYSTEM);
        if (pe >= 0 && st->peers[pe].failed) return give_up(st, peer_error(st, pe));
        if ((pe >= 0 ? st->peers[pe].inflight : st->inflight) <= max) return 0;
        moved |= got > 0;
        if ((spins & 15) == 15 && (st->news || core->check_failed(core->core) != 0))
            return give_up(st, fail(core, SYMM_ERR_PEER_FAILED,
                                    "ibverbs: the job lost a PE while waiting for completions"));
        if ((spins & 255) == 255) {
            uint64_t now = now_ms();
            if (!last || moved) {
                last = now;
                moved = 0;
            } else if (now - last > stall_limit(st, pe)) {
                for (int32_t i = 0; i < st->n; i++)
                    if (st->peers[i].inflight && (pe < 0 || i == pe) && !st->peers[i].failed)
                        st->peers[i].failed = 1 + (int)IBV_WC_SUCCESS;
                for (int32_t i = 0; i < st->n; i++)
                    if (st->peers[i].failed && (pe < 0 || i == pe)) return give_up(st, peer_error(st, i));
                return give_up(st, fail(core, SYMM_ERR_PEER_FAILED, "ibverbs: no completion for %llu ms",
                                        (unsigned long long)stall_limit(st, pe)));
            }
        }
        if (spins > SPINS_BEFORE_YIELD) sched_yield();
    }
}

/* Bounce space of n bytes (n <= BOUNCE_BYTES), waiting for old users. */
static int32_t bounce_get(ibv_tp *st, size_t n, char **out) {
    n = (n + 63) & ~(size_t)63;
    if (st->bounce_used + n > BOUNCE_BYTES) {
        int32_t rc = wait_for(st, -1, 0);
        if (rc) return rc;
        st->bounce_used = 0;
    }
    *out = st->bounce + st->bounce_used;
    st->bounce_used += n;
    return 0;
}

/* Post one signalled work request to pe. copy_* run when it succeeds. */
static int32_t post(ibv_tp *st, int32_t pe, struct ibv_send_wr *wr, int bounce, void *copy_to,
                    const void *copy_from, size_t copy_len) {
    ibv_peer *p = &st->peers[pe];
    if (p->failed) return peer_error(st, pe);
    if (p->inflight >= st->sq_depth) {
        int32_t rc = wait_for(st, pe, st->sq_depth - 1);
        if (rc) return rc;
    }
    int32_t idx = st->rec_free; /* never empty: n_recs covers every queue's depth */
    ibv_rec *r = &st->recs[idx];
    st->rec_free = r->next_free;
    r->pe = pe;
    r->live = 1;
    r->bounce = bounce;
    r->copy_to = copy_to;
    r->copy_from = copy_from;
    r->copy_len = copy_len;
    wr->wr_id = (uint64_t)idx + 1;
    wr->next = NULL;
    wr->send_flags |= IBV_SEND_SIGNALED;
    struct ibv_send_wr *bad = NULL;
    int err = F->post_send(p->qp, wr, &bad);
    if (err) {
        r->live = 0;
        r->next_free = st->rec_free;
        st->rec_free = idx;
        if (!p->failed) p->failed = -1;
        return fail(st->core, SYMM_ERR_PEER_FAILED,
                    "ibverbs: ibv_post_send to PE %d failed (%s): its queue pair is in error", pe,
                    strerror(err));
    }
    p->inflight++;
    st->inflight++;
    r->read = wr->opcode != IBV_WR_RDMA_WRITE;
    r->bytes = wr->sg_list[0].length;
    p->reads += (uint32_t)r->read;
    p->bytes += r->bytes;
    st->bytes += r->bytes;
    if (bounce) st->bounce_refs++;
    return 0;
}

/* ---- regions ------------------------------------------------------------ */

static ibv_region *region_of_off(ibv_tp *st, uint64_t off) {
    for (int i = 0; i < st->n_regs; i++)
        if (off >= st->regs[i].off && off - st->regs[i].off < st->regs[i].len) return &st->regs[i];
    return NULL;
}

/* The registered region holding local [p, p+1), or NULL. */
static ibv_region *region_of_ptr(ibv_tp *st, const void *p) {
    const char *c = p;
    for (int i = 0; i < st->n_regs; i++)
        if (c >= st->regs[i].base && (uint64_t)(c - st->regs[i].base) < st->regs[i].len)
            return &st->regs[i];
    return NULL;
}

/* Remote address, rkey and how many bytes from off stay in one region. */
static int32_t remote_at(ibv_tp *st, int32_t pe, uint64_t off, uint64_t n, uint64_t *raddr,
                         uint32_t *rkey, uint64_t *room) {
    ibv_region *r = region_of_off(st, off);
    if (!r)
        return fail(st->core, SYMM_ERR_OUT_OF_BOUNDS,
                    "ibverbs: heap offset %llu of PE %d is not registered (no mem_add covers it)",
                    (unsigned long long)off, pe);
    *raddr = r->raddr[pe] + (off - r->off);
    *rkey = r->rkey[pe];
    *room = r->off + r->len - off;
    if (*room > n) *room = n;
    return 0;
}

static int32_t check_pe(ibv_tp *st, int32_t pe) {
    if (pe < 0 || pe >= st->n || !st->peers[pe].qp)
        return fail(st->core, SYMM_ERR_INTERNAL,
                    "ibverbs: PE %d is not connected through this transport", pe);
    if (st->peers[pe].failed) return peer_error(st, pe);
    return 0;
}

/* ---- RMA ---------------------------------------------------------------- */

static int32_t rma(ibv_tp *st, int is_put, int32_t pe, uint64_t off, char *local, uint64_t n) {
    while (n > 0) {
        uint64_t raddr, chunk;
        uint32_t rkey;
        int32_t rc = remote_at(st, pe, off, n, &raddr, &rkey, &chunk);
        if (rc) return rc;
        if (st->max_msg && chunk > st->max_msg) chunk = st->max_msg;
        struct ibv_sge sge;
        struct ibv_send_wr wr;
        memset(&wr, 0, sizeof wr);
        wr.opcode = is_put ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.wr.rdma.remote_addr = raddr;
        wr.wr.rdma.rkey = rkey;
        ibv_region *lr = region_of_ptr(st, local);
        void *copy_to = NULL;
        const void *copy_from = NULL;
        int bounce = 0;
        if (lr) {
            uint64_t lroom = lr->len - (uint64_t)(local - lr->base);
            if (chunk > lroom) chunk = lroom;
            sge.addr = (uintptr_t)local;
            sge.lkey = lr->mr->lkey;
        } else if (is_put && chunk <= st->max_inline) {
            sge.addr = (uintptr_t)local;
            sge.lkey = 0;
            wr.send_flags = IBV_SEND_INLINE;
        } else {
            char *b;
            if (chunk > BOUNCE_CHUNK) chunk = BOUNCE_CHUNK;
            rc = bounce_get(st, chunk, &b);
            if (rc) return rc;
            if (is_put) {
                memcpy(b, local, chunk);
            } else {
                copy_to = local;
                copy_from = b;
            }
            sge.addr = (uintptr_t)b;
            sge.lkey = st->bounce_mr->lkey;
            bounce = 1;
        }
        sge.length = (uint32_t)chunk;
        rc = post(st, pe, &wr, bounce, copy_to, copy_from, chunk);
        if (rc) return rc;
        off += chunk;
        local += chunk;
        n -= chunk;
    }
    return 0;
}

static int32_t put_bytes(ibv_tp *st, int32_t pe, uint64_t off, const char *src, uint64_t n);

static int32_t ibv_put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc) rc = put_bytes(st, pe, off, src, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = wait_for(st, pe, 0);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static int32_t ibv_get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc) rc = rma(st, 0, pe, off, dst, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = wait_for(st, pe, 0);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ---- atomics ------------------------------------------------------------ */

/* One native 64-bit atomic on pe's word at off: FETCH_ADD (cmp_swp = 0) or
 * CMP_SWP. old (may be NULL) receives the prior value once it completes;
 * wait = 0 leaves that to the next quiet. */
static int32_t native(ibv_tp *st, int32_t pe, uint64_t off, int cmp_swp, uint64_t add_or_cmp,
                      uint64_t swap, void *old, int wait) {
    uint64_t raddr, room;
    uint32_t rkey;
    int32_t rc = remote_at(st, pe, off, 8, &raddr, &rkey, &room);
    if (rc) return rc;
    if (room < 8)
        return fail(st->core, SYMM_ERR_OUT_OF_BOUNDS, "ibverbs: atomic at offset %llu crosses a region",
                    (unsigned long long)off);
    char *slot;
    rc = bounce_get(st, 8, &slot);
    if (rc) return rc;
    struct ibv_sge sge = {.addr = (uintptr_t)slot, .length = 8, .lkey = st->bounce_mr->lkey};
    struct ibv_send_wr wr;
    memset(&wr, 0, sizeof wr);
    wr.opcode = cmp_swp ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = add_or_cmp;
    wr.wr.atomic.swap = swap;
    rc = post(st, pe, &wr, 1, old, slot, 8);
    if (rc || !wait) return rc;
    return wait_for(st, pe, 0);
}

/* The element's new value for op, or 0 when op writes nothing. */
static int apply(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t *out) {
    switch (op) {
    case SYMM_AMO_FETCH: return 0;
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: *out = v; break;
    case SYMM_AMO_COMPARE_SWAP: if (old != cmp) return 0; *out = v; break;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC:
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: *out = old + v; break;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: *out = old & v; break;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: *out = old | v; break;
    case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR: *out = old ^ v; break;
    default: return 0;
    }
    return 1;
}

/* Any op, 4 or 8 bytes, as a CMP_SWP loop on the aligned 64-bit word. */
static int32_t emulate(ibv_tp *st, int32_t pe, uint64_t off, uint32_t width, uint32_t op,
                       uint64_t v, uint64_t cmp, uint64_t *fetched) {
    uint64_t word = off & ~(uint64_t)7;
    unsigned shift = (unsigned)(off - word) * 8;
    uint64_t mask = width == 8 ? ~(uint64_t)0 : (uint64_t)0xffffffffu;
    uint64_t cur;
    int32_t rc = native(st, pe, word, 0, 0, 0, &cur, 1); /* atomic read */
    for (;;) {
        if (rc) return rc;
        uint64_t old = (cur >> shift) & mask, nv;
        if (!apply(op, old, v & mask, cmp & mask, &nv) || (nv & mask) == old) {
            *fetched = old;
            return 0;
        }
        uint64_t next = (cur & ~(mask << shift)) | ((nv & mask) << shift), got;
        rc = native(st, pe, word, 1, cur, next, &got, 1);
        if (!rc && got == cur) {
            *fetched = old;
            return 0;
        }
        cur = got;
    }
}

/* Write k (< 8) bytes of the 64-bit word holding off, keeping the rest of
 * the word, with a CMP_SWP loop. A plain WRITE there could be undone: the
 * NIC performs an atomic as a read and a write of all 8 bytes, and on an
 * ATOMIC_HCA device (rxe, most NICs) nothing orders that against a WRITE of
 * the word's other bytes. 32-bit atomics are CMP_SWP loops on the containing
 * word, so a put of a neighbouring 32-bit element landing inside one was
 * lost (p2p_atomic over rxe). Atomics among themselves are serialised. A
 * word that crosses the registered range's end gets the plain WRITE. */
static int32_t merge_word(ibv_tp *st, int32_t pe, uint64_t off, const char *src, uint32_t k) {
    uint64_t word = off & ~(uint64_t)7, raddr, room;
    uint32_t rkey;
    int32_t rc = remote_at(st, pe, word, 8, &raddr, &rkey, &room);
    if (rc || room < 8) return rma(st, 1, pe, off, (char *)(uintptr_t)src, k);
    unsigned at = (unsigned)(off - word);
    uint64_t cur, got;
    rc = native(st, pe, word, 0, 0, 0, &cur, 1); /* atomic read */
    for (;;) {
        if (rc) return rc;
        uint64_t next = cur;
        memcpy((char *)&next + at, src, k); /* little-endian, as emulate() */
        if (next == cur) return 0;
        rc = native(st, pe, word, 1, cur, next, &got, 1);
        if (!rc && got == cur) return 0;
        cur = got;
    }
}

/* A put: whole 64-bit words by WRITE (rma), partial words at either end by
 * merge_word, unless the device has no atomics (then nothing emulates one). */
static int32_t put_bytes(ibv_tp *st, int32_t pe, uint64_t off, const char *src, uint64_t n) {
    if (st->atomic_cap == IBV_ATOMIC_NONE || n == 0) return rma(st, 1, pe, off, (char *)(uintptr_t)src, n);
    int32_t rc = 0;
    if (off & 7) {
        uint64_t head = 8 - (off & 7);
        if (head > n) head = n;
        rc = merge_word(st, pe, off, src, (uint32_t)head);
        off += head;
        src += head;
        n -= head;
    }
    uint64_t tail = n & 7, mid = n - tail;
    if (!rc && mid) rc = rma(st, 1, pe, off, (char *)(uintptr_t)src, mid);
    if (!rc && tail) rc = merge_word(st, pe, off + mid, src + mid, (uint32_t)tail);
    return rc;
}

static uint32_t dtype_width(uint32_t dtype) {
    return dtype == SYMM_DTYPE_INT32 || dtype == SYMM_DTYPE_UINT32 || dtype == SYMM_DTYPE_FLOAT32
               ? 4u : 8u;
}

static int32_t atomic_locked(ibv_tp *st, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                             const void *value, const void *compare, void *fetched,
                             uint32_t flags) {
    int32_t rc = check_pe(st, pe);
    if (rc) return rc;
    if (st->atomic_cap == IBV_ATOMIC_NONE)
        return fail(st->core, SYMM_ERR_NOT_SUPPORTED, "ibverbs: the device has no RDMA atomics");
    uint32_t width = dtype_width(dtype);
    if (off % width)
        return fail(st->core, SYMM_ERR_INVALID_ARG, "ibverbs: atomic offset %llu is not %u-aligned",
                    (unsigned long long)off, width);
    uint64_t v = 0, cmp = 0;
    if (value) memcpy(&v, value, width);
    if (compare) memcpy(&cmp, compare, width);
    int nbi = (flags & SYMM_TP_NBI) != 0;
    if (width == 8) {
        switch (op) {
        case SYMM_AMO_FETCH_ADD: case SYMM_AMO_FETCH_INC: case SYMM_AMO_ADD: case SYMM_AMO_INC:
        case SYMM_AMO_FETCH:
            return native(st, pe, off, 0, op == SYMM_AMO_FETCH ? 0 : v, 0, fetched, !nbi);
        case SYMM_AMO_COMPARE_SWAP:
            return native(st, pe, off, 1, cmp, v, fetched, !nbi);
        default: break;
        }
    }
    uint64_t old = 0;
    rc = emulate(st, pe, off, width, op, v, cmp, &old); /* blocking: nbi may finish early */
    if (!rc && fetched) memcpy(fetched, &old, width);
    return rc;
}

static int32_t ibv_atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched, uint32_t flags) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = atomic_locked(st, pe, off, dtype, op, value, compare, fetched, flags);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* The data WRITEs, then the signal's atomic on the same RC queue pair. The
 * responder executes a QP's requests in PSN order and an atomic may not pass
 * an earlier WRITE (only later requests may pass an earlier READ), so the
 * signal changes after the data is placed; no IBV_SEND_FENCE is needed (it
 * waits for earlier READs/atomics only, and rxe stalled fenced signals). */
static int32_t ibv_put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc && sig_off % 8)
        rc = fail(st->core, SYMM_ERR_INVALID_ARG, "ibverbs: signal offset %llu is not 8-aligned",
                  (unsigned long long)sig_off);
    if (!rc && sig_op != SYMM_SIGNAL_SET && sig_op != SYMM_SIGNAL_ADD)
        rc = fail(st->core, SYMM_ERR_INVALID_ARG, "ibverbs: unknown signal op %u", sig_op);
    if (!rc) rc = put_bytes(st, pe, off, src, n);
    if (!rc) {
        if (sig_op == SYMM_SIGNAL_ADD) {
            rc = native(st, pe, sig_off, 0, sig_value, 0, NULL, !(flags & SYMM_TP_NBI));
        } else {
            uint64_t old;
            rc = emulate(st, pe, sig_off, 8, SYMM_AMO_SET, sig_value, 0, &old);
        }
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* WRITEs and atomics to one PE already execute in order on its RC QP; only a
 * later request can pass an earlier READ/atomic. So fence waits for the PEs
 * with READs/atomics in flight, and is free otherwise. (Not IBV_SEND_FENCE:
 * rxe left fenced requests stalled for good in the mp suites.) */
static int32_t ibv_fence(void *state) {
    ibv_tp *st = state;
    int32_t rc = 0;
    pthread_mutex_lock(&st->mu);
    for (int32_t i = 0; i < st->n && !rc; i++)
        if (st->peers[i].reads > 0) rc = wait_for(st, i, 0);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static int32_t ibv_quiet(void *state) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = wait_for(st, -1, 0);
    for (int32_t i = 0; !rc && i < st->n; i++)
        if (st->peers[i].failed) rc = peer_error(st, i);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static void ibv_progress(void *state) {
    ibv_tp *st = state;
    if (pthread_mutex_trylock(&st->mu) != 0) return; /* someone is polling already */
    if (st->cq) poll_once(st);
    pthread_mutex_unlock(&st->mu);
}

static void ibv_peer_failed(void *state) {
    ibv_tp *st = state;
    st->news = 1;
}

/* ---- memory ------------------------------------------------------------- */

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
                IBV_ACCESS_REMOTE_ATOMIC)

typedef struct mem_msg {
    uint32_t status, rkey; /* status: 0, or why this PE could not register */
    uint64_t addr;
} mem_msg;

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
    mem_msg mine = {.status = (uint32_t)status, .rkey = mr ? mr->rkey : 0, .addr = (uintptr_t)base};
    mem_msg *all = calloc((size_t)st->n, sizeof *all);
    ibv_region *regs = realloc(st->regs, sizeof *regs * (size_t)(st->n_regs + 1));
    if (regs) st->regs = regs;
    uint64_t *raddr = calloc((size_t)st->n, sizeof *raddr);
    uint32_t *rkey = calloc((size_t)st->n, sizeof *rkey);
    if (!all || !regs || !raddr || !rkey) {
        if (!status) {
            status = SYMM_ERR_OUT_OF_MEMORY;
            snprintf(why, sizeof why, "out of host memory");
        }
        mine.status = (uint32_t)status;
    }
    /* Without room for the answers this PE cannot take part (a few bytes per
     * PE: not worth a fallback); every other case reports through the exchange. */
    int32_t rc = all ? core->allgather(core->core, &mine, all, sizeof mine) : SYMM_ERR_OUT_OF_MEMORY;
    int32_t bad = -1;
    for (int32_t i = 0; all && i < st->n; i++)
        if (all[i].status && bad < 0) bad = i;
    if (status) {
        rc = fail(core, status, "ibverbs: registering heap [%llu, +%llu): %s",
                  (unsigned long long)heap_off, (unsigned long long)len, why);
    } else if (rc) {
        /* the core's error stands */
    } else if (bad >= 0) {
        rc = fail(core, (int32_t)all[bad].status,
                  "ibverbs: PE %d could not register heap [%llu, +%llu) (status %u; its error says why)",
                  bad, (unsigned long long)heap_off, (unsigned long long)len, all[bad].status);
    }
    if (rc) {
        if (mr) F->dereg_mr(mr);
        free(all);
        free(raddr);
        free(rkey);
        pthread_mutex_unlock(&st->mu);
        return rc;
    }
    for (int32_t i = 0; i < st->n; i++) {
        raddr[i] = all[i].addr;
        rkey[i] = all[i].rkey;
    }
    free(all);
    st->regs[st->n_regs++] = (ibv_region){
        .off = heap_off, .len = len, .base = base, .mr = mr, .raddr = raddr, .rkey = rkey};
    pthread_mutex_unlock(&st->mu);
    return 0;
}

static void region_free(ibv_region *r) {
    if (r->mr) F->dereg_mr(r->mr);
    free(r->raddr);
    free(r->rkey);
}

static void ibv_mem_remove(void *state, uint64_t heap_off, uint64_t len) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    for (int i = 0; i < st->n_regs; i++) {
        /* by start: a range is added once per offset (len is only checked
         * not to be shorter, so a caller's rounding cannot leak the MR) */
        if (st->regs[i].off == heap_off && len >= st->regs[i].len) {
            region_free(&st->regs[i]);
            st->regs[i] = st->regs[--st->n_regs];
            break;
        }
    }
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
    for (int i = 0; i < st->n_regs; i++) region_free(&st->regs[i]);
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
    int32_t rc = pick_device(st, &da, &pa, why, why_len);
    if (!rc) rc = pick_address(st, &pa, why, why_len);
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

static int32_t ibv_open(const symm_tp_core *core, uint32_t loopback, void **state,
                        symm_tp_info *info) {
    if (!F) return fail(core, SYMM_ERR_NOT_SUPPORTED, "ibverbs: %s", F_why);
    int32_t n = core->n_pes, me = core->my_pe;
    ibv_tp *st = calloc(1, sizeof *st);
    uint8_t *reach = calloc((size_t)n, 1);
    size_t msg_len = sizeof(conn_msg) + sizeof(uint32_t) * (size_t)n;
    char *all = calloc((size_t)n, msg_len);
    char *mine = calloc(1, msg_len);
    char why[400] = {0};
    int32_t status = 0, rc;
    if (!st || !reach || !all || !mine) {
        free(st); free(reach); free(all); free(mine);
        return fail(core, SYMM_ERR_OUT_OF_MEMORY, "ibverbs: out of host memory");
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
    /* Exchange: everyone learns who could not open and every QP number. */
    conn_msg *cm = (conn_msg *)mine;
    uint32_t *qpn = (uint32_t *)(mine + sizeof(conn_msg));
    cm->status = (uint32_t)status;
    cm->mtu = st->mtu;
    cm->lid = st->lid;
    cm->roce = (uint8_t)st->roce;
    cm->global = (uint8_t)st->global;
    memcpy(cm->gid, st->gid.raw, 16);
    for (int32_t i = 0; st->peers && i < n; i++) qpn[i] = st->peers[i].qp ? st->peers[i].qp->qp_num : 0;
    rc = core->allgather(core->core, mine, all, msg_len);
    if (status) {
        rc = fail(core, status, "ibverbs: PE %d: %s", me, why);
        goto out;
    }
    if (rc) goto out;
    for (int32_t i = 0; i < n; i++) {
        const conn_msg *pm = (const conn_msg *)(all + (size_t)i * msg_len);
        if (pm->status) {
            rc = fail(core, (int32_t)pm->status,
                      "ibverbs: PE %d could not set up its RDMA device (status %u; its error says why)",
                      i, pm->status);
            goto out;
        }
    }
    /* Connect: RTR and RTS towards each reached PE. */
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
    /* Second exchange: did every PE connect? (also a barrier: all are RTS) */
    uint32_t ok = (uint32_t)status, *oks = calloc((size_t)n, sizeof *oks);
    rc = core->allgather(core->core, &ok, oks ? (void *)oks : (void *)all, sizeof ok);
    if (status) {
        rc = fail(core, status, "ibverbs: PE %d: %s", me, why);
    } else if (!rc) {
        for (int32_t i = 0; i < n && oks; i++)
            if (oks[i]) {
                rc = fail(core, (int32_t)oks[i],
                          "ibverbs: PE %d could not connect its queue pairs (status %u; its error says why)",
                          i, oks[i]);
                break;
            }
    }
    free(oks);
out:
    free(all);
    free(mine);
    free(reach);
    if (rc) {
        ibv_close(st);
        return rc;
    }
    if (info) {
        info->caps = SYMM_TP_CAP_LOOPBACK | (st->atomic_cap == IBV_ATOMIC_GLOB ? SYMM_TP_CAP_ATOMIC_GLOBAL : 0) |
                     (F->reg_dmabuf_mr ? SYMM_TP_CAP_GPU_MEM : 0);
        info->max_msg = st->max_msg;
        if (st->ctx) {
            char g[32];
            gid_str(&st->gid, g, sizeof g);
            if (st->roce || st->global)
                snprintf(info->device, sizeof info->device, "%.16s:%u gid %d %s",
                         F->get_device_name(st->ctx->device), st->port, st->gid_index, g);
            else
                snprintf(info->device, sizeof info->device, "%.32s:%u lid %u",
                         F->get_device_name(st->ctx->device), st->port, st->lid);
            logf_(core, 1, "ibverbs: %s, mtu %d, max_msg %llu, inline %u, queue depth %u, ack timeout 2^%u",
                  info->device, 128 << st->mtu, (unsigned long long)st->max_msg, st->max_inline,
                  st->sq_depth, st->ack_timeout);
        } else {
            snprintf(info->device, sizeof info->device, "none (no peer to reach)");
        }
    }
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
    .put = ibv_put,
    .get = ibv_get,
    .atomic = ibv_atomic,
    .put_signal = ibv_put_signal,
    .fence = ibv_fence,
    .quiet = ibv_quiet,
    .progress = ibv_progress,
    .peer_failed = ibv_peer_failed,
    .close = ibv_close,
};

const symm_tp_ops *symm__ibv_ops(const struct ibv_fns *fns, const char *why) {
    F = fns;
    F_why = why ? why : "libibverbs is not available";
    return &ops;
}

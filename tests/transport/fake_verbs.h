/*
 * An in-process fake of the verbs table (runtime/transports/ibverbs/ibv_fns.h)
 * for unit tests of the ibverbs transport without RDMA: configurable devices,
 * ports and GID tables; RC QPs with the RESET->INIT->RTR->RTS state machine
 * checked; WRITE/READ/FETCH_ADD/CMP_SWP executed between buffers of one
 * process (several "PEs" run as threads); completions delivered lazily (an
 * operation runs, and completes, only after some polls of its CQ); injected
 * errors; counts of live objects for leak checks. Thread-safe (one lock).
 */
#ifndef SYMM_FAKE_VERBS_H
#define SYMM_FAKE_VERBS_H

#include "ibv_fns.h"

#define FAKE_MAX_GIDS 8

typedef struct fake_port {
    enum ibv_port_state state;
    uint8_t link_layer; /* IBV_LINK_LAYER_ETHERNET / _INFINIBAND */
    enum ibv_mtu mtu;
    uint32_t max_msg;
    uint16_t lid;
    int gid_tbl_len;
    uint8_t gid[FAKE_MAX_GIDS][16];
    int gid_type[FAKE_MAX_GIDS]; /* SYMM_IBV_GID_* */
} fake_port;

typedef struct fake_device {
    char name[32];
    int n_ports;
    fake_port port[2];
    enum ibv_atomic_cap atomic_cap;
    int max_qp_wr, max_cqe, max_qp_rd_atom;
    uint32_t max_inline;
} fake_device;

typedef struct fake_knobs {
    enum ibv_qp_state fail_modify_to; /* a transition to this state fails ... */
    int fail_modify_count;            /* ... this many times (0: never)       */
    int fail_modify_qpn_parity;       /* ... only on QPs with odd (1) / even (2) qpn, 0: any */
    long wc_error_at;                 /* the Nth executed request (1-based) fails ... */
    enum ibv_wc_status wc_error_status;
    uint32_t wc_error_dest_qpn;       /* ... or every request to this QP (0: none) */
    int delay_polls;                  /* a request runs after this many polls of its CQ */
    int black_hole;                   /* requests never run nor complete */
    int max_per_poll;                 /* completions per poll_cq (0: as asked) */
    void *fail_reg_addr;              /* reg_mr / reg_dmabuf_mr of this address fails */
} fake_knobs;

typedef struct fake_stats {
    int live_ctx, live_pd, live_cq, live_qp, live_mr;
    int to_init, to_rtr, to_rts, bad_transitions;
    int last_is_global, last_sgid_index;
    uint16_t last_dlid;
    enum ibv_mtu last_path_mtu;
    long posted, executed, inline_wrs, over_max_msg, over_inline, fenced;
    long cas_wrs, write_wrs; /* CMP_SWP and RDMA WRITE requests posted */
    uint64_t max_len;
    int max_outstanding; /* most requests queued on one QP at once */
    int dmabuf_regs;
    int last_opcodes[2];      /* opcodes of the last two posted requests */
    unsigned last_flags[2];
} fake_stats;

extern fake_knobs fake_knob;
extern fake_stats fake_stat;
extern struct ibv_fns fake_fns;

/* Forget every device and object (objects still alive are leaked on purpose:
 * tests check live counts first) and reset knobs and stats. */
void fake_reset(void);
void fake_add_device(const fake_device *d);
/* A RoCE device "name" with one active port, GIDs [fe80 v1, fe80 v2,
 * ::ffff:ip v1, ::ffff:ip v2] and generous limits. */
fake_device fake_roce_device(const char *name, uint8_t ip_last);
/* Requests queued and not yet run, over all QPs. */
int fake_pending(void);

#endif

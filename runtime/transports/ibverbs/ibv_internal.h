/*
 * The ibverbs transport's shared state and the helpers its files share:
 * ibverbs.c (probe, memory registration, connection set-up, the ops table),
 * ibv_device.c (device, port and GID choice), ibv_data.c (completions, RMA,
 * atomics, ordering). libibverbs is reached only through the table F
 * (ibv_fns.h), filled at load time.
 */
#ifndef SYMM_IBV_INTERNAL_H
#define SYMM_IBV_INTERNAL_H

#include <stdint.h>

#include "ibv_fns.h"
#include "runtime/transports/tp_common.h"
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


typedef struct ibv_peer {
    struct ibv_qp *qp;   /* NULL: not reached by this transport          */
    uint32_t inflight;   /* signalled work requests not yet completed     */
    uint32_t reads;      /* ... of which READs and atomics                */
    uint64_t bytes;      /* ... and the bytes they move                   */
    int failed;          /* a completion error or a stall: 1 + wc status  */
} ibv_peer;

/* mr: struct ibv_mr *; rkey: the 32-bit rkeys (tp_common.h) */
typedef symm__tp_region ibv_region;

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

/* libibverbs, as loaded (ibverbs.c); F_why says why it is NULL. */
extern const struct ibv_fns *ibv__F;
#define F ibv__F

/* Small helpers (ibverbs.c). */
int32_t ibv__fail(const symm_tp_core *core, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void ibv__log(const symm_tp_core *core, int32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
uint64_t ibv__now_ms(void);
const char *ibv__env(const symm_tp_core *core, const char *name);
int ibv__gid_is_zero(const union ibv_gid *g);
int ibv__gid_is_v4mapped(const union ibv_gid *g);

/* Device, port and address (ibv_device.c). */
int32_t ibv__pick_device(ibv_tp *st, struct ibv_device_attr *da, struct ibv_port_attr *pa,
                         char *why, size_t why_len);
int32_t ibv__pick_address(ibv_tp *st, const struct ibv_port_attr *pa, char *why,
                          size_t why_len);

/* The data path (ibv_data.c): the ops table's entries. */
int32_t ibv__put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                 uint32_t flags);
int32_t ibv__get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n, uint32_t flags);
int32_t ibv__atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                    const void *value, const void *compare, void *fetched, uint32_t flags);
int32_t ibv__put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                        uint64_t sig_off, uint64_t sig_value, uint32_t sig_op, uint32_t flags);
int32_t ibv__fence(void *state);
int32_t ibv__quiet(void *state);
void ibv__progress(void *state);
void ibv__peer_failed(void *state);

#endif /* SYMM_IBV_INTERNAL_H */

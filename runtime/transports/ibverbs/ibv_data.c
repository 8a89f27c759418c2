/* The ibverbs transport's data path: completions, RMA, atomics, ordering. */
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

/* ---- completions -------------------------------------------------------- */

static int32_t peer_error(ibv_tp *st, int32_t pe) {
    int f = st->peers[pe].failed;
    if (f == 1 + (int)IBV_WC_SUCCESS) /* a stall, not a work completion error */
        return ibv__fail(st->core, SYMM_ERR_PEER_FAILED,
                    "ibverbs: PE %d stopped answering (no completion for %u ms)", pe, st->stall_ms);
    if (f == -1)
        return ibv__fail(st->core, SYMM_ERR_PEER_FAILED,
                    "ibverbs: cannot post to PE %d: its queue pair is in error", pe);
    return ibv__fail(st->core, SYMM_ERR_PEER_FAILED, "ibverbs: PE %d failed: %s (wc status %d)", pe,
                F->wc_status_str((enum ibv_wc_status)(f - 1)), f - 1);
}

/* Poll the CQ once; returns completions seen, or -1 (error set). */
static int poll_once(ibv_tp *st) {
    struct ibv_wc wc[16];
    int got = F->poll_cq(st->cq, 16, wc);
    if (got < 0) {
        ibv__fail(st->core, SYMM_ERR_SYSTEM, "ibverbs: ibv_poll_cq failed (%d)", got);
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
            ibv__log(st->core, 0, "ibverbs: PE %d: work completion error %s (%d)", r->pe,
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
 * clock (hpet) clock_gettime is a full system call, many times the cost of
 * a poll. */
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
            return give_up(st, ibv__fail(core, SYMM_ERR_PEER_FAILED,
                                    "ibverbs: the job lost a PE while waiting for completions"));
        if ((spins & 255) == 255) {
            uint64_t now = ibv__now_ms();
            if (!last || moved) {
                last = now;
                moved = 0;
            } else if (now - last > stall_limit(st, pe)) {
                for (int32_t i = 0; i < st->n; i++)
                    if (st->peers[i].inflight && (pe < 0 || i == pe) && !st->peers[i].failed)
                        st->peers[i].failed = 1 + (int)IBV_WC_SUCCESS;
                for (int32_t i = 0; i < st->n; i++)
                    if (st->peers[i].failed && (pe < 0 || i == pe)) return give_up(st, peer_error(st, i));
                return give_up(st, ibv__fail(core, SYMM_ERR_PEER_FAILED, "ibverbs: no completion for %llu ms",
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
        return ibv__fail(st->core, SYMM_ERR_PEER_FAILED,
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

static ibv_region *region_of_ptr(ibv_tp *st, const void *p) {
    return symm__tp_region_of_ptr(st->regs, st->n_regs, p);
}

/* Remote address, rkey and how many bytes from off stay in one region. */
static int32_t remote_at(ibv_tp *st, int32_t pe, uint64_t off, uint64_t n, uint64_t *raddr,
                         uint32_t *rkey, uint64_t *room) {
    uint64_t key;
    if (!symm__tp_remote_at(st->regs, st->n_regs, pe, off, n, raddr, &key, room))
        return ibv__fail(st->core, SYMM_ERR_OUT_OF_BOUNDS,
                    "ibverbs: heap offset %llu of PE %d is not registered (no mem_add covers it)",
                    (unsigned long long)off, pe);
    *rkey = (uint32_t)key;
    return 0;
}

static int32_t check_pe(ibv_tp *st, int32_t pe) {
    if (pe < 0 || pe >= st->n || !st->peers[pe].qp)
        return ibv__fail(st->core, SYMM_ERR_INTERNAL,
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
            sge.lkey = ((struct ibv_mr *)lr->mr)->lkey;
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

int32_t ibv__put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc) rc = put_bytes(st, pe, off, src, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = wait_for(st, pe, 0);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int32_t ibv__get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
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
        return ibv__fail(st->core, SYMM_ERR_OUT_OF_BOUNDS, "ibverbs: atomic at offset %llu crosses a region",
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
        if (!symm__tp_amo_next(op, old, v & mask, cmp & mask, &nv) || (nv & mask) == old) {
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
        return ibv__fail(st->core, SYMM_ERR_NOT_SUPPORTED, "ibverbs: the device has no RDMA atomics");
    uint32_t width = dtype_width(dtype);
    if (off % width)
        return ibv__fail(st->core, SYMM_ERR_INVALID_ARG, "ibverbs: atomic offset %llu is not %u-aligned",
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

int32_t ibv__atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
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
int32_t ibv__put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc) rc = symm__tp_check_signal(st->core, "ibverbs: ", sig_off, sig_op);
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
int32_t ibv__fence(void *state) {
    ibv_tp *st = state;
    int32_t rc = 0;
    pthread_mutex_lock(&st->mu);
    for (int32_t i = 0; i < st->n && !rc; i++)
        if (st->peers[i].reads > 0) rc = wait_for(st, i, 0);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int32_t ibv__quiet(void *state) {
    ibv_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = wait_for(st, -1, 0);
    for (int32_t i = 0; !rc && i < st->n; i++)
        if (st->peers[i].failed) rc = peer_error(st, i);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

void ibv__progress(void *state) {
    ibv_tp *st = state;
    if (pthread_mutex_trylock(&st->mu) != 0) return; /* someone is polling already */
    if (st->cq) poll_once(st);
    pthread_mutex_unlock(&st->mu);
}

void ibv__peer_failed(void *state) {
    ibv_tp *st = state;
    st->news = 1;
}


/*
 * The ofi transport (ofi_internal.h): posting (records, the bounce buffer, -FI_EAGAIN), RMA, and
 * the ordering calls (put_signal, fence, quiet).
 */
#include "ofi_internal.h"

/* ---- posting ------------------------------------------------------------ */

/* Bounce space of n bytes (n <= BOUNCE_BYTES), waiting for old users; the
 * reference is taken here and handed to the record by ofi__post(). */
int32_t ofi__bounce_get(ofi_tp *st, size_t n, char **out) {
    n = (n + 63) & ~(size_t)63;
    for (;;) {
        pthread_mutex_lock(&st->cq_mu);
        if (st->bounce_used + n <= BOUNCE_BYTES) {
            *out = st->bounce + st->bounce_used;
            st->bounce_used += n;
            st->bounce_refs++;
            pthread_mutex_unlock(&st->cq_mu);
            return 0;
        }
        pthread_mutex_unlock(&st->cq_mu);
        int32_t rc = ofi__wait_for(st, -1, 0);
        if (rc) return rc;
    }
}

void ofi__bounce_release(ofi_tp *st) {
    pthread_mutex_lock(&st->cq_mu);
    if (--st->bounce_refs == 0) st->bounce_used = 0;
    pthread_mutex_unlock(&st->cq_mu);
}


static ssize_t issue(ofi_tp *st, fi_addr_t dest, const ofi_op *o, void *ctx) {
    switch (o->kind) {
    case OP_WRITE:
        return fi_write(st->ep, o->buf, o->len, o->desc, dest, o->raddr, o->rkey, ctx);
    case OP_ATOMIC:
        return fi_atomic(st->ep, o->buf, 1, o->desc, dest, o->raddr, o->rkey, o->dt, o->aop, ctx);
    default:
        break;
    }
    /* Reads, fetching atomics and messages: their completion needs no
     * delivery completion (the data or the answer comes back; a message's
     * completion only frees its buffer), so they go through the msg forms
     * with plain FI_COMPLETION instead of the endpoint's default flags. */
    void *desc = o->desc;
    if (o->kind == OP_READ) {
        struct iovec iov = {o->buf, o->len};
        struct fi_rma_iov rio = {o->raddr, o->len, o->rkey};
        struct fi_msg_rma m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                               .rma_iov = &rio, .rma_iov_count = 1, .context = ctx};
        return fi_readmsg(st->ep, &m, FI_COMPLETION);
    }
    if (o->kind == OP_SEND) {
        struct iovec iov = {o->buf, o->len};
        struct fi_msg m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                           .context = ctx};
        return fi_sendmsg(st->ep, &m, FI_COMPLETION);
    }
    struct fi_ioc iov = {o->buf, 1}, cmp = {o->compare, 1}, res = {o->result, 1};
    struct fi_rma_ioc rio = {o->raddr, 1, o->rkey};
    struct fi_msg_atomic m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                              .rma_iov = &rio, .rma_iov_count = 1, .datatype = o->dt,
                              .op = o->aop, .context = ctx};
    if (o->kind == OP_FETCH) return fi_fetch_atomicmsg(st->ep, &m, &res, &desc, 1, FI_COMPLETION);
    return fi_compare_atomicmsg(st->ep, &m, &cmp, &desc, 1, &res, &desc, 1, FI_COMPLETION);
}

/* Undo a record that was never posted (cq_mu not held). */
static void unpost(ofi_tp *st, ofi_rec *r) {
    pthread_mutex_lock(&st->cq_mu);
    r->pending = 1;
    r->copy_to = NULL;
    ofi__rec_done(st, r, 0);
    pthread_mutex_unlock(&st->cq_mu);
}

/* A free record for one operation to pe, counted in flight (waiting for
 * one when all are in use): its index, or -1 - status. */
static int32_t rec_take(ofi_tp *st, int32_t pe, const ofi_op *o, int read, int bounce,
                        void *copy_to, const void *copy_from, size_t copy_len) {
    ofi_peer *p = &st->peers[pe];
    for (;;) {
        pthread_mutex_lock(&st->cq_mu);
        int32_t idx = st->rec_free;
        if (idx >= 0) {
            ofi_rec *r = &st->recs[idx];
            st->rec_free = r->next_free;
            *r = (ofi_rec){.pe = pe, .gen = r->gen + 1, .live = 1, .read = (uint8_t)read,
                           .bounce = (uint8_t)bounce,
                           .pending = o->kind == OP_SEND ? 2 : 1, .copy_gpu = o->copy_gpu,
                           .bytes = o->bytes                                   ? o->bytes
                                    : o->kind == OP_WRITE || o->kind == OP_READ ? o->len
                                                                                : 8,
                           .copy_to = copy_to, .copy_from = copy_from, .copy_len = copy_len};
            /* counted before posting: another thread may handle the completion at once */
            p->inflight++;
            st->inflight++;
            p->reads += (uint32_t)read;
            p->bytes += r->bytes;
            st->bytes += r->bytes;
            pthread_mutex_unlock(&st->cq_mu);
            return idx;
        }
        uint32_t busy = st->inflight;
        pthread_mutex_unlock(&st->cq_mu);
        int32_t rc = ofi__wait_for(st, -1, busy ? busy - 1 : 0);
        if (rc) return -1 - rc;
    }
}

/* Post one operation to pe, retrying -FI_EAGAIN after progress. On success
 * the record owns the bounce reference taken by bounce_get (bounce = 1) and,
 * when it completes, runs memcpy(copy_to, copy_from, copy_len). A message
 * (OP_SEND) carries its record's index as the token its answer names.
 * limit_ms: how long -FI_EAGAIN may last (0: stall_limit). */
int32_t ofi__post(ofi_tp *st, int32_t pe, ofi_op *o, int read, int bounce, void *copy_to,
                    const void *copy_from, size_t copy_len, uint64_t limit_ms) {
    ofi_peer *p = &st->peers[pe];
    int32_t idx = p->failed ? -1 - ofi__peer_error(st, pe)
                            : rec_take(st, pe, o, read, bounce, copy_to, copy_from, copy_len);
    if (idx < 0) {
        if (bounce) ofi__bounce_release(st);
        return -1 - idx;
    }
    ofi_rec *r = &st->recs[idx];
    if (o->kind == OP_SEND) ((am_msg *)o->buf)->token = (uint64_t)r->gen << 32 | (uint64_t)idx;
    uint64_t first = 0, idle_since = 0, limit = limit_ms ? limit_ms : ofi__stall_limit(st, pe);
    /* without a wait fd the progress thread stands aside while we post
     * (POST_ASIDE_MS) */
    const int aside = st->wait_fd < 0;
    for (uint32_t spins = 0;; spins++) {
        if (aside) {
            atomic_store_explicit(&st->post_us, now_us(), memory_order_relaxed);
            atomic_fetch_add(&st->posting, 1);
        }
        ssize_t ret = issue(st, p->addr, o, &r->ctx);
        if (aside) atomic_fetch_sub(&st->posting, 1);
        if (ret == 0) {
            atomic_store_explicit(&st->activity, 1, memory_order_relaxed);
            /* a message's answer is its proof of delivery: no flush for it */
            if (o->kind == OP_WRITE || o->kind == OP_ATOMIC) p->wrote = 1;
            return 0;
        }
        if (ret != -FI_EAGAIN) {
            unpost(st, r);
            pthread_mutex_lock(&st->cq_mu);
            ofi__mark_failed(st, pe, (int)-ret, "posting to it failed: %s", ferr((int)ret));
            pthread_mutex_unlock(&st->cq_mu);
            return ofi__peer_error(st, pe);
        }
        pthread_mutex_lock(&st->cq_mu);
        int got = ofi__poll_once(st);
        pthread_mutex_unlock(&st->cq_mu);
        int32_t rc = 0;
        if (got < 0) rc = SYMM_ERR_SYSTEM;
        else if (p->failed) rc = ofi__peer_error(st, pe);
        else if ((spins & 15) == 15 && ofi__news(st))
            rc = fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE while posting to PE %d",
                      pe);
        else if ((spins & 255) == 255) {
            uint64_t now = now_ms();
            if (!first) {
                first = now;
            } else if (now - first > limit) {
                pthread_mutex_lock(&st->cq_mu);
                ofi__mark_failed(st, pe, ETIMEDOUT, "it took no new operation for %llu ms (the "
                            "provider kept answering -FI_EAGAIN: unreachable or not progressing)",
                            (unsigned long long)(now - first));
                pthread_mutex_unlock(&st->cq_mu);
                rc = ofi__peer_error(st, pe);
            }
        }
        if (rc) {
            unpost(st, r);
            return rc;
        }
        if (spins > SPINS_BEFORE_YIELD) ofi__idle_wait(st, &idle_since);
    }
}

/* ---- regions ------------------------------------------------------------ */

static ofi_region *region_of_ptr(ofi_tp *st, const void *p) {
    return symm__tp_region_of_ptr(st->regs, st->n_regs, p);
}

/* Target address, key and how many bytes from off stay in one region. */
int32_t ofi__remote_at(ofi_tp *st, int32_t pe, uint64_t off, uint64_t n, uint64_t *raddr,
                         uint64_t *rkey, uint64_t *room) {
    if (!symm__tp_remote_at(st->regs, st->n_regs, pe, off, n, raddr, rkey, room))
        return fail(st->core, SYMM_ERR_OUT_OF_BOUNDS,
                    "heap offset %llu of PE %d is not registered (no mem_add covers it)",
                    (unsigned long long)off, pe);
    return 0;
}

int32_t ofi__check_pe(ofi_tp *st, int32_t pe) {
    if (pe < 0 || pe >= st->n || !st->peers[pe].reach)
        return fail(st->core, SYMM_ERR_INTERNAL, "PE %d is not reached through this transport "
                    "(not a remote PE and no loopback requested)", pe);
    if (st->peers[pe].failed) return ofi__peer_error(st, pe);
    if (atomic_load(&st->news))
        return fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE (an operation on PE %d "
                    "cannot complete)", pe);
    return 0;
}

/* ---- RMA ------------------------------------------------------------------ */

/* A staged range of pe (GPU memory without FI_HMEM): the piece [off, +n)
 * as messages of stage_chunk bytes of data at most, which pe's progress
 * applies with the core's mem_copy and answers (a get's answer carries the
 * data, copied to local when it comes). Pipelined: as many in flight as
 * the bounce buffer holds; a blocking caller waits for every answer. */
static int32_t staged_rma(ofi_tp *st, int is_put, int32_t pe, uint64_t off, char *local,
                          uint64_t n, int gpu) {
    while (n > 0) {
        uint32_t len = n < st->stage_chunk ? (uint32_t)n : st->stage_chunk;
        size_t bytes = sizeof(am_msg) + (is_put ? len : 0);
        char *b;
        int32_t rc = ofi__bounce_get(st, bytes, &b);
        if (rc) return rc;
        am_msg *m = (am_msg *)(void *)b;
        *m = (am_msg){.magic = AM_MAGIC, .kind = is_put ? AM_PUT : AM_GET, .len = len,
                      .src = st->me, .off = off, .key = st->peers[pe].am_key ^ st->am_key_flip};
        if (is_put && gpu) {
            rc = st->core->mem_copy(st->core->core, m + 1, local, len);
            if (rc) {
                ofi__bounce_release(st);
                return rc;
            }
        } else if (is_put) {
            memcpy(m + 1, local, len);
        }
        ofi_op o = {.kind = OP_SEND, .buf = m, .len = bytes, .desc = st->bounce_desc,
                    .copy_gpu = (uint8_t)(!is_put && gpu), .bytes = len};
        rc = ofi__post(st, pe, &o, !is_put, 1, is_put ? NULL : local, NULL, len, 0);
        if (rc) return rc;
        off += len;
        local += len;
        n -= len;
    }
    return 0;
}

static int32_t rma(ofi_tp *st, int is_put, int32_t pe, uint64_t off, char *local, uint64_t n) {
    const int mr_local = (st->mr_mode & FI_MR_LOCAL) != 0;
    /* a local GPU buffer goes through the bounce buffer (mem_copy) */
    const int gpu = ofi__gpu_ptr(st, local);
    /* the whole range first: an error must not leave a part in flight */
    for (uint64_t o = off, left = n; left > 0;) {
        uint64_t raddr, rkey, room;
        int32_t rc = ofi__remote_at(st, pe, o, left, &raddr, &rkey, &room);
        if (rc) return rc;
        o += room;
        left -= room;
    }
    while (n > 0) {
        uint64_t raddr, rkey, chunk;
        int32_t rc = ofi__remote_at(st, pe, off, n, &raddr, &rkey, &chunk);
        if (rc) return rc;
        if (ofi__staged(symm__tp_region_of_off(st->regs, st->n_regs, off), pe)) {
            rc = staged_rma(st, is_put, pe, off, local, chunk, gpu);
            if (rc) return rc;
            off += chunk;
            local += chunk;
            n -= chunk;
            continue;
        }
        if (chunk > st->max_rma) chunk = st->max_rma;
        ofi_op o = {.kind = is_put ? OP_WRITE : OP_READ, .raddr = raddr, .rkey = rkey};
        void *copy_to = NULL;
        const void *copy_from = NULL;
        int bounce = 0;
        ofi_region *lr = mr_local && !gpu ? region_of_ptr(st, local) : NULL;
        if (!mr_local && !gpu) {
            o.buf = local;
        } else if (lr) {
            uint64_t lroom = lr->len - (uint64_t)(local - lr->base);
            if (chunk > lroom) chunk = lroom;
            o.buf = local;
            o.desc = lr->desc;
        } else {
            char *b;
            if (chunk > BOUNCE_CHUNK) chunk = BOUNCE_CHUNK;
            rc = ofi__bounce_get(st, chunk, &b);
            if (rc) return rc;
            if (is_put && gpu) {
                rc = st->core->mem_copy(st->core->core, b, local, chunk);
                if (rc) {
                    ofi__bounce_release(st);
                    return rc;
                }
            } else if (is_put) {
                memcpy(b, local, chunk);
            } else {
                copy_to = local;
                copy_from = b;
                o.copy_gpu = (uint8_t)gpu;
            }
            o.buf = b;
            o.desc = st->bounce_desc;
            bounce = 1;
        }
        o.len = chunk;
        rc = ofi__post(st, pe, &o, !is_put, bounce, copy_to, copy_from, chunk, 0);
        if (rc) return rc;
        off += chunk;
        local += chunk;
        n -= chunk;
    }
    return 0;
}

/* The first error pe's messages came back with (the target's apply), or a
 * failed copy into a local GPU buffer, as the status of the operation
 * (what, at heap offset off) that waited for them; cleared. */
int32_t ofi__take_err(ofi_tp *st, int32_t pe, const char *what, uint64_t off) {
    ofi_peer *p = &st->peers[pe];
    int32_t e = p->am_err, c = p->copy_err;
    p->am_err = p->copy_err = 0;
    if (e)
        return fail(st->core, e, "%s at heap offset %llu of PE %d failed on that PE (status %d%s)",
                    what, (unsigned long long)off, pe, e,
                    e == SYMM_ERR_OUT_OF_BOUNDS ? ": outside the memory it registered"
                    : e == SYMM_ERR_CUDA        ? ": its GPU-memory copy failed"
                                                : "");
    if (c)
        return fail(st->core, c, "%s at heap offset %llu of PE %d: copying the data into the "
                    "local GPU buffer failed (status %d)", what, (unsigned long long)off, pe, c);
    return 0;
}

/* Without delivery completion, a completed write may still be on its way:
 * a read from the same PE, ordered after the writes (FI_ORDER_RAW), returns
 * once they have landed. */
int32_t ofi__flush(ofi_tp *st, int32_t pe) {
    int32_t rc = ofi__wait_for(st, pe, 0);
    if (rc) return rc;
    if (st->delivery || !st->peers[pe].wrote) {
        st->peers[pe].wrote = 0;
        return 0;
    }
    char *b;
    rc = ofi__bounce_get(st, 8, &b);
    if (rc) return rc;
    ofi_op o = {.kind = OP_READ, .buf = b, .len = 8, .desc = st->bounce_desc,
            .raddr = st->peers[pe].hello_addr, .rkey = st->peers[pe].hello_key};
    rc = ofi__post(st, pe, &o, 1, 1, NULL, NULL, 0, 0);
    if (!rc) rc = ofi__wait_for(st, pe, 0);
    if (!rc) st->peers[pe].wrote = 0;
    return rc;
}

int32_t ofi__put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = ofi__check_pe(st, pe);
    if (!rc) rc = rma(st, 1, pe, off, (char *)(uintptr_t)src, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = ofi__flush(st, pe);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = ofi__take_err(st, pe, "put", off);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int32_t ofi__get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = ofi__check_pe(st, pe);
    if (!rc) rc = rma(st, 0, pe, off, dst, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = ofi__wait_for(st, pe, 0);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = ofi__take_err(st, pe, "get", off);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* The data, then the signal: the data's delivery completes (flush) before
 * the signal is posted, so a PE that sees the signal sees the data. Message
 * ordering (FI_ORDER_WAW) is not enough: shm grants it, yet its large-write
 * protocol let a later atomic land first (measured, libfabric 1.17). */
int32_t ofi__put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = ofi__check_pe(st, pe);
    if (!rc) rc = symm__tp_check_signal(st->core, "ofi transport: ", sig_off, sig_op);
    if (!rc && n) rc = rma(st, 1, pe, off, (char *)(uintptr_t)src, n);
    if (!rc && n) rc = ofi__flush(st, pe);
    if (!rc && n) rc = ofi__take_err(st, pe, "put_signal's data", off); /* no signal then */
    if (!rc) {
        uint32_t op = sig_op == SYMM_SIGNAL_ADD ? SYMM_AMO_ADD : SYMM_AMO_SET;
        rc = ofi__atomic_locked(st, pe, sig_off, SYMM_DTYPE_UINT64, op, &sig_value, NULL, NULL,
                                flags);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Later puts and atomics to a PE must not overtake earlier ones: wait for
 * the delivery of every operation in flight (no message ordering is relied
 * on, as for put_signal). */
int32_t ofi__fence(void *state) {
    ofi_tp *st = state;
    int32_t rc = 0;
    pthread_mutex_lock(&st->mu);
    for (int32_t i = 0; i < st->n && !rc; i++)
        if (st->peers[i].reach && (st->peers[i].inflight || st->peers[i].wrote))
            rc = ofi__flush(st, i);
    if (!rc && ofi__news(st))
        rc = fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE: the order cannot be kept");
    pthread_mutex_unlock(&st->mu);
    return rc;
}

int32_t ofi__quiet(void *state) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = ofi__wait_for(st, -1, 0);
    for (int32_t i = 0; !rc && i < st->n; i++) {
        if (st->peers[i].failed) rc = ofi__peer_error(st, i);
        else if (st->peers[i].reach && st->peers[i].wrote) rc = ofi__flush(st, i);
        if (!rc && (st->peers[i].am_err || st->peers[i].copy_err))
            rc = ofi__take_err(st, i, "an nbi operation", 0);
    }
    /* nothing may be in flight any more (a post that met the news was not
     * made), yet what the caller issued did not all complete */
    if (!rc && ofi__news(st))
        rc = fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE: operations issued since "
                  "may not have completed");
    pthread_mutex_unlock(&st->mu);
    return rc;
}

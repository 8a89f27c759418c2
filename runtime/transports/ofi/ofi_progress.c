/*
 * The ofi transport (ofi_internal.h): completions: the CQ read, failures, the atomic messages a
 * target serves, waits, and the progress thread that keeps a passive target moving.
 */
#include "ofi_internal.h"

/* ---- completions -------------------------------------------------------- */

int32_t ofi__peer_error(ofi_tp *st, int32_t pe) {
    ofi_peer *p = &st->peers[pe];
    return fail(st->core, SYMM_ERR_PEER_FAILED, "PE %d failed: %s", pe,
                p->why[0] ? p->why : "its operations met errors");
}

void ofi__mark_failed(ofi_tp *st, int32_t pe, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ofi__mark_failed(ofi_tp *st, int32_t pe, int err, const char *fmt, ...) {
    ofi_peer *p = &st->peers[pe];
    if (p->failed) return;
    p->failed = err ? err : EIO;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    logf_(st->core, 0, "PE %d: %s", pe, p->why);
}

/* A completed record's result into the caller's buffer: GPU memory through
 * the core's service (a failure is the operation's, reported by its wait). */
static void copy_out(ofi_tp *st, ofi_rec *r, const void *from, size_t len) {
    if (!r->copy_gpu) {
        memcpy(r->copy_to, from, len);
        return;
    }
    int32_t rc = st->core->mem_copy(st->core->core, r->copy_to, from, len);
    if (rc && !st->peers[r->pe].copy_err) st->peers[r->pe].copy_err = rc;
}

void ofi__rec_done(ofi_tp *st, ofi_rec *r, int ok) {
    if (r->pending > 1) {
        r->pending--;
        return;
    }
    ofi_peer *p = &st->peers[r->pe];
    if (ok && r->copy_to) copy_out(st, r, r->copy_from, r->copy_len);
    p->inflight--;
    st->inflight--;
    p->reads -= r->read;
    p->bytes -= r->bytes;
    st->bytes -= r->bytes;
    if (r->bounce && --st->bounce_refs == 0) st->bounce_used = 0;
    r->copy_to = NULL;
    r->live = 0;
    r->pending = 0;
    int32_t idx = (int32_t)(r - st->recs);
    r->next_free = st->rec_free;
    st->rec_free = idx;
}

static void am_repost(ofi_tp *st, am_slot *rx) {
    /* a failure leaves one receive slot fewer; messages wait in the provider */
    fi_recv(st->ep, rx->msg, st->am_slot_bytes, st->am_desc, FI_ADDR_UNSPEC, &rx->ctx);
}

/* Send answer slot a (its receive slot is reposted when it has gone). */
static void am_send_answer(ofi_tp *st, am_slot *a) {
    ssize_t rc = fi_send(st->ep, a->msg, a->len, st->am_desc, st->peers[a->dest].addr, &a->ctx);
    if (rc == -FI_EAGAIN) {
        if (!a->queued) st->am_queued++;
        a->queued = 1;
        return;
    }
    if (a->queued) st->am_queued--;
    a->queued = 0;
    if (rc) { /* the requester will stall and declare this PE lost */
        a->dest = -1;
        am_repost(st, &st->am_rx[a - st->am_tx]);
    }
}

/* A request, applied to this PE's memory: an atomic (CPU atomics, or the
 * core's mem_atomic on a staged GPU range), or a staged put or get (mem_copy
 * into or out of the range; a get's data goes into the answer, out). */
static int32_t am_apply(ofi_tp *st, const am_msg *m, const char *data, char *out,
                        uint64_t *old) {
    uint64_t len = m->kind == AM_ATOMIC ? symm__amo_size(m->dtype) : m->len;
    ofi_region *r = len ? symm__tp_region_of_off(st->regs, st->n_regs, m->off) : NULL;
    if (!r || m->off - r->off + len > r->len || m->kind > AM_GET ||
        (m->kind != AM_ATOMIC && !st->staging) ||
        (m->kind != AM_ATOMIC && len > st->stage_chunk) || (m->kind == AM_ATOMIC && m->off % len))
        return SYMM_ERR_OUT_OF_BOUNDS;
    char *at = r->base + (m->off - r->off);
    const symm_tp_core *c = st->core;
    int gpu = ofi__staged(r, st->me);
    switch (m->kind) {
    case AM_PUT:
        if (gpu) return c->mem_copy(c->core, at, data, len);
        memcpy(at, data, len);
        return 0;
    case AM_GET:
        if (gpu) return c->mem_copy(c->core, out, at, len);
        memcpy(out, at, len);
        return 0;
    default:
        if (gpu) return c->mem_atomic(c->core, at, m->dtype, m->op, m->value, m->compare, old);
        return symm__amo_cpu(at, m->dtype, m->op, m->value, m->compare, old);
    }
}

/* A message arrived in receive slot rx: serve a request, or take an answer. */
static void am_received(ofi_tp *st, am_slot *rx) {
    am_msg m = *rx->msg;
    const char *data = (const char *)(rx->msg + 1);
    /* The key, like a registration's, travels only through the bootstrap: a
     * process outside the job can send to the endpoint, not apply atomics */
    if (m.magic != AM_MAGIC || m.key != st->am_key || m.src < 0 || m.src >= st->n ||
        !st->peers[m.src].reach) {
        am_repost(st, rx);
        return;
    }
    if (m.answer) {
        /* reposted only once its data is out: posting may fill it at once
         * with a message the provider holds (more answers than slots) */
        uint64_t idx = m.token & 0xffffffffu;
        ofi_rec *r = idx < (uint64_t)st->n_recs ? &st->recs[idx] : NULL;
        if (!r || !r->live || r->pe != m.src || r->gen != (uint32_t)(m.token >> 32)) {
            am_repost(st, rx);
            return;
        }
        if (m.status && !st->peers[r->pe].am_err) st->peers[r->pe].am_err = m.status;
        if (r->copy_to && !m.status) {
            if (m.kind == AM_GET)
                copy_out(st, r, data, m.len < r->copy_len ? m.len : r->copy_len);
            else
                copy_out(st, r, &m.value, r->copy_len);
        }
        r->copy_to = NULL;
        am_repost(st, rx);
        ofi__rec_done(st, r, 1);
        return;
    }
    /* A request: apply it to this PE's memory, answer. */
    uint64_t old = 0;
    am_slot *a = &st->am_tx[rx - st->am_rx];
    int32_t status = am_apply(st, &m, data, (char *)(a->msg + 1), &old);
    *a->msg = (am_msg){.magic = AM_MAGIC, .answer = 1, .dtype = m.dtype, .op = m.op,
                       .kind = m.kind, .len = m.kind == AM_GET && !status ? m.len : 0,
                       .src = st->me, .status = status, .value = old, .token = m.token,
                       .key = st->peers[m.src].am_key};
    a->len = (uint32_t)sizeof(am_msg) + a->msg->len;
    a->dest = m.src;
    am_send_answer(st, a);
}

static int is_am_slot(ofi_tp *st, void *ctx, am_slot **out) {
    am_slot *b = st->am_block;
    if (!b || (char *)ctx < (char *)b || (char *)ctx >= (char *)(b + 2 * AM_SLOTS)) return 0;
    *out = &b[((char *)ctx - (char *)b) / (ptrdiff_t)sizeof *b];
    return 1;
}

static void handle(ofi_tp *st, void *ctx, int err, const char *errtext) {
    am_slot *s;
    if (is_am_slot(st, ctx, &s)) {
        if (s < st->am_tx) { /* a receive */
            if (!err) am_received(st, s);
            return;
        }
        s->dest = -1; /* an answer went (or failed: its requester stalls) */
        am_repost(st, &st->am_rx[s - st->am_tx]);
        return;
    }
    ofi_rec *r = ctx;
    if (r < st->recs || r >= st->recs + st->n_recs || !r->live) return; /* not ours */
    if (err) {
        ofi__mark_failed(st, r->pe, err, "%s", errtext);
        r->pending = 1; /* a failed message gets no answer */
    }
    ofi__rec_done(st, r, !err);
}

/* Poll the CQ once (cq_mu held); returns completions seen, or -1 (error set). */
int ofi__poll_once(ofi_tp *st) {
    struct fi_cq_entry e[16];
    ssize_t got = fi_cq_read(st->cq, e, 16);
    for (uint32_t i = 0; st->am_queued && i < AM_SLOTS; i++)
        if (st->am_tx[i].queued) am_send_answer(st, &st->am_tx[i]);
    if (got > 0) {
        for (ssize_t i = 0; i < got; i++) handle(st, e[i].op_context, 0, NULL);
        atomic_store_explicit(&st->activity, 1, memory_order_relaxed);
        return (int)got;
    }
    if (got == -FI_EAGAIN) return 0;
    if (got == -FI_EAVAIL) {
        struct fi_cq_err_entry ee;
        memset(&ee, 0, sizeof ee);
        if (fi_cq_readerr(st->cq, &ee, 0) != 1) return 0;
        char buf[128] = "";
        const char *pt = fi_cq_strerror(st->cq, ee.prov_errno, ee.err_data, buf, sizeof buf);
        char text[160];
        snprintf(text, sizeof text, "completion error: %s (%s)", ofi__F->strerror(ee.err),
                 pt && *pt ? pt : "no provider detail");
        handle(st, ee.op_context, ee.err ? ee.err : EIO, text);
        return 1;
    }
    fail(st->core, SYMM_ERR_SYSTEM, "fi_cq_read failed: %s", ferr((int)got));
    return -1;
}

/* A wait gave up: results still in flight must not land later in buffers
 * the caller has given back (blocking atomics fetch into their frames). */
static int32_t give_up(ofi_tp *st, int32_t rc) {
    for (int32_t i = 0; i < st->n_recs; i++)
        if (st->recs[i].live) st->recs[i].copy_to = NULL;
    return rc;
}

/* How long a wait may see no completion before it declares the PE lost:
 * stall_ms plus the time the bytes in flight need at 1 MiB/s. */
uint64_t ofi__stall_limit(ofi_tp *st, int32_t pe) {
    uint64_t bytes = pe >= 0 ? st->peers[pe].bytes : st->bytes;
    return st->stall_ms + bytes / 1049u;
}

int ofi__news(ofi_tp *st) {
    return atomic_load(&st->news) || st->core->check_failed(st->core->core) != 0;
}

/* A waiter with nothing to do: sleep on the CQ's wait fd (1 ms slices, so
 * the failure checks keep running), else yield for 2 ms, then nap. Yielding
 * before the fd sleep was measured no faster over tcp;ofi_rxm. */
void ofi__idle_wait(ofi_tp *st, uint64_t *since) {
    if (st->wait_fd >= 0) {
        struct fid *f = &st->cq->fid;
        if (fi_trywait(st->fabric, &f, 1) == FI_SUCCESS) {
            struct pollfd pf = {st->wait_fd, POLLIN, 0};
            poll(&pf, 1, 1);
        }
        return;
    }
    uint64_t now = now_ms();
    if (!*since) *since = now;
    if (now - *since < 2) sched_yield();
    else nap_us(20);
}

/* Wait until pe's (or, pe < 0, everyone's) outstanding count is <= max. */
int32_t ofi__wait_for(ofi_tp *st, int32_t pe, uint32_t max) {
    uint64_t last = 0, idle_since = 0;
    int moved = 0;
    int32_t rc = 0;
    atomic_fetch_add(&st->waiters, 1);
    for (uint32_t spins = 0;; spins++) {
        pthread_mutex_lock(&st->cq_mu);
        int got = ofi__poll_once(st);
        atomic_store_explicit(&st->app_poll_us, now_us(), memory_order_relaxed);
        if (got < 0) {
            rc = give_up(st, SYMM_ERR_SYSTEM);
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        if (pe >= 0 && st->peers[pe].failed) {
            rc = give_up(st, ofi__peer_error(st, pe));
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        uint32_t left = pe >= 0 ? st->peers[pe].inflight : st->inflight;
        moved |= got > 0;
        if (left <= max) {
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        if ((spins & 15) == 15 && ofi__news(st)) {
            rc = give_up(st, fail(st->core, SYMM_ERR_PEER_FAILED,
                                  "the job lost a PE while waiting for completions"));
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        if ((spins & 255) == 255) {
            uint64_t now = now_ms();
            if (!last || moved) {
                last = now;
                moved = 0;
            } else if (now - last > ofi__stall_limit(st, pe)) {
                for (int32_t i = 0; i < st->n; i++)
                    if (st->peers[i].inflight && (pe < 0 || i == pe))
                        ofi__mark_failed(st, i, ETIMEDOUT, "no completion for %llu ms: it stopped "
                                    "answering", (unsigned long long)(now - last));
                int32_t bad = pe;
                for (int32_t i = 0; bad < 0 && i < st->n; i++)
                    if (st->peers[i].failed) bad = i;
                rc = give_up(st, bad >= 0 ? ofi__peer_error(st, bad)
                                          : fail(st->core, SYMM_ERR_PEER_FAILED,
                                                 "no completion for %llu ms",
                                                 (unsigned long long)(now - last)));
                pthread_mutex_unlock(&st->cq_mu);
                break;
            }
        }
        pthread_mutex_unlock(&st->cq_mu);
        if (spins > SPINS_BEFORE_YIELD) ofi__idle_wait(st, &idle_since);
    }
    atomic_fetch_sub(&st->waiters, 1);
    return rc;
}


/* The core's hook: its waits call it at every pass (runtime/core/check.c).
 * With a wait fd (tcp;ofi_rxm) each call reads the CQ, and the thread leaves
 * the CQ to these calls (APP_POLL_US): a PE that waits in symm serves its
 * peers between two passes of its wait, not after the thread's wake from the
 * wait fd (asleep on the fd, each message woke it: 8-byte put to a waiting
 * target 12-14 us; standing aside, 8-9 us, raw 7-8; docs/OFI.md, Latency).
 * Without one (shm) the thread serves and the hook reads at most every ms. */
void ofi__progress(void *state) {
    ofi_tp *st = state;
    if (!st->cq) return;
    uint64_t now = now_us();
    /* shm: at most every millisecond (a PE killed while reading its CQ dies
     * holding its region's lock, which its peers' next posts then wait for
     * for good: libfabric 1.17; reading it at every pass made test
     * ofi-shm-midstream hang; docs/OFI.md, Latency) */
    if (st->wait_fd < 0 && !st->test_nap_us &&
        now - atomic_load_explicit(&st->app_poll_us, memory_order_relaxed) < 1000u)
        return;
    if (pthread_mutex_trylock(&st->cq_mu) != 0) return; /* someone polls already */
    ofi__poll_once(st);
    pthread_mutex_unlock(&st->cq_mu);
    atomic_store_explicit(&st->app_poll_us, now, memory_order_relaxed);
}

void ofi__peer_failed(void *state) {
    ofi_tp *st = state;
    atomic_store(&st->news, 1);
}

/* ---- the progress thread -------------------------------------------------- */

/* Reads the CQ while nobody else does, so data and atomics addressed to this
 * PE move (and are answered) even when the application is busy elsewhere.
 * With a wait object it sleeps in poll() until the provider has work. Without
 * one (shm) it naps, 10 us growing to 1 ms while nothing happens; with
 * SYMM_OFI_SPIN_US it first spins that long after the last event (yielding
 * every 16 polls). Spinning was measured only to hurt where a wait fd exists
 * (tcp;ofi_rxm: a 2-core machine at load 30 took 35-49 us an 8-byte put
 * instead of 12-19 us; docs/OFI.md). While a caller waits (it polls itself)
 * the thread stays out of the way, and so it does while the application's
 * thread polled within APP_POLL_US (the core's waits through the hook, a
 * blocking call's own wait): asleep on the wait fd it would be woken by each
 * message the application's thread is about to read anyway. Without a wait
 * fd it also stands aside while an application thread is inside a post
 * (younger than POST_ASIDE_MS): waking every 10 us on the poster's CPU and
 * reading the CQ beside it, it halved shm's bandwidth at 64 KiB. */
void *ofi__progress_main(void *arg) {
    ofi_tp *st = arg;
    long nap = 10;
    uint64_t event = now_us(), served = 0;
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* 1 us: short naps stay short */
    for (uint32_t spins = 0; !atomic_load(&st->stop); spins++) {
        if (atomic_load(&st->waiters) > 0 || /* a caller polls, or posts: stand aside */
            (atomic_load(&st->posting) > 0 &&
             now_us() - atomic_load_explicit(&st->post_us, memory_order_relaxed) <
                 POST_ASIDE_MS * 1000u)) {
            struct pollfd pf = {st->wake[0], POLLIN, 0};
            poll(&pf, 1, 1);
            event = now_us();
            continue;
        }
        if (st->test_nap_us) { /* testing knob: a slow thread, whatever happens */
            if (pthread_mutex_trylock(&st->cq_mu) == 0) {
                ofi__poll_once(st);
                pthread_mutex_unlock(&st->cq_mu);
            }
            nap_us((long)st->test_nap_us);
            continue;
        }
        if (st->wait_fd >= 0 &&
            now_us() - atomic_load_explicit(&st->app_poll_us, memory_order_relaxed) <
                APP_POLL_US) { /* the application's thread polls: leave the CQ to it */
            nap_us(APP_ASIDE_US);
            event = now_us();
            continue;
        }
        int got = 0;
        if (pthread_mutex_trylock(&st->cq_mu) == 0) {
            got = ofi__poll_once(st);
            pthread_mutex_unlock(&st->cq_mu);
        }
        uint64_t now = now_us();
        if (atomic_exchange_explicit(&st->activity, 0, memory_order_relaxed) || got > 0)
            event = now;
        if (st->rx_cntr) {
            uint64_t c = fi_cntr_read(st->rx_cntr);
            if (c != served) {
                served = c;
                event = now;
            }
        }
        if (got > 0) continue;
        if (st->wait_fd >= 0) {
            struct fid *f = &st->cq->fid;
            if (fi_trywait(st->fabric, &f, 1) != FI_SUCCESS) continue; /* work pending */
            struct pollfd pf[2] = {{st->wait_fd, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
            if (poll(pf, 2, 100) > 0 && (pf[0].revents & POLLIN)) event = now_us();
            continue;
        }
        if (now - event < st->spin_us) { /* hot: the next request is likely microseconds away */
            if ((spins & 15) == 15) sched_yield();
            continue;
        }
        uint64_t quiet_ms = (now - event) / 1000u;
        if (quiet_ms < 5) nap = 10;
        else if (quiet_ms < HOT_MS) nap = 50;
        else if (nap < 1000) nap *= 2;
        nap_us(nap);
    }
    return NULL;
}

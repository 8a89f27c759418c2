/*
 * The bootstrap client after the job formed (bootstrap.c forms it): the
 * core's allgathers and barriers through the rendezvous server, the news of
 * a failed job (an ABORT, or the server gone) and the transports' proofs of
 * a PE's identity (the job key).
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "boot_internal.h"
#include "bootstrap.h"
#include "crypto.h"
#include "wire.h"

/* ------------------------------------------------------------------------ */
/* Failure                                                                   */
/* ------------------------------------------------------------------------ */

symm_status symm__boot_failure(symm__boot *b) {
    symm_status st = atomic_load(&b->failed);
    return symm__err(st, "%s", b->fail_msg);
}

symm_status symm__boot_fail(symm__boot *b, symm_status st, bool notify, const char *fmt, ...) {
    if (atomic_load(&b->failed) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->fail_msg, sizeof b->fail_msg, fmt, ap);
        va_end(ap);
        if (notify && b->fd >= 0) {
            uint8_t msg[8 + SYMM__WIRE_MAX_REASON];
            symm__wire_encode_abort(msg, b->rank, b->fail_msg);
            symm__wire_send(b->fd, SYMM__MSG_ABORT, 0, msg, symm__wire_abort_bytes(b->fail_msg),
                            symm__now_ms() + 1000, b->peer);
        }
        if (b->fd >= 0) close(b->fd);
        b->fd = -1;
        atomic_store(&b->failed, st);
    }
    return symm__boot_failure(b);
}

static symm_status fail_abort_msg(symm__boot *b, const uint8_t *p, uint32_t len) {
    symm__wire_abort a;
    if (symm__wire_parse_abort(p, len, &a) != SYMM_SUCCESS)
        return symm__boot_fail(b, SYMM_ERR_PEER_FAILED, false,
                               "PE %d: the job failed (malformed ABORT from %s)", b->rank, b->peer);
    if (a.rank < 0)
        return symm__boot_fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: the job failed: %s", b->rank,
                               a.reason);
    return symm__boot_fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: the job lost PE %d: %s", b->rank,
                           a.rank, a.reason);
}

/* ------------------------------------------------------------------------ */
/* Collectives through the server                                            */
/* ------------------------------------------------------------------------ */

symm_status symm__boot_interrupted(symm__boot *b) {
    return symm__boot_fail(b, SYMM_ERR_PEER_FAILED, true,
                           "PE %d was interrupted (SYMM_INTERRUPT_FD %d became readable: a "
                           "signal such as Ctrl-C); it left the job, which is over",
                           b->rank, b->intr_fd);
}

/* Until the server's answer starts to arrive, or the interrupt descriptor
 * is readable (io lock held). Only with SYMM_INTERRUPT_FD set. */
static symm_status wait_answer(symm__boot *b) {
    for (;;) {
        struct pollfd p[2] = {{.fd = b->fd, .events = POLLIN}, {.fd = b->intr_fd, .events = POLLIN}};
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return symm__err_errno(SYMM_ERR_SYSTEM, errno, "bootstrap: poll");
        if (p[0].revents) return SYMM_SUCCESS; /* the answer, or the server's end: recv tells */
        if (p[1].revents) return symm__boot_interrupted(b);
    }
}

/* Who runs the server, for messages about losing it. */
static const char *server_owner(const symm__boot *b) {
    if (b->own_server || b->server) return "this process";
    return b->external ? "symmrun" : "PE 0";
}

symm_status symm__boot_exchange_locked(symm__boot *b, uint32_t type, const void *mine, size_t len,
                                       void *all) {
    const char *what = type == SYMM__MSG_BARRIER ? "barrier" : "allgather";
    if (atomic_load(&b->failed)) return symm__boot_failure(b);
    uint32_t seq = ++b->seq;
    int64_t deadline = symm__now_ms() + b->timeout_ms;
    symm__wire_header h;
    uint8_t *p = NULL;
    symm_status st = symm__wire_send(b->fd, type, seq, mine, len, deadline, b->peer);
    /* The answer may take as long as the slowest PE computes before joining
     * the collective (a collective allocation after a long phase of work):
     * no deadline here. A PE that dies is reported by the server (ABORT) or
     * by the connection closing, so this cannot hang on a dead peer. */
    if (st == SYMM_SUCCESS && b->intr_fd >= 0) st = wait_answer(b);
    if (st == SYMM_ERR_PEER_FAILED && atomic_load(&b->failed)) return symm__boot_failure(b);
    if (st == SYMM_SUCCESS) st = symm__wire_recv(b->fd, &h, &p, INT64_MAX / 4, b->peer);
    if (st == SYMM_ERR_TIMEOUT)
        return symm__boot_fail(
            b, SYMM_ERR_TIMEOUT, true,
            "PE %d: %s #%u did not complete within %u ms (some PE did not call it; %s)", b->rank,
            what, seq, b->timeout_ms, b->peer);
    char msg[MSG_MAX];
    if (st == SYMM_ERR_PEER_FAILED) {
        save_msg(msg, sizeof msg);
        return symm__boot_fail(
            b, SYMM_ERR_PEER_FAILED, false,
            "PE %d: lost the job during %s #%u: %s (the server runs in %s: did it exit?)", b->rank,
            what, seq, msg, server_owner(b));
    }
    if (st != SYMM_SUCCESS) {
        save_msg(msg, sizeof msg);
        return symm__boot_fail(b, st, true, "PE %d: %s #%u: %s", b->rank, what, seq, msg);
    }
    if (h.type == SYMM__MSG_ABORT) {
        st = fail_abort_msg(b, p, h.length);
        free(p);
        return st;
    }
    size_t want = type == SYMM__MSG_ALLGATHER ? len * (size_t)b->n_pes : 0;
    if (h.type != type || h.seq != seq || h.length != want) {
        free(p);
        return symm__boot_fail(b, SYMM_ERR_BOOTSTRAP, true,
                               "PE %d: protocol error: the answer to %s #%u was %s #%u of %u bytes",
                               b->rank, what, seq, symm__wire_type_name(h.type), h.seq, h.length);
    }
    if (want) memcpy(all, p, want);
    free(p);
    return SYMM_SUCCESS;
}

void symm__boot_abort(symm__boot *b, const char *reason) {
    if (!b || b->n_pes == 1) return;
    pthread_mutex_lock(&b->io);
    symm__boot_fail(b, SYMM_ERR_PEER_FAILED, true, "%s", reason); /* the server names the PE */
    pthread_mutex_unlock(&b->io);
}

symm_status symm__boot_allgather(symm__boot *b, const void *mine, void *all, size_t len) {
    SYMM_CHECK(b, SYMM_ERR_INVALID_ARG, "symm__boot_allgather: no bootstrap");
    SYMM_CHECK(len == 0 || (mine && all), SYMM_ERR_INVALID_ARG,
               "symm__boot_allgather: NULL buffer");
    SYMM_CHECK(len <= SYMM__WIRE_MAX_PAYLOAD / (size_t)b->n_pes, SYMM_ERR_INVALID_ARG,
               "bootstrap allgather of %zu bytes x %d PEs exceeds the %u-byte message limit", len,
               b->n_pes, SYMM__WIRE_MAX_PAYLOAD);
    if (b->n_pes == 1) {
        if (len) memmove(all, mine, len);
        return SYMM_SUCCESS;
    }
    pthread_mutex_lock(&b->io);
    symm_status st = symm__boot_exchange_locked(b, SYMM__MSG_ALLGATHER, mine, len, all);
    pthread_mutex_unlock(&b->io);
    return st;
}

symm_status symm__boot_barrier(symm__boot *b) {
    SYMM_CHECK(b, SYMM_ERR_INVALID_ARG, "symm__boot_barrier: no bootstrap");
    if (b->n_pes == 1) return SYMM_SUCCESS;
    pthread_mutex_lock(&b->io);
    symm_status st = symm__boot_exchange_locked(b, SYMM__MSG_BARRIER, NULL, 0, NULL);
    pthread_mutex_unlock(&b->io);
    return st;
}

symm_status symm__boot_read_news(symm__boot *b) {
    uint8_t hdr_bytes[SYMM__WIRE_HEADER_BYTES];
    ssize_t n = recv(b->fd, hdr_bytes, sizeof hdr_bytes, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return SYMM_SUCCESS;
    if (n <= 0)
        return symm__boot_fail(
            b, SYMM_ERR_PEER_FAILED, false,
            "PE %d: lost the connection to the %s (%s; it runs in %s); the job is over", b->rank,
            b->peer, n == 0 ? "closed" : strerror(errno), server_owner(b));
    if ((size_t)n < sizeof hdr_bytes) return SYMM_SUCCESS; /* the rest is on its way */
    symm__wire_header h;
    if (symm__wire_decode_header(hdr_bytes, sizeof hdr_bytes, &h) != SYMM_SUCCESS ||
        h.type != SYMM__MSG_ABORT) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        return symm__boot_fail(b, SYMM_ERR_BOOTSTRAP, true,
                               "PE %d: protocol error: unexpected data from %s (%s)", b->rank,
                               b->peer, h.type == SYMM__MSG_ABORT ? "?" : msg);
    }
    int avail = 0;
    if (ioctl(b->fd, FIONREAD, &avail) != 0 ||
        (size_t)avail < SYMM__WIRE_HEADER_BYTES + h.length)
        return SYMM_SUCCESS;
    uint8_t *p = NULL;
    symm_status st = symm__wire_recv(b->fd, &h, &p, symm__now_ms() + 1000, b->peer);
    if (st == SYMM_SUCCESS) st = fail_abort_msg(b, p, h.length);
    else
        st =
            symm__boot_fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: lost the %s", b->rank, b->peer);
    free(p);
    return st;
}

/* Read what the server sent outside a collective, unless a collective holds
 * the socket (its reader sees any news). */
static symm_status boot_poll(symm__boot *b, long long tick) {
    if (pthread_mutex_trylock(&b->io) != 0) return SYMM_SUCCESS;
    atomic_store_explicit(&b->polled_tick, tick, memory_order_relaxed);
    symm_status st = SYMM_SUCCESS;
    if (b->fd >= 0) {
        /* The interrupt descriptor (-1: ignored by poll) in the same call. */
        struct pollfd p[2] = {{.fd = b->fd, .events = POLLIN}, {.fd = b->intr_fd, .events = POLLIN}};
        if (poll(p, 2, 0) > 0) {
            if (p[0].revents) st = symm__boot_read_news(b);
            if (st == SYMM_SUCCESS && p[1].revents) st = symm__boot_interrupted(b);
        }
    }
    pthread_mutex_unlock(&b->io);
    return st == SYMM_SUCCESS ? SYMM_SUCCESS : SYMM_ERR_PEER_FAILED;
}

/* force: poll now, whatever the poll interval says (the job watcher). */
static symm_status boot_check(symm__boot *b, bool force) {
    if (!b) return SYMM_SUCCESS;
    if (atomic_load(&b->failed)) {
        symm__boot_failure(b);
        return SYMM_ERR_PEER_FAILED;
    }
    if (b->n_pes == 1) return SYMM_SUCCESS;
    /* At most one poll per poll interval (and so per tick of the coarse
     * clock, 1-4 ms): every one-sided call makes this check, and a poll is a
     * system call; reading the coarse clock is not (vDSO). */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    long long tick = (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
    if (!force && tick - atomic_load_explicit(&b->polled_tick, memory_order_relaxed) < b->poll_ns)
        return SYMM_SUCCESS;
    return boot_poll(b, tick);
}

symm_status symm__boot_check(symm__boot *b) { return boot_check(b, false); }
symm_status symm__boot_check_now(symm__boot *b) { return boot_check(b, true); }

int symm__boot_news_fd(const symm__boot *b) { return b && b->n_pes > 1 ? b->fd : -1; }
int symm__boot_intr_fd(const symm__boot *b) { return b && b->n_pes > 1 ? b->intr_fd : -1; }

void symm__boot_auth_mac(const symm__boot *b, int32_t pe, const void *msg, size_t len,
                         uint8_t mac[32]) {
    uint8_t who[4] = {(uint8_t)pe, (uint8_t)((uint32_t)pe >> 8), (uint8_t)((uint32_t)pe >> 16),
                      (uint8_t)((uint32_t)pe >> 24)};
    symm__hmac m;
    symm__hmac_init(&m, b->tp_key, sizeof b->tp_key);
    symm__hmac_update(&m, who, sizeof who);
    symm__hmac_update(&m, msg, len);
    symm__hmac_final(&m, mac);
}

bool symm__boot_auth_verify(const symm__boot *b, int32_t pe, const void *msg, size_t len,
                            const uint8_t mac[32]) {
    uint8_t want[32];
    symm__boot_auth_mac(b, pe, msg, len, want);
    bool ok = symm__ct_equal(want, mac, sizeof want);
    symm__wipe(want, sizeof want);
    return ok;
}

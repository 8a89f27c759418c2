/* Rendezvous server (rendezvous.h): connections, output queues, the poll
 * loop and its thread; sessions and the protocol are in rdv_session.c. */
#include "rendezvous.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "bootstrap.h"
#include "crypto.h"
#include "rdv_internal.h"

/* Connections that have not said HELLO yet: at most half of the descriptors
 * the process has left after the job's own (RLIMIT_NOFILE - n_pes -
 * PENDING_RESERVE), within [PENDING_MIN, PENDING_MAX], halved whenever
 * accept() runs out of descriptors. When full, the oldest stranger makes room
 * for the new connection, so a flood of idle connections cannot keep PEs
 * out. */
#define PENDING_MIN 8
#define PENDING_MAX 1024
#define PENDING_RESERVE 64
/* A new connection must say HELLO within a tenth of the job's timeout,
 * bounded to [HELLO_MIN_MS (or the timeout when shorter), HELLO_MAX_MS]: a PE
 * sends it right after connecting. */
#define HELLO_MIN_MS 1000
#define HELLO_MAX_MS 5000
/* accept() out of descriptors (EMFILE, ENFILE) or memory: stop polling the
 * listening socket for ACCEPT_PAUSE_MIN_MS, doubling to ACCEPT_PAUSE_MAX_MS. */
#define ACCEPT_PAUSE_MIN_MS 10
#define ACCEPT_PAUSE_MAX_MS 1000
/* Lines about strangers (refused, dropped, accept failures): at most
 * LOG_BURST per LOG_WINDOW_MS, then one line counting the rest. */
#define LOG_BURST 10
#define LOG_WINDOW_MS 1000

void symm__rdv_log(const symm__rdv *r, const char *fmt, ...) {
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s (%s): %s\n", r->prefix, r->addr, line);
}

/* Count the lines left out in the last window, if any, and start a new one. */
static void log_window_roll(symm__rdv *r, int64_t now) {
    if (now - r->log_window < LOG_WINDOW_MS) return;
    if (r->log_dropped)
        symm__rdv_log(r,
                      "%lu more messages about stray connections in the last %.1f s were not shown",
                      r->log_dropped, (double)(now - r->log_window) / 1000.0);
    r->log_window = now;
    r->log_lines = 0;
    r->log_dropped = 0;
}

/* rdv_log for events caused by strangers: rate limited (LOG_BURST). */
void symm__rdv_stranger_log(symm__rdv *r, const char *fmt, ...) {
    log_window_roll(r, symm__now_ms());
    if (r->log_lines >= LOG_BURST) {
        r->log_dropped++;
        return;
    }
    r->log_lines++;
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    symm__rdv_log(r, "%s", line);
}

/* ------------------------------------------------------------------------ */
/* Buffers and output queues                                                 */
/* ------------------------------------------------------------------------ */

rdv_buf *symm__rdv_buf_new(uint32_t type, uint32_t seq, size_t payload_len) {
    rdv_buf *b = malloc(sizeof *b + SYMM__WIRE_HEADER_BYTES + payload_len);
    if (!b) return NULL;
    b->refs = 1;
    b->len = SYMM__WIRE_HEADER_BYTES + payload_len;
    symm__wire_encode_header(b->data, type, (uint32_t)payload_len, seq);
    return b;
}

void symm__rdv_buf_unref(rdv_buf *b) {
    if (b && --b->refs == 0) free(b);
}

rdv_buf *symm__rdv_buf_abort(uint32_t type, int32_t rank, const char *reason) {
    rdv_buf *b = symm__rdv_buf_new(type, 0, symm__wire_abort_bytes(reason));
    if (b) symm__wire_encode_abort(b->data + SYMM__WIRE_HEADER_BYTES, rank, reason);
    return b;
}

/* Write what the socket takes now; a failure is noted in io_error. */
static void conn_flush(rdv_conn *c) {
    while (c->out && c->fd >= 0 && !c->io_error) {
        rdv_out *o = c->out;
        ssize_t n = send(c->fd, o->buf->data + o->off, o->buf->len - o->off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) c->io_error = errno;
            return;
        }
        o->off += (size_t)n;
        if (o->off == o->buf->len) {
            c->out = o->next;
            if (!c->out) c->out_tail = NULL;
            symm__rdv_buf_unref(o->buf);
            free(o);
        }
    }
}

void symm__rdv_conn_send(rdv_conn *c, rdv_buf *b) {
    if (!c || !b || c->fd < 0 || c->state == C_CLOSED) return;
    rdv_out *o = malloc(sizeof *o);
    if (!o) {
        c->io_error = ENOMEM;
        return;
    }
    b->refs++;
    o->buf = b;
    o->off = 0;
    o->next = NULL;
    if (c->out_tail) c->out_tail->next = o;
    else c->out = o;
    c->out_tail = o;
    conn_flush(c);
}

/* Close the socket; the struct is freed when the step compacts the list. */
void symm__rdv_conn_close(symm__rdv *r, rdv_conn *c) {
    if (c->state == C_CLOSED) return;
    if (c->state == C_HELLO || c->state == C_AUTH) r->n_pending--;
    if (c->state == C_MEMBER && c->sess && c->sess->member) c->sess->member[c->rank] = NULL;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    c->state = C_CLOSED;
    symm__wire_rx_reset(&c->rx);
    while (c->out) {
        rdv_out *o = c->out;
        c->out = o->next;
        symm__rdv_buf_unref(o->buf);
        free(o);
    }
    c->out_tail = NULL;
}

/* Send REJECT and close once it is written. */
void symm__rdv_conn_reject(symm__rdv *r, rdv_conn *c, const char *reason) {
    rdv_buf *b = symm__rdv_buf_abort(SYMM__MSG_REJECT, -1, reason);
    if (c->state == C_HELLO || c->state == C_AUTH) r->n_pending--;
    c->state = C_LEAVING;
    c->sess = NULL;
    c->deadline = symm__now_ms() + 2000;
    symm__rdv_conn_send(c, b);
    symm__rdv_buf_unref(b);
}

/* ------------------------------------------------------------------------ */
/* The loop                                                                  */
/* ------------------------------------------------------------------------ */

symm_status symm__rdv_create(const symm__rdv_config *cfg, symm__rdv **out) {
    if (cfg->n_pes < 1 || cfg->n_pes > SYMM__WIRE_MAX_PES) {
        close(cfg->listen_fd);
        return symm__err(SYMM_ERR_INVALID_ARG, "rendezvous: %d PEs is outside [1, %d]",
                         cfg->n_pes, SYMM__WIRE_MAX_PES);
    }
    symm__rdv *r = calloc(1, sizeof *r);
    if (!r) {
        close(cfg->listen_fd);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "rendezvous: out of memory");
    }
    r->listen_fd = cfg->listen_fd;
    snprintf(r->addr, sizeof r->addr, "%s", cfg->addr_text ? cfg->addr_text : "?");
    snprintf(r->prefix, sizeof r->prefix, "%s",
             cfg->log_prefix ? cfg->log_prefix : "symm rendezvous");
    memcpy(r->secret, cfg->secret, SYMM__SECRET_BYTES);
    r->n_pes = cfg->n_pes;
    uint32_t job = cfg->hello_timeout_ms ? cfg->hello_timeout_ms : SYMM__DEFAULT_TIMEOUT_MS;
    uint32_t hello = job / 10, lo = job < HELLO_MIN_MS ? job : HELLO_MIN_MS;
    r->hello_timeout_ms = hello < lo ? lo : hello > HELLO_MAX_MS ? HELLO_MAX_MS : hello;
    struct rlimit nofile;
    uint64_t fds = 1024;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY)
        fds = (uint64_t)nofile.rlim_cur;
    else if (getrlimit(RLIMIT_NOFILE, &nofile) == 0)
        fds = PENDING_MAX * 2 + PENDING_RESERVE + (uint64_t)r->n_pes;
    uint64_t used = (uint64_t)r->n_pes + PENDING_RESERVE;
    uint64_t pending = fds > used ? (fds - used) / 2 : 0;
    r->max_pending = pending < PENDING_MIN ? PENDING_MIN : pending > PENDING_MAX ? PENDING_MAX : pending;
    r->accept_pause_ms = ACCEPT_PAUSE_MIN_MS;
    r->log_window = symm__now_ms();
    *out = r;
    return SYMM_SUCCESS;
}

/* Close the stranger that has waited longest for its HELLO; false if none. */
static bool evict_oldest_stranger(symm__rdv *r, const char *why) {
    rdv_conn *oldest = NULL;
    for (size_t i = 0; i < r->n_conns; i++) {
        rdv_conn *c = r->conns[i];
        if ((c->state == C_HELLO || c->state == C_AUTH) &&
            (!oldest || c->deadline < oldest->deadline))
            oldest = c;
    }
    if (!oldest) return false;
    symm__rdv_stranger_log(r, "dropped %s, the oldest of %zu connections without HELLO: %s",
                           oldest->peer, r->n_pending, why);
    symm__rdv_conn_close(r, oldest);
    return true;
}

static void accept_all(symm__rdv *r) {
    /* One backlog's worth per turn: a flood cannot starve the members. */
    for (size_t taken = 0; taken < r->max_pending; taken++) {
        int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            int e = errno;
            if (e == EINTR || e == ECONNABORTED) continue;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                r->accept_pause_ms = ACCEPT_PAUSE_MIN_MS;
                return;
            }
            /* Out of descriptors or memory, and the socket stays readable.
             * Free a descriptor held by a stranger and go on (each turn
             * takes a new connection off the queue, so it cannot spin);
             * without one, polling again at once would spin: pause. */
            if (e == EMFILE || e == ENFILE) {
                /* The process needs descriptors too: hold fewer strangers. */
                if (r->n_pending / 2 < r->max_pending) {
                    r->max_pending = r->n_pending > 2 ? r->n_pending / 2 : 1;
                    symm__rdv_stranger_log(r, "out of descriptors: from now on at most %zu "
                                           "connections may wait for their HELLO", r->max_pending);
                }
                bool freed = false;
                while (r->n_pending > r->max_pending - 1 && evict_oldest_stranger(r, strerror(e)))
                    freed = true;
                if (freed) continue; /* from here on each new one replaces the oldest */
            }
            symm__rdv_stranger_log(r, "accept failed: %s; not accepting for %d ms", strerror(e),
                                   r->accept_pause_ms);
            r->accept_paused_until = symm__now_ms() + r->accept_pause_ms;
            r->accept_pause_ms = r->accept_pause_ms * 2 > ACCEPT_PAUSE_MAX_MS
                                     ? ACCEPT_PAUSE_MAX_MS
                                     : r->accept_pause_ms * 2;
            return;
        }
        if (r->n_pending >= r->max_pending) evict_oldest_stranger(r, "at the limit");
        if (r->n_conns == r->cap_conns) {
            size_t cap = r->cap_conns ? 2 * r->cap_conns : 16;
            rdv_conn **n = realloc(r->conns, cap * sizeof *n);
            if (!n) {
                close(fd);
                return;
            }
            r->conns = n;
            r->cap_conns = cap;
        }
        rdv_conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* fails on unix: fine */
        c->fd = fd;
        c->state = C_HELLO;
        c->rank = -1;
        c->deadline = symm__now_ms() + r->hello_timeout_ms;
        snprintf(c->peer, sizeof c->peer, "connection %llu",
                 (unsigned long long)++r->conn_counter);
        r->conns[r->n_conns++] = c;
        r->n_pending++;
        /* A PE sends HELLO right after connecting: read what is there now,
         * so it becomes a member before any eviction can pick it. */
        symm__rdv_conn_read(r, c);
    }
}

static int next_timeout(const symm__rdv *r, int timeout_ms) {
    int64_t now = symm__now_ms(), best = timeout_ms < 0 ? INT64_MAX : now + timeout_ms;
    if (r->accept_paused_until && r->accept_paused_until < best) best = r->accept_paused_until;
    if (r->log_dropped && r->log_window + LOG_WINDOW_MS < best) best = r->log_window + LOG_WINDOW_MS;
    for (size_t i = 0; i < r->n_conns; i++) {
        const rdv_conn *c = r->conns[i];
        if (c->state != C_CLOSED && c->deadline && c->deadline < best) best = c->deadline;
    }
    if (best == INT64_MAX) return -1;
    int64_t left = best - now;
    if (left < 0) left = 0;
    return left > 1000000 ? 1000000 : (int)left;
}

static void reap(symm__rdv *r) {
    /* Write failures and timers; a loss may cause more write failures. */
    for (bool again = true; again;) {
        again = false;
        int64_t now = symm__now_ms();
        for (size_t i = 0; i < r->n_conns; i++) {
            rdv_conn *c = r->conns[i];
            if (c->state == C_CLOSED) continue;
            if (c->io_error) {
                char why[128];
                snprintf(why, sizeof why, "disconnected without finalizing (%s)",
                         strerror(c->io_error));
                symm__rdv_conn_lost(r, c, why);
                again = true;
            } else if (c->deadline && now >= c->deadline) {
                if (c->state == C_HELLO || c->state == C_AUTH)
                    symm__rdv_stranger_log(r, "dropped %s: no %s within %u ms", c->peer,
                                           c->state == C_HELLO ? "HELLO" : "AUTH",
                                           r->hello_timeout_ms);
                symm__rdv_conn_close(r, c);
            } else if (c->state == C_LEAVING && !c->out) {
                symm__rdv_conn_close(r, c);
            }
        }
    }
    size_t j = 0;
    for (size_t i = 0; i < r->n_conns; i++) {
        if (r->conns[i]->state == C_CLOSED) free(r->conns[i]);
        else r->conns[j++] = r->conns[i];
    }
    r->n_conns = j;
}

symm_status symm__rdv_step(symm__rdv *r, struct pollfd *extra, size_t n_extra, int timeout_ms) {
    if (r->accept_paused_until && symm__now_ms() >= r->accept_paused_until)
        r->accept_paused_until = 0;
    size_t has_listen = r->listen_fd >= 0 && !r->accept_paused_until, n_conns = r->n_conns;
    size_t n = n_extra + has_listen + n_conns;
    if (n > r->cap_pfd) {
        struct pollfd *p = realloc(r->pfd, n * sizeof *p);
        if (!p) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "rendezvous: out of memory");
        r->pfd = p;
        r->cap_pfd = n;
    }
    for (size_t i = 0; i < n_extra; i++) r->pfd[i] = extra[i];
    if (has_listen) r->pfd[n_extra] = (struct pollfd){.fd = r->listen_fd, .events = POLLIN};
    for (size_t i = 0; i < n_conns; i++) {
        rdv_conn *c = r->conns[i];
        r->pfd[n_extra + has_listen + i] =
            (struct pollfd){.fd = c->fd, .events = (short)(POLLIN | (c->out ? POLLOUT : 0))};
    }
    int rc = poll(r->pfd, (nfds_t)n, next_timeout(r, timeout_ms));
    for (size_t i = 0; i < n_extra; i++) extra[i].revents = rc > 0 ? r->pfd[i].revents : 0;
    if (rc < 0) {
        if (errno == EINTR) return SYMM_SUCCESS;
        return symm__err_errno(SYMM_ERR_SYSTEM, errno, "rendezvous: poll");
    }
    if (rc > 0) {
        for (size_t i = 0; i < n_conns; i++) {
            rdv_conn *c = r->conns[i];
            short ev = r->pfd[n_extra + has_listen + i].revents;
            if (!ev || c->state == C_CLOSED) continue;
            if (ev & POLLOUT) conn_flush(c);
            if (ev & (POLLIN | POLLHUP | POLLERR)) symm__rdv_conn_read(r, c);
        }
        if (has_listen && r->listen_fd >= 0 && (r->pfd[n_extra].revents & POLLIN)) accept_all(r);
    }
    reap(r);
    log_window_roll(r, symm__now_ms());
    return SYMM_SUCCESS;
}

void symm__rdv_drain(symm__rdv *r) {
    if (r->draining) return;
    r->draining = true;
    if (r->listen_fd >= 0) close(r->listen_fd);
    r->listen_fd = -1;
    for (size_t i = 0; i < r->n_conns; i++) {
        rdv_conn *c = r->conns[i];
        if (c->state == C_HELLO || c->state == C_AUTH) symm__rdv_conn_close(r, c);
        else if (c->state == C_MEMBER && c->sess->state == S_JOINING) symm__rdv_conn_close(r, c);
    }
    /* Unstarted sessions are forgotten: their PEs retry with the next server. */
    for (rdv_session **ps = &r->sessions; *ps;) {
        rdv_session *s = *ps;
        if (s->state == S_JOINING) {
            *ps = s->next;
            symm__rdv_session_free_arrays(s);
            free(s);
        } else {
            ps = &s->next;
        }
    }
    reap(r);
}

bool symm__rdv_idle(const symm__rdv *r) {
    for (const rdv_session *s = r->sessions; s; s = s->next)
        if (s->state == S_RUNNING) return false;
    for (size_t i = 0; i < r->n_conns; i++)
        if (r->conns[i]->state == C_LEAVING && r->conns[i]->out) return false;
    return true;
}

void symm__rdv_destroy(symm__rdv *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n_conns; i++) {
        symm__rdv_conn_close(r, r->conns[i]);
        free(r->conns[i]);
    }
    free(r->conns);
    while (r->sessions) {
        rdv_session *s = r->sessions;
        r->sessions = s->next;
        symm__rdv_session_free_arrays(s);
        free(s);
    }
    if (r->listen_fd >= 0) close(r->listen_fd);
    free(r->pfd);
    free(r);
}

/* ------------------------------------------------------------------------ */
/* Thread                                                                    */
/* ------------------------------------------------------------------------ */

struct symm__rdv_thread {
    symm__rdv *rdv;
    pthread_t thread;
    int wake_fd;
    atomic_int stop;
    _Atomic int64_t stop_deadline;
};

static void *rdv_thread_main(void *arg) {
    symm__rdv_thread *t = arg;
    bool draining = false;
    for (;;) {
        int timeout = -1;
        if (atomic_load(&t->stop)) {
            if (!draining) {
                symm__rdv_drain(t->rdv);
                draining = true;
            }
            int64_t left = atomic_load(&t->stop_deadline) - symm__now_ms();
            if (symm__rdv_idle(t->rdv)) break;
            if (left <= 0) {
                symm__rdv_log(t->rdv,
                              "stopping with PEs still connected (they did not finalize in time)");
                break;
            }
            timeout = left > 1000000 ? 1000000 : (int)left;
        }
        struct pollfd wake = {.fd = t->wake_fd, .events = POLLIN};
        if (symm__rdv_step(t->rdv, &wake, 1, timeout) != SYMM_SUCCESS) {
            symm__rdv_log(t->rdv, "stopping: %s", symm__last_error());
            break;
        }
        if (wake.revents & POLLIN) {
            uint64_t v;
            ssize_t n = read(t->wake_fd, &v, sizeof v);
            (void)n;
        }
    }
    return NULL;
}

symm_status symm__rdv_thread_start(symm__rdv *r, symm__rdv_thread **out) {
    symm__rdv_thread *t = calloc(1, sizeof *t);
    if (!t) {
        symm__rdv_destroy(r);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "rendezvous: out of memory");
    }
    t->rdv = r;
    t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (t->wake_fd < 0) {
        int e = errno;
        symm__rdv_destroy(r);
        free(t);
        return symm__err_errno(SYMM_ERR_SYSTEM, e, "rendezvous: eventfd");
    }
    /* The server thread takes no signals: they stay with the application. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&t->thread, NULL, rdv_thread_main, t);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close(t->wake_fd);
        symm__rdv_destroy(r);
        free(t);
        return symm__err_errno(SYMM_ERR_SYSTEM, rc, "rendezvous: pthread_create");
    }
    *out = t;
    return SYMM_SUCCESS;
}

void symm__rdv_thread_stop(symm__rdv_thread *t, uint32_t timeout_ms) {
    if (!t) return;
    atomic_store(&t->stop_deadline, symm__now_ms() + (int64_t)timeout_ms);
    atomic_store(&t->stop, 1);
    uint64_t one = 1;
    ssize_t n = write(t->wake_fd, &one, sizeof one);
    (void)n;
    pthread_join(t->thread, NULL);
    symm__rdv_destroy(t->rdv);
    close(t->wake_fd);
    free(t);
}

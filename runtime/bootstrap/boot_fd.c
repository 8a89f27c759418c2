/*
 * Descriptor passing among the PEs of one host (symm__boot_share_fd): each
 * PE listens on an abstract Unix socket named from the job; every other
 * local PE connects and sends its descriptor with SCM_RIGHTS, tagged with
 * the job key, and a barrier through the server closes the exchange.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/error.h"
#include "boot_internal.h"
#include "bootstrap.h"
#include "crypto.h"
#include "wire.h"

/* Where PE rank takes descriptors: named from the job (a hash of the
 * secret), the session, the rank and the pid, so no two processes collide. */
void symm__boot_share_name(const symm__boot *b, int32_t rank, symm__addr *a) {
    char text[128];
    uint8_t tag[SYMM__SECRET_BYTES]; /* public: a one-way function of the key */
    symm__key_derive(b->secret, "symm descriptor socket name", tag);
    snprintf(text, sizeof text, "unix:@symm-fd-%016llx-%u-%d-%d",
             (unsigned long long)symm__hash64(SYMM__HASH64_INIT, tag, 8), b->session, rank,
             b->pid[rank]);
    symm__addr_parse(text, a); /* always valid */
}

static symm_status send_fd_to(symm__boot *b, int32_t peer, int fd, int64_t deadline) {
    symm__addr a;
    symm__boot_share_name(b, peer, &a);
    int s = -1;
    int delay = 1;
    for (;;) {
        /* The peer listens from its open on; a full backlog says EAGAIN. */
        if (symm__addr_connect(&a, deadline, &s) == SYMM_SUCCESS) break;
        struct pollfd pf = {.fd = b->fd, .events = POLLIN};
        if (poll(&pf, 1, 0) > 0) SYMM_TRY(symm__boot_read_news(b)); /* did the peer die? */
        if (symm__now_ms() >= deadline)
            return symm__err(SYMM_ERR_TIMEOUT, "PE %d: cannot reach PE %d of this host at %s",
                             b->rank, peer, a.text);
        sleep_ms(delay);
        if (delay < 50) delay *= 2;
    }
    symm__wire_fdmsg m = {.session = b->session, .rank = b->rank, .seq = b->share_seq};
    symm__wire_fdmsg_tag(b->secret, b->session, b->rank, peer, b->share_seq, m.tag);
    uint8_t body[SYMM__FDMSG_BYTES];
    symm__wire_encode_fdmsg(body, &m);
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = {body, sizeof body};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
                         .msg_controllen = sizeof ctl.space};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    ssize_t n;
    do {
        n = sendmsg(s, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    int e = errno;
    close(s);
    if (n != (ssize_t)sizeof body)
        return symm__err_errno(SYMM_ERR_SYSTEM, n < 0 ? e : EIO,
                               "PE %d: passing a descriptor to PE %d", b->rank, peer);
    return SYMM_SUCCESS;
}

/* A message whose descriptor the kernel dropped (MSG_CTRUNC: the process
 * had no descriptor free to install it, EMFILE). When the body is a PE of
 * this job's, that PE did send: say so, rather than wait and report that it
 * sent nothing. A stranger's is ignored, as any other. */
static symm_status lost_fd(symm__boot *b, const uint8_t *body) {
    symm__wire_fdmsg m;
    if (symm__wire_parse_fdmsg(body, SYMM__FDMSG_BYTES, &m) != SYMM_SUCCESS ||
        m.session != b->session || m.rank < 0 || m.rank >= b->n_pes || m.rank == b->rank ||
        b->local_index[m.rank] < 0)
        return SYMM_SUCCESS;
    uint8_t tag[SYMM__SECRET_BYTES];
    symm__wire_fdmsg_tag(b->secret, m.session, m.rank, b->rank, m.seq, tag);
    if (!symm__ct_equal(tag, m.tag, sizeof tag)) return SYMM_SUCCESS;
    struct rlimit lim;
    unsigned long long cap = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? (unsigned long long)lim.rlim_cur
                                                                 : 0;
    return symm__err_errno(SYMM_ERR_SYSTEM, EMFILE,
                           "PE %d: descriptor exchange #%u: PE %d sent its descriptor, but this "
                           "process had none free to receive it (RLIMIT_NOFILE %llu: raise it, "
                           "e.g. ulimit -n, or close descriptors)",
                           b->rank, b->share_seq, m.rank, cap);
}

/* Accept one connection and take its descriptor. *from = sender rank, or -1
 * when the connection was not one of ours (ignored). */
static symm_status recv_fd_from_any(symm__boot *b, int64_t deadline, int32_t *from, int *out_fd) {
    *from = -1;
    int s = accept4(b->share_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            return SYMM_SUCCESS;
        return symm__err_errno(SYMM_ERR_SYSTEM, errno, "PE %d: accept on the descriptor socket",
                               b->rank);
    }
    uint8_t body[SYMM__FDMSG_BYTES];
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int) * SYMM__FDMSG_MAX_FDS)];
    } ctl;
    struct iovec iov = {body, sizeof body};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
                         .msg_controllen = sizeof ctl.space};
    ssize_t n = -1;
    /* The sender writes right after connecting; a stranger may never write. */
    int64_t until = symm__now_ms() + 1000;
    if (until > deadline) until = deadline;
    while (symm__poll_one(s, POLLIN, until) > 0) {
        n = recvmsg(s, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n >= 0 || (errno != EINTR && errno != EAGAIN)) break;
    }
    close(s);
    symm__wire_fdmsg m;
    symm__fdmsg_expect want = {.key = b->secret, .session = b->session, .self_rank = b->rank,
                               .n_pes = b->n_pes, .local_index = b->local_index};
    int fd = -1;
    if (!symm__wire_take_fdmsg(&msg, n, &want, &m, &fd)) {
        if (n == (ssize_t)sizeof body && (msg.msg_flags & MSG_CTRUNC)) return lost_fd(b, body);
        return SYMM_SUCCESS; /* not a PE of this job: ignore it (its descriptors are closed) */
    }
    if (m.seq != b->share_seq) {
        close(fd);
        return symm__err(SYMM_ERR_MISMATCH,
                         "PE %d: PE %d is at descriptor exchange #%u, this PE at #%u", b->rank,
                         m.rank, m.seq, b->share_seq);
    }
    *from = m.rank;
    *out_fd = fd;
    return SYMM_SUCCESS;
}

symm_status symm__boot_share_fd(symm__boot *b, int fd, int *fds) {
    SYMM_CHECK(b && fds && fd >= 0, SYMM_ERR_INVALID_ARG, "symm__boot_share_fd: bad argument");
    if (atomic_load(&b->failed)) return symm__boot_failure(b);
    int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (mine < 0) return symm__err_errno(SYMM_ERR_SYSTEM, errno, "symm__boot_share_fd: dup");
    if (b->n_pes == 1) {
        fds[0] = mine;
        return SYMM_SUCCESS;
    }
    int32_t nl = b->local_n_pes;
    int *got = malloc((size_t)nl * sizeof *got);
    if (!got) {
        close(mine);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm__boot_share_fd: out of memory");
    }
    for (int32_t i = 0; i < nl; i++) got[i] = -1;
    got[b->local_rank] = mine;

    pthread_mutex_lock(&b->io);
    symm_status st = atomic_load(&b->failed) ? symm__boot_failure(b) : SYMM_SUCCESS;
    b->share_seq++;
    int64_t deadline = symm__now_ms() + b->timeout_ms;
    for (int32_t p = 0; st == SYMM_SUCCESS && p < b->n_pes; p++)
        if (p != b->rank && b->local_index[p] >= 0) st = send_fd_to(b, p, fd, deadline);
    for (int32_t missing = nl - 1; st == SYMM_SUCCESS && missing > 0;) {
        struct pollfd pf[2] = {{.fd = b->share_fd, .events = POLLIN},
                               {.fd = b->fd, .events = POLLIN}};
        int64_t left = deadline - symm__now_ms();
        int r = left <= 0 ? 0 : poll(pf, 2, left > 1000000 ? 1000000 : (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = symm__err_errno(SYMM_ERR_SYSTEM, errno, "symm__boot_share_fd: poll");
            break;
        }
        if (r == 0) {
            char list[256] = "";
            size_t used = 0;
            for (int32_t q = 0; q < b->n_pes && used + 16 < sizeof list; q++)
                if (b->local_index[q] >= 0 && got[b->local_index[q]] < 0)
                    used += (size_t)snprintf(list + used, sizeof list - used, "%s%d",
                                             used ? ", " : "", q);
            st = symm__boot_fail(
                b, SYMM_ERR_TIMEOUT, true,
                "PE %d: descriptor exchange #%u: PE(s) %s of this host sent nothing within %u ms",
                b->rank, b->share_seq, list, b->timeout_ms);
            break;
        }
        if (pf[1].revents) {
            st = symm__boot_read_news(b); /* an ABORT: a PE died */
            if (st) break;
        }
        if (pf[0].revents) {
            int32_t from;
            int rfd = -1;
            st = recv_fd_from_any(b, deadline, &from, &rfd);
            if (st != SYMM_SUCCESS) { /* the others learn it at once (ABORT) */
                char msg[MSG_MAX];
                save_msg(msg, sizeof msg);
                st = symm__boot_fail(b, st, true, "%s", msg);
            }
            if (st || from < 0) continue;
            int32_t li = b->local_index[from];
            if (got[li] >= 0) close(got[li]); /* a duplicate: keep the newest */
            else missing--;
            got[li] = rfd;
        }
    }
    /* Nobody starts the next exchange before everyone finished this one. */
    if (st == SYMM_SUCCESS) st = symm__boot_exchange_locked(b, SYMM__MSG_BARRIER, NULL, 0, NULL);
    pthread_mutex_unlock(&b->io);
    if (st == SYMM_SUCCESS) memcpy(fds, got, (size_t)nl * sizeof *got);
    else
        for (int32_t i = 0; i < nl; i++)
            if (got[i] >= 0) close(got[i]);
    free(got);
    return st;
}

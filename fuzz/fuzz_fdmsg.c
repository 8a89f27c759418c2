/*
 * Fuzz target: descriptor-passing messages between PEs of one host
 * (symm__wire_take_fdmsg, what symm__boot_share_fd's receiver decides on).
 * Real SCM_RIGHTS messages go through a Unix stream socket pair, so the
 * kernel's control-message layout (and truncation) is the real one.
 *
 * Input: byte 0: descriptors to attach (0..7; more than the receiver's
 * control buffer holds makes the kernel truncate); byte 1: flags (bit 0:
 * split the descriptors over two SCM_RIGHTS headers, bit 1: add
 * SCM_CREDENTIALS, bit 2: send the body in two writes, bit 3: a receiver
 * without local_index); byte 2: receiver's rank, byte 3: receiver's job
 * size; the rest is the message body (the first 48 bytes are what one read
 * takes).
 *
 * Oracles: accepted exactly when a reference check accepts (one 48-byte
 * body with the right magic, session and tag (the job key's proof for that
 * sender, this receiver and that call) from another PE of this job on this
 * host, exactly one descriptor, no truncation); the descriptor
 * returned is one that was sent; no descriptor leaks either way.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "internal.h"
#include "bootstrap/wire.h"

static const uint8_t secret[SYMM__SECRET_BYTES] = {
    9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
    26, 27, 28, 29, 30, 31, 32};
#define SESSION 3u

static int open_count(void) {
    int n = 0;
    for (int fd = 0; fd < 1024; fd++) n += fcntl(fd, F_GETFD) >= 0;
    return n;
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int run(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    unsigned nfds = data[0] % 8, flags = data[1];
    int32_t self = data[2] % 8, n_pes = 1 + data[3] % 8;
    const uint8_t *body = data + 4;
    size_t blen = size - 4;
    if (blen > 256) blen = 256;
    int32_t local_index[8];
    for (int i = 0; i < 8; i++) local_index[i] = i % 3 == 2 ? -1 : i; /* PEs 2, 5 elsewhere */

    int before = open_count();
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) __builtin_trap();
    int one = 1;
    if (flags & 2) setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
    int sent[8];
    for (unsigned i = 0; i < nfds; i++) sent[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);

    /* Send. */
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int) * 8) * 2 + CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    size_t first = blen && (flags & 4) ? blen / 2 : blen;
    struct iovec iov = {(void *)body, first};
    uint8_t dummy = 0;
    if (!blen) iov = (struct iovec){&dummy, 0};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    size_t clen = 0;
    if (nfds) {
        unsigned parts = (flags & 1) && nfds > 1 ? 2 : 1, done = 0;
        for (unsigned p = 0; p < parts; p++) {
            unsigned k = p + 1 == parts ? nfds - done : nfds / 2;
            struct cmsghdr *c = (struct cmsghdr *)(ctl.space + clen);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * k);
            memcpy(CMSG_DATA(c), sent + done, sizeof(int) * k);
            clen += CMSG_SPACE(sizeof(int) * k);
            done += k;
        }
    }
    if (flags & 2) {
        struct cmsghdr *c = (struct cmsghdr *)(ctl.space + clen);
        struct ucred cr = {getpid(), getuid(), getgid()};
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_CREDENTIALS;
        c->cmsg_len = CMSG_LEN(sizeof cr);
        memcpy(CMSG_DATA(c), &cr, sizeof cr);
        clen += CMSG_SPACE(sizeof cr);
    }
    if (clen) {
        msg.msg_control = ctl.space;
        msg.msg_controllen = clen;
    }
    ssize_t w = blen ? sendmsg(sv[0], &msg, MSG_NOSIGNAL) : 0;
    bool fds_went = w > 0; /* descriptors ride on data: an empty body sends none */
    if (w > 0 && first < blen) (void)!send(sv[0], body + first, blen - first, MSG_NOSIGNAL);
    for (unsigned i = 0; i < nfds; i++) close(sent[i]); /* in flight they are the kernel's */
    close(sv[0]);

    /* Receive as recv_fd_from_any does. */
    uint8_t rbody[SYMM__FDMSG_BYTES];
    union {
        struct cmsghdr h;
        char space[CMSG_SPACE(sizeof(int) * SYMM__FDMSG_MAX_FDS)];
    } rctl;
    struct iovec riov = {rbody, sizeof rbody};
    struct msghdr rmsg = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = rctl.space,
                          .msg_controllen = sizeof rctl.space};
    ssize_t n = recvmsg(sv[1], &rmsg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    close(sv[1]);

    symm__fdmsg_expect want = {.key = secret, .session = SESSION, .self_rank = self,
                               .n_pes = n_pes, .local_index = flags & 8 ? NULL : local_index};
    symm__wire_fdmsg m;
    int fd = -1;
    int ok = symm__wire_take_fdmsg(&rmsg, n, &want, &m, &fd);

    /* Reference: what a PE of this job must have sent. */
    int32_t rank = n == (ssize_t)SYMM__FDMSG_BYTES ? (int32_t)le32(rbody + 8) : -1;
    uint8_t tag[SYMM__SECRET_BYTES];
    symm__wire_fdmsg_tag(secret, SESSION, rank, self, n == (ssize_t)SYMM__FDMSG_BYTES ?
                         le32(rbody + 12) : 0, tag);
    bool expect = fds_went && nfds == 1 && n == (ssize_t)SYMM__FDMSG_BYTES &&
                  !(rmsg.msg_flags & MSG_CTRUNC) &&
                  le32(rbody) == SYMM__FDMSG_MAGIC && le32(rbody + 4) == SESSION &&
                  memcmp(rbody + 16, tag, sizeof tag) == 0 && rank >= 0 && rank < n_pes &&
                  rank != self && ((flags & 8) || local_index[rank] >= 0);
    if (ok != (int)expect) __builtin_trap();
    if (ok) {
        if (fd < 0 || fcntl(fd, F_GETFD) < 0 || m.rank != rank) __builtin_trap();
        close(fd);
    }
    if (open_count() != before) __builtin_trap(); /* a descriptor leaked */
    return ok;
}

/* valid-*: the receiver takes the descriptor. */
int symm_fuzz_valid(const uint8_t *data, size_t size) { return run(data, size); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size);
    return 0;
}

/*
 * The tcp transport's service: executes the requests of authenticated peers
 * on this PE's registered memory (tcp_svc.c). One thread drives it
 * (tcp_svc_step); mem_add/mem_remove may come from another.
 *
 * Why one thread with non-blocking sockets (and not a thread per peer): no
 * connection may hold up the others, and with per-connection state nothing
 * ever waits on one socket — a stranger's half-sent handshake, a peer that
 * stopped reading a 32 MiB GET reply, a peer that sent half a request all
 * just leave their connection where it was. A thread per peer would give
 * the same isolation but costs a stack and a wake-up path per peer (a job
 * of 1024 PEs would have 1023 service threads per PE), while the requests
 * are memcpy-sized work that one thread does faster than the network
 * delivers it. Fairness: a connection is served at most SERVE_BUDGET
 * requests or socket reads per turn, then the others get theirs.
 *
 * Strangers (connections that have not finished the handshake, tcp_proto.h)
 * are bounded like the rendezvous server's (runtime/bootstrap/rendezvous.c):
 * at most max_pending (from RLIMIT_NOFILE, 8..1024; halved when accept()
 * runs out of descriptors; the oldest is dropped for a new one), each must
 * finish within handshake_ms, a failing accept() pauses accepting with
 * back-off (10 ms doubling to 1 s) instead of spinning, and lines about them
 * are rate limited. They can never make a request: the first byte that is
 * not the expected handshake frame closes the connection.
 *
 * GPU memory (ranges registered as SYMM_TP_MEM_CUDA) is read and written
 * only through the core's mem_copy / mem_atomic (transport.h): a PUT's
 * payload is gathered in a staging buffer per connection and copied to the
 * GPU, then the signal of a PUT_SIGNAL is updated with mem_atomic (so a PE
 * that sees the signal sees the data); a GET's bytes are copied out piece
 * by piece; an AMO is mem_atomic (atomic with the GPU's own atomics).
 *
 * Memory rule: a request may only touch a range registered with mem_add
 * (heap chunks and registered buffers), and only an authenticated PE of the
 * job can make one. The runtime's system area (barrier flags, team scratch)
 * lies in the first heap chunk and is reachable by authenticated peers: the
 * core's barriers and collectives put and add there through this transport
 * (docs/BAD-INPUT.md says why no finer rule is made).
 */
#ifndef SYMM_TCP_SVC_H
#define SYMM_TCP_SVC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport.h"

typedef struct tcp_svc tcp_svc;

typedef struct tcp_svc_cfg {
    const symm_tp_core *core;   /* my_pe, n_pes, auth_mac/auth_verify, log  */
    const uint8_t *may_connect; /* [n_pes]: 1 = that PE connects to this one */
    int listen_fd;              /* owned from now on (-1: none; see adopt)   */
    uint32_t handshake_ms;      /* a new connection's deadline              */
    size_t max_pending;         /* 0: from RLIMIT_NOFILE                     */
} tcp_svc_cfg;

typedef struct tcp_svc_stats {
    uint64_t accepted;      /* connections taken                             */
    uint64_t authenticated; /* finished the handshake                        */
    uint64_t refused;       /* closed for a bad handshake frame or proof     */
    uint64_t expired;       /* dropped at the handshake deadline             */
    uint64_t evicted;       /* dropped for a newer stranger (at the bound)   */
    uint64_t accept_pauses; /* accept() failures that paused accepting       */
    uint64_t requests;      /* requests executed                             */
    size_t pending;         /* strangers now                                 */
    size_t max_pending;     /* their bound now                               */
} tcp_svc_stats;

/* Errors through core->set_error. On failure listen_fd is closed. */
int32_t tcp_svc_create(const tcp_svc_cfg *cfg, tcp_svc **out);
void tcp_svc_destroy(tcp_svc *s);
/* Make [off, off + len) at base reachable; forget it. Any thread. */
int32_t tcp_svc_mem_add(tcp_svc *s, void *base, uint64_t off, uint64_t len);
/* The same for GPU memory when gpu (SYMM_TP_MEM_CUDA): base is then only
 * passed to the core's mem_copy / mem_atomic (transport.h), never touched. */
int32_t tcp_svc_mem_add_kind(tcp_svc *s, void *base, uint64_t off, uint64_t len, bool gpu);
void tcp_svc_mem_remove(tcp_svc *s, uint64_t off, uint64_t len);
/* One turn: wait at most timeout_ms for the service's sockets or wake_fd
 * (-1: none), then serve what is ready. Returns 1 when wake_fd is readable. */
int tcp_svc_step(tcp_svc *s, int wake_fd, int timeout_ms);
/* Serve an accepted (or socketpair) descriptor as a new connection. */
void tcp_svc_adopt(tcp_svc *s, int fd);
void tcp_svc_get_stats(const tcp_svc *s, tcp_svc_stats *out);

#endif /* SYMM_TCP_SVC_H */

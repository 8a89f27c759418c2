/*
 * Rendezvous server: forms jobs out of PEs that connect to one listening
 * socket, then serves their allgathers and barriers and tells every PE when
 * another one is lost.
 *
 * One server serves one job (one secret, one PE count) and any number of
 * sessions: a process's k-th context joins session k, so consecutive or
 * concurrent contexts of a job share the server. Per session it:
 *  - authenticates each HELLO (constant-time secret compare; a wrong secret,
 *    a duplicate or out-of-range rank, or another PE count is refused with
 *    REJECT and logged, and the session goes on);
 *  - answers WELCOME (every PE's host id and pid) once all PEs have joined;
 *  - completes an ALLGATHER or BARRIER when every PE has sent the same one
 *    (same type, sequence number and length; otherwise the session aborts);
 *  - on a PE's disconnect without BYE (or its ABORT), sends ABORT naming that
 *    PE to every remaining PE of the session.
 * Against floods and descriptor exhaustion: connections that have not said
 * HELLO are bounded below the descriptor limit (the oldest is dropped for a
 * new one), must say it soon (hello_timeout_ms), a failing accept() pauses
 * accepting with back-off instead of spinning, and lines about strangers are
 * rate limited.
 *
 * It is a poll loop that never blocks on a socket (each connection has an
 * output queue), so the same code runs inside symmrun's event loop (with the
 * launcher's own descriptors passed to symm__rdv_step) and as a thread in
 * rank 0 (symm__rdv_thread_*). Not thread-safe: one thread drives a server.
 */
#ifndef SYMM_RUNTIME_RENDEZVOUS_H
#define SYMM_RUNTIME_RENDEZVOUS_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "wire.h"

typedef struct symm__rdv symm__rdv;

typedef struct symm__rdv_config {
    int listen_fd;             /* listening socket; the server owns it from now on */
    const char *addr_text;     /* for messages ("unix:@symmrun-123")               */
    const char *log_prefix;    /* start of logged lines ("symmrun")                */
    uint8_t secret[SYMM__SECRET_BYTES];
    int32_t n_pes;             /* PEs per session                                   */
    uint32_t hello_timeout_ms; /* the job's timeout (SYMM_TIMEOUT_MS); a new
                                * connection must send HELLO within a tenth of
                                * it, bounded to [1 s (or all of it), 5 s]      */
} symm__rdv_config;

/* On failure the listening socket is closed. */
symm_status symm__rdv_create(const symm__rdv_config *cfg, symm__rdv **out);

/* One turn of the loop: poll the server's sockets and the caller's extra
 * descriptors (their revents are filled) for at most timeout_ms (-1: until
 * something happens), then serve what is ready. EINTR is a success with no
 * revents. Fails only when poll itself fails. */
symm_status symm__rdv_step(symm__rdv *r, struct pollfd *extra, size_t n_extra, int timeout_ms);

/* Stop taking part in new sessions: close the listening socket and drop
 * connections of sessions that have not started (those PEs retry elsewhere).
 * Started sessions are served until they end. */
void symm__rdv_drain(symm__rdv *r);

/* True when no started session has a PE left in it. */
bool symm__rdv_idle(const symm__rdv *r);

/* Close every connection and free the server. NULL accepted. */
void symm__rdv_destroy(symm__rdv *r);

/* ---- The server on its own thread (rank 0 in env/uid bootstrap) ---- */

typedef struct symm__rdv_thread symm__rdv_thread;

/* Start a thread that drives r (which it then owns). On failure r is destroyed. */
symm_status symm__rdv_thread_start(symm__rdv *r, symm__rdv_thread **out);
/* Drain, wait until every started session has ended or timeout_ms passed,
 * then stop the thread and free everything. NULL accepted. */
void symm__rdv_thread_stop(symm__rdv_thread *t, uint32_t timeout_ms);

#endif /* SYMM_RUNTIME_RENDEZVOUS_H */

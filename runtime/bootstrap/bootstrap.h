/*
 * The job layer: forms the job (symmrun, env launchers, unique id, single
 * process) and serves the core's bootstrap collectives, descriptor passing
 * and failure news through the rendezvous server (rendezvous.c) over the
 * wire protocol (wire.c). A static library that the runtime and symmrun both
 * link; it knows nothing of contexts, heaps or backends (it sits below the
 * core and uses only base/).
 */
#ifndef SYMM_BOOTSTRAP_H
#define SYMM_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <symm/symm.h>

#define SYMM__DEFAULT_TIMEOUT_MS 60000u
/* A call that needs a dead PE fails at most this long after the job's
 * rendezvous server saw it go (SYMM_PEER_TIMEOUT_MS). */
#define SYMM__DEFAULT_PEER_TIMEOUT_MS 100u

/* What the core's configuration says about forming the job. */
typedef struct symm__boot_params {
    uint32_t bootstrap;       /* SYMM_BOOTSTRAP_*                            */
    uint32_t timeout_ms;      /* SYMM_TIMEOUT_MS                             */
    uint32_t peer_timeout_ms; /* SYMM_PEER_TIMEOUT_MS                        */
    int32_t uid_rank, uid_n_pes;
    symm_unique_id unique_id;
} symm__boot_params;

typedef struct symm__boot symm__boot;

typedef struct symm__boot_info {
    int32_t rank, n_pes;
    int32_t local_rank, local_n_pes;
    int32_t *local_index;  /* [n_pes]: index among PEs of my host, or -1       */
    uint64_t *host_id;     /* [n_pes]: same value <=> same host                 */
    int32_t *pid;          /* [n_pes]                                           */
} symm__boot_info;

/* Form the job (symmrun, env, uid or single). On success *info is filled
 * (arrays owned by the boot object). */
symm_status symm__boot_open(const symm__boot_params *p, symm__boot **boot, symm__boot_info *info);
/* all receives n_pes * len bytes, rank-ordered. Collective over the job. */
symm_status symm__boot_allgather(symm__boot *b, const void *mine, void *all, size_t len);
symm_status symm__boot_barrier(symm__boot *b);
/* Share an fd with every PE of this host: fds[local_index] receives each local
 * peer's descriptor (fds[my local index] = dup of mine). Collective over the
 * job (PEs without local peers still call). Caller closes the received fds. */
symm_status symm__boot_share_fd(symm__boot *b, int fd, int *fds);
/* Non-blocking: SYMM_ERR_PEER_FAILED when the job lost a PE, else success.
 * Polls the server at most once per poll interval (a quarter of
 * SYMM_PEER_TIMEOUT_MS, at most once per coarse-clock tick); between polls it
 * costs one coarse clock read (vDSO, no system call). */
symm_status symm__boot_check(symm__boot *b);
/* The same check at once, without the poll interval (the job watcher). */
symm_status symm__boot_check_now(symm__boot *b);
/* The socket that carries news of the job (a dead PE) to this PE: readable
 * when there is some; -1 for a single PE. Closed by symm__boot_close. */
int symm__boot_news_fd(const symm__boot *b);
/* SYMM_INTERRUPT_FD's descriptor (readable once the process was
 * interrupted), -1 when unset or the job has one PE. */
int symm__boot_intr_fd(const symm__boot *b);
/* Transport handshake proofs (the core's auth_mac / auth_verify services,
 * runtime/transports/transport.h): HMAC-SHA-256 under a key derived from the
 * job key for transports (HMAC(key, "symm transport v1")), of (pe as 4 bytes
 * little-endian, then msg). verify compares in constant time: true when mac
 * is PE pe's. The key stays in the boot object. */
void symm__boot_auth_mac(const symm__boot *b, int32_t pe, const void *msg, size_t len,
                         uint8_t mac[32]);
bool symm__boot_auth_verify(const symm__boot *b, int32_t pe, const void *msg, size_t len,
                            const uint8_t mac[32]);
/* This PE gives up on the job (its init failed after joining): the other
 * PEs learn it at once with the reason (an ABORT through the server), not as
 * a PE that left or finalized. Nothing when the job already failed. */
void symm__boot_abort(symm__boot *b, const char *reason);
/* Leave the job (no collective) and free everything. NULL accepted. */
void symm__boot_close(symm__boot *b);
/* Env bootstrap's reading of the environment (rank, size, address, secret
 * checks) without joining: for the fuzz harness and tests. */
symm_status symm__boot_env_probe(int32_t *rank, int32_t *n_pes, char *addr, size_t addr_cap);


/* The job watcher (watch.c): a thread that sleeps on the bootstrap's news
 * socket and calls on_lost(arg) once when the job has lost a PE, for waits
 * that no host call polls (GPU-side waits). An idle job costs no CPU. */
typedef struct symm__boot_watch symm__boot_watch;
/* NULL (and a WARN line) when it cannot start; nothing to watch for a
 * single PE also gives NULL. */
symm__boot_watch *symm__boot_watch_start(symm__boot *b, void (*on_lost)(void *arg), void *arg);
/* Stop and join the watcher; NULL accepted. */
void symm__boot_watch_stop(symm__boot_watch *w);

#endif /* SYMM_BOOTSTRAP_H */

/*
 * The bootstrap client's private parts, shared by its files (nothing outside
 * bootstrap/ includes this):
 *   bootstrap.c  forming the job (single, env, unique id) and leaving it
 *   boot_sync.c  collectives through the server, failure news, proofs
 *   boot_fd.c    descriptor passing among the PEs of one host
 */
#ifndef SYMM_BOOT_INTERNAL_H
#define SYMM_BOOT_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "base/error.h"
#include "bootstrap.h"
#include "crypto.h"
#include "rendezvous.h"
#include "wire.h"

#define MSG_MAX 1024

struct symm__boot {
    int32_t rank, n_pes;
    uint32_t session;
    uint32_t timeout_ms;
    int fd;                 /* to the rendezvous server; -1 for a single PE */
    int intr_fd;            /* SYMM_INTERRUPT_FD (readable: give up), or -1 */
    bool external;          /* symmrun runs the server                       */
    symm__addr addr;
    char peer[SYMM__ADDR_TEXT_MAX + 32]; /* "rendezvous server unix:@x"      */
    uint8_t secret[SYMM__SECRET_BYTES];
    uint8_t tp_key[SYMM__SECRET_BYTES]; /* the transports' proofs (auth_mac)  */
    pthread_mutex_t io;     /* one conversation with the server at a time    */
    uint32_t seq;           /* collectives sent                              */
    atomic_int failed;      /* status of the first fatal failure, 0 = none   */
    atomic_llong polled_tick; /* coarse-clock time of the last boot_check poll */
    long long poll_ns;      /* poll the server at most this often            */
    char fail_msg[MSG_MAX];
    int share_fd;           /* listening socket for descriptor passing       */
    uint32_t share_seq;
    struct symm__env_server *server; /* env mode, rank 0 (bootstrap.c) */
    symm__rdv_thread *own_server; /* unique-id mode, rank 0 */
    int32_t local_rank, local_n_pes;
    int32_t *local_index;
    uint64_t *host_id;
    int32_t *pid;
};

/* Copy the current message so it can be re-wrapped with context. */
static inline void save_msg(char *dst, size_t n) {
    snprintf(dst, n, "%s", symm__last_error());
}

static inline void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* boot_sync.c */

/* The first fatal failure again, as the calling thread's error. */
symm_status symm__boot_failure(symm__boot *b);
/* Record the first fatal failure (io lock held), drop the connection (after
 * an ABORT to the server when notify, so the other PEs learn at once) and
 * return the status with the message. */
__attribute__((format(printf, 4, 5))) symm_status
symm__boot_fail(symm__boot *b, symm_status st, bool notify, const char *fmt, ...);
/* One collective (io lock held): send mine, wait for the combined answer. */
symm_status symm__boot_exchange_locked(symm__boot *b, uint32_t type, const void *mine, size_t len,
                                       void *all);
/* The server's socket is readable outside a collective (io lock held): an
 * ABORT, or the server went away. Success when nothing is complete yet. */
symm_status symm__boot_read_news(symm__boot *b);

/* SYMM_INTERRUPT_FD readable: this PE gives up on the job (ABORT to the
 * others) and the call gets PEER_FAILED saying so (io lock held). */
symm_status symm__boot_interrupted(symm__boot *b);

/* boot_fd.c */

/* Where PE rank takes descriptors (the name of its listening socket). */
void symm__boot_share_name(const symm__boot *b, int32_t rank, symm__addr *a);

#endif

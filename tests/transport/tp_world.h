/*
 * A stand-in for the runtime's core, for driving a transport plugin alone:
 * forks N processes, gives each a symm_tp_core whose collectives run over
 * shared memory, simulates hosts (host_id = pe / (N / hosts)) and tells
 * survivors when a PE dies (unless told to keep quiet, so the transport must
 * find out by itself). Used by tp_harness and bench_transport.
 */
#ifndef SYMM_TP_WORLD_H
#define SYMM_TP_WORLD_H

#include <stdint.h>

#include "runtime/transports/transport.h"

typedef struct tp_world {
    symm_tp_core core;
    const symm_tp_ops *ops;
    void *state;
    symm_tp_info info;
    int32_t me, n;
    uint8_t *remote;   /* [n] */
    uint64_t *host_id; /* [n] */
    uint32_t loopback;
} tp_world;

typedef struct tp_world_opts {
    const char *plugin;   /* path of libsymm_transport_<name>.so */
    int32_t n, hosts;
    int loopback;         /* open with loopback = 1 (all PEs reached) */
    int news;             /* 1: a dead PE is reported through check_failed */
    int require;          /* 1: a plugin whose probe fails is a failure, not a skip */
    uint32_t peer_timeout_ms;
} tp_world_opts;

/* Runs fn(world) in n forked processes (each has the plugin opened and the
 * collectives ready, but not the transport); returns the exit status for main:
 * 0 when every process returned 0 (a process expected to die is told by
 * tp_world_expect_death), 77 when the plugin cannot run here and !require. */
int tp_world_run(const tp_world_opts *o, int (*fn)(tp_world *w));
/* The calling PE is about to die on purpose (dead-peer tests). */
void tp_world_expect_death(tp_world *w);
/* Milliseconds (CLOCK_MONOTONIC) when the expected death happened, 0 before. */
uint64_t tp_world_death_ms(tp_world *w);
uint64_t tp_now_ms(void);
int32_t tp_barrier(tp_world *w);
/* Last message the plugin gave set_error, in this process. */
const char *tp_last_error(void);
/* Does this PE reach pe through the transport? */
int tp_reaches(const tp_world *w, int32_t pe);
/* The job's proof as PE pe (what that PE's core->auth_mac gives): for tests
 * that play a PE which lies about its number. */
void tp_world_mac(int32_t pe, const void *msg, size_t len, uint8_t mac[32]);

#endif

/*
 * The ofi transport, shared by its files: one-sided operations through libfabric (OFI), one
 * reliable-datagram endpoint (FI_EP_RDM) per PE, fi_write / fi_read for puts
 * and gets, fi_atomic and friends for the atomic family.
 *
 * - Provider: SYMM_OFI_PROVIDER (a libfabric provider name, layered ones as
 *   "verbs;ofi_rxm"), else the first of AUTO_ORDER below that offers an RDM
 *   endpoint with RMA; SYMM_OFI_DOMAIN picks a domain (NIC or interface) by
 *   name, SYMM_OFI_ADDR by this host's address on it (given to fi_getinfo
 *   as the source node). The choice and the reason go to the info log. When the core tries
 *   transports in its own order (SYMM_TRANSPORT unset or auto), only the
 *   NIC providers without a verbs path (efa, cxi) are offered, so the
 *   ibverbs and tcp transports keep the hosts they serve. `shm` reaches only
 *   PEs of this machine: never chosen by auto, used by name for tests with
 *   simulated hosts. SYMM_OFI_LIBRARY names the libfabric to open.
 * - Attributes asked for, in order of preference (each one the provider
 *   lacks is worked around, never assumed): FI_ATOMIC; FI_DELIVERY_COMPLETE
 *   (a completion means the target has the data, so quiet and blocking puts
 *   mean remote completion). Without delivery completion the provider must
 *   order reads after writes (FI_ORDER_RAW): a flush then reads a word from
 *   the PE after its writes completed. Reads, fetching atomics and messages
 *   are posted without delivery completion (their answer is the proof).
 *   Message ordering (FI_ORDER_WAW) is not relied on: put_signal and fence
 *   wait for the data's delivery (see ofi_put_signal).
 * - Memory: each mem_add range is one registration. FI_MR_PROV_KEY: the
 *   provider's key; otherwise a random 64-bit key (unique in the domain, and
 *   not guessable by a host outside the job: the keys travel only through
 *   the authenticated bootstrap). FI_MR_VIRT_ADDR: targets are addressed by
 *   the owner's virtual address, else by the offset in the registration.
 *   FI_MR_LOCAL: local buffers outside a registration go through a
 *   registered bounce buffer. FI_MR_ENDPOINT: registrations are bound to the
 *   endpoint. GPU memory: registered with FI_HMEM (fi_mr_regattr with
 *   FI_HMEM_CUDA) where the provider has it; otherwise staged through the
 *   core's GPU-memory service (mem_copy / mem_atomic): such a range is not
 *   registered, its address in the exchange is STAGED_ADDR, and every put,
 *   get and atomic on it is a message the target's progress applies with the
 *   service and answers (gets answered with the data), STAGE_CHUNK bytes of
 *   data a message; a local GPU buffer is copied through the bounce buffer.
 *   Neither: mem_add of GPU memory fails with SYMM_ERR_NOT_SUPPORTED.
 * - Addresses: fi_getname of every PE travels through core->allgather and
 *   is inserted into the address vector. open then reads one word from each
 *   PE it must reach (connection-oriented providers such as ofi_rxm connect
 *   on demand: set-up cost and failures belong to open, bounded by
 *   SYMM_TIMEOUT_MS), and checks the word names that PE.
 * - Progress: providers with manual progress move data only while someone
 *   reads the CQ, on both sides. A progress thread reads it: it blocks on the
 *   CQ's wait object (fi_trywait + poll) where the provider has one, else it
 *   naps: 10 us within 5 ms of this PE's last transport event (it posted,
 *   reaped, or served a peer), 50 us within HOT_MS, then growing to 1 ms. A
 *   target gets no completion for what it receives: where the provider
 *   offers FI_RMA_EVENT a remote counter (FI_REMOTE_WRITE | FI_REMOTE_READ)
 *   shows that a poll served a peer. A blocking call polls the CQ itself
 *   (the thread stands aside meanwhile): it spins briefly, then sleeps on
 *   the wait fd, or yields for 2 ms and then naps 20 us, so PEs that
 *   outnumber the cores leave each other CPU. -FI_EAGAIN is retried after
 *   progress. The core's waits (symm_wait_until, signal waits, barriers)
 *   call the progress hook at every pass, so a PE that waits in symm serves
 *   its peers from its own thread; meanwhile a thread without a wait fd
 *   stands aside (APP_POLL_US).
 * - Failure: every wait checks core->check_failed and the peer_failed flag;
 *   a completion error marks its PE failed; a wait that sees no completion
 *   for stall_ms (8 s + 2 x SYMM_PEER_TIMEOUT_MS, plus time for the bytes in
 *   flight) while a PE owes one declares that PE lost (a peer that went
 *   silent; a dead one is the core's news sooner). SYMM_ERR_PEER_FAILED,
 *   never a hang.
 * - Atomics, in order of preference, per (op, width): the provider's own
 *   (fi_atomic, fi_fetch_atomic, fi_compare_atomic on FI_UINT32/FI_UINT64;
 *   floats travel as their bits), else a CSWAP loop of the same width. When
 *   some op has neither, or the provider has no FI_ATOMIC, every atomic is a
 *   message (FI_MSG) that the target's progress applies with CPU atomics
 *   (amo_cpu.h) and answers: all ops then run on one engine.
 * - Testing knobs: SYMM_OFI_ATOMICS=native|cas|am forces an atomics path
 *   (cas: every op but CSWAP as a loop); SYMM_OFI_MAX_RMA=BYTES splits
 *   transfers into smaller posts; SYMM_OFI_STAGE_CHUNK=BYTES sets the data
 *   a staged message carries; SYMM_OFI_FORCE_MR_LOCAL=1 uses registered
 *   descriptors and the bounce buffer as FI_MR_LOCAL providers need;
 *   SYMM_OFI_TEST_NAP_US=US makes the progress thread poll only every US
 *   microseconds (no wait fd); SYMM_OFI_TEST_CQ_WAIT=none opens the CQ
 *   without a wait object, as on a provider that has none (what the object
 *   costs the data path; docs/OFI.md, Benchmark).
 * - Coherence with CPU atomics (SYMM_TP_CAP_ATOMIC_GLOBAL): claimed only
 *   where the target's CPU performs every atomic with atomic instructions:
 *   the message path, and providers whose atomics are software run at the
 *   target (ofi_rxm over any core provider, ofi_rxd, shm, sockets, udp:
 *   libfabric's handlers use __atomic builtins). Anything else (efa, cxi,
 *   psm2/3, opx, a NIC's own atomics) is not claimed, so the core sends every
 *   atomic update through this transport (loopback included).
 * - Files: ofi_internal.h (this: types, limits, helpers), ofi_provider.c
 *   (provider choice, probe), ofi_open.c (set-up, close, the ops table),
 *   ofi_auth.c (the peers' proofs), ofi_mem.c (registration), ofi_data.c
 *   (posting, RMA, ordering), ofi_atomic.c (the atomics paths),
 *   ofi_progress.c (completions, waits, the progress thread), ofi_load.c
 *   (opening libfabric).
 * - Authentication (docs/OFI.md): in open, before any heap range is
 *   registered, each PE proves to every PE it reaches, over the fabric, that
 *   it holds the job secret (core->auth_mac over the verifier's fresh
 *   challenge, read back from the prover's address); atomic messages carry
 *   the receiver's random key, which travels only through the bootstrap.
 */
#ifndef SYMM_OFI_INTERNAL_H
#define SYMM_OFI_INTERNAL_H

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <symm/symm.h>

#include "runtime/transports/amo_cpu.h"
#include "runtime/transports/tp_common.h"
#include "ofi_fns.h"

/* Providers auto tries, best first: NICs with their own protocol, then
 * verbs through the RDM utility layer, then TCP (works everywhere). */
static const char *const AUTO_ORDER[] = {"efa", "cxi", "verbs;ofi_rxm", "tcp;ofi_rxm"};
#define N_AUTO (sizeof AUTO_ORDER / sizeof AUTO_ORDER[0])
#define N_AUTO_CORE 2 /* the core's own auto: efa and cxi only */

#define API_MIN        FI_VERSION(1, 9)
#define BOUNCE_BYTES   (4u << 20)
#define BOUNCE_CHUNK   (1u << 20)
#define MAX_RMA        (1ull << 30) /* largest single fi_write/fi_read we post */
#define DEPTH_MAX      1024u
#define AM_SLOTS       64u          /* receive buffers for atomic messages */
/* Staging (GPU memory without FI_HMEM): the data a put or get message
 * carries at most; larger transfers are pipelined messages of this size,
 * as many in flight as the bounce buffer holds (docs/OFI.md, GPU memory). */
#define STAGE_CHUNK    (64u << 10)
#define STAGE_CHUNK_MAX (256u << 10) /* SYMM_OFI_STAGE_CHUNK's bound (testing knob) */
#define STAGED_ADDR    (~0ull)      /* a staged range's address in the exchange */
#define SPINS_BEFORE_YIELD 64u
#define ADDR_MAX       200u
#define HOT_MS         250u         /* short naps this long after the last activity */
/* SYMM_OFI_SPIN_US: without a CQ wait fd (shm), the progress thread keeps
 * reading the CQ this long after the last event (a completion, a peer
 * served) before it naps. Off by default: it brings an 8-byte put to a
 * passive shm target from 16 to 3.4 us, but a shm PE SIGKILLed while its
 * thread spins then likely dies holding its region's lock, and a peer's next
 * fi_write to it spins in libfabric for good (docs/OFI.md, Latency). */
#define SPIN_US_MAX    100000u
/* While the application's thread drives progress itself (the core's waits
 * call the progress hook at every pass; a blocking call polls in its wait),
 * a progress thread with a wait fd (tcp;ofi_rxm) leaves the CQ to it,
 * napping APP_ASIDE_US at a time instead of sleeping on the fd, where each
 * message woke it (12-14 us an 8-byte put to a waiting target instead of
 * 8-9; docs/OFI.md, Latency). A pass older than APP_POLL_US means the caller
 * left its wait or naps (the core's naps are 50 us): the thread serves again.
 * shm keeps its thread serving (ofi__progress says why). */
#define APP_POLL_US    30u
#define APP_ASIDE_US   200
/* Without a wait fd (shm) the thread also stands aside while an application
 * thread is inside a post (fi_write & co.), as long as that post is younger
 * than POST_ASIDE_MS: its 10 us naps and CQ reads beside a streaming poster
 * halved shm's nbi bandwidth at 64 KiB (docs/OFI.md, Benchmark, "the
 * progress thread beside a streaming initiator"). The bound keeps a PE whose
 * post never returns (a dead peer's shm lock) serving the others. */
#define POST_ASIDE_MS  50u
/* SYMM_OFI_TEST_NAP_US (testing knob): the progress thread naps this long
 * between polls and never sleeps on the wait fd, so tests can tell whose
 * polls served a peer. */
#define TEST_NAP_US_MAX 1000000u
/* The registered page of each PE: its check word, then one slot per PE for
 * the authentication (that PE's challenge, then this PE's proof over it). */
#define AUTH_HEAD      64u
#define AUTH_NONCE     32u
#define AUTH_MAC       32u
#define AUTH_SLOT      (AUTH_NONCE + AUTH_MAC)
#define AUTH_LABEL     "symm ofi v1 proof"
#define AUTH_MSG_MAX   (sizeof AUTH_LABEL + 8u + AUTH_NONCE)

enum { AMO_NATIVE = 1, AMO_CAS, AMO_AM }; /* st->amo: how atomics run */
enum { HOW_NONE = 0, HOW_NATIVE, HOW_CAS };
enum { K_WRITE, K_FETCH, K_COMPARE };      /* atomic call kinds */

/* libfabric's real symbols (ofi_load.c), set by symm__ofi_ops */
extern const struct ofi_fns *ofi__F;
extern const char *ofi__F_why;

/* ------------------------------------------------------------------------ */

/* mr: struct fid_mr *; desc: fi_mr_desc (tp_common.h) */
typedef symm__tp_region ofi_region;

typedef struct ofi_peer {
    fi_addr_t addr;
    uint8_t reach;
    uint64_t hello_addr, hello_key; /* its check word (open; the flush's read) */
    uint64_t am_key;    /* what atomic messages to it carry (its st->am_key) */
    uint8_t wrote;      /* writes since the last flush (no delivery completion) */
    uint32_t inflight;  /* posted, not completed (an atomic message: until its answer) */
    uint32_t reads;     /* ... of which reads and fetching atomics */
    uint64_t bytes;
    int failed;         /* 0, or a positive errno / ETIMEDOUT for a stall */
    int32_t am_err;     /* first error an atomic message came back with */
    int32_t copy_err;   /* first failed mem_copy into a local GPU buffer */
    char why[160];
} ofi_peer;

typedef struct ofi_rec { /* one outstanding operation; ctx first (FI_CONTEXT2) */
    struct fi_context2 ctx;
    int32_t pe, next_free;
    uint32_t gen;        /* bumped at each use: a message's token is (gen << 32) | index */
    uint8_t live, read, bounce, pending; /* pending: completions still due (2 for a message) */
    uint8_t copy_gpu;    /* copy_to is GPU memory: core->mem_copy, not memcpy */
    uint64_t bytes;
    void *copy_to;       /* on success: memcpy(copy_to, copy_from, copy_len) */
    const void *copy_from;
    size_t copy_len;
} ofi_rec;

/* An atomic, or a staged put or get, as a message: request and answer share
 * the layout; a put request and a get answer carry len bytes of data after
 * it. */
#define AM_MAGIC 0x53594d41u /* "SYMA" */
enum { AM_ATOMIC = 0, AM_PUT, AM_GET };
typedef struct am_msg {
    uint32_t magic, answer; /* answer: 0 request, 1 answer */
    uint32_t dtype, op;
    uint32_t kind, len;     /* AM_*; the data's bytes (put, get) */
    int32_t src, status;
    uint64_t off, value, compare, token; /* token: the requester's record (gen << 32 | index) */
    uint64_t key; /* the receiver's am_key: a message without it is dropped */
} am_msg;

/* Receive slot i and answer slot i go together: a request received in slot
 * i is answered from answer slot i, and slot i takes the next message only
 * once that answer has gone, so answers never outnumber their slots (the
 * provider keeps messages that find no receive posted). */
typedef struct am_slot {
    struct fi_context2 ctx; /* first: the completion's context */
    am_msg *msg;            /* in am_buf: the header, then up to stage_chunk bytes (staging) */
    int32_t dest;           /* answers: the PE it goes to (-1: free) */
    uint8_t queued;         /* answers: met -FI_EAGAIN, sent again by a later poll */
    uint32_t len;           /* answers: bytes to send */
} am_slot;

typedef struct ofi_tp {
    const symm_tp_core *core;
    int32_t me, n;
    pthread_mutex_t mu;    /* the calls the core serialises (open .. close)        */
    pthread_mutex_t cq_mu; /* completion state: CQ reads, records, counters, bounce */
    atomic_int news, stop, waiters, activity;
    atomic_int posting;            /* application threads inside a post (no wait fd) */
    _Atomic uint64_t post_us;      /* when the latest of them began (now_us) */

    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_cntr *rx_cntr; /* incoming RMA and atomics (FI_RMA_EVENT), or NULL */
    int wait_fd, wake[2];
    int rma_event;
    pthread_t thread;
    bool thread_started;

    char prov[64], dom[64], choice[512];
    uint64_t mr_mode;
    size_t key_bytes;
    uint64_t max_rma;
    uint32_t depth;
    int delivery, hmem, global;
    int staging;          /* GPU ranges through the core's service (no FI_HMEM) */
    int msgs;             /* message slots posted (atomic messages or staging) */
    uint32_t stage_chunk; /* STAGE_CHUNK, or SYMM_OFI_STAGE_CHUNK */
    int amo;
    uint8_t how[2][SYMM_AMO_XOR + 1]; /* [width 4/8][op] */
    uint32_t stall_ms;

    ofi_peer *peers;
    uint32_t inflight;
    uint64_t bytes;
    ofi_rec *recs;
    int32_t rec_free, n_recs;

    ofi_region *regs;
    int n_regs;

    char *bounce;
    struct fid_mr *bounce_mr;
    void *bounce_desc;
    size_t bounce_used;
    uint32_t bounce_refs;

    uint64_t *hello;      /* registered page: this PE's number (open's check), then the
                             authentication slots (AUTH_HEAD + n * AUTH_SLOT bytes) */
    size_t hello_bytes;
    uint8_t *auth_chal;   /* [n * AUTH_NONCE] the challenges this PE sent */
    uint64_t am_key;      /* atomic messages to this PE must carry it */
    uint64_t am_key_flip; /* testing knob: XORed into the keys this PE sends */
    uint32_t spin_us;     /* SYMM_OFI_SPIN_US (no wait fd only) */
    uint32_t test_nap_us; /* SYMM_OFI_TEST_NAP_US (0: the normal policy) */
    int test_no_cq_wait;  /* SYMM_OFI_TEST_CQ_WAIT=none: the CQ without a wait object */
    _Atomic uint64_t app_poll_us; /* when an application thread last read the CQ (now_us) */
    struct fid_mr *hello_mr;

    am_slot *am_rx, *am_tx; /* [AM_SLOTS] each; their buffers in am_buf, registered */
    char *am_buf;
    size_t am_slot_bytes;
    struct fid_mr *am_mr;
    void *am_desc;
    am_slot *am_block;
    int32_t am_queued;    /* answers waiting to be sent again */
} ofi_tp;

/* One operation to post (the arguments of the fi_* call). */
typedef struct ofi_op {
    int kind; /* OP_WRITE, OP_READ, OP_ATOMIC, OP_FETCH, OP_COMPARE, OP_SEND */
    void *buf;
    size_t len;
    void *desc;
    uint64_t raddr, rkey;
    enum fi_datatype dt;
    enum fi_op aop;
    void *compare, *result;
    uint8_t copy_gpu;  /* the record's copy_to is GPU memory */
    uint64_t bytes;    /* counted in flight (0: len for RMA, 8 otherwise) */
} ofi_op;
enum { OP_WRITE, OP_READ, OP_ATOMIC, OP_FETCH, OP_COMPARE, OP_SEND };

typedef struct addr_msg {
    uint32_t status, amo;   /* status: 0, or why this PE could not open */
    uint32_t len, slot;     /* of the endpoint name; message slot bytes (0: none) */
    uint64_t hello_addr, hello_key, am_key;
    char prov[32];
    uint8_t name[ADDR_MAX];
} addr_msg;

typedef struct choice {
    struct fi_info *info;   /* one entry (ofi__F->dupinfo'd), NULL when none */
    int amo, delivery, rma_event;
} choice;

#define ACCESS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* ---- small helpers ------------------------------------------------------ */

static inline int32_t fail(const symm_tp_core *core, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline int32_t fail(const symm_tp_core *core, int32_t status, const char *fmt, ...) {
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char full[700];
    snprintf(full, sizeof full, "ofi transport: %s", msg);
    return core->set_error(core->core, status, full);
}

static inline void logf_(const symm_tp_core *core, int32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void logf_(const symm_tp_core *core, int32_t level, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core->log(core->core, level, msg);
}

static inline uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static inline uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline const char *env(const symm_tp_core *core, const char *name) {
    const char *v = core->getenv(core->core, name);
    return v && *v ? v : NULL;
}

static inline const char *ferr(int rc) {
    return ofi__F->strerror(rc < 0 ? -rc : rc);
}

static inline void nap_us(long us) {
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}


/* Is the local pointer p GPU memory (only where this PE stages)? */
static inline int ofi__gpu_ptr(const ofi_tp *st, const void *p) {
    return st->staging && p && st->core->mem_kind(st->core->core, p) == SYMM_TP_MEM_CUDA;
}

/* Is region r staged on PE pe (GPU memory reached through messages)? */
static inline int ofi__staged(const ofi_region *r, int32_t pe) {
    return r->raddr[pe] == STAGED_ADDR;
}

/* ofi_provider.c */
uint32_t ofi__api_version(void);
int32_t ofi__choose(const symm_tp_core *core, choice *c, char *why, size_t why_len,
                      char *reason, size_t reason_len);
int ofi__software_atomics(const char *prov);
int32_t ofi__probe(const symm_tp_core *core, char *why, size_t why_len);

/* ofi_progress.c */
int32_t ofi__peer_error(ofi_tp *st, int32_t pe);
void ofi__mark_failed(ofi_tp *st, int32_t pe, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void ofi__rec_done(ofi_tp *st, ofi_rec *r, int ok);
int ofi__poll_once(ofi_tp *st);
uint64_t ofi__stall_limit(ofi_tp *st, int32_t pe);
int ofi__news(ofi_tp *st);
void ofi__idle_wait(ofi_tp *st, uint64_t *since);
int32_t ofi__wait_for(ofi_tp *st, int32_t pe, uint32_t max);
void ofi__progress(void *state);
void ofi__peer_failed(void *state);
void *ofi__progress_main(void *arg);

/* ofi_data.c */
int32_t ofi__bounce_get(ofi_tp *st, size_t n, char **out);
void ofi__bounce_release(ofi_tp *st);
int32_t ofi__post(ofi_tp *st, int32_t pe, ofi_op *o, int read, int bounce, void *copy_to,
                    const void *copy_from, size_t copy_len, uint64_t limit_ms);
int32_t ofi__remote_at(ofi_tp *st, int32_t pe, uint64_t off, uint64_t n, uint64_t *raddr,
                         uint64_t *rkey, uint64_t *room);
int32_t ofi__check_pe(ofi_tp *st, int32_t pe);
int32_t ofi__flush(ofi_tp *st, int32_t pe);
int32_t ofi__put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags);
int32_t ofi__get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags);
int32_t ofi__put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags);
int32_t ofi__fence(void *state);
int32_t ofi__quiet(void *state);
int32_t ofi__take_err(ofi_tp *st, int32_t pe, const char *what, uint64_t off);

/* ofi_atomic.c */
void ofi__plan_atomics(ofi_tp *st, const char *force);
int32_t ofi__atomic_locked(ofi_tp *st, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                             const void *value, const void *compare, void *fetched,
                             uint32_t flags);
int32_t ofi__atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched, uint32_t flags);

/* ofi_mem.c */
uint64_t ofi__random_key(ofi_tp *st);
int ofi__reg(ofi_tp *st, void *base, size_t len, uint64_t access, uint32_t mem_kind,
               struct fid_mr **mr, char *why, size_t why_len);
int32_t ofi__mem_add(void *state, void *base, uint64_t heap_off, uint64_t len,
                           uint32_t mem_kind, int dmabuf_fd);
void ofi__mem_remove(void *state, uint64_t heap_off, uint64_t len);
void ofi__release_mr(ofi_region *r);

/* ofi_auth.c */
int32_t ofi__authenticate_peers(ofi_tp *st, int32_t status, char *why, size_t why_len);

#endif /* SYMM_OFI_INTERNAL_H */

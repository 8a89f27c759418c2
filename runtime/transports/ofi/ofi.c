/*
 * The ofi transport: one-sided operations through libfabric (OFI), one
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
 *   endpoint. GPU memory needs FI_HMEM (fi_mr_regattr with FI_HMEM_CUDA);
 *   without it mem_add of GPU memory fails with SYMM_ERR_NOT_SUPPORTED.
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
 *   progress.
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
 *   transfers into smaller posts; SYMM_OFI_FORCE_MR_LOCAL=1 uses registered
 *   descriptors and the bounce buffer as FI_MR_LOCAL providers need.
 * - Coherence with CPU atomics (SYMM_TP_CAP_ATOMIC_GLOBAL): claimed only
 *   where the target's CPU performs every atomic with atomic instructions:
 *   the message path, and providers whose atomics are software run at the
 *   target (ofi_rxm over any core provider, ofi_rxd, shm, sockets, udp:
 *   libfabric's handlers use __atomic builtins). Anything else (efa, cxi,
 *   psm2/3, opx, a NIC's own atomics) is not claimed, so the core sends every
 *   atomic update through this transport (loopback included).
 * - Authentication (docs/OFI.md): in open, before any heap range is
 *   registered, each PE proves to every PE it reaches, over the fabric, that
 *   it holds the job secret (core->auth_mac over the verifier's fresh
 *   challenge, read back from the prover's address); atomic messages carry
 *   the receiver's random key, which travels only through the bootstrap.
 */
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

#include "amo_cpu.h"
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
#define SPINS_BEFORE_YIELD 64u
#define ADDR_MAX       200u
#define HOT_MS         250u         /* short naps this long after the last activity */
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

static const struct ofi_fns *F;
static const char *F_why = "";

/* ------------------------------------------------------------------------ */

typedef struct ofi_region {
    uint64_t off, len;
    char *base;
    struct fid_mr *mr;
    void *desc;
    uint64_t *raddr; /* [n] target address of the range's start on each PE */
    uint64_t *rkey;  /* [n] */
} ofi_region;

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
    char why[160];
} ofi_peer;

typedef struct ofi_rec { /* one outstanding operation; ctx first (FI_CONTEXT2) */
    struct fi_context2 ctx;
    int32_t pe, next_free;
    uint32_t gen;        /* bumped at each use: a message's token is (gen << 32) | index */
    uint8_t live, read, bounce, pending; /* pending: completions still due (2 for a message) */
    uint64_t bytes;
    void *copy_to;       /* on success: memcpy(copy_to, copy_from, copy_len) */
    const void *copy_from;
    size_t copy_len;
} ofi_rec;

/* An atomic as a message: request and answer share the layout. */
#define AM_MAGIC 0x53594d41u /* "SYMA" */
typedef struct am_msg {
    uint32_t magic, answer; /* answer: 0 request, 1 answer */
    uint32_t dtype, op;
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
    am_msg msg;
    int32_t dest;           /* answers: the PE it goes to (-1: free) */
    uint8_t queued;         /* answers: met -FI_EAGAIN, sent again by a later poll */
} am_slot;

typedef struct ofi_tp {
    const symm_tp_core *core;
    int32_t me, n;
    pthread_mutex_t mu;    /* the calls the core serialises (open .. close)        */
    pthread_mutex_t cq_mu; /* completion state: CQ reads, records, counters, bounce */
    atomic_int news, stop, waiters, activity;

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
    struct fid_mr *hello_mr;

    am_slot *am_rx, *am_tx; /* [AM_SLOTS] each; registered with am_mr */
    struct fid_mr *am_mr;
    void *am_desc;
    am_slot *am_block;
    int32_t am_queued;    /* answers waiting to be sent again */
} ofi_tp;

/* ---- small helpers ------------------------------------------------------ */

static int32_t fail(const symm_tp_core *core, int32_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int32_t fail(const symm_tp_core *core, int32_t status, const char *fmt, ...) {
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char full[700];
    snprintf(full, sizeof full, "ofi transport: %s", msg);
    return core->set_error(core->core, status, full);
}

static void logf_(const symm_tp_core *core, int32_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void logf_(const symm_tp_core *core, int32_t level, const char *fmt, ...) {
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    core->log(core->core, level, msg);
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *env(const symm_tp_core *core, const char *name) {
    const char *v = core->getenv(core->core, name);
    return v && *v ? v : NULL;
}

static const char *ferr(int rc) {
    return F->strerror(rc < 0 ? -rc : rc);
}

static void nap_us(long us) {
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

/* ---- provider choice ---------------------------------------------------- */

/* What this build can use (FI_MR_RAW, FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT: no). */
#define MR_MODES (FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT)

static uint32_t api_version(void) {
    uint32_t have = F->version(), built = FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
    return have < built ? have : built;
}

/* One fi_getinfo for prov with the given wishes; NULL when none matches. */
static struct fi_info *query(const symm_tp_core *core, const char *prov, uint64_t caps,
                             uint64_t op_flags, uint64_t order, int *rc_out) {
    struct fi_info *h = F->dupinfo(NULL), *info = NULL;
    if (!h) {
        *rc_out = -FI_ENOMEM;
        return NULL;
    }
    h->caps = caps;
    h->mode = FI_CONTEXT | FI_CONTEXT2;
    h->addr_format = FI_FORMAT_UNSPEC;
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = (int)MR_MODES;
    h->domain_attr->threading = FI_THREAD_SAFE;
    h->tx_attr->op_flags = op_flags;
    h->tx_attr->msg_order = order;
    h->rx_attr->msg_order = order;
    if (prov) h->fabric_attr->prov_name = strdup(prov);
    const char *dom = env(core, "SYMM_OFI_DOMAIN");
    if (dom) h->domain_attr->name = strdup(dom);
    /* SYMM_OFI_ADDR: this host's address on the fabric (the NIC's IP). */
    const char *node = env(core, "SYMM_OFI_ADDR");
    *rc_out = F->getinfo(api_version(), node, NULL, node ? FI_SOURCE : 0, h, &info);
    F->freeinfo(h);
    return *rc_out == 0 ? info : NULL;
}

/* The entry of a list to use: a named domain, else the first that is not
 * the loopback interface or an IPv6 link-local source (unreachable from
 * other hosts), else the first. */
static struct fi_info *pick_entry(struct fi_info *list) {
    for (struct fi_info *i = list; i; i = i->next) {
        const char *d = i->domain_attr && i->domain_attr->name ? i->domain_attr->name : "";
        if (!strcmp(d, "lo")) continue;
        if (i->addr_format == FI_SOCKADDR_IN6 && i->src_addr) {
            const uint8_t *a = (const uint8_t *)i->src_addr + 8; /* sin6_addr */
            if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) continue;
        }
        return i;
    }
    return list;
}

typedef struct choice {
    struct fi_info *info;   /* one entry (F->dupinfo'd), NULL when none */
    int amo, delivery, rma_event;
} choice;

/* The best attribute set prov offers (see the top of the file). */
static int try_provider(const symm_tp_core *core, const char *prov, const char *force_amo,
                        choice *c, char *why, size_t why_len) {
    int rc;
    bool want_am = force_amo && !strcmp(force_amo, "am");
    struct fi_info *l = query(core, prov, FI_RMA, 0, 0, &rc);
    if (!l) {
        const char *node = env(core, "SYMM_OFI_ADDR");
        snprintf(why, why_len, "%s: %s%s%s", prov ? prov : "any",
                 rc == -FI_ENODATA ? "not available here (no such provider, device or interface)"
                                   : ferr(rc),
                 node ? " with SYMM_OFI_ADDR=" : "", node ? node : "");
        return -1;
    }
    F->freeinfo(l);
    static const struct { uint64_t caps, opf, order; int amo, delivery; } ladder[] = {
        {FI_RMA | FI_ATOMIC | FI_MSG, FI_DELIVERY_COMPLETE, 0, AMO_NATIVE, 1},
        {FI_RMA | FI_ATOMIC, FI_DELIVERY_COMPLETE, 0, AMO_NATIVE, 1},
        {FI_RMA | FI_MSG, FI_DELIVERY_COMPLETE, 0, AMO_AM, 1},
        {FI_RMA | FI_ATOMIC | FI_MSG, 0, FI_ORDER_RAW, AMO_NATIVE, 0},
        {FI_RMA | FI_ATOMIC, 0, FI_ORDER_RAW, AMO_NATIVE, 0},
        {FI_RMA | FI_MSG, 0, FI_ORDER_RAW, AMO_AM, 0},
    };
    for (size_t k = 0; k < sizeof ladder / sizeof ladder[0]; k++) {
        if (want_am && !(ladder[k].caps & FI_MSG)) continue;
        l = query(core, prov, ladder[k].caps, ladder[k].opf, ladder[k].order, &rc);
        if (!l) continue;
        /* shm (libfabric 1.17, measured) hands a fetching atomic the result of
         * another initiator's atomic on the same target under
         * FI_DELIVERY_COMPLETE; without it every result was right, and shm
         * orders reads after writes, so quiet flushes with a read instead. */
        if (ladder[k].delivery && !strcmp(pick_entry(l)->fabric_attr->prov_name, "shm")) {
            F->freeinfo(l);
            continue;
        }
        c->info = F->dupinfo(pick_entry(l));
        F->freeinfo(l);
        if (!c->info) {
            snprintf(why, why_len, "out of host memory");
            return -1;
        }
        c->amo = want_am ? AMO_AM : ladder[k].amo;
        c->delivery = ladder[k].delivery;
        /* the same with FI_RMA_EVENT, where offered: a target's counter */
        l = query(core, prov, ladder[k].caps | FI_RMA_EVENT, ladder[k].opf, ladder[k].order, &rc);
        if (l) {
            struct fi_info *e = F->dupinfo(pick_entry(l));
            F->freeinfo(l);
            if (e && !strcmp(e->fabric_attr->prov_name, c->info->fabric_attr->prov_name)) {
                F->freeinfo(c->info);
                c->info = e;
                c->rma_event = 1;
            } else if (e) {
                F->freeinfo(e);
            }
        }
        return 0;
    }
    snprintf(why, why_len, "%s: offers RMA but neither delivery completion nor reads ordered "
             "after writes (quiet could not mean remote completion)%s", prov ? prov : "any",
             want_am ? ", or no FI_MSG for SYMM_OFI_ATOMICS=am" : "");
    return -1;
}

/* libfabric sizes per-peer resources by FI_UNIVERSE_SIZE (default 256):
 * ofi_rxm's verbs CQ is (rx + tx queue) x that, which a Soft-RoCE device
 * refused (measured in the guest). Like MPI launchers, say the job's size
 * when the user has not; read once, at libfabric's first call. */
static void universe_size(const symm_tp_core *core) {
    if (getenv("FI_UNIVERSE_SIZE")) return;
    char v[16];
    snprintf(v, sizeof v, "%d", core->n_pes > 2 ? core->n_pes : 2);
    setenv("FI_UNIVERSE_SIZE", v, 0);
}

/* The provider: SYMM_OFI_PROVIDER, else AUTO_ORDER. 0, or a status + why. */
static int32_t choose(const symm_tp_core *core, choice *c, char *why, size_t why_len,
                      char *reason, size_t reason_len) {
    memset(c, 0, sizeof *c);
    if (!F) {
        snprintf(why, why_len, "%s", F_why);
        return SYMM_ERR_NOT_SUPPORTED;
    }
    universe_size(core);
    if (F->version() < API_MIN) {
        snprintf(why, why_len, "libfabric %u.%u is too old (1.9 or newer needed)",
                 FI_MAJOR(F->version()), FI_MINOR(F->version()));
        return SYMM_ERR_NOT_SUPPORTED;
    }
    const char *want = env(core, "SYMM_OFI_PROVIDER");
    const char *amo = env(core, "SYMM_OFI_ATOMICS");
    if (amo && strcmp(amo, "auto") && strcmp(amo, "native") && strcmp(amo, "cas") &&
        strcmp(amo, "am")) {
        snprintf(why, why_len, "SYMM_OFI_ATOMICS=\"%s\": expected auto, native, cas or am", amo);
        return SYMM_ERR_INVALID_ARG;
    }
    if (want) {
        if (try_provider(core, want, amo, c, why, why_len) != 0) return SYMM_ERR_NOT_SUPPORTED;
        snprintf(reason, reason_len, "SYMM_OFI_PROVIDER=%s", want);
        return 0;
    }
    const char *tp = core->getenv(core->core, "SYMM_TRANSPORT");
    bool named = tp && !strcmp(tp, "ofi");
    size_t n_try = named ? N_AUTO : N_AUTO_CORE;
    const char *order = named ? "efa, cxi, verbs;ofi_rxm, tcp;ofi_rxm" : "efa, cxi";
    char tried[600] = "";
    for (size_t i = 0; i < n_try; i++) {
        char w[200];
        if (try_provider(core, AUTO_ORDER[i], amo, c, w, sizeof w) == 0) {
            snprintf(reason, reason_len, "auto (order %s)%s%s", order, tried[0] ? "; skipped " : "",
                     tried);
            return 0;
        }
        size_t len = strlen(tried);
        snprintf(tried + len, sizeof tried - len, "%s%s", len ? "; " : "", w);
    }
    snprintf(why, why_len, "no libfabric provider of %s offers an RDM endpoint with RMA here (%s); "
             "%sset SYMM_OFI_PROVIDER (fi_info -l lists them)", order, tried,
             named ? "" : "SYMM_TRANSPORT=auto tries only these (verbs and tcp are left to the "
                          "ibverbs and tcp transports): set SYMM_TRANSPORT=ofi, or ");
    return SYMM_ERR_NO_DEVICE;
}

/* Atomics run at the target by its CPU, with atomic instructions? */
static int software_atomics(const char *prov) {
    static const char *const sw[] = {"ofi_rxm", "ofi_rxd", "shm", "sockets", "udp"};
    char copy[64];
    snprintf(copy, sizeof copy, "%s", prov);
    /* a layered name ("verbs;ofi_rxm"): the last layer runs the atomics */
    const char *last = strrchr(copy, ';');
    last = last ? last + 1 : copy;
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++)
        if (!strcmp(last, sw[i])) return 1;
    return 0;
}

/* ---- probe ---------------------------------------------------------------- */

static int32_t ofi_probe(const symm_tp_core *core, char *why, size_t why_len) {
    choice c;
    char reason[700];
    int32_t rc = choose(core, &c, why, why_len, reason, sizeof reason);
    if (c.info) F->freeinfo(c.info);
    return rc;
}

/* ---- completions -------------------------------------------------------- */

static int32_t peer_error(ofi_tp *st, int32_t pe) {
    ofi_peer *p = &st->peers[pe];
    return fail(st->core, SYMM_ERR_PEER_FAILED, "PE %d failed: %s", pe,
                p->why[0] ? p->why : "its operations met errors");
}

static void mark_failed(ofi_tp *st, int32_t pe, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mark_failed(ofi_tp *st, int32_t pe, int err, const char *fmt, ...) {
    ofi_peer *p = &st->peers[pe];
    if (p->failed) return;
    p->failed = err ? err : EIO;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->why, sizeof p->why, fmt, ap);
    va_end(ap);
    logf_(st->core, 0, "PE %d: %s", pe, p->why);
}

static void rec_done(ofi_tp *st, ofi_rec *r, int ok) {
    if (r->pending > 1) {
        r->pending--;
        return;
    }
    ofi_peer *p = &st->peers[r->pe];
    if (ok && r->copy_to) memcpy(r->copy_to, r->copy_from, r->copy_len);
    p->inflight--;
    st->inflight--;
    p->reads -= r->read;
    p->bytes -= r->bytes;
    st->bytes -= r->bytes;
    if (r->bounce && --st->bounce_refs == 0) st->bounce_used = 0;
    r->copy_to = NULL;
    r->live = 0;
    r->pending = 0;
    int32_t idx = (int32_t)(r - st->recs);
    r->next_free = st->rec_free;
    st->rec_free = idx;
}

static void am_repost(ofi_tp *st, am_slot *rx) {
    /* a failure leaves one receive slot fewer; messages wait in the provider */
    fi_recv(st->ep, &rx->msg, sizeof rx->msg, st->am_desc, FI_ADDR_UNSPEC, &rx->ctx);
}

/* Send answer slot a (its receive slot is reposted when it has gone). */
static void am_send_answer(ofi_tp *st, am_slot *a) {
    ssize_t rc = fi_send(st->ep, &a->msg, sizeof a->msg, st->am_desc, st->peers[a->dest].addr,
                         &a->ctx);
    if (rc == -FI_EAGAIN) {
        if (!a->queued) st->am_queued++;
        a->queued = 1;
        return;
    }
    if (a->queued) st->am_queued--;
    a->queued = 0;
    if (rc) { /* the requester will stall and declare this PE lost */
        a->dest = -1;
        am_repost(st, &st->am_rx[a - st->am_tx]);
    }
}

/* A message arrived in receive slot rx: serve a request, or take an answer. */
static void am_received(ofi_tp *st, am_slot *rx) {
    am_msg m = rx->msg;
    /* The key, like a registration's, travels only through the bootstrap: a
     * process outside the job can send to the endpoint, not apply atomics */
    if (m.magic != AM_MAGIC || m.key != st->am_key || m.src < 0 || m.src >= st->n ||
        !st->peers[m.src].reach) {
        am_repost(st, rx);
        return;
    }
    if (m.answer) {
        am_repost(st, rx);
        uint64_t idx = m.token & 0xffffffffu;
        if (idx >= (uint64_t)st->n_recs) return;
        ofi_rec *r = &st->recs[idx];
        if (!r->live || r->pe != m.src || r->gen != (uint32_t)(m.token >> 32)) return;
        if (m.status && !st->peers[r->pe].am_err) st->peers[r->pe].am_err = m.status;
        if (r->copy_to && !m.status) memcpy(r->copy_to, &m.value, r->copy_len);
        r->copy_to = NULL;
        rec_done(st, r, 1);
        return;
    }
    /* A request: apply it to this PE's memory with CPU atomics, answer. */
    uint64_t old = 0;
    int32_t status = SYMM_ERR_OUT_OF_BOUNDS;
    uint32_t size = symm__amo_size(m.dtype);
    for (int i = 0; size && i < st->n_regs; i++) {
        ofi_region *r = &st->regs[i];
        if (m.off >= r->off && m.off - r->off + size <= r->len) {
            if (m.off % size == 0)
                status = symm__amo_cpu(r->base + (m.off - r->off), m.dtype, m.op, m.value,
                                       m.compare, &old);
            break;
        }
    }
    am_slot *a = &st->am_tx[rx - st->am_rx];
    a->msg = (am_msg){.magic = AM_MAGIC, .answer = 1, .dtype = m.dtype, .op = m.op, .src = st->me,
                      .status = status, .value = old, .token = m.token,
                      .key = st->peers[m.src].am_key};
    a->dest = m.src;
    am_send_answer(st, a);
}

static int is_am_slot(ofi_tp *st, void *ctx, am_slot **out) {
    am_slot *b = st->am_block;
    if (!b || (char *)ctx < (char *)b || (char *)ctx >= (char *)(b + 2 * AM_SLOTS)) return 0;
    *out = &b[((char *)ctx - (char *)b) / (ptrdiff_t)sizeof *b];
    return 1;
}

static void handle(ofi_tp *st, void *ctx, int err, const char *errtext) {
    am_slot *s;
    if (is_am_slot(st, ctx, &s)) {
        if (s < st->am_tx) { /* a receive */
            if (!err) am_received(st, s);
            return;
        }
        s->dest = -1; /* an answer went (or failed: its requester stalls) */
        am_repost(st, &st->am_rx[s - st->am_tx]);
        return;
    }
    ofi_rec *r = ctx;
    if (r < st->recs || r >= st->recs + st->n_recs || !r->live) return; /* not ours */
    if (err) {
        mark_failed(st, r->pe, err, "%s", errtext);
        r->pending = 1; /* a failed message gets no answer */
    }
    rec_done(st, r, !err);
}

/* Poll the CQ once (cq_mu held); returns completions seen, or -1 (error set). */
static int poll_once(ofi_tp *st) {
    struct fi_cq_entry e[16];
    ssize_t got = fi_cq_read(st->cq, e, 16);
    for (uint32_t i = 0; st->am_queued && i < AM_SLOTS; i++)
        if (st->am_tx[i].queued) am_send_answer(st, &st->am_tx[i]);
    if (got > 0) {
        for (ssize_t i = 0; i < got; i++) handle(st, e[i].op_context, 0, NULL);
        atomic_store_explicit(&st->activity, 1, memory_order_relaxed);
        return (int)got;
    }
    if (got == -FI_EAGAIN) return 0;
    if (got == -FI_EAVAIL) {
        struct fi_cq_err_entry ee;
        memset(&ee, 0, sizeof ee);
        if (fi_cq_readerr(st->cq, &ee, 0) != 1) return 0;
        char buf[128] = "";
        const char *pt = fi_cq_strerror(st->cq, ee.prov_errno, ee.err_data, buf, sizeof buf);
        char text[160];
        snprintf(text, sizeof text, "completion error: %s (%s)", F->strerror(ee.err),
                 pt && *pt ? pt : "no provider detail");
        handle(st, ee.op_context, ee.err ? ee.err : EIO, text);
        return 1;
    }
    fail(st->core, SYMM_ERR_SYSTEM, "fi_cq_read failed: %s", ferr((int)got));
    return -1;
}

/* A wait gave up: results still in flight must not land later in buffers
 * the caller has given back (blocking atomics fetch into their frames). */
static int32_t give_up(ofi_tp *st, int32_t rc) {
    for (int32_t i = 0; i < st->n_recs; i++)
        if (st->recs[i].live) st->recs[i].copy_to = NULL;
    return rc;
}

/* How long a wait may see no completion before it declares the PE lost:
 * stall_ms plus the time the bytes in flight need at 1 MiB/s. */
static uint64_t stall_limit(ofi_tp *st, int32_t pe) {
    uint64_t bytes = pe >= 0 ? st->peers[pe].bytes : st->bytes;
    return st->stall_ms + bytes / 1049u;
}

static int news(ofi_tp *st) {
    return atomic_load(&st->news) || st->core->check_failed(st->core->core) != 0;
}

/* A waiter with nothing to do: sleep on the CQ's wait fd (1 ms slices, so
 * the failure checks keep running), else yield for 2 ms, then nap. */
static void idle_wait(ofi_tp *st, uint64_t *since) {
    if (st->wait_fd >= 0) {
        struct fid *f = &st->cq->fid;
        if (fi_trywait(st->fabric, &f, 1) == FI_SUCCESS) {
            struct pollfd pf = {st->wait_fd, POLLIN, 0};
            poll(&pf, 1, 1);
        }
        return;
    }
    uint64_t now = now_ms();
    if (!*since) *since = now;
    if (now - *since < 2) sched_yield();
    else nap_us(20);
}

/* Wait until pe's (or, pe < 0, everyone's) outstanding count is <= max. */
static int32_t wait_for(ofi_tp *st, int32_t pe, uint32_t max) {
    uint64_t last = 0, idle_since = 0;
    int moved = 0;
    int32_t rc = 0;
    atomic_fetch_add(&st->waiters, 1);
    for (uint32_t spins = 0;; spins++) {
        pthread_mutex_lock(&st->cq_mu);
        int got = poll_once(st);
        if (got < 0) {
            rc = give_up(st, SYMM_ERR_SYSTEM);
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        if (pe >= 0 && st->peers[pe].failed) {
            rc = give_up(st, peer_error(st, pe));
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        uint32_t left = pe >= 0 ? st->peers[pe].inflight : st->inflight;
        moved |= got > 0;
        if (left <= max) {
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        if ((spins & 15) == 15 && news(st)) {
            rc = give_up(st, fail(st->core, SYMM_ERR_PEER_FAILED,
                                  "the job lost a PE while waiting for completions"));
            pthread_mutex_unlock(&st->cq_mu);
            break;
        }
        if ((spins & 255) == 255) {
            uint64_t now = now_ms();
            if (!last || moved) {
                last = now;
                moved = 0;
            } else if (now - last > stall_limit(st, pe)) {
                for (int32_t i = 0; i < st->n; i++)
                    if (st->peers[i].inflight && (pe < 0 || i == pe))
                        mark_failed(st, i, ETIMEDOUT, "no completion for %llu ms: it stopped "
                                    "answering", (unsigned long long)(now - last));
                int32_t bad = pe;
                for (int32_t i = 0; bad < 0 && i < st->n; i++)
                    if (st->peers[i].failed) bad = i;
                rc = give_up(st, bad >= 0 ? peer_error(st, bad)
                                          : fail(st->core, SYMM_ERR_PEER_FAILED,
                                                 "no completion for %llu ms",
                                                 (unsigned long long)(now - last)));
                pthread_mutex_unlock(&st->cq_mu);
                break;
            }
        }
        pthread_mutex_unlock(&st->cq_mu);
        if (spins > SPINS_BEFORE_YIELD) idle_wait(st, &idle_since);
    }
    atomic_fetch_sub(&st->waiters, 1);
    return rc;
}

/* ---- posting ------------------------------------------------------------ */

/* Bounce space of n bytes (n <= BOUNCE_BYTES), waiting for old users; the
 * reference is taken here and handed to the record by post(). */
static int32_t bounce_get(ofi_tp *st, size_t n, char **out) {
    n = (n + 63) & ~(size_t)63;
    for (;;) {
        pthread_mutex_lock(&st->cq_mu);
        if (st->bounce_used + n <= BOUNCE_BYTES) {
            *out = st->bounce + st->bounce_used;
            st->bounce_used += n;
            st->bounce_refs++;
            pthread_mutex_unlock(&st->cq_mu);
            return 0;
        }
        pthread_mutex_unlock(&st->cq_mu);
        int32_t rc = wait_for(st, -1, 0);
        if (rc) return rc;
    }
}

static void bounce_put(ofi_tp *st) {
    pthread_mutex_lock(&st->cq_mu);
    if (--st->bounce_refs == 0) st->bounce_used = 0;
    pthread_mutex_unlock(&st->cq_mu);
}

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
} ofi_op;
enum { OP_WRITE, OP_READ, OP_ATOMIC, OP_FETCH, OP_COMPARE, OP_SEND };

static ssize_t issue(ofi_tp *st, fi_addr_t dest, const ofi_op *o, void *ctx) {
    switch (o->kind) {
    case OP_WRITE:
        return fi_write(st->ep, o->buf, o->len, o->desc, dest, o->raddr, o->rkey, ctx);
    case OP_ATOMIC:
        return fi_atomic(st->ep, o->buf, 1, o->desc, dest, o->raddr, o->rkey, o->dt, o->aop, ctx);
    default:
        break;
    }
    /* Reads, fetching atomics and messages: their completion needs no
     * delivery completion (the data or the answer comes back; a message's
     * completion only frees its buffer), so they go through the msg forms
     * with plain FI_COMPLETION instead of the endpoint's default flags. */
    void *desc = o->desc;
    if (o->kind == OP_READ) {
        struct iovec iov = {o->buf, o->len};
        struct fi_rma_iov rio = {o->raddr, o->len, o->rkey};
        struct fi_msg_rma m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                               .rma_iov = &rio, .rma_iov_count = 1, .context = ctx};
        return fi_readmsg(st->ep, &m, FI_COMPLETION);
    }
    if (o->kind == OP_SEND) {
        struct iovec iov = {o->buf, o->len};
        struct fi_msg m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                           .context = ctx};
        return fi_sendmsg(st->ep, &m, FI_COMPLETION);
    }
    struct fi_ioc iov = {o->buf, 1}, cmp = {o->compare, 1}, res = {o->result, 1};
    struct fi_rma_ioc rio = {o->raddr, 1, o->rkey};
    struct fi_msg_atomic m = {.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = dest,
                              .rma_iov = &rio, .rma_iov_count = 1, .datatype = o->dt,
                              .op = o->aop, .context = ctx};
    if (o->kind == OP_FETCH) return fi_fetch_atomicmsg(st->ep, &m, &res, &desc, 1, FI_COMPLETION);
    return fi_compare_atomicmsg(st->ep, &m, &cmp, &desc, 1, &res, &desc, 1, FI_COMPLETION);
}

/* Undo a record that was never posted (cq_mu not held). */
static void unpost(ofi_tp *st, ofi_rec *r) {
    pthread_mutex_lock(&st->cq_mu);
    r->pending = 1;
    r->copy_to = NULL;
    rec_done(st, r, 0);
    pthread_mutex_unlock(&st->cq_mu);
}

/* Post one operation to pe, retrying -FI_EAGAIN after progress. On success
 * the record owns the bounce reference taken by bounce_get (bounce = 1) and,
 * when it completes, runs memcpy(copy_to, copy_from, copy_len). A message
 * (OP_SEND) carries its record's index as the token its answer names.
 * limit_ms: how long -FI_EAGAIN may last (0: stall_limit). */
static int32_t post(ofi_tp *st, int32_t pe, ofi_op *o, int read, int bounce, void *copy_to,
                    const void *copy_from, size_t copy_len, uint64_t limit_ms) {
    ofi_peer *p = &st->peers[pe];
    if (p->failed) {
        if (bounce) bounce_put(st);
        return peer_error(st, pe);
    }
    int32_t idx = -1;
    while (idx < 0) {
        pthread_mutex_lock(&st->cq_mu);
        idx = st->rec_free;
        if (idx >= 0) {
            ofi_rec *r = &st->recs[idx];
            st->rec_free = r->next_free;
            *r = (ofi_rec){.pe = pe, .gen = r->gen + 1, .live = 1, .read = (uint8_t)read,
                           .bounce = (uint8_t)bounce,
                           .pending = o->kind == OP_SEND ? 2 : 1,
                           .bytes = o->kind == OP_WRITE || o->kind == OP_READ ? o->len : 8,
                           .copy_to = copy_to, .copy_from = copy_from, .copy_len = copy_len};
            /* counted before posting: another thread may handle the completion at once */
            p->inflight++;
            st->inflight++;
            p->reads += (uint32_t)read;
            p->bytes += r->bytes;
            st->bytes += r->bytes;
        }
        uint32_t busy = st->inflight;
        pthread_mutex_unlock(&st->cq_mu);
        if (idx < 0) {
            int32_t rc = wait_for(st, -1, busy ? busy - 1 : 0);
            if (rc) {
                if (bounce) bounce_put(st);
                return rc;
            }
        }
    }
    ofi_rec *r = &st->recs[idx];
    if (o->kind == OP_SEND) ((am_msg *)o->buf)->token = (uint64_t)r->gen << 32 | (uint64_t)idx;
    uint64_t first = 0, idle_since = 0, limit = limit_ms ? limit_ms : stall_limit(st, pe);
    for (uint32_t spins = 0;; spins++) {
        ssize_t ret = issue(st, p->addr, o, &r->ctx);
        if (ret == 0) {
            atomic_store_explicit(&st->activity, 1, memory_order_relaxed);
            if (o->kind == OP_WRITE || o->kind == OP_ATOMIC || o->kind == OP_SEND) p->wrote = 1;
            return 0;
        }
        if (ret != -FI_EAGAIN) {
            unpost(st, r);
            pthread_mutex_lock(&st->cq_mu);
            mark_failed(st, pe, (int)-ret, "posting to it failed: %s", ferr((int)ret));
            pthread_mutex_unlock(&st->cq_mu);
            return peer_error(st, pe);
        }
        pthread_mutex_lock(&st->cq_mu);
        int got = poll_once(st);
        pthread_mutex_unlock(&st->cq_mu);
        int32_t rc = 0;
        if (got < 0) rc = SYMM_ERR_SYSTEM;
        else if (p->failed) rc = peer_error(st, pe);
        else if ((spins & 15) == 15 && news(st))
            rc = fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE while posting to PE %d", pe);
        else if ((spins & 255) == 255) {
            uint64_t now = now_ms();
            if (!first) {
                first = now;
            } else if (now - first > limit) {
                pthread_mutex_lock(&st->cq_mu);
                mark_failed(st, pe, ETIMEDOUT, "it took no new operation for %llu ms (the "
                            "provider kept answering -FI_EAGAIN: unreachable or not progressing)",
                            (unsigned long long)(now - first));
                pthread_mutex_unlock(&st->cq_mu);
                rc = peer_error(st, pe);
            }
        }
        if (rc) {
            unpost(st, r);
            return rc;
        }
        if (spins > SPINS_BEFORE_YIELD) idle_wait(st, &idle_since);
    }
}

/* ---- regions ------------------------------------------------------------ */

static ofi_region *region_of_off(ofi_tp *st, uint64_t off) {
    for (int i = 0; i < st->n_regs; i++)
        if (off >= st->regs[i].off && off - st->regs[i].off < st->regs[i].len) return &st->regs[i];
    return NULL;
}

/* The registered region holding local [p, p+1), or NULL. */
static ofi_region *region_of_ptr(ofi_tp *st, const void *p) {
    const char *c = p;
    for (int i = 0; i < st->n_regs; i++)
        if (c >= st->regs[i].base && (uint64_t)(c - st->regs[i].base) < st->regs[i].len)
            return &st->regs[i];
    return NULL;
}

/* Target address, key and how many bytes from off stay in one region. */
static int32_t remote_at(ofi_tp *st, int32_t pe, uint64_t off, uint64_t n, uint64_t *raddr,
                         uint64_t *rkey, uint64_t *room) {
    ofi_region *r = region_of_off(st, off);
    if (!r)
        return fail(st->core, SYMM_ERR_OUT_OF_BOUNDS,
                    "heap offset %llu of PE %d is not registered (no mem_add covers it)",
                    (unsigned long long)off, pe);
    *raddr = r->raddr[pe] + (off - r->off);
    *rkey = r->rkey[pe];
    *room = r->off + r->len - off;
    if (*room > n) *room = n;
    return 0;
}

static int32_t check_pe(ofi_tp *st, int32_t pe) {
    if (pe < 0 || pe >= st->n || !st->peers[pe].reach)
        return fail(st->core, SYMM_ERR_INTERNAL, "PE %d is not reached through this transport "
                    "(not a remote PE and no loopback requested)", pe);
    if (st->peers[pe].failed) return peer_error(st, pe);
    if (atomic_load(&st->news))
        return fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE (an operation on PE %d "
                    "cannot complete)", pe);
    return 0;
}

/* ---- RMA ------------------------------------------------------------------ */

static int32_t rma(ofi_tp *st, int is_put, int32_t pe, uint64_t off, char *local, uint64_t n) {
    const int mr_local = (st->mr_mode & FI_MR_LOCAL) != 0;
    /* the whole range first: an error must not leave a part in flight */
    for (uint64_t o = off, left = n; left > 0;) {
        uint64_t raddr, rkey, room;
        int32_t rc = remote_at(st, pe, o, left, &raddr, &rkey, &room);
        if (rc) return rc;
        o += room;
        left -= room;
    }
    while (n > 0) {
        uint64_t raddr, rkey, chunk;
        int32_t rc = remote_at(st, pe, off, n, &raddr, &rkey, &chunk);
        if (rc) return rc;
        if (chunk > st->max_rma) chunk = st->max_rma;
        ofi_op o = {.kind = is_put ? OP_WRITE : OP_READ, .raddr = raddr, .rkey = rkey};
        void *copy_to = NULL;
        const void *copy_from = NULL;
        int bounce = 0;
        ofi_region *lr = mr_local ? region_of_ptr(st, local) : NULL;
        if (!mr_local) {
            o.buf = local;
        } else if (lr) {
            uint64_t lroom = lr->len - (uint64_t)(local - lr->base);
            if (chunk > lroom) chunk = lroom;
            o.buf = local;
            o.desc = lr->desc;
        } else {
            char *b;
            if (chunk > BOUNCE_CHUNK) chunk = BOUNCE_CHUNK;
            rc = bounce_get(st, chunk, &b);
            if (rc) return rc;
            if (is_put) {
                memcpy(b, local, chunk);
            } else {
                copy_to = local;
                copy_from = b;
            }
            o.buf = b;
            o.desc = st->bounce_desc;
            bounce = 1;
        }
        o.len = chunk;
        rc = post(st, pe, &o, !is_put, bounce, copy_to, copy_from, chunk, 0);
        if (rc) return rc;
        off += chunk;
        local += chunk;
        n -= chunk;
    }
    return 0;
}

/* Without delivery completion, a completed write may still be on its way:
 * a read from the same PE, ordered after the writes (FI_ORDER_RAW), returns
 * once they have landed. */
static int32_t flush(ofi_tp *st, int32_t pe) {
    int32_t rc = wait_for(st, pe, 0);
    if (rc) return rc;
    if (st->delivery || !st->peers[pe].wrote) {
        st->peers[pe].wrote = 0;
        return 0;
    }
    char *b;
    rc = bounce_get(st, 8, &b);
    if (rc) return rc;
    ofi_op o = {.kind = OP_READ, .buf = b, .len = 8, .desc = st->bounce_desc,
            .raddr = st->peers[pe].hello_addr, .rkey = st->peers[pe].hello_key};
    rc = post(st, pe, &o, 1, 1, NULL, NULL, 0, 0);
    if (!rc) rc = wait_for(st, pe, 0);
    if (!rc) st->peers[pe].wrote = 0;
    return rc;
}

static int32_t ofi_put(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                       uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc) rc = rma(st, 1, pe, off, (char *)(uintptr_t)src, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = flush(st, pe);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static int32_t ofi_get(void *state, void *dst, int32_t pe, uint64_t off, uint64_t n,
                       uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc) rc = rma(st, 0, pe, off, dst, n);
    if (!rc && !(flags & SYMM_TP_NBI)) rc = wait_for(st, pe, 0);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ---- atomics -------------------------------------------------------------- */

static uint32_t dtype_width(uint32_t dtype) {
    return symm__amo_size(dtype);
}

/* The libfabric call for a symm op: kind and fi_op (floats travel as bits). */
static void fi_op_of(uint32_t op, int *kind, enum fi_op *aop) {
    switch (op) {
    case SYMM_AMO_FETCH: *kind = K_FETCH; *aop = FI_ATOMIC_READ; break;
    case SYMM_AMO_SET: *kind = K_WRITE; *aop = FI_ATOMIC_WRITE; break;
    case SYMM_AMO_SWAP: *kind = K_FETCH; *aop = FI_ATOMIC_WRITE; break;
    case SYMM_AMO_COMPARE_SWAP: *kind = K_COMPARE; *aop = FI_CSWAP; break;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_FETCH_ADD: *kind = K_FETCH; *aop = FI_SUM; break;
    case SYMM_AMO_INC: case SYMM_AMO_ADD: *kind = K_WRITE; *aop = FI_SUM; break;
    case SYMM_AMO_FETCH_AND: *kind = K_FETCH; *aop = FI_BAND; break;
    case SYMM_AMO_AND: *kind = K_WRITE; *aop = FI_BAND; break;
    case SYMM_AMO_FETCH_OR: *kind = K_FETCH; *aop = FI_BOR; break;
    case SYMM_AMO_OR: *kind = K_WRITE; *aop = FI_BOR; break;
    case SYMM_AMO_FETCH_XOR: *kind = K_FETCH; *aop = FI_BXOR; break;
    default: *kind = K_WRITE; *aop = FI_BXOR; break; /* SYMM_AMO_XOR */
    }
}

static int valid(ofi_tp *st, int kind, enum fi_datatype dt, enum fi_op aop) {
    size_t count = 0;
    int rc = kind == K_WRITE   ? fi_atomicvalid(st->ep, dt, aop, &count)
             : kind == K_FETCH ? fi_fetch_atomicvalid(st->ep, dt, aop, &count)
                               : fi_compare_atomicvalid(st->ep, dt, aop, &count);
    return rc == 0 && count >= 1;
}

/* Fill st->how and settle st->amo (AMO_AM when some op has no way). */
static void plan_atomics(ofi_tp *st, const char *force) {
    if (st->amo == AMO_AM) return;
    int missing = 0;
    for (int w = 0; w < 2; w++) {
        enum fi_datatype dt = w ? FI_UINT64 : FI_UINT32;
        int cas = valid(st, K_COMPARE, dt, FI_CSWAP);
        for (uint32_t op = 0; op <= SYMM_AMO_XOR; op++) {
            int kind;
            enum fi_op aop;
            fi_op_of(op, &kind, &aop);
            int native = valid(st, kind, dt, aop);
            if (force && !strcmp(force, "cas") && op != SYMM_AMO_COMPARE_SWAP) native = 0;
            st->how[w][op] = native ? HOW_NATIVE : cas ? HOW_CAS : HOW_NONE;
            if (!native) st->amo = AMO_CAS;
            missing |= st->how[w][op] == HOW_NONE;
        }
    }
    if (missing) st->amo = (st->info->caps & FI_MSG) ? AMO_AM : -1;
    if (st->amo == AMO_AM || st->amo < 0) memset(st->how, HOW_NONE, sizeof st->how);
}

/* One provider atomic on pe's element at off. old (may be NULL) receives the
 * prior value when it completes; wait = 0 leaves that to the next quiet. */
static int32_t native(ofi_tp *st, int32_t pe, uint64_t off, uint32_t width, int kind,
                      enum fi_op aop, uint64_t v, uint64_t cmp, void *old, int wait) {
    uint64_t raddr, rkey, room;
    int32_t rc = remote_at(st, pe, off, width, &raddr, &rkey, &room);
    if (rc) return rc;
    if (room < width)
        return fail(st->core, SYMM_ERR_OUT_OF_BOUNDS, "atomic at heap offset %llu crosses the "
                    "end of a registered range", (unsigned long long)off);
    char *slot;
    rc = bounce_get(st, 32, &slot); /* operand, compare, result */
    if (rc) return rc;
    memcpy(slot, &v, 8);
    memcpy(slot + 8, &cmp, 8);
    ofi_op o = {.kind = kind == K_WRITE ? OP_ATOMIC : kind == K_FETCH ? OP_FETCH : OP_COMPARE,
            .buf = slot, .len = width, .desc = st->bounce_desc, .raddr = raddr, .rkey = rkey,
            .dt = width == 8 ? FI_UINT64 : FI_UINT32, .aop = aop, .compare = slot + 8,
            .result = slot + 16};
    rc = post(st, pe, &o, kind != K_WRITE, 1, kind != K_WRITE ? old : NULL, slot + 16, width, 0);
    if (rc || !wait) return rc;
    return kind == K_WRITE ? flush(st, pe) : wait_for(st, pe, 0);
}

/* The element's new value for op, or 0 when op writes nothing. */
static int apply(uint32_t op, uint64_t old, uint64_t v, uint64_t cmp, uint64_t *out) {
    switch (op) {
    case SYMM_AMO_FETCH: return 0;
    case SYMM_AMO_SET: case SYMM_AMO_SWAP: *out = v; break;
    case SYMM_AMO_COMPARE_SWAP: if (old != cmp) return 0; *out = v; break;
    case SYMM_AMO_FETCH_INC: case SYMM_AMO_INC: *out = old + 1; break;
    case SYMM_AMO_FETCH_ADD: case SYMM_AMO_ADD: *out = old + v; break;
    case SYMM_AMO_FETCH_AND: case SYMM_AMO_AND: *out = old & v; break;
    case SYMM_AMO_FETCH_OR: case SYMM_AMO_OR: *out = old | v; break;
    case SYMM_AMO_FETCH_XOR: case SYMM_AMO_XOR: *out = old ^ v; break;
    default: return 0;
    }
    return 1;
}

/* Any op as a CSWAP loop of its own width, starting from an atomic read
 * (FI_ATOMIC_READ where valid, else a CSWAP that swaps 0 for 0). */
static int32_t cas_loop(ofi_tp *st, int32_t pe, uint64_t off, uint32_t width, uint32_t op,
                        uint64_t v, uint64_t cmp, uint64_t *fetched) {
    uint64_t mask = width == 8 ? ~0ull : 0xffffffffull, cur = 0;
    int w = width == 8;
    int32_t rc = st->how[w][SYMM_AMO_FETCH] == HOW_NATIVE
                     ? native(st, pe, off, width, K_FETCH, FI_ATOMIC_READ, 0, 0, &cur, 1)
                     : native(st, pe, off, width, K_COMPARE, FI_CSWAP, 0, 0, &cur, 1);
    for (;;) {
        if (rc) return rc;
        cur &= mask;
        uint64_t nv;
        if (!apply(op, cur, v & mask, cmp & mask, &nv) || (nv & mask) == cur) {
            *fetched = cur;
            return 0;
        }
        uint64_t got = 0;
        rc = native(st, pe, off, width, K_COMPARE, FI_CSWAP, nv & mask, cur, &got, 1);
        if (!rc && (got & mask) == cur) {
            *fetched = cur;
            return 0;
        }
        cur = got;
    }
}

/* An atomic as a message the target applies. Blocking unless nbi (then the
 * fetched value, if any, arrives by the next quiet). */
static int32_t am_atomic(ofi_tp *st, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                         uint64_t v, uint64_t cmp, void *fetched, int wait) {
    char *b;
    int32_t rc = bounce_get(st, sizeof(am_msg), &b);
    if (rc) return rc;
    am_msg *m = (am_msg *)(void *)b;
    *m = (am_msg){.magic = AM_MAGIC, .dtype = dtype, .op = op, .src = st->me, .off = off,
                  .value = v, .compare = cmp, .key = st->peers[pe].am_key};
    ofi_op o = {.kind = OP_SEND, .buf = m, .len = sizeof *m, .desc = st->bounce_desc};
    rc = post(st, pe, &o, 1, 1, fetched, NULL, symm__amo_size(dtype), 0);
    if (rc || !wait) return rc;
    rc = wait_for(st, pe, 0);
    if (!rc && st->peers[pe].am_err) {
        int32_t e = st->peers[pe].am_err;
        st->peers[pe].am_err = 0;
        rc = fail(st->core, e, "atomic at heap offset %llu of PE %d failed on that PE (%s)",
                  (unsigned long long)off, pe,
                  e == SYMM_ERR_OUT_OF_BOUNDS ? "outside the memory it registered" : "refused");
    }
    return rc;
}

static int32_t atomic_locked(ofi_tp *st, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                             const void *value, const void *compare, void *fetched,
                             uint32_t flags) {
    int32_t rc = check_pe(st, pe);
    if (rc) return rc;
    uint32_t width = dtype_width(dtype);
    if (!width || op > SYMM_AMO_XOR)
        return fail(st->core, SYMM_ERR_INVALID_ARG, "atomic op %u on dtype %u: expected a SYMM_AMO_* "
                    "op on a 32- or 64-bit dtype", op, dtype);
    if (off % width)
        return fail(st->core, SYMM_ERR_INVALID_ARG, "atomic offset %llu is not %u-aligned",
                    (unsigned long long)off, width);
    uint64_t v = 0, cmp = 0;
    if (value) memcpy(&v, value, width);
    if (compare) memcpy(&cmp, compare, width);
    if (op == SYMM_AMO_INC || op == SYMM_AMO_FETCH_INC) v = 1;
    int nbi = (flags & SYMM_TP_NBI) != 0;
    if (st->amo == AMO_AM) return am_atomic(st, pe, off, dtype, op, v, cmp, fetched, !nbi);
    if (st->amo < 0)
        return fail(st->core, SYMM_ERR_NOT_SUPPORTED, "provider %s has no usable atomics (and no "
                    "FI_MSG to carry them as messages)", st->prov);
    int w = width == 8;
    if (st->how[w][op] == HOW_NATIVE) {
        int kind;
        enum fi_op aop;
        fi_op_of(op, &kind, &aop);
        return native(st, pe, off, width, kind, aop, v, cmp, fetched, !nbi);
    }
    uint64_t old = 0;
    rc = cas_loop(st, pe, off, width, op, v, cmp, &old); /* blocking: nbi may finish early */
    if (!rc && fetched) memcpy(fetched, &old, width);
    return rc;
}

static int32_t ofi_atomic(void *state, int32_t pe, uint64_t off, uint32_t dtype, uint32_t op,
                          const void *value, const void *compare, void *fetched, uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = atomic_locked(st, pe, off, dtype, op, value, compare, fetched, flags);
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* The data, then the signal: the data's delivery completes (flush) before
 * the signal is posted, so a PE that sees the signal sees the data. Message
 * ordering (FI_ORDER_WAW) is not enough: shm grants it, yet its large-write
 * protocol let a later atomic land first (measured, libfabric 1.17). */
static int32_t ofi_put_signal(void *state, int32_t pe, uint64_t off, const void *src, uint64_t n,
                              uint64_t sig_off, uint64_t sig_value, uint32_t sig_op,
                              uint32_t flags) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = check_pe(st, pe);
    if (!rc && sig_off % 8)
        rc = fail(st->core, SYMM_ERR_INVALID_ARG, "signal offset %llu is not 8-aligned",
                  (unsigned long long)sig_off);
    if (!rc && sig_op != SYMM_SIGNAL_SET && sig_op != SYMM_SIGNAL_ADD)
        rc = fail(st->core, SYMM_ERR_INVALID_ARG, "unknown signal op %u", sig_op);
    if (!rc && n) rc = rma(st, 1, pe, off, (char *)(uintptr_t)src, n);
    if (!rc && n) rc = flush(st, pe);
    if (!rc) {
        uint32_t op = sig_op == SYMM_SIGNAL_ADD ? SYMM_AMO_ADD : SYMM_AMO_SET;
        rc = atomic_locked(st, pe, sig_off, SYMM_DTYPE_UINT64, op, &sig_value, NULL, NULL, flags);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* Later puts and atomics to a PE must not overtake earlier ones: wait for
 * the delivery of every operation in flight (no message ordering is relied
 * on, as for put_signal). */
static int32_t ofi_fence(void *state) {
    ofi_tp *st = state;
    int32_t rc = 0;
    pthread_mutex_lock(&st->mu);
    for (int32_t i = 0; i < st->n && !rc; i++)
        if (st->peers[i].reach && (st->peers[i].inflight || st->peers[i].wrote)) rc = flush(st, i);
    if (!rc && news(st))
        rc = fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE: the order cannot be kept");
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static int32_t ofi_quiet(void *state) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    int32_t rc = wait_for(st, -1, 0);
    for (int32_t i = 0; !rc && i < st->n; i++) {
        if (st->peers[i].failed) rc = peer_error(st, i);
        else if (st->peers[i].reach && st->peers[i].wrote) rc = flush(st, i);
        if (!rc && st->peers[i].am_err) {
            int32_t e = st->peers[i].am_err;
            st->peers[i].am_err = 0;
            rc = fail(st->core, e, "an nbi atomic on PE %d failed on that PE (status %d)", i, e);
        }
    }
    /* nothing may be in flight any more (a post that met the news was not
     * made), yet what the caller issued did not all complete */
    if (!rc && news(st))
        rc = fail(st->core, SYMM_ERR_PEER_FAILED, "the job lost a PE: operations issued since "
                  "may not have completed");
    pthread_mutex_unlock(&st->mu);
    return rc;
}

static void ofi_progress(void *state) {
    ofi_tp *st = state;
    if (!st->cq || pthread_mutex_trylock(&st->cq_mu) != 0) return; /* someone polls already */
    poll_once(st);
    pthread_mutex_unlock(&st->cq_mu);
}

static void ofi_peer_failed(void *state) {
    ofi_tp *st = state;
    atomic_store(&st->news, 1);
}

/* ---- the progress thread -------------------------------------------------- */

/* Reads the CQ while nobody else does, so data and atomics addressed to this
 * PE move (and are answered) even when the application is busy elsewhere.
 * With a wait object it sleeps in poll() until the provider has work; without
 * one it naps, 20 us growing to 1 ms while nothing happens. While a caller
 * waits (it polls itself) the thread stays out of the way. */
static void *progress_main(void *arg) {
    ofi_tp *st = arg;
    long nap = 10;
    uint64_t event = now_ms(), served = 0;
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0); /* 1 us: short naps stay short */
    while (!atomic_load(&st->stop)) {
        if (atomic_load(&st->waiters) > 0) { /* a caller polls: stand aside */
            struct pollfd pf = {st->wake[0], POLLIN, 0};
            poll(&pf, 1, 1);
            event = now_ms();
            continue;
        }
        int got = 0;
        if (pthread_mutex_trylock(&st->cq_mu) == 0) {
            got = poll_once(st);
            pthread_mutex_unlock(&st->cq_mu);
        }
        if (atomic_exchange_explicit(&st->activity, 0, memory_order_relaxed) || got > 0)
            event = now_ms();
        if (st->rx_cntr) {
            uint64_t c = fi_cntr_read(st->rx_cntr);
            if (c != served) {
                served = c;
                event = now_ms();
            }
        }
        if (got > 0) continue;
        if (st->wait_fd >= 0) {
            struct fid *f = &st->cq->fid;
            if (fi_trywait(st->fabric, &f, 1) != FI_SUCCESS) continue; /* work pending */
            struct pollfd pf[2] = {{st->wait_fd, POLLIN, 0}, {st->wake[0], POLLIN, 0}};
            poll(pf, 2, 100);
            continue;
        }
        uint64_t quiet_for = now_ms() - event;
        if (quiet_for < 5) nap = 10;
        else if (quiet_for < HOT_MS) nap = 50;
        else if (nap < 1000) nap *= 2;
        nap_us(nap);
    }
    return NULL;
}

/* ---- memory ------------------------------------------------------------- */

#define ACCESS (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static uint64_t random_key(ofi_tp *st) {
    uint64_t k = 0;
    if (getrandom(&k, sizeof k, 0) != (ssize_t)sizeof k) k = (uint64_t)now_ms() * 0x9e3779b97f4a7c15ull;
    if (st->key_bytes < 8) k &= (1ull << (8 * st->key_bytes)) - 1;
    return k ? k : 1;
}

/* Register [base, base + len) for remote access (and local use): 0 or a
 * -FI_* code (why filled). */
static int reg(ofi_tp *st, void *base, size_t len, uint64_t access, uint32_t mem_kind,
               struct fid_mr **mr, char *why, size_t why_len) {
    int rc = -FI_ENOKEY;
    for (int tries = 0; tries < 8 && rc == -FI_ENOKEY; tries++) {
        uint64_t key = (st->mr_mode & FI_MR_PROV_KEY) ? 0 : random_key(st);
        if (mem_kind == SYMM_TP_MEM_CUDA) {
            struct iovec iov = {base, len};
            struct fi_mr_attr a;
            memset(&a, 0, sizeof a);
            a.mr_iov = &iov;
            a.iov_count = 1;
            a.access = access;
            a.requested_key = key;
            a.iface = FI_HMEM_CUDA;
            a.device.cuda = st->core->device;
            rc = fi_mr_regattr(st->domain, &a, 0, mr);
        } else {
            rc = fi_mr_reg(st->domain, base, len, access, 0, key, 0, mr, NULL);
        }
    }
    if (rc) {
        snprintf(why, why_len, "fi_mr_reg of %zu bytes failed (%s%s)", len, ferr(rc),
                 rc == -FI_ENOMEM ? ": raise the locked-memory limit, ulimit -l" : "");
        return rc;
    }
    if (st->mr_mode & FI_MR_ENDPOINT) {
        rc = fi_mr_bind(*mr, &st->ep->fid, 0);
        if (!rc) rc = fi_mr_enable(*mr);
        if (rc) {
            snprintf(why, why_len, "binding a registration to the endpoint failed (%s)", ferr(rc));
            fi_close(&(*mr)->fid);
            *mr = NULL;
        }
    }
    return rc;
}

typedef struct mem_msg {
    uint32_t status, pad;
    uint64_t addr, key;
} mem_msg;

static void region_free(ofi_region *r) {
    if (r->mr) fi_close(&r->mr->fid);
    free(r->raddr);
    free(r->rkey);
}

static int32_t ofi_mem_add(void *state, void *base, uint64_t heap_off, uint64_t len,
                           uint32_t mem_kind, int dmabuf_fd) {
    ofi_tp *st = state;
    const symm_tp_core *core = st->core;
    (void)dmabuf_fd; /* FI_MR_DMABUF is newer than the libfabric this was written against */
    pthread_mutex_lock(&st->mu);
    char why[300] = {0};
    int32_t status = 0;
    struct fid_mr *mr = NULL;
    if (mem_kind == SYMM_TP_MEM_CUDA && !st->hmem) {
        status = SYMM_ERR_NOT_SUPPORTED;
        snprintf(why, sizeof why, "GPU memory cannot be registered: provider %s has no FI_HMEM "
                 "here (a libfabric built with CUDA and a provider that supports it, e.g. efa, "
                 "cxi or verbs;ofi_rxm, are needed); run the host backend (SYMM_BACKEND=host)",
                 st->prov);
    } else {
        int rc = reg(st, base, len, ACCESS, mem_kind, &mr, why, sizeof why);
        if (rc) status = rc == -FI_ENOMEM ? SYMM_ERR_OUT_OF_MEMORY
                         : mem_kind == SYMM_TP_MEM_CUDA ? SYMM_ERR_NOT_SUPPORTED : SYMM_ERR_SYSTEM;
    }
    mem_msg mine = {.status = (uint32_t)status,
                    .addr = (st->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)base : 0,
                    .key = mr ? fi_mr_key(mr) : 0};
    mem_msg *all = calloc((size_t)st->n, sizeof *all);
    pthread_mutex_lock(&st->cq_mu); /* the progress thread reads regs (atomic messages) */
    ofi_region *regs = realloc(st->regs, sizeof *regs * (size_t)(st->n_regs + 1));
    if (regs) st->regs = regs;
    pthread_mutex_unlock(&st->cq_mu);
    uint64_t *raddr = calloc((size_t)st->n, sizeof *raddr);
    uint64_t *rkey = calloc((size_t)st->n, sizeof *rkey);
    if (!all || !regs || !raddr || !rkey) {
        if (!status) {
            status = SYMM_ERR_OUT_OF_MEMORY;
            snprintf(why, sizeof why, "out of host memory");
        }
        mine.status = (uint32_t)status;
    }
    /* Collective: nobody targets the range before every PE has added it. */
    int32_t rc = all ? core->allgather(core->core, &mine, all, sizeof mine) : SYMM_ERR_OUT_OF_MEMORY;
    int32_t bad = -1;
    for (int32_t i = 0; all && i < st->n; i++)
        if (all[i].status && bad < 0) bad = i;
    if (status) {
        rc = fail(core, status, "registering heap [%llu, +%llu): %s", (unsigned long long)heap_off,
                  (unsigned long long)len, why);
    } else if (rc) {
        /* the core's error stands */
    } else if (bad >= 0) {
        rc = fail(core, (int32_t)all[bad].status, "PE %d could not register heap [%llu, +%llu) "
                  "(status %u; its error says why)", bad, (unsigned long long)heap_off,
                  (unsigned long long)len, all[bad].status);
    }
    if (rc) {
        if (mr) fi_close(&mr->fid);
        free(all);
        free(raddr);
        free(rkey);
        pthread_mutex_unlock(&st->mu);
        return rc;
    }
    for (int32_t i = 0; i < st->n; i++) {
        raddr[i] = all[i].addr;
        rkey[i] = all[i].key;
    }
    free(all);
    pthread_mutex_lock(&st->cq_mu);
    st->regs[st->n_regs++] = (ofi_region){.off = heap_off, .len = len, .base = base, .mr = mr,
                                          .desc = fi_mr_desc(mr), .raddr = raddr, .rkey = rkey};
    pthread_mutex_unlock(&st->cq_mu);
    pthread_mutex_unlock(&st->mu);
    return 0;
}

static void ofi_mem_remove(void *state, uint64_t heap_off, uint64_t len) {
    ofi_tp *st = state;
    pthread_mutex_lock(&st->mu);
    pthread_mutex_lock(&st->cq_mu);
    for (int i = 0; i < st->n_regs; i++) {
        /* by start: a range is added once per offset (len only checked not shorter) */
        if (st->regs[i].off == heap_off && len >= st->regs[i].len) {
            region_free(&st->regs[i]);
            st->regs[i] = st->regs[--st->n_regs];
            break;
        }
    }
    pthread_mutex_unlock(&st->cq_mu);
    pthread_mutex_unlock(&st->mu);
}

/* ---- set-up --------------------------------------------------------------- */

static void ofi_close(void *state) {
    ofi_tp *st = state;
    if (!st) return;
    atomic_store(&st->stop, 1);
    if (st->wake[1] >= 0) {
        char b = 1;
        ssize_t k = write(st->wake[1], &b, 1);
        (void)k;
    }
    if (st->thread_started) pthread_join(st->thread, NULL);
    /* the endpoint first: nothing completes into memory freed below (a
     * provider that binds registrations to it, FI_MR_ENDPOINT, may refuse
     * while they exist: then it goes after them) */
    int ep_busy = st->ep && fi_close(&st->ep->fid) == -FI_EBUSY;
    for (int i = 0; i < st->n_regs; i++) region_free(&st->regs[i]);
    if (st->bounce_mr) fi_close(&st->bounce_mr->fid);
    if (st->hello_mr) fi_close(&st->hello_mr->fid);
    if (st->am_mr) fi_close(&st->am_mr->fid);
    if (ep_busy) fi_close(&st->ep->fid);
    if (st->av) fi_close(&st->av->fid);
    if (st->rx_cntr) fi_close(&st->rx_cntr->fid);
    if (st->cq) fi_close(&st->cq->fid);
    if (st->domain) fi_close(&st->domain->fid);
    if (st->fabric) fi_close(&st->fabric->fid);
    if (st->info) F->freeinfo(st->info);
    if (st->wake[0] >= 0) close(st->wake[0]);
    if (st->wake[1] >= 0) close(st->wake[1]);
    free(st->bounce);
    free(st->hello);
    free(st->auth_chal);
    free(st->am_block);
    free(st->regs);
    free(st->recs);
    free(st->peers);
    pthread_mutex_destroy(&st->mu);
    pthread_mutex_destroy(&st->cq_mu);
    free(st);
}

/* shm names each endpoint's shared-memory region "<pid>:<n>:<n>" and leaves
 * it in /dev/shm when the process is killed; a later process given the same
 * pid then cannot create its region (EBUSY). So symm names its shm endpoints
 * itself, symm-<pid namespace>-<pid>-<random>, and removes the regions of
 * this pid namespace whose process is gone (only symm's own names, only
 * dead pids: a live peer's mapping is unaffected by the unlink anyway). */
static void shm_name(ofi_tp *st, char *name, size_t cap) {
    char ns[64] = "", buf[64];
    ssize_t k = readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
    unsigned long long ino = 0;
    if (k > 0) {
        buf[k] = 0;
        const char *b = strchr(buf, '[');
        if (b) ino = strtoull(b + 1, NULL, 10);
    }
    snprintf(ns, sizeof ns, "symm-%llu-", ino);
    DIR *d = opendir("/dev/shm");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strncmp(e->d_name, ns, strlen(ns)) != 0) continue;
        long pid = strtol(e->d_name + strlen(ns), NULL, 10);
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            char path[512];
            snprintf(path, sizeof path, "/dev/shm/%.400s", e->d_name);
            if (unlink(path) == 0)
                logf_(st->core, 1, "removed %s, the shm region of a process that is gone", path);
        }
    }
    if (d) closedir(d);
    snprintf(name, cap, "%s%ld-%016llx", ns, (long)getpid(), (unsigned long long)random_key(st));
}

/* The local objects: fabric, domain, CQ, AV, endpoint, buffers. */
static int32_t open_local(ofi_tp *st, char *why, size_t why_len) {
    struct fi_info *fi = st->info;
    int rc = F->fabric(fi->fabric_attr, &st->fabric, NULL);
    if (!rc) rc = fi_domain(st->fabric, fi, &st->domain, NULL);
    if (rc) {
        snprintf(why, why_len, "%s failed for %s (%s)", st->fabric ? "fi_domain" : "fi_fabric",
                 st->prov, ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    st->mr_mode = (uint64_t)fi->domain_attr->mr_mode;
    st->key_bytes = fi->domain_attr->mr_key_size ? fi->domain_attr->mr_key_size : 8;
    if (st->key_bytes > 8) st->key_bytes = 8;
    st->max_rma = fi->ep_attr->max_msg_size && fi->ep_attr->max_msg_size < MAX_RMA
                      ? fi->ep_attr->max_msg_size : MAX_RMA;
    st->depth = fi->tx_attr->size && fi->tx_attr->size < DEPTH_MAX ? (uint32_t)fi->tx_attr->size
                                                                   : DEPTH_MAX;
    if (st->depth < 16) st->depth = 16;
    st->hmem = (fi->caps & FI_HMEM) != 0;
    const char *knob = env(st->core, "SYMM_OFI_FORCE_MR_LOCAL");
    if (knob && !strcmp(knob, "1")) st->mr_mode |= FI_MR_LOCAL;
    if ((knob = env(st->core, "SYMM_OFI_MAX_RMA"))) {
        char *end;
        unsigned long long v = strtoull(knob, &end, 10);
        if (*end || v < 8) {
            snprintf(why, why_len, "SYMM_OFI_MAX_RMA=\"%s\": expected a byte count >= 8", knob);
            return SYMM_ERR_INVALID_ARG;
        }
        if (v < st->max_rma) st->max_rma = v;
    }

    struct fi_cq_attr ca;
    memset(&ca, 0, sizeof ca);
    ca.format = FI_CQ_FORMAT_CONTEXT;
    ca.size = st->depth + 2 * AM_SLOTS;
    ca.wait_obj = FI_WAIT_FD;
    st->wait_fd = -1;
    rc = fi_cq_open(st->domain, &ca, &st->cq, NULL);
    if (!rc && fi_control(&st->cq->fid, FI_GETWAIT, &st->wait_fd) != 0) st->wait_fd = -1;
    if (rc) { /* no file-descriptor wait object: the progress thread naps */
        ca.wait_obj = FI_WAIT_NONE;
        rc = fi_cq_open(st->domain, &ca, &st->cq, NULL);
    }
    if (rc) {
        snprintf(why, why_len, "fi_cq_open failed (%s)", ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    struct fi_av_attr aa;
    memset(&aa, 0, sizeof aa);
    aa.type = fi->domain_attr->av_type != FI_AV_UNSPEC ? fi->domain_attr->av_type : FI_AV_TABLE;
    aa.count = (size_t)st->n;
    rc = fi_av_open(st->domain, &aa, &st->av, NULL);
    if (rc) {
        snprintf(why, why_len, "fi_av_open failed (%s)", ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    const char *step = "fi_endpoint";
    rc = fi_endpoint(st->domain, fi, &st->ep, NULL);
    if (!rc && (step = "binding the address vector")) rc = fi_ep_bind(st->ep, &st->av->fid, 0);
    if (!rc && (step = "binding the completion queue"))
        rc = fi_ep_bind(st->ep, &st->cq->fid, FI_TRANSMIT | FI_RECV);
    if (!rc && st->rma_event && st->wait_fd < 0) { /* optional: without it the thread naps longer */
        struct fi_cntr_attr na;
        memset(&na, 0, sizeof na);
        na.events = FI_CNTR_EVENTS_COMP;
        na.wait_obj = FI_WAIT_NONE;
        if (fi_cntr_open(st->domain, &na, &st->rx_cntr, NULL) == 0 &&
            fi_ep_bind(st->ep, &st->rx_cntr->fid, FI_REMOTE_WRITE | FI_REMOTE_READ) != 0) {
            fi_close(&st->rx_cntr->fid);
            st->rx_cntr = NULL;
        }
    }
    if (!rc && !strcmp(st->prov, "shm")) {
        char name[128];
        shm_name(st, name, sizeof name);
        if (fi_setname(&st->ep->fid, name, strlen(name) + 1) != 0)
            logf_(st->core, 0, "shm: cannot name the endpoint %s; the provider's name stays", name);
    }
    if (!rc && (step = "fi_enable")) rc = fi_enable(st->ep);
    if (rc) {
        snprintf(why, why_len, "setting up the endpoint failed: %s: %s", step, ferr(rc));
        return SYMM_ERR_SYSTEM;
    }
    st->n_recs = (int32_t)st->depth;
    st->recs = calloc((size_t)st->n_recs, sizeof *st->recs);
    st->bounce = aligned_alloc(4096, BOUNCE_BYTES);
    st->hello_bytes = (AUTH_HEAD + (size_t)st->n * AUTH_SLOT + 4095) & ~(size_t)4095;
    st->hello = aligned_alloc(4096, st->hello_bytes);
    st->auth_chal = calloc((size_t)st->n, AUTH_NONCE);
    st->am_block = calloc(2 * AM_SLOTS, sizeof *st->am_block);
    if (!st->recs || !st->bounce || !st->hello || !st->auth_chal || !st->am_block) {
        snprintf(why, why_len, "out of host memory");
        return SYMM_ERR_OUT_OF_MEMORY;
    }
    for (int32_t i = 0; i < st->n_recs; i++) st->recs[i].next_free = i + 1 < st->n_recs ? i + 1 : -1;
    st->rec_free = 0;
    if (getrandom(&st->am_key, sizeof st->am_key, 0) != (ssize_t)sizeof st->am_key) {
        snprintf(why, why_len, "getrandom failed: %s", strerror(errno));
        return SYMM_ERR_SYSTEM;
    }
    memset(st->hello, 0, st->hello_bytes);
    st->hello[0] = 0x5359000000000000ull | (uint64_t)st->me;
    st->am_rx = st->am_block;
    st->am_tx = st->am_block + AM_SLOTS;
    for (uint32_t i = 0; i < AM_SLOTS; i++) st->am_tx[i].dest = -1;
    rc = reg(st, st->bounce, BOUNCE_BYTES, FI_READ | FI_WRITE | FI_SEND | FI_RECV, SYMM_TP_MEM_HOST,
             &st->bounce_mr, why, why_len);
    if (!rc) rc = reg(st, st->hello, st->hello_bytes, ACCESS, SYMM_TP_MEM_HOST, &st->hello_mr, why, why_len);
    if (!rc && st->amo == AMO_AM)
        rc = reg(st, st->am_block, 2 * AM_SLOTS * sizeof *st->am_block, FI_SEND | FI_RECV,
                 SYMM_TP_MEM_HOST, &st->am_mr, why, why_len);
    if (rc) return rc == -FI_ENOMEM ? SYMM_ERR_OUT_OF_MEMORY : SYMM_ERR_SYSTEM;
    st->bounce_desc = fi_mr_desc(st->bounce_mr);
    st->am_desc = st->am_mr ? fi_mr_desc(st->am_mr) : NULL;
    if (st->amo == AMO_AM) {
        for (uint32_t i = 0; i < AM_SLOTS; i++) {
            rc = (int)fi_recv(st->ep, &st->am_rx[i].msg, sizeof(am_msg), st->am_desc, FI_ADDR_UNSPEC,
                              &st->am_rx[i].ctx);
            if (rc) {
                snprintf(why, why_len, "fi_recv for atomic messages failed (%s)", ferr(rc));
                return SYMM_ERR_SYSTEM;
            }
        }
    }
    if (pipe(st->wake) != 0) {
        snprintf(why, why_len, "pipe: %s", strerror(errno));
        return SYMM_ERR_SYSTEM;
    }
    if (pthread_create(&st->thread, NULL, progress_main, st) != 0) {
        snprintf(why, why_len, "cannot start the progress thread");
        return SYMM_ERR_SYSTEM;
    }
    st->thread_started = true;
    return 0;
}

typedef struct addr_msg {
    uint32_t status, amo;   /* status: 0, or why this PE could not open */
    uint32_t len, pad;      /* of the endpoint name */
    uint64_t hello_addr, hello_key, am_key;
    char prov[32];
    uint8_t name[ADDR_MAX];
} addr_msg;

/* ---- authentication ------------------------------------------------------ */

/* What a proof covers: label (with its NUL), the proving PE, the PE it
 * proves itself to, and that PE's fresh challenge. */
static size_t auth_msg(uint8_t *out, int32_t from, int32_t to, const uint8_t *chal) {
    size_t n = sizeof AUTH_LABEL;
    memcpy(out, AUTH_LABEL, n);
    for (int i = 0; i < 4; i++) {
        out[n + i] = (uint8_t)((uint32_t)from >> (8 * i));
        out[n + 4 + i] = (uint8_t)((uint32_t)to >> (8 * i));
    }
    memcpy(out + n + 8, chal, AUTH_NONCE);
    return n + 8 + AUTH_NONCE;
}

/* Collective: every PE says whether it is still fine; nonzero when any is
 * not (the caller's final exchange then names it). */
static int32_t auth_sync(ofi_tp *st, int32_t status) {
    uint32_t *all = calloc((size_t)st->n, sizeof *all), mine = (uint32_t)status;
    int32_t rc = all ? st->core->allgather(st->core->core, &mine, all, sizeof mine)
                     : SYMM_ERR_OUT_OF_MEMORY;
    for (int32_t i = 0; all && !rc && i < st->n; i++)
        if (all[i]) rc = (int32_t)all[i];
    free(all);
    return rc;
}

/* Round 1: write a fresh challenge into slot `me` of each reached PE's page
 * (at the address the AV holds for it: what answers there is what is
 * proven), and wait for its delivery. */
static int32_t auth_challenge(ofi_tp *st, char *why, size_t why_len) {
    for (int32_t pe = 0; pe < st->n; pe++) {
        if (!st->peers[pe].reach) continue;
        uint8_t *c = st->auth_chal + (size_t)pe * AUTH_NONCE;
        if (getrandom(c, AUTH_NONCE, 0) != (ssize_t)AUTH_NONCE) {
            snprintf(why, why_len, "getrandom failed: %s", strerror(errno));
            return SYMM_ERR_SYSTEM;
        }
        char *b;
        int32_t rc = bounce_get(st, AUTH_NONCE, &b);
        if (rc) return rc;
        memcpy(b, c, AUTH_NONCE);
        ofi_op o = {.kind = OP_WRITE, .buf = b, .len = AUTH_NONCE, .desc = st->bounce_desc,
                .raddr = st->peers[pe].hello_addr + AUTH_HEAD + (uint64_t)st->me * AUTH_SLOT,
                .rkey = st->peers[pe].hello_key};
        rc = post(st, pe, &o, 0, 1, NULL, NULL, 0, 0);
        if (!rc) rc = flush(st, pe);
        if (rc) return rc;
    }
    return 0;
}

/* Round 2: answer each reached PE's challenge in its slot of this PE's page
 * (it reads the proof back from this endpoint). */
static void auth_answer(ofi_tp *st) {
    uint8_t msg[AUTH_MSG_MAX];
    for (int32_t pe = 0; pe < st->n; pe++) {
        if (!st->peers[pe].reach) continue;
        uint8_t *slot = (uint8_t *)st->hello + AUTH_HEAD + (size_t)pe * AUTH_SLOT;
        size_t len = auth_msg(msg, st->me, pe, slot);
        st->core->auth_mac(st->core->core, msg, len, slot + AUTH_NONCE);
    }
}

/* Round 3: read each reached PE's proof over this PE's challenge and check
 * it with the core; the first that fails is named. */
static int32_t auth_check(ofi_tp *st, char *why, size_t why_len) {
    uint8_t *got = calloc((size_t)st->n, AUTH_MAC);
    if (!got) return SYMM_ERR_OUT_OF_MEMORY;
    int32_t rc = 0;
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        char *b;
        rc = bounce_get(st, AUTH_MAC, &b);
        if (rc) break;
        ofi_op o = {.kind = OP_READ, .buf = b, .len = AUTH_MAC, .desc = st->bounce_desc,
                .raddr = st->peers[pe].hello_addr + AUTH_HEAD + (uint64_t)st->me * AUTH_SLOT +
                         AUTH_NONCE,
                .rkey = st->peers[pe].hello_key};
        rc = post(st, pe, &o, 1, 1, got + (size_t)pe * AUTH_MAC, b, AUTH_MAC, 0);
    }
    if (!rc) rc = wait_for(st, -1, 0);
    uint8_t msg[AUTH_MSG_MAX];
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        size_t len = auth_msg(msg, pe, st->me, st->auth_chal + (size_t)pe * AUTH_NONCE);
        if (st->core->auth_verify(st->core->core, pe, msg, len, got + (size_t)pe * AUTH_MAC)) {
            snprintf(why, why_len, "PE %d did not prove that it holds the job secret (its proof "
                     "over this PE's challenge is wrong): the two PEs were given different "
                     "SYMM_JOB_SECRETs, or another process answers at PE %d's fabric address", pe,
                     pe);
            rc = SYMM_ERR_BOOTSTRAP;
        }
    }
    free(got);
    return rc;
}

/* Collective, after the connections are up and before any heap range is
 * registered: each PE proves to every PE it reaches, over the fabric, that
 * it holds the job secret as the PE it claims to be (docs/OFI.md,
 * Authentication). Three rounds, each closed by an exchange of statuses so
 * every PE runs them in step even when one has failed: a fresh challenge
 * written into the peer's page, the peer's proof (core->auth_mac over
 * label | prover | verifier | challenge) written into its own page, the
 * proof read back from the peer's address and checked (core->auth_verify).
 * status: this PE's status so far (nonzero: it only keeps in step).
 * Returns this PE's status (why set); a failure of another PE is left to
 * the caller's final exchange. */
static int32_t ofi_authenticate_peers(ofi_tp *st, int32_t status, char *why, size_t why_len) {
    if (!status) status = auth_challenge(st, why, why_len);
    if (auth_sync(st, status)) return status;
    auth_answer(st);
    if (auth_sync(st, status)) return status;
    if (!status) status = auth_check(st, why, why_len);
    return status;
}

/* Read each reached PE's hello word: connects connection-oriented providers
 * (rxm) now, within SYMM_TIMEOUT_MS, and checks the addressing end to end. */
static int32_t warm_up(ofi_tp *st, const addr_msg *all, size_t msg_len, char *why, size_t why_len) {
    uint64_t *got = calloc((size_t)st->n, sizeof *got);
    if (!got) {
        snprintf(why, why_len, "out of host memory");
        return SYMM_ERR_OUT_OF_MEMORY;
    }
    uint64_t limit = st->core->timeout_ms ? st->core->timeout_ms : 60000u;
    int32_t rc = 0;
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        const addr_msg *pm = (const addr_msg *)(const void *)((const char *)all + (size_t)pe * msg_len);
        st->peers[pe].hello_addr = pm->hello_addr;
        st->peers[pe].hello_key = pm->hello_key;
        char *b;
        rc = bounce_get(st, 8, &b);
        if (rc) break;
        ofi_op o = {.kind = OP_READ, .buf = b, .len = 8, .desc = st->bounce_desc,
                .raddr = pm->hello_addr, .rkey = pm->hello_key};
        rc = post(st, pe, &o, 1, 1, &got[pe], b, 8, limit);
    }
    /* one wait for all: the stall bound is SYMM_TIMEOUT_MS here */
    uint32_t saved = st->stall_ms;
    st->stall_ms = (uint32_t)limit;
    if (!rc) rc = wait_for(st, -1, 0);
    st->stall_ms = saved;
    for (int32_t pe = 0; pe < st->n && !rc; pe++) {
        if (!st->peers[pe].reach) continue;
        if (got[pe] != (0x5359000000000000ull | (uint64_t)pe)) {
            snprintf(why, why_len, "reading PE %d's check word returned %#llx, not its PE number: "
                     "the addresses or keys do not match", pe, (unsigned long long)got[pe]);
            rc = SYMM_ERR_SYSTEM;
        }
    }
    for (int32_t pe = 0; rc && !why[0] && pe < st->n; pe++)
        if (st->peers[pe].failed) snprintf(why, why_len, "reaching PE %d: %s", pe, st->peers[pe].why);
    if (rc && !why[0]) snprintf(why, why_len, "could not reach every PE (the job lost a PE, or "
                                "the provider failed: see the warnings above)");
    free(got);
    return rc;
}

static int32_t ofi_open(const symm_tp_core *core, uint32_t loopback, void **state,
                        symm_tp_info *info) {
    int32_t n = core->n_pes, me = core->my_pe;
    ofi_tp *st = calloc(1, sizeof *st);
    size_t msg_len = sizeof(addr_msg);
    addr_msg *all = calloc((size_t)n, msg_len);
    if (!st || !all) {
        free(st);
        free(all);
        return fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_mutex_init(&st->cq_mu, NULL);
    st->core = core;
    st->n = n;
    st->me = me;
    st->wait_fd = st->wake[0] = st->wake[1] = -1;
    /* A dead process is the core's news (check_failed) within the peer
     * timeout; this bound is for a peer that went silent. It is generous: on
     * a loaded machine (2 cores, load 30, measured) a live peer went 2.4 s
     * without being scheduled. */
    st->stall_ms = 8000u + 2u * core->peer_timeout_ms;
    st->peers = calloc((size_t)n, sizeof *st->peers);
    char why[600] = {0};
    int32_t status = 0, rc = 0;
    const char *force = env(core, "SYMM_OFI_ATOMICS");
    uint64_t t0 = now_ms(), t_choose = 0, t_local = 0, t_names = 0, t_connect = 0;
    if (!st->peers) {
        status = SYMM_ERR_OUT_OF_MEMORY;
        snprintf(why, sizeof why, "out of host memory");
    } else {
        for (int32_t i = 0; i < n; i++)
            st->peers[i].reach = core->remote[i] || (loopback && core->host_id[i] == core->host_id[me]);
        choice c;
        char reason[700] = "";
        status = choose(core, &c, why, sizeof why, reason, sizeof reason);
        t_choose = now_ms();
        if (!status) {
            st->info = c.info;
            st->amo = c.amo;
            st->delivery = c.delivery;
            st->rma_event = c.rma_event;
            snprintf(st->prov, sizeof st->prov, "%s", c.info->fabric_attr->prov_name);
            snprintf(st->dom, sizeof st->dom, "%s",
                     c.info->domain_attr->name ? c.info->domain_attr->name : "?");
            snprintf(st->choice, sizeof st->choice, "%s", reason);
            status = open_local(st, why, sizeof why);
        }
        t_local = now_ms();
        if (!status) plan_atomics(st, force);
    }
    /* Exchange: everyone learns who could not open, and every address. */
    addr_msg *mine = calloc(1, msg_len);
    if (!mine) {
        free(all);
        ofi_close(st);
        return fail(core, SYMM_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    if (!status) {
        size_t len = ADDR_MAX;
        int e = fi_getname(&st->ep->fid, mine->name, &len);
        if (e) {
            status = SYMM_ERR_SYSTEM;
            snprintf(why, sizeof why, "fi_getname failed (%s%s)", ferr(e),
                     e == -FI_ETOOSMALL ? ": the endpoint name is longer than 200 bytes" : "");
        }
        mine->len = (uint32_t)len;
        mine->amo = (uint32_t)st->amo;
        mine->hello_addr = (st->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)st->hello : 0;
        mine->hello_key = fi_mr_key(st->hello_mr);
        mine->am_key = st->am_key;
        snprintf(mine->prov, sizeof mine->prov, "%.31s", st->prov);
    }
    mine->status = (uint32_t)status;
    rc = core->allgather(core->core, mine, all, msg_len);
    t_names = now_ms();
    free(mine);
    if (status) {
        rc = fail(core, status, "PE %d: %s", me, why);
        goto out;
    }
    if (rc) goto out;
    for (int32_t i = 0; i < n && !status; i++) {
        const addr_msg *pm = &all[i];
        if (pm->status) {
            rc = fail(core, (int32_t)pm->status, "PE %d could not open its libfabric endpoint "
                      "(status %u; its error says why)", i, pm->status);
            goto out;
        }
        if (strncmp(pm->prov, st->prov, sizeof pm->prov) || pm->amo != (uint32_t)st->amo) {
            status = SYMM_ERR_MISMATCH;
            snprintf(why, sizeof why, "PE %d uses provider %.31s (atomics path %u), this PE %s "
                     "(%d): set SYMM_OFI_PROVIDER alike on every host", i, pm->prov, pm->amo,
                     st->prov, st->amo);
        }
    }
    for (int32_t i = 0; i < n && !status; i++) {
        if (!st->peers[i].reach) continue;
        st->peers[i].am_key = all[i].am_key;
        int k = fi_av_insert(st->av, all[i].name, 1, &st->peers[i].addr, 0, NULL);
        if (k != 1) {
            status = SYMM_ERR_SYSTEM;
            snprintf(why, sizeof why, "fi_av_insert of PE %d's address failed (%s)", i,
                     k < 0 ? ferr(k) : "not inserted");
        }
    }
    if (!status) status = warm_up(st, all, msg_len, why, sizeof why);
    t_connect = now_ms();
    status = ofi_authenticate_peers(st, status, why, sizeof why);
    /* Second exchange: did every PE reach its peers? (also a barrier) */
    uint32_t ok = (uint32_t)status, *oks = calloc((size_t)n, sizeof *oks);
    rc = core->allgather(core->core, &ok, oks ? (void *)oks : (void *)all, sizeof ok);
    if (status) {
        rc = fail(core, status, "PE %d: %s", me, why);
    } else if (!rc) {
        for (int32_t i = 0; i < n && oks; i++)
            if (oks[i]) {
                rc = fail(core, (int32_t)oks[i], "PE %d could not reach or authenticate its "
                          "peers (status %u; its error says why)", i, oks[i]);
                break;
            }
    }
    free(oks);
out:
    free(all);
    if (rc) {
        ofi_close(st);
        return rc;
    }
    st->global = st->amo == AMO_AM || software_atomics(st->prov);
    const char *amo_txt = st->amo == AMO_AM ? "messages applied by the target's CPU"
                          : st->amo == AMO_CAS ? "provider atomics, missing ops as CSWAP loops"
                          : st->amo == AMO_NATIVE ? "provider atomics" : "none";
    if (info) {
        info->caps = SYMM_TP_CAP_LOOPBACK | (st->global ? SYMM_TP_CAP_ATOMIC_GLOBAL : 0) |
                     (st->hmem ? SYMM_TP_CAP_GPU_MEM : 0);
        info->max_msg = 0; /* larger transfers are split here */
        snprintf(info->device, sizeof info->device, "%.24s on %.32s", st->prov, st->dom);
    }
    logf_(core, 1, "provider %s, domain %s (libfabric %u.%u, API %u.%u), chosen by %s", st->prov,
          st->dom, FI_MAJOR(F->version()), FI_MINOR(F->version()), FI_MAJOR(api_version()),
          FI_MINOR(api_version()), st->choice);
    logf_(core, 1, "mr_mode %#llx, %s, %s; atomics: %s%s; %s; progress %s; "
          "queue depth %u", (unsigned long long)st->mr_mode,
          st->delivery ? "delivery completion"
                       : "transmit completion only (quiet flushes with a read)",
          "signals and fences wait for the data's delivery",
          amo_txt, st->global ? " (coherent with CPU atomics)" : " (not coherent with CPU atomics)",
          st->hmem ? "FI_HMEM" : "no FI_HMEM (host memory only)",
          st->wait_fd >= 0 ? "thread on the CQ's wait fd"
          : st->rx_cntr    ? "thread napping, short naps while peers write (FI_RMA_EVENT)"
                           : "thread napping", st->depth);
    logf_(core, 1, "open took %llu ms: provider choice %llu, endpoint %llu, address exchange %llu, "
          "connecting %llu, the rest %llu", (unsigned long long)(now_ms() - t0),
          (unsigned long long)(t_choose - t0), (unsigned long long)(t_local - t_choose),
          (unsigned long long)(t_names - t_local), (unsigned long long)(t_connect - t_names),
          (unsigned long long)(now_ms() - t_connect));
    *state = st;
    return 0;
}

static const symm_tp_ops ops = {
    .size = sizeof(symm_tp_ops),
    .iface = SYMM_TP_IFACE,
    .name = "ofi",
    .probe = ofi_probe,
    .open = ofi_open,
    .mem_add = ofi_mem_add,
    .mem_remove = ofi_mem_remove,
    .put = ofi_put,
    .get = ofi_get,
    .atomic = ofi_atomic,
    .put_signal = ofi_put_signal,
    .fence = ofi_fence,
    .quiet = ofi_quiet,
    .progress = ofi_progress,
    .peer_failed = ofi_peer_failed,
    .close = ofi_close,
};

const symm_tp_ops *symm__ofi_ops(const struct ofi_fns *fns, const char *why) {
    F = fns;
    F_why = why ? why : "libfabric is not available";
    return &ops;
}

/*
 * Bootstrap client: forms the job (single, env, unique id), then serves the
 * core's allgathers, barriers, descriptor exchange and failure checks through
 * the rendezvous server (rendezvous.c) over the wire protocol (wire.c).
 *
 * Where the server runs:
 *  - symmrun: in the launcher (SYMM_LAUNCHER=symmrun); every PE is a client.
 *  - env without symmrun: rank 0 runs it on a thread, one per address per
 *    process, shared (reference counted) by that process's live contexts.
 *  - unique id: the process that made the id runs it on the socket it bound
 *    in symm_get_unique_id, when it joins as rank 0.
 * A process's k-th env-mode context joins session k of its job (contexts are
 * created in the same order on every PE: symm_init is collective); unique-id
 * jobs have one session (make a new id for every context).
 *
 * Env variables (first found wins; SYMM_* override the launchers'):
 *   rank       SYMM_RANK, RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID
 *   size       SYMM_N_PES, WORLD_SIZE, OMPI_COMM_WORLD_SIZE,
 *              SLURM_STEP_NUM_TASKS, SLURM_NTASKS
 *   address    SYMM_BOOTSTRAP_ADDR (unix:@NAME, unix:/PATH, tcp:HOST:PORT);
 *              else tcp:MASTER_ADDR:(MASTER_PORT + 1) (torchrun's TCPStore
 *              holds MASTER_PORT); else unix:@symm-ompi-<jobid> or
 *              unix:@symm-slurm-<job>.<step>, which only works on one host
 *   secret     SYMM_JOB_SECRET (64 hex digits, or any text, hashed); else,
 *              only when the address is local (unix:, or a TCP host that is
 *              loopback), derived from the launcher's job identity and this
 *              user's key file ($XDG_RUNTIME_DIR or $HOME/.symm-job-key,
 *              mode 0600, made on first use), which other users cannot read;
 *              an address other hosts can reach needs SYMM_JOB_SECRET
 *   server     rank 0 serves unless SYMM_LAUNCHER=symmrun
 *   locality   computed from host ids (hostname, boot id, network
 *              namespace); SYMM_HOST_ID replaces the host id (testing)
 * Local ranks are always computed from the host ids, in rank order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "boot_env.h"
#include "bootstrap.h"
#include "crypto.h"
#include "rendezvous.h"
#include "wire.h"

#define MSG_MAX 1024

/* ------------------------------------------------------------------------ */
/* Process-wide state                                                        */
/* ------------------------------------------------------------------------ */

/* A rank-0 env-mode server, shared by the process's contexts on one address. */
typedef struct env_server {
    char addr[SYMM__ADDR_TEXT_MAX];
    uint8_t secret[SYMM__SECRET_BYTES];
    int32_t n_pes;
    int refs;
    symm__rdv_thread *thread;
    struct env_server *next;
} env_server;

/* A listening socket made by symm_get_unique_id, waiting for rank 0's init. */
typedef struct uid_entry {
    uint8_t secret[SYMM__SECRET_BYTES];
    int fd;
    char addr[SYMM__ADDR_TEXT_MAX];
    struct uid_entry *next;
} uid_entry;

static pthread_mutex_t g_server_lock = PTHREAD_MUTEX_INITIALIZER; /* g_servers */
static pthread_mutex_t g_uid_lock = PTHREAD_MUTEX_INITIALIZER;    /* g_uids    */
static env_server *g_servers;
static uid_entry *g_uids;
static atomic_uint g_env_sessions; /* env-mode contexts opened by this process */

/* ------------------------------------------------------------------------ */
/* The boot object                                                           */
/* ------------------------------------------------------------------------ */

struct symm__boot {
    int32_t rank, n_pes;
    uint32_t session;
    uint32_t timeout_ms;
    int fd;                 /* to the rendezvous server; -1 for a single PE */
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
    env_server *server;     /* env mode, rank 0 */
    symm__rdv_thread *own_server; /* unique-id mode, rank 0 */
    int32_t local_rank, local_n_pes;
    int32_t *local_index;
    uint64_t *host_id;
    int32_t *pid;
};

/* Copy the current message so it can be re-wrapped with context. */
static void save_msg(char *dst, size_t n) {
    snprintf(dst, n, "%s", symm__last_error());
}

static symm_status failure(symm__boot *b) {
    symm_status st = atomic_load(&b->failed);
    return symm__err(st, "%s", b->fail_msg);
}

/* Record the first fatal failure (io lock held), drop the connection (after
 * an ABORT to the server when notify, so the other PEs learn at once) and
 * return the status with the message. */
__attribute__((format(printf, 4, 5))) static symm_status
fail(symm__boot *b, symm_status st, bool notify, const char *fmt, ...) {
    if (atomic_load(&b->failed) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->fail_msg, sizeof b->fail_msg, fmt, ap);
        va_end(ap);
        if (notify && b->fd >= 0) {
            uint8_t msg[8 + SYMM__WIRE_MAX_REASON];
            symm__wire_encode_abort(msg, b->rank, b->fail_msg);
            symm__wire_send(b->fd, SYMM__MSG_ABORT, 0, msg, symm__wire_abort_bytes(b->fail_msg),
                            symm__now_ms() + 1000, b->peer);
        }
        if (b->fd >= 0) close(b->fd);
        b->fd = -1;
        atomic_store(&b->failed, st);
    }
    return failure(b);
}

static symm_status fail_abort_msg(symm__boot *b, const uint8_t *p, uint32_t len) {
    symm__wire_abort a;
    if (symm__wire_parse_abort(p, len, &a) != SYMM_SUCCESS)
        return fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: the job failed (malformed ABORT from %s)",
                    b->rank, b->peer);
    if (a.rank < 0)
        return fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: the job failed: %s", b->rank, a.reason);
    return fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: the job lost PE %d: %s", b->rank, a.rank,
                a.reason);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ------------------------------------------------------------------------ */
/* Servers run by this process                                               */
/* ------------------------------------------------------------------------ */

static symm_status server_start(int listen_fd, const char *addr, const uint8_t *secret,
                                int32_t n_pes, uint32_t timeout_ms, symm__rdv_thread **out) {
    symm__rdv_config rc;
    memset(&rc, 0, sizeof rc);
    rc.listen_fd = listen_fd;
    rc.addr_text = addr;
    rc.log_prefix = "symm rendezvous";
    memcpy(rc.secret, secret, SYMM__SECRET_BYTES);
    rc.n_pes = n_pes;
    rc.hello_timeout_ms = timeout_ms;
    symm__rdv *r;
    SYMM_TRY(symm__rdv_create(&rc, &r));
    return symm__rdv_thread_start(r, out);
}

static symm_status env_server_new(const symm__env_job *j, uint32_t timeout_ms, env_server **out) {
    symm__addr a;
    int fd = -1;
    SYMM_TRY(symm__addr_parse(j->addr, &a));
    /* Exactly the address given (tcp:0.0.0.0:PORT for every interface). */
    SYMM_TRY(symm__addr_listen(&a, false, &fd, NULL));
    env_server *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "env bootstrap: out of memory");
    }
    snprintf(s->addr, sizeof s->addr, "%s", j->addr);
    memcpy(s->secret, j->secret, SYMM__SECRET_BYTES);
    s->n_pes = j->n_pes;
    s->refs = 1;
    symm_status st = server_start(fd, j->addr, j->secret, j->n_pes, timeout_ms, &s->thread);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return SYMM_SUCCESS;
}

static symm_status env_server_acquire(const symm__env_job *j, uint32_t timeout_ms, env_server **out) {
    pthread_mutex_lock(&g_server_lock);
    symm_status st = SYMM_SUCCESS;
    env_server *s;
    for (s = g_servers; s; s = s->next)
        if (strcmp(s->addr, j->addr) == 0) break;
    if (s) {
        if (s->n_pes != j->n_pes || !symm__secret_equal(s->secret, j->secret))
            st = symm__err(SYMM_ERR_BOOTSTRAP,
                           "env bootstrap: this process already serves another job on %s", j->addr);
        else
            s->refs++;
    } else {
        st = env_server_new(j, timeout_ms, &s);
        if (st == SYMM_SUCCESS) {
            s->next = g_servers;
            g_servers = s;
        } else {
            char msg[MSG_MAX];
            save_msg(msg, sizeof msg);
            st = symm__err(st, "env bootstrap (%s): PE 0 runs the rendezvous server: %s", j->source,
                           msg);
        }
    }
    pthread_mutex_unlock(&g_server_lock);
    if (st == SYMM_SUCCESS) *out = s;
    return st;
}

/* The last context leaving stops the server once every PE of its sessions
 * has left (bounded by the timeout). The lock is held throughout, so a new
 * context of this process cannot race the old server for the address. */
static void env_server_release(env_server *s, uint32_t timeout_ms) {
    if (!s) return;
    pthread_mutex_lock(&g_server_lock);
    if (--s->refs == 0) {
        for (env_server **ps = &g_servers; *ps; ps = &(*ps)->next)
            if (*ps == s) {
                *ps = s->next;
                break;
            }
        symm__rdv_thread_stop(s->thread, timeout_ms);
        free(s);
    }
    pthread_mutex_unlock(&g_server_lock);
}

/* ------------------------------------------------------------------------ */
/* Joining                                                                   */
/* ------------------------------------------------------------------------ */

static symm_status boot_alloc(int32_t rank, int32_t n_pes, uint32_t timeout_ms, symm__boot **out) {
    symm__boot *b = calloc(1, sizeof *b);
    if (!b) return symm__err(SYMM_ERR_OUT_OF_MEMORY, "bootstrap: out of memory");
    b->rank = rank;
    b->n_pes = n_pes;
    b->timeout_ms = timeout_ms ? timeout_ms : SYMM__DEFAULT_TIMEOUT_MS;
    b->fd = -1;
    b->share_fd = -1;
    pthread_mutex_init(&b->io, NULL);
    b->local_index = calloc((size_t)n_pes, sizeof *b->local_index);
    b->host_id = calloc((size_t)n_pes, sizeof *b->host_id);
    b->pid = calloc((size_t)n_pes, sizeof *b->pid);
    if (!b->local_index || !b->host_id || !b->pid) {
        symm__boot_close(b);
        return symm__err(SYMM_ERR_OUT_OF_MEMORY, "bootstrap: out of memory for %d PEs", n_pes);
    }
    *out = b;
    return SYMM_SUCCESS;
}

static void compute_locality(symm__boot *b) {
    uint64_t me = b->host_id[b->rank];
    int32_t count = 0;
    for (int32_t i = 0; i < b->n_pes; i++) {
        if (b->host_id[i] == me) b->local_index[i] = count++;
        else b->local_index[i] = -1;
    }
    b->local_rank = b->local_index[b->rank];
    b->local_n_pes = count;
}

/* Where PE rank takes descriptors: named from the job (a hash of the
 * secret), the session, the rank and the pid, so no two processes collide. */
static void share_name(const symm__boot *b, int32_t rank, symm__addr *a) {
    char text[128];
    uint8_t tag[SYMM__SECRET_BYTES]; /* public: a one-way function of the key */
    symm__key_derive(b->secret, "symm descriptor socket name", tag);
    snprintf(text, sizeof text, "unix:@symm-fd-%016llx-%u-%d-%d",
             (unsigned long long)symm__hash64(SYMM__HASH64_INIT, tag, 8), b->session, rank,
             b->pid[rank]);
    symm__addr_parse(text, a); /* always valid */
}

/* The handshake on a new connection (wire.h): HELLO with a fresh nonce; the
 * server's CHALLENGE must carry its proof of the key before this PE sends
 * its own (AUTH). *hdr and *p: the server's answer after that (WELCOME,
 * REJECT or ABORT), or its REJECT of the HELLO. Transport errors as
 * symm__wire_recv; BOOTSTRAP (no retry) when the server's proof is wrong. */
static symm_status handshake(symm__boot *b, int fd, int64_t deadline, const symm__wire_hello *h0,
                             symm__wire_header *hdr, uint8_t **p) {
    symm__wire_hello h = *h0;
    SYMM_TRY(symm__random(h.nonce, sizeof h.nonce));
    uint8_t hello[SYMM__WIRE_HELLO_BYTES];
    symm__wire_encode_hello(hello, &h);
    SYMM_TRY(symm__wire_send(fd, SYMM__MSG_HELLO, 0, hello, sizeof hello, deadline, b->peer));
    SYMM_TRY(symm__wire_recv(fd, hdr, p, deadline, b->peer));
    if (hdr->type != SYMM__MSG_CHALLENGE) return SYMM_SUCCESS; /* a REJECT: the caller reads it */
    uint8_t want[SYMM__PROOF_BYTES], proof[SYMM__PROOF_BYTES];
    symm__wire_proof(b->secret, SYMM__PROOF_SERVER, hello, *p, want);
    bool ok = hdr->length == SYMM__WIRE_CHALLENGE_BYTES &&
              symm__ct_equal(*p + SYMM__NONCE_BYTES, want, SYMM__PROOF_BYTES);
    if (ok) symm__wire_proof(b->secret, SYMM__PROOF_CLIENT, hello, *p, proof);
    free(*p);
    *p = NULL;
    if (!ok)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "%s could not prove that it knows this job's key (its job secret is "
                         "another: another job's server on this address, or an impostor); not "
                         "joining it", b->peer);
    symm_status st = symm__wire_send(fd, SYMM__MSG_AUTH, 0, proof, sizeof proof, deadline, b->peer);
    symm__wipe(proof, sizeof proof);
    if (st == SYMM_SUCCESS) st = symm__wire_recv(fd, hdr, p, deadline, b->peer);
    return st;
}

/* Connect (retrying until rank 0's server is up), handshake, wait for WELCOME. */
static symm_status join(symm__boot *b, const char *hint) {
    int64_t start = symm__now_ms(), deadline = start + b->timeout_ms;
    char last[MSG_MAX] = "no attempt";
    int backoff = 5;
    symm__wire_hello h;
    memset(&h, 0, sizeof h);
    h.rank = b->rank;
    h.n_pes = b->n_pes;
    h.session = b->session;
    h.pid = (int32_t)getpid();
    h.host_id = b->host_id[b->rank];

    for (;;) {
        int fd = -1;
        symm_status st = symm__addr_connect(&b->addr, deadline, &fd);
        if (st == SYMM_ERR_INVALID_ARG) return st;
        if (st == SYMM_SUCCESS) {
            symm__wire_header hdr;
            uint8_t *p = NULL;
            st = handshake(b, fd, deadline, &h, &hdr, &p);
            if (st == SYMM_SUCCESS) {
                symm_status out = SYMM_SUCCESS;
                symm__wire_abort a;
                if (hdr.type == SYMM__MSG_WELCOME) {
                    out = symm__wire_parse_welcome(p, hdr.length, b->n_pes, b->host_id, b->pid);
                    if (out == SYMM_SUCCESS && (b->pid[b->rank] != h.pid ||
                                                b->host_id[b->rank] != h.host_id))
                        out = symm__err(SYMM_ERR_BOOTSTRAP, "WELCOME does not list this PE");
                    if (out != SYMM_SUCCESS) {
                        save_msg(last, sizeof last);
                        out = symm__err(SYMM_ERR_BOOTSTRAP, "PE %d: bad WELCOME from %s: %s",
                                        b->rank, b->peer, last);
                    }
                } else if ((hdr.type == SYMM__MSG_REJECT || hdr.type == SYMM__MSG_ABORT) &&
                           symm__wire_parse_abort(p, hdr.length, &a) == SYMM_SUCCESS) {
                    if (hdr.type == SYMM__MSG_REJECT)
                        out = symm__err(SYMM_ERR_BOOTSTRAP, "PE %d: %s refused it: %s", b->rank,
                                        b->peer, a.reason);
                    else
                        out = symm__err(SYMM_ERR_PEER_FAILED,
                                        "PE %d: the job failed while forming: %s", b->rank,
                                        a.reason);
                } else {
                    out = symm__err(SYMM_ERR_BOOTSTRAP, "PE %d: unexpected %s from %s during HELLO",
                                    b->rank, symm__wire_type_name(hdr.type), b->peer);
                }
                free(p);
                if (out == SYMM_SUCCESS) {
                    b->fd = fd;
                    return SYMM_SUCCESS;
                }
                close(fd);
                return out;
            }
            close(fd);
            if (st == SYMM_ERR_TIMEOUT)
                return symm__err(SYMM_ERR_TIMEOUT,
                                 "PE %d: connected to %s, but not all %d PEs joined session %u "
                                 "within %u ms (did every PE start, with the same job settings?)",
                                 b->rank, b->peer, b->n_pes, b->session, b->timeout_ms);
            if (st != SYMM_ERR_PEER_FAILED) {
                save_msg(last, sizeof last);
                return symm__err(st, "PE %d: %s", b->rank, last);
            }
            /* Closed before WELCOME: that server is going away; try again. */
            save_msg(last, sizeof last);
            symm__err(st, "%s before WELCOME (a server that closes every connection at once "
                      "may speak another protocol version)", last);
        }
        save_msg(last, sizeof last);
        int64_t now = symm__now_ms();
        if (now >= deadline)
            return symm__err(SYMM_ERR_TIMEOUT,
                             "PE %d: could not join the job at %s within %u ms (last error: %s)%s",
                             b->rank, b->addr.text, b->timeout_ms, last, hint);
        int64_t left = deadline - now;
        sleep_ms((int)(left < backoff ? left : backoff));
        if (backoff < 200) backoff *= 2;
    }
}

/* Everything after the rank, size, address and secret are known. */
static symm_status open_joined(symm__boot *b, const char *addr_text, const char *hint) {
    SYMM_TRY(symm__addr_parse(addr_text, &b->addr));
    snprintf(b->peer, sizeof b->peer, "rendezvous server %s", b->addr.text);
    b->host_id[b->rank] = symm__boot_host_identity();
    b->pid[b->rank] = (int32_t)getpid();
    /* Listen for descriptors before joining: once WELCOME arrives anywhere,
     * a local peer may connect. */
    symm__addr sa;
    share_name(b, b->rank, &sa);
    symm_status st = symm__addr_listen(&sa, false, &b->share_fd, NULL);
    if (st) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        return symm__err(st, "PE %d: descriptor-passing socket: %s", b->rank, msg);
    }
    SYMM_TRY(join(b, hint));
    compute_locality(b);
    if (b->local_n_pes == 1) {
        close(b->share_fd);
        b->share_fd = -1;
    }
    return SYMM_SUCCESS;
}

static void fill_info(const symm__boot *b, symm__boot_info *info) {
    info->rank = b->rank;
    info->n_pes = b->n_pes;
    info->local_rank = b->local_rank;
    info->local_n_pes = b->local_n_pes;
    info->local_index = b->local_index;
    info->host_id = b->host_id;
    info->pid = b->pid;
}

static void make_single(symm__boot *b) {
    b->host_id[0] = symm__boot_host_identity();
    b->pid[0] = (int32_t)getpid();
    b->local_index[0] = 0;
    b->local_rank = 0;
    b->local_n_pes = 1;
}

static symm_status open_env(const symm__boot_params *cfg, symm__boot **out) {
    symm__env_job j;
    SYMM_TRY(symm__boot_env_parse(&j));
    uint32_t session = atomic_fetch_add(&g_env_sessions, 1);
    symm__boot *b;
    SYMM_TRY(boot_alloc(j.rank, j.n_pes, cfg->timeout_ms, &b));
    b->session = session;
    b->external = j.external;
    memcpy(b->secret, j.secret, SYMM__SECRET_BYTES);
    if (j.n_pes == 1) {
        make_single(b);
        *out = b;
        return SYMM_SUCCESS;
    }
    symm_status st = SYMM_SUCCESS;
    if (j.rank == 0 && !j.external) st = env_server_acquire(&j, b->timeout_ms, &b->server);
    char hint[512] = "";
    if (j.addr_fallback)
        snprintf(hint, sizeof hint,
                 "; with no SYMM_BOOTSTRAP_ADDR or MASTER_ADDR the job meets on an abstract Unix "
                 "socket named from %s's job id, which works only when every PE runs on one host",
                 j.source);
    else if (!j.external && j.rank != 0)
        snprintf(hint, sizeof hint,
                 "; PE 0 serves this address (%s): is it running, and is the address reachable "
                 "from here?", j.source);
    if (st == SYMM_SUCCESS) st = open_joined(b, j.addr, hint);
    if (st != SYMM_SUCCESS) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        symm__boot_close(b);
        return symm__err(st, "%s", msg);
    }
    *out = b;
    return SYMM_SUCCESS;
}

static symm_status open_uid(const symm__boot_params *cfg, symm__boot **out) {
    uint8_t secret[SYMM__SECRET_BYTES];
    char addr[SYMM__UID_ADDR_MAX + 1];
    SYMM_TRY(symm__wire_decode_uid(cfg->unique_id.bytes, secret, addr));
    SYMM_CHECK(cfg->uid_n_pes >= 1 && cfg->uid_n_pes <= SYMM__WIRE_MAX_PES && cfg->uid_rank >= 0 &&
                   cfg->uid_rank < cfg->uid_n_pes,
               SYMM_ERR_INVALID_ARG, "unique-id bootstrap needs 0 <= rank (%d) < n_pes (%d) <= %d",
               cfg->uid_rank, cfg->uid_n_pes, SYMM__WIRE_MAX_PES);
    /* Rank 0 takes the socket symm_get_unique_id left in this process. */
    int listen_fd = -1;
    if (cfg->uid_rank == 0) {
        pthread_mutex_lock(&g_uid_lock);
        for (uid_entry **pe = &g_uids; *pe; pe = &(*pe)->next) {
            if (symm__secret_equal((*pe)->secret, secret)) {
                uid_entry *e = *pe;
                *pe = e->next;
                listen_fd = e->fd;
                free(e);
                break;
            }
        }
        pthread_mutex_unlock(&g_uid_lock);
        if (listen_fd < 0 && cfg->uid_n_pes > 1)
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "unique-id bootstrap: rank 0 must be the process that called "
                             "symm_get_unique_id, and each id serves one context (this process "
                             "has no unused id with this secret; address %s)", addr);
    }
    symm__boot *b;
    symm_status st = boot_alloc(cfg->uid_rank, cfg->uid_n_pes, cfg->timeout_ms, &b);
    if (st) {
        if (listen_fd >= 0) close(listen_fd);
        return st;
    }
    memcpy(b->secret, secret, SYMM__SECRET_BYTES);
    if (cfg->uid_n_pes == 1) {
        if (listen_fd >= 0) close(listen_fd);
        make_single(b);
        *out = b;
        return SYMM_SUCCESS;
    }
    if (listen_fd >= 0)
        st = server_start(listen_fd, addr, secret, cfg->uid_n_pes, b->timeout_ms, &b->own_server);
    if (st == SYMM_SUCCESS)
        st = open_joined(b, addr,
                         cfg->uid_rank
                             ? "; the process that made the unique id serves it as rank 0: is "
                               "it running, and is the address reachable from here?"
                             : "");
    if (st != SYMM_SUCCESS) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        symm__boot_close(b);
        return symm__err(st, "%s", msg);
    }
    *out = b;
    return SYMM_SUCCESS;
}

symm_status symm__boot_open(const symm__boot_params *cfg, symm__boot **boot, symm__boot_info *info) {
    SYMM_CHECK(cfg && boot && info, SYMM_ERR_INVALID_ARG, "symm__boot_open: NULL argument");
    uint32_t mode = cfg->bootstrap;
    if (mode == SYMM_BOOTSTRAP_AUTO) mode = symm__boot_env_has_launcher() ? SYMM_BOOTSTRAP_ENV : SYMM_BOOTSTRAP_SINGLE;
    symm__boot *b = NULL;
    switch (mode) {
    case SYMM_BOOTSTRAP_SINGLE:
        SYMM_TRY(boot_alloc(0, 1, cfg->timeout_ms, &b));
        make_single(b);
        break;
    case SYMM_BOOTSTRAP_ENV: SYMM_TRY(open_env(cfg, &b)); break;
    case SYMM_BOOTSTRAP_UID: SYMM_TRY(open_uid(cfg, &b)); break;
    default: return symm__err(SYMM_ERR_INVALID_ARG, "unknown bootstrap mode %u", cfg->bootstrap);
    }
    symm__key_derive(b->secret, "symm transport v1", b->tp_key);
    /* A quarter of the bound: the news reaches a call well within it. */
    b->poll_ns = (long long)(cfg->peer_timeout_ms ? cfg->peer_timeout_ms
                                                  : SYMM__DEFAULT_PEER_TIMEOUT_MS) * 250000ll;
    atomic_store(&b->polled_tick, LLONG_MIN / 2);
    fill_info(b, info);
    symm__log_set_pe(b->rank);
    SYMM_INFO(SYMM_LOG_BOOTSTRAP, "joined a job of %d PE(s) as rank %d (%s mode%s%s%s)", b->n_pes,
              b->rank, mode == SYMM_BOOTSTRAP_ENV ? "env" : mode == SYMM_BOOTSTRAP_UID ? "uid" : "single",
              b->peer[0] ? ", " : "", b->peer, b->external ? ", served by symmrun" : "");
    *boot = b;
    return SYMM_SUCCESS;
}

/* ------------------------------------------------------------------------ */
/* Collectives through the server                                            */
/* ------------------------------------------------------------------------ */

/* Who runs the server, for messages about losing it. */
static const char *server_owner(const symm__boot *b) {
    if (b->own_server || b->server) return "this process";
    return b->external ? "symmrun" : "PE 0";
}

/* One collective (io lock held): send mine, wait for the combined answer. */
static symm_status exchange_locked(symm__boot *b, uint32_t type, const void *mine, size_t len,
                                   void *all) {
    const char *what = type == SYMM__MSG_BARRIER ? "barrier" : "allgather";
    if (atomic_load(&b->failed)) return failure(b);
    uint32_t seq = ++b->seq;
    int64_t deadline = symm__now_ms() + b->timeout_ms;
    symm__wire_header h;
    uint8_t *p = NULL;
    symm_status st = symm__wire_send(b->fd, type, seq, mine, len, deadline, b->peer);
    /* The answer may take as long as the slowest PE computes before joining
     * the collective (a collective allocation after a long phase of work):
     * no deadline here. A PE that dies is reported by the server (ABORT) or
     * by the connection closing, so this cannot hang on a dead peer. */
    if (st == SYMM_SUCCESS) st = symm__wire_recv(b->fd, &h, &p, INT64_MAX / 4, b->peer);
    if (st == SYMM_ERR_TIMEOUT)
        return fail(b, SYMM_ERR_TIMEOUT, true,
                    "PE %d: %s #%u did not complete within %u ms (some PE did not call it; %s)",
                    b->rank, what, seq, b->timeout_ms, b->peer);
    char msg[MSG_MAX];
    if (st == SYMM_ERR_PEER_FAILED) {
        save_msg(msg, sizeof msg);
        return fail(b, SYMM_ERR_PEER_FAILED, false,
                    "PE %d: lost the job during %s #%u: %s (the server runs in %s: did it exit?)",
                    b->rank, what, seq, msg, server_owner(b));
    }
    if (st != SYMM_SUCCESS) {
        save_msg(msg, sizeof msg);
        return fail(b, st, true, "PE %d: %s #%u: %s", b->rank, what, seq, msg);
    }
    if (h.type == SYMM__MSG_ABORT) {
        st = fail_abort_msg(b, p, h.length);
        free(p);
        return st;
    }
    size_t want = type == SYMM__MSG_ALLGATHER ? len * (size_t)b->n_pes : 0;
    if (h.type != type || h.seq != seq || h.length != want) {
        free(p);
        return fail(b, SYMM_ERR_BOOTSTRAP, true,
                    "PE %d: protocol error: the answer to %s #%u was %s #%u of %u bytes", b->rank,
                    what, seq, symm__wire_type_name(h.type), h.seq, h.length);
    }
    if (want) memcpy(all, p, want);
    free(p);
    return SYMM_SUCCESS;
}

symm_status symm__boot_allgather(symm__boot *b, const void *mine, void *all, size_t len) {
    SYMM_CHECK(b, SYMM_ERR_INVALID_ARG, "symm__boot_allgather: no bootstrap");
    SYMM_CHECK(len == 0 || (mine && all), SYMM_ERR_INVALID_ARG,
               "symm__boot_allgather: NULL buffer");
    SYMM_CHECK(len <= SYMM__WIRE_MAX_PAYLOAD / (size_t)b->n_pes, SYMM_ERR_INVALID_ARG,
               "bootstrap allgather of %zu bytes x %d PEs exceeds the %u-byte message limit", len,
               b->n_pes, SYMM__WIRE_MAX_PAYLOAD);
    if (b->n_pes == 1) {
        if (len) memmove(all, mine, len);
        return SYMM_SUCCESS;
    }
    pthread_mutex_lock(&b->io);
    symm_status st = exchange_locked(b, SYMM__MSG_ALLGATHER, mine, len, all);
    pthread_mutex_unlock(&b->io);
    return st;
}

symm_status symm__boot_barrier(symm__boot *b) {
    SYMM_CHECK(b, SYMM_ERR_INVALID_ARG, "symm__boot_barrier: no bootstrap");
    if (b->n_pes == 1) return SYMM_SUCCESS;
    pthread_mutex_lock(&b->io);
    symm_status st = exchange_locked(b, SYMM__MSG_BARRIER, NULL, 0, NULL);
    pthread_mutex_unlock(&b->io);
    return st;
}

/* Server socket readable outside a collective (io lock held): it is an
 * ABORT, or the server went away. Returns success when nothing is complete. */
static symm_status read_unsolicited(symm__boot *b) {
    uint8_t hdr_bytes[SYMM__WIRE_HEADER_BYTES];
    ssize_t n = recv(b->fd, hdr_bytes, sizeof hdr_bytes, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return SYMM_SUCCESS;
    if (n <= 0)
        return fail(b, SYMM_ERR_PEER_FAILED, false,
                    "PE %d: lost the connection to the %s (%s; it runs in %s); the job is over",
                    b->rank, b->peer, n == 0 ? "closed" : strerror(errno), server_owner(b));
    if ((size_t)n < sizeof hdr_bytes) return SYMM_SUCCESS; /* the rest is on its way */
    symm__wire_header h;
    if (symm__wire_decode_header(hdr_bytes, sizeof hdr_bytes, &h) != SYMM_SUCCESS ||
        h.type != SYMM__MSG_ABORT) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        return fail(b, SYMM_ERR_BOOTSTRAP, true, "PE %d: protocol error: unexpected data from %s (%s)",
                    b->rank, b->peer, h.type == SYMM__MSG_ABORT ? "?" : msg);
    }
    int avail = 0;
    if (ioctl(b->fd, FIONREAD, &avail) != 0 ||
        (size_t)avail < SYMM__WIRE_HEADER_BYTES + h.length)
        return SYMM_SUCCESS;
    uint8_t *p = NULL;
    symm_status st = symm__wire_recv(b->fd, &h, &p, symm__now_ms() + 1000, b->peer);
    if (st == SYMM_SUCCESS) st = fail_abort_msg(b, p, h.length);
    else st = fail(b, SYMM_ERR_PEER_FAILED, false, "PE %d: lost the %s", b->rank, b->peer);
    free(p);
    return st;
}

/* Read what the server sent outside a collective, unless a collective holds
 * the socket (its reader sees any news). */
static symm_status boot_poll(symm__boot *b, long long tick) {
    if (pthread_mutex_trylock(&b->io) != 0) return SYMM_SUCCESS;
    atomic_store_explicit(&b->polled_tick, tick, memory_order_relaxed);
    symm_status st = SYMM_SUCCESS;
    if (b->fd >= 0) {
        struct pollfd p = {.fd = b->fd, .events = POLLIN};
        if (poll(&p, 1, 0) > 0) st = read_unsolicited(b);
    }
    pthread_mutex_unlock(&b->io);
    return st == SYMM_SUCCESS ? SYMM_SUCCESS : SYMM_ERR_PEER_FAILED;
}

/* force: poll now, whatever the poll interval says (the job watcher). */
static symm_status boot_check(symm__boot *b, bool force) {
    if (!b) return SYMM_SUCCESS;
    if (atomic_load(&b->failed)) {
        failure(b);
        return SYMM_ERR_PEER_FAILED;
    }
    if (b->n_pes == 1) return SYMM_SUCCESS;
    /* At most one poll per poll interval (and so per tick of the coarse
     * clock, 1-4 ms): every one-sided call makes this check, and a poll is a
     * system call; reading the coarse clock is not (vDSO). */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    long long tick = (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
    if (!force && tick - atomic_load_explicit(&b->polled_tick, memory_order_relaxed) < b->poll_ns)
        return SYMM_SUCCESS;
    return boot_poll(b, tick);
}

symm_status symm__boot_check(symm__boot *b) { return boot_check(b, false); }
symm_status symm__boot_check_now(symm__boot *b) { return boot_check(b, true); }

int symm__boot_news_fd(const symm__boot *b) { return b && b->n_pes > 1 ? b->fd : -1; }

void symm__boot_auth_mac(const symm__boot *b, int32_t pe, const void *msg, size_t len,
                         uint8_t mac[32]) {
    uint8_t who[4] = {(uint8_t)pe, (uint8_t)((uint32_t)pe >> 8), (uint8_t)((uint32_t)pe >> 16),
                      (uint8_t)((uint32_t)pe >> 24)};
    symm__hmac m;
    symm__hmac_init(&m, b->tp_key, sizeof b->tp_key);
    symm__hmac_update(&m, who, sizeof who);
    symm__hmac_update(&m, msg, len);
    symm__hmac_final(&m, mac);
}

bool symm__boot_auth_verify(const symm__boot *b, int32_t pe, const void *msg, size_t len,
                            const uint8_t mac[32]) {
    uint8_t want[32];
    symm__boot_auth_mac(b, pe, msg, len, want);
    bool ok = symm__ct_equal(want, mac, sizeof want);
    symm__wipe(want, sizeof want);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Descriptor passing among PEs of one host                                  */
/* ------------------------------------------------------------------------ */

static symm_status send_fd_to(symm__boot *b, int32_t peer, int fd, int64_t deadline) {
    symm__addr a;
    share_name(b, peer, &a);
    int s = -1;
    int delay = 1;
    for (;;) {
        /* The peer listens from its open on; a full backlog says EAGAIN. */
        if (symm__addr_connect(&a, deadline, &s) == SYMM_SUCCESS) break;
        struct pollfd pf = {.fd = b->fd, .events = POLLIN};
        if (poll(&pf, 1, 0) > 0) SYMM_TRY(read_unsolicited(b)); /* did the peer die? */
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
    if (!symm__wire_take_fdmsg(&msg, n, &want, &m, &fd))
        return SYMM_SUCCESS; /* not a PE of this job: ignore it (its descriptors are closed) */
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
    if (atomic_load(&b->failed)) return failure(b);
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
    symm_status st = atomic_load(&b->failed) ? failure(b) : SYMM_SUCCESS;
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
            st = fail(b, SYMM_ERR_TIMEOUT, true,
                      "PE %d: descriptor exchange #%u: PE(s) %s of this host sent nothing within %u ms",
                      b->rank, b->share_seq, list, b->timeout_ms);
            break;
        }
        if (pf[1].revents) {
            st = read_unsolicited(b); /* an ABORT: a PE died */
            if (st) break;
        }
        if (pf[0].revents) {
            int32_t from;
            int rfd = -1;
            st = recv_fd_from_any(b, deadline, &from, &rfd);
            if (st == SYMM_ERR_MISMATCH) {
                char msg[MSG_MAX];
                save_msg(msg, sizeof msg);
                st = fail(b, SYMM_ERR_MISMATCH, true, "%s", msg);
            }
            if (st || from < 0) continue;
            int32_t li = b->local_index[from];
            if (got[li] >= 0) close(got[li]); /* a duplicate: keep the newest */
            else missing--;
            got[li] = rfd;
        }
    }
    /* Nobody starts the next exchange before everyone finished this one. */
    if (st == SYMM_SUCCESS) st = exchange_locked(b, SYMM__MSG_BARRIER, NULL, 0, NULL);
    pthread_mutex_unlock(&b->io);
    if (st == SYMM_SUCCESS) memcpy(fds, got, (size_t)nl * sizeof *got);
    else
        for (int32_t i = 0; i < nl; i++)
            if (got[i] >= 0) close(got[i]);
    free(got);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Leaving                                                                   */
/* ------------------------------------------------------------------------ */

void symm__boot_close(symm__boot *b) {
    if (!b) return;
    pthread_mutex_lock(&b->io);
    if (b->fd >= 0) {
        /* BYE, then wait for its acknowledgement (or the end of the
         * connection), so the server never mistakes this exit for a death. */
        int64_t deadline = symm__now_ms() + (b->timeout_ms < 10000 ? b->timeout_ms : 10000);
        if (symm__wire_send(b->fd, SYMM__MSG_BYE, 0, NULL, 0, deadline, b->peer) == SYMM_SUCCESS) {
            for (;;) {
                symm__wire_header h;
                uint8_t *p = NULL;
                if (symm__wire_recv(b->fd, &h, &p, deadline, b->peer) != SYMM_SUCCESS) break;
                free(p);
                if (h.type == SYMM__MSG_BYE) break;
            }
        }
        close(b->fd);
        b->fd = -1;
    }
    pthread_mutex_unlock(&b->io);
    if (b->share_fd >= 0) close(b->share_fd);
    /* Rank 0: the server outlives this PE's BYE until every PE has left. */
    if (b->own_server) symm__rdv_thread_stop(b->own_server, b->timeout_ms);
    env_server_release(b->server, b->timeout_ms);
    pthread_mutex_destroy(&b->io);
    symm__wipe(b->secret, sizeof b->secret);
    symm__wipe(b->tp_key, sizeof b->tp_key);
    free(b->local_index);
    free(b->host_id);
    free(b->pid);
    free(b);
}

/* ------------------------------------------------------------------------ */
/* Unique id                                                                 */
/* ------------------------------------------------------------------------ */

symm_status symm_get_unique_id(symm_unique_id *id) {
    symm__err_clear();
    SYMM_CHECK(id, SYMM_ERR_INVALID_ARG, "symm_get_unique_id: id is NULL");
    uint8_t secret[SYMM__SECRET_BYTES];
    SYMM_TRY(symm__random(secret, sizeof secret));

    /* TCP on SYMM_BOOTSTRAP_ADDR's host (port 0: any free one), else on
     * 127.0.0.1; an abstract Unix name gets a random suffix per id. */
    const char *where = symm__boot_env("SYMM_BOOTSTRAP_ADDR");
    char text[SYMM__ADDR_TEXT_MAX];
    symm__addr a;
    if (!where) where = "tcp:127.0.0.1:0";
    SYMM_TRY(symm__addr_parse(where, &a));
    bool wildcard = false;
    if (a.kind == SYMM__ADDR_UNIX) {
        if (a.un.sun_path[0] != '\0')
            return symm__err(SYMM_ERR_NOT_SUPPORTED,
                             "symm_get_unique_id: SYMM_BOOTSTRAP_ADDR=%s: use tcp:HOST[:PORT] or "
                             "unix:@NAME for unique ids", where);
        uint8_t tag[8]; /* abstract names are public: not from the secret */
        char suffix[17];
        SYMM_TRY(symm__random(tag, sizeof tag));
        symm__hex(suffix, tag, sizeof tag);
        snprintf(text, sizeof text, "%.60s-%s", where, suffix);
        SYMM_TRY(symm__addr_parse(text, &a));
    } else {
        wildcard = strcmp(a.host, "0.0.0.0") == 0 || strcmp(a.host, "::") == 0;
    }
    int fd = -1;
    symm__addr bound;
    symm_status st = symm__addr_listen(&a, wildcard, &fd, &bound);
    if (st) {
        char msg[MSG_MAX];
        save_msg(msg, sizeof msg);
        return symm__err(st, "symm_get_unique_id: %s", msg);
    }
    if (wildcard) { /* peers need a name they can reach */
        char host[256];
        if (gethostname(host, sizeof host) == 0) {
            host[sizeof host - 1] = '\0';
            snprintf(bound.text, sizeof bound.text, "tcp:%s:%u", host, bound.port);
        }
    }
    uint8_t bytes[SYMM_UNIQUE_ID_BYTES];
    uid_entry *e = calloc(1, sizeof *e);
    st = e ? symm__wire_encode_uid(bytes, secret, bound.text)
           : symm__err(SYMM_ERR_OUT_OF_MEMORY, "symm_get_unique_id: out of memory");
    if (st) {
        free(e);
        close(fd);
        return st;
    }
    memcpy(e->secret, secret, SYMM__SECRET_BYTES);
    e->fd = fd;
    snprintf(e->addr, sizeof e->addr, "%s", bound.text);
    pthread_mutex_lock(&g_uid_lock);
    e->next = g_uids;
    g_uids = e;
    pthread_mutex_unlock(&g_uid_lock);
    memcpy(id->bytes, bytes, sizeof bytes);
    return SYMM_SUCCESS;
}

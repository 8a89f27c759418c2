/*
 * Reading the job from the environment (env bootstrap): rank, size, the
 * rendezvous address and the job secret as symmrun, torchrun, Open MPI and
 * Slurm give them, and this host's identity. The variables and their order
 * are listed at the top of bootstrap.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/log.h"
#include "boot_env.h"
#include "bootstrap.h"
#include "crypto.h"

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ------------------------------------------------------------------------ */
/* Host identity                                                             */
/* ------------------------------------------------------------------------ */

/* Same value <=> same host *and* network namespace (where abstract sockets,
 * hence descriptor passing, reach). SYMM_HOST_ID replaces it (for testing
 * multi-host layouts on one machine). */
uint64_t symm__boot_host_identity(void) {
    const char *o = getenv("SYMM_HOST_ID");
    if (o && *o) return symm__hash64(symm__hash64(SYMM__HASH64_INIT, "id:", 3), o, strlen(o));
    char buf[512];
    uint64_t h = SYMM__HASH64_INIT;
    if (gethostname(buf, sizeof buf) == 0) {
        buf[sizeof buf - 1] = '\0';
        h = symm__hash64(h, buf, strlen(buf) + 1);
    }
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        h = symm__hash64(h, buf, n);
    }
    ssize_t n = readlink("/proc/self/ns/net", buf, sizeof buf);
    if (n > 0) h = symm__hash64(h, buf, (size_t)n);
    return h;
}

/* ------------------------------------------------------------------------ */
/* Environment (symmrun, torchrun, Open MPI, Slurm)                          */
/* ------------------------------------------------------------------------ */


const char *symm__boot_env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static symm_status env_int(const char *name, int32_t lo, int32_t hi, int32_t *out, bool *found) {
    const char *v = symm__boot_env(name);
    if (!v) return SYMM_SUCCESS;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || *end || end == v || x < lo || x > hi)
        return symm__err(SYMM_ERR_BOOTSTRAP, "%s=\"%s\": expected an integer in [%d, %d]", name, v,
                         lo, hi);
    *out = (int32_t)x;
    *found = true;
    return SYMM_SUCCESS;
}

/* First variable of names[] that is set, parsed; *which names it. */
static symm_status env_first(const char *const *names, int32_t lo, int32_t hi, int32_t *out,
                             const char **which) {
    for (size_t i = 0; names[i]; i++) {
        bool found = false;
        SYMM_TRY(env_int(names[i], lo, hi, out, &found));
        if (found) {
            *which = names[i];
            return SYMM_SUCCESS;
        }
    }
    *which = NULL;
    return SYMM_SUCCESS;
}

static bool env_has_symmrun(void) {
    return symm__boot_env("SYMM_RANK") && symm__boot_env("SYMM_N_PES");
}

bool symm__boot_env_has_launcher(void) {
    return env_has_symmrun() || (symm__boot_env("RANK") && symm__boot_env("WORLD_SIZE")) ||
           (symm__boot_env("OMPI_COMM_WORLD_RANK") && symm__boot_env("OMPI_COMM_WORLD_SIZE")) ||
           (symm__boot_env("SLURM_PROCID") && (symm__boot_env("SLURM_STEP_NUM_TASKS") || symm__boot_env("SLURM_NTASKS")));
}

/* The job key from a text SYMM_JOB_SECRET: PBKDF2-HMAC-SHA-256 with a fixed
 * salt and SYMM__SECRET_ITERATIONS rounds (docs/BOOTSTRAP.md, Secrets). A
 * recorded handshake lets an eavesdropper test guesses of the text offline;
 * the rounds make each guess cost what init pays once (about 0.15 s on a
 * 2-core VM). The last derivation is kept, so a process's later contexts do
 * not pay again. */
#define SYMM__SECRET_ITERATIONS 100000u
#define SYMM__SECRET_SALT "symm job secret v2"

static pthread_mutex_t kdf_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t kdf_text_hash[SYMM__SHA256_BYTES], kdf_key[SYMM__SECRET_BYTES];
static bool kdf_cached;

static void key_from_text(uint8_t out[SYMM__SECRET_BYTES], const char *text) {
    uint8_t h[SYMM__SHA256_BYTES];
    symm__sha256(text, strlen(text), h);
    pthread_mutex_lock(&kdf_lock);
    if (!kdf_cached || !symm__ct_equal(h, kdf_text_hash, sizeof h)) {
        symm__pbkdf2_sha256(text, strlen(text), SYMM__SECRET_SALT, strlen(SYMM__SECRET_SALT),
                            SYMM__SECRET_ITERATIONS, kdf_key, sizeof kdf_key);
        memcpy(kdf_text_hash, h, sizeof h);
        kdf_cached = true;
    }
    memcpy(out, kdf_key, SYMM__SECRET_BYTES);
    pthread_mutex_unlock(&kdf_lock);
}

/* True when only this host can reach addr: a Unix socket, or a TCP host
 * whose every address is loopback. */
static bool addr_is_local(const char *text) {
    symm__addr a;
    if (symm__addr_parse(text, &a) != SYMM_SUCCESS) return false;
    if (a.kind == SYMM__ADDR_UNIX) return true;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(a.host, NULL, &hints, &res) != 0 || !res) return false;
    bool local = true;
    for (struct addrinfo *ai = res; ai && local; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET)
            local = (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
        else if (ai->ai_family == AF_INET6)
            local = IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
        else
            local = false;
    }
    freeaddrinfo(res);
    return local;
}

/* This user's key for local derived secrets: 64 hex digits in a file only
 * the user can read ($XDG_RUNTIME_DIR/.symm-job-key, else
 * $HOME/.symm-job-key), made on first use (link() makes the first writer
 * win when PEs race). The file must be a regular file of this user with no
 * group/other permissions. */
static symm_status user_key(char hex[2 * SYMM__SECRET_BYTES + 1]) {
    const char *dir = symm__boot_env("XDG_RUNTIME_DIR");
    if (!dir) dir = symm__boot_env("HOME");
    if (!dir)
        return symm__err(SYMM_ERR_BOOTSTRAP, "neither XDG_RUNTIME_DIR nor HOME is set");
    char path[1024], tmp[1100];
    if ((size_t)snprintf(path, sizeof path, "%s/.symm-job-key", dir) >= sizeof path)
        return symm__err(SYMM_ERR_BOOTSTRAP, "the key file path under %s is too long", dir);
    for (int attempt = 0; attempt < 50; attempt++) {
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
            struct stat st;
            ssize_t n = -1;
            if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() &&
                (st.st_mode & 077) == 0)
                n = read(fd, hex, 2 * SYMM__SECRET_BYTES);
            close(fd);
            uint8_t raw[SYMM__SECRET_BYTES];
            hex[n > 0 ? n : 0] = '\0';
            if (n == 2 * SYMM__SECRET_BYTES && symm__unhex(raw, sizeof raw, hex)) return SYMM_SUCCESS;
            if (n < 0)
                return symm__err(SYMM_ERR_BOOTSTRAP,
                                 "%s must be a regular file of this user with mode 0600", path);
            /* short: another PE is writing it (link() below publishes it
             * whole, so this is a file someone else made): try again */
        } else if (errno == ENOENT) {
            uint8_t raw[SYMM__SECRET_BYTES];
            char fresh[2 * SYMM__SECRET_BYTES + 2];
            SYMM_TRY(symm__random(raw, sizeof raw));
            symm__hex(fresh, raw, sizeof raw);
            strcat(fresh, "\n");
            snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
            int w = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (w < 0)
                return symm__err_errno(SYMM_ERR_BOOTSTRAP, errno, "creating %s", tmp);
            bool ok = write(w, fresh, strlen(fresh)) == (ssize_t)strlen(fresh);
            close(w);
            if (ok && link(tmp, path) != 0 && errno != EEXIST) ok = false;
            int e = errno;
            unlink(tmp);
            if (!ok) return symm__err_errno(SYMM_ERR_BOOTSTRAP, e, "creating %s", path);
            continue; /* read back whichever file won */
        } else {
            return symm__err_errno(SYMM_ERR_BOOTSTRAP, errno, "opening %s", path);
        }
        sleep_ms(10);
    }
    return symm__err(SYMM_ERR_BOOTSTRAP, "%s stays incomplete", path);
}

/* Rank and size from the first launcher's variables found; who set them. */
static symm_status env_rank_size(symm__env_job *j) {
    static const char *const rank_vars[] = {"SYMM_RANK", "RANK", "OMPI_COMM_WORLD_RANK",
                                            "SLURM_PROCID", NULL};
    static const char *const size_vars[] = {"SYMM_N_PES", "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                                            "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", NULL};
    const char *rank_var, *size_var;
    SYMM_TRY(env_first(rank_vars, 0, SYMM__WIRE_MAX_PES - 1, &j->rank, &rank_var));
    SYMM_TRY(env_first(size_vars, 1, SYMM__WIRE_MAX_PES, &j->n_pes, &size_var));
    if (!rank_var || !size_var)
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "env bootstrap: no launcher variables found (SYMM_RANK/SYMM_N_PES as "
                         "symmrun or any launcher sets them, torchrun's RANK/WORLD_SIZE, Open MPI's "
                         "OMPI_COMM_WORLD_RANK/SIZE or Slurm's SLURM_PROCID/SLURM_NTASKS); %s is "
                         "missing", rank_var ? "the job size" : "the rank");
    if (j->rank >= j->n_pes)
        return symm__err(SYMM_ERR_BOOTSTRAP, "env bootstrap: rank %d (%s) is not below n_pes %d (%s)",
                         j->rank, rank_var, j->n_pes, size_var);
    const char *launcher = symm__boot_env("SYMM_LAUNCHER");
    j->external = launcher && strcmp(launcher, "symmrun") == 0;
    /* SYMM_RANK/SYMM_N_PES are symmrun's only when it says it runs the job
     * (SYMM_LAUNCHER): another launcher or a script may set them too. */
    bool symm_vars = strncmp(rank_var, "SYMM_", 5) == 0;
    j->source = symm_vars && j->external            ? "symmrun"
              : symm_vars                            ? "SYMM_RANK/SYMM_N_PES"
              : strcmp(rank_var, "RANK") == 0        ? "torchrun"
              : strncmp(rank_var, "OMPI_", 5) == 0   ? "Open MPI"
                                                     : "Slurm";
    return SYMM_SUCCESS;
}

/* No address given: an abstract socket named from the launcher's job id,
 * which only PEs of one host reach (refused when the job spans hosts). */
static symm_status env_fallback_address(symm__env_job *j) {
    const char *ompi_job = symm__boot_env("OMPI_MCA_ess_base_jobid"), *slurm_job = symm__boot_env("SLURM_JOB_ID");
    int32_t local_size = 0, nodes = 0;
    bool found = false;
    if (ompi_job && strcmp(j->source, "Open MPI") == 0) {
        SYMM_TRY(env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1, SYMM__WIRE_MAX_PES, &local_size,
                         &found));
        if (found && local_size < j->n_pes)
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "env bootstrap: the Open MPI job spans several hosts "
                             "(OMPI_COMM_WORLD_LOCAL_SIZE=%d < OMPI_COMM_WORLD_SIZE=%d) and no "
                             "address is set: export SYMM_BOOTSTRAP_ADDR=tcp:<rank 0's host>:<port> "
                             "(or MASTER_ADDR and MASTER_PORT)", local_size, j->n_pes);
        snprintf(j->addr, sizeof j->addr, "unix:@symm-ompi-%s", ompi_job);
    } else if (slurm_job) {
        const char *step = symm__boot_env("SLURM_STEP_ID") ? symm__boot_env("SLURM_STEP_ID") : symm__boot_env("SLURM_STEPID");
        SYMM_TRY(env_int("SLURM_STEP_NUM_NODES", 1, SYMM__WIRE_MAX_PES, &nodes, &found));
        if (!found) SYMM_TRY(env_int("SLURM_NNODES", 1, SYMM__WIRE_MAX_PES, &nodes, &found));
        if (found && nodes > 1)
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "env bootstrap: the Slurm step spans %d nodes and no address is "
                             "set: export SYMM_BOOTSTRAP_ADDR=tcp:<rank 0's host>:<port> (or "
                             "MASTER_ADDR and MASTER_PORT)", nodes);
        snprintf(j->addr, sizeof j->addr, "unix:@symm-slurm-%s.%s", slurm_job,
                 step ? step : "0");
    } else if (ompi_job) {
        snprintf(j->addr, sizeof j->addr, "unix:@symm-ompi-%s", ompi_job);
    } else {
        return symm__err(SYMM_ERR_BOOTSTRAP,
                         "env bootstrap (%s, PE %d of %d): no rendezvous address: set "
                         "SYMM_BOOTSTRAP_ADDR=tcp:<rank 0's host>:<port> (or MASTER_ADDR and "
                         "MASTER_PORT)", j->source, j->rank, j->n_pes);
    }
    j->addr_fallback = true;
    return SYMM_SUCCESS;
}

/* Address: SYMM_BOOTSTRAP_ADDR, torchrun's MASTER_ADDR:MASTER_PORT+1, or
 * the fallback above. */
static symm_status env_address(symm__env_job *j) {
    const char *addr = symm__boot_env("SYMM_BOOTSTRAP_ADDR"), *master = symm__boot_env("MASTER_ADDR");
    if (addr) {
        snprintf(j->addr, sizeof j->addr, "%s", addr);
    } else if (master) {
        int32_t port = 0;
        bool found = false;
        SYMM_TRY(env_int("MASTER_PORT", 1, 65534, &port, &found));
        if (!found)
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "env bootstrap: MASTER_ADDR is set but MASTER_PORT is not");
        bool v6 = strchr(master, ':') != NULL;
        snprintf(j->addr, sizeof j->addr, "tcp:%s%s%s:%d", v6 ? "[" : "", master, v6 ? "]" : "",
                 port + 1);
    } else {
        SYMM_TRY(env_fallback_address(j));
    }
    return SYMM_SUCCESS;
}

/* No SYMM_JOB_SECRET on an address only this host reaches: HMAC-SHA-256
 * under this user's key of the job's public identity, so other local users
 * cannot compute it. */
static symm_status env_derived_secret(symm__env_job *j) {
    char key[2 * SYMM__SECRET_BYTES + 1];
    symm_status kst = user_key(key);
    if (kst) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", symm__last_error());
        return symm__err(kst, "env bootstrap (%s): no SYMM_JOB_SECRET, and this user's key "
                         "for a local job secret is not usable (%s); set SYMM_JOB_SECRET",
                         j->source, msg);
    }
    static const char *const ids[] = {"TORCHELASTIC_RUN_ID", "OMPI_MCA_ess_base_jobid",
                                      "SLURM_JOB_ID", "SLURM_STEP_ID", NULL};
    uint8_t raw[SYMM__SECRET_BYTES];
    symm__unhex(raw, sizeof raw, key); /* user_key checked it */
    char text[1024];
    int n = snprintf(text, sizeof text, "symm-derived-v3|%d|%s", j->n_pes, j->addr);
    for (size_t i = 0; ids[i] && n > 0 && (size_t)n < sizeof text; i++) {
        const char *v = symm__boot_env(ids[i]);
        n += snprintf(text + n, sizeof text - (size_t)n, "|%s", v ? v : "");
    }
    symm__hmac_sha256(raw, sizeof raw, text, strlen(text), j->secret);
    symm__wipe(raw, sizeof raw);
    symm__wipe(key, sizeof key);
    return SYMM_SUCCESS;
}

/* Secret: SYMM_JOB_SECRET (64 hex digits, or any text, hashed). Without it,
 * a job whose address only this host can reach derives one; an address
 * other hosts can reach needs it. */
static symm_status env_secret(symm__env_job *j) {
    symm__addr parsed;
    SYMM_TRY(symm__addr_parse(j->addr, &parsed)); /* a bad address says so first */
    const char *secret = symm__boot_env("SYMM_JOB_SECRET");
    if (!secret) {
        if (!addr_is_local(j->addr))
            return symm__err(SYMM_ERR_BOOTSTRAP,
                             "env bootstrap (%s): the rendezvous address %s can be reached from "
                             "other hosts, so the job needs a secret: set SYMM_JOB_SECRET to the "
                             "same value (e.g. 64 hex digits from `openssl rand -hex 32`) in the "
                             "launcher's environment of every PE", j->source, j->addr);
        return env_derived_secret(j);
    }
    size_t len = strlen(secret);
    if (len < SYMM__SECRET_MIN_CHARS)
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "SYMM_JOB_SECRET has %zu characters; it needs at least %u (64 hex "
                         "digits from `openssl rand -hex 32` are best: they are the key "
                         "itself)",
                         len, SYMM__SECRET_MIN_CHARS);
    if (!symm__unhex(j->secret, SYMM__SECRET_BYTES, secret)) key_from_text(j->secret, secret);
    return SYMM_SUCCESS;
}

symm_status symm__boot_env_parse(symm__env_job *j) {
    memset(j, 0, sizeof *j);
    SYMM_TRY(env_rank_size(j));
    if (j->n_pes == 1) return SYMM_SUCCESS; /* a job of one needs no rendezvous */
    SYMM_TRY(env_address(j));
    return env_secret(j);
}

/* What env bootstrap makes of the environment, without joining anything
 * (the fuzz harness fuzz/fuzz_env.c; tests). */
symm_status symm__boot_env_probe(int32_t *rank, int32_t *n_pes, char *addr, size_t addr_cap) {
    symm__env_job j;
    SYMM_TRY(symm__boot_env_parse(&j));
    if (rank) *rank = j.rank;
    if (n_pes) *n_pes = j.n_pes;
    if (addr && addr_cap) snprintf(addr, addr_cap, "%s", j.addr);
    return SYMM_SUCCESS;
}

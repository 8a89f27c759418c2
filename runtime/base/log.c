/* Diagnostic log (log.h): SYMM_DEBUG, SYMM_DEBUG_SUBSYS, SYMM_DEBUG_FILE, and
 * the INFO block a PE writes at the end of symm_init. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

/* All on until the first call parses the environment (then re-checks). */
_Atomic uint32_t symm__log_mask[SYMM_LOG_TRACE + 1] = {SYMM_LOG_ALL, SYMM_LOG_ALL, SYMM_LOG_ALL,
                                                      SYMM_LOG_ALL};
_Thread_local const symm__wait_what *symm__waiting;

static const char *const subsys_names[] = {"init", "bootstrap", "heap",    "rma",      "coll",
                                           "stream", "wait",    "backend", "transport"};
#define N_SUBSYS (sizeof subsys_names / sizeof subsys_names[0])
static const char *const level_names[] = {"NONE", "WARN", "INFO", "TRACE"};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t log_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_host[64] = "?";
static char log_file_pattern[512];
static int log_fd = -1;          /* -1: not opened yet (file) or stderr  */
static atomic_bool log_fd_ready; /* the file was opened, or given up    */
static atomic_int log_pe = -1;

static uint32_t subsys_bit(const char *name, size_t len) {
    if (len == 3 && strncasecmp(name, "all", 3) == 0) return SYMM_LOG_ALL;
    for (size_t i = 0; i < N_SUBSYS; i++)
        if (strlen(subsys_names[i]) == len && strncasecmp(name, subsys_names[i], len) == 0)
            return 1u << i;
    return 0;
}

/* Straight to stderr, one write: for the logger's own complaints. */
static void raw_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void raw_warn(const char *fmt, ...) {
    char line[1600]; /* a path of up to 1 KiB and a sentence */
    int n = snprintf(line, sizeof line, "[symm] %s:%d WARN init: ", log_host, (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line) n += vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line - 1) n = (int)sizeof line - 2;
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, (size_t)n);
    (void)w;
}

int symm__log_parse_level(const char *d, bool warn) {
    int level = SYMM_LOG_WARN;
    if (d && *d) {
        int found = -1;
        for (int i = 0; i <= SYMM_LOG_TRACE; i++)
            if (strcasecmp(d, level_names[i]) == 0) found = i;
        if (found < 0 && (strcmp(d, "0") == 0 || strcasecmp(d, "off") == 0)) found = SYMM_LOG_NONE;
        if (found < 0 && warn)
            raw_warn("SYMM_DEBUG=\"%s\" is not a level; valid: NONE, WARN, INFO, TRACE (using WARN)", d);
        if (found >= 0) level = found;
    }
    return level;
}

uint32_t symm__log_parse_subsys(const char *s, bool warn) {
    uint32_t subsys = SYMM_LOG_ALL;
    if (s && *s) {
        /* "a,b": only those; "^a,^b": all but those. */
        bool only = s[0] != '^';
        subsys = only ? 0 : SYMM_LOG_ALL;
        for (const char *p = s; *p;) {
            size_t len = strcspn(p, ",");
            const char *name = p;
            bool neg = false;
            while (len && isspace((unsigned char)*name)) name++, len--;
            if (len && *name == '^') neg = true, name++, len--;
            while (len && isspace((unsigned char)name[len - 1])) len--;
            uint32_t bit = len ? subsys_bit(name, len) : 0;
            if (len && !bit && warn)
                raw_warn("SYMM_DEBUG_SUBSYS: unknown subsystem \"%.*s\"; valid: init, bootstrap, "
                         "heap, rma, coll, stream, wait, backend, transport, all",
                         (int)len, name);
            if (neg) subsys &= ~bit;
            else subsys |= bit;
            p += strcspn(p, ",");
            if (*p == ',') p++;
        }
    }
    return subsys;
}

static void parse_env(void) {
    if (gethostname(log_host, sizeof log_host) != 0) snprintf(log_host, sizeof log_host, "?");
    log_host[sizeof log_host - 1] = '\0';
    char *dot = strchr(log_host, '.');
    if (dot) *dot = '\0';

    int level = symm__log_parse_level(getenv("SYMM_DEBUG"), true);
    uint32_t subsys = symm__log_parse_subsys(getenv("SYMM_DEBUG_SUBSYS"), true);
    const char *f = getenv("SYMM_DEBUG_FILE");
    if (f && *f) {
        if (strlen(f) >= sizeof log_file_pattern)
            raw_warn("SYMM_DEBUG_FILE is longer than %zu bytes; logging to stderr",
                     sizeof log_file_pattern - 1);
        else
            snprintf(log_file_pattern, sizeof log_file_pattern, "%s", f);
    }
    if (!log_file_pattern[0]) atomic_store(&log_fd_ready, true);
    /* Warnings ignore the subsystem filter: they are always worth a line. */
    atomic_store(&symm__log_mask[SYMM_LOG_NONE], 0);
    atomic_store(&symm__log_mask[SYMM_LOG_WARN], level >= SYMM_LOG_WARN ? SYMM_LOG_ALL : 0);
    atomic_store(&symm__log_mask[SYMM_LOG_INFO], level >= SYMM_LOG_INFO ? subsys : 0);
    atomic_store(&symm__log_mask[SYMM_LOG_TRACE], level >= SYMM_LOG_TRACE ? subsys : 0);
}

void symm__log_setup(void) {
    pthread_once(&log_once, parse_env);
}

void symm__log_set_pe(int32_t pe) {
    atomic_store(&log_pe, pe);
}

/* The PE for %r before init knows it: the launcher's variables. */
static const char *env_rank(void) {
    static const char *const vars[] = {"SYMM_RANK", "RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return v;
    }
    return NULL;
}

/* Open the log file without following anything another user may have
 * planted where it should be (a shared /tmp): the last component must not be
 * a symbolic link (O_NOFOLLOW), nor a FIFO or device (O_NONBLOCK so a FIFO
 * cannot block us; then S_ISREG), nor a file of someone else or a hard link
 * to one (fstat after open: owner and link count). Anything refused is one
 * warning saying why, and the log goes to stderr. Made with mode 0600. */
static int open_log_file(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY |
                            O_NONBLOCK, 0600);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            raw_warn("SYMM_DEBUG_FILE: refusing %s: it is a symbolic link (anyone who can write "
                     "its folder could point it at another file); logging to stderr", path);
        else if (e == ENXIO)
            raw_warn("SYMM_DEBUG_FILE: refusing %s: it is a FIFO or socket, not a regular file; "
                     "logging to stderr", path);
        else
            raw_warn("SYMM_DEBUG_FILE: cannot open %s (%s); logging to stderr", path, strerror(e));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    char tmp[128];
    if (fstat(fd, &st) != 0) {
        snprintf(tmp, sizeof tmp, "fstat failed (%s)", strerror(errno));
        why = tmp;
    } else if (!S_ISREG(st.st_mode)) {
        why = "it is not a regular file";
    } else if (st.st_uid != geteuid()) {
        snprintf(tmp, sizeof tmp, "it belongs to uid %u, not to this user (uid %u)",
                 (unsigned)st.st_uid, (unsigned)geteuid());
        why = tmp;
    } else if (st.st_nlink != 1) {
        snprintf(tmp, sizeof tmp, "it has %lu hard links (one may be another user's)",
                 (unsigned long)st.st_nlink);
        why = tmp;
    }
    if (!why && fcntl(fd, F_SETFL, O_WRONLY | O_APPEND) != 0) {
        snprintf(tmp, sizeof tmp, "fcntl failed (%s)", strerror(errno));
        why = tmp;
    }
    if (why) {
        close(fd);
        raw_warn("SYMM_DEBUG_FILE: refusing %s: %s; logging to stderr", path, why);
        return -1;
    }
    return fd;
}

/* Open SYMM_DEBUG_FILE (expanded) once; on failure one warning, then stderr. */
static int log_out(void) {
    if (atomic_load_explicit(&log_fd_ready, memory_order_acquire))
        return log_fd >= 0 ? log_fd : STDERR_FILENO;
    pthread_mutex_lock(&log_fd_lock);
    if (!atomic_load(&log_fd_ready)) {
        char path[1024];
        size_t n = 0;
        bool ok = true;
        for (const char *p = log_file_pattern; *p && ok; p++) {
            char tmp[64];
            const char *add = tmp;
            if (*p != '%') {
                tmp[0] = *p;
                tmp[1] = '\0';
            } else {
                p++;
                int pe = atomic_load(&log_pe);
                const char *r = env_rank();
                switch (*p) {
                case 'h': add = log_host; break;
                case 'p': snprintf(tmp, sizeof tmp, "%d", (int)getpid()); break;
                case 'r':
                    if (pe >= 0) snprintf(tmp, sizeof tmp, "%d", pe);
                    else snprintf(tmp, sizeof tmp, "%s", r ? r : "x");
                    break;
                case '%': add = "%"; break;
                default: ok = false; add = ""; break;
                }
            }
            size_t len = strlen(add);
            if (n + len >= sizeof path) ok = false;
            else memcpy(path + n, add, len), n += len;
        }
        path[n] = '\0';
        if (!ok) {
            raw_warn("SYMM_DEBUG_FILE=\"%s\": bad pattern (%%h host, %%p pid, %%r PE, %%%% a %%) "
                     "or too long; logging to stderr", log_file_pattern);
        } else {
            log_fd = open_log_file(path);
        }
        atomic_store_explicit(&log_fd_ready, true, memory_order_release);
    }
    pthread_mutex_unlock(&log_fd_lock);
    return log_fd >= 0 ? log_fd : STDERR_FILENO;
}

void symm__log(int level, uint32_t subsys, const char *fmt, ...) {
    int saved_errno = errno;
    symm__log_setup();
    if (level < SYMM_LOG_WARN || level > SYMM_LOG_TRACE || !symm__log_on(level, subsys)) return;
    const char *name = "?";
    for (size_t i = 0; i < N_SUBSYS; i++)
        if (subsys & (1u << i)) { name = subsys_names[i]; break; }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    char pe[16];
    int p = atomic_load_explicit(&log_pe, memory_order_relaxed);
    if (p >= 0) snprintf(pe, sizeof pe, "%d", p);
    else snprintf(pe, sizeof pe, "-");

    char line[1024];
    int n = snprintf(line, sizeof line, "[symm] %s:%d PE %s tid %ld %lld.%06ld %s %s: ", log_host,
                     (int)getpid(), pe, (long)syscall(SYS_gettid), (long long)ts.tv_sec,
                     ts.tv_nsec / 1000, level_names[level], name);
    if (n < 0) goto out;
    if ((size_t)n < sizeof line) {
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
        va_end(ap);
        if (m > 0) n += m;
    }
    if ((size_t)n >= sizeof line - 1) { /* truncated: say so */
        n = (int)sizeof line - 5;
        memcpy(line + n, "...", 3);
        n += 3;
    }
    line[n++] = '\n';
    int fd = log_out();
    for (int tries = 0; tries < 2; tries++) {
        ssize_t w = write(fd, line, (size_t)n);
        if (w >= 0 || errno != EINTR) break;
    }
out:
    errno = saved_errno;
}

void symm__log_transport(void *core, int32_t tp_level, const char *msg) {
    (void)core;
    int level = tp_level <= 0 ? SYMM_LOG_WARN : tp_level == 1 ? SYMM_LOG_INFO : SYMM_LOG_TRACE;
    SYMM_LOG(level, SYMM_LOG_TRANSPORT, "%s", msg ? msg : "(null)");
}

void symm__log_long_wait(uint64_t waited_ns) {
    const symm__wait_what *w = symm__waiting;
    char what[256] = "an unnamed condition";
    if (w && w->describe) w->describe(w->arg, what, sizeof what);
    SYMM_INFO(SYMM_LOG_WAIT, "still waiting after %.1f s for %s", (double)waited_ns / 1e9, what);
}

const char *symm__log_host(void) {
    pthread_once(&log_once, parse_env);
    return log_host;
}

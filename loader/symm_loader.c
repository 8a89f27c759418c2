/*
 * libsymm.so.1 — the loader.
 *
 * Exports every public function of <symm/symm.h>. Some are answered here
 * (symm_status_string, symm_last_error, the symm_loader_* functions and the
 * pure-data entries symm_dtype_size, symm_init_attr_init,
 * symm_team_config_init); every other one is a trampoline through the
 * dispatch table that the runtime
 * (libsymm_runtime.so.1) hands over from symm_runtime_negotiate. The runtime
 * is opened lazily, once, on the first call that needs it.
 *
 * Depends on libc, libdl and pthread only; no other file of the project is
 * needed besides symm_dispatch.h and the public header, so bindings may
 * compile this file into their own library (cgo, Zig).
 *
 * Search order (docs/ABI.md):
 *   1. $SYMM_RUNTIME, when set and not empty: that file and nothing else;
 *   1b. else the path given to symm_loader_set_runtime: that file only;
 *   2. the loader's own directory + "/libsymm_runtime.so.1" (the directory
 *      dladdr reports (for a loader compiled into a program started by a bare
 *      name through $PATH, /proc/self/exe), then, if it differs, the
 *      directory of its real path);
 *   3. dlopen("libsymm_runtime.so.1"): the dynamic linker's search path.
 * A candidate that cannot be opened, or that lacks symm_runtime_negotiate or
 * answers its negotiation with another error, is skipped; a runtime of
 * another ABI major stops the search with SYMM_ERR_ABI_MISMATCH.
 *
 * Threads: every function may be called from any thread at any time. The load
 * runs once under pthread_once; concurrent first callers wait for it and all
 * see the same outcome. Messages are thread-local. The runtime is never
 * unloaded. Nothing here aborts or exits.
 */
/* dladdr and Dl_info are GNU extensions of <dlfcn.h>; realpath is POSIX. This
 * file must compile alone (bindings vendor it): cc -std=c11 -c symm_loader.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symm_dispatch.h"

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define SYMM__TLS _Thread_local
#else
#define SYMM__TLS __thread
#endif

/* ------------------------------------------------------------------------ */
/* State                                                                     */
/* ------------------------------------------------------------------------ */

#define SYMM__LOAD_MSG_MAX 8192 /* enough for three candidates and dlerror()s */
#define SYMM__TL_MSG_MAX 256    /* entry name + version                       */

/* Written once inside pthread_once, read-only afterwards. */
static pthread_once_t symm__load_once = PTHREAD_ONCE_INIT;
static symm_status symm__load_status = SYMM_ERR_INTERNAL;
static const symm_dispatch *symm__table;
static uint32_t symm__runtime_version;
static char symm__load_msg[SYMM__LOAD_MSG_MAX];
static char symm__runtime_path[PATH_MAX]; /* the runtime opened            */
static atomic_int symm__loaded_ok;        /* set (release) after the above */

/* symm_loader_set_runtime's path; guarded by symm__cfg_lock until the load
 * starts, which freezes it. */
static pthread_mutex_t symm__cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static int symm__load_started;
static char symm__set_path[PATH_MAX];

/* Per thread: whether the last error came from the loader, and its text
 * (either symm__load_msg or symm__tl_buf). */
static SYMM__TLS int symm__tl_flag;
static SYMM__TLS const char *symm__tl_msg;
static SYMM__TLS char symm__tl_buf[SYMM__TL_MSG_MAX];

/* The trampolines' fast path (see "Trampolines"): every entry, the runtime's
 * or a loader stub where the runtime has none, filled once by the load and
 * published by symm__fast (release); symm__flagged counts the live threads
 * whose flag is set (only they need the slow path, which clears it). */
static symm_dispatch symm__entries;
static atomic_int symm__fast;
static atomic_uint symm__flagged;
static pthread_once_t symm__key_once = PTHREAD_ONCE_INIT;
static pthread_key_t symm__flag_key;
static int symm__flag_key_ok;

/* A thread that ends with its flag set no longer needs the slow path. */
static void symm__flag_dtor(void *v) {
    if (v) atomic_fetch_sub_explicit(&symm__flagged, 1, memory_order_relaxed);
}

static void symm__key_init(void) {
    symm__flag_key_ok = pthread_key_create(&symm__flag_key, symm__flag_dtor) == 0;
}

static void symm__set_error(const char *msg) {
    symm__tl_msg = msg;
    if (symm__tl_flag) return;
    symm__tl_flag = 1;
    atomic_fetch_add_explicit(&symm__flagged, 1, memory_order_relaxed);
    pthread_once(&symm__key_once, symm__key_init);
    if (symm__flag_key_ok) pthread_setspecific(symm__flag_key, (void *)1);
}

/* The next runtime call's message is the runtime's. */
static void symm__flag_clear(void) {
    if (!symm__tl_flag) return;
    symm__tl_flag = 0;
    if (symm__flag_key_ok) pthread_setspecific(symm__flag_key, NULL);
    atomic_fetch_sub_explicit(&symm__flagged, 1, memory_order_relaxed);
}

static void symm__fill_entries(const symm_dispatch *d);

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */
/* ------------------------------------------------------------------------ */

/* A bounded string builder over symm__load_msg: appends never overflow; a
 * message that does not fit ends in "...". */
typedef struct symm__msg {
    char *buf;
    size_t cap, len;
} symm__msg;

__attribute__((format(printf, 2, 3))) static void symm__msg_add(symm__msg *m, const char *fmt,
                                                                ...) {
    if (m->len + 1 >= m->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= m->cap - m->len) {
        m->len = m->cap - 1;
        memcpy(m->buf + m->cap - 4, "...", 4);
    } else {
        m->len += (size_t)n;
    }
}

static void symm__version_parts(uint32_t v, unsigned *major, unsigned *minor, unsigned *patch) {
    *major = v / 1000000u;
    *minor = v / 1000u % 1000u;
    *patch = v % 1000u;
}

/* Outcome of one candidate. */
#define SYMM__TRY_NEXT 1 /* unusable: go on with the next candidate */
#define SYMM__TRY_STOP 2 /* decisive: symm__load_status is set      */

static int symm__try(const char *path, const char *label, symm__msg *tried) {
    /* Clear a stale dlerror() so the text below belongs to this call. */
    (void)dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        symm__msg_add(tried, "\n  %s%s: %s", path, label, e ? e : "dlopen failed");
        return SYMM__TRY_NEXT;
    }
    symm_runtime_negotiate_fn fn;
    void *sym = dlsym(h, SYMM_RUNTIME_NEGOTIATE_SYMBOL);
    memcpy(&fn, &sym, sizeof(fn)); /* object pointer -> function pointer */
    if (!fn) {
        const char *e = dlerror();
        symm__msg_add(tried, "\n  %s%s: not a symm runtime (%s)", path, label,
                      e ? e : "no " SYMM_RUNTIME_NEGOTIATE_SYMBOL);
        dlclose(h);
        return SYMM__TRY_NEXT;
    }

    symm_runtime_negotiation n;
    memset(&n, 0, sizeof(n));
    n.struct_size = (uint32_t)sizeof(n);
    n.loader_abi_major = SYMM_ABI_MAJOR;
    n.loader_abi_minor = SYMM_ABI_MINOR;
    symm_status st = fn(&n);

    unsigned vmaj, vmin, vpat;
    symm__version_parts(n.runtime_version, &vmaj, &vmin, &vpat);
    if (st == SYMM_ERR_ABI_MISMATCH ||
        (st == SYMM_SUCCESS && n.runtime_abi_major != SYMM_ABI_MAJOR)) {
        symm__msg m = {symm__load_msg, sizeof(symm__load_msg), 0};
        symm__msg_add(&m,
                      "symm: the runtime %s (version %u.%u.%u) implements ABI %u.%u; this "
                      "loader (version %d.%d.%d, ABI %d.%d) needs ABI major %d",
                      path, vmaj, vmin, vpat, (unsigned)n.runtime_abi_major,
                      (unsigned)n.runtime_abi_minor, SYMM_VERSION_MAJOR, SYMM_VERSION_MINOR,
                      SYMM_VERSION_PATCH, SYMM_ABI_MAJOR, SYMM_ABI_MINOR, SYMM_ABI_MAJOR);
        symm__load_status = SYMM_ERR_ABI_MISMATCH;
        dlclose(h);
        return SYMM__TRY_STOP;
    }
    const symm_dispatch *d = n.dispatch;
    const uint64_t header = offsetof(symm_dispatch, last_error) + sizeof(d->last_error);
    if (st != SYMM_SUCCESS || !d || d->struct_size < header) {
        if (st != SYMM_SUCCESS)
            symm__msg_add(tried, "\n  %s%s: negotiation failed with %s", path, label,
                          symm__status_name(st));
        else
            symm__msg_add(tried, "\n  %s%s: negotiation gave no usable dispatch table", path,
                          label);
        dlclose(h);
        return SYMM__TRY_NEXT;
    }
    symm__table = d;
    symm__runtime_version = n.runtime_version;
    symm__load_status = SYMM_SUCCESS;
    /* The file the dynamic linker really opened (a bare soname was searched). */
    Dl_info info;
    memset(&info, 0, sizeof(info));
    const char *where = path;
    if (dladdr(sym, &info) && info.dli_fname && info.dli_fname[0]) where = info.dli_fname;
    snprintf(symm__runtime_path, sizeof(symm__runtime_path), "%s", where);
    symm__fill_entries(d);
    atomic_store_explicit(&symm__loaded_ok, 1, memory_order_release);
    atomic_store_explicit(&symm__fast, 1, memory_order_release);
    return SYMM__TRY_STOP; /* h stays open for the life of the process */
}

/* The directory part of path into dir; 0 when path has none or it is too long. */
static int symm__dirname(const char *path, char *dir, size_t cap) {
    const char *slash = strrchr(path, '/');
    if (!slash) return 0;
    size_t len = (size_t)(slash - path);
    if (len == 0) len = 1; /* "/libsymm.so.1" */
    if (len + 1 > cap) return 0;
    memcpy(dir, path, len);
    dir[len] = '\0';
    return 1;
}

/* Runs once, under pthread_once: its buffers can be static, which keeps the
 * stack of whichever thread comes first small. */
static void symm__load(void) {
    static char tried_buf[SYMM__LOAD_MSG_MAX];
    static char dirs[2][PATH_MAX];
    static char real[PATH_MAX];
    static char path[PATH_MAX + sizeof(SYMM_RUNTIME_SONAME) + 1];
    symm__msg tried = {tried_buf, sizeof(tried_buf), 0};
    tried_buf[0] = '\0';

    static char chosen[PATH_MAX];
    pthread_mutex_lock(&symm__cfg_lock);
    symm__load_started = 1;
    memcpy(chosen, symm__set_path, sizeof(chosen));
    pthread_mutex_unlock(&symm__cfg_lock);

    const char *env = getenv("SYMM_RUNTIME");
    if (env && env[0]) {
        /* An explicit choice is final: no fallback that would hide its failure. */
        if (symm__try(env, " (SYMM_RUNTIME)", &tried) == SYMM__TRY_STOP) return;
    } else if (chosen[0]) {
        if (symm__try(chosen, " (symm_loader_set_runtime)", &tried) == SYMM__TRY_STOP) return;
    } else {
        /* The loader's own directory: as the dynamic linker names it, then the
         * directory of its real path (a symlinked libsymm.so.1). */
        Dl_info info;
        int ndirs = 0;
        memset(&info, 0, sizeof(info));
        const char *self = NULL;
        if (dladdr((const void *)&symm__load_once, &info) && info.dli_fname) self = info.dli_fname;
        /* Compiled into a program (bindings do that), dladdr names the main
         * program as it was started: a bare name when found through $PATH. */
        char exe[PATH_MAX];
        if (self && !strchr(self, '/')) {
            ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
            self = k > 0 ? (exe[k] = '\0', exe) : NULL;
        }
        if (self && symm__dirname(self, dirs[0], sizeof(dirs[0]))) {
            ndirs = 1;
            if (realpath(self, real) &&
                symm__dirname(real, dirs[1], sizeof(dirs[1])) && strcmp(dirs[0], dirs[1]) != 0)
                ndirs = 2;
        }
        if (ndirs == 0)
            symm__msg_add(&tried, "\n  (the loader's own directory is unknown to dladdr)");
        for (int i = 0; i < ndirs; i++) {
            int n = snprintf(path, sizeof(path), "%s/%s", dirs[i], SYMM_RUNTIME_SONAME);
            if (n < 0 || (size_t)n >= sizeof(path)) continue; /* cannot happen: dirs[i] < PATH_MAX */
            if (symm__try(path, " (loader's directory)", &tried) == SYMM__TRY_STOP) return;
        }
        if (symm__try(SYMM_RUNTIME_SONAME, " (system search path)", &tried) == SYMM__TRY_STOP)
            return;
    }

    symm__msg m = {symm__load_msg, sizeof(symm__load_msg), 0};
    symm__msg_add(&m, "symm: no usable runtime (%s) was found; tried:%s", SYMM_RUNTIME_SONAME,
                  tried_buf);
    symm__load_status = SYMM_ERR_LIBRARY_NOT_FOUND;
}

/* The table, or the load's status with the thread's error set. */
static symm_status symm__get(const symm_dispatch **d) {
    pthread_once(&symm__load_once, symm__load);
    if (symm__load_status != SYMM_SUCCESS) {
        symm__set_error(symm__load_msg);
        return symm__load_status;
    }
    *d = symm__table;
    return SYMM_SUCCESS;
}

/* Called for an entry past the runtime's table or left NULL by it. */
static symm_status symm__missing(const char *name) {
    unsigned vmaj, vmin, vpat;
    symm__version_parts(symm__runtime_version, &vmaj, &vmin, &vpat);
    snprintf(symm__tl_buf, sizeof(symm__tl_buf),
             "%s: the loaded runtime (version %u.%u.%u) does not provide this entry", name, vmaj,
             vmin, vpat);
    symm__set_error(symm__tl_buf);
    return SYMM_ERR_NOT_SUPPORTED;
}

/* Whether the table the runtime gave holds entry `field`, non-NULL. The size
 * is checked first: a shorter table may end right before the field. */
#define SYMM__HAS(d, field)                                                    \
    ((d)->struct_size >= offsetof(symm_dispatch, field) + sizeof((d)->field) && \
     (d)->field != NULL)

/* ------------------------------------------------------------------------ */
/* Answered by the loader                                                    */
/* ------------------------------------------------------------------------ */

SYMM_API const char *symm_status_string(symm_status status) { return symm__status_name(status); }

SYMM_API uint32_t symm_dtype_size(uint32_t dtype) { return symm__dtype_size(dtype); }

SYMM_API symm_status symm_loader_probe(void) {
    const symm_dispatch *d = NULL;
    symm_status st = symm__get(&d);
    if (st == SYMM_SUCCESS) symm__set_error(""); /* nothing failed */
    return st;
}

SYMM_API symm_status symm_loader_set_runtime(const char *path) {
    const char *p = path ? path : "";
    size_t len = strlen(p);
    if (len >= sizeof(symm__set_path)) {
        snprintf(symm__tl_buf, sizeof(symm__tl_buf),
                 "symm_loader_set_runtime: the path is %zu bytes long (at most %zu)", len,
                 sizeof(symm__set_path) - 1);
        symm__set_error(symm__tl_buf);
        return SYMM_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&symm__cfg_lock);
    int started = symm__load_started;
    if (!started) memcpy(symm__set_path, p, len + 1);
    pthread_mutex_unlock(&symm__cfg_lock);
    if (started) {
        symm__set_error("symm_loader_set_runtime: the runtime was already looked for (a call "
                        "that needs it, or symm_loader_probe, came first); set the path before");
        return SYMM_ERR_INVALID_STATE;
    }
    symm__set_error("");
    return SYMM_SUCCESS;
}

SYMM_API symm_status symm_loader_get_version(uint32_t *loader_version) {
    if (!loader_version) {
        symm__set_error("symm_loader_get_version: loader_version is NULL");
        return SYMM_ERR_INVALID_ARG;
    }
    *loader_version = SYMM_VERSION;
    symm__set_error("");
    return SYMM_SUCCESS;
}

SYMM_API const char *symm_loader_runtime_path(void) {
    if (!atomic_load_explicit(&symm__loaded_ok, memory_order_acquire)) return "";
    return symm__runtime_path;
}

SYMM_API symm_status symm_init_attr_init(symm_init_attr *attr, uint32_t struct_size) {
    const char *why = symm__fill_init_attr(attr, struct_size);
    if (why) {
        snprintf(symm__tl_buf, sizeof(symm__tl_buf), "symm_init_attr_init: %s (struct_size %u)",
                 why, (unsigned)struct_size);
        symm__set_error(symm__tl_buf);
        return SYMM_ERR_INVALID_ARG;
    }
    symm__set_error("");
    return SYMM_SUCCESS;
}

SYMM_API symm_status symm_team_config_init(symm_team_config *config, uint32_t struct_size) {
    const char *why = symm__fill_team_config(config, struct_size);
    if (why) {
        snprintf(symm__tl_buf, sizeof(symm__tl_buf), "symm_team_config_init: %s (struct_size %u)",
                 why, (unsigned)struct_size);
        symm__set_error(symm__tl_buf);
        return SYMM_ERR_INVALID_ARG;
    }
    symm__set_error("");
    return SYMM_SUCCESS;
}

SYMM_API const char *symm_last_error(void) {
    if (symm__tl_flag) return symm__tl_msg ? symm__tl_msg : "";
    /* Never starts a load. Before a load no call was answered by the runtime,
     * so it has no message for this thread. */
    if (!atomic_load_explicit(&symm__loaded_ok, memory_order_acquire)) return "";
    const symm_dispatch *d = symm__table;
    if (SYMM__HAS(d, last_error)) {
        const char *m = d->last_error();
        return m ? m : "";
    }
    return "";
}

/* ------------------------------------------------------------------------ */
/* Trampolines                                                               */
/* ------------------------------------------------------------------------ */

/* Where the runtime's table lacks an entry (an older runtime): the loader
 * answers NOT_SUPPORTED (or the entry's failure value) with a message. */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#define SYMM__ABSENT(ret, name, params, args, fail)                            \
    static ret symm__absent_##name params {                                    \
        symm_status _st = symm__missing(#name);                                \
        (void)_st;                                                             \
        return (fail);                                                         \
    }
SYMM_DISPATCH_ENTRIES(SYMM__ABSENT)
#undef SYMM__ABSENT
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

/* Runs once, inside the load, before symm__fast is set. */
static void symm__fill_entries(const symm_dispatch *d) {
#define SYMM__FILL(ret, name, params, args, fail)                              \
    symm__entries.name = SYMM__HAS(d, name) ? d->name : symm__absent_##name;
    SYMM_DISPATCH_ENTRIES(SYMM__FILL)
#undef SYMM__FILL
}

/* Once the runtime is loaded and no live thread's last message is the
 * loader's, a trampoline is two loads of read-mostly words, the entry's load
 * and an indirect jump: no pthread_once, no thread-local access. Otherwise
 * (the first calls, a failed load, a thread whose flag is set) the slow path
 * loads or reports, and clears this thread's flag so that symm_last_error
 * reads the runtime's message. The count is read relaxed: only this thread's
 * own increment matters to it, and that one it sees in program order. */
#if defined(__GNUC__)
#define SYMM__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define SYMM__LIKELY(x) (x)
#endif
#define SYMM__TRAMPOLINE(ret, name, params, args, fail)                        \
    static ret symm__slow_##name params {                                      \
        const symm_dispatch *d_ = NULL;                                        \
        symm_status _st = symm__get(&d_);                                      \
        if (_st != SYMM_SUCCESS) return (fail);                                \
        symm__flag_clear();                                                    \
        return symm__entries.name args;                                        \
    }                                                                          \
    SYMM_API ret name params {                                                 \
        if (SYMM__LIKELY(atomic_load_explicit(&symm__fast, memory_order_acquire) && \
                         !atomic_load_explicit(&symm__flagged, memory_order_relaxed))) \
            return symm__entries.name args;                                    \
        return symm__slow_##name args;                                         \
    }
SYMM_DISPATCH_ENTRIES(SYMM__TRAMPOLINE)
#undef SYMM__TRAMPOLINE

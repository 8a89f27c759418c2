/*
 * Diagnostic log of the runtime (log.c): SYMM_DEBUG=NONE|WARN|INFO|TRACE
 * (default WARN), SYMM_DEBUG_SUBSYS=init,heap,... (INFO and TRACE lines only;
 * "^name" removes one), SYMM_DEBUG_FILE=pattern (%h host, %p pid, %r PE, %%).
 *
 * The check is one relaxed load and a branch (symm__log_mask[level] &
 * subsys): a disabled line formats nothing and calls nothing. The masks start
 * all-on so the first call of a process parses the environment (once,
 * pthread_once) and re-checks. Building with -DSYMM_NO_LOG compiles every
 * line out (the arguments are still type-checked).
 *
 * The log file is opened once, with O_NOFOLLOW, and kept only when it is a
 * regular file of this user with one link (else a warning and stderr).
 *
 * Lines: "[symm] host:pid PE n tid t mono-seconds LEVEL subsys: message",
 * one write(2) each, so lines from threads and processes never interleave.
 * Never called from a signal handler (the runtime installs none); a logging
 * failure is never an error of the caller.
 */
#ifndef SYMM_RUNTIME_LOG_H
#define SYMM_RUNTIME_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SYMM_LOG_NONE 0
#define SYMM_LOG_WARN 1
#define SYMM_LOG_INFO 2
#define SYMM_LOG_TRACE 3

/* Subsystems (bits). Keep symm__log_subsys_names in log.c in this order. */
#define SYMM_LOG_INIT (1u << 0)      /* init/finalize: what the job chose    */
#define SYMM_LOG_BOOTSTRAP (1u << 1) /* rendezvous, launchers, peers         */
#define SYMM_LOG_HEAP (1u << 2)      /* reservation, growth, registration    */
#define SYMM_LOG_RMA (1u << 3)       /* put/get/atomics/signals              */
#define SYMM_LOG_COLL (1u << 4)      /* collectives: algorithm per call      */
#define SYMM_LOG_STREAM (1u << 5)    /* stream-ordered operations            */
#define SYMM_LOG_WAIT (1u << 6)      /* long waits: what they wait for       */
#define SYMM_LOG_BACKEND (1u << 7)   /* backend internals (cuda)             */
#define SYMM_LOG_TRANSPORT (1u << 8) /* transports to other hosts            */
#define SYMM_LOG_ALL ((1u << 9) - 1u)

extern _Atomic uint32_t symm__log_mask[SYMM_LOG_TRACE + 1];

static inline bool symm__log_on(int level, uint32_t subsys) {
    return (atomic_load_explicit(&symm__log_mask[level], memory_order_relaxed) & subsys) != 0;
}

void symm__log(int level, uint32_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef SYMM_NO_LOG
#define SYMM_LOG(level, subsys, ...)                                           \
    do {                                                                       \
        if (0) symm__log((level), (subsys), __VA_ARGS__);                      \
    } while (0)
#else
#define SYMM_LOG(level, subsys, ...)                                           \
    do {                                                                       \
        if (__builtin_expect(symm__log_on((level), (subsys)), 0))              \
            symm__log((level), (subsys), __VA_ARGS__);                         \
    } while (0)
#endif
#define SYMM_WARN(subsys, ...) SYMM_LOG(SYMM_LOG_WARN, (subsys), __VA_ARGS__)
#define SYMM_INFO(subsys, ...) SYMM_LOG(SYMM_LOG_INFO, (subsys), __VA_ARGS__)
#define SYMM_TRACE(subsys, ...) SYMM_LOG(SYMM_LOG_TRACE, (subsys), __VA_ARGS__)

/* Parse SYMM_DEBUG* now (idempotent, thread-safe; symm__log does it lazily). */
void symm__log_setup(void);
/* SYMM_DEBUG and SYMM_DEBUG_SUBSYS as parse_env reads them (warn: one line
 * on stderr about a bad value): a level (WARN for junk) and a subsystem mask. */
int symm__log_parse_level(const char *text, bool warn);
uint32_t symm__log_parse_subsys(const char *text, bool warn);
/* This host's name as log lines carry it. */
const char *symm__log_host(void);
/* The PE lines carry from now on (-1: unknown). */
void symm__log_set_pe(int32_t pe);
/* The transport core service: symm_tp_core.log (runtime/transports/
 * transport.h) points here. level 0 warn, 1 info, 2 trace; subsystem
 * transport; core is unused (the log is process-wide). */
void symm__log_transport(void *core, int32_t tp_level, const char *msg);

/* A long wait names what it waits for: the caller of symm__wait points this
 * at a describer before waiting (cleared by symm__wait); it runs only when a
 * wait has lasted a second and the wait subsystem logs. */
typedef struct symm__wait_what {
    void (*describe)(const void *arg, char *buf, unsigned long cap);
    const void *arg;
} symm__wait_what;
extern _Thread_local const symm__wait_what *symm__waiting;
/* Called by symm__wait at 1 s and then every 10 s of one wait. */
void symm__log_long_wait(uint64_t waited_ns);

#endif /* SYMM_RUNTIME_LOG_H */

/*
 * Errors: a status code plus a thread-local message (symm_last_error). The
 * lowest layer of the runtime with base/log.h: every other layer (bootstrap,
 * core, backends, the launcher) records its failures here.
 */
#ifndef SYMM_BASE_ERROR_H
#define SYMM_BASE_ERROR_H

#include <symm/symm.h>

/* Record status + formatted message in the thread-local last error; returns
 * status so callers can `return symm__err(...)`. */
symm_status symm__err(symm_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Like symm__err, appending ": strerror(errno_value)". */
symm_status symm__err_errno(symm_status status, int errno_value, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Re-record the last error as "fn: <message>"; returns status. */
symm_status symm__err_prefix(const char *fn, symm_status status);
/* Clear the thread-local message (called at the start of each public entry). */
void symm__err_clear(void);
const char *symm__last_error(void);

/* One-line argument check: `SYMM_CHECK(cond, SYMM_ERR_INVALID_ARG, "fmt", ...)` */
#define SYMM_CHECK(cond, status, ...)                                          \
    do {                                                                       \
        if (!(cond)) return symm__err((status), __VA_ARGS__);                  \
    } while (0)
#define SYMM_TRY(expr)                                                         \
    do {                                                                       \
        symm_status symm__st_ = (expr);                                        \
        if (symm__st_ != SYMM_SUCCESS) return symm__st_;                       \
    } while (0)
/* SYMM_TRY that prefixes the failure's message with fn. */
#define SYMM_TRY_IN(fn, expr)                                                  \
    do {                                                                       \
        symm_status symm__st_ = (expr);                                        \
        if (symm__st_ != SYMM_SUCCESS) return symm__err_prefix((fn), symm__st_); \
    } while (0)

#endif /* SYMM_BASE_ERROR_H */

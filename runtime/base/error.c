/* Thread-local last-error message. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

#define SYMM__ERR_MAX 1024
static _Thread_local char err_msg[SYMM__ERR_MAX];

/* Formats through a scratch buffer: callers may pass symm__last_error() as
 * an argument (to prefix the current message). */
static void err_vset(const char *fmt, va_list ap) {
    char tmp[SYMM__ERR_MAX];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    memcpy(err_msg, tmp, sizeof tmp);
}

symm_status symm__err(symm_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_vset(fmt, ap);
    va_end(ap);
    return status;
}

symm_status symm__err_errno(symm_status status, int errno_value, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    err_vset(fmt, ap);
    va_end(ap);
    size_t len = strlen(err_msg);
    char buf[128];
    /* GNU strerror_r returns the message pointer. */
    const char *text = strerror_r(errno_value, buf, sizeof buf);
    snprintf(err_msg + len, sizeof err_msg - len, ": %s (errno %d)", text, errno_value);
    return status;
}

symm_status symm__err_prefix(const char *fn, symm_status status) {
    return symm__err(status, "%s: %s", fn, err_msg);
}

void symm__err_clear(void) {
    err_msg[0] = '\0';
}

const char *symm__last_error(void) {
    return err_msg;
}

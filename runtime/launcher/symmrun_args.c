/* symmrun's command line (see symmrun_args.h and the usage in symmrun.c). */
#include "symmrun_args.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int usage(char *err, size_t cap, const char *fmt, ...) {
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return SYMMRUN_ARGS_USAGE;
}

bool symmrun_parse_grace(const char *val, double *out) {
    if (strcmp(val, "inf") == 0 || strcmp(val, "infinity") == 0) {
        *out = INFINITY;
        return true;
    }
    char *end = NULL;
    errno = 0;
    double g = strtod(val, &end);
    if (errno || end == val || *end || !(g >= 0) || !isfinite(g) || g > 1e9) return false;
    *out = g;
    return true;
}

unsigned symmrun_parse_timeout_ms(const char *text, unsigned dflt) {
    if (!text || !isdigit((unsigned char)text[0])) return dflt;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v == 0 || v > UINT32_MAX) return dflt;
    return (unsigned)v;
}

int symmrun_parse_args(int argc, char *const *argv, const char *grace_env, symmrun_opts *o,
                       char *err, size_t err_cap) {
    memset(o, 0, sizeof *o);
    o->grace_s = SYMMRUN_DEFAULT_GRACE_S;
    if (err && err_cap) err[0] = '\0';
    if (grace_env && *grace_env && !symmrun_parse_grace(grace_env, &o->grace_s))
        return usage(err, err_cap, "SYMMRUN_GRACE wants seconds (>= 0) or inf, not \"%s\"",
                     grace_env);
    int i = 1;
    while (i < argc) {
        const char *a = argv[i];
        if (!a) return usage(err, err_cap, "argument %d is NULL", i);
        const char *val = NULL;
        bool is_n = false, is_t = false, is_g = false, is_h = false;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return SYMMRUN_ARGS_HELP;
        if (strcmp(a, "-n") == 0 || strcmp(a, "--np") == 0 || strcmp(a, "-np") == 0) {
            is_n = true;
        } else if (strncmp(a, "--np=", 5) == 0) {
            is_n = true;
            val = a + 5;
        } else if (strncmp(a, "-n", 2) == 0 && a[2] >= '0' && a[2] <= '9') {
            is_n = true;
            val = a + 2;
        } else if (strcmp(a, "-H") == 0 || strcmp(a, "--hosts") == 0) {
            is_h = true;
        } else if (strncmp(a, "--hosts=", 8) == 0) {
            is_h = true;
            val = a + 8;
        } else if (strcmp(a, "-t") == 0 || strcmp(a, "--timeout") == 0) {
            is_t = true;
        } else if (strncmp(a, "--timeout=", 10) == 0) {
            is_t = true;
            val = a + 10;
        } else if (strcmp(a, "-g") == 0 || strcmp(a, "--grace") == 0) {
            is_g = true;
        } else if (strncmp(a, "--grace=", 8) == 0) {
            is_g = true;
            val = a + 8;
        } else if (strcmp(a, "--no-kill") == 0) {
            o->grace_s = INFINITY;
            i++;
            continue;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage(err, err_cap, "unknown option %s", a);
        } else {
            break; /* the program */
        }
        if (!val) {
            if (i + 1 >= argc || !argv[i + 1]) return usage(err, err_cap, "%s needs a value", a);
            val = argv[++i];
        }
        i++;
        char *end = NULL;
        errno = 0;
        if (is_n) {
            /* digits only: strtol would take " 4" and "+4" */
            o->n = isdigit((unsigned char)val[0]) ? strtol(val, &end, 10) : 0;
            if (errno || end == val || !end || *end || o->n < 1 || o->n > SYMMRUN_MAX_PES)
                return usage(err, err_cap, "-n wants a PE count in 1..%d, not \"%s\"",
                             SYMMRUN_MAX_PES, val);
        } else if (is_h) {
            o->hosts = isdigit((unsigned char)val[0]) ? strtol(val, &end, 10) : 0;
            if (errno || end == val || !end || *end || o->hosts < 1 || o->hosts > SYMMRUN_MAX_PES)
                return usage(err, err_cap, "--hosts wants a host count in 1..%d, not \"%s\"",
                             SYMMRUN_MAX_PES, val);
        } else if (is_t) {
            o->timeout_s = strtod(val, &end);
            if (errno || end == val || *end || !(o->timeout_s > 0) || !isfinite(o->timeout_s) ||
                o->timeout_s > 1e9)
                return usage(err, err_cap,
                             "--timeout wants a positive number of seconds, not \"%s\"", val);
        } else if (is_g) {
            if (!symmrun_parse_grace(val, &o->grace_s))
                return usage(err, err_cap, "--grace wants seconds (>= 0) or inf, not \"%s\"", val);
        }
    }
    if (o->n == 0) return usage(err, err_cap, "missing -n N (the number of PEs)");
    if (i >= argc || !argv[i]) return usage(err, err_cap, "missing the program to run");
    if (o->hosts > o->n)
        return usage(err, err_cap, "--hosts %ld is more than the %ld PEs (-n)", o->hosts, o->n);
    o->prog = i;
    return SYMMRUN_ARGS_RUN;
}

/* symmrun's command line (see symmrun_args.h and the usage in symmrun.c). */
#include "symmrun_args.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

int symmrun_parse_bind(const char *val) {
    static const char *const names[] = {[SYMMRUN_BIND_AUTO] = "auto",
                                        [SYMMRUN_BIND_SPREAD] = "spread",
                                        [SYMMRUN_BIND_CORE] = "core",
                                        [SYMMRUN_BIND_NONE] = "none"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(val, names[i]) == 0) return i;
    return -1;
}

/* One option's value into *o (opt: the option's short name). */
static int take_value(int opt, const char *val, symmrun_opts *o, char *err, size_t cap) {
    char *end = NULL;
    errno = 0;
    switch (opt) {
    case 'n': /* digits only: strtol would take " 4" and "+4" */
        o->n = isdigit((unsigned char)val[0]) ? strtol(val, &end, 10) : 0;
        if (errno || end == val || !end || *end || o->n < 1 || o->n > SYMMRUN_MAX_PES)
            return usage(err, cap, "-n wants a PE count in 1..%d, not \"%s\"", SYMMRUN_MAX_PES,
                         val);
        return SYMMRUN_ARGS_RUN;
    case 'b':
        if ((o->bind = symmrun_parse_bind(val)) < 0)
            return usage(err, cap, "--bind wants auto, spread, core or none, not \"%s\"", val);
        return SYMMRUN_ARGS_RUN;
    case 'H':
        o->hosts = isdigit((unsigned char)val[0]) ? strtol(val, &end, 10) : 0;
        if (errno || end == val || !end || *end || o->hosts < 1 || o->hosts > SYMMRUN_MAX_PES)
            return usage(err, cap, "--hosts wants a host count in 1..%d, not \"%s\"",
                         SYMMRUN_MAX_PES, val);
        return SYMMRUN_ARGS_RUN;
    case 't':
        o->timeout_s = strtod(val, &end);
        if (errno || end == val || *end || !(o->timeout_s > 0) || !isfinite(o->timeout_s) ||
            o->timeout_s > 1e9)
            return usage(err, cap, "--timeout wants a positive number of seconds, not \"%s\"",
                         val);
        return SYMMRUN_ARGS_RUN;
    case 'g':
        if (!symmrun_parse_grace(val, &o->grace_s))
            return usage(err, cap, "--grace wants seconds (>= 0) or inf, not \"%s\"", val);
        return SYMMRUN_ARGS_RUN;
    }
    return usage(err, cap, "internal: option %c has no value parser", opt);
}

/* getopt_long's '?' (unknown, ambiguous, or a value given to a flag) or ':'
 * (a value missing), as a message naming the option as the user wrote it.
 * optopt: the short option, or the long option's own letter; 0 when unknown. */
static int bad_option(int c, const char *arg, char *err, size_t cap) {
    char name[64];
    bool is_long = strncmp(arg, "--", 2) == 0;
    if (is_long) {
        size_t len = strcspn(arg, "=");
        snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), arg);
    } else {
        snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
    }
    if (c == ':') return usage(err, cap, "%s needs a value", name);
    if (is_long && optopt) return usage(err, cap, "%s takes no value", name);
    if (is_long) return usage(err, cap, "unknown or ambiguous option %s", name);
    return usage(err, cap, "unknown option %s", name);
}

/* getopt_long with "+" (stop at the program, never permute argv) and ":" (a
 * missing value returns ':'); opterr = 0 keeps getopt silent, so every error
 * is a message in err. optind = 0 makes glibc start afresh on each call (the
 * fuzz harness calls this in-process). "-np N" (mpirun's spelling) is taken
 * before getopt would read it as -n with the value "p". */
static const struct option long_opts[] = {
    {"np", required_argument, NULL, 'n'},      {"hosts", required_argument, NULL, 'H'},
    {"timeout", required_argument, NULL, 't'}, {"grace", required_argument, NULL, 'g'},
    {"no-kill", no_argument, NULL, 'K'},       {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},       {"bind", required_argument, NULL, 'b'},
    {NULL, 0, NULL, 0},
};

int symmrun_parse_args(int argc, char *const *argv, const char *grace_env,
                       const char *bind_env, symmrun_opts *o, char *err, size_t err_cap) {
    memset(o, 0, sizeof *o);
    o->grace_s = SYMMRUN_DEFAULT_GRACE_S;
    if (err && err_cap) err[0] = '\0';
    if (grace_env && *grace_env && !symmrun_parse_grace(grace_env, &o->grace_s))
        return usage(err, err_cap, "SYMMRUN_GRACE wants seconds (>= 0) or inf, not \"%s\"",
                     grace_env);
    if (bind_env && *bind_env && (o->bind = symmrun_parse_bind(bind_env)) < 0)
        return usage(err, err_cap, "SYMMRUN_BIND wants auto, spread, core or none, not \"%s\"",
                     bind_env);
    for (int i = 0; i < argc; i++)
        if (!argv[i]) return usage(err, err_cap, "argument %d is NULL", i);
    if (argc < 1) return usage(err, err_cap, "missing -n N (the number of PEs)");
    optind = 0;
    opterr = 0;
    for (;;) {
        int at = optind ? optind : 1, c, r;
        if (at < argc && strcmp(argv[at], "-np") == 0) {
            if (at + 1 >= argc) return usage(err, err_cap, "-np needs a value");
            if ((r = take_value('n', argv[at + 1], o, err, err_cap))) return r;
            optind = at + 2;
            continue;
        }
        c = getopt_long(argc, argv, "+:n:H:t:g:b:hV", long_opts, NULL);
        if (c == -1) break;
        const char *arg = argv[optind - 1 < argc ? optind - 1 : argc - 1];
        if (c == 'h') return SYMMRUN_ARGS_HELP;
        if (c == 'V') return SYMMRUN_ARGS_VERSION;
        if (c == 'K') {
            o->grace_s = INFINITY;
        } else if (c == '?' || c == ':') {
            return bad_option(c, arg, err, err_cap);
        } else if ((r = take_value(c, optarg, o, err, err_cap))) {
            return r;
        }
    }
    if (o->n == 0) return usage(err, err_cap, "missing -n N (the number of PEs)");
    if (optind >= argc) return usage(err, err_cap, "missing the program to run");
    if (o->hosts > o->n)
        return usage(err, err_cap, "--hosts %ld is more than the %ld PEs (-n)", o->hosts, o->n);
    o->prog = optind;
    return SYMMRUN_ARGS_RUN;
}

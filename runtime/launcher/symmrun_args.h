/*
 * symmrun's command line, parsed without side effects (no exit, no output):
 * symmrun.c and the fuzz harness fuzz/fuzz_symmrun.c call it in-process.
 */
#ifndef SYMMRUN_ARGS_H
#define SYMMRUN_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#define SYMMRUN_MAX_PES 4096
#define SYMMRUN_DEFAULT_GRACE_S 3.0

/* --bind (SYMMRUN_BIND): which CPUs each PE may run on (symmrun.c bind_plan). */
enum {
    SYMMRUN_BIND_AUTO = 0, /* SPREAD when the PEs are at most the CPUs, else NONE     */
    SYMMRUN_BIND_SPREAD,   /* PE r: the r-th of n equal contiguous groups of the CPUs */
    SYMMRUN_BIND_CORE,     /* PE r: the first CPU of its SPREAD group                 */
    SYMMRUN_BIND_NONE,     /* symmrun's own CPUs, unchanged                           */
};

typedef struct symmrun_opts {
    long n;           /* PEs, 1..SYMMRUN_MAX_PES                           */
    long hosts;       /* simulated hosts, 0 (none) or 1..n                  */
    double timeout_s; /* 0: none; else > 0 and <= 1e9                       */
    double grace_s;   /* >= 0 and <= 1e9, or INFINITY (--grace inf/--no-kill) */
    int bind;         /* SYMMRUN_BIND_*                                     */
    int prog;         /* argv index of the program (< argc)                 */
} symmrun_opts;

enum {
    SYMMRUN_ARGS_RUN = 0,
    SYMMRUN_ARGS_HELP = 1,
    SYMMRUN_ARGS_USAGE = 2,
    SYMMRUN_ARGS_VERSION = 3,
};

/* Parse argv[1..argc) (grace_env: SYMMRUN_GRACE or NULL; bind_env:
 * SYMMRUN_BIND or NULL, the default of --bind). RUN fills *o;
 * HELP: -h/--help was given; VERSION: --version/-V; USAGE: err (err_cap bytes)
 * says what is wrong. Options follow getopt_long (long ones as --opt=value or
 * --opt value, unambiguous prefixes, -n4, -- ends them); the first argument
 * that is not an option is the program. Not thread-safe (getopt's state). */
int symmrun_parse_args(int argc, char *const *argv, const char *grace_env,
                       const char *bind_env, symmrun_opts *o, char *err, size_t err_cap);

/* "auto", "spread", "core" or "none" into SYMMRUN_BIND_*; -1 on anything else. */
int symmrun_parse_bind(const char *val);

/* "inf"/"infinity" or seconds in [0, 1e9]; false on anything else. */
bool symmrun_parse_grace(const char *val, double *out);

/* SYMM_TIMEOUT_MS as symmrun reads it for its server's HELLO deadline:
 * milliseconds in [1, UINT32_MAX]; dflt for anything else. */
unsigned symmrun_parse_timeout_ms(const char *text, unsigned dflt);

#endif /* SYMMRUN_ARGS_H */

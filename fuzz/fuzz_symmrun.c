/*
 * Fuzz target: symmrun's command line (runtime/launcher/symmrun_args.c),
 * called in-process: it must never exit, print or read past argv.
 *
 * Input: NUL-separated arguments (argv[1..]; at most 64); an input starting
 * with "GRACE=" uses its first argument's rest as SYMMRUN_GRACE, and one
 * starting with "TMO=" feeds the rest of the first argument to the
 * SYMM_TIMEOUT_MS reader.
 *
 * Oracles: RUN gives 1 <= n <= 4096, 0 <= hosts <= n, a program index
 * inside argv, timeout 0 or in (0, 1e9], grace in [0, 1e9] or inf; USAGE
 * gives a message.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "symmrun_args.h"

#define MAX_ARGS 64

static int run(const uint8_t *data, size_t size) {
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "symmrun";
    const char *grace = NULL, *bind = NULL;
    size_t at = 0;
    if (size >= 5 && memcmp(buf, "BIND=", 5) == 0) {
        bind = buf + 5;
        at = strlen(buf) + 1;
    } else if (size >= 6 && memcmp(buf, "GRACE=", 6) == 0) {
        grace = buf + 6;
        at = strlen(buf) + 1;
    } else if (size >= 4 && memcmp(buf, "TMO=", 4) == 0) {
        unsigned v = symmrun_parse_timeout_ms(buf + 4, 777);
        if (v == 0) __builtin_trap();
        at = strlen(buf) + 1;
    }
    while (at < size + 1 && argc <= MAX_ARGS) {
        argv[argc++] = buf + at;
        at += strlen(buf + at) + 1;
    }
    argv[argc] = NULL;
    symmrun_opts o;
    char err[256];
    memset(err, 0x55, sizeof err);
    int r = symmrun_parse_args(argc, argv, grace, bind, &o, err, sizeof err);
    int valid = 0;
    if (r == SYMMRUN_ARGS_RUN) {
        if (o.n < 1 || o.n > SYMMRUN_MAX_PES || o.hosts < 0 || o.hosts > o.n || o.prog < 1 ||
            o.prog >= argc || !argv[o.prog] || o.timeout_s < 0 || o.timeout_s > 1e9 ||
            !(o.grace_s >= 0) || (isfinite(o.grace_s) && o.grace_s > 1e9) ||
            o.bind < SYMMRUN_BIND_AUTO || o.bind > SYMMRUN_BIND_NONE)
            __builtin_trap();
        valid = 1;
    } else if (r == SYMMRUN_ARGS_USAGE) {
        if (!memchr(err, '\0', sizeof err) || !err[0]) __builtin_trap();
    } else if (r != SYMMRUN_ARGS_HELP && r != SYMMRUN_ARGS_VERSION) {
        __builtin_trap();
    }
    free(buf);
    return valid;
}

/* valid-*: a command line symmrun would run. */
int symm_fuzz_valid(const uint8_t *data, size_t size) { return run(data, size); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size);
    return 0;
}

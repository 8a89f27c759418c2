/*
 * The runtime next to a launcher-side program (symmrun, symm-info): in a
 * build tree libsymm_runtime.so.1 lies beside them in runtime/, and that is
 * the one their jobs should use. SYMM_RUNTIME, when set, wins (the loader's
 * rule), so callers skip this then.
 */
#ifndef SYMM_RUNTIME_BESIDE_H
#define SYMM_RUNTIME_BESIDE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* true and path filled when /proc/self/exe's directory holds the runtime. */
static inline bool symm__runtime_beside(char *path, size_t cap) {
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return false;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return false;
    int n = snprintf(path, cap, "%.*s/libsymm_runtime.so.1", (int)(slash - exe), exe);
    return n > 0 && (size_t)n < cap && access(path, F_OK) == 0;
}

#endif /* SYMM_RUNTIME_BESIDE_H */

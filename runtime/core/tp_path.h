/*
 * Where transport plugins are looked for, in order (core/transport.c loads
 * from this list; symm-info reports from the same list):
 *   1. $SYMM_TRANSPORT_PATH (folders separated by ':'), when set;
 *   2. <runtime's folder>/symm: the installed layout, <libdir>/symm/ beside
 *      <libdir>/libsymm_runtime.so.1 (meson installs the plugins there);
 *   3. <runtime's folder>: a runtime copied with its plugins beside it (the
 *      Python wheel's symm/_lib) and installs of symm 1.2 and older;
 *   4. <runtime's folder>/transports/<name>: the Meson build tree.
 * Relative to the runtime's own file, so a tree moved as a whole (a
 * --destdir install, a wheel) keeps finding its plugins.
 */
#ifndef SYMM_CORE_TP_PATH_H
#define SYMM_CORE_TP_PATH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The folders for plugin `name` as one ':'-separated list in dirs (cap
 * bytes; cut short when it does not fit). rtdir: the runtime's folder, or
 * "" when unknown (then only SYMM_TRANSPORT_PATH). */
static inline void symm__tp_plugin_dirs(const char *rtdir, const char *name, char *dirs,
                                        size_t cap) {
    const char *env = getenv("SYMM_TRANSPORT_PATH");
    dirs[0] = '\0';
    if (env && *env) snprintf(dirs, cap, "%s", env);
    size_t len = strlen(dirs);
    if (rtdir && rtdir[0] && len + 1 < cap)
        snprintf(dirs + len, cap - len, "%s%s/symm:%s:%s/transports/%s", len ? ":" : "", rtdir,
                 rtdir, rtdir, name);
}

#endif /* SYMM_CORE_TP_PATH_H */

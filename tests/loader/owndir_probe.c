/*
 * Helper of loader_own_dir.py: opens a loader by path (as ctypes or a plugin
 * would), probes it and prints what happened:
 *   status=<name>
 *   runtime=<path of each loaded libsymm_runtime*, as the dynamic linker names it>
 *   message=<symm_last_error()>
 * It links neither the loader nor a runtime itself. Built with
 * -DSYMM_BUILTIN_LOADER (owndir_builtin) it has the loader compiled in, as
 * the Go and Zig bindings do, and takes no argument.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr */
#endif
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include <symm/symm.h>

static int print_runtime(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (info->dlpi_name && strstr(info->dlpi_name, "libsymm_runtime"))
        printf("runtime=%s\n", info->dlpi_name);
    return 0;
}

#define LOOKUP(h, var, name)                                                   \
    do {                                                                       \
        void *s_ = dlsym((h), (name));                                         \
        if (!s_) {                                                             \
            fprintf(stderr, "owndir_probe: no %s: %s\n", (name), dlerror());   \
            return 2;                                                          \
        }                                                                      \
        memcpy(&(var), &s_, sizeof(var));                                      \
    } while (0)

int main(int argc, char **argv) {
#ifdef SYMM_BUILTIN_LOADER
    (void)argc;
    (void)argv;
    symm_status st = symm_loader_probe();
    printf("status=%s\n", symm_status_string(st));
    dl_iterate_phdr(print_runtime, NULL);
    printf("message=%s\n", symm_last_error());
    return 0;
#else
    if (argc != 2) {
        fprintf(stderr, "usage: owndir_probe LOADER\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "owndir_probe: %s\n", dlerror());
        return 2;
    }
    symm_status (*probe)(void);
    const char *(*last_error)(void);
    const char *(*status_string)(symm_status);
    LOOKUP(h, probe, "symm_loader_probe");
    LOOKUP(h, last_error, "symm_last_error");
    LOOKUP(h, status_string, "symm_status_string");
    symm_status st = probe();
    printf("status=%s\n", status_string(st));
    dl_iterate_phdr(print_runtime, NULL);
    /* Last: the message may span lines. */
    printf("message=%s\n", last_error());
    return 0;
#endif
}

/*
 * The plugin entry: opens libfabric.so.1 at run time and fills the table of
 * ofi_fns.h. Nothing here runs before the core asks for the plugin, and a
 * host without libfabric still gets a table whose probe says why.
 * SYMM_OFI_LIBRARY names another libfabric (a vendor's build outside the
 * loader's path, e.g. /opt/amazon/efa/lib64/libfabric.so.1).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "ofi_fns.h"

static struct ofi_fns real;
static char load_why[512];

static int load(void) {
    const char *lib = getenv("SYMM_OFI_LIBRARY");
    if (!lib || !*lib) lib = "libfabric.so.1";
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_why, sizeof load_why,
                 "%s could not be opened (%s): install libfabric1 (Debian/Ubuntu), libfabric "
                 "(RHEL) or the NIC vendor's build (EFA installer, HPE Slingshot), or set "
                 "SYMM_OFI_LIBRARY", lib, dlerror());
        return -1;
    }
#define SYM(field, name)                                                                       \
    do {                                                                                       \
        *(void **)&real.field = dlsym(h, name);                                                \
        if (!real.field) {                                                                     \
            snprintf(load_why, sizeof load_why, "%s lacks %s", lib, name);                     \
            dlclose(h);                                                                        \
            return -1;                                                                         \
        }                                                                                      \
    } while (0)
    SYM(version, "fi_version");
    SYM(getinfo, "fi_getinfo");
    SYM(freeinfo, "fi_freeinfo");
    SYM(dupinfo, "fi_dupinfo");
    SYM(fabric, "fi_fabric");
    SYM(strerror, "fi_strerror");
#undef SYM
    return 0; /* the library stays open for the life of the process */
}

__attribute__((visibility("default"))) const symm_tp_ops *symm_transport_plugin(uint32_t core_iface);

const symm_tp_ops *symm_transport_plugin(uint32_t core_iface) {
    static int loaded; /* 0 not tried, 1 ok, -1 failed; the core asks once per process */
    if (core_iface < 1) return NULL;
    if (!loaded) loaded = load() == 0 ? 1 : -1;
    return symm__ofi_ops(loaded == 1 ? &real : NULL, load_why);
}

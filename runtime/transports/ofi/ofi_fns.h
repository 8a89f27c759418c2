/*
 * The few real libfabric symbols the ofi transport calls, as one table.
 *
 * libfabric is opened at run time (ofi_load.c fills the table from
 * libfabric.so.1), so the plugin loads on hosts without it. Everything done
 * to a fabric object after fi_fabric (domains, endpoints, CQs, AVs, memory
 * registration, RMA, atomics, messages) goes through the static inline
 * wrappers of the rdma/fi_*.h headers, which call the object's own ops
 * tables: no symbol of the library is needed for those. The plugin is linked
 * with -z defs and without -lfabric, so a wrapper that did call into the
 * library would fail the build.
 */
#ifndef SYMM_OFI_FNS_H
#define SYMM_OFI_FNS_H

#include <rdma/fabric.h>
#include <stdint.h>

#include "runtime/transports/transport.h"

struct ofi_fns {
    uint32_t (*version)(void);
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info); /* dupinfo(NULL) = fi_allocinfo */
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
};

/* The transport's ops over a libfabric table (NULL: libfabric is missing;
 * probe and open then say `why`). */
const symm_tp_ops *symm__ofi_ops(const struct ofi_fns *fns, const char *why);

#endif

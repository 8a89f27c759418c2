/* The transport registry: the plugin names in SYMM_TRANSPORT=auto order (the
 * first whose probe passes on every PE is used). The top layer hands the
 * list to the core's transport host (core/transport.c), which loads
 * libsymm_transport_<name>.so by name and never names one itself. Under auto
 * the ofi plugin offers only providers of hardware (efa, cxi) and declines
 * otherwise, so a cluster with an RC-capable device keeps ibverbs and a
 * plain TCP network keeps tcp (docs/OFI.md). */
#include <stddef.h>

#include "registry.h"

static const char *const transports[] = {"ibverbs", "ofi", "tcp"};

size_t symm__transport_names(const char *const **names) {
    *names = transports;
    return sizeof transports / sizeof transports[0];
}

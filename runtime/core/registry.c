/*
 * The registry: the one place that names backends and transports. The rest
 * of the core reaches a backend through the table entry picked here and a
 * transport through its plugin file (transport.c), never by name.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static symm_status host_probe(void) { return SYMM_SUCCESS; }

#ifdef SYMM_HAVE_CUDA
static symm_status cuda_probe(void) { return symm__cuda_probe(); }
#endif

/* In AUTO order: the first usable one wins. */
static const symm__backend_entry backends[] = {
#ifdef SYMM_HAVE_CUDA
    {SYMM_BACKEND_CUDA, "cuda", cuda_probe, &symm__cuda_ops},
#endif
    {SYMM_BACKEND_HOST, "host", host_probe, &symm__host_ops},
};

/* Transport plugins (libsymm_transport_<name>.so), in AUTO order. */
static const char *const transports[] = {"ibverbs", "tcp"};

symm_status symm__backend_pick(uint32_t want, const symm__backend_ops **out, char *why,
                               size_t why_cap) {
    size_t used = 0;
    if (why_cap) why[0] = '\0';
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        const symm__backend_entry *e = &backends[i];
        if (want != SYMM_BACKEND_AUTO && want != e->id) continue;
        symm_status st = e->probe();
        if (st == SYMM_SUCCESS) {
            *out = e->ops;
            return SYMM_SUCCESS;
        }
        if (want != SYMM_BACKEND_AUTO) return st; /* the probe left its reason */
        if (used < why_cap) {
            int n = snprintf(why + used, why_cap - used, "%s%s skipped: %s", used ? "; " : "",
                             e->name, symm__last_error());
            if (n > 0) used += (size_t)n;
        }
    }
    if (want == SYMM_BACKEND_CUDA)
        return symm__err(SYMM_ERR_NO_DEVICE,
                         "the CUDA backend was requested but this runtime was built without it");
    return symm__err(SYMM_ERR_INVALID_ARG, "unknown backend %u", want);
}

size_t symm__transport_names(const char *const **names) {
    *names = transports;
    return sizeof transports / sizeof transports[0];
}

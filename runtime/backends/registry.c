/*
 * The backend registry: the one place that names the backends. The top layer
 * (api/init.c) picks a table here; below it, the core reaches the backend
 * only through the table its context holds and asks it what it is through
 * the table's descriptive fields (backend.h), never by name.
 */
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "base/error.h"
#include "base/names.h"

extern const symm__backend_ops symm__host_ops;
#ifdef SYMM_HAVE_CUDA
extern const symm__backend_ops symm__cuda_ops;
#endif

/* In AUTO order: the first usable one wins. */
static const symm__backend_ops *const backends[] = {
#ifdef SYMM_HAVE_CUDA
    &symm__cuda_ops,
#endif
    &symm__host_ops,
};
#define N_BACKENDS (sizeof backends / sizeof backends[0])

static symm_status probe(const symm__backend_ops *b) {
    return b->probe ? b->probe() : SYMM_SUCCESS;
}

symm_status symm__backend_pick(uint32_t want, const symm__backend_ops **out, char *why,
                               size_t why_cap) {
    size_t used = 0;
    if (why_cap) why[0] = '\0';
    for (size_t i = 0; i < N_BACKENDS; i++) {
        const symm__backend_ops *b = backends[i];
        if (want != SYMM_BACKEND_AUTO && want != b->id) continue;
        symm_status st = probe(b);
        if (st == SYMM_SUCCESS) {
            *out = b;
            return SYMM_SUCCESS;
        }
        if (want != SYMM_BACKEND_AUTO) return st; /* the probe left its reason */
        if (used < why_cap) {
            int n = snprintf(why + used, why_cap - used, "%s%s skipped: %s", used ? "; " : "",
                             b->name, symm__last_error());
            if (n > 0) used += (size_t)n;
        }
    }
    if (want != SYMM_BACKEND_AUTO && want < SYMM__N_BACKEND_CONSTS)
        return symm__err(SYMM_ERR_NO_DEVICE,
                         "the %s backend was requested but this runtime was built without it",
                         symm__backend_const_name(want));
    return symm__err(SYMM_ERR_INVALID_ARG, "unknown backend %u", want);
}

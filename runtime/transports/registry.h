/* The transport registry (registry.c). */
#ifndef SYMM_TRANSPORTS_REGISTRY_H
#define SYMM_TRANSPORTS_REGISTRY_H

#include <stddef.h>

/* Transport plugin names in SYMM_TRANSPORT=auto order. */
size_t symm__transport_names(const char *const **names);

#endif

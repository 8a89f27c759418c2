/*
 * Names of the public SYMM_BACKEND_* constants, as SYMM_BACKEND spells them
 * and logs print them. These are the public API's spellings (symm.h), not
 * the registry's: whether a backend of that kind is built in is the
 * registry's answer (runtime/backends/registry.c).
 */
#ifndef SYMM_BASE_NAMES_H
#define SYMM_BASE_NAMES_H

#include <stdbool.h>
#include <strings.h>

#include <symm/symm.h>

static const char *const symm__backend_const_names[] = {"auto", "host", "cuda"};
#define SYMM__N_BACKEND_CONSTS (sizeof symm__backend_const_names / sizeof symm__backend_const_names[0])

/* "auto", "host", ... for a SYMM_BACKEND_* value; "?" outside the range. */
static inline const char *symm__backend_const_name(uint32_t id) {
    return id < SYMM__N_BACKEND_CONSTS ? symm__backend_const_names[id] : "?";
}

/* SYMM_BACKEND text -> SYMM_BACKEND_* (case-insensitive); false if unknown. */
static inline bool symm__backend_const_parse(const char *text, uint32_t *id) {
    for (uint32_t i = 0; i < SYMM__N_BACKEND_CONSTS; i++) {
        if (strcasecmp(text, symm__backend_const_names[i]) == 0) {
            *id = i;
            return true;
        }
    }
    return false;
}

#endif /* SYMM_BASE_NAMES_H */

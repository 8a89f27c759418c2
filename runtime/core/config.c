/* Run-time configuration: init attributes + environment (README.md "Configuration
 * (environment)"; bad values: docs/BAD-INPUT.md). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/names.h"
#include "internal.h"

/* Digits with an optional K/M/G/T suffix (binary; "Ki"/"iB"/"B" tolerated).
 * No sign, no leading space, no value past UINT64_MAX (strtoull would wrap
 * "-1" and saturate "99999999999999999999"). */
bool symm__parse_size(const char *text, uint64_t *out) {
    if (!text || !isdigit((unsigned char)text[0])) return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (end == text || errno == ERANGE) return false;
    uint64_t mul = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0':
    case 'B': break; /* bytes: "4096B" */
    case 'K': mul = 1ull << 10; end++; break;
    case 'M': mul = 1ull << 20; end++; break;
    case 'G': mul = 1ull << 30; end++; break;
    case 'T': mul = 1ull << 40; end++; break;
    default: return false;
    }
    if (mul > 1 && (*end == 'i' || *end == 'I')) end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') return false;
    if (mul > 1 && v > UINT64_MAX / mul) return false;
    *out = (uint64_t)v * mul;
    return true;
}

/* getenv, with an empty value read as unset for the sizes (as the bootstrap
 * reads its variables: `SYMM_HEAP_CAP=` is the default, not a bad size; the
 * timeouts keep refusing an empty value, tests/mp/fault/test_init_fail.c). */
static const char *cfg_env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static symm_status env_size(const char *name, uint64_t *out) {
    const char *v = cfg_env(name);
    if (!v) return SYMM_SUCCESS;
    if (!symm__parse_size(v, out))
        return symm__err(SYMM_ERR_INVALID_ARG,
                         "%s=\"%s\": expected a size such as 4096, 64M or 2G (digits and an "
                         "optional K/M/G/T suffix, no sign or spaces, below 16 EiB)", name, v);
    return SYMM_SUCCESS;
}

/* The cap covers the system area and one chunk at least, and is a whole
 * number of chunks (rounded up after this). A smaller cap is raised to that
 * minimum with a warning rather than refused: the cap reserves address
 * space, backed on demand, and caps such as 64M worked before
 * (docs/BAD-INPUT.md, SYMM_HEAP_CAP). */
static void heap_cap_minimum(symm__config *cfg) {
    uint64_t min_cap = (SYMM__SYS_BYTES + cfg->heap_chunk + cfg->heap_chunk - 1) &
                       ~(cfg->heap_chunk - 1);
    if (cfg->heap_cap >= min_cap) return;
    SYMM_WARN(SYMM_LOG_INIT,
              "%s = %llu bytes is below the smallest heap, the system area (%llu bytes) and one "
              "SYMM_HEAP_CHUNK (%llu bytes) in whole chunks: using %llu bytes (set a cap of at "
              "least that, or a smaller SYMM_HEAP_CHUNK)",
              cfg->heap_cap_attr ? "attr->heap_cap" : "SYMM_HEAP_CAP",
              (unsigned long long)cfg->heap_cap, (unsigned long long)SYMM__SYS_BYTES,
              (unsigned long long)cfg->heap_chunk, (unsigned long long)min_cap);
    cfg->heap_cap = min_cap;
}

symm_status symm__config_load(const symm_init_attr *attr, symm__config *cfg) {
    symm_init_attr a;
    symm__fill_init_attr(&a, sizeof a); /* the defaults (symm_dispatch.h) */
    if (attr) {
        SYMM_CHECK(attr->struct_size >= offsetof(symm_init_attr, heap_cap),
                   SYMM_ERR_INVALID_ARG,
                   "symm_init: attr->struct_size %u is too small (use SYMM_INIT_ATTR_INIT)",
                   attr->struct_size);
        size_t n = attr->struct_size < sizeof a ? attr->struct_size : sizeof a;
        memcpy(&a, attr, n); /* newer fields keep their defaults */
        a.struct_size = sizeof a;
    }
    memset(cfg, 0, sizeof *cfg);
    SYMM_CHECK(a.backend < SYMM__N_BACKEND_CONSTS, SYMM_ERR_INVALID_ARG,
               "symm_init: unknown backend %u", a.backend);
    SYMM_CHECK(a.bootstrap <= SYMM_BOOTSTRAP_SINGLE, SYMM_ERR_INVALID_ARG,
               "symm_init: unknown bootstrap mode %u", a.bootstrap);
    SYMM_CHECK(a.thread_level <= SYMM_THREAD_MULTIPLE, SYMM_ERR_INVALID_ARG,
               "symm_init: unknown thread level %u", a.thread_level);
    cfg->backend = a.backend;
    cfg->bootstrap = a.bootstrap;
    cfg->thread_level = a.thread_level;
    cfg->heap_cap = a.heap_cap;
    cfg->timeout_ms = a.timeout_ms ? a.timeout_ms : SYMM__DEFAULT_TIMEOUT_MS;
    cfg->device = a.device;
    cfg->uid_rank = a.rank;
    cfg->uid_n_pes = a.n_pes;
    cfg->unique_id = a.unique_id;
    cfg->heap_chunk = SYMM__DEFAULT_HEAP_CHUNK;
    cfg->heap_cap_attr = a.heap_cap != 0;
    cfg->timeout_attr = a.timeout_ms != 0;

    const char *b = getenv("SYMM_BACKEND");
    if (b && cfg->backend == SYMM_BACKEND_AUTO && !symm__backend_const_parse(b, &cfg->backend))
        return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_BACKEND=\"%s\": expected one of %s, %s, %s", b,
                         symm__backend_const_name(0), symm__backend_const_name(1),
                         symm__backend_const_name(2));
    if (cfg->heap_cap == 0) {
        cfg->heap_cap = SYMM__DEFAULT_HEAP_CAP;
        SYMM_TRY(env_size("SYMM_HEAP_CAP", &cfg->heap_cap));
        SYMM_CHECK(cfg->heap_cap <= SYMM__MAX_HEAP_BYTES, SYMM_ERR_INVALID_ARG,
                   "SYMM_HEAP_CAP=\"%s\" (%llu bytes) is above 128T, more than a process can "
                   "reserve", cfg_env("SYMM_HEAP_CAP"), (unsigned long long)cfg->heap_cap);
    } else {
        SYMM_CHECK(cfg->heap_cap <= SYMM__MAX_HEAP_BYTES, SYMM_ERR_INVALID_ARG,
                   "symm_init: attr->heap_cap %llu is above 128T, more than a process can reserve",
                   (unsigned long long)cfg->heap_cap);
    }
    SYMM_TRY(env_size("SYMM_HEAP_CHUNK", &cfg->heap_chunk));
    SYMM_CHECK(cfg->heap_chunk >= (64u << 10) && cfg->heap_chunk <= SYMM__MAX_HEAP_BYTES &&
                   (cfg->heap_chunk & (cfg->heap_chunk - 1)) == 0,
               SYMM_ERR_INVALID_ARG, "SYMM_HEAP_CHUNK must be a power of two in [64K, 128T] (got %llu)",
               (unsigned long long)cfg->heap_chunk);
    const char *t = getenv("SYMM_TIMEOUT_MS");
    if (t && a.timeout_ms == 0) {
        uint64_t v;
        if (!symm__parse_size(t, &v) || v == 0 || v > UINT32_MAX)
            return symm__err(SYMM_ERR_INVALID_ARG, "SYMM_TIMEOUT_MS=\"%s\": expected milliseconds", t);
        cfg->timeout_ms = (uint32_t)v;
    }
    cfg->peer_timeout_ms = SYMM__DEFAULT_PEER_TIMEOUT_MS;
    const char *pt = getenv("SYMM_PEER_TIMEOUT_MS");
    if (pt) {
        uint64_t v;
        if (!symm__parse_size(pt, &v) || v == 0 || v > 3600000)
            return symm__err(SYMM_ERR_INVALID_ARG,
                             "SYMM_PEER_TIMEOUT_MS=\"%s\": expected milliseconds in [1, 3600000]", pt);
        cfg->peer_timeout_ms = (uint32_t)v;
    }
    heap_cap_minimum(cfg);
    cfg->heap_cap = (cfg->heap_cap + cfg->heap_chunk - 1) & ~(cfg->heap_chunk - 1);
    if (cfg->bootstrap == SYMM_BOOTSTRAP_UID) {
        SYMM_CHECK(cfg->uid_n_pes >= 1 && cfg->uid_rank >= 0 && cfg->uid_rank < cfg->uid_n_pes,
                   SYMM_ERR_INVALID_ARG, "symm_init: UID bootstrap needs 0 <= rank (%d) < n_pes (%d)",
                   cfg->uid_rank, cfg->uid_n_pes);
    }
    return SYMM_SUCCESS;
}

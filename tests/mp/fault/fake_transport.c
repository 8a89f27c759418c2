/*
 * Broken transport plugins for the loader's checks (test_transport_init.c),
 * one shared object per FAKE_* variant:
 *   FAKE_NOENTRY  no symm_transport_plugin symbol
 *   FAKE_REFUSE   the entry refuses the core's interface (NULL)
 *   FAKE_SHORT    an ops table whose size leaves out required entries
 *   FAKE_PROBE    probe says no (SYMM_ERR_NO_DEVICE and a reason)
 *   FAKE_OPEN     probe passes, open fails (SYMM_ERR_NO_DEVICE and a message)
 */
#include <stdio.h>
#include <symm/symm.h>

#include "transport.h"

static int32_t probe(const symm_tp_core *core, char *why, size_t len) {
#ifdef FAKE_PROBE
    snprintf(why, len, "fake: no device here");
    return SYMM_ERR_NO_DEVICE;
#else
    return 0;
#endif
}

static int32_t open_(const symm_tp_core *core, uint32_t loopback, void **state,
                     symm_tp_info *info) {
    return core->set_error(core->core, SYMM_ERR_NO_DEVICE, "fake: open failed on purpose");
}

static int32_t mem_add(void *s, void *b, uint64_t o, uint64_t l, uint32_t k, int fd) { return 0; }
static int32_t put(void *s, int32_t pe, uint64_t off, const void *src, uint64_t n, uint32_t f) { return 0; }
static int32_t get(void *s, void *dst, int32_t pe, uint64_t off, uint64_t n, uint32_t f) { return 0; }
static int32_t amo(void *s, int32_t pe, uint64_t off, uint32_t dt, uint32_t op, const void *v,
                   const void *c, void *fe, uint32_t f) { return 0; }
static int32_t put_signal(void *s, int32_t pe, uint64_t off, const void *src, uint64_t n,
                          uint64_t so, uint64_t sv, uint32_t sop, uint32_t f) { return 0; }
static int32_t nothing(void *s) { return 0; }

static const symm_tp_ops ops = {
#ifdef FAKE_SHORT
    .size = (uint32_t)offsetof(symm_tp_ops, put),
#else
    .size = sizeof(symm_tp_ops),
#endif
    .iface = SYMM_TP_IFACE, .name = "fake", .probe = probe, .open = open_, .mem_add = mem_add,
    .put = put, .get = get, .atomic = amo, .put_signal = put_signal, .fence = nothing,
    .quiet = nothing,
};

#ifdef FAKE_NOENTRY
__attribute__((visibility("default"))) const symm_tp_ops *not_the_entry(uint32_t core_iface);
const symm_tp_ops *not_the_entry(uint32_t core_iface) { return &ops; }
#else
__attribute__((visibility("default"))) const symm_tp_ops *symm_transport_plugin(uint32_t core_iface);
const symm_tp_ops *symm_transport_plugin(uint32_t core_iface) {
#ifdef FAKE_REFUSE
    return core_iface == 0 ? &ops : NULL; /* a core of interface 0 does not exist */
#else
    return &ops;
#endif
}
#endif

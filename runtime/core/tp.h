/* An opened transport plugin (transport.c), shared with route.c. */
#ifndef SYMM_RUNTIME_TP_H
#define SYMM_RUNTIME_TP_H

#include "internal.h"
#include "transports/transport.h"

struct symm__tp {
    const symm_tp_ops *ops;
    void *state;
    void *dl;            /* dlopen handle */
    symm_tp_info info;
    symm_tp_core core;   /* the services handed to the plugin */
    char name[32];
    pthread_mutex_t lock; /* the contract: one call at a time per instance */
    /* The backend's GPU-memory service (symm_tp_core.mem_*), opened at the
     * first mem_add; gpu.copy NULL: host memory only. */
    symm__tp_gpu gpu;
    bool gpu_opened;
};

#endif

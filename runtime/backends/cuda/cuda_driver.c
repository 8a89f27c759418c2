/*
 * libcuda.so.1 opened at run time; see cuda_driver.h.
 */
#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

symm__cu_api symm__cu;

/* cuGetProcAddress as of CUDA 12.0 (exported as cuGetProcAddress_v2). */
typedef CUresult (*symm__get_proc_fn)(const char *symbol, void **pfn, int cuda_version,
                                      cuuint64_t flags, CUdriverProcAddressQueryResult *status);

/* The driver ABI we ask for: every entry below has kept its signature since
 * 12.0, so drivers from 12.0 on serve it. */
#define SYMM__CU_ABI_VERSION 12000

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static symm_status load_status = SYMM_ERR_INTERNAL;
static char load_msg[512];

static symm_status load_fail(symm_status st, const char *fmt, const char *a, const char *b) {
    snprintf(load_msg, sizeof load_msg, fmt, a, b);
    return st;
}

/* The version whose signature an entry's field has: cuFuncLoad came in 12.4. */
static int entry_version(const char *name) {
    return strcmp(name, "FuncLoad") == 0 ? 12040 : SYMM__CU_ABI_VERSION;
}

static symm_status load_once_body(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        return load_fail(SYMM_ERR_NO_DEVICE, "cannot open libcuda.so.1 (no NVIDIA driver?): %s%s",
                         e ? e : "unknown dlopen error", "");
    }
    /* memcpy: ISO C has no cast between object and function pointers. */
    symm__get_proc_fn get_proc = NULL;
    CUresult (*drv_ver)(int *) = NULL;
    void *sym = dlsym(lib, "cuGetProcAddress_v2");
    memcpy(&get_proc, &sym, sizeof sym);
    sym = dlsym(lib, "cuDriverGetVersion");
    memcpy(&drv_ver, &sym, sizeof sym);
    int version = 0;
    if (drv_ver) drv_ver(&version);
    if (!get_proc || version < SYMM__CU_ABI_VERSION) {
        char v[32];
        snprintf(v, sizeof v, "%d", version);
        return load_fail(SYMM_ERR_NO_DEVICE,
                         "libcuda.so.1 reports driver API version %s%s; symm needs CUDA 12.0 "
                         "or newer (cuGetProcAddress_v2)", v, "");
    }
    memset(&symm__cu, 0, sizeof symm__cu);
    symm__cu.driver_version = version;
#define SYMM__CU_RESOLVE(name, params, required)                                          \
    do {                                                                                  \
        void *fn_ = NULL;                                                                 \
        CUdriverProcAddressQueryResult qs_ = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;        \
        CUresult r_ = get_proc("cu" #name, &fn_, entry_version(#name),                    \
                               CU_GET_PROC_ADDRESS_LEGACY_STREAM, &qs_);                  \
        if (r_ != CUDA_SUCCESS || qs_ != CU_GET_PROC_ADDRESS_SUCCESS) fn_ = NULL;         \
        if (!fn_ && (required))                                                           \
            return load_fail(SYMM_ERR_NO_DEVICE, "libcuda.so.1 lacks cu%s%s (driver too old?)", \
                             #name, "");                                                  \
        memcpy(&symm__cu.name, &fn_, sizeof fn_);                                         \
    } while (0);
    SYMM__CU_ENTRIES(SYMM__CU_RESOLVE)
#undef SYMM__CU_RESOLVE
    CUresult r = symm__cu.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *n = NULL, *s = NULL;
        symm__cu.GetErrorName(r, &n);
        symm__cu.GetErrorString(r, &s);
        return load_fail(SYMM_ERR_NO_DEVICE, "cuInit(0) failed: %s (%s)", n ? n : "?",
                         s ? s : "?");
    }
    /* lib stays open for the life of the process: pointers into it are kept. */
    return SYMM_SUCCESS;
}

static void load_once_fn(void) {
    load_status = load_once_body();
}

symm_status symm__cu_load(void) {
    pthread_once(&load_once, load_once_fn);
    if (load_status != SYMM_SUCCESS) return symm__err(load_status, "%s", load_msg);
    return SYMM_SUCCESS;
}

symm_status symm__cu_fail(CUresult r, const char *call) {
    const char *name = NULL, *text = NULL;
    if (symm__cu.GetErrorName) symm__cu.GetErrorName(r, &name);
    if (symm__cu.GetErrorString) symm__cu.GetErrorString(r, &text);
    symm_status st = SYMM_ERR_CUDA;
    switch (r) {
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
        st = SYMM_ERR_NO_DEVICE;
        break;
    default:
        break;
    }
    return symm__err(st, "%s failed: %s (%s)", call, name ? name : "CUDA_ERROR_UNKNOWN",
                     text ? text : "no description");
}

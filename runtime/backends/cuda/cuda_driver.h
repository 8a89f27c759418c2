/*
 * The CUDA driver API, opened at run time.
 *
 * The runtime links neither libcuda nor cudart: symm__cu_load() dlopens
 * libcuda.so.1 once per process, resolves cuGetProcAddress_v2 and fills one
 * process-wide table of function pointers. <cuda.h> is included for types
 * only. Optional entries (stream memory operations, cuFuncLoad,
 * cuLaunchKernelEx, cuMemGetHandleForAddressRange, the capture and graph
 * calls) may be NULL.
 */
#ifndef SYMM_CUDA_DRIVER_H
#define SYMM_CUDA_DRIVER_H

#include <cuda.h>

#include "internal.h"

/* X(name, return-less parameter list, required) — one per driver entry.
 * Field names omit the "cu" prefix so that cuda.h's version macros
 * (cuMemcpy -> cuMemcpy_v2 ...) never rename them. */
#define SYMM__CU_ENTRIES(X) \
    X(Init, (unsigned int flags), 1) \
    X(DriverGetVersion, (int *version), 1) \
    X(DeviceGet, (CUdevice *dev, int ordinal), 1) \
    X(DeviceGetCount, (int *count), 1) \
    X(DeviceGetAttribute, (int *value, CUdevice_attribute attrib, CUdevice dev), 1) \
    X(DeviceGetUuid, (CUuuid *uuid, CUdevice dev), 1) \
    X(DeviceGetName, (char *name, int len, CUdevice dev), 1) \
    X(DeviceCanAccessPeer, (int *can, CUdevice dev, CUdevice peer), 1) \
    X(DevicePrimaryCtxRetain, (CUcontext *pctx, CUdevice dev), 1) \
    X(DevicePrimaryCtxRelease, (CUdevice dev), 1) \
    X(CtxSetCurrent, (CUcontext ctx), 1) \
    X(CtxGetCurrent, (CUcontext *pctx), 1) \
    X(CtxSynchronize, (void), 1) \
    X(MemAddressReserve, (CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, \
                          unsigned long long flags), 1) \
    X(MemAddressFree, (CUdeviceptr ptr, size_t size), 1) \
    X(MemCreate, (CUmemGenericAllocationHandle *handle, size_t size, \
                  const CUmemAllocationProp *prop, unsigned long long flags), 1) \
    X(MemRelease, (CUmemGenericAllocationHandle handle), 1) \
    X(MemMap, (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, \
               unsigned long long flags), 1) \
    X(MemUnmap, (CUdeviceptr ptr, size_t size), 1) \
    X(MemSetAccess, (CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count), 1) \
    X(MemGetAllocationGranularity, (size_t *granularity, const CUmemAllocationProp *prop, \
                                    CUmemAllocationGranularity_flags option), 1) \
    X(MemExportToShareableHandle, (void *shareable, CUmemGenericAllocationHandle handle, \
                                   CUmemAllocationHandleType type, unsigned long long flags), 1) \
    X(MemImportFromShareableHandle, (CUmemGenericAllocationHandle *handle, void *os_handle, \
                                     CUmemAllocationHandleType type), 1) \
    X(MemRetainAllocationHandle, (CUmemGenericAllocationHandle *handle, void *addr), 1) \
    X(MemGetAllocationPropertiesFromHandle, (CUmemAllocationProp *prop, \
                                             CUmemGenericAllocationHandle handle), 1) \
    X(MemGetAddressRange, (CUdeviceptr *base, size_t *size, CUdeviceptr ptr), 1) \
    X(MemAlloc, (CUdeviceptr *ptr, size_t size), 1) \
    X(MemFree, (CUdeviceptr ptr), 1) \
    X(MemHostAlloc, (void **pp, size_t size, unsigned int flags), 1) \
    X(MemFreeHost, (void *p), 1) \
    X(Memcpy, (CUdeviceptr dst, CUdeviceptr src, size_t size), 1) \
    X(MemcpyAsync, (CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream), 1) \
    X(MemsetD8, (CUdeviceptr dst, unsigned char value, size_t n), 1) \
    X(MemsetD8Async, (CUdeviceptr dst, unsigned char value, size_t n, CUstream stream), 1) \
    X(PointerGetAttributes, (unsigned int n, CUpointer_attribute *attrs, void **data, \
                             CUdeviceptr ptr), 1) \
    X(MemGetHandleForAddressRange, (void *handle, CUdeviceptr dptr, size_t size, \
                                    CUmemRangeHandleType type, unsigned long long flags), 0) \
    X(StreamCreate, (CUstream *stream, unsigned int flags), 1) \
    X(StreamDestroy, (CUstream stream), 1) \
    X(StreamSynchronize, (CUstream stream), 1) \
    X(StreamQuery, (CUstream stream), 1) \
    X(StreamWaitEvent, (CUstream stream, CUevent event, unsigned int flags), 1) \
    X(StreamIsCapturing, (CUstream stream, CUstreamCaptureStatus *status), 1) \
    X(StreamBeginCapture, (CUstream stream, CUstreamCaptureMode mode), 0) \
    X(StreamEndCapture, (CUstream stream, CUgraph *graph), 0) \
    X(GraphInstantiateWithFlags, (CUgraphExec *exec, CUgraph graph, unsigned long long flags), 0) \
    X(GraphLaunch, (CUgraphExec exec, CUstream stream), 0) \
    X(GraphDestroy, (CUgraph graph), 0) \
    X(GraphExecDestroy, (CUgraphExec exec), 0) \
    X(StreamWriteValue32, (CUstream stream, CUdeviceptr addr, cuuint32_t value, \
                           unsigned int flags), 0) \
    X(StreamWriteValue64, (CUstream stream, CUdeviceptr addr, cuuint64_t value, \
                           unsigned int flags), 0) \
    X(StreamWaitValue64, (CUstream stream, CUdeviceptr addr, cuuint64_t value, \
                          unsigned int flags), 0) \
    X(StreamWaitValue32, (CUstream stream, CUdeviceptr addr, cuuint32_t value, \
                          unsigned int flags), 0) \
    X(ModuleLoadData, (CUmodule *module, const void *image), 1) \
    X(ModuleUnload, (CUmodule module), 1) \
    X(ModuleGetLoadingMode, (CUmoduleLoadingMode *mode), 0) \
    X(ModuleGetFunction, (CUfunction *func, CUmodule module, const char *name), 1) \
    X(FuncLoad, (CUfunction func), 0) \
    X(FuncSetAttribute, (CUfunction func, CUfunction_attribute attrib, int value), 0) \
    X(LaunchKernel, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, \
                     unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, \
                     CUstream stream, void **params, void **extra), 1) \
    X(LaunchKernelEx, (const CUlaunchConfig *config, CUfunction f, void **params, void **extra), 0) \
    X(LaunchCooperativeKernel, (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, \
                                unsigned int bx, unsigned int by, unsigned int bz, \
                                unsigned int smem, CUstream stream, void **params), 0) \
    X(EventCreate, (CUevent *event, unsigned int flags), 1) \
    X(EventRecord, (CUevent event, CUstream stream), 1) \
    X(EventSynchronize, (CUevent event), 1) \
    X(EventDestroy, (CUevent event), 1) \
    X(GetErrorName, (CUresult error, const char **name), 1) \
    X(GetErrorString, (CUresult error, const char **text), 1)

typedef struct symm__cu_api {
#define SYMM__CU_FIELD(name, params, required) CUresult (*name) params;
    SYMM__CU_ENTRIES(SYMM__CU_FIELD)
#undef SYMM__CU_FIELD
    int driver_version;
} symm__cu_api;

/* The process-wide table, valid after symm__cu_load() succeeded. */
extern symm__cu_api symm__cu;

/* dlopen libcuda.so.1, fill symm__cu and cuInit(0) — once per process; later
 * calls return the first call's status (and restore its message).
 * SYMM_ERR_NO_DEVICE when the library, the driver or a device is missing. */
symm_status symm__cu_load(void);

/* Record a failed driver call: SYMM_ERR_CUDA with "<call>: CUDA_ERROR_X (text)";
 * errors that mean "no usable GPU" map to SYMM_ERR_NO_DEVICE. */
symm_status symm__cu_fail(CUresult r, const char *call);

/* `SYMM__CU(MemCreate(&h, size, &prop, 0));` — calls symm__cu.MemCreate and
 * returns the mapped status from the enclosing function on failure. */
#define SYMM__CU(call)                                                         \
    do {                                                                       \
        CUresult symm__r_ = symm__cu.call;                                     \
        if (symm__r_ != CUDA_SUCCESS) return symm__cu_fail(symm__r_, "cu" #call); \
    } while (0)

/* Same, but stores the status in st and jumps to label on failure. */
#define SYMM__CU_GOTO(st, label, call)                                         \
    do {                                                                       \
        CUresult symm__r_ = symm__cu.call;                                     \
        if (symm__r_ != CUDA_SUCCESS) {                                        \
            (st) = symm__cu_fail(symm__r_, "cu" #call);                        \
            goto label;                                                        \
        }                                                                      \
    } while (0)

#endif /* SYMM_CUDA_DRIVER_H */

/*
 * CUDA backend, 2+ PEs: symm_buf_register makes caller-owned VMM memory
 * (cuMemCreate with POSIX fd handles, mapped with cuMemMap) symmetric; RMA
 * reaches the peers' registered memory; freeing unregisters without freeing.
 * Driver entries come through cudart (no libcuda link).
 */
#include "gpu_test.h"

#include <cuda.h>

#include <vector>

#define DRV(name, ...)                                                                   \
    do {                                                                                 \
        CUresult r_ = p_##name(__VA_ARGS__);                                             \
        if (r_ != CUDA_SUCCESS) TEST_FAIL_("cu" #name " failed: %d", (int)r_);           \
    } while (0)

static CUresult (*p_MemCreate)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                               unsigned long long);
static CUresult (*p_MemAddressReserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
                                       unsigned long long);
static CUresult (*p_MemMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                            unsigned long long);
static CUresult (*p_MemSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*p_MemUnmap)(CUdeviceptr, size_t);
static CUresult (*p_MemRelease)(CUmemGenericAllocationHandle);
static CUresult (*p_MemAddressFree)(CUdeviceptr, size_t);

static void load(const char *name, void **fn) {
    cudaDriverEntryPointQueryResult q;
    CUDA_OK(cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q));
    if (q != cudaDriverEntryPointSuccess || !*fn) TEST_FAIL_("no driver entry %s", name);
}

int main(void) {
    symm_ctx ctx = gpu_test_init();
    load("cuMemCreate", (void **)&p_MemCreate);
    load("cuMemAddressReserve", (void **)&p_MemAddressReserve);
    load("cuMemMap", (void **)&p_MemMap);
    load("cuMemSetAccess", (void **)&p_MemSetAccess);
    load("cuMemUnmap", (void **)&p_MemUnmap);
    load("cuMemRelease", (void **)&p_MemRelease);
    load("cuMemAddressFree", (void **)&p_MemAddressFree);
    int dev = 0;
    CUDA_OK(cudaGetDevice(&dev));
    const size_t size = 4u << 20; /* two 2 MiB granules */
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va = 0;
    DRV(MemCreate, &h, size, &prop, 0);
    DRV(MemAddressReserve, &va, size, 2u << 20, 0, 0);
    DRV(MemMap, va, size, 0, h, 0);
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRV(MemSetAccess, va, size, &acc, 1);
    CUDA_OK(cudaMemset((void *)va, 0, size));
    CUDA_OK(cudaDeviceSynchronize());

    const uint64_t count = size / 4;
    symm_buf reg = NULL;
    symm_status st = symm_buf_register(ctx, (void *)va, SYMM_DTYPE_INT32, count, &reg);
    if (st == SYMM_ERR_NOT_SUPPORTED) {
        printf("SKIP: registration not available (%s)\n", symm_last_error());
        return 77; /* every PE gets the same answer */
    }
    CHECK_OK(st);
    /* the heap alias and the caller's mapping are the same memory */
    const int next = (gpu_me + 1) % gpu_n, prev = (gpu_me + gpu_n - 1) % gpu_n;
    std::vector<int32_t> v(count), got(count);
    for (uint64_t i = 0; i < count; i++) v[i] = gpu_me * 100000 + (int32_t)i;
    CHECK_OK(symm_put(reg, 0, v.data(), count, next));
    CHECK_OK(symm_barrier_all(ctx));
    CUDA_OK(cudaMemcpy(got.data(), (void *)va, size, cudaMemcpyDeviceToHost));
    for (uint64_t i = 0; i < count; i++) ASSERT_EQ(got[i], prev * 100000 + (int32_t)i);
    int32_t x = 0;
    CHECK_OK(symm_g(reg, 7, next, &x));
    ASSERT_EQ(x, gpu_me * 100000 + 7);
    /* an ordinary allocation still works next to it */
    symm_buf other = NULL;
    CHECK_OK(symm_buf_alloc(ctx, SYMM_DTYPE_INT32, 1000, &other));
    CHECK_OK(symm_put(other, 0, v.data(), 1000, next));
    CHECK_OK(symm_barrier_all(ctx));
    CHECK_OK(symm_buf_free(other));
    CHECK_OK(symm_buf_free(reg));
    /* the memory is still the caller's */
    CUDA_OK(cudaMemcpy(got.data(), (void *)va, 64, cudaMemcpyDeviceToHost));
    ASSERT_EQ(got[3], prev * 100000 + 3);
    CHECK_STATUS(symm_buf_register(ctx, v.data(), SYMM_DTYPE_INT32, 16, &reg), SYMM_ERR_INVALID_ARG);
    DRV(MemUnmap, va, size);
    DRV(MemRelease, h);
    DRV(MemAddressFree, va, size);
    gpu_test_fini(&ctx);
    return 0;
}

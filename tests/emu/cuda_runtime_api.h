/* CPU emulation of the CUDA runtime API subset halox uses (HALOX_GPU_EMULATE builds only).
 *
 * Why: the development machine has no GPU, and GPU time is scarce. With -DHALOX_GPU_EMULATE=ON
 * the CUDA sources of src/gpu are compiled as C++ against these headers and every CUDA thread
 * of a block runs as a host thread (tests/emu/emu_device.h), so the kernels' logic (indexing,
 * masks, barriers, warp shuffles, atomics) and the host code around them run here, under
 * AddressSanitizer if asked. Device memory is host memory filled with 0xFF bytes (NaN as float)
 * so that reads of never-written memory show up, and framed by guard zones that are checked
 * after every kernel, copy and memset: a write outside a buffer aborts with what wrote. Streams
 * are executed in issue order (every call completes before it returns); stream capture records the
 * calls and graph launches replay them. Nothing here says anything about performance. Not part of
 * the library.
 *
 * Several devices: HALOX_EMU_DEVICES=N (default 1, at most 16) makes N devices visible, each
 * with its own UUID (the same in every process, as a real GPU's). The current device is per host
 * thread; streams, events and allocations remember the device current at their creation; and
 * what real CUDA refuses across devices is refused here the same way: a kernel launch into a
 * stream of another device than the current one fails with cudaErrorInvalidResourceHandle
 * (reported by cudaGetLastError), as does recording an event of one device on a stream of
 * another. Copies and memsets work whatever the current device (unified addressing), as on a
 * GPU. CUDA IPC within one process has nothing to share across processes: a handle can be made
 * of the start of a live allocation (anything else is cudaErrorInvalidValue, as on a GPU) but
 * opening one fails with cudaErrorNotSupported.
 *
 * A stream that does not finish (a hung kernel, a stuck copy) is what cudaLaunchHostFunc makes:
 * the function runs on a thread of its own, and until it returns its stream counts as busy
 * (cudaStreamQuery answers cudaErrorNotReady, cudaStreamSynchronize and cudaDeviceSynchronize
 * wait for it). Work issued after it still runs at once (the emulation runs work as it is
 * issued): what the host sees of a stuck stream, not the stream's order. */
#ifndef HX_EMU_CUDA_RUNTIME_API_H
#define HX_EMU_CUDA_RUNTIME_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HX_CUDA_EMULATION 1
#define CUDART_VERSION 13000

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidContext = 201,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorIllegalState = 401,
    cudaErrorPeerAccessAlreadyEnabled = 704,
    cudaErrorNotSupported = 801,
    cudaErrorNotReady = 600,
    cudaErrorCooperativeLaunchTooLarge = 720,
    cudaErrorStreamCaptureUnsupported = 900,
    cudaErrorUnknown = 999
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaDeviceAttr {
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMemoryClockRate = 36,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
} cudaDeviceAttr;

typedef enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8
} cudaFuncAttribute;

typedef enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
} cudaStreamCaptureMode;

typedef enum cudaStreamCaptureStatus {
    cudaStreamCaptureStatusNone = 0,
    cudaStreamCaptureStatusActive = 1
} cudaStreamCaptureStatus;

#define cudaStreamDefault 0x0
#define cudaStreamNonBlocking 0x1
#define cudaEventDefault 0x0
#define cudaEventDisableTiming 0x2
#define cudaEventRecordDefault 0x0
#define cudaEventRecordExternal 0x1
#define cudaHostAllocDefault 0x0
#define cudaHostAllocPortable 0x1
#define cudaHostAllocMapped 0x2
#define cudaIpcMemLazyEnablePeerAccess 0x1

typedef struct cudaIpcMemHandle_st {
    char reserved[64];
} cudaIpcMemHandle_t;

typedef struct cudaUUID_st {
    char bytes[16];
} cudaUUID_t;

enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0,
    cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2,
    cudaMemoryTypeManaged = 3
};

struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
};

typedef struct CUstream_st *cudaStream_t; /* the tag CUDA's own cudaStream_t has */
typedef struct emu_event *cudaEvent_t;
typedef struct emu_graph *cudaGraph_t;
typedef struct emu_graph *cudaGraphExec_t;
typedef struct emu_graph_node *cudaGraphNode_t;

/* Edge data of a capture's dependencies (CUDA 12.3; the programmatic edge of HALOX_GPU_PDL=1):
 * accepted and without effect, as the emulation runs a captured graph's operations one after
 * the other (cudaStreamGetCaptureInfo in emu_runtime.cpp). */
typedef enum cudaGraphDependencyType_enum {
    cudaGraphDependencyTypeDefault = 0,
    cudaGraphDependencyTypeProgrammatic = 1
} cudaGraphDependencyType;
typedef struct cudaGraphEdgeData_st {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} cudaGraphEdgeData;
#define cudaGraphKernelNodePortDefault 0
#define cudaGraphKernelNodePortProgrammatic 1
#define cudaStreamAddCaptureDependencies 0x0
#define cudaStreamSetCaptureDependencies 0x1

typedef struct cudaGraphExecUpdateResultInfo {
    int result;
    cudaGraphNode_t errorNode, errorFromNode;
} cudaGraphExecUpdateResultInfo;

typedef struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    size_t sharedMemPerBlockOptin;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int major, minor;
    int multiProcessorCount;
    int clockRate;
    int memoryClockRate;
    int memoryBusWidth;
    int l2CacheSize;
    int pciBusID, pciDeviceID, pciDomainID;
    cudaUUID_t uuid;
} cudaDeviceProp;

/* Kernels launched with cudaLaunchKernelEx run with every block of the grid at once (each block
 * its own host threads, emu_device.h), as a GPU runs a grid that fits on it: the fused NVSHMEM
 * halo exchange (its only user) has blocks that wait for each other and for other processes'
 * kernels, which the one-block-at-a-time launch of <<<>>> would deadlock. The NVSHMEM subset it
 * uses is emulated beside this file (nvshmem.h, emu_nvshmem.cpp).
 *
 * Launch attributes: the emulation runs the grid's blocks at once whatever they say
 * (programmatic launch changes nothing where every stream operation completes before the next
 * starts). */
typedef enum cudaLaunchAttributeID {
    cudaLaunchAttributeIgnore = 0,
    cudaLaunchAttributeCooperative = 2,
    cudaLaunchAttributeProgrammaticStreamSerialization = 5
} cudaLaunchAttributeID;
typedef union cudaLaunchAttributeValue {
    char pad[64];
    int cooperative;
    int programmaticStreamSerializationAllowed;
} cudaLaunchAttributeValue;
typedef struct cudaLaunchAttribute_st {
    cudaLaunchAttributeID id;
    cudaLaunchAttributeValue val;
} cudaLaunchAttribute;

/* vector types (C layout; the device header adds nothing but constructors) */
typedef struct {
    unsigned int x, y, z;
} uint3;
typedef struct dim3 {
    unsigned int x, y, z;
#ifdef __cplusplus
    dim3(unsigned int a = 1, unsigned int b = 1, unsigned int c = 1) : x(a), y(b), z(c) {}
#endif
} dim3;
/* the launch configuration of cudaLaunchKernelEx. In emulated device code gridDim and blockDim
 * are macros (emu_device.h) that call emu_gridDim() and emu_blockDim(): the member functions
 * keep cfg.gridDim and cfg.blockDim working there. */
typedef struct cudaLaunchConfig_st {
    dim3 gridDim;
    dim3 blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute *attrs;
    unsigned int numAttrs;
#ifdef __cplusplus
    dim3 &emu_gridDim()
    {
        return gridDim;
    }
    dim3 &emu_blockDim()
    {
        return blockDim;
    }
    const dim3 &emu_gridDim() const
    {
        return gridDim;
    }
    const dim3 &emu_blockDim() const
    {
        return blockDim;
    }
#endif
} cudaLaunchConfig_t;
typedef struct __attribute__((aligned(8))) {
    float x, y;
} float2;
typedef struct {
    float x, y, z;
} float3;
typedef struct __attribute__((aligned(16))) {
    float x, y, z, w;
} float4;
typedef struct __attribute__((aligned(8))) {
    int x, y;
} int2;
typedef struct __attribute__((aligned(16))) {
    int x, y, z, w;
} int4;
typedef struct __attribute__((aligned(8))) {
    unsigned int x, y;
} uint2;
typedef struct __attribute__((aligned(16))) {
    unsigned int x, y, z, w;
} uint4;
typedef struct __attribute__((aligned(16))) {
    unsigned long long x, y;
} ulonglong2;
typedef struct __attribute__((aligned(16))) {
    double x, y;
} double2;

const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceGetAttribute(int *v, cudaDeviceAttr a, int dev);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p);
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p);
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags);
cudaError_t cudaIpcCloseMemHandle(void *p);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int flags);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind k);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind k,
                            cudaStream_t s);
cudaError_t cudaMemset(void *p, int v, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int prio);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamGetDevice(cudaStream_t s, int *dev);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
typedef void (*cudaHostFn_t)(void *user);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus *st);
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, cudaStreamCaptureStatus *st,
                                     unsigned long long *id, cudaGraph_t *g,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edata,
                                     size_t *n);
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t s, cudaGraphNode_t *deps,
                                                const cudaGraphEdgeData *edata, size_t n,
                                                unsigned int flags);

cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t g,
                                cudaGraphExecUpdateResultInfo *info);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t g);

cudaError_t cudaFuncSetAttribute(const void *func, cudaFuncAttribute attr, int value);

/* emulation only: memory that another part of the emulation allocated (the NVSHMEM symmetric
 * heap) counted as device memory of the current device (cudaPointerGetAttributes), and no longer */
void emu_register_device_memory(void *p, size_t bytes);
void emu_unregister_device_memory(void *p);
/* emulation only: this process is a slow PE (HALOX_EMU_SLOW_PE, set by emu_nvshmem.cpp at
 * nvshmem initialisation; 0: not slow). See emu_device.h. */
void emu_set_slow(long long pause_ns);
/* emulation only: 1 while a stream capture is recording (used by the launch wrapper) */
int emu_capturing(void);
/* emulation only: cudaSuccess when a kernel may be launched into s now (s on the current
 * device), cudaErrorInvalidResourceHandle otherwise */
cudaError_t emu_launch_check(cudaStream_t s);
/* CUDA runtime calls of this process so far, by kind: kernel launches, graph launches,
 * synchronisations (a stream, an event, the device, a synchronous copy or set), and the other
 * stream, event, graph and memory calls */
#define EMU_CALL_KINDS 4
void emu_count_call(int kind);
void emu_call_counts(unsigned long long out[EMU_CALL_KINDS]);

#ifdef __cplusplus
}
#endif
#endif

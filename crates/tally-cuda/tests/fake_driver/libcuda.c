/*
 * A fake CUDA driver (libcuda.so) for tests on machines without a GPU.
 *
 * It implements the driver functions tally-cuda and its GPU check call, with
 * a synchronous "device": an event is stamped with the host's
 * CLOCK_MONOTONIC when it is recorded, a kernel launch spins for the
 * nanoseconds given as its first parameter, and memory is a counter. So the
 * crate's logic (driver probing, panic containment, windows, calibration,
 * the memory sampler) runs end to end; what a real GPU does differently
 * (asynchrony, real event resolution, JIT of PTX) is only checked by
 * `cargo xtask gpu-check` on a GPU machine.
 *
 * Built two ways by tests/fake_driver.rs:
 *   default       a working driver with one device;
 *   -DNO_DEVICE   cuInit fails with CUDA_ERROR_NO_DEVICE and the error-name
 *                 functions are missing, as on a partial driver install.
 *
 * Environment:
 *   FAKE_CUDA_EXTRA_USED_FILE  a file holding a byte count added to the used
 *                              memory, re-read on every cuMemGetInfo (lets a
 *                              test move "other processes'" memory).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct { char bytes[16]; } CUuuid;

enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_READY = 600,
};

#define EVENT_DISABLE_TIMING 0x2
#define TOTAL_BYTES (80ULL << 30)
#define CONTEXT_BYTES (512ULL << 20)

struct event { int recorded; unsigned flags; uint64_t stamp_ns; };
struct context { int device; };
struct stream { int unused; };
struct module { int unused; };
struct function { int unused; };

static struct context the_context = { 0 };
static __thread struct context *current = NULL;
static int initialized = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long allocated = 0;
static unsigned long long next_pointer = 0x100000000ULL;
static int retained = 0;

static uint64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

static unsigned long long extra_used(void) {
    const char *path = getenv("FAKE_CUDA_EXTRA_USED_FILE");
    if (path == NULL) return 0;
    FILE *file = fopen(path, "r");
    if (file == NULL) return 0;
    unsigned long long value = 0;
    if (fscanf(file, "%llu", &value) != 1) value = 0;
    fclose(file);
    return value;
}

CUresult cuInit(unsigned flags) {
    (void)flags;
#ifdef NO_DEVICE
    return CUDA_ERROR_NO_DEVICE;
#else
    initialized = 1;
    return CUDA_SUCCESS;
#endif
}

CUresult cuDriverGetVersion(int *version) {
    if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
    *version = 12080;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    *count = 1;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *device = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int length, CUdevice device) {
    if (device != 0 || length <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)length, "Fake CUDA Device");
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    for (int i = 0; i < 16; i++) uuid->bytes[i] = (char)(0xf0 + i);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attribute) {
    case 75: *value = 9; break; /* compute capability major */
    case 76: *value = 0; break; /* compute capability minor */
    default: *value = 0; break; /* memory pools and the rest: unsupported */
    }
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)TOTAL_BYTES;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(struct context **context, CUdevice device) {
    if (device != 0) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    retained++;
    pthread_mutex_unlock(&lock);
    *context = &the_context;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) {
    (void)device;
    pthread_mutex_lock(&lock);
    retained--;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(struct context **context) { *context = current; return CUDA_SUCCESS; }
CUresult cuCtxSetCurrent(struct context *context) { current = context; return CUDA_SUCCESS; }
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }

CUresult cuStreamCreate(struct stream **stream, unsigned flags) {
    (void)flags;
    *stream = calloc(1, sizeof(struct stream));
    return *stream ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuStreamDestroy_v2(struct stream *stream) { free(stream); return CUDA_SUCCESS; }
CUresult cuStreamSynchronize(struct stream *stream) { (void)stream; return CUDA_SUCCESS; }
CUresult cuStreamWaitEvent(struct stream *stream, struct event *event, unsigned flags) {
    (void)stream; (void)event; (void)flags;
    return CUDA_SUCCESS;
}

CUresult cuEventCreate(struct event **event, unsigned flags) {
    *event = calloc(1, sizeof(struct event));
    if (*event == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    (*event)->flags = flags;
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(struct event *event, struct stream *stream) {
    (void)stream;
    if (event == NULL) return CUDA_ERROR_INVALID_HANDLE;
    event->stamp_ns = now_ns();
    event->recorded = 1;
    return CUDA_SUCCESS;
}
CUresult cuEventQuery(struct event *event) { return event == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS; }
CUresult cuEventSynchronize(struct event *event) { return event == NULL ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS; }
CUresult cuEventElapsedTime(float *milliseconds, struct event *start, struct event *end) {
    /* As the real driver: events without timing, or never recorded, fail. */
    if (start == NULL || end == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if ((start->flags | end->flags) & EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
    if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_HANDLE;
    double difference = (double)end->stamp_ns - (double)start->stamp_ns;
    *milliseconds = (float)(difference / 1e6);
    return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(struct event *event) { free(event); return CUDA_SUCCESS; }

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
    if (current == NULL) return CUDA_ERROR_INVALID_VALUE; /* no context bound */
    pthread_mutex_lock(&lock);
    unsigned long long used = CONTEXT_BYTES + allocated + extra_used();
    pthread_mutex_unlock(&lock);
    if (used > TOTAL_BYTES) used = TOTAL_BYTES;
    *free_bytes = (size_t)(TOTAL_BYTES - used);
    *total_bytes = (size_t)TOTAL_BYTES;
    return CUDA_SUCCESS;
}

/* Allocations are bookkeeping only: sizes by fake address. */
#define MAX_ALLOCATIONS 1024
static CUdeviceptr pointers[MAX_ALLOCATIONS];
static size_t sizes[MAX_ALLOCATIONS];

CUresult cuMemAlloc_v2(CUdeviceptr *pointer, size_t bytes) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_ALLOCATIONS; i++) {
        if (pointers[i] == 0) {
            pointers[i] = next_pointer;
            sizes[i] = bytes;
            next_pointer += (bytes + 0xfffff) & ~0xfffffULL;
            allocated += bytes;
            *pointer = pointers[i];
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree_v2(CUdeviceptr pointer) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_ALLOCATIONS; i++) {
        if (pointers[i] == pointer) {
            allocated -= sizes[i];
            pointers[i] = 0;
            sizes[i] = 0;
            pthread_mutex_unlock(&lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemsetD8Async(CUdeviceptr pointer, unsigned char value, size_t bytes, struct stream *stream) {
    (void)pointer; (void)value; (void)bytes; (void)stream;
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadData(struct module **module, const void *image) {
    if (image == NULL || strstr((const char *)image, ".entry") == NULL) return CUDA_ERROR_INVALID_VALUE;
    *module = calloc(1, sizeof(struct module));
    return *module ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuModuleGetFunction(struct function **function, struct module *module, const char *name) {
    (void)module; (void)name;
    static struct function the_function;
    *function = &the_function;
    return CUDA_SUCCESS;
}
CUresult cuModuleUnload(struct module *module) { free(module); return CUDA_SUCCESS; }

/* Every kernel is the check's spin kernel: its first parameter is a
 * duration in nanoseconds, spent here since this device is synchronous. */
CUresult cuLaunchKernel(struct function *function, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, struct stream *stream, void **params,
                        void **extra) {
    (void)function; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared;
    (void)stream; (void)extra;
    if (params == NULL || params[0] == NULL) return CUDA_ERROR_INVALID_VALUE;
    uint64_t duration = *(const uint64_t *)params[0];
    uint64_t start = now_ns();
    while (now_ns() - start < duration) {
    }
    return CUDA_SUCCESS;
}

#ifndef NO_DEVICE
static const char *error_name(CUresult error) {
    switch (error) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
    default: return NULL;
    }
}
CUresult cuGetErrorName(CUresult error, const char **name) {
    *name = error_name(error);
    return *name ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuGetErrorString(CUresult error, const char **text) {
    *text = error_name(error) ? "fake driver error" : NULL;
    return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
#endif

/* A stand-in for libcuda.so.1, for coll-bench's tests on machines without a GPU (tests/nccl.rs
 * builds it and points COLL_BENCH_CUDA_LIBRARY at it). "Device memory" is host memory, copies
 * are memcpy, every operation is finished when it returns, events read CLOCK_MONOTONIC.
 * It exports exactly the entry points the nccl backend binds (src/backend/nccl/cuda.rs).
 *
 *   FAKE_CUDA_DEVICES=N       N devices (default 1); 0: cuInit fails as on a machine with no GPU
 *   FAKE_CUDA_FREE_BYTES=B    what cuMemGetInfo reports free (default 4 GiB)
 *   FAKE_CUDA_TOTAL_BYTES=B   what cuDeviceTotalMem reports (default 16 GiB)
 *   FAKE_CUDA_NOT_READY=K     cuEventQuery answers "not ready" K times after each record
 *   FAKE_NCCL_TRACE=PATH      (fake_nccl.c's trace) "PID sync" per wait of the host for the
 *                             device: the first cuEventQuery of each recorded event, and
 *                             cuStreamSynchronize
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

#define P(d) ((void *)(uintptr_t)(d))

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

static int devices(void) { return (int)env_long("FAKE_CUDA_DEVICES", 1); }

CUresult cuInit(unsigned flags) {
    (void)flags;
    return devices() == 0 ? 100 /* CUDA_ERROR_NO_DEVICE */ : 0;
}
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = devices(); return 0; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *d = ordinal;
    return 0;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) { snprintf(name, (size_t)len, "Fake GPU %d", d); return 0; }
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
    snprintf(id, (size_t)len, "0000:%02X:00.0", d + 1);
    return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = (size_t)env_long("FAKE_CUDA_TOTAL_BYTES", 16L << 30);
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) { *ctx = P(0x1000 + d); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *ctx) { (void)ctx; return 0; }
CUresult cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = malloc(1); return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
static void trace_sync(void) {
    const char *path = getenv("FAKE_NCCL_TRACE");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%d sync\n", (int)getpid());
    fclose(f);
}
CUresult cuStreamSynchronize(void *s) {
    (void)s;
    trace_sync();
    return 0;
}
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
    *free_ = (size_t)env_long("FAKE_CUDA_FREE_BYTES", 1L << 32);
    *total = (size_t)1 << 34;
    return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len) {
    void *m = NULL;
    if (len == 0) return 1; /* CUDA_ERROR_INVALID_VALUE, as the real one */
    if (posix_memalign(&m, 256, len)) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    *p = (CUdeviceptr)(uintptr_t)m;
    return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free(P(p)); return 0; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    (void)s;
    memcpy(P(dst), src, n);
    return 0;
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    (void)s;
    memcpy(dst, P(src), n);
    return 0;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, void *s) {
    (void)s;
    memmove(P(dst), P(src), n);
    return 0;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char c, size_t n, void *s) {
    (void)s;
    memset(P(dst), c, n);
    return 0;
}

struct event {
    struct timespec t;
    long not_ready;
    int queried; /* since the last record */
};
CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    *e = calloc(1, sizeof(struct event));
    return 0;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuEventRecord(void *e, void *s) {
    struct event *ev = e;
    (void)s;
    clock_gettime(CLOCK_MONOTONIC, &ev->t);
    ev->not_ready = env_long("FAKE_CUDA_NOT_READY", 0);
    ev->queried = 0;
    return 0;
}
CUresult cuEventQuery(void *e) {
    struct event *ev = e;
    if (!ev->queried) {
        ev->queried = 1;
        trace_sync();
    }
    if (ev->not_ready > 0) {
        ev->not_ready--;
        return 600; /* CUDA_ERROR_NOT_READY */
    }
    return 0;
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
    struct event *s = a, *e = b;
    *ms = (float)((e->t.tv_sec - s->t.tv_sec) * 1e3 + (e->t.tv_nsec - s->t.tv_nsec) * 1e-6);
    return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
    switch (r) {
    case 0: *s = "CUDA_SUCCESS"; return 0;
    case 1: *s = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 2: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0;
    case 100: *s = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 101: *s = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    case 600: *s = "CUDA_ERROR_NOT_READY"; return 0;
    default: *s = NULL; return 1;
    }
}
CUresult cuGetErrorString(CUresult r, const char **s) {
    switch (r) {
    case 0: *s = "no error"; return 0;
    case 1: *s = "invalid argument"; return 0;
    case 2: *s = "out of memory"; return 0;
    case 100: *s = "no CUDA-capable device is detected"; return 0;
    case 101: *s = "invalid device ordinal"; return 0;
    case 600: *s = "device not ready"; return 0;
    default: *s = NULL; return 1;
    }
}

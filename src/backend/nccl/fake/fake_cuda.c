/* A stand-in for libcuda.so.1, for coll-bench's tests on machines without a GPU (tests/nccl.rs
 * builds it and points COLL_BENCH_CUDA_LIBRARY at it). "Device memory" is host memory, copies
 * are memcpy, every operation is finished when it returns, events read CLOCK_MONOTONIC.
 * It exports exactly the entry points the nccl backend binds (src/backend/nccl/cuda.rs).
 *
 *   FAKE_CUDA_DEVICES=N       N devices in the machine (default 1); 0: cuInit fails as on a
 *                             machine with no GPU
 *   CUDA_VISIBLE_DEVICES      honoured per process, as the real driver: a comma-separated list of
 *                             the machine's device indices or UUIDs; the first entry that names
 *                             no device there hides itself and every entry after it. Ordinal i
 *                             is the i-th listed device, with that device's PCI bus id (device k:
 *                             0000:(k+1):00.0, name "Fake GPU k", UUID GPU-5d1c00kk-fake, matched
 *                             by a unique prefix), so two processes listing the same one share it.
 *   FAKE_CUDA_FREE_BYTES=B    free memory before this process allocates (default 4 GiB):
 *                             cuMemGetInfo reports it less what cuMemAlloc holds (the fake NCCL's
 *                             own buffers included, as on a GPU)
 *   FAKE_CUDA_TOTAL_BYTES=B   what cuDeviceTotalMem and cuMemGetInfo report (default 16 GiB)
 *   FAKE_CUDA_CC=MAJOR.MINOR  every device's compute capability (default 9.0, a Hopper), read
 *                             by cuDeviceGetAttribute (and by the fake NCCL, which refuses fp8
 *                             reductions below 9.0 as NCCL does)
 *   FAKE_CUDA_NOT_READY=K     cuEventQuery answers "not ready" K times after each record
 *   FAKE_NCCL_TRACE=PATH      (fake_nccl.c's trace) "PID sync" per wait of the host for the
 *                             device: the first cuEventQuery of each recorded event, and
 *                             cuStreamSynchronize
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

static int machine_devices(void) { return (int)env_long("FAKE_CUDA_DEVICES", 1); }

/* Device k's UUID is GPU-5d1c00kk-fake; a CUDA_VISIBLE_DEVICES entry "GPU-..." names the one
 * device whose UUID starts with it, as the driver matches a unique prefix. */
static int by_uuid(const char *e, size_t len) {
    int found = -1;
    for (int k = 0; k < machine_devices(); k++) {
        char uuid[32];
        snprintf(uuid, sizeof uuid, "GPU-5d1c%04d-fake", k);
        if (len <= strlen(uuid) && !strncasecmp(uuid, e, len)) {
            if (found >= 0) return -1; /* ambiguous */
            found = k;
        }
    }
    return found;
}

/* The machine's index of visible ordinal `ordinal`, or -1: CUDA_VISIBLE_DEVICES as the driver
 * reads it. */
static int physical(int ordinal) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) return ordinal < machine_devices() ? ordinal : -1;
    for (int seen = 0; *v; seen++) {
        while (*v == ' ') v++;
        size_t len = strcspn(v, ",");
        while (len && v[len - 1] == ' ') len--;
        char *end;
        long k = strtol(v, &end, 10);
        if (len > 4 && !strncasecmp(v, "GPU-", 4)) {
            k = by_uuid(v, len);
        } else if (len == 0 || (size_t)(end - v) != len || k >= machine_devices()) {
            k = -1;
        }
        if (k < 0) return -1;
        if (seen == ordinal) return (int)k;
        v += strcspn(v, ",");
        if (*v) v++;
    }
    return -1;
}
static int devices(void) {
    int n = 0;
    while (n < 64 && physical(n) >= 0) n++;
    return n;
}

CUresult cuInit(unsigned flags) {
    (void)flags;
    return devices() == 0 ? 100 /* CUDA_ERROR_NO_DEVICE */ : 0;
}
/* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR (75) and _MINOR (76). */
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
    const char *cc = getenv("FAKE_CUDA_CC");
    int major = 9, minor = 0;
    if (d < 0 || d >= devices()) return 101;
    if (cc && *cc) sscanf(cc, "%d.%d", &major, &minor);
    if (attr == 75) { *v = major; return 0; }
    if (attr == 76) { *v = minor; return 0; }
    return 1; /* CUDA_ERROR_INVALID_VALUE: an attribute this stand-in does not know */
}
static int current = -1; /* the device of the current context */
CUresult cuCtxGetDevice(CUdevice *d) {
    if (current < 0) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
    *d = current;
    return 0;
}
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = devices(); return 0; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *d = ordinal;
    return 0;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    if (d < 0 || d >= devices()) return 101;
    snprintf(name, (size_t)len, "Fake GPU %d", physical(d));
    return 0;
}
CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d) {
    if (d < 0 || d >= devices()) return 101;
    snprintf(id, (size_t)len, "0000:%02X:00.0", physical(d) + 1);
    return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) {
    (void)d;
    *bytes = (size_t)env_long("FAKE_CUDA_TOTAL_BYTES", 16L << 30);
    return 0;
}
CUresult cuDevicePrimaryCtxRetain(void **ctx, CUdevice d) { *ctx = P(0x1000 + d); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { (void)d; return 0; }
CUresult cuCtxSetCurrent(void *ctx) {
    current = ctx ? (int)((uintptr_t)ctx - 0x1000) : -1;
    return 0;
}
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
/* Bytes held by cuMemAlloc in this process (each block records its size in a header). */
static size_t held;
enum { HEADER = 256 };
static size_t free_bytes(void) {
    size_t start = (size_t)env_long("FAKE_CUDA_FREE_BYTES", 1L << 32);
    return held < start ? start - held : 0;
}
CUresult cuMemGetInfo_v2(size_t *free_, size_t *total) {
    *free_ = free_bytes();
    *total = (size_t)env_long("FAKE_CUDA_TOTAL_BYTES", 16L << 30);
    return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len) {
    void *m = NULL;
    if (len == 0) return 1; /* CUDA_ERROR_INVALID_VALUE, as the real one */
    if (len > free_bytes()) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    /* Untouched pages cost the host nothing, so a large "device" block is cheap. */
    if (posix_memalign(&m, 256, len + HEADER)) return 2;
    *(size_t *)m = len;
    held += len;
    *p = (CUdeviceptr)(uintptr_t)((char *)m + HEADER);
    return 0;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
    if (!p) return 0;
    char *m = (char *)P(p) - HEADER;
    held -= *(size_t *)m;
    free(m);
    return 0;
}
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
    case 201: *s = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
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
    case 201: *s = "invalid device context"; return 0;
    case 600: *s = "device not ready"; return 0;
    default: *s = NULL; return 1;
    }
}

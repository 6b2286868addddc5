/* A stand-in for libnvidia-ml.so.1 (NVML), for coll-bench's tests on machines without a GPU
 * (tests/nccl.rs builds it and points COLL_BENCH_NVML_LIBRARY at it), as strict as NVML where
 * coll-bench depends on it (nvml.h, CUDA 12.9): every device call before nvmlInit_v2, or after
 * the matching nvmlShutdown, answers NVML_ERROR_UNINITIALIZED; devices are found by PCI bus id
 * (domain:bus:device.function, hex, either case), the fake libcuda's 0000:(k+1):00.0 for k below
 * FAKE_CUDA_DEVICES; a device without NVLink answers NVML_ERROR_NOT_SUPPORTED for every link, a
 * link number past the device's (NVML_NVLINK_MAX_LINKS = 18) NVML_ERROR_INVALID_ARGUMENT; field
 * values report each field's own nvmlReturn.
 *
 *   FAKE_NVML_NVLINKS=N        the first N of each device's 18 links active (default 0: a device
 *                              without NVLink)
 *   FAKE_NVML_NVLINK_MBPS=M    NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON (default 26562)
 *   FAKE_NVML_FAIL=init        nvmlInit_v2 fails (NVML_ERROR_DRIVER_NOT_LOADED)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

typedef int nvmlReturn_t;
typedef void *nvmlDevice_t;
typedef union {
    double dVal;
    int siVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
    unsigned short usVal;
} nvmlValue_t;
typedef struct {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;
    long long latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;

enum { SUCCESS = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, DRIVER_NOT_LOADED = 9 };
enum { MAX_LINKS = 18, FI_NVLINK_SPEED_MBPS_COMMON = 90, VALUE_TYPE_UNSIGNED_INT = 1 };

static int inits;

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? atol(v) : dflt;
}

nvmlReturn_t nvmlInit_v2(void) {
    const char *f = getenv("FAKE_NVML_FAIL");
    if (f && !strcmp(f, "init")) return DRIVER_NOT_LOADED;
    inits++;
    return SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    if (inits == 0) return UNINITIALIZED;
    inits--;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *id, nvmlDevice_t *device) {
    if (inits == 0) return UNINITIALIZED;
    if (!id || !device) return INVALID_ARGUMENT;
    unsigned domain, bus, dev, fn;
    if (sscanf(id, "%x:%x:%x.%x", &domain, &bus, &dev, &fn) != 4) return INVALID_ARGUMENT;
    long n = env_long("FAKE_CUDA_DEVICES", 1);
    if (domain != 0 || dev != 0 || fn != 0 || bus < 1 || (long)bus > n) return NOT_FOUND;
    *device = (nvmlDevice_t)(uintptr_t)bus;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *isActive) {
    if (inits == 0) return UNINITIALIZED;
    if (!device || !isActive) return INVALID_ARGUMENT;
    long links = env_long("FAKE_NVML_NVLINKS", 0);
    if (links <= 0) return NOT_SUPPORTED;
    if (link >= MAX_LINKS) return INVALID_ARGUMENT;
    *isActive = (long)link < links;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t *values) {
    if (inits == 0) return UNINITIALIZED;
    if (!device || valuesCount < 0 || (valuesCount > 0 && !values)) return INVALID_ARGUMENT;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    for (int i = 0; i < valuesCount; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
        v->latencyUsec = 0;
        if (v->fieldId == FI_NVLINK_SPEED_MBPS_COMMON && env_long("FAKE_NVML_NVLINKS", 0) > 0) {
            v->valueType = VALUE_TYPE_UNSIGNED_INT;
            v->value.uiVal = (unsigned)env_long("FAKE_NVML_NVLINK_MBPS", 26562);
            v->nvmlReturn = SUCCESS;
        } else {
            v->nvmlReturn = NOT_SUPPORTED;
        }
    }
    return SUCCESS;
}

/* A stand-in for libcuda.so.1, for coll-bench's tests on machines without a GPU (tests/nccl.rs
 * builds it and points COLL_BENCH_CUDA_LIBRARY at it). "Device memory" is host memory, copies
 * are memcpy. As on a GPU, work on a stream runs after the call that queued it has returned, in
 * order, on a thread of the stream's own (its "device"): cuMemsetD8Async, cuMemcpyHtoDAsync
 * (which, from pageable memory, returns once it holds the source: a copy is queued),
 * cuEventRecord (the event reads CLOCK_MONOTONIC when the stream reaches it; cuEventQuery says
 * CUDA_ERROR_NOT_READY until then) and the fake NCCL's calls (fake_cuda_enqueue, found by dlsym);
 * cuMemcpyDtoHAsync into pageable memory, cuStreamSynchronize and cuMemFree wait for the queued
 * work (of every stream, for cuMemFree). So a host that reads a result before the stream has
 * produced it reads stale data, as on a GPU.
 * Graphs (CUDA 11.4's driver API): cuStreamBeginCapture_v2 on a stream of its own (the NULL
 * stream refuses, as the driver's legacy stream), then the fake NCCL's calls become nodes
 * (fake_cuda_capture: nothing runs), cuStreamEndCapture, cuGraphInstantiateWithFlags, and each
 * cuGraphLaunch queues every node again (traced "PID graph-launch NODES"). While capturing, a
 * synchronize, a copy to the host, a memset, a copy or an event record on that stream answers
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture (cuStreamEndCapture then
 * answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED), as the driver's for work a graph cannot hold.
 * It exports the entry points the nccl backend binds (src/backend/nccl/cuda.rs), and
 * fake_cuda_enqueue for the fake NCCL.
 *
 *   FAKE_CUDA_DEVICES=N       N devices in the machine (default 1); 0: cuInit fails as on a
 *                             machine with no GPU
 *   CUDA_VISIBLE_DEVICES      honoured per process, as the real driver: a comma-separated list of
 *                             the machine's device indices or UUIDs; the first entry that names
 *                             no device there hides itself and every entry after it. Ordinal i
 *                             is the i-th listed device, with that device's PCI bus id (device k:
 *                             0000:(k+1):00.0, name "Fake GPU k", UUID
 *                             GPU-5d1c000k-fa4e-0000-0000-000000000000, k in decimal digits,
 *                             matched by a unique prefix), so two processes listing the same one
 *                             share it. An entry MIG-GPU-<prefix>/G/C (the driver's older MIG
 *                             form) is MIG instance G/C of that device: its bus id, name "Fake
 *                             GPU k MIG G/C", and a UUID of its own (the device's with 4d G C in
 *                             bytes 10-12) from cuDeviceGetUuid_v2, the device's from
 *                             cuDeviceGetUuid, as the real driver in MIG mode
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
#include <pthread.h>
#include <sched.h>
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

/* Device k's UUID, and MIG instance g/c's (mig: 1 + g * 256 + c; 0: the whole device). */
static void uuid_bytes(unsigned char b[16], int k, int mig) {
    memset(b, 0, 16);
    b[0] = 0x5d, b[1] = 0x1c, b[4] = 0xfa, b[5] = 0x4e;
    b[2] = (unsigned char)((k / 1000 % 10) << 4 | (k / 100 % 10));
    b[3] = (unsigned char)((k / 10 % 10) << 4 | (k % 10));
    if (mig) {
        b[10] = 0x4d; /* 'M' */
        b[11] = (unsigned char)((mig - 1) >> 8);
        b[12] = (unsigned char)(mig - 1);
    }
}

/* A CUDA_VISIBLE_DEVICES entry "GPU-..." names the one device whose UUID starts with it, as
 * the driver matches a unique prefix. */
static int by_uuid(const char *e, size_t len) {
    int found = -1;
    for (int k = 0; k < machine_devices(); k++) {
        char uuid[48];
        snprintf(uuid, sizeof uuid, "GPU-5d1c%04d-fa4e-0000-0000-000000000000", k);
        if (len <= strlen(uuid) && !strncasecmp(uuid, e, len)) {
            if (found >= 0) return -1; /* ambiguous */
            found = k;
        }
    }
    return found;
}

/* "MIG-GPU-<prefix>/G/C" of `len` bytes: the device (or -1), and the instance in *mig. */
static int by_mig(const char *e, size_t len, int *mig) {
    const char *slash = memchr(e, '/', len);
    unsigned g, c;
    char tail[32];
    int n = 0;
    if (!slash || (size_t)(e + len - slash) >= sizeof tail) return -1;
    memcpy(tail, slash, (size_t)(e + len - slash));
    tail[e + len - slash] = 0;
    if (sscanf(tail, "/%u/%u%n", &g, &c, &n) != 2 || tail[n] || g > 255 || c > 255) return -1;
    *mig = 1 + (int)(g * 256 + c);
    return by_uuid(e + 4, (size_t)(slash - e - 4));
}

/* The machine's index of visible ordinal `ordinal`, or -1: CUDA_VISIBLE_DEVICES as the driver
 * reads it. `mig` (may be NULL): the MIG instance the entry names, 0 for a whole device. */
static int physical_mig(int ordinal, int *mig) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    int m = 0;
    if (mig) *mig = 0;
    if (!v) return ordinal < machine_devices() ? ordinal : -1;
    for (int seen = 0; *v; seen++) {
        while (*v == ' ') v++;
        size_t len = strcspn(v, ",");
        while (len && v[len - 1] == ' ') len--;
        char *end;
        long k = strtol(v, &end, 10);
        m = 0;
        if (len > 8 && !strncasecmp(v, "MIG-GPU-", 8)) {
            k = by_mig(v, len, &m);
        } else if (len > 4 && !strncasecmp(v, "GPU-", 4)) {
            k = by_uuid(v, len);
        } else if (len == 0 || (size_t)(end - v) != len || k >= machine_devices()) {
            k = -1;
        }
        if (k < 0) return -1;
        if (seen == ordinal) {
            if (mig) *mig = m;
            return (int)k;
        }
        v += strcspn(v, ",");
        if (*v) v++;
    }
    return -1;
}
static int physical(int ordinal) { return physical_mig(ordinal, NULL); }
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
    int mig;
    if (d < 0 || d >= devices()) return 101;
    int k = physical_mig(d, &mig);
    if (mig) {
        snprintf(name, (size_t)len, "Fake GPU %d MIG %d/%d", k, (mig - 1) >> 8, (mig - 1) & 255);
    } else {
        snprintf(name, (size_t)len, "Fake GPU %d", k);
    }
    return 0;
}
typedef struct { unsigned char bytes[16]; } CUuuid;
/* The device's UUID, a MIG instance's parent's (the driver's first version). */
CUresult cuDeviceGetUuid(CUuuid *u, CUdevice d) {
    if (d < 0 || d >= devices()) return 101;
    uuid_bytes(u->bytes, physical(d), 0);
    return 0;
}
/* The device's UUID, a MIG instance's own (CUDA 11.4). */
CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
    int mig;
    if (d < 0 || d >= devices()) return 101;
    int k = physical_mig(d, &mig);
    uuid_bytes(u->bytes, k, mig);
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
/* A stream: work queued in order, run by a thread of its own. */
struct op {
    void (*fn)(void *);
    void *arg;
    struct op *next;
};
/* A graph captured from a stream (cuStreamBeginCapture_v2 .. cuStreamEndCapture): the work the
 * fake NCCL's calls queued while capturing (fake_cuda_capture), replayed by each cuGraphLaunch.
 * Held by the graph and by each executable made from it; the nodes' arguments are released
 * (`release`) when the last of those is destroyed. */
struct node {
    void (*fn)(void *);
    void *arg;
    void (*release)(void *);
    struct node *next;
};
struct graph {
    struct node *head, *tail;
    int nodes;
    int refs;
    int invalid; /* something the capture cannot hold was asked of the stream */
};
struct exec {
    struct graph *g;
};
struct stream {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct op *head, *tail;
    unsigned long queued, done;
    int stop;
    struct graph *capture; /* capturing into this graph, or NULL */
};
enum { MAX_STREAMS = 64 };
static struct stream *streams[MAX_STREAMS];
static pthread_mutex_t streams_mu = PTHREAD_MUTEX_INITIALIZER;

static void *stream_main(void *arg) {
    struct stream *st = arg;
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (!st->head && !st->stop) pthread_cond_wait(&st->cv, &st->mu);
        if (!st->head) break;
        struct op *o = st->head;
        st->head = o->next;
        if (!st->head) st->tail = NULL;
        pthread_mutex_unlock(&st->mu);
        o->fn(o->arg);
        free(o);
        pthread_mutex_lock(&st->mu);
        st->done++;
        pthread_cond_broadcast(&st->cv);
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}
/* Queue fn(arg) on stream `s` (the fake NCCL's calls come here); -1 without a stream; -2 (and
 * the capture invalidated) on a stream capturing a graph, where only fake_cuda_capture adds
 * work. */
int fake_cuda_enqueue(void *s, void (*fn)(void *), void *arg) {
    struct stream *st = s;
    if (!st) return -1;
    if (st->capture) {
        st->capture->invalid = 1;
        return -2;
    }
    struct op *o = malloc(sizeof *o);
    *o = (struct op){fn, arg, NULL};
    pthread_mutex_lock(&st->mu);
    if (st->tail) st->tail->next = o; else st->head = o;
    st->tail = o;
    st->queued++;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return 0;
}
/* Wait until the stream has run everything queued so far. */
static void drain(struct stream *st) {
    pthread_mutex_lock(&st->mu);
    unsigned long want = st->queued;
    while (st->done < want) pthread_cond_wait(&st->cv, &st->mu);
    pthread_mutex_unlock(&st->mu);
}
static void trace_line(const char *what, long n) {
    const char *path = getenv("FAKE_NCCL_TRACE");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%d %s %ld\n", (int)getpid(), what, n);
    fclose(f);
}
/* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, _INVALIDATED, CUDA_ERROR_ILLEGAL_STATE. */
enum { CAPTURE_UNSUPPORTED = 900, CAPTURE_INVALIDATED = 901, ILLEGAL_STATE = 401 };
/* As the driver: the legacy (NULL) stream cannot capture, nor can a stream already capturing. */
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
    struct stream *st = s;
    (void)mode;
    if (!st) return CAPTURE_UNSUPPORTED;
    if (st->capture) return ILLEGAL_STATE;
    st->capture = calloc(1, sizeof *st->capture);
    st->capture->refs = 1;
    return 0;
}
static void unref(struct graph *g) {
    if (--g->refs > 0) return;
    for (struct node *n = g->head, *next; n; n = next) {
        next = n->next;
        if (n->release) n->release(n->arg);
        free(n);
    }
    free(g);
}
CUresult cuStreamEndCapture(void *s, void **out) {
    struct stream *st = s;
    *out = NULL;
    if (!st || !st->capture) return ILLEGAL_STATE;
    struct graph *g = st->capture;
    st->capture = NULL;
    if (g->invalid) {
        unref(g);
        return CAPTURE_INVALIDATED;
    }
    *out = g;
    return 0;
}
/* CU_STREAM_CAPTURE_STATUS_NONE 0, _ACTIVE 1, _INVALIDATED 2. */
CUresult cuStreamIsCapturing(void *s, int *status) {
    struct stream *st = s;
    *status = st && st->capture ? (st->capture->invalid ? 2 : 1) : 0;
    return 0;
}
/* The fake NCCL's calls on a capturing stream: fn(arg) becomes a node of the graph, run at each
 * launch (fn must not free arg: `release` does, with the graph); -1 if `s` is not capturing. */
int fake_cuda_capture(void *s, void (*fn)(void *), void *arg, void (*release)(void *)) {
    struct stream *st = s;
    if (!st || !st->capture) return -1;
    struct node *n = malloc(sizeof *n);
    *n = (struct node){fn, arg, release, NULL};
    struct graph *g = st->capture;
    if (g->tail) g->tail->next = n; else g->head = n;
    g->tail = n;
    g->nodes++;
    return 0;
}
CUresult cuGraphInstantiateWithFlags(void **out, void *graph, unsigned long long flags) {
    struct graph *g = graph;
    (void)flags;
    if (!g || !out) return 1;
    struct exec *e = malloc(sizeof *e);
    e->g = g;
    g->refs++;
    *out = e;
    return 0;
}
/* Each node queued on `s` in order; traced "graph-launch NODES". */
CUresult cuGraphLaunch(void *exec, void *s) {
    struct exec *e = exec;
    struct stream *st = s;
    if (!e) return 1;
    if (!st) return CAPTURE_UNSUPPORTED; /* the stand-in launches on streams of its own only */
    if (st->capture) return ILLEGAL_STATE;
    trace_line("graph-launch", e->g->nodes);
    for (struct node *n = e->g->head; n; n = n->next) fake_cuda_enqueue(st, n->fn, n->arg);
    return 0;
}
static void drain_all(void);
/* Launches still queued keep running the nodes: wait for them before letting the graph go. */
CUresult cuGraphExecDestroy(void *exec) {
    struct exec *e = exec;
    if (!e) return 1;
    drain_all();
    unref(e->g);
    free(e);
    return 0;
}
CUresult cuGraphDestroy(void *graph) {
    if (!graph) return 1;
    drain_all();
    unref(graph);
    return 0;
}
CUresult cuStreamCreate(void **s, unsigned flags) {
    (void)flags;
    struct stream *st = calloc(1, sizeof *st);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    if (pthread_create(&st->thread, NULL, stream_main, st) != 0) {
        free(st);
        return 2;
    }
    pthread_mutex_lock(&streams_mu);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (!streams[i]) {
            streams[i] = st;
            break;
        }
    pthread_mutex_unlock(&streams_mu);
    *s = st;
    return 0;
}
CUresult cuStreamDestroy_v2(void *s) {
    struct stream *st = s;
    if (!st) return 0;
    pthread_mutex_lock(&streams_mu);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i] == st) streams[i] = NULL;
    pthread_mutex_unlock(&streams_mu);
    pthread_mutex_lock(&st->mu);
    st->stop = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    pthread_join(st->thread, NULL);
    free(st);
    return 0;
}
static void trace_sync(void) {
    const char *path = getenv("FAKE_NCCL_TRACE");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%d sync\n", (int)getpid());
    fclose(f);
}
CUresult cuStreamSynchronize(void *s) {
    struct stream *st = s;
    trace_sync();
    if (st && st->capture) {
        st->capture->invalid = 1;
        return CAPTURE_UNSUPPORTED;
    }
    if (s) drain(s);
    return 0;
}
/* Bytes held by cuMemAlloc in this process (each block records its size in a header); the fake
 * NCCL allocates from its calls' threads too. */
static size_t held;
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
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
/* Live allocations, for fake_cuda_allocation (as the driver's cuMemGetAddressRange). */
struct allocation { char *base; size_t len; struct allocation *next; };
static struct allocation *allocations;
/* 0 where [p, p+len) lies in one live allocation of cuMemAlloc, else CUDA_ERROR_NOT_FOUND (the
 * fake NCCL's registration asks, as NCCL asks cuMemGetAddressRange). */
int fake_cuda_allocation(const void *p, size_t len) {
    int found = 0;
    pthread_mutex_lock(&held_mu);
    for (struct allocation *a = allocations; a && !found; a = a->next)
        found = (const char *)p >= a->base && (const char *)p + len <= a->base + a->len;
    pthread_mutex_unlock(&held_mu);
    return found ? 0 : 500;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t len) {
    void *m = NULL;
    if (len == 0) return 1; /* CUDA_ERROR_INVALID_VALUE, as the real one */
    pthread_mutex_lock(&held_mu);
    int fits = len <= free_bytes();
    if (fits) held += len;
    pthread_mutex_unlock(&held_mu);
    if (!fits) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    /* Untouched pages cost the host nothing, so a large "device" block is cheap. */
    if (posix_memalign(&m, 256, len + HEADER)) return 2;
    *(size_t *)m = len;
    *p = (CUdeviceptr)(uintptr_t)((char *)m + HEADER);
    struct allocation *a = malloc(sizeof *a);
    *a = (struct allocation){(char *)m + HEADER, len, NULL};
    pthread_mutex_lock(&held_mu);
    a->next = allocations;
    allocations = a;
    pthread_mutex_unlock(&held_mu);
    return 0;
}
/* Wait for every stream's queued work. */
static void drain_all(void) {
    pthread_mutex_lock(&streams_mu);
    struct stream *all[MAX_STREAMS];
    memcpy(all, streams, sizeof all);
    pthread_mutex_unlock(&streams_mu);
    for (int i = 0; i < MAX_STREAMS; i++)
        if (all[i]) drain(all[i]);
}
/* As the real one, freeing waits for the device (every stream's queued work). */
CUresult cuMemFree_v2(CUdeviceptr p) {
    if (!p) return 0;
    drain_all();
    char *m = (char *)P(p) - HEADER;
    pthread_mutex_lock(&held_mu);
    struct allocation **at = &allocations;
    while (*at && (*at)->base != (char *)P(p)) at = &(*at)->next;
    struct allocation *a = *at;
    if (a) {
        *at = a->next;
        held -= *(size_t *)m;
    }
    pthread_mutex_unlock(&held_mu);
    if (!a) return 1; /* CUDA_ERROR_INVALID_VALUE: not an allocation of cuMemAlloc */
    free(a);
    free(m);
    return 0;
}
struct copy {
    void *dst;
    const void *src;
    size_t n;
    int byte; /* memset's, or -1: a copy (of `src`, owned) */
};
static void run_copy(void *arg) {
    struct copy *c = arg;
    if (c->byte >= 0) {
        memset(c->dst, c->byte, c->n);
    } else {
        memcpy(c->dst, c->src, c->n);
        free((void *)c->src);
    }
    free(c);
}
/* Queued, or done now on the NULL stream; a stream capturing a graph refuses it (the stand-in
 * captures the fake NCCL's calls only). */
static CUresult queue_copy(void *s, void *dst, const void *src, size_t n, int byte) {
    struct copy *c = malloc(sizeof *c);
    *c = (struct copy){dst, src, n, byte};
    int r = fake_cuda_enqueue(s, run_copy, c);
    if (r == -2) {
        free((void *)(byte < 0 ? src : NULL));
        free(c);
        return CAPTURE_UNSUPPORTED;
    }
    if (r != 0) run_copy(c);
    return 0;
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *s) {
    /* From pageable memory the driver stages the source before returning. */
    void *held_src = malloc(n ? n : 1);
    memcpy(held_src, src, n);
    return queue_copy(s, P(dst), held_src, n, -1);
}
CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *s) {
    /* Into pageable memory: returns once the copy is done, after the stream's earlier work; a
     * capturing stream cannot wait. */
    struct stream *st = s;
    if (st && st->capture) {
        st->capture->invalid = 1;
        return CAPTURE_UNSUPPORTED;
    }
    if (s) drain(s);
    memcpy(dst, P(src), n);
    return 0;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char c, size_t n, void *s) {
    return queue_copy(s, P(dst), NULL, n, c);
}

struct event {
    struct timespec t;
    long not_ready;
    int queried; /* since the last record */
    int reached; /* the stream has reached the last record */
    int pending; /* a record queued and not yet reached */
};
static void stamp(void *arg) {
    struct event *ev = arg;
    clock_gettime(CLOCK_MONOTONIC, &ev->t);
    __atomic_store_n(&ev->reached, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&ev->pending, 0, __ATOMIC_RELEASE);
}
CUresult cuEventCreate(void **e, unsigned flags) {
    (void)flags;
    *e = calloc(1, sizeof(struct event));
    return 0;
}
CUresult cuEventDestroy_v2(void *e) {
    /* A record the stream has not reached still writes the event: wait for it. */
    struct event *ev = e;
    while (ev && __atomic_load_n(&ev->pending, __ATOMIC_ACQUIRE)) sched_yield();
    free(e);
    return 0;
}
CUresult cuEventRecord(void *e, void *s) {
    struct event *ev = e;
    ev->not_ready = env_long("FAKE_CUDA_NOT_READY", 0);
    ev->queried = 0;
    __atomic_store_n(&ev->reached, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&ev->pending, 1, __ATOMIC_RELEASE);
    int r = fake_cuda_enqueue(s, stamp, ev);
    if (r == -2) {
        /* Captured, a record is a node no host can time: the stand-in refuses it. */
        __atomic_store_n(&ev->pending, 0, __ATOMIC_RELEASE);
        return CAPTURE_UNSUPPORTED;
    }
    if (r != 0) stamp(ev);
    return 0;
}
CUresult cuEventQuery(void *e) {
    struct event *ev = e;
    if (!ev->queried) {
        ev->queried = 1;
        trace_sync();
    }
    if (!__atomic_load_n(&ev->reached, __ATOMIC_ACQUIRE)) return 600; /* CUDA_ERROR_NOT_READY */
    if (ev->not_ready > 0) {
        ev->not_ready--;
        return 600; /* CUDA_ERROR_NOT_READY */
    }
    return 0;
}
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
    struct event *s = a, *e = b;
    if (!__atomic_load_n(&s->reached, __ATOMIC_ACQUIRE) || !__atomic_load_n(&e->reached, __ATOMIC_ACQUIRE))
        return 600;
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
    case 401: *s = "CUDA_ERROR_ILLEGAL_STATE"; return 0;
    case 600: *s = "CUDA_ERROR_NOT_READY"; return 0;
    case 900: *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; return 0;
    case 901: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; return 0;
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
    case 401: *s = "the operation is not permitted in the current state"; return 0;
    case 600: *s = "device not ready"; return 0;
    case 900: *s = "operation not permitted when stream is capturing"; return 0;
    case 901: *s = "operation failed due to a previous error during capture"; return 0;
    default: *s = NULL; return 1;
    }
}

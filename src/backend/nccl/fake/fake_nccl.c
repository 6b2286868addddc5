/* A stand-in for libnccl.so.2, for coll-bench's tests on machines without a GPU (tests/nccl.rs
 * builds it and points COLL_BENCH_NCCL_LIBRARY at it), used with fake_cuda.c, whose "device"
 * pointers are host pointers. It is a small, slow, real implementation for ranks on one host:
 * as NCCL's kernels, a call's work runs on the caller's stream after the call has returned
 * (queued through fake_cuda.c's fake_cuda_enqueue; a failure there is the communicator's
 * asynchronous error); from FAKE_NCCL_VERSION 22200 on a communicator's first call connects it
 * on the host before returning, and its first collective waits there for every rank's first
 * collective (FAKE_NCCL_CONNECT_DELAY_MS=M adds M ms), as NCCL 2.22+ connects at run time;
 * ncclCommDestroy and ncclCommAbort wait for the queued work (aborted: it gives up). Data
 * moves between processes through
 * one-slot channels (one per ordered pair of ranks) in a POSIX shared-memory segment that rank 0
 * names in the unique id. Collectives are built from those channels and reduce in rank order, so
 * every rank gets the same result. Avg is NCCL's: integers sum then divide, float32 and float64
 * multiply each input by 1/n before summing (rounded unless n is a power of two). float16,
 * bfloat16 and (from FAKE_NCCL_VERSION 22400 on) the 8-bit floats reduce as NCCL's kernels do:
 * each step's result rounded to the type (ties to even), avg multiplying each input by 1/n held
 * in the type.
 *
 * ncclCommInitRank checks that the unique id arrived byte for byte (its first 64 bytes include
 * values above 127, where signed and unsigned char differ).
 *
 *   FAKE_NCCL_VERSION=CODE       ncclGetVersion's code (default 21805, NCCL 2.18.5)
 *   FAKE_NCCL_FAIL=WHAT          uniqueid: ncclGetUniqueId fails; init: ncclCommInitRank(Config)
 *                                fails at once; init-async: a non-blocking init fails later (its
 *                                ncclCommGetAsyncError reports it); init-hang: a non-blocking
 *                                init never completes (nor joins the others); async:
 *                                ncclCommGetAsyncError reports a remote error once a collective
 *                                or send/recv has been called; p2p: ncclSend and ncclRecv fail (so only native
 *                                all-to-all/gather/scatter can run); split-key: ncclCommSplit
 *                                ignores the key (orders a group by parent rank alone);
 *                                split-async: ncclCommSplit on a non-blocking parent fails on
 *                                NCCL's thread (the parent's ncclCommGetAsyncError reports it),
 *                                while the other ranks wait for this one to join the child
 *   FAKE_NCCL_FAIL_RANK=R        the init, split and p2p failures above on rank R only (default: every
 *                                rank); with p2p, the other ranks' sends and receives to R wait,
 *                                as NCCL's kernels do for a peer that never joins
 *   FAKE_NCCL_CHANNEL_BYTES=B    largest message between two ranks (default 1 MiB)
 *   FAKE_NCCL_CONNECT_BYTES=B    device memory a communicator takes at its first collective or
 *                                send/receive from FAKE_NCCL_VERSION 22200 on (default 64 MiB),
 *                                as NCCL 2.22+ connects lazily (its connection and NVLS buffers);
 *                                freed at destroy. Allocated through the libcuda the process
 *                                loaded (COLL_BENCH_CUDA_LIBRARY, else libcuda.so.1), so the
 *                                fake libcuda's free memory shrinks by it; where that allocation
 *                                fails the call returns ncclUnhandledCudaError, as NCCL does.
 *                                (Older NCCLs connect at init; the stand-in does not model that.)
 *   FAKE_NCCL_TRACE=PATH         append a line per communicator made or ended to PATH:
 *                                "PID init N" (ncclCommInitRank(Config) of N ranks), "PID split",
 *                                "PID destroy", "PID abort"; "PID launch" per collective or group
 *                                of sends/receives handed over ("PID overlap" before it where a
 *                                receive overlaps a send of the group), "PID thread" per one of those
 *                                run from a thread of its own (fake_cuda.c adds "PID sync" per
 *                                wait of the host for the device)
 *   FAKE_NCCL_TRACE_BUFFERS=1    also "PID buffers BYTES SEND RECV" per collective handed over
 *                                (its element count's bytes and both pointers)
 *
 * Debug output and tuning (NCCL src/debug.cc, src/enqueue.cc, src/graph/tuning.cc): NCCL_DEBUG,
 * NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE are read at the first message and again only at the first
 * one after ncclResetDebugInit (exported, as NCCL 2.24+ does; called on a stand-in claiming an
 * older NCCL it aborts the process, since such a library has no such symbol); the file ("%h",
 * "%p" expanded) is opened with "w" and line-buffered. Each all-reduce, all-gather,
 * reduce-scatter, broadcast and reduce is planned at the call: an algorithm and protocol chosen
 * among those NCCL_ALGO and NCCL_PROTO enable (read at init, NCCL's list syntax: "ring",
 * "^tree", "allreduce:tree;allgather:ring"; an unknown name fails the init with
 * ncclInvalidUsage; none left for a call: ncclInvalidUsage), by the stand-in's own rule (not
 * NCCL's cost model; only Tree, for all-reduce, and Ring exist here): all-reduce below 256 KiB
 * on Tree, else Ring; LL below 64 KiB, LL128 below 1 MiB, else Simple. Comm rank 0 then prints
 * the TUNING line in the claimed version's form: from 22400 "AllReduce: N Bytes -> Algo RING
 * proto SIMPLE channel{Lo..Hi}={0..1}", 22300 "AllReduce: N Bytes -> Algo 1 proto 2 time T",
 * 22000-22299 without the function's name, older none.
 *
 * ncclCommInitRankConfig (the config read as the claimed version reads it: parse_config) with
 * blocking = 0 returns ncclInProgress
 * and the communicator is ready once every rank has joined (ncclCommGetAsyncError says when),
 * so a rank whose init fails leaves the others in progress, as with the real NCCL; the blocking
 * ncclCommInitRank waits for every rank.
 *
 * Non-blocking communicators (NCCL src/group.cc, ncclGroupEndInternal): every collective, and
 * every group of sends/receives (a lone send or receive is a group), answers ncclInProgress. From
 * FAKE_NCCL_VERSION 22300 on (NCCL 2.23: each group end on a non-blocking communicator hands the
 * launch to a new thread) the work is done by a thread of its own and ncclCommGetAsyncError says
 * ncclInProgress until it has finished; before, it is done before the call returns. A
 * communicator still in progress refuses every call but ncclCommGetAsyncError and ncclCommAbort
 * with ncclInvalidArgument ("Attempt to use communicator before the previous operation returned
 * ncclSuccess", ncclCommEnsureReady in src/init.cc), ncclCommDestroy included; ncclCommAbort
 * stops the thread and ends the communicator. Blocking communicators do everything before
 * returning. Built with -DFAKE_NCCL_NATIVE it also exports newer NCCLs' native ncclAlltoAll,
 * ncclGather and ncclScatter (NCCL 2.28.3 on).
 *
 * ncclCommSplit (NCCL 2.18) is exported unless built with -DFAKE_NCCL_NO_SPLIT: collective over
 * the parent, whose ranks exchange (colour, key) through its channels; the ranks of one colour
 * form a communicator ordered by key, then parent rank; NCCL_SPLIT_NOCOLOR (-1) gets a null
 * comm. As NCCL's (src/init.cc, ncclCommInitChildComm; the job runs in the parent's group, whose
 * mode is the parent's): on a blocking parent it returns once the child is ready; on a
 * non-blocking parent it sets *newcomm to NULL, returns ncclSuccess, and a thread fills *newcomm
 * later, while the parent's ncclCommGetAsyncError says ncclInProgress (NVIDIA/nccl issue 1472).
 * The child is blocking or not as its config says (the parent's mode without one).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <math.h> /* NAN, INFINITY only */
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef void *cudaStream_t;

enum { ok = 0, system_error = 2, invalid_argument = 4, invalid_usage = 5, remote_error = 6, in_progress = 7 };
enum { PATTERN = 64 };

struct channel {
    uint64_t sent;  /* messages written by the sender */
    uint64_t taken; /* messages read by the receiver */
    uint64_t bytes; /* size of the message in the slot */
    char pad[40];
    /* then `cap` bytes of data */
};

struct segment {
    uint64_t joined;
    uint64_t nranks;
    uint64_t cap;
    uint64_t met; /* ranks that have made their first collective (see meet) */
    uint64_t windows; /* symmetric windows registered, summed over the ranks (see window_meet) */
    char pad[24];
    /* then nranks * nranks channels, [src][dst] */
};

struct comm {
    int nranks, rank;
    size_t cap, size;
    struct segment *seg;
    char name[64];  /* the segment's name, removed by rank 0 once every rank has joined */
    int joining;    /* a non-blocking init not yet complete */
    int nonblocking; /* made by a non-blocking init: calls answer ncclInProgress, then are done */
    int init_fails; /* a non-blocking init that will fail (FAKE_NCCL_FAIL=init-async) */
    int splits;     /* ncclCommSplit calls on this comm so far (names the children's segments) */
    /* NCCL_ALGO and NCCL_PROTO as read at init (tuning.cc's ncclTopoTuneModel): per function
     * (ncclFuncStr's order), whether each algorithm and protocol is enabled. */
    int algo_on[5][7], proto_on[5][3];
    /* A call handed to a thread of its own (non-blocking, NCCL >= 2.23, or a split on a
     * non-blocking parent): in progress until `done`, then joined by ncclCommGetAsyncError. */
    pthread_t worker;
    int working;
    int done;              /* set by the worker (atomic) */
    ncclResult_t outcome;  /* the worker's result */
    ncclResult_t sticky;   /* the first asynchronous error, reported from then on */
    int aborted;           /* ncclCommAbort: blocked transfers give up */
    unsigned long long conn; /* device memory of the lazy connection (FAKE_NCCL_CONNECT_BYTES), or 0 */
    int met;               /* this rank has made its first collective (see meet) */
    int share;             /* made with splitShare = 1: its children use its connection */
    struct comm *shares;   /* the parent whose connection this one uses, or NULL */
    int queued;            /* calls queued on a stream and not yet run (atomic) */
    unsigned long long windows; /* symmetric windows this rank has registered (window_meet) */
};
typedef struct comm *ncclComm_t;

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        ncclResult_t r_ = (x);                                                                     \
        if (r_ != ok) return r_;                                                                   \
    } while (0)

static char last_error[256] = "";
static long calls; /* collectives and sends/receives called so far */

static const char *fail(void) {
    const char *v = getenv("FAKE_NCCL_FAIL");
    return v ? v : "";
}
static void trace(const char *what, int n) {
    const char *path = getenv("FAKE_NCCL_TRACE");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    if (n >= 0) {
        fprintf(f, "%d %s %d\n", (int)getpid(), what, n);
    } else {
        fprintf(f, "%d %s\n", (int)getpid(), what);
    }
    fclose(f);
}
static unsigned char id_byte(int i) { return (unsigned char)(i * 37 + 200); }
static const size_t type_size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static ncclResult_t error(ncclResult_t r, const char *what) {
    snprintf(last_error, sizeof last_error, "fake NCCL: %s", what);
    return r;
}

/* NCCL's debug output (src/debug.cc), as far as the tuning line needs it: NCCL_DEBUG,
 * NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE are read once, at the first message, and again at the
 * first message after ncclResetDebugInit (NCCL 2.24+), which also closes the file; the file is
 * opened with "w" (emptied) and line-buffered; a line is "host:pid:tid [dev] NCCL INFO …". */
enum { LOG_NONE = 0, LOG_INFO = 3, DEBUG_UNREAD = -1, DEBUG_RESET = -2 };
enum { SUBSYS_INIT = 1, SUBSYS_ENV = 0x1000, SUBSYS_BOOTSTRAP = 0x2000, SUBSYS_TUNING = 0x80 };
static int debug_level = DEBUG_UNREAD;
static unsigned long debug_mask;
static FILE *debug_file;
static pthread_mutex_t debug_lock = PTHREAD_MUTEX_INITIALIZER;
static void debug_init(void) {
    if (debug_file && debug_file != stdout) fclose(debug_file);
    debug_file = stdout;
    const char *l = getenv("NCCL_DEBUG");
    debug_level = l && !strcasecmp(l, "INFO") ? LOG_INFO : l && !strcasecmp(l, "TRACE") ? LOG_INFO + 2 : l && !strcasecmp(l, "WARN") ? 2 : LOG_NONE;
    debug_mask = SUBSYS_INIT | SUBSYS_BOOTSTRAP | SUBSYS_ENV;
    const char *m = getenv("NCCL_DEBUG_SUBSYS");
    if (m) {
        int invert = *m == '^';
        char *list = strdup(m + invert), *save = NULL;
        debug_mask = invert ? ~0UL : 0UL;
        for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            unsigned long bit = !strcasecmp(t, "TUNING") ? SUBSYS_TUNING : !strcasecmp(t, "INIT") ? SUBSYS_INIT
                              : !strcasecmp(t, "ENV") ? SUBSYS_ENV : !strcasecmp(t, "ALL") ? ~0UL : 0;
            debug_mask = invert ? debug_mask & ~bit : debug_mask | bit;
        }
        free(list);
    }
    const char *f = getenv("NCCL_DEBUG_FILE");
    if (debug_level > 1 && f && *f) {
        char name[4096];
        size_t n = 0;
        for (const char *c = f; *c && n < sizeof name - 64; c++) {
            if (c[0] == '%' && c[1] == 'p') {
                n += (size_t)snprintf(name + n, sizeof name - n, "%d", (int)getpid());
                c++;
            } else if (c[0] == '%' && c[1] == 'h') {
                gethostname(name + n, sizeof name - n - 1);
                name[sizeof name - 1] = 0;
                n = strlen(name);
                c++;
            } else {
                name[n++] = *c;
            }
        }
        name[n] = 0;
        FILE *file = fopen(name, "w");
        if (file) {
            setlinebuf(file);
            debug_file = file;
        }
    }
}
static void info(unsigned long subsys, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void info(unsigned long subsys, const char *fmt, ...) {
    pthread_mutex_lock(&debug_lock);
    if (debug_level < 0) debug_init();
    if (debug_level >= LOG_INFO && (debug_mask & subsys)) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        char *dot = strchr(host, '.');
        if (dot) *dot = 0;
        fprintf(debug_file, "%s:%d:%d [0] NCCL INFO ", host, (int)getpid(), (int)gettid());
        va_list ap;
        va_start(ap, fmt);
        vfprintf(debug_file, fmt, ap);
        va_end(ap);
        fputc('\n', debug_file);
    }
    pthread_mutex_unlock(&debug_lock);
}
static int env_version(void);
/* Exported by NCCL from 2.24 only: a caller claiming an older NCCL must not find it. */
void ncclResetDebugInit(void) {
    if (env_version() < 22400) {
        fprintf(stderr, "fake NCCL: ncclResetDebugInit called, which NCCL %d does not export\n", env_version());
        abort();
    }
    pthread_mutex_lock(&debug_lock);
    debug_level = DEBUG_RESET;
    pthread_mutex_unlock(&debug_lock);
}

/* NCCL's names (src/init.cc: ncclFuncStr, ncclAlgoStr, ncclProtoStr; ncclAlgoToString and
 * ncclProtoToString print them in capitals). */
static const char *func_str[5] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
static const char *algo_str[7] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
static const char *algo_log[7] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char *proto_str[3] = {"LL", "LL128", "Simple"};
static const char *proto_log[3] = {"LL", "LL128", "SIMPLE"};
enum { TREE = 0, RING = 1, LL = 0, LL128 = 1, SIMPLE = 2 };

/* NCCL_ALGO / NCCL_PROTO as tuning.cc's parseList reads them: "[func:][^]name,name;func:…"; the
 * first entry may omit the function (then it sets every function). An unknown name: -1. */
static int parse_list(const char *str, const char **names, int nnames, int *on /* [5][nnames] */) {
    char *full = strdup(str), *save1 = NULL;
    int first = 1, rc = 0;
    for (char *tok = strtok_r(full, ";", &save1); tok && !rc; tok = strtok_r(NULL, ";", &save1), first = 0) {
        char *colon = strchr(tok, ':'), *list = colon ? colon + 1 : tok;
        if (colon) *colon = 0;
        if (!colon && !first) rc = -1;
        int set = *list != '^';
        if (!set) list++;
        for (int f = 0; f < 5 && !rc; f++) {
            if (colon && strcasecmp(tok, func_str[f])) continue;
            for (int e = 0; e < nnames; e++) on[f * nnames + e] = !set;
            char *items = strdup(list), *save2 = NULL;
            for (char *it = strtok_r(items, ",", &save2); it; it = strtok_r(NULL, ",", &save2)) {
                int e = 0;
                while (e < nnames && strcasecmp(it, names[e])) e++;
                if (e == nnames) {
                    rc = -1;
                    break;
                }
                on[f * nnames + e] = set;
            }
            free(items);
        }
    }
    free(full);
    return rc;
}

/* The stand-in's choice (its own rule, not NCCL's cost model; only Tree and Ring exist here, Tree
 * for all-reduce only): all-reduce below 256 KiB on Tree, else Ring; LL below 64 KiB, LL128 below
 * 1 MiB, else Simple; each the first enabled one where the preferred is not. -1: none enabled. */
static int choose(struct comm *c, int func, size_t bytes, int *algo, int *proto) {
    int tree_ok = func == 4 && c->algo_on[func][TREE], ring_ok = c->algo_on[func][RING];
    *algo = (tree_ok && (bytes < 262144 || !ring_ok)) ? TREE : ring_ok ? RING : -1;
    int want = bytes < 65536 ? LL : bytes < 1048576 ? LL128 : SIMPLE;
    *proto = c->proto_on[func][want] ? want : c->proto_on[func][SIMPLE] ? SIMPLE : c->proto_on[func][LL128] ? LL128 : c->proto_on[func][LL] ? LL : -1;
    return *algo < 0 || *proto < 0 ? -1 : 0;
}

/* Plan a collective as enqueue.cc does: choose, and on comm rank 0 print the tuning line in the
 * form of the claimed version (2.24+; 2.23 and 2.20-2.22 print numbers and a time; older, none). */
static ncclResult_t plan(struct comm *c, int func, size_t count, int dt) {
    size_t bytes = count * type_size[dt];
    int algo, proto;
    if (choose(c, func, bytes, &algo, &proto)) {
        int forced = getenv("NCCL_ALGO") || getenv("NCCL_PROTO");
        return error(forced ? invalid_usage : 3, "No algorithm/protocol available");
    }
    if (c->rank != 0) return ok;
    int v = env_version();
    if (v >= 22400) {
        info(SUBSYS_TUNING, "%s: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d}", func_str[func], bytes,
             algo_log[algo], proto_log[proto], bytes < 65536 ? 0 : 1);
    } else if (v >= 22300) {
        info(SUBSYS_TUNING, "%s: %zu Bytes -> Algo %d proto %d time %f", func_str[func], bytes, algo, proto, 10.0);
    } else if (v >= 22000) {
        info(SUBSYS_TUNING, "%zu Bytes -> Algo %d proto %d time %f", bytes, algo, proto, 10.0);
    }
    return ok;
}


/* The libcuda this process loaded (the same one coll-bench bound), for what NCCL asks of the
 * driver: the device's compute capability and its own device memory. NULL: none loaded. */
static void *cuda_lib(void) {
    static void *lib;
    if (!lib) {
        const char *path = getenv("COLL_BENCH_CUDA_LIBRARY");
        if (path && *path) lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (!lib) lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    }
    return lib;
}

/* Compute capability (major*10 + minor) of the current context's device; 90 without a driver. */
static int compute_capability(void) {
    void *lib = cuda_lib();
    int (*get_device)(int *) = lib ? (int (*)(int *))dlsym(lib, "cuCtxGetDevice") : NULL;
    int (*attr)(int *, int, int) = lib ? (int (*)(int *, int, int))dlsym(lib, "cuDeviceGetAttribute") : NULL;
    int dev = 0, major = 9, minor = 0;
    if (!get_device || !attr || get_device(&dev) != 0) return 90;
    if (attr(&major, 75, dev) != 0 || attr(&minor, 76, dev) != 0) return 90;
    return major * 10 + minor;
}

/* A communicator's connection: its buffers (FAKE_NCCL_CONNECT_BYTES), traced "connect". NCCL
 * 2.22+ makes it at the first collective or send/receive (out of device memory, that call fails:
 * ncclUnhandledCudaError); older NCCLs, or NCCL_RUNTIME_CONNECT=0, at init. A communicator split
 * from a parent made with splitShare = 1 uses its parent's (NCCL's shared resources). */
static int connected_lazily(void);
static ncclResult_t connect_(struct comm *c) {
    if (c->shares) c = c->shares;
    if (c->conn) return ok;
    void *lib = cuda_lib();
    int (*alloc)(unsigned long long *, size_t) = lib ? (int (*)(unsigned long long *, size_t))dlsym(lib, "cuMemAlloc_v2") : NULL;
    if (!alloc) return ok;
    const char *v = getenv("FAKE_NCCL_CONNECT_BYTES");
    size_t bytes = v && *v ? (size_t)atoll(v) : (size_t)64 << 20;
    if (bytes == 0) return ok;
    if (alloc(&c->conn, bytes) != 0) {
        c->conn = 0;
        return error(1, "Cuda failure 'out of memory' allocating the connection buffers");
    }
    trace("connect", -1);
    return ok;
}
/* NCCL 2.22+ connects at a communicator's first collective, in the call itself: the host waits
 * there until its peers make theirs (FAKE_NCCL_CONNECT_DELAY_MS=M adds M ms, as connecting over a
 * network takes). A rank whose peers never call waits for ever, as with NCCL. */
static ncclResult_t meet(struct comm *c) {
    if (c->met || !connected_lazily() || !c->seg) return ok;
    const char *d = getenv("FAKE_NCCL_CONNECT_DELAY_MS");
    if (d && *d) usleep((useconds_t)atol(d) * 1000);
    __atomic_add_fetch(&c->seg->met, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&c->seg->met, __ATOMIC_ACQUIRE) < (uint64_t)c->nranks) {
        if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) return error(remote_error, "aborted");
        sched_yield();
    }
    c->met = 1;
    return ok;
}
static void disconnect(struct comm *c) {
    void *lib = cuda_lib();
    int (*release)(unsigned long long) = lib ? (int (*)(unsigned long long))dlsym(lib, "cuMemFree_v2") : NULL;
    if (c->conn && release && !c->shares) release(c->conn);
    c->conn = 0;
}

static size_t channel_stride(size_t cap) { return sizeof(struct channel) + ((cap + 63) / 64) * 64; }

static struct channel *chan(struct comm *c, int src, int dst) {
    char *base = (char *)c->seg + sizeof(struct segment);
    return (struct channel *)(base + ((size_t)src * (size_t)c->nranks + (size_t)dst) * channel_stride(c->cap));
}

static void pause_(void) { sched_yield(); }

/* Write one message from this rank to `dst`: waits until the previous one was taken. */
static int bootstrap; /* put/take on behalf of ncclCommSplit: no connection made */
static ncclResult_t put(struct comm *c, int dst, const void *data, size_t bytes) {
    if (!bootstrap && connected_lazily()) CHECK(connect_(c));
    if (bytes > c->cap) return error(invalid_usage, "message larger than FAKE_NCCL_CHANNEL_BYTES");
    struct channel *ch = chan(c, c->rank, dst);
    uint64_t sent = __atomic_load_n(&ch->sent, __ATOMIC_RELAXED);
    while (__atomic_load_n(&ch->taken, __ATOMIC_ACQUIRE) != sent) {
        if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) return error(remote_error, "aborted");
        pause_();
    }
    memcpy((char *)(ch + 1), data, bytes);
    ch->bytes = bytes;
    __atomic_store_n(&ch->sent, sent + 1, __ATOMIC_RELEASE);
    return ok;
}

/* As put, but 0 without waiting where the previous message was not yet taken; 1 once written. */
static int try_put(struct comm *c, int dst, const void *data, size_t bytes) {
    struct channel *ch = chan(c, c->rank, dst);
    uint64_t sent = __atomic_load_n(&ch->sent, __ATOMIC_RELAXED);
    if (__atomic_load_n(&ch->taken, __ATOMIC_ACQUIRE) != sent) return 0;
    memcpy((char *)(ch + 1), data, bytes);
    ch->bytes = bytes;
    __atomic_store_n(&ch->sent, sent + 1, __ATOMIC_RELEASE);
    return 1;
}

/* Read the next message from `src` into `data` (at most `bytes`). */
static ncclResult_t take(struct comm *c, int src, void *data, size_t bytes) {
    if (!bootstrap && connected_lazily()) CHECK(connect_(c));
    struct channel *ch = chan(c, src, c->rank);
    uint64_t taken = __atomic_load_n(&ch->taken, __ATOMIC_RELAXED);
    while (__atomic_load_n(&ch->sent, __ATOMIC_ACQUIRE) == taken) {
        if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) return error(remote_error, "aborted");
        pause_();
    }
    if (ch->bytes != bytes) return error(invalid_usage, "send and receive sizes differ");
    memcpy(data, (char *)(ch + 1), bytes);
    __atomic_store_n(&ch->taken, taken + 1, __ATOMIC_RELEASE);
    return ok;
}

/* acc[i] = acc[i] op x[i], wrapping for integers. */
#define REDUCE_INT(T, U)                                                                           \
    for (size_t i = 0; i < n; i++) {                                                               \
        T a = ((T *)acc)[i], b = ((const T *)x)[i];                                                \
        T r;                                                                                       \
        switch (op) {                                                                              \
        case 1: r = (T)((U)a * (U)b); break;                                                       \
        case 2: r = a > b ? a : b; break;                                                          \
        case 3: r = a < b ? a : b; break;                                                          \
        default: r = (T)((U)a + (U)b); break;                                                      \
        }                                                                                          \
        ((T *)acc)[i] = r;                                                                         \
    }
#define REDUCE_FLOAT(T)                                                                            \
    for (size_t i = 0; i < n; i++) {                                                               \
        T a = ((T *)acc)[i], b = ((const T *)x)[i];                                                \
        T r;                                                                                       \
        switch (op) {                                                                              \
        case 1: r = a * b; break;                                                                  \
        case 2: r = a > b ? a : b; break;                                                          \
        case 3: r = a < b ? a : b; break;                                                          \
        default: r = a + b; break;                                                                 \
        }                                                                                          \
        ((T *)acc)[i] = r;                                                                         \
    }
/* The narrow floats through double: (exponent bits, mantissa bits, IEEE-like all-ones exponent). */
struct narrow { int e, m, ieee; };
/* Without libm (the stand-in links nothing but libc): 2^k, the binary exponent of a > 0 (a in
 * [2^k, 2^(k+1))), and rounding to an integer, ties to even, of 0 <= x < 2^52. */
static double pow2(int k) {
    double r = 1;
    for (; k > 0; k--) r *= 2;
    for (; k < 0; k++) r /= 2;
    return r;
}
static int binade(double a) {
    int k = 0;
    while (a >= 2) { a /= 2; k++; }
    while (a < 1) { a *= 2; k--; }
    return k;
}
static double round_even(double x) {
    volatile double t = x + 4503599627370496.0; /* 2^52: the addition rounds to an integer */
    return t - 4503599627370496.0;
}
static const struct narrow narrow_of[12] = {
    [6] = {5, 10, 1}, [9] = {8, 7, 1}, [10] = {4, 3, 0}, [11] = {5, 2, 1},
};
static double narrow_max(struct narrow f) {
    int bias = (1 << (f.e - 1)) - 1, top = (1 << f.e) - 1;
    int ef = f.ieee ? top - 1 : top, mant = f.ieee ? (1 << f.m) - 1 : (1 << f.m) - 2;
    return (1.0 + mant / (double)(1 << f.m)) * pow2(ef - bias);
}
static double narrow_decode(struct narrow f, unsigned bits) {
    int bias = (1 << (f.e - 1)) - 1, top = (1 << f.e) - 1;
    double sign = (bits >> (f.e + f.m)) & 1 ? -1.0 : 1.0;
    int ef = (int)((bits >> f.m) & (unsigned)top), mant = (int)(bits & ((1u << f.m) - 1));
    if (f.ieee && ef == top) return mant ? NAN : sign * INFINITY;
    if (!f.ieee && ef == top && mant == (1 << f.m) - 1) return NAN;
    if (ef == 0) return sign * mant * pow2(1 - bias - f.m);
    return sign * (1.0 + mant / (double)(1 << f.m)) * pow2(ef - bias);
}
static unsigned narrow_encode(struct narrow f, double x) {
    int bias = (1 << (f.e - 1)) - 1, emin = 1 - bias;
    unsigned sign = x < 0 || (x == 0 && 1 / x < 0) ? 1u << (f.e + f.m) : 0;
    unsigned nan = sign | ((1u << (f.e + f.m)) - 1);
    if (x != x) return nan;
    double a = x < 0 ? -x : x;
    if (a > 2 * narrow_max(f)) return f.ieee ? sign | (((1u << f.e) - 1) << f.m) : nan;
    int exp = a == 0 ? emin : (binade(a) > emin ? binade(a) : emin);
    double q = pow2(exp - f.m), r = round_even(a / q) * q;
    if (r > narrow_max(f)) return f.ieee ? sign | (((1u << f.e) - 1) << f.m) : nan;
    if (r == 0) return sign;
    int re = binade(r);
    if (re < emin) return sign | (unsigned)(r / pow2(emin - f.m));
    return sign | ((unsigned)(re + bias) << f.m) | ((unsigned)(r * pow2(f.m - re)) - (1u << f.m));
}
static double narrow_get(const void *p, int dt, size_t i) {
    return narrow_decode(narrow_of[dt], type_size[dt] == 1 ? ((const uint8_t *)p)[i] : ((const uint16_t *)p)[i]);
}
static void narrow_set(void *p, int dt, size_t i, double v) {
    unsigned bits = narrow_encode(narrow_of[dt], v);
    if (type_size[dt] == 1) {
        ((uint8_t *)p)[i] = (uint8_t)bits;
    } else {
        ((uint16_t *)p)[i] = (uint16_t)bits;
    }
}
static void reduce_narrow(void *acc, const void *x, size_t n, int dt, int op) {
    for (size_t i = 0; i < n; i++) {
        double a = narrow_get(acc, dt, i), b = narrow_get(x, dt, i), r;
        switch (op) {
        case 1: r = a * b; break;
        case 2: r = a > b ? a : b; break;
        case 3: r = a < b ? a : b; break;
        default: r = a + b; break;
        }
        narrow_set(acc, dt, i, r);
    }
}

/* NCCL's FuncSumPostDiv: the wrapped sum divided by the rank count as a number (never cast to
 * T, which for int8 from 128 ranks is negative and for uint8 at 256 zero), toward zero. */
#define DIVIDE(T)                                                                                  \
    for (size_t i = 0; i < n; i++) ((T *)acc)[i] = (T)(((T *)acc)[i] / (int64_t)nranks);

static void reduce(void *acc, const void *x, size_t n, int dt, int op) {
    switch (dt) {
    case 0: REDUCE_INT(int8_t, uint8_t); break;
    case 1: REDUCE_INT(uint8_t, uint8_t); break;
    case 2: REDUCE_INT(int32_t, uint32_t); break;
    case 3: REDUCE_INT(uint32_t, uint32_t); break;
    case 4: REDUCE_INT(int64_t, uint64_t); break;
    case 5: REDUCE_INT(uint64_t, uint64_t); break;
    case 7: REDUCE_FLOAT(float); break;
    case 8: REDUCE_FLOAT(double); break;
    default: reduce_narrow(acc, x, n, dt, op); break; /* float16, bfloat16, 8-bit floats */
    }
}

/* Avg of floats, as NCCL: each input times 1/nranks, then summed. */
static void premultiply(void *x, size_t n, int dt, int op, int nranks) {
    if (op != 4) return;
    if (dt == 7) {
        float inv = (float)(1.0 / nranks);
        for (size_t i = 0; i < n; i++) ((float *)x)[i] *= inv;
    } else if (dt == 8) {
        double inv = 1.0 / nranks;
        for (size_t i = 0; i < n; i++) ((double *)x)[i] *= inv;
    } else if (dt == 6 || dt >= 9) {
        /* The scalar 1/n held in the type, each product rounded to it. */
        double inv = narrow_decode(narrow_of[dt], narrow_encode(narrow_of[dt], 1.0 / nranks));
        for (size_t i = 0; i < n; i++) narrow_set(x, dt, i, narrow_get(x, dt, i) * inv);
    }
}

/* Avg of integers, as NCCL: summed, then divided. */
static void finish_avg(void *acc, size_t n, int dt, int op, int nranks) {
    if (op != 4) return;
    switch (dt) {
    case 0: DIVIDE(int8_t); break;
    case 1: DIVIDE(uint8_t); break;
    case 2: DIVIDE(int32_t); break;
    case 3: DIVIDE(uint32_t); break;
    case 4: DIVIDE(int64_t); break;
    case 5: DIVIDE(uint64_t); break;
    default: break;
    }
}

static int env_version(void) {
    const char *e = getenv("FAKE_NCCL_VERSION");
    return e && *e ? atoi(e) : 21805;
}
static int connected_lazily(void) {
    const char *rc = getenv("NCCL_RUNTIME_CONNECT");
    return env_version() >= 22200 && !(rc && !strcmp(rc, "0"));
}
ncclResult_t ncclGetVersion(int *v) {
    *v = env_version();
    return ok;
}
const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case 0: return "no error";
    case 1: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case 2: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case 3: return "internal error - please report this issue to the NCCL developers";
    case 4: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case 5: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case 6: return "remote process exited or there was a network error";
    case 7: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}
const char *ncclGetLastError(ncclComm_t comm) {
    (void)comm;
    return last_error;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    static int made;
    if (!strcmp(fail(), "uniqueid")) return error(system_error, "no network interface for the bootstrap");
    memset(id, 0, sizeof *id);
    for (int i = 0; i < PATTERN; i++) id->internal[i] = (char)id_byte(i);
    snprintf(id->internal + PATTERN, sizeof id->internal - PATTERN, "/coll-bench-fake-%d-%d", (int)getpid(), made++);
    return ok;
}

/* Whether the failure WHAT applies to this rank (FAKE_NCCL_FAIL_RANK). */
static int fails_here(const char *what, int rank) {
    if (strcmp(fail(), what)) return 0;
    const char *r = getenv("FAKE_NCCL_FAIL_RANK");
    return !r || !*r || atoi(r) == rank;
}

/* Map the segment and count this rank in; the communicator is ready once every rank is. */
static ncclResult_t join(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
    for (int i = 0; i < PATTERN; i++)
        if ((unsigned char)id.internal[i] != id_byte(i)) return error(invalid_usage, "the unique id did not arrive intact");
    if (fails_here("init", rank)) return error(system_error, "cannot reach the other ranks");
    if (nranks < 1 || rank < 0 || rank >= nranks) return error(invalid_argument, "bad rank or rank count");
    char name[64];
    memcpy(name, id.internal + PATTERN, sizeof name);
    name[sizeof name - 1] = 0;
    const char *capv = getenv("FAKE_NCCL_CHANNEL_BYTES");
    size_t cap = capv && *capv ? (size_t)atol(capv) : (size_t)1 << 20;
    size_t size = sizeof(struct segment) + (size_t)nranks * (size_t)nranks * channel_stride(cap);
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0) return error(system_error, "shm_open failed");
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return error(system_error, "ftruncate of the shared segment failed");
    }
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return error(system_error, "mmap of the shared segment failed");
    struct comm *c = calloc(1, sizeof *c);
    c->nranks = nranks;
    c->rank = rank;
    c->cap = cap;
    c->size = size;
    c->seg = m;
    for (int f = 0; f < 5; f++) {
        for (int a = 0; a < 7; a++) c->algo_on[f][a] = 1;
        for (int p = 0; p < 3; p++) c->proto_on[f][p] = 1;
    }
    const char *algos = getenv("NCCL_ALGO"), *protos = getenv("NCCL_PROTO");
    if ((algos && parse_list(algos, algo_str, 7, &c->algo_on[0][0])) ||
        (protos && parse_list(protos, proto_str, 3, &c->proto_on[0][0]))) {
        munmap(m, size);
        free(c);
        return error(invalid_usage, "NCCL_ALGO or NCCL_PROTO names an unknown algorithm or protocol");
    }
    memcpy(c->name, name, sizeof c->name);
    __atomic_add_fetch(&c->seg->joined, 1, __ATOMIC_ACQ_REL);
    c->joining = 1;
    *out = c;
    return ok;
}

/* Whether every rank has joined; then rank 0 removes the segment's name (all have mapped it). */
static int joined(ncclComm_t c) {
    if (!c->joining) return 1;
    if (!c->seg) return 0; /* init-hang */
    if (__atomic_load_n(&c->seg->joined, __ATOMIC_ACQUIRE) < (uint64_t)c->nranks) return 0;
    if (c->rank == 0) {
        shm_unlink(c->name);
    }
    c->joining = 0;
    /* Connected at init before NCCL 2.22 (an error there is the init's). */
    if (!connected_lazily() && connect_(c) != ok && c->sticky == ok) c->sticky = 1; /* ncclUnhandledCudaError */
    return 1;
}

ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank) {
    trace("init", nranks);
    CHECK(join(out, nranks, id, rank));
    while (!joined(*out)) pause_();
    return ok;
}

/* ncclConfig_t in NCCL 2.32.3's layout; older layouts are prefixes of it. */
#define UNDEF_INT (-2147483647 - 1)
typedef struct {
    size_t size;
    unsigned int magic, version;
    int blocking, cgaClusterSize, minCTAs, maxCTAs;
    const char *netName;
    int splitShare, trafficClass;
    const char *commName;
    int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs, nChannelsPerNetPeer, nvlinkCentricSched,
        graphUsageMode, numRmaCtx, maxP2pPeers, graphStreamOrdering, launchOrderImplicit, numRmaSig,
        rmaEagerInit, hostCftMode, nvlsHostMode;
} ncclConfig_t;

/* sizeof(ncclConfig_t) in the claimed version's nccl.h. */
static size_t config_size(int v) {
    if (v < 21700) return 24;
    if (v < 21800) return 40;
    if (v < 22700) return 48;
    if (v < 22800) return 72;
    if (v < 22900) return 80;
    if (v < 23000) return 88;
    if (v < 23100) return 96;
    return sizeof(ncclConfig_t);
}

/* NCCL's parseCommConfig (src/init.cc, the same steps from 2.18 to 2.32): min(size, its own
 * sizeof) bytes of the caller's config copied over NCCL_CONFIG_INITIALIZER, with no check of
 * size or version against the library's; the magic checked (from 2.22 a size that does not cover
 * it fails too); fields newer than the caller's version reset to their defaults, as far as the
 * claimed version has those resets (2.26 has none for trafficClass, so 2.18-2.25's padding at
 * byte 44 is taken as the traffic class); then each value checked as NCCL checks it. The traffic
 * class goes to the network plugin as the InfiniBand service level, where a value outside 0-15
 * fails the queue pair's set-up (ibv_modify_qp): ncclSystemError at init. FAKE_NCCL_TRACE gets
 * "PID config SIZE VERSION blocking=B splitShare=S trafficClass=T" (undef: UNDEF_INT). */
static ncclResult_t parse_config(const ncclConfig_t *user, ncclConfig_t *out) {
    int v = env_version();
    size_t own = config_size(v), real;
    ncclConfig_t c;
    memset(&c, 0, sizeof c);
    int *ints = &c.blocking;
    for (int *i = ints; i < (int *)(&c + 1); i++) *i = UNDEF_INT;
    c.netName = c.commName = NULL;
    c.size = own;
    c.magic = 0xcafebeef;
    c.version = v;
    if (v < 21700) c.blocking = 1;
    if (v >= 22200) c.magic = 0;
    memcpy(&real, user, sizeof real);
    if (real > own) real = own;
    memcpy(&c, user, real);
    if (c.magic != 0xcafebeef) return error(invalid_argument, "ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
    if (c.version < 21400) c.blocking = UNDEF_INT;
    if (c.version < 21700) c.cgaClusterSize = c.minCTAs = c.maxCTAs = UNDEF_INT, c.netName = NULL;
    if (v >= 22700 && c.version < 22500) c.trafficClass = UNDEF_INT;
    if (v >= 22700 && c.version < 22700) c.collnetEnable = c.CTAPolicy = c.shrinkShare = c.nvlsCTAs = UNDEF_INT;
    if (v >= 22800 && c.version < 22800) c.nChannelsPerNetPeer = c.nvlinkCentricSched = UNDEF_INT;
    if (v >= 22900 && c.version < 22900) c.graphUsageMode = c.numRmaCtx = UNDEF_INT;
    if (v >= 23000 && c.version < 23000) c.maxP2pPeers = UNDEF_INT;
    if (v >= 23005 && c.version < 23005) c.graphStreamOrdering = UNDEF_INT;
    if (v < 21700) c.cgaClusterSize = UNDEF_INT; /* 2.14-2.16: the padding word, no field */
    if (v < 22600) c.trafficClass = UNDEF_INT;   /* before 2.26: padding or beyond the struct */
    const char *path = getenv("FAKE_NCCL_TRACE");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%d config %zu %u blocking=", (int)getpid(), user->size, user->version);
        if (c.blocking == UNDEF_INT) fprintf(f, "undef"); else fprintf(f, "%d", c.blocking);
        fprintf(f, " splitShare=");
        if (c.splitShare == UNDEF_INT) fprintf(f, "undef"); else fprintf(f, "%d", c.splitShare);
        fprintf(f, " trafficClass=");
        if (c.trafficClass == UNDEF_INT) fprintf(f, "undef\n"); else fprintf(f, "%d\n", c.trafficClass);
        fclose(f);
    }
#define ONE_OF(x) ((x) == UNDEF_INT || (x) == 0 || (x) == 1)
    if (!ONE_OF(c.blocking)) return error(invalid_argument, "blocking must be 0 or 1");
    if (c.cgaClusterSize != UNDEF_INT && c.cgaClusterSize < 0) return error(invalid_argument, "cgaClusterSize must be >= 0");
    if ((c.minCTAs != UNDEF_INT && c.minCTAs <= 0) || (c.maxCTAs != UNDEF_INT && c.maxCTAs <= 0))
        return error(invalid_argument, "minCTAs and maxCTAs must be positive");
    if (!ONE_OF(c.splitShare) || !ONE_OF(c.collnetEnable) || !ONE_OF(c.shrinkShare) || !ONE_OF(c.nvlinkCentricSched))
        return error(invalid_argument, "splitShare, collnetEnable, shrinkShare and nvlinkCentricSched must be 0 or 1");
    if (c.trafficClass != UNDEF_INT && (c.trafficClass < 0 || c.trafficClass > 15))
        return error(system_error, "NET/IB: ibv_modify_qp failed with 22 Invalid argument (service level from trafficClass)");
#undef ONE_OF
    if (out) *out = c;
    return ok;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config) {
    ncclConfig_t parsed = {0};
    if (config) CHECK(parse_config(config, &parsed));
    if (!config || parsed.blocking != 0) return ncclCommInitRank(out, nranks, id, rank);
    trace("init", nranks);
    int fails = fails_here("init-async", rank), hangs = fails_here("init-hang", rank);
    if (fails || hangs) {
        /* Never counted in: the others wait for this rank, as for a real peer that failed. */
        struct comm *c = calloc(1, sizeof *c);
        c->nranks = nranks;
        c->rank = rank;
        c->joining = 1;
        c->init_fails = fails;
        *out = c;
        return in_progress;
    }
    CHECK(join(out, nranks, id, rank));
    (*out)->nonblocking = 1;
    (*out)->share = parsed.splitShare == 1;
    return in_progress;
}

/* Point-to-point queued in a group (see ncclGroupEnd). */
#define MAXP2P 4096
struct p2p {
    ncclComm_t comm;
    void *buf;
    size_t bytes;
    int peer;
    void *stream;
};

/* One call handed to NCCL: run before returning, or by a thread of its own (`spawn`). */
struct job {
    ncclResult_t (*fn)(struct job *);
    ncclComm_t c;
    const void *s;
    void *r;
    size_t n;
    int dt, op, root;
    struct p2p *sends, *recvs; /* a group of sends/receives (malloc'ed copies) */
    int nsend, nrecv;
    int color, key;            /* a split */
    ncclComm_t *newcomm;
    int child_nonblocking;
    void *stream;              /* a collective's or group's: where its work is queued */
    struct job *colls;         /* a group's collectives, in call order (malloc'ed copies) */
    int ncolls;
};

static void free_job(struct job *j) {
    free(j->sends);
    free(j->recvs);
    free(j->colls);
}

/* A call's work as the stream runs it: an error is the communicator's asynchronous error. */
static void run_queued(void *arg) {
    struct job *j = arg;
    ncclComm_t c = j->c;
    ncclResult_t r = j->fn(j);
    ncclResult_t none = ok;
    if (r != ok) __atomic_compare_exchange_n(&c->sticky, &none, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    free_job(j);
    free(j);
    __atomic_sub_fetch(&c->queued, 1, __ATOMIC_ACQ_REL);
}

/* A captured call's work, at each launch of its graph: the job stays (the graph releases it). */
static void run_replayed(void *arg) {
    struct job *j = arg;
    ncclResult_t r = j->fn(j);
    ncclResult_t none = ok;
    if (r != ok) __atomic_compare_exchange_n(&j->c->sticky, &none, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
static void release_job(void *arg) {
    free_job(arg);
    free(arg);
}
/* Whether `stream` is capturing a graph (cuStreamIsCapturing, as NCCL asks the runtime's
 * cudaStreamGetCaptureInfo); an invalidated capture counts as one. */
static int capturing(void *lib, void *stream) {
    int (*is)(void *, int *) = lib ? (int (*)(void *, int *))dlsym(lib, "cuStreamIsCapturing") : NULL;
    int status = 0;
    return is && is(stream, &status) == 0 && status != 0;
}

/* Hand the heap job `h` (taken) to its stream, through the libcuda this process loaded
 * (fake_cuda_enqueue), as NCCL's kernels run on the caller's stream after the call returns; where
 * there is no such stream, run it now. */
static ncclResult_t submit(struct job *h) {
    void *lib = cuda_lib();
    int (*enqueue)(void *, void (*)(void *), void *) =
        lib ? (int (*)(void *, void (*)(void *), void *))dlsym(lib, "fake_cuda_enqueue") : NULL;
    ncclComm_t c = h->c;
    if (h->stream && capturing(lib, h->stream)) {
        /* NCCL's kernels on a capturing stream become nodes of the graph, run at each launch. */
        int (*add)(void *, void (*)(void *), void *, void (*)(void *)) =
            (int (*)(void *, void (*)(void *), void *, void (*)(void *)))dlsym(lib, "fake_cuda_capture");
        if (add && add(h->stream, run_replayed, h, release_job) == 0) return ok;
        free_job(h);
        free(h);
        return error(invalid_usage, "a call on a stream whose capture cannot take it");
    }
    if (h->stream && enqueue) {
        __atomic_add_fetch(&c->queued, 1, __ATOMIC_ACQ_REL);
        if (enqueue(h->stream, run_queued, h) == 0) return ok;
        __atomic_sub_fetch(&c->queued, 1, __ATOMIC_ACQ_REL);
    }
    ncclResult_t r = h->fn(h);
    free_job(h);
    free(h);
    return r;
}

/* Wait until the calls queued on streams have run (or given up, once aborted). */
static void settle(ncclComm_t c) {
    while (__atomic_load_n(&c->queued, __ATOMIC_ACQUIRE) > 0) sched_yield();
}

static void *worker_main(void *arg) {
    struct job *j = arg;
    ncclComm_t c = j->c;
    ncclResult_t r;
    if (j->stream) {
        r = submit(j); /* a launch: queued on its stream, then the communicator is ready */
    } else {
        r = j->fn(j);
        free_job(j);
        free(j);
    }
    c->outcome = r;
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Whether `c` is still in progress (a worker running, or a non-blocking init not complete);
 * joins a worker that has finished, keeping its error. */
static int busy(ncclComm_t c) {
    if (c->working && __atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
        pthread_join(c->worker, NULL);
        c->working = 0;
        if (c->outcome != ok && c->sticky == ok) c->sticky = c->outcome;
    }
    return c->working || (c->joining && !joined(c));
}

/* NCCL's ncclCommEnsureReady: a communicator in progress, or with an asynchronous error,
 * refuses the call. */
#define READY(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) return error(invalid_argument, "null communicator");                             \
        if (busy(c))                                                                               \
            return error(invalid_argument,                                                         \
                         "Attempt to use communicator before the previous operation returned "     \
                         "ncclSuccess");                                                           \
        if ((c)->sticky != ok) return (c)->sticky;                                                 \
    } while (0)

/* Run `j` on a thread of its own; `c` is in progress until it has finished. `launched`: a
 * collective or group (traced "thread"), not a split. */
static ncclResult_t spawn(struct job *j, int launched) {
    struct job *h = malloc(sizeof *h);
    *h = *j;
    ncclComm_t c = j->c;
    c->working = 1;
    c->done = 0;
    if (pthread_create(&c->worker, NULL, worker_main, h) != 0) {
        c->working = 0;
        free_job(h);
        free(h);
        return error(system_error, "pthread_create failed");
    }
    if (launched) trace("thread", -1);
    return in_progress;
}

/* Hand a collective or a group of sends/receives to NCCL (src/group.cc, ncclGroupEndInternal). */
static ncclResult_t launch(struct job *j) {
    trace("launch", -1);
    for (int i = 0; i < (j->ncolls ? j->ncolls : 1) && getenv("FAKE_NCCL_TRACE_BUFFERS"); i++) {
        const struct job *k = j->ncolls ? &j->colls[i] : j;
        if (!k->r) continue;
        char line[96];
        snprintf(line, sizeof line, "buffers %zu %p %p", k->n * type_size[k->dt], k->s, k->r);
        trace(line, -1);
    }
    ncclComm_t c = j->c;
    /* The lazy connection (NCCL 2.22+): made by the first call, on the host, before it returns:
     * its buffers, and for a collective every rank's first collective. */
    ncclResult_t r = connected_lazily() ? connect_(c) : ok;
    if (r == ok && (j->r || j->ncolls)) r = meet(c);
    if (r != ok) {
        free_job(j);
        return r;
    }
    if (c->nonblocking && env_version() >= 22300) return spawn(j, 1);
    struct job *h = malloc(sizeof *h);
    *h = *j;
    r = submit(h);
    return r == ok && c->nonblocking ? in_progress : r;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
    if (!comm || !count) return error(invalid_argument, "ncclCommCount: null argument");
    *count = comm->nranks;
    return ok;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
    if (!comm || !rank) return error(invalid_argument, "ncclCommUserRank: null argument");
    *rank = comm->rank;
    return ok;
}

#ifndef FAKE_NCCL_NO_SPLIT
/* The split itself, collective over the parent `j->c`: fills *j->newcomm once the child is
 * ready (every rank of its colour joined). */
static ncclResult_t run_split(struct job *j) {
    ncclComm_t comm = j->c;
    int color = j->color, key = j->key;
    /* Every rank's (colour, key), through the parent's channels. */
    int n = comm->nranks, mine[2] = {color, key};
    int *all = malloc((size_t)n * sizeof mine);
    bootstrap = 1;
    for (int p = 0; p < n; p++) {
        if (p != comm->rank && put(comm, p, mine, sizeof mine) != ok) {
            bootstrap = 0;
            free(all);
            return system_error;
        }
    }
    for (int p = 0; p < n; p++) {
        if (p == comm->rank) {
            memcpy(all + 2 * p, mine, sizeof mine);
        } else {
            ncclResult_t r = take(comm, p, all + 2 * p, sizeof mine);
            if (r != ok) {
                bootstrap = 0;
                free(all);
                return r;
            }
        }
    }
    bootstrap = 0;
    if (fails_here("split-async", comm->rank)) {
        /* After the exchange, as a peer's connection failing during the child's bootstrap: the
         * parent reports it, the others wait for this rank to join the child. */
        free(all);
        return error(system_error, "split: bootstrap connection to a peer refused");
    }
    int seq = comm->splits++, size = 0, rank = 0, ignore_key = !strcmp(fail(), "split-key");
    for (int p = 0; p < n; p++) {
        if (all[2 * p] != color) continue;
        size++;
        int k = ignore_key ? 0 : all[2 * p + 1], kk = ignore_key ? 0 : key;
        if (k < kk || (k == kk && p < comm->rank)) rank++;
    }
    free(all);
    if (color == -1) return ok;
    /* The child's segment: named after the parent's, the split's sequence number and the colour. */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    for (int i = 0; i < PATTERN; i++) id.internal[i] = (char)id_byte(i);
    snprintf(id.internal + PATTERN, sizeof id.internal - PATTERN, "%.40s-s%d-c%d", comm->name, seq, color);
    ncclComm_t child = NULL;
    CHECK(join(&child, size, id, rank));
    if (comm->share) child->shares = comm->shares ? comm->shares : comm;
    while (!joined(child)) {
        if (__atomic_load_n(&comm->aborted, __ATOMIC_ACQUIRE)) return error(remote_error, "aborted");
        pause_();
    }
    child->nonblocking = j->child_nonblocking;
    *j->newcomm = child; /* as NCCL's init job: only once the child is complete */
    return ok;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
    if (!comm || !newcomm) return error(invalid_argument, "ncclCommSplit: null argument");
    READY(comm);
    trace("split", -1);
    if (color < -1) return error(invalid_argument, "ncclCommSplit: negative colour other than NCCL_SPLIT_NOCOLOR");
    ncclConfig_t parsed = {0};
    if (config) CHECK(parse_config(config, &parsed));
    *newcomm = NULL; /* "*newcomm should be NCCL_COMM_NULL until comm split fully complete" */
    struct job j = {.fn = run_split, .c = comm, .color = color, .key = key, .newcomm = newcomm};
    j.child_nonblocking = config ? parsed.blocking == 0 : comm->nonblocking;
    if (!comm->nonblocking) return run_split(&j);
    /* The parent's group is non-blocking: the job runs on a thread; the call itself succeeds. */
    ncclResult_t r = spawn(&j, 0);
    return r == in_progress ? ok : r;
}
#endif

static void forget_registrations(ncclComm_t c);
static ncclResult_t release(ncclComm_t c) {
    if (c) {
        forget_registrations(c);
        disconnect(c);
        if (c->seg) munmap(c->seg, c->size);
        free(c);
    }
    return ok;
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
    trace("destroy", -1);
    if (!comm) return ok;
    READY(comm);
    settle(comm);
    return release(comm);
}
ncclResult_t ncclCommAbort(ncclComm_t comm) {
    trace("abort", -1);
    if (!comm) return ok;
    /* As NCCL's: set the abort flag, then wait for the comm's thread (which gives up). */
    __atomic_store_n(&comm->aborted, 1, __ATOMIC_RELEASE);
    if (comm->working) pthread_join(comm->worker, NULL);
    settle(comm);
    return release(comm);
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *state) {
    if (!comm || !state) return error(invalid_argument, "ncclCommGetAsyncError: null argument");
    if (comm->joining) {
        if (comm->init_fails) {
            *state = error(system_error, "bootstrap: connection to a peer refused");
        } else {
            *state = joined(comm) ? comm->sticky : in_progress; /* connected at init: its error */
        }
        return ok;
    }
    if (busy(comm)) {
        *state = in_progress;
    } else if (comm->sticky != ok) {
        *state = comm->sticky;
    } else if (!strcmp(fail(), "async") && calls > 0) {
        *state = error(remote_error, "peer rank went away");
    } else {
        *state = ok;
    }
    return ok;
}

static int bad(int dtype, int op) {
    calls++;
    if (dtype >= 10 && env_version() < 22400) return 1; /* the 8-bit floats came with NCCL 2.24 */
    return dtype < 0 || dtype > 11 || op < 0 || op > 4;
}

/* NCCL's enqueue.cc: no reduction of the 8-bit floats below compute capability 9.0. */
static int fp8_reduction_refused(int dt) {
    if (dt < 10 || compute_capability() >= 90) return 0;
    error(invalid_argument, "8-bit float reductions need compute capability 9.0 (sm_90) or newer");
    return 1;
}

/* Contributions of every rank, reduced in rank order into `out` (`mine`: this rank's). */
static ncclResult_t gather_reduce(ncclComm_t c, const void *mine, void *out, size_t n, int dt, int op) {
    size_t b = n * type_size[dt];
    char *acc = malloc(b ? b : 1), *x = malloc(b ? b : 1);
    ncclResult_t r = ok;
    for (int src = 0; src < c->nranks && r == ok; src++) {
        if (src == c->rank) {
            memcpy(x, mine, b);
        } else {
            r = take(c, src, x, b);
        }
        premultiply(x, n, dt, op, c->nranks);
        if (src == 0) {
            memcpy(acc, x, b);
        } else {
            reduce(acc, x, n, dt, op);
        }
    }
    if (r == ok) {
        finish_avg(acc, n, dt, op, c->nranks);
        memmove(out, acc, b);
    }
    free(acc);
    free(x);
    return r;
}

/* Collectives inside ncclGroupStart/ncclGroupEnd (NCCL src/collectives.cc, enqueue.cc): each
 * is a task of the group, taken with ncclSuccess (on a non-blocking communicator too), and the
 * group's tasks are launched together at ncclGroupEnd, in call order, then its sends and
 * receives: one launch (traced once) for the whole group, as nccl-tests' -m counts on. */
#define MAXCOLL 4096
static struct job group_colls[MAXCOLL];
static int ngroup_colls;
static int depth;
static ncclResult_t collective(struct job *j) {
    if (depth == 0) return launch(j);
    if (ngroup_colls == MAXCOLL) return error(invalid_usage, "too many collectives in a group");
    group_colls[ngroup_colls++] = *j;
    return ok;
}

static ncclResult_t run_all_reduce(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    char *mine = malloc(b ? b : 1);
    memcpy(mine, j->s, b);
    ncclResult_t res = ok;
    for (int p = 0; p < c->nranks && res == ok; p++)
        if (p != c->rank) res = put(c, p, mine, b);
    if (res == ok) res = gather_reduce(c, mine, j->r, j->n, j->dt, j->op);
    free(mine);
    return res;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, op) || fp8_reduction_refused(dt)) return invalid_argument;
    CHECK(plan(c, 4, n, dt));
    return collective(&(struct job){.stream = st, .fn = run_all_reduce, .c = c, .s = s, .r = r, .n = n, .dt = dt, .op = op});
}

static ncclResult_t run_all_gather(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    for (int p = 0; p < c->nranks; p++)
        if (p != c->rank) CHECK(put(c, p, j->s, b));
    memmove((char *)j->r + (size_t)c->rank * b, j->s, b);
    for (int p = 0; p < c->nranks; p++)
        if (p != c->rank) CHECK(take(c, p, (char *)j->r + (size_t)p * b, b));
    return ok;
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int dt, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, 0)) return invalid_argument;
    CHECK(plan(c, 2, n, dt));
    return collective(&(struct job){.stream = st, .fn = run_all_gather, .c = c, .s = s, .r = r, .n = n, .dt = dt});
}

static ncclResult_t run_reduce_scatter(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    for (int p = 0; p < c->nranks; p++)
        if (p != c->rank) CHECK(put(c, p, (const char *)j->s + (size_t)p * b, b));
    char *mine = malloc(b ? b : 1);
    memcpy(mine, (const char *)j->s + (size_t)c->rank * b, b);
    ncclResult_t res = gather_reduce(c, mine, j->r, j->n, j->dt, j->op);
    free(mine);
    return res;
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, op) || fp8_reduction_refused(dt)) return invalid_argument;
    CHECK(plan(c, 3, n, dt));
    return collective(&(struct job){.stream = st, .fn = run_reduce_scatter, .c = c, .s = s, .r = r, .n = n, .dt = dt, .op = op});
}

static ncclResult_t run_broadcast(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    if (c->rank == j->root) {
        for (int p = 0; p < c->nranks; p++)
            if (p != j->root) CHECK(put(c, p, j->s, b));
        memmove(j->r, j->s, b);
        return ok;
    }
    return take(c, j->root, j->r, b);
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, 0) || root < 0 || root >= c->nranks) return invalid_argument;
    CHECK(plan(c, 0, n, dt));
    return collective(&(struct job){.stream = st, .fn = run_broadcast, .c = c, .s = s, .r = r, .n = n, .dt = dt, .root = root});
}

static ncclResult_t run_reduce(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    if (c->rank != j->root) return put(c, j->root, j->s, b);
    return gather_reduce(c, j->s, j->r, j->n, j->dt, j->op);
}
ncclResult_t ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, op) || fp8_reduction_refused(dt) || root < 0 || root >= c->nranks) return invalid_argument;
    CHECK(plan(c, 1, n, dt));
    return collective(
        &(struct job){.stream = st, .fn = run_reduce, .c = c, .s = s, .r = r, .n = n, .dt = dt, .op = op, .root = root});
}

/* Point-to-point. Outside a group a call is a group of its own; inside one, calls are queued and
 * at ncclGroupEnd every send is written before any receive is read (after the group's
 * collectives, `collective`). */
static struct p2p sends[MAXP2P], recvs[MAXP2P];
static int nsend, nrecv;

/* The group's collectives in call order, then its sends and receives progressing together, as
 * NCCL's: each channel holds one message, so a send waits only for its peer to take the one
 * before it (several sends to one peer in a group, as -m's aggregated sendrecv, do not block
 * each other's receives); sends to one peer, and receives from one, keep their order. */
static ncclResult_t run_p2p(struct job *j) {
    ncclResult_t r = ok;
    for (int i = 0; i < j->ncolls && r == ok; i++) r = j->colls[i].fn(&j->colls[i]);
    if (r != ok || (!j->nsend && !j->nrecv)) return r;
    struct comm *c = j->nsend ? j->sends[0].comm : j->recvs[0].comm;
    if (connected_lazily()) CHECK(connect_(c));
    for (int i = 0; i < j->nsend; i++)
        if (j->sends[i].bytes > j->sends[i].comm->cap) return error(invalid_usage, "message larger than FAKE_NCCL_CHANNEL_BYTES");
    char *sent = calloc((size_t)j->nsend + 1, 1), *got = calloc((size_t)j->nrecv + 1, 1);
    int left = j->nsend + j->nrecv;
    while (left > 0 && r == ok) {
        int moved = 0;
        for (int i = 0; i < j->nsend; i++) {
            if (sent[i]) continue;
            struct p2p *q = &j->sends[i];
            int earlier = 0; /* an earlier send to the same peer still waiting keeps the order */
            for (int k = 0; k < i && !earlier; k++) earlier = !sent[k] && j->sends[k].peer == q->peer && j->sends[k].comm == q->comm;
            if (!earlier && try_put(q->comm, q->peer, q->buf, q->bytes)) sent[i] = 1, left--, moved = 1;
        }
        for (int i = 0; i < j->nrecv && r == ok; i++) {
            if (got[i]) continue;
            struct p2p *q = &j->recvs[i];
            int earlier = 0;
            for (int k = 0; k < i && !earlier; k++) earlier = !got[k] && j->recvs[k].peer == q->peer && j->recvs[k].comm == q->comm;
            if (earlier) continue;
            struct channel *ch = chan(q->comm, q->peer, q->comm->rank);
            if (__atomic_load_n(&ch->sent, __ATOMIC_ACQUIRE) == __atomic_load_n(&ch->taken, __ATOMIC_RELAXED)) continue;
            r = take(q->comm, q->peer, q->buf, q->bytes);
            if (r == ok) got[i] = 1, left--, moved = 1;
        }
        if (!moved) {
            if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) r = error(remote_error, "aborted");
            pause_();
        }
    }
    free(sent);
    free(got);
    return r;
}

/* The queued sends and receives as one job (copies of the queues). A receive whose buffer
 * overlaps a send of the same group (other than a send to oneself from the very buffer received
 * into, which NCCL skips: src/enqueue.cc) is traced "overlap": NCCL gives no order between them,
 * so such a group (in-place all-to-all, in-place sendrecv) may receive over data not yet sent. */
static ncclResult_t launch_p2p(void) {
    int overlap = 0;
    for (int i = 0; i < nrecv && !overlap; i++) {
        char *rb = recvs[i].buf, *re = rb + recvs[i].bytes;
        for (int k = 0; k < nsend && !overlap; k++) {
            char *sb = sends[k].buf, *se = sb + sends[k].bytes;
            int self = sends[k].peer == sends[k].comm->rank && recvs[i].peer == recvs[i].comm->rank && sb == rb;
            overlap = !self && rb < se && sb < re;
        }
    }
    if (overlap) trace("overlap", -1);
    struct job j = {.fn = run_p2p, .nsend = nsend, .nrecv = nrecv, .ncolls = ngroup_colls};
    j.c = ngroup_colls ? group_colls[0].c : nsend ? sends[0].comm : recvs[0].comm;
    j.stream = ngroup_colls ? group_colls[0].stream : nsend ? sends[0].stream : recvs[0].stream;
    j.colls = malloc(sizeof(struct job) * (size_t)(ngroup_colls ? ngroup_colls : 1));
    memcpy(j.colls, group_colls, sizeof(struct job) * (size_t)ngroup_colls);
    ngroup_colls = 0;
    j.sends = malloc(sizeof(struct p2p) * (size_t)(nsend ? nsend : 1));
    j.recvs = malloc(sizeof(struct p2p) * (size_t)(nrecv ? nrecv : 1));
    memcpy(j.sends, sends, sizeof(struct p2p) * (size_t)nsend);
    memcpy(j.recvs, recvs, sizeof(struct p2p) * (size_t)nrecv);
    nsend = nrecv = 0;
    return launch(&j);
}

ncclResult_t ncclGroupStart(void) {
    depth++;
    return ok;
}
static ncclResult_t register_windows(void);
ncclResult_t ncclGroupEnd(void) {
    if (depth == 0) return error(invalid_usage, "ncclGroupEnd without ncclGroupStart");
    if (--depth > 0) return ok;
    CHECK(register_windows());
    if (!nsend && !nrecv && !ngroup_colls) return ok;
    return launch_p2p();
}
static ncclResult_t queue(struct p2p *q, int *nq, ncclComm_t c, const void *buf, size_t bytes, int peer, void *st) {
    if (*nq == MAXP2P) return error(invalid_usage, "too many sends or receives in a group");
    q[(*nq)++] = (struct p2p){c, (void *)buf, bytes, peer, st};
    return ok;
}
ncclResult_t ncclSend(const void *s, size_t n, int dt, int peer, ncclComm_t c, cudaStream_t st) {
    if (c && fails_here("p2p", c->rank)) return error(invalid_usage, "point-to-point is off (FAKE_NCCL_FAIL=p2p)");
    READY(c);
    if (bad(dt, 0) || peer < 0 || peer >= c->nranks) return invalid_argument;
    if (depth == 0 && peer == c->rank) return error(invalid_usage, "a send to oneself outside a group would hang");
    CHECK(queue(sends, &nsend, c, s, n * type_size[dt], peer, st));
    return depth == 0 ? launch_p2p() : ok;
}
ncclResult_t ncclRecv(void *r, size_t n, int dt, int peer, ncclComm_t c, cudaStream_t st) {
    if (c && fails_here("p2p", c->rank)) return error(invalid_usage, "point-to-point is off (FAKE_NCCL_FAIL=p2p)");
    READY(c);
    if (bad(dt, 0) || peer < 0 || peer >= c->nranks) return invalid_argument;
    if (depth == 0 && peer == c->rank) return error(invalid_usage, "a receive from oneself outside a group would hang");
    CHECK(queue(recvs, &nrecv, c, r, n * type_size[dt], peer, st));
    return depth == 0 ? launch_p2p() : ok;
}

#ifdef FAKE_NCCL_NATIVE
/* The native collectives: block j of rank i's send buffer goes to rank j, which places it
 * at block i. Every rank writes all its messages before it reads any (one-slot channels). */
static ncclResult_t run_all_to_all(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    for (int p = 0; p < c->nranks; p++)
        if (p != c->rank) CHECK(put(c, p, (const char *)j->s + (size_t)p * b, b));
    memmove((char *)j->r + (size_t)c->rank * b, (const char *)j->s + (size_t)c->rank * b, b);
    for (int p = 0; p < c->nranks; p++)
        if (p != c->rank) CHECK(take(c, p, (char *)j->r + (size_t)p * b, b));
    return ok;
}
ncclResult_t ncclAlltoAll(const void *s, void *r, size_t n, int dt, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, 0)) return invalid_argument;
    /* In place is not refused (NCCL 2.28-2.30's ncclAlltoAll has no such check: nccl-tests calls
     * it with one buffer), nor supported: its send and receive tasks have no order between them. */
    if (s == r && c->nranks > 1) trace("overlap", -1);
    return collective(&(struct job){.stream = st, .fn = run_all_to_all, .c = c, .s = s, .r = r, .n = n, .dt = dt});
}
static ncclResult_t run_gather(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    if (c->rank != j->root) return put(c, j->root, j->s, b);
    memmove((char *)j->r + (size_t)j->root * b, j->s, b);
    for (int p = 0; p < c->nranks; p++)
        if (p != j->root) CHECK(take(c, p, (char *)j->r + (size_t)p * b, b));
    return ok;
}
ncclResult_t ncclGather(const void *s, void *r, size_t n, int dt, int root, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, 0) || root < 0 || root >= c->nranks) return invalid_argument;
    return collective(&(struct job){.stream = st, .fn = run_gather, .c = c, .s = s, .r = r, .n = n, .dt = dt, .root = root});
}
static ncclResult_t run_scatter(struct job *j) {
    ncclComm_t c = j->c;
    size_t b = j->n * type_size[j->dt];
    if (c->rank != j->root) return take(c, j->root, j->r, b);
    for (int p = 0; p < c->nranks; p++)
        if (p != j->root) CHECK(put(c, p, (const char *)j->s + (size_t)p * b, b));
    memmove(j->r, (const char *)j->s + (size_t)j->root * b, b);
    return ok;
}
ncclResult_t ncclScatter(const void *s, void *r, size_t n, int dt, int root, ncclComm_t c, cudaStream_t st) {
    READY(c);
    if (bad(dt, 0) || root < 0 || root >= c->nranks) return invalid_argument;
    return collective(&(struct job){.stream = st, .fn = run_scatter, .c = c, .s = s, .r = r, .n = n, .dt = dt, .root = root});
}
#endif

/* Buffer registration, as NCCL's (2.19: src/allocator.cc, src/register/register.cc; 2.27:
 * src/dev_runtime.cc). Each entry point aborts the process where FAKE_NCCL_VERSION claims a
 * library without it, as ncclResetDebugInit does.
 *   ncclMemAlloc     device memory (through the loaded libcuda's cuMemAlloc, rounded up to the
 *                    2 MiB granularity of cuMem, so free memory shrinks by that), remembered as
 *                    cuMem memory; traced "PID memalloc BYTES"
 *   ncclMemFree      only ncclMemAlloc's memory (other memory has no cuMem handle:
 *                    ncclUnhandledCudaError); memory still registered or in a window is refused
 *                    (ncclInvalidUsage; NCCL would leave dangling registrations); "PID memfree"
 *   ncclCommRegister local (no peer takes part); any device memory of this process, the whole
 *                    range inside one allocation, else ncclUnhandledCudaError (NCCL's
 *                    cuMemGetAddressRange fails); NCCL_LOCAL_REGISTER=0 gives a null handle;
 *                    "PID register BYTES"
 *   ncclCommDeregister  a handle this communicator gave, else ncclInvalidUsage ("Could not find
 *                    handle"); null is a no-op; "PID deregister"
 *   ncclCommWindowRegister  collective: every rank registers its windows in the same order, and
 *                    each waits for every rank's window of that rank (a rank that never registers
 *                    holds the others, as NCCL's exchange does); inside a group it is done at the
 *                    group's end (the window is filled then), outside a group it is a group of
 *                    its own; on a non-blocking communicator it answers ncclInProgress. Only
 *                    ncclMemAlloc's memory (else ncclUnhandledCudaError: no cuMem handle), at an
 *                    offset in its allocation that is a multiple of 4096
 *                    (NCCL_WIN_REQUIRED_ALIGNMENT; else ncclInvalidArgument). With
 *                    FAKE_NCCL_SYMMETRIC=0 the communicator has no symmetric-memory support: success
 *                    and a null window, as NCCL. "PID window BYTES"
 *   ncclCommWindowDeregister  a window of this communicator (null: no-op); "PID window-free"
 * A communicator destroyed or aborted forgets its registrations, as NCCL's cleanup does. */
struct mem { char *p; size_t len; struct mem *next; };
struct reg { ncclComm_t c; char *p; size_t len; int window; struct reg *next; };
static struct mem *mems;
static struct reg *regs;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;

static void needs_version(int code, const char *fn) {
    if (env_version() < code) {
        fprintf(stderr, "fake NCCL: %s called, which NCCL %d does not export\n", fn, env_version());
        abort();
    }
}
static void trace_bytes(const char *what, size_t bytes) {
    char line[64];
    snprintf(line, sizeof line, "%s %zu", what, bytes);
    trace(line, -1);
}
static struct mem *mem_of(const void *p, size_t len) {
    for (struct mem *m = mems; m; m = m->next)
        if ((const char *)p >= m->p && (const char *)p + len <= m->p + m->len) return m;
    return NULL;
}

ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
    needs_version(21900, "ncclMemAlloc");
    void *lib = cuda_lib();
    int (*alloc)(unsigned long long *, size_t) = lib ? (int (*)(unsigned long long *, size_t))dlsym(lib, "cuMemAlloc_v2") : NULL;
    if (!ptr || size == 0 || !alloc) return error(1, "Cuda failure 'invalid argument' (ncclMemAlloc)");
    size_t gran = (size_t)2 << 20, len = (size + gran - 1) / gran * gran;
    unsigned long long d = 0;
    if (alloc(&d, len) != 0) return error(1, "Cuda failure 'out of memory' (ncclMemAlloc)");
    struct mem *m = malloc(sizeof *m);
    *m = (struct mem){(char *)(uintptr_t)d, len, NULL};
    pthread_mutex_lock(&reg_mu);
    m->next = mems;
    mems = m;
    pthread_mutex_unlock(&reg_mu);
    *ptr = m->p;
    trace_bytes("memalloc", len);
    return ok;
}

ncclResult_t ncclMemFree(void *ptr) {
    needs_version(21900, "ncclMemFree");
    if (!ptr) return ok;
    pthread_mutex_lock(&reg_mu);
    struct mem **at = &mems;
    while (*at && (*at)->p != (char *)ptr) at = &(*at)->next;
    struct mem *m = *at;
    int held = 0;
    for (struct reg *r = regs; r && m; r = r->next) held |= r->p >= m->p && r->p < m->p + m->len;
    if (m && !held) *at = m->next;
    pthread_mutex_unlock(&reg_mu);
    if (!m) return error(1, "Cuda failure 'invalid argument': ncclMemFree of memory not from ncclMemAlloc");
    if (held) return error(invalid_usage, "ncclMemFree of memory still registered with a communicator");
    void *lib = cuda_lib();
    int (*release_)(unsigned long long) = lib ? (int (*)(unsigned long long))dlsym(lib, "cuMemFree_v2") : NULL;
    if (release_) release_((unsigned long long)(uintptr_t)m->p);
    free(m);
    trace("memfree", -1);
    return ok;
}

/* Whether [p, p+len) lies in one live allocation of the loaded libcuda (cuMemGetAddressRange). */
static int device_memory(const void *p, size_t len) {
    void *lib = cuda_lib();
    int (*range)(const void *, size_t) = lib ? (int (*)(const void *, size_t))dlsym(lib, "fake_cuda_allocation") : NULL;
    return range && range(p, len) == 0;
}

static ncclResult_t add_reg(ncclComm_t c, void *p, size_t len, int window, struct reg **out) {
    struct reg *r = malloc(sizeof *r);
    *r = (struct reg){c, p, len, window, NULL};
    pthread_mutex_lock(&reg_mu);
    r->next = regs;
    regs = r;
    pthread_mutex_unlock(&reg_mu);
    *out = r;
    return ok;
}
static int drop_reg(ncclComm_t c, struct reg *h, int window) {
    pthread_mutex_lock(&reg_mu);
    struct reg **at = &regs;
    while (*at && !(*at == h && h->c == c && h->window == window)) at = &(*at)->next;
    struct reg *r = *at;
    if (r) *at = r->next;
    pthread_mutex_unlock(&reg_mu);
    free(r);
    return r != NULL;
}
static void forget_registrations(ncclComm_t c) {
    pthread_mutex_lock(&reg_mu);
    for (struct reg **at = &regs; *at;) {
        struct reg *r = *at;
        if (r->c == c) {
            *at = r->next;
            free(r);
        } else {
            at = &r->next;
        }
    }
    pthread_mutex_unlock(&reg_mu);
}

ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
    needs_version(21900, "ncclCommRegister");
    if (!comm || !handle) return error(invalid_argument, "ncclCommRegister: null argument");
    const char *local = getenv("NCCL_LOCAL_REGISTER");
    if (local && atoi(local) == 0) {
        *handle = NULL;
        return ok;
    }
    if (!device_memory(buff, size)) return error(1, "Cuda failure 'named symbol not found': ncclCommRegister of memory that is not the device's");
    trace_bytes("register", size);
    return add_reg(comm, buff, size, 0, (struct reg **)handle);
}

/* ncclCommDeregister (window 0) and ncclCommWindowDeregister (window 1): a handle of this
 * communicator's of that kind, null a no-op. */
static ncclResult_t deregister(ncclComm_t comm, void *handle, int window) {
    needs_version(window ? 22700 : 21900, window ? "ncclCommWindowDeregister" : "ncclCommDeregister");
    if (!comm) return error(invalid_argument, "deregistration on a null communicator");
    if (!handle) return ok;
    if (!drop_reg(comm, handle, window))
        return error(invalid_usage, window ? "ncclCommWindowDeregister: not a window of this communicator" : "Deregister: Could not find handle");
    trace(window ? "window-free" : "deregister", -1);
    return ok;
}
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) { return deregister(comm, handle, 0); }

/* Every rank's k-th window: wait until every rank has registered k (a rank that never does holds
 * the others, as NCCL's exchange at the group's end). */
static ncclResult_t window_meet(ncclComm_t c) {
    c->windows++;
    if (!c->seg) return ok;
    __atomic_add_fetch(&c->seg->windows, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&c->seg->windows, __ATOMIC_ACQUIRE) < (uint64_t)c->windows * (uint64_t)c->nranks) {
        if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) return error(remote_error, "aborted");
        sched_yield();
    }
    return ok;
}

struct window_task { ncclComm_t c; void *buff; size_t size; void **win; };
enum { MAXWIN = 64 };
static struct window_task window_tasks[MAXWIN];
static int nwindow_tasks;

static ncclResult_t register_window(struct window_task *t) {
    ncclComm_t c = t->c;
    const char *sym = getenv("FAKE_NCCL_SYMMETRIC");
    if (sym && atoi(sym) == 0) return ok; /* no symmetric support: a null window */
    pthread_mutex_lock(&reg_mu);
    struct mem *m = mem_of(t->buff, t->size);
    pthread_mutex_unlock(&reg_mu);
    if (!m) return error(1, "Cuda failure 'invalid value': ncclCommWindowRegister of memory without a cuMem handle (not from ncclMemAlloc)");
    if ((size_t)((char *)t->buff - m->p) % 4096 != 0) return error(invalid_argument, "Window address must be suitably aligned.");
    CHECK(window_meet(c));
    trace_bytes("window", t->size);
    return add_reg(c, t->buff, t->size, 1, (struct reg **)t->win);
}
static ncclResult_t register_windows(void) {
    ncclResult_t r = ok;
    for (int i = 0; i < nwindow_tasks && r == ok; i++) r = register_window(&window_tasks[i]);
    nwindow_tasks = 0;
    return r;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, void **win, int flags) {
    (void)flags;
    needs_version(22700, "ncclCommWindowRegister");
    if (!comm) return error(invalid_argument, "ncclCommWindowRegister: null communicator");
    if (!win) return error(invalid_argument, "ncclCommWindowRegister: null win");
    *win = NULL;
    if (!buff || size == 0) return error(invalid_argument, "invalid pointer / size");
    READY(comm);
    if (nwindow_tasks == MAXWIN) return error(invalid_usage, "too many windows in a group");
    window_tasks[nwindow_tasks++] = (struct window_task){comm, buff, size, win};
    if (depth > 0) return ok;
    ncclResult_t r = register_windows();
    return r == ok && comm->nonblocking ? in_progress : r;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, void *win) { return deregister(comm, win, 1); }

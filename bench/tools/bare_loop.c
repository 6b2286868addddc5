/* The reference for coll-bench's fidelity bar: time MPI_Allreduce, MPI_Allgather,
 * MPI_Reduce_scatter_block (float, sum, out of place) and MPI_Sendrecv around the ring (to
 * rank+1, from rank-1: nccl-tests' sendrecv and coll-bench's ceiling pass) in a bare loop, nothing else: the
 * buffers are allocated once at the largest size, nothing else is allocated or freed, and the
 * allocator is the C library's as the environment sets it (no mallopt).
 *
 * For each size (min .. max, by a factor, 2 by default): warm up, agree on an iteration count from a time budget
 * (max over ranks), barrier, time `iters` calls back to back with MPI_Wtime, and print the mean
 * over ranks of each rank's time per call, and the minor page faults per call of the rank that
 * took most (getrusage of this thread around the timed loop, as coll-bench counts its
 * `minor_faults_per_call`).
 * Sizes follow nccl-tests: for all-gather and reduce-scatter the size is the whole buffer and
 * each rank's block is size/4/n floats; all-reduce and sendrecv pass size/4 floats.
 *
 * Output (rank 0, CSV): collective,size_bytes,count,iters,time_us,minor_faults_per_call
 * Usage: mpirun -n 2 bare_loop [max_bytes=67108864] [budget_s=0.05] [min_bytes=8]
 *                              [collectives=all-reduce,all-gather,reduce-scatter] [factor=2]
 *                              [history=0]
 * (sendrecv and reduce-scatter-counts, MPI_Reduce_scatter with equal counts, are timed only when
 * named in collectives)
 *
 * history: how many 8-byte MPI_Allreduce calls the program makes before anything else (what an
 * application does before its hot loop: agree on a step count, a loss). It changes nothing but
 * the MPI library's state: under glibc's default allocator whether the library's per-call
 * temporaries come from a heap top that glibc trims after every call (page faults) depends on
 * whether one of the library's own small allocations happened to land above them (Open MPI's
 * shared-memory fragment list grows on demand; bench/fidelity-single.sh, docs/sweep.md).
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { ALLREDUCE, ALLGATHER, REDUCESCATTER, SENDRECV, REDUCESCATTERCOUNTS, NCOLLS };
static const char *names[] = {"all-reduce", "all-gather", "reduce-scatter", "sendrecv", "reduce-scatter-counts"};

static void call(int coll, float *send, float *recv, int count) {
  int rank, n;
  switch (coll) {
  case ALLREDUCE: MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case ALLGATHER: MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD); break;
  case REDUCESCATTER: MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case REDUCESCATTERCOUNTS: {
    /* MPI_Reduce_scatter with equal counts: coll-bench's --impl counts, doctor's call cause */
    int counts[1024];
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int r = 0; r < n && r < 1024; r++) counts[r] = count;
    MPI_Reduce_scatter(send, recv, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    break;
  }
  case SENDRECV:
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Sendrecv(send, count, MPI_FLOAT, (rank + 1) % n, 7, recv, count, MPI_FLOAT, (rank + n - 1) % n, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    break;
  }
}

/* Whether `name` is one of the comma-separated names in `list` (whole names only). */
static int named(const char *list, const char *name) {
  size_t len = strlen(name);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0')) return 1;
  return 0;
}

static double minor_faults(void) {
  struct rusage r;
  getrusage(RUSAGE_THREAD, &r);
  return (double)r.ru_minflt;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (64u << 20);
  double budget = argc > 2 ? atof(argv[2]) : 0.05;
  size_t min_bytes = argc > 3 ? strtoull(argv[3], NULL, 10) : 8;
  const char *which = argc > 4 ? argv[4] : "all-reduce,all-gather,reduce-scatter";
  size_t factor = argc > 5 ? strtoull(argv[5], NULL, 10) : 2;
  if (factor < 2) factor = 2;
  long history = argc > 6 ? atol(argv[6]) : 0;
  for (long i = 0; i < history; i++) {
    double one = 1.0, sum;
    MPI_Allreduce(&one, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  float *send = malloc(max_bytes), *recv = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes / 4; i++) { send[i] = (float)(i % 7); recv[i] = 0.0f; }
  if (rank == 0) printf("collective,size_bytes,count,iters,time_us,minor_faults_per_call\n");
  for (int coll = 0; coll < NCOLLS; coll++) {
    if (!named(which, names[coll])) continue;
    for (size_t size = min_bytes; size <= max_bytes; size *= factor) {
      int count = (int)(size / 4);
      if (coll != ALLREDUCE && coll != SENDRECV) count /= n;
      /* warm-up: one call, then about a tenth of the budget */
      double t = MPI_Wtime();
      call(coll, send, recv, count);
      double first = MPI_Wtime() - t, est;
      MPI_Allreduce(&first, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      long warm = (long)(0.1 * budget / (est > 1e-9 ? est : 1e-9));
      if (warm < 1) warm = 1;
      if (warm > 1000) warm = 1000;
      t = MPI_Wtime();
      for (long i = 0; i < warm; i++) call(coll, send, recv, count);
      double w = (MPI_Wtime() - t) / warm;
      MPI_Allreduce(&w, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      long iters = (long)(budget / (est > 1e-9 ? est : 1e-9)) + 1;
      if (iters < 5) iters = 5;
      if (iters > 100000) iters = 100000;
      /* the timed loop */
      MPI_Barrier(MPI_COMM_WORLD);
      double f0 = minor_faults();
      double t0 = MPI_Wtime();
      for (long i = 0; i < iters; i++) call(coll, send, recv, count);
      double per = (MPI_Wtime() - t0) / iters, sum;
      double faults = (minor_faults() - f0) / iters, most;
      MPI_Reduce(&per, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      MPI_Reduce(&faults, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
      if (rank == 0)
        printf("%s,%zu,%d,%ld,%.4f,%.2f\n", names[coll], size, count, iters, sum / n * 1e6, most);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}

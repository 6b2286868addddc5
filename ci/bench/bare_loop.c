/* The reference for coll-bench's fidelity bar: time MPI_Allreduce, MPI_Allgather and
 * MPI_Reduce_scatter_block (float, sum, out of place) in a bare loop, nothing else.
 *
 * For each size (8 B .. max, factor 2): warm up, agree on an iteration count from a time budget
 * (max over ranks), barrier, time `iters` calls back to back with MPI_Wtime, and print the mean
 * over ranks of each rank's time per call. Sizes follow nccl-tests: for all-gather and
 * reduce-scatter the size is the whole buffer and each rank's block is size/4/n floats.
 *
 * Output (rank 0, CSV): collective,size_bytes,count,iters,time_us
 * Usage: mpirun -n 2 bare_loop [max_bytes=67108864] [budget_s=0.05]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, ALLGATHER, REDUCESCATTER };
static const char *names[] = {"all-reduce", "all-gather", "reduce-scatter"};

static void call(int coll, float *send, float *recv, int count, int n) {
  (void)n;
  switch (coll) {
  case ALLREDUCE: MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  case ALLGATHER: MPI_Allgather(send, count, MPI_FLOAT, recv, count, MPI_FLOAT, MPI_COMM_WORLD); break;
  case REDUCESCATTER: MPI_Reduce_scatter_block(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (64u << 20);
  double budget = argc > 2 ? atof(argv[2]) : 0.05;
  float *send = malloc(max_bytes), *recv = malloc(max_bytes);
  for (size_t i = 0; i < max_bytes / 4; i++) { send[i] = (float)(i % 7); recv[i] = 0.0f; }
  if (rank == 0) printf("collective,size_bytes,count,iters,time_us\n");
  for (int coll = 0; coll < 3; coll++) {
    for (size_t size = 8; size <= max_bytes; size *= 2) {
      int count = (int)(size / 4);
      if (coll != ALLREDUCE) count /= n;
      /* warm-up: one call, then about a tenth of the budget */
      double t = MPI_Wtime();
      call(coll, send, recv, count, n);
      double first = MPI_Wtime() - t, est;
      MPI_Allreduce(&first, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      long warm = (long)(0.1 * budget / (est > 1e-9 ? est : 1e-9));
      if (warm < 1) warm = 1;
      if (warm > 1000) warm = 1000;
      t = MPI_Wtime();
      for (long i = 0; i < warm; i++) call(coll, send, recv, count, n);
      double w = (MPI_Wtime() - t) / warm;
      MPI_Allreduce(&w, &est, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      long iters = (long)(budget / (est > 1e-9 ? est : 1e-9)) + 1;
      if (iters < 5) iters = 5;
      if (iters > 100000) iters = 100000;
      /* the timed loop */
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      for (long i = 0; i < iters; i++) call(coll, send, recv, count, n);
      double per = (MPI_Wtime() - t0) / iters, sum;
      MPI_Reduce(&per, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0) printf("%s,%zu,%d,%ld,%.4f\n", names[coll], size, count, iters, sum / n * 1e6);
    }
  }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}

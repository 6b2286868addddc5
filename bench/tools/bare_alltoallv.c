/* A bare loop of MPI_Alltoallv with the counts of an nccl-tests matrix file (bytes, row =
 * sender; each block rounded down to 16 bytes, as nccl-tests and coll-bench read it), on floats:
 * WARMUP calls, then ITERS calls timed as one loop. Prints the mean over ranks of each rank's
 * time per call, in µs, and rank 0's minor page faults per timed call.
 * usage: bare_alltoallv MATRIX ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

static long faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: bare_alltoallv MATRIX ITERS WARMUP\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long iters = atol(argv[2]), warmup = atol(argv[3]);
    FILE *f = fopen(argv[1], "r");
    if (!f) MPI_Abort(MPI_COMM_WORLD, 2);
    /* The file is n×n or larger: read the dimension from the count of values. */
    double *vals = NULL;
    size_t nv = 0, cap = 0;
    double v;
    while (fscanf(f, "%lf", &v) == 1) {
        if (nv == cap) vals = realloc(vals, (cap = cap ? 2 * cap : 64) * sizeof *vals);
        vals[nv++] = v;
    }
    fclose(f);
    int dim = 0;
    while ((size_t)(dim + 1) * (dim + 1) <= nv) dim++;
    if (dim < n) MPI_Abort(MPI_COMM_WORLD, 2);
    int *sc = malloc(n * sizeof(int)), *sd = malloc(n * sizeof(int));
    int *rc = malloc(n * sizeof(int)), *rd = malloc(n * sizeof(int));
    long st = 0, rt = 0;
    for (int p = 0; p < n; p++) {
        sc[p] = (int)((((size_t)vals[rank * dim + p]) & ~(size_t)15) / sizeof(float));
        rc[p] = (int)((((size_t)vals[p * dim + rank]) & ~(size_t)15) / sizeof(float));
        sd[p] = (int)st;
        rd[p] = (int)rt;
        st += sc[p];
        rt += rc[p];
    }
    float *s = malloc((st ? st : 1) * sizeof(float)), *r = malloc((rt ? rt : 1) * sizeof(float));
    for (long i = 0; i < st; i++) s[i] = (float)(i % 97);
    for (long i = 0; i < rt; i++) r[i] = 0.0f;
    for (long i = 0; i < warmup; i++) MPI_Alltoallv(s, sc, sd, MPI_FLOAT, r, rc, rd, MPI_FLOAT, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    long f0 = faults();
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++) MPI_Alltoallv(s, sc, sd, MPI_FLOAT, r, rc, rd, MPI_FLOAT, MPI_COMM_WORLD);
    double per = (MPI_Wtime() - t0) / iters * 1e6;
    long df = faults() - f0;
    double sum = 0;
    MPI_Reduce(&per, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%.3f %.2f\n", sum / n, (double)df / iters);
    MPI_Finalize();
    return 0;
}

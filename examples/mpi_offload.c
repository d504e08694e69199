/* SPDX-License-Identifier: BSD-3-Clause */
/* mpi_offload: every MPI rank offloads its share of c = a + b (vecadd_f64, function code 10) to
 * the NAA it resolves, and the ranks check the global sum of c with MPI_Allreduce.
 *
 * a[i] = i and b[i] = 2i over the global index range, so sum(c) = 3 * N(N-1)/2 exactly (every
 * partial sum is an integer below 2^53).
 *
 * Under Slurm with the naa_spank plugin (see naa.conf(5)):
 *   srun --naa=10 --mpi=pmix -n 4 ./mpi_offload [N]
 *   salloc --naa=10 mpirun -n 4 ./mpi_offload [N]
 * Without Slurm: NAA_SPEC=host:12345:10:2 mpirun -n 4 ./mpi_offload [N]
 * Each rank prints where its NAA came from (NAA_SPEC, or the Slurm job when NAA_SPEC is unset). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "naa.h"

#define FN_VECADD_F64 10

static int fail(int rank, const char *what, int rc) {
  char cause[256];
  naa_last_error(NULL, cause, sizeof cause); /* why: this thread's last failure */
  fprintf(stderr, "mpi_offload: rank %d: %s failed: %s (%d): %s\n", rank, what, naa_strerror(rc),
          rc, cause);
  return 1;
}

/* The NAA_SPEC entry for function code 10 this rank will use, or how it is found without one. */
static const char *naa_source(void) {
  const char *spec = getenv("NAA_SPEC");
  if (spec != NULL && *spec != '\0') return spec;
  return getenv("SLURM_JOB_ID") != NULL ? "Slurm job (naa.conf, NAA_LOG_LEVEL=info logs the NAA)"
                                        : "nothing (NAA_SPEC unset, not in a Slurm job)";
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  const unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
  if (n < (unsigned long long)size) {
    if (rank == 0) fprintf(stderr, "usage: mpi_offload [N >= number of ranks]\n");
    MPI_Finalize();
    return 2;
  }
  /* Rank r owns [lo, hi): the first n % size ranks take one element more. */
  const unsigned long long share = n / (unsigned long long)size,
                           extra = n % (unsigned long long)size;
  const unsigned long long r = (unsigned long long)rank;
  const unsigned long long lo = r * share + (r < extra ? r : extra);
  const size_t count = (size_t)(share + (r < extra));

  double *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b),
         *c = malloc(count * sizeof *c);
  if (!a || !b || !c) {
    fprintf(stderr, "mpi_offload: rank %d: out of memory\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < count; i++) {
    a[i] = (double)(lo + i);
    b[i] = 2.0 * (double)(lo + i);
    c[i] = -1.0;
  }

  printf("rank %d of %d: elements %llu..%llu, NAA from %s\n", rank, size, lo, lo + count - 1,
         naa_source());
  fflush(stdout);

  naa_param_t inputs[2] = {{a, count * sizeof *a, false}, {b, count * sizeof *b, false}};
  naa_param_t outputs[1] = {{c, count * sizeof *c, false}};
  naa_handle handle = NAA_HANDLE_NULL;
  int rc, failed = 0;
  if ((rc = naa_create(FN_VECADD_F64, inputs, 2, outputs, 1, &handle)) != NAA_SUCCESS)
    failed = fail(rank, "naa_create", rc);
  else if ((rc = naa_invoke(&handle)) != NAA_SUCCESS)
    failed = fail(rank, "naa_invoke", rc);
  else if ((rc = naa_wait(&handle, NULL)) != NAA_SUCCESS)
    failed = fail(rank, "naa_wait", rc);
  if (handle.id != NAA_HANDLE_NULL.id && (rc = naa_finalize(&handle)) != NAA_SUCCESS)
    failed = fail(rank, "naa_finalize", rc);

  double local = 0;
  for (size_t i = 0; i < count && !failed; i++) local += c[i];
  double total = 0;
  int any_failed = 0;
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

  const double expected = 3.0 * ((double)n * (double)(n - 1) / 2.0);
  int status = 0;
  if (rank == 0) {
    if (any_failed) {
      fprintf(stderr, "mpi_offload: an offload failed (see the rank messages above)\n");
      status = 1;
    } else if (total != expected) {
      fprintf(stderr, "mpi_offload: sum of c is %.17g, expected %.17g\n", total, expected);
      status = 1;
    } else {
      printf("mpi_offload: %d ranks, sum of c over %llu elements = %.17g: correct\n", size, n,
             total);
    }
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(a);
  free(b);
  free(c);
  MPI_Finalize();
  return status;
}

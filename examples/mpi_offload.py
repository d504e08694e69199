#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""mpi_offload.py: examples/mpi_offload.c in Python. Every MPI rank offloads its share of
c = a + b (vecadd_f64, function code 10) to the NAA it resolves, with NumPy arrays used in
place; rank 0 gathers the shares and checks all of c.

    NAA_SPEC=host:12345:10:2 mpirun -n 4 python3 mpi_offload.py [N]
    srun --naa=10 --mpi=pmix -n 4 python3 mpi_offload.py [N]      (Slurm with naa_spank)
"""
import sys

import numpy as np
from mpi4py import MPI

import naa

VECADD_F64 = 10


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    if n < size:
        if rank == 0:
            print("usage: mpi_offload.py [N >= number of ranks]", file=sys.stderr)
        return 2
    counts = [n // size + (r < n % size) for r in range(size)]
    lo = sum(counts[:rank])
    a = np.arange(lo, lo + counts[rank], dtype=np.float64)
    b = 2.0 * a
    c = np.full_like(a, -1.0)

    failed = 0
    try:
        with naa.Handle(VECADD_F64, inputs=[a, b], outputs=[c]) as h:
            h.invoke()
            h.wait()
    except naa.Error as e:
        print(f"mpi_offload.py: rank {rank}: {e.cause}", file=sys.stderr)
        failed = 1
    print(f"rank {rank} of {size}: elements {lo}..{lo + counts[rank] - 1} offloaded", flush=True)

    # Rank 0 gathers every rank's c into one array, in rank order.
    whole = np.empty(n) if rank == 0 else None
    comm.Gatherv(c, (whole, counts) if rank == 0 else None, root=0)
    failed = comm.allreduce(failed)
    if rank == 0:
        wrong = np.count_nonzero(whole != 3.0 * np.arange(n, dtype=np.float64))
        if failed or wrong:
            print(f"mpi_offload.py: {failed} ranks failed, {wrong} of {n} elements wrong")
            return 1
        print(f"rank 0 gathered all {n} elements from {size} ranks: all correct")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

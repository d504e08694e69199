#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What Python adds to a round trip: naa.Handle.invoke() + wait() against naa_invoke + naa_wait
in C (naa-bench's latency test), at the same sizes, kernel (3, noop), one input and one output
region, on the same naa-server. Rounds of both alternate, so that a busy machine slows both.

    python3 python_overhead.py --naa-bench _build/tools/naa-bench/naa-bench \\
        --naa 127.0.0.1:PORT [--sizes 1,1048576] [--iterations 2000] [--rounds 3]

Prints, per size, the median round trip in microseconds of each round of each, and the medians
over the rounds with the difference. Needs the package naa importable (PYTHONPATH) and NumPy.
"""
import argparse
import re
import statistics
import subprocess
import sys
import time

import numpy as np

import naa

NOOP = 3


def python_median_us(address, size, iterations, warmup=100):
    a, c = np.zeros(size, dtype=np.uint8), np.zeros(size, dtype=np.uint8)
    times = []
    with naa.Handle(NOOP, [a], [c], naa=address) as h:
        for i in range(warmup + iterations):
            t0 = time.perf_counter_ns()
            h.invoke()
            h.wait()
            t1 = time.perf_counter_ns()
            if i >= warmup:
                times.append((t1 - t0) / 1000)
    return statistics.median(times)


def c_median_us(bench, address, size, iterations):
    host, port = address.rsplit(":", 1)
    out = subprocess.run([bench, "-H", host, "-p", port, "-f", str(NOOP), "-s", str(size),
                          "-i", str(iterations), "-t", "latency"],
                         capture_output=True, text=True, check=True).stdout
    # the latency table: a "#Size ... Median(us) ..." header, then a row per size
    column = None
    for line in out.splitlines():
        fields = line.split()
        if fields and fields[0] == "#Size" and "Median(us)" in fields:
            column = fields.index("Median(us)")
        elif column and fields and re.fullmatch(r"\d+", fields[0]) and int(fields[0]) == size:
            return float(fields[column])
    sys.exit(f"python_overhead.py: no latency row for {size} bytes in naa-bench's output:\n{out}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--naa-bench", required=True)
    p.add_argument("--naa", required=True, help="host:port of a naa-server")
    p.add_argument("--sizes", default="1,1048576")
    p.add_argument("--iterations", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    print(f"naa {naa.version()}, Python {sys.version.split()[0]}, NumPy {np.__version__}")
    print(f"{'size':>9} {'round':>5} {'C us':>9} {'Python us':>10}")
    for size in (int(s) for s in args.sizes.split(",")):
        cs, ps = [], []
        for r in range(args.rounds):
            cs.append(c_median_us(args.naa_bench, args.naa, size, args.iterations))
            ps.append(python_median_us(args.naa, size, args.iterations))
            print(f"{size:>9} {r:>5} {cs[-1]:>9.2f} {ps[-1]:>10.2f}")
        c, py = statistics.median(cs), statistics.median(ps)
        print(f"{size:>9} {'all':>5} {c:>9.2f} {py:>10.2f}   Python - C = {py - c:+.2f} us "
              f"({py / c:.2f}x)")


if __name__ == "__main__":
    main()

// SPDX-License-Identifier: BSD-3-Clause
// OSU-style output: one aligned table per test, rows printed as they are measured, or with
// --csv the same numbers as tidy "test,variant,size,metric,value" lines.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace naa::bench {

struct Column {
  std::string name;    // table heading
  std::string metric;  // csv metric name ("" for the size column)
  std::string variant;
  int precision;
};

class Table {
 public:
  Table(FILE *out, bool csv, std::string test, std::string title, std::vector<Column> columns);
  // values[0] is the size; NaN prints as "-" (not measured).
  void row(const std::vector<double> &values);

 private:
  FILE *out_;
  bool csv_;
  std::string test_;
  std::vector<Column> columns_;
};

// --status-every: with standard output not a terminal (a file, a pipe), Table::row also says
// on standard error which size it has done, at most every `seconds` (0: never), so that a run
// of minutes shows it is alive. Default 10.
void status_every(double seconds);

// The latency rows kept for --plot.
struct PlotPoint {
  size_t size;
  double libnaa_us, libnaa_mbps, raw_us, raw_mbps;  // raw NaN when not measured
};

// Whether PATH holds an executable `program` (the helpers naa-bench runs: gnuplot, fi_pingpong).
bool on_path(const char *program);

// Draws latency and bandwidth over size into png_path with gnuplot. Returns false, with a
// message on stderr saying why (gnuplot not installed, or it failed), when no plot was drawn.
bool plot(const std::vector<PlotPoint> &points, const std::string &png_path);

}  // namespace naa::bench

// SPDX-License-Identifier: BSD-3-Clause
#include "report.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

namespace naa::bench {
namespace {

constexpr int kWidth = 14;

using Clock = std::chrono::steady_clock;
double status_seconds = 10;
const Clock::time_point started = Clock::now();
Clock::time_point last_status = started;

// A line on stderr for the row of `size` just printed to out, when out is not a terminal.
void status(FILE *out, const std::string &test, unsigned long long size) {
  if (status_seconds <= 0 || isatty(fileno(out))) return;
  const Clock::time_point now = Clock::now();
  if (std::chrono::duration<double>(now - last_status).count() < status_seconds) return;
  last_status = now;
  std::fprintf(stderr, "naa-bench: %s: %llu bytes done, %.0f s since the start\n", test.c_str(),
               size, std::chrono::duration<double>(now - started).count());
}

int width(const Column &c) {
  return std::max<int>(kWidth, static_cast<int>(c.name.size()) + 2);
}

}  // namespace

void status_every(double seconds) {
  status_seconds = seconds;
}

bool on_path(const char *program) {
  const char *path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

Table::Table(FILE *out, bool csv, std::string test, std::string title, std::vector<Column> columns)
    : out_(out), csv_(csv), test_(std::move(test)), columns_(std::move(columns)) {
  if (csv_) return;
  std::fprintf(out_, "\n# %s\n#%-*s", title.c_str(), kWidth - 1, columns_[0].name.c_str());
  for (size_t i = 1; i < columns_.size(); ++i)
    std::fprintf(out_, "%*s", width(columns_[i]), columns_[i].name.c_str());
  std::fprintf(out_, "\n");
  std::fflush(out_);
}

void Table::row(const std::vector<double> &values) {
  const auto size = static_cast<unsigned long long>(values[0]);
  if (csv_) {
    for (size_t i = 1; i < columns_.size() && i < values.size(); ++i)
      if (!std::isnan(values[i]))
        std::fprintf(out_, "%s,%s,%llu,%s,%.*f\n", test_.c_str(), columns_[i].variant.c_str(), size,
                     columns_[i].metric.c_str(), columns_[i].precision, values[i]);
  } else {
    std::fprintf(out_, "%-*llu", kWidth, size);
    for (size_t i = 1; i < columns_.size(); ++i) {
      if (i >= values.size() || std::isnan(values[i]))
        std::fprintf(out_, "%*s", width(columns_[i]), "-");
      else
        std::fprintf(out_, "%*.*f", width(columns_[i]), columns_[i].precision, values[i]);
    }
    std::fprintf(out_, "\n");
  }
  std::fflush(out_);
  status(out_, test_, size);
}

bool plot(const std::vector<PlotPoint> &points, const std::string &png_path) {
  if (!on_path("gnuplot")) {
    std::fprintf(stderr,
                 "naa-bench: --plot: gnuplot is not installed, no plot drawn "
                 "(Debian: apt-get install gnuplot-nox)\n");
    return false;
  }
  if (points.empty()) {
    std::fprintf(stderr, "naa-bench: --plot: no latency results to draw (run the latency test)\n");
    return false;
  }
  char data_path[] = "/tmp/naa-bench-plot-XXXXXX";
  int fd = mkstemp(data_path);
  if (fd < 0) {
    std::perror("naa-bench: --plot: mkstemp");
    return false;
  }
  FILE *data = fdopen(fd, "w");
  bool raw = false;
  for (const PlotPoint &p : points) {
    raw = raw || !std::isnan(p.raw_us);
    std::fprintf(data, "%zu %.3f %.3f %.3f %.3f\n", p.size, p.libnaa_us, p.libnaa_mbps,
                 std::isnan(p.raw_us) ? 0.0 : p.raw_us, std::isnan(p.raw_mbps) ? 0.0 : p.raw_mbps);
  }
  std::fclose(data);
  FILE *gp = popen("gnuplot", "w");
  bool ok = gp != nullptr;
  if (ok) {
    std::fprintf(gp,
                 "set terminal pngcairo size 1200,500\nset output '%s'\n"
                 "set multiplot layout 1,2\nset logscale xy\nset grid\nset key top left\n"
                 "set xlabel 'message size (bytes)'\n"
                 "set ylabel 'round trip, median (us)'\nset title 'latency'\n"
                 "plot '%s' using 1:2 with linespoints title 'libnaa'%s\n"
                 "set ylabel 'MB/s each way'\nset title 'bandwidth'\n"
                 "plot '%s' using 1:3 with linespoints title 'libnaa'%s\n"
                 "unset multiplot\n",
                 png_path.c_str(), data_path,
                 raw ? ", '' using 1:4 with linespoints title 'raw transport'" : "", data_path,
                 raw ? ", '' using 1:5 with linespoints title 'raw transport'" : "");
    ok = pclose(gp) == 0;
  }
  unlink(data_path);
  if (!ok)
    std::fprintf(stderr, "naa-bench: --plot: gnuplot failed; no plot written to %s\n",
                 png_path.c_str());
  return ok;
}

}  // namespace naa::bench

// SPDX-License-Identifier: BSD-3-Clause
#include "fi_pingpong_output.hpp"

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace naa::bench {
namespace {

std::vector<std::string> words(const std::string &line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string word; in >> word;) w.push_back(word);
  return w;
}

FiPingpongResult failure(const std::string &why) {
  FiPingpongResult r;
  r.error = why;
  return r;
}

}  // namespace

FiPingpongResult parse_fi_pingpong(const std::string &output) {
  std::istringstream in(output);
  std::string line;
  size_t column = 0;
  bool heading = false;
  while (std::getline(in, line)) {
    const std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    if (!heading) {
      for (size_t i = 0; i < w.size(); ++i)
        if (w[i] == "usec/xfer") {
          column = i;
          heading = true;
        }
      continue;
    }
    if (w.size() <= column)
      return failure("fi_pingpong's result line has no usec/xfer column: '" + line + "'");
    char *end = nullptr;
    const double half = std::strtod(w[column].c_str(), &end);
    if (end == w[column].c_str() || *end != '\0' || !std::isfinite(half) || half <= 0)
      return failure("fi_pingpong's usec/xfer '" + w[column] + "' is not a positive number in '" +
                     line + "'");
    FiPingpongResult r;
    r.ok = true;
    r.round_trip_us = 2 * half;  // one transfer each way per iteration
    return r;
  }
  return failure(heading ? "fi_pingpong printed its heading but no result line"
                         : "fi_pingpong printed no heading naming usec/xfer (output: '" + output +
                               "')");
}

}  // namespace naa::bench

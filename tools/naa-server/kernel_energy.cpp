// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_energy.hpp"

#include <map>
#include <mutex>
#include <string>

#include "energy/energy.hpp"

namespace naa::server::kernel_energy {
namespace {

struct Line {
  std::string name;
  uint64_t runs = 0, ns = 0, uj = 0;
};

std::mutex mu;
std::map<uint8_t, Line> &lines() {  // never destroyed: printed after the server stopped
  static auto *m = new std::map<uint8_t, Line>;
  return *m;
}

}  // namespace

Window begin() {
  Window w{false, 0, 0};
  if (!energy::Meter::on()) return w;
  w.read = energy::Meter::get()->read(&w.uj0, &w.t0_ns);
  return w;
}

bool end(const Window &w, uint8_t code, const char *name, uint64_t *uj) {
  uint64_t now = 0, t1 = 0;
  if (!w.read || !energy::Meter::get()->read(&now, &t1)) return false;  // unknown, not zero
  *uj = now - w.uj0;
  std::lock_guard<std::mutex> lock(mu);
  Line &l = lines()[code];
  l.name = name;
  ++l.runs;
  l.ns += t1 - w.t0_ns;
  l.uj += *uj;
  return true;
}

bool measuring(std::string *source) {
  energy::Meter *m = energy::Meter::get();
  if (m == nullptr || m->sources().empty()) return false;
  *source = m->sources();
  return true;
}

void print_source(FILE *out) {
  energy::Meter *m = energy::Meter::get();
  if (m == nullptr) return;
  if (m->sources().empty())
    std::fprintf(out, "naa-server: energy: not measured: %s\n", m->unavailable().c_str());
  else
    std::fprintf(out, "naa-server: energy: %s, read before and after each kernel run\n",
                 m->sources().c_str());
}

void print(FILE *out) {
  std::lock_guard<std::mutex> lock(mu);
  for (const auto &[code, l] : lines())
    std::fprintf(out,
                 "naa-server: kernel %u (%s): %llu runs, %.6f J over %.3f ms of kernel time, "
                 "%.6f J per run\n",
                 static_cast<unsigned>(code), l.name.c_str(),
                 static_cast<unsigned long long>(l.runs), static_cast<double>(l.uj) / 1e6,
                 static_cast<double>(l.ns) / 1e6,
                 static_cast<double>(l.uj) / 1e6 / static_cast<double>(l.runs));
}

}  // namespace naa::server::kernel_energy

// SPDX-License-Identifier: BSD-3-Clause
// Energy counters of the node (NAA_ENERGY): Linux powercap (RAPL on Intel and AMD) and NVIDIA
// GPUs through NVML, behind one interface. Each is found at run time; one that is absent or
// unreadable yields the reason and how to grant access, never a reading of zero.
//
// Every source is a counter that only grows: microjoules since it was opened, the hardware
// counters' wrap-arounds folded in. A window's energy is the difference of two readings; RAPL
// updates its counters about once a millisecond, so a window shorter than that sees either
// nothing or a whole update, and only the sum over many windows estimates their energy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace naa::energy {

class Source {
 public:
  virtual ~Source() = default;
  // What is counted, e.g. "powercap (package-0, dram)", "nvml (2 GPUs)".
  virtual std::string name() const = 0;
  // Microjoules since the source was opened; false (and *why set) if a counter cannot be read.
  virtual bool read(uint64_t *uj, std::string *why) = 0;
};

struct Opened {
  std::unique_ptr<Source> source;  // null: not available, then:
  std::string why_not;             // the reason and how to grant access
};

// The zones of the powercap tree at root (/sys/class/powercap, or a copy of its layout):
// every package zone intel-rapl:N (named package-*; AMD's RAPL appears under the same name)
// and its DRAM subzones intel-rapl:N:M (named dram). Core and uncore subzones are inside the
// package's figure and psys spans the packages, so neither is added.
Opened open_powercap(const std::string &root);
// Every GPU's total energy consumption through NVML, loaded with dlopen(library).
Opened open_nvml(const char *library);

// The counter difference from `before` to `now` of a counter that wraps to 0 after `max`
// (powercap's max_energy_range_uj): a counter that went back has wrapped once.
inline uint64_t advance(uint64_t before, uint64_t now, uint64_t max) {
  return now >= before ? now - before : max - before + now;
}

// The process's meter, as NAA_ENERGY chose (0: off, the default; 1: every source found;
// powercap; nvml), NAA_POWERCAP_ROOT its tree. Opened on first use; the sources asked for
// that are not available are logged once, with their reason.
class Meter {
 public:
  // Whether energy is measured at all (NAA_ENERGY is not 0); read once per process.
  static bool on();
  // The process's meter, or null when energy is off.
  static Meter *get();

  // Microjoules the sources counted since they were opened; false if none is available or a
  // read failed (the figure is then unknown, not zero). at_ns (unless null): when, in ns of
  // CLOCK_MONOTONIC, taken with the reading, so that readings ordered by it never go back.
  bool read(uint64_t *uj, uint64_t *at_ns = nullptr);
  // The sources counted ("" : none), and why the others asked for are not.
  const std::string &sources() const { return names_; }
  const std::string &unavailable() const { return unavailable_; }

  explicit Meter(const std::string &choice, const std::string &powercap_root,
                 const char *nvml_library);

 private:
  std::vector<std::unique_ptr<Source>> sources_;
  std::string names_, unavailable_;
};

}  // namespace naa::energy

// SPDX-License-Identifier: BSD-3-Clause
// The energy sources (lib/energy) read through a directory laid out as /sys/class/powercap:
// packages and their DRAM subzones counted, core/uncore and psys not; a wrap-around folded in
// through max_energy_range_uj; an unreadable counter and a missing tree give a reason and no
// source (never zero joules); NVML absent likewise.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "energy/energy.hpp"

namespace {

std::string root;

void write_file(const std::string &path, const std::string &text) {
  FILE *f = std::fopen(path.c_str(), "w");
  assert_non_null(f);
  std::fputs(text.c_str(), f);
  std::fclose(f);
}

// A zone directory as the kernel lays it out (the files libnaa reads, and one it does not).
void zone(const std::string &entry, const char *name, uint64_t uj, uint64_t max) {
  const std::string dir = root + "/" + entry;
  mkdir(dir.c_str(), 0755);
  write_file(dir + "/name", std::string(name) + "\n");
  write_file(dir + "/energy_uj", std::to_string(uj) + "\n");
  write_file(dir + "/max_energy_range_uj", std::to_string(max) + "\n");
  write_file(dir + "/enabled", "1\n");
}
void set(const std::string &entry, uint64_t uj) {
  write_file(root + "/" + entry + "/energy_uj", std::to_string(uj) + "\n");
}

int make_tree(void **) {
  char tmpl[] = "/tmp/naa-powercap.XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return -1;
  root = tmpl;
  mkdir((root + "/intel-rapl").c_str(), 0755);  // the control type: not a zone
  zone("intel-rapl:0", "package-0", 1000, 262143328850);
  zone("intel-rapl:0:0", "core", 500, 262143328850);
  zone("intel-rapl:0:1", "dram", 100, 65712999613);
  zone("intel-rapl:1", "package-1", 7000, 262143328850);
  zone("intel-rapl:2", "psys", 9000, 262143328850);
  zone("intel-rapl-mmio:0", "package-0", 1000, 262143328850);  // the same package again
  return 0;
}
int remove_tree(void **) {
  return std::system(("rm -rf " + root).c_str()) == 0 ? 0 : -1;
}

uint64_t reading(naa::energy::Source &s) {
  uint64_t uj = 0;
  std::string why;
  assert_true(s.read(&uj, &why));
  return uj;
}

void test_packages_and_dram(void **) {
  naa::energy::Opened o = naa::energy::open_powercap(root);
  assert_non_null(o.source.get());
  assert_string_equal(o.source->name().c_str(),
                      "powercap (package-0, dram of package-0, package-1)");
  assert_int_equal(reading(*o.source), 0);
  set("intel-rapl:0", 1000 + 2000000);   // package-0: 2 J
  set("intel-rapl:0:1", 100 + 500000);   // its DRAM: 0.5 J
  set("intel-rapl:1", 7000 + 250000);    // package-1: 0.25 J
  set("intel-rapl:0:0", 500 + 9000000);  // core: inside the package's figure
  set("intel-rapl:2", 9000 + 9000000);   // psys: spans the packages
  assert_int_equal(reading(*o.source), 2750000);
  assert_int_equal(reading(*o.source), 2750000);  // nothing moved
}

void test_wrap_around(void **) {
  zone("intel-rapl:0", "package-0", 999000, 1000000);
  zone("intel-rapl:0:1", "dram", 0, 65712999613);
  zone("intel-rapl:1", "package-1", 0, 262143328850);
  naa::energy::Opened o = naa::energy::open_powercap(root);
  assert_non_null(o.source.get());
  set("intel-rapl:0", 999900);
  assert_int_equal(reading(*o.source), 900);
  set("intel-rapl:0", 400);  // wrapped past 1000000
  assert_int_equal(reading(*o.source), 900 + 500);
  assert_int_equal(naa::energy::advance(10, 4, 100), 94);
}

// Root reads a file whatever its mode: there, an energy_uj that is a directory is the counter
// that cannot be read.
void test_unreadable_counter(void **) {
  zone("intel-rapl:0", "package-0", 1000, 262143328850);
  zone("intel-rapl:0:1", "dram", 0, 65712999613);
  zone("intel-rapl:1", "package-1", 0, 262143328850);
  const std::string counter = root + "/intel-rapl:0:1/energy_uj";
  chmod(counter.c_str(), 0);
  const bool mode_stops_reads = access(counter.c_str(), R_OK) != 0;
  if (!mode_stops_reads) {  // root, or CAP_DAC_OVERRIDE
    unlink(counter.c_str());
    mkdir(counter.c_str(), 0755);
  }
  naa::energy::Opened o = naa::energy::open_powercap(root);
  assert_null(o.source.get());
  print_message("why: %s\n", o.why_not.c_str());
  assert_non_null(std::strstr(o.why_not.c_str(), counter.c_str()));
  if (mode_stops_reads)
    assert_non_null(std::strstr(o.why_not.c_str(), "udev rule"));
  else
    assert_non_null(std::strstr(o.why_not.c_str(), "not a readable counter"));
  if (!mode_stops_reads)
    rmdir(counter.c_str());
  else
    chmod(counter.c_str(), 0644);
  set("intel-rapl:0:1", 0);
}

void test_missing_tree(void **) {
  naa::energy::Opened o = naa::energy::open_powercap(root + "/absent");
  assert_null(o.source.get());
  assert_non_null(std::strstr(o.why_not.c_str(), "No such file or directory"));
  // A tree without package zones (a VM's empty /sys/class/powercap).
  mkdir((root + "/empty").c_str(), 0755);
  o = naa::energy::open_powercap(root + "/empty");
  assert_null(o.source.get());
  assert_non_null(std::strstr(o.why_not.c_str(), "no package zones"));
}

void test_nvml_absent(void **) {
  naa::energy::Opened o = naa::energy::open_nvml("libnvidia-ml.so.1");
  if (o.source != nullptr) skip();  // a machine with an NVIDIA driver
  assert_non_null(std::strstr(o.why_not.c_str(), "nvml: "));
  naa::energy::Meter m("nvml", root, "libnvidia-ml.so.1");
  uint64_t uj = 1;
  assert_false(m.read(&uj));  // unknown, not zero
  assert_string_equal(m.sources().c_str(), "");
  assert_non_null(std::strstr(m.unavailable().c_str(), "nvml: "));
}

// NAA_ENERGY=1 counts every source found and names the others' reasons.
void test_meter(void **) {
  naa::energy::Meter m("1", root, "libnaa-test-no-such-nvml.so");
  assert_non_null(std::strstr(m.sources().c_str(), "powercap (package-0"));
  assert_non_null(std::strstr(m.unavailable().c_str(), "nvml: "));
  uint64_t uj = 0;
  assert_true(m.read(&uj));
  assert_int_equal(uj, 0);
  set("intel-rapl:1", 3000000);
  assert_true(m.read(&uj));
  assert_int_equal(uj, 3000000);
  naa::energy::Meter wrong("yes", root, "libnaa-test-no-such-nvml.so");
  assert_false(wrong.read(&uj));
  assert_non_null(std::strstr(wrong.unavailable().c_str(), "'yes' is not 0, 1, powercap or nvml"));
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_packages_and_dram),  cmocka_unit_test(test_wrap_around),
      cmocka_unit_test(test_unreadable_counter), cmocka_unit_test(test_missing_tree),
      cmocka_unit_test(test_nvml_absent),        cmocka_unit_test(test_meter),
  };
  return cmocka_run_group_tests(tests, make_tree, remove_tree);
}

// SPDX-License-Identifier: BSD-3-Clause
#include "energy/energy.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "config/params.hpp"
#include "diag/log.hpp"

namespace naa::energy {
namespace {

// What makes energy_uj readable to others than root, for the reasons below.
constexpr const char *kGrant =
    "energy_uj is readable by root only since Linux 5.10 and the 2020 stable kernels "
    "(CVE-2020-8694); let others read it with a udev rule such as ACTION==\"add\", "
    "SUBSYSTEM==\"powercap\", RUN+=\"/bin/chmod 0444 /sys%p/energy_uj\" (or chmod after each "
    "boot); setcap on the program is no fit: the one capability that would do, "
    "CAP_DAC_READ_SEARCH, lets it read every file";

// A number in a sysfs file read from offset 0 (which makes sysfs read the counter anew).
bool read_number(int fd, uint64_t *value, int *error) {
  char text[32];
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  if (n < 0) {
    *error = errno;
    return false;
  }
  text[n] = '\0';
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (end == text || errno != 0 || (*end != '\0' && *end != '\n')) {
    *error = EINVAL;
    return false;
  }
  *value = v;
  return true;
}

std::string read_text(const std::string &path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  char text[64];
  const ssize_t n = pread(fd, text, sizeof text - 1, 0);
  ::close(fd);
  std::string s(text, n > 0 ? static_cast<size_t>(n) : 0);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "intel-rapl:N" (subzone -1) or "intel-rapl:N:M".
bool zone_name(const char *entry, int *package, int *subzone) {
  static const char kPrefix[] = "intel-rapl:";
  if (std::strncmp(entry, kPrefix, sizeof kPrefix - 1) != 0) return false;
  const char *p = entry + sizeof kPrefix - 1;
  char *end = nullptr;
  if (*p < '0' || *p > '9') return false;
  *package = static_cast<int>(std::strtol(p, &end, 10));
  *subzone = -1;
  if (*end == '\0') return true;
  if (*end != ':' || end[1] < '0' || end[1] > '9') return false;
  *subzone = static_cast<int>(std::strtol(end + 1, &end, 10));
  return *end == '\0';
}

class Powercap : public Source {
 public:
  struct Zone {
    std::string label;
    int fd;
    uint64_t max, last;
  };
  explicit Powercap(std::vector<Zone> zones) : zones_(std::move(zones)) {}
  ~Powercap() override {
    for (const Zone &z : zones_) ::close(z.fd);
  }
  std::string name() const override {
    std::string s = "powercap (";
    for (size_t i = 0; i < zones_.size(); ++i) s += (i > 0 ? ", " : "") + zones_[i].label;
    return s + ")";
  }
  bool read(uint64_t *uj, std::string *why) override {
    for (Zone &z : zones_) {
      uint64_t now = 0;
      int error = 0;
      if (!read_number(z.fd, &now, &error)) {
        *why = "powercap: " + z.label + ": energy_uj: " + std::strerror(error);
        return false;
      }
      total_ += advance(z.last, now, z.max);
      z.last = now;
    }
    *uj = total_;
    return true;
  }

 private:
  std::vector<Zone> zones_;
  uint64_t total_ = 0;
};

class Nvml : public Source {
 public:
  using Device = void *;
  using GetEnergy = int (*)(Device, unsigned long long *);
  using ErrorString = const char *(*)(int);
  Nvml(std::vector<Device> devices, GetEnergy get, ErrorString error, std::vector<uint64_t> first)
      : devices_(std::move(devices)), get_(get), error_(error), first_mj_(std::move(first)) {}
  std::string name() const override {
    return "nvml (" + std::to_string(devices_.size()) + (devices_.size() == 1 ? " GPU)" : " GPUs)");
  }
  bool read(uint64_t *uj, std::string *why) override {
    uint64_t sum = 0;
    for (size_t i = 0; i < devices_.size(); ++i) {
      unsigned long long mj = 0;
      const int rc = get_(devices_[i], &mj);
      if (rc != 0) {
        *why = "nvml: GPU " + std::to_string(i) + ": " + error_(rc);
        return false;
      }
      sum += (mj - first_mj_[i]) * 1000u;
    }
    *uj = sum;
    return true;
  }

 private:
  std::vector<Device> devices_;
  GetEnergy get_;
  ErrorString error_;
  std::vector<uint64_t> first_mj_;
};

}  // namespace

Opened open_powercap(const std::string &root) {
  Opened result;
  DIR *dir = ::opendir(root.c_str());
  if (dir == nullptr) {
    result.why_not = "powercap: " + root + ": " + std::strerror(errno) +
                     ": no RAPL counters here (a virtual machine, a kernel without "
                     "intel_rapl_msr, or a container that does not mount /sys/class/powercap; "
                     "NAA_POWERCAP_ROOT names another tree)";
    return result;
  }
  struct Found {
    int package, subzone;
    std::string entry, name;
  };
  std::vector<Found> found;
  while (const dirent *e = ::readdir(dir)) {
    Found f{0, 0, e->d_name, ""};
    if (!zone_name(e->d_name, &f.package, &f.subzone)) continue;
    f.name = read_text(root + "/" + f.entry + "/name");
    const bool package = f.subzone < 0 && f.name.rfind("package", 0) == 0;
    if (package || (f.subzone >= 0 && f.name == "dram")) found.push_back(f);
  }
  ::closedir(dir);
  if (found.empty()) {
    result.why_not = "powercap: " + root +
                     ": no package zones (intel-rapl:N named package-N): no RAPL counters here";
    return result;
  }
  std::sort(found.begin(), found.end(), [](const Found &a, const Found &b) {
    return a.package != b.package ? a.package < b.package : a.subzone < b.subzone;
  });
  std::vector<Powercap::Zone> zones;
  auto fail = [&](const std::string &why) {
    for (const Powercap::Zone &z : zones) ::close(z.fd);
    result.why_not = why;
    return std::move(result);
  };
  for (const Found &f : found) {
    const std::string dir_path = root + "/" + f.entry;
    std::string label = f.name;
    if (f.subzone >= 0) label += " of package-" + std::to_string(f.package);
    int error = 0;
    uint64_t max = 0;
    const int max_fd = ::open((dir_path + "/max_energy_range_uj").c_str(), O_RDONLY | O_CLOEXEC);
    const bool max_read = max_fd >= 0 && read_number(max_fd, &max, &error);
    if (max_fd < 0) error = errno;
    if (max_fd >= 0) ::close(max_fd);
    if (!max_read || max == 0)
      return fail("powercap: " + dir_path + "/max_energy_range_uj: " +
                  std::strerror(max_read ? EINVAL : error) + ": a wrap-around could not be told");
    const std::string counter = dir_path + "/energy_uj";
    const int fd = ::open(counter.c_str(), O_RDONLY | O_CLOEXEC);
    uint64_t first = 0;
    if (fd < 0) error = errno;
    if (fd < 0 || !read_number(fd, &first, &error)) {
      if (fd >= 0) ::close(fd);
      const bool denied = error == EACCES || error == EPERM;
      return fail("powercap: " + counter + ": " + std::strerror(error) +
                  (denied ? std::string(": ") + kGrant : std::string(": not a readable counter")));
    }
    zones.push_back(Powercap::Zone{label, fd, max, first});
  }
  result.source = std::make_unique<Powercap>(std::move(zones));
  return result;
}

Opened open_nvml(const char *library) {
  Opened result;
  // Never closed: NVML stays initialised for the process's meter.
  void *lib = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char *e = ::dlerror();
    result.why_not =
        std::string("nvml: ") + (e != nullptr ? e : library) + ": no NVIDIA driver here";
    return result;
  }
  using Init = int (*)();
  using Count = int (*)(unsigned *);
  using ByIndex = int (*)(unsigned, Nvml::Device *);
  auto init = reinterpret_cast<Init>(::dlsym(lib, "nvmlInit_v2"));
  auto count = reinterpret_cast<Count>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
  auto by_index = reinterpret_cast<ByIndex>(::dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  auto energy =
      reinterpret_cast<Nvml::GetEnergy>(::dlsym(lib, "nvmlDeviceGetTotalEnergyConsumption"));
  auto error = reinterpret_cast<Nvml::ErrorString>(::dlsym(lib, "nvmlErrorString"));
  if (init == nullptr || count == nullptr || by_index == nullptr || energy == nullptr ||
      error == nullptr) {
    result.why_not = std::string("nvml: ") + library +
                     " lacks nvmlDeviceGetTotalEnergyConsumption (a driver older than R396?)";
    return result;
  }
  int rc = init();
  unsigned n = 0;
  if (rc == 0) rc = count(&n);
  if (rc != 0) {
    result.why_not = std::string("nvml: ") + error(rc);
    return result;
  }
  std::vector<Nvml::Device> devices(n);
  std::vector<uint64_t> first(n);
  for (unsigned i = 0; i < n; ++i) {
    unsigned long long mj = 0;
    rc = by_index(i, &devices[i]);
    if (rc == 0) rc = energy(devices[i], &mj);
    if (rc != 0) {
      result.why_not = "nvml: GPU " + std::to_string(i) + ": " + error(rc) +
                       " (total energy needs a Volta or later GPU)";
      return result;
    }
    first[i] = mj;
  }
  if (n == 0) {
    result.why_not = "nvml: no GPUs";
    return result;
  }
  result.source = std::make_unique<Nvml>(std::move(devices), energy, error, std::move(first));
  return result;
}

Meter::Meter(const std::string &choice, const std::string &powercap_root,
             const char *nvml_library) {
  const bool all = choice == "1";
  if (!all && choice != "powercap" && choice != "nvml")
    unavailable_ = "NAA_ENERGY '" + choice + "' is not 0, 1, powercap or nvml";
  std::vector<Opened> opened;
  if (all || choice == "powercap") opened.push_back(open_powercap(powercap_root));
  if (all || choice == "nvml") opened.push_back(open_nvml(nvml_library));
  for (Opened &o : opened) {
    if (o.source == nullptr) {
      unavailable_ += (unavailable_.empty() ? "" : "; ") + o.why_not;
      continue;
    }
    names_ += (names_.empty() ? "" : " + ") + o.source->name();
    sources_.push_back(std::move(o.source));
  }
}

bool Meter::read(uint64_t *uj, uint64_t *at_ns) {
  static std::mutex mu;  // the sources' wrap-around state
  std::lock_guard<std::mutex> lock(mu);
  if (at_ns != nullptr) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    *at_ns = static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
  }
  uint64_t sum = 0;
  for (const std::unique_ptr<Source> &s : sources_) {
    uint64_t v = 0;
    std::string why;
    if (!s->read(&v, &why)) {
      NAA_LOG_DEBUG("NAA_ENERGY: %s", why.c_str());
      return false;
    }
    sum += v;
  }
  *uj = sum;
  return !sources_.empty();
}

namespace {
std::atomic<int> state{-1};  // -1 unread, 0 off, 1 on
std::string choice_read;
}  // namespace

bool Meter::on() {
  int s = state.load(std::memory_order_relaxed);
  if (s >= 0) return s != 0;
  static std::once_flag once;
  std::call_once(once, [] {
    choice_read = config::params::Values::read(config::params::own()).text("NAA_ENERGY");
    state.store(choice_read == "0" ? 0 : 1);
  });
  return state.load() != 0;
}

Meter *Meter::get() {
  if (!on()) return nullptr;
  static Meter *meter = [] {
    const config::params::Values values = config::params::Values::read(config::params::own());
    auto *m = new Meter(choice_read, values.text("NAA_POWERCAP_ROOT"), "libnvidia-ml.so.1");
    if (!m->unavailable().empty()) {
      if (m->sources().empty())
        NAA_LOG_WARN("NAA_ENERGY: no energy is measured: %s", m->unavailable().c_str());
      else
        NAA_LOG_INFO("NAA_ENERGY: not counted: %s", m->unavailable().c_str());
    }
    return m;
  }();
  return meter;
}

}  // namespace naa::energy

// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/shm/names.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "process_id.hpp"
#include "error.hpp"
#include "diag/log.hpp"

namespace naa::transport::ofi::shm {

// The random part: 64 bits from getrandom(2) per endpoint (under 1 us), so that another local
// user who sees one name in /dev/shm cannot tell the process's next ones and take them first;
// a random_device and two draws per endpoint would cost each warm naa_create more on both
// sides. Should getrandom fail, a counter's steps over a base drawn once.
void give_unique_source(fi_info *info) {
  uint64_t part = 0;
  if (getrandom(&part, sizeof part, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof part)) {
    static const uint64_t base = [] {
      std::random_device random;
      return (static_cast<uint64_t>(random()) << 32) | random();
    }();
    static std::atomic<uint64_t> next{0};
    part = base + next.fetch_add(1, std::memory_order_relaxed) * 0x9e3779b97f4a7c15ULL;
  }
  char source[64];
  snprintf(source, sizeof source, "fi_shm://%d-%016" PRIx64, static_cast<int>(naa::this_process()),
           part);
  char *copy = strdup(source);
  if (copy == nullptr) throw Error(NAA_ERR_NO_RESOURCES, "out of memory");
  free(info->src_addr);
  info->src_addr = copy;
  info->src_addrlen = strlen(source) + 1;
}

int hold_name(const std::string &name) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0)
    NAA_LOG_WARN("cannot lock shm region %s: clients may take it for a dead server's",
                 name.c_str());
  return fd;
}

std::optional<Object> listener_object(const std::string &address) {
  const std::string text(address.c_str());  // FI_ADDR_STR names travel with their NUL
  if (text.compare(0, sizeof kListenerAddressPrefix - 1, kListenerAddressPrefix) != 0)
    return std::nullopt;
  const std::string service = text.substr(sizeof kListenerAddressPrefix - 1);
  struct stat st {};
  if (service.empty() || service.find('/') != std::string::npos ||
      stat(object_path("/" + service).c_str(), &st) != 0)
    return std::nullopt;
  return Object{st.st_dev, st.st_ino};
}

}  // namespace naa::transport::ofi::shm

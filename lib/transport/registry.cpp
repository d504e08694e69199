// SPDX-License-Identifier: BSD-3-Clause
#include "transport/registry.hpp"

#include "config.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>

#include "config/options.hpp"
#include "error.hpp"
#include "transport/module.hpp"
#include "transport/shm_name.hpp"

namespace naa::transport {

// Each transport's folder defines its entry function where configure builds that folder; the
// rows of a folder not built hold none and say how to build it. Built as modules (the default),
// a row's entry function loads its module on first use (module.hpp) and the row names it.
#ifdef NAA_BUILTIN_TRANSPORTS
#ifdef NAA_HAVE_LIBFABRIC
namespace ofi {
const Entry *ofi_entry();
const Entry *shm_entry();
}  // namespace ofi
#define NAA_OFI(row, entry) nullptr, entry
#endif
#ifdef NAA_HAVE_VERBS
namespace verbs {
const Entry *verbs_entry();
}
#define NAA_VERBS(row, entry) nullptr, entry
#endif
#else
// A loaded module stays loaded: its entry is looked up once (a failed load throws, and the
// next call tries again).
#define NAA_OFI(row, entry)                                       \
  "ofi", [] {                                                     \
    static const Entry *const loaded = &module_entry("ofi", row); \
    return loaded;                                                \
  }
#define NAA_VERBS(row, entry)                                       \
  "verbs", [] {                                                     \
    static const Entry *const loaded = &module_entry("verbs", row); \
    return loaded;                                                  \
  }
#endif
#ifndef NAA_OFI
#define NAA_OFI(row, entry) nullptr, nullptr
#endif
#ifndef NAA_VERBS
#define NAA_VERBS(row, entry) nullptr, nullptr
#endif

namespace {

std::mutex table_mu;

// rdma-core finds its devices under /sys/class/infiniband: where that folder lists none, verbs
// reaches nothing and auto need not load its module to learn so. A machine without that sysfs
// view may still have devices: verbs is tried there.
bool rdma_device_present(const Destination &) {
  DIR *dir = opendir("/sys/class/infiniband");
  if (dir == nullptr) return access("/sys/class", F_OK) != 0;
  bool found = false;
  while (const dirent *d = readdir(dir))
    if (d->d_name[0] != '.') {
      found = true;
      break;
    }
  closedir(dir);
  return found;
}

// A deque: a row keeps its address when others are appended (registration_rows()).
std::deque<Registration> &table() {
  // Listening order under auto: ofi+tcp first, so that with port 0 the TCP port, the scarcer
  // one, is chosen and names the shm listener too. Connecting: shared memory to a server on
  // this host, verbs where an RDMA device routes there, else ofi+tcp.
  static std::deque<Registration> rows = {
      {"ofi",
       true,
       "ofi, ofi+PROVIDER",
       "libfabric (ofi: its choice of provider; ofi+tcp, ...)",
       "configure --with-libfabric",
       2,
       NAA_OFI("ofi", ofi::ofi_entry),
       false,
       nullptr,
       {{"NAA_OFI_WRITE_CHUNK", "bytes >= 4096", "",
         "split libfabric writes into pieces of this size (default: no split)",
         [](const std::string &t, const std::string &s) { config::parse_write_chunk(t, s); }}}},
      {"ofi+shm",
       false,
       "ofi+shm",
       "libfabric's shared memory, to an NAA on this host",
       "configure --with-libfabric",
       0,
       NAA_OFI("ofi+shm", ofi::shm_entry),
       true,
       [](const Destination &d) { return d.local_ip.empty() && shm_server_at(d.port); },
       {{"NAA_SHM_IDLE_ENDPOINTS", "0..16", "2",
         "ofi+shm endpoints of ended connections kept open for the next ones, per side (each "
         "holds 16 MiB of /dev/shm, a client's beyond its exit until a naa-server starts; 0: none)",
         [](const std::string &t, const std::string &s) { config::parse_idle_endpoints(t, s); }}}},
      {"verbs",
       false,
       "verbs",
       "rdma-core (librdmacm + libibverbs): RoCE, InfiniBand",
       "configure --with-verbs",
       1,
       NAA_VERBS("verbs", verbs::verbs_entry),
       false,
       rdma_device_present,
       {{"NAA_RDMA_DEVICE", "device name", "",
         "the RDMA device verbs connects from when NAA_LOCAL_IP is not set", nullptr}}},
  };
  return rows;
}

std::string grammar() {
  std::string g = "auto";
  for (const Registration *r : registration_rows()) g += std::string(", ") + r->grammar;
  return g;
}

}  // namespace

std::vector<Registration> registrations() {
  std::lock_guard<std::mutex> lock(table_mu);
  return {table().begin(), table().end()};
}

std::vector<const Registration *> registration_rows() {
  std::lock_guard<std::mutex> lock(table_mu);
  std::vector<const Registration *> rows;
  rows.reserve(table().size());
  for (const Registration &r : table()) rows.push_back(&r);
  return rows;
}

void add_transport(const Registration &row) {
  std::lock_guard<std::mutex> lock(table_mu);
  for (const Registration &r : table())
    if (std::string(r.name) == row.name)
      throw Error(NAA_ERR_CONFIG, std::string("transport ") + row.name + " is registered already");
  table().push_back(row);
}

void use_linked_entry(const std::string &name, const Entry *(*entry)()) {
  std::lock_guard<std::mutex> lock(table_mu);
  for (Registration &r : table())
    if (name == r.name) {
      r.module = nullptr;
      r.entry = entry;
      return;
    }
  throw Error(NAA_ERR_CONFIG, "transport " + name + " is not in the table");
}

ParsedName parse_name(const std::string &name, const std::string &what) {
  ParsedName parsed;
  if (name == "auto") {
    parsed.is_auto = true;
    return parsed;
  }
  const std::vector<const Registration *> rows = registration_rows();
  for (const Registration *r : rows)
    if (name == r->name) {
      parsed.row = r;
      return parsed;
    }
  const size_t plus = name.find('+');
  if (plus != std::string::npos && plus + 1 < name.size())
    for (const Registration *r : rows)
      if (r->variants && name.compare(0, plus, r->name) == 0 && std::strlen(r->name) == plus) {
        parsed.row = r;
        parsed.variant = name.substr(plus + 1);
        return parsed;
      }
  throw Error(NAA_ERR_CONFIG, what + " '" + name + "' is not a transport (use " + grammar() + ")");
}

const Entry &entry_of(const ParsedName &parsed, const std::string &name) {
  const Entry *e = parsed.row->entry != nullptr ? parsed.row->entry() : nullptr;
  if (e == nullptr)
    throw Error(NAA_ERR_UNSUPPORTED, "transport " + name + ": libnaa was built without it (" +
                                         parsed.row->build_hint + ")");
  return *e;
}

const Entry *usable_entry(const Registration &row, std::string *why) {
  try {
    const Entry *e = row.entry != nullptr ? row.entry() : nullptr;
    if (e == nullptr && why != nullptr) *why = std::string("not built (") + row.build_hint + ")";
    return e;
  } catch (const Error &e) {
    if (why != nullptr) *why = e.what();
    return nullptr;
  }
}

Capabilities capabilities_of(const std::string &name) {
  const ParsedName parsed = parse_name(name);
  const Entry *e = parsed.is_auto ? nullptr : usable_entry(*parsed.row);
  Capabilities c = e != nullptr ? e->capabilities(parsed.variant) : Capabilities{};
  c.same_host = e != nullptr && parsed.row->same_host;
  return c;
}

std::string listen_warning_of(const std::string &name) {
  const ParsedName parsed = parse_name(name);
  const Entry *e = parsed.is_auto ? nullptr : usable_entry(*parsed.row);
  return e != nullptr ? e->listen_warning(parsed.variant) : "";
}

}  // namespace naa::transport

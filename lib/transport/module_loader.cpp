// SPDX-License-Identifier: BSD-3-Clause
// Loads the transport modules (module.hpp) with dlopen, once per process, and hands each the
// core's functions it uses.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>

#include "config.h"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "error.hpp"
#include "diag/log.hpp"
#include "diag/signal_defaults.hpp"
#include "wait_plan.hpp"
#include "transport/descriptor_gate.hpp"
#include "transport/host.hpp"
#include "transport/module.hpp"
#include "transport/registry.hpp"
#include "transport/transport.hpp"

namespace naa::transport {
namespace {

const ModuleHost &host_table() {
  static const ModuleHost host = {
      kModuleAbi,
      &diag::log::threshold,
      &diag::log::write,
      &naa::wait_plan,
      &naa::idle_nap,
      &naa::idle_slice,
      &naa::yielding_pollers_add,
      &descriptor_gate,
      &descriptors_spare,
      &accepts_spare,
      [](DescriptorClaim *claim, bool waiting) { claim->hold(waiting); },
      &resolve_ipv4,
      &require_resolvable,
      &local_ipv4,
      &is_local_host,
      &private_data_text,
  };
  return host;
}

std::string real(const std::string &path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

// The file this code was loaded from: libnaa.so, or the program that links the core.
std::string own_file() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&own_file), &info) != 0 && info.dli_fname != nullptr &&
      *info.dli_fname != '\0' && std::strchr(info.dli_fname, '/') != nullptr)
    return real(info.dli_fname);
  return real("/proc/self/exe");
}

// A libnaa that runs from its build tree (the tests, scripts/demo.sh) loads that tree's
// modules, which libtool leaves in lib/.libs; an installed one, $(pkglibdir)'s.
std::string default_dir() {
  const std::string tree = real(NAA_BUILDDIR) + "/";
  if (own_file().compare(0, tree.size(), tree) == 0)
    return std::string(NAA_BUILDDIR) + "/lib/.libs";
  return NAA_PKGLIBDIR;
}

struct Module {
  const ModuleTable *table = nullptr;
  std::string why;
};

std::mutex modules_mu;
std::map<std::string, Module> modules;  // by path: loaded ones, and why the others were not
// By module name, the path each was loaded from: once loaded, a module stays the one used,
// whatever NAA_MODULE_DIR says later, and finding it costs no look at the environment.
std::map<std::string, std::string> loaded;

// Loads `path` (modules_mu held); a failure is remembered so it is logged once.
const Module &load(const std::string &path) {
  auto found = modules.find(path);
  if (found != modules.end()) return found->second;
  Module m;
  dlerror();
  const diag::TakenSignals before;
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  before.give_back();
  if (handle == nullptr) {
    const char *e = dlerror();
    m.why = std::string("cannot load ") + path + ": " + (e != nullptr ? e : "unknown error");
  } else if (auto *t = static_cast<const ModuleTable *>(dlsym(handle, kModuleSymbol));
             t == nullptr) {
    m.why = path + " is not a libnaa transport module (no symbol " + kModuleSymbol + ")";
    dlclose(handle);
  } else if (t->abi != kModuleAbi || std::strcmp(t->version, PACKAGE_VERSION) != 0) {
    m.why = path + " is a module of libnaa " + t->version + " (module ABI " +
            std::to_string(t->abi) + "), this is libnaa " + PACKAGE_VERSION + " (module ABI " +
            std::to_string(kModuleAbi) + "): install the modules of this libnaa";
    dlclose(handle);
  } else {
    t->bind(&host_table());  // the handle stays open: its entries live as long as the process
    m.table = t;
  }
  if (m.table == nullptr) NAA_LOG_WARN("transport module: %s", m.why.c_str());
  return modules.emplace(path, std::move(m)).first->second;
}

}  // namespace

std::string module_path(const std::string &module) {
  {
    std::lock_guard<std::mutex> lock(modules_mu);
    auto found = loaded.find(module);
    if (found != loaded.end()) return found->second;
  }
  std::string dir = read_parameters().text("NAA_MODULE_DIR");
  if (dir.empty()) dir = default_dir();
  return dir + "/libnaa-" + module + ".so";
}

const Entry &module_entry(const std::string &module, const char *row) {
  const std::string path = module_path(module);
  std::lock_guard<std::mutex> lock(modules_mu);
  const Module &m = load(path);
  if (m.table == nullptr)
    throw Error(NAA_ERR_UNSUPPORTED, "transport " + std::string(row) + ": " + m.why);
  loaded.emplace(module, path);
  const Entry *e = m.table->entry(row);
  if (e == nullptr)
    throw Error(NAA_ERR_UNSUPPORTED,
                "transport " + std::string(row) + ": " + path + " has no entry for it");
  return *e;
}

}  // namespace naa::transport

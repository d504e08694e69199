// SPDX-License-Identifier: BSD-3-Clause
#include "rm/pmix_share.hpp"
#include "config.h"

#include "diag/log.hpp"

#ifdef NAA_HAVE_PMIX
#include <dlfcn.h>
#include <pmix.h>

#include <chrono>
#include <climits>
#include <thread>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#endif

namespace naa::rm {

#ifdef NAA_HAVE_PMIX
namespace {

struct Libpmix {
  pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t) = nullptr;
  pmix_status_t (*finalize)(const pmix_info_t *, size_t) = nullptr;
  pmix_status_t (*get)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t,
                       pmix_value_t **) = nullptr;
  pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *) = nullptr;
  pmix_status_t (*commit)() = nullptr;
  void (*value_destruct)(pmix_value_t *) = nullptr;
  pmix_proc_t me{};
  pmix_rank_t leader = PMIX_RANK_UNDEF;  // the lowest rank on this node
  bool ok = false;
};

Libpmix *loaded = nullptr;

// A client that initialised PMIx and exits without finalising counts as failed (the launcher
// may end the whole job): ours is finalised at exit, after MPI_Finalize has released its own.
void finalize_at_exit() {
  loaded->finalize(nullptr, 0);
}

template <typename F>
bool bind(void *lib, const char *name, F &f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

// Frees a value PMIx_Get returned (PMIX_VALUE_RELEASE, which calls into libpmix).
void release(const Libpmix &lib, pmix_value_t *v) {
  if (v == nullptr) return;
  lib.value_destruct(v);
  std::free(v);
}

pmix_rank_t lowest_local_rank(const Libpmix &lib) {
  pmix_proc_t job = lib.me;
  job.rank = PMIX_RANK_WILDCARD;
  pmix_value_t *v = nullptr;
  pmix_rank_t lowest = PMIX_RANK_UNDEF;
  if (lib.get(&job, PMIX_LOCAL_PEERS, nullptr, 0, &v) == PMIX_SUCCESS && v->type == PMIX_STRING &&
      v->data.string != nullptr) {
    std::istringstream in(v->data.string);
    for (std::string word; std::getline(in, word, ',');) {
      char *end = nullptr;
      const unsigned long r = std::strtoul(word.c_str(), &end, 10);
      if (end != word.c_str() && *end == '\0' && r < lowest) lowest = static_cast<pmix_rank_t>(r);
    }
  }
  release(lib, v);
  return lowest;
}

// Loaded and initialised on first use, only where a PMIx server set up this process.
const Libpmix *libpmix() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char *ns = std::getenv("PMIX_NAMESPACE");
    if (ns == nullptr || *ns == '\0') return;
    void *h = dlopen(NAA_LIBPMIX, RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      const char *why = dlerror();  // read once: reading clears it, also below the log level
      NAA_LOG_DEBUG("PMIx: cannot load %s (%s); each process asks for itself", NAA_LIBPMIX, why);
      return;
    }
    auto *l = new Libpmix;
    if (!bind(h, "PMIx_Init", l->init) || !bind(h, "PMIx_Finalize", l->finalize) ||
        !bind(h, "PMIx_Get", l->get) || !bind(h, "PMIx_Put", l->put) ||
        !bind(h, "PMIx_Commit", l->commit) || !bind(h, "PMIx_Value_destruct", l->value_destruct) ||
        l->init(&l->me, nullptr, 0) != PMIX_SUCCESS) {
      NAA_LOG_DEBUG("PMIx: %s lacks a function or PMIx_Init failed; each process asks for itself",
                    NAA_LIBPMIX);
      delete l;
      return;
    }
    loaded = l;
    std::atexit(finalize_at_exit);
    l->leader = lowest_local_rank(*l);
    l->ok = l->leader != PMIX_RANK_UNDEF;
  });
  return loaded != nullptr && loaded->ok ? loaded : nullptr;
}

}  // namespace

std::string node_shared(const std::string &key, const std::function<std::string()> &compute,
                        int wait_seconds) {
  const Libpmix *lib = libpmix();
  if (lib == nullptr) return compute();
  const std::string pmix_key = "naa." + key;
  if (lib->me.rank == lib->leader) {
    // "=" + value, or "!" when compute() failed: the others then stop waiting and find out why.
    std::string shared = "!";
    struct Publish {
      const Libpmix *lib;
      const std::string &key, &value;
      ~Publish() {
        pmix_value_t v{};
        v.type = PMIX_STRING;
        v.data.string = const_cast<char *>(value.c_str());
        if (lib->put(PMIX_LOCAL, key.c_str(), &v) != PMIX_SUCCESS || lib->commit() != PMIX_SUCCESS)
          NAA_LOG_DEBUG("PMIx: cannot publish %s; the node's other ranks ask for themselves",
                        key.c_str());
      }
    } publish{lib, pmix_key, shared};
    const std::string value = compute();
    shared = "=" + value;
    return value;
  }
  pmix_proc_t leader = lib->me;
  leader.rank = lib->leader;
  // The server waits for a key its local peer has not committed yet, but a peer that committed
  // other data (MPI_Init's) answers "not found" at once: ask again, from the server, until the
  // deadline.
  pmix_info_t info[2] = {};
  std::strncpy(info[0].key, PMIX_TIMEOUT, PMIX_MAX_KEYLEN);
  info[0].value.type = PMIX_INT;
  info[0].value.data.integer = 1;
  std::strncpy(info[1].key, PMIX_GET_REFRESH_CACHE, PMIX_MAX_KEYLEN);
  info[1].value.type = PMIX_BOOL;
  info[1].value.data.flag = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_seconds);
  pmix_status_t rc;
  do {
    pmix_value_t *v = nullptr;
    rc = lib->get(&leader, pmix_key.c_str(), info, 2, &v);
    const bool usable =
        rc == PMIX_SUCCESS && v != nullptr && v->type == PMIX_STRING && v->data.string != nullptr;
    const std::string got = usable ? v->data.string : "";
    release(*lib, v);
    if (usable && got[0] == '=') return got.substr(1);
    if (usable) break;  // "!": the first rank failed
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  NAA_LOG_DEBUG("PMIx: no %s from rank %u of this node (status %d); asking for itself",
                pmix_key.c_str(), static_cast<unsigned>(lib->leader), static_cast<int>(rc));
  return compute();
}
#else
std::string node_shared(const std::string &, const std::function<std::string()> &compute, int) {
  return compute();
}
#endif

}  // namespace naa::rm

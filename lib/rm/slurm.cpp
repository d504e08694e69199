// SPDX-License-Identifier: BSD-3-Clause
#include "rm/slurm.hpp"
#include "config.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "diag/error.hpp"
#include "diag/log.hpp"
#include "config/number.h"
#include "rm/naa_conf.h"
#include "rm/pmix_share.hpp"

#ifdef NAA_HAVE_SLURM
#include <slurm/slurm.h>
#endif

#ifndef NAA_SYSCONFDIR
#define NAA_SYSCONFDIR "/usr/local/etc"
#endif

namespace naa::rm {
namespace {

std::string env_or(const char *name, const std::string &fallback) {
  const char *v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string dirname_of(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// "Key=value" lines of slurm.conf; keys are case-insensitive there.
std::string slurm_conf_value(const std::string &conf, const std::string &key) {
  std::ifstream in(conf);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string k = line.substr(0, eq);
    k.erase(0, k.find_first_not_of(" \t"));
    k.erase(k.find_last_not_of(" \t") + 1);
    if (strcasecmp(k.c_str(), key.c_str()) != 0) continue;
    std::string v = line.substr(eq + 1);
    v.erase(0, v.find_first_not_of(" \t"));
    v.erase(v.find_last_not_of(" \t\r") + 1);
    return v;
  }
  return {};
}

// The conf= argument of the naa_spank line in plugstack.conf, so a site names its naa.conf once.
std::string conf_from_plugstack() {
  const std::string slurm_conf = env_or("SLURM_CONF", "/etc/slurm/slurm.conf");
  std::string plugstack = slurm_conf_value(slurm_conf, "PlugStackConfig");
  if (plugstack.empty()) plugstack = dirname_of(slurm_conf) + "/plugstack.conf";
  std::ifstream in(plugstack);
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    if (line.find("naa_spank") == std::string::npos) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;)
      if (w.rfind("conf=", 0) == 0) return w.substr(5);
  }
  return {};
}

#ifdef NAA_HAVE_SLURM
// libslurm, opened on first use and kept: its handle must outlive every call into it.
struct Libslurm {
  void (*init)(const char *) = nullptr;
  int (*load_job)(job_info_msg_t **, uint32_t, uint16_t) = nullptr;
  void (*free_job_info_msg)(job_info_msg_t *) = nullptr;
  int (*get_errno)() = nullptr;
  char *(*strerror)(int) = nullptr;
  std::string error;
};

template <typename F>
void bind(void *lib, const char *name, F &f, std::string &error) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr && error.empty()) error = std::string("libslurm lacks ") + name;
}

const Libslurm &libslurm() {
  static const Libslurm lib = [] {
    Libslurm l;
    // The soname configure found first (the job_info_t layout we compiled against), then the
    // development symlink.
    void *h = nullptr;
    std::string tried;
    for (const char *name : {NAA_LIBSLURM_SONAME, "libslurm.so"}) {
      // RTLD_GLOBAL: libslurm loads its own plugins (auth_munge, hash_k12), which resolve
      // libslurm's symbols (slurm_conf, ...) through the global scope.
      h = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
      if (h != nullptr) break;
      tried += std::string(tried.empty() ? "" : "; ") + dlerror();
    }
    if (h == nullptr) {
      l.error = "cannot load libslurm (" + tried + ")";
      return l;
    }
    l.init = reinterpret_cast<void (*)(const char *)>(dlsym(h, "slurm_init"));  // Slurm >= 22.05
    bind(h, "slurm_load_job", l.load_job, l.error);
    bind(h, "slurm_free_job_info_msg", l.free_job_info_msg, l.error);
    bind(h, "slurm_get_errno", l.get_errno, l.error);
    bind(h, "slurm_strerror", l.strerror, l.error);
    if (l.error.empty() && l.init != nullptr) l.init(nullptr);
    return l;
  }();
  return lib;
}

// The job's licences as Slurm prints them ("naa:1,scratch:2"), from slurmctld (one
// REQUEST_JOB_INFO_SINGLE). Blocks at most Slurm's MessageTimeout (slurm.conf, 10 s by default) per attempt.
std::string load_licenses(uint32_t job_id) {
  const Libslurm &lib = libslurm();
  if (!lib.error.empty())
    throw Error(NAA_ERR_NO_NAA, "Slurm job " + std::to_string(job_id) + ": " + lib.error);
  job_info_msg_t *msg = nullptr;
  if (lib.load_job(&msg, job_id, 0) != 0 || msg == nullptr || msg->record_count < 1) {
    const int e = lib.get_errno();
    if (msg != nullptr) lib.free_job_info_msg(msg);
    throw Error(NAA_ERR_NO_NAA, "cannot load Slurm job " + std::to_string(job_id) + ": " +
                                    lib.strerror(e));
  }
  const slurm_job_info_t &job = msg->job_array[0];
  std::string licenses = job.licenses != nullptr ? job.licenses : "";
  lib.free_job_info_msg(msg);
  return licenses;
}
#else
std::string load_licenses(uint32_t job_id) {
  throw Error(NAA_ERR_NO_NAA, "Slurm job " + std::to_string(job_id) +
                                  ": libnaa was built without Slurm headers (slurm/spank.h, "
                                  "slurm/slurm.h), so it cannot ask Slurm");
}
#endif

struct JobGrant {
  std::string naa_codes;  // --naa of the naa_spank plugin, e.g. "10,11"; empty if not given
  std::string licenses;   // e.g. "naa:1,scratch:2"; only looked up without --naa
};

// What the job asked for, without asking slurmctld whenever the environment says it: --naa
// (the plugin records it in the job's control environment, which Slurm hands to every process
// as SLURM_SPANK_NAA_CODES), else the licences (SLURM_JOB_LICENSES, which newer Slurm sets),
// else the job record, loaded once per process and kept (a job's licences do not change, and
// later handles and codes of the process need no query of their own), and under PMIx once per
// node (rm/pmix_share.hpp).
JobGrant job_grant(const std::string &job_text) {
  JobGrant g;
  g.naa_codes = env_or("SLURM_SPANK_NAA_CODES", "");
  if (!g.naa_codes.empty()) return g;
  g.licenses = env_or("SLURM_JOB_LICENSES", "");
  if (!g.licenses.empty()) return g;
  uint64_t job_id = 0;
  if (naa_parse_number(job_text.data(), job_text.size(), 1, UINT32_MAX, &job_id) != 0)
    throw Error(NAA_ERR_CONFIG, "SLURM_JOB_ID \"" + job_text + "\" is not a job id");
  static std::mutex mu;  // held across the query: concurrent first handles make one query
  static std::map<uint64_t, std::string> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded.find(job_id);
  if (it == loaded.end()) {
    // One query per node where PMIx runs the job: its first rank asks, the others wait for its
    // answer up to Slurm's default MessageTimeout, then ask for themselves.
    const std::string licenses = node_shared(
        "licenses." + job_text, [&] { return load_licenses(static_cast<uint32_t>(job_id)); }, 10);
    it = loaded.emplace(job_id, licenses).first;
  }
  g.licenses = it->second;
  return g;
}

bool lists(const std::string &comma_list, const std::string &item, char strip_after) {
  std::istringstream in(comma_list);
  for (std::string word; std::getline(in, word, ',');) {
    if (strip_after != '\0') word = word.substr(0, word.find(strip_after));
    if (word == item) return true;
  }
  return false;
}

}  // namespace

bool in_slurm_job() {
  const char *id = std::getenv("SLURM_JOB_ID");
  return id != nullptr && *id != '\0';
}

std::string naa_conf_path(const std::string &conf_param) {
  if (!conf_param.empty()) return conf_param;
  const std::string from_plugstack = conf_from_plugstack();
  return from_plugstack.empty() ? NAA_SYSCONFDIR "/naa.conf" : from_plugstack;
}

std::vector<Candidate> slurm_candidates(uint8_t function_code, const std::string &conf_param) {
  const std::string code = std::to_string(function_code);
  const std::string job_text = std::getenv("SLURM_JOB_ID");
  const std::string what = "Slurm job " + job_text;
  const JobGrant job = job_grant(job_text);
  std::string grant;
  if (!job.naa_codes.empty()) {
    if (!lists(job.naa_codes, code, '\0'))
      throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + code + ": NAA_SPEC is not set and " +
                                      what + " asked for --naa=" + job.naa_codes + " only");
    grant = "--naa=" + job.naa_codes;
  } else if (lists(job.licenses, "naa", ':')) {
    grant = "licence " + job.licenses;
  } else {
    throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + code + ": NAA_SPEC is not set and " +
                                    what + " has neither --naa nor an naa licence (licences: " +
                                    (job.licenses.empty() ? "none" : job.licenses) + ")");
  }

  const std::string path = naa_conf_path(conf_param);
  naa_conf conf;
  char error[1024];
  if (naa_conf_load(path.c_str(), &conf, error, sizeof error) != 0)
    throw Error(NAA_ERR_CONFIG, what + ": " + error);
  std::vector<Candidate> found;
  for (size_t i = 0; i < conf.n_naas; ++i) {
    const naa_conf_naa &naa = conf.naas[i];
    const naa_conf_kernel *k = naa_conf_kernel_of(&naa, function_code);
    if (k == nullptr) continue;
    const std::string where = path + " line " + std::to_string(naa.line);
    found.push_back(Candidate{naa.host, naa.port, k->n_inputs, where, where + ", " + what + " " + grant});
  }
  naa_conf_free(&conf);
  if (found.empty())
    throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + code + ": NAA_SPEC is not set and " +
                                    path + " (for " + what + ") lists none");
  return found;
}

std::vector<Candidate> slurm_alternatives(uint8_t function_code, const std::string &conf_param) {
  const std::string codes = env_or("SLURM_SPANK_NAA_CODES", "");
  if (!in_slurm_job() || !lists(codes, std::to_string(function_code), '\0')) return {};
  try {
    return slurm_candidates(function_code, conf_param);
  } catch (const Error &e) {
    NAA_LOG_WARN("function code %u: no naa.conf NAAs to fail over to: %s",
                 static_cast<unsigned>(function_code), e.what());
    return {};
  }
}

}  // namespace naa::rm

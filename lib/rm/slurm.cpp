// SPDX-License-Identifier: BSD-3-Clause
#include "rm/slurm.hpp"
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "error.hpp"
#include "diag/log.hpp"
#include "config/number.h"
#include "config/small_file.h"
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

// The text of a Slurm configuration file; "" if there is none. Throws Error(NAA_ERR_CONFIG)
// for one that is not a regular file of at most NAA_SMALL_FILE_LIMIT bytes (/dev/zero, a FIFO).
std::string slurm_file(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return {};
  char why[512];
  size_t length = 0;
  char *text = naa_read_small_file(path.c_str(), NAA_SMALL_FILE_LIMIT, &length, why, sizeof why);
  if (text == nullptr) throw Error(NAA_ERR_CONFIG, why);
  std::string out(text, length);
  std::free(text);
  return out;
}

// "Key=value" lines of slurm.conf; keys are case-insensitive there.
std::string slurm_conf_value(const std::string &conf, const std::string &key) {
  std::istringstream in(slurm_file(conf));
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
  std::istringstream in(slurm_file(plugstack));
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
// REQUEST_JOB_INFO_SINGLE). Runs in the child of ask_in_child only: libslurm's fatal() exits the
// process it runs in (an unusable slurm.conf), and it retries a missing one for 60 s.
std::string query_licenses(uint32_t job_id) {
  const Libslurm &lib = libslurm();
  if (!lib.error.empty())
    throw Error(NAA_ERR_NO_NAA, "Slurm job " + std::to_string(job_id) + ": " + lib.error);
  job_info_msg_t *msg = nullptr;
  if (lib.load_job(&msg, job_id, 0) != 0 || msg == nullptr || msg->record_count < 1) {
    const int e = lib.get_errno();
    if (msg != nullptr) lib.free_job_info_msg(msg);
    throw Error(NAA_ERR_NO_NAA,
                "cannot load Slurm job " + std::to_string(job_id) + ": " + lib.strerror(e));
  }
  const slurm_job_info_t &job = msg->job_array[0];
  std::string licenses = job.licenses != nullptr ? job.licenses : "";
  lib.free_job_info_msg(msg);
  return licenses;
}

// ask() run in a child process, its answer (or its Error's text) sent back through a pipe, so
// that nothing it does can end the caller; the child is killed once `limit` has passed (0: no
// limit). Throws Error: NAA_ERR_TIMEOUT past the limit, NAA_ERR_NO_NAA when the child failed or
// died, naming `what`.
std::string ask_in_child(const std::string &what, std::chrono::milliseconds limit,
                         const std::function<std::string()> &ask) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw Error(NAA_ERR_NO_RESOURCES, what + ": pipe: " + std::strerror(errno));
  const pid_t child = ::fork();
  if (child < 0) {
    const int e = errno;
    ::close(fds[0]), ::close(fds[1]);
    throw Error(NAA_ERR_NO_RESOURCES, what + ": fork: " + std::strerror(e));
  }
  if (child == 0) {
    ::close(fds[0]);
    std::string reply;
    try {
      reply = "+" + ask();
    } catch (const Error &e) {
      reply = std::string("-") + e.what();
    } catch (...) {
      reply = "-internal error";
    }
    for (size_t at = 0; at < reply.size();) {
      const ssize_t n = ::write(fds[1], reply.data() + at, reply.size() - at);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      at += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + limit;
  std::string reply;
  bool timed_out = false;
  for (;;) {
    int timeout = -1;
    if (limit.count() > 0) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      timeout = static_cast<int>(std::min<int64_t>(left, INT_MAX));
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its end: it exited, or died
    reply.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(child, SIGKILL);
  int status = 0;
  pid_t waited;
  while ((waited = ::waitpid(child, &status, 0)) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw Error(NAA_ERR_TIMEOUT, what + ": libslurm did not answer within NAA_CONNECT_TIMEOUT (" +
                                     std::to_string(limit.count()) +
                                     " ms); the process asking "
                                     "it was stopped (is slurm.conf there? SLURM_CONF)");
  if (reply.empty()) {
    std::string how = "ended";
    if (waited == child && WIFEXITED(status))
      how = "exited with status " + std::to_string(WEXITSTATUS(status));
    else if (waited == child && WIFSIGNALED(status))
      how = "was killed by signal " + std::to_string(WTERMSIG(status));
    throw Error(NAA_ERR_NO_NAA, what + ": libslurm " + how +
                                    " in the process asking it (its "
                                    "message is on standard error; is slurm.conf usable? "
                                    "SLURM_CONF); set NAA_SPEC, or give the job --naa");
  }
  if (reply[0] == '-') throw Error(NAA_ERR_NO_NAA, reply.substr(1));
  return reply.substr(1);
}

// The job's licences, from libslurm in a child process (ask_in_child), within `limit`.
std::string load_licenses(uint32_t job_id, std::chrono::milliseconds limit) {
  return ask_in_child("Slurm job " + std::to_string(job_id), limit,
                      [job_id] { return query_licenses(job_id); });
}
#else
std::string load_licenses(uint32_t job_id, std::chrono::milliseconds) {
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
JobGrant job_grant(const std::string &job_text, std::chrono::milliseconds limit) {
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
        "licenses." + job_text, [&] { return load_licenses(static_cast<uint32_t>(job_id), limit); },
        10);
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

std::vector<Candidate> slurm_candidates(uint8_t function_code, const std::string &conf_param,
                                        std::chrono::milliseconds limit) {
  const std::string code = std::to_string(function_code);
  const std::string job_text = std::getenv("SLURM_JOB_ID");
  const std::string what = "Slurm job " + job_text;
  const JobGrant job = job_grant(job_text, limit);
  std::string grant;
  if (!job.naa_codes.empty()) {
    if (!lists(job.naa_codes, code, '\0'))
      throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + code +
                                      ": NAA_SPEC is not set and " + what +
                                      " asked for --naa=" + job.naa_codes + " only");
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
    found.push_back(
        Candidate{naa.host, naa.port, k->n_inputs, where, where + ", " + what + " " + grant});
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
    return slurm_candidates(function_code, conf_param, std::chrono::milliseconds(0));  // no query
  } catch (const Error &e) {
    NAA_LOG_WARN("function code %u: no naa.conf NAAs to fail over to: %s",
                 static_cast<unsigned>(function_code), e.what());
    return {};
  }
}

}  // namespace naa::rm

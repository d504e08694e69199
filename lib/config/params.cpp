// SPDX-License-Identifier: BSD-3-Clause
#include "config/params.hpp"

#include <cstdlib>
#include <cstring>

#include "config/auth.hpp"
#include "error.hpp"

namespace naa::config::params {
namespace {

void check_timeout(const std::string &t, const std::string &s) {
  parse_timeout(t, s);
}
void check_switch(const std::string &t, const std::string &s) {
  parse_switch(t, s);
}
void check_reconnect(const std::string &t, const std::string &s) {
  parse_reconnect(t, s);
}
void check_progress(const std::string &t, const std::string &s) {
  parse_progress_mode(t, s);
}
void check_microseconds(const std::string &t, const std::string &s) {
  parse_microseconds(t, s);
}
void check_cpu(const std::string &t, const std::string &s) {
  parse_cpu(t, s);
}
void check_key(const std::string &t, const std::string &s) {
  auth::checked_key(t, s);
}
void check_trace_buffer(const std::string &t, const std::string &s) {
  parse_trace_buffer(t, s);
}
void check_energy(const std::string &t, const std::string &s) {
  if (t != "0" && t != "1" && t != "powercap" && t != "nvml")
    throw Error(NAA_ERR_CONFIG, s + " '" + t + "' is not 0, 1, powercap or nvml");
}
}  // namespace

const Table &own() {
  static const Table params = {
      {"NAA_TIMEOUT", "seconds", "60",
       "deadline of each naa_wait (a timeout leaves the invocation in flight)", check_timeout},
      {"NAA_CONNECT_TIMEOUT", "seconds", "30",
       "deadline of connect + MRSP in naa_create and in each reconnect", check_timeout},
      {"NAA_RECONNECT", "0..100", "3",
       "0: a handle whose connection is gone fails; 1..100: it connects again, retrying until "
       "NAA_CONNECT_TIMEOUT",
       check_reconnect},
      {"NAA_PROGRESS", "adaptive|spin|block|spin-then-block|thread|provider", "adaptive",
       "who moves the data and how naa_wait waits; adaptive: spin-then-block, but sleeping at "
       "once while the node has more runnable threads than CPUs and the waiter waits for one, "
       "or more ranks than CPUs, or the handle's recent polls did not pay",
       check_progress},
      {"NAA_SPIN_US", "microseconds", "100",
       "the least spin-then-block and adaptive poll before they sleep (longer while a reply is "
       "due); the least the progress thread of thread polls with work in flight",
       check_microseconds},
      {"NAA_PROGRESS_CPU", "CPU number", "",
       "the CPU the progress thread (NAA_PROGRESS=thread) is pinned to", check_cpu},
      {"NAA_PACING_US", "microseconds", "100",
       "guard before each invocation's final write to an NAA that is not a libnaa server "
       "(0: off)",
       check_microseconds},
      {"NAA_PACING_ADAPTIVE", "0|1", "1",
       "1: the guard also follows the NAA's MRSP round trip (or its recent invocations') and "
       "grows after requests it never answered",
       check_switch},
      {"NAA_LOCAL_IP", "address", "", "the source address to connect from", nullptr},
      {"NAA_AUTH_KEY", "text of at most 48 bytes", "",
       "key sent with each connection request (naa-server -A checks it)", check_key, true},
      {"NAA_AUTH_KEY_FILE", "path", "",
       "file whose first line is the key, when NAA_AUTH_KEY is not set", nullptr},
      {"NAA_LOG_LEVEL", "error|warn|info|debug|0..3", "warn",
       "which diagnostics go to stderr (read once per process)", nullptr},
      {"NAA_STATS", "0|1", "0",
       "1: count calls, bytes and times, and print them at exit (naa_stats_get(3))", nullptr},
      {"NAA_TRACE", "directory", "",
       "write a timeline of the calls and invocations to "
       "DIR/naa-trace.[jJOB.][sSTEP.][rRANK.]pPID.json "
       "as they happen (created with DIR, mode 0600, at the first naa_create)",
       nullptr},
      {"NAA_TRACE_BUFFER", "1..1048576", "4096",
       "NAA_TRACE events kept in memory before they are written to the file as one block "
       "(read when tracing starts)",
       check_trace_buffer},
      {"NAA_ENERGY", "0|1|powercap|nvml", "0",
       "with NAA_STATS or NAA_TRACE: read the node's energy counters over each invocation "
       "(naa_stats_energy_get(3)); 1: every source found, else only RAPL or NVIDIA GPUs",
       check_energy},
      {"NAA_POWERCAP_ROOT", "directory", "/sys/class/powercap",
       "the powercap tree NAA_ENERGY reads RAPL counters from (read once per process)", nullptr},
  };
  return params;
}

const char *source_name(Source source) {
  switch (source) {
    case Source::Default:
      return "default";
    case Source::Environment:
      return "environment";
    case Source::Attr:
      return "naa_attr_t.params";
    case Source::Field:
      return "naa_attr_t field";
  }
  return "?";
}

Values::Values() {
  static const Table none;
  table_ = &none;
}

Values Values::read(const Table &table, const char *const *overrides) {
  Values v(table);
  for (const Param &p : table) {
    const char *env = std::getenv(p.name);
    if (env != nullptr && *env != '\0')
      v.entries_.push_back({env, Source::Environment});
    else
      v.entries_.push_back({p.fallback, Source::Default});
  }
  for (; overrides != nullptr && *overrides != nullptr; ++overrides) {
    const char *eq = std::strchr(*overrides, '=');
    size_t i = 0;
    const std::string name = eq != nullptr ? std::string(*overrides, eq) : "";
    while (i < table.size() && name != table[i].name) ++i;
    if (i == table.size())
      throw Error(NAA_ERR_INVALID_ARGUMENT, std::string("naa_attr_t.params: '") + *overrides +
                                                "' is not NAME=value of a runtime parameter "
                                                "(naa-info --params lists them)");
    if (eq[1] == '\0')
      v.entries_[i] = {table[i].fallback, Source::Default};
    else
      v.entries_[i] = {eq + 1, Source::Attr};
  }
  return v;
}

std::string Values::source_text(size_t i) const {
  const char *name = table()[i].name;
  switch (entries_[i].source) {
    case Source::Attr:
      return std::string("naa_attr_t.params ") + name;
    case Source::Field:
      return std::string("naa_attr_t.") + entries_[i].field;
    default:
      return name;
  }
}

void Values::set_from_field(const char *name, const std::string &text, const char *field) {
  entries_[index(name)] = {text, Source::Field, field};
}

std::string Values::problem(size_t i) const {
  const Param &p = table()[i];
  if (p.check == nullptr || entries_[i].text.empty()) return "";
  try {
    p.check(entries_[i].text, source_text(i));
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

void Values::check() const {
  for (size_t i = 0; i < entries_.size(); ++i) {
    std::string why = problem(i);
    if (!why.empty())
      throw Error(
          entries_[i].source == Source::Environment ? NAA_ERR_CONFIG : NAA_ERR_INVALID_ARGUMENT,
          why);
  }
}

size_t Values::index(const char *name) const {
  for (size_t i = 0; i < table().size(); ++i)
    if (std::strcmp(table()[i].name, name) == 0) return i;
  throw Error(NAA_ERR_INTERNAL, std::string("no runtime parameter ") + name);
}

const std::string &Values::text(const char *name) const {
  return entries_[index(name)].text;
}
Source Values::source(const char *name) const {
  return entries_[index(name)].source;
}

std::chrono::milliseconds Values::timeout() const {
  return parsed("NAA_TIMEOUT", parse_timeout);
}

std::chrono::milliseconds Values::connect_timeout() const {
  return parsed("NAA_CONNECT_TIMEOUT", parse_timeout);
}

unsigned Values::reconnect() const {
  return parsed("NAA_RECONNECT", parse_reconnect);
}

Progress Values::progress() const {
  Progress p;
  p.mode = parsed("NAA_PROGRESS", parse_progress_mode);
  p.spin = parsed("NAA_SPIN_US", parse_microseconds);
  p.cpu = parsed("NAA_PROGRESS_CPU", parse_cpu);
  return p;
}

std::chrono::microseconds Values::pacing() const {
  return parsed("NAA_PACING_US", parse_microseconds);
}

bool Values::pacing_adaptive() const {
  return parsed("NAA_PACING_ADAPTIVE", parse_switch);
}

std::string Values::auth_key() const {
  const size_t i = index("NAA_AUTH_KEY");
  if (!entries_[i].text.empty()) return auth::checked_key(entries_[i].text, source_text(i));
  const std::string &path = text("NAA_AUTH_KEY_FILE");
  return path.empty() ? "" : auth::key_from_file(path);
}

}  // namespace naa::config::params

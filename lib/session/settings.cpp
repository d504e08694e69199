// SPDX-License-Identifier: BSD-3-Clause
#include "session/settings.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <string>

#include "config/auth.hpp"
#include "config/count.hpp"
#include "error.hpp"
#include "diag/log.hpp"
#include "transport/params.hpp"

namespace naa::session {
namespace {

// The attr a program was compiled with may be older (shorter) than ours: a field it does not
// hold is unset. One compiled against a newer header is longer: its extra fields are ignored.
#define HOLDS(attr, field) \
  ((attr) != nullptr && (attr)->size >= offsetof(naa_attr_t, field) + sizeof((attr)->field))

// An attr's header as NAA_ATTR_INIT sets it: nothing else of an attr is read before.
bool valid_header(const naa_attr_t *attr) {
  return attr->size >= offsetof(naa_attr_t, naa) && attr->version != 0;
}

Error bad_field(const char *field, const std::string &why) {
  return Error(NAA_ERR_INVALID_ARGUMENT, std::string("naa_attr_t.") + field + " " + why);
}

// "host:port" or "[v6addr]:port".
void parse_naa(const std::string &text, std::string *host, uint16_t *port) {
  if (std::count(text.begin(), text.end(), ':') >= 2 && text.front() != '[') {
    // host:port:fncode:n_inputs, as NAA_SPEC writes an entry, or an unbracketed IPv6 address.
    const size_t port = text.find(':');
    uint64_t ignored = 0;
    const bool spec =
        port > 0 && std::count(text.begin(), text.end(), ':') == 3 &&
        config::parse_count(text.substr(port + 1, text.find(':', port + 1) - port - 1).c_str(),
                            65535, &ignored);
    throw bad_field("naa",
                    "'" + text + "' is not host:port" +
                        (spec ? " (it reads as an NAA_SPEC entry, host:port:fncode:n_inputs: "
                                "give only its host:port)"
                              : " (an IPv6 address goes in brackets: [v6addr]:port)"));
  }
  size_t colon = text.rfind(':');
  uint64_t p = 0;
  if (colon == std::string::npos || colon == 0 ||
      !config::parse_count(text.c_str() + colon + 1, 65535, &p) || p == 0)
    throw bad_field("naa", "'" + text + "' is not host:port (port 1..65535)");
  *host = text.substr(0, colon);
  if (host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  if (host->empty()) throw bad_field("naa", "'" + text + "' has an empty host");
  *port = static_cast<uint16_t>(p);
}

// A deadline field in milliseconds: whether it is set; if so, its parameter's value (seconds).
bool milliseconds_field(int64_t ms, const char *field, const char *param,
                        config::params::Values *values) {
  if (ms == NAA_ATTR_UNSET) return false;
  if (ms <= 0 || ms > config::kMaxTimeoutSeconds * 1000)
    throw bad_field(field, std::to_string(ms) + " is not in 1.." +
                               std::to_string(config::kMaxTimeoutSeconds * 1000));
  std::string frac = std::to_string(ms % 1000);
  values->set_from_field(
      param, std::to_string(ms / 1000) + "." + std::string(3 - frac.size(), '0') + frac, field);
  return true;
}

// naa_create resolves its settings at every call: every parameter read, checked and parsed
// (4-7 us, a few percent of a warm create over ofi+tcp; 9-13 us of a warm create over shm
// with an attr, as naa-bench's). A program that creates handle after handle from an unchanged
// environment and attr values gets the last settings again; the environment's parameters and
// the attr's values (not its address: a program may change a field or a params string in
// place) are compared at each call (setenv between two creates takes effect), and none are
// kept where they come from a key file (it may be rewritten between two creates).
class LastSettings {
 public:
  // Every NAA_ variable of the environment, as one text: one pass over it, cheaper than a getenv
  // per variable. Unknown NAA_ variables are in it too: their change only costs a resolution.
  static std::string environment() {
    std::string env;
    for (char **e = environ; e != nullptr && *e != nullptr; ++e)
      if ((*e)[0] == 'N' && std::strncmp(*e, "NAA_", 4) == 0) env.append(*e).push_back('\0');
    return env;
  }

  // The values of the fields `attr` holds (by its size), as one text: the same text, the same
  // settings. A string is marked and ends with its NUL, a null one is a mark of its own, so
  // that no two attrs run together into one text.
  static std::string attr_values(const naa_attr_t *attr) {
    if (attr == nullptr) return {};
    std::string text = "\x01";
    // Numbers as their bytes: a key compared for equality, never read back.
    auto bytes = [&text](const auto &v) {
      text.append(reinterpret_cast<const char *>(&v), sizeof v);
    };
    bytes(attr->size);
    bytes(attr->version);
    auto string = [&text](const char *s) {
      if (s == nullptr)
        text += '\x02';
      else
        text.append(1, '\x04').append(s).push_back('\0');
    };
    auto number = [&bytes](int64_t v) { bytes(v); };
    if (HOLDS(attr, naa)) string(attr->naa);
    if (HOLDS(attr, transport)) string(attr->transport);
    if (HOLDS(attr, timeout_ms)) number(attr->timeout_ms);
    if (HOLDS(attr, progress)) string(attr->progress);
    if (HOLDS(attr, auth_key)) string(attr->auth_key);
    if (HOLDS(attr, local_ip)) string(attr->local_ip);
    if (HOLDS(attr, device)) string(attr->device);
    if (HOLDS(attr, pacing_us)) number(attr->pacing_us);
    if (HOLDS(attr, params)) {
      for (const char *const *p = attr->params; p != nullptr && *p != nullptr; ++p) string(*p);
      text += '\x03';
    }
    if (HOLDS(attr, connect_timeout_ms)) number(attr->connect_timeout_ms);
    if (HOLDS(attr, reconnect)) number(attr->reconnect);
    return text;
  }

  // The settings kept for `sources` (environment() and attr_values()), or null.
  std::shared_ptr<const Settings> find(const std::string &sources) {
    std::lock_guard<std::mutex> lock(mu_);
    if (settings_ == nullptr || sources != sources_) return nullptr;
    return settings_;
  }

  // `s`, resolved from what `sources` holds alone.
  void keep(const std::string &sources, std::shared_ptr<const Settings> s) {
    if (!s->params.text("NAA_AUTH_KEY_FILE").empty() && s->params.text("NAA_AUTH_KEY").empty())
      return;
    std::lock_guard<std::mutex> lock(mu_);
    sources_ = sources;
    settings_ = std::move(s);
  }

 private:
  std::mutex mu_;
  std::string sources_;
  std::shared_ptr<const Settings> settings_;  // null: none kept
};

LastSettings &last_settings() {
  static auto *last = new LastSettings;  // never destroyed: a create may run during exit
  return *last;
}

Settings resolve_anew(const naa_attr_t *attr);

std::atomic<unsigned long> resolutions{0};

}  // namespace

Settings Settings::resolve(const naa_attr_t *attr) {
  return *resolve_shared(attr);
}

std::shared_ptr<const Settings> Settings::resolve_shared(const naa_attr_t *attr) {
  if (attr != nullptr && !valid_header(attr)) resolve_anew(attr);  // which refuses it
  const std::string sources = LastSettings::environment() + LastSettings::attr_values(attr);
  if (auto kept = last_settings().find(sources)) return kept;
  ++resolutions;
  auto s = std::make_shared<Settings>(resolve_anew(attr));
  s->transport_options_ = transport::options_from(s->params);
  last_settings().keep(sources, s);
  return s;
}

unsigned long Settings::resolved_anew() {
  return resolutions.load();
}

namespace {

Settings resolve_anew(const naa_attr_t *attr) {
  if (attr != nullptr) {
    if (!valid_header(attr))
      throw Error(NAA_ERR_INVALID_ARGUMENT, "naa_attr_t has no valid header (size " +
                                                std::to_string(attr->size) + ", version " +
                                                std::to_string(attr->version) +
                                                "): initialise it with NAA_ATTR_INIT");
    if (attr->size > sizeof(naa_attr_t))
      NAA_LOG_DEBUG(
          "naa_attr_t of %zu bytes (version %u): fields beyond this library's %zu "
          "bytes are ignored",
          attr->size, attr->version, sizeof(naa_attr_t));
  }
  Settings s;
  s.params = transport::read_parameters(HOLDS(attr, params) ? attr->params : nullptr);
  // Each field set stands in for its parameter: the environment's and attr->params' value
  // behind it is neither used nor checked.
  if (HOLDS(attr, naa) && attr->naa != nullptr) parse_naa(attr->naa, &s.naa_host, &s.naa_port);
  if (HOLDS(attr, transport) && attr->transport != nullptr)
    s.params.set_from_field("NAA_TRANSPORT", attr->transport, "transport");
  const bool timeout_set =
      HOLDS(attr, timeout_ms) &&
      milliseconds_field(attr->timeout_ms, "timeout_ms", "NAA_TIMEOUT", &s.params);
  const bool connect_timeout_set =
      HOLDS(attr, connect_timeout_ms) &&
      milliseconds_field(attr->connect_timeout_ms, "connect_timeout_ms", "NAA_CONNECT_TIMEOUT",
                         &s.params);
  if (HOLDS(attr, reconnect) && attr->reconnect != NAA_ATTR_UNSET) {
    if (attr->reconnect < 0 || static_cast<uint64_t>(attr->reconnect) > config::kMaxReconnect)
      throw bad_field("reconnect", std::to_string(attr->reconnect) + " is not in 0.." +
                                       std::to_string(config::kMaxReconnect));
    s.params.set_from_field("NAA_RECONNECT", std::to_string(attr->reconnect), "reconnect");
  }
  if (HOLDS(attr, progress) && attr->progress != nullptr) {
    try {
      config::parse_progress_mode(attr->progress, "naa_attr_t.progress");
    } catch (const Error &e) {
      throw Error(NAA_ERR_INVALID_ARGUMENT, e.what());
    }
    s.params.set_from_field("NAA_PROGRESS", attr->progress, "progress");
  }
  if (HOLDS(attr, pacing_us) && attr->pacing_us != NAA_ATTR_UNSET) {
    if (attr->pacing_us < 0 || static_cast<uint64_t>(attr->pacing_us) > config::kMaxMicroseconds)
      throw bad_field("pacing_us", std::to_string(attr->pacing_us) + " is not in 0.." +
                                       std::to_string(config::kMaxMicroseconds));
    s.params.set_from_field("NAA_PACING_US", std::to_string(attr->pacing_us), "pacing_us");
  }
  if (HOLDS(attr, auth_key) && attr->auth_key != nullptr) {
    s.params.set_from_field(
        "NAA_AUTH_KEY",
        config::auth::checked_key(attr->auth_key, "naa_attr_t.auth_key", NAA_ERR_INVALID_ARGUMENT),
        "auth_key");
    s.params.set_from_field("NAA_AUTH_KEY_FILE", "", "auth_key");  // "" sends none: no file either
  }
  if (HOLDS(attr, local_ip) && attr->local_ip != nullptr)
    s.params.set_from_field("NAA_LOCAL_IP", attr->local_ip, "local_ip");
  if (HOLDS(attr, device) && attr->device != nullptr)
    s.params.set_from_field("NAA_RDMA_DEVICE", attr->device, "device");
  s.params.check();

  s.transport = s.params.text("NAA_TRANSPORT");
  // The field's milliseconds exactly, not their decimal text parsed back.
  s.timeout = timeout_set ? std::chrono::milliseconds(attr->timeout_ms) : s.params.timeout();
  s.connect_timeout = connect_timeout_set ? std::chrono::milliseconds(attr->connect_timeout_ms)
                                          : s.params.connect_timeout();
  s.reconnect = s.params.reconnect();
  s.progress = s.params.progress();
  s.pacing = s.params.pacing();
  s.pacing_adaptive = s.params.pacing_adaptive();
  s.auth_key = s.params.auth_key();
  s.local_ip = s.params.text("NAA_LOCAL_IP");
  s.device = s.params.text("NAA_RDMA_DEVICE");
  return s;
}

}  // namespace

std::unique_ptr<rm::Target> Settings::target(uint8_t function_code, size_t n_inputs) const {
  if (naa_host.empty()) return rm::resolve(function_code, n_inputs, params);
  NAA_LOG_INFO("function code %u: NAA %s:%u from naa_attr_t.naa",
               static_cast<unsigned>(function_code), naa_host.c_str(), naa_port);
  return std::make_unique<rm::Target>(naa_host, naa_port, "naa_attr_t.naa");
}

}  // namespace naa::session

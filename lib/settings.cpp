// SPDX-License-Identifier: BSD-3-Clause
#include "settings.hpp"

#include <cstddef>

#include "auth.hpp"
#include "count.hpp"
#include "error.hpp"
#include "log.hpp"
#include "transport/transport.hpp"

namespace naa {
namespace {

// The attr a program was compiled with may be older (shorter) than ours: a field it does not
// hold is unset. One compiled against a newer header is longer: its extra fields are ignored.
#define HOLDS(attr, field) \
  ((attr) != nullptr && (attr)->size >= offsetof(naa_attr_t, field) + sizeof((attr)->field))

Error bad_field(const char *field, const std::string &why) {
  return Error(NAA_ERR_INVALID_ARGUMENT, std::string("naa_attr_t.") + field + " " + why);
}

// "host:port" or "[v6addr]:port".
void parse_naa(const std::string &text, std::string *host, uint16_t *port) {
  size_t colon = text.rfind(':');
  uint64_t p = 0;
  if (colon == std::string::npos || colon == 0 ||
      !parse_count(text.c_str() + colon + 1, 65535, &p) || p == 0)
    throw bad_field("naa", "'" + text + "' is not host:port (port 1..65535)");
  *host = text.substr(0, colon);
  if (host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  if (host->empty()) throw bad_field("naa", "'" + text + "' has an empty host");
  *port = static_cast<uint16_t>(p);
}

}  // namespace

Settings Settings::resolve(const naa_attr_t *attr) {
  if (attr != nullptr) {
    if (attr->size < offsetof(naa_attr_t, naa) || attr->version == 0)
      throw Error(NAA_ERR_INVALID_ARGUMENT, "naa_attr_t has no valid header (size " +
                                                std::to_string(attr->size) + ", version " +
                                                std::to_string(attr->version) +
                                                "): initialise it with NAA_ATTR_INIT");
    if (attr->size > sizeof(naa_attr_t))
      NAA_LOG_DEBUG("naa_attr_t of %zu bytes (version %u): fields beyond this library's %zu "
                    "bytes are ignored", attr->size, attr->version, sizeof(naa_attr_t));
  }
  Settings s;
  if (HOLDS(attr, naa) && attr->naa != nullptr)
    parse_naa(attr->naa, &s.naa_host, &s.naa_port);

  s.transport = HOLDS(attr, transport) && attr->transport != nullptr
                    ? attr->transport
                    : transport::transport_from_environment();

  if (HOLDS(attr, timeout_ms) && attr->timeout_ms != NAA_ATTR_UNSET) {
    if (attr->timeout_ms <= 0 || attr->timeout_ms > kMaxTimeoutSeconds * 1000)
      throw bad_field("timeout_ms", std::to_string(attr->timeout_ms) + " is not in 1.." +
                                        std::to_string(kMaxTimeoutSeconds * 1000));
    s.timeout = std::chrono::milliseconds(attr->timeout_ms);
  } else {
    s.timeout = timeout_from_environment();
  }

  if (HOLDS(attr, progress) && attr->progress != nullptr) {
    s.progress = progress_tuning_from_environment();  // NAA_SPIN_US, NAA_PROGRESS_CPU: no field
    try {
      s.progress.mode = parse_progress_mode(attr->progress, "naa_attr_t.progress");
    } catch (const Error &e) {
      throw Error(NAA_ERR_INVALID_ARGUMENT, e.what());
    }
  } else {
    s.progress = progress_from_environment();
  }

  if (HOLDS(attr, pacing_us) && attr->pacing_us != NAA_ATTR_UNSET) {
    if (attr->pacing_us < 0 || static_cast<uint64_t>(attr->pacing_us) > kMaxMicroseconds)
      throw bad_field("pacing_us", std::to_string(attr->pacing_us) + " is not in 0.." +
                                       std::to_string(kMaxMicroseconds));
    s.pacing = std::chrono::microseconds(attr->pacing_us);
  } else {
    s.pacing = pacing_from_environment();
  }

  if (HOLDS(attr, auth_key) && attr->auth_key != nullptr)
    s.auth_key = auth::checked_key(attr->auth_key, "naa_attr_t.auth_key", NAA_ERR_INVALID_ARGUMENT);
  else
    s.auth_key = auth::key_from_environment();

  s.local_ip = HOLDS(attr, local_ip) && attr->local_ip != nullptr ? attr->local_ip
                                                                 : local_ip_from_environment();
  s.device = HOLDS(attr, device) && attr->device != nullptr ? attr->device
                                                             : rdma_device_from_environment();
  return s;
}

std::unique_ptr<rm::Target> Settings::target(uint8_t function_code, size_t n_inputs) const {
  if (naa_host.empty()) return rm::resolve(function_code, n_inputs);
  NAA_LOG_INFO("function code %u: NAA %s:%u from naa_attr_t.naa",
               static_cast<unsigned>(function_code), naa_host.c_str(), naa_port);
  return std::make_unique<rm::Target>(naa_host, naa_port, "naa_attr_t.naa");
}

}  // namespace naa

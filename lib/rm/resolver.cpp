// SPDX-License-Identifier: BSD-3-Clause
#include "rm/resolver.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "error.hpp"
#include "log.hpp"
#include "rm/naa_spec.hpp"
#include "rm/slurm.hpp"

namespace naa::rm {
namespace {

std::mutex usage_mu;
std::map<std::string, unsigned> usage;  // "host:port" -> live Targets in this process

std::string key(const std::string &host, uint16_t port) { return host + ":" + std::to_string(port); }

unsigned use_count(const std::string &host, uint16_t port) {
  std::lock_guard<std::mutex> lock(usage_mu);
  auto it = usage.find(key(host, port));
  return it == usage.end() ? 0 : it->second;
}

std::unique_ptr<Target> logged(std::unique_ptr<Target> target, uint8_t function_code) {
  NAA_LOG_INFO("function code %u -> %s:%u (%s)", static_cast<unsigned>(function_code),
               target->host().c_str(), static_cast<unsigned>(target->port()),
               target->source().c_str());
  return target;
}

}  // namespace

Target::Target(std::string host, uint16_t port, std::string source)
    : host_(std::move(host)), port_(port), source_(std::move(source)) {
  std::lock_guard<std::mutex> lock(usage_mu);
  ++usage[key(host_, port_)];
}

Target::~Target() {
  std::lock_guard<std::mutex> lock(usage_mu);
  auto it = usage.find(key(host_, port_));
  if (it != usage.end() && --it->second == 0) usage.erase(it);
}

void Target::add_alternative(std::string host, uint16_t port, std::string source) {
  alternatives_.push_back({std::move(host), port, std::move(source)});
}

bool Target::fail_over() {
  if (alternatives_.empty()) return false;
  Naa next = std::move(alternatives_.front());
  alternatives_.erase(alternatives_.begin());
  alternatives_.push_back({host_, port_, source_});  // tried again after the others
  std::lock_guard<std::mutex> lock(usage_mu);
  auto it = usage.find(key(host_, port_));
  if (it != usage.end() && --it->second == 0) usage.erase(it);
  host_ = std::move(next.host);
  port_ = next.port;
  source_ = std::move(next.source);
  ++usage[key(host_, port_)];
  return true;
}

// Order: NAA_SPEC (set by the user, or by the naa_spank plugin in Slurm tasks), then the Slurm
// job (ranks that mpirun starts itself get no NAA_SPEC), then an error naming what was tried.
std::unique_ptr<Target> resolve(uint8_t function_code, size_t n_inputs,
                                const params::Values &params) {
  const std::string &spec = params.text("NAA_SPEC");
  if (spec.empty()) {
    if (!in_slurm_job())
      throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + std::to_string(function_code) +
                                      ": NAA_SPEC is not set and this is not a Slurm job "
                                      "(SLURM_JOB_ID is not set)");
    SlurmChoice choice = resolve_slurm(function_code, n_inputs, params.text("NAA_CONF"), use_count);
    auto target = std::make_unique<Target>(std::move(choice.host), choice.port, std::move(choice.source));
    for (SlurmChoice &other : choice.alternatives)
      target->add_alternative(std::move(other.host), other.port, std::move(other.source));
    return logged(std::move(target), function_code);
  }
  std::vector<NaaEntry> entries;
  std::string why;
  if (!parse_naa_spec(spec, entries, &why)) throw Error(NAA_ERR_CONFIG, why);

  const NaaEntry *best = nullptr;
  size_t best_index = 0;
  unsigned best_use = 0;
  std::string codes;
  std::string mismatch;  // why an entry for the code did not fit, if one did not
  for (size_t i = 0; i < entries.size(); ++i) {
    const NaaEntry &e = entries[i];
    codes += (codes.empty() ? "" : ", ") + std::to_string(e.function_code);
    if (e.function_code != function_code) continue;
    if (e.n_inputs != n_inputs) {
      mismatch = "NAA_SPEC says function code " + std::to_string(function_code) + " at " +
                 key(e.host, e.port) + " takes " + std::to_string(e.n_inputs) +
                 " inputs, naa_create was given " + std::to_string(n_inputs);
      continue;
    }
    const unsigned use = use_count(e.host, e.port);
    if (best == nullptr || use < best_use) {
      best = &e;
      best_index = i;
      best_use = use;
    }
  }
  if (best == nullptr && !mismatch.empty()) throw Error(NAA_ERR_INVALID_ARGUMENT, mismatch);
  if (best == nullptr)
    throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + std::to_string(function_code) +
                                    " in NAA_SPEC (it lists codes " + codes + ")");
  auto target = std::make_unique<Target>(best->host, best->port,
                                         "NAA_SPEC entry " + std::to_string(best_index + 1));
  // The other entries that fit, from the one after the chosen one on, for failover.
  for (size_t k = 1; k < entries.size(); ++k) {
    const size_t i = (best_index + k) % entries.size();
    const NaaEntry &e = entries[i];
    if (e.function_code == function_code && e.n_inputs == n_inputs)
      target->add_alternative(e.host, e.port, "NAA_SPEC entry " + std::to_string(i + 1));
  }
  return logged(std::move(target), function_code);
}

}  // namespace naa::rm

// SPDX-License-Identifier: BSD-3-Clause
#include "rm/resolver.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "error.hpp"
#include "diag/log.hpp"
#include "rm/naa_spec.hpp"
#include "rm/slurm.hpp"
#include "rm/spread.hpp"

namespace naa::rm {
namespace {

std::mutex usage_mu;
std::map<std::string, unsigned> usage;  // "host:port" -> live Targets in this process

std::string key(const std::string &host, uint16_t port) {
  return host + ":" + std::to_string(port);
}

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
std::vector<Candidate> candidates(uint8_t function_code, const config::params::Values &params) {
  const std::string &spec = params.text("NAA_SPEC");
  if (spec.empty()) {
    if (!in_slurm_job())
      throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + std::to_string(function_code) +
                                      ": NAA_SPEC is not set and this is not a Slurm job "
                                      "(SLURM_JOB_ID is not set)");
    return slurm_candidates(function_code, params.text("NAA_CONF"), params.connect_timeout());
  }
  std::vector<NaaEntry> entries;
  std::string why;
  if (!parse_naa_spec(spec, entries, &why)) throw Error(NAA_ERR_CONFIG, why);
  std::vector<Candidate> found;
  std::string codes;
  for (size_t i = 0; i < entries.size(); ++i) {
    const NaaEntry &e = entries[i];
    codes += (codes.empty() ? "" : ", ") + std::to_string(e.function_code);
    if (e.function_code == function_code)
      found.push_back(Candidate{e.host, e.port, e.n_inputs, "NAA_SPEC",
                                "NAA_SPEC entry " + std::to_string(i + 1)});
  }
  if (found.empty())
    throw Error(NAA_ERR_NO_NAA, "no NAA for function code " + std::to_string(function_code) +
                                    " in NAA_SPEC (it lists codes " + codes + ")");
  return found;
}

std::unique_ptr<Target> resolve(uint8_t function_code, size_t n_inputs,
                                const config::params::Values &params) {
  const std::vector<Candidate> all = candidates(function_code, params);
  const ProcessRank rank = process_rank(params.text("NAA_SPREAD"));
  const size_t i = pick(
      all.size(), rank.rank, [&](size_t k) { return all[k].n_inputs == n_inputs; },
      [&](size_t k) { return use_count(all[k].host, all[k].port); });
  if (i == all.size()) {
    const Candidate &c = all.front();
    throw Error(NAA_ERR_INVALID_ARGUMENT,
                c.origin + " says function code " + std::to_string(function_code) + " at " +
                    key(c.host, c.port) + " takes " + std::to_string(c.n_inputs) +
                    " inputs, naa_create was given " + std::to_string(n_inputs));
  }
  std::string source = all[i].source;
  if (all.size() > 1)
    source += ", rank " + std::to_string(rank.rank) +
              (rank.from.empty() ? " (no rank in the environment)" : " (" + rank.from + ")");
  auto target = std::make_unique<Target>(all[i].host, all[i].port, std::move(source));
  std::set<std::string> listed{key(all[i].host, all[i].port)};
  // The other candidates that fit, each from the one after `at` on, for failover.
  const auto add_alternatives = [&](const std::vector<Candidate> &from, size_t at) {
    for (size_t k = 1; k <= from.size(); ++k) {
      const Candidate &c = from[(at + k) % from.size()];
      if (c.n_inputs == n_inputs && listed.insert(key(c.host, c.port)).second)
        target->add_alternative(c.host, c.port, c.source);
    }
  };
  add_alternatives(all, i);
  // In a task the naa_spank plugin gave one NAA_SPEC entry per code: the rest of naa.conf,
  // from the NAA after the chosen one on, as the plugin spreads the tasks.
  if (all[i].origin == "NAA_SPEC") {
    const std::vector<Candidate> site = slurm_alternatives(function_code, params.text("NAA_CONF"));
    size_t at = site.size() - 1;
    for (size_t k = 0; k < site.size(); ++k)
      if (key(site[k].host, site[k].port) == key(all[i].host, all[i].port)) at = k;
    add_alternatives(site, at);
  }
  return logged(std::move(target), function_code);
}

}  // namespace naa::rm

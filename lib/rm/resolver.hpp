// SPDX-License-Identifier: BSD-3-Clause
// Which NAA serves a function code: from NAA_SPEC (as the reference middleware reads it), else,
// inside a Slurm job, from the job and the site's naa.conf (rm/slurm.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/params.hpp"

namespace naa::rm {

// A resolved NAA. While a Target lives it counts as one user of its NAA, so that handles for a
// function code served by several NAAs are spread over them (fewest current users first).
class Target {
 public:
  Target(std::string host, uint16_t port, std::string source);
  ~Target();
  Target(const Target &) = delete;
  Target &operator=(const Target &) = delete;

  const std::string &host() const { return host_; }
  uint16_t port() const { return port_; }
  const std::string &source() const { return source_; }  // how it was found, for log lines

  // Other NAAs that serve the same function code (NAA_SPEC entries, naa.conf), tried in turn
  // when this one cannot be reached: fail_over() makes the next one this Target's NAA (counting
  // it as a user there instead) and returns false when there is no other.
  void add_alternative(std::string host, uint16_t port, std::string source);
  bool fail_over();
  size_t alternatives() const { return alternatives_.size(); }

 private:
  struct Naa {
    std::string host;
    uint16_t port;
    std::string source;
  };
  std::string host_;
  uint16_t port_;
  std::string source_;
  std::vector<Naa> alternatives_;  // in the order they are tried, the current one last
};

// An NAA that NAA_SPEC or the Slurm job's naa.conf names for a function code.
struct Candidate {
  std::string host;
  uint16_t port;
  unsigned n_inputs;   // what the NAA's kernel takes
  std::string origin;  // where it is listed: "NAA_SPEC", "/etc/naa.conf line 3"
  std::string
      source;  // how it was found, for log lines: "NAA_SPEC entry 2", "... Slurm job 12 --naa=10"
};

// Every NAA serving function_code, in the order NAA_SPEC or naa.conf lists them (never empty).
// Throws as resolve does, but never NAA_ERR_INVALID_ARGUMENT.
std::vector<Candidate> candidates(uint8_t function_code, const config::params::Values &params);

// The NAA for the next handle: from candidates(), the process's rank (NAA_SPREAD, rm/spread.hpp)
// picks where to start and the least used in this process from there on wins. The others that
// fit become its alternatives (Target::fail_over), and in a task whose NAA_SPEC the naa_spank
// plugin set, the other NAAs of naa.conf serving the code after them (slurm_alternatives).
// Throws Error: NAA_ERR_NO_NAA (nothing serves the code; the message says what was tried),
// NAA_ERR_CONFIG (malformed NAA_SPEC), NAA_ERR_INVALID_ARGUMENT (n_inputs differs from the
// NAA's parameter count).
// NAA_SPEC and NAA_CONF come from `params`.
std::unique_ptr<Target> resolve(uint8_t function_code, size_t n_inputs,
                                const config::params::Values &params);

}  // namespace naa::rm

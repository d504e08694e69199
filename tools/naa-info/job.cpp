// SPDX-License-Identifier: BSD-3-Clause
#include "job.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "config/count.hpp"
#include "error.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "rm/naa_conf.h"
#include "rm/naa_spec.hpp"
#include "rm/resolver.hpp"
#include "rm/slurm.hpp"
#include "rm/spread.hpp"

namespace naa_info {
namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The codes to show: NAA_SPEC's, else the job's --naa, else every code naa.conf serves (a job
// with only an naa licence may use any). Empty with *why set when there is nothing to show.
std::vector<unsigned> job_codes(const naa::config::params::Values &values, std::string *from,
                                std::string *why) {
  std::vector<unsigned> codes;
  const auto add = [&](unsigned c) {
    for (unsigned have : codes)
      if (have == c) return;
    codes.push_back(c);
  };
  const std::string &spec = values.text("NAA_SPEC");
  if (!spec.empty()) {
    std::vector<naa::rm::NaaEntry> entries;
    if (!naa::rm::parse_naa_spec(spec, entries, why)) return {};
    for (const auto &e : entries) add(e.function_code);
    *from = "NAA_SPEC";
    return codes;
  }
  if (!naa::rm::in_slurm_job()) {
    *why = "not inside a Slurm allocation (SLURM_JOB_ID is not set) and NAA_SPEC is not set";
    return {};
  }
  const std::string asked = env("SLURM_SPANK_NAA_CODES");
  if (!asked.empty()) {
    std::istringstream in(asked);
    for (std::string word; std::getline(in, word, ',');) {
      uint64_t c = 0;
      if (naa::config::parse_count(word.c_str(), NAA_CONF_MAX_FNCODE, &c) && c > 0)
        add(static_cast<unsigned>(c));
    }
    *from = "--naa=" + asked + " (SLURM_SPANK_NAA_CODES)";
    return codes;
  }
  std::string path;
  try {
    path = naa::rm::naa_conf_path(values.text("NAA_CONF"));
  } catch (const naa::Error &e) {  // slurm.conf or plugstack.conf not a small regular file
    *why = e.what();
    return {};
  }
  naa_conf conf;
  char error[1024];
  if (naa_conf_load(path.c_str(), &conf, error, sizeof error) != 0) {
    *why = error;
    return {};
  }
  for (size_t i = 0; i < conf.n_naas; ++i)
    for (size_t k = 0; k < conf.naas[i].n_kernels; ++k) add(conf.naas[i].kernels[k].function_code);
  naa_conf_free(&conf);
  *from = "no --naa: every code of " + path + ", for a job holding an naa licence";
  return codes;
}

// "0 2 4 6" for the ranks r < ranks with r mod n == k; "2 5 8 ... 29 (10 ranks)" when long.
std::string ranks_of(size_t k, size_t n, unsigned long ranks) {
  std::string text;
  unsigned long count = 0;
  for (unsigned long r = k; r < ranks; r += n, ++count)
    if (count < 8) text += (text.empty() ? "" : " ") + std::to_string(r);
  if (count == 0) return "none";
  if (count > 8)
    text +=
        " ... " + std::to_string(k + (count - 1) * n) + " (" + std::to_string(count) + " ranks)";
  return text;
}

}  // namespace

int show_job(unsigned long ranks, long only) {
  const naa::config::params::Values values = naa::transport::read_parameters();
  std::string from, why;
  const std::vector<unsigned> codes = job_codes(values, &from, &why);
  if (codes.empty()) {
    std::fprintf(stderr, "naa-info: --job: %s\n", why.c_str());
    return 1;
  }
  std::string ranks_from = "--ranks";
  if (ranks == 0) {
    for (const char *name : {"SLURM_NTASKS", "SLURM_NPROCS"}) {
      uint64_t n = 0;
      if (naa::config::parse_count(env(name).c_str(), UINT32_MAX, &n) && n > 0) {
        ranks = n;
        ranks_from = name;
        break;
      }
    }
  }
  if (ranks == 0) {
    ranks = 1;
    ranks_from = "neither --ranks nor SLURM_NTASKS";
  }
  const std::string spread = values.text("NAA_SPREAD");
  try {
    naa::rm::check_spread(spread, "NAA_SPREAD");
  } catch (const naa::Error &e) {
    std::fprintf(stderr, "naa-info: --job: %s\n", e.what());
    return 1;
  }
  const std::string job = env("SLURM_JOB_ID");
  std::printf(
      "job %s: %lu rank(s) (%s), codes from %s, NAA_SPREAD=%s: the %s rank r uses NAA r mod n\n",
      job.empty() ? "(none)" : job.c_str(), ranks, ranks_from.c_str(), from.c_str(), spread.c_str(),
      spread == "local" ? "node-local" : "job-wide");
  int rc = 0;
  for (unsigned code : codes) {
    if (only >= 0 && code != static_cast<unsigned long>(only)) continue;
    std::vector<naa::rm::Candidate> all;
    try {
      all = naa::rm::candidates(static_cast<uint8_t>(code), values);
    } catch (const naa::Error &e) {
      std::printf("function code %u: none: %s\n", code, e.what());
      rc = 1;
      continue;
    }
    std::printf("function code %u: %zu NAA(s)\n", code, all.size());
    for (size_t k = 0; k < all.size(); ++k)
      std::printf("  %zu  %s:%u  %u input(s)  (%s)  ranks %s\n", k, all[k].host.c_str(),
                  static_cast<unsigned>(all[k].port), all[k].n_inputs, all[k].origin.c_str(),
                  ranks_of(k, all.size(), ranks).c_str());
  }
  return rc;
}

}  // namespace naa_info

// SPDX-License-Identifier: BSD-3-Clause
#include "transport/params.hpp"

#include "config/options.hpp"
#include "rm/params.hpp"
#include "transport/registry.hpp"

namespace naa::transport {

const config::params::Table &parameters() {
  static const config::params::Table params = [] {
    config::params::Table all = rm::parameters();
    all.push_back({"NAA_TRANSPORT", "auto|verbs|ofi|ofi+PROVIDER", "auto",
                   "how to reach the NAA; auto: ofi+shm for a same-host naa-server (ofi+tcp "
                   "after 3 s), verbs where an RDMA device routes to it, else ofi+tcp",
                   [](const std::string &t, const std::string &s) { parse_name(t, s); }});
    all.push_back({"NAA_MODULE_DIR", "directory", "",
                   "where the transport modules (libnaa-ofi.so, libnaa-verbs.so) are loaded from "
                   "(default: PKGLIBDIR; a libnaa run from its build tree, that tree's lib/.libs)",
                   nullptr});
    const config::params::Table &own = config::params::own();
    all.insert(all.end(), own.begin(), own.end());
    for (const Registration *row : registration_rows())
      for (config::params::Param p : row->params) {
        p.transport = row->name;
        all.push_back(p);
      }
    return all;
  }();
  return params;
}

config::params::Values read_parameters(const char *const *overrides) {
  return config::params::Values::read(parameters(), overrides);
}

TransportOptions options_from(const config::params::Values &values) {
  TransportOptions options;
  const config::Progress p = values.progress();
  options.provider_progress = p.mode == config::Progress::Mode::Provider;
  options.device = values.text("NAA_RDMA_DEVICE");
  options.write_chunk = values.parsed("NAA_OFI_WRITE_CHUNK", config::parse_write_chunk);
  options.setup_spin = p.spin;
  options.setup_sleeps = p.mode == config::Progress::Mode::Block;
  options.idle_endpoints = values.parsed("NAA_SHM_IDLE_ENDPOINTS", config::parse_idle_endpoints);
  return options;
}

}  // namespace naa::transport

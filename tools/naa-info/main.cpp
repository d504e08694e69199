// SPDX-License-Identifier: BSD-3-Clause
// naa-info: what fi_info and ibv_devinfo are to their libraries. Shows the libnaa version, the
// transports built in and usable here, the NAAs the current environment resolves, and with
// --ping whether each of them answers (connect + MRSP, no kernel is run); with --params every
// runtime parameter, its value here and where the value comes from (as fi_info --env).
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "config.h"
#include "job.hpp"
#include "kernels.hpp"
#include "error.hpp"
#include "diag/log.hpp"
#include "config/count.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "rm/naa_spec.hpp"
#include "rm/resolver.hpp"
#include "session/open_session.hpp"
#include "transport/module.hpp"
#include "transport/registry.hpp"
#include "transport/transport.hpp"

namespace {

void usage(FILE *out) {
  std::fprintf(
      out,
      "Usage: naa-info [-p] [-f CODE] | --params | --job [-n RANKS] [-f CODE]\n"
      "       naa-info --kernels [-f CODE] [HOST[:PORT]]\n"
      "Show libnaa's version, its transports, and the NAAs of the current environment.\n"
      "\n"
      "  -P, --params         list every runtime parameter with its value, source and meaning\n"
      "  -p, --ping           connect to each NAA (connect + memory-region exchange, no kernel\n"
      "                       run) and report the time; exit 1 if any is unreachable\n"
      "  -j, --job            which NAAs serve which codes for this job (NAA_SPEC, else the\n"
      "                       Slurm allocation's naa.conf) and which ranks use which\n"
      "  -n, --ranks RANKS    with --job: the job's number of ranks (default SLURM_NTASKS)\n"
      "  -k, --kernels        the kernels the NAA at HOST[:PORT] (default port 12345), else\n"
      "                       each NAA of NAA_SPEC, serves; exit 3 if an NAA does not list\n"
      "                       them (a reference NAA), 1 if one is unreachable\n"
      "  -f, --function CODE  only the NAAs serving function code CODE\n"
      "  -h, --help           show this help\n"
      "  -V, --version        show the version\n");
}

// One row per transport of the registry: its name, what it is (the loaded library's version
// where built), the names it answers; below it, the module file it was loaded from, why it
// cannot be used here and its details. A row whose module cannot be loaded says why (the
// loader's message, naming the file).
void show_transports() {
  std::printf("transports:\n");
  for (const naa::transport::Registration &r : naa::transport::registrations()) {
    std::string why;
    const naa::transport::Entry *e = naa::transport::usable_entry(r, &why);
    if (e == nullptr) {
      std::printf("  %-7s %s\n", r.name,
                  r.entry == nullptr ? why.c_str() : ("unavailable: " + why).c_str());
      continue;
    }
    std::vector<std::string> details = e->details();
    const std::string what = details.empty() ? r.description : details.front();
    if (std::string(r.name) == r.grammar)
      std::printf("  %-7s %s\n", r.name, what.c_str());
    else
      std::printf("  %-7s %s (%s)\n", r.name, what.c_str(), r.grammar);
    if (r.module != nullptr)
      std::printf("          module: %s\n", naa::transport::module_path(r.module).c_str());
    const std::string unusable = e->unusable();
    if (!unusable.empty()) std::printf("          unusable here: %s\n", unusable.c_str());
    for (size_t i = 1; i < details.size(); ++i) std::printf("          %s\n", details[i].c_str());
  }
  std::string chosen = naa::transport::transport_from_environment();
  try {
    auto t = naa::transport::open_transport(chosen);
    if (chosen == "auto")
      std::printf(
          "  NAA_TRANSPORT=auto -> per NAA: ofi+shm for a server on this host, verbs where an "
          "RDMA device routes to it, else ofi+tcp\n");
    else
      std::printf("  NAA_TRANSPORT=%s -> %s\n", chosen.c_str(), t->name());
  } catch (const naa::Error &e) {
    std::printf("  NAA_TRANSPORT=%s -> unusable: %s\n", chosen.c_str(), e.what());
  }
}

// The transport naa_create would use for this NAA.
std::string transport_for(const naa::rm::NaaEntry &e, const naa::config::params::Values &values) {
  std::string chosen = values.text("NAA_TRANSPORT");
  if (chosen != "auto") return chosen;
  auto deadline = naa::Deadline::after(std::chrono::seconds(5));
  try {
    return naa::transport::auto_transport_for(e.host, e.port, values.text("NAA_LOCAL_IP"),
                                              values.text("NAA_RDMA_DEVICE"), deadline);
  } catch (const naa::Error &err) {
    return std::string("none: ") + err.what();
  }
}

// One block per parameter: NAME=value, then its source, type, default and meaning. Exit 1 if
// any value is malformed (naa_create would refuse it).
int show_params() {
  const naa::config::params::Values values = naa::transport::read_parameters();
  const auto &registry = naa::transport::parameters();
  int malformed = 0;
  for (size_t i = 0; i < registry.size(); ++i) {
    const naa::config::params::Param &p = registry[i];
    const std::string why = values.problem(i);
    const std::string &value = values.text(i);
    if (p.secret && !value.empty())
      std::printf("%s=(%zu bytes, not shown)\n", p.name, value.size());
    else
      std::printf("%s=%s\n", p.name, value.c_str());
    std::printf("    source: %s%s%s\n", naa::config::params::source_name(values.source(i)),
                why.empty() ? "" : "; MALFORMED: ", why.c_str());
    std::printf("    type: %s; default: %s\n", p.type, *p.fallback != '\0' ? p.fallback : "(none)");
    std::printf("    %s\n", p.doc);
    if (p.transport != nullptr) std::printf("    transport: %s (its registry row)\n", p.transport);
    malformed += !why.empty();
  }
  return malformed > 0 ? 1 : 0;
}

// First line of a sysfs attribute, "" if it cannot be read: the kernel refuses reads of
// gid_attrs for unused GID table entries (EINVAL), which just means "nothing there".
std::string read_sysfs_line(const std::filesystem::path &file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return line;
}

// Names of the entries of dir, numeric ones in numeric order (ports 1..N, GID indexes 0..M).
std::vector<std::string> sorted_entries(const std::filesystem::path &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec))
    names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end(), [](const std::string &a, const std::string &b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return names;
}

// The RoCE v2 GIDs of every port of every RDMA device, from sysfs as rdma-core reads them:
// these (index, address) pairs are what a RoCE v2 connection must use, and a wrong GID index
// is the usual reason a RoCE setup "connects" nowhere.
void show_roce_v2_gids() {
  const std::filesystem::path root = "/sys/class/infiniband";
  std::printf("RoCE v2 GIDs:\n");
  const auto devices = sorted_entries(root);
  if (devices.empty()) {
    std::printf("  none: no RDMA device in %s\n", root.c_str());
    return;
  }
  for (const auto &dev : devices) {
    for (const auto &port : sorted_entries(root / dev / "ports")) {
      const auto port_dir = root / dev / "ports" / port;
      int shown = 0;
      for (const auto &index : sorted_entries(port_dir / "gids")) {
        const std::string gid = read_sysfs_line(port_dir / "gids" / index);
        if (gid.empty() || gid.find_first_not_of("0:") == std::string::npos) continue;
        if (read_sysfs_line(port_dir / "gid_attrs" / "types" / index) != "RoCE v2") continue;
        std::string note;
        const std::string ndev = read_sysfs_line(port_dir / "gid_attrs" / "ndevs" / index);
        if (!ndev.empty()) note = "  netdev " + ndev;
        // An IPv4-mapped GID (::ffff:a.b.c.d) is the address to give NAA_LOCAL_IP and NAA_SPEC.
        if (gid.compare(0, 30, "0000:0000:0000:0000:0000:ffff:") == 0 && gid.size() == 39) {
          const unsigned long hi = std::strtoul(gid.substr(30, 4).c_str(), nullptr, 16);
          const unsigned long lo = std::strtoul(gid.substr(35, 4).c_str(), nullptr, 16);
          note += "  IPv4 " + std::to_string(hi >> 8) + "." + std::to_string(hi & 0xff) + "." +
                  std::to_string(lo >> 8) + "." + std::to_string(lo & 0xff);
        }
        std::printf("  %s port %s  GID index %3s  %s%s\n", dev.c_str(), port.c_str(), index.c_str(),
                    gid.c_str(), note.c_str());
        ++shown;
      }
      if (shown == 0) std::printf("  %s port %s  no RoCE v2 GID\n", dev.c_str(), port.c_str());
    }
  }
}

// Connect + MRSP with n_inputs one-byte inputs (the first also the output), then disconnect;
// *info tells what the session chose, as naa_handle_info(3) would. The connection is opened as
// naa_create_attr opens one for attr.naa = this entry's NAA (open_session): the same settings,
// the same transport preparation and choice, the same deadline.
double ping(const naa::rm::NaaEntry &e, naa_handle_info_t *info) {
  std::vector<uint8_t> bytes(e.n_inputs);
  std::vector<naa::protocol::Region> regions;
  for (unsigned i = 0; i < e.n_inputs; ++i)
    regions.push_back({&bytes[i], 1,
                       static_cast<uint8_t>(naa::protocol::mrsp::kInput |
                                            (i == 0 ? naa::protocol::mrsp::kOutput : 0))});
  const bool v6 = e.host.find(':') != std::string::npos;
  const std::string naa = (v6 ? "[" + e.host + "]" : e.host) + ":" + std::to_string(e.port);
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = naa.c_str();
  auto settings = naa::session::Settings::resolve_shared(&attr);
  auto start = std::chrono::steady_clock::now();
  auto session = naa::session::open_session(e.function_code, std::move(regions), e.n_inputs,
                                            std::move(settings));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  session->describe(info);
  return ms;
}

}  // namespace

int main(int argc, char **argv) {
  naa::diag::log::set_program("naa-info");
  bool do_ping = false;
  long only = -1;
  bool params = false, job = false, kernels = false;
  unsigned long ranks = 0;
  static const option long_options[] = {{"ping", no_argument, nullptr, 'p'},
                                        {"job", no_argument, nullptr, 'j'},
                                        {"ranks", required_argument, nullptr, 'n'},
                                        {"function", required_argument, nullptr, 'f'},
                                        {"params", no_argument, nullptr, 'P'},
                                        {"kernels", no_argument, nullptr, 'k'},
                                        {"help", no_argument, nullptr, 'h'},
                                        {"version", no_argument, nullptr, 'V'},
                                        {nullptr, 0, nullptr, 0}};
  int opt;
  while ((opt = getopt_long(argc, argv, "pjn:f:PkhV", long_options, nullptr)) != -1) {
    switch (opt) {
      case 'p':
        do_ping = true;
        break;
      case 'f': {
        uint64_t code = 0;
        if (!naa::config::parse_count(optarg, 127, &code) || code == 0) {
          std::fprintf(stderr, "naa-info: function code '%s' is not in 1..127\n", optarg);
          return 2;
        }
        only = static_cast<long>(code);
        break;
      }
      case 'P':
        params = true;
        break;
      case 'j':
        job = true;
        break;
      case 'k':
        kernels = true;
        break;
      case 'n': {
        uint64_t n = 0;
        if (!naa::config::parse_count(optarg, UINT32_MAX, &n) || n == 0) {
          std::fprintf(stderr, "naa-info: number of ranks '%s' is not in 1..%u\n", optarg,
                       UINT32_MAX);
          return 2;
        }
        ranks = static_cast<unsigned long>(n);
        break;
      }
      case 'h':
        usage(stdout);
        return 0;
      case 'V':
        std::printf("naa-info (libnaa) %s\n", PACKAGE_VERSION);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }

  // Only --kernels takes an operand, the NAA to ask.
  if (optind < argc && (!kernels || optind + 1 < argc)) {
    std::fprintf(stderr, "naa-info: unexpected argument '%s' (try --help)\n",
                 argv[kernels ? optind + 1 : optind]);
    return 2;
  }
  if (kernels) return naa_info::show_kernels(optind < argc ? argv[optind] : "", only);
  if (params) return show_params();
  if (job) return naa_info::show_job(ranks, only);
  std::printf("libnaa %s\n", PACKAGE_VERSION);
  show_transports();
  show_roce_v2_gids();

  std::printf("NAAs:\n");
  const naa::config::params::Values values = naa::transport::read_parameters();
  const std::string &spec = values.text("NAA_SPEC");
  if (spec.empty()) {
    std::printf("  none: NAA_SPEC is not set\n");
    return do_ping ? 1 : 0;
  }
  std::vector<naa::rm::NaaEntry> entries;
  std::string why;
  if (!naa::rm::parse_naa_spec(spec, entries, &why)) {
    std::printf("  NAA_SPEC is malformed: %s\n", why.c_str());
    return 1;
  }
  int unreachable = 0;
  size_t shown = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const auto &e = entries[i];
    if (only >= 0 && e.function_code != only) continue;
    ++shown;
    std::printf("  function code %3u  %s:%u  %u input(s)  (NAA_SPEC entry %zu)  via %s",
                e.function_code, e.host.c_str(), static_cast<unsigned>(e.port), e.n_inputs, i + 1,
                transport_for(e, values).c_str());
    if (do_ping) {
      try {
        naa_handle_info_t info;
        const double ms = ping(e, &info);
        std::printf("  reachable, connect + MRSP %.2f ms, transport %s, pacing %lld us", ms,
                    info.transport, static_cast<long long>(info.pacing_us));
      } catch (const naa::Error &err) {
        std::printf("  UNREACHABLE: %s", err.what());
        ++unreachable;
      }
    }
    std::printf("\n");
  }
  if (only >= 0 && shown == 0) {
    // Asked about one function code: no NAA for it is an answer the caller must not miss.
    std::printf("  none: NAA_SPEC has no entry for function code %ld\n", only);
    return 1;
  }
  return unreachable > 0 ? 1 : 0;
}

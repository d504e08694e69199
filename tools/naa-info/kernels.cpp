// SPDX-License-Identifier: BSD-3-Clause
#include "kernels.hpp"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "config/params.hpp"
#include "transport/params.hpp"
#include "session/settings.hpp"
#include "error.hpp"
#include "rm/naa_spec.hpp"
#include "session/session.hpp"
#include "transport/registry.hpp"

namespace naa_info {
namespace {

struct Naa {
  std::string host;
  uint16_t port = 0;
  uint8_t function_code = 1;  // any: the memory-region exchange does not name it
  std::string origin;
};

// The kernels of one NAA, page by page (each page is one connection and exchange, asked from the
// code the previous page named). False where the NAA answers without a list; throws naa::Error
// where it cannot be reached. *transport: the transport of the last connection.
bool list_kernels(const Naa &naa, std::vector<naa::protocol::kernel_list::Kernel> *kernels,
                  bool *libnaa_server, std::string *transport) {
  uint8_t from = 1;
  do {
    naa::session::Settings settings = naa::session::Settings::resolve(nullptr);
    settings.list_kernels_from = from;
    uint8_t byte = 0;
    std::vector<naa::protocol::Region> regions{
        {&byte, 1,
         static_cast<uint8_t>(naa::protocol::mrsp::kInput | naa::protocol::mrsp::kOutput)}};
    auto t = naa::transport::open_transport(settings.transport, settings.transport_options());
    const auto deadline = naa::Deadline::after(settings.connect_timeout);
    naa::session::Session session(std::move(t), naa.function_code, std::move(regions),
                                  std::make_unique<naa::rm::Target>(naa.host, naa.port, "naa-info"),
                                  std::make_shared<const naa::session::Settings>(settings),
                                  deadline);
    naa_handle_info_t info;
    session.describe(&info);
    *transport = info.transport;
    *libnaa_server = session.naa_is_libnaa_server();
    const auto &page = session.naa_kernels();
    if (!page) return false;
    kernels->insert(kernels->end(), page->kernels.begin(), page->kernels.end());
    from = page->next;
  } while (from != 0);
  return true;
}

// "HOST[:PORT]" (port 12345 by default, as the protocol's), read as naa_create_attr reads its
// naa field; false, with *why, where it is not one or the settings are malformed.
bool parse_naa(std::string text, Naa *naa, std::string *why) {
  if (text.find(':') == std::string::npos || (text.front() == '[' && text.back() == ']'))
    text += ":12345";
  naa_attr_t attr = NAA_ATTR_INIT;
  attr.naa = text.c_str();
  try {
    const naa::session::Settings settings = naa::session::Settings::resolve(&attr);
    *naa = {settings.naa_host, settings.naa_port, 1, "command line"};
    return true;
  } catch (const naa::Error &e) {
    *why = e.what();
    return false;
  }
}

// The NAAs of NAA_SPEC, each host:port once (the first entry naming it), only those serving
// `only` where it is not -1. Empty, with the reason printed, where there is none.
std::vector<Naa> spec_naas(long only) {
  const naa::config::params::Values values = naa::transport::read_parameters();
  const std::string &spec = values.text("NAA_SPEC");
  std::vector<naa::rm::NaaEntry> entries;
  std::string why;
  if (spec.empty()) {
    std::fprintf(stderr, "naa-info: --kernels: no NAA given and NAA_SPEC is not set\n");
    return {};
  }
  if (!naa::rm::parse_naa_spec(spec, entries, &why)) {
    std::fprintf(stderr, "naa-info: --kernels: NAA_SPEC is malformed: %s\n", why.c_str());
    return {};
  }
  std::vector<Naa> naas;
  for (size_t i = 0; i < entries.size(); ++i) {
    const naa::rm::NaaEntry &e = entries[i];
    if (only >= 0 && e.function_code != only) continue;
    bool seen = false;
    for (const Naa &n : naas) seen |= n.host == e.host && n.port == e.port;
    if (!seen)
      naas.push_back({e.host, e.port, static_cast<uint8_t>(e.function_code),
                      "NAA_SPEC entry " + std::to_string(i + 1)});
  }
  if (naas.empty())
    std::fprintf(stderr, "naa-info: --kernels: NAA_SPEC has no entry for function code %ld\n",
                 only);
  return naas;
}

}  // namespace

int show_kernels(const std::string &text, long only) {
  std::vector<Naa> naas;
  if (!text.empty()) {
    Naa naa;
    std::string why;
    if (!parse_naa(text, &naa, &why)) {
      std::fprintf(stderr, "naa-info: --kernels %s: %s\n", text.c_str(), why.c_str());
      return 2;
    }
    naas.push_back(naa);
  } else {
    naas = spec_naas(only);
    if (naas.empty()) return 1;
  }
  bool unreachable = false, unlisted = false;
  for (const Naa &naa : naas) {
    std::printf("kernels of %s:%u (%s): ", naa.host.c_str(), static_cast<unsigned>(naa.port),
                naa.origin.c_str());
    std::vector<naa::protocol::kernel_list::Kernel> kernels;
    bool libnaa_server = false;
    std::string transport;
    try {
      if (!list_kernels(naa, &kernels, &libnaa_server, &transport)) {
        std::printf("this NAA does not list its kernels (%s)\n",
                    libnaa_server ? "a naa-server without the kernel list"
                                  : "a reference NAA: it does not name itself naa-server");
        unlisted = true;
        continue;
      }
    } catch (const naa::Error &e) {
      std::printf("UNREACHABLE: %s\n", e.what());
      unreachable = true;
      continue;
    }
    std::printf("%zu, via %s\n", kernels.size(), transport.c_str());
    std::printf("  code  name                      kind\n");
    for (const naa::protocol::kernel_list::Kernel &k : kernels)
      std::printf("  %4u  %-24s  %s\n", static_cast<unsigned>(k.function_code), k.name.c_str(),
                  k.kind == naa::protocol::kernel_list::kPlugin ? "plugin" : "built-in");
  }
  return unreachable ? 1 : unlisted ? kNotListed : 0;
}

}  // namespace naa_info

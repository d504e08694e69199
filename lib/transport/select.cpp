// Transport names, as in Mercury: "ofi+tcp" is libfabric's tcp provider.
#include <cstdlib>

#include "config.h"
#include "error.hpp"
#include "log.hpp"
#include "transport/transport.hpp"
#ifdef NAA_HAVE_LIBFABRIC
#include "transport/ofi.hpp"
#endif

namespace naa::transport {

std::string transport_from_environment() {
  const char *name = std::getenv("NAA_TRANSPORT");
  return name != nullptr && *name != '\0' ? name : "auto";
}

std::unique_ptr<Transport> open_transport(const std::string &name) {
  if (name == "verbs")
    throw Error(NAA_ERR_UNSUPPORTED, "NAA_TRANSPORT=verbs: the verbs transport is not part of this "
                                     "version yet; use ofi+tcp");
  std::string provider;
  if (name == "auto") {
    // Until the verbs transport exists, auto means libfabric over TCP, which reaches any NAA
    // that naa-server serves over ofi+tcp.
    provider = "tcp";
  } else if (name == "ofi") {
    provider.clear();
  } else if (name.rfind("ofi+", 0) == 0 && name.size() > 4) {
    provider = name.substr(4);
  } else {
    throw Error(NAA_ERR_CONFIG, "NAA_TRANSPORT '" + name +
                                    "' is not a transport (use auto, ofi, ofi+PROVIDER or verbs)");
  }
#ifdef NAA_HAVE_LIBFABRIC
  NAA_LOG_DEBUG("transport %s -> libfabric provider '%s'", name.c_str(),
                provider.empty() ? "(any)" : provider.c_str());
  return open_ofi_transport(provider);
#else
  throw Error(NAA_ERR_UNSUPPORTED, "NAA_TRANSPORT " + name + ": libnaa was built without libfabric");
#endif
}

}  // namespace naa::transport

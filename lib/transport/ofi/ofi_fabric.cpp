// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_fabric.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>

#include <cstring>

#include "error.hpp"

namespace naa::transport::ofi {

std::string fi_error_text(int rc) {
  return fi_strerror(rc < 0 ? -rc : rc);
}

[[noreturn]] void fail(naa_error_t code, const std::string &what, int rc) {
  throw Error(code, what + ": " + fi_error_text(rc));
}

void check(int rc, const char *what) {
  if (rc < 0) fail(NAA_ERR_TRANSPORT, what, rc);
}

void close_fid(fid_t f) {
  if (f != nullptr) fi_close(f);
}

std::string sockaddr_name(const void *addr) {
  if (addr == nullptr) return "?";
  char ip[INET6_ADDRSTRLEN] = "?";
  auto *sa = static_cast<const sockaddr *>(addr);
  if (sa->sa_family == AF_INET) {
    auto *in = static_cast<const sockaddr_in *>(addr);
    inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    auto *in6 = static_cast<const sockaddr_in6 *>(addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof ip);
    return "[" + std::string(ip) + "]:" + std::to_string(ntohs(in6->sin6_port));
  }
  return "?";
}

InfoPtr make_hints(const std::string &provider, bool auto_progress, fi_ep_type type) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw Error(NAA_ERR_NO_RESOURCES, "fi_allocinfo failed");
  hints->ep_attr->type = type;
  hints->caps = FI_MSG | FI_RMA | FI_WRITE | FI_REMOTE_WRITE | (type == FI_EP_RDM ? FI_TAGGED : 0);
  // shm's endpoints are reused (ofi_endpoint_reuse.cpp): completions name their source.
  if (type == FI_EP_RDM && provider == "shm") hints->caps |= FI_SOURCE;
  hints->mode = FI_RX_CQ_DATA;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_SAFE;
  if (type == FI_EP_MSG) {
    hints->tx_attr->msg_order = hints->rx_attr->msg_order = FI_ORDER_WAW;
    hints->tx_attr->comp_order = FI_ORDER_STRICT;
  }
  if (auto_progress) hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  return hints;
}

std::string address_text(uint32_t format, const std::string &name) {
  if (format == FI_ADDR_STR) return std::string(name.c_str());
  if (name.size() >= sizeof(sockaddr)) return sockaddr_name(name.data());
  return "?";
}

std::string provider_phrase(const std::string &provider) {
  return provider.empty() ? "" : " '" + provider + "'";
}

InfoPtr find_info(const std::string &provider, bool auto_progress, fi_ep_type type,
                  const char *node, const char *service, uint64_t flags, int *rc_out) {
  InfoPtr hints = make_hints(provider, auto_progress, type);
  fi_info *info = nullptr;
  int rc = fi_getinfo(kApiVersion, node, service, flags, hints.get(), &info);
  if (rc_out != nullptr) *rc_out = rc;
  if (rc < 0) return nullptr;
  InfoPtr owned(info);
  return InfoPtr(fi_dupinfo(owned.get()));  // only the first (preferred) match is used
}

}  // namespace naa::transport::ofi

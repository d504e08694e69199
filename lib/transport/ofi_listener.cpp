// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi_listener.hpp"

#include <netinet/in.h>
#include <rdma/fi_cm.h>
#include <sys/socket.h>

#include "log.hpp"
#include "transport/ofi_endpoint.hpp"

namespace naa::transport::ofi_detail {

OfiListener::OfiListener(const std::string &provider, const std::string &host, uint16_t port) {
  InfoPtr hints = make_hints(provider);
  fi_info *info = nullptr;
  std::string service = std::to_string(port);
  int rc = fi_getinfo(kApiVersion, host.empty() ? nullptr : host.c_str(), service.c_str(),
                      FI_SOURCE, hints.get(), &info);
  if (rc < 0)
    fail(NAA_ERR_UNSUPPORTED, "no libfabric provider" + provider_phrase(provider) +
                                  " can listen on " + host + ":" + service, rc);
  info_.reset(info);
  fabric_ = std::make_shared<OfiFabric>(info_.get());
  fi_eq_attr eq_attr{};
  eq_attr.wait_obj = FI_WAIT_UNSPEC;
  fid_eq *eq = nullptr;
  check(fi_eq_open(fabric_->fabric, &eq_attr, &eq, nullptr), "fi_eq_open");
  eq_.reset(eq);
  fid_pep *pep = nullptr;
  check(fi_passive_ep(fabric_->fabric, info_.get(), &pep, nullptr), "fi_passive_ep");
  pep_.reset(pep);
  check(fi_pep_bind(pep_.get(), &eq_->fid, 0), "fi_pep_bind");
  rc = fi_listen(pep_.get());
  if (rc < 0) fail(NAA_ERR_CONNECTION, "cannot listen on " + host + ":" + service, rc);
  sockaddr_storage addr{};
  size_t len = sizeof addr;
  check(fi_getname(&pep_->fid, &addr, &len), "fi_getname");
  port_ = addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6 &>(addr).sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in &>(addr).sin_port);
}

std::unique_ptr<Endpoint> OfiListener::next_request(Deadline deadline) {
  for (;;) {
    uint32_t event = 0;
    // The connection request's private data follows the entry.
    alignas(fi_eq_cm_entry) char buf[sizeof(fi_eq_cm_entry) + kMaxPrivateData] = {};
    fi_eq_cm_entry &entry = *reinterpret_cast<fi_eq_cm_entry *>(buf);
    ssize_t rc = fi_eq_sread(eq_.get(), &event, buf, sizeof buf, deadline.remaining_ms(kWaitSliceMs), 0);
    if (rc >= 0 && event == FI_CONNREQ) {
      size_t data_len = static_cast<size_t>(rc) > sizeof entry ? static_cast<size_t>(rc) - sizeof entry : 0;
      return std::make_unique<OfiEndpoint>(fabric_, InfoPtr(entry.info), pep_.get(),
                                           std::string(buf + sizeof entry, data_len));
    }
    if (rc >= 0 && entry.info != nullptr) fi_freeinfo(entry.info);
    if (rc == -FI_EAVAIL) {
      fi_eq_err_entry err{};
      fi_eq_readerr(eq_.get(), &err, 0);
      NAA_LOG_WARN("listener: %s", fi_error_text(err.err).c_str());
    }
    if (deadline.expired()) return nullptr;
  }
}

}  // namespace naa::transport::ofi_detail

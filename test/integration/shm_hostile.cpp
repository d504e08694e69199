// SPDX-License-Identifier: BSD-3-Clause
// A hostile same-host client for test_hostile: sends naa-server's ofi+shm listener
// connection requests that name any endpoint and claim any process, as any local process of
// the user can, then stays LINGER_MS (so that a server that believed the claim watches a live
// process) and exits without a goodbye.
//
//   shm_hostile PORT COUNT NAME PID LINGER_MS
//
// NAME "self" and PID "self" stand for this process's own endpoint and pid. Exit 0 when every
// request was sent.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "transport/ofi/ofi_control.hpp"

using namespace naa::transport;

namespace {

[[noreturn]] void die(const char *what, int rc) {
  std::fprintf(stderr, "shm_hostile: %s: %s\n", what, fi_strerror(-rc));
  std::exit(1);
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: shm_hostile PORT COUNT NAME PID LINGER_MS\n");
    return 2;
  }
  const std::string service = "naa-" + std::to_string(getuid()) + "-" + argv[1];
  fi_info *hints = fi_allocinfo();
  hints->fabric_attr->prov_name = strdup("shm");
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG | FI_TAGGED;
  hints->addr_format = FI_ADDR_STR;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  fi_info *server = nullptr, *own = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 17), nullptr, service.c_str(), 0, hints, &server);
  if (rc != 0) die("fi_getinfo (the listener)", rc);
  rc = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &own);
  if (rc != 0) die("fi_getinfo", rc);
  fid_fabric *fabric;
  fid_domain *domain;
  fid_av *av;
  fid_cq *cq;
  fid_ep *ep;
  fi_av_attr av_attr{};
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_TAGGED;
  if ((rc = fi_fabric(own->fabric_attr, &fabric, nullptr)) != 0) die("fi_fabric", rc);
  if ((rc = fi_domain(fabric, own, &domain, nullptr)) != 0) die("fi_domain", rc);
  if ((rc = fi_av_open(domain, &av_attr, &av, nullptr)) != 0) die("fi_av_open", rc);
  if ((rc = fi_cq_open(domain, &cq_attr, &cq, nullptr)) != 0) die("fi_cq_open", rc);
  if ((rc = fi_endpoint(domain, own, &ep, nullptr)) != 0) die("fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep, &av->fid, 0)) != 0 ||
      (rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) != 0)
    die("fi_ep_bind", rc);
  if ((rc = fi_enable(ep)) != 0) die("fi_enable", rc);
  fi_addr_t listener;
  if (fi_av_insert(av, server->dest_addr, 1, &listener, 0, nullptr) != 1)
    die("fi_av_insert", -FI_EINVAL);

  control::Message m;
  m.type = control::Type::Request;
  if (std::strcmp(argv[3], "self") == 0) {
    char name[control::kMaxName];
    size_t len = sizeof name;
    if ((rc = fi_getname(&ep->fid, name, &len)) != 0) die("fi_getname", rc);
    m.name.assign(name, strnlen(name, len));
  } else {
    m.name = argv[3];
  }
  m.name.push_back('\0');  // as libnaa sends FI_ADDR_STR names
  m.pid = std::strcmp(argv[4], "self") == 0
              ? static_cast<uint32_t>(getpid())
              : static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10));
  uint8_t msg[control::kMaxMessage];
  const size_t len = control::encode(m, msg, sizeof msg);
  const long count = std::strtol(argv[2], nullptr, 10);
  for (long i = 0; i < count; ++i) {
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while ((rc = static_cast<int>(fi_tsend(ep, msg, len, nullptr, listener, control::kControlTag,
                                           nullptr))) == -FI_EAGAIN) {
      fi_cq_tagged_entry e[8];
      fi_cq_read(cq, e, 8);
      if (std::chrono::steady_clock::now() > give_up) die("fi_tsend", rc);
    }
    if (rc != 0) die("fi_tsend", rc);
    fi_cq_tagged_entry e;
    while (fi_cq_read(cq, &e, 1) == -FI_EAGAIN && std::chrono::steady_clock::now() < give_up) {
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(std::strtol(argv[5], nullptr, 10)));
  fi_close(&ep->fid);
  fi_close(&cq->fid);
  fi_close(&av->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(own);
  fi_freeinfo(server);
  fi_freeinfo(hints);
  return 0;
}

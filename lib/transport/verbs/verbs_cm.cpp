// SPDX-License-Identifier: BSD-3-Clause
// rdma_cm for the verbs transport (doc/protocol.md §1): the event channel, what its events mean,
// address and route resolution from the source NAA_LOCAL_IP or NAA_RDMA_DEVICE names, and the
// spec's connection parameters.
#include "transport/verbs/verbs_cm.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "error.hpp"
#include "diag/log.hpp"
#include "transport/host.hpp"
#include "transport/transport.hpp"

namespace naa::transport::verbs {
namespace {

// The spec's connection parameters (reference values; READ and atomics are never used).
constexpr uint8_t kInitiatorDepth = 1;
constexpr uint8_t kResponderResources = 1;
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetryCount = 6;
// Address and route resolution each get at most this long (the reference's 100/500 ms are too
// short for software RoCE under load); the caller's deadline still bounds the whole connect.
constexpr int kResolveCapMs = 5000;

// NAA_RDMA_DEVICE names the device to connect from. rdma_cm picks the device from the source
// address, so the device is pinned through its IPv4 RoCEv2 GID (::ffff:a.b.c.d).
std::string device_ipv4(const std::string &device) {
  const std::string base = "/sys/class/infiniband/" + device + "/ports/1/";
  for (int i = 0; i < 256; ++i) {
    std::ifstream type(base + "gid_attrs/types/" + std::to_string(i));
    std::string t;
    if (!std::getline(type, t)) break;
    if (t != "RoCE v2") continue;
    std::ifstream gid(base + "gids/" + std::to_string(i));
    std::string g;
    const std::string v4mapped = "0000:0000:0000:0000:0000:ffff:";
    if (!std::getline(gid, g) || g.compare(0, v4mapped.size(), v4mapped) != 0) continue;
    unsigned hi = std::strtoul(g.substr(30, 4).c_str(), nullptr, 16);
    unsigned lo = std::strtoul(g.substr(35, 4).c_str(), nullptr, 16);
    return std::to_string(hi >> 8) + "." + std::to_string(hi & 0xff) + "." +
           std::to_string(lo >> 8) + "." + std::to_string(lo & 0xff);
  }
  throw Error(NAA_ERR_CONFIG,
              "NAA_RDMA_DEVICE=" + device + ": no such RDMA device, or it has no IPv4 RoCEv2 GID");
}

std::string source_address(const std::string &local_ip, const std::string &device) {
  if (!local_ip.empty()) return local_ip;
  return device.empty() ? std::string() : device_ipv4(device);
}

// IB CM reject reasons that say more than "rejected".
std::string reject_text(const rdma_cm_event &e) {
  std::string text = "rejected";
  if (e.status == 8) text = "no NAA listens on that port (connection rejected: invalid service ID)";
  std::string reason = private_data_text(e.param.conn.private_data, e.param.conn.private_data_len);
  if (!reason.empty()) text = "rejected by the NAA: \"" + reason + "\"";
  return text;
}

// The timeout for one resolution step. The kernel refuses a timeout of 0 ms with EINVAL, which
// read as "unsupported"; a deadline that has run out is a timeout, said as one.
int resolve_ms(Deadline deadline, const std::string &what) {
  const int ms = deadline.remaining_ms(kResolveCapMs);
  if (ms == 0) throw Error(NAA_ERR_TIMEOUT, what + " timed out");
  return ms;
}

void resolve(rdma_cm_id *id, CmChannel &ch, const sockaddr_in *src, const sockaddr_in &dst,
             Deadline deadline, const std::string &what) {
  auto *s = reinterpret_cast<sockaddr *>(const_cast<sockaddr_in *>(src));
  auto *d = reinterpret_cast<sockaddr *>(const_cast<sockaddr_in *>(&dst));
  if (rdma_resolve_addr(id, s, d, resolve_ms(deadline, what + ": address resolution")) != 0)
    fail_errno(NAA_ERR_UNSUPPORTED, what + ": rdma_resolve_addr");
  expect_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, deadline, what + ": address resolution");
  if (rdma_resolve_route(id, resolve_ms(deadline, what + ": route resolution")) != 0)
    fail_errno(NAA_ERR_UNSUPPORTED, what + ": rdma_resolve_route");
  expect_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, deadline, what + ": route resolution");
}

}  // namespace

std::string errno_text(int err) {
  return std::strerror(err);
}

[[noreturn]] void fail_errno(naa_error_t code, const std::string &what) {
  throw Error(code, what + ": " + errno_text(errno));
}

void set_nonblocking(int fd, const char *what) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    fail_errno(NAA_ERR_TRANSPORT, std::string("making the ") + what + " non-blocking");
}

std::string addr_name(const sockaddr *sa) {
  if (sa == nullptr || sa->sa_family != AF_INET) return "?";
  auto *in = reinterpret_cast<const sockaddr_in *>(sa);
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(ntohs(in->sin_port));
}

std::string gid_text(const ibv_gid &gid) {
  char text[INET6_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

CmChannel::CmChannel() : ch_(rdma_create_event_channel()) {
  if (!ch_) fail_errno(NAA_ERR_UNSUPPORTED, "rdma_create_event_channel (is rdma_ucm loaded?)");
  set_nonblocking(ch_->fd, "rdma_cm event channel");
}

rdma_cm_event *CmChannel::next(Deadline deadline, int interrupt) {
  for (;;) {
    rdma_cm_event *event = nullptr;
    if (rdma_get_cm_event(ch_.get(), &event) == 0) return event;
    if (errno != EAGAIN && errno != EINTR) fail_errno(NAA_ERR_TRANSPORT, "rdma_get_cm_event");
    if (deadline.expired()) return nullptr;
    pollfd p[2] = {{ch_->fd, POLLIN, 0}, {interrupt, POLLIN, 0}};
    if (interrupt < 0) {
      ::poll(p, 1, deadline.remaining_ms(kWaitSliceMs));
      continue;
    }
    if (::poll(p, 2, deadline.remaining_ms(INT_MAX)) > 0 && p[1].revents != 0) return nullptr;
  }
}

std::string expect_event(CmChannel &ch, rdma_cm_event_type want, Deadline deadline,
                         const std::string &what) {
  for (;;) {
    CmEvent e(ch.next(deadline));
    if (!e)
      throw Error(NAA_ERR_TIMEOUT, what + " timed out");  // the caller's deadline: connect or MRSP
    if (e->event == want)
      return e->param.conn.private_data == nullptr
                 ? std::string()
                 : std::string(static_cast<const char *>(e->param.conn.private_data),
                               e->param.conn.private_data_len);
    switch (e->event) {
      case RDMA_CM_EVENT_ADDR_ERROR:
      case RDMA_CM_EVENT_ROUTE_ERROR:
        throw Error(NAA_ERR_UNSUPPORTED, what + ": no RDMA device routes there (" +
                                             std::string(rdma_event_str(e->event)) + ", " +
                                             errno_text(-e->status) + ")");
      case RDMA_CM_EVENT_REJECTED:
        throw Error(NAA_ERR_CONNECTION, what + ": " + reject_text(*e.operator->()));
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_DEVICE_REMOVAL:
        throw Error(NAA_ERR_CONNECTION, what + ": " + rdma_event_str(e->event));
      default:
        NAA_LOG_DEBUG("%s: ignoring rdma_cm event %s", what.c_str(), rdma_event_str(e->event));
    }
  }
}

rdma_conn_param spec_conn_param(const std::string &private_data) {
  if (private_data.size() > 56)
    throw Error(NAA_ERR_INTERNAL, "connection private data longer than rdma_cm's 56 bytes");
  rdma_conn_param p{};
  p.initiator_depth = kInitiatorDepth;
  p.responder_resources = kResponderResources;
  p.retry_count = kRetryCount;
  p.rnr_retry_count = kRnrRetryCount;
  p.private_data = private_data.data();
  p.private_data_len = static_cast<uint8_t>(private_data.size());
  return p;
}

CmId create_id(CmChannel &ch) {
  rdma_cm_id *id = nullptr;
  if (rdma_create_id(ch.get(), &id, nullptr, RDMA_PS_TCP) != 0)
    fail_errno(NAA_ERR_UNSUPPORTED, "rdma_create_id");
  return CmId(id);
}

CmId resolved_id(CmChannel &ch, const std::string &host, uint16_t port, const std::string &local_ip,
                 const std::string &device, Deadline deadline, const std::string &what) {
  sockaddr_in dst = resolve_ipv4(host, port, NAA_ERR_CONNECTION);
  std::string source = source_address(local_ip, device);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  if (!source.empty()) src.sin_addr = local_ipv4(source);
  CmId id = create_id(ch);
  resolve(id.get(), ch, source.empty() ? nullptr : &src, dst, deadline, what);
  return id;
}

}  // namespace naa::transport::verbs

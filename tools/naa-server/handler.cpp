// SPDX-License-Identifier: BSD-3-Clause
#include "handler.hpp"

#include <cerrno>
#include <chrono>
#include <string>

#include "kernel_energy.hpp"
#include "protocol/immediate.hpp"
#include "diag/log.hpp"
#include "transport/descriptor_gate.hpp"

namespace naa::server {
namespace {
// How long a region waits for a descriptor when the process has none left.
constexpr std::chrono::seconds kDescriptorWait{5};
}  // namespace

Handler::Handler(const KernelRegistry &kernels, MemoryBudget &budget, const KernelPolicy &policy,
                 const std::atomic<bool> *stop, std::string peer_host, RegionPool *pool)
    : kernels_(kernels),
      budget_(budget),
      peer_host_(std::move(peer_host)),
      pool_(pool),
      runner_(policy, stop) {}

Handler::~Handler() {
  runner_.stop();  // the worker maps the regions too; it goes before they are released
  withdraw();
}

void Handler::withdraw() {
  const size_t had = regions_.size();
  size_t kept = 0;
  // Not those a worker mapped: what its kernel started may outlive it (region_pool.hpp).
  if (pool_ != nullptr && !runner_.forked())
    for (SharedRegion &r : regions_) kept += pool_->give_back(std::move(r)) ? 1 : 0;
  regions_.clear();
  // Once they are kept or freed: a test waits for this line, not for a time, before it looks
  // at what the server holds (test_region_pool).
  if (had > 0)
    NAA_LOG_DEBUG("regions of a client of %s given up: %zu kept for the next client, %zu freed",
                  peer_host_.empty() ? "?" : peer_host_.c_str(), kept, had - kept);
  budget_.release(reserved_, peer_host_);  // also 0: reserve(0) made the host's entry
  reserved_ = 0;
  memory_refusal_.reset();
  request_.clear();
  parameters_.clear();
}

// A kept region of the size, else a new one. A server out of descriptors frees the kept ones
// (each holds its memfd), then waits for those the handshake sweep frees (a flood of silent
// connections can hold every one for a moment) rather than refuse a legitimate client.
int Handler::new_region(size_t size, SharedRegion *r, std::string *why, bool may_wait) {
  if (pool_ != nullptr && size > 0)
    if (std::optional<SharedRegion> kept = pool_->take(size)) {
      *r = std::move(*kept);
      return 0;
    }
  int err = r->allocate(size, why);
  if ((err != EMFILE && err != ENFILE) || !may_wait) return err;
  if (pool_ != nullptr) pool_->clear();
  return transport::retry_while_short(
      [&] {
        *r = SharedRegion();
        return r->allocate(size, why);
      },
      Deadline::after(kDescriptorWait));
}

uint8_t Handler::on_mrsp(const uint8_t *msg, size_t len, std::string *why, bool may_wait) {
  constexpr auto kNoMemory = static_cast<uint8_t>(protocol::mrsp::ErrorCode::NoMemory);
  if (!regions_.empty()) {
    *why = "a second memory-region request";
    return kNoMemory;
  }
  protocol::mrsp::Message m;
  switch (protocol::mrsp::decode(msg, len, m, why)) {
    case protocol::mrsp::DecodeError::None:
      break;
    // A count above the limit has its own code (doc/protocol.md §3.3).
    case protocol::mrsp::DecodeError::TooManyEntries:
      return static_cast<uint8_t>(protocol::mrsp::ErrorCode::TooManyRegions);
    // The reference NAA answers every other failure with 0x01.
    case protocol::mrsp::DecodeError::Truncated:
    case protocol::mrsp::DecodeError::NoEntries:
    case protocol::mrsp::DecodeError::BadFlags:
    case protocol::mrsp::DecodeError::UnknownType:
      return kNoMemory;
  }
  if (m.type != protocol::mrsp::Type::AdvertiseRequest) {
    *why = "expected an advertise-request, got message type " +
           std::to_string(static_cast<int>(m.type));
    return kNoMemory;
  }
  bool any_parameter = false;
  uint64_t total = 0;  // at most 31 * 2^32: no overflow
  for (const protocol::mrsp::RequestEntry &e : m.request) {
    total += e.size;
    any_parameter |= (e.flags & protocol::mrsp::kInternal) == 0;
  }
  if (!any_parameter) {
    *why = "only internal regions requested; nothing to serve";
    return kNoMemory;
  }
  if (!budget_.reserve(total, peer_host_)) {
    memory_refusal_ = protocol::mrsp::MemoryLimit{total, budget_.available(peer_host_)};
    *why = std::to_string(total) + " bytes exceed the memory limit (" +
           std::to_string(memory_refusal_->available) +
           " bytes left for this client; --client-memory/--peer-memory/--total-memory)";
    return kNoMemory;
  }
  reserved_ = total;
  for (const protocol::mrsp::RequestEntry &e : m.request) {
    SharedRegion r;
    if (new_region(e.size, &r, why, may_wait) != 0) return kNoMemory;
    regions_.push_back(std::move(r));
  }
  request_ = m.request;
  for (size_t i = 0; i < request_.size(); ++i)
    if ((request_[i].flags & protocol::mrsp::kInternal) == 0)
      parameters_.push_back({regions_[i].addr(), regions_[i].size(), request_[i].flags});
  return 0;
}

std::optional<uint8_t> Handler::on_immediate(uint32_t v, const std::string &peer) {
  last_kernel_uj_.reset();
  if (v == 0) {
    NAA_LOG_WARN("client %s signalled a host-side error (immediate 0); no kernel run",
                 peer.c_str());
    return std::nullopt;
  }
  const uint8_t code = protocol::imm::function_code(v);
  const naa_kernel *kernel =
      protocol::imm::is_start(v) && code != 0 ? kernels_.find(code) : nullptr;
  if (kernel == nullptr || parameters_.empty()) {
    // AMBIGUOUS (doc/protocol.md §9, item 5): the reference NAA stays silent and the host hangs;
    // we answer with an application error code instead, as the spec recommends.
    NAA_LOG_WARN("client %s invoked unknown function code %u (immediate 0x%08x); answering 0x%02x",
                 peer.c_str(), static_cast<unsigned>(code), v, NAA_KERNEL_RC_UNKNOWN_FUNCTION);
    return NAA_KERNEL_RC_UNKNOWN_FUNCTION;
  }
  const kernel_energy::Window energy = kernel_energy::begin();
  uint8_t rc = runner_.run(*kernel, kernels_.is_builtin(code), regions_, request_, parameters_,
                           protocol::imm::user_data(v) >> 8, peer);
  uint64_t uj = 0;
  if (kernel_energy::end(energy, code, kernel->name, &uj)) last_kernel_uj_ = uj;
  NAA_LOG_DEBUG("client %s: kernel %u (%s) returned 0x%02x", peer.c_str(),
                static_cast<unsigned>(code), kernel->name, rc);
  return rc;
}

}  // namespace naa::server

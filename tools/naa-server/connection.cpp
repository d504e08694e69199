#include "connection.hpp"

#include <sys/mman.h>

#include <cinttypes>
#include <string>

#include "error.hpp"
#include "immediate.hpp"
#include "log.hpp"

namespace naa::server {
namespace {

enum Context : uint64_t { kMrspRecv = 1, kMrspSend = 2, kReplyWrites = 3, kInvocationRecv = 4 };
constexpr int kStopCheckMs = 200;

}  // namespace

Connection::Connection(std::unique_ptr<transport::Endpoint> ep, const KernelRegistry &kernels,
                       MemoryBudget &budget, std::chrono::milliseconds mrsp_timeout,
                       const std::atomic<bool> &stop)
    : kernels_(kernels),
      budget_(budget),
      mrsp_timeout_(mrsp_timeout),
      stop_(stop),
      ep_(std::move(ep)),
      mrsp_buf_(2 * mrsp::kBufferSize) {}

Connection::~Connection() {
  reply_chain_.reset();
  buffer_mrs_.clear();
  for (const Buffer &b : buffers_)
    if (b.addr != nullptr) munmap(b.addr, b.size);
  budget_.release(reserved_);
}

void Connection::run() {
  const std::string peer = ep_->peer();
  try {
    // The MRSP receive is posted before accepting, as the reference NAA does: the client may
    // send its request as soon as the connection is established.
    mrsp_mr_ = ep_->register_memory(mrsp_buf_.data(), mrsp_buf_.size(), false);
    ep_->post_recv(mrsp_buf_.data(), mrsp::kBufferSize, *mrsp_mr_, kMrspRecv);
    ep_->accept(Deadline::after(mrsp_timeout_));
    NAA_LOG_INFO("client %s connected", peer.c_str());
    if (!exchange_memory_regions()) return;
    while (!stop_.load()) {
      transport::Completion c[8];
      size_t n = ep_->wait(c, 8, Deadline::after(std::chrono::milliseconds(kStopCheckMs)));
      for (size_t i = 0; i < n; ++i) {
        if (c[i].kind == transport::CompletionKind::RemoteImm) {
          invoke(c[i].imm);
        } else if (c[i].kind == transport::CompletionKind::Recv) {
          NAA_LOG_WARN("client %s sent a message after MRSP; ignored", peer.c_str());
          post_invocation_recv();
        }
      }
    }
  } catch (const Error &e) {
    if (e.code() == NAA_ERR_CONNECTION)
      NAA_LOG_INFO("client %s: %s (after %" PRIu64 " invocations)", peer.c_str(), e.what(), invocations_);
    else
      NAA_LOG_WARN("client %s: %s; dropping it", peer.c_str(), e.what());
  } catch (const std::exception &e) {
    NAA_LOG_ERROR("client %s: %s; dropping it", peer.c_str(), e.what());
  }
}

bool Connection::exchange_memory_regions() {
  const std::string &peer = ep_->peer();
  Deadline deadline = Deadline::after(mrsp_timeout_);
  size_t received = 0;
  bool got = false;
  while (!got) {
    if (stop_.load()) return false;
    transport::Completion c[4];
    size_t n = ep_->wait(c, 4, Deadline::after(std::chrono::milliseconds(kStopCheckMs)));
    for (size_t i = 0; i < n; ++i)
      if (c[i].kind == transport::CompletionKind::Recv && c[i].context == kMrspRecv) {
        got = true;
        received = c[i].bytes;
      }
    if (!got && deadline.expired()) {
      NAA_LOG_WARN("client %s sent no memory-region request within %ld ms; dropping it",
                   peer.c_str(), static_cast<long>(mrsp_timeout_.count()));
      return false;
    }
  }

  uint8_t *send_buf = mrsp_buf_.data() + mrsp::kBufferSize;
  mrsp::Message msg;
  std::string why;
  uint8_t error_code = 0;
  if (!mrsp::decode(mrsp_buf_.data(), received, msg, &why)) {
    // The reference NAA answers any failure with 0x01; a count above the limit has its own code.
    error_code = why.find("exceeds") != std::string::npos
                     ? static_cast<uint8_t>(mrsp::ErrorCode::TooManyRegions)
                     : static_cast<uint8_t>(mrsp::ErrorCode::NoMemory);
  } else if (msg.type != mrsp::Type::AdvertiseRequest) {
    why = "expected an advertise-request, got message type " + std::to_string(static_cast<int>(msg.type));
    error_code = static_cast<uint8_t>(mrsp::ErrorCode::NoMemory);
  } else if (!allocate(msg.request, &error_code)) {
    why = "cannot allocate the requested regions";
  }
  if (error_code != 0) {
    NAA_LOG_WARN("client %s: bad memory-region request (%s); answering MRSP error 0x%02x (%s)",
                 peer.c_str(), why.c_str(), error_code, mrsp::error_code_name(error_code));
    size_t len = mrsp::encode_error(static_cast<mrsp::ErrorCode>(error_code), send_buf, mrsp::kBufferSize);
    send_mrsp(send_buf, len);
    return false;
  }

  std::vector<mrsp::AdvertEntry> advert;
  std::vector<transport::WriteSegment> outputs;
  const mrsp::RequestEntry *first_parameter = nullptr;
  for (size_t i = 0; i < msg.request.size(); ++i) {
    const mrsp::RequestEntry &e = msg.request[i];
    if (e.flags & mrsp::kInternal) continue;
    const transport::MemoryRegion &mr = *buffer_mrs_[i];
    advert.push_back({mr.remote_addr, mr.rkey, e.size});
    if (first_parameter == nullptr) first_parameter = &e;
    if (e.flags & mrsp::kOutput) outputs.push_back({&mr, 0, e.size, e.host_address, e.host_rkey});
  }
  if (advert.empty()) {
    NAA_LOG_WARN("client %s requested only internal regions; nothing to serve", peer.c_str());
    send_mrsp(send_buf, mrsp::encode_error(mrsp::ErrorCode::NoMemory, send_buf, mrsp::kBufferSize));
    return false;
  }
  // Every reply must end in a write-with-immediate: without outputs it is a zero-length one to
  // the host's region 0 (spec 4.2).
  if (outputs.empty())
    outputs.push_back({buffer_mrs_[0].get(), 0, 0, first_parameter->host_address, first_parameter->host_rkey});
  reply_chain_ = ep_->prepare_writes(outputs, kReplyWrites);
  // Posted before the advertisement, so the first invocation never meets a missing receive.
  post_invocation_recv();
  size_t len = mrsp::encode_advert(advert.data(), advert.size(), send_buf, mrsp::kBufferSize);
  send_mrsp(send_buf, len);
  NAA_LOG_INFO("client %s: %zu regions, %" PRIu64 " bytes allocated", peer.c_str(), advert.size(), reserved_);
  return true;
}

bool Connection::allocate(const std::vector<mrsp::RequestEntry> &request, uint8_t *error_code) {
  uint64_t total = 0;
  for (const mrsp::RequestEntry &e : request) total += e.size;
  if (!budget_.reserve(total)) {
    *error_code = static_cast<uint8_t>(mrsp::ErrorCode::NoMemory);
    return false;
  }
  reserved_ = total;
  for (const mrsp::RequestEntry &e : request) {
    Buffer b;
    b.size = e.size;
    b.flags = e.flags;
    if (e.size > 0) {
      b.addr = mmap(nullptr, e.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (b.addr == MAP_FAILED) {
        *error_code = static_cast<uint8_t>(mrsp::ErrorCode::NoMemory);
        return false;
      }
    }
    buffers_.push_back(b);
    bool internal = (e.flags & mrsp::kInternal) != 0;
    // Internal scratch is never transferred, so it needs no registration; a placeholder keeps
    // buffer_mrs_ indexed like the request.
    buffer_mrs_.push_back(internal ? nullptr : ep_->register_memory(b.addr, b.size, true));
    if (!internal) parameters_.push_back({b.addr, b.size, static_cast<uint8_t>(e.flags)});
  }
  return true;
}

void Connection::send_mrsp(const uint8_t *msg, size_t len) {
  ep_->post_send(msg, len, *mrsp_mr_, kMrspSend);
}

void Connection::post_invocation_recv() {
  if (ep_->immediate_consumes_recv())
    ep_->post_recv(mrsp_buf_.data(), mrsp::kBufferSize, *mrsp_mr_, kInvocationRecv);
}

void Connection::invoke(uint32_t v) {
  const std::string &peer = ep_->peer();
  if (v == 0) {
    // The host's "could not prepare an invocation" signal: no kernel may run (spec 4.1).
    NAA_LOG_WARN("client %s signalled a host-side error (immediate 0); no kernel run", peer.c_str());
    post_invocation_recv();
    return;
  }
  uint8_t code = imm::function_code(v);
  uint8_t rc;
  const naa_kernel *kernel = imm::is_start(v) && code != 0 ? kernels_.find(code) : nullptr;
  if (kernel == nullptr) {
    // AMBIGUOUS (spec 9.5): the reference NAA stays silent and the host hangs; we answer with
    // an application error code instead, as the spec recommends.
    NAA_LOG_WARN("client %s invoked unknown function code %u; answering 0x%02x", peer.c_str(),
                 static_cast<unsigned>(code), NAA_KERNEL_RC_UNKNOWN_FUNCTION);
    rc = NAA_KERNEL_RC_UNKNOWN_FUNCTION;
  } else {
    rc = kernel->run(parameters_.data(), parameters_.size(), imm::user_data(v) >> 8);
    NAA_LOG_DEBUG("client %s: kernel %u (%s) returned 0x%02x", peer.c_str(),
                  static_cast<unsigned>(code), kernel->name, rc);
  }
  ++invocations_;
  post_invocation_recv();  // before the reply, as the spec recommends (6, NAA table)
  ep_->post_writes(*reply_chain_, imm::naa_reply(rc));
}

}  // namespace naa::server

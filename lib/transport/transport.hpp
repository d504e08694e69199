// SPDX-License-Identifier: BSD-3-Clause
// The transport interface: everything libnaa and naa-server need from a fabric, and nothing
// more (in the spirit of Mercury's na_class_ops): connect or accept, register memory, post
// sends/receives for MRSP, post a prepared chain of writes ending in a write-with-immediate,
// poll and wait for completions with a deadline, disconnect. Both sides of the protocol use it,
// so every transport serves the client and the software NAA alike.
//
// Errors are reported by throwing naa::Error (NAA_ERR_CONNECTION when the peer is gone,
// NAA_ERR_TRANSPORT for a failed operation, NAA_ERR_NO_RESOURCES for registration failures).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "deadline.hpp"
#include "error.hpp"

namespace naa::transport {

// A registered buffer. Deregistered when destroyed; must not outlive its endpoint.
class MemoryRegion {
 public:
  virtual ~MemoryRegion() = default;
  void *addr = nullptr;
  size_t length = 0;
  uint32_t rkey = 0;         // the key a peer names in its writes (MRSP's field is 32 bits)
  uint64_t remote_addr = 0;  // the address a peer writes to for `addr` (VA or 0-based offset)
};

// One RDMA write of a chain: `length` bytes at `local` + `offset` to remote_addr/rkey.
struct WriteSegment {
  const MemoryRegion *local;
  size_t offset;
  size_t length;
  uint64_t remote_addr;
  uint32_t rkey;
};

// A chain of writes prepared once (descriptors built, large segments split to the transport's
// best size) and posted many times: the last write carries the immediate and the solicited bit.
class WriteChain {
 public:
  virtual ~WriteChain() = default;
};

enum class CompletionKind : uint8_t {
  Send,       // our MRSP send completed
  Recv,       // an MRSP message arrived (`bytes` long)
  Writes,     // a posted chain has completed locally
  RemoteImm,  // the peer's write-with-immediate arrived: `imm` (host order), `bytes` of its last
              // write
};

struct Completion {
  CompletionKind kind;
  uint64_t context;  // what the caller passed when posting (0 for RemoteImm)
  size_t bytes;
  uint32_t imm;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;  // disconnects and releases the endpoint's resources

  // Server side only: complete (accept) or refuse (reject) a connection request. The accept
  // carries `private_data` (at most 56 bytes) to the client: naa-server names itself there
  // (see server_identity below); the reference NAAs send none.
  virtual void accept(Deadline deadline, const std::string &private_data = {}) = 0;
  virtual void reject(const char *reason) = 0;
  // Whether the accept's answer leaves without a word from the client (libfabric's tcp: the
  // connection response; over shm our accept message): begin_accept() then sends it at once,
  // without waiting, and the accept() that follows, on any thread, only waits for the
  // connection. naa-server begins on its listening thread, before handing the connection to
  // another.
  virtual bool can_begin_accept() const { return false; }
  virtual void begin_accept(const std::string &private_data) { (void)private_data; }

  // `remote_write`: the peer may write into the buffer; otherwise local use only.
  virtual std::unique_ptr<MemoryRegion> register_memory(void *addr, size_t length,
                                                        bool remote_write) = 0;

  virtual void post_recv(void *buf, size_t length, const MemoryRegion &mr, uint64_t context) = 0;
  // Sent with the solicited-event bit, as MRSP requires.
  virtual void post_send(const void *buf, size_t length, const MemoryRegion &mr,
                         uint64_t context) = 0;

  // A receive for the peer's write-with-immediate is needed only where the fabric consumes one
  // (verbs always does; libfabric providers without FI_RX_CQ_DATA do not).
  virtual bool immediate_consumes_recv() const = 0;

  // `segments` must not be empty; a zero-length segment is a valid write (the spec uses one
  // when an immediate has no data to carry).
  virtual std::unique_ptr<WriteChain> prepare_writes(const std::vector<WriteSegment> &segments,
                                                     uint64_t context) = 0;
  // Posts the chain; its completion is one CompletionKind::Writes with the chain's context.
  virtual void post_writes(WriteChain &chain, uint32_t imm) = 0;
  // The same in two steps, for pacing (doc/protocol.md §4.4): the data writes now, the final
  // write-with-immediate once the guard has passed, posted by whoever drives progress then.
  // post_final_write follows post_data_writes of the same chain, nothing posted between.
  virtual void post_data_writes(WriteChain &chain) = 0;
  virtual void post_final_write(WriteChain &chain, uint32_t imm) = 0;

  // Non-blocking: up to `max` completions, 0 if none. Throws when the peer is gone.
  virtual size_t poll(Completion *out, size_t max) = 0;
  // Blocks until at least one completion or the deadline (then returns 0).
  virtual size_t wait(Completion *out, size_t max, Deadline deadline) = 0;
  // Looks at the connection now (poll() does so only every so many empty polls): throws
  // NAA_ERR_CONNECTION when the peer is gone. For a caller about to post after a pause, so
  // that a request goes to no peer that is known to be dead.
  virtual void check_connection() {}

  // For a thread that sleeps on many endpoints at once (NAA_PROGRESS=thread): a descriptor
  // that becomes readable when poll() may find a completion, or -1 when there is none.
  // arm_wait() readies it and looks at the connection (throws when the peer is gone); false
  // means a completion may already be waiting. A poll() after arming that finds nothing
  // leaves the descriptor armed: sleeping on it is then safe.
  virtual int wait_fd() const = 0;
  virtual bool arm_wait() = 0;
  // Whether poll() only reads memory (shm), not a system call (tcp): a poller that yields the
  // core between polls does so less often then.
  virtual bool polls_memory() const { return false; }

  // A descriptor whose readability ends wait() early, returning 0: naa-server's stop (an
  // eventfd written once and never read, so it stays readable). -1: none. Other waits (accept,
  // the transport's own) do not look at it: readable for good, it would turn them into spins.
  void interrupt_on(int fd) { interrupt_fd_ = fd; }
  // Whether wait() now sleeps on descriptors alone, to its deadline: a completion, the peer
  // leaving and the interrupt descriptor each wake it. Where it does not (a nap, or slices of
  // a blocking read), a caller that must see a stop in time waits in slices itself.
  virtual bool wait_sleeps_through() const { return false; }

  virtual const std::string &peer() const = 0;  // "host:port", for log lines
  // The process of a same-host peer, as its shared-memory endpoint names it (naa-server's
  // --shm pgid asks it); 0 where the transport names none.
  virtual pid_t peer_pid() const { return 0; }
  // The CPU on which the peer's thread last went to sleep or polled on this connection, where
  // a same-host peer publishes it (a libnaa shm endpoint's bell page), -1 where that is unknown.
  // A hint, stale as soon as the scheduler moves that thread: naa-server's connection threads
  // sleep there while the node is oversubscribed.
  virtual int peer_cpu() const { return -1; }
  // Whether the peer's thread is awake on the caller's CPU, where a same-host peer publishes
  // its CPU while it polls (a libnaa shm endpoint's bell page); false where that is unknown.
  // Two such threads take turns on one CPU, each yielding while it polls: they count as one
  // for the node's load (progress/busy_node.hpp), not as one more thread kept from a CPU.
  virtual bool peer_beside() const { return false; }

  // The private data the peer sent while connecting: its connection request on the server
  // side, its accept on the client side (empty if none; verbs pads it with zeros to the
  // fabric's size).
  virtual const std::string &peer_data() const = 0;

  // How many bytes of private data this endpoint's connection request or accept can carry for
  // the memory-region exchange (doc/protocol.md §3.4), or 0 where it carries none: verbs
  // (rdma_cm's 56 bytes, and peers that are the reference NAAs) and libfabric's providers
  // other than tcp and shm (a registration may pin memory there).
  virtual size_t connect_data_room() { return 0; }

 protected:
  int interrupt_fd_ = -1;
};

// A connection the NAA refused (its reject): an answer, where the other connection failures are
// not, so NAA_TRANSPORT=auto does not try another path after it, unless the NAA refused this
// path only (path_only: naa-server --shm pgid, which serves other processes over the network).
class Refused : public Error {
 public:
  Refused(naa_error_t code, const std::string &what, bool path_only = false)
      : Error(code, what), path_only_(path_only) {}
  bool path_only() const { return path_only_; }

 private:
  bool path_only_;
};

// The reason naa-server's shm listener gives a process outside its process group (--shm pgid).
inline constexpr char kShmGroupOnly[] = "naa-server: shm is served to its own process group only";

// The requests a listener returned, and how many of them it found while polling for them
// (request_pace.hpp), not after a sleep: for tests.
struct ListenerCounts {
  unsigned long requests = 0;
  unsigned long polled = 0;
  // Wake-ups that brought no request (ofi+tcp: a connection's socket, accepted by libfabric),
  // for naa-server's sweep of connections that send nothing (handshake_sweeper.hpp).
  unsigned long stirs = 0;
  // Sleeps that a client's ring ended (ofi+shm: its bell, shm/bell.hpp).
  unsigned long rung = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  virtual uint16_t port() const = 0;  // the bound port (useful after listening on port 0)
  // The next connection request, not yet accepted, or nullptr: when the deadline passes, when
  // the interrupt descriptor is readable, or (ofi+tcp) once a wake-up that brought a
  // connection's socket but no request is over (counted in ListenerCounts::stirs), so that
  // naa-server's sweep of silent connections can look at it.
  virtual std::unique_ptr<Endpoint> next_request(Deadline deadline) = 0;
  virtual ListenerCounts counts() const { return {}; }

  // A descriptor whose readability ends next_request early (naa-server's stop, and its own
  // wake-ups: an epoll set of both); -1: none. True when next_request then sleeps on
  // descriptors alone to its deadline; false where it naps or slices its sleeps anyway (then
  // a caller that must see a stop in time passes deadlines in slices itself).
  bool interrupt_on(int fd) {
    interrupt_fd_ = fd;
    return fd >= 0 && sleeps_through();
  }

 protected:
  virtual bool sleeps_through() const { return false; }
  int interrupt_fd_ = -1;
};

// Called by Transport::connect once the endpoint exists and before its connection request
// leaves, where that request has `room` bytes beyond its private data: what it returns rides
// along (naa_create's memory-region request, registered on `ep` meanwhile; "" for nothing).
using BeforeConnect = std::function<std::string(Endpoint &ep, size_t room)>;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char *name() const = 0;
  // `local_ip` (may be empty) pins the source address, like the reference's NAA_LOCAL_IP;
  // `private_data` travels with the connection request (at most 56 bytes), and what
  // `before_connect` adds where the endpoint has room for it.
  virtual std::unique_ptr<Endpoint> connect(const std::string &host, uint16_t port,
                                            const std::string &local_ip, Deadline deadline,
                                            const std::string &private_data = {},
                                            const BeforeConnect &before_connect = {}) = 0;
  virtual std::unique_ptr<Listener> listen(const std::string &host, uint16_t port) = 0;
  // Why the last connect() did not go over a same-host transport (auto: none serves the NAA,
  // or shared memory gave way to the network), or "" when it did or the transport has no choice.
  virtual std::string detour() const { return {}; }
};

// The NUL-terminated ASCII text at the start of a peer's private data (a reject reason such as
// the reference NAA's "Server overlad"), or "" when it is not printable text.
std::string private_data_text(const void *data, size_t length);

// What naa-server puts in its accept's private data, NUL-terminated: a client that finds it
// talks to a libnaa server, which keeps a receive posted ahead and polls before it sleeps, so
// it needs no pacing (doc/protocol.md §4.4). Reference NAAs send no private data.
inline constexpr char kServerIdentity[] = "libnaa-server/1";
bool is_libnaa_server(const std::string &peer_data);

// What a transport takes from the settings of the handle it serves (Settings::transport_options,
// or options_from(config::params::Values) for a program without one), passed by value: nothing
// in lib/transport reads the environment or a thread's state, so an endpoint built on any thread
// honours naa_attr_t.params.
struct TransportOptions {
  // NAA_PROGRESS=provider: asks libfabric for FI_PROGRESS_AUTO data progress; a provider that
  // cannot give it is not chosen. Verbs devices progress by themselves (Soft-RoCE on the
  // posting thread and in the kernel) and ignore it.
  bool provider_progress = false;
  // NAA_RDMA_DEVICE: the RDMA device verbs connects from when a connection names no local_ip;
  // empty: rdma_cm's choice.
  std::string device;
  // NAA_OFI_WRITE_CHUNK: libfabric writes longer than this are split (SIZE_MAX: never).
  size_t write_chunk = SIZE_MAX;
  // How the waits of a connection's setup (for the peer's acceptance or the client's request)
  // are spent: polling while the answer is due by the wait plan (wait_plan.hpp: twice
  // as long as the last one took, `setup_spin` at least; waking a sleeping thread costs more
  // on a virtual machine than the answer takes on loopback, doc/performance.md), then asleep.
  // NAA_SPIN_US; `setup_sleeps` (NAA_PROGRESS=block): asleep at once.
  std::chrono::microseconds setup_spin{100};
  bool setup_sleeps = false;
  // NAA_SHM_IDLE_ENDPOINTS: how many ofi+shm endpoints of ended connections a process keeps
  // for its next ones, per side (ofi/ofi_idle_endpoint.hpp). None unless asked: handles and
  // naa-server ask through Settings (default 2); raw users of the transport keep none.
  size_t idle_endpoints = 0;
  // Under auto: the choice prepare_transport made for `prepared_for` (host:port), taken by the
  // first connection there instead of deciding again (verbs' reach is an address and route
  // resolution). Later connections, reconnections included, decide anew.
  std::string prepared_choice;
  std::string prepared_for;
};

// Parses a transport name as in NAA_TRANSPORT ("ofi+tcp", "ofi", "auto", "verbs", ...) and opens
// it. Throws NAA_ERR_CONFIG for an unknown name, NAA_ERR_UNSUPPORTED when not compiled in.
std::unique_ptr<Transport> open_transport(const std::string &name,
                                          const TransportOptions &options = {});

// Does once per process what the first connection over transport `name` to `host`:`port` would
// otherwise pay for before it could try: libfabric's initialisation of its providers (ofi.hpp).
// Under auto, only the transport auto chooses for that NAA is prepared (and only the modules it
// tried on the way are loaded; `deadline` bounds that look): a process that reaches its NAA
// over verbs never loads libfabric. naa_create calls it before its NAA_CONNECT_TIMEOUT starts,
// so that a short one bounds the connection, not that. Returns the transport prepared: auto's
// choice (empty where none reaches the NAA: the connection's own attempt says why), else `name`;
// open_transport takes it back through TransportOptions::prepared_choice.
std::string prepare_transport(const std::string &name, const std::string &host, uint16_t port,
                              const std::string &local_ip, const std::string &device,
                              Deadline deadline);

// "host:port", as TransportOptions::prepared_for names a destination.
std::string destination_key(const std::string &host, uint16_t port);

// The transports a server started with `name` listens on at `host`: "auto" means every one
// that can serve there (ofi+tcp, ofi+shm where libfabric has it, and verbs where an RDMA device
// serves `host`), in that order, so that with port 0 the TCP port, the scarcer one, is chosen
// first and names the shm listener too; any other name itself.
std::vector<std::string> listen_transports(const std::string &name, const std::string &host);

// The name the environment gives: NAA_TRANSPORT, or "auto".
std::string transport_from_environment();

// What NAA_TRANSPORT=auto uses to reach `host`:`port`, a policy over the registry's rows
// (registry.hpp) built here: "ofi+shm" when `host` is this host and a server of this user
// listens with shm for `port` (and no `local_ip` pins a network path), "verbs" when an RDMA
// device routes there (rdma_cm resolves address and route before `deadline`), else "ofi+tcp";
// NAA_ERR_UNSUPPORTED where no transport built reaches it.
std::string auto_transport_for(const std::string &host, uint16_t port, const std::string &local_ip,
                               const std::string &device, Deadline deadline);

// What auto uses when shared memory is not an option or did not connect in time: "verbs" when
// an RDMA device routes to `host`, else "ofi+tcp" (NAA_ERR_UNSUPPORTED where neither is built).
std::string network_transport_for(const std::string &host, const std::string &local_ip,
                                  const std::string &device, Deadline deadline);

}  // namespace naa::transport

// SPDX-License-Identifier: BSD-3-Clause
// The one table of transports, as Mercury's list of network plugins: each transport is one row
// (registry.cpp) naming what it answers to, and an Entry that its own folder defines with what
// it does. Everything that chooses, opens or lists a transport asks this table: the transport
// name grammar is parsed here alone, NAA_TRANSPORT=auto is a policy over the rows
// (select.cpp), naa-info lists the rows, and naa-server asks a transport's capabilities
// instead of comparing its name.
//
// A new transport is a folder under lib/transport with its Entry and one row in registry.cpp;
// a program may add rows of its own with add_transport (the unit tests' fake transport does).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/params.hpp"
#include "deadline.hpp"
#include "transport/transport.hpp"

namespace naa::transport {

// Where NAA_TRANSPORT=auto is asked to connect to.
struct Destination {
  std::string host;
  uint16_t port = 0;
  std::string local_ip;  // NAA_LOCAL_IP: pins a network path ("" none)
  std::string device;    // NAA_RDMA_DEVICE ("" none)
  Deadline deadline;
};

// What a transport is to naa-server, by name rather than by comparing names.
struct Capabilities {
  // It serves processes of this host only (shared memory): naa-server's --shm governs it. The
  // row says so (Registration::same_host), not the entry.
  bool same_host = false;
  // Each of its connections is a TCP socket of this process, which may be silent: naa-server's
  // handshake sweep (--handshake-timeout) watches them.
  bool tcp_connections = false;
};

// What a transport's folder provides. `variant` is what follows "+" in the name ("tcp" of
// "ofi+tcp"), "" for the bare name.
class Entry {
 public:
  virtual ~Entry() = default;
  // Throws naa::Error (NAA_ERR_UNSUPPORTED where the variant cannot be had here).
  virtual std::unique_ptr<Transport> open(const std::string &variant,
                                          const TransportOptions &options) const = 0;
  // For auto: the full name to connect to `dest` with, or "" where this transport does not
  // reach it (`dest.deadline` bounds the look, e.g. rdma_cm's route resolution). Asked only of
  // a destination that the row's may_reach admitted and, for a same-host row, that is this
  // host: it adds what only the loaded module can tell, and repeats none of those looks (each
  // is system calls in every naa_create).
  virtual std::string reaches(const Destination &dest) const = 0;
  // For a server under auto: the full name to listen on `host` with, or "" (with a log line
  // saying why not).
  virtual std::string listens(const std::string &host) const = 0;
  virtual Capabilities capabilities(const std::string &variant) const {
    (void)variant;
    return {};
  }
  // Why it cannot be used in this process although built ("" when it can): naa-info says so.
  virtual std::string unusable() const { return ""; }
  // Lines for naa-info under the row (library version, providers, devices).
  virtual std::vector<std::string> details() const { return {}; }
  // Pays now what the first connection would otherwise pay before it could try
  // (prepare_transport).
  virtual void prepare() const {}
  // A warning for a server that listens with `variant` ("" none): naa-server prints it.
  virtual std::string listen_warning(const std::string &variant) const {
    (void)variant;
    return "";
  }
};

// One row of the table.
struct Registration {
  const char *name;         // the exact name it answers ("verbs", "ofi+shm"), or the family
  bool variants;            // it answers name+VARIANT too ("ofi+tcp" for "ofi")
  const char *grammar;      // the names it answers, for messages ("ofi, ofi+PROVIDER")
  const char *description;  // one line for naa-info
  const char *build_hint;   // how to get it where it was not built ("configure --with-verbs")
  // auto's preference when connecting, lower first; rows listen under auto in table order
  // (the first one chooses the port when asked for port 0).
  int connect_rank;
  // The module its entry is loaded from ("ofi": libnaa-ofi.so, module.hpp), nullptr where the
  // entry is part of the program.
  const char *module;
  // nullptr: not built. May throw naa::Error (NAA_ERR_UNSUPPORTED: its module cannot be
  // loaded).
  const Entry *(*entry)();
  // Its connections serve processes of this host only (shared memory): auto tries it only for
  // an NAA on this host and never as the network path.
  bool same_host = false;
  // Whether it may reach `dest` at all, judged by libnaa without the row's entry (no RDMA
  // device on this machine, say): auto loads a row's module only for a destination this
  // admits, so that a process loads the modules of what it tries, not of every row. nullptr:
  // any destination.
  bool (*may_reach)(const Destination &dest) = nullptr;
  // Its own runtime parameters: the parameter registry (config/params.hpp) lists them after
  // libnaa's own, so naa-info --params and naa(7) show them whether the transport's module is
  // there or not (read and checked like every other parameter, passed on in TransportOptions).
  std::vector<config::params::Param> params = {};
};

// Every row, in table order (copies).
std::vector<Registration> registrations();

// Every row, in table order, where it stays for the life of the process: what each naa_create
// reads (parse_name, auto's choice) without copying rows, their strings and parameters.
std::vector<const Registration *> registration_rows();

// Appends a row (before the first transport is opened; a name already in the table is
// NAA_ERR_CONFIG).
void add_transport(const Registration &row);

// For a program that links a transport's code itself (a test of its internals): the row named
// `name` takes its entry from the program instead of from its module, so that the transport
// state the program reads is that of the connections it opens. Before the first transport is
// opened, as add_transport: the row changes in place. NAA_ERR_CONFIG for a name not in the
// table.
void use_linked_entry(const std::string &name, const Entry *(*entry)());

// A transport name as NAA_TRANSPORT, naa_attr_t.transport and naa-server -t give it.
struct ParsedName {
  bool is_auto = false;
  const Registration *row = nullptr;  // the row that answers it (none for auto)
  std::string variant;                // after "+" for a family's row, else ""
};

// Parses `name` against the table: an exact name first, then a family's name+VARIANT.
// "auto" is auto. Anything else is NAA_ERR_CONFIG naming `what` ("NAA_TRANSPORT") and every
// name the table answers.
ParsedName parse_name(const std::string &name, const std::string &what = "NAA_TRANSPORT");

// The row's Entry, or NAA_ERR_UNSUPPORTED "transport NAME: not built (HINT)" or why its module
// cannot be loaded.
const Entry &entry_of(const ParsedName &parsed, const std::string &name);

// The row's Entry, or nullptr where it is not built or its module cannot be loaded (`why`
// says which, as naa-info shows it); for auto, which skips such rows.
const Entry *usable_entry(const Registration &row, std::string *why = nullptr);

// The capabilities of the transport named `name` (not auto); none for a name not usable.
Capabilities capabilities_of(const std::string &name);

// The warning a server listening with `name` prints ("" none).
std::string listen_warning_of(const std::string &name);

}  // namespace naa::transport

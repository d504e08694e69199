// SPDX-License-Identifier: BSD-3-Clause
// The runtime parameters, declared once (name, type, default, documentation, parser): naa(7)
// RUNTIME PARAMETERS documents them, `naa-info --params` lists them with their values, and
// test/params-agree.sh keeps the two in agreement. Each naa_create reads them once into Values
// (from the environment, with naa_attr_t.params on top), which its Session, transport and
// resolver then use (the transport through TransportOptions): no other code reads an NAA_*
// variable.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "naa.h"
#include "config/options.hpp"
#include "transport/transport.hpp"

namespace naa::config::params {

enum class Source { Default, Environment, Attr, Field };
// "default", "environment", "naa_attr_t.params", "naa_attr_t field"
const char *source_name(Source source);

struct Param {
  const char *name;
  const char *type;      // what the value is, for naa-info --params
  const char *fallback;  // the default, as text ("" : none)
  const char *doc;       // one line
  // Throws Error(NAA_ERR_CONFIG) naming `source` when `text` (not empty) is malformed; null
  // for parameters whose user checks them (NAA_SPEC, NAA_TRANSPORT: only when used).
  void (*check)(const std::string &text, const std::string &source);
  bool secret = false;  // its value is not shown (naa-info --params prints its length only)
  // The transport whose registry row registers it (transport/registry.hpp: its own runtime
  // parameters), nullptr for libnaa's own. The rows are part of libnaa, so a transport's
  // parameters are listed and checked whether or not its module is there.
  const char *transport = nullptr;
};
const std::vector<Param> &registry();

class Values {
 public:
  // Every parameter from the environment (an empty variable counts as unset), then the
  // "NAME=value" strings of `overrides` (a NULL-terminated list, naa_attr_t.params; may be
  // null) on top. Throws Error: NAA_ERR_INVALID_ARGUMENT for an override that names no
  // parameter or is not NAME=value.
  static Values read(const char *const *overrides = nullptr);
  // Runs every parameter's parser: Error(NAA_ERR_CONFIG) for a malformed variable,
  // NAA_ERR_INVALID_ARGUMENT for a malformed override, naming it.
  void check() const;
  // check() for one parameter; "" when it is well-formed, else why not.
  std::string problem(size_t index) const;

  // A value an naa_attr_t field gives (Source::Field): it wins over the environment and
  // attr->params, whose value for `name` is then neither read nor checked. field: its name in
  // naa_attr_t, for errors.
  void set_from_field(const char *name, const std::string &text, const char *field);

  const std::string &text(const char *name) const;  // the value, or its default
  Source source(const char *name) const;
  const std::string &text(size_t index) const { return entries_[index].text; }
  Source source(size_t index) const { return entries_[index].source; }

  std::chrono::milliseconds timeout() const;
  std::chrono::milliseconds connect_timeout() const;
  unsigned reconnect() const;
  Progress progress() const;
  std::chrono::microseconds pacing() const;
  bool pacing_adaptive() const;
  size_t write_chunk() const;
  std::string auth_key() const;  // NAA_AUTH_KEY, else NAA_AUTH_KEY_FILE's first line, else ""
  // What a transport takes from these values (NAA_PROGRESS=provider, NAA_RDMA_DEVICE,
  // NAA_OFI_WRITE_CHUNK): Settings::transport_options, and programs that open a transport
  // without a handle (naa-server, naa-bench --raw).
  transport::TransportOptions transport_options() const;

 private:
  struct Entry {
    std::string text;
    Source source = Source::Default;
    const char *field = nullptr;  // for Source::Field
  };
  size_t index(const char *name) const;
  std::string source_text(size_t index) const;  // names the value's origin in errors
  // The value of `name` as `parse` reads it (parse(text, origin) throws naming the origin).
  template <class Parse>
  auto parsed(const char *name, Parse parse) const {
    const size_t i = index(name);
    return parse(entries_[i].text, source_text(i));
  }
  std::vector<Entry> entries_;  // in registry() order
};

}  // namespace naa::config::params

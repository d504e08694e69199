// SPDX-License-Identifier: BSD-3-Clause
// The runtime parameters, declared once (name, type, default, documentation, parser): naa(7)
// RUNTIME PARAMETERS documents them, `naa-info --params` lists them with their values, and
// test/params-agree.sh keeps the two in agreement. Each layer declares its own in a Table: this
// one the parameters of libnaa as a whole (deadlines, progress, pacing, keys, diagnostics),
// rm/params.hpp the resolver's, transport/params.hpp the transport layer's and each transport
// row's, and composes them all into the one table of every parameter. Each naa_create reads
// that table once into Values (from the environment, with naa_attr_t.params on top), which its
// Session, transport and resolver then use: no other code reads an NAA_* variable.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "naa.h"
#include "config/options.hpp"

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
// A layer's parameters, or every one (transport::parameters()), in the order naa-info lists
// them. Values keep the address of the table they were read from: a Table lives for the
// process (a function's static).
using Table = std::vector<Param>;

// The parameters of libnaa as a whole, which the layers below the resolver read too (the log
// level, NAA_ENERGY).
const Table &own();

class Values {
 public:
  Values();  // of no table: what a Settings holds before it is resolved
  // Every parameter of `table` from the environment (an empty variable counts as unset), then
  // the "NAME=value" strings of `overrides` (a NULL-terminated list, naa_attr_t.params; may be
  // null) on top. Throws Error: NAA_ERR_INVALID_ARGUMENT for an override that names no
  // parameter of `table` or is not NAME=value.
  static Values read(const Table &table, const char *const *overrides = nullptr);
  const Table &table() const { return *table_; }
  // Runs every parameter's parser: Error(NAA_ERR_CONFIG) for a malformed variable,
  // NAA_ERR_INVALID_ARGUMENT for a malformed override, naming it.
  void check() const;
  // check() for one parameter; "" when it is well-formed, else why not.
  std::string problem(size_t index) const;

  // A value an naa_attr_t field gives (Source::Field): it wins over the environment and
  // attr->params, whose value for `name` is then neither read nor checked. field: its name in
  // naa_attr_t, for errors.
  void set_from_field(const char *name, const std::string &text, const char *field);

  // The value, or its default; NAA_ERR_INTERNAL for a name not in table().
  const std::string &text(const char *name) const;
  Source source(const char *name) const;
  const std::string &text(size_t index) const { return entries_[index].text; }
  Source source(size_t index) const { return entries_[index].source; }

  std::chrono::milliseconds timeout() const;
  std::chrono::milliseconds connect_timeout() const;
  unsigned reconnect() const;
  Progress progress() const;
  std::chrono::microseconds pacing() const;
  bool pacing_adaptive() const;
  std::string auth_key() const;  // NAA_AUTH_KEY, else NAA_AUTH_KEY_FILE's first line, else ""
  // The value of `name` as `parse` reads it (parse(text, origin) throws naming the origin).
  template <class Parse>
  auto parsed(const char *name, Parse parse) const {
    const size_t i = index(name);
    return parse(entries_[i].text, source_text(i));
  }

 private:
  struct Entry {
    std::string text;
    Source source = Source::Default;
    const char *field = nullptr;  // for Source::Field
  };
  size_t index(const char *name) const;
  std::string source_text(size_t index) const;  // names the value's origin in errors
  explicit Values(const Table &table) : table_(&table) {}
  const Table *table_;
  std::vector<Entry> entries_;  // in table() order
};

}  // namespace naa::config::params

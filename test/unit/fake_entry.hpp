// SPDX-License-Identifier: BSD-3-Clause
// The fake transport (fake_transport.hpp) as a registry entry (transport/registry.hpp), as a
// transport's folder defines one: NAA_TRANSPORT=fake opens it, and auto chooses it for port
// kPort on any host, ahead of every built-in transport (its row's connect rank is lowest).
// Every connection goes to one scripted NAA, `peer()`.
#pragma once

#include "fake_transport.hpp"
#include "transport/registry.hpp"

namespace naa::fake {

class Entry final : public transport::Entry {
 public:
  static constexpr uint16_t kPort = 1;
  static std::shared_ptr<Peer> peer() {
    static const auto p = std::make_shared<Peer>();
    return p;
  }
  std::unique_ptr<transport::Transport> open(const std::string &,
                                             const transport::TransportOptions &) const override {
    return std::make_unique<Transport>(peer());
  }
  std::string reaches(const transport::Destination &d) const override {
    return d.port == kPort ? "fake" : "";
  }
  std::string listens(const std::string &) const override { return ""; }
  std::vector<std::string> details() const override { return {"a scripted NAA in this process"}; }
};

inline const transport::Entry *entry() {
  static const Entry e;
  return &e;
}

// The row a program adds to the registry's table (transport::add_transport) for it.
inline const transport::Registration kRow = {"fake",
                                             true,
                                             "fake, fake+VARIANT",
                                             "the unit tests' scripted NAA",
                                             "test/unit",
                                             -1,
                                             nullptr,
                                             entry,
                                             false,
                                             nullptr};

}  // namespace naa::fake

// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/regions.hpp"

#include <string>

#include "error.hpp"
#include "protocol/mrsp.hpp"

namespace naa::protocol {
namespace {

[[noreturn]] void invalid(const std::string &what) {
  throw Error(NAA_ERR_INVALID_ARGUMENT, what);
}

void check_param(const naa_param_t &p, const char *kind, size_t i) {
  std::string name = std::string(kind) + "[" + std::to_string(i) + "]";
  if (p.addr == nullptr) invalid(name + ".addr is NULL");
  if (p.size == 0) invalid(name + ".size is 0");
  if (p.size > UINT32_MAX)
    invalid(name + ".size " + std::to_string(p.size) + " exceeds the protocol's 4 GiB - 1 limit");
}

}  // namespace

std::vector<Region> layout_regions(const naa_param_t *inputs, size_t n_inputs,
                                   const naa_param_t *outputs, size_t n_outputs) {
  if (n_inputs == 0)
    invalid("at least one input is required (the last input write starts the kernel)");
  if (n_outputs == 0) invalid("at least one output is required (the NAA's reply is a write)");
  if (inputs == nullptr) invalid("inputs is NULL");
  if (outputs == nullptr) invalid("outputs is NULL");
  if (n_inputs > mrsp::kMaxRequestEntries || n_outputs > mrsp::kMaxRequestEntries)
    invalid("more than " + std::to_string(mrsp::kMaxRequestEntries) + " inputs or outputs");

  std::vector<Region> regions;
  regions.reserve(n_inputs + n_outputs);
  for (size_t i = 0; i < n_inputs; ++i) {
    check_param(inputs[i], "inputs", i);
    for (const Region &r : regions)
      if (r.addr == inputs[i].addr)
        invalid("inputs[" + std::to_string(i) + "] repeats an earlier input buffer");
    uint8_t flags = mrsp::kInput | (inputs[i].single_send ? mrsp::kSingleSend : 0);
    regions.push_back({inputs[i].addr, static_cast<uint32_t>(inputs[i].size), flags});
  }
  for (size_t o = 0; o < n_outputs; ++o) {
    check_param(outputs[o], "outputs", o);
    Region *same = nullptr;
    for (Region &r : regions)
      if (r.addr == outputs[o].addr) same = &r;
    if (same == nullptr) {
      regions.push_back({outputs[o].addr, static_cast<uint32_t>(outputs[o].size), mrsp::kOutput});
    } else if (same->flags & mrsp::kOutput) {
      invalid("outputs[" + std::to_string(o) + "] repeats an earlier output buffer");
    } else if (same->size != outputs[o].size) {
      invalid("outputs[" + std::to_string(o) + "] is an in-place buffer but its size " +
              std::to_string(outputs[o].size) + " differs from the input's " +
              std::to_string(same->size));
    } else {
      same->flags |= mrsp::kOutput;
    }
  }
  if (regions.size() > mrsp::kMaxRequestEntries)
    invalid(std::to_string(regions.size()) + " distinct buffers exceed the protocol's " +
            std::to_string(mrsp::kMaxRequestEntries) + " regions");
  return regions;
}

}  // namespace naa::protocol

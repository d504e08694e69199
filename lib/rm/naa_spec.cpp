// SPDX-License-Identifier: BSD-3-Clause
#include "naa_spec.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/mrsp.hpp"
#include "config/number.h"

namespace naa::rm {
namespace {

constexpr std::string_view kSpace = " \t\n\v\f\r";

std::string_view trim(std::string_view s) {
  const size_t first = s.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kSpace) - first + 1);
}

bool parse_number(std::string_view text, unsigned long min, unsigned long max,
                  unsigned long &value) {
  uint64_t v = 0;
  if (naa_parse_number(text.data(), text.size(), min, max, &v) != 0) return false;
  value = static_cast<unsigned long>(v);
  return true;
}

std::string quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (size_t at; (at = text.find(separator)) != std::string_view::npos; text.remove_prefix(at + 1))
    parts.push_back(text.substr(0, at));
  parts.push_back(text);
  return parts;
}

// Returns an empty string on success, else the problem.
std::string parse_chunk(std::string_view chunk, NaaEntry &entry) {
  std::string_view host;
  std::vector<std::string_view> fields;  // those after the host
  if (chunk.front() == '[') {
    // The brackets let an IPv6 address keep its colons.
    const size_t close = chunk.find(']');
    if (close == std::string_view::npos) return "IPv6 address lacks the closing ']'";
    if (chunk.substr(close + 1, 1) != ":") return "expected ':' after ']'";
    host = chunk.substr(1, close - 1);
    fields = split(chunk.substr(close + 2), ':');
  } else {
    fields = split(chunk, ':');
    host = fields.front();
    fields.erase(fields.begin());
  }
  if (fields.size() != 3)
    return "has " + std::to_string(fields.size() + 1) +
           " fields, expected <host>:<port>:<fncode>:<n_inputs> (IPv6 addresses in brackets)";

  if (host.empty()) return "host is empty";
  if (host.find_first_of(" \t\n\v\f\r[]") != std::string_view::npos)
    return "host " + quoted(host) + " contains whitespace or a bracket";

  unsigned long port = kDefaultPort, function_code = 0, n_inputs = 0;
  if (!fields[0].empty() && !parse_number(fields[0], 1, 65535, port))
    return "port " + quoted(fields[0]) + " is not a number 1..65535";
  if (!parse_number(fields[1], 1, 127, function_code))
    return "fncode " + quoted(fields[1]) + " is not a number 1..127";
  if (!parse_number(fields[2], 1, protocol::mrsp::kMaxRequestEntries, n_inputs))
    return "n_inputs " + quoted(fields[2]) + " is not a number 1.." +
           std::to_string(protocol::mrsp::kMaxRequestEntries);

  entry = NaaEntry{std::string(host), static_cast<uint16_t>(port),
                   static_cast<uint8_t>(function_code), static_cast<unsigned>(n_inputs)};
  return {};
}

}  // namespace

bool parse_naa_spec(const std::string &spec, std::vector<NaaEntry> &out, std::string *error) {
  std::vector<NaaEntry> entries;
  const std::vector<std::string_view> chunks = split(spec, ',');
  for (size_t k = 0; k < chunks.size(); ++k) {
    const std::string_view chunk = trim(chunks[k]);
    if (chunk.empty()) continue;  // the reference tolerates e.g. a trailing comma
    NaaEntry entry;
    const std::string problem = parse_chunk(chunk, entry);
    if (!problem.empty()) {
      if (error != nullptr)
        *error = "NAA_SPEC chunk " + std::to_string(k + 1) + " " + quoted(chunk) + ": " + problem;
      return false;
    }
    entries.push_back(std::move(entry));
  }
  out = std::move(entries);
  return true;
}

}  // namespace naa::rm

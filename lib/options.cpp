#include "options.hpp"

#include <cmath>
#include <cstdlib>

#include "error.hpp"

namespace naa {

constexpr double kDefaultTimeoutSeconds = 60;

std::chrono::milliseconds timeout_from_environment() {
  const char *text = std::getenv("NAA_TIMEOUT");
  if (text == nullptr || *text == '\0')
    return std::chrono::milliseconds(static_cast<long>(kDefaultTimeoutSeconds * 1000));
  char *end = nullptr;
  double seconds = std::strtod(text, &end);
  // An upper bound keeps the millisecond count far from overflow; a year is no deadline anyway.
  if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds <= 0 || seconds > 31536000)
    throw Error(NAA_ERR_CONFIG, std::string("NAA_TIMEOUT '") + text +
                                    "' is not a number of seconds in (0, 31536000]");
  return std::chrono::milliseconds(static_cast<long>(std::ceil(seconds * 1000)));
}

std::string local_ip_from_environment() {
  const char *ip = std::getenv("NAA_LOCAL_IP");
  return ip != nullptr ? ip : "";
}

}  // namespace naa

#include "open_session.hpp"

#include "options.hpp"
#include "rm/resolver.hpp"
#include "transport/transport.hpp"

namespace naa {

std::unique_ptr<Session> open_session(uint8_t function_code, std::vector<Region> regions,
                                      size_t n_inputs) {
  auto timeout = timeout_from_environment();
  auto progress = progress_from_environment();
  auto pacing = pacing_from_environment();
  auto transport = transport::open_transport(transport::transport_from_environment(),
                                                progress.mode == Progress::Mode::Provider);
  auto target = rm::resolve(function_code, n_inputs);
  return std::make_unique<Session>(*transport, function_code, std::move(regions),
                                   std::move(target), timeout, progress, pacing);
}

}  // namespace naa

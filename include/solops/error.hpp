#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace solops {

enum class Status : int32_t {
  ok = 0,
  invalid_argument = 1,  // a rule of the op's contract was broken by the caller
  unsupported = 2,       // legal in PyTorch, not (yet) implemented here: never silently copied
  cuda_error = 3,        // the CUDA runtime reported a failure
  internal = 4,
};

// Thrown by every public function. The message names the op, the argument and the rule it broke,
// e.g. "max_pool2d: stride[0] = 0 must be >= 1".
class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  Status status() const { return status_; }

 private:
  Status status_;
};

}  // namespace solops

// Files of the source tree that tests read. SOLOPS_SOURCE_DIR in the environment overrides the
// compiled-in path, so prebuilt test binaries also run from a copy of the tree elsewhere.
#pragma once

#include <cstdlib>
#include <string>

namespace solops::testing {

inline std::string source_path(const std::string& relative) {
  const char* root = std::getenv("SOLOPS_SOURCE_DIR");
  return std::string(root ? root : SOLOPS_SOURCE_DIR) + "/" + relative;
}

}  // namespace solops::testing

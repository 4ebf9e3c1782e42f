// The manifest's rows of one op, for the tests that cover every catalogue row.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "solops/tensor.hpp"
#include "source_path.hpp"

namespace solops::testing {

inline DType parse_dtype(const std::string& name) {
  if (name == "f32") return DType::f32;
  if (name == "f16") return DType::f16;
  if (name == "bf16") return DType::bf16;
  throw std::runtime_error("unexpected dtype " + name);
}

// The manifest rows of `op`.
inline std::vector<nlohmann::json> catalogue_rows(std::string_view op) {
  std::ifstream file(source_path("manifest/workloads.json"));
  if (!file) throw std::runtime_error("cannot open the manifest under " + source_path(""));
  const auto manifest = nlohmann::json::parse(file);
  std::vector<nlohmann::json> rows;
  for (const auto& entry : manifest["ops"]) {
    if (entry["op"] == op) rows.insert(rows.end(), entry["rows"].begin(), entry["rows"].end());
  }
  return rows;
}

}  // namespace solops::testing

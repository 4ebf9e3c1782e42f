// Integer helpers shared by the shape rules and the launchers.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

namespace solops::detail {

// a / b rounded up, for a >= 0 and b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A launch's grid of `blocks` blocks, at least one and at most INT_MAX (grid-stride kernels walk
// whatever lies beyond).
constexpr unsigned grid_for(int64_t blocks) { return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, INT_MAX)); }

}  // namespace solops::detail

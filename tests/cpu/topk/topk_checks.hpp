// What the top-k family's CPU and GPU tests share: one call's host tensors, the reference's output,
// random scores (normal, few distinct values, NaN and infinities), windows, and the spec's tie-aware
// check of an output (§5.1).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "host_tensor.hpp"
#include "solops/reference.hpp"
#include "solops/topk.hpp"

namespace solops::testing::topk {

using Shape = std::vector<int64_t>;

inline int32_t int_at(const HostTensor& t, int64_t i) {
  int32_t value;
  std::memcpy(&value, t.bytes.data() + i * sizeof(int32_t), sizeof value);
  return value;
}

inline void set_int(HostTensor& t, int64_t i, int32_t value) {
  std::memcpy(t.bytes.data() + i * sizeof(int32_t), &value, sizeof value);
}

inline HostTensor int_tensor(Shape shape, const std::vector<int32_t>& values) {
  HostTensor t(std::move(shape), DType::i32);
  for (int64_t i = 0; i < t.numel(); ++i) set_int(t, i, values[static_cast<size_t>(i)]);
  return t;
}

// One call's host tensors: index_score [B, S, S_kv, G], starts and ends int32 [B, S] where given.
struct TopkCall {
  HostTensor scores;
  std::optional<HostTensor> starts = std::nullopt, ends = std::nullopt;
  TopkSelector params{};

  int64_t rows() const { return scores.shape[0] * scores.shape[1]; }
  int64_t keys() const { return scores.shape[2]; }
  int64_t groups() const { return scores.shape[3]; }
  Shape output_shape() const { return {scores.shape[0], scores.shape[1], groups(), params.topk}; }
  // The window [low, high) of query row `row` (b * S + s), clamped as the spec says.
  std::pair<int64_t, int64_t> window(int64_t row) const {
    const int64_t low = starts ? std::max<int64_t>(int_at(*starts, row), 0) : 0;
    const int64_t high = ends ? std::min<int64_t>(int_at(*ends, row), keys()) : keys();
    return {low, std::max(low, high)};
  }
  std::string describe() const {
    return detail::concat("index_score ", detail::shape_text(scores.shape), " ", dtype_name(scores.dtype),
                          " topk ", params.topk, params.sorted ? " sorted" : "", starts ? " starts" : "",
                          ends ? " ends" : "");
  }
};

// Where an output is poisoned before a run: a value no slot may hold (not a position of the tests'
// rows, not -1).
inline constexpr int kPoisonByte = 0x7F;

// The reference's output of a call, poisoned first.
inline HostTensor reference_output(TopkCall& call) {
  HostTensor out(call.output_shape(), DType::i32);
  if (!out.bytes.empty()) std::memset(out.bytes.data(), kPoisonByte, out.bytes.size());
  std::optional<TensorRef> starts, ends;
  if (call.starts) starts = call.starts->ref();
  if (call.ends) ends = call.ends->ref();
  reference::topk_selector(call.scores.ref(), starts ? &*starts : nullptr, ends ? &*ends : nullptr, out.ref(),
                           call.params);
  return out;
}

enum class Scores {
  normal,      // standard normal: ties practically absent (in f32)
  few_values,  // one of 16 values, -0 and +0 among them: heavy ties
  special,     // normal, with about one score in 16 NaN (either sign), +inf, -inf or -0
};

inline void fill_scores(HostTensor& t, std::mt19937_64& rng, Scores kind) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  static const double kFew[16] = {-3, -2, -1.5, -1, -0.5, -0.0, 0.0, 0.25, 0.5, 1, 1.5, 2, 3, 4, 100, -100};
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 15), special(0, 63);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = kind == Scores::few_values ? kFew[pick(rng)] : normal(rng);
    if (kind == Scores::special) {
      switch (special(rng)) {
        case 0: v = std::numeric_limits<double>::quiet_NaN(); break;
        case 1: v = -std::numeric_limits<double>::quiet_NaN(); break;
        case 2: v = kInf; break;
        case 3: v = -kInf; break;
        case 4: v = -0.0; break;
        default: break;
      }
    }
    t.set(i, v);
  }
}

// The spec's order of scores (§5.1): NaN above everything, then the float order (-0 == +0).
inline bool score_above(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && !std::isnan(b);
  return a > b;
}

// The spec's exactness check (§5.1), per row as sets: the first min(topk, count) slots are distinct
// positions of the window whose scores, as a multiset, are the window's top scores; the other slots are
// -1. It leaves the tie rule and the slot order unchecked. Returns the first failure, or "".
inline std::string tie_aware_mismatch(TopkCall& call, const HostTensor& indexes) {
  const int64_t topk = call.params.topk;
  for (int64_t row = 0; row < call.rows(); ++row) {
    const auto [low, high] = call.window(row);
    const int64_t wanted = std::min(topk, high - low);
    for (int64_t group = 0; group < call.groups(); ++group) {
      const int64_t out = (row * call.groups() + group) * topk;
      const auto score = [&](int64_t j) { return call.scores.at((row * call.keys() + j) * call.groups() + group); };
      std::vector<double> window, selected;
      for (int64_t j = low; j < high; ++j) window.push_back(score(j));
      std::vector<int32_t> positions;
      for (int64_t slot = 0; slot < topk; ++slot) {
        const int32_t position = int_at(indexes, out + slot);
        if (slot >= wanted) {
          if (position != -1) return detail::concat("row ", row, " group ", group, " slot ", slot, ": ", position, ", not the padding -1");
          continue;
        }
        if (position < low || position >= high) {
          return detail::concat("row ", row, " group ", group, " slot ", slot, ": position ", position,
                                " outside the window [", low, ", ", high, ")");
        }
        positions.push_back(position);
        selected.push_back(score(position));
      }
      std::sort(positions.begin(), positions.end());
      if (std::adjacent_find(positions.begin(), positions.end()) != positions.end()) {
        return detail::concat("row ", row, " group ", group, ": a position comes twice");
      }
      std::sort(window.begin(), window.end(), score_above);
      std::sort(selected.begin(), selected.end(), score_above);
      for (int64_t i = 0; i < wanted; ++i) {
        if (!same_value(window[i], selected[i])) {
          return detail::concat("row ", row, " group ", group, ": the ", i, "-th selected score is ", selected[i],
                                ", the window's is ", window[i]);
        }
      }
    }
  }
  return {};
}

// The first slot where two outputs differ, or "".
inline std::string first_difference(const HostTensor& expected, const HostTensor& actual) {
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (int_at(expected, i) != int_at(actual, i)) {
      return detail::concat("slot ", i, ": ", int_at(actual, i), ", expected ", int_at(expected, i));
    }
  }
  return {};
}

}  // namespace solops::testing::topk

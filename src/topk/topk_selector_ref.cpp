// CPU reference of TopkSelectorFwd: the spec's selection stated directly. Scores are compared as floats
// (f16 and bf16 widened exactly) by the spec's order, with no key encoding, so that the kernel's keys
// are checked against it rather than shared with it.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "solops/reference.hpp"
#include "topk/topk_selector.hpp"

namespace solops::reference {
namespace {

float load_score(const TensorRef& t, int64_t i) {
  switch (t.dtype) {
    case DType::f16: return __half2float(static_cast<const __half*>(t.data)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(t.data)[i]);
    default: return static_cast<const float*>(t.data)[i];  // validated: f32, f16 or bf16
  }
}

struct Candidate {
  float score;
  int32_t position;
};

// Spec §5.1, §6.13: NaN above everything (NaNs tie), then the float order (-0 == +0), ties by the
// lower position.
bool ranks_above(const Candidate& a, const Candidate& b) {
  const bool a_nan = std::isnan(a.score), b_nan = std::isnan(b.score);
  if (a_nan || b_nan) return a_nan && (!b_nan || a.position < b.position);
  if (a.score != b.score) return a.score > b.score;
  return a.position < b.position;
}

}  // namespace

void topk_selector(const TensorRef& index_score, const TensorRef* starts, const TensorRef* ends,
                   const TensorRef& indexes, const TopkSelector& p) {
  const detail::TopkSelectorTensors t{index_score, starts, ends, indexes};
  const detail::TopkGeometry g =
      detail::validate_topk_selector("reference::topk_selector", detail::Placement::host, t, p);
  auto* out = static_cast<int32_t*>(indexes.data);
  std::vector<Candidate> window;
  for (int64_t bs = 0; bs < g.batch * g.queries; ++bs) {
    const int64_t start = starts ? static_cast<const int32_t*>(starts->data)[bs] : 0;
    const int64_t end = ends ? static_cast<const int32_t*>(ends->data)[bs] : g.keys;
    const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, g.keys);
    for (int64_t group = 0; group < g.groups; ++group) {
      window.clear();
      for (int64_t j = lo; j < hi; ++j) {
        window.push_back({load_score(index_score, (bs * g.keys + j) * g.groups + group), static_cast<int32_t>(j)});
      }
      const auto selected = std::min<int64_t>(g.topk, static_cast<int64_t>(window.size()));
      const auto last = window.begin() + selected;
      std::nth_element(window.begin(), last, window.end(), ranks_above);
      if (p.sorted) {
        std::sort(window.begin(), last, ranks_above);
      } else {
        std::sort(window.begin(), last, [](const Candidate& a, const Candidate& b) { return a.position < b.position; });
      }
      int32_t* row = out + (bs * g.groups + group) * g.topk;
      for (int64_t slot = 0; slot < g.topk; ++slot) row[slot] = slot < selected ? window[slot].position : -1;
    }
  }
}

}  // namespace solops::reference

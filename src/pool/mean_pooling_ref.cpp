// CPU reference of mean pooling (spec §4.6): the executable specification.
#include <span>
#include <vector>

#include "core/host_values.hpp"
#include "pool/mean_pooling.hpp"
#include "solops/reference.hpp"

namespace solops::reference {

void mean_pooling(const TensorRef& x, const TensorRef& y, const TensorRef* offsets, const TensorRef* indices,
                  const MeanPooling& p) {
  constexpr std::string_view kOp = "reference::mean_pooling";
  const detail::MeanPoolingGeometry g =
      detail::validate_mean_pooling_call(kOp, detail::Placement::host, x, y, offsets, indices, p);
  const auto* offset_values = offsets ? static_cast<const int32_t*>(offsets->data) : nullptr;
  const auto* index_values = indices ? static_cast<const int32_t*>(indices->data) : nullptr;
  if (g.ragged) {
    detail::check_ragged_chunks(kOp, {offset_values, static_cast<size_t>(offsets->numel())},
                                {index_values, static_cast<size_t>(indices->numel())}, g.seq_len, g.chunk_size);
  }
  std::vector<double> sums(static_cast<size_t>(g.row_len));
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t j = 0; j < g.chunks; ++j) {
      const detail::TokenSpan span =
          g.ragged ? detail::ragged_chunk(index_values[2 * j], index_values[2 * j + 1], offset_values, g.sequences,
                                          g.chunk_size, g.seq_len)
                   : detail::uniform_chunk(j, g.chunk_size, g.seq_len);
      sums.assign(sums.size(), 0.0);
      for (int64_t t = span.begin; t < span.end; ++t) {
        const int64_t token = (b * g.seq_len + t) * g.row_len;
        for (int e = 0; e < g.row_len; ++e) sums[e] += detail::load_value(x, token + e);
      }
      const auto count = static_cast<double>(span.end - span.begin);
      const int64_t out = (b * g.chunks + j) * g.row_len;
      for (int e = 0; e < g.row_len; ++e) detail::store_value(y, out + e, sums[e] / count);
    }
  }
}

}  // namespace solops::reference

// RMSNorm kernels (RMSNorm, GemmaRMSNorm, FusedAddRMSNorm, QKNorm, RMSNormBwd); each statistic has its own file, so the
// two compile in parallel.
#include "norm/row_norm_backward.cuh"

namespace solops::detail {

template void launch_rows<NormKind::rms>(std::string_view, const RowGeometry&, const NormMath&, const RowNormTensors&,
                                        cudaStream_t);
template void launch_row_pair<NormKind::rms>(std::string_view, const RowGeometry&, const RowGeometry&, const NormMath&,
                                             const RowNormTensors&, const RowNormTensors&, cudaStream_t);
template void launch_rows_backward<NormKind::rms>(std::string_view, const RowGeometry&, const RowNormBackwardTensors&,
                                                  cudaStream_t);

}  // namespace solops::detail

// LayerNorm kernels (LayerNorm, FusedAddLayerNorm); each statistic has its own file, so the two
// compile in parallel.
#include "norm/row_norm.cuh"

namespace solops::detail {

template void launch_rows<NormKind::layer>(std::string_view, const RowGeometry&, const NormMath&, const RowNormTensors&,
                                        cudaStream_t);

}  // namespace solops::detail

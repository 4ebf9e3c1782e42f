// The row norms on the GPU against the CPU reference: RMSNorm, LayerNorm, GemmaRMSNorm, the fused
// add-norms, the quantizing norms, AdaLayerNorm and GroupRMSNorm (spec §2.1–2.5, 2.15–2.17, 2.19).
// Every catalogue row of the nine ops, at least 100 random shapes per op (N not a multiple of the
// vector width, one-row and 3-D inputs, rows long enough for the streaming kernel, normalized shapes
// of two dims, with and without weight and bias), a large common offset (variance stability), NaN
// propagation, pointers not 16-byte aligned, the fused add-norms' in-place form, device-side
// validation and CUDA graph capture. Outputs are poisoned first. The quantizing norms' codes are
// compared as spec §2.15 says: each within one e4m3 step of the reference's, at least 99.9 %
// identical (exact ties, where either rounding is right, aside); their scales, and GroupRMSNorm's rstd
// (spec §2.19), to rtol 1e-4 and 1e-5.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "gpu/norm/norm_gpu_checks.hpp"
#include "host_tensor.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"

namespace solops::testing::norm {
namespace {

// Runs the op (device or reference) on the given tensors; residual_out is ignored but by the fused
// add-norms, row_scale but by the quantizing norms (as scale) and GroupRMSNorm (as rstd).
void run_op(const NormInputs& in, bool device, const TensorRef& x, const TensorRef* residual, const TensorRef* weight,
            const TensorRef* bias, const TensorRef& y, const TensorRef* residual_out, const TensorRef* row_scale,
            cudaStream_t stream = nullptr) {
  const Shape ns = in.normalized_shape();
  switch (in.op) {
    case Op::rms:
      device ? rms_norm(x, weight, y, {ns, in.eps}, stream) : reference::rms_norm(x, weight, y, {ns, in.eps});
      break;
    case Op::layer:
      device ? layer_norm(x, weight, bias, y, {ns, in.eps}, stream)
             : reference::layer_norm(x, weight, bias, y, {ns, in.eps});
      break;
    case Op::gemma:
      device ? gemma_rms_norm(x, *weight, y, {ns, in.eps}, stream)
             : reference::gemma_rms_norm(x, *weight, y, {ns, in.eps});
      break;
    case Op::fused_rms:
      device ? fused_add_rms_norm(x, *residual, weight, y, *residual_out, {in.eps}, stream)
             : reference::fused_add_rms_norm(x, *residual, weight, y, *residual_out, {in.eps});
      break;
    case Op::fused_layer:
      device ? fused_add_layer_norm(x, *residual, weight, bias, y, *residual_out, {in.eps}, stream)
             : reference::fused_add_layer_norm(x, *residual, weight, bias, y, *residual_out, {in.eps});
      break;
    case Op::rms_quant:
      device ? rms_norm_quant(x, weight, y, *row_scale, {ns, in.eps}, stream)
             : reference::rms_norm_quant(x, weight, y, *row_scale, {ns, in.eps});
      break;
    case Op::layer_quant:
      device ? layer_norm_quant(x, weight, bias, y, *row_scale, {ns, in.eps}, stream)
             : reference::layer_norm_quant(x, weight, bias, y, *row_scale, {ns, in.eps});
      break;
    case Op::ada:
      device ? ada_layer_norm(x, *weight, *bias, y, {in.eps}, stream)
             : reference::ada_layer_norm(x, *weight, *bias, y, {in.eps});
      break;
    case Op::group:
      device ? group_rms_norm(x, weight, y, *row_scale, {ns, in.eps}, stream)
             : reference::group_rms_norm(x, weight, y, *row_scale, {ns, in.eps});
      break;
  }
}

// x (or weight, bias) as f32, every value exactly as given.
HostTensor as_f32(HostTensor& t) {
  HostTensor copy(t.shape, DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) copy.set(i, t.at(i));
  return copy;
}

// The quantizing norms' y / scale before rounding to e4m3, in f64: the unquantized reference norm
// on f32 copies of the inputs (f32 output, 2^-24 relative), over the reference's scale.
std::vector<double> unrounded_codes(NormInputs& in, HostTensor& scale) {
  HostTensor x = as_f32(in.x), y(in.x.shape, DType::f32);
  std::optional<HostTensor> weight, bias;
  std::optional<TensorRef> weight_ref, bias_ref;
  if (in.weight) weight_ref = weight.emplace(as_f32(*in.weight)).ref();
  if (in.bias) bias_ref = bias.emplace(as_f32(*in.bias)).ref();
  const Shape ns = in.normalized_shape();
  if (in.op == Op::rms_quant) reference::rms_norm(x.ref(), optional_ref(weight_ref), y.ref(), {ns, in.eps});
  else reference::layer_norm(x.ref(), optional_ref(weight_ref), optional_ref(bias_ref), y.ref(), {ns, in.eps});
  std::vector<double> codes(static_cast<size_t>(y.numel()));
  const int64_t row_len = y.numel() / std::max<int64_t>(1, scale.numel());
  for (int64_t i = 0; i < y.numel(); ++i) codes[i] = y.at(i) / scale.at(i / row_len);
  return codes;
}

// Spec §2.15: every code within one e4m3 step of the reference's (adjacent codes of one sign are
// adjacent values) or within `code_atol` of the unrounded value, and at most `mismatch_share` of
// them different, not counting ties (the unrounded value within 1e-5 of the midpoint of the two
// codes: there the f32 rounding of y and scale decides, and 1/16 of the codes of an input without
// weight are ties when 448 / amax is a power of two); "" when they agree.
std::string code_difference(HostTensor& expected, HostTensor& actual, const std::vector<double>& unrounded,
                            double mismatch_share, double code_atol) {
  int64_t mismatches = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const int want = expected.bytes[i], got = actual.bytes[i];
    const double want_value = expected.at(i), got_value = actual.at(i);
    if (testing::same_value(want_value, got_value)) continue;
    const bool adjacent = !std::isnan(want_value) && !std::isnan(got_value) && ((want ^ got) & 0x80) == 0 &&
                          std::abs(want - got) <= 1;
    if (!adjacent && !(std::abs(got_value - unrounded[i]) <= code_atol)) {
      return detail::concat("q[", i, "] = ", got_value, ", reference ", want_value, " (unrounded ", unrounded[i],
                            "): more than one step");
    }
    const double middle = (want_value + got_value) / 2;
    if (!(std::abs(unrounded[i] - middle) <= 1e-5 * std::abs(middle))) ++mismatches;
  }
  if (static_cast<double>(mismatches) > mismatch_share * static_cast<double>(expected.numel())) {
    return detail::concat(mismatches, " of ", expected.numel(), " codes differ from the reference's (ties aside)");
  }
  return {};
}

struct Options {
  size_t offset = 0;     // elements into each allocation: 1 makes every pointer unaligned
  bool in_place = false;  // fused: output = x, residual_out = residual
  double atol = -1, rtol = -1;  // default: the op's tolerance
  double code_mismatch_share = 1e-3;  // the quantizing norms: spec §2.15's 99.9 % identical codes
  double code_atol = 0;  // and how far (in e4m3 units) a code more than one step away may be from y / scale
};

// Runs the op on the device and the reference on the host; returns the first disagreement, or "".
std::string compare_with_reference(NormInputs& in, const Options& o = {}) {
  const bool fused = is_fused(in.op), quant = is_quant(in.op), row_output = has_row_output(in.op);
  HostTensor expected(in.x.shape, in.output_dtype()), expected_residual(in.x.shape, in.x.dtype);
  HostTensor expected_scale(in.scale_shape(), DType::f32);
  std::optional<TensorRef> host_residual, host_weight, host_bias, host_residual_out, host_scale;
  if (in.residual) host_residual = in.residual->ref();
  if (in.weight) host_weight = in.weight->ref();
  if (in.bias) host_bias = in.bias->ref();
  if (fused) host_residual_out = expected_residual.ref();
  if (row_output) host_scale = expected_scale.ref();
  run_op(in, false, in.x.ref(), optional_ref(host_residual), optional_ref(host_weight), optional_ref(host_bias),
         expected.ref(), optional_ref(host_residual_out), optional_ref(host_scale));

  const size_t pad = o.offset * dtype_size(in.x.dtype);
  DeviceBuffer x(in.x.bytes.size(), pad), y(expected.bytes.size(), pad), residual_out(in.x.bytes.size(), pad);
  DeviceBuffer scale(expected_scale.bytes.size(), o.offset * sizeof(float));
  x.upload(in.x.bytes.data());
  y.poison();
  residual_out.poison();
  scale.poison();
  const std::unique_ptr<DeviceBuffer> residual = upload(in.residual, pad), weight = upload(in.weight, pad),
                                      bias = upload(in.bias, pad);
  const DType dtype = in.x.dtype;
  const TensorRef x_ref = device_ref(x.data(), dtype, in.x.shape);
  std::optional<TensorRef> residual_ref, weight_ref, bias_ref, residual_out_ref, scale_ref;
  if (residual) residual_ref = device_ref(residual->data(), dtype, in.x.shape);
  if (weight) weight_ref = device_ref(weight->data(), dtype, in.affine_shape());
  if (bias) bias_ref = device_ref(bias->data(), dtype, in.affine_shape());
  const TensorRef y_ref = o.in_place ? x_ref : device_ref(y.data(), in.output_dtype(), in.x.shape);
  if (fused) residual_out_ref = o.in_place ? *residual_ref : device_ref(residual_out.data(), dtype, in.x.shape);
  if (row_output) scale_ref = device_ref(scale.data(), DType::f32, in.scale_shape());
  run_op(in, true, x_ref, optional_ref(residual_ref), optional_ref(weight_ref), optional_ref(bias_ref), y_ref,
         optional_ref(residual_out_ref), optional_ref(scale_ref));
  testing::cuda_ok(cudaDeviceSynchronize(), "kernel");

  HostTensor actual(in.x.shape, in.output_dtype()), actual_residual(in.x.shape, in.x.dtype);
  (o.in_place ? x : y).download(actual.bytes.data());
  if (quant) {
    HostTensor actual_scale(in.scale_shape(), DType::f32);
    scale.download(actual_scale.bytes.data());
    std::string difference = first_difference("scale", expected_scale, actual_scale, 0, 1e-4);
    if (!difference.empty()) return difference;
    return code_difference(expected, actual, unrounded_codes(in, expected_scale), o.code_mismatch_share,
                           o.code_atol);
  }
  const double tol = tolerance(in.op, in.x.dtype);
  const double atol = o.atol >= 0 ? o.atol : tol, rtol = o.rtol >= 0 ? o.rtol : tol;
  std::string difference = first_difference("output", expected, actual, atol, rtol);
  if (row_output && difference.empty()) {
    HostTensor actual_rstd(in.scale_shape(), DType::f32);
    scale.download(actual_rstd.bytes.data());
    difference = first_difference("rstd", expected_scale, actual_rstd, 0, 1e-5);  // spec §2.19
  }
  if (fused && difference.empty()) {
    (o.in_place ? *residual : residual_out).download(actual_residual.bytes.data());
    difference = first_difference("residual_out", expected_residual, actual_residual, tol, tol);
  }
  return difference;
}

// describe(in), saying whether its values hold NaN and -inf.
std::string describe(const NormInputs& in, Values values) {
  return describe(in) + (values == Values::special ? " with NaN and -inf" : "");
}

class NormGpu : public testing::GpuTestWithParam<Op> {};

const char* catalogue_op(Op op) {
  switch (op) {
    case Op::rms: return "RMSNormFwd";
    case Op::layer: return "LayerNormFwd";
    case Op::gemma: return "GemmaRMSNormFwd";
    case Op::fused_rms: return "FusedAddRMSNormFwd";
    case Op::fused_layer: return "FusedAddLayerNormFwd";
    case Op::rms_quant: return "RMSNormQuantFwd";
    case Op::layer_quant: return "LayerNormQuantFwd";
    case Op::ada: return "AdaLayerNormFwd";
    case Op::group: return "GroupRMSNormFwd";
  }
  return "";
}

TEST_P(NormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2030);
  for_each_catalogue_row(catalogue_op(GetParam()), [&](const nlohmann::json& row, const Shape& shape, DType dtype) {
    NormInputs in = make_inputs(GetParam(), shape, dtype, rng);
    EXPECT_EQ(compare_with_reference(in), "") << row["workload"] << " " << describe(in);
  });
}

TEST_P(NormGpu, RandomShapes) {
  const Op op = GetParam();
  std::mt19937_64 rng(7 + static_cast<int>(op));
  for (int c = 0; c < kRandomCases; ++c) {
    const RandomShape drawn = draw_shape(rng, c, !last_dim_only(op));
    NormInputs in = make_inputs(op, drawn.shape, kRandomDtypes[c % 3], rng, c % 5 != 2, drawn.normalized_dims,
                                draw_values(c));
    const Options o{.offset = c % 6 == 5 ? size_t{1} : size_t{0}, .in_place = is_fused(op) && c % 3 == 0};
    EXPECT_EQ(compare_with_reference(in, o), "") << "case " << c << " " << describe(in) << " offset " << o.offset
                                                 << (o.in_place ? " in place" : "");
  }
}

TEST_P(NormGpu, LargeCommonOffset) {
  // 1000 + randn: a one-pass E[x^2] - E[x]^2 loses the unit variance entirely in f32. f32 uses the
  // tolerance of TileOPs' large-offset test.
  std::mt19937_64 rng(11);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (int64_t row_len : {4096, 3000, 20000}) {
      NormInputs in = make_inputs(GetParam(), {16, row_len}, dtype, rng, true, 1, Values::offset);
      Options o;
      if (dtype == DType::f32) o.atol = 1e-1, o.rtol = 5e-2;
      // The f32 mean of 20000 values near 1000 is off by a few 1e-4 (ulps of its partial sums), an
      // error that y carries: more codes sit that close to a rounding boundary than the 0.1 % the
      // normal tolerance allows, and codes near zero, where e4m3 steps are finest, may be a few
      // steps away. 1e-3 of amax is 0.45 e4m3 units (measured on the H200: up to 0.05).
      o.code_mismatch_share = 1e-2;
      o.code_atol = 448 * 1e-3;
      EXPECT_EQ(compare_with_reference(in, o), "") << describe(in);
    }
  }
}

TEST_P(NormGpu, NaNPropagatesWithinItsRowOnly) {
  std::mt19937_64 rng(12);
  for (int64_t row_len : {4096, 3001, 20000}) {
    NormInputs in = make_inputs(GetParam(), {4, row_len}, DType::bf16, rng);
    in.x.set(row_len + 17, std::numeric_limits<double>::quiet_NaN());  // row 1 only
    EXPECT_EQ(compare_with_reference(in), "") << describe(in);
  }
}

// An infinite weight makes its rows' amax and scale infinite: finite values quantize to 0 and the
// infinite one to NaN, as y / scale does (the kernels divide by a reciprocal and correct the
// product, a correction that must not turn 0 into NaN).
TEST_P(NormGpu, InfiniteWeightGivesAnInfiniteScale) {
  if (!is_quant(GetParam())) GTEST_SKIP() << op_name(GetParam()) << " does not quantize";
  std::mt19937_64 rng(13);
  for (int64_t row_len : {4096, 3001, 20000}) {
    NormInputs in = make_inputs(GetParam(), {4, row_len}, DType::bf16, rng);
    in.weight->set(17, std::numeric_limits<double>::infinity());
    EXPECT_EQ(compare_with_reference(in), "") << describe(in);
  }
}

// Many rows of long rows, as prefill has them: each block walks several rows (rows outnumber the
// blocks resident at once), 4-vector rows in 512 threads (16000: the last vectors part-filled),
// whole f16 rows of 2 and 4 vectors a thread (the kWhole forms; the LayerNorm kind's 2-vector one
// unpacks x once), streaming rows, f32, row lengths that are not a multiple of the block's vectors,
// the fused ops in place, and unaligned pointers; each with normal values and with NaN and -inf
// among them (one value in 100: nearly every row of these lengths then holds one).
// Many rows: rows of 16-byte vectors that fill the staged kernels' blocks (the LayerNorm kind's and
// RMSNormQuant's: 2048, 4096, 8192 f16, 8192 f32, 16384 bf16, with and without an affine, whose
// absence stages ones and zeros) and rows that do not, each with special values and unaligned.
TEST_P(NormGpu, ManyRows) {
  std::mt19937_64 rng(14);
  const ShapeAndType cases[] = {
      {{1500, 2048}, DType::bf16}, {{700, 3000}, DType::f16},   {{300, 4104}, DType::bf16},
      {{400, 1028}, DType::f32},   {{140, 16392}, DType::bf16}, {{133, 8192}, DType::f32},
      {{150, 16000}, DType::f16},  {{600, 4096}, DType::f16},   {{140, 8192}, DType::f16},
      {{141, 16384}, DType::bf16}};
  for (const auto& c : cases) {
    for (Values values : {Values::normal, Values::special}) {
      NormInputs in = make_inputs(GetParam(), c.shape, c.dtype, rng, c.shape[0] % 2 == 0, 1, values);
      const std::string what = describe(in, values);
      EXPECT_EQ(compare_with_reference(in), "") << what;
      if (is_fused(GetParam())) {
        EXPECT_EQ(compare_with_reference(in, {.in_place = true}), "") << what << " in place";
      }
      EXPECT_EQ(compare_with_reference(in, {.offset = 1}), "") << what << " offset 1";
    }
  }
}

TEST_P(NormGpu, UnalignedPointers) {
  std::mt19937_64 rng(13);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (int64_t row_len : {4096, 1000, 16384}) {
      NormInputs in = make_inputs(GetParam(), {3, row_len}, dtype, rng);
      EXPECT_EQ(compare_with_reference(in, {.offset = 1}), "") << describe(in);
      EXPECT_EQ(compare_with_reference(in, {.offset = 3}), "") << describe(in);
    }
  }
}

// Few long rows, each shared by a cluster of 2, 4 or 8 blocks (launch_row_kernel; the norms without a
// residual, RMSNormQuant aside, hold rows of up to 32 KB in one block: FewLongRowsInOneBlock): the
// cluster's totals for every reduction (LayerNormQuant takes three, which reuse the slots in turn),
// a row longer than one block holds ([1, 65536], the streaming kernel before), a NaN in row 1 (which
// must stay in its row), the fused ops in place.
TEST_P(NormGpu, RowsSharedByClusters) {
  std::mt19937_64 rng(16);
  const ShapeAndType cases[] = {{{1, 65536}, DType::bf16}, {{2, 16384}, DType::f16}, {{5, 16384}, DType::bf16},
                                {{9, 8192}, DType::f32},   {{1, 40000}, DType::bf16}, {{3, 12000}, DType::f32},
                                {{16, 16384}, DType::bf16}};
  for (const auto& c : cases) {
    NormInputs in = make_inputs(GetParam(), c.shape, c.dtype, rng);
    if (c.shape[0] > 1) in.x.set(c.shape[1] + 17, std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(compare_with_reference(in), "") << describe(in);
    if (is_fused(GetParam())) {
      EXPECT_EQ(compare_with_reference(in, {.in_place = true}), "") << describe(in) << " in place";
    }
  }
}

// Few rows of up to 32 KB that the norms without a residual, RMSNormQuant aside, hold in one block of
// at most 512 threads at four vectors a thread (the others share them among a cluster): rows of
// 16384 half elements and 8192 f32 ones whole (the LayerNorm kind's in layer_norm_few_rows), rows
// whose last vectors are part-filled (16000, 8200), and the first row lengths past one block
// (16392, 12000 f32), which are shared again.
TEST_P(NormGpu, FewLongRowsInOneBlock) {
  std::mt19937_64 rng(17);
  const ShapeAndType cases[] = {{{2, 16384}, DType::bf16}, {{1, 8192}, DType::f32},  {{2, 16000}, DType::f16},
                                {{3, 8200}, DType::bf16},  {{1, 8192}, DType::bf16}, {{2, 16392}, DType::f16},
                                {{3, 12000}, DType::f32}};
  for (const auto& c : cases) {
    for (Values values : {Values::normal, Values::special}) {
      NormInputs in = make_inputs(GetParam(), c.shape, c.dtype, rng, true, 1, values);
      const std::string what = describe(in, values);
      EXPECT_EQ(compare_with_reference(in), "") << what;
    }
  }
}

TEST_P(NormGpu, EmptyBatchIsANoOp) {
  std::mt19937_64 rng(14);
  NormInputs in = make_inputs(GetParam(), {0, 64}, DType::f16, rng);
  EXPECT_EQ(compare_with_reference(in), "");
}

INSTANTIATE_TEST_SUITE_P(Norm, NormGpu,
                         ::testing::Values(Op::rms, Op::layer, Op::gemma, Op::fused_rms, Op::fused_layer, Op::rms_quant,
                                           Op::layer_quant, Op::ada, Op::group),
                         [](const auto& info) { return op_name(info.param); });

TEST_F(NormGpuCalls, FusedInPlaceOnTheCatalogueShapes) {
  std::mt19937_64 rng(15);
  for (Op op : {Op::fused_rms, Op::fused_layer}) {
    for (int64_t rows : {1, 2048}) {
      NormInputs in = make_inputs(op, {rows, 8192}, DType::bf16, rng);
      EXPECT_EQ(compare_with_reference(in, {.in_place = true}), "") << describe(in);
    }
  }
}

TEST_F(NormGpuCalls, HostTensorsAreRejected) {
  HostTensor x({2, 8}, DType::f16), y({2, 8}, DType::f16);
  try {
    rms_norm(x.ref(), nullptr, y.ref(), {{8}});
    ADD_FAILURE() << "accepted a CPU tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rms_norm: x must be a CUDA tensor"), std::string::npos) << e.what();
  }
}

TEST_F(NormGpuCalls, PartialAliasingIsRejectedOnTheDevice) {
  DeviceBuffer buffer(3 * 64 * sizeof(float)), residual(2 * 64 * sizeof(float)), out(2 * 64 * sizeof(float));
  const auto view = [&](void* data, size_t offset) {
    return make_tensor(static_cast<char*>(data) + offset * sizeof(float), DType::f32, Shape{2, 64}, 0);
  };
  try {
    fused_add_rms_norm(view(buffer.data(), 0), view(residual.data(), 0), nullptr, view(buffer.data(), 32),
                       view(out.data(), 0), {});
    ADD_FAILURE() << "accepted an output half over x";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output and x overlap in memory without being the same tensor"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(NormGpuCalls, CapturedInACudaGraph) {
  std::mt19937_64 rng(16);
  NormInputs in = make_inputs(Op::rms, {64, 4096}, DType::bf16, rng);
  HostTensor expected(in.x.shape, in.x.dtype), actual(in.x.shape, in.x.dtype);
  const TensorRef host_weight = in.weight->ref();
  reference::rms_norm(in.x.ref(), &host_weight, expected.ref(), {{4096}, in.eps});
  DeviceBuffer x(in.x.bytes.size()), w(in.weight->bytes.size()), y(in.x.bytes.size());
  x.upload(in.x.bytes.data());
  w.upload(in.weight->bytes.data());
  y.poison();
  const TensorRef x_ref = make_tensor(x.data(), in.x.dtype, in.x.shape, 0);
  const TensorRef w_ref = make_tensor(w.data(), in.x.dtype, Shape{4096}, 0);
  const TensorRef y_ref = make_tensor(y.data(), in.x.dtype, in.x.shape, 0);
  cudaStream_t stream;
  testing::cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  testing::cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  rms_norm(x_ref, &w_ref, y_ref, {{4096}, in.eps}, stream);
  testing::cuda_ok(cudaStreamEndCapture(stream, &graph), "end capture");
  testing::cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  testing::cuda_ok(cudaGraphLaunch(exec, stream), "launch");
  testing::cuda_ok(cudaStreamSynchronize(stream), "replay");
  y.download(actual.bytes.data());
  EXPECT_EQ(first_difference("output", expected, actual, 1.6e-2, 1.6e-2), "");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace solops::testing::norm

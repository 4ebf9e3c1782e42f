// Row norms on the GPU against the CPU reference: every catalogue row of the nine ops and QKNorm,
// at least 100 random shapes per op (N not a multiple of the vector width, one-row and 3-D inputs,
// rows long enough for the streaming kernel, normalized shapes of two dims, with and without weight
// and bias), a large common offset (variance stability), NaN propagation, pointers not 16-byte
// aligned, the fused add-norms' in-place form, device-side validation and CUDA graph capture. The
// same for the training forward's statistics and for RMSNormBwd and LayerNormBwd (spec §2.13,
// 2.14), whose parameter gradients must also be bit-identical from run to run. Outputs are poisoned
// first. The quantizing norms' codes are compared as spec §2.15 says: each within one e4m3 step of
// the reference's, at least 99.9 % identical (exact ties, where either rounding is right, aside);
// their scales, and GroupRMSNorm's rstd (spec §2.19), to rtol 1e-4 and 1e-5. The vector norms (spec
// §2.22, 2.23): every catalogue row, 120 random shapes and dim sets, 0-d, one-element and empty
// inputs, NaN and inf, f16 overflow to inf, unaligned x, bitwise run-to-run equality, CUDA graph
// capture and the workspace rules. WeightNorm (spec §2.20, §6.7): every catalogue row, 120 random
// shapes over dim in [0, rank) and dim -1 (the whole tensor), edge shapes, PyTorch's [1, n, 1] g,
// NaN and zero slices, unaligned pointers, bitwise run-to-run norms, CUDA graph capture and the
// device-side rules. SpectralNormPowerIter (spec §2.21): every catalogue row, 120 random shapes
// (odd, one, short and long O and I; n_iter 0 to 3; f32, f16, bf16; some unaligned, some with NaN
// and inf), empty and one-sided shapes, n_iter 0's copies, the zero matrix and eps, NaN, unaligned
// pointers, bitwise run-to-run and graph-replay equality, CUDA graph capture and the device-side
// rules, at the spec's tolerance (sigma rtol 1e-4, u_out and v_out atol 1e-5, rtol 1e-4).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "gpu/gpu_support.hpp"
#include "host_tensor.hpp"
#include "manifest_rows.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/reference.hpp"
#include "solops/tensor.hpp"

namespace solops {
namespace {

using testing::DeviceBuffer;
using testing::HostTensor;
using Shape = std::vector<int64_t>;

enum class Op { rms, layer, gemma, fused_rms, fused_layer, rms_quant, layer_quant, ada, group };

bool is_fused(Op op) { return op == Op::fused_rms || op == Op::fused_layer; }
bool is_quant(Op op) { return op == Op::rms_quant || op == Op::layer_quant; }
bool has_bias(Op op) { return op == Op::layer || op == Op::fused_layer || op == Op::layer_quant || op == Op::ada; }
// Weight and bias always given: Gemma's weight, AdaLayerNorm's scale and shift.
bool affine_required(Op op) { return op == Op::gemma || op == Op::ada; }
// Normalized over the last dim only.
bool last_dim_only(Op op) { return is_fused(op) || op == Op::ada || op == Op::group; }
// Ops with a per-row f32 output beside y: the quantizing norms' scale, GroupRMSNorm's rstd.
bool has_row_output(Op op) { return is_quant(op) || op == Op::group; }

std::string op_name(Op op) {
  switch (op) {
    case Op::rms: return "rms_norm";
    case Op::layer: return "layer_norm";
    case Op::gemma: return "gemma_rms_norm";
    case Op::fused_rms: return "fused_add_rms_norm";
    case Op::fused_layer: return "fused_add_layer_norm";
    case Op::rms_quant: return "rms_norm_quant";
    case Op::layer_quant: return "layer_norm_quant";
    case Op::ada: return "ada_layer_norm";
    case Op::group: return "group_rms_norm";
  }
  return "";
}

// Spec §2.1, 2.2, 2.3, 2.4, 2.5, 2.17: atol = rtol.
double tolerance(Op op, DType dtype) {
  if (dtype == DType::f32) return 1e-5;
  if (dtype == DType::bf16) return op == Op::layer ? 1e-2 : 1.6e-2;
  return op == Op::layer || op == Op::fused_layer || op == Op::ada ? 1e-3 : 1e-2;
}

double default_eps(Op op) { return has_bias(op) ? 1e-5 : 1e-6; }

// One call's inputs. weight and bias are optional (gemma's weight is always there).
struct NormInputs {
  Op op;
  HostTensor x;
  std::optional<HostTensor> residual = std::nullopt, weight = std::nullopt, bias = std::nullopt;
  int normalized_dims = 1;
  double eps = 1e-6;

  Shape normalized_shape() const { return Shape(x.shape.end() - normalized_dims, x.shape.end()); }
  Shape scale_shape() const { return Shape(x.shape.begin(), x.shape.end() - normalized_dims); }
  Shape affine_shape() const {
    if (op == Op::ada) return x.shape;
    return op == Op::group ? Shape(x.shape.end() - 2, x.shape.end()) : normalized_shape();
  }
  DType output_dtype() const { return is_quant(op) ? DType::fp8_e4m3 : x.dtype; }
};

const TensorRef* optional_ref(std::optional<TensorRef>& t) { return t ? &*t : nullptr; }

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

// The first element of `actual` outside the tolerance of `expected`; "" when none is.
std::string first_difference(const char* what, HostTensor& expected, HostTensor& actual, double atol, double rtol) {
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double want = expected.at(i), got = actual.at(i);
    if (!testing::same_value(want, got) && !(std::abs(got - want) <= atol + rtol * std::abs(want))) {
      return detail::concat(what, "[", i, "] = ", got, ", reference ", want);
    }
  }
  return {};
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

// A copy of `host` on the device, `pad` bytes into its allocation; null when there is no tensor.
std::unique_ptr<DeviceBuffer> upload(const std::optional<HostTensor>& host, size_t pad) {
  if (!host) return nullptr;
  auto buffer = std::make_unique<DeviceBuffer>(host->bytes.size(), pad);
  buffer->upload(host->bytes.data());
  return buffer;
}

TensorRef device_ref(const void* data, DType dtype, const Shape& shape) {
  return make_tensor(const_cast<void*>(data), dtype, shape, 0);
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

enum class Values { normal, offset, special };

// Random normal values; `offset` adds 1000 to every value (a large common offset), `special` makes
// about one value in 200 NaN and one in 200 infinite.
void fill(HostTensor& t, std::mt19937_64& rng, Values values = Values::normal) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> pick(0, 199);
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = normal(rng) + (values == Values::offset ? 1000.0 : 0.0);
    if (values == Values::special) {
      const int p = pick(rng);
      if (p == 0) v = std::numeric_limits<double>::quiet_NaN();
      if (p == 1) v = -std::numeric_limits<double>::infinity();
    }
    t.set(i, v);
  }
}

NormInputs make_inputs(Op op, Shape shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                       int normalized_dims = 1, Values values = Values::normal) {
  NormInputs in{op, HostTensor(std::move(shape), dtype)};
  in.normalized_dims = normalized_dims;
  in.eps = default_eps(op);
  fill(in.x, rng, values);
  if (is_fused(op)) {
    in.residual.emplace(in.x.shape, dtype);
    fill(*in.residual, rng);
  }
  if (affine || affine_required(op)) {
    in.weight.emplace(in.affine_shape(), dtype);
    fill(*in.weight, rng);
  }
  if ((affine || affine_required(op)) && has_bias(op)) {
    in.bias.emplace(in.affine_shape(), dtype);
    fill(*in.bias, rng);
  }
  return in;
}

std::string describe(const NormInputs& in) {
  return detail::concat(op_name(in.op), " x ", detail::shape_string(in.x.shape), " ", dtype_name(in.x.dtype),
                        " normalized dims ", in.normalized_dims, in.weight ? " weight" : "", in.bias ? " bias" : "");
}

// describe(in), saying whether its values hold NaN and -inf.
std::string describe(const NormInputs& in, Values values) {
  return describe(in) + (values == Values::special ? " with NaN and -inf" : "");
}

// One case of the tests that walk a list of shapes.
struct ShapeAndType {
  Shape shape;
  DType dtype;
};

struct ShapeTypeAndWeight {
  Shape shape;
  DType dtype;
  bool weight;
};

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

// Calls test(row, x_shape, dtype) for every catalogue row of `op`; every row normalizes x's last dim.
template <class Test>
void for_each_catalogue_row(const char* op, Test test) {
  const std::vector<nlohmann::json> rows = testing::catalogue_rows(op);
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    if (row["tensors"].contains("normalized")) {
      ASSERT_EQ(row["tensors"]["normalized"].get<Shape>(), Shape{shape.back()});
    }
    test(row, shape, testing::parse_dtype(row["dtype"]));
  }
}

TEST_P(NormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2030);
  for_each_catalogue_row(catalogue_op(GetParam()), [&](const nlohmann::json& row, const Shape& shape, DType dtype) {
    NormInputs in = make_inputs(GetParam(), shape, dtype, rng);
    EXPECT_EQ(compare_with_reference(in), "") << row["workload"] << " " << describe(in);
  });
}

// Row lengths: short rows (several per block), odd lengths (scalar path), multiples of the vector
// width, and rows beyond the register capacity (streaming kernel).
int64_t draw_row_len(std::mt19937_64& rng) {
  static const int64_t kLengths[] = {1, 3, 7, 8, 31, 33, 64, 100, 257, 520, 1000, 1023, 2048, 3000,
                                     4096, 4104, 5120, 5121, 8192, 8200, 12288, 16384, 16392, 20000};
  std::uniform_int_distribution<size_t> pick(0, std::size(kLengths) - 1);
  return kLengths[pick(rng)];
}

constexpr int kRandomCases = 120;
constexpr DType kRandomDtypes[] = {DType::f32, DType::f16, DType::bf16};

// The shape of random case c: one row every fourth case, 3-D [B, S, H] every third, two
// normalized dims [.., 8, N / 8] every seventh where allowed.
struct RandomShape {
  Shape shape;
  int normalized_dims = 1;
};

RandomShape draw_shape(std::mt19937_64& rng, int c, bool two_normalized_dims) {
  const int64_t row_len = draw_row_len(rng);
  // At most ~400 K elements a case, so the CPU reference stays quick.
  std::uniform_int_distribution<int64_t> rows_of(1, std::max<int64_t>(1, 400000 / row_len));
  const int64_t rows = c % 4 == 0 ? 1 : std::min<int64_t>(rows_of(rng), 300);
  RandomShape drawn{{rows, row_len}};
  if (c % 3 == 1 && rows % 2 == 0) drawn.shape = {2, rows / 2, row_len};
  if (two_normalized_dims && c % 7 == 3 && row_len % 8 == 0) {
    drawn.shape.back() = row_len / 8;
    drawn.shape.insert(drawn.shape.end() - 1, 8);
    drawn.normalized_dims = 2;
  }
  return drawn;
}

Values draw_values(int c) { return c % 9 == 4 ? Values::special : Values::normal; }

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

class NormGpuCalls : public testing::GpuTest {};

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

// ---- QKNorm --------------------------------------------------------------------------------------

// The query and key of one qk_norm call: RMSNorm inputs with the same normalized dims.
struct QKInputs {
  NormInputs q, k;
};

QKInputs make_qk(const Shape& q_shape, const Shape& k_shape, DType dtype, std::mt19937_64& rng, bool affine = true,
                 int normalized_dims = 1, Values values = Values::normal) {
  return {make_inputs(Op::rms, q_shape, dtype, rng, affine, normalized_dims, values),
          make_inputs(Op::rms, k_shape, dtype, rng, affine, normalized_dims, values)};
}

std::string describe(const QKInputs& in) {
  return detail::concat("qk_norm q ", describe(in.q), ", k ", describe(in.k));
}

// Calls launch(stream) on the default stream, or captures it into a CUDA graph on a new stream
// and replays that once (`graph`); then waits for the device.
template <class Launch>
void launch_maybe_in_graph(Launch launch, bool graph) {
  if (graph) {
    cudaStream_t stream;
    testing::cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
    cudaGraph_t captured;
    cudaGraphExec_t exec;
    testing::cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
    launch(stream);
    testing::cuda_ok(cudaStreamEndCapture(stream, &captured), "end capture");
    testing::cuda_ok(cudaGraphInstantiate(&exec, captured, 0), "instantiate");
    testing::cuda_ok(cudaGraphLaunch(exec, stream), "launch");
    testing::cuda_ok(cudaStreamSynchronize(stream), "replay");
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(captured);
    cudaStreamDestroy(stream);
  } else {
    launch(nullptr);
  }
  testing::cuda_ok(cudaDeviceSynchronize(), "kernel");
}

// qk_norm on the device (captured in a CUDA graph and replayed where `graph`) against the reference;
// the first disagreement in q_out or k_out, or "".
std::string compare_qk(QKInputs& in, size_t offset = 0, bool graph = false) {
  const QKNorm p{in.q.normalized_shape(), in.q.eps};
  const DType dtype = in.q.x.dtype;
  HostTensor q_expected(in.q.x.shape, dtype), k_expected(in.k.x.shape, dtype);
  std::optional<TensorRef> host_q_weight, host_k_weight;
  if (in.q.weight) host_q_weight = in.q.weight->ref();
  if (in.k.weight) host_k_weight = in.k.weight->ref();
  reference::qk_norm(in.q.x.ref(), in.k.x.ref(), optional_ref(host_q_weight), optional_ref(host_k_weight),
                     q_expected.ref(), k_expected.ref(), p);

  const size_t pad = offset * dtype_size(dtype);
  const std::unique_ptr<DeviceBuffer> q = upload(in.q.x, pad), k = upload(in.k.x, pad),
                                      q_weight = upload(in.q.weight, pad), k_weight = upload(in.k.weight, pad);
  DeviceBuffer q_out(in.q.x.bytes.size(), pad), k_out(in.k.x.bytes.size(), pad);
  q_out.poison();
  k_out.poison();
  std::optional<TensorRef> q_weight_ref, k_weight_ref;
  if (q_weight) q_weight_ref = device_ref(q_weight->data(), dtype, p.normalized_shape);
  if (k_weight) k_weight_ref = device_ref(k_weight->data(), dtype, p.normalized_shape);
  const auto launch = [&](cudaStream_t stream) {
    qk_norm(device_ref(q->data(), dtype, in.q.x.shape), device_ref(k->data(), dtype, in.k.x.shape),
            optional_ref(q_weight_ref), optional_ref(k_weight_ref), device_ref(q_out.data(), dtype, in.q.x.shape),
            device_ref(k_out.data(), dtype, in.k.x.shape), p, stream);
  };
  launch_maybe_in_graph(launch, graph);

  HostTensor q_actual(in.q.x.shape, dtype), k_actual(in.k.x.shape, dtype);
  q_out.download(q_actual.bytes.data());
  k_out.download(k_actual.bytes.data());
  const double tol = tolerance(Op::rms, dtype);
  const std::string difference = first_difference("q_out", q_expected, q_actual, tol, tol);
  return difference.empty() ? first_difference("k_out", k_expected, k_actual, tol, tol) : difference;
}

class QKNormGpu : public testing::GpuTest {};

TEST_F(QKNormGpu, EveryCatalogueRow) {
  // The workloads give x (the query) only; k has its shape (spec §2.18).
  std::mt19937_64 rng(2031);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("QKNormFwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    ASSERT_EQ(row["tensors"]["normalized"].get<Shape>(), Shape{shape.back()});
    QKInputs in = make_qk(shape, shape, testing::parse_dtype(row["dtype"]), rng);
    EXPECT_EQ(compare_qk(in), "") << row["workload"] << " " << describe(in);
  }
}

TEST_F(QKNormGpu, RandomShapes) {
  // [tokens, heads, head_dim] with fewer key heads (GQA), 2-D hidden-size rows (OLMo-2), and the
  // row lengths of the other norms (odd, vectorized, streaming).
  std::mt19937_64 rng(17);
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  std::uniform_int_distribution<int64_t> heads_of(1, 8);
  for (int c = 0; c < 120; ++c) {
    const int64_t head_dim = c % 2 == 0 ? std::vector<int64_t>{64, 128, 256, 72, 100}[c % 5] : draw_row_len(rng);
    std::uniform_int_distribution<int64_t> tokens_of(1, std::max<int64_t>(1, 100000 / head_dim / 16));
    const int64_t tokens = c % 4 == 0 ? 1 : std::min<int64_t>(tokens_of(rng), 200);
    const int64_t k_heads = heads_of(rng), q_heads = k_heads * heads_of(rng);
    Shape q{tokens, q_heads, head_dim}, k{tokens, k_heads, head_dim};
    if (c % 3 == 2) q = {tokens, head_dim}, k = {tokens, head_dim};
    QKInputs in = make_qk(q, k, dtypes[c % 3], rng, c % 5 != 2, 1, c % 9 == 4 ? Values::special : Values::normal);
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_qk(in, offset), "") << "case " << c << " " << describe(in) << " offset " << offset;
  }
}

TEST_F(QKNormGpu, EdgeCases) {
  std::mt19937_64 rng(18);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (int64_t row_len : {128, 3001, 20000}) {
      QKInputs offset = make_qk({16, row_len}, {4, row_len}, dtype, rng, true, 1, Values::offset);
      EXPECT_EQ(compare_qk(offset), "") << "large common offset " << describe(offset);
      QKInputs nan = make_qk({4, row_len}, {2, row_len}, dtype, rng);
      nan.k.x.set(row_len + 5, std::numeric_limits<double>::quiet_NaN());  // k's row 1 only
      EXPECT_EQ(compare_qk(nan), "") << "NaN " << describe(nan);
      EXPECT_EQ(compare_qk(nan, 1), "") << "unaligned " << describe(nan);
      EXPECT_EQ(compare_qk(nan, 3), "") << "unaligned " << describe(nan);
    }
  }
  QKInputs empty = make_qk({0, 8, 128}, {0, 2, 128}, DType::bf16, rng);
  EXPECT_EQ(compare_qk(empty), "") << "empty batch";
  QKInputs two_dims = make_qk({3, 4, 8, 16}, {3, 1, 8, 16}, DType::f16, rng, true, 2);
  EXPECT_EQ(compare_qk(two_dims), "") << describe(two_dims);
}

TEST_F(QKNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(19);
  QKInputs in = make_qk({64, 32, 128}, {64, 8, 128}, DType::bf16, rng);
  EXPECT_EQ(compare_qk(in, 0, true), "");
}

TEST_F(QKNormGpu, OutputsMayNotOverlapOnTheDevice) {
  DeviceBuffer q(4 * 64 * sizeof(float)), k(2 * 64 * sizeof(float)), out(4 * 64 * sizeof(float));
  const auto view = [](const DeviceBuffer& b, size_t offset, int64_t rows) {
    return make_tensor(static_cast<char*>(b.data()) + offset * sizeof(float), DType::f32, Shape{rows, 64}, 0);
  };
  try {
    qk_norm(view(q, 0, 4), view(k, 0, 2), nullptr, nullptr, view(out, 0, 4), view(out, 64, 2), {{64}});
    ADD_FAILURE() << "accepted k_out inside q_out";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("qk_norm: q_out and k_out overlap in memory"), std::string::npos) << e.what();
  }
}

// ---- training forward and backward (spec §2.13, 2.14) ---------------------------------------------

// A host tensor copied to the device (`pad` bytes into its allocation), or a poisoned device
// tensor of its shape and dtype for an output.
struct OnDevice {
  std::unique_ptr<DeviceBuffer> buffer;
  TensorRef ref;

  OnDevice(HostTensor& host, size_t pad, bool poisoned = false)
      : buffer(std::make_unique<DeviceBuffer>(host.bytes.size(), pad * dtype_size(host.dtype))),
        ref(make_tensor(buffer->data(), host.dtype, host.shape, 0)) {
    if (poisoned) buffer->poison();
    else buffer->upload(host.bytes.data());
  }
  void download(HostTensor& host) const { buffer->download(host.bytes.data()); }
};

// One backward call: x, grad_out, an optional weight, and the statistics of the reference's
// training forward, so that the comparison isolates the backward.
struct BackwardInputs {
  Op op;  // rms or layer
  HostTensor x, dy;
  std::optional<HostTensor> weight = std::nullopt;
  int normalized_dims = 1;

  Shape normalized_shape() const { return Shape(x.shape.end() - normalized_dims, x.shape.end()); }
  Shape stats_shape() const { return Shape(x.shape.begin(), x.shape.end() - normalized_dims); }
};

BackwardInputs make_backward_inputs(Op op, Shape shape, DType dtype, std::mt19937_64& rng, bool weight = true,
                                    int normalized_dims = 1, Values values = Values::normal) {
  BackwardInputs in{op, HostTensor(shape, dtype), HostTensor(shape, dtype)};
  in.normalized_dims = normalized_dims;
  fill(in.x, rng, values);
  fill(in.dy, rng);
  if (weight) {
    in.weight.emplace(in.normalized_shape(), dtype);
    fill(*in.weight, rng);
  }
  return in;
}

std::string describe(const BackwardInputs& in) {
  return detail::concat(op_name(in.op), "_backward x ", detail::shape_string(in.x.shape), " ", dtype_name(in.x.dtype),
                        " normalized dims ", in.normalized_dims, in.weight ? " weight" : "");
}

// Spec §2.13, 2.14 (proposed): atol = rtol; the parameter gradients are sums over M rows, so their
// atol grows with sqrt(M).
double backward_tolerance(DType dtype) { return dtype == DType::f32 ? 1e-4 : dtype == DType::f16 ? 1e-2 : 2e-2; }

// The training forward on the device and the reference: output and statistics.
std::string compare_training_forward(BackwardInputs& in, size_t pad = 0) {
  const bool layer = in.op == Op::layer;
  const Shape ns = in.normalized_shape();
  const double eps = default_eps(in.op);
  HostTensor y(in.x.shape, in.x.dtype), mean(in.stats_shape(), DType::f32), rstd(in.stats_shape(), DType::f32);
  std::optional<TensorRef> host_weight;
  if (in.weight) host_weight = in.weight->ref();
  if (layer) {
    reference::layer_norm_with_stats(in.x.ref(), optional_ref(host_weight), nullptr, y.ref(), mean.ref(), rstd.ref(),
                                     {ns, eps});
  } else {
    reference::rms_norm_with_stats(in.x.ref(), optional_ref(host_weight), y.ref(), rstd.ref(), {ns, eps});
  }
  const OnDevice x(in.x, pad), d_y(y, pad, true), d_mean(mean, pad, true), d_rstd(rstd, pad, true);
  std::optional<OnDevice> weight;
  std::optional<TensorRef> weight_ref;
  if (in.weight) weight_ref = weight.emplace(*in.weight, pad).ref;
  if (layer) {
    layer_norm_with_stats(x.ref, optional_ref(weight_ref), nullptr, d_y.ref, d_mean.ref, d_rstd.ref, {ns, eps});
  } else {
    rms_norm_with_stats(x.ref, optional_ref(weight_ref), d_y.ref, d_rstd.ref, {ns, eps});
  }
  testing::cuda_ok(cudaDeviceSynchronize(), "training forward");
  HostTensor got_y(y.shape, y.dtype), got_mean(mean.shape, DType::f32), got_rstd(rstd.shape, DType::f32);
  d_y.download(got_y);
  d_rstd.download(got_rstd);
  const double tol = tolerance(in.op, in.x.dtype);
  std::string difference = first_difference("output", y, got_y, tol, tol);
  if (difference.empty()) difference = first_difference("rstd", rstd, got_rstd, 1e-5, 1e-4);
  if (layer && difference.empty()) {
    d_mean.download(got_mean);
    difference = first_difference("mean", mean, got_mean, 1e-5, 1e-4);
  }
  return difference;
}

// The backward's workspace for x_shape, poisoned, and the pointer a call takes (null where none is
// needed).
struct BackwardWorkspace {
  int64_t elements;
  DeviceBuffer buffer;
  TensorRef ref;

  BackwardWorkspace(Op op, const Shape& x_shape, const Shape& ns)
      : elements(op == Op::layer ? layer_norm_backward_workspace_elements(x_shape, {ns})
                                 : rms_norm_backward_workspace_elements(x_shape, {ns})),
        buffer(static_cast<size_t>(elements) * sizeof(float)),
        ref(device_ref(buffer.data(), DType::f32, Shape{elements})) {
    buffer.poison();
  }
  const TensorRef* arg() const { return elements ? &ref : nullptr; }
};

// The backward on the device and the reference from the same statistics; returns the first
// disagreement, or "". `grad_weight_bits`, when given, receives the device's grad_weight.
std::string compare_backward(BackwardInputs& in, size_t pad = 0, HostTensor* grad_weight_bits = nullptr) {
  const bool layer = in.op == Op::layer;
  const Shape ns = in.normalized_shape();
  HostTensor y(in.x.shape, in.x.dtype), mean(in.stats_shape(), DType::f32), rstd(in.stats_shape(), DType::f32);
  std::optional<TensorRef> host_weight;
  if (in.weight) host_weight = in.weight->ref();
  if (layer) {
    reference::layer_norm_with_stats(in.x.ref(), optional_ref(host_weight), nullptr, y.ref(), mean.ref(), rstd.ref(),
                                     {ns, default_eps(in.op)});
  } else {
    reference::rms_norm_with_stats(in.x.ref(), optional_ref(host_weight), y.ref(), rstd.ref(),
                                   {ns, default_eps(in.op)});
  }
  HostTensor grad_x(in.x.shape, in.x.dtype), grad_w(ns, in.x.dtype), grad_b(ns, in.x.dtype);
  const TensorRef grad_w_ref = grad_w.ref(), grad_b_ref = grad_b.ref();
  if (layer) {
    reference::layer_norm_backward(in.dy.ref(), in.x.ref(), optional_ref(host_weight), mean.ref(), rstd.ref(),
                                   grad_x.ref(), &grad_w_ref, &grad_b_ref, {ns});
  } else {
    reference::rms_norm_backward(in.dy.ref(), in.x.ref(), optional_ref(host_weight), rstd.ref(), grad_x.ref(),
                                 &grad_w_ref, {ns});
  }

  const OnDevice x(in.x, pad), dy(in.dy, pad), d_mean(mean, pad), d_rstd(rstd, pad);
  const OnDevice d_grad_x(grad_x, pad, true), d_grad_w(grad_w, pad, true), d_grad_b(grad_b, pad, true);
  std::optional<OnDevice> weight;
  std::optional<TensorRef> weight_ref;
  if (in.weight) weight_ref = weight.emplace(*in.weight, pad).ref;
  const BackwardWorkspace workspace(in.op, in.x.shape, ns);
  if (layer) {
    layer_norm_backward(dy.ref, x.ref, optional_ref(weight_ref), d_mean.ref, d_rstd.ref, d_grad_x.ref, &d_grad_w.ref,
                        &d_grad_b.ref, workspace.arg(), {ns});
  } else {
    rms_norm_backward(dy.ref, x.ref, optional_ref(weight_ref), d_rstd.ref, d_grad_x.ref, &d_grad_w.ref,
                      workspace.arg(), {ns});
  }
  testing::cuda_ok(cudaDeviceSynchronize(), "backward");

  HostTensor got_x(grad_x.shape, grad_x.dtype), got_w(ns, grad_w.dtype), got_b(ns, grad_b.dtype);
  d_grad_x.download(got_x);
  d_grad_w.download(got_w);
  if (grad_weight_bits) d_grad_w.download(*grad_weight_bits);
  const double tol = backward_tolerance(in.x.dtype);
  const double rows = static_cast<double>(in.dy.numel()) / static_cast<double>(grad_w.numel());
  const double sum_atol = tol * std::sqrt(std::max(1.0, rows));
  std::string difference = first_difference("grad_x", grad_x, got_x, tol, tol);
  if (difference.empty()) difference = first_difference("grad_weight", grad_w, got_w, sum_atol, tol);
  if (layer && difference.empty()) {
    d_grad_b.download(got_b);
    difference = first_difference("grad_bias", grad_b, got_b, sum_atol, tol);
  }
  return difference;
}

class NormBackwardGpu : public testing::GpuTestWithParam<Op> {};

const char* catalogue_backward_op(Op op) { return op == Op::rms ? "RMSNormBwd" : "LayerNormBwd"; }

TEST_P(NormBackwardGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2031);
  for_each_catalogue_row(catalogue_backward_op(GetParam()),
                         [&](const nlohmann::json& row, const Shape& shape, DType dtype) {
                           BackwardInputs in = make_backward_inputs(GetParam(), shape, dtype, rng);
                           EXPECT_EQ(compare_backward(in), "") << row["workload"] << " " << describe(in);
                           EXPECT_EQ(compare_training_forward(in), "") << row["workload"] << " " << describe(in);
                         });
}

TEST_P(NormBackwardGpu, RandomShapes) {
  const Op op = GetParam();
  std::mt19937_64 rng(17 + static_cast<int>(op));
  for (int c = 0; c < kRandomCases; ++c) {
    const RandomShape drawn = draw_shape(rng, c, true);
    BackwardInputs in = make_backward_inputs(op, drawn.shape, kRandomDtypes[c % 3], rng, c % 5 != 2,
                                             drawn.normalized_dims, draw_values(c));
    const size_t pad = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare_backward(in, pad), "") << "case " << c << " " << describe(in) << " offset " << pad;
    if (c % 4 == 1) {
      EXPECT_EQ(compare_training_forward(in, pad), "") << "case " << c << " " << describe(in);
    }
  }
}

TEST_P(NormBackwardGpu, NaNPropagatesToItsRowAndTheParameterGradients) {
  std::mt19937_64 rng(18);
  for (int64_t row_len : {4096, 3001, 20000}) {
    BackwardInputs in = make_backward_inputs(GetParam(), {4, row_len}, DType::bf16, rng);
    in.x.set(row_len + 17, std::numeric_limits<double>::quiet_NaN());  // row 1 only
    EXPECT_EQ(compare_backward(in), "") << describe(in);
    EXPECT_EQ(compare_training_forward(in), "") << describe(in);
  }
}

// Parameter gradients of many rows, taken by blocks of several rows on their own barriers: short
// rows many to a block with the last group part empty, rows that do not divide among the blocks,
// rows of 256 and 512 threads, rows just past a warp's multiple; and rows too long for it (f32
// 8192, f16 12288), which stay one a block.
TEST_P(NormBackwardGpu, ManyRowsInBlocksOfSeveralRows) {
  std::mt19937_64 rng(22);
  const ShapeAndType cases[] = {
      {{1001, 64}, DType::bf16},  {{133, 4096}, DType::f16},  {{2049, 4096}, DType::bf16}, {{300, 8192}, DType::bf16},
      {{531, 2056}, DType::bf16}, {{700, 8192}, DType::f32},  {{301, 12288}, DType::f16}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// Many rows staged ahead in shared memory (row_norm_backward_staged): rows that leave some blocks
// one row fewer than others and blocks with fewer rows than stages ahead (140 rows), two and four
// vectors a thread in 128 to 512 threads, with and without a weight, every dtype.
TEST_P(NormBackwardGpu, ManyRowsStagedAhead) {
  std::mt19937_64 rng(23);
  const ShapeTypeAndWeight cases[] = {{{140, 2048}, DType::bf16, true},  {{140, 2048}, DType::f16, false},
                                      {{265, 1024}, DType::f32, false},  {{1000, 3072}, DType::bf16, true},
                                      {{397, 16384}, DType::bf16, true}, {{300, 8192}, DType::f16, false}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng, c.weight);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// 1000 + randn, as NormGpu.LargeCommonOffset: x_hat from x and the f32 statistics must not lose the
// unit spread to the offset, in the staged kernel (many rows: x * rstd - mean * rstd in one FMA) and
// the row kernel (few rows: (x - mean) * rstd). The spec's tolerances.
TEST_P(NormBackwardGpu, LargeCommonOffset) {
  std::mt19937_64 rng(24);
  const ShapeTypeAndWeight cases[] = {{{264, 4096}, DType::f32, true},
                                      {{264, 4096}, DType::bf16, true},
                                      {{140, 8192}, DType::f16, false},
                                      {{16, 3000}, DType::f32, true}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng, c.weight, 1, Values::offset);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
  }
}

// Rows shared by the blocks of a cluster: one row (its parameter gradients written directly), and
// several rows without a weight (no partials); with a weight, several rows stay a block's own.
TEST_P(NormBackwardGpu, RowsSharedByClusters) {
  std::mt19937_64 rng(21);
  const ShapeTypeAndWeight cases[] = {{{1, 65536}, DType::f16, true},
                                      {{1, 40000}, DType::bf16, true},
                                      {{1, 8192}, DType::f32, true},
                                      {{3, 8192}, DType::bf16, false},
                                      {{3, 8192}, DType::bf16, true}};
  for (const auto& c : cases) {
    BackwardInputs in = make_backward_inputs(GetParam(), c.shape, c.dtype, rng, c.weight);
    EXPECT_EQ(compare_backward(in), "") << describe(in);
    EXPECT_EQ(compare_training_forward(in), "") << describe(in);
  }
}

TEST_P(NormBackwardGpu, ParameterGradientsAreDeterministic) {
  std::mt19937_64 rng(19);
  BackwardInputs in = make_backward_inputs(GetParam(), {2048, 4096}, DType::bf16, rng);
  HostTensor first(in.normalized_shape(), in.x.dtype), second(in.normalized_shape(), in.x.dtype);
  ASSERT_EQ(compare_backward(in, 0, &first), "");
  ASSERT_EQ(compare_backward(in, 0, &second), "");
  EXPECT_EQ(first.bytes, second.bytes);
}

TEST_P(NormBackwardGpu, EmptyBatchGivesZeroParameterGradients) {
  std::mt19937_64 rng(20);
  BackwardInputs in = make_backward_inputs(GetParam(), {0, 64}, DType::f16, rng);
  EXPECT_EQ(compare_backward(in), "");
}

INSTANTIATE_TEST_SUITE_P(NormBackward, NormBackwardGpu, ::testing::Values(Op::rms, Op::layer),
                         [](const auto& info) { return op_name(info.param); });

TEST_F(NormGpuCalls, TrainingForwardAndBackwardCapturedInACudaGraph) {
  // The replayed graph gives the bits of the same calls made directly (whose numerics the tests
  // above check).
  std::mt19937_64 rng(21);
  BackwardInputs in = make_backward_inputs(Op::layer, {64, 4096}, DType::bf16, rng);
  const Shape ns{4096};
  HostTensor mean({64}, DType::f32), rstd({64}, DType::f32), grad_x(in.x.shape, in.x.dtype),
      grad_w(ns, in.x.dtype), grad_b(ns, in.x.dtype);
  const OnDevice x(in.x, 0), dy(in.dy, 0), weight(*in.weight, 0), d_y(in.x, 0, true), d_mean(mean, 0, true),
      d_rstd(rstd, 0, true), d_grad_x(grad_x, 0, true), d_grad_w(grad_w, 0, true), d_grad_b(grad_b, 0, true);
  const BackwardWorkspace workspace(Op::layer, in.x.shape, ns);
  cudaStream_t stream;
  testing::cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  const auto calls = [&] {
    layer_norm_with_stats(x.ref, &weight.ref, nullptr, d_y.ref, d_mean.ref, d_rstd.ref, {ns}, stream);
    layer_norm_backward(dy.ref, x.ref, &weight.ref, d_mean.ref, d_rstd.ref, d_grad_x.ref, &d_grad_w.ref,
                        &d_grad_b.ref, workspace.arg(), {ns}, stream);
  };
  const auto results = [&] {
    testing::cuda_ok(cudaStreamSynchronize(stream), "synchronize");
    std::vector<HostTensor> out{HostTensor(grad_x.shape, grad_x.dtype), HostTensor(ns, grad_w.dtype),
                                HostTensor(ns, grad_b.dtype)};
    d_grad_x.download(out[0]);
    d_grad_w.download(out[1]);
    d_grad_b.download(out[2]);
    return out;
  };
  calls();
  const std::vector<HostTensor> direct = results();
  for (const OnDevice* output : {&d_y, &d_mean, &d_rstd, &d_grad_x, &d_grad_w, &d_grad_b}) output->buffer->poison();
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  testing::cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "begin capture");
  calls();
  testing::cuda_ok(cudaStreamEndCapture(stream, &graph), "end capture");
  testing::cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  testing::cuda_ok(cudaGraphLaunch(exec, stream), "launch");
  const std::vector<HostTensor> replayed = results();
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_EQ(replayed[i].bytes, direct[i].bytes) << "output " << i;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_F(NormGpuCalls, BackwardRejectsHostTensors) {
  HostTensor x({2, 8}, DType::f16), dy({2, 8}, DType::f16), rstd({2}, DType::f32), grad_x({2, 8}, DType::f16);
  try {
    rms_norm_backward(dy.ref(), x.ref(), nullptr, rstd.ref(), grad_x.ref(), nullptr, nullptr, {{8}});
    ADD_FAILURE() << "accepted a CPU tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rms_norm_backward: x must be a CUDA tensor"), std::string::npos) << e.what();
  }
}

// A shape of rank 1 to 4 for the reductions' random cases: odd, power-of-two and long dims, at most
// 2M elements so that the CPU reference stays quick.
Shape draw_reduction_shape(std::mt19937_64& rng) {
  static const int64_t kSizes[] = {1, 2, 3, 7, 8, 31, 64, 100, 257, 1000, 4097, 8192, 33000};
  std::uniform_int_distribution<int> rank_of(1, 4);
  std::uniform_int_distribution<size_t> size_of(0, std::size(kSizes) - 1);
  Shape shape;
  const int rank = rank_of(rng);
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    int64_t size = kSizes[size_of(rng)];
    while (numel * size > 2'000'000) size = std::max<int64_t>(1, size / 8);
    shape.push_back(size);
    numel *= size;
  }
  return shape;
}

// The call throws solops::Error with `fragment` in its message.
template <class Call>
void expect_message(Call call, const std::string& fragment) {
  try {
    call();
    ADD_FAILURE() << "accepted: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

// ---- L1NormFwd / L2NormFwd (spec §2.22, 2.23) ------------------------------------------------------

namespace vector_norms {

// Spec §2.22: fp32 1e-5, fp16 and bf16 1e-2 (atol = rtol).
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-5 : 1e-2; }

// vector_norm on the device (x `offset` elements into its allocation, the output and workspace
// poisoned; replayed from a CUDA graph where `graph`) against the reference: the first
// disagreement, or "".
std::string compare(HostTensor& x, const VectorNorm& p, size_t offset = 0, bool graph = false) {
  const Shape out_shape = vector_norm_output_shape(x.shape, p);
  HostTensor expected(out_shape, x.dtype), actual(out_shape, x.dtype);
  reference::vector_norm(x.ref(), expected.ref(), p);
  const int64_t workspace_elements = vector_norm_workspace_elements(x.shape, p);
  DeviceBuffer x_buffer(x.bytes.size(), offset * dtype_size(x.dtype)), y(expected.bytes.size(), offset * 2);
  DeviceBuffer workspace(static_cast<size_t>(workspace_elements) * sizeof(float));
  x_buffer.upload(x.bytes.data());
  y.poison();
  workspace.poison();
  const TensorRef x_ref = device_ref(x_buffer.data(), x.dtype, x.shape);
  const TensorRef y_ref = device_ref(y.data(), x.dtype, out_shape);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, Shape{workspace_elements});
  const TensorRef* workspace_arg = workspace_elements ? &workspace_ref : nullptr;
  launch_maybe_in_graph([&](cudaStream_t stream) { vector_norm(x_ref, y_ref, workspace_arg, p, stream); }, graph);
  y.download(actual.bytes.data());
  return first_difference("output", expected, actual, tolerance(x.dtype), tolerance(x.dtype));
}

std::string describe(const HostTensor& x, const VectorNorm& p) {
  return detail::concat("x ", detail::shape_string(x.shape), " ", dtype_name(x.dtype), " ord ", p.ord, " dim ",
                        detail::shape_string(p.dim), p.keepdim ? " keepdim" : "");
}

HostTensor random_x(const Shape& shape, DType dtype, std::mt19937_64& rng, Values values = Values::normal) {
  HostTensor x(shape, dtype);
  fill(x, rng, values);
  return x;
}

class VectorNormGpu : public testing::GpuTest {};

TEST_F(VectorNormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(40);
  for (const auto& [op, ord] : {std::pair{"L1NormFwd", 1}, std::pair{"L2NormFwd", 2}}) {
    const std::vector<nlohmann::json> rows = testing::catalogue_rows(op);
    ASSERT_FALSE(rows.empty());
    for (const auto& row : rows) {
      const VectorNorm p{ord, row["params"].value("dim", Shape{}), false};
      HostTensor x = random_x(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), rng);
      EXPECT_EQ(compare(x, p), "") << row["workload"] << " " << describe(x, p);
    }
  }
}

TEST_F(VectorNormGpu, RandomShapes) {
  std::mt19937_64 rng(41);
  std::uniform_int_distribution<int> coin(0, 1);
  for (int c = 0; c < 120; ++c) {
    const Shape shape = draw_reduction_shape(rng);
    const auto rank = static_cast<int>(shape.size());
    VectorNorm p{1 + coin(rng), {}, coin(rng) == 1};
    if (c % 4 != 0) {
      for (int d = 0; d < rank; ++d) {
        if (coin(rng)) p.dim.push_back(coin(rng) ? d : d - rank);
      }
    }
    HostTensor x = random_x(shape, kRandomDtypes[c % 3], rng, draw_values(c));
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare(x, p, offset), "") << "case " << c << " " << describe(x, p) << " offset " << offset;
  }
}

TEST_F(VectorNormGpu, EdgeShapes) {
  std::mt19937_64 rng(42);
  for (const Shape& shape : {Shape{}, Shape{1}, Shape{1, 1}, Shape{3, 0}, Shape{0, 5}, Shape{1, 16384}}) {
    for (int ord : {1, 2}) {
      HostTensor x = random_x(shape, DType::f32, rng);
      const VectorNorm full{ord}, last{ord, shape.empty() ? Shape{} : Shape{-1}};
      EXPECT_EQ(compare(x, full), "") << describe(x, full);
      EXPECT_EQ(compare(x, last), "") << describe(x, last);
    }
  }
}

TEST_F(VectorNormGpu, NaNAndInfPropagate) {
  std::mt19937_64 rng(43);
  for (int ord : {1, 2}) {
    HostTensor x = random_x({64, 32768}, DType::bf16, rng);
    x.set(12345, std::numeric_limits<double>::infinity());
    EXPECT_EQ(compare(x, {ord}), "") << "inf";
    x.set(777777, std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(compare(x, {ord}), "") << "NaN";
    EXPECT_EQ(compare(x, {ord, {1}}), "") << "NaN, per row";
  }
}

TEST_F(VectorNormGpu, F16L1OverflowsToInf) {
  // Spec §2.22: |x| of [2048, 4096] randn sums to ~6.7e6 > 65504, so the f16 result is +inf.
  std::mt19937_64 rng(44);
  HostTensor x = random_x({2048, 4096}, DType::f16, rng);
  EXPECT_EQ(compare(x, {1}), "");
}

TEST_F(VectorNormGpu, UnalignedAndDeterministic) {
  std::mt19937_64 rng(45);
  HostTensor x = random_x({4, 128, 4096}, DType::f16, rng);
  for (size_t offset : {1, 3}) EXPECT_EQ(compare(x, {2, {0, 2}}, offset), "") << offset;
  // Bit-identical from run to run: the partial sums and their order depend on the shape alone.
  const VectorNorm p{2};
  DeviceBuffer x_buffer(x.bytes.size()), y(2), workspace(sizeof(float) * vector_norm_workspace_elements(x.shape, p));
  x_buffer.upload(x.bytes.data());
  const TensorRef x_ref = device_ref(x_buffer.data(), x.dtype, x.shape), y_ref = device_ref(y.data(), x.dtype, {});
  const TensorRef w_ref =
      device_ref(workspace.data(), DType::f32, Shape{vector_norm_workspace_elements(x.shape, p)});
  uint16_t first = 0, again = 0;
  vector_norm(x_ref, y_ref, &w_ref, p);
  y.download(&first);
  for (int i = 0; i < 5; ++i) {
    vector_norm(x_ref, y_ref, &w_ref, p);
    y.download(&again);
    EXPECT_EQ(first, again);
  }
}

// Reductions split over several blocks an output: outputs of several runs, whose partials meet at
// the grid-wide barrier, with chunks that cross run boundaries (vector walk over three runs of
// 40000) and more splits than the grid has resident blocks (each block takes several); rows whose
// length is no multiple of the vector (run walk); outputs of one aligned run, whose partials the
// second kernel adds (100 rows of 11 splits, a full reduction of 48).
TEST_F(VectorNormGpu, SplitReductions) {
  std::mt19937_64 rng(47);
  const std::pair<Shape, VectorNorm> cases[] = {
      {{3, 5, 40000}, {2, {0, 2}}},    {{3, 5, 40000}, {1, {0, -1}}}, {{7, 50001}, {2, {1}}},
      {{100, 100000}, {1, {1}}},       {{40000, 3}, {2, {0}}},        {{2, 3, 65536}, {2, {}}},
  };
  for (const auto& [shape, p] : cases) {
    ASSERT_GT(vector_norm_workspace_elements(shape, p), 0) << detail::shape_string(shape);
    for (DType dtype : kRandomDtypes) {
      HostTensor x = random_x(shape, dtype, rng);
      EXPECT_EQ(compare(x, p), "") << describe(x, p);
    }
  }
}

// Outputs of one block whose runs are loaded all at once (run_norms): two loads a run (f32 runs of
// 4096), runs shorter than the block's threads, runs over two outer reduced dims, and nine runs,
// more than a thread's eight loads (the run walk instead).
TEST_F(VectorNormGpu, RunsLoadedAtOnce) {
  std::mt19937_64 rng(48);
  const std::pair<Shape, VectorNorm> cases[] = {
      {{4, 16, 4096}, {2, {0, 2}}},
      {{3, 7, 1000}, {1, {0, 2}}},
      {{2, 3, 2, 5, 64}, {2, {0, 2, 4}}},
      {{9, 2, 512}, {1, {0, 2}}},
  };
  for (const auto& [shape, p] : cases) {
    ASSERT_EQ(vector_norm_workspace_elements(shape, p), 0) << detail::shape_string(shape);
    for (DType dtype : kRandomDtypes) {
      HostTensor x = random_x(shape, dtype, rng);
      EXPECT_EQ(compare(x, p), "") << describe(x, p);
    }
  }
}

TEST_F(VectorNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(46);
  HostTensor x = random_x({2048, 4096}, DType::bf16, rng);
  EXPECT_EQ(compare(x, {2}, 0, true), "");
  EXPECT_EQ(compare(x, {1, {1}}, 0, true), "");
}

TEST_F(VectorNormGpu, WorkspaceRulesOnTheDevice) {
  const Shape shape{2048, 4096};
  DeviceBuffer x(2048 * 4096 * 2), y(2), small(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::bf16, shape), y_ref = device_ref(y.data(), DType::bf16, {});
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  expect_message([&] { vector_norm(x_ref, y_ref, nullptr, {}); },
                 "vector_norm: workspace is null but this call needs 1024 f32 elements");
  expect_message([&] { vector_norm(x_ref, y_ref, &small_ref, {}); }, "workspace has 16 elements, fewer than the 1024");
  const TensorRef in_x = device_ref(x.data(), DType::f32, Shape{1024});
  expect_message([&] { vector_norm(x_ref, y_ref, &in_x, {}); }, "x and workspace overlap in memory");
  HostTensor host({4}, DType::f32), host_y({}, DType::f32);
  expect_message([&] { vector_norm(host.ref(), host_y.ref(), nullptr, {}); }, "vector_norm: x must be a CUDA tensor");
}

// The workspace rule of the backward: needed for grad_weight or grad_bias over more than one row,
// of at least the elements the sizing function gives, apart from every other tensor; not needed
// without parameter gradients or for a single row.
TEST_F(NormGpuCalls, BackwardWorkspaceRules) {
  const Shape shape{64, 4096}, ns{4096};
  const int64_t needed = layer_norm_backward_workspace_elements(shape, {ns});
  EXPECT_EQ(needed, 2 * 64 * 4096);
  EXPECT_EQ(rms_norm_backward_workspace_elements(shape, {ns}), 64 * 4096);
  EXPECT_EQ(rms_norm_backward_workspace_elements(Shape{1, 4096}, {ns}), 0);
  // grad_x's buffer has room for the f32 workspace laid over it below.
  DeviceBuffer x(64 * 4096 * 2), dy(64 * 4096 * 2), grad_x(64 * 4096 * 4), stats(64 * 4), grad_w(4096 * 2),
      small(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::bf16, shape), dy_ref = device_ref(dy.data(), DType::bf16, shape);
  const TensorRef grad_x_ref = device_ref(grad_x.data(), DType::bf16, shape);
  const TensorRef stats_ref = device_ref(stats.data(), DType::f32, Shape{64});
  const TensorRef grad_w_ref = device_ref(grad_w.data(), DType::bf16, ns);
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  expect_message([&] { layer_norm_backward(dy_ref, x_ref, nullptr, stats_ref, stats_ref, grad_x_ref, &grad_w_ref,
                                           nullptr, nullptr, {ns}); },
                 "layer_norm_backward: workspace is null but this call needs 524288 f32 elements "
                 "(layer_norm_backward_workspace_elements)");
  expect_message([&] { rms_norm_backward(dy_ref, x_ref, nullptr, stats_ref, grad_x_ref, &grad_w_ref, &small_ref,
                                         {ns}); },
                 "workspace has 16 elements, fewer than the 262144");
  const TensorRef in_grad_x = device_ref(grad_x.data(), DType::f32, Shape{64 * 4096});
  expect_message([&] { rms_norm_backward(dy_ref, x_ref, nullptr, stats_ref, grad_x_ref, &grad_w_ref, &in_grad_x,
                                         {ns}); },
                 "grad_x and workspace overlap in memory");
}


}  // namespace vector_norms

// ---- WeightNormFwd (spec §2.20, §6.7) ----------------------------------------------------------------

namespace weight_norms {

// Spec §2.20: output fp32 1e-5, fp16 1e-3, bf16 1.6e-2; norm rtol 1e-5.
double tolerance(DType dtype) { return dtype == DType::f32 ? 1e-5 : dtype == DType::f16 ? 1e-3 : 1.6e-2; }

Shape g_shape(const Shape& v_shape, int64_t dim) {
  if (dim < 0) return Shape{1};
  return Shape{v_shape[static_cast<size_t>(dim)]};
}

// weight_norm on the device (v, g and y `offset` elements into their allocations, y, norm and the
// workspace poisoned; replayed from a CUDA graph where `graph`) against the reference: the first
// disagreement, or "".
std::string compare(HostTensor& v, HostTensor& g, const WeightNorm& p, size_t offset = 0, bool graph = false) {
  const Shape norm_shape = weight_norm_norm_shape(v.shape, p);
  HostTensor expected(v.shape, v.dtype), actual(v.shape, v.dtype);
  HostTensor expected_norm(norm_shape, DType::f32), actual_norm(norm_shape, DType::f32);
  reference::weight_norm(v.ref(), g.ref(), expected.ref(), expected_norm.ref(), p);
  const int64_t workspace_elements = weight_norm_workspace_elements(v.shape, p);
  const size_t shift = offset * dtype_size(v.dtype);
  DeviceBuffer v_buffer(v.bytes.size(), shift), g_buffer(g.bytes.size(), shift), y(v.bytes.size(), shift);
  DeviceBuffer norm(expected_norm.bytes.size()), workspace(static_cast<size_t>(workspace_elements) * sizeof(float));
  v_buffer.upload(v.bytes.data());
  g_buffer.upload(g.bytes.data());
  y.poison();
  norm.poison();
  workspace.poison();
  const TensorRef v_ref = device_ref(v_buffer.data(), v.dtype, v.shape);
  const TensorRef g_ref = device_ref(g_buffer.data(), v.dtype, g.shape);
  const TensorRef y_ref = device_ref(y.data(), v.dtype, v.shape);
  const TensorRef norm_ref = device_ref(norm.data(), DType::f32, norm_shape);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, Shape{workspace_elements});
  const TensorRef* workspace_arg = workspace_elements ? &workspace_ref : nullptr;
  launch_maybe_in_graph(
      [&](cudaStream_t stream) { weight_norm(v_ref, g_ref, y_ref, norm_ref, workspace_arg, p, stream); }, graph);
  y.download(actual.bytes.data());
  norm.download(actual_norm.bytes.data());
  const std::string norms = first_difference("norm", expected_norm, actual_norm, 0, 1e-5);
  if (!norms.empty()) return norms;
  return first_difference("output", expected, actual, tolerance(v.dtype), tolerance(v.dtype));
}

std::string describe(const HostTensor& v, const WeightNorm& p) {
  return detail::concat("v ", detail::shape_string(v.shape), " ", dtype_name(v.dtype), " dim ", p.dim);
}

struct Inputs {
  HostTensor v, g;
};

Inputs random_inputs(const Shape& shape, DType dtype, int64_t dim, std::mt19937_64& rng,
                     Values values = Values::normal) {
  Inputs in{HostTensor(shape, dtype), HostTensor(g_shape(shape, dim), dtype)};
  fill(in.v, rng, values);
  fill(in.g, rng);
  return in;
}

class WeightNormGpu : public testing::GpuTest {};

TEST_F(WeightNormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(50);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("WeightNormFwd");
  ASSERT_FALSE(rows.empty());
  for (const auto& row : rows) {
    const WeightNorm p{row["params"].value("dim", int64_t{0})};
    Inputs in = random_inputs(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(row["dtype"]), p.dim, rng);
    EXPECT_EQ(compare(in.v, in.g, p), "") << row["workload"] << " " << describe(in.v, p);
  }
}

TEST_F(WeightNormGpu, RandomShapes) {
  std::mt19937_64 rng(51);
  for (int c = 0; c < 120; ++c) {
    const Shape shape = draw_reduction_shape(rng);
    const auto rank = static_cast<int64_t>(shape.size());
    // Every fifth case the whole tensor (dim -1), the others a drawn dim.
    const WeightNorm p{c % 5 == 0 ? -1 : std::uniform_int_distribution<int64_t>(0, rank - 1)(rng)};
    Inputs in = random_inputs(shape, kRandomDtypes[c % 3], p.dim, rng, draw_values(c));
    const size_t offset = c % 6 == 5 ? 1 : 0;
    EXPECT_EQ(compare(in.v, in.g, p, offset), "") << "case " << c << " " << describe(in.v, p) << " offset " << offset;
  }
}

TEST_F(WeightNormGpu, EdgeShapesAndPyTorchsGShape) {
  std::mt19937_64 rng(52);
  for (const Shape& shape : {Shape{1}, Shape{5}, Shape{1, 1}, Shape{3, 0}, Shape{0, 5}, Shape{2, 3, 0}}) {
    for (int64_t dim : {int64_t{0}, int64_t{-1}}) {
      Inputs in = random_inputs(shape, DType::f32, dim, rng);
      EXPECT_EQ(compare(in.v, in.g, {dim}), "") << describe(in.v, {dim});
    }
  }
  Inputs in = random_inputs({6, 3, 5}, DType::bf16, 1, rng);
  in.g.shape = {1, 3, 1};  // as nn.utils.weight_norm stores g
  EXPECT_EQ(compare(in.v, in.g, {1}), "");
}

// Few long rows (dim 0), shared by a cluster of blocks where x takes 32 KB a row (not [3, 8192]
// bf16, nor [1, 65536] f32, which still takes two passes), a NaN in row 1 where there is one;
// [1, 65536] bf16 took two passes before.
TEST_F(WeightNormGpu, RowsSharedByClusters) {
  std::mt19937_64 rng(56);
  for (const Shape& shape : {Shape{1, 65536}, Shape{3, 8192}, Shape{2, 40000}, Shape{4, 16384}}) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      Inputs in = random_inputs(shape, dtype, 0, rng);
      if (shape[0] > 1) in.v.set(shape[1] + 17, std::numeric_limits<double>::quiet_NaN());
      EXPECT_EQ(compare(in.v, in.g, {0}), "") << describe(in.v, {0});
    }
  }
}

TEST_F(WeightNormGpu, NaNStaysInItsSliceAndZeroSlicesMatchPyTorch) {
  std::mt19937_64 rng(53);
  Inputs in = random_inputs({64, 4097}, DType::f16, 0, rng);
  in.v.set(3 * 4097 + 5, std::numeric_limits<double>::quiet_NaN());
  for (int64_t j = 0; j < 4097; ++j) in.v.set(7 * 4097 + j, 0);
  EXPECT_EQ(compare(in.v, in.g, {0}), "");
  Inputs whole = random_inputs({64, 4097}, DType::f32, -1, rng);
  whole.v.set(99, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(compare(whole.v, whole.g, {-1}), "");
}

TEST_F(WeightNormGpu, UnalignedAndDeterministic) {
  std::mt19937_64 rng(54);
  Inputs in = random_inputs({1, 16384}, DType::bf16, 0, rng);
  for (size_t offset : {1, 3}) EXPECT_EQ(compare(in.v, in.g, {0}, offset), "") << offset;
  // Bit-identical norms from run to run: the split norms' partials are added in a fixed order.
  const WeightNorm p{-1};
  Inputs whole = random_inputs({2048, 4096}, DType::f16, -1, rng);
  const int64_t elements = weight_norm_workspace_elements(whole.v.shape, p);
  DeviceBuffer v(whole.v.bytes.size()), g(2), y(whole.v.bytes.size()), norm(sizeof(float)),
      workspace(sizeof(float) * static_cast<size_t>(elements));
  v.upload(whole.v.bytes.data());
  g.upload(whole.g.bytes.data());
  const TensorRef v_ref = device_ref(v.data(), DType::f16, whole.v.shape);
  const TensorRef g_ref = device_ref(g.data(), DType::f16, {1});
  const TensorRef y_ref = device_ref(y.data(), DType::f16, whole.v.shape);
  const TensorRef norm_ref = device_ref(norm.data(), DType::f32, {1});
  const TensorRef w_ref = device_ref(workspace.data(), DType::f32, Shape{elements});
  float first = 0, again = 0;
  weight_norm(v_ref, g_ref, y_ref, norm_ref, &w_ref, p);
  norm.download(&first);
  for (int i = 0; i < 5; ++i) {
    weight_norm(v_ref, g_ref, y_ref, norm_ref, &w_ref, p);
    norm.download(&again);
    EXPECT_EQ(first, again);
  }
}

TEST_F(WeightNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(55);
  Inputs rows = random_inputs({2048, 4096}, DType::bf16, 0, rng);
  EXPECT_EQ(compare(rows.v, rows.g, {0}, 0, true), "");
  Inputs whole = random_inputs({1, 16384}, DType::f32, -1, rng);
  EXPECT_EQ(compare(whole.v, whole.g, {-1}, 0, true), "");
}

TEST_F(WeightNormGpu, DeviceRules) {
  DeviceBuffer v(2048 * 4096 * 2), g(2), y(2048 * 4096 * 2), norm(4), small(16 * sizeof(float));
  const Shape shape{2048, 4096};
  const TensorRef v_ref = device_ref(v.data(), DType::bf16, shape), g_ref = device_ref(g.data(), DType::bf16, {1});
  const TensorRef y_ref = device_ref(y.data(), DType::bf16, shape), norm_ref = device_ref(norm.data(), DType::f32, {1});
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  expect_message([&] { weight_norm(v_ref, g_ref, y_ref, norm_ref, nullptr, {-1}); },
                 "weight_norm: workspace is null but this call needs 1024 f32 elements");
  expect_message([&] { weight_norm(v_ref, g_ref, y_ref, norm_ref, &small_ref, {-1}); },
                 "workspace has 16 elements, fewer than the 1024");
  const TensorRef in_y = device_ref(y.data(), DType::f32, Shape{1024});
  expect_message([&] { weight_norm(v_ref, g_ref, y_ref, norm_ref, &in_y, {-1}); }, "output and workspace overlap");
  expect_message([&] { weight_norm(v_ref, g_ref, v_ref, norm_ref, &small_ref, {0}); }, "g [1] must hold 2048");
  HostTensor host({4}, DType::f32), host_g({4}, DType::f32), host_y({4}, DType::f32), host_norm({4}, DType::f32);
  expect_message([&] { weight_norm(host.ref(), host_g.ref(), host_y.ref(), host_norm.ref(), nullptr, {}); },
                 "weight_norm: v must be a CUDA tensor");
}

}  // namespace weight_norms

// ---- SpectralNormPowerIterFwd (spec §2.21) ---------------------------------------------------------------

namespace spectral_norms {

struct Inputs {
  HostTensor x, u, v;
};

Inputs random_inputs(const Shape& shape, DType dtype, std::mt19937_64& rng, Values values = Values::normal) {
  Inputs in{HostTensor(shape, dtype), HostTensor({shape[0]}, DType::f32), HostTensor({shape[1]}, DType::f32)};
  fill(in.x, rng, values);
  fill(in.u, rng);
  fill(in.v, rng);
  return in;
}

struct Outputs {
  HostTensor sigma, u_out, v_out;

  explicit Outputs(const Shape& x_shape)
      : sigma({}, DType::f32), u_out({x_shape[0]}, DType::f32), v_out({x_shape[1]}, DType::f32) {}
};

SpectralNormPowerIter params(const Inputs& in, int64_t n_iter, double eps = 1e-12) {
  return {{in.x.shape[1]}, n_iter, eps};
}

// spectral_norm_power_iter on the device: every tensor `offset` elements into its allocation, the
// outputs and the workspace poisoned first; replayed from a CUDA graph where `graph`.
Outputs run_on_device(const Inputs& in, const SpectralNormPowerIter& p, size_t offset = 0, bool graph = false) {
  const Shape vector_shapes[] = {{in.x.shape[0]}, {in.x.shape[1]}};
  const int64_t elements = spectral_norm_power_iter_workspace_elements(in.x.shape, p);
  const size_t shift = offset * sizeof(float);
  DeviceBuffer x(in.x.bytes.size(), offset * dtype_size(in.x.dtype)), u(in.u.bytes.size(), shift),
      v(in.v.bytes.size(), shift), sigma(sizeof(float), shift), u_out(in.u.bytes.size(), shift),
      v_out(in.v.bytes.size(), shift), workspace(static_cast<size_t>(elements) * sizeof(float));
  x.upload(in.x.bytes.data());
  u.upload(in.u.bytes.data());
  v.upload(in.v.bytes.data());
  sigma.poison();
  u_out.poison();
  v_out.poison();
  workspace.poison();
  const TensorRef x_ref = device_ref(x.data(), in.x.dtype, in.x.shape);
  const TensorRef u_ref = device_ref(u.data(), DType::f32, vector_shapes[0]);
  const TensorRef v_ref = device_ref(v.data(), DType::f32, vector_shapes[1]);
  const TensorRef sigma_ref = device_ref(sigma.data(), DType::f32, {});
  const TensorRef u_out_ref = device_ref(u_out.data(), DType::f32, vector_shapes[0]);
  const TensorRef v_out_ref = device_ref(v_out.data(), DType::f32, vector_shapes[1]);
  const TensorRef workspace_ref = device_ref(workspace.data(), DType::f32, Shape{elements});
  const TensorRef* workspace_arg = elements ? &workspace_ref : nullptr;
  launch_maybe_in_graph(
      [&](cudaStream_t stream) {
        spectral_norm_power_iter(x_ref, u_ref, v_ref, sigma_ref, u_out_ref, v_out_ref, workspace_arg, p, stream);
      },
      graph);
  Outputs out(in.x.shape);
  sigma.download(out.sigma.bytes.data());
  u_out.download(out.u_out.bytes.data());
  v_out.download(out.v_out.bytes.data());
  return out;
}

// The device's outputs against the reference's at spec §2.21's tolerance (sigma rtol 1e-4; u_out and
// v_out atol 1e-5, rtol 1e-4): the first disagreement, or "".
std::string compare(Inputs& in, const SpectralNormPowerIter& p, size_t offset = 0, bool graph = false) {
  Outputs expected(in.x.shape);
  reference::spectral_norm_power_iter(in.x.ref(), in.u.ref(), in.v.ref(), expected.sigma.ref(), expected.u_out.ref(),
                                      expected.v_out.ref(), p);
  Outputs actual = run_on_device(in, p, offset, graph);
  std::string difference = first_difference("sigma", expected.sigma, actual.sigma, 0, 1e-4);
  if (difference.empty()) difference = first_difference("u_out", expected.u_out, actual.u_out, 1e-5, 1e-4);
  if (difference.empty()) difference = first_difference("v_out", expected.v_out, actual.v_out, 1e-5, 1e-4);
  return difference;
}

bool same_bits(const Outputs& a, const Outputs& b) {
  return a.sigma.bytes == b.sigma.bytes && a.u_out.bytes == b.u_out.bytes && a.v_out.bytes == b.v_out.bytes;
}

std::string describe(const Inputs& in, const SpectralNormPowerIter& p) {
  return detail::concat("x ", detail::shape_string(in.x.shape), " ", dtype_name(in.x.dtype), " n_iter ", p.n_iter,
                        " eps ", p.eps);
}

class SpectralNormGpu : public testing::GpuTest {};

TEST_F(SpectralNormGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(60);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("SpectralNormPowerIterFwd");
  ASSERT_EQ(rows.size(), 9u);
  for (const auto& row : rows) {
    const Shape shape = row["tensors"]["x"].get<Shape>();
    ASSERT_EQ(row["tensors"]["normalized"].get<Shape>(), Shape{shape[1]}) << row["workload"];
    Inputs in = random_inputs(shape, testing::parse_dtype(row["dtype"]), rng);
    const SpectralNormPowerIter p =
        params(in, row["params"].value("n_iter", int64_t{1}), row["params"].value("eps", 1e-12));
    EXPECT_EQ(compare(in, p), "") << row["workload"] << " " << describe(in, p);
  }
}

TEST_F(SpectralNormGpu, RandomShapes) {
  // Odd, one, short and long rows and columns, none a multiple of 8 but 64, 1000 and 4096; at most
  // about 2M elements, so that the reference stays quick.
  static const int64_t kSizes[] = {1, 2, 3, 7, 15, 31, 64, 100, 257, 1000, 1023, 2049, 3001, 4096};
  std::mt19937_64 rng(61);
  std::uniform_int_distribution<size_t> size_of(0, std::size(kSizes) - 1);
  for (int c = 0; c < 120; ++c) {
    int64_t rows = kSizes[size_of(rng)], cols = kSizes[size_of(rng)];
    while (rows * cols > 2'000'000) rows = std::max<int64_t>(1, rows / 4);
    Inputs in = random_inputs({rows, cols}, kRandomDtypes[c % 3], rng, draw_values(c));
    const SpectralNormPowerIter p = params(in, c % 4);
    const size_t offset = c % 5 == 3 ? 1 : 0;
    EXPECT_EQ(compare(in, p, offset), "") << "case " << c << " " << describe(in, p) << " offset " << offset;
  }
}

// Every dtype: an empty W's data pointer is null (as PyTorch's), and a kernel that loads ahead of
// its bounds test faults on it in the f16/bf16 code but not in the f32 code (3bcb2c1's one-block
// path, caught only by the PyTorch tests).
TEST_F(SpectralNormGpu, EdgeShapes) {
  std::mt19937_64 rng(62);
  for (const Shape& shape : {Shape{1, 1}, Shape{0, 5}, Shape{5, 0}, Shape{0, 0}, Shape{1, 0}, Shape{1, 16384},
                             Shape{1, 65536}, Shape{1, 40001}, Shape{16384, 1}, Shape{3, 7}, Shape{40000, 3}}) {
    for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (int64_t n_iter : {0, 1, 3}) {
        Inputs in = random_inputs(shape, dtype, rng);
        EXPECT_EQ(compare(in, params(in, n_iter)), "") << describe(in, params(in, n_iter));
      }
    }
  }
  Inputs in = random_inputs({100, 300}, DType::f16, rng);
  EXPECT_EQ(compare(in, params(in, 25)), "") << "many iterations";
}

TEST_F(SpectralNormGpu, NIterZeroCopiesUAndV) {
  std::mt19937_64 rng(63);
  Inputs in = random_inputs({2048, 4096}, DType::bf16, rng);
  const Outputs out = run_on_device(in, params(in, 0));
  EXPECT_EQ(out.u_out.bytes, in.u.bytes);
  EXPECT_EQ(out.v_out.bytes, in.v.bytes);
  EXPECT_EQ(compare(in, params(in, 0)), "");
}

TEST_F(SpectralNormGpu, ZeroMatrixAndEps) {
  std::mt19937_64 rng(64);
  Inputs in = random_inputs({64, 1000}, DType::bf16, rng);
  for (int64_t i = 0; i < in.x.numel(); ++i) in.x.set(i, 0);
  EXPECT_EQ(compare(in, params(in, 1)), "") << "zeros";
  EXPECT_EQ(compare(in, params(in, 1, 0.0)), "") << "0 / 0 with eps 0";
  Outputs out = run_on_device(in, params(in, 2));
  for (int64_t i = 0; i < out.v_out.numel(); ++i) ASSERT_EQ(out.v_out.at(i), 0.0) << i;
  EXPECT_EQ(out.sigma.at(0), 0.0);
}

TEST_F(SpectralNormGpu, NaNInWSpreads) {
  std::mt19937_64 rng(65);
  for (const int64_t rows : {257, 1}) {  // the chain of kernels, and the one-row kernel
    Inputs in = random_inputs({rows, 1000}, DType::f16, rng);
    in.x.set((rows - 1) / 2 * 1000 + 17, std::numeric_limits<double>::quiet_NaN());
    for (int64_t n_iter : {0, 1, 2}) EXPECT_EQ(compare(in, params(in, n_iter)), "") << rows << " rows, " << n_iter;
    Outputs out = run_on_device(in, params(in, 1));
    EXPECT_TRUE(std::isnan(out.sigma.at(0)) && std::isnan(out.u_out.at(0)) && std::isnan(out.v_out.at(999))) << rows;
  }
}

// One row runs one kernel in closed form (src/norm/spectral_norm.cu, one_row_power_iteration):
// against the reference's steps on infinities, zeros with eps 0, a zero u, and a u whose ratio to
// eps overflows over a zero W. 3001 columns take the elementwise kernel, 4096 the vector kernel of
// whole rows.
TEST_F(SpectralNormGpu, OneRowEdgeValues) {
  std::mt19937_64 rng(69);
  for (DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    for (const int64_t cols : {3001, 4096}) {
      Inputs in = random_inputs({1, cols}, dtype, rng);
      in.x.set(1234, -std::numeric_limits<double>::infinity());
      for (int64_t n_iter : {1, 3}) {
        EXPECT_EQ(compare(in, params(in, n_iter)), "") << "-inf, " << describe(in, params(in, n_iter));
      }
      for (int64_t i = 0; i < in.x.numel(); ++i) in.x.set(i, 0);
      EXPECT_EQ(compare(in, params(in, 1)), "") << "zeros, " << cols;
      EXPECT_EQ(compare(in, params(in, 2, 0.0)), "") << "zeros with eps 0, " << cols;
      in.u.set(0, 1e30);
      EXPECT_EQ(compare(in, params(in, 1)), "") << "zeros, u = 1e30, " << cols;
      Inputs zero_u = random_inputs({1, cols}, dtype, rng);
      zero_u.u.set(0, 0);
      EXPECT_EQ(compare(zero_u, params(zero_u, 2)), "") << "u = 0, " << describe(zero_u, params(zero_u, 2));
    }
  }
}

TEST_F(SpectralNormGpu, UnalignedPointers) {
  std::mt19937_64 rng(66);
  Inputs in = random_inputs({2048, 4096}, DType::f16, rng);
  for (size_t offset : {1, 3}) EXPECT_EQ(compare(in, params(in, 1), offset), "") << offset;
  Inputs f32 = random_inputs({64, 1000}, DType::f32, rng);
  EXPECT_EQ(compare(f32, params(f32, 2), 1), "");
}

TEST_F(SpectralNormGpu, BitIdenticalFromRunToRun) {
  std::mt19937_64 rng(67);
  for (const Shape& shape : {Shape{2048, 4096}, Shape{1, 16384}, Shape{1000, 1023}}) {
    Inputs in = random_inputs(shape, DType::bf16, rng);
    const SpectralNormPowerIter p = params(in, 2);
    const Outputs first = run_on_device(in, p);
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(same_bits(first, run_on_device(in, p))) << describe(in, p);
  }
}

TEST_F(SpectralNormGpu, CapturedInACudaGraph) {
  std::mt19937_64 rng(68);
  for (int64_t n_iter : {0, 1, 2}) {
    Inputs in = random_inputs({2048, 4096}, DType::bf16, rng);
    EXPECT_EQ(compare(in, params(in, n_iter), 0, true), "") << n_iter;
    EXPECT_TRUE(same_bits(run_on_device(in, params(in, n_iter)), run_on_device(in, params(in, n_iter), 0, true)));
  }
}

TEST_F(SpectralNormGpu, DeviceRules) {
  const Shape shape{2048, 4096};
  DeviceBuffer x(2048 * 4096 * 2), u(2048 * 4), v(4096 * 4), sigma(4), u_out(2048 * 4), v_out(4096 * 4),
      small(16 * sizeof(float));
  const TensorRef x_ref = device_ref(x.data(), DType::bf16, shape);
  const TensorRef u_ref = device_ref(u.data(), DType::f32, {2048}), v_ref = device_ref(v.data(), DType::f32, {4096});
  const TensorRef sigma_ref = device_ref(sigma.data(), DType::f32, {});
  const TensorRef u_out_ref = device_ref(u_out.data(), DType::f32, {2048});
  const TensorRef v_out_ref = device_ref(v_out.data(), DType::f32, {4096});
  const TensorRef small_ref = device_ref(small.data(), DType::f32, Shape{16});
  const SpectralNormPowerIter p{{4096}};
  const auto call = [&](const TensorRef& u_arg, const TensorRef& u_out_arg, const TensorRef* workspace) {
    spectral_norm_power_iter(x_ref, u_arg, v_ref, sigma_ref, u_out_arg, v_out_ref, workspace, p);
  };
  expect_message([&] { call(u_ref, u_out_ref, nullptr); },
                 "spectral_norm_power_iter: workspace is null but this call needs 135168 f32 elements "
                 "(spectral_norm_power_iter_workspace_elements)");
  expect_message([&] { call(u_ref, u_out_ref, &small_ref); }, "workspace has 16 elements, fewer than the 135168");
  const TensorRef in_x = device_ref(x.data(), DType::f32, Shape{135168});
  expect_message([&] { call(u_ref, u_out_ref, &in_x); }, "x and workspace overlap in memory");
  expect_message([&] { call(u_ref, u_ref, &small_ref); }, "u and u_out overlap in memory");
  HostTensor host_u({2048}, DType::f32);
  expect_message([&] { call(host_u.ref(), u_out_ref, nullptr); }, "spectral_norm_power_iter: u must be a CUDA tensor");
  const TensorRef claims_device = device_ref(host_u.bytes.data(), DType::f32, {2048});
  expect_message([&] { call(claims_device, u_out_ref, nullptr); }, "u: data pointer is not device memory");
  // n_iter = 0 reads W once through W v and needs no workspace.
  spectral_norm_power_iter(x_ref, u_ref, v_ref, sigma_ref, u_out_ref, v_out_ref, nullptr, {{4096}, 0});
  testing::cuda_ok(cudaDeviceSynchronize(), "n_iter 0");
}

}  // namespace spectral_norms

}  // namespace
}  // namespace solops

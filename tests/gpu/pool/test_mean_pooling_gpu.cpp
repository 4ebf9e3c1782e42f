// Mean pooling on the GPU against the CPU reference: every catalogue row, random shapes in both
// modes (odd H * D, D not a multiple of the vector width, B = 1, S not a multiple of the chunk,
// empty and short sequences, unaligned pointers), NaN / infinities, the metadata check through the
// device path, unchecked metadata that points outside x, and CUDA graph capture. Outputs are
// poisoned first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <utility>

#include "cpu/pool/mean_pooling_cases.hpp"
#include "gpu/pool/pool_gpu_checks.hpp"
#include "solops/error.hpp"

namespace solops {
namespace {

using testing::DeviceBuffer;
using testing::HostTensor;
using testing::RaggedMetadata;
using Shape = std::vector<int64_t>;

// Spec §4.6 (proposed): atol = rtol = 1e-3 for f16 and f32, 1.6e-2 for bf16.
double tolerance(DType dtype) { return dtype == DType::bf16 ? 1.6e-2 : 1e-3; }

std::optional<RaggedSizes> sizes_of(const RaggedMetadata* m) {
  if (!m) return std::nullopt;
  return RaggedSizes{static_cast<int64_t>(m->offsets.size()) - 1, m->chunks()};
}

// Device copies of one call's tensors; x and y start `offset` elements into their allocations, so
// that offset 1 makes both pointers unaligned for 16-byte vectors.
class DeviceCall {
 public:
  DeviceCall(HostTensor& x, const Shape& y_shape, const RaggedMetadata* m, size_t offset = 0)
      : y_host_(y_shape, x.dtype),
        x_(x.bytes.size(), offset * dtype_size(x.dtype)),
        y_(y_host_.bytes.size(), offset * dtype_size(x.dtype)),
        offsets_(m ? m->offsets.size() * sizeof(int32_t) : 0),
        indices_(m ? m->indices.size() * sizeof(int32_t) : 0),
        ragged_(m != nullptr) {
    x_.upload(x.bytes.data());
    y_.poison();
    x_ref_ = make_tensor(x_.data(), x.dtype, x.shape, 0);
    y_ref_ = make_tensor(y_.data(), x.dtype, y_shape, 0);
    if (m) {
      offsets_.upload(m->offsets.data());
      indices_.upload(m->indices.data());
      offsets_ref_ = make_tensor(offsets_.data(), DType::i32, Shape{static_cast<int64_t>(m->offsets.size())}, 0);
      indices_ref_ = make_tensor(indices_.data(), DType::i32, Shape{m->chunks(), 2}, 0);
    }
  }

  void run(const MeanPooling& p, cudaStream_t stream = nullptr) {
    mean_pooling(x_ref_, y_ref_, ragged_ ? &offsets_ref_ : nullptr, ragged_ ? &indices_ref_ : nullptr, p, stream);
  }

  HostTensor& result() {
    testing::cuda_ok(cudaDeviceSynchronize(), "kernel");
    y_.download(y_host_.bytes.data());
    return y_host_;
  }

 private:
  HostTensor y_host_;
  DeviceBuffer x_, y_, offsets_, indices_;
  bool ragged_;
  TensorRef x_ref_, y_ref_, offsets_ref_, indices_ref_;
};

// The first output that differs from the expected one beyond the tolerance; "" when none does.
std::string first_difference(HostTensor& expected, HostTensor& actual) {
  const double tol = tolerance(expected.dtype);
  for (int64_t i = 0; i < expected.numel(); ++i) {
    const double want = expected.at(i), got = actual.at(i);
    if (!testing::same_value(want, got) && !(std::abs(got - want) <= tol * (1 + std::abs(want)))) {
      return detail::concat("output[", i, "] = ", got, ", expected ", want);
    }
  }
  return {};
}

HostTensor reference_output(HostTensor& x, const MeanPooling& p, const RaggedMetadata* m) {
  HostTensor expected(mean_pooling_output_shape(x.shape, p, sizes_of(m)), x.dtype);
  if (m) {
    HostTensor offsets = testing::offsets_tensor(*m), indices = testing::indices_tensor(*m);
    const TensorRef offsets_ref = offsets.ref(), indices_ref = indices.ref();
    reference::mean_pooling(x.ref(), expected.ref(), &offsets_ref, &indices_ref, p);
  } else {
    reference::mean_pooling(x.ref(), expected.ref(), nullptr, nullptr, p);
  }
  return expected;
}

// Runs the kernel and the reference on x; returns the first disagreement, or "".
std::string compare_with_reference(HostTensor& x, const MeanPooling& p, const RaggedMetadata* m = nullptr,
                                   size_t offset = 0) {
  HostTensor expected = reference_output(x, p, m);
  DeviceCall call(x, expected.shape, m, offset);
  call.run(p);
  return first_difference(expected, call.result());
}

// A catalogue row's seq_lens: a list, or "repeat(LEN, COUNT)".
std::vector<int64_t> parse_seq_lens(const nlohmann::json& value) {
  if (value.is_array()) return value.get<std::vector<int64_t>>();
  std::smatch match;
  const std::string text = value.get<std::string>();
  if (!std::regex_match(text, match, std::regex(R"(repeat\((\d+),\s*(\d+)\))"))) {
    throw std::runtime_error("unexpected seq_lens " + text);
  }
  return std::vector<int64_t>(std::stoul(match[2]), std::stoll(match[1]));
}

class MeanPoolingGpu : public testing::GpuTest {};

TEST_F(MeanPoolingGpu, EveryCatalogueRow) {
  std::mt19937_64 rng(2029);
  const std::vector<nlohmann::json> rows = testing::catalogue_rows("MeanPoolingFwd");
  for (const auto& row : rows) {
    // "f16/f32": the input dtype, then the accumulation dtype (f32 in every row, as solops does).
    const std::string dtypes = row["dtype"];
    ASSERT_EQ(dtypes.substr(dtypes.find('/') + 1), "f32") << dtypes;
    HostTensor x(row["tensors"]["x"].get<Shape>(), testing::parse_dtype(dtypes.substr(0, dtypes.find('/'))));
    testing::fill_random(x, rng, false);
    const MeanPooling p{row["params"]["chunk_size"].get<int64_t>()};
    std::optional<RaggedMetadata> m;
    if (row["params"].contains("seq_lens")) {
      m = testing::ragged_metadata(parse_seq_lens(row["params"]["seq_lens"]), p.chunk_size);
      ASSERT_EQ(Shape{static_cast<int64_t>(m->offsets.size())}, row["tensors"]["offsets"].get<Shape>());
      ASSERT_EQ((Shape{m->chunks(), 2}), row["tensors"]["indices"].get<Shape>());
    }
    EXPECT_EQ(compare_with_reference(x, p, m ? &*m : nullptr), "") << row["workload"] << " " << dtypes;
  }
  EXPECT_EQ(rows.size(), 7u);
}

// Sequence lengths summing to seq_len, from NS - 1 random cut points: empty and short sequences
// come up often.
std::vector<int64_t> random_seq_lens(int64_t seq_len, std::mt19937_64& rng) {
  const int sequences = std::uniform_int_distribution<int>(1, 6)(rng);
  std::vector<int64_t> cuts = {0, seq_len};
  for (int s = 1; s < sequences; ++s) cuts.push_back(std::uniform_int_distribution<int64_t>(0, seq_len)(rng));
  std::sort(cuts.begin(), cuts.end());
  std::vector<int64_t> lens;
  for (size_t i = 1; i < cuts.size(); ++i) lens.push_back(cuts[i] - cuts[i - 1]);
  return lens;
}

TEST_F(MeanPoolingGpu, RandomShapesInBothModes) {
  std::mt19937_64 rng(31);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  const DType dtypes[] = {DType::f32, DType::f16, DType::bf16};
  const int64_t head_dims[] = {1, 3, 7, 8, 16, 33, 64, 65, 128};
  for (int cases = 0; cases < 160; ++cases) {
    const DType dtype = dtypes[cases % 3];
    const int64_t batch = cases % 19 == 0 ? 0 : (cases % 3 == 1 ? 1 : uniform(1, 3));
    // Every tenth case has tokens of 1-2.5 K elements: several blocks per output row.
    const int64_t heads = cases % 10 == 0 ? uniform(8, 20) : uniform(1, 6);
    const int64_t head_dim = cases % 10 == 0 ? 128 : head_dims[uniform(0, 8)];
    const int64_t seq_len = uniform(1, 400);
    const MeanPooling p{32 * uniform(1, 8), cases % 4 != 3};
    HostTensor x({batch, seq_len, heads, head_dim}, dtype);
    testing::fill_random(x, rng, cases % 7 == 0);
    std::optional<RaggedMetadata> m;
    if (cases % 2 == 1) m = testing::ragged_metadata(random_seq_lens(seq_len, rng), p.chunk_size);
    const size_t offset = cases % 5 == 0 ? 1 : 0;
    EXPECT_EQ(compare_with_reference(x, p, m ? &*m : nullptr, offset), "")
        << "case " << cases << " x " << detail::shape_text(x.shape) << " " << dtype_name(dtype) << " chunk_size "
        << p.chunk_size << (m ? " ragged" : " uniform") << (p.check_ragged_metadata ? "" : " unchecked")
        << " offset " << offset;
  }
}

TEST_F(MeanPoolingGpu, NaNAndInfinitiesPropagateAsInTheReference) {
  std::mt19937_64 rng(37);
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({2, 150, 4, 64}, dtype);  // 16-byte vectors
    testing::fill_random(x, rng, true);
    EXPECT_EQ(compare_with_reference(x, {64}), "") << dtype_name(dtype);
    const RaggedMetadata m = testing::ragged_metadata({7, 0, 100, 43}, 32);
    EXPECT_EQ(compare_with_reference(x, {32}, &m), "") << dtype_name(dtype);
    HostTensor odd({1, 70, 3, 11}, dtype);  // scalar loads
    testing::fill_random(odd, rng, true);
    EXPECT_EQ(compare_with_reference(odd, {32}), "") << dtype_name(dtype);
  }
}

TEST_F(MeanPoolingGpu, UnalignedPointersAndOddRowsTakeScalarLoads) {
  std::mt19937_64 rng(41);
  for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
    HostTensor x({1, 200, 8, 64}, dtype);
    testing::fill_random(x, rng, false);
    EXPECT_EQ(compare_with_reference(x, {64}, nullptr, 1), "") << dtype_name(dtype);
    const RaggedMetadata m = testing::ragged_metadata({33, 0, 167}, 64);
    EXPECT_EQ(compare_with_reference(x, {64}, &m, 3), "") << dtype_name(dtype);
    HostTensor odd({3, 97, 5, 13}, dtype);
    testing::fill_random(odd, rng, false);
    EXPECT_EQ(compare_with_reference(odd, {96}), "") << dtype_name(dtype);
  }
}

TEST_F(MeanPoolingGpu, EmptyBatchLaunchesNothing) {
  HostTensor x({0, 64, 4, 8}, DType::f16);
  EXPECT_EQ(compare_with_reference(x, {32}), "");
  const RaggedMetadata m = testing::ragged_metadata({10, 54}, 32);
  EXPECT_EQ(compare_with_reference(x, {32}, &m), "");
}

// Sequences of 0, 40, 0, 5 and 25 tokens at chunk_size 32: offsets [0, 0, 40, 40, 45, 70],
// indices (1, 0), (1, 1), (3, 0), (4, 0).
struct MetadataFault {
  const char* what;
  void (*apply)(RaggedMetadata&);
  const char* fragment;
};

TEST_F(MeanPoolingGpu, MismatchedMetadataIsRejectedBeforeTheLaunch) {
  const MetadataFault faults[] = {
      {"offsets[0] != 0", [](RaggedMetadata& m) { m.offsets[0] = 1; }, "offsets[0] = 1 must be 0"},
      {"decreasing offsets", [](RaggedMetadata& m) { m.offsets[3] = 39; }, "offsets must be non-decreasing"},
      {"offsets[NS] != S", [](RaggedMetadata& m) { m.offsets[5] = 69; }, "offsets[5] = 69 must equal S = 70"},
      {"wrong count", [](RaggedMetadata& m) { m.indices.insert(m.indices.end(), {4, 1}); },
       "indices lists 5 chunks, but the offsets make 4"},
      {"chunk past its sequence", [](RaggedMetadata& m) { m.indices[5] = 1; }, "is past the end of sequence 3"},
      {"duplicate",
       [](RaggedMetadata& m) {
         m.indices[2] = 1;
         m.indices[3] = 0;
       },
       "repeats indices[0]"},
      {"out of order", [](RaggedMetadata& m) { std::swap(m.indices[4], m.indices[6]); }, "is out of order"},
  };
  std::mt19937_64 rng(43);
  HostTensor x({2, 70, 3, 16}, DType::f16);
  testing::fill_random(x, rng, false);
  for (const MetadataFault& fault : faults) {
    RaggedMetadata m = testing::ragged_metadata({0, 40, 0, 5, 25}, 32);
    fault.apply(m);
    DeviceCall call(x, {2, m.chunks(), 3, 16}, &m);
    try {
      call.run({32});
      ADD_FAILURE() << fault.what << ": accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), Status::invalid_argument) << fault.what;
      EXPECT_NE(std::string(e.what()).find(fault.fragment), std::string::npos) << fault.what << ": " << e.what();
    }
    HostTensor& y = call.result();
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_TRUE(std::isnan(y.at(i))) << fault.what << ": output written";
  }
}

// The mean of x[b, begin:end, :] at element e of a token, or NaN for no span.
double token_mean(HostTensor& x, int64_t b, std::optional<std::pair<int64_t, int64_t>> span, int64_t e) {
  if (!span) return std::nan("");
  const int64_t seq_len = x.shape[1], row_len = x.shape[2] * x.shape[3];
  double sum = 0;
  for (int64_t t = span->first; t < span->second; ++t) sum += x.at((b * seq_len + t) * row_len + e);
  return sum / static_cast<double>(span->second - span->first);
}

TEST_F(MeanPoolingGpu, UncheckedMetadataNeverLeavesTheTensors) {
  using Span = std::optional<std::pair<int64_t, int64_t>>;
  struct Case {
    RaggedMetadata metadata;
    std::vector<Span> spans;  // what each output chunk averages; nullopt: NaN
  };
  const Case cases[] = {
      // offsets decrease (30 > 20) and pass S = 100; only (0, 0) and (2, 0) lie inside x. (1, 0)
      // ends before it begins, (3, 0) ends past S, (2, 3) is past its sequence, (-1, 0) and
      // (0, -1) name nothing.
      {{{0, 30, 20, 100, 150}, {0, 0, 1, 0, 2, 0, 3, 0, 2, 3, -1, 0, 0, -1}},
       {Span{{0, 30}}, {}, Span{{20, 52}}, {}, {}, {}, {}}},
      // A negative offset: sequence 0 is outside x, sequence 1 is [40, 100).
      {{{-5, 40, 100}, {0, 0, 0, 1, 1, 0, 1, 1}}, {{}, {}, Span{{40, 72}}, Span{{72, 100}}}},
  };
  std::mt19937_64 rng(53);
  for (const Case& c : cases) {
    for (const auto& [dtype, head_dim] : {std::pair{DType::f32, int64_t{11}}, std::pair{DType::f16, int64_t{32}}}) {
      HostTensor x({2, 100, 3, head_dim}, dtype);
      testing::fill_random(x, rng, false);
      const int64_t chunks = c.metadata.chunks(), row_len = 3 * head_dim;
      DeviceCall call(x, {2, chunks, 3, head_dim}, &c.metadata);
      call.run({32, false});
      HostTensor& y = call.result();
      for (int64_t b = 0; b < 2; ++b) {
        for (int64_t j = 0; j < chunks; ++j) {
          for (int64_t e = 0; e < row_len; ++e) {
            const double want = token_mean(x, b, c.spans[j], e), got = y.at((b * chunks + j) * row_len + e);
            ASSERT_TRUE(testing::same_value(want, got) ||
                        std::abs(got - want) <= tolerance(dtype) * (1 + std::abs(want)))
                << dtype_name(dtype) << " b " << b << " chunk " << j << " e " << e << ": " << got
                << ", expected " << want;
          }
        }
      }
    }
  }
}

TEST_F(MeanPoolingGpu, GraphCaptureNeedsTheCheckOff) {
  std::mt19937_64 rng(47);
  HostTensor x({1, 300, 4, 32}, DType::bf16);
  testing::fill_random(x, rng, false);
  const RaggedMetadata m = testing::ragged_metadata({100, 0, 200}, 64);
  HostTensor expected = reference_output(x, {64}, &m);
  DeviceCall call(x, expected.shape, &m);
  cudaStream_t stream = nullptr;
  testing::cuda_ok(cudaStreamCreate(&stream), "cudaStreamCreate");
  // PyTorch's torch.cuda.graph captures in the global mode too.
  testing::cuda_ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
  try {
    call.run({64, true}, stream);
    ADD_FAILURE() << "the metadata check ran under capture";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("being captured into a CUDA graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("check_ragged_metadata = false"), std::string::npos) << e.what();
  }
  call.run({64, false}, stream);  // the refusal left the capture usable
  cudaGraph_t graph = nullptr;
  testing::cuda_ok(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
  cudaGraphExec_t exec = nullptr;
  testing::cuda_ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  testing::cuda_ok(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  testing::cuda_ok(cudaStreamSynchronize(stream), "replay");
  EXPECT_EQ(first_difference(expected, call.result()), "");
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace solops

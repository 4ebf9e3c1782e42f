// FastDivisor (src/core/integer.hpp) against the division operator, on the host: the device runs
// the same arithmetic, with __umulhi for the multiply-high.
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <vector>

#include "core/integer.hpp"

namespace {

using solops::detail::FastDivisor;

TEST(FastDivisor, SmallDivisorsOnEveryNumeratorUpTo4096AndTheLargest) {
  for (int d = 1; d <= 300; ++d) {
    const FastDivisor divisor(d);
    for (int n = 0; n <= 4096; ++n) ASSERT_EQ(divisor.divide(n), n / d) << n << " / " << d;
    for (int n = INT_MAX - 4096; n > 0 && n <= INT_MAX - 1; ++n) ASSERT_EQ(divisor.divide(n), n / d) << n << " / " << d;
    ASSERT_EQ(divisor.divide(INT_MAX), INT_MAX / d);
  }
}

TEST(FastDivisor, RandomDivisorsAroundTheirMultiples) {
  std::mt19937_64 rng(5);
  std::vector<int> divisors = {INT_MAX, INT_MAX - 1, 1 << 30, (1 << 30) + 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1};
  for (int i = 0; i < 2000; ++i) divisors.push_back(std::uniform_int_distribution<int>(1, INT_MAX)(rng));
  for (const int d : divisors) {
    const FastDivisor divisor(d);
    EXPECT_EQ(divisor.divisor(), d);
    for (int64_t q : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{INT_MAX} / d / 2, int64_t{INT_MAX} / d}) {
      for (int64_t delta = -2; delta <= 2; ++delta) {
        const int64_t n = q * d + delta;
        if (n < 0 || n > INT_MAX) continue;
        ASSERT_EQ(divisor.divide(static_cast<int>(n)), n / d) << n << " / " << d;
      }
    }
    for (int k = 0; k < 50; ++k) {
      const int n = std::uniform_int_distribution<int>(0, INT_MAX)(rng);
      ASSERT_EQ(divisor.divide(n), n / d) << n << " / " << d;
    }
  }
}

}  // namespace

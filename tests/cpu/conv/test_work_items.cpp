// The convolution kernels' work-item decode (src/conv/work_items.hpp) against the plain mixed-radix
// decomposition, on the host: the 32-bit path (every item index below 2^31) and the 64-bit one.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <random>

#include "conv/work_items.hpp"

namespace {

using solops::detail::decode;
using solops::detail::work_items;
using solops::detail::WorkItem;
using solops::detail::WorkItems;

// item = ((n * groups + group) * channel_tiles + channel_tile) * pixel_tiles + pixel_tile.
void expect_decodes(const WorkItems& items, int groups, int64_t item) {
  const WorkItem got = decode(items, groups, item);
  const int64_t pixel_tile = item % items.pixel_tiles, rest = item / items.pixel_tiles;
  const int64_t channel_tile = rest % items.channel_tiles, image_group = rest / items.channel_tiles;
  ASSERT_EQ(got.pixel_tile, pixel_tile) << item;
  ASSERT_EQ(got.channel_tile, channel_tile) << item;
  ASSERT_EQ(got.group, image_group % groups) << item;
  ASSERT_EQ(got.n, image_group / groups) << item;
}

TEST(ConvWorkItems, RandomLaunchesFirstLastAndRandomItems) {
  std::mt19937_64 rng(41);
  const auto draw = [&rng](int64_t low, int64_t high) { return std::uniform_int_distribution<int64_t>(low, high)(rng); };
  int wide = 0;
  for (int c = 0; c < 3000; ++c) {
    // Sizes spread over orders of magnitude; every fourth launch past 2^31 items (the 64-bit path).
    const int groups = static_cast<int>(draw(1, c % 3 == 0 ? 1 : 512));
    const int channel_tiles = static_cast<int>(draw(1, c % 5 == 0 ? 4096 : 16));
    const int pixel_tiles = static_cast<int>(draw(1, c % 7 == 0 ? (1 << 24) : 4096));
    int64_t batch = draw(1, 64);
    if (c % 4 == 3) batch = (int64_t{INT_MAX} / (int64_t{groups} * channel_tiles * pixel_tiles) + 1) * draw(1, 3);
    const WorkItems items = work_items(batch, groups, channel_tiles, pixel_tiles);
    ASSERT_EQ(items.count, batch * groups * channel_tiles * pixel_tiles);
    wide += items.count > INT_MAX;
    for (const int64_t item : {int64_t{0}, items.count - 1, draw(0, items.count - 1), draw(0, items.count - 1)}) {
      expect_decodes(items, groups, item);
    }
  }
  EXPECT_GE(wide, 700);  // both paths ran
}

TEST(ConvWorkItems, EveryItemOfSmallLaunches) {
  for (const auto& [batch, groups, channel_tiles, pixel_tiles] :
       {std::tuple{1, 1, 1, 1}, std::tuple{3, 2, 5, 7}, std::tuple{2, 64, 1, 49}, std::tuple{17, 1, 8, 3}}) {
    const WorkItems items = work_items(batch, groups, channel_tiles, pixel_tiles);
    for (int64_t item = 0; item < items.count; ++item) expect_decodes(items, groups, item);
  }
}

}  // namespace

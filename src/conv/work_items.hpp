// The work items both convolution kernels walk, grid-stride: (image, group, output-channel tile,
// pixel tile), pixel tiles fastest, item = ((n * groups + group) * channel_tiles + channel_tile) *
// pixel_tiles + pixel_tile. Decoded by 32-bit multiply-shift divisions where every item index fits
// 31 bits (every launch but those of huge batches of tiny planes), else by 64-bit divisions, each of
// which costs a thread more instructions than the rest of its decode. Host and device code, so that
// the CPU tests check both decodes.
#pragma once

#include <climits>
#include <cstdint>

#include "core/integer.hpp"

namespace solops::detail {

struct WorkItem {
  int64_t n, channel_tile, pixel_tile;
  int group;
};

struct WorkItems {
  int64_t count, channel_tiles, pixel_tiles;
  FastDivisor channel_tiles_divisor, pixel_tiles_divisor, groups_divisor;  // used where count < 2^31
};

// channel_tiles and pixel_tiles are below 2^31: tiles of a group's channels and of a plane.
inline WorkItems work_items(int64_t batch, int groups, int channel_tiles, int pixel_tiles) {
  return {batch * groups * channel_tiles * pixel_tiles, channel_tiles, pixel_tiles,
          FastDivisor(channel_tiles), FastDivisor(pixel_tiles), FastDivisor(groups)};
}

SOLOPS_HOST_DEVICE inline WorkItem decode(const WorkItems& items, int groups, int64_t item) {
  if (items.count <= INT_MAX) {
    const int index = static_cast<int>(item);
    const int rest = items.pixel_tiles_divisor.divide(index);
    const int image_group = items.channel_tiles_divisor.divide(rest);
    const int n = items.groups_divisor.divide(image_group);
    return {n, rest - image_group * items.channel_tiles_divisor.divisor(),
            index - rest * items.pixel_tiles_divisor.divisor(), image_group - n * groups};
  }
  const int64_t rest = item / items.pixel_tiles, image_group = rest / items.channel_tiles;
  const int64_t n = image_group / groups;
  return {n, rest - image_group * items.channel_tiles, item - rest * items.pixel_tiles,
          static_cast<int>(image_group - n * groups)};
}

}  // namespace solops::detail

#pragma once

namespace solops {

// Roofline cost of one call: arithmetic (spec §1 counting rules) and the minimum traffic
// (each input read once, each output written once).
struct Cost {
  double flops = 0;
  double bytes = 0;
};

}  // namespace solops

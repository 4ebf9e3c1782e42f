// CPU references: the executable specification. Host tensors only; float64 accumulation,
// one rounding to the output dtype. Slow by design; used by tests and the benchmark. Each family
// declares its own in its header, in namespace solops::reference.
#pragma once

#include "solops/conv.hpp"
#include "solops/norm.hpp"
#include "solops/pool.hpp"
#include "solops/topk.hpp"

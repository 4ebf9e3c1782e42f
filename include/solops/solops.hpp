// Umbrella header of the C++ API.
#pragma once

#include "solops/conv.hpp"
#include "solops/cost.hpp"
#include "solops/error.hpp"
#include "solops/norm.hpp"
#include "solops/pool.hpp"
#include "solops/tensor.hpp"
#include "solops/topk.hpp"

/* solops C ABI: the stable surface for bindings (the Python package uses it through ctypes).
 * Every function returns a solops_status; on failure solops_last_error() returns the message
 * (thread-local, valid until the next failing call on the same thread). */
#ifndef SOLOPS_H
#define SOLOPS_H

#include "solops/c/common.h"
#include "solops/c/conv.h"
#include "solops/c/norm.h"
#include "solops/c/pool.h"
#include "solops/c/topk.h"

#endif /* SOLOPS_H */

// Expecting a solops::Error: its status and a fragment of its message.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "solops/error.hpp"

namespace solops::testing {

template <class Call>
void expect_error(Call&& call, const std::string& fragment, Status status = Status::invalid_argument) {
  try {
    call();
    ADD_FAILURE() << "accepted, expected an error containing '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

}  // namespace solops::testing

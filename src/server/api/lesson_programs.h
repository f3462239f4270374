// server/api/lesson_programs.h — the first lesson's two example programs (NumPy and C++),
// with the output each printed when the build ran it (examples/CMakeLists.txt).
#pragma once

#include <vector>

#include "server/api/api_types.h"

namespace headlab::server {

const std::vector<Program>& lesson_programs();
// Lesson 3's (word order): RoPE in NumPy and through model::rope_forward.
const std::vector<Program>& word_order_programs();

}  // namespace headlab::server

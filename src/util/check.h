// util/check.h — HEADLAB_CHECK for programmer errors (our own shapes disagree).
// Never reached by user input: if it can be, a validation is missing upstream.
#pragma once

#include <cstdio>
#include <cstdlib>

#define HEADLAB_CHECK(cond)                                                        \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                \
    }                                                                              \
  } while (0)

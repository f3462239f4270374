// cli/whole_number.h — the check of every whole-number option: a range said in words.
//
//   cmd->add_option("--query", o.query, "...")->check(whole_number_from(0));
//   // headlab heads --query -1  ->  headlab: error: --query: must be a whole number of 0 or
//   //                                more, got -1. Run the subcommand with --help ...
//
// CLI11's NonNegativeNumber and PositiveNumber print their upper bound, the largest double,
// as a 309-digit number; these name the bounds a person would type.
#pragma once

#include <cstdint>
#include <limits>

#include <CLI/CLI.hpp>

namespace headlab::cli {

// A whole number of `min` or more (and at most `max`, the option's type's largest value,
// which the message names only when it is exceeded).
CLI::Validator whole_number_from(std::int64_t min, std::int64_t max = std::numeric_limits<int>::max());

// A whole number from 0 to 2^64 - 1, for a uint64_t option (a seed): CLI11 alone read -1 and
// 99999999999999999999 both as 2^64 - 1.
CLI::Validator whole_number_u64();

// A finite number above `above` (not equal) up to `most`, said in words ("a number above 0");
// CLI11's Range and PositiveNumber let NaN through (every comparison with it is false), and
// print the largest double as 309 digits.
CLI::Validator number_above(double above, double most, const std::string& most_text);
// The same from `least` (equal allowed).
CLI::Validator number_from(double least, double most, const std::string& most_text);

}  // namespace headlab::cli

// Checks of flag values for CLI11 options. They read a value's text before CLI11 converts it, so
// every bad value is refused with the flag's name and, in plain words, what the flag accepts
// ("--max-tokens: expects a whole number from 0 to 1000000, got 'abc'"); CLI11's own conversion
// and range messages never reach the user. Each validator carries a name (kWhole, ...) so the
// tests can find every flag of a kind and try bad values on it.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "ferrum/sampler.h"

namespace ferrum::cli {

inline constexpr const char* kWhole = "whole";    // an integer in a range
inline constexpr const char* kReal = "real";      // a finite number in a range
inline constexpr const char* kChoice = "choice";  // one of a list of words
inline constexpr const char* kText = "text";      // any non-empty text
inline constexpr const char* kSeed = "seed";      // -1 (random) or 0 .. 2^64-1

// An integer in [lo, hi], rewritten in plain decimal: give it with ->transform() (->check() would
// keep the text, and CLI11 reads "010" as octal 8).
CLI::Validator whole(int64_t lo, int64_t hi);
// A finite number in [lo, hi] (lo itself refused when lo_open).
CLI::Validator real(double lo, double hi, bool lo_open = false);
// A sampling parameter in the range the engine and the HTTP API accept.
CLI::Validator real(const ParamRange& r, bool lo_open = false);
CLI::Validator whole(const ParamRange& r);
// One of `choices` (exact spelling).
CLI::Validator one_of(std::vector<std::string> choices);
// Any text but the empty one.
CLI::Validator non_empty();
// A sampling seed: -1 for a random one, or 0 .. 2^64-1.
CLI::Validator seed_value();

// A value as an error message shows it: quoted, control characters escaped, cut short when long.
std::string shown_value(const std::string& value);
// `text` with its control characters escaped (\n, \xNN): an error stays one line.
std::string one_line(const std::string& text);

// The contents of the file a flag names; an unreadable one is an error naming the flag.
std::string read_flag_file(const std::string& path, const char* flag);

// The random seed used when none is given.
uint64_t random_seed();
// The seed of a --seed text (after seed_value() accepted it); -1 gives a random one.
uint64_t parse_seed(const std::string& text);

}  // namespace ferrum::cli

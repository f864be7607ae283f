// Token id lists on the command line, in one form for every command: `tokenize --ids-only`
// prints what `detokenize` and `eval --tokens` read, so one command's output is the next one's
// input, quoted as one argument or unquoted as several.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ferrum::cli {

// The ids separated by single spaces: "1 403 407".
std::string format_token_ids(std::span<const int32_t> ids);

// The ids in `args`, separated by commas and/or whitespace within an argument or across several
// ("1,403 407", "1, 403", {"1", "403,407"}), optionally inside one pair of brackets as a JSON
// array prints them ("[1, 403, 407]"). Fails naming `what` (the flag or argument) and the item
// that is not a whole number, or when there is no id at all.
std::vector<int32_t> parse_token_ids(std::span<const std::string> args, std::string_view what);

// Fails naming `what` and the first id that is not below n_vocab.
void check_token_ids(std::span<const int32_t> ids, std::string_view what, int64_t n_vocab);

}  // namespace ferrum::cli

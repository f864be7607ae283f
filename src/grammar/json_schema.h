// JSON Schema -> grammar (GBNF rules added to a GrammarBuilder), for response_format json_schema
// / json_object and `ferrum run --json-schema`.
//
// Supported keywords: type (one or a list), properties, required, additionalProperties (false,
// true or a schema; absent means false, as OpenAI's strict mode), items, enum, const, anyOf,
// oneOf (generated as anyOf: branches should not overlap), $ref to "#", "#/$defs/..." or
// "#/definitions/..." (recursion allowed), minItems/maxItems, minLength/maxLength, pattern (a
// regular-expression subset: literals, escapes, \d \w \s, classes, ., groups, |, ^ $ at the ends,
// * + ? {m,n}), format (date, time, date-time, uuid, email), minimum/maximum (integer values; on
// integers also exclusiveMinimum/exclusiveMaximum), and the annotations title, description,
// default, examples, $schema, $id, $comment. Any other keyword throws ferrum::Error naming the
// keyword and where it is in the schema; nothing is silently ignored.
//
// Output form: object members in the order of `properties` as the JSON library sorts them (by
// name), numbers without leading zeros and at most 16 digits before and after the point,
// whitespace between tokens bounded: nothing, one space, or a newline and up to 20 spaces/tabs
// (so a model cannot loop forever on whitespace while staying inside the grammar).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "grammar/grammar.h"

namespace ferrum::grammar {

// The GBNF text of rule `name` matching `schema`; helper rules are named `name`-... .
std::string json_schema_gbnf(const nlohmann::json& schema, const std::string& name = "root");
// Any JSON object (response_format json_object).
std::string json_object_gbnf(const std::string& name = "root");

// The same, added to a builder (to compose: a literal prefix, then Expr::ref(name)).
void add_json_schema(GrammarBuilder& b, const nlohmann::json& schema, const std::string& name);

// Parts used by the compiler, exposed for tests.
std::string gbnf_literal(std::string_view bytes);  // a GBNF string literal of exactly these bytes
// Integers in [lo, hi] (either bound may be absent) as a GBNF expression, no leading zeros.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);
// A JSON Schema `pattern` (unanchored unless ^/$) as a GBNF expression over a JSON string's
// content; `ch` is the rule of one unescaped-or-escaped string character. Throws on unsupported
// syntax, naming it.
std::string pattern_gbnf(std::string_view pattern, const std::string& ch);

}  // namespace ferrum::grammar

// Helpers shared by the builtin filters, tests, methods and globals (internal).
#pragma once

#include <optional>
#include <string>

#include "template/jinja/value.h"

namespace ferrum::jinja {

// Jinja soft_str: Python str() of a value ("" for undefined).
std::string soft_str(const Value& v);
// A Markup input gives a Markup result (markupsafe's str methods return Markup).
Value same_kind(const Value& v, std::string s);
// Optional str argument (None/absent -> nullopt); raises TypeError for other types.
std::optional<std::string> opt_str(const Value* v, const char* fname);
int64_t need_int(const Value* v, const char* what);
const std::string& need_str(const Value& v, const char* what);
// Jinja make_attrgetter: "a.b.0" -> nested getitem.
Value attr_path(const Value& obj, const std::string& path);
// Key for case-insensitive sorting/uniqueness (lower-cased strings).
Value sort_key(const Value& v, bool case_sensitive);
// list of (key, value) tuples of a dict.
Value dict_items(const Value& v);

}  // namespace ferrum::jinja

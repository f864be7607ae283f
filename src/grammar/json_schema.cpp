#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <set>

#include "core/fail.h"
#include "grammar/gbnf.h"

namespace ferrum::grammar {

using nlohmann::json;

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

const std::set<std::string> kAnnotations = {"title",   "description", "default", "examples",
                                            "$schema", "$id",         "$comment"};
const std::set<std::string> kKeywords = {"type",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "$ref",
                                         "$defs",
                                         "definitions",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum"};

// Dates that are always valid: years 0001-9999, February stops at 28.
constexpr const char* kDate =
    "([1-9] [0-9]{3} | \"0\" ([1-9] [0-9]{2} | \"0\" ([1-9] [0-9] | \"0\" [1-9]))) \"-\" ((\"0\" [13578] | "
    "\"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
    "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | \"02-\" (\"0\" [1-9] | \"1\" [0-9] | "
    "\"2\" [0-8]))";
constexpr const char* kTime =
    "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? "
    "(\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
constexpr const char* kUuid =
    "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}";
constexpr const char* kEmail =
    "[a-zA-Z0-9._%+-]{1,64} \"@\" [a-zA-Z0-9-]{1,63} (\".\" [a-zA-Z0-9-]{1,63}){1,4}";

class SchemaCompiler {
 public:
  SchemaCompiler(const json& root, std::string name) : root_(root), p_(std::move(name)) {}

  std::string run() {
    const std::string body = visit(root_, "#");
    std::string out = p_ + " ::= " + body + "\n";
    for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
    return out;
  }

  std::string any_object() {
    need_primitives();
    std::string out = p_ + " ::= " + p_ + "-object\n";
    for (const auto& [name, rule] : rules_) out += name + " ::= " + rule + "\n";
    return out;
  }

 private:
  template <typename... Args>
  [[noreturn]] static void error(const std::string& path, fmt::format_string<Args...> f, Args&&... args) {
    fail("json_schema: {} (at {})", fmt::format(f, std::forward<Args>(args)...), path);
  }

  std::string rule(const std::string& suffix) const { return p_ + "-" + suffix; }
  std::string fresh(const std::string& what) { return rule(what + std::to_string(++counter_)); }
  std::string ws() const { return rule("ws"); }

  void need_primitives() {
    if (rules_.count(rule("value"))) return;
    const std::string w = ws();
    rules_[w] = "| \" \" | \"\\n\" [ \\t]{0,20}";
    rules_[rule("value")] = rule("object") + " | " + rule("array") + " | " + rule("string") + " | " +
                            rule("number") + " | \"true\" | \"false\" | \"null\"";
    const std::string member = rule("string") + " " + w + " \":\" " + w + " " + rule("value") + " " + w;
    rules_[rule("object")] = "\"{\" " + w + " (" + member + " (\",\" " + w + " " + member + ")*)? \"}\"";
    const std::string item = rule("value") + " " + w;
    rules_[rule("array")] = "\"[\" " + w + " (" + item + " (\",\" " + w + " " + item + ")*)? \"]\"";
    rules_[rule("string")] = "\"\\\"\" " + rule("char") + "* \"\\\"\"";
    rules_[rule("char")] = "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" " + rule("hex4") + ")";
    // \u escapes of surrogates are left out (a lone surrogate is not a character).
    rules_[rule("hex4")] = "([0-9a-cA-CefEF] [0-9a-fA-F] | [dD] [0-7]) [0-9a-fA-F]{2}";
    rules_[rule("integer")] = "\"-\"? (\"0\" | [1-9] [0-9]{0,15})";
    rules_[rule("number")] = rule("integer") + " (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?";
  }

  std::string visit(const json& s, const std::string& path) {
    need_primitives();
    if (s.is_boolean()) {
      if (!s.get<bool>()) error(path, "schema 'false' matches nothing");
      return rule("value");
    }
    if (!s.is_object()) error(path, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!kKeywords.count(k) && !kAnnotations.count(k)) error(path, "unsupported keyword '{}'", k);
    if (s.contains("$ref")) {
      for (const auto& [k, v] : s.items())
        if (k != "$ref" && k != "$defs" && k != "definitions" && !kAnnotations.count(k))
          error(path, "keyword '{}' next to '$ref' is not supported", k);
      return ref(s["$ref"], path + "/$ref");
    }
    if (s.contains("const")) return gbnf_literal(s["const"].dump());
    if (s.contains("enum")) return enumeration(s["enum"], path + "/enum");
    for (const char* k : {"anyOf", "oneOf"})
      if (s.contains(k)) return any_of(s[k], path + "/" + k);
    if (!s.contains("type")) {
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required"))
        return object(s, path);
      if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return array(s, path);
      if (s.contains("pattern") || s.contains("format") || s.contains("minLength") || s.contains("maxLength"))
        return string(s, path);
      return rule("value");
    }
    const json& t = s["type"];
    if (t.is_string()) return typed(t.get<std::string>(), s, path);
    if (!t.is_array() || t.empty()) error(path + "/type", "'type' must be a string or a non-empty array");
    std::string out = "(";
    for (size_t i = 0; i < t.size(); ++i) {
      if (!t[i].is_string()) error(path + "/type", "'type' entries must be strings");
      out += (i ? " | " : "") + typed(t[i].get<std::string>(), s, path);
    }
    return out + ")";
  }

  std::string typed(const std::string& t, const json& s, const std::string& path) {
    if (t == "object") return object(s, path);
    if (t == "array") return array(s, path);
    if (t == "string") return string(s, path);
    if (t == "integer" || t == "number") return number(s, path, t == "integer");
    if (t == "boolean") return "(\"true\" | \"false\")";
    if (t == "null") return "\"null\"";
    error(path + "/type", "unknown type '{}'", t);
  }

  std::string ref(const json& r, const std::string& path) {
    if (!r.is_string()) error(path, "'$ref' must be a string");
    const std::string target = r.get<std::string>();
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    const json* node = nullptr;
    if (target == "#") {
      node = &root_;
    } else {
      for (const char* base : {"#/$defs/", "#/definitions/"}) {
        const std::string b = base;
        if (target.compare(0, b.size(), b) != 0) continue;
        const std::string key = target.substr(b.size()), defs = b.substr(2, b.size() - 3);
        if (root_.contains(defs) && root_[defs].is_object() && root_[defs].contains(key))
          node = &root_[defs][key];
      }
    }
    if (!node) error(path, "'$ref' \"{}\" does not name \"#\" or an entry of $defs/definitions", target);
    const std::string name = fresh("ref");
    refs_[target] = name;  // before visiting: a recursive schema refers to itself
    rules_[name] = "";
    rules_[name] = visit(*node, target);
    return name;
  }

  std::string enumeration(const json& e, const std::string& path) {
    if (!e.is_array() || e.empty()) error(path, "'enum' must be a non-empty array");
    std::string out = "(";
    for (size_t i = 0; i < e.size(); ++i) out += (i ? " | " : "") + gbnf_literal(e[i].dump());
    return out + ")";
  }

  std::string any_of(const json& a, const std::string& path) {
    if (!a.is_array() || a.empty()) error(path, "must be a non-empty array of schemas");
    std::string out = "(";
    for (size_t i = 0; i < a.size(); ++i)
      out += (i ? " | " : "") + visit(a[i], path + "/" + std::to_string(i));
    return out + ")";
  }

  static int count(const json& s, const char* key, const std::string& path, int dflt) {
    if (!s.contains(key)) return dflt;
    const json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > kMaxRepeat)
      error(path + "/" + key, "'{}' must be an integer in [0, {}]", key, kMaxRepeat);
    return static_cast<int>(v.get<int64_t>());
  }

  // {min,max} repetitions of `item` separated by `sep` (max -1: unbounded).
  static std::string separated(const std::string& item, const std::string& sep, int min, int max) {
    if (max == 0) return "";
    const std::string rest = "(" + sep + " " + item + ")";
    std::string bounds = "{" + std::to_string(std::max(min - 1, 0)) + "," +
                         (max < 0 ? std::string() : std::to_string(max - 1)) + "}";
    const std::string body = "(" + item + " " + rest + bounds + ")";
    return min == 0 ? body + "?" : body;
  }

  std::string array(const json& s, const std::string& path) {
    const int min = count(s, "minItems", path, 0), max = count(s, "maxItems", path, -1);
    if (max >= 0 && max < min) error(path, "maxItems < minItems");
    const std::string item =
        (s.contains("items") ? visit(s["items"], path + "/items") : rule("value")) + " " + ws();
    const std::string name = fresh("array");
    rules_[name] = "\"[\" " + ws() + " " + separated(item, "\",\" " + ws(), min, max) + " \"]\"";
    return name;
  }

  std::string string(const json& s, const std::string& path) {
    const std::string q = "\"\\\"\"";
    if (s.contains("format")) {
      if (!s["format"].is_string()) error(path + "/format", "'format' must be a string");
      const std::string f = s["format"].get<std::string>();
      std::string body;
      if (f == "date")
        body = kDate;
      else if (f == "time")
        body = kTime;
      else if (f == "date-time")
        body = std::string(kDate) + " \"T\" " + kTime;
      else if (f == "uuid")
        body = kUuid;
      else if (f == "email")
        body = kEmail;
      else
        error(path + "/format",
              "unsupported string format '{}' (supported: date, time, date-time, uuid, email)", f);
      if (s.contains("pattern") || s.contains("minLength") || s.contains("maxLength"))
        error(path, "'format' together with pattern/minLength/maxLength is not supported");
      return "(" + q + " " + body + " " + q + ")";
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) error(path + "/pattern", "'pattern' must be a string");
      if (s.contains("minLength") || s.contains("maxLength"))
        error(path, "'pattern' together with minLength/maxLength is not supported");
      try {
        return "(" + q + " (" + pattern_gbnf(s["pattern"].get<std::string>(), rule("char")) + ") " + q + ")";
      } catch (const Error& e) {
        error(path + "/pattern", "{}", e.what());
      }
    }
    const int min = count(s, "minLength", path, 0), max = count(s, "maxLength", path, -1);
    if (max >= 0 && max < min) error(path, "maxLength < minLength");
    const std::string bounds = "{" + std::to_string(min) + "," + (max < 0 ? "" : std::to_string(max)) + "}";
    return "(" + q + " " + rule("char") + bounds + " " + q + ")";
  }

  static std::optional<int64_t> bound(const json& s, const char* key, const std::string& path) {
    if (!s.contains(key)) return std::nullopt;
    const json& v = s[key];
    if (!v.is_number()) error(path + "/" + key, "'{}' must be a number", key);
    const double d = v.get<double>();
    if (d != std::floor(d) || std::fabs(d) > 1e15)
      error(path + "/" + key, "'{}' {} is not supported: bounds must be integers of at most 15 digits", key,
            v.dump());
    return static_cast<int64_t>(d);
  }

  std::string number(const json& s, const std::string& path, bool integer) {
    auto lo = bound(s, "minimum", path), hi = bound(s, "maximum", path);
    const auto xlo = bound(s, "exclusiveMinimum", path), xhi = bound(s, "exclusiveMaximum", path);
    if ((xlo || xhi) && !integer)
      error(path, "exclusiveMinimum/exclusiveMaximum are supported on integers only");
    if (xlo) lo = lo ? std::max(*lo, *xlo + 1) : *xlo + 1;
    if (xhi) hi = hi ? std::min(*hi, *xhi - 1) : *xhi - 1;
    if (lo && hi && *lo > *hi) error(path, "the bounds leave no value (minimum > maximum)");
    if (!lo && !hi) return rule(integer ? "integer" : "number");
    if (integer) return integer_range_gbnf(lo, hi);
    return bounded_number(lo, hi);
  }

  // Decimal numbers in [lo, hi] (integer bounds, at least one given), without exponent.
  static std::string bounded_number(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    const std::string frac = "(\".\" [0-9]{1,16})?", zero_frac = "(\".\" \"0\"{1,16})?";
    std::vector<std::string> alts;
    // k.fff with k >= 0 lies in [k, k+1): k in [max(lo,0), hi-1]; k = hi only with a zero fraction.
    if (!hi || *hi >= 1) {
      const std::string r =
          integer_range_gbnf(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? std::optional(*hi - 1) : std::nullopt);
      if (!r.empty()) alts.push_back(r + " " + frac);
    }
    if (hi && *hi >= 0 && (!lo || *lo <= *hi))
      alts.push_back(gbnf_literal(std::to_string(*hi)) + " " + zero_frac);
    // -k.fff lies in (-(k+1), -k]: k in [max(-hi,0), -lo-1]; k = -lo only with a zero fraction.
    if (!lo || *lo < 0) {
      const int64_t from = hi ? std::max<int64_t>(-*hi, 0) : 0;
      const std::optional<int64_t> to = lo ? std::optional(-*lo - 1) : std::nullopt;
      if (!to || *to >= from) alts.push_back("\"-\" " + integer_range_gbnf(from, to) + " " + frac);
      if (lo) alts.push_back("\"-\" " + gbnf_literal(std::to_string(-*lo)) + " " + zero_frac);
    }
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
  }

  std::string object(const json& s, const std::string& path) {
    const json props = s.value("properties", json::object());
    if (!props.is_object()) error(path + "/properties", "'properties' must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) error(path + "/required", "'required' must be an array of names");
      for (const json& r : s["required"]) {
        if (!r.is_string()) error(path + "/required", "'required' must be an array of names");
        required.insert(r.get<std::string>());
      }
    }
    // Members: (key, value expression, required) in name order; required names without a
    // property schema take any value.
    std::vector<std::tuple<std::string, std::string, bool>> members;
    std::map<std::string, const json*> all;
    for (const auto& [k, v] : props.items()) all[k] = &v;
    for (const auto& r : required) all.emplace(r, nullptr);
    for (const auto& [k, v] : all) {
      const std::string value = v ? visit(*v, path + "/properties/" + k) : rule("value");
      members.emplace_back(
          gbnf_literal(json(k).dump()) + " " + ws() + " \":\" " + ws() + " " + value + " " + ws(), "",
          required.count(k) != 0);
    }
    std::string extra;  // an additional member, when allowed
    if (s.contains("additionalProperties")) {
      const json& a = s["additionalProperties"];
      if (!(a.is_boolean() && !a.get<bool>()))
        extra = rule("string") + " " + ws() + " \":\" " + ws() + " " +
                visit(a, path + "/additionalProperties") + " " + ws();
    }
    const std::string id = fresh("object");
    // first_i: the members from i on, none written yet; rest_i: the same after one was written.
    const std::string sep = "\",\" " + ws() + " ";
    const std::string tail = extra.empty() ? "" : "(" + sep + extra + ")*";
    const size_t n = members.size();
    auto first = [&](size_t i) { return id + "-f" + std::to_string(i); };
    auto rest = [&](size_t i) { return id + "-r" + std::to_string(i); };
    rules_[first(n)] = extra.empty() ? "\"\"" : "(" + extra + " " + tail + ")?";
    rules_[rest(n)] = tail.empty() ? "\"\"" : tail;
    for (size_t i = n; i-- > 0;) {
      const std::string& kv = std::get<0>(members[i]);
      const bool req = std::get<2>(members[i]);
      rules_[first(i)] = kv + " " + rest(i + 1) + (req ? "" : " | " + first(i + 1));
      rules_[rest(i)] = sep + kv + " " + rest(i + 1) + (req ? "" : " | " + rest(i + 1));
    }
    rules_[id] = "\"{\" " + ws() + " " + first(0) + " \"}\"";
    return id;
  }

  const json& root_;
  std::string p_;
  std::map<std::string, std::string> rules_;
  std::map<std::string, std::string> refs_;
  int counter_ = 0;
};

}  // namespace

std::string json_schema_gbnf(const json& schema, const std::string& name) {
  return SchemaCompiler(schema, name).run();
}

std::string json_object_gbnf(const std::string& name) {
  return SchemaCompiler(json::object(), name).any_object();
}

void add_json_schema(GrammarBuilder& b, const json& schema, const std::string& name) {
  parse_gbnf(json_schema_gbnf(schema, name), b);
}

}  // namespace ferrum::grammar

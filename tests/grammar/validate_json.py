#!/usr/bin/python3
"""Checks the grammar suite's sampled outputs with validators independent of ferrum.

Usage: validate_json.py SAMPLES.jsonl DATA_DIR  (DATA_DIR = tests/data/grammar)
Each line of SAMPLES is {"file", "seed", "finish", "text"} written by test_grammar's
GrammarSuite test. A schemas/*.json sample must finish with "stop", parse with json.loads and
validate against its schema with python3-jsonschema (Draft 2020-12, format checks on); a
gbnf/*.gbnf sample is checked by a Python check of that language. Every file must have 20.
Formats: python3-jsonschema's Draft 2020-12 checkers (date, uuid, email); "time" and "date-time"
(whose checker needs rfc3339-validator, not in Debian 12) are checked here with RFC 3339's
grammar and datetime.fromisoformat.
Exit status 77 (CTest: skipped) when python3-jsonschema is not installed.
"""
import collections
import datetime
import json
import re
import sys

try:
    import jsonschema
except ImportError:
    print("SKIPPED: python3-jsonschema is not installed (scripts/setup.sh installs it)")
    sys.exit(77)


def arithmetic_ok(s):
    """Recursive-descent check of arithmetic.gbnf's language, evaluated in Python as well."""
    pos = 0

    def number():
        nonlocal pos
        m = re.compile(r"-?[1-9][0-9]{0,3}|0").match(s, pos)
        if not m:
            raise ValueError("number expected at %d" % pos)
        pos = m.end()

    def factor():
        nonlocal pos
        if s.startswith("(", pos):
            pos += 1
            expr()
            if not s.startswith(")", pos):
                raise ValueError("')' expected at %d" % pos)
            pos += 1
        else:
            number()

    def sequence(item, ops, most):
        nonlocal pos
        item()
        for _ in range(most):
            if pos < len(s) and s[pos] in ops:
                pos += 1
                item()
            else:
                break

    def term():
        sequence(factor, "*/", 2)

    def expr():
        sequence(term, "+-", 3)

    try:
        expr()
    except ValueError:
        return False
    return pos == len(s)


RFC3339_TIME = r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"


def rfc3339_datetime(s):
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]" + RFC3339_TIME, s):
        return False
    datetime.datetime.fromisoformat(s.upper().replace("Z", "+00:00"))  # raises on out-of-range parts
    return True


def format_checker():
    checker = jsonschema.FormatChecker(jsonschema.draft202012_format_checker.checkers.keys())
    checker.checks("date-time", raises=ValueError)(lambda s: not isinstance(s, str) or rfc3339_datetime(s))
    checker.checks("time", raises=ValueError)(lambda s: not isinstance(s, str) or rfc3339_datetime("1970-01-01T" + s))
    return checker


GBNF_CHECKS = {
    "arithmetic.gbnf": arithmetic_ok,
    "list.gbnf": lambda s: re.fullmatch(r"(- [a-z]{1,8}( [a-z]{1,8}){0,2}\n){1,4}", s) is not None,
    "json.gbnf": lambda s: json.loads(s) is not None or s == "null",
    "kv_lines.gbnf": lambda s: re.fullmatch(r'([a-z_]{1,6}=([^\n=\x00-\x1f]{1,10}|"quoted")\n){1,3}', s) is not None,
}


def main():
    samples, data_dir = sys.argv[1], sys.argv[2]
    counts = collections.Counter()
    failures = []
    for line in open(samples, encoding="utf-8"):
        d = json.loads(line)
        name, text = d["file"], d["text"]
        counts[name] += 1
        where = "%s seed %d: %r" % (name, d["seed"], text[:200])
        if d["finish"] != "stop":
            failures.append("%s: finished with %s" % (where, d["finish"]))
            continue
        try:
            if name.startswith("schemas/"):
                schema = json.load(open("%s/%s" % (data_dir, name), encoding="utf-8"))
                validator = jsonschema.Draft202012Validator(schema, format_checker=format_checker())
                validator.validate(json.loads(text))
            else:
                check = GBNF_CHECKS[name.split("/")[-1]]
                if not check(text):
                    failures.append("%s: not in the language" % where)
        except (ValueError, jsonschema.ValidationError) as e:
            failures.append("%s: %s" % (where, str(e).splitlines()[0]))
    for name, n in sorted(counts.items()):
        if n != 20:
            failures.append("%s: %d samples, expected 20" % (name, n))
    for f in failures:
        print("FAIL", f)
    print("%d files, %d samples, %d failures" % (len(counts), sum(counts.values()), len(failures)))
    return 1 if failures or not counts else 0


if __name__ == "__main__":
    sys.exit(main())

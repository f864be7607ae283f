#!/usr/bin/env python3
"""Regenerates jinja_fuzz_cases.json.xz: random expressions over literals, variables, operators,
filters, tests and methods, rendered by Python Jinja2 in the HF configuration (see
gen_jinja_cases.py). Every literal is passed as a variable so that nothing is constant-folded
at compile time (Jinja2 folds constant expressions and then handles some errors differently).
Usage: python3 gen_jinja_fuzz.py SEED COUNT | xz -9 > jinja_fuzz_cases.json.xz"""
import ast
import copy
import json
import random
import sys

import jinja2

from gen_jinja_cases import env

ATOMS = ["0", "1", "2", "-3", "7", "0.5", "2.0", "-1.5", "1e3", "'a'", "'Ab c'", "''", "'x\\ny'", "'é'", "' pad '",
         "none", "true", "false", "[]", "[1, 2]", "['b', 'a', 'b']", "{}", "{'a': 1, 'b': [2]}", "(1, 'x')",
         "s", "l", "d", "n", "u", "t", "f", "e", "m"]
BIN = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">", "<=", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "string", "upper", "lower", "trim", "list", "first", "last", "join(', ')", "default('d')", "int",
           "float", "abs", "round", "tojson", "sort", "reverse", "unique", "count", "title", "capitalize", "items",
           "dictsort", "e", "safe", "wordcount", "select", "reject('none')", "map('string')", "selectattr('a')", "min",
           "max", "sum", "batch(2)", "indent(2)", "replace('a', 'z')", "tojson(indent=2)", "string | length",
           "list | length", "center(7)", "int(5)", "float(1.5)", "default('d', true)", "join"]
TESTS = ["defined", "undefined", "none", "string", "number", "mapping", "iterable", "sequence", "even", "odd",
         "boolean", "integer", "float", "true", "false", "divisibleby(2)", "in([1, 2])", "eq(1)", "lower", "upper",
         "callable"]
POSTFIX = [".upper()", ".split()", ".strip()", ".get('a')", ".keys()", ".items()", ".startswith('h')",
           ".replace('l', 'L')", ".split(',')", ".lstrip('a')", ".title()", ".count('a')", ".find('o')", ".values()",
           ".endswith(('d', 'x'))", ".format(1)", ".join(['1', '2'])", ".rsplit(' ', 1)", ".capitalize()",
           ".isdigit()", ".index(1)", "[0]", "[-1]", "[1:]", "[::-1]", "['a']", ".a", ".b", "[:2]", "[1]"]
VARS = {"s": "hello World", "l": [3, 1, 2], "d": {"a": 1, "b": "x"}, "n": None, "t": True, "f": 1.25, "e": "",
        "m": [{"a": 1}, {"a": 0}, {"b": 2}]}

# Literals become variables (tuples stay literal: JSON has no tuples).
for i, atom in enumerate(list(ATOMS)):
    if atom[0] in "0123456789-'[{" or atom in ("none", "true", "false"):
        VARS["c%d" % i] = ast.literal_eval(atom.replace("none", "None").replace("true", "True").replace("false", "False"))
        ATOMS[i] = "c%d" % i


def gen(depth):
    r = random.random()
    if depth <= 0 or r < 0.25:
        return random.choice(ATOMS)
    if r < 0.45:
        return f"({gen(depth - 1)} {random.choice(BIN)} {gen(depth - 1)})"
    if r < 0.6:
        return f"({gen(depth - 1)} | {random.choice(FILTERS)})"
    if r < 0.7:
        return f"({gen(depth - 1)} is {random.choice(['', 'not '])}{random.choice(TESTS)})"
    if r < 0.82:
        return f"({gen(depth - 1)}){random.choice(POSTFIX)}"
    if r < 0.88:
        return f"(not {gen(depth - 1)})"
    if r < 0.94:
        return f"({gen(depth - 1)} if {gen(depth - 1)} else {gen(depth - 1)})"
    return f"[{gen(depth - 1)}, {gen(depth - 1)}]"


def main():
    random.seed(int(sys.argv[1]))
    count = int(sys.argv[2])
    cases = []
    while len(cases) < count:
        src = "{{ " + gen(3) + " }}"
        case = {"template": src}
        try:
            case["rendered"] = env.from_string(src).render(**copy.deepcopy(VARS))
        except jinja2.exceptions.TemplateSyntaxError:
            continue
        except Exception as e:  # noqa: BLE001 - recording the exception is the point
            case["error"] = {"type": type(e).__name__, "message": str(e)}
        text = json.dumps(case).lower()
        if "0x" in text:  # object addresses (generators) cannot be reproduced
            continue
        cases.append(case)
    json.dump({"generator": "gen_jinja_fuzz.py " + " ".join(sys.argv[1:]) + ", python3 jinja2 " + jinja2.__version__,
               "vars": VARS, "cases": cases}, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Regenerates jinja_ws_fuzz_cases.json.xz: random templates mixing whitespace/newline text with
if/else/for/set/macro/raw tags, comments and prints, each tag with random whitespace control
(-, +, none), rendered by Python Jinja2 in the HF configuration (trim_blocks, lstrip_blocks).
Usage: python3 gen_jinja_ws_fuzz.py SEED COUNT | xz -9 > jinja_ws_fuzz_cases.json.xz"""
import json
import random
import sys

import jinja2

from gen_jinja_cases import env

TEXT = ["", " ", "  ", "\n", "\n\n", "  \n", "\n  ", "a", "b ", " c\n", "\t", "\n\t  ", "x\n  \n"]
VARS = {"x": True, "l": [1, 2]}


def ws():
    return "".join(random.choice(TEXT) for _ in range(random.randint(0, 3)))


def tag(body):
    return "{%" + random.choice(["", "", "-", "+"]) + " " + body + " " + random.choice(["", "", "-", "+"]) + "%}"


def var(expr):
    return "{{" + random.choice(["", "-"]) + " " + expr + " " + random.choice(["", "-"]) + "}}"


def comment():
    return "{#" + random.choice(["", "-"]) + " c " + random.choice(["", "-"]) + "#}"


def block(depth):
    out = ""
    for _ in range(random.randint(1, 4)):
        r = random.random()
        out += ws()
        if depth > 0 and r < 0.2:
            out += tag("if x") + block(depth - 1) + ws()
            if random.random() < 0.5:
                out += tag("else") + block(depth - 1)
            out += ws() + tag("endif")
        elif depth > 0 and r < 0.4:
            out += tag("for i in l") + block(depth - 1) + ws() + tag("endfor")
        elif r < 0.55:
            out += var(random.choice(["i", "x", "'v'", "l | length"]))
        elif r < 0.65:
            out += comment()
        elif r < 0.75:
            out += tag("set y = 1")
        elif depth > 0 and r < 0.8:
            out += tag("macro m()") + block(depth - 1) + tag("endmacro") + var("m()")
        elif r < 0.85:
            out += tag("raw") + ws() + "{{ r }}" + ws() + tag("endraw")
        else:
            out += ws()
        out += ws()
    return out


def main():
    random.seed(int(sys.argv[1]))
    cases = []
    while len(cases) < int(sys.argv[2]):
        src = block(3) + random.choice(["", "\n", "\n\n", " \n"])
        try:
            cases.append({"template": src, "rendered": env.from_string(src).render(**VARS)})
        except jinja2.exceptions.TemplateError:
            continue
    json.dump({"generator": "gen_jinja_ws_fuzz.py " + " ".join(sys.argv[1:]) + ", python3 jinja2 " + jinja2.__version__,
               "vars": VARS, "cases": cases}, sys.stdout, ensure_ascii=False)
    print()


if __name__ == "__main__":
    main()

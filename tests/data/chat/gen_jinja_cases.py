#!/usr/bin/env python3
"""Regenerates jinja_cases.json: unit cases for ferrum's Jinja engine, rendered by Python Jinja2 set
up as Hugging Face transformers does (the reference behaviour). Dev-time only; tests read the JSON.
Usage: python3 gen_jinja_cases.py > jinja_cases.json"""
import json
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


class Generation(Extension):
    """{% generation %} as HF's AssistantTracker renders it when not tracking: the body as is."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_support"), [], [], body).set_lineno(lineno)

    def _support(self, caller):
        return caller()


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

MSGS = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]}]

CASES = [
    # whitespace control
    ("ws_trim_blocks", "{% if true %}\nA\n{% endif %}\nB", {}),
    ("ws_lstrip_blocks", "  {% if true %}\n    x\n  {% endif %}\ny", {}),
    ("ws_minus", "a  {{- 'b' -}}  c\n  {%- if true -%}  d  {%- endif -%}  e", {}),
    ("ws_plus", "  {%+ if true %}x{% endif %}\n  {% if true +%}\ny{% endif %}", {}),
    ("ws_comment", "a\n  {# comment #}\nb {#- c -#}   c\n{# x #}", {}),
    ("ws_var_no_trim", "{{ 'a' }}\n{{ 'b' }}\n", {}),
    ("ws_trailing_newline", "x\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc", {}),
    ("ws_lstrip_after_text", "text {% if true %}x{% endif %}\n   {% if true %}y{% endif %}", {}),
    ("raw_block", "{% raw %}{{ not evaluated }}{% endraw %}|{%- raw -%}  a {{b}}  {%- endraw %}", {}),
    ("raw_trim", "  {% raw %}\n x\n  {% endraw %}\nz", {}),
    # literals and printing
    ("print_values", "{{ none }}|{{ None }}|{{ true }}|{{ False }}|{{ 1 }}|{{ 1.0 }}|{{ 1.5e3 }}|{{ 0.1 + 0.2 }}|{{ [1, 'a', none, true] }}|{{ {'k': 'v', 'n': [1.5]} }}|{{ (1,) }}|{{ (1, 'x') }}|{{ () }}", {}),
    ("print_undefined", "[{{ nope }}][{{ d.nope }}][{{ l[5] }}]", {"d": {}, "l": [1]}),
    ("print_repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n\\ttab\\\\'] }}", {}),
    ("string_escapes", "{{ 'a\\nb\\tc\\\\d\\'e\\\"f\\x41\\u00e9\\U0001F600' }}", {}),
    ("floats", "{{ 1e16 }}|{{ 1e15 }}|{{ 1e-5 }}|{{ 0.0001 }}|{{ 123456789.125 }}|{{ -0.0 }}|{{ 3 / 2 }}|{{ 4 / 2 }}|{{ 2 ** 0.5 }}", {}),
    ("string_concat_adjacent", "{{ 'a' 'b' \"c\" }}", {}),
    # arithmetic
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 - 4 }} {{ (1 + 2) * 3 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }} {{ true + 1 }}", {}),
    ("concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ undefined_var ~ [1] }}", {}),
    ("string_mul", "{{ 'ab' * 3 }}|{{ 2 * 'x' }}|{{ [1] * 2 }}|{{ 'x' * 0 }}", {}),
    ("string_percent", "{{ '%s-%d-%05.2f-%x-%r' % ('a', 42, 3.14159, 255, 'q') }}|{{ '%s' % 5 }}|{{ '%(a)s' % {'a': 1} }}|{{ '100%%' % () }}", {}),
    ("list_add", "{{ [1, 2] + [3] }}|{{ 'a' + 'b' }}|{{ 1.5 + 1 }}", {}),
    # comparisons / logic
    ("compare", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ 1 == '1' }} {{ [1,2] == [1,2] }} {{ none == none }} {{ 1 != 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ (1, 2) < (1, 3) }}", {}),
    ("logic_values", "{{ 0 or 'x' }}|{{ 'a' and 'b' }}|{{ '' and 'b' }}|{{ none or [] }}|{{ not 0 }}|{{ not 'a' }}|{{ 1 if 0 else 2 }}|{{ 'y' if 1 }}|[{{ 'y' if 0 }}]", {}),
    ("in_operator", "{{ 'a' in 'cat' }} {{ 'x' not in 'cat' }} {{ 1 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'v' in {'k': 'v'} }} {{ 3 in (1, 2) }} {{ 'a' in undefined_thing }}", {}),
    ("truthiness", "{% for v in [0, 1, '', 'a', [], [0], {}, {'a': 1}, none, 0.0, 0.5] %}{{ 'T' if v else 'F' }}{% endfor %}", {}),
    # tests
    ("tests_types", "{% for v in [1, 1.5, 'a', [1], {'a': 1}, none, true, undef] %}{{ v is number }}{{ v is integer }}{{ v is float }}{{ v is string }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}{{ v is none }}{{ v is boolean }}{{ v is defined }}|{% endfor %}", {}),
    ("tests_misc", "{{ 4 is even }} {{ 3 is odd }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ true is true }} {{ 1 is true }} {{ false is false }} {{ 0 is false }} {{ 'a' is equalto 'a' }} {{ 2 is eq 3 }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 1 is in [1] }} {{ x is not defined }} {{ 3 is gt 2 }} {{ 3 is ge 4 }} {{ 1 is lt 2 }} {{ 1 is le 1 }} {{ 1 is ne 1 }}", {}),
    ("tests_sameas", "{% set a = [1] %}{{ a is sameas a }} {{ none is sameas none }} {{ true is sameas 1 }}", {}),
    ("test_callable", "{% macro m() %}{% endmacro %}{{ m is callable }} {{ range is callable }} {{ 'x' is callable }}", {}),
    # loops
    ("loop_vars", "{% for x in ['a', 'b', 'c'] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}[{{ loop.previtem }}|{{ loop.nextitem }}]{{ loop.depth }}{% endfor %}", {}),
    ("loop_else", "{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}empty{% endfor %}", {}),
    ("loop_filter", "{% for x in range(10) if x is odd %}{{ x }}{{ '/' ~ loop.length if loop.last }}{% endfor %}", {}),
    ("loop_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}{% for k, v in d|items %}{{ k }}{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("loop_dict_iter", "{% for k in d %}{{ k }}{% endfor %}|{% for c in 'héllo' %}{{ c }}.{% endfor %}", {"d": {"z": 1, "a": 2}}),
    ("loop_break_continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}{{ x }}{% endfor %}", {}),
    ("loop_scoping", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + 10 %}{{ x }},{% endfor %}{{ x }}", {}),
    ("loop_nested", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("loop_cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b', 'c') }}{% endfor %}", {}),
    ("namespace", "{% set ns = namespace(n=0, items=[]) %}{% for x in range(4) %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.n }} {{ ns.items }} {{ ns.missing is defined }}", {}),
    ("namespace_dict_arg", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}", {}),
    ("range_forms", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ range(0) | list }}", {}),
    # set
    ("set_forms", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}{% set s %}block {{ a }}{% endset %}[{{ s }}]{% set u | upper %}up{% endset %}{{ u }}", {}),
    ("set_in_if_leaks", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", {}),
    # macros
    ("macro_basic", "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }}", {}),
    ("macro_varargs", "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, k=4) }}", {}),
    ("macro_whitespace", "{% macro m(x) %}\n  <{{ x }}>\n{% endmacro %}\n[{{ m(1) }}]", {}),
    ("macro_scope", "{% set g = 'global' %}{% macro m() %}{{ g }}{% set g = 'local' %}{{ g }}{% endmacro %}{{ m() }}{{ g }}", {}),
    ("macro_default_uses_arg", "{% macro m(a, b=a ~ '!') %}{{ b }}{% endmacro %}{{ m('x') }}", {}),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner{% endcall %}", {}),
    ("call_block_args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}[{{ x }}]{% endcall %}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'world' }}{% endfilter %}|{% filter trim | replace('a', 'o') %}  banana  {% endfilter %}", {}),
    # filters
    ("f_strings", "{{ '  x  ' | trim }}|{{ 'xxhixx' | trim('x') }}|{{ 'hello world' | upper }}|{{ 'HeLLo' | lower }}|{{ 'hello wORLD-foo(bar' | title }}|{{ 'hELLO wORLD' | capitalize }}|{{ 'aaa' | replace('a', 'b', 2) }}|{{ 'one two  three' | wordcount }}|{{ 'abc' | reverse }}|{{ 'x' | center(5) }}|", {}),
    ("f_none_trim", "{{ none | trim }}|{{ none | string }}|{{ undefined_x | trim }}|{{ none | upper }}|{{ 12 | string | length }}", {}),
    ("f_length", "{{ 'héllo' | length }} {{ [1, 2] | length }} {{ {'a': 1} | count }} {{ undefined_x | length }}", {}),
    ("f_join", "{{ [1, 'a', none] | join(', ') }}|{{ ['a', 'b'] | join }}|{{ users | join(', ', attribute='name') }}", {"users": [{"name": "x"}, {"name": "y"}]}),
    ("f_first_last", "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ [] | first }}|", {}),
    ("f_list", "{{ 'ab' | list }} {{ {'a': 1, 'b': 2} | list }} {{ (1, 2) | list }}", {}),
    ("f_int_float", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '0x1A' | int(0, 16) }} {{ '1.5' | float }} {{ 'a' | float }} {{ 2 | float }} {{ true | int }}", {}),
    ("f_default", "{{ x | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }} {{ 0 | d('z', boolean=true) }} {{ 'v' | default('d') }}", {}),
    ("f_items_dictsort", "{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(by='value') }} {{ d | dictsort(reverse=true) }}", {"d": {"b": 2, "A": 3, "c": 1}}),
    ("f_select", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ msgs | rejectattr('role', 'eq', 'user') | list | length }} {{ [1, 2, 3, 4] | select('even') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ [1, 2, 3] | reject('odd') | list }} {{ msgs | selectattr('content') | list | length }}", {"msgs": MSGS}),
    ("f_map", "{{ ['a', 'B'] | map('upper') | list }} {{ ['  a ', 'b  '] | map('trim') | join('|') }} {{ [{'a': {'b': 1}}, {}] | map(attribute='a.b', default='none') | list }} {{ ['x', 'y'] | map('replace', 'x', 'z') | list }}", {}),
    ("f_unique_sort", "{{ ['a', 'B', 'b', 'A', 'c'] | unique | list }} {{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [3, 1, 2] | sort(reverse=true) }} {{ users | sort(attribute='age') | map(attribute='name') | join }}", {"users": [{"name": "x", "age": 3}, {"name": "y", "age": 1}]}),
    ("f_minmax_sum", "{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ [1, 2, 3] | sum }} {{ ['b', 'A'] | max }} {{ [{'v': 2}, {'v': 5}] | sum(attribute='v') }} {{ [1.5, 2] | sum(start=10) }}", {}),
    ("f_abs_round", "{{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(method='ceil') }} {{ 2.9 | round(0, 'floor') }} {{ 7 | round }}", {}),
    ("f_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(width='> ', blank=true) }}|{{ 'x\\n' | indent(first=true) }}", {}),
    ("f_batch", "{{ [1, 2, 3, 4, 5] | batch(2) | list }} {{ [1, 2, 3] | batch(2, 'x') | list }}", {}),
    ("f_escape_safe", "{{ '<a href=\"x\">&\\'</a>' | e }} {{ '<b>' | safe }}", {}),
    ("f_format_attr", "{{ '%s=%s' | format('a', 1) }} {{ d | attr('k') }}", {"d": {"k": "v"}}),
    ("f_tojson", "{{ d | tojson }}|{{ d | tojson(indent=2) }}|{{ d | tojson(sort_keys=true) }}|{{ d | tojson(separators=(',', ':')) }}|{{ 'é\"\\n\\u0001<>&\\'' | tojson }}|{{ 'é😀' | tojson(ensure_ascii=true) }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson }}|{{ [1.0, 1e20, -0.5, none, true] | tojson }}|{{ (1, 2) | tojson }}", {"d": {"z": [1, {"x": None}], "a": "b", "n": 1.5, "t": True, "e": []}}),
    ("f_tojson_indent_str", "{{ {'a': [1, 2]} | tojson(indent='\\t') }}|{{ {'a': {}} | tojson(indent=0) }}", {}),
    # attribute / item access
    ("access", "{{ d.a }} {{ d['a'] }} {{ l[0] }} {{ l[-1] }} {{ l.0 }} {{ d.get('a') }} {{ d.get('x') }} {{ d.get('x', 'dflt') }} {{ d.x is defined }} {{ 'héllo'[1] }} {{ 'abc'[-1] }}", {"d": {"a": 1}, "l": [1, 2, 3]}),
    ("slicing", "{{ l[1:] }} {{ l[:-1] }} {{ l[::-1] }} {{ l[::2] }} {{ l[1:3] }} {{ l[-2:] }} {{ l[5:] }} {{ 'héllo'[1:3] }} {{ 'abc'[::-1] }} {{ l[3:0:-1] }} {{ l[:] }}", {"l": [1, 2, 3, 4, 5]}),
    ("dict_methods", "{{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {% for k, v in d.items() %}{{ k }}{{ v }}{% endfor %}", {"d": {"b": 1, "a": [2]}}),
    ("none_attr", "{{ n.x is defined }} {{ n['y'] is defined }}", {"n": None}),
    # string methods
    ("str_methods", "{{ '  a b  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a,b,c'.split(',', 1) }}|{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'abc'.startswith('ab') }}|{{ 'abc'.endswith(('x', 'c')) }}|{{ 'aXbX'.replace('X', '-') }}|{{ 'ab'.upper() }}|{{ 'AB'.lower() }}|{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}", {}),
    ("str_methods2", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} {{ 'banana'.count('a') }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '-'.join(['a', 'b']) }} {{ '{} and {}'.format('x', 1) }} {{ '{0}{1}{0}'.format('a', 'b') }} {{ '{n}!'.format(n=3) }} {{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ '  '.isspace() }} {{ '42'.zfill(5) }} {{ 'a'.ljust(3) }}| {{ 'a'.rjust(3, '*') }} {{ 'a=b=c'.partition('=') }} {{ 'ab'.removeprefix('a') }}", {}),
    ("str_unicode_strip", "[{{ '\\u00a0\\u3000 x \\u2003'.strip() }}] [{{ ' x '.split(' ') }}]", {}),
    ("str_format_spec", "{{ '{:>5}|{:<4}|{:^7}|{:.2f}|{:05d}'.format('a', 'b', 'c', 3.14159, 42) }}", {}),
    # globals
    ("dict_global", "{{ dict(a=1, b='x') }} {{ dict(a=1) | tojson }}", {}),
    ("joiner", "{% set j = joiner(' | ') %}{% for x in 'abc' %}{{ j() }}{{ x }}{% endfor %}", {}),
    # chat-template idioms
    ("chat_idioms", "{%- for message in messages %}{%- if message.role == 'assistant' and message.tool_calls %}{%- for tc in message.tool_calls %}{{ tc.function.name }}({{ tc.function.arguments | tojson }}){%- endfor %}{%- elif message['content'] is string %}<{{ message.role }}>{{ message.content | trim }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}<assistant>{% endif %}", {"messages": MSGS, "add_generation_prompt": True}),
    ("generation_tag", "a{% generation %}b{{ 1 }}{% endgeneration %}c", {}),
    # Markup (|safe) semantics: concatenation escapes the plain side
    ("markup_concat", "{{ '<a>'|safe + '<b>' }}|{{ '<b>' + '<a>'|safe }}|{{ '<a>'|safe ~ '<b>' }}|{{ ('<a>'|safe).upper() + '&' }}|{{ ('%s<' | safe) % '<x>' }}|{{ '<a>' | e }}|{{ ('<a>' | e) | e }}|{{ ['x'|safe] }}|{{ ('a'|safe).replace('a', '<') }}|{{ ('x'|safe) * 2 + '>' }}|{{ ('ab'|safe)[0] + '<' }}", {}),
    ("markup_filters", "{{ ('<a> '|safe) | trim + '<' }}|{{ ('<a>'|safe) | string + '<' }}|{{ ('<a>'|safe) | forceescape }}|{{ ', '|safe ~ '<' }}|{{ (', '|safe).join(['<', '>']) }}", {}),
    # generators and views, as Python Jinja2 returns them
    ("generators", "{{ [1, 2] | select('odd') | list }}|{{ ([] | select) is iterable }}|{{ 'T' if [] | select else 'F' }}|{% set g = [1, 2, 3] | map('string') %}{{ g | join }}-{{ g | join }}|{{ [3, 1] | reverse | list }}|{{ (1, 2) | reverse | list }}|{{ [1, 2] | unique | first }}|{{ {'a': 1}.items() | list }}|{{ {'a': 1}.items() }}|{{ {'a': 1}.keys() | length }}|{{ none | selectattr('x') | list }}|{{ none | map(attribute='x') | list }}", {}),
    ("generator_consumed_by_in", "{% set g = [1, 2, 3] | select %}{{ 2 in g }}{{ 1 in g }}{{ 3 in g }}", {}),
    ("tuple_dict_key", "{% set d = {(1, 2): 'tup'} %}{{ d[(1, 2)] }}{{ d }}", {}),
    ("err_tuple_key_tojson", "{{ {(1, 2): 'tup'} | tojson }}", {}),
    ("int_dict_keys", "{% set d = {0: 'zero', 512: 'a', 1.5: 'f', true: 't', none: 'n'} %}{{ d[0] }}{{ d[512] }}{{ d[1] }}{{ d[1.0] }}{{ d[none] }}|{{ d | tojson }}|{{ d }}|{{ {2: 'b', 1: 'a'} | dictsort }}|{{ {2: 'b', 1: 'a'} | tojson(sort_keys=true) }}", {}),
    ("deferred_unknown_filter", "{% if false %}{{ x | from_json }}{% endif %}{{ 'ok' if true else y | nosuch }}", {}),
    ("err_generator_length", "{{ [1] | select | length }}", {}),
    ("err_generator_tojson", "{{ [1] | map('string') | tojson }}", {}),
    ("err_generator_last", "{{ [1] | select | last }}", {}),
    ("err_view_tojson", "{{ {'a': 1}.items() | tojson }}", {}),
    ("err_markup_add_none", "{{ 'a'|safe + none }}", {}),
    ("err_unknown_filter_runtime", "{% if true %}{{ 1 | from_json }}{% endif %}", {}),
    ("err_items_not_mapping", "{% set g = 'abc' | items %}ok{% for k, v in g %}{% endfor %}", {}),
    ("percent_mapping_like", "[{{ 'ab' % l }}][{{ 'ab%s' % l }}][{{ 'x' % u }}][{{ '%s!' % u }}]", {"l": [1, 2]}),
    ("callable_undefined", "{{ u is callable }}", {}),
    ("lazy_generator_errors", "{% set g = t | select %}{{ g is iterable }}|{% set g2 = l | map('nosuchfilter') %}ok", {"t": True, "l": [1]}),
    ("err_lazy_generator_iterated", "{{ t | select | list }}", {"t": True}),
    ("err_lazy_map_unknown_filter", "{{ l | map('nosuchfilter') | list }}", {"l": [1]}),
    ("err_reverse_not_iterable", "{{ b | reverse }}", {"b": True}),
    ("err_max_incomparable", "{{ ['a', 1] | max }}", {}),
    ("err_list_le", "{{ [1, 'a'] <= [1, 2] }}", {}),
    ("err_slice_int", "{{ i[1:] }}", {"i": 7}),
    ("err_slice_dict", "{{ d[1:] }}", {"d": {"a": 1}}),
    ("err_indent_int", "{{ i | indent }}", {"i": 7}),
    ("err_indent_list", "{{ l | indent }}", {"l": [1]}),
    ("err_dictsort_list", "{{ l | dictsort }}", {"l": [1]}),
    ("err_mul_seq", "{{ 'a' * 'b' }}", {}),
    ("err_mul_seq_float", "{{ 1.5 * [1] }}", {}),
    ("err_float_div_zero", "{{ 1.5 / 0 }}", {}),
    ("err_int_undefined", "{{ u | int }}", {}),
    ("err_last_bool", "{{ b | last }}", {"b": True}),
    ("err_str_index_int", "{{ 'abc'.index(1) }}", {}),
    ("err_unhashable_key", "{{ {[1]: 2} }}", {}),
    ("err_element_msg", "{{ l[5].x }}", {"l": [1]}),
    ("err_none_element_msg", "{{ n[0].x }}", {"n": None}),
    ("with_block", "{% set a = 1 %}{% with a = 2, b = a %}{{ a }}{{ b }}{% endwith %}{{ a }}{{ b is defined }}", {}),
    ("recursive_loop", "{% for n in tree recursive %}[{{ n.name }}@{{ loop.depth }}{% if n.children %}:{{ loop(n.children) }}{% endif %}]{% endfor %}", {"tree": [{"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]}),
    ("loop_changed", "{% for x in [1, 1, 2, 2, 1] %}{{ loop.changed(x) }} {% endfor %}{% for x in [1] %}{{ loop }}{% endfor %}", {}),
    ("f_slice_truncate", "{{ [1, 2, 3, 4, 5] | slice(2) | list }} {{ [1, 2, 3, 4] | slice(3, 'x') | list }} {{ 'hello world foo bar' | truncate(9, leeway=0) }} {{ 'hello world' | truncate(9, true, leeway=0) }} {{ 'hello world foo bar' | truncate(12) }} {{ 'short' | truncate(3, end='') }}", {}),
    # errors Python raises (type and message must match)
    ("err_raise_exception", "{{ raise_exception('Bad role: ' ~ role) }}", {"role": "tool"}),
    ("err_in_none", "{{ 'a' in none }}", {}),
    ("err_add_none_str", "{{ none + 'a' }}", {}),
    ("err_add_str_none", "{{ 'a' + none }}", {}),
    ("err_add_str_int", "{{ 'a' + 1 }}", {}),
    ("err_add_list_str", "{{ [1] + 'a' }}", {}),
    ("err_sub_str", "{{ 'a' - 1 }}", {}),
    ("err_undefined_attr", "{{ x.y }}", {}),
    ("err_undefined_attr2", "{{ d.missing.y }}", {"d": {}}),
    ("err_undefined_add", "{{ x + 1 }}", {}),
    ("err_undefined_call", "{{ foo() }}", {}),
    ("err_none_method", "{{ n.strip() }}", {"n": None}),
    ("err_div_zero", "{{ 1 / 0 }}", {}),
    ("err_floordiv_zero", "{{ 1 // 0 }}", {}),
    ("err_mod_zero", "{{ 1 % 0 }}", {}),
    ("err_compare", "{{ 1 < 'a' }}", {}),
    ("err_len_int", "{{ 5 | length }}", {}),
    ("err_iter_int", "{% for x in 5 %}{% endfor %}", {}),
    ("err_iter_none", "{% for x in none %}{% endfor %}", {}),
    ("err_in_str_int", "{{ 1 in 'abc' }}", {}),
    ("err_not_callable", "{{ 'abc'() }}", {}),
    ("err_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}", {}),
    ("err_ns_assign", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("err_list_append", "{% set l = [] %}{{ l.append(1) }}", {}),
    ("err_dict_update", "{% set d = {} %}{{ d.update({'a': 1}) }}", {}),
    ("err_tojson_undefined", "{{ x | tojson }}", {}),
    ("err_neg_str", "{{ -'a' }}", {}),
    ("err_range_big", "{{ range(1000000) | length }}", {}),
    ("err_split_empty", "{{ 'a'.split('') }}", {}),
    ("err_unknown_kw", "{{ 'a' | trim(foo=1) }}", {}),
]

SYNTAX_ERRORS = [
    ("syn_unclosed_if", "{% if x %}a"),
    ("syn_unclosed_for", "a\n{% for x in y %}\nb"),
    ("syn_bad_expr", "{{ 1 + }}"),
    ("syn_unknown_tag", "{% frobnicate %}"),
    ("syn_unknown_filter", "{{ x | nosuchfilter }}"),
    ("syn_unknown_test", "{{ x is nosuchtest }}"),
    ("syn_unknown_filter_in_loop_in_if", "{% if x %}{% for a in b %}{{ a | nosuchfilter }}{% endfor %}{% endif %}"),
    ("syn_unclosed_var", "{{ x "),
    ("syn_unclosed_comment", "{# x "),
    ("syn_unclosed_string", "{{ 'abc }}"),
    ("syn_stray_endif", "{% endif %}"),
    ("syn_break_outside_loop", "{% break %}"),
    ("syn_bad_bracket", "{{ (1, 2] }}"),
    ("syn_elif_after_else", "{% if a %}{% else %}{% elif b %}{% endif %}"),
    ("syn_missing_in", "{% for x y %}{% endfor %}"),
    ("syn_include", "{% include 'x.html' %}"),
]

def main():
    out = []
    for name, src, variables in CASES:
        case = {"name": name, "template": src, "vars": variables}
        try:
            case["rendered"] = env.from_string(src).render(**variables)
        except jinja2.exceptions.TemplateSyntaxError as e:
            print(f"unexpected syntax error in {name}: {e}", file=sys.stderr)
            sys.exit(1)
        except Exception as e:  # noqa: BLE001 - recording the exception is the point
            case["error"] = {"type": type(e).__name__, "message": str(e)}
        out.append(case)
    for name, src in SYNTAX_ERRORS:
        try:
            env.from_string(src)
            env.from_string(src).render()
            print(f"{name} did not fail in Jinja2", file=sys.stderr)
            sys.exit(1)
        except jinja2.exceptions.TemplateSyntaxError as e:
            out.append({"name": name, "template": src, "vars": {},
                        "syntax_error": {"line": e.lineno, "message": e.message}})
        except Exception as e:  # noqa: BLE001
            out.append({"name": name, "template": src, "vars": {},
                        "syntax_error": {"line": None, "message": f"{type(e).__name__}: {e}"}})

    json.dump({"generator": "python3 jinja2 " + jinja2.__version__ + " (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, HF tojson)",
               "cases": out}, sys.stdout, ensure_ascii=False, indent=1)
    print()


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# CTest grammar.SampledOutputsValidate: test_grammar's GrammarSuite samples 20 outputs per grammar
# of tests/data/grammar (and checks them against ferrum's own matcher), then validate_json.py
# checks them with independent validators. Exit 77 (skipped) only when python3-jsonschema is
# missing after the C++ half passed.
set -euo pipefail
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
FERRUM_GRAMMAR_SAMPLES="$tmp/samples.jsonl" "$bin" --gtest_filter='GrammarSuite.*'
/usr/bin/python3 "$src/tests/grammar/validate_json.py" "$tmp/samples.jsonl" "$src/tests/data/grammar"

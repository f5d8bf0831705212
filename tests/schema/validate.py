#!/usr/bin/env python3
"""Validate a ringkeeper --json output (stdin) against a schema of this directory.

    validate.py SCHEMA.json [--keys-in TEXT_FILE]

Also refuses any integer beyond 2^53 (what a JSON reader such as jq keeps
exact), and with --keys-in (the text of the first session), a text counter that
is not a JSON key, or a non-zero JSON counter the text does not print: the
text and JSON name them alike.
"""
import json
import sys

import jsonschema

LIMIT = 2**53


def walk(x, path="$"):
    if isinstance(x, bool):
        return
    if isinstance(x, int) and abs(x) > LIMIT:
        sys.exit(f"{path}: integer {x} above 2^53")
    if isinstance(x, dict):
        for k, v in x.items():
            walk(v, f"{path}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, f"{path}[{i}]")


def main():
    schema = json.load(open(sys.argv[1]))
    data = json.load(sys.stdin)
    jsonschema.validate(data, schema)
    walk(data)
    if len(sys.argv) > 3 and sys.argv[2] == "--keys-in":
        text = open(sys.argv[3]).read()
        named = schema["items"]["properties"]
        obj = data[0]
        # Text counter lines: "  key   value  meaning", keys in the first column.
        started = False
        for line in text.splitlines():
            if line.startswith("  COUNTER"):
                started = True
                continue
            if started and line.startswith("  ") and not line.startswith("   "):
                key = line.split()[0]
                if key == "crash:":
                    continue
                if key not in obj:
                    sys.exit(f"text counter {key} is not a JSON key")
        # Counters the text leaves out are those that cannot apply: zero.
        for k, v in obj.items():
            if k in named or isinstance(v, bool) or not isinstance(v, int) or not v:
                continue
            if f" {k} " not in text:
                sys.exit(f"key {k} ({v}) is not in the text output")
    print("valid")


main()

#!/usr/bin/env python3
"""The Helm chart against the model table (tests/e2e/chart.sh).

Usage: chart_table.py OPTIONS_JSON SCHEMA_JSON TRAINER_ARGS

OPTIONS_JSON is `gnn-trainer options --format json`; SCHEMA_JSON the chart's
values.schema.json; TRAINER_ARGS the trainer StatefulSet's arguments as the
chart renders them with its default values, one per line. Prints one line per
disagreement and exits 1 when there is any:
  - a row's chart key missing from the schema (under trainer), or of another type;
  - the default values rendering a row's flag with a value other than the
    table's default (the chart's defaults are the trainer's);
  - the schema's model enum not the registered models.
"""
import json
import sys

SCHEMA_TYPES = {"int": ("integer", "number"), "float": ("number",), "bool": ("boolean",),
                "string": ("string",), "list": ("array", "string")}


def schema_at(schema, key):
    node = schema["properties"]["trainer"]
    for part in key.split("."):
        node = node.get("properties", {}).get(part)
        if node is None:
            return None
    return node


def schema_types(node):
    t = node.get("type")
    if t is None and "oneOf" in node:
        return [x.get("type") for x in node["oneOf"]]
    if t is None and "enum" in node:
        return ["string"]
    return t if isinstance(t, list) else [t]


def onoff(row):
    """An on|off option is a boolean in the chart."""
    return ("boolean",) if row.get("choices") == "on|off" else ()


def rendered_flags(path):
    flags = {}
    for line in open(path):
        a = line.strip()
        if not a.startswith("--"):
            continue
        name, _, value = a[2:].partition("=")
        flags[name] = value if "=" in a else "true"
    return flags


def same(row, value):
    d = row.get("default")
    if row["type"] == "bool":   # a bare flag when true
        return (value == "true") == (d == "true")
    if row["type"] == "string" and row.get("choices") == "on|off":
        return value == d
    if value is None:
        return d is None
    if row["type"] in ("int", "float"):
        return d is not None and float(value) == float(d)
    return value == d


def main():
    table = json.load(open(sys.argv[1]))
    schema = json.load(open(sys.argv[2]))
    flags = rendered_flags(sys.argv[3])
    bad = []
    for row in table["options"]:
        key = row.get("chart")
        if key is None:
            continue
        node = schema_at(schema, key)
        if node is None:
            bad.append(f"--{row['name']}: trainer.{key} is not in values.schema.json")
        elif not set(schema_types(node)) & set(SCHEMA_TYPES[row["type"]] + onoff(row)):
            bad.append(f"--{row['name']}: trainer.{key} is {schema_types(node)} in the schema, a {row['type']} in the table")
        active = row["group"] == "any"   # the default values: node task, no embeddings
        if active and not same(row, flags.get(row["name"])):
            bad.append(f"--{row['name']}: the chart's default renders {flags.get(row['name'])!r}, "
                       f"the table's default is {row.get('default')!r}")
    models = sorted(m["name"] for m in table["models"])
    enum = sorted(schema_at(schema, "model").get("enum", []))
    if models != enum:
        bad.append(f"trainer.model's enum is {enum}, the registered models are {models}")
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

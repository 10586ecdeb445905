#!/usr/bin/env python3
"""Convert a time-series classification file in sktime's `.ts` format into a long-form CSV:
one row per time step.

Output header: `sequence,step,label,<channel columns>`. `sequence` is `<prefix>-NNNN`
(1-based, in file order), `step` the 0-based time index, `label` the class label as
written in the source. Values are copied as text, never re-formatted, so the CSV holds
exactly the numbers of the source file.

Usage:
    python3 convert_ts.py SOURCE.ts OUT.csv --prefix train [--channels c1,c2,...]

Standard library only. Supports what the UEA/UCR archive files use for classification:
equal or unequal lengths, no time stamps, one label per case. A summary (cases,
channels, lengths, classes) is printed on standard error.
"""
import argparse
import csv
import sys
from collections import Counter
from pathlib import Path


def parse_ts(lines):
    """Cases of a sktime `.ts` file: (channels, label), each channel a list of value strings."""
    header = {}
    in_data = False
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            if line.startswith("@"):
                key, _, value = line[1:].partition(" ")
                header[key.lower()] = value.strip().lower()
                in_data = key.lower() == "data"
            if in_data and header.get("timestamps") == "true":
                sys.exit("convert_ts: files with @timeStamps true are not supported")
            if in_data and not header.get("classlabel", "").startswith("true"):
                sys.exit("convert_ts: the file has no class labels (@classLabel false)")
            continue
        *channels, label = line.split(":")
        yield lineno, [c.split(",") for c in channels], label.strip()
    if not in_data:
        sys.exit("convert_ts: no @data line found")


def convert(source, out, prefix, channel_names):
    """Write the long-form CSV of `source` to `out`; returns a summary dict."""
    lengths, labels = [], Counter()
    n_channels = None
    with open(source, encoding="utf-8") as src, open(out, "w", newline="", encoding="utf-8") as dst:
        writer = csv.writer(dst, lineterminator="\n")
        for lineno, channels, label in parse_ts(src):
            if n_channels is None:
                n_channels = len(channels)
                names = channel_names or [f"c{i + 1}" for i in range(n_channels)]
                if len(names) != n_channels:
                    sys.exit(f"convert_ts: {len(names)} channel names for {n_channels} channels")
                writer.writerow(["sequence", "step", "label", *names])
            if len(channels) != n_channels:
                sys.exit(f"convert_ts: line {lineno}: {len(channels)} channels, expected {n_channels}")
            length = len(channels[0])
            if any(len(c) != length for c in channels):
                sys.exit(f"convert_ts: line {lineno}: channels of different lengths")
            seq_id = f"{prefix}-{len(lengths) + 1:04d}"
            for step in range(length):
                writer.writerow([seq_id, step, label, *(c[step].strip() for c in channels)])
            lengths.append(length)
            labels[label] += 1
    if not lengths:
        sys.exit(f"convert_ts: {source} has no cases")
    return {"cases": len(lengths), "channels": n_channels, "min_length": min(lengths),
            "max_length": max(lengths), "rows": sum(lengths), "classes": dict(sorted(labels.items()))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="a .ts file")
    ap.add_argument("out", type=Path, help="the CSV file to write")
    ap.add_argument("--prefix", required=True, help="sequence id prefix, e.g. train or test")
    ap.add_argument("--channels", help="comma-separated channel column names (default c1..cK)")
    a = ap.parse_args()
    names = a.channels.split(",") if a.channels else None
    summary = convert(a.source, a.out, a.prefix, names)
    print(f"{a.out}: " + ", ".join(f"{k} {v}" for k, v in summary.items()), file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Turn scikit-learn's copy of the UCI handwritten digits (`digits.csv.gz`: one 8x8 image of
counts 0..16 per line, 64 values then the digit) into long-form CSV files where each image is a
sequence of its 8 rows, top to bottom: 8 steps of 8 channels (`p1`..`p8`, left to right).

The first 1198 images (two thirds) go to the training file, the other 599 to the test file,
in the source's order. Values are copied as text.

Usage:
    python3 convert_digits.py digits.csv.gz OUT_DIR

Standard library only.
"""
import argparse
import csv
import gzip
from pathlib import Path

TRAIN_IMAGES = 1198


def write_split(path, prefix, images):
    """Writes `images` (lists of 64 value strings and a label) as long-form CSV."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["sequence", "step", "label"] + [f"p{c}" for c in range(1, 9)])
        for number, (pixels, label) in enumerate(images, 1):
            for row in range(8):
                writer.writerow([f"{prefix}-{number:04d}", row, label] + pixels[8 * row : 8 * row + 8])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="digits.csv.gz from scikit-learn")
    parser.add_argument("out_dir", type=Path, help="folder for train.csv and test.csv")
    args = parser.parse_args()
    with gzip.open(args.source, "rt") as f:
        images = [(fields[:64], fields[64]) for fields in csv.reader(f)]
    if len(images) != 1797 or any(len(p) != 64 for p, _ in images):
        raise SystemExit(f"expected 1797 images of 64 values, got {len(images)}")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    write_split(args.out_dir / "train.csv", "train", images[:TRAIN_IMAGES])
    write_split(args.out_dir / "test.csv", "test", images[TRAIN_IMAGES:])


if __name__ == "__main__":
    main()

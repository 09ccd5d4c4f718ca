"""Write scikit-learn's bundled UCI handwritten digits as plain CSV.

Usage: python scripts/export_digits.py OUT.csv

Each of the 1797 lines holds the 64 pixel values (0..16) of an 8x8 image in
row-major order followed by its label (0..9), so examples/train_digits.c can
read it with nothing but stdio.
"""
import csv
import sys

from sklearn.datasets import load_digits


def main() -> int:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} OUT.csv", file=sys.stderr)
        return 2
    digits = load_digits()
    with open(sys.argv[1], "w", newline="") as f:
        writer = csv.writer(f)
        for pixels, label in zip(digits.data, digits.target):
            # load_digits returns the pixels as floats; they are whole numbers.
            writer.writerow([int(p) for p in pixels] + [int(label)])
    return 0


if __name__ == "__main__":
    sys.exit(main())

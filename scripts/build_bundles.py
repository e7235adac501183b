#!/usr/bin/env python3
"""Build a servable bundle from source JSONL articles. See `--help` and README.md."""

import sys

from app.builder.cli import main

if __name__ == "__main__":
    sys.exit(main())

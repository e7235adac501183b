#!/usr/bin/env python3
"""Verify a shipped bundle and swap it into the served directory. See `--help` and README.md."""

import sys

from app.bundle.install import main

if __name__ == "__main__":
    sys.exit(main())

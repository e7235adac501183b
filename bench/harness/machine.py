"""What a result was measured on: CPU, memory, kernel and the versions of the tools."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from harness.load import WRK
from harness.nginx import NGINX
from harness.paths import VENV_BIN


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    mhz = re.search(r"^cpu MHz\s*:\s*(.+)$", cpuinfo, re.M)
    meminfo = Path("/proc/meminfo").read_text()
    total_kb = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1))  # type: ignore[union-attr]

    def version(cmd: list[str]) -> str:
        out = subprocess.run(cmd, capture_output=True, text=True)
        return (out.stdout or out.stderr).strip().splitlines()[0]

    return {
        "cpu": model.group(1) if model else platform.processor(),
        "cpu_mhz": mhz.group(1) if mhz else None,
        "cores": os.cpu_count(),
        "memory_gib": round(total_kb / 1024**2, 1),
        "free": subprocess.run(["free", "-m"], capture_output=True, text=True).stdout,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "versions": {
            "wrk": version([WRK, "-v"]),
            "nginx": version([NGINX, "-v"]),
            "gunicorn": version([str(VENV_BIN / "gunicorn"), "--version"]),
            "granian": version([str(VENV_BIN / "granian"), "--version"]),
            "falcon": version([sys.executable, "-c", "import falcon; print(falcon.__version__)"]),
        },
    }

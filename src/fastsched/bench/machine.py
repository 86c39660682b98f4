"""The machine a figure was measured on, recorded next to every figure."""
from __future__ import annotations

import os
import platform


def machine() -> str:
    """CPU model and core count, for the record next to every figure."""
    model = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"

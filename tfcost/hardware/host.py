"""How much memory this machine has free, read without torch, so that `tfcost measure --device cpu` can refuse
a call that cannot fit before torch is even imported."""

from __future__ import annotations

import os


def host_available_bytes() -> int | None:
    """Memory the kernel says can be allocated without swapping (Linux's MemAvailable), else the free physical
    pages (other POSIX systems); None where neither can be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # the kernel writes kB, meaning KiB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


# Device nodes a CUDA (NVIDIA) or ROCm (AMD) driver creates; torch can see no GPU on a machine that has neither.
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd")


def no_gpu_driver() -> bool:
    """True when no GPU driver's device node exists, so `--device auto` will run on the CPU: its calls can be
    checked against this machine's memory before torch (a second or more to import) is loaded."""
    return not any(os.path.exists(node) for node in GPU_DEVICE_NODES)

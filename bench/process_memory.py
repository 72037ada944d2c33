"""What a process costs in memory, read from ``/proc``: shared by the benchmarks that weigh actors.

USS (the process's private pages) is what one more such process costs; PSS adds its share of the
pages it shares with other processes (Ray's and Python's libraries); RSS counts every shared page
in full.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessMemory:
    """One process's memory in MB, and its thread count."""

    rss_mb: float
    pss_mb: float
    uss_mb: float
    threads: int


def process_memory(pid: int) -> ProcessMemory:
    """RSS, PSS and USS of ``pid`` from ``/proc/<pid>/smaps_rollup``, and its threads."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[-1] == "kB":
            fields[parts[0].rstrip(":")] = int(parts[1])
    uss = fields.get("Private_Clean", 0) + fields.get("Private_Dirty", 0)
    threads = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            threads = int(line.split()[1])
    return ProcessMemory(
        fields.get("Rss", 0) / 1000, fields.get("Pss", 0) / 1000, uss / 1000, threads
    )


def cpu_seconds(pid: int) -> float:
    """CPU time (user and system) ``pid`` has used so far, from ``/proc/<pid>/stat``."""
    # The command name (field 2) may hold spaces; the fields after it are space-separated.
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def processes_running(program: str, *needles: str) -> dict[int, str]:
    """Pid -> command line of every process whose program (its executable, or the script an
    interpreter runs) contains ``program`` and whose command line contains all of ``needles``."""
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        command = " ".join(argv)
        runs = any(program in arg for arg in argv[:3] if not arg.startswith("-"))
        if runs and all(needle in command for needle in needles):
            found[int(entry.name)] = command
    return found

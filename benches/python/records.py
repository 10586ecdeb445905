"""The JSON lines of a benchmark's figures, as the Python benchmarks and benches/fit_1m.sh print
them beside their tables (the Rust programs print the same with `Recorder` in benches/lib.rs).
The format, and how the lines become docs/benchmarks.md: benches/report.py."""

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def host_cpu():
    """The CPU's model name from /proc/cpuinfo and its logical CPUs: `MODEL, N cores`."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cores = sum(1 for line in lines if line.startswith("processor")) or os.cpu_count() or 1
    return f"{models[0] if models else 'unknown CPU'}, {cores} cores"


def gpu_model(index=0):
    """GPU `index`'s model name as the driver reports it (through nvidia-smi), or None."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", f"--id={index}"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    name = out.stdout.strip()
    return name if out.returncode == 0 and name else None


def command_line():
    """The command that repeats this run from the repository root: python3, the script
    relative to the root, and this process's arguments."""
    script = Path(sys.argv[0]).resolve()
    if script.is_relative_to(REPO):
        script = script.relative_to(REPO)
    return shlex.join(["python3", str(script), *sys.argv[1:]])


class Recorder:
    """Prints the figures of the benchmark `bench` as JSON lines on standard output."""

    def __init__(self, bench, gpu=None, command=None):
        self.bench = bench
        self.gpu = gpu
        self.cpu = host_cpu()
        self.command = command or command_line()

    def figure(self, case, metric, value, unit):
        """Prints `value` (4 significant digits) of `metric` in `unit` for `case` (a dict of
        parameters); a value that is missing or not finite is left out."""
        if value is None or not math.isfinite(value):
            return
        record = {
            "bench": self.bench,
            "case": case,
            "metric": metric,
            "value": value if isinstance(value, int) else float(f"{value:.4g}"),
            "unit": unit,
            "gpu": self.gpu,
            "cpu": self.cpu,
            "command": self.command,
        }
        print(json.dumps(record, ensure_ascii=False), flush=True)


def read_records(text):
    """The JSON records among the lines of `text` (another program's output)."""
    records = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "metric" in record:
                records.append(record)
    return records


def by_case(records):
    """(case, {metric: value}) for each case of `records`, in the order they first appear."""
    grouped = {}
    for record in records:
        key = json.dumps(record["case"], sort_keys=True)
        grouped.setdefault(key, (record["case"], {}))[1][record["metric"]] = record["value"]
    return list(grouped.values())

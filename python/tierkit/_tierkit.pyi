"""Type stubs of the native module ``tierkit._tierkit`` (crates/py)."""

from typing import Any, TypedDict, final

__all__ = [
    "BadOptionError",
    "InputFileError",
    "PolicyCtx",
    "PolicyError",
    "TierkitError",
    "UnknownNameError",
    "compare",
    "heatmap",
    "machines",
    "policies",
    "simulate",
    "workloads",
]

class _SizeOptions(TypedDict):
    pages: int | None
    footprint: int | None
    accesses: int | None
    options: list[str]

class _MachineOptions(TypedDict):
    machine: str
    machine_file: str | None
    overrides: list[str]
    antagonist: float | None
    scale: int | None
    prefault: bool
    cache_mode: bool
    access_count_ratio: bool
    seed: int

class _GridOptions(TypedDict):
    workloads: list[str]
    suite: str | None
    quick: bool
    policies: list[object]
    ratios: list[str]
    jobs: int | None

class TierkitError(ValueError):
    """Base class of every error tierkit raises."""

class UnknownNameError(TierkitError):
    """A workload, policy, machine preset or suite that does not exist."""

class BadOptionError(TierkitError):
    """An argument, workload option or machine parameter that is malformed or out of range, or a size
    (a trace header's too) that needs more memory than the machine has available."""

class InputFileError(TierkitError):
    """A machine or trace file that cannot be read or parsed."""

class PolicyError(TierkitError):
    """A policy written in Python broke its contract or raised; the original exception is the __cause__."""

@final
class PolicyCtx:
    """The memory view and migration queue of one hook call of a Python policy."""

    @property
    def now_ns(self) -> int: ...
    @property
    def tiers(self) -> int: ...
    @property
    def queued(self) -> int: ...
    def free_pages(self, tier: int) -> int: ...
    def capacity_pages(self, tier: int) -> int: ...
    def tier_of(self, page: int) -> int | None: ...
    def promote(self, page: int) -> None: ...
    def demote(self, page: int) -> None: ...
    def migrate(self, page: int, tier: int) -> None: ...

def simulate(
    workload: str, policy: object, ratio_text: str, size: _SizeOptions, machine: _MachineOptions
) -> dict[str, Any]:
    """One run as ``tierkit sim``: the summary's keys plus ``"timeline"`` (a dict of columns)."""

def compare(grid_options: _GridOptions, size: _SizeOptions, machine: _MachineOptions) -> list[dict[str, Any]]:
    """A grid as ``tierkit compare``: one summary dict per (workload, ratio, policy), with the
    workload's ``workload_pages``, ``seed`` and ``options`` (a dict of strings) to rebuild its stream."""

def advise(
    trace: str,
    target_pct: float,
    policies: list[str],
    ratios: list[str],
    size: _SizeOptions,
    machine: _MachineOptions,
    jobs: int | None = None,
    corpus: str | None = None,
    span_s: float | None = None,
) -> dict[str, Any]:
    """``tierkit advise --trace``: ``{"advice": the answer as JSON text, "runs": one summary
    dict per run}``; empty ``policies`` and ``ratios`` take the command's defaults; with
    ``corpus`` the answer places the trace among that directory's recorded programs; with
    ``span_s`` a trace without a clock is replayed over that many seconds."""

def heatmap(workload: str, size: _SizeOptions, seed: int, page_bins: int, time_bins: int) -> list[list[int]]:
    """Accesses of the workload's stream per (time bin, page bin)."""

def workloads() -> list[str]:
    """Every workload name."""

def policies() -> list[str]:
    """Every reference and policy name."""

def machines() -> list[str]:
    """Every machine preset name."""

"""tierkit: memory tiering for CXL, the simulator from Python.

Runs the same simulations as the ``tierkit sim`` and ``tierkit compare`` commands, with
the same inputs giving the same numbers::

    import tierkit
    r = tierkit.simulate(workload="zipf", policy="tierkit", ratio="1:16", alpha=0.9)
    r.summary["throughput"], r.timeline["fast_hit_ratio"]
    df = tierkit.compare(workloads=["zipf", "gups"], policies=["tierkit", "tpp"], ratios=["1:16"])
    a = tierkit.advise("app.tkt", target=0.05)    # how much DRAM, which policy

Workload options (the CLI's ``--opt KEY=VALUE``) go as extra keyword arguments, or in
``options={...}`` when a name collides with a keyword of the call (``scale`` of the GAP
workloads). Machine parameters (the CLI's ``--set KEY=VALUE``) go in
``overrides={"tiers.1.latency_ns": 200}``. Errors raise subclasses of
:class:`TierkitError` carrying the simulator's message.

A policy may also be written in Python: pass an instance of a :class:`Policy` subclass
(see :mod:`tierkit.custom`) where a policy name goes. :func:`tierkit.sweep` runs a
grid of parameters; :mod:`tierkit.plot` draws results.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import pandas as pd

from . import _tierkit
from ._tierkit import BadOptionError, InputFileError, PolicyError, TierkitError, UnknownNameError
from .custom import Policy, PolicyCtx

if TYPE_CHECKING:
    from ._tierkit import _GridOptions, _MachineOptions, _SizeOptions

__all__ = [
    "Policy",
    "PolicyCtx",
    "PolicyError",
    "SimResult",
    "simulate",
    "compare",
    "Advice",
    "advise",
    "sweep",
    "workloads",
    "policies",
    "machines",
    "TierkitError",
    "UnknownNameError",
    "BadOptionError",
    "InputFileError",
]

#: A fast:slow capacity ratio: ``"1:16"`` or ``(1, 16)``.
Ratio = str | tuple[int, int]

#: How each hook of a Python policy is called (its arguments after ``self``).
_HOOKS: dict[str, tuple[str, ...]] = {
    "sources": (),
    "on_events": ("events", "ctx"),
    "on_tick": ("telemetry", "ctx"),
    "on_moved": ("results",),
    "metadata_bytes": (),
}


def _check_policy(policy: object) -> object:
    """`policy` unchanged: a name, or an object whose hooks take the arguments the
    simulator passes; anything else raises :class:`PolicyError` naming the hook."""
    if isinstance(policy, str):
        return policy
    name = type(policy).__name__
    for hook, params in _HOOKS.items():
        method = getattr(policy, hook, None)
        if method is None:
            if hook in ("on_events", "on_tick"):
                raise PolicyError(f"policy {name}: has no method {hook}({', '.join(params)})")
            continue
        if not callable(method):
            raise PolicyError(f"policy {name}: {hook} must be a method, got {type(method).__name__}")
        try:
            inspect.signature(method).bind(*params)
        except TypeError as e:
            raise PolicyError(
                f"policy {name}: {hook}{inspect.signature(method)} cannot be called as {hook}({', '.join(params)}): {e}"
            ) from None
        except ValueError:
            continue  # no signature (a builtin): let the call decide
    return policy


@dataclass(frozen=True)
class SimResult:
    """The outcome of :func:`simulate`.

    ``summary`` has the keys of one row of ``tierkit sim --json`` (``throughput``,
    ``fast_hit_ratio``, ``pct_of_oracle``, ...), with the ratio as ``"1:16"``.
    ``timeline`` has one row per timeline point and the columns of the CLI's
    ``--timeline`` CSV (``end_ns``, ``accesses``, ``throughput``, ``fast_hit_ratio``,
    ``latency_ns_tier0``.., ``promotions``, ``demotions``, ``migrated_bytes``,
    ``access_count_ratio``).
    """

    summary: dict[str, Any]
    timeline: pd.DataFrame


def workloads() -> list[str]:
    """Every workload name (as ``tierkit list`` shows them)."""
    return _tierkit.workloads()


def policies() -> list[str]:
    """Every reference and policy name; any policy also runs as ``<policy>+colloid``."""
    return _tierkit.policies()


def machines() -> list[str]:
    """Every machine preset name."""
    return _tierkit.machines()


def _text(value: object) -> str:
    """An option value as the CLI would be given it (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _is_ratio(value: object) -> TypeGuard[Ratio]:
    """True for one ratio (as opposed to a collection of them)."""
    if isinstance(value, tuple):
        return len(value) == 2 and all(isinstance(p, int) for p in value)
    return isinstance(value, str)


def _ratio(ratio: Ratio) -> str:
    """`ratio` as the CLI writes it; anything else is left for the native layer to reject."""
    if isinstance(ratio, tuple) and len(ratio) == 2:
        return f"{ratio[0]}:{ratio[1]}"
    return ratio


def _ratios(ratios: Ratio | Iterable[Ratio] | None) -> list[str]:
    if ratios is None:
        return []
    if _is_ratio(ratios):
        return [_ratio(ratios)]
    return [_ratio(r) for r in cast(Iterable[Ratio], ratios)]


def _size(
    pages: int | None,
    footprint: int | None,
    accesses: int | None,
    options: Mapping[str, object] | None,
    params: Mapping[str, object],
) -> _SizeOptions:
    merged = {**(options or {}), **params}
    return {
        "pages": pages,
        "footprint": footprint,
        "accesses": accesses,
        "options": [f"{k}={_text(v)}" for k, v in merged.items()],
    }


def _run_options(
    machine: str,
    seed: int,
    pages: int | None,
    footprint: int | None,
    accesses: int | None,
    scale: int | None,
    prefault: bool,
    cache_mode: bool,
    access_count_ratio: bool,
    antagonist: float | None,
    machine_file: str | os.PathLike[str] | None,
    overrides: Mapping[str, object] | None,
    options: Mapping[str, object] | None,
    params: Mapping[str, object],
) -> tuple[_SizeOptions, _MachineOptions]:
    """The keyword arguments :func:`simulate` and :func:`compare` share, as the native
    layer takes them: the workload's size and options, and the machine and run settings."""
    machine_options: _MachineOptions = {
        "machine": machine,
        "machine_file": None if machine_file is None else os.fspath(machine_file),
        "overrides": [f"{k}={_text(v)}" for k, v in (overrides or {}).items()],
        "antagonist": antagonist,
        "scale": scale,
        "prefault": prefault,
        "cache_mode": cache_mode,
        "access_count_ratio": access_count_ratio,
        "seed": seed,
    }
    return _size(pages, footprint, accesses, options, params), machine_options


def simulate(
    workload: str,
    policy: str | Policy | object,
    ratio: Ratio = "1:16",
    machine: str = "cxl",
    seed: int = 1,
    *,
    pages: int | None = None,
    footprint: int | None = None,
    accesses: int | None = None,
    scale: int | None = None,
    prefault: bool = True,
    cache_mode: bool = False,
    access_count_ratio: bool = False,
    antagonist: float | None = None,
    machine_file: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, object] | None = None,
    options: Mapping[str, object] | None = None,
    **params: object,
) -> SimResult:
    """Simulates ``policy`` on ``workload`` at fast:slow ``ratio``, as ``tierkit sim``.

    ``pages`` (4 KiB pages) or ``footprint`` (bytes) sizes the workload (default 65,536
    pages) and ``accesses`` its length (default 3,000,000); ``scale`` is the real misses
    per generated access (default 1000; a trace with its own clock follows that clock
    unless ``scale`` is given); ``prefault=False`` is ``--no-prefault``. ``params`` and
    ``options`` are workload options, ``overrides`` machine parameters. ``policy`` is a
    name, with settings where given (``"hemem:hot_reads=8"``; ``tierkit list --params
    NAME`` lists them), or a Python policy object (:class:`Policy`), run as a deep copy.
    """
    size, run = _run_options(
        machine, seed, pages, footprint, accesses, scale, prefault, cache_mode, access_count_ratio, antagonist,
        machine_file, overrides, options, params
    )
    out = _tierkit.simulate(workload, _check_policy(policy), _ratio(ratio), size, run)
    timeline = pd.DataFrame(out.pop("timeline"))
    return SimResult(summary=out, timeline=timeline)


def compare(
    workloads: str | Iterable[str] | None = None,
    policies: str | Policy | Iterable[str | Policy | object] | None = None,
    ratios: Ratio | Iterable[Ratio] | None = None,
    machine: str = "cxl",
    seed: int = 1,
    *,
    suite: str | None = None,
    quick: bool = False,
    jobs: int | None = None,
    pages: int | None = None,
    footprint: int | None = None,
    accesses: int | None = None,
    scale: int | None = None,
    prefault: bool = True,
    cache_mode: bool = False,
    access_count_ratio: bool = False,
    antagonist: float | None = None,
    machine_file: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, object] | None = None,
    options: Mapping[str, object] | None = None,
    **params: object,
) -> pd.DataFrame:
    """Compares policies on a grid, as ``tierkit compare``: one row per (workload, ratio,
    policy), in that order, with the columns of ``tierkit compare --json``.

    Without ``workloads`` the ``suite`` runs (``"default"`` or ``"paper"``, ``quick``
    shrinking the paper suite 4x); without ``policies`` all-local and the default
    policies; without ``ratios`` the suite's ratios. ``jobs`` parallel runs (default one
    per core). The other arguments are as for :func:`simulate` and apply to every run.
    ``policies`` may mix names and Python policy objects; each cell runs a deep copy of
    the object, after the named policies (which run in parallel).
    """

    def names(value: str | Iterable[str] | None) -> list[str]:
        if value is None:
            return []
        return [value] if isinstance(value, str) else list(value)

    def subjects(value: str | Policy | Iterable[str | Policy | object] | None) -> list[object]:
        if value is None:
            return []
        if isinstance(value, (str, Policy)) or not isinstance(value, Iterable):
            return [_check_policy(value)]
        return [_check_policy(p) for p in value]

    grid: _GridOptions = {
        "workloads": names(workloads),
        "suite": suite,
        "quick": quick,
        "policies": subjects(policies),
        "ratios": _ratios(ratios),
        "jobs": jobs,
    }
    size, run = _run_options(
        machine, seed, pages, footprint, accesses, scale, prefault, cache_mode, access_count_ratio, antagonist,
        machine_file, overrides, options, params
    )
    rows = _tierkit.compare(grid, size, run)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Advice:
    """The answer of :func:`advise`, as ``tierkit advise --trace FILE --json`` gives it.

    ``recommended`` is the smallest DRAM size whose best policy keeps the program within
    ``target`` of all-DRAM (a dict with the columns of ``sizes``), or ``None`` when no size
    tried does. ``sizes`` has one row per size, smallest DRAM share first: ``ratio``,
    ``dram_share``, ``dram_bytes``, ``best``, ``best_pct_of_all_local``, ``runner_up``,
    ``margin_over_runner_up``, ``margin_over_none`` (points). ``runs`` has every run, with
    the columns of :func:`compare`. ``run_seconds`` is the simulated time the runs span and
    ``too_short_for`` the policies whose settling time is longer (trust their rows less);
    ``time_base`` says how trace time was set. ``program_class`` places the trace among
    the recorded programs of ``corpus`` (the ``class`` of ``tierkit advise --json``: the
    nearest program, its distance, whether the class fits and whether a stand-in is
    validated for it), or is ``None`` when no corpus was given.
    """

    trace: str
    target: float
    recommended: dict[str, Any] | None
    sizes: pd.DataFrame
    runs: pd.DataFrame
    time_base: str
    run_seconds: float
    too_short_for: list[str]
    program_class: dict[str, Any] | None = None


def advise(
    trace: str | os.PathLike[str],
    target: float = 0.05,
    *,
    ratios: Iterable[Ratio] | None = None,
    policies: Iterable[str] | None = None,
    machine: str = "cxl",
    seed: int = 1,
    jobs: int | None = None,
    scale: int | None = None,
    prefault: bool = True,
    antagonist: float | None = None,
    machine_file: str | os.PathLike[str] | None = None,
    overrides: Mapping[str, object] | None = None,
    corpus: str | os.PathLike[str] | None = None,
    span: float | None = None,
) -> Advice:
    """For the program whose trace is ``trace``: the smallest DRAM share within ``target``
    slowdown of all-DRAM (a fraction: 0.05 is 5%) under the best policy, and the best
    policy at each size, as ``tierkit advise --trace``. Every policy the real suite
    compares runs (or ``policies``, which may carry settings such as
    ``"hemem:hot_reads=8"``) at fast:slow ``ratios`` (default 1:32, 1:16, 1:8, 1:4, 1:2),
    with ``all-local`` and ``none``. With ``corpus`` (a directory of recorded programs,
    ``NAME.tktrace`` and ``standins.toml``, as the source tree's ``corpus/``) the answer
    places the trace among them, as ``tierkit advise --corpus``. With ``span`` (seconds of
    the program's time the recording covered), a trace without a clock of its own (DAMON,
    perf) is replayed over that time, as ``tierkit advise --span``; it excludes ``scale``.
    The other arguments are as for :func:`simulate`.
    """
    if span is not None and scale is not None:
        raise BadOptionError("span and scale are two time bases: give one")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise BadOptionError(f"target {target!r}: a slowdown as a fraction above 0 and below 1, such as 0.05")
    size, run = _run_options(
        machine, seed, None, None, None, scale, prefault, False, False, antagonist, machine_file, overrides, None, {}
    )
    path = os.fspath(trace)
    names = [policies] if isinstance(policies, str) else list(policies or [])
    where = None if corpus is None else os.fspath(corpus)
    out = _tierkit.advise(path, float(target) * 100.0, names, _ratios(ratios), size, run, jobs, where, span)
    answer = json.loads(out["advice"])
    return Advice(
        trace=path,
        target=float(target),
        recommended=answer["recommended"],
        sizes=pd.DataFrame(answer["sizes"]),
        runs=pd.DataFrame(out["runs"]),
        time_base=answer["time_base"],
        run_seconds=answer["run_seconds"],
        too_short_for=answer["too_short_for"],
        program_class=answer.get("class"),
    )


# Last: sweep runs simulate. `tierkit.sweep` is the function; `tierkit.sweep.combinations`
# and the rest of the module stay importable as `from tierkit.sweep import ...`.
from .sweep import sweep  # noqa: E402

//! Policies written in Python: [`PyPolicy`] implements the core [`Policy`] trait by
//! calling a Python object's hooks, taking the GIL once per call.
//!
//! The object's hooks (see `python/tierkit/custom.py` for the documented base class):
//!
//! - `sources()` → a dict describing the [`SourceRequest`] (asked once, before the run);
//! - `on_events(events, ctx)` with one list of event tuples per delivery;
//! - `on_tick(telemetry, ctx)` with a dict of per-tier statistics;
//! - optional `on_moved(results)`, `metadata_bytes()`, `tick_interval_ns`, `name`.
//!
//! `ctx` is a [`PolicyCtx`]: it reads the memory view and queues migrations, and is valid
//! only during the call it was passed to. The first exception a hook raises (or a hook
//! returning the wrong type) is kept; later calls are skipped and the run's caller raises
//! it as a [`PolicyError`] whose `__cause__` is the original exception.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use tierkit_core::{
    AccessedScan, Ctx, DeviceTopK, Event, HintFaults, Memory, Migration, MoveStatus, Nanos, Plan, Policy, SampleRate,
    Sampling, SourceRequest, Telemetry, TierId, MILLISECOND,
};

use crate::errors::PolicyError;

/// A Python object driven as a tiering policy.
pub struct PyPolicy {
    object: Py<PyAny>,
    name: String,
    sources: SourceRequest,
    tick: Nanos,
    error: ErrorSlot,
}

/// Where a [`PyPolicy`] keeps the first error its hooks raised, shared with whoever runs
/// it (the engine consumes the policy).
pub type ErrorSlot = Arc<Mutex<Option<PyErr>>>;

impl PyPolicy {
    /// Wraps `object`, asking for its name, tick interval and sources now, so that a bad
    /// `sources()` fails before the run starts.
    pub fn new(object: &Bound<'_, PyAny>) -> PyResult<Self> {
        let py = object.py();
        let class: String = object.get_type().name()?.extract()?;
        let name = match object.getattr_opt(intern!(py, "name"))? {
            Some(n) if !n.is_none() => n.extract::<String>().map_err(|_| {
                PolicyError::new_err(format!("policy {class}: `name` must be a str, got {}", type_name(&n)))
            })?,
            _ => class.clone(),
        };
        for hook in ["on_events", "on_tick"] {
            if !object.getattr_opt(hook)?.is_some_and(|h| h.is_callable()) {
                return Err(PolicyError::new_err(format!("policy {class}: has no method {hook}()")));
            }
        }
        let tick = match object.getattr_opt(intern!(py, "tick_interval_ns"))? {
            Some(t) if !t.is_none() => match t.extract::<u64>() {
                Ok(ns) if ns > 0 => ns,
                _ => {
                    return Err(PolicyError::new_err(format!(
                        "policy {class}: tick_interval_ns must be a positive int (nanoseconds), got {t:?}"
                    )))
                }
            },
            _ => 100 * MILLISECOND,
        };
        let sources = match object.getattr_opt(intern!(py, "sources"))? {
            Some(f) if f.is_callable() => {
                let got = f.call0().map_err(|e| hook_error(py, &class, "sources", e))?;
                source_request(&got).map_err(|m| PolicyError::new_err(format!("policy {class}: sources(): {m}")))?
            }
            _ => SourceRequest::default(),
        };
        Ok(Self { object: object.clone().unbind(), name, sources, tick, error: ErrorSlot::default() })
    }

    /// Where the first error a hook raises will be.
    pub fn errors(&self) -> ErrorSlot {
        Arc::clone(&self.error)
    }

    /// True once a hook failed: later hooks are skipped.
    fn failed(&self) -> bool {
        self.error.lock().map_or(true, |e| e.is_some())
    }

    /// Keeps `e` as the run's error.
    fn fail(&self, e: PyErr) {
        if let Ok(mut slot) = self.error.lock() {
            slot.get_or_insert(e);
        }
    }

    /// Checks what `hook` returned: None, or the error it raised.
    fn check(&self, py: Python<'_>, hook: &str, out: PyResult<Bound<'_, PyAny>>) {
        match out {
            Ok(r) if r.is_none() => {}
            Ok(r) => self.fail(PolicyError::new_err(format!(
                "policy {}: {hook}() must return None (queue migrations with ctx.promote/demote/migrate), got {}",
                self.name,
                type_name(&r)
            ))),
            Err(e) => self.fail(hook_error(py, &self.name, hook, e)),
        }
    }

    /// Calls `hook` with `args` under the GIL unless a hook already failed; the hook must
    /// return None.
    fn call<F>(&mut self, hook: &str, args: F)
    where
        F: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyTuple>>,
    {
        if self.failed() {
            return;
        }
        Python::attach(|py| {
            let out = args(py).and_then(|a| self.object.bind(py).call_method1(hook, a));
            self.check(py, hook, out);
        });
    }

    /// Calls `hook(first, ctx)` with a fresh [`PolicyCtx`] over `ctx`, invalidated after.
    fn call_with_ctx<F>(&mut self, hook: &str, ctx: &mut Ctx<'_>, first: F)
    where
        F: for<'py> FnOnce(Python<'py>) -> PyResult<Bound<'py, PyAny>>,
    {
        if self.failed() {
            return;
        }
        Python::attach(|py| {
            let view = match PolicyCtx::over(py, ctx) {
                Ok(v) => v,
                Err(e) => return self.fail(e),
            };
            let out = first(py).and_then(|a| self.object.bind(py).call_method1(hook, (a, view.clone())));
            view.borrow_mut().close();
            self.check(py, hook, out);
        });
    }
}

impl Policy for PyPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn sources(&self) -> SourceRequest {
        self.sources
    }

    fn tick_interval(&self) -> Nanos {
        self.tick
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        self.call_with_ctx("on_events", ctx, |py| event_list(py, events).map(Bound::into_any));
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        self.call_with_ctx("on_tick", ctx, |py| telemetry_dict(py, telemetry).map(Bound::into_any));
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        let has_hook = Python::attach(|py| self.object.bind(py).hasattr(intern!(py, "on_moved")).unwrap_or(false));
        if !has_hook {
            return;
        }
        self.call("on_moved", |py| {
            let rows: Vec<(u64, u8, &str)> = results.iter().map(|(m, s)| (m.page, m.to.0, s.cause())).collect();
            PyTuple::new(py, [PyList::new(py, rows)?])
        });
    }

    fn metadata_bytes(&self) -> usize {
        if self.failed() {
            return 0;
        }
        Python::attach(|py| {
            let o = self.object.bind(py);
            let Ok(Some(f)) = o.getattr_opt(intern!(py, "metadata_bytes")) else { return 0 };
            match f.call0() {
                Ok(v) => v.extract::<usize>().unwrap_or_else(|_| {
                    self.fail(PolicyError::new_err(format!(
                        "policy {}: metadata_bytes() must return an int >= 0, got {}",
                        self.name,
                        type_name(&v)
                    )));
                    0
                }),
                Err(e) => {
                    self.fail(hook_error(py, &self.name, "metadata_bytes", e));
                    0
                }
            }
        })
    }
}

/// The policy error for `e`, raised by `hook` of policy `name`, chained to `e`.
fn hook_error(py: Python<'_>, name: &str, hook: &str, e: PyErr) -> PyErr {
    let kind = e.get_type(py).qualname().map(|q| q.to_string()).unwrap_or_else(|_| "exception".into());
    let err = PolicyError::new_err(format!("policy {name}: {hook}() raised {kind}: {}", e.value(py)));
    err.set_cause(py, Some(e));
    err
}

/// The type name of `v`, for messages.
fn type_name(v: &Bound<'_, PyAny>) -> String {
    v.get_type().qualname().map(|q| q.to_string()).unwrap_or_else(|_| "?".into())
}

/// The events as a list of tuples, one per event, the kind first:
/// `("sample", page, tier, write, time_ns)`, `("hint_fault", page, tier, since_protect_ns,
/// time_ns)`, `("accessed", first_page, pages, count)`, `("topk", page, word, count)`,
/// `("alloc", page, tier)`, `("free", page)`.
fn event_list<'py>(py: Python<'py>, events: &[Event]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for e in events {
        let item = match *e {
            Event::Sample { page, tier, write, time, .. } => {
                (intern!(py, "sample"), page, tier.0, write, time).into_pyobject(py)?
            }
            Event::HintFault { page, tier, since_protect, time } => {
                (intern!(py, "hint_fault"), page, tier.0, since_protect, time).into_pyobject(py)?
            }
            Event::Accessed { first, pages, count } => {
                (intern!(py, "accessed"), first, pages, count).into_pyobject(py)?
            }
            Event::TopK { page, word, count } => (intern!(py, "topk"), page, word, count).into_pyobject(py)?,
            Event::Alloc { page, tier, .. } => (intern!(py, "alloc"), page, tier.0).into_pyobject(py)?,
            Event::Free { page } => (intern!(py, "free"), page).into_pyobject(py)?,
        };
        list.append(item)?;
    }
    Ok(list)
}

/// Telemetry as a dict: `now_ns`, `interval_ns`, `mechanism_cpu_ns`, `fast_hit_ratio`
/// (None without accesses) and `tiers`, a list of dicts (`accesses`, `request_rate`,
/// `occupancy`, `latency_ns`, `free_pages`, `capacity_pages`).
fn telemetry_dict<'py>(py: Python<'py>, t: &Telemetry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("now_ns", t.now)?;
    d.set_item("interval_ns", t.interval)?;
    d.set_item("mechanism_cpu_ns", t.mechanism_cpu_ns)?;
    d.set_item("fast_hit_ratio", t.fast_hit_ratio())?;
    let tiers = PyList::empty(py);
    for s in &t.tiers {
        let x = PyDict::new(py);
        x.set_item("accesses", s.accesses)?;
        x.set_item("request_rate", s.request_rate)?;
        x.set_item("occupancy", s.occupancy)?;
        x.set_item("latency_ns", s.latency_ns)?;
        x.set_item("free_pages", s.free_pages)?;
        x.set_item("capacity_pages", s.capacity_pages)?;
        tiers.append(x)?;
    }
    d.set_item("tiers", tiers)?;
    Ok(d)
}

/// Rejects any key of `d` not in `allowed`, naming it and `what`.
fn keys(d: &Bound<'_, PyDict>, what: &str, allowed: &[&str]) -> Result<(), String> {
    for k in d.keys() {
        let k: String = k.extract().map_err(|_| format!("{what}: keys must be str"))?;
        if !allowed.contains(&k.as_str()) {
            return Err(format!("{what}: unknown key {k:?} (expected one of {})", allowed.join(", ")));
        }
    }
    Ok(())
}

/// The value at `key` of `d` as `T`, or `default` when absent or None.
fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, what: &str, key: &str, default: T) -> Result<T, String> {
    match d.get_item(key).map_err(|e| e.to_string())? {
        Some(v) if !v.is_none() => {
            v.extract::<T>().map_err(|_| format!("{what}: {key} has the wrong type ({})", type_name(&v)))
        }
        _ => Ok(default),
    }
}

/// The sub-dict at `key`, None when absent or None.
fn section<'py>(d: &Bound<'py, PyDict>, key: &str) -> Result<Option<Bound<'py, PyDict>>, String> {
    match d.get_item(key).map_err(|e| e.to_string())? {
        Some(v) if !v.is_none() => v
            .cast_into::<PyDict>()
            .map(Some)
            .map_err(|e| format!("{key} must be a dict, got {}", type_name(e.into_inner().as_any()))),
        _ => Ok(None),
    }
}

/// The [`SourceRequest`] a `sources()` result describes:
/// `{"samples": {"rate_hz": F | "period": N, "slow_tiers_only": B, "words": B},
/// "hint_faults": {"window_pages": N, "period_ns": N, "slow_tiers_only": B},
/// "accessed": {"sample_interval_ns": N, "aggregation_interval_ns": N, "regions": (MIN, MAX)},
/// "device_topk": {"k": N, "query_period_ns": N, "words": B, "exact": B},
/// "allocations": B}`, every part optional.
pub fn source_request(v: &Bound<'_, PyAny>) -> Result<SourceRequest, String> {
    if v.is_none() {
        return Ok(SourceRequest::default());
    }
    let d = v.cast::<PyDict>().map_err(|_| format!("must return a dict or None, got {}", type_name(v)))?;
    keys(d, "sources", &["samples", "hint_faults", "accessed", "device_topk", "allocations"])?;
    let mut r = SourceRequest { allocations: get(d, "sources", "allocations", false)?, ..Default::default() };
    if let Some(s) = section(d, "samples")? {
        keys(&s, "samples", &["rate_hz", "period", "slow_tiers_only", "words"])?;
        let rate = match (
            get::<Option<f64>>(&s, "samples", "rate_hz", None)?,
            get::<Option<u64>>(&s, "samples", "period", None)?,
        ) {
            (Some(hz), None) if hz >= 0.0 && hz.is_finite() => SampleRate::Hz(hz),
            (None, Some(n)) => SampleRate::Period(n),
            (Some(hz), None) => return Err(format!("samples: rate_hz {hz} must be a finite rate >= 0")),
            _ => return Err("samples: give exactly one of rate_hz and period".into()),
        };
        r.samples = Some(Sampling {
            rate,
            slow_tiers_only: get(&s, "samples", "slow_tiers_only", false)?,
            words: get(&s, "samples", "words", false)?,
        });
    }
    if let Some(h) = section(d, "hint_faults")? {
        keys(&h, "hint_faults", &["window_pages", "period_ns", "slow_tiers_only"])?;
        r.hint_faults = Some(HintFaults {
            window_pages: get(&h, "hint_faults", "window_pages", 65_536)?,
            period: get(&h, "hint_faults", "period_ns", 1_000 * MILLISECOND)?,
            slow_tiers_only: get(&h, "hint_faults", "slow_tiers_only", false)?,
        });
    }
    if let Some(a) = section(d, "accessed")? {
        keys(&a, "accessed", &["sample_interval_ns", "aggregation_interval_ns", "regions"])?;
        r.accessed = Some(AccessedScan {
            sample_interval: get(&a, "accessed", "sample_interval_ns", 5 * MILLISECOND)?,
            aggregation_interval: get(&a, "accessed", "aggregation_interval_ns", 100 * MILLISECOND)?,
            regions: get(&a, "accessed", "regions", None)?,
        });
    }
    if let Some(t) = section(d, "device_topk")? {
        keys(&t, "device_topk", &["k", "query_period_ns", "words", "exact"])?;
        r.device_topk = Some(DeviceTopK {
            k: get(&t, "device_topk", "k", 1024)?,
            query_period: get(&t, "device_topk", "query_period_ns", 100 * MILLISECOND)?,
            words: get(&t, "device_topk", "words", false)?,
            exact: get(&t, "device_topk", "exact", false)?,
        });
    }
    Ok(r)
}

/// What a Python policy's hook may use: the memory view and the migration queue of the
/// current call. Using it after the hook returned raises `RuntimeError`.
#[pyclass(module = "tierkit._tierkit", name = "PolicyCtx")]
pub struct PolicyCtx {
    /// The memory view; null once the call returned.
    mem: *const (dyn Memory + 'static),
    /// The plan; null once the call returned.
    plan: *mut Plan,
}

// SAFETY: hooks run on the thread of the run, not always the caller's (a run goes to a
// thread of its own so that Ctrl-C can stop it, see `crate::interrupt`), and Python may
// keep or pass on the object. Its pointers are dereferenced only until `close()`, which
// the hook's caller runs under the GIL as soon as the hook returns; until then the
// engine waits in the hook, so the memory is not changed underneath, and the plan is
// reached only through `&mut self` methods, which pyo3's borrow flag keeps exclusive.
// The module is `gil_used`, so Python code calls these methods one thread at a time.
unsafe impl Send for PolicyCtx {}
// SAFETY: as for `Send`.
unsafe impl Sync for PolicyCtx {}

impl PolicyCtx {
    /// A context over `ctx` for one hook call. The caller must [`close`](Self::close) it
    /// before `ctx`'s borrows end.
    fn over<'py>(py: Python<'py>, ctx: &mut Ctx<'_>) -> PyResult<Bound<'py, PolicyCtx>> {
        let mem: *const (dyn Memory + '_) = ctx.mem;
        // SAFETY: only the lifetime is erased; the pointer is dereferenced only while
        // `live()` holds, which `close()` ends before the borrow of `ctx` does.
        let mem: *const (dyn Memory + 'static) = unsafe { std::mem::transmute(mem) };
        Bound::new(py, PolicyCtx { mem, plan: &mut *ctx.plan })
    }

    /// Ends the context: later use raises.
    fn close(&mut self) {
        self.mem = std::ptr::null::<tierkit_core::InMemory>() as *const dyn Memory;
        self.plan = std::ptr::null_mut();
    }

    fn mem(&self) -> PyResult<&dyn Memory> {
        // SAFETY: non-null only during the hook call, while the engine's borrow is alive.
        unsafe { self.mem.as_ref() }.ok_or_else(Self::closed)
    }

    fn plan(&mut self) -> PyResult<&mut Plan> {
        // SAFETY: as for `mem`; the engine does not touch the plan during the call.
        unsafe { self.plan.as_mut() }.ok_or_else(Self::closed)
    }

    fn closed() -> PyErr {
        PyRuntimeError::new_err("ctx used after its hook returned: keep no reference to it")
    }

    fn tier(&self, tier: u8) -> PyResult<TierId> {
        let n = self.mem()?.tiers().len();
        if (tier as usize) < n {
            Ok(TierId(tier))
        } else {
            Err(pyo3::exceptions::PyValueError::new_err(format!("tier {tier}: this machine has tiers 0..{}", n - 1)))
        }
    }
}

#[pymethods]
impl PolicyCtx {
    /// The simulated clock, in ns.
    #[getter]
    fn now_ns(&self) -> PyResult<u64> {
        Ok(self.mem()?.now())
    }

    /// Number of tiers, fastest (0) first.
    #[getter]
    fn tiers(&self) -> PyResult<usize> {
        Ok(self.mem()?.tiers().len())
    }

    /// Free pages of `tier`.
    fn free_pages(&self, tier: u8) -> PyResult<u64> {
        let t = self.tier(tier)?;
        Ok(self.mem()?.free_pages(t))
    }

    /// Capacity of `tier` in pages.
    fn capacity_pages(&self, tier: u8) -> PyResult<u64> {
        let t = self.tier(tier)?;
        Ok(self.mem()?.tiers()[t.index()].capacity_pages)
    }

    /// The tier `page` lives on, or None when it is not resident.
    fn tier_of(&self, page: u64) -> PyResult<Option<u8>> {
        Ok(self.mem()?.tier_of(page).map(|t| t.0))
    }

    /// Migrations queued and not executed yet.
    #[getter]
    fn queued(&mut self) -> PyResult<usize> {
        Ok(self.plan()?.len())
    }

    /// Queues moving `page` to the fastest tier.
    fn promote(&mut self, page: u64) -> PyResult<()> {
        self.plan()?.push(page, TierId::FAST);
        Ok(())
    }

    /// Queues moving `page` one tier slower (nothing when not resident or on the slowest).
    fn demote(&mut self, page: u64) -> PyResult<()> {
        let mem = self.mem()?;
        let to = mem.tier_of(page).and_then(|t| mem.slower_than(t));
        if let Some(to) = to {
            self.plan()?.push(page, to);
        }
        Ok(())
    }

    /// Queues moving `page` to `tier`.
    fn migrate(&mut self, page: u64, tier: u8) -> PyResult<()> {
        let t = self.tier(tier)?;
        self.plan()?.push(page, t);
        Ok(())
    }
}

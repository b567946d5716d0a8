//! Long runs that Ctrl-C stops: called from Python's main thread, the run goes to a
//! thread of its own while the calling thread, holding the GIL only between waits, lets
//! Python's signal handlers run every [`POLL`]. A handler that raises (Ctrl-C's `KeyboardInterrupt`) asks the run to stop,
//! waits for it to give up (within a chunk of accesses) and raises the handler's
//! exception; the run's partial state is dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use pyo3::prelude::*;
use tierkit_sim::SimError;

use crate::errors::to_py;

/// How often the calling thread checks for signals during a run.
const POLL: Duration = Duration::from_millis(50);

/// Set when the worker's closure has returned (or unwound).
#[derive(Default)]
struct Finished {
    done: Mutex<bool>,
    wake: Condvar,
}

impl Finished {
    fn set(&self) {
        *self.done.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_all();
    }

    /// Waits up to `timeout`; true once set.
    fn wait(&self, timeout: Duration) -> bool {
        let done = self.done.lock().unwrap_or_else(|e| e.into_inner());
        *self.wake.wait_timeout_while(done, timeout, |d| !*d).unwrap_or_else(|e| e.into_inner()).0
    }
}

/// Sets [`Finished`] when dropped, so a panicking run wakes the caller too.
struct SetOnDrop<'a>(&'a Finished);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Runs `work` without the GIL, stoppable by a signal handler that raises. `work` is
/// given the flag to stop at and returns `Ok(None)` when it stopped at it. Off Python's
/// main thread, where no signal handler runs, `work` runs on the calling thread.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&AtomicBool) -> Result<Option<T>, SimError> + Send,
) -> PyResult<T> {
    let stop = AtomicBool::new(false);
    if !on_main_thread(py)? {
        return finished(py.detach(|| work(&stop)));
    }
    let done = Finished::default();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let _finished = SetOnDrop(&done);
            work(&stop)
        });
        let mut raised = None;
        while !py.detach(|| done.wait(POLL)) {
            if let Err(e) = py.check_signals() {
                stop.store(true, Ordering::Relaxed);
                raised = Some(e);
                break;
            }
        }
        // Joined without the GIL: a Python policy's hooks on the worker take it.
        let out = py.detach(|| worker.join()).unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match raised {
            Some(e) => Err(e),
            None => finished(out),
        }
    })
}

/// The outcome of work that was not asked to stop.
fn finished<T>(out: Result<Option<T>, SimError>) -> PyResult<T> {
    match out {
        Ok(Some(value)) => Ok(value),
        Ok(None) => unreachable!("only a raising signal handler sets the stop flag"),
        Err(e) => Err(to_py(e)),
    }
}

/// Whether this is Python's main thread, the one signal handlers run on.
fn on_main_thread(py: Python<'_>) -> PyResult<bool> {
    let threading = py.import("threading")?;
    Ok(threading.call_method0("current_thread")?.is(&threading.call_method0("main_thread")?))
}

//! Writing a built-in workload's stream as a native trace (`tierkit trace write`).

use std::path::Path;

use super::native::{Fields, Header, NativeWriter};
use super::PageAccess;
use crate::error::SimError;
use crate::model::MlpClass;
use crate::workload::{self, Access, WorkloadSpec};

/// Accesses asked of the workload at a time.
const CHUNK: usize = 1 << 16;

/// Writes the stream of the workload `spec` to `out` as a native trace: its dense page
/// ids as page numbers, store flags, and each access's MLP class when any access of the
/// stream has a class other than the default. A workload is determined by its spec, so
/// the stream is generated twice: once to find out, once to write. Returns the header
/// written and the workload's page count.
pub fn write_native(spec: &WorkloadSpec, out: &Path) -> Result<(Header, u64), SimError> {
    let mut classes = false;
    each_chunk(spec, |chunk| {
        classes |= chunk.iter().any(|a| a.class != MlpClass::Default);
        Ok(())
    })?;
    let mut w = NativeWriter::with_fields(out, Fields { writes: true, sample_every: None, classes })?;
    let pages = each_chunk(spec, |chunk| {
        chunk.iter().try_for_each(|a| w.push_classed(PageAccess::new(a.page, a.write), a.class))
    })?;
    Ok((w.finish()?, pages))
}

/// Builds the workload of `spec` and hands its stream to `f` a chunk at a time; returns
/// its page count.
fn each_chunk(spec: &WorkloadSpec, mut f: impl FnMut(&[Access]) -> Result<(), SimError>) -> Result<u64, SimError> {
    let mut wl = workload::build(spec)?;
    let mut buf: Vec<Access> = Vec::with_capacity(CHUNK);
    loop {
        buf.clear();
        if wl.try_fill(&mut buf, CHUNK)? == 0 {
            return Ok(wl.pages());
        }
        f(&buf)?;
    }
}

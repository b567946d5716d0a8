//! Fallible allocation of sketch tables: a size the machine cannot hold is a parameter
//! error naming the size, not an abort.

use crate::error::ParamError;

/// A vector of `len` default values, or an error naming `param` when it cannot be
/// allocated.
pub(crate) fn filled<T: Clone + Default>(len: u64, param: &'static str, value: u64) -> Result<Vec<T>, ParamError> {
    let too_big = || ParamError::new(param, value, "a size that fits in this machine's memory");
    let len = usize::try_from(len).map_err(|_| too_big())?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_big())?;
    v.resize(len, T::default());
    Ok(v)
}

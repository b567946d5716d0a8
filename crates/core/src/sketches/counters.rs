//! Densely packed small counters (4, 8 or 16 bits) in `u64` words, and the conservative
//! update both counting Bloom filters share.

use crate::error::ParamError;

/// Width of one counter in a counting Bloom filter.
///
/// FreqTier §V-A and HybridTier §4.2 use 4 bits (maximum count 15: "pages with access
/// count ≥ 15 should all be placed in fast-tier memory"); HybridTier §4.3 uses 16 bits
/// in huge-page mode; 8 bits is the middle ground HybridTier §6.4.2 mentions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterBits {
    /// 4-bit counters, saturating at 15.
    Four,
    /// 8-bit counters, saturating at 255.
    Eight,
    /// 16-bit counters, saturating at 65535.
    Sixteen,
}

impl CounterBits {
    /// The width for `bits`; anything but 4, 8 or 16 is an error naming `counter_bits`.
    pub fn new(bits: u32) -> Result<Self, ParamError> {
        match bits {
            4 => Ok(Self::Four),
            8 => Ok(Self::Eight),
            16 => Ok(Self::Sixteen),
            _ => Err(ParamError::new("counter_bits", bits, "4, 8 or 16")),
        }
    }

    /// Bits per counter.
    pub fn bits(self) -> u32 {
        1 << self.log2()
    }

    /// The largest value a counter holds; counts saturate here.
    pub fn max(self) -> u32 {
        (1u32 << self.bits()) - 1
    }

    pub(crate) fn log2(self) -> u32 {
        match self {
            Self::Four => 2,
            Self::Eight => 3,
            Self::Sixteen => 4,
        }
    }

    /// Counters per `u64` word, as a shift: `index >> per_word_log2()` is the word.
    #[inline(always)]
    pub(crate) fn per_word_log2(self) -> u32 {
        6 - self.log2()
    }

    /// Mask that clears the bit each counter receives from its neighbour on `word >> 1`.
    fn halve_mask(self) -> u64 {
        match self {
            Self::Four => 0x7777_7777_7777_7777,
            Self::Eight => 0x7f7f_7f7f_7f7f_7f7f,
            Self::Sixteen => 0x7fff_7fff_7fff_7fff,
        }
    }
}

/// Reads counter `i` of the packed array `words`.
#[inline(always)]
pub(crate) fn get(words: &[u64], i: usize, bits: CounterBits) -> u32 {
    let per = bits.per_word_log2();
    let shift = (i & ((1 << per) - 1)) << bits.log2();
    ((words[i >> per] >> shift) & bits.max() as u64) as u32
}

/// Writes `value` (≤ `bits.max()`) into counter `i`.
#[inline(always)]
fn set(words: &mut [u64], i: usize, bits: CounterBits, value: u32) {
    let per = bits.per_word_log2();
    let shift = (i & ((1 << per) - 1)) << bits.log2();
    let w = &mut words[i >> per];
    *w = (*w & !((bits.max() as u64) << shift)) | ((value as u64) << shift);
}

/// The minimum of the counters at `idx` (a counting Bloom filter's GET).
#[inline(always)]
pub(crate) fn min_of(words: &[u64], idx: &[usize], bits: CounterBits) -> u32 {
    idx.iter().map(|&i| get(words, i, bits)).min().unwrap_or(0)
}

/// Conservative update: raises every counter at `idx` that is below
/// `min + amount` (capped at the counter maximum) to that value, and leaves the others.
/// With `amount = 1` this raises exactly the minimum counters (FreqTier §V-A,
/// HybridTier §4.2). Returns the page's new estimate.
#[inline(always)]
pub(crate) fn conservative_add(words: &mut [u64], idx: &[usize], bits: CounterBits, amount: u32) -> u32 {
    let target = min_of(words, idx, bits).saturating_add(amount).min(bits.max());
    for &i in idx {
        // Branch-free: whether a counter holds the minimum is unpredictable.
        set(words, i, bits, get(words, i, bits).max(target));
    }
    target
}

/// Halves every counter in `words` (rounding down): the papers' aging.
pub(crate) fn halve_all(words: &mut [u64], bits: CounterBits) {
    let mask = bits.halve_mask();
    for w in words {
        *w = (*w >> 1) & mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_roundtrip_does_not_disturb_neighbours() {
        for bits in [CounterBits::Four, CounterBits::Eight, CounterBits::Sixteen] {
            let mut words = vec![0u64; 4];
            let n = 4 * (64 / bits.bits() as usize);
            for i in 0..n {
                set(&mut words, i, bits, (i as u32 * 7) % (bits.max() + 1));
            }
            for i in 0..n {
                assert_eq!(get(&words, i, bits), (i as u32 * 7) % (bits.max() + 1), "{bits:?} {i}");
            }
        }
    }

    fn value(i: usize, bits: CounterBits) -> u32 {
        bits.max() - (i as u32 * 5) % (bits.max() + 1)
    }

    #[test]
    fn halving_every_counter() {
        for bits in [CounterBits::Four, CounterBits::Eight, CounterBits::Sixteen] {
            let mut words = vec![0u64; 2];
            let n = 2 * (64 / bits.bits() as usize);
            for i in 0..n {
                set(&mut words, i, bits, value(i, bits));
            }
            halve_all(&mut words, bits);
            for i in 0..n {
                assert_eq!(get(&words, i, bits), value(i, bits) / 2);
            }
        }
    }

    #[test]
    fn bad_width_names_the_parameter() {
        for b in [0, 1, 2, 3, 5, 12, 32] {
            assert_eq!(CounterBits::new(b).unwrap_err().param, "counter_bits");
        }
        assert_eq!(CounterBits::new(4).unwrap().max(), 15);
    }
}

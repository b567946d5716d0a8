//! Page hashing shared by the sketches.
//!
//! Every sketch hashes a page number with [`hash_page`] (a seeded 64-bit finalizer with
//! full avalanche) and maps hashes onto a table with [`reduce`] (Lemire's multiply-shift
//! range reduction: no division, no power-of-two restriction on table sizes).

/// The seed sketches use unless told otherwise; fixed so runs are reproducible.
pub const DEFAULT_SEED: u64 = 0x7ec0_51e4_d1a7_2b3f;

/// MurmurHash3's 64-bit finalizer: a bijection on `u64` in which every input bit
/// affects every output bit.
#[inline(always)]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Hash of `page` under `seed`.
#[inline(always)]
pub fn hash_page(page: u64, seed: u64) -> u64 {
    mix64(page.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed)
}

/// Maps a uniformly distributed `hash` onto `0..n` (uniform up to a bias of n/2^64).
#[inline(always)]
pub fn reduce(hash: u64, n: u64) -> u64 {
    ((hash as u128 * n as u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reduce_stays_in_range_and_spreads() {
        let n = 1000u64;
        let mut hits = vec![0u32; n as usize];
        for page in 0..100_000u64 {
            let i = reduce(hash_page(page, DEFAULT_SEED), n);
            assert!(i < n);
            hits[i as usize] += 1;
        }
        // 100 expected per bucket; a broken hash piles pages into few buckets.
        assert!(hits.iter().all(|&h| (50..=160).contains(&h)), "{:?}", hits.iter().max());
    }

    #[test]
    fn seeds_give_different_hashes() {
        assert_ne!(hash_page(42, 1), hash_page(42, 2));
        assert_eq!(hash_page(42, 7), hash_page(42, 7));
    }
}

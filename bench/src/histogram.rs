//! A log-linear latency histogram with bounded relative error (the layout of `HdrHistogram`,
//! written here rather than adding a crate: it is ~100 lines and its recording path must stay
//! allocation-free and a few instructions long inside the open-loop generator).
//!
//! Values below `2^PRECISION` have a bucket each (exact). Above, each power of two
//! `[2^k, 2^(k+1))` is split into `2^PRECISION` equal buckets of width `2^(k - PRECISION)`, so
//! a bucket's width is at most `2^-PRECISION` of its lowest value: with 8 bits, every reported
//! value is within 0.4 % above the true one. The whole `u64` range fits in ~14,600 buckets
//! (117 KiB), allocated once per histogram.

/// Sub-bucket bits: 256 buckets per power of two.
const PRECISION: u32 = 8;
/// Buckets per power of two (and the exact range below it).
const SUB: u64 = 1 << PRECISION;
/// Enough buckets for `u64::MAX`.
#[allow(clippy::cast_possible_truncation)]
const BUCKETS: usize = bucket_index(u64::MAX) + 1;

/// The relative error bound of a reported value (bucket width over its lowest value).
#[allow(clippy::cast_precision_loss)]
pub(crate) const RELATIVE_ERROR: f64 = 1.0 / SUB as f64;

/// The bucket of `value`.
#[allow(clippy::cast_possible_truncation)]
const fn bucket_index(value: u64) -> usize {
    if value < SUB {
        return value as usize;
    }
    let exponent = value.ilog2();
    let shift = exponent - PRECISION;
    // `value >> shift` is in [SUB, 2 SUB): the power of two's sub-bucket, offset by SUB.
    (shift as u64 * SUB + (value >> shift)) as usize
}

/// The lowest value of bucket `index`.
fn lowest_in(index: usize) -> u64 {
    let index = index as u64;
    if index < 2 * SUB {
        return index;
    }
    let shift = index / SUB - 1;
    let mantissa = index - shift * SUB;
    mantissa << shift
}

/// The highest value of bucket `index`.
fn highest_in(index: usize) -> u64 {
    if index + 1 >= BUCKETS {
        return u64::MAX;
    }
    lowest_in(index + 1) - 1
}

/// Counts of values (nanoseconds here) in log-linear buckets, with the exact count, minimum
/// and maximum.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// An empty histogram (the only allocation).
    pub(crate) fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
            count: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Counts `value`.
    #[inline]
    pub(crate) fn record(&mut self, value: u64) {
        self.counts[bucket_index(value)] += 1;
        self.count += 1;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// How many values were recorded.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value recorded, exactly.
    pub(crate) fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value recorded, exactly.
    pub(crate) fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The `q` quantile (0.0..=1.0) by nearest rank: the highest value of the bucket holding
    /// the `ceil(q × count)`-th smallest value (never above the maximum), so at most
    /// [`RELATIVE_ERROR`] above the exact one; the first and last ranks exactly (the minimum
    /// and maximum). `None` when empty.
    pub(crate) fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == 1 {
            return Some(self.min);
        }
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(highest_in(index).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_whole_range() {
        assert_eq!(lowest_in(0), 0);
        for index in 0..BUCKETS - 1 {
            assert_eq!(highest_in(index) + 1, lowest_in(index + 1), "{index}");
            assert_eq!(bucket_index(lowest_in(index)), index);
            assert_eq!(bucket_index(highest_in(index)), index);
        }
        assert_eq!(bucket_index(u64::MAX), BUCKETS - 1);
        assert_eq!(highest_in(BUCKETS - 1), u64::MAX);
        // 14,592 buckets: the range costs 114 KiB.
        assert_eq!(BUCKETS, 14_592);
    }

    #[test]
    fn small_values_are_exact_and_large_ones_within_the_bound() {
        for value in 0..2 * SUB {
            assert_eq!(lowest_in(bucket_index(value)), value);
            assert_eq!(highest_in(bucket_index(value)), value);
        }
        // A simple LCG: values over many orders of magnitude.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..100_000 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let value = state >> (state % 60);
            let index = bucket_index(value);
            let (low, high) = (lowest_in(index), highest_in(index));
            assert!(low <= value && value <= high, "{value}: {low}..={high}");
            #[allow(clippy::cast_precision_loss)]
            let error = (high - low) as f64 / low.max(1) as f64;
            assert!(error <= RELATIVE_ERROR, "{value}: {low}..={high}");
        }
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let mut histogram = Histogram::new();
        assert_eq!(histogram.quantile(0.5), None);
        assert_eq!((histogram.min(), histogram.max()), (None, None));
        // 1 µs .. 100 ms in 1 µs steps, as nanoseconds.
        for micros in 1..=100_000u64 {
            histogram.record(micros * 1000);
        }
        assert_eq!(histogram.count(), 100_000);
        assert_eq!(histogram.min(), Some(1000));
        assert_eq!(histogram.max(), Some(100_000_000));
        for (q, exact) in [
            (0.5, 50_000_000u64),
            (0.99, 99_000_000),
            (0.999, 99_900_000),
            (0.0001, 10_000),
        ] {
            let value = histogram.quantile(q).unwrap();
            #[allow(clippy::cast_precision_loss)]
            let error = (value as f64 - exact as f64) / exact as f64;
            assert!(
                (0.0..=RELATIVE_ERROR).contains(&error),
                "q {q}: {value} for {exact}"
            );
        }
        // The ends are exact: the extremes are tracked, never a bucket's edge.
        assert_eq!(histogram.quantile(1.0), Some(100_000_000));
        assert_eq!(histogram.quantile(0.0), Some(1000));
    }

    #[test]
    fn a_tail_is_found_where_it_is() {
        // 999 fast values and one slow: p99.9 is still fast, the maximum is the slow one.
        let mut histogram = Histogram::new();
        for _ in 0..999 {
            histogram.record(40_000);
        }
        histogram.record(5_000_000);
        // 40,000 ns is inside a bucket of 128 (39,936..=40,063): its highest value is reported.
        assert_eq!(histogram.quantile(0.5), Some(40_063));
        assert_eq!(histogram.quantile(0.999), Some(40_063));
        assert_eq!(histogram.quantile(0.9991), Some(5_000_000));
        assert_eq!(histogram.max(), Some(5_000_000));
        let mut one = Histogram::new();
        one.record(u64::MAX);
        assert_eq!(one.quantile(0.5), Some(u64::MAX));
    }
}

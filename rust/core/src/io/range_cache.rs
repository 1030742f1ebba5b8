//! Object byte ranges kept in memory between scans, up to a byte budget.
//!
//! Local files have the operating system's page cache; objects have nothing, so a query
//! repeated over the same pages fetches them again. Entries are keyed by object version
//! (URL and ETag): a replaced object has a new ETag and never meets its old bytes. The
//! oldest entries go first when the budget is exceeded.

use std::collections::{HashMap, VecDeque};
use std::ops::Range;

use bytes::Bytes;

type Version = (String, String);

#[derive(Debug, Default)]
pub struct RangeCache {
    budget: u64,
    used: u64,
    /// Per object version, the ranges held (start, bytes).
    ranges: HashMap<Version, Vec<(u64, Bytes)>>,
    /// Insertion order, for eviction.
    order: VecDeque<(Version, u64, usize)>,
}

impl RangeCache {
    pub fn new(budget: u64) -> Self {
        RangeCache {
            budget,
            ..RangeCache::default()
        }
    }

    /// The bytes of `range` of the version `etag` of `url`, if a kept range holds them.
    pub fn get(&self, url: &str, etag: &str, range: &Range<u64>) -> Option<Bytes> {
        if self.budget == 0 {
            return None;
        }
        let held = self.ranges.get(&(url.to_string(), etag.to_string()))?;
        held.iter()
            .find(|(s, b)| *s <= range.start && range.end <= s + b.len() as u64)
            .map(|(s, b)| b.slice((range.start - s) as usize..(range.end - s) as usize))
    }

    /// Keep `bytes`, fetched at `start`, evicting the oldest ranges beyond the budget.
    pub fn insert(&mut self, url: &str, etag: &str, start: u64, bytes: Bytes) {
        let len = bytes.len();
        if len == 0 || len as u64 > self.budget {
            return;
        }
        let version = (url.to_string(), etag.to_string());
        self.ranges
            .entry(version.clone())
            .or_default()
            .push((start, bytes));
        self.order.push_back((version, start, len));
        self.used += len as u64;
        while self.used > self.budget {
            let Some((version, start, len)) = self.order.pop_front() else {
                break;
            };
            if let Some(held) = self.ranges.get_mut(&version) {
                if let Some(i) = held.iter().position(|(s, b)| *s == start && b.len() == len) {
                    held.swap_remove(i);
                }
                if held.is_empty() {
                    self.ranges.remove(&version);
                }
            }
            self.used -= len as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, fill: u8) -> Bytes {
        Bytes::from(vec![fill; n])
    }

    #[test]
    fn serves_sub_ranges_of_the_same_version_only() {
        let mut c = RangeCache::new(1000);
        c.insert("s3://b/k", "e1", 100, bytes(50, 7));
        assert_eq!(c.get("s3://b/k", "e1", &(110..120)), Some(bytes(10, 7)));
        assert_eq!(
            c.get("s3://b/k", "e1", &(100..150)).map(|b| b.len()),
            Some(50)
        );
        assert_eq!(
            c.get("s3://b/k", "e1", &(140..160)),
            None,
            "runs past the range"
        );
        assert_eq!(
            c.get("s3://b/k", "e2", &(110..120)),
            None,
            "another version"
        );
        assert_eq!(c.get("s3://b/j", "e1", &(110..120)), None, "another object");
    }

    #[test]
    fn evicts_the_oldest_beyond_the_budget() {
        let mut c = RangeCache::new(100);
        c.insert("u", "e", 0, bytes(60, 1));
        c.insert("u", "e", 100, bytes(30, 2));
        c.insert("u", "e", 200, bytes(30, 3));
        assert_eq!(c.get("u", "e", &(0..10)), None);
        assert!(c.get("u", "e", &(100..110)).is_some());
        assert!(c.get("u", "e", &(200..210)).is_some());
        assert_eq!(c.used, 60);
        c.insert("u", "e", 300, bytes(101, 4));
        assert_eq!(c.get("u", "e", &(300..301)), None, "larger than the budget");
        assert_eq!(RangeCache::new(0).get("u", "e", &(0..1)), None);
    }
}

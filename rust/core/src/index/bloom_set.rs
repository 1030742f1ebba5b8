//! Split-block bloom filters, one per unit (page, row group or file), laid out so that a
//! probe reads only what it needs: block `b` of every unit's filter is stored side by side
//! (a "row" of blocks), so probing one hash reads one row: 32 bytes per unit, together.
//!
//! Every unit's filter has the same number of blocks, sized for the unit with the most
//! distinct hashes at the requested false-positive rate. The blocks are Parquet's split-
//! block bloom filter blocks (eight 32-bit words, the format's salts), and a hash chooses
//! its block as Parquet's filters do, so the filters are standard SBBFs stored transposed.
//!
//! Section layout (little-endian), after the owning kind's header:
//! ```text
//! u32 blocks per filter B (a power of two, 1 to 2^24)
//! u32 units U
//! B rows, each: U × 32 bytes (block b of units 0..U), u32 crc32c of those bytes
//! ```
//! Each row carries its own checksum: a probe reads rows, never the whole section.

use std::collections::HashMap;
use std::ops::Range;

use bytes::Bytes;

use crate::error::Result;
use crate::index::block::BlockReader;
use crate::index::codec::{invalid, Decoder, Encoder};

/// Bytes of one block.
pub const BLOCK: usize = 32;
/// The most blocks a filter may have (a 512 MiB filter).
const MAX_BLOCKS: u32 = 1 << 24;

/// The salts of Parquet's split-block bloom filter.
const SALT: [u32; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

fn mask(h: u64) -> [u32; 8] {
    let key = h as u32;
    let mut m = [0u32; 8];
    for (i, salt) in SALT.iter().enumerate() {
        m[i] = 1u32 << (key.wrapping_mul(*salt) >> 27);
    }
    m
}

/// The block a hash chooses in a filter of `blocks` blocks (Parquet's rule).
pub fn block_of(h: u64, blocks: u32) -> u32 {
    (((h >> 32) * u64::from(blocks)) >> 32) as u32
}

/// Blocks for `ndv` distinct hashes at false-positive rate `fpp` (Parquet's sizing),
/// rounded up to a power of two.
pub fn blocks_for(ndv: u64, fpp: f64) -> u32 {
    let bits = -8.0 * ndv.max(1) as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
    let blocks = (bits / (BLOCK as f64 * 8.0)).ceil().max(1.0);
    (blocks.min(f64::from(MAX_BLOCKS)) as u32).next_power_of_two()
}

fn insert_block(block: &mut [u8], h: u64) {
    for (i, m) in mask(h).iter().enumerate() {
        let w = &mut block[i * 4..i * 4 + 4];
        let v = u32::from_le_bytes(w.try_into().expect("4 bytes")) | m;
        w.copy_from_slice(&v.to_le_bytes());
    }
}

fn check_block(block: &[u8], h: u64) -> bool {
    mask(h).iter().enumerate().all(|(i, m)| {
        u32::from_le_bytes(block[i * 4..i * 4 + 4].try_into().expect("4 bytes")) & m != 0
    })
}

/// Collects the distinct hashes of each unit while a column is read.
#[derive(Default)]
pub struct BloomSetBuilder {
    units: Vec<Vec<u64>>,
}

impl BloomSetBuilder {
    /// Add hashes to unit `unit` (units are numbered from 0 in order).
    pub fn add(&mut self, unit: usize, hashes: impl IntoIterator<Item = u64>) {
        while self.units.len() <= unit {
            if let Some(last) = self.units.last_mut() {
                last.sort_unstable();
                last.dedup();
            }
            self.units.push(Vec::new());
        }
        let set = &mut self.units[unit];
        set.extend(hashes);
        // Keep memory near the distinct count for units with many repeated values.
        if set.len() > 1 << 16 && set.len().is_power_of_two() {
            set.sort_unstable();
            set.dedup();
        }
    }

    /// The filters of `units` units (units that got no hash have empty filters), each
    /// sized for the fullest unit at `fpp`.
    pub fn finish(mut self, units: usize, fpp: f64) -> BuiltSet {
        self.units
            .resize_with(units.max(self.units.len()), Vec::new);
        for set in &mut self.units {
            set.sort_unstable();
            set.dedup();
        }
        let ndv = self.units.iter().map(|s| s.len() as u64).max().unwrap_or(0);
        let blocks = blocks_for(ndv, fpp);
        let u = self.units.len();
        let row_len = u * BLOCK;
        let mut rows = vec![0u8; blocks as usize * row_len];
        for (unit, set) in self.units.iter().enumerate() {
            for &h in set {
                let b = block_of(h, blocks) as usize;
                let at = b * row_len + unit * BLOCK;
                insert_block(&mut rows[at..at + BLOCK], h);
            }
        }
        BuiltSet {
            blocks,
            units: u as u32,
            rows,
        }
    }
}

/// Filters built, ready to be written.
pub struct BuiltSet {
    blocks: u32,
    units: u32,
    rows: Vec<u8>,
}

impl BuiltSet {
    /// The section's header.
    pub fn write_header(&self, e: &mut Encoder) {
        e.u32(self.blocks);
        e.u32(self.units);
    }

    /// The rows, each followed by its checksum.
    pub fn write_rows(self, e: &mut Encoder) {
        let row_len = self.units as usize * BLOCK;
        for b in 0..self.blocks as usize {
            let row = &self.rows[b * row_len..(b + 1) * row_len];
            e.bytes.extend_from_slice(row);
            e.u32(crc32c::crc32c(row));
        }
    }
}

/// Where a bloom set lies in its payload, from its header.
#[derive(Debug, Clone, Copy)]
pub struct BloomSet {
    pub blocks: u32,
    pub units: u32,
    /// Payload offset of the first row.
    rows_at: u64,
}

impl BloomSet {
    /// Read the section's header at the decoder's position.
    pub fn decode(d: &mut Decoder, expected_units: usize) -> Result<BloomSet> {
        let blocks = d.u32()?;
        let units = d.u32()?;
        if blocks == 0 || !blocks.is_power_of_two() || blocks > MAX_BLOCKS {
            return Err(invalid(format!("bloom set of {blocks} blocks per filter")));
        }
        if units as usize != expected_units {
            return Err(invalid(format!(
                "bloom set of {units} filters for {expected_units} units"
            )));
        }
        Ok(BloomSet {
            blocks,
            units,
            rows_at: 0,
        })
    }

    /// The set with its rows starting at payload offset `rows_at`; they must end where the
    /// payload of `payload_len` bytes ends.
    pub fn at(mut self, rows_at: u64, payload_len: u64) -> Result<BloomSet> {
        self.rows_at = rows_at;
        let end = self.row_range(self.blocks - 1).end;
        if end != payload_len {
            return Err(invalid(format!(
                "bloom set ends at {end}, its payload has {payload_len} bytes"
            )));
        }
        Ok(self)
    }

    fn row_len(&self) -> u64 {
        u64::from(self.units) * BLOCK as u64 + 4
    }

    /// Payload range of row `b` (its blocks and checksum).
    pub fn row_range(&self, b: u32) -> Range<u64> {
        let start = self.rows_at + u64::from(b) * self.row_len();
        start..start + self.row_len()
    }

    /// Check a row read whole: its checksum, and its length.
    pub fn check_row(&self, row: &[u8]) -> Result<()> {
        if row.len() as u64 != self.row_len() {
            return Err(invalid("bloom set row truncated"));
        }
        let (blocks, crc) = row.split_at(row.len() - 4);
        if crc32c::crc32c(blocks).to_le_bytes() != crc {
            return Err(invalid("bloom set row checksum mismatch"));
        }
        Ok(())
    }

    /// Every row of a payload read whole, checked.
    pub fn verify(&self, payload: &[u8]) -> Result<()> {
        for b in 0..self.blocks {
            let r = self.row_range(b);
            self.check_row(&payload[r.start as usize..r.end as usize])?;
        }
        Ok(())
    }
}

/// A bloom set opened for planning: the rows read so far.
pub struct BloomSetProbe {
    pub set: BloomSet,
    rows: HashMap<u32, Bytes>,
}

impl BloomSetProbe {
    pub fn new(set: BloomSet) -> Self {
        BloomSetProbe {
            set,
            rows: HashMap::new(),
        }
    }

    /// Payload ranges of the rows `hashes` need that are not read yet.
    pub fn wanted(&self, hashes: impl IntoIterator<Item = u64>) -> Vec<Range<u64>> {
        let mut blocks: Vec<u32> = hashes
            .into_iter()
            .map(|h| block_of(h, self.set.blocks))
            .filter(|b| !self.rows.contains_key(b))
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        blocks.into_iter().map(|b| self.set.row_range(b)).collect()
    }

    /// The units whose filter may hold every hash of at least one group (a group per
    /// alternative, e.g. per IN value; a unit must hold all of a group's hashes). An empty
    /// group holds in every unit.
    pub fn units(&mut self, groups: &[Vec<u64>], block: &BlockReader) -> Result<Vec<u32>> {
        for g in groups {
            for &h in g {
                let b = block_of(h, self.set.blocks);
                if let std::collections::hash_map::Entry::Vacant(slot) = self.rows.entry(b) {
                    let r = self.set.row_range(b);
                    let row = block.payload_range(r.start, (r.end - r.start) as usize)?;
                    self.set.check_row(&row)?;
                    slot.insert(row);
                }
            }
        }
        let mut out = Vec::new();
        for unit in 0..self.set.units {
            let at = unit as usize * BLOCK;
            let holds = |h: &u64| {
                let row = &self.rows[&block_of(*h, self.set.blocks)];
                check_block(&row[at..at + BLOCK], *h)
            };
            if groups.iter().any(|g| g.iter().all(holds)) {
                out.push(unit);
            }
        }
        Ok(out)
    }

    /// `units` over a payload read whole.
    #[cfg(test)]
    pub fn units_in(&self, groups: &[Vec<u64>], payload: &[u8]) -> Vec<u32> {
        (0..self.set.units)
            .filter(|&unit| {
                let at = unit as usize * BLOCK;
                groups.iter().any(|g| {
                    g.iter().all(|&h| {
                        let r = self.set.row_range(block_of(h, self.set.blocks));
                        let row = &payload[r.start as usize..r.end as usize];
                        check_block(&row[at..at + BLOCK], h)
                    })
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::hash::hash_bytes;
    use parquet::bloom_filter::Sbbf;

    #[test]
    fn blocks_are_parquet_split_blocks() {
        // One block of ours, read by the parquet crate as a one-block filter.
        let mut block = [0u8; BLOCK];
        for v in [&b"alpha"[..], b"beta", b"gamma"] {
            insert_block(&mut block, hash_bytes(v));
        }
        let sbbf = Sbbf::new(&block);
        for v in [&b"alpha"[..], b"beta", b"gamma"] {
            assert!(sbbf.check(v));
            assert!(check_block(&block, hash_bytes(v)));
        }
        let absent = (0..1000)
            .filter(|i| !check_block(&block, hash_bytes(format!("x{i}").as_bytes())))
            .count();
        assert_eq!(
            absent,
            (0..1000)
                .filter(|i| !sbbf.check(format!("x{i}").as_bytes()))
                .count()
        );
    }

    #[test]
    fn sizing_follows_parquet() {
        assert_eq!(blocks_for(0, 0.01), 1);
        // Parquet sizes 10,000 values at 1% to about 12 KB: 512 blocks after rounding.
        let b = blocks_for(10_000, 0.01);
        assert!((256..=512).contains(&b), "{b}");
        assert!(blocks_for(10_000, 0.001) > b);
        assert_eq!(blocks_for(u64::MAX / 2, 0.01), MAX_BLOCKS);
    }

    #[test]
    fn probes_read_one_row_per_block_and_find_every_member() {
        let mut b = BloomSetBuilder::default();
        let units: Vec<Vec<u64>> = (0..5)
            .map(|u| {
                (0..300)
                    .map(|i| hash_bytes(format!("{u}-{i}").as_bytes()))
                    .collect()
            })
            .collect();
        for (u, hs) in units.iter().enumerate() {
            b.add(u, hs.iter().copied());
        }
        let built = b.finish(6, 0.01);
        let mut e = Encoder::default();
        built.write_header(&mut e);
        built.write_rows(&mut e);
        let payload = e.bytes;
        let mut d = Decoder::new(&payload);
        let set = BloomSet::decode(&mut d, 6)
            .unwrap()
            .at(8, payload.len() as u64)
            .unwrap();
        set.verify(&payload).unwrap();
        let probe = BloomSetProbe::new(set);
        for (u, hs) in units.iter().enumerate() {
            for h in hs {
                assert!(probe.units_in(&[vec![*h]], &payload).contains(&(u as u32)));
            }
        }
        // A group holds only where all its hashes may be.
        let both = vec![units[0][0], units[1][0]];
        assert!(probe.units_in(&[both], &payload).len() <= 1);
        assert_eq!(probe.units_in(&[vec![]], &payload).len(), 6);
        assert_eq!(probe.wanted([units[0][0]]).len(), 1);
        let mut damaged = payload.clone();
        let r = set.row_range(0);
        damaged[r.start as usize] ^= 1;
        assert!(set.verify(&damaged).is_err());
        let header = BloomSet::decode(&mut Decoder::new(&payload), 6).unwrap();
        assert!(header.at(8, payload.len() as u64 - 1).is_err());
        assert!(BloomSet::decode(&mut Decoder::new(&payload), 5).is_err());
    }
}

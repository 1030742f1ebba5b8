//! Little-endian, bounds-checked byte encoding shared by the index payloads. Every read
//! checks the bytes present first, so a length read off disk can never cause a large
//! allocation or an out-of-bounds access: it becomes `InvalidIndex`.

use crate::error::{Error, Result};

/// Appends fixed-width little-endian integers and LEB128 varints.
#[derive(Default)]
pub struct Encoder {
    pub bytes: Vec<u8>,
}

impl Encoder {
    pub fn u8(&mut self, v: u8) {
        self.bytes.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
}

/// Reads what `Encoder` wrote, failing cleanly on short or malformed input.
pub struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
}

pub fn invalid(why: impl Into<String>) -> Error {
    Error::InvalidIndex(why.into())
}

impl<'a> Decoder<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Decoder { bytes, pos: 0 }
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(invalid(format!(
                "payload truncated: {n} bytes needed at {}, {} present",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    /// The leading `u32` payload version, which must be `expected`; `kind` names the
    /// payload in the error.
    pub fn version(&mut self, expected: u32, kind: &str) -> Result<()> {
        match self.u32()? {
            v if v == expected => Ok(()),
            v => Err(invalid(format!("{kind} payload version {v}"))),
        }
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    pub fn varint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(invalid("varint longer than 64 bits"))
    }
    /// A count of items of at least `item_len` bytes each, checked against the bytes left.
    pub fn count(&mut self, item_len: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(item_len.max(1)) > self.remaining() {
            return Err(invalid(format!(
                "count {n} exceeds the {} bytes left",
                self.remaining()
            )));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varints_round_trip(values in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut e = Encoder::default();
            for v in &values { e.varint(*v); }
            let mut d = Decoder::new(&e.bytes);
            for v in &values { prop_assert_eq!(d.varint().unwrap(), *v); }
            prop_assert_eq!(d.remaining(), 0);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut d = Decoder::new(&bytes);
            let _ = d.count(20);
            let _ = d.varint();
            let _ = d.u64();
        }
    }

    #[test]
    fn hostile_counts_are_refused() {
        let mut e = Encoder::default();
        e.u32(u32::MAX);
        assert!(Decoder::new(&e.bytes).count(8).is_err());
    }
}

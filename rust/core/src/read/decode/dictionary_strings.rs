//! String columns whose data pages are all dictionary encoded, read as Arrow dictionaries
//! and expanded here.
//!
//! The parquet crate builds a `Utf8` column out of a dictionary page one value at a time,
//! with a `memcpy` call per value: for short strings (flags, modes, codes) that call is most
//! of the column's read. Read as a dictionary, the crate decodes only the keys; the
//! expansion below copies each value of up to 32 bytes as one fixed 32-byte move into a
//! buffer with room to spare, and stays with the crate where a chunk is not all dictionary.
//! Reads with no row filter expand every row; the columns read after a predicate pass
//! ([`crate::read::predicate_first`]) are filtered as keys and only the matching rows expanded.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, DictionaryArray, RecordBatch, StringArray};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::file::metadata::ParquetMetaData;

use crate::metadata::dictionary_page::only_dictionary_pages;
use crate::metadata::schema::primitive_leaf;
use crate::read::batches::{retyped, Batches};

/// The longest value copied as one fixed move (two vector registers); the source and the
/// output keep this much room past their ends.
const SHORT: usize = 32;

/// The type such a column is read in.
pub(crate) fn keyed() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

/// Of `roots` (root columns of `md`, read through `reader`), the `Utf8` columns of one leaf
/// whose chunk in row group `rg` the footer says holds only dictionary-encoded data pages.
pub(crate) fn keyed_roots(
    md: &ParquetMetaData,
    rg: usize,
    reader: &ArrowReaderMetadata,
    roots: &[usize],
) -> Vec<usize> {
    let descr = md.file_metadata().schema_descr();
    let fields = reader.schema().fields();
    roots
        .iter()
        .copied()
        .filter(|&root| {
            let utf8 = fields
                .get(root)
                .is_some_and(|f| f.data_type() == &DataType::Utf8);
            let Some(leaf) = primitive_leaf(descr, root) else {
                return false;
            };
            utf8 && descr.column(leaf).max_rep_level() == 0
                && only_dictionary_pages(md.row_group(rg).column(leaf))
        })
        .collect()
}

/// `reader` with the root columns `roots` read as dictionaries.
pub(crate) fn hinted(
    reader: &ArrowReaderMetadata,
    roots: &[usize],
) -> Result<ArrowReaderMetadata, ArrowError> {
    let types = (0..reader.schema().fields().len())
        .map(|i| roots.contains(&i).then(keyed))
        .collect();
    Ok(retyped(reader, types)?)
}

/// `batches` of a reader made with [`hinted`] as the unhinted reader would give them: the
/// columns named `names` expanded back to `Utf8`.
pub(crate) fn expanded((schema, batches): Batches, names: Vec<String>) -> Batches {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            let f = f.as_ref().clone();
            if names.iter().any(|n| n == f.name()) && f.data_type() == &keyed() {
                f.with_data_type(DataType::Utf8)
            } else {
                f
            }
        })
        .collect();
    let out: SchemaRef = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let to = out.clone();
    let batches = batches.map(move |b| {
        let b = b?;
        let columns = b
            .columns()
            .iter()
            .zip(to.fields())
            .map(|(c, f)| match c.as_dictionary_opt::<Int32Type>() {
                Some(d) if f.data_type() == &DataType::Utf8 => expand(d),
                _ => Ok(c.clone()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        RecordBatch::try_new(to.clone(), columns)
    });
    (out, Box::new(batches))
}

/// The values `dict` stands for, as a `Utf8` array.
pub fn expand(dict: &DictionaryArray<Int32Type>) -> Result<ArrayRef, ArrowError> {
    let values = dict
        .values()
        .as_string_opt::<i32>()
        .ok_or_else(|| ArrowError::InvalidArgumentError("a dictionary of Utf8 values".into()))?;
    let value_offsets = values.value_offsets();
    let base = value_offsets[0] as usize;
    let lens: Vec<usize> = value_offsets
        .windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .collect();
    let keys = dict.keys();
    let nulls = keys.nulls();
    let slots = keys.values();
    let longest = lens.iter().copied().max().unwrap_or(0);
    if nulls.is_none() && longest <= SHORT {
        if let Some(room) = slots.len().checked_mul(longest) {
            if room < i32::MAX as usize {
                // The narrowest move that holds every value: fewer bytes stored per row.
                return match longest {
                    0..=8 => expand_short::<8>(values, &lens, slots, room),
                    9..=16 => expand_short::<16>(values, &lens, slots, room),
                    _ => expand_short::<SHORT>(values, &lens, slots, room),
                };
            }
        }
    }
    // Keys in range, checked at once where every slot is valid (NULL slots may hold any
    // key: they are never looked up).
    let in_range = |k: i32| (k as u32 as usize) < lens.len();
    // (A fold with no early exit, which the compiler vectorises.)
    let top = slots.iter().fold(0u32, |m, &k| m.max(k as u32));
    let bad = match nulls {
        None if (top as usize) < lens.len() => None,
        _ => slots
            .iter()
            .enumerate()
            .find(|&(i, &k)| !in_range(k) && nulls.is_none_or(|n| n.is_valid(i))),
    };
    if let Some((_, &k)) = bad {
        return Err(out_of_range(k));
    }
    // Each row's end in the output; a NULL row is empty whatever its key slot holds. (The
    // running total stays a local: captured by a closure it would live in memory.) Written
    // through the spare capacity, as in `expand_short`: nothing is zeroed first.
    let mut offsets: Vec<i32> = Vec::with_capacity(slots.len() + 1);
    let ends = &mut offsets.spare_capacity_mut()[..slots.len() + 1];
    ends[0].write(0);
    let mut total = 0usize;
    match nulls {
        None => {
            for (end, &k) in ends[1..].iter_mut().zip(slots) {
                total += lens[k as usize];
                end.write(total as i32);
            }
        }
        Some(n) => {
            for (i, (end, &k)) in ends[1..].iter_mut().zip(slots).enumerate() {
                if n.is_valid(i) {
                    total += lens[k as usize];
                }
                end.write(total as i32);
            }
        }
    }
    // SAFETY: the first offset and one per slot were written above.
    unsafe { offsets.set_len(slots.len() + 1) };
    if i32::try_from(total).is_err() {
        return Err(ArrowError::InvalidArgumentError(
            "strings past 2 GiB in one batch".into(),
        ));
    }
    // The dictionary's bytes, and the output, with room for a fixed move at their ends.
    let mut source = values.value_data()[base..].to_vec();
    source.resize(source.len() + SHORT, 0);
    let starts: Vec<usize> = value_offsets[..lens.len()]
        .iter()
        .map(|&o| o as usize - base)
        .collect();
    let mut out: Vec<u8> = Vec::with_capacity(total + SHORT);
    let into = out.as_mut_ptr();
    for (i, &k) in slots.iter().enumerate() {
        let (at, end) = (offsets[i] as usize, offsets[i + 1] as usize);
        if at == end {
            continue;
        }
        // A row with bytes is valid, and its key was checked above.
        let from = starts[k as usize];
        if end - at <= SHORT {
            // A move of a size known when compiling, not a call.
            let short: [u8; SHORT] = source[from..from + SHORT].try_into().expect("SHORT bytes");
            // SAFETY: `at <= total`, so the `SHORT` bytes end within the `total + SHORT`
            // allocated; the pointer is to bytes (alignment 1).
            unsafe { into.add(at).cast::<[u8; SHORT]>().write_unaligned(short) };
        } else {
            let value = &source[from..from + end - at];
            // SAFETY: `at..end` lies within `0..total`, allocated; `source` is another
            // allocation.
            unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), into.add(at), end - at) };
        }
    }
    // SAFETY: the rows with bytes tile `0..total` (each row's bytes are its offsets'
    // span), and each was written above.
    unsafe { out.set_len(total) };
    Ok(strings(offsets, out, nulls.cloned()))
}

/// [`expand`] where no key is NULL and no value is longer than `W` bytes: one pass, each
/// value a fixed move of `W` bytes out of a table of the dictionary's values, its key
/// checked as it is looked up; `room` is the most bytes the values can take.
///
/// Neither output is zeroed first: each offset is written once, and the bytes up to the
/// last value's end by the moves (a move's bytes past its value are overwritten by the
/// next, or fall past the end kept).
fn expand_short<const W: usize>(
    values: &StringArray,
    lens: &[usize],
    slots: &[i32],
    room: usize,
) -> Result<ArrayRef, ArrowError> {
    // Each value padded to `W` bytes, beside its length.
    let table: Vec<([u8; W], usize)> = (0..values.len())
        .map(|k| {
            let mut v = [0u8; W];
            v[..lens[k]].copy_from_slice(values.value(k).as_bytes());
            (v, lens[k])
        })
        .collect();
    let mut out: Vec<u8> = Vec::with_capacity(room + W);
    let mut offsets: Vec<i32> = Vec::with_capacity(slots.len() + 1);
    // Written through the spare capacity, not pushed: a push keeps the length in memory
    // and checks it against the capacity on every row.
    let ends = &mut offsets.spare_capacity_mut()[..slots.len() + 1];
    ends[0].write(0);
    let into = out.as_mut_ptr();
    let mut end = 0usize;
    for (slot, &key) in ends[1..].iter_mut().zip(slots) {
        // A negative key is a large one as u32: out of the table too.
        let Some(&(value, len)) = table.get(key as u32 as usize) else {
            return Err(out_of_range(key));
        };
        // SAFETY: `end` is the sum of the lengths written so far, each at most the longest
        // value, so `end <= slots.len() * longest = room` and the move's `W` bytes end
        // within the `room + W` allocated. The pointer is to bytes (alignment 1).
        unsafe { into.add(end).cast::<[u8; W]>().write_unaligned(value) };
        end += len;
        slot.write(end as i32);
    }
    // SAFETY: the first offset and one per slot were written above; every byte below
    // `end` was written by the moves (each writes at least its value's bytes, and the
    // values' bytes tile `0..end`).
    unsafe {
        offsets.set_len(slots.len() + 1);
        out.set_len(end);
    }
    Ok(strings(offsets, out, None))
}

fn out_of_range(k: i32) -> ArrowError {
    ArrowError::InvalidArgumentError(format!("dictionary key {k} out of range"))
}

/// The string array of `offsets` into `bytes`, each step one whole value of a dictionary
/// of strings.
fn strings(offsets: Vec<i32>, bytes: Vec<u8>, nulls: Option<NullBuffer>) -> ArrayRef {
    // SAFETY: `expand` and `expand_short` build the offsets from 0 by adding value lengths,
    // ending at the bytes' end, and each step holds one whole value of a StringArray: valid
    // UTF-8 that starts and ends on character boundaries. The nulls are the keys', one per
    // step.
    let strings = unsafe {
        let offsets = OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets));
        StringArray::new_unchecked(offsets, Buffer::from_vec(bytes), nulls)
    };
    Arc::new(strings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int32Array;

    #[test]
    fn expansion_equals_arrows_cast() {
        let long = "a value well past sixteen bytes, with ünïcödé";
        let (at_most, just_past) = ("x".repeat(SHORT), "y".repeat(SHORT + 1));
        let values = StringArray::from(vec![
            "",
            "R",
            "TRUCK",
            long,
            "NONE",
            at_most.as_str(),
            just_past.as_str(),
        ]);
        // Sliced, so the values' offsets do not start at zero.
        let values = values.slice(1, 6);
        let keys = Int32Array::from(vec![
            Some(0),
            None,
            Some(3),
            Some(2),
            Some(4),
            Some(1),
            None,
            Some(0),
            Some(4),
            Some(5),
            Some(5),
        ]);
        let dict = DictionaryArray::new(keys, Arc::new(values));
        let ours = expand(&dict).unwrap();
        let theirs = arrow_cast::cast(&dict, &DataType::Utf8).unwrap();
        assert_eq!(ours.as_ref(), theirs.as_ref());
        let sliced = dict.slice(2, 5);
        let ours = expand(&sliced).unwrap();
        let theirs = arrow_cast::cast(&sliced, &DataType::Utf8).unwrap();
        assert_eq!(ours.as_ref(), theirs.as_ref());
    }

    #[test]
    fn short_values_without_nulls_take_one_pass_with_the_same_result() {
        // The longest value at each move width's end.
        for longest in [8, 16, SHORT] {
            let edge = "z".repeat(longest);
            let values = StringArray::from(vec!["skip", "N", "", "ünï", edge.as_str(), "RAIL"]);
            let values = values.slice(1, 5);
            let keys: Vec<i32> = (0..1_000).map(|i| i * 7 % 5).collect();
            let dict = DictionaryArray::new(Int32Array::from(keys), Arc::new(values));
            for d in [dict.clone(), dict.slice(3, 500)] {
                let theirs = arrow_cast::cast(&d, &DataType::Utf8).unwrap();
                assert_eq!(expand(&d).unwrap().as_ref(), theirs.as_ref(), "{longest}");
            }
        }
        // SAFETY: a test of `expand`'s own check; the array is only read by `expand`.
        let unchecked = unsafe {
            DictionaryArray::<Int32Type>::new_unchecked(
                Int32Array::from(vec![0, -1]),
                Arc::new(StringArray::from(vec!["x"])),
            )
        };
        assert!(expand(&unchecked).is_err());
    }

    #[test]
    fn many_rows_of_every_length_with_and_without_nulls_equal_arrows_cast() {
        // Values of 0 to 40 bytes (both sides of each move width), keys spread by a simple
        // generator, every 7th row NULL in the second pass.
        let owned: Vec<String> = (0..41)
            .map(|n| "é".repeat(n / 2) + &"v".repeat(n % 2))
            .collect();
        let values = StringArray::from(owned.iter().map(String::as_str).collect::<Vec<_>>());
        let mut state = 17u32;
        let keys: Vec<i32> = (0..10_000)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (state >> 16) as i32 % 41
            })
            .collect();
        let with_nulls: Vec<Option<i32>> = keys
            .iter()
            .enumerate()
            .map(|(i, &k)| (i % 7 != 0).then_some(k))
            .collect();
        for keys in [Int32Array::from(keys), Int32Array::from(with_nulls)] {
            let dict = DictionaryArray::new(keys, Arc::new(values.clone()));
            for d in [dict.clone(), dict.slice(5, 6_000)] {
                let theirs = arrow_cast::cast(&d, &DataType::Utf8).unwrap();
                assert_eq!(expand(&d).unwrap().as_ref(), theirs.as_ref());
            }
        }
    }

    #[test]
    fn a_key_out_of_range_is_an_error() {
        // SAFETY: a test of `expand`'s own check; the array is only read by `expand`.
        let unchecked = unsafe {
            DictionaryArray::<Int32Type>::new_unchecked(
                Int32Array::from(vec![0, 5]),
                Arc::new(StringArray::from(vec!["x"])),
            )
        };
        assert!(expand(&unchecked).is_err());
    }
}

//! Columns stored as 32- or 64-bit integers (integers, dates, timestamps, and decimals)
//! decoded straight into their Arrow arrays.
//!
//! The arrow reader decodes such a column into a zero-filled buffer of its physical
//! integers, filters it when a mask drops rows, and widens a decimal's values to 128 bits
//! in a second pass into a second buffer: in a full scan of three decimal columns that
//! pass alone was a fifth of the CPU. Here a chunk's dictionary is converted once and each
//! key gathers its value; plain values are converted as they are read; each value is
//! written once, into the output. The pages come from the crate's page reader (with
//! pqindex's header checks and the crate's decompression) and the keys and levels from the
//! crate's RLE decoder; only the gather is pqindex's.
//!
//! Two reads come this way: whole row groups read with no row filter ([`beside`]), and the
//! columns read after a predicate pass that leaves a bit per row of the row group
//! ([`Selected`]), where only the selected rows gather their values. Only flat columns
//! whose Arrow type holds the stored integers as they are (or widened, for decimals) and
//! whose chunk lists no encoding but plain, dictionary and the two level encodings come
//! here. A page in another encoding is a chunk whose footer is wrong: its read fails as a
//! damaged file.

use std::mem::MaybeUninit;
use std::sync::Arc;

use arrow_array::{
    make_array, new_empty_array, new_null_array, ArrayRef, BooleanArray, RecordBatch,
    RecordBatchOptions,
};
use arrow_buffer::{ArrowNativeType, BooleanBuffer, BooleanBufferBuilder, Buffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::{ArrowError, DataType, FieldRef, Schema, SchemaRef, TimeUnit};
use arrow_select::concat::concat;
use arrow_select::filter::filter;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;
use parquet::basic::{
    ConvertedType, Encoding, LogicalType, TimeUnit as StoredUnit, Type as PhysicalType,
};
use parquet::column::page::{Page, PageReader};
use parquet::encodings::rle::RleDecoder;
use parquet::errors::ParquetError;
use parquet::file::reader::ChunkReader;
use parquet::schema::types::ColumnDescriptor;

use crate::metadata::page_index::{offset_index, page_boundaries};
use crate::metadata::schema::primitive_leaf;
use crate::read::batches::Batches;
use crate::read::decode::chunk_pages::page_reader;

/// Values decoded at a time, into buffers that stay in the cache.
const CHUNK: usize = 1024;

/// The Arrow native type a column decodes into, made from its stored integers.
trait Native: ArrowNativeType {
    fn from_i32(v: i32) -> Self;
    fn from_i64(v: i64) -> Self;
}

impl Native for i32 {
    fn from_i32(v: i32) -> Self {
        v
    }
    /// Not reached: [`output`] gives 32-bit outputs to INT32 columns only.
    fn from_i64(v: i64) -> Self {
        v as i32
    }
}

impl Native for i64 {
    fn from_i32(v: i32) -> Self {
        v as i64
    }
    fn from_i64(v: i64) -> Self {
        v
    }
}

impl Native for i128 {
    fn from_i32(v: i32) -> Self {
        v as i128
    }
    fn from_i64(v: i64) -> Self {
        v as i128
    }
}

/// The width of the Arrow values a column decodes into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    I32,
    I64,
    /// A decimal, widened.
    I128,
}

/// What a column of Arrow type `data_type` stored as `column` decodes into here: only
/// where the Arrow type holds the stored integers unchanged (a decimal widened), as the
/// arrow reader would give them, so that no cast or unit conversion is skipped.
fn output(data_type: &DataType, column: &ColumnDescriptor) -> Option<Output> {
    let physical = column.physical_type();
    let logical = column.logical_type_ref();
    let converted = column.converted_type();
    let plain_int = |bits: i8| match logical {
        None => {
            matches!(converted, ConvertedType::NONE)
                || (bits == 32 && converted == ConvertedType::INT_32)
                || (bits == 64 && converted == ConvertedType::INT_64)
        }
        Some(LogicalType::Integer(int)) => int.bit_width == bits && int.is_signed,
        Some(_) => false,
    };
    match (data_type, physical) {
        (DataType::Decimal128(..), PhysicalType::INT32 | PhysicalType::INT64) => Some(Output::I128),
        (DataType::Int32, PhysicalType::INT32) if plain_int(32) => Some(Output::I32),
        (DataType::Date32, PhysicalType::INT32)
            if matches!(logical, Some(LogicalType::Date))
                || (logical.is_none() && converted == ConvertedType::DATE) =>
        {
            Some(Output::I32)
        }
        (DataType::Int64, PhysicalType::INT64) if plain_int(64) => Some(Output::I64),
        (DataType::Timestamp(unit, _), PhysicalType::INT64) => match logical {
            Some(LogicalType::Timestamp(t)) => {
                let same = matches!(
                    (unit, &t.unit),
                    (TimeUnit::Millisecond, StoredUnit::MILLIS)
                        | (TimeUnit::Microsecond, StoredUnit::MICROS)
                        | (TimeUnit::Nanosecond, StoredUnit::NANOS)
                );
                same.then_some(Output::I64)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Of `roots` (root columns of the reader's row group `rg`), those of one flat leaf whose
/// Arrow type decodes here and whose chunk uses only encodings read here.
#[allow(deprecated)]
pub(crate) fn roots(reader: &ArrowReaderMetadata, rg: usize, roots: &[usize]) -> Vec<usize> {
    let md = reader.metadata();
    let descr = md.file_metadata().schema_descr();
    let fields = reader.schema().fields();
    let Some(group) = md.row_groups().get(rg) else {
        return Vec::new();
    };
    roots
        .iter()
        .copied()
        .filter(|&root| {
            let (Some(field), Some(leaf)) = (fields.get(root), primitive_leaf(descr, root)) else {
                return false;
            };
            let column = descr.column(leaf);
            output(field.data_type(), &column).is_some()
                && column.max_rep_level() == 0
                && column.max_def_level() <= 1
                && leaf < group.num_columns()
                // parquet-mr lists BIT_PACKED for the levels of every column it writes.
                && group.column(leaf).encodings().all(|e| {
                    matches!(
                        e,
                        Encoding::PLAIN
                            | Encoding::PLAIN_DICTIONARY
                            | Encoding::RLE_DICTIONARY
                            | Encoding::RLE
                            | Encoding::BIT_PACKED
                    )
                })
        })
        .collect()
}

/// Whether every data page of column `root` in row group `rg` holds a row `mask` (a bit
/// per row of the row group) selects. The arrow reader fetches only the pages that do,
/// while [`Selected`] reads every page: it is used only where that reads no more.
pub(crate) fn every_page_selected(
    reader: &ArrowReaderMetadata,
    rg: usize,
    root: usize,
    mask: &BooleanBuffer,
) -> bool {
    let md = reader.metadata();
    let Some(leaf) = primitive_leaf(md.file_metadata().schema_descr(), root) else {
        return false;
    };
    // Without an offset index the reader reads the whole chunk too.
    let Some(index) = offset_index(md, rg, leaf) else {
        return true;
    };
    let rows = mask.len() as u64;
    page_boundaries(index, rows).windows(2).all(|w| {
        let (first, end) = (w[0].min(rows) as usize, w[1].min(rows) as usize);
        end > first && mask.slice(first, end - first).count_set_bits() > 0
    })
}

/// `batches`, a whole row group read without the columns `roots`, with those columns
/// decoded here and put beside the others (the output finds columns by name). `file` and
/// `reader` are what the crate's reader was given, `rg` its row group.
pub(crate) fn beside<R: ChunkReader + Clone + 'static>(
    (schema, batches): Batches,
    file: &R,
    reader: &ArrowReaderMetadata,
    rg: usize,
    roots: &[usize],
) -> Result<Batches, ParquetError> {
    let mut fields: Vec<FieldRef> = schema.fields().iter().cloned().collect();
    let mut chunks = Vec::with_capacity(roots.len());
    for &root in roots {
        let chunk = chunk(file, reader, rg, root)?;
        fields.push(chunk.field().clone());
        chunks.push(chunk);
    }
    let out: SchemaRef = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let to = out.clone();
    let batches = batches.map(move |b| {
        let b = b?;
        let mut columns = b.columns().to_vec();
        for chunk in chunks.iter_mut() {
            columns.push(chunk.next_array(b.num_rows())?);
        }
        let options = RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
        RecordBatch::try_new_with_options(to.clone(), columns, &options)
    });
    Ok((out, Box::new(batches)))
}

/// Column `root` of row group `rg` of `file`, read through `reader`: its pages, to be
/// decoded into its output field.
fn chunk<R: ChunkReader + Clone + 'static>(
    file: &R,
    reader: &ArrowReaderMetadata,
    rg: usize,
    root: usize,
) -> Result<Box<dyn ColumnDecoder>, ParquetError> {
    let md = reader.metadata();
    let descr = md.file_metadata().schema_descr();
    let leaf = primitive_leaf(descr, root)
        .ok_or_else(|| damaged(format!("root column {root} is not a single leaf")))?;
    let pages = page_reader(Arc::new(file.clone()), md, rg, leaf, None, false)?;
    let field = Arc::new(reader.schema().field(root).clone());
    let descr = descr.column(leaf);
    let (physical, max_def) = (descr.physical_type(), descr.max_def_level());
    Ok(match output(field.data_type(), &descr) {
        Some(Output::I32) => Box::new(Chunk::<i32>::new(pages, physical, max_def, field)),
        Some(Output::I64) => Box::new(Chunk::<i64>::new(pages, physical, max_def, field)),
        Some(Output::I128) => Box::new(Chunk::<i128>::new(pages, physical, max_def, field)),
        None => {
            return Err(damaged(format!(
                "{} is not a column of integers read here",
                field.name()
            )))
        }
    })
}

/// Rows of a step of the mask decoded at a time by [`Selected`].
const STEP: usize = 8 * CHUNK;

/// Columns of a whole row group, only the rows a mask selects, for a read after a
/// predicate pass. The keys of every row are decoded (a page is encoded as a whole), but
/// only the selected rows gather their values.
pub(crate) struct Selected {
    chunks: Vec<Box<dyn ColumnDecoder>>,
    /// Which rows of the row group are read.
    mask: BooleanBuffer,
    /// Rows of the mask decoded so far.
    row: usize,
}

impl Selected {
    /// The columns `roots` of row group `rg` of `file`, read through `reader`, at the rows
    /// `mask` (one bit per row of the row group) selects.
    pub(crate) fn new<R: ChunkReader + Clone + 'static>(
        file: &R,
        reader: &ArrowReaderMetadata,
        rg: usize,
        roots: &[usize],
        mask: BooleanBuffer,
    ) -> Result<Self, ParquetError> {
        let chunks = roots
            .iter()
            .map(|&root| chunk(file, reader, rg, root))
            .collect::<Result<_, _>>()?;
        Ok(Selected {
            chunks,
            mask,
            row: 0,
        })
    }

    /// The output fields, in the order of the arrays [`Selected::next`] gives.
    pub(crate) fn fields(&self) -> Vec<FieldRef> {
        self.chunks.iter().map(|c| c.field().clone()).collect()
    }

    /// The next `count` selected rows of each column.
    pub(crate) fn next(&mut self, count: usize) -> Result<Vec<ArrayRef>, ArrowError> {
        while self.chunks.first().is_some_and(|c| c.pending() < count) {
            if self.row >= self.mask.len() {
                return Err(ArrowError::ParquetError(
                    "the integer columns hold fewer selected rows than the others".into(),
                ));
            }
            let step = STEP.min(self.mask.len() - self.row);
            let mask = self.mask.slice(self.row, step);
            for chunk in self.chunks.iter_mut() {
                chunk.read_selected(&mask)?;
            }
            self.row += step;
        }
        self.chunks.iter_mut().map(|c| c.take(count)).collect()
    }
}

/// A test of a column's values: for an array of them, the rows where the predicate is
/// TRUE.
pub(crate) type Test<'a> = dyn FnMut(ArrayRef) -> Result<BooleanBuffer, ArrowError> + 'a;

/// Every row of a chunk tested: which rows pass, and (when asked for) their values.
pub(crate) struct Tested {
    pub mask: BooleanBuffer,
    pub kept: Option<ArrayRef>,
}

/// Every row of column `root` (one of [`roots`]) of row group `rg` of `file`, read through
/// `reader`, tested by `test`, with the passing rows' values when `keep`. A dictionary is
/// tested once and each key looks its answer up, so no value is made for a row that fails.
pub(crate) fn tested<R: ChunkReader + Clone + 'static>(
    file: &R,
    reader: &ArrowReaderMetadata,
    rg: usize,
    root: usize,
    test: &mut Test<'_>,
    keep: bool,
) -> Result<Tested, ArrowError> {
    let rows = usize::try_from(reader.metadata().row_group(rg).num_rows())
        .map_err(|_| damaged("a row group's row count is negative"))?;
    chunk(file, reader, rg, root)?.test(rows, test, keep)
}

/// A column chunk's pages being decoded, whatever its output type.
trait ColumnDecoder: Send {
    /// The output field.
    fn field(&self) -> &FieldRef;
    /// The next `rows` values of the chunk.
    fn next_array(&mut self, rows: usize) -> Result<ArrayRef, ArrowError>;
    /// Of the next `mask.len()` rows, decode those `mask` selects and keep them for
    /// [`ColumnDecoder::take`].
    fn read_selected(&mut self, mask: &BooleanBuffer) -> Result<(), ParquetError>;
    /// Selected rows decoded and not yet taken.
    fn pending(&self) -> usize;
    /// The first `count` selected rows decoded, as an array.
    fn take(&mut self, count: usize) -> Result<ArrayRef, ArrowError>;
    /// The next `rows` rows tested by `test`, as [`tested`] describes.
    fn test(&mut self, rows: usize, test: &mut Test<'_>, keep: bool) -> Result<Tested, ArrowError>;
}

/// A column chunk's pages being decoded into values of type `T`.
struct Chunk<T: Native> {
    field: FieldRef,
    pages: Box<dyn PageReader>,
    /// Bytes of one plain value: 4 (INT32) or 8 (INT64).
    width: usize,
    /// 0 (required) or 1 (optional).
    max_def: i16,
    dictionary: Option<Vec<T>>,
    page: Option<DataPage>,
    values: Box<[MaybeUninit<T>; CHUNK]>,
    keys: Box<[i32; CHUNK]>,
    /// Per row, its dictionary entry (a scratch buffer of [`ColumnDecoder::test`]).
    entries: Box<[i32; CHUNK]>,
    levels: Box<[u8; CHUNK]>,
    /// Selected rows decoded and not yet taken, and whether each is valid.
    pending: (Vec<T>, Vec<bool>),
}

/// The data page being read.
struct DataPage {
    /// Rows (one level, or one value, each) not yet read.
    left: usize,
    /// Definition levels; none when the column is required.
    levels: Option<Levels>,
    values: Values,
}

enum Levels {
    Rle(RleDecoder),
    /// The deprecated encoding: one bit per level, most significant bit first.
    BitPacked {
        bits: Bytes,
        at: usize,
    },
}

enum Values {
    Plain { bytes: Bytes, at: usize },
    Keys(RleDecoder),
}

fn damaged(what: impl Into<String>) -> ParquetError {
    ParquetError::General(what.into())
}

/// An array of `data_type` (whose values are `T`s) of `values`, valid where `nulls` says.
fn array<T: Native>(
    data_type: &DataType,
    values: Vec<T>,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef, ArrowError> {
    let data = ArrayDataBuilder::new(data_type.clone())
        .len(values.len())
        .add_buffer(Buffer::from_vec(values))
        .nulls(nulls)
        .build()?;
    Ok(make_array(data))
}

impl<T: Native> Chunk<T> {
    fn new(
        pages: Box<dyn PageReader>,
        physical: PhysicalType,
        max_def: i16,
        field: FieldRef,
    ) -> Self {
        Chunk {
            field,
            pages,
            width: if physical == PhysicalType::INT32 {
                4
            } else {
                8
            },
            max_def,
            dictionary: None,
            page: None,
            values: Box::new([MaybeUninit::uninit(); CHUNK]),
            keys: Box::new([0; CHUNK]),
            entries: Box::new([0; CHUNK]),
            levels: Box::new([0; CHUNK]),
            pending: (Vec::new(), Vec::new()),
        }
    }

    /// The next data page, reading the dictionary page on the way.
    fn next_page(&mut self) -> Result<DataPage, ParquetError> {
        loop {
            let page = self
                .pages
                .get_next_page()?
                .ok_or_else(|| damaged("a column chunk ends before its row group's last row"))?;
            match page {
                Page::DictionaryPage {
                    buf,
                    num_values,
                    encoding,
                    ..
                } => {
                    if !matches!(encoding, Encoding::PLAIN | Encoding::PLAIN_DICTIONARY) {
                        return Err(damaged(format!("a dictionary page in {encoding}")));
                    }
                    if self.dictionary.is_some() {
                        return Err(damaged("a column chunk has two dictionary pages"));
                    }
                    let n = num_values as usize;
                    if n.checked_mul(self.width).is_none_or(|len| len > buf.len()) {
                        return Err(damaged(format!(
                            "a dictionary page of {} bytes cannot hold {n} values",
                            buf.len()
                        )));
                    }
                    self.dictionary = Some(converted(&buf[..n * self.width], self.width));
                }
                Page::DataPage {
                    buf,
                    num_values,
                    encoding,
                    def_level_encoding,
                    ..
                } => {
                    let left = num_values as usize;
                    let (levels, rest) = if self.max_def == 0 {
                        (None, buf)
                    } else {
                        let (levels, rest) = v1_levels(buf, def_level_encoding, left)?;
                        (Some(levels), rest)
                    };
                    return Ok(DataPage {
                        left,
                        levels,
                        values: values(rest, encoding)?,
                    });
                }
                Page::DataPageV2 {
                    buf,
                    num_values,
                    encoding,
                    def_levels_byte_len,
                    rep_levels_byte_len,
                    ..
                } => {
                    let start = rep_levels_byte_len as usize;
                    let end = start.saturating_add(def_levels_byte_len as usize);
                    if end > buf.len() {
                        return Err(damaged("a data page's levels run past its end"));
                    }
                    let levels = (self.max_def > 0)
                        .then(|| rle(1, buf.slice(start..end)))
                        .transpose()?;
                    return Ok(DataPage {
                        left: num_values as usize,
                        levels,
                        values: values(buf.slice(end..), encoding)?,
                    });
                }
            }
        }
    }
}

impl<T: Native> ColumnDecoder for Chunk<T> {
    fn field(&self) -> &FieldRef {
        &self.field
    }

    fn next_array(&mut self, rows: usize) -> Result<ArrayRef, ArrowError> {
        let mut out: Vec<T> = Vec::with_capacity(rows);
        let mut nulls: Option<BooleanBufferBuilder> = None;
        while out.len() < rows {
            if self.page.as_ref().is_none_or(|p| p.left == 0) {
                self.page = Some(self.next_page()?);
                continue;
            }
            let page = self.page.as_mut().expect("a page was just read");
            let n = (rows - out.len()).min(page.left).min(CHUNK);
            let present = match &mut page.levels {
                None => n,
                Some(levels) => {
                    read_levels(levels, &mut self.levels[..n])?;
                    valid_levels(&self.levels[..n])?
                }
            };
            let start = out.len();
            let dictionary = self.dictionary.as_deref();
            let keys = &mut self.keys[..];
            // The values are written once, straight into the output's spare room: a zero
            // fill first would cost as much as the decoding.
            let spare = &mut out.spare_capacity_mut()[..n];
            if present == n {
                read_values(&mut page.values, self.width, dictionary, keys, spare)?;
                if let Some(nulls) = &mut nulls {
                    nulls.append_n(n, true);
                }
            } else {
                let values = &mut self.values[..present];
                read_values(&mut page.values, self.width, dictionary, keys, values)?;
                // SAFETY: `read_values` returned Ok, so it wrote every element of `values`.
                let values = unsafe { &*(values as *const [MaybeUninit<T>] as *const [T]) };
                let nulls = nulls.get_or_insert_with(|| {
                    let mut b = BooleanBufferBuilder::new(rows);
                    b.append_n(start, true);
                    b
                });
                let mut next = values.iter();
                for (o, &level) in spare.iter_mut().zip(&self.levels[..n]) {
                    let valid = level == 1;
                    let value = if valid { next.next().copied() } else { None };
                    o.write(value.unwrap_or_default());
                    nulls.append(valid);
                }
            }
            // SAFETY: both branches above wrote all `n` elements of `spare`, the `n` slots
            // of spare capacity after `start`.
            unsafe { out.set_len(start + n) };
            page.left -= n;
        }
        let nulls = nulls.map(|mut b| NullBuffer::new(b.finish()));
        array(self.field.data_type(), out, nulls)
    }

    fn read_selected(&mut self, mask: &BooleanBuffer) -> Result<(), ParquetError> {
        let rows = mask.len();
        // Held apart while pages are read (an error ends the read anyway).
        let (mut out, mut valid) = std::mem::take(&mut self.pending);
        let mut done = 0;
        while done < rows {
            if self.page.as_ref().is_none_or(|p| p.left == 0) {
                self.page = Some(self.next_page()?);
                continue;
            }
            let page = self.page.as_mut().expect("a page was just read");
            let n = (rows - done).min(page.left).min(CHUNK);
            let present = match &mut page.levels {
                None => n,
                Some(levels) => {
                    read_levels(levels, &mut self.levels[..n])?;
                    valid_levels(&self.levels[..n])?
                }
            };
            let piece = mask.slice(done, n);
            if piece.count_set_bits() == 0 {
                skip_values(&mut page.values, self.width, present)?;
            } else {
                let dictionary = self.dictionary.as_deref();
                let keys = &mut self.keys[..present];
                let source = locate_values(&mut page.values, self.width, dictionary, keys)?;
                if present == n {
                    for i in piece.set_indices() {
                        out.push(source.value(i));
                        valid.push(true);
                    }
                } else {
                    // The value of row i is the j-th, j the valid rows before it.
                    let mut j = 0;
                    for (selected, &level) in piece.iter().zip(&self.levels[..n]) {
                        if selected {
                            out.push(if level == 1 {
                                source.value(j)
                            } else {
                                T::default()
                            });
                            valid.push(level == 1);
                        }
                        j += usize::from(level);
                    }
                }
            }
            page.left -= n;
            done += n;
        }
        self.pending = (out, valid);
        Ok(())
    }

    fn pending(&self) -> usize {
        self.pending.0.len()
    }

    fn take(&mut self, count: usize) -> Result<ArrayRef, ArrowError> {
        let (values, valid) = &mut self.pending;
        let taken: Vec<T> = values.drain(..count).collect();
        let flags: Vec<bool> = valid.drain(..count).collect();
        let nulls = flags.contains(&false).then(|| NullBuffer::from(flags));
        array(self.field.data_type(), taken, nulls)
    }

    fn test(&mut self, rows: usize, test: &mut Test<'_>, keep: bool) -> Result<Tested, ArrowError> {
        let data_type = self.field.data_type().clone();
        let mut mask = BooleanBufferBuilder::new(rows);
        let mut parts: Vec<ArrayRef> = Vec::new();
        // Passing rows of dictionary-encoded pages, not yet made into a part.
        let mut kept: (Vec<T>, Vec<bool>) = (Vec::new(), Vec::new());
        // Whether each dictionary entry passes, then whether a NULL does.
        let mut answers: Option<Vec<bool>> = None;
        let mut done = 0;
        while done < rows {
            if self.page.as_ref().is_none_or(|p| p.left == 0) {
                self.page = Some(self.next_page()?);
                continue;
            }
            let page = self.page.as_ref().expect("a page was just read");
            if let Values::Plain { .. } = page.values {
                // The rest of the page at once: a test has a cost of its own per call.
                let n = (rows - done).min(page.left);
                if keep {
                    parts.extend(part(&data_type, &mut kept)?);
                }
                let values = self.next_array(n)?;
                let passed = test(values.clone())?;
                if passed.len() != n {
                    return Err(ArrowError::ComputeError(
                        "a test of the wrong length".into(),
                    ));
                }
                if keep {
                    parts.push(filter(&values, &BooleanArray::new(passed.clone(), None))?);
                }
                mask.append_buffer(&passed);
                done += n;
                continue;
            }
            let n = (rows - done).min(page.left).min(CHUNK);
            if answers.is_none() {
                if let Some(dictionary) = &self.dictionary {
                    let entries = array(&data_type, dictionary.clone(), None)?;
                    let mut passed: Vec<bool> = test(entries)?.iter().collect();
                    if passed.len() != dictionary.len() {
                        return Err(ArrowError::ComputeError(
                            "a test of the wrong length".into(),
                        ));
                    }
                    passed.push(test(new_null_array(&data_type, 1))?.value(0));
                    answers = Some(passed);
                }
            }
            let page = self.page.as_mut().expect("a page was just read");
            let present = match &mut page.levels {
                None => n,
                Some(levels) => {
                    read_levels(levels, &mut self.levels[..n])?;
                    valid_levels(&self.levels[..n])?
                }
            };
            let dictionary = self.dictionary.as_deref();
            let keys = &mut self.keys[..present];
            let Located::Keys(dictionary, keys) =
                locate_values(&mut page.values, self.width, dictionary, keys)?
            else {
                return Err(damaged("a dictionary-encoded page read as plain").into());
            };
            // Each row's entry: its key (checked against the dictionary), or one past the
            // dictionary's end for a NULL; `answers` has one more than the dictionary.
            let none = dictionary.len();
            let entries: &[i32] = if present == n {
                keys
            } else {
                let mut j = 0;
                let levels = &self.levels[..n];
                for (e, &level) in self.entries[..n].iter_mut().zip(levels) {
                    *e = if level == 1 { keys[j] } else { none as i32 };
                    j += usize::from(level);
                }
                &self.entries[..n]
            };
            let answers = answers.as_deref().unwrap_or_default();
            if answers.len() != none + 1 {
                return Err(damaged("a dictionary-encoded page before its dictionary").into());
            }
            let passed = BooleanBuffer::collect_bool(n, |i| answers[entries[i] as usize]);
            if keep {
                let (values, valid) = &mut kept;
                for i in passed.set_indices() {
                    let e = entries[i] as usize;
                    values.push(dictionary.get(e).copied().unwrap_or_default());
                    valid.push(e != none);
                }
            }
            mask.append_buffer(&passed);
            page.left -= n;
            done += n;
        }
        let kept = match keep {
            false => None,
            true => {
                parts.extend(part(&data_type, &mut kept)?);
                Some(match parts.len() {
                    0 => new_empty_array(&data_type),
                    1 => parts.remove(0),
                    _ => concat(&parts.iter().map(|p| p.as_ref()).collect::<Vec<_>>())?,
                })
            }
        };
        Ok(Tested {
            mask: mask.finish(),
            kept,
        })
    }
}

/// The values gathered in `kept` (and whether each is valid), taken out as an array of
/// `data_type`, if there are any.
fn part<T: Native>(
    data_type: &DataType,
    kept: &mut (Vec<T>, Vec<bool>),
) -> Result<Option<ArrayRef>, ArrowError> {
    if kept.0.is_empty() {
        return Ok(None);
    }
    let (values, valid) = std::mem::take(kept);
    let nulls = valid.contains(&false).then(|| NullBuffer::from(valid));
    array(data_type, values, nulls).map(Some)
}

/// The plain values of `bytes`, `width` bytes each, as `T`s.
fn converted<T: Native>(bytes: &[u8], width: usize) -> Vec<T> {
    let n = bytes.len() / width;
    let mut out = Vec::with_capacity(n);
    convert_into(bytes, width, &mut out.spare_capacity_mut()[..n]);
    // SAFETY: `convert_into` writes one value per `width` bytes: all `n`.
    unsafe { out.set_len(n) };
    out
}

/// Convert the plain values of `bytes`, `width` bytes each, into the elements of `out` (as
/// many as `bytes` holds), one loop per width so that each is vectorised.
fn convert_into<T: Native>(bytes: &[u8], width: usize, out: &mut [MaybeUninit<T>]) {
    if width == 4 {
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            o.write(T::from_i32(i32::from_le_bytes([b[0], b[1], b[2], b[3]])));
        }
    } else {
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(8)) {
            let v = i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
            o.write(T::from_i64(v));
        }
    }
}

fn rle(bit_width: u8, data: Bytes) -> Result<Levels, ParquetError> {
    let mut decoder = RleDecoder::new(bit_width);
    decoder.set_data(data)?;
    Ok(Levels::Rle(decoder))
}

/// The definition levels at the start of a version 1 data page of `count` values, and the
/// bytes after them.
#[allow(deprecated)]
fn v1_levels(
    buf: Bytes,
    encoding: Encoding,
    count: usize,
) -> Result<(Levels, Bytes), ParquetError> {
    match encoding {
        Encoding::RLE => {
            let len = buf
                .get(..4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
                .ok_or_else(|| damaged("a data page ends before its levels' length"))?;
            let end = len
                .checked_add(4)
                .filter(|&end| end <= buf.len())
                .ok_or_else(|| damaged("a data page's levels run past its end"))?;
            Ok((rle(1, buf.slice(4..end))?, buf.slice(end..)))
        }
        Encoding::BIT_PACKED => {
            let len = count.div_ceil(8);
            if len > buf.len() {
                return Err(damaged("a data page's levels run past its end"));
            }
            let bits = buf.slice(..len);
            Ok((Levels::BitPacked { bits, at: 0 }, buf.slice(len..)))
        }
        other => Err(damaged(format!("definition levels in {other}"))),
    }
}

/// The values of a data page in `encoding`, from `bytes`.
fn values(bytes: Bytes, encoding: Encoding) -> Result<Values, ParquetError> {
    match encoding {
        Encoding::PLAIN => Ok(Values::Plain { bytes, at: 0 }),
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY => {
            let bit_width = bytes.first().copied().unwrap_or(0);
            if bit_width > 32 {
                return Err(damaged(format!("dictionary keys of {bit_width} bits")));
            }
            let mut keys = RleDecoder::new(bit_width);
            keys.set_data(bytes.slice(bytes.len().min(1)..))?;
            Ok(Values::Keys(keys))
        }
        other => Err(damaged(format!(
            "a data page in {other}, which its column chunk's metadata does not list"
        ))),
    }
}

/// Fill `out` with the next levels.
fn read_levels(levels: &mut Levels, out: &mut [u8]) -> Result<(), ParquetError> {
    match levels {
        Levels::Rle(decoder) => {
            if decoder.get_batch(out)? < out.len() {
                return Err(damaged("a data page holds fewer levels than values"));
            }
        }
        Levels::BitPacked { bits, at } => {
            for (i, level) in out.iter_mut().enumerate() {
                let bit = *at + i;
                let byte = bits
                    .get(bit / 8)
                    .ok_or_else(|| damaged("a data page holds fewer levels than values"))?;
                *level = (byte >> (7 - bit % 8)) & 1;
            }
            *at += out.len();
        }
    }
    Ok(())
}

/// How many of `levels` (0 or 1 each) are 1: rows with a value.
fn valid_levels(levels: &[u8]) -> Result<usize, ParquetError> {
    // Two branch-free passes over a cached kilobyte, sixteen bytes at a time: the sum of
    // up to 255 levels of 0 or 1 fits in a byte.
    if levels.iter().fold(0u8, |m, &l| m.max(l)) > 1 {
        return Err(damaged("a definition level above the column's maximum"));
    }
    Ok(levels
        .chunks(255)
        .map(|c| usize::from(c.iter().fold(0u8, |a, &l| a.wrapping_add(l))))
        .sum())
}

/// Write the next values into every element of `out`: gathered from `dictionary` by key
/// (decoded into `keys`, a scratch buffer at least as long), or converted from plain.
fn read_values<T: Native>(
    values: &mut Values,
    width: usize,
    dictionary: Option<&[T]>,
    keys: &mut [i32],
    out: &mut [MaybeUninit<T>],
) -> Result<(), ParquetError> {
    let n = out.len();
    match values {
        Values::Plain { bytes, at } => {
            let end = at.saturating_add(n * width);
            let plain = bytes
                .get(*at..end)
                .ok_or_else(|| damaged("a data page holds fewer values than its levels say"))?;
            convert_into(plain, width, out);
            *at = end;
        }
        Values::Keys(decoder) => {
            let dictionary = dictionary.ok_or_else(|| {
                damaged("a dictionary-encoded page in a chunk with no dictionary")
            })?;
            let keys = &mut keys[..n];
            if decoder.get_batch(keys)? < n {
                return Err(damaged("a data page holds fewer keys than its levels say"));
            }
            gather(dictionary, keys, out)?;
        }
    }
    Ok(())
}

/// Write `dictionary[key]` for each of `keys` into `out`.
fn gather<T: Native>(
    dictionary: &[T],
    keys: &[i32],
    out: &mut [MaybeUninit<T>],
) -> Result<(), ParquetError> {
    // One check of the largest key (a negative one is larger still as u32) instead of one
    // per key, so that the gather below is a plain loop. No key (all NULL) needs no value.
    let largest = keys.iter().fold(0u32, |m, &k| m.max(k as u32));
    if !keys.is_empty() && largest as usize >= dictionary.len() {
        return Err(damaged(format!(
            "a dictionary key of {largest} for a dictionary of {} values",
            dictionary.len()
        )));
    }
    for (o, &k) in out.iter_mut().zip(keys) {
        // SAFETY: every key is below the dictionary's length, checked above.
        o.write(*unsafe { dictionary.get_unchecked(k as usize) });
    }
    Ok(())
}

/// Pass over the next `count` values.
fn skip_values(values: &mut Values, width: usize, count: usize) -> Result<(), ParquetError> {
    let short = || damaged("a data page holds fewer values than its levels say");
    match values {
        Values::Plain { bytes, at } => {
            let end = at.saturating_add(count * width);
            if end > bytes.len() {
                return Err(short());
            }
            *at = end;
        }
        Values::Keys(decoder) => {
            if decoder.skip(count)? < count {
                return Err(short());
            }
        }
    }
    Ok(())
}

/// Where the next values are, for picking some of them by position.
enum Located<'a, T> {
    Keys(&'a [T], &'a [i32]),
    Plain(&'a [u8], usize),
}

impl<T: Native> Located<'_, T> {
    /// The `j`-th value, `j` below the count located.
    fn value(&self, j: usize) -> T {
        match self {
            // Every key was checked against the dictionary's length in `locate_values`.
            Located::Keys(dictionary, keys) => dictionary[keys[j] as usize],
            Located::Plain(bytes, width) => {
                let b = &bytes[j * width..(j + 1) * width];
                match *width {
                    4 => T::from_i32(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                    _ => T::from_i64(i64::from_le_bytes([
                        b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                    ])),
                }
            }
        }
    }
}

/// Locate the next `keys.len()` values and pass over them: keys are decoded into `keys`
/// and checked against the dictionary, plain values are found in the page.
fn locate_values<'a, T: Native>(
    values: &'a mut Values,
    width: usize,
    dictionary: Option<&'a [T]>,
    keys: &'a mut [i32],
) -> Result<Located<'a, T>, ParquetError> {
    let n = keys.len();
    let short = || damaged("a data page holds fewer values than its levels say");
    match values {
        Values::Plain { bytes, at } => {
            let start = *at;
            let end = start.saturating_add(n * width);
            let plain = bytes.get(start..end).ok_or_else(short)?;
            *at = end;
            Ok(Located::Plain(plain, width))
        }
        Values::Keys(decoder) => {
            let dictionary = dictionary.ok_or_else(|| {
                damaged("a dictionary-encoded page in a chunk with no dictionary")
            })?;
            if decoder.get_batch(keys)? < n {
                return Err(short());
            }
            let largest = keys.iter().fold(0u32, |m, &k| m.max(k as u32));
            if !keys.is_empty() && largest as usize >= dictionary.len() {
                return Err(damaged(format!(
                    "a dictionary key of {largest} for a dictionary of {} values",
                    dictionary.len()
                )));
            }
            Ok(Located::Keys(dictionary, keys))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use arrow_schema::Field;
    use parquet::column::page::PageMetadata;

    /// Pages handed out in order, as a chunk's page reader would.
    struct Pages(std::vec::IntoIter<Page>);

    impl Iterator for Pages {
        type Item = Result<Page, ParquetError>;
        fn next(&mut self) -> Option<Self::Item> {
            self.0.next().map(Ok)
        }
    }

    impl PageReader for Pages {
        fn get_next_page(&mut self) -> Result<Option<Page>, ParquetError> {
            Ok(self.0.next())
        }
        fn peek_next_page(&mut self) -> Result<Option<PageMetadata>, ParquetError> {
            Err(damaged("not used"))
        }
        fn skip_next_page(&mut self) -> Result<(), ParquetError> {
            Err(damaged("not used"))
        }
    }

    fn int64s(values: &[i64]) -> Bytes {
        Bytes::from(
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )
    }

    fn dictionary(values: &[i64], num_values: u32) -> Page {
        Page::DictionaryPage {
            buf: int64s(values),
            num_values,
            encoding: Encoding::PLAIN,
            is_sorted: false,
        }
    }

    /// A required page of `count` values: `body` after the levels, in `encoding`.
    fn data(body: Bytes, count: u32, encoding: Encoding) -> Page {
        Page::DataPage {
            buf: body,
            num_values: count,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        }
    }

    /// Keys of 2 bits, bit-packed: one group of 8 (the RLE/bit-packed hybrid's header 3).
    fn keys(keys: [u8; 8]) -> Bytes {
        let mut packed = 0u16;
        for (i, k) in keys.iter().enumerate() {
            packed |= u16::from(*k) << (2 * i);
        }
        let [lo, hi] = packed.to_le_bytes();
        Bytes::from(vec![2, 3, lo, hi])
    }

    fn chunk(pages: Vec<Page>) -> Chunk<i64> {
        let field = Arc::new(Field::new("k", DataType::Int64, false));
        Chunk::new(
            Box::new(Pages(pages.into_iter())),
            PhysicalType::INT64,
            0,
            field,
        )
    }

    fn read(pages: Vec<Page>, rows: usize) -> Result<Vec<i64>, ArrowError> {
        let array = chunk(pages).next_array(rows)?;
        Ok(array.as_primitive::<Int64Type>().values().to_vec())
    }

    #[test]
    fn damaged_dictionaries_and_unlisted_encodings_are_errors() {
        let page = || data(keys([0, 1, 2, 0, 1, 2, 0, 1]), 8, Encoding::RLE_DICTIONARY);
        let good = read(vec![dictionary(&[7, 8, 9], 3), page()], 8).unwrap();
        assert_eq!(good, vec![7, 8, 9, 7, 8, 9, 7, 8]);
        let message = |pages, rows| read(pages, rows).unwrap_err().to_string();
        let two = message(vec![dictionary(&[7], 1), dictionary(&[8], 1), page()], 8);
        assert!(two.contains("two dictionary pages"), "{two}");
        let short = message(vec![dictionary(&[7, 8], 3), page()], 8);
        assert!(short.contains("cannot hold 3 values"), "{short}");
        let none = message(vec![page()], 8);
        assert!(none.contains("no dictionary"), "{none}");
        let past = message(vec![dictionary(&[7, 8], 2), page()], 8);
        assert!(past.contains("dictionary key of 2"), "{past}");
        let delta = data(int64s(&[1, 2]), 2, Encoding::DELTA_BINARY_PACKED);
        let unlisted = message(vec![delta], 2);
        assert!(unlisted.contains("does not list"), "{unlisted}");
        let ended = message(vec![dictionary(&[7, 8, 9], 3), page()], 9);
        assert!(ended.contains("ends before"), "{ended}");
    }

    #[test]
    fn a_test_asks_the_dictionary_once_and_keeps_the_passing_rows() {
        let pages = vec![
            dictionary(&[7, 8, 9], 3),
            data(keys([0, 1, 2, 0, 1, 2, 0, 1]), 8, Encoding::RLE_DICTIONARY),
            data(int64s(&[9, 1, 8]), 3, Encoding::PLAIN),
        ];
        let mut calls = Vec::new();
        let mut test = |values: ArrayRef| -> Result<BooleanBuffer, ArrowError> {
            calls.push(values.len());
            let v = values.as_primitive::<Int64Type>();
            Ok(BooleanBuffer::collect_bool(v.len(), |i| {
                v.is_valid(i) && v.value(i) >= 8
            }))
        };
        let tested = chunk(pages).test(11, &mut test, true).unwrap();
        let passed: Vec<bool> = tested.mask.iter().collect();
        let want = [
            false, true, true, false, true, true, false, true, true, false, true,
        ];
        assert_eq!(passed, want);
        let kept = tested.kept.unwrap();
        assert_eq!(
            kept.as_primitive::<Int64Type>().values().to_vec(),
            vec![8, 9, 8, 9, 8, 9, 8]
        );
        // The dictionary (3), a NULL (1), the plain page (3): no call per keyed row.
        assert_eq!(calls, vec![3, 1, 3]);
    }

    #[test]
    fn only_types_holding_the_stored_integers_as_they_are_decode_here() {
        use parquet::schema::parser::parse_message_type;
        use parquet::schema::types::SchemaDescriptor;

        let message = "message m {
            required int32 a; required int32 b (DATE); required int32 c (INTEGER(8, true));
            required int32 d (INTEGER(32, false)); required int64 e;
            required int64 f (TIMESTAMP(MICROS, true)); required int64 g (DECIMAL(18, 2));
            required int32 h (INTEGER(32, true)); required int64 i (TIME(MICROS, false));
        }";
        let descr = SchemaDescriptor::new(Arc::new(parse_message_type(message).unwrap()));
        let of = |leaf: usize, t: DataType| output(&t, &descr.column(leaf));
        let micros = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(of(0, DataType::Int32), Some(Output::I32));
        assert_eq!(of(0, DataType::Date32), None);
        assert_eq!(of(1, DataType::Date32), Some(Output::I32));
        assert_eq!(of(1, DataType::Int32), None);
        assert_eq!(of(2, DataType::Int8), None);
        assert_eq!(of(2, DataType::Int32), None);
        assert_eq!(of(3, DataType::UInt32), None);
        assert_eq!(of(3, DataType::Int32), None);
        assert_eq!(of(4, DataType::Int64), Some(Output::I64));
        assert_eq!(of(4, micros.clone()), None);
        assert_eq!(of(5, micros), Some(Output::I64));
        assert_eq!(
            of(5, DataType::Timestamp(TimeUnit::Millisecond, None)),
            None
        );
        assert_eq!(of(5, DataType::Int64), None);
        assert_eq!(of(6, DataType::Decimal128(18, 2)), Some(Output::I128));
        assert_eq!(of(7, DataType::Int32), Some(Output::I32));
        assert_eq!(of(8, DataType::Time64(TimeUnit::Microsecond)), None);
    }

    #[test]
    fn plain_values_widen_with_their_sign() {
        let mut bytes = Vec::new();
        for v in [-3i64, 7, i64::MIN] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        assert_eq!(converted::<i128>(&bytes, 8), vec![-3, 7, i64::MIN as i128]);
        assert_eq!(converted::<i128>(&(-5i32).to_le_bytes(), 4), vec![-5]);
        assert_eq!(converted::<i64>(&bytes, 8), vec![-3, 7, i64::MIN]);
        assert_eq!(converted::<i32>(&(-5i32).to_le_bytes(), 4), vec![-5]);
    }

    #[test]
    fn keys_gather_their_values_and_a_key_past_the_dictionary_is_an_error() {
        let dictionary = [5i128, -6, 7];
        let mut out = [MaybeUninit::uninit(); 4];
        gather(&dictionary, &[2, 0, 1, 2], &mut out).unwrap();
        let got: Vec<i128> = out.iter().map(|o| unsafe { o.assume_init() }).collect();
        assert_eq!(got, vec![7, 5, -6, 7]);
        assert!(gather(&dictionary, &[0, 3, 1, 1], &mut out).is_err());
        assert!(gather(&dictionary, &[0, -1, 1, 1], &mut out).is_err());
        // An all-NULL chunk's dictionary is empty, and its pages have no key.
        assert!(gather(&[], &[], &mut out[..0]).is_ok());
        assert!(gather(&[], &[0], &mut out[..1]).is_err());
    }

    #[test]
    fn valid_levels_are_counted_and_a_level_above_one_is_an_error() {
        let levels: Vec<u8> = (0..1000).map(|i| u8::from(i % 3 != 0)).collect();
        assert_eq!(valid_levels(&levels).unwrap(), 666);
        assert_eq!(valid_levels(&[1; 1024]).unwrap(), 1024);
        assert!(valid_levels(&[1, 0, 2, 1]).is_err());
    }

    #[test]
    fn bit_packed_levels_read_most_significant_bit_first() {
        let mut levels = Levels::BitPacked {
            bits: Bytes::from_static(&[0b1010_0000, 0b1000_0000]),
            at: 0,
        };
        let mut out = [0u8; 9];
        read_levels(&mut levels, &mut out).unwrap();
        assert_eq!(out, [1, 0, 1, 0, 0, 0, 0, 0, 1]);
        let mut more = [0u8; 8];
        assert!(read_levels(&mut levels, &mut more).is_err());
    }

    #[test]
    fn values_short_of_their_levels_are_an_error_not_a_panic() {
        let mut plain = Values::Plain {
            bytes: Bytes::from_static(&[1, 0, 0, 0, 0, 0, 0, 0, 2]),
            at: 0,
        };
        let mut out = [MaybeUninit::uninit(); 2];
        let mut keys = [0i32; 2];
        assert!(read_values(&mut plain, 8, None, &mut keys, &mut out).is_err());
        let mut encoded = values(
            Bytes::from_static(&[1, 0b0000_0011, 0b0000_0001]),
            Encoding::RLE_DICTIONARY,
        )
        .unwrap();
        assert!(read_values(&mut encoded, 8, None, &mut keys, &mut out).is_err());
        let dictionary = [10i128];
        assert!(read_values(&mut encoded, 8, Some(&dictionary), &mut keys, &mut out).is_err());
        assert!(values(Bytes::from_static(&[33]), Encoding::RLE_DICTIONARY).is_err());
        assert!(values(Bytes::new(), Encoding::DELTA_BINARY_PACKED).is_err());
    }
}

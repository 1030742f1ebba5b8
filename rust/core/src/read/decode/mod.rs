//! The decoders that go around the parquet crate's reader, in one place: pages supplied to
//! the crate's reader with pqindex's own decompression (`chunk_pages`, `page_codec`,
//! `page_buffers`), a page's or a dictionary's start decompressed alone (`page_prefix`,
//! `snappy_prefix`, `dictionary_prefix`), columns decoded straight into their arrays
//! (`integer_columns`, `dictionary_strings`), and a page read whole for the probes
//! (`whole_page`).
//!
//! What they rely on in the crate, and so what an upgrade of it must check: its page
//! reader trait and `PageIterator`, the `experimental` RLE/bit-packing decoder, the
//! layout of PLAIN and RLE_DICTIONARY pages and the v1/v2 page headers. Each is checked
//! against the crate's own reader in its tests, and the whole seam against the stock
//! reader (`read::stock`, `PQINDEX_DECODE=stock`) by the differential suite.

pub(crate) mod chunk_pages;
pub(crate) mod dictionary_prefix;
pub(crate) mod dictionary_strings;
pub(crate) mod integer_columns;
pub(crate) mod page_buffers;
pub(crate) mod page_codec;
pub(crate) mod page_prefix;
pub(crate) mod snappy_prefix;
pub(crate) mod whole_page;

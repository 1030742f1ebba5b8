//! Parquet modular encryption: files whose footer, column metadata, pages, page index and
//! bloom filters are AES-GCM modules, read given their keys.
//!
//! The parquet crate does the cryptography. pqindex decides what it may do with such a
//! file: the footer and page index are decrypted by the crate's metadata reader, so the
//! statistics and page index prune as in any file; the rows are decoded by the crate's
//! stock reader alone (pqindex's own decoders and probes read page bytes and headers, which
//! are ciphertext here); Parquet bloom filters of encrypted columns are not consulted; and
//! no embedded index is added to such a file, since its footer would have to be
//! re-encrypted. Metadata decrypted with keys is never put in the process-wide cache, where
//! a caller without the keys could find it.

use std::sync::Arc;

use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;

pub use parquet::encryption::decrypt::{FileDecryptionProperties, KeyRetriever};

use crate::error::Error;

/// The keys of encrypted files: a footer key, column keys by column path and an AAD
/// prefix, or a retriever that finds a key from the key metadata the file stores.
pub type Decryption = Arc<FileDecryptionProperties>;

/// Magic of a file whose footer is encrypted.
pub(crate) const ENCRYPTED_FOOTER_MAGIC: &[u8; 4] = b"PARE";

/// Whether any column chunk of `md` is encrypted (with the footer key or a column key).
pub fn is_encrypted(md: &ParquetMetaData) -> bool {
    md.row_groups()
        .iter()
        .flat_map(|g| g.columns())
        .any(|c| c.crypto_metadata().is_some())
}

/// The error for an encrypted file read without keys.
pub(crate) fn keys_needed(path: &str, footer: bool) -> Error {
    let what = if footer {
        "its footer is encrypted"
    } else {
        "its footer is plaintext but columns are encrypted"
    };
    Error::Encrypted {
        path: path.to_string(),
        reason: format!(
            "the file is encrypted (Parquet modular encryption; {what}): pass decryption= \
             with its footer key and column keys, or a key retriever"
        ),
    }
}

/// The error for a failure of the crate to decrypt `path` with the keys given.
pub(crate) fn not_decrypted(path: &str, e: &ParquetError) -> Error {
    let reason = match e {
        ParquetError::NYI(m) => return Error::unsupported(format!("{path}: {m}")),
        ParquetError::General(m) => m.clone(),
        other => other.to_string(),
    };
    Error::Encrypted {
        path: path.to_string(),
        reason: format!("cannot decrypt the file with the keys given: {reason}"),
    }
}

/// Whether the crate's message is about decryption (keys, AAD, a failed tag check), not
/// about damaged Thrift.
pub(crate) fn is_decryption_failure(e: &ParquetError) -> bool {
    is_decryption_message(&e.to_string())
}

fn is_decryption_message(m: &str) -> bool {
    let m = m.to_ascii_lowercase();
    [
        "decrypt",
        "encrypted",
        "aad",
        "key retriever",
        "signature verification",
    ]
    .iter()
    .any(|w| m.contains(w))
}

/// A read's failure on an encrypted file, as an [`Error::Encrypted`] where the crate says
/// the keys given do not decrypt it (a missing column key, a failed tag check).
pub(crate) fn classified(e: Error) -> Error {
    match e {
        Error::InvalidFile { path, reason } if is_decryption_message(&reason) => Error::Encrypted {
            path,
            reason: format!("cannot decrypt the file with the keys given: {reason}"),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use arrow_array::{RecordBatch, RecordBatchIterator};
    use arrow_schema::{Field, Schema};
    use parquet::arrow::ArrowWriter;
    use parquet::encryption::encrypt::FileEncryptionProperties;
    use parquet::file::properties::{EnabledStatistics, WriterProperties};

    use super::*;
    use crate::metadata::MetadataCache;
    use crate::query::scan::{Scan, ScanOptions};
    use crate::testing::{int64s, keys, strings};

    const FOOTER: &[u8] = b"0123456789012345";
    const ID_KEY: &[u8] = b"1234567890123450";
    const NAME_KEY: &[u8] = b"1234567890123451";

    /// 10,000 rows in 10 row groups of pages of 100 rows, written by the parquet crate with
    /// the footer, `id` and `name` each under a key of its own.
    fn write(dir: &std::path::Path, plaintext_footer: bool) -> String {
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", arrow_schema::DataType::Int64, false),
            Field::new("name", arrow_schema::DataType::Utf8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                int64s(0..10_000),
                strings((0..10_000).map(|i| (i % 7 != 0).then(|| format!("n{}", i % 500)))),
            ],
        )
        .unwrap();
        let encryption = FileEncryptionProperties::builder(FOOTER.to_vec())
            .with_column_key("id", ID_KEY.to_vec())
            .with_column_key("name", NAME_KEY.to_vec())
            .with_plaintext_footer(plaintext_footer)
            .build()
            .unwrap();
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .set_data_page_row_count_limit(100)
            .set_write_batch_size(100)
            .set_statistics_enabled(EnabledStatistics::Page)
            .with_file_encryption_properties(encryption)
            .build();
        let path = dir.join("e.parquet").to_string_lossy().into_owned();
        let file = std::fs::File::create(&path).unwrap();
        let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).unwrap();
        for b in RecordBatchIterator::new(vec![Ok(batch)], schema) {
            w.write(&b.unwrap()).unwrap();
        }
        w.close().unwrap();
        path
    }

    fn keys_of(columns: &[(&str, &[u8])]) -> Decryption {
        let mut b = FileDecryptionProperties::builder(FOOTER.to_vec());
        for (c, k) in columns {
            b = b.with_column_key(c, k.to_vec());
        }
        b.build().unwrap()
    }

    fn scan(
        path: &str,
        predicate: &str,
        columns: &[&str],
        cache: &MetadataCache,
    ) -> Result<Scan, Error> {
        let opts = ScanOptions {
            predicate: Some(predicate.into()),
            columns: Some(columns.iter().map(|c| c.to_string()).collect()),
            ..Default::default()
        };
        Scan::plan(&[path.to_string()], &opts, cache, &AtomicBool::new(false))
    }

    #[test]
    fn files_the_crate_encrypts_read_and_prune_with_their_keys() {
        for plaintext_footer in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let path = write(dir.path(), plaintext_footer);
            let all = keys_of(&[("id", ID_KEY), ("name", NAME_KEY)]);
            let cache = MetadataCache::decrypting(1 << 24, all);
            let s = scan(
                &path,
                "id BETWEEN 4050 AND 4120 AND name IS NOT NULL",
                &["id", "name"],
                &cache,
            )
            .unwrap();
            let mut got = keys(s.stream());
            got.sort_unstable();
            let want: Vec<i64> = (4050..=4120).filter(|i| i % 7 != 0).collect();
            assert_eq!(got, want, "plaintext footer: {plaintext_footer}");
            let m: std::collections::HashMap<&str, u64> = s.metrics().into_iter().collect();
            assert_eq!(m["row_groups_pruned_by_stats"], 9);
            assert!(m["rows_scanned"] <= 200, "{m:?}");

            // Without keys: a typed error naming what is needed.
            let plain = MetadataCache::new(1 << 24);
            let err = scan(&path, "id = 1", &["id"], &plain).err().unwrap();
            assert!(matches!(err, Error::Encrypted { .. }), "{err}");
            assert!(err.to_string().contains("decryption="), "{err}");

            // The key of `id` alone reads `id`, not `name`.
            let id_only = MetadataCache::decrypting(1 << 24, keys_of(&[("id", ID_KEY)]));
            let s = scan(&path, "id < 3", &["id"], &id_only).unwrap();
            assert_eq!(keys(s.stream()), vec![0, 1, 2]);
            let s = scan(&path, "id < 3", &["id", "name"], &id_only);
            let failed = match s {
                Err(e) => e,
                Ok(s) => s
                    .stream()
                    .find_map(|b| b.err())
                    .map(|e| classified(Error::from(e).in_file(&path)))
                    .unwrap(),
            };
            assert!(failed.to_string().contains("name"), "{failed}");

            // A wrong footer key is refused as such.
            let wrong = MetadataCache::decrypting(
                1 << 24,
                FileDecryptionProperties::builder(b"x123456789012345".to_vec())
                    .build()
                    .unwrap(),
            );
            let err = scan(&path, "id = 1", &["id"], &wrong).err();
            let err = match err {
                Some(e) => e,
                None => panic!("a wrong footer key read the file"),
            };
            assert!(matches!(err, Error::Encrypted { .. }), "{err}");
        }
    }
}

//! The `decryption=` argument: keys for files under Parquet modular encryption, as a dict
//! (`footer_key`, `column_keys`, `aad_prefix`, `key_retriever`, `verify_footer`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use parquet::errors::ParquetError;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use pqindex_core::{Decryption, FileDecryptionProperties, KeyRetriever, MetadataCache};

/// Keys read from `decryption=`.
pub struct DecryptionArg(pub Decryption);

impl DecryptionArg {
    /// A metadata cache of its own for one call (see `MetadataCache::decrypting`).
    pub fn cache(&self) -> MetadataCache {
        MetadataCache::decrypting(64 << 20, self.0.clone())
    }
}

/// A Python callable from key metadata (bytes) to a key (bytes). Every column chunk asks
/// for its key, so each answer is kept: a KMS is called once per key.
struct PyKeyRetriever {
    retrieve: Py<PyAny>,
    known: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
}

impl KeyRetriever for PyKeyRetriever {
    fn retrieve_key(&self, key_metadata: &[u8]) -> parquet::errors::Result<Vec<u8>> {
        let known = |k: &Mutex<HashMap<Vec<u8>, Vec<u8>>>| {
            k.lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key_metadata)
                .cloned()
        };
        if let Some(key) = known(&self.known) {
            return Ok(key);
        }
        let key = Python::attach(|py| {
            self.retrieve
                .call1(py, (PyBytes::new(py, key_metadata),))
                .and_then(|k| k.extract::<Vec<u8>>(py))
        })
        .map_err(|e| ParquetError::General(format!("the key retriever failed: {e}")))?;
        self.known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key_metadata.to_vec(), key.clone());
        Ok(key)
    }
}

fn key(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if value.is_instance_of::<PyBytes>() || value.is_instance_of::<pyo3::types::PyByteArray>() {
        return value.extract();
    }
    Err(PyTypeError::new_err(format!(
        "decryption: {what} must be bytes, not {}",
        value.get_type().name()?
    )))
}

fn config_err(e: ParquetError) -> PyErr {
    crate::error::to_py_err(pqindex_core::Error::InvalidArgument(format!(
        "decryption: {e}"
    )))
}

impl<'py> FromPyObject<'_, 'py> for DecryptionArg {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let dict = obj.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err(
                "decryption must be a dict (footer_key, column_keys, aad_prefix, key_retriever)",
            )
        })?;
        let (mut footer, mut columns, mut aad, mut retriever, mut verify) =
            (None, Vec::new(), None, None, true);
        for (k, v) in dict.iter() {
            let name: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("decryption keys must be str"))?;
            match name.as_str() {
                "footer_key" => footer = Some(key(&v, "footer_key")?),
                "aad_prefix" => aad = Some(key(&v, "aad_prefix")?),
                "verify_footer" => verify = v.extract::<bool>()?,
                "key_retriever" => {
                    if !v.is_callable() {
                        return Err(PyTypeError::new_err(
                            "decryption: key_retriever must be callable",
                        ));
                    }
                    retriever = Some(v.clone().unbind());
                }
                "column_keys" => {
                    let keys = v.cast::<PyDict>().map_err(|_| {
                        PyTypeError::new_err("decryption: column_keys must be a dict")
                    })?;
                    for (c, k) in keys.iter() {
                        let column: String = c.extract().map_err(|_| {
                            PyTypeError::new_err("decryption: column_keys' names must be str")
                        })?;
                        columns.push((column.clone(), key(&k, &format!("the key of {column}"))?));
                    }
                }
                other => {
                    return Err(crate::error::to_py_err(
                        pqindex_core::Error::InvalidArgument(format!(
                            "decryption: unknown entry {other:?} (footer_key, column_keys, \
                             aad_prefix, key_retriever, verify_footer)"
                        )),
                    ))
                }
            }
        }
        let props: Arc<FileDecryptionProperties> = match (footer, retriever) {
            (Some(_), Some(_)) => {
                return Err(crate::error::to_py_err(
                    pqindex_core::Error::InvalidArgument(
                        "decryption: give footer_key or key_retriever, not both".into(),
                    ),
                ))
            }
            (None, Some(r)) => {
                if !columns.is_empty() {
                    return Err(crate::error::to_py_err(
                        pqindex_core::Error::InvalidArgument(
                            "decryption: with a key_retriever, column keys come from it".into(),
                        ),
                    ));
                }
                let mut b =
                    FileDecryptionProperties::with_key_retriever(Arc::new(PyKeyRetriever {
                        retrieve: r,
                        known: Mutex::new(HashMap::new()),
                    }));
                if let Some(a) = aad {
                    b = b.with_aad_prefix(a);
                }
                if !verify {
                    b = b.disable_footer_signature_verification();
                }
                b.build().map_err(config_err)?
            }
            (Some(f), None) => {
                let mut b = FileDecryptionProperties::builder(f);
                for (c, k) in columns {
                    b = b.with_column_key(&c, k);
                }
                if let Some(a) = aad {
                    b = b.with_aad_prefix(a);
                }
                if !verify {
                    b = b.disable_footer_signature_verification();
                }
                b.build().map_err(config_err)?
            }
            (None, None) => {
                return Err(crate::error::to_py_err(
                    pqindex_core::Error::InvalidArgument(
                        "decryption: needs footer_key or key_retriever".into(),
                    ),
                ))
            }
        };
        Ok(DecryptionArg(props))
    }
}

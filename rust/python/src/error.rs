//! Core errors become the exception classes of `pqindex._errors`, each also a subclass of
//! the built-in a caller would catch (FileNotFoundError, ValueError, ...).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;

use pqindex_core::Error;

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn class_name(e: &Error) -> &'static str {
    match e {
        Error::NotFound { .. } => "NotFoundError",
        Error::InvalidFile { .. } => "InvalidFileError",
        Error::Encrypted { .. } => "EncryptedFileError",
        Error::InvalidIndex(_) => "InvalidIndexError",
        Error::Predicate(_) => "PredicateError",
        Error::Unsupported(_) => "UnsupportedError",
        Error::InvalidArgument(_) => "InvalidArgumentError",
        Error::Source(_) => "SourceError",
        Error::FileChanged { .. } => "FileChangedError",
        Error::Io { .. } => "StorageError",
        Error::Parquet(_) | Error::Arrow(_) => "PqindexError",
        Error::Cancelled => "KeyboardInterrupt",
    }
}

/// The Python exception for a core error.
pub fn to_py_err(e: Error) -> PyErr {
    Python::attach(|py| {
        let name = class_name(&e);
        let message = e.to_string();
        if name == "KeyboardInterrupt" {
            return pyo3::exceptions::PyKeyboardInterrupt::new_err(message);
        }
        let module = match ERRORS.get_or_try_init(py, || {
            PyModule::import(py, "pqindex._errors").map(|m| m.unbind())
        }) {
            Ok(m) => m.bind(py),
            Err(err) => return err,
        };
        match module
            .getattr(name)
            .and_then(|cls| cls.call1((message.clone(),)))
        {
            Ok(instance) => PyErr::from_value(instance),
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

/// `Result` → `PyResult`.
pub trait IntoPyResult<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py_err)
    }
}

//! Files of Delta deletion vectors, read once for all the data files whose vectors they hold.
//!
//! A Delta writer packs the deletion vectors of the data files one task rewrote into one
//! file, each vector at its offset. The kernel reads a vector by reading its whole file, so
//! a snapshot of a thousand data files whose vectors share a file read that file a thousand
//! times (a thousand whole-object GETs on an object store). Reading a snapshot's vectors
//! through [`VectorsEngine`] keeps the last few whole files read, so each is read once.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use delta_kernel::{
    Engine, EvaluationHandler, FileMeta, FileSlice, JsonHandler, KernelResult,
    KernelResultIteratorStatic, ParquetHandler, StorageHandler,
};
use url::Url;

/// Whole files kept: the vectors of one commit's data files come from a few files, met in
/// turn as the log lists its data files.
const KEPT_FILES: usize = 4;
/// A larger file of vectors is read again for each of its data files rather than held.
const KEPT_BYTES: usize = 256 << 20;

/// The engine a snapshot was read with, whose storage keeps the last whole files it read.
pub struct VectorsEngine {
    evaluation: Arc<dyn EvaluationHandler>,
    storage: Arc<dyn StorageHandler>,
    json: Arc<dyn JsonHandler>,
    parquet: Arc<dyn ParquetHandler>,
}

impl VectorsEngine {
    pub fn over(engine: &dyn Engine) -> Self {
        Self {
            evaluation: engine.evaluation_handler(),
            storage: Arc::new(KeptFiles::over(engine.storage_handler())),
            json: engine.json_handler(),
            parquet: engine.parquet_handler(),
        }
    }
}

impl Engine for VectorsEngine {
    fn evaluation_handler(&self) -> Arc<dyn EvaluationHandler> {
        self.evaluation.clone()
    }
    fn storage_handler(&self) -> Arc<dyn StorageHandler> {
        self.storage.clone()
    }
    fn json_handler(&self) -> Arc<dyn JsonHandler> {
        self.json.clone()
    }
    fn parquet_handler(&self) -> Arc<dyn ParquetHandler> {
        self.parquet.clone()
    }
}

/// A storage handler that keeps the last [`KEPT_FILES`] whole files it read.
struct KeptFiles {
    inner: Arc<dyn StorageHandler>,
    kept: Mutex<VecDeque<(Url, Bytes)>>,
}

impl KeptFiles {
    fn over(inner: Arc<dyn StorageHandler>) -> Self {
        Self {
            inner,
            kept: Mutex::new(VecDeque::with_capacity(KEPT_FILES)),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<(Url, Bytes)>> {
        self.kept.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl StorageHandler for KeptFiles {
    fn list_from(&self, path: &Url) -> KernelResult<KernelResultIteratorStatic<FileMeta>> {
        self.inner.list_from(path)
    }

    fn read_files(&self, files: Vec<FileSlice>) -> KernelResult<KernelResultIteratorStatic<Bytes>> {
        // Only a single whole file is kept (how the kernel reads a vector); the rest passes.
        let url = match files.as_slice() {
            [(url, None)] => url.clone(),
            _ => return self.inner.read_files(files),
        };
        if let Some((_, bytes)) = self.kept().iter().find(|(u, _)| *u == url) {
            return Ok(Box::new(std::iter::once(Ok(bytes.clone()))));
        }
        let mut read = self.inner.read_files(files)?;
        let Some(bytes) = read.next().transpose()? else {
            return Ok(Box::new(std::iter::empty()));
        };
        if bytes.len() <= KEPT_BYTES {
            let mut kept = self.kept();
            if kept.len() == KEPT_FILES {
                kept.pop_front();
            }
            kept.push_back((url, bytes.clone()));
        }
        Ok(Box::new(std::iter::once(Ok(bytes))))
    }

    fn copy_atomic(&self, src: &Url, dest: &Url) -> KernelResult<()> {
        self.inner.copy_atomic(src, dest)
    }

    fn put(&self, path: &Url, data: Bytes, overwrite: bool) -> KernelResult<()> {
        self.inner.put(path, data, overwrite)
    }

    fn head(&self, path: &Url) -> KernelResult<FileMeta> {
        self.inner.head(path)
    }

    fn delete(&self, path: &Url) -> KernelResult<()> {
        self.inner.delete(path)
    }
}

#[cfg(test)]
mod tests {
    use delta_kernel::object_store::local::LocalFileSystem;
    use delta_kernel_default_engine::DefaultEngineBuilder;

    use super::*;

    fn whole(storage: &dyn StorageHandler, url: &Url) -> KernelResult<Bytes> {
        let mut read = storage.read_files(vec![(url.clone(), None)])?;
        read.next().expect("one file")
    }

    /// A file is read from storage once while kept: removed from disk after its first
    /// read, it is still served, until `KEPT_FILES` others push it out.
    #[test]
    fn a_file_of_vectors_is_read_once_while_kept() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..=KEPT_FILES)
            .map(|i| dir.path().join(format!("deletion_vector_{i}.bin")))
            .collect();
        let urls: Vec<Url> = paths
            .iter()
            .enumerate()
            .map(|(i, path)| {
                std::fs::write(path, vec![i as u8; 100 + i]).unwrap();
                Url::from_file_path(path).unwrap()
            })
            .collect();
        let engine = DefaultEngineBuilder::new(Arc::new(LocalFileSystem::new())).build();
        let storage = KeptFiles::over(engine.storage_handler());
        assert_eq!(whole(&storage, &urls[0]).unwrap(), vec![0u8; 100]);
        std::fs::remove_file(&paths[0]).unwrap();
        for _ in 0..3 {
            assert_eq!(whole(&storage, &urls[0]).unwrap(), vec![0u8; 100]);
        }
        // A range is not kept: it goes to storage, where the file is gone.
        assert!(storage
            .read_files(vec![(urls[0].clone(), Some(1..3))])
            .and_then(|mut r| r.next().expect("one range"))
            .is_err());
        // Past KEPT_FILES other files the first is no longer kept.
        for (i, url) in urls.iter().enumerate().skip(1) {
            assert_eq!(whole(&storage, url).unwrap().len(), 100 + i);
        }
        assert!(whole(&storage, &urls[0]).is_err());
    }
}

//! The object store the Delta kernel reads a table's log through.
//!
//! The kernel is built on object_store 0.13, the rest of pqindex on 0.14, so the kernel
//! gets a store of its own, configured as pqindex configures its own from the same
//! storage options: the environment first (`AWS_*`, `GOOGLE_*`, `AZURE_*`), then the
//! options, pqindex's retry settings, and plain HTTP when the endpoint names it.

use std::sync::Arc;

use delta_kernel::object_store::aws::AmazonS3Builder;
use delta_kernel::object_store::azure::MicrosoftAzureBuilder;
use delta_kernel::object_store::gcp::GoogleCloudStorageBuilder;
use delta_kernel::object_store::http::HttpBuilder;
use delta_kernel::object_store::local::LocalFileSystem;
use delta_kernel::object_store::{ClientConfigKey, ObjectStore, ObjectStoreScheme, RetryConfig};
use url::Url;

use crate::error::{Error, Result};
use crate::io::object::SplitOptions;

/// A store for the kernel for the table at `url`, from pqindex storage `options`.
pub fn kernel_store(url: &Url, options: &[(String, String)]) -> Result<Arc<dyn ObjectStore>> {
    let (scheme, _) =
        ObjectStoreScheme::parse(url).map_err(|e| Error::InvalidArgument(format!("{url}: {e}")))?;
    if scheme == ObjectStoreScheme::Local {
        return Ok(Arc::new(LocalFileSystem::new()));
    }
    let split = SplitOptions::of(options)?;
    let retry = RetryConfig {
        max_retries: split.max_retries,
        retry_timeout: split.retry_timeout,
        ..RetryConfig::default()
    };
    let unknown = |k: &str| {
        Error::InvalidArgument(format!(
            "unknown storage option {k:?} for {}:// (see the object_store configuration keys)",
            url.scheme()
        ))
    };
    let built =
        |e: delta_kernel::object_store::Error| Error::InvalidArgument(format!("{url}: {e}"));
    let passed = &split.passed;
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            let mut b = AmazonS3Builder::from_env().with_url(url.as_str());
            for (k, v) in passed {
                b = b.with_config(k.parse().map_err(|_| unknown(k))?, v);
            }
            if split.http_endpoint() {
                b = b.with_allow_http(true);
            }
            Arc::new(b.with_retry(retry).build().map_err(built)?)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let mut b = GoogleCloudStorageBuilder::from_env().with_url(url.as_str());
            for (k, v) in passed {
                b = b.with_config(k.parse().map_err(|_| unknown(k))?, v);
            }
            Arc::new(b.with_retry(retry).build().map_err(built)?)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let mut b = MicrosoftAzureBuilder::from_env().with_url(url.as_str());
            for (k, v) in passed {
                b = b.with_config(k.parse().map_err(|_| unknown(k))?, v);
            }
            Arc::new(b.with_retry(retry).build().map_err(built)?)
        }
        ObjectStoreScheme::Http => {
            let base = &url[..url::Position::BeforePath];
            let mut b = HttpBuilder::new().with_url(base);
            for (k, v) in passed {
                let key: ClientConfigKey = k.parse().map_err(|_| unknown(k))?;
                b = b.with_config(key, v);
            }
            Arc::new(b.with_retry(retry).build().map_err(built)?)
        }
        other => {
            return Err(Error::unsupported(format!(
                "{url}: {other:?} URLs are not read through an object store"
            )))
        }
    };
    Ok(store)
}

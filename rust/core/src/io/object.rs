//! Object stores (S3 and S3-compatible, GCS, Azure, HTTP) through the `object_store` crate.
//!
//! Every request is a round trip of tens of milliseconds, so callers fetch few, large
//! ranges: the footer with a suffix-sized hint, then coalesced ranges issued concurrently
//! with a bound on how many are in flight. Reads name the ETag the plan saw (`If-Match`), so
//! an object replaced after planning fails the read instead of mixing two versions.
//!
//! Stores are configured per bucket (`configure`), the way delta-rs and obstore take
//! `storage_options`; a bucket never configured is reached with the environment's settings
//! and the provider's standard credential chain.
//!
//! Stores fail: every request runs under `attempts::run`, which adds to object_store's
//! retries what they cannot see (a body shorter than its range, a listing cut off) and
//! ends each request with its retries within `retry_timeout`. A replaced object is put
//! with `If-Match` on the ETag it was read at, so of two concurrent writers one fails.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::http::HttpBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{
    ClientConfigKey, GetOptions, GetRange, ObjectMeta, ObjectStore, ObjectStoreScheme, PutMode,
    PutOptions, RetryConfig, UpdateVersion,
};
use url::Url;

use crate::error::{Error, Result};
use crate::io::attempts::{self, CountingConnector, Failure, Policy, Ran, RunError};
use crate::io::range_cache::RangeCache;
use crate::io::{FileIdentity, IoStats};

/// How reads from one store are shaped. Set with `storage_options` keys of the same names.
#[derive(Debug, Clone)]
pub struct ReadSettings {
    /// Requests one scan may have in flight at once.
    pub max_in_flight: usize,
    /// Ranges closer than this are fetched as one request: on an object store a request
    /// costs as much as reading about a megabyte.
    pub coalesce_gap: u64,
    /// Bytes fetched from the end of an object to find its footer; big enough to take most
    /// footers and their page index in the same request.
    pub footer_hint: u64,
    /// How long a scan may reuse an earlier scan's listing of the same prefix. Zero (the
    /// default) lists every time, so added and deleted objects are seen at once; a longer
    /// time saves the listing's round trip on repeated queries.
    pub list_cache_ttl: Duration,
    /// Bytes of fetched ranges kept in memory for later scans (0, the default: none).
    pub data_cache_size: u64,
}

impl Default for ReadSettings {
    fn default() -> Self {
        ReadSettings {
            max_in_flight: 16,
            coalesce_gap: 1024 * 1024,
            footer_hint: 512 * 1024,
            list_cache_ttl: Duration::ZERO,
            data_cache_size: 0,
        }
    }
}

/// The objects below a prefix: keys relative to it, and identities.
pub type Listed = Arc<Vec<(String, FileIdentity)>>;

/// One configured store: a bucket, container or HTTP host.
#[derive(Debug)]
pub struct Store {
    pub inner: Arc<dyn ObjectStore>,
    pub settings: ReadSettings,
    /// The options it was built from.
    options: Vec<(String, String)>,
    /// The process that built it.
    pid: u32,
    /// Recent listings by prefix key, kept `list_cache_ttl`; any write through this
    /// store drops them all.
    listings: Mutex<HashMap<String, (Instant, Listed)>>,
    /// Fetched ranges kept for later scans, up to `data_cache_size` bytes.
    pub data: Mutex<RangeCache>,
    /// How requests are retried above object_store, and the deadline of each.
    policy: Policy,
}

impl Store {
    fn forget_listings(&self) {
        self.listings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

/// An object named by a URL: its store and its key in the store.
#[derive(Debug, Clone)]
pub struct ObjectLocation {
    pub store: Arc<Store>,
    pub key: ObjectPath,
    /// The URL as the caller spelled it (`s3a://` stays `s3a://`).
    pub url: String,
}

/// Whether `path` names an object in a store rather than a local file.
pub fn is_remote(path: &str) -> bool {
    match path.split_once("://") {
        Some((scheme, _)) => {
            scheme != "file"
                && !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        }
        None => false,
    }
}

/// The registry key of the store holding `url`: scheme and authority, with `s3a` read as `s3`.
fn store_key(url: &Url) -> String {
    let scheme = match url.scheme() {
        "s3a" => "s3",
        s => s,
    };
    format!("{scheme}://{}", url.authority())
}

fn parse_url(path: &str) -> Result<Url> {
    Url::parse(path).map_err(|e| Error::InvalidArgument(format!("{path}: not a valid URL: {e}")))
}

fn registry() -> &'static Mutex<HashMap<String, Arc<Store>>> {
    static STORES: std::sync::OnceLock<Mutex<HashMap<String, Arc<Store>>>> =
        std::sync::OnceLock::new();
    STORES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Set the options for the store holding `url` (its bucket, container or host). Later
/// reads of any object in that store use them. Options the store does not know are
/// refused rather than ignored: a misspelt endpoint would otherwise reach AWS.
///
/// The same options again keep the store as it is: its connections (a TLS handshake
/// saved per scan) and its cached listings.
pub fn configure(url: &str, options: &[(String, String)]) -> Result<()> {
    let parsed = parse_url(url)?;
    let key = store_key(&parsed);
    let unchanged = |s: &Arc<Store>| s.options == options && s.pid == std::process::id();
    if registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .is_some_and(unchanged)
    {
        return Ok(());
    }
    let store = Arc::new(build_store(&parsed, options)?);
    registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, store);
    Ok(())
}

/// `configure` each store that `urls` name, once.
pub fn configure_all(urls: &[&str], options: &[(String, String)]) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for u in urls {
        if seen.insert(store_key(&parse_url(u)?)) {
            configure(u, options)?;
        }
    }
    Ok(())
}

/// The store and key of `url`, configured from the environment on first use.
pub fn locate(url: &str) -> Result<ObjectLocation> {
    let parsed = parse_url(url)?;
    let key = store_key(&parsed);
    let store = {
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        match reg.get(&key) {
            Some(s) if s.pid == std::process::id() => s.clone(),
            // A forked child rebuilds its parent's store: pooled connections belong to
            // the parent's runtime.
            known => {
                let options = known.map(|s| s.options.clone()).unwrap_or_default();
                let s = Arc::new(build_store(&parsed, &options)?);
                reg.insert(key, s.clone());
                s
            }
        }
    };
    let (_, path) = ObjectStoreScheme::parse(&parsed)
        .map_err(|e| Error::InvalidArgument(format!("{url}: {e}")))?;
    Ok(ObjectLocation {
        store,
        key: path,
        url: url.trim_end_matches('/').to_string(),
    })
}

fn option_error(key: &str, value: &str, e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("storage option {key}={value:?}: {e}"))
}

/// A duration given as a number of seconds.
fn seconds(key: &str, value: &str) -> Result<Duration> {
    let secs = value
        .parse::<f64>()
        .map_err(|e| option_error(key, value, e))?;
    if !(secs.is_finite() && (0.0..=1e9).contains(&secs)) {
        return Err(option_error(key, value, "not a number of seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A duration given as seconds (`2.5`) or with a unit (`1500ms`, `2s`, `1m`, `1h`).
fn duration(key: &str, value: &str) -> Result<Duration> {
    let v = value.trim();
    let split = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => {
            return Err(option_error(
                key,
                value,
                "not a duration (seconds, or 500ms, 2s, 1m)",
            ))
        }
    };
    let secs = number
        .trim()
        .parse::<f64>()
        .map_err(|e| option_error(key, value, e))?
        * scale;
    if !(secs.is_finite() && (0.0..=1e9).contains(&secs)) {
        return Err(option_error(key, value, "not a duration"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Storage options split into pqindex's own (read settings, retries) and the ones passed
/// to the store's builder (lower-cased object_store keys).
pub(crate) struct SplitOptions {
    pub settings: ReadSettings,
    pub max_retries: usize,
    pub retry_timeout: Duration,
    pub passed: Vec<(String, String)>,
}

/// The client's timeouts, which object_store takes as durations with units: a plain
/// number is read as seconds, like pqindex's other durations.
const TIMEOUT_KEYS: [&str; 3] = ["timeout", "connect_timeout", "read_timeout"];

/// One attempt's limit when the caller sets none: object_store's 30 s, or half of
/// `retry_timeout` when that is shorter, so a stalled attempt leaves time for a retry.
fn default_timeout(retry_timeout: Duration) -> Duration {
    (retry_timeout / 2).clamp(Duration::from_secs(1), Duration::from_secs(30))
}

impl SplitOptions {
    pub(crate) fn of(options: &[(String, String)]) -> Result<SplitOptions> {
        let mut out = SplitOptions {
            settings: ReadSettings::default(),
            max_retries: 5,
            retry_timeout: Duration::from_secs(60),
            passed: Vec::new(),
        };
        for (k, v) in options {
            let key = k.to_ascii_lowercase();
            let number = || v.parse::<u64>().map_err(|e| option_error(k, v, e));
            let settings = &mut out.settings;
            match key.as_str() {
                "max_in_flight" => settings.max_in_flight = number()?.clamp(1, 1024) as usize,
                "coalesce_gap" => settings.coalesce_gap = number()?,
                "footer_hint" => settings.footer_hint = number()?.max(8),
                "max_retries" => out.max_retries = number()? as usize,
                "retry_timeout" => out.retry_timeout = seconds(k, v)?,
                "list_cache_ttl" => settings.list_cache_ttl = seconds(k, v)?,
                "data_cache_size" => settings.data_cache_size = number()?,
                k if TIMEOUT_KEYS.contains(&k) => {
                    let ms = duration(k, v)?.as_millis().max(1);
                    out.passed.push((key, format!("{ms}ms")));
                }
                _ => out.passed.push((key, v.clone())),
            }
        }
        if !out.passed.iter().any(|(k, _)| k == "timeout") {
            let ms = default_timeout(out.retry_timeout).as_millis();
            out.passed.push(("timeout".into(), format!("{ms}ms")));
        }
        Ok(out)
    }

    /// How pqindex retries above object_store, and each request's deadline.
    pub(crate) fn policy(&self) -> Policy {
        Policy {
            max_retries: self.max_retries,
            deadline: self.retry_timeout,
        }
    }

    /// Whether the caller named a plain-HTTP endpoint (MinIO, a local test server): then
    /// HTTP is what they asked for.
    pub(crate) fn http_endpoint(&self) -> bool {
        self.passed
            .iter()
            .find(|(k, _)| k.contains("endpoint") && !k.contains("sts"))
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var("AWS_ENDPOINT_URL").ok())
            .is_some_and(|e| e.starts_with("http://"))
    }
}

fn build_store(url: &Url, options: &[(String, String)]) -> Result<Store> {
    let split = SplitOptions::of(options)?;
    let retry = RetryConfig {
        max_retries: split.max_retries,
        retry_timeout: split.retry_timeout,
        ..RetryConfig::default()
    };
    let http_endpoint = split.http_endpoint();
    let policy = split.policy();
    let SplitOptions {
        settings, passed, ..
    } = split;
    let (scheme, _) =
        ObjectStoreScheme::parse(url).map_err(|e| Error::InvalidArgument(format!("{url}: {e}")))?;
    let unknown = |k: &str| {
        Error::InvalidArgument(format!(
            "unknown storage option {k:?} for {}:// (see the object_store configuration keys)",
            url.scheme()
        ))
    };
    let inner: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            let mut b = AmazonS3Builder::from_env().with_url(url.as_str());
            for (k, v) in &passed {
                let key = k.parse().map_err(|_| unknown(k))?;
                b = b.with_config(key, v);
            }
            if http_endpoint {
                b = b.with_allow_http(true);
            }
            let b = b.with_http_connector(CountingConnector);
            Arc::new(b.with_retry(retry).build().map_err(store_error(url))?)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            let mut b = GoogleCloudStorageBuilder::from_env().with_url(url.as_str());
            for (k, v) in &passed {
                b = b.with_config(k.parse().map_err(|_| unknown(k))?, v);
            }
            let b = b.with_http_connector(CountingConnector);
            Arc::new(b.with_retry(retry).build().map_err(store_error(url))?)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            let mut b = MicrosoftAzureBuilder::from_env().with_url(url.as_str());
            for (k, v) in &passed {
                b = b.with_config(k.parse().map_err(|_| unknown(k))?, v);
            }
            let b = b.with_http_connector(CountingConnector);
            Arc::new(b.with_retry(retry).build().map_err(store_error(url))?)
        }
        ObjectStoreScheme::Http => {
            let base = &url[..url::Position::BeforePath];
            let mut b = HttpBuilder::new().with_url(base);
            for (k, v) in &passed {
                let key: ClientConfigKey = k.parse().map_err(|_| unknown(k))?;
                b = b.with_config(key, v);
            }
            let b = b.with_http_connector(CountingConnector);
            Arc::new(b.with_retry(retry).build().map_err(store_error(url))?)
        }
        other => {
            return Err(Error::unsupported(format!(
                "{url}: {other:?} URLs are not read through an object store; give a local path"
            )))
        }
    };
    Ok(Store {
        inner,
        data: Mutex::new(RangeCache::new(settings.data_cache_size)),
        settings,
        options: options.to_vec(),
        pid: std::process::id(),
        listings: Mutex::default(),
        policy,
    })
}

fn store_error(url: &Url) -> impl Fn(object_store::Error) -> Error + '_ {
    move |e| Error::InvalidArgument(format!("{url}: {e}"))
}

/// Turn a store failure on `url` into the error kind a caller can act on.
pub fn map_error(url: &str, e: object_store::Error) -> Error {
    use std::io::ErrorKind;
    let io = |kind: ErrorKind, e: object_store::Error| Error::Io {
        path: url.to_string(),
        source: std::io::Error::new(kind, e),
    };
    match e {
        object_store::Error::NotFound { .. } => Error::NotFound {
            path: url.to_string(),
        },
        object_store::Error::Precondition { .. } | object_store::Error::NotModified { .. } => {
            Error::FileChanged {
                path: url.to_string(),
                what: "ETag".to_string(),
            }
        }
        e @ (object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. }) => io(ErrorKind::PermissionDenied, e),
        e => io(ErrorKind::Other, e),
    }
}

/// The runtime every object-store request runs on. A child process (Spark forks its Python
/// workers) cannot use its parent's runtime threads, so it builds its own.
fn runtime() -> Arc<tokio::runtime::Runtime> {
    static RT: Mutex<Option<(u32, Arc<tokio::runtime::Runtime>)>> = Mutex::new(None);
    let mut rt = RT.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    match rt.as_ref() {
        Some((p, r)) if *p == pid => r.clone(),
        _ => {
            if let Some(old) = rt.take() {
                // Its worker threads do not exist in this process; dropping it would wait
                // for them.
                std::mem::forget(old);
            }
            let r = Arc::new(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("pqindex-io")
                    .enable_all()
                    .build()
                    .expect("a tokio runtime can be built"),
            );
            *rt = Some((pid, r.clone()));
            r
        }
    }
}

/// Run `f` on the I/O runtime and wait for it. A caller on a thread of another tokio
/// runtime (an async engine embedding pqindex) cannot block on a runtime there (tokio
/// panics), so the wait moves to a thread of its own.
pub fn block_on<F>(f: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_err() {
        return runtime().block_on(f);
    }
    std::thread::scope(|s| {
        s.spawn(|| runtime().block_on(f))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// A body that failed after a success status (object_store resumes it, and can give up
/// or over-reach, asking for an empty range past the end): the whole read is worth
/// another try.
fn body_failed(e: object_store::Error) -> Failure {
    Failure::Garbled(format!("the answer's body failed: {e}"))
}

/// Bytes of an object fetched per request when it is copied whole.
const DOWNLOAD_CHUNK: u64 = 8 * 1024 * 1024;
/// Objects up to this size are uploaded in one request (and can be put conditionally);
/// larger ones in parts.
const PART: usize = 16 * 1024 * 1024;

impl ObjectLocation {
    pub fn identity_of(&self, meta: &ObjectMeta) -> FileIdentity {
        FileIdentity {
            path: self.url.clone(),
            size: meta.size,
            mtime_ns: meta.last_modified.timestamp_nanos_opt().unwrap_or_default(),
            ino: 0,
            ctime_ns: 0,
            etag: meta.e_tag.clone().or_else(|| meta.version.clone()),
        }
    }

    /// Run one logical request under the store's retry policy.
    async fn run<T, F, Fut>(&self, op: F) -> Ran<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, Failure>>,
    {
        attempts::run(self.store.policy, op).await
    }

    /// The caller's error for a request that failed for good. A storage error says how
    /// many attempts were made, and in how long.
    fn failed(&self, e: RunError) -> Error {
        let (failure, status, attempts, after) = match e {
            RunError::TimedOut { after, attempts } => {
                return attempts::timed_out(&self.url, after, attempts, self.store.policy.deadline)
            }
            RunError::Failed {
                failure,
                status,
                attempts,
                after,
            } => (failure, status, attempts, after),
        };
        let error = match failure {
            // An error answer whose body was lost still has its status.
            Failure::Store(object_store::Error::Generic { .. }) if status == 412 => self.changed(),
            Failure::Store(object_store::Error::Generic { .. }) if status == 404 => {
                self.stale(Error::NotFound {
                    path: self.url.clone(),
                })
            }
            Failure::Store(e) => self.stale(map_error(&self.url, e)),
            Failure::Garbled(why) => Error::Io {
                path: self.url.clone(),
                source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, why),
            },
            Failure::Final(e) => return self.stale(e),
        };
        match error {
            Error::Io { path, source } => Error::Io {
                path,
                source: std::io::Error::new(
                    source.kind(),
                    format!(
                        "{source} [{attempts} attempts in {:.1} s]",
                        after.as_secs_f64()
                    ),
                ),
            },
            other => other,
        }
    }

    /// The object's identity, from one HEAD request.
    pub fn head(&self) -> Result<FileIdentity> {
        self.head_meta().map(|meta| self.identity_of(&meta))
    }

    /// What one HEAD request says of the object (its store version id included).
    fn head_meta(&self) -> Result<ObjectMeta> {
        let ran = block_on(self.run(|| async {
            let opts = GetOptions {
                head: true,
                ..GetOptions::default()
            };
            Ok(self.store.inner.get_opts(&self.key, opts).await?.meta)
        }));
        ran.result.map_err(|e| self.failed(e))
    }

    /// Every object below this location, as a scan sees it: from a listing younger than
    /// `list_cache_ttl` when there is one (then `false`: no request made).
    pub fn list_for_scan(&self) -> Result<(Listed, bool)> {
        let ttl = self.store.settings.list_cache_ttl;
        let key = self.key.as_ref().to_string();
        if !ttl.is_zero() {
            let cached = self
                .store
                .listings
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some((at, listed)) = cached.get(&key) {
                if at.elapsed() < ttl {
                    return Ok((listed.clone(), false));
                }
            }
        }
        let at = Instant::now();
        let listed = Arc::new(self.list()?);
        if !ttl.is_zero() {
            let mut cached = self
                .store
                .listings
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            cached.retain(|_, (t, _)| t.elapsed() < ttl);
            cached.insert(key, (at, listed.clone()));
        }
        Ok((listed, true))
    }

    /// Every object below the key, listed again from the start if a page goes wrong. A
    /// listing may take many pages, so the deadline is per page, not for the whole.
    async fn list_metas(&self) -> Result<Vec<ObjectMeta>> {
        let prefix = (!self.key.as_ref().is_empty()).then_some(&self.key);
        let deadline = self.store.policy.deadline;
        let policy = Policy {
            deadline: Duration::MAX,
            ..self.store.policy
        };
        let ran = attempts::run(policy, || async {
            let mut pages = self.store.inner.list(prefix);
            let mut out = Vec::new();
            loop {
                let started = Instant::now();
                match tokio::time::timeout(deadline, pages.next()).await {
                    Ok(Some(meta)) => out.push(meta?),
                    Ok(None) => return Ok(out),
                    Err(_) => {
                        let e = attempts::timed_out(&self.url, started.elapsed(), 1, deadline);
                        return Err(Failure::Final(e));
                    }
                }
            }
        })
        .await;
        ran.result.map_err(|e| self.failed(e))
    }

    /// Every object below this location (as a directory), with keys relative to it.
    pub fn list(&self) -> Result<Vec<(String, FileIdentity)>> {
        let metas = block_on(self.list_metas())?;
        let base = self.key.as_ref();
        let mut out = Vec::with_capacity(metas.len());
        for m in metas {
            let full = m.location.as_ref();
            let rel = if base.is_empty() {
                full
            } else {
                match full.strip_prefix(base).and_then(|r| r.strip_prefix('/')) {
                    Some(r) => r,
                    None => continue,
                }
            };
            let child = ObjectLocation {
                store: self.store.clone(),
                key: m.location.clone(),
                url: format!("{}/{}", self.url, rel),
            };
            out.push((rel.to_string(), child.identity_of(&m)));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// An object gone or replaced since it was listed: cached listings are out of date,
    /// so the next scan lists again.
    fn stale(&self, e: Error) -> Error {
        if matches!(e, Error::NotFound { .. } | Error::FileChanged { .. }) {
            self.store.forget_listings();
        }
        e
    }

    fn changed(&self) -> Error {
        self.stale(Error::FileChanged {
            path: self.url.clone(),
            what: "ETag".to_string(),
        })
    }

    fn get_options(&self, etag: Option<&str>, range: GetRange) -> GetOptions {
        GetOptions {
            if_match: etag.map(str::to_string),
            range: Some(range),
            ..GetOptions::default()
        }
    }

    /// One run of a ranged read of the version `etag`.
    async fn get_range_once(
        &self,
        etag: Option<&str>,
        range: Range<u64>,
    ) -> std::result::Result<Bytes, Failure> {
        let want = range.end - range.start;
        let opts = self.get_options(etag, GetRange::Bounded(range.clone()));
        let r = self.store.inner.get_opts(&self.key, opts).await?;
        // Stores that ignore If-Match still name the version they served.
        if let (Some(want), Some(got)) = (etag, r.meta.e_tag.as_deref()) {
            if want != got {
                return Err(Failure::Final(self.changed()));
            }
        }
        let bytes = r.bytes().await.map_err(body_failed)?;
        if bytes.len() as u64 != want {
            return Err(Failure::Garbled(format!(
                "the store sent {} bytes for a read of {want} bytes at offset {} (a truncated answer, or a wrong Content-Length)",
                bytes.len(),
                range.start
            )));
        }
        Ok(bytes)
    }

    /// Exactly `range` of the version named by `etag`, with the retries it took. A short
    /// answer is retried, never returned as a shorter buffer.
    async fn get_range_counted(
        &self,
        etag: Option<&str>,
        range: Range<u64>,
        stats: Option<&IoStats>,
    ) -> Result<Bytes> {
        let ran = self.run(|| self.get_range_once(etag, range.clone())).await;
        if let Some(stats) = stats {
            stats.record_retries(ran.retries);
        }
        ran.result.map_err(|e| self.failed(e))
    }

    /// Exactly `range` of the version named by `etag`; retries are added to `stats`.
    pub fn get_range(
        &self,
        etag: Option<&str>,
        range: Range<u64>,
        stats: &IoStats,
    ) -> Result<Bytes> {
        block_on(self.get_range_counted(etag, range, Some(stats)))
    }

    /// The store's data cache, when it has one and `etag` names the version to look for.
    fn data_cache<'e>(
        &self,
        etag: Option<&'e str>,
    ) -> Option<(std::sync::MutexGuard<'_, RangeCache>, &'e str)> {
        let etag = etag.filter(|_| self.store.settings.data_cache_size > 0)?;
        Some((
            self.store.data.lock().unwrap_or_else(|e| e.into_inner()),
            etag,
        ))
    }

    /// Take out of `todo` the ranges an earlier scan fetched from version `etag`; their
    /// bytes, by start offset. They cost no request.
    pub fn take_cached(&self, etag: Option<&str>, todo: &mut Vec<Range<u64>>) -> Vec<(u64, Bytes)> {
        let mut hits = Vec::new();
        if let Some((data, etag)) = self.data_cache(etag) {
            todo.retain(|r| match data.get(&self.url, etag, r) {
                Some(b) => {
                    hits.push((r.start, b));
                    false
                }
                None => true,
            });
        }
        hits
    }

    /// Keep ranges fetched from version `etag` for later scans, if the store caches data.
    pub fn remember(&self, etag: Option<&str>, ranges: &[Range<u64>], fetched: &[Bytes]) {
        if let Some((mut data, etag)) = self.data_cache(etag) {
            for (r, b) in ranges.iter().zip(fetched) {
                data.insert(&self.url, etag, r.start, b.clone());
            }
        }
    }

    /// Fetch every range, at most `max_in_flight` requests at a time; results in order.
    /// Retries are added to `stats`.
    pub fn get_ranges(
        &self,
        etag: Option<&str>,
        ranges: &[Range<u64>],
        stats: &IoStats,
    ) -> Result<Vec<Bytes>> {
        let n = self.store.settings.max_in_flight;
        block_on(
            futures::stream::iter(ranges.iter().cloned())
                .map(|r| self.get_range_counted(etag, r, Some(stats)))
                .buffered(n)
                .try_collect(),
        )
    }

    /// Copy the object into `dest` by ranged reads of one version; returns the identity
    /// of the version copied. Each read is retried on its own, so a long copy survives
    /// a broken connection without starting again.
    pub fn download(&self, dest: &std::path::Path) -> Result<FileIdentity> {
        self.download_meta(dest).map(|m| self.identity_of(&m))
    }

    /// `download`, returning what the store said of the version copied.
    fn download_meta(&self, dest: &std::path::Path) -> Result<ObjectMeta> {
        use std::io::Write;
        let shown = dest.to_string_lossy().into_owned();
        let meta = self.head_meta()?;
        let identity = self.identity_of(&meta);
        let etag = identity.etag.as_deref();
        let mut out =
            std::io::BufWriter::new(std::fs::File::create(dest).map_err(|e| Error::io(&shown, e))?);
        let chunks = (0..identity.size)
            .step_by(DOWNLOAD_CHUNK as usize)
            .map(|at| at..(at + DOWNLOAD_CHUNK).min(identity.size));
        let in_flight = self.store.settings.max_in_flight.min(4);
        block_on(async {
            let mut fetched = futures::stream::iter(chunks)
                .map(|r| self.get_range_counted(etag, r, None))
                .buffered(in_flight);
            while let Some(chunk) = fetched.next().await {
                out.write_all(&chunk?).map_err(|e| Error::io(&shown, e))?;
            }
            Ok::<_, Error>(())
        })?;
        out.flush().map_err(|e| Error::io(&shown, e))?;
        Ok(meta)
    }

    /// The whole object with its ETag. It is asked for as the range `bytes=0-`: the answer
    /// then names the object's size (Content-Range) apart from the body's length, so a
    /// short body cannot pass for the whole object. A store that refuses the range (an
    /// empty object has no byte 0) or ignores it is asked plainly.
    async fn get_whole_once(&self) -> std::result::Result<(Bytes, Option<String>), Failure> {
        let ranged = GetOptions {
            range: Some(GetRange::Offset(0)),
            ..GetOptions::default()
        };
        let r = match self.store.inner.get_opts(&self.key, ranged).await {
            Ok(r) => r,
            Err(object_store::Error::Generic { .. })
                if matches!(attempts::last_status(), 200 | 416) =>
            {
                self.store
                    .inner
                    .get_opts(&self.key, GetOptions::default())
                    .await?
            }
            Err(e) => return Err(e.into()),
        };
        let want = r.range.end - r.range.start;
        let etag = r.meta.e_tag.clone();
        let bytes = r.bytes().await.map_err(body_failed)?;
        if bytes.len() as u64 != want {
            return Err(Failure::Garbled(format!(
                "the store sent {} of the object's {want} bytes",
                bytes.len()
            )));
        }
        Ok((bytes, etag))
    }

    /// The whole object and its ETag, or `None` when there is none.
    async fn get_whole_tagged(&self) -> Result<Option<(Bytes, Option<String>)>> {
        let ran = self.run(|| self.get_whole_once()).await;
        match ran.result {
            Ok(got) => Ok(Some(got)),
            Err(e) if matches!(e.store_error(), Some(object_store::Error::NotFound { .. })) => {
                Ok(None)
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    /// The whole object, or `None` when there is none.
    pub fn get_whole(&self) -> Result<Option<Bytes>> {
        Ok(block_on(self.get_whole_tagged())?.map(|(b, _)| b))
    }

    /// Put `data` as the whole object, unconditionally (safe to repeat).
    async fn put_overwrite(&self, data: &Bytes) -> Result<()> {
        use object_store::ObjectStoreExt;
        let ran = self
            .run(|| async { Ok(self.store.inner.put(&self.key, data.clone().into()).await?) })
            .await;
        ran.result.map(|_| ()).map_err(|e| self.failed(e))
    }

    /// Put `data` as the whole object if it is still the version `etag`. A put whose
    /// answer is lost may have landed: the object is then compared with `data`, so a
    /// repeated put refused by its own success is still a success. `Ok(false)`: the store
    /// cannot put conditionally.
    async fn put_if_match(&self, data: &Bytes, expected: &ObjectMeta) -> Result<bool> {
        let etag = self.identity_of(expected).etag;
        let ran = self
            .run(|| async {
                let mode = PutMode::Update(UpdateVersion {
                    e_tag: expected.e_tag.clone(),
                    version: expected.version.clone(),
                });
                let opts = PutOptions {
                    mode,
                    ..PutOptions::default()
                };
                Ok(self
                    .store
                    .inner
                    .put_opts(&self.key, data.clone().into(), opts)
                    .await?)
            })
            .await;
        let failure = match ran.result {
            Ok(_) => return Ok(true),
            Err(e)
                if matches!(
                    e.store_error(),
                    Some(object_store::Error::NotImplemented { .. })
                ) =>
            {
                return Ok(false)
            }
            Err(e) => e,
        };
        let unsure = matches!(failure, RunError::TimedOut { .. })
            || matches!(
                failure.store_error(),
                Some(
                    object_store::Error::Precondition { .. } | object_store::Error::Generic { .. }
                )
            );
        if unsure {
            match self.get_whole_tagged().await? {
                Some((now, _)) if now == *data => return Ok(true),
                Some((_, now)) if now.is_some() && now == etag => {}
                _ => return Err(self.changed()),
            }
        }
        Err(self.failed(failure))
    }

    /// Replace the object with the file at `src` in one upload (multipart above one part),
    /// streamed from disk. S3 and its kin make the new object visible at once when the
    /// upload completes: readers see the old object or the new one. A failed upload is
    /// aborted and leaves the old object.
    pub fn upload(&self, src: &std::path::Path) -> Result<FileIdentity> {
        self.upload_over(src, None)
    }

    /// `upload`, replacing only the version `expected` (the one a rewrite read). Objects
    /// of one part are put with `If-Match` where the store supports it, so a concurrent
    /// writer's version is never overwritten: `FileChanged` instead. Larger objects, and
    /// stores without conditional puts, are checked with a HEAD just before the upload.
    fn upload_over(
        &self,
        src: &std::path::Path,
        expected: Option<&ObjectMeta>,
    ) -> Result<FileIdentity> {
        use std::io::Read;
        let shown = src.to_string_lossy().into_owned();
        let mut file = std::fs::File::open(src).map_err(|e| Error::io(&shown, e))?;
        let size = file.metadata().map_err(|e| Error::io(&shown, e))?.len();
        self.store.forget_listings();
        let read_part = |file: &mut std::fs::File| -> Result<Bytes> {
            let mut buf = Vec::with_capacity(PART.min(size as usize));
            file.by_ref()
                .take(PART as u64)
                .read_to_end(&mut buf)
                .map_err(|e| Error::io(&shown, e))?;
            Ok(Bytes::from(buf))
        };
        let check = |expected: Option<&ObjectMeta>| -> Result<()> {
            if let Some(before) = expected {
                if let Some(what) = self.head()?.difference(&self.identity_of(before)) {
                    return Err(self.stale(Error::FileChanged {
                        path: self.url.clone(),
                        what: what.to_string(),
                    }));
                }
            }
            Ok(())
        };
        let versioned = expected.filter(|e| e.e_tag.is_some() || e.version.is_some());
        if size <= PART as u64 {
            let data = read_part(&mut file)?;
            let put = match versioned {
                Some(expected) => block_on(self.put_if_match(&data, expected))?,
                None => false,
            };
            if !put {
                check(expected)?;
                block_on(self.put_overwrite(&data))?;
            }
        } else {
            check(expected)?;
            block_on(self.put_parts(&mut file, size, read_part))?;
        }
        self.head()
    }

    /// A multipart upload of `size` bytes read by `read_part`; aborted when any step
    /// fails or outlasts the deadline, which leaves the old object.
    async fn put_parts(
        &self,
        file: &mut std::fs::File,
        size: u64,
        read_part: impl Fn(&mut std::fs::File) -> Result<Bytes>,
    ) -> Result<()> {
        use object_store::ObjectStoreExt;
        let deadline = self.store.policy.deadline;
        let within = |step: &'static str| {
            let url = self.url.clone();
            move |_| attempts::timed_out(&format!("{url} ({step})"), deadline, 1, deadline)
        };
        let mut up = tokio::time::timeout(deadline, self.store.inner.put_multipart(&self.key))
            .await
            .map_err(within("start"))?
            .map_err(|e| map_error(&self.url, e))?;
        let mut sent = 0u64;
        let done: Result<()> = async {
            while sent < size {
                let part = read_part(file)?;
                if part.is_empty() {
                    return Err(Error::invalid_file(
                        &self.url,
                        "the local copy shrank while it was uploaded",
                    ));
                }
                sent += part.len() as u64;
                tokio::time::timeout(deadline, up.put_part(part.into()))
                    .await
                    .map_err(within("part"))?
                    .map_err(|e| map_error(&self.url, e))?;
            }
            tokio::time::timeout(deadline, up.complete())
                .await
                .map_err(within("complete"))?
                .map_err(|e| map_error(&self.url, e))?;
            Ok(())
        }
        .await;
        if done.is_err() {
            let _ = tokio::time::timeout(deadline, up.abort()).await;
        }
        done
    }

    /// Delete the object (a missing object is not an error: the aim is its absence).
    pub fn delete(&self) -> Result<()> {
        use object_store::ObjectStoreExt;
        self.store.forget_listings();
        let ran = block_on(self.run(|| async { Ok(self.store.inner.delete(&self.key).await?) }));
        match ran.result {
            Ok(()) => Ok(()),
            Err(e) if matches!(e.store_error(), Some(object_store::Error::NotFound { .. })) => {
                Ok(())
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    /// Change the object through a local working copy: download it, let `edit` rewrite the
    /// copy, and upload the result as the new object. The object must still be the version
    /// downloaded when the upload lands; a concurrent replacement fails the edit
    /// (`FileChanged`) instead of being overwritten.
    pub fn rewrite<T>(&self, edit: impl FnOnce(&str) -> Result<T>) -> Result<T> {
        let dir = scratch_dir()?;
        let name = self.key.filename().unwrap_or("object.parquet");
        let local = dir.path().join(name);
        let before = self.download_meta(&local)?;
        let out = edit(&local.to_string_lossy())?;
        self.upload_over(&local, Some(&before))?;
        Ok(out)
    }
}

/// A private scratch directory for local working copies, removed when dropped.
pub fn scratch_dir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("pqindex-")
        .tempdir()
        .map_err(|e| Error::io(&std::env::temp_dir().to_string_lossy(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_on_io_from_inside_another_runtime() {
        // An async engine calling the core from its own runtime, both flavours.
        let io = async {
            tokio::task::yield_now().await;
            7
        };
        assert_eq!(block_on(io), 7);
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(current.block_on(async { block_on(async { 8 }) }), 8);
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let got = multi.block_on(async {
            tokio::spawn(async {
                block_on(async {
                    tokio::task::yield_now().await;
                    9
                })
            })
            .await
            .unwrap()
        });
        assert_eq!(got, 9);
    }

    #[test]
    fn tells_urls_from_paths() {
        assert!(is_remote("s3://b/k"));
        assert!(is_remote("s3a://b/k"));
        assert!(is_remote("gs://b/k"));
        assert!(is_remote("https://h/x.parquet"));
        assert!(!is_remote("/tmp/x.parquet"));
        assert!(!is_remote("file:///tmp/x"));
        assert!(!is_remote("dir/a://b"));
    }

    #[test]
    fn refuses_unknown_options() {
        let e = configure(
            "s3://bucket-for-options",
            &[("endpont".into(), "http://x".into())],
        )
        .unwrap_err();
        assert!(e.to_string().contains("endpont"), "{e}");
        let e = configure(
            "s3://bucket-for-options",
            &[("max_in_flight".into(), "x".into())],
        )
        .unwrap_err();
        assert!(matches!(e, Error::InvalidArgument(_)));
    }

    #[test]
    fn timeouts_are_seconds_or_durations_with_a_default_under_retry_timeout() {
        let opts = |pairs: &[(&str, &str)]| {
            let owned: Vec<(String, String)> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            SplitOptions::of(&owned).map(|s| s.passed)
        };
        let passed = opts(&[("timeout", "2.5"), ("connect_timeout", "1500ms")]).unwrap();
        assert!(passed.contains(&("timeout".into(), "2500ms".into())));
        assert!(passed.contains(&("connect_timeout".into(), "1500ms".into())));
        assert!(opts(&[("read_timeout", "1m")])
            .unwrap()
            .contains(&("read_timeout".into(), "60000ms".into())));
        // No timeout given: half of retry_timeout, at most object_store's 30 s.
        let short = opts(&[("retry_timeout", "4")]).unwrap();
        assert!(short.contains(&("timeout".into(), "2000ms".into())));
        assert!(opts(&[])
            .unwrap()
            .contains(&("timeout".into(), "30000ms".into())));
        for bad in ["soon", "-1", "5 fortnights", "inf"] {
            let e = opts(&[("timeout", bad)]).err().unwrap();
            assert!(e.to_string().contains("timeout"), "{e}");
        }
    }

    #[test]
    fn s3a_shares_the_s3_store() {
        let a = store_key(&Url::parse("s3a://bkt/x").unwrap());
        let b = store_key(&Url::parse("s3://bkt/y").unwrap());
        assert_eq!(a, b);
    }
}

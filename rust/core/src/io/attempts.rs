//! Each HTTP attempt of an object-store request, seen from inside the client, and the
//! bounded retry of what the client's own retries cannot see.
//!
//! object_store retries throttling, 5xx answers and broken connections, but does not say
//! how often; and an answer that fails after its status line (a body shorter than the range
//! asked for but "complete" under a wrong Content-Length, a listing whose XML is cut off)
//! fails after its retry loop has returned. A connector wrapping the HTTP client records
//! every attempt of the request being run (in a task-local scope), so [`run`] can count
//! retries and tell a failure worth another try from one object_store gave up on, and
//! every request with its retries ends within `retry_timeout`, which object_store only
//! checks between attempts.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};
use object_store::ClientOptions;

use crate::error::{Error, Result};

/// What the attempts of one logical request saw.
#[derive(Debug, Default)]
pub struct Attempts {
    count: AtomicU64,
    /// Attempts that repeat the one before (same method and URI): the client's retries.
    /// A listing's next page has another URI, so it is not one.
    repeats: AtomicU64,
    /// The last attempt's status; 0 when it got no answer.
    last_status: AtomicU16,
    last_request: Mutex<String>,
}

impl Attempts {
    fn begin(&self, request: &HttpRequest) {
        let id = format!("{} {}", request.method(), request.uri());
        let mut last = self.last_request.lock().unwrap_or_else(|e| e.into_inner());
        if *last == id {
            self.repeats.fetch_add(1, Ordering::Relaxed);
        }
        *last = id;
        self.count.fetch_add(1, Ordering::Relaxed);
        self.last_status.store(0, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn repeats(&self) -> u64 {
        self.repeats.load(Ordering::Relaxed)
    }

    /// Whether the last attempt's status says the failure may pass: none came (the
    /// connection failed), a success (the body then went wrong), or a 5xx, 429 or 408.
    fn last_status_transient(&self) -> bool {
        match self.last_status.load(Ordering::Relaxed) {
            0 | 408 | 429 => true,
            s => (200..300).contains(&s) || s >= 500,
        }
    }
}

tokio::task_local! {
    static SCOPE: Arc<Attempts>;
}

/// The status of the last answer the current request got (0: none yet, or no scope).
pub fn last_status() -> u16 {
    SCOPE
        .try_with(|s| s.last_status.load(Ordering::Relaxed))
        .unwrap_or(0)
}

/// The HTTP client object_store would use, recording each attempt in the current scope.
#[derive(Debug)]
struct Counting(HttpClient);

impl HttpService for Counting {
    fn call<'a, 'b>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(async move {
            let scope = SCOPE.try_with(Arc::clone).ok();
            if let Some(s) = &scope {
                s.begin(&req);
            }
            let answer = self.0.execute(req).await;
            if let (Some(s), Ok(r)) = (&scope, &answer) {
                s.last_status.store(r.status().as_u16(), Ordering::Relaxed);
            }
            answer
        })
    }
}

/// Builds object_store's usual client, wrapped in [`Counting`].
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingConnector;

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Counting(inner)))
    }
}

/// How one logical request is retried above object_store's own loop.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    pub max_retries: usize,
    /// The whole request, retries included, ends within this.
    pub deadline: Duration,
}

/// Why one run of a request failed.
#[derive(Debug)]
pub enum Failure {
    /// An error from the store.
    Store(object_store::Error),
    /// An answer with a success status whose body is not what was asked for (shorter
    /// than the range, say): worth another try.
    Garbled(String),
    /// A failure no retry mends (already the caller's error type).
    Final(Error),
}

impl From<object_store::Error> for Failure {
    fn from(e: object_store::Error) -> Self {
        Failure::Store(e)
    }
}

/// The outcome of [`run`]: its value or error, and the retries it took.
pub struct Ran<T> {
    pub result: Result<T, RunError>,
    pub retries: u64,
}

/// A request that failed for good: the last failure, or the deadline.
#[derive(Debug)]
pub enum RunError {
    Failed {
        failure: Failure,
        /// The last attempt's HTTP status (0: none): object_store loses it when the
        /// error answer's body cannot be read.
        status: u16,
        attempts: u64,
        after: Duration,
    },
    TimedOut {
        after: Duration,
        attempts: u64,
    },
}

impl RunError {
    /// The failure from the store, when that is what ended the request.
    pub fn store_error(&self) -> Option<&object_store::Error> {
        match self {
            RunError::Failed {
                failure: Failure::Store(e),
                ..
            } => Some(e),
            _ => None,
        }
    }
}

fn backoff(retry: u32) -> Duration {
    Duration::from_millis(50u64.saturating_mul(1 << retry.min(5))).min(Duration::from_secs(1))
}

/// Run `op` (one logical request: an idempotent read, or a write safe to repeat) until it
/// succeeds, fails in a way no retry mends, or `policy` is spent. Each run is scoped, so
/// the client's own retries are counted; a run is repeated when it failed after a success
/// status (a garbled body) or on a transient status or connection failure object_store
/// did not retry to its limit.
pub async fn run<T, F, Fut>(policy: Policy, mut op: F) -> Ran<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = std::result::Result<T, Failure>>,
{
    let started = Instant::now();
    let mut retries = 0u64;
    let mut attempts = 0u64;
    let mut reruns = 0u32;
    let result = loop {
        let scope = Arc::new(Attempts::default());
        let left = policy.deadline.saturating_sub(started.elapsed());
        let outcome = tokio::time::timeout(left, SCOPE.scope(scope.clone(), op())).await;
        retries += scope.repeats();
        attempts += scope.count();
        let failure = match outcome {
            Ok(Ok(v)) => break Ok(v),
            Err(_) => {
                break Err(RunError::TimedOut {
                    after: started.elapsed(),
                    attempts,
                })
            }
            Ok(Err(f)) => f,
        };
        let again = match &failure {
            Failure::Garbled(_) => true,
            Failure::Store(object_store::Error::Generic { .. }) => {
                scope.last_status_transient() && (scope.repeats() as usize) < policy.max_retries
            }
            _ => false,
        };
        let pause = backoff(reruns);
        if !again
            || reruns as usize >= policy.max_retries
            || started.elapsed() + pause >= policy.deadline
        {
            break Err(RunError::Failed {
                failure,
                status: scope.last_status.load(Ordering::Relaxed),
                attempts,
                after: started.elapsed(),
            });
        }
        // The rerun's first attempt starts a new scope, so it is counted here.
        reruns += 1;
        retries += 1;
        tokio::time::sleep(pause).await;
    };
    Ran { result, retries }
}

/// A request that failed with no usable answer before `deadline`.
pub fn timed_out(url: &str, after: Duration, attempts: u64, deadline: Duration) -> Error {
    Error::Io {
        path: url.to_string(),
        source: std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!(
                "no complete answer within retry_timeout ({:.1} s; {attempts} attempts in {:.1} s)",
                deadline.as_secs_f64(),
                after.as_secs_f64()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy {
            max_retries: 3,
            deadline: Duration::from_secs(5),
        }
    }

    #[test]
    fn garbled_answers_are_retried_within_bounds() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut calls = 0;
        let ran = rt.block_on(run(policy(), || {
            calls += 1;
            let n = calls;
            async move {
                if n < 3 {
                    Err(Failure::Garbled("short".into()))
                } else {
                    Ok(n)
                }
            }
        }));
        assert_eq!(ran.result.unwrap(), 3);
        assert_eq!(ran.retries, 2);

        let ran = rt.block_on(run(policy(), || async {
            Err::<(), _>(Failure::Garbled("short".into()))
        }));
        assert!(matches!(
            ran.result,
            Err(RunError::Failed {
                failure: Failure::Garbled(_),
                ..
            })
        ));
        assert_eq!(ran.retries, 3);
    }

    #[test]
    fn final_failures_are_not_retried_and_deadlines_hold() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let ran = rt.block_on(run(policy(), || async {
            Err::<(), _>(Failure::Final(Error::Cancelled))
        }));
        assert_eq!(ran.retries, 0);
        assert!(matches!(
            ran.result,
            Err(RunError::Failed {
                failure: Failure::Final(_),
                ..
            })
        ));

        let quick = Policy {
            max_retries: 3,
            deadline: Duration::from_millis(100),
        };
        let started = Instant::now();
        let ran = rt.block_on(run(quick, || async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, Failure>(())
        }));
        assert!(matches!(ran.result, Err(RunError::TimedOut { .. })));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
}

//! `slotcron status --admin-url URL`: the jobs table of a running daemon, read from its
//! admin API.

use std::process::ExitCode;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper::header;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::admin::TOKEN_VAR;
use crate::cli::StatusArgs;
use crate::{INVALID_INPUT, table};

/// How long the daemon may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Where the admin API is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AdminUrl {
    /// `http://HOST:PORT[/]`: the authority to connect to and send as `Host`.
    Http(String),
    /// `unix:PATH`.
    Unix(String),
}

impl AdminUrl {
    fn parse(text: &str) -> Result<Self, String> {
        if let Some(path) = text.strip_prefix("unix:").filter(|p| !p.is_empty()) {
            return Ok(Self::Unix(path.to_owned()));
        }
        match text.strip_prefix("http://").map(|rest| rest.trim_end_matches('/')) {
            Some(authority) if !authority.is_empty() && !authority.contains('/') => {
                Ok(Self::Http(authority.to_owned()))
            }
            _ => Err(format!(
                "--admin-url {text:?}: write http://HOST:PORT (e.g. http://127.0.0.1:9090) or unix:PATH"
            )),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Jobs {
    jobs: Vec<JobRow>,
}

#[derive(Debug, Deserialize)]
struct JobRow {
    name: String,
    schedule: String,
    schedule_english: Option<String>,
    paused: bool,
    next_triggers: Vec<String>,
    last_run: Option<LastRun>,
}

#[derive(Debug, Deserialize)]
struct LastRun {
    trigger: String,
    outcome: Option<String>,
}

/// Prints the daemon's jobs as columns `JOB SCHEDULE NEXT LAST OUTCOME` with a header:
/// exit status 0; 2 with the reason on standard error if the daemon cannot be reached
/// or answers with an error (a missing or wrong token: 401).
pub fn run(args: &StatusArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("slotcron status: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let fetched = AdminUrl::parse(&args.admin_url).map(|url| {
        runtime.block_on(async {
            tokio::time::timeout(TIMEOUT, get(&url, "/api/v1/jobs"))
                .await
                .unwrap_or_else(|_| Err(format!("no answer within {TIMEOUT:?}")))
        })
    });
    let jobs = match fetched.and_then(|body| body.map_err(|e| format!("{}: {e}", args.admin_url))) {
        Ok(body) => serde_json::from_slice::<Jobs>(&body)
            .map_err(|e| format!("{}: not a slotcron admin API answer: {e}", args.admin_url)),
        Err(e) => Err(e),
    };
    match jobs {
        Ok(jobs) => {
            print(jobs);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("slotcron status: {e}");
            ExitCode::from(INVALID_INPUT)
        }
    }
}

fn print(mut jobs: Jobs) {
    jobs.jobs.sort_by(|a, b| a.name.cmp(&b.name));
    let rows: Vec<[String; 5]> = jobs
        .jobs
        .into_iter()
        .map(|job| {
            let schedule = job.schedule_english.unwrap_or(job.schedule);
            let next = match (job.paused, job.next_triggers.first()) {
                (true, _) => "paused".to_owned(),
                (false, Some(next)) => next.clone(),
                (false, None) => "-".to_owned(),
            };
            let (last, outcome) = match job.last_run {
                Some(run) => (run.trigger, run.outcome.unwrap_or_else(|| "running".into())),
                None => ("-".into(), "-".into()),
            };
            [job.name, schedule, next, last, outcome]
        })
        .collect();
    table::print(Some(["JOB", "SCHEDULE", "NEXT", "LAST", "OUTCOME"]), &rows, 0);
}

/// `GET path` from the admin API: the body of a 2xx answer, else the API's message.
async fn get(url: &AdminUrl, path: &str) -> Result<Bytes, String> {
    match url {
        AdminUrl::Http(authority) => {
            let stream = tokio::net::TcpStream::connect(authority)
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            exchange(stream, authority, path).await
        }
        AdminUrl::Unix(socket) => {
            let stream =
                tokio::net::UnixStream::connect(socket).await.map_err(|e| format!("cannot connect: {e}"))?;
            exchange(stream, "localhost", path).await
        }
    }
}

async fn exchange(
    stream: impl AsyncRead + AsyncWrite + Send + Unpin + 'static,
    host: &str,
    path: &str,
) -> Result<Bytes, String> {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP: {e}"))?;
    tokio::spawn(connection);
    let mut request = hyper::Request::get(path).header(header::HOST, host);
    if let Ok(token) = std::env::var(TOKEN_VAR) {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = request.body(Empty::<Bytes>::new()).map_err(|e| format!("HTTP: {e}"))?;
    let response = sender.send_request(request).await.map_err(|e| format!("HTTP: {e}"))?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(|e| format!("HTTP: {e}"))?.to_bytes();
    if status.is_success() {
        return Ok(body);
    }
    let message = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
    Err(format!("{status}: {message}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_urls() {
        assert_eq!(AdminUrl::parse("http://127.0.0.1:9090/"), Ok(AdminUrl::Http("127.0.0.1:9090".into())));
        assert_eq!(AdminUrl::parse("unix:/run/s.sock"), Ok(AdminUrl::Unix("/run/s.sock".into())));
        assert!(AdminUrl::parse("https://host:1").is_err());
        assert!(AdminUrl::parse("http://host:1/api").is_err());
    }
}

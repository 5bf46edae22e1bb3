//! A crontab's `MAILTO=`: a run's output mailed through `sendmail -t`, as cron does.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

/// A mail's body holds at most this many bytes of output; the rest is cut, said so.
const MAX_BODY: usize = 1024 * 1024;

/// How long `sendmail` may take to accept a mail before it is killed.
const SENDMAIL_TIMEOUT: Duration = Duration::from_secs(60);

/// The program that sends the mail, found on the daemon's `PATH`.
pub const SENDMAIL: &str = "sendmail";

/// `sendmail` on the daemon's `PATH`, if there is one (an executable file).
pub fn sendmail() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(SENDMAIL)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// The output of one run, collected for its mail (standard output and standard error
/// interleaved, as cron mails them), at most [`MAX_BODY`] bytes.
#[derive(Debug, Default)]
pub struct Collected {
    body: Mutex<(String, bool)>,
}

impl Collected {
    /// Adds one output line.
    pub fn line(&self, text: &str) {
        let mut body = self.body.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if body.0.len() + text.len() + 1 > MAX_BODY {
            body.1 = true;
            return;
        }
        body.0.push_str(text);
        body.0.push('\n');
    }

    /// Mails the collected output to `to` through `sendmail -t`, if there was any (cron
    /// sends no mail for a run without output). Failures are logged as warnings.
    pub async fn send(self, sendmail: &Path, to: &str, job: &str, script: &str) {
        let (body, cut) = self.body.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner());
        if body.is_empty() {
            return;
        }
        let subject: String = script.chars().take(200).collect();
        let mut message = format!(
            "To: {to}\nSubject: Cron <{job}> {subject}\nAuto-Submitted: auto-generated\n\
             Content-Type: text/plain; charset=UTF-8\n\n{body}"
        );
        if cut {
            message.push_str(&format!("[output past {MAX_BODY} bytes not included]\n"));
        }
        if let Err(e) = deliver(sendmail, &message).await {
            tracing::warn!(job, to, "cannot mail the output: {e}");
        }
    }
}

async fn deliver(sendmail: &Path, message: &str) -> Result<(), String> {
    let mut child = tokio::process::Command::new(sendmail)
        .arg("-t")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", sendmail.display()))?;
    let mut stdin = child.stdin.take().ok_or("no standard input")?;
    let finished = async {
        stdin.write_all(message.as_bytes()).await.map_err(|e| e.to_string())?;
        drop(stdin);
        child.wait().await.map_err(|e| e.to_string())
    };
    match tokio::time::timeout(SENDMAIL_TIMEOUT, finished).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("{} -t failed: {status}", sendmail.display())),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(format!("{} -t took longer than {SENDMAIL_TIMEOUT:?}", sendmail.display())),
    }
}

//! TLS to PostgreSQL, as libpq's `sslmode` and `sslrootcert` parameters ask for it, through
//! rustls with the `ring` provider.
//!
//! The modes (PostgreSQL manual, "SSL Support" in libpq's chapter):
//!
//! | `sslmode` | encrypted | certificate checked |
//! |---|---|---|
//! | `disable` | no | — |
//! | `prefer` (the default) | if the server offers TLS | no |
//! | `require` | yes | no; against `sslrootcert` when given (as `verify-ca`) |
//! | `verify-ca` | yes | chain to a trusted root |
//! | `verify-full` | yes | chain to a trusted root, and the host name |
//!
//! The trusted roots are the PEM certificates of `sslrootcert=PATH`, or else the
//! system's root certificates. (libpq also reads `~/.postgresql/root.crt`; slotcron does
//! not: give `sslrootcert`.) `allow` is not supported.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// How the connections of one URL use TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    mode: Mode,
    root_certificate: Option<PathBuf>,
}

/// What is checked of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Tls {
    /// Takes `sslmode` and `sslrootcert` out of a connection string (a `postgres://` URL
    /// or libpq `key=value` pairs), as tokio-postgres reads neither `verify-*` nor
    /// `sslrootcert`; the string returned asks tokio-postgres for TLS (`require`) when
    /// the mode needs it.
    ///
    /// # Errors
    /// An unknown `sslmode`, or `sslrootcert` given twice or empty.
    pub fn take_from(url: &str) -> Result<(String, Self), String> {
        let mut mode = None;
        let mut root_certificate = None;
        let mut take = |key: &str, value: &str| -> Result<bool, String> {
            match key {
                "sslmode" => {
                    mode = Some(match value {
                        "disable" => Mode::Disable,
                        "prefer" => Mode::Prefer,
                        "require" => Mode::Require,
                        "verify-ca" => Mode::VerifyCa,
                        "verify-full" => Mode::VerifyFull,
                        other => {
                            return Err(format!(
                                "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                            ));
                        }
                    });
                }
                "sslrootcert" if root_certificate.is_some() => {
                    return Err("sslrootcert is given twice".into());
                }
                "sslrootcert" if value.is_empty() => return Err("sslrootcert is empty".into()),
                "sslrootcert" => root_certificate = Some(PathBuf::from(value)),
                _ => return Ok(false),
            }
            Ok(true)
        };
        let rest = match url.split_once("://") {
            Some(_) => {
                let (base, query) = url.split_once('?').unwrap_or((url, ""));
                let mut kept = Vec::new();
                for param in query.split('&').filter(|p| !p.is_empty()) {
                    let (key, value) = param.split_once('=').unwrap_or((param, ""));
                    let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
                    if !take(key, &value)? {
                        kept.push(param);
                    }
                }
                if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) }
            }
            None => {
                let mut kept = Vec::new();
                for pair in url.split_whitespace() {
                    let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                    if !take(key.trim(), value.trim_matches('\''))? {
                        kept.push(pair);
                    }
                }
                kept.join(" ")
            }
        };
        let tls = Self { mode: mode.unwrap_or(Mode::Prefer), root_certificate };
        let asked = match tls.mode {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => "require",
        };
        let url = match (url.contains("://"), rest.contains('?')) {
            (true, true) => format!("{rest}&sslmode={asked}"),
            (true, false) => format!("{rest}?sslmode={asked}"),
            (false, _) => format!("{rest} sslmode={asked}"),
        };
        Ok((url, tls))
    }

    /// The connector for tokio-postgres: rustls with the `ring` provider and the
    /// certificate check of the mode.
    ///
    /// # Errors
    /// The root certificates cannot be read: an unreadable or empty `sslrootcert` file,
    /// or no system root certificates where they are needed.
    pub fn connector(&self) -> Result<MakeRustlsConnect, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (chain, name) = match (self.mode, &self.root_certificate) {
            (Mode::Disable | Mode::Prefer, _) | (Mode::Require, None) => (None, false),
            (Mode::Require | Mode::VerifyCa, _) => (Some(self.webpki(&provider)?), false),
            (Mode::VerifyFull, _) => (Some(self.webpki(&provider)?), true),
        };
        let verifier = Arc::new(Verifier { provider: provider.clone(), chain, name });
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }

    /// The standard verifier (chain and host name) over the trusted roots.
    fn webpki(&self, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
        let roots = match &self.root_certificate {
            Some(path) => file_roots(path)?,
            None => system_roots()?,
        };
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| e.to_string())
    }
}

/// The certificates of a PEM file.
fn file_roots(path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("sslrootcert={shown}: cannot read it: {e}"))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(format!("sslrootcert={shown}: holds no PEM certificate"));
    }
    Ok(roots)
}

/// The system's root certificates.
fn system_roots() -> Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(format!(
            "no system root certificates to verify the server with ({}); give sslrootcert=PATH",
            if errors.is_empty() { "none found".to_owned() } else { errors.join("; ") }
        ));
    }
    Ok(roots)
}

/// The check of the server's certificate: none (`prefer`, and `require` without
/// `sslrootcert`: encrypted, the certificate unchecked, as libpq does), the chain to a
/// trusted root (`verify-ca`), or the chain and the host name (`verify-full`). The
/// handshake's signatures are checked in every case.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    /// The chain's check; none: the certificate is not checked.
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// Whether the certificate must name the host.
    name: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        // webpki checks the chain before the name: a name error means the chain is good.
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_and_root_certificate_leave_the_url_and_tls_is_asked_when_needed() {
        let (url, tls) =
            Tls::take_from("postgres://u@db/app?sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&x=1")
                .unwrap();
        assert_eq!(url, "postgres://u@db/app?x=1&sslmode=require");
        assert_eq!(tls, Tls { mode: Mode::VerifyFull, root_certificate: Some("/etc/ca.pem".into()) });
        let (url, tls) = Tls::take_from("postgres://u@db/app").unwrap();
        assert_eq!(url, "postgres://u@db/app?sslmode=prefer");
        assert_eq!(tls.mode, Mode::Prefer);
        let (url, tls) = Tls::take_from("host=db sslmode=verify-ca sslrootcert=/ca.pem user=u").unwrap();
        assert_eq!(url, "host=db user=u sslmode=require");
        assert_eq!(tls, Tls { mode: Mode::VerifyCa, root_certificate: Some("/ca.pem".into()) });
        assert_eq!(Tls::take_from("postgres://db/app?sslmode=disable").unwrap().1.mode, Mode::Disable);
    }

    #[test]
    fn unknown_modes_and_bad_root_certificates_are_refused() {
        let mode = Tls::take_from("postgres://db/app?sslmode=allow").unwrap_err();
        assert!(mode.starts_with("sslmode=allow is not one of"), "{mode}");
        let twice = Tls::take_from("postgres://db/app?sslrootcert=a&sslrootcert=b").unwrap_err();
        assert_eq!(twice, "sslrootcert is given twice");
        let (_, tls) =
            Tls::take_from("postgres://db/app?sslmode=verify-full&sslrootcert=/no/such.pem").unwrap();
        let error = tls.connector().err().expect("no file");
        assert!(error.starts_with("sslrootcert=/no/such.pem: cannot read it"), "{error}");
    }
}

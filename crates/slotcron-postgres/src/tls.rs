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
//!
//! A self-signed server certificate given as `sslrootcert` itself — the setup of the
//! PostgreSQL manual's "Creating Certificates" (server-side "SSL Support" chapter): the
//! server's `server.crt` copied to the client's `root.crt` — is trusted as libpq (through
//! OpenSSL) trusts it, as a trust anchor of its own: webpki refuses such a certificate
//! when it is marked as a CA (`CaUsedAsEndEntity`, as `openssl req -x509` marks it), so
//! one byte-identical (DER) to a certificate of `sslrootcert` is checked here instead: its
//! validity period, and under `verify-full` the host name against its subject alternative
//! names. (libpq falls back to the common name when a certificate has no DNS name among
//! them; webpki, and so slotcron, does not.)

use std::error::Error as StdError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;
use x509_cert::der::Decode;

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
        let name = self.mode == Mode::VerifyFull;
        let (chain, pinned) = match (self.mode, &self.root_certificate) {
            (Mode::Disable | Mode::Prefer, _) | (Mode::Require, None) => (None, Vec::new()),
            (Mode::Require | Mode::VerifyCa | Mode::VerifyFull, _) => {
                let (chain, pinned) = self.webpki(&provider)?;
                (Some(chain), pinned)
            }
        };
        let verifier = Arc::new(Verifier { provider: provider.clone(), chain, pinned, name });
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }

    /// The standard verifier (chain and host name) over the trusted roots, and the
    /// certificates of `sslrootcert` (none for the system's roots).
    fn webpki(&self, provider: &Arc<CryptoProvider>) -> Result<(Arc<WebPkiServerVerifier>, Pinned), String> {
        let (roots, pinned) = match &self.root_certificate {
            Some(path) => file_roots(path)?,
            None => (system_roots()?, Vec::new()),
        };
        Ok((webpki(roots, provider)?, pinned))
    }

    /// Why the server's certificate was refused, in words that name the trusted roots
    /// (`sslrootcert=PATH`, or the system's), followed by `error`'s own chain; `None`
    /// when `error` (or a cause of it) is no refusal of the certificate.
    pub fn explain(&self, error: &(dyn StdError + 'static)) -> Option<String> {
        let refusal = certificate_error(error)?;
        let roots = match &self.root_certificate {
            Some(path) => format!("the certificates in sslrootcert={}", path.display()),
            None => "the system's root certificates (give sslrootcert=PATH)".to_owned(),
        };
        let why = match refusal {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => {
                format!("the server's certificate is not signed by (and not one of) {roots}")
            }
            CertificateError::Other(other) if is_ca_used_as_end_entity(other) => format!(
                "the server's certificate is not signed by (and not one of) {roots}: it is a CA's \
                 (basic constraints CA:TRUE), trusted as the server's only when sslrootcert holds that \
                 very certificate"
            ),
            CertificateError::NotValidForNameContext { expected, .. } => format!(
                "the server's certificate does not name the host {:?} among its subject alternative \
                 names (sslmode=verify-full checks the host name; verify-ca does not)",
                expected.to_str()
            ),
            CertificateError::NotValidForName => "the server's certificate does not name the host among its \
                subject alternative names (sslmode=verify-full checks the host name; verify-ca does not)"
                .to_owned(),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired".to_owned()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet".to_owned()
            }
            _ => "the server's certificate is refused".to_owned(),
        };
        Some(format!("{why} ({})", slotcron::error_chain(error)))
    }
}

/// rustls's standard verifier (chain, validity and host name) over `roots`.
fn webpki(roots: RootCertStore, provider: &Arc<CryptoProvider>) -> Result<Arc<WebPkiServerVerifier>, String> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| e.to_string())
}

/// The certificates of `sslrootcert`, as they were read (DER).
type Pinned = Vec<CertificateDer<'static>>;

/// The certificates of a PEM file, as roots and as they were read.
fn file_roots(path: &Path) -> Result<(RootCertStore, Pinned), String> {
    let shown = path.display();
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("sslrootcert={shown}: cannot read it: {e}"))?;
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates.iter().cloned());
    if added == 0 {
        return Err(format!("sslrootcert={shown}: holds no PEM certificate"));
    }
    Ok((roots, certificates))
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
/// trusted root (`verify-ca`), or the chain and the host name (`verify-full`) — or, for a
/// certificate that is one of `sslrootcert`'s, its validity and the host name (see the
/// [module](self)). The handshake's signatures are checked in every case.
#[derive(Debug)]
struct Verifier {
    provider: Arc<CryptoProvider>,
    /// The chain's check; none: the certificate is not checked.
    chain: Option<Arc<WebPkiServerVerifier>>,
    /// The certificates of `sslrootcert`: a server certificate byte-identical to one of
    /// them is trusted as it is, as OpenSSL takes it as a trust anchor.
    pinned: Pinned,
    /// Whether the certificate must name the host.
    name: bool,
}

impl Verifier {
    /// A server certificate byte-identical to one of `sslrootcert`'s: its validity
    /// period, and the host name against its subject alternative names when
    /// [`Self::name`].
    fn verify_pinned(
        &self,
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        check_validity(end_entity, now)?;
        if self.name {
            let parsed = ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&parsed, server_name)?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn is_pinned(&self, end_entity: &CertificateDer<'_>) -> bool {
        self.pinned.iter().any(|pinned| pinned.as_ref() == end_entity.as_ref())
    }
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
            Err(rustls::Error::InvalidCertificate(CertificateError::Other(other)))
                if is_ca_used_as_end_entity(&other) && self.is_pinned(end_entity) =>
            {
                self.verify_pinned(end_entity, server_name, now)
            }
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

/// Whether webpki refused a certificate because it is a CA's (basic constraints
/// `CA:TRUE`) where the server's own was expected.
fn is_ca_used_as_end_entity(error: &rustls::OtherError) -> bool {
    matches!(error.0.downcast_ref::<webpki::Error>(), Some(webpki::Error::CaUsedAsEndEntity))
}

/// The certificate refusal in `error` or its causes (tokio-postgres's TLS error holds the
/// I/O error of tokio-rustls, which holds rustls's).
fn certificate_error<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a CertificateError> {
    let mut next = Some(error);
    while let Some(error) = next {
        let inner = error.downcast_ref::<std::io::Error>().and_then(|e| e.get_ref());
        let rustls = error.downcast_ref::<rustls::Error>().or_else(|| inner?.downcast_ref::<rustls::Error>());
        if let Some(rustls::Error::InvalidCertificate(refusal)) = rustls {
            return Some(refusal);
        }
        next = error.source();
    }
    None
}

/// Whether `now` is within the certificate's validity period (RFC 5280, 4.1.2.5; both
/// ends included, as webpki has it).
fn check_validity(certificate: &CertificateDer<'_>, now: UnixTime) -> Result<(), rustls::Error> {
    let parsed =
        x509_cert::Certificate::from_der(certificate.as_ref()).map_err(|_| CertificateError::BadEncoding)?;
    let validity = &parsed.tbs_certificate.validity;
    let unix = |time: x509_cert::time::Time| UnixTime::since_unix_epoch(time.to_unix_duration());
    let (not_before, not_after) = (unix(validity.not_before), unix(validity.not_after));
    if now < not_before {
        return Err(CertificateError::NotValidYetContext { time: now, not_before }.into());
    }
    if now > not_after {
        return Err(CertificateError::ExpiredContext { time: now, not_after }.into());
    }
    Ok(())
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

    /// Certificates valid from 2020 to 2040 (the checks are given the time).
    mod certificates {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, date_time_ymd};
        use rustls::pki_types::CertificateDer;

        fn params(common_name: &str, names: &[&str], ca: IsCa) -> CertificateParams {
            let mut params = CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("valid names");
            params.distinguished_name.push(DnType::CommonName, common_name);
            params.is_ca = ca;
            params.not_before = date_time_ymd(2020, 1, 1);
            params.not_after = date_time_ymd(2040, 1, 1);
            params
        }

        /// Self-signed, for `names`; a CA's (basic constraints `CA:TRUE`, as `openssl req
        /// -x509` makes it) when `ca`.
        pub fn self_signed(names: &[&str], ca: bool) -> CertificateDer<'static> {
            let ca = if ca { IsCa::Ca(BasicConstraints::Unconstrained) } else { IsCa::ExplicitNoCa };
            params(names[0], names, ca).self_signed(&KeyPair::generate().unwrap()).unwrap().der().clone()
        }

        /// The certificate of a CA named `ca_name`, and a server's for `names` signed by it.
        pub fn chain(ca_name: &str, names: &[&str]) -> (CertificateDer<'static>, CertificateDer<'static>) {
            let ca_key = KeyPair::generate().unwrap();
            let ca_params = params(ca_name, &[], IsCa::Ca(BasicConstraints::Unconstrained));
            let ca = ca_params.self_signed(&ca_key).unwrap().der().clone();
            let issuer = Issuer::new(ca_params, ca_key);
            let server_key = KeyPair::generate().unwrap();
            let server = params(names[0], names, IsCa::ExplicitNoCa).signed_by(&server_key, &issuer).unwrap();
            (ca, server.der().clone())
        }
    }

    /// A verifier trusting `roots` (as `sslrootcert` would hold them); `name`: verify-full.
    fn verifier(roots: &[&CertificateDer<'static>], name: bool) -> Verifier {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut store = RootCertStore::empty();
        assert_eq!(store.add_parsable_certificates(roots.iter().map(|&c| c.clone())), (roots.len(), 0));
        let chain = webpki(store, &provider).unwrap();
        Verifier { provider, chain: Some(chain), pinned: roots.iter().map(|&c| c.clone()).collect(), name }
    }

    /// Midnight UTC of 1 January of `year`.
    fn in_year(year: u64) -> UnixTime {
        let days = (1970..year).map(|y| if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) { 366 } else { 365 });
        UnixTime::since_unix_epoch(std::time::Duration::from_secs(days.sum::<u64>() * 86_400))
    }

    fn verify(
        verifier: &Verifier,
        server: &CertificateDer<'static>,
        host: &str,
        year: u64,
    ) -> Result<(), rustls::Error> {
        let name = ServerName::try_from(host.to_owned()).unwrap();
        verifier.verify_server_cert(server, &[], &name, &[], in_year(year)).map(|_| ())
    }

    /// The sentence [`Tls::explain`] puts first, for `error` wrapped as tokio-rustls wraps it.
    fn explained(root: &str, error: rustls::Error) -> String {
        let tls = Tls { mode: Mode::VerifyFull, root_certificate: Some(root.into()) };
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, error);
        let text = tls.explain(&io).expect("a certificate refusal");
        let chain = format!(" ({})", slotcron::error_chain(&io));
        text.strip_suffix(&chain).expect("the error's own words last").to_owned()
    }

    #[test]
    fn a_self_signed_ca_certificate_given_as_the_root_is_trusted_with_its_names_checked() {
        let server = certificates::self_signed(&["localhost", "127.0.0.1"], true);
        let full = verifier(&[&server], true);
        verify(&full, &server, "localhost", 2030).unwrap();
        verify(&full, &server, "127.0.0.1", 2030).unwrap();
        let wrong = verify(&full, &server, "db.invalid", 2030).unwrap_err();
        assert!(
            matches!(
                &wrong,
                rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext { .. })
            ),
            "{wrong:?}"
        );
        assert_eq!(
            explained("/r.pem", wrong),
            "the server's certificate does not name the host \"db.invalid\" among its subject alternative \
             names (sslmode=verify-full checks the host name; verify-ca does not)"
        );
        verify(&verifier(&[&server], false), &server, "db.invalid", 2030).unwrap();
    }

    #[test]
    fn a_pinned_certificate_outside_its_validity_period_is_refused() {
        let server = certificates::self_signed(&["localhost"], true);
        for name in [true, false] {
            let expired = verify(&verifier(&[&server], name), &server, "localhost", 2041).unwrap_err();
            assert!(
                matches!(expired, rustls::Error::InvalidCertificate(CertificateError::ExpiredContext { .. })),
                "{expired:?}"
            );
            assert_eq!(explained("/r.pem", expired), "the server's certificate has expired");
            let early = verify(&verifier(&[&server], name), &server, "localhost", 2019).unwrap_err();
            assert!(
                matches!(
                    early,
                    rustls::Error::InvalidCertificate(CertificateError::NotValidYetContext { .. })
                ),
                "{early:?}"
            );
        }
    }

    #[test]
    fn a_self_signed_certificate_that_is_not_the_root_is_refused_in_plain_words() {
        let server = certificates::self_signed(&["localhost"], true);
        let other = certificates::self_signed(&["localhost"], true);
        let (ca, _) = certificates::chain("test CA", &["localhost"]);
        for roots in [vec![&other], vec![&other, &ca]] {
            for name in [true, false] {
                let error = verify(&verifier(&roots, name), &server, "localhost", 2030).unwrap_err();
                assert_eq!(
                    explained("/r.pem", error),
                    "the server's certificate is not signed by (and not one of) the certificates in \
                     sslrootcert=/r.pem: it is a CA's (basic constraints CA:TRUE), trusted as the server's \
                     only when sslrootcert holds that very certificate"
                );
            }
        }
    }

    #[test]
    fn certificates_webpki_accepts_or_refuses_are_checked_as_before() {
        let (ca, server) = certificates::chain("test CA", &["localhost"]);
        let full = verifier(&[&ca], true);
        verify(&full, &server, "localhost", 2030).unwrap();
        assert!(verify(&full, &server, "db.invalid", 2030).is_err());
        verify(&verifier(&[&ca], false), &server, "db.invalid", 2030).unwrap();
        // Signed by another CA, of another name (no issuer found) or of the same name (an
        // issuer found whose key did not sign it).
        for (ca_name, refusal) in
            [("other CA", CertificateError::UnknownIssuer), ("test CA", CertificateError::BadSignature)]
        {
            let (_, foreign) = certificates::chain(ca_name, &["localhost"]);
            let error = verify(&full, &foreign, "localhost", 2030).unwrap_err();
            assert_eq!(error, rustls::Error::InvalidCertificate(refusal));
            assert_eq!(
                explained("/r.pem", error),
                "the server's certificate is not signed by (and not one of) the certificates in sslrootcert=/r.pem"
            );
        }
        // A self-signed certificate that is no CA's: webpki takes it as its own root.
        let plain = certificates::self_signed(&["localhost"], false);
        verify(&verifier(&[&plain], true), &plain, "localhost", 2030).unwrap();
        assert!(verify(&verifier(&[&plain], true), &plain, "db.invalid", 2030).is_err());
    }
}

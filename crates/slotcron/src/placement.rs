//! Placement: the labels a member of the fleet carries ([`Labels`], the daemon's
//! `--label region=eu`, [`SchedulerBuilder::labels`](crate::SchedulerBuilder::labels)) and
//! the labels a job needs of the member that runs it ([`Placement`], a job's `on`,
//! [`JobBuilder::on`](crate::JobBuilder::on)), as dkron's tags and Kubernetes' node
//! selectors.
//!
//! A label is `key` or `key=value`: a key and a value are 1 to [`MAX_LABEL_LEN`] ASCII
//! letters, digits and `-_./`. A job's `key=value` is met by a member carrying exactly
//! that label; a job's bare `key`, by a member carrying the key with any value or none.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

/// The most characters of a label's key, and of its value.
pub const MAX_LABEL_LEN: usize = 63;

/// A label as written (`gpu`, `region=eu`) that is not one, and why: the sentence names
/// the label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LabelError(String);

/// One label: a key and, maybe, a value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label {
    key: String,
    value: Option<String>,
}

impl Label {
    /// Reads `text`, `key` or `key=value`.
    ///
    /// # Errors
    /// [`LabelError`]: empty, white space, an empty key or value, more than one `=`, a
    /// character other than ASCII letters, digits and `-_./`, or longer than
    /// [`MAX_LABEL_LEN`].
    pub fn parse(text: &str) -> Result<Self, LabelError> {
        let refused = |reason: &str| Err(LabelError(format!("label {text:?}: {reason}")));
        if text.is_empty() {
            return Err(LabelError("a label must not be empty (write key or key=value)".into()));
        }
        if text.chars().any(char::is_whitespace) {
            return refused("white space is not allowed (write key or key=value)");
        }
        let (key, value) = match text.split_once('=') {
            None => (text, None),
            Some((_, value)) if value.contains('=') => return refused("more than one '='"),
            Some((key, value)) => (key, Some(value)),
        };
        if key.is_empty() {
            return refused("the key before '=' is empty");
        }
        if value == Some("") {
            return refused(&format!("the value after '=' is empty (write {key} for the key alone)"));
        }
        for part in std::iter::once(key).chain(value) {
            if part.len() > MAX_LABEL_LEN {
                return refused(&format!("{part:?} is longer than {MAX_LABEL_LEN} characters"));
            }
            if let Some(bad) = part.chars().find(|c| !(c.is_ascii_alphanumeric() || "-_./".contains(*c))) {
                return refused(&format!("{bad:?} is not allowed; use ASCII letters, digits and - _ . /"));
            }
        }
        Ok(Self { key: key.to_owned(), value: value.map(str::to_owned) })
    }

    /// Its key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Its value, if it has one.
    pub fn value(&self) -> Option<&str> {
        self.value.as_deref()
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(value) => write!(f, "{}={value}", self.key),
            None => f.write_str(&self.key),
        }
    }
}

/// Reads each of `texts` as a label ([`Label::parse`]), refusing a key given twice.
fn parse_all<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Result<Vec<Label>, LabelError> {
    let mut labels: Vec<Label> = Vec::new();
    for text in texts {
        let label = Label::parse(text.as_ref())?;
        if let Some(before) = labels.iter().find(|l| l.key == label.key) {
            return Err(LabelError(format!(
                "label key {:?} is given twice ({before} and {label}); a key has one value",
                label.key
            )));
        }
        labels.push(label);
    }
    Ok(labels)
}

/// The labels a member of the fleet carries, by key; published in the membership
/// ([`MemberDetails::labels`](crate::MemberDetails::labels)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(BTreeMap<String, Option<String>>);

impl Labels {
    /// Reads `texts`, each `key` or `key=value`.
    ///
    /// # Errors
    /// [`LabelError`]: a label [`Label::parse`] refuses, or a key given twice.
    pub fn parse<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Result<Self, LabelError> {
        Ok(Self(parse_all(texts)?.into_iter().map(|label| (label.key, label.value)).collect()))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether these labels meet `label` of a job's placement: the same key, and the same
    /// value if `label` has one.
    pub fn meet(&self, label: &Label) -> bool {
        self.0.get(&label.key).is_some_and(|value| label.value.is_none() || *value == label.value)
    }

    /// The labels, each as written (`key` or `key=value`), in key order.
    pub fn written(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(key, value)| match value {
                Some(value) => format!("{key}={value}"),
                None => key.clone(),
            })
            .collect()
    }
}

/// Where a job may run: the labels a member must carry to run its triggers (a job's
/// `on`). Empty (the default): on any member.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Placement(Vec<Label>);

impl Placement {
    /// Reads `texts`, each `key` or `key=value`.
    ///
    /// # Errors
    /// [`LabelError`]: a label [`Label::parse`] refuses, or a key given twice (no member
    /// carries a key twice).
    pub fn parse<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Result<Self, LabelError> {
        parse_all(texts).map(Self)
    }

    /// Whether the job may run on any member.
    pub fn is_anywhere(&self) -> bool {
        self.0.is_empty()
    }

    /// `self` behind an `Arc`; on any member, the one every such job shares (no
    /// allocation per job).
    pub(crate) fn into_shared(self) -> Arc<Self> {
        static ANYWHERE: LazyLock<Arc<Placement>> = LazyLock::new(Arc::default);
        if self.is_anywhere() { ANYWHERE.clone() } else { Arc::new(self) }
    }

    /// The labels a member must carry.
    pub fn labels(&self) -> &[Label] {
        &self.0
    }

    /// Whether a member carrying `labels` may run the job.
    pub fn is_met_by(&self, labels: &Labels) -> bool {
        self.0.iter().all(|label| labels.meet(label))
    }

    /// The labels of the placement that `labels` do not meet.
    pub fn unmet<'a>(&'a self, labels: &'a Labels) -> impl Iterator<Item = &'a Label> + 'a {
        self.0.iter().filter(|label| !labels.meet(label))
    }

    /// Why a scheduler with no coordinator, carrying `labels`, refuses the job (no other
    /// member could run it): the labels it lacks and the ones it carries; `None` if it
    /// carries them all.
    pub fn refused_alone(&self, labels: &Labels) -> Option<String> {
        let unmet: Vec<String> = self.unmet(labels).map(ToString::to_string).collect();
        if unmet.is_empty() {
            return None;
        }
        let carried = match labels.written() {
            carried if carried.is_empty() => "none".to_owned(),
            carried => carried.join(", "),
        };
        Some(format!(
            "placed on {self}, but this scheduler runs without a coordinator and does not carry {} \
             (its labels: {carried}); no other member could run the job",
            unmet.join(", ")
        ))
    }
}

impl fmt::Display for Placement {
    /// The labels, comma-separated (`region=eu, gpu`); `anywhere` when there are none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("anywhere");
        }
        for (i, label) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{label}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> String {
        Label::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn jobs_that_run_on_any_member_share_one_placement_and_others_keep_their_own() {
        use crate::{Job, JobBuilder};
        let build = |builder: JobBuilder| {
            let builder = builder.every(std::time::Duration::from_secs(1));
            builder.handler(|_ctx| async { Ok::<(), std::io::Error>(()) }).build().unwrap()
        };
        let none: [&str; 0] = [];
        let (a, b) = (build(Job::builder("a")), build(Job::builder("b").on(none)));
        let c = build(Job::builder("c").on(["region=eu"]));
        assert!(Arc::ptr_eq(&a.placement, &b.placement));
        assert!(a.placement().is_anywhere() && b.placement().is_anywhere());
        assert_eq!(c.placement().labels(), [Label::parse("region=eu").unwrap()]);
    }

    #[test]
    fn labels_are_a_key_or_a_key_and_a_value() {
        let label = Label::parse("region=eu").unwrap();
        assert_eq!(
            (label.key(), label.value(), label.to_string().as_str()),
            ("region", Some("eu"), "region=eu")
        );
        assert_eq!(Label::parse("gpu").unwrap().value(), None);
        assert_eq!(refused(""), "a label must not be empty (write key or key=value)");
        assert_eq!(
            refused("region = eu"),
            r#"label "region = eu": white space is not allowed (write key or key=value)"#
        );
        assert_eq!(refused("=eu"), r#"label "=eu": the key before '=' is empty"#);
        assert_eq!(
            refused("region="),
            r#"label "region=": the value after '=' is empty (write region for the key alone)"#
        );
        assert_eq!(refused("a=b=c"), r#"label "a=b=c": more than one '='"#);
        assert!(refused("gpu!").contains("'!' is not allowed"));
        assert!(refused(&"k".repeat(64)).contains("longer than 63 characters"));
    }

    #[test]
    fn a_key_is_given_once() {
        let twice = Labels::parse(["region=eu", "region=us"]).unwrap_err().to_string();
        assert_eq!(
            twice,
            r#"label key "region" is given twice (region=eu and region=us); a key has one value"#
        );
        assert!(Placement::parse(["gpu", "gpu"]).is_err());
    }

    #[test]
    fn a_placement_is_met_by_the_labels_it_names() {
        let carried = Labels::parse(["region=eu", "gpu=a100"]).unwrap();
        assert_eq!(carried.written(), ["gpu=a100", "region=eu"]);
        let on = |texts: &[&str]| Placement::parse(texts).unwrap();
        assert!(on(&[]).is_met_by(&Labels::default()), "no labels: anywhere");
        assert!(on(&["region=eu", "gpu"]).is_met_by(&carried), "a bare key: any value");
        assert!(on(&["gpu=a100"]).is_met_by(&carried));
        assert!(!on(&["gpu=h100"]).is_met_by(&carried), "another value");
        assert!(!on(&["region=eu", "ssd"]).is_met_by(&carried));
        assert!(!on(&["gpu=a100"]).is_met_by(&Labels::parse(["gpu"]).unwrap()), "a value needs the value");
        let placement = on(&["region=eu", "ssd"]);
        assert_eq!(placement.unmet(&carried).map(ToString::to_string).collect::<Vec<_>>(), ["ssd"]);
        assert_eq!(placement.to_string(), "region=eu, ssd");
        assert_eq!(on(&[]).to_string(), "anywhere");
        assert_eq!(
            placement.refused_alone(&carried).unwrap(),
            "placed on region=eu, ssd, but this scheduler runs without a coordinator and does not carry ssd \
             (its labels: gpu=a100, region=eu); no other member could run the job"
        );
        assert_eq!(on(&["gpu"]).refused_alone(&carried), None);
    }
}

//! The daemon's reader of `PUT /api/v1/jobs/{name}` bodies (`--jobs-from-state`): the
//! body's fields as the one `[[job]]` table of a jobs file, read by the jobs file's parser
//! and turned into the state's definition as `slotcron jobs put` does — the same keys,
//! the same checks, the same messages.

use slotcron::JobDefinition;
use slotcron_admin::{BodyFormat, DefinitionReader, JobBody};

use crate::jobs_file::{self, Format, Problem};
use crate::state_jobs::{self, COMMAND_HANDLER, Listed};

/// Reads a job's fields with the jobs file's parser.
#[derive(Debug, Clone, Copy, Default)]
pub struct StateJobReader;

impl DefinitionReader for StateJobReader {
    fn read(&self, name: &str, body: JobBody<'_>, stored: &[JobDefinition]) -> Result<JobDefinition, String> {
        let mut table = table(body).map_err(|reason| format!("job {name:?}: {reason}"))?;
        match table.get("name") {
            Some(toml::Value::String(given)) if given != name => {
                return Err(format!(
                    "job {name:?}: name: the body names the job {given:?}; it must be the path's"
                ));
            }
            Some(_) => {}
            None => _ = table.insert("name".to_owned(), name.into()),
        }
        let file = toml::Table::from_iter([("job".to_owned(), toml::Value::Array(vec![table.into()]))]);
        let parsed = jobs_file::parse(&file.to_string(), Format::Toml).map_err(|list| described(&list))?;
        let listed = Listed::of(stored.to_vec());
        let mut definitions =
            state_jobs::definitions(&parsed.jobs, &listed).map_err(|list| described(&list))?;
        match (definitions.pop(), definitions.is_empty()) {
            (Some(definition), true) => Ok(definition),
            _ => Err(format!("job {name:?}: the body must hold one job's fields")),
        }
    }

    fn owns(&self, definition: &JobDefinition) -> bool {
        definition.handler == COMMAND_HANDLER
    }

    /// Hides the values of the job's environment, as no output of `slotcron jobs` shows
    /// them: each is `(hidden)`.
    fn shown(&self, mut definition: JobDefinition) -> JobDefinition {
        if let Some(serde_json::Value::Object(env)) = definition.payload.get_mut("env") {
            env.values_mut().for_each(|value| *value = HIDDEN.into());
        }
        definition
    }
}

/// What a job's environment value is shown as.
const HIDDEN: &str = "(hidden)";

/// The body's fields as a TOML table.
fn table(body: JobBody<'_>) -> Result<toml::Table, String> {
    match body.format {
        BodyFormat::Toml => body.text.parse().map_err(|e| format!("the body is not TOML: {e}")),
        BodyFormat::Json => {
            let value: serde_json::Value =
                serde_json::from_str(body.text).map_err(|e| format!("the body is not JSON: {e}"))?;
            match value {
                serde_json::Value::Object(fields) => toml::Table::try_from(fields)
                    .map_err(|e| format!("the body cannot be a jobs file's table: {e}")),
                _ => Err("the body must be a JSON object of the job's fields".to_owned()),
            }
        }
    }
}

/// Every problem on one line, `; `-separated, each naming the job, field and reason.
fn described(problems: &[Problem]) -> String {
    problems.iter().map(Problem::to_string).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, format: BodyFormat) -> Result<JobDefinition, String> {
        StateJobReader.read("backup", JobBody { format, text }, &[])
    }

    #[test]
    fn toml_and_json_give_the_same_definition() {
        let toml =
            read("cron = \"0 3 * * *\"\ncommand = \"pg_dump app\"\ntimeout = \"10m\"\n", BodyFormat::Toml);
        let json =
            read(r#"{"cron": "0 3 * * *", "command": "pg_dump app", "timeout": "10m"}"#, BodyFormat::Json);
        assert_eq!(toml, json);
        let definition = toml.unwrap();
        assert_eq!(definition.name, "backup", "the path names the job");
        assert_eq!(definition.timeout_ms, Some(600_000));
    }

    #[test]
    fn the_environment_values_are_hidden() {
        let body = r#"{"every": "1m", "command": "x", "env": {"TOKEN": "s3cret"}}"#;
        let shown = StateJobReader.shown(read(body, BodyFormat::Json).unwrap());
        assert_eq!(shown.payload["env"], serde_json::json!({"TOKEN": HIDDEN}));
    }

    #[test]
    fn problems_name_the_job_the_field_and_the_reason() {
        let error = read(r#"{"cron": "0 3 * * *", "command": "x", "timeout": "soon"}"#, BodyFormat::Json)
            .unwrap_err();
        assert!(error.starts_with("job \"backup\": timeout: "), "{error}");
        let error =
            read("name = \"other\"\nevery = \"1m\"\ncommand = \"x\"\n", BodyFormat::Toml).unwrap_err();
        assert!(error.contains("name: the body names the job \"other\""), "{error}");
        let error = read("@reboot", BodyFormat::Toml).unwrap_err();
        assert!(error.starts_with("job \"backup\": the body is not TOML"), "{error}");
        let error = read("[1]", BodyFormat::Json).unwrap_err();
        assert!(error.contains("a JSON object"), "{error}");
    }
}

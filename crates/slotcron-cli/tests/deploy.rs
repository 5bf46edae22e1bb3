//! `deploy/`: the Dockerfile, the Compose fleet, the Kubernetes manifests, the Grafana
//! dashboard and the Prometheus rules, checked against the real binary. No container
//! runtime or cluster runs here: each container's command is run outside one, adapted
//! only where it must be (the admin address to a free loopback port, the Redis and
//! PostgreSQL hosts to the tests' own, mounted paths to temporary directories).
//!
//! Each test has its own directory, Redis server, PostgreSQL schema and ports; every
//! wait is bounded by `support::PATIENCE`, and none asserts how long anything took.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::signal::Signal;
use promql_parser::parser::{self as promql, Expr, LabelModifier};
use serde::Deserialize;
use serde_norway::Value;
use support::http::{self, free_port};
use support::postgres::Schema;
use support::redis_server::RedisServer;
use support::{Daemon, history, run, scratch, slotcron, stderr, stdout, wait_until, write};

/// The admin token the tests give the daemons.
const TOKEN: &str = "deploy-test-token";

/// What the documents say a stop may take beyond the shutdown timeout: SIGTERM, SIGKILL 5 s
/// later, recording the runs (docs/operations.md, "Shutdown time").
const STOP_MARGIN_SECONDS: u64 = 10;

/// The shutdown timeout when no `--shutdown-timeout` is given (docs/configuration.md).
const DEFAULT_SHUTDOWN_TIMEOUT_SECONDS: u64 = 20;

/// Labels Prometheus adds to every scraped series (the daemon does not serve them).
const TARGET_LABELS: [&str; 1] = ["instance"];

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy").canonicalize().unwrap()
}

fn read(relative: &str) -> String {
    let path = deploy_dir().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The documents of a YAML text (`---`-separated), `<<` merge keys applied.
fn yaml_documents(name: &str, text: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(text)
        .map(|document| {
            let mut value = Value::deserialize(document).unwrap_or_else(|e| panic!("{name}: {e}"));
            value.apply_merge().unwrap_or_else(|e| panic!("{name}: {e}"));
            value
        })
        .collect()
}

/// Every `*.yaml` / `*.yml` file under `deploy/`, relative to it, sorted.
fn yaml_files() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, found);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                found.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut found = Vec::new();
    walk(&deploy_dir(), &deploy_dir(), &mut found);
    found.sort();
    found
}

/// The one document of `relative` (under `deploy/`) of kind `kind`.
fn manifest(relative: &str, kind: &str) -> Value {
    let mut found: Vec<Value> = yaml_documents(relative, &read(relative))
        .into_iter()
        .filter(|document| document["kind"].as_str() == Some(kind))
        .collect();
    assert_eq!(found.len(), 1, "{relative}: one {kind}");
    found.remove(0)
}

fn text(value: &Value) -> &str {
    value.as_str().unwrap_or_else(|| panic!("not a string: {value:?}"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_sequence()
        .unwrap_or_else(|| panic!("not a list: {value:?}"))
        .iter()
        .map(|item| match item {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => panic!("not a string: {other:?}"),
        })
        .collect()
}

/// A duration as the daemon and Compose write them: `20s`, `1m`, `1m30s`, `5m`.
fn seconds(text: &str) -> u64 {
    let (mut total, mut number) = (0, String::new());
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => panic!("unknown unit in {text:?}"),
        };
        total += number.parse::<u64>().unwrap() * unit;
        number.clear();
    }
    assert!(number.is_empty(), "{text:?} has no unit");
    total
}

// --- Arguments -------------------------------------------------------------------------

/// A command line: finds and changes `--flag VALUE` and `--flag=VALUE` alike.
#[derive(Debug, Clone)]
struct Args(Vec<String>);

impl Args {
    /// Every value of `flag`.
    fn values(&self, flag: &str) -> Vec<String> {
        let mut values = Vec::new();
        for (i, arg) in self.0.iter().enumerate() {
            if arg == flag {
                values.push(self.0[i + 1].clone());
            } else if let Some(value) = arg.strip_prefix(flag).and_then(|rest| rest.strip_prefix('=')) {
                values.push(value.to_owned());
            }
        }
        values
    }

    fn value(&self, flag: &str) -> String {
        let values = self.values(flag);
        assert_eq!(values.len(), 1, "one {flag} in {:?}", self.0);
        values[0].clone()
    }

    /// Replaces the value of `flag`.
    fn set(&mut self, flag: &str, new: &str) {
        let mut found = false;
        for i in 0..self.0.len() {
            if self.0[i] == flag {
                self.0[i + 1] = new.to_owned();
                found = true;
            } else if self.0[i].starts_with(&format!("{flag}=")) {
                self.0[i] = format!("{flag}={new}");
                found = true;
            }
        }
        assert!(found, "no {flag} in {:?}", self.0);
    }

    /// Rewrites every path under `from` (a whole argument or a flag's value) to under `to`.
    fn map_path(&mut self, from: &str, to: &Path) {
        let to = to.to_str().unwrap();
        for arg in &mut self.0 {
            let (prefix, value) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (format!("{flag}="), value.to_owned()),
                _ => (String::new(), arg.clone()),
            };
            // A path, or a URL's path such as sqlite:/var/lib/slotcron/slotcron.db.
            if let Some(at) = value.find(from).filter(|&at| at == 0 || value[..at].ends_with(':')) {
                let rest = &value[at + from.len()..];
                if rest.is_empty() || rest.starts_with('/') {
                    *arg = format!("{prefix}{}{to}{rest}", &value[..at]);
                }
            }
        }
    }

    /// The flags (`--name`) used.
    fn flags(&self) -> Vec<String> {
        self.0
            .iter()
            .filter(|arg| arg.starts_with("--"))
            .map(|arg| arg.split_once('=').map_or(arg.as_str(), |(flag, _)| flag).to_owned())
            .collect()
    }

    fn strs(&self) -> Vec<&str> {
        self.0.iter().map(String::as_str).collect()
    }
}

/// The port of an `IP:PORT` address.
fn port_of(addr: &str) -> u16 {
    addr.rsplit_once(':').unwrap().1.parse().unwrap()
}

// --- The Dockerfile ----------------------------------------------------------------------

/// The instructions of the Dockerfile's last stage (the image): (instruction, arguments),
/// continuation lines joined.
fn image_instructions() -> Vec<(String, String)> {
    let text = read("Dockerfile");
    let mut joined = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        if let Some(start) = line.strip_suffix('\\') {
            current.push_str(start);
            current.push(' ');
            continue;
        }
        current.push_str(line);
        joined.push(std::mem::take(&mut current));
    }
    let last_from = joined.iter().rposition(|l| l.starts_with("FROM ")).expect("a FROM");
    joined[last_from..]
        .iter()
        .filter_map(|l| l.split_once(' ').map(|(i, rest)| (i.to_owned(), rest.trim().to_owned())))
        .collect()
}

/// The image's `instruction`, the last one given (as Docker takes it).
fn image(instruction: &str) -> String {
    image_instructions()
        .into_iter()
        .rev()
        .find(|(i, _)| i == instruction)
        .unwrap_or_else(|| panic!("no {instruction} in the image stage"))
        .1
}

/// An exec-form (JSON) `ENTRYPOINT` or `CMD`.
fn exec_form(instruction: &str) -> Vec<String> {
    let value = image(instruction);
    serde_json::from_str(&value).unwrap_or_else(|e| panic!("{instruction} {value}: not exec form: {e}"))
}

/// Where the image puts the binary: the ENTRYPOINT's path to `slotcron`.
fn image_binary() -> String {
    exec_form("ENTRYPOINT").into_iter().find(|a| a.ends_with("/slotcron")).expect("slotcron in ENTRYPOINT")
}

/// The ENTRYPOINT and then `args`, as the container runs them, made runnable here: the
/// image's binary is the one built, and tini (`tini --`) is left out when it is not here.
fn as_container_runs(args: &[String]) -> Vec<String> {
    let mut argv = exec_form("ENTRYPOINT");
    argv.extend(args.iter().cloned());
    if argv[0].ends_with("/tini") && !Path::new(&argv[0]).exists() {
        let end = argv.iter().position(|a| a == "--").map_or(1, |i| i + 1);
        argv.drain(..end);
    }
    let binary = image_binary();
    for arg in &mut argv {
        if *arg == binary {
            *arg = env!("CARGO_BIN_EXE_slotcron").to_owned();
        }
    }
    argv
}

/// `argv` (as [`as_container_runs`] gives it) as a command, with none of the variables
/// the daemon reads from the test's environment.
fn command_of(argv: &[String]) -> Command {
    let mut command = Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .env_remove("RUST_LOG")
        .env_remove("SLOTCRON_REDIS_URL")
        .env_remove("SLOTCRON_ADMIN")
        .env_remove("SLOTCRON_ADMIN_TOKEN");
    command
}

// --- Compose -----------------------------------------------------------------------------

fn compose() -> Value {
    let mut documents = yaml_documents("compose.yaml", &read("compose.yaml"));
    assert_eq!(documents.len(), 1);
    documents.remove(0)
}

/// Compose's interpolation of `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
/// `${NAME:?message}` and `$$`, from `vars`.
fn interpolate(text: &str, vars: &BTreeMap<&str, &str>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = rest.strip_prefix('{') {
            let end = inner.find('}').unwrap_or_else(|| panic!("unclosed ${{ in {text:?}"));
            let expression = &inner[..end];
            rest = &inner[end + 1..];
            let name_end = expression.find([':', '-', '?']).unwrap_or(expression.len());
            let (name, operator) = expression.split_at(name_end);
            let value = vars.get(name).copied().filter(|v| !v.is_empty() || !operator.starts_with(':'));
            let default = operator.trim_start_matches(':');
            match (value, default.chars().next()) {
                (Some(value), _) => out.push_str(value),
                (None, Some('-')) => out.push_str(&default[1..]),
                (None, Some('?')) => panic!("compose.yaml needs {name}: {}", &default[1..]),
                (None, _) => {}
            }
        } else {
            panic!("a bare $ in {text:?}");
        }
    }
    out.push_str(rest);
    out
}

/// The Compose services whose command is `run …` (the slotcron replicas), by name.
fn compose_replicas() -> BTreeMap<String, Value> {
    let compose = compose();
    compose["services"]
        .as_mapping()
        .unwrap()
        .iter()
        .filter(|(_, service)| {
            service["command"].as_sequence().is_some_and(|c| c.first() == Some(&"run".into()))
        })
        .map(|(name, service)| (text(name).to_owned(), service.clone()))
        .collect()
}

// --- Kubernetes --------------------------------------------------------------------------

fn deployment() -> Value {
    manifest("kubernetes/deployment.yaml", "Deployment")
}

fn container(deployment: &Value) -> Value {
    let containers = deployment["spec"]["template"]["spec"]["containers"].as_sequence().unwrap();
    assert_eq!(containers.len(), 1, "one container");
    containers[0].clone()
}

/// The container port named `name`.
fn container_port(container: &Value, name: &str) -> u16 {
    let ports = container["ports"].as_sequence().unwrap();
    let port =
        ports.iter().find(|p| p["name"].as_str() == Some(name)).unwrap_or_else(|| panic!("no port {name}"));
    port["containerPort"].as_u64().unwrap() as u16
}

/// A probe's or Service's port: a number, or the name of a container port.
fn resolve_port(container: &Value, port: &Value) -> u16 {
    match port {
        Value::Number(n) => n.as_u64().unwrap() as u16,
        Value::String(name) => container_port(container, name),
        other => panic!("not a port: {other:?}"),
    }
}

/// Kubernetes' expansion of `$(NAME)` in a container's arguments (`$$(NAME)` stays).
fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("$(") {
        if rest[..at].ends_with('$') {
            out.push_str(&rest[..at - 1]);
            out.push_str("$(");
            rest = &rest[at + 2..];
            continue;
        }
        out.push_str(&rest[..at]);
        let end = rest[at..].find(')').unwrap() + at;
        let name = &rest[at + 2..end];
        out.push_str(env.get(name).unwrap_or_else(|| panic!("$({name}) is not in the container's env")));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The secret keys the container reads, by key: its Secret must have each.
fn secret_keys(container: &Value) -> BTreeSet<String> {
    container["env"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|var| var["valueFrom"].get("secretKeyRef"))
        .map(|reference| {
            assert_eq!(text(&reference["name"]), "slotcron", "the Secret's name");
            text(&reference["key"]).to_owned()
        })
        .collect()
}

/// The container's environment as the kubelet would give it, its Secret's values from
/// `secrets` and the downward API's from a made-up pod.
fn resolve_env(container: &Value, secrets: &BTreeMap<&str, String>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for var in container["env"].as_sequence().unwrap() {
        let name = text(&var["name"]).to_owned();
        let value = if let Some(value) = var.get("value") {
            text(value).to_owned()
        } else if let Some(field) = var["valueFrom"].get("fieldRef") {
            match text(&field["fieldPath"]) {
                "metadata.name" => "slotcron-6d5f8b7c9-x7k2p".to_owned(),
                "metadata.namespace" => "default".to_owned(),
                other => panic!("no test value for fieldRef {other}"),
            }
        } else if let Some(reference) = var["valueFrom"].get("secretKeyRef") {
            let key = text(&reference["key"]);
            secrets.get(key).unwrap_or_else(|| panic!("no test value for secret key {key}")).clone()
        } else {
            panic!("{name}: no value the test can give");
        };
        env.insert(name, value);
    }
    env
}

/// A Deployment's replica started outside a cluster: its daemon, the admin address it
/// listens on here, and what it needs kept alive.
struct Pod {
    daemon: Daemon,
    addr: String,
    _redis: RedisServer,
    _schema: Schema,
    namespace: String,
}

/// Runs the Deployment's container as the kubelet would, in `dir`: its env resolved, its
/// ConfigMap written to a directory mounted where the container mounts it, its emptyDirs
/// as directories, its arguments expanded; only the admin address is moved to a free
/// loopback port, and the Secret's URLs point to a Redis server and a PostgreSQL schema
/// of the test's own.
fn start_pod(test: &str) -> Pod {
    let dir = scratch(test);
    let deployment = deployment();
    let container = container(&deployment);
    let redis = RedisServer::start(&dir);
    let schema = Schema::new(test.replace('-', "_").as_str());
    let secrets = BTreeMap::from([
        ("redis-url", redis.url()),
        ("state-url", schema.state_url()),
        ("admin-token", TOKEN.to_owned()),
    ]);
    let env = resolve_env(&container, &secrets);
    let mut args = Args(strings(&container["args"]).iter().map(|arg| expand(arg, &env)).collect());
    assert!(container.get("command").is_none(), "the image's ENTRYPOINT runs: no command");

    let volumes = deployment["spec"]["template"]["spec"]["volumes"].as_sequence().unwrap();
    let mut workdir = None;
    for mount in container["volumeMounts"].as_sequence().unwrap() {
        let volume = volumes.iter().find(|v| v["name"] == mount["name"]).expect("the mount's volume");
        let path = text(&mount["mountPath"]);
        let here = dir.join(format!("volume-{}", text(&mount["name"])));
        std::fs::create_dir_all(&here).unwrap();
        if let Some(config_map) = volume.get("configMap") {
            let map = manifest("kubernetes/configmap.yaml", "ConfigMap");
            assert_eq!(config_map["name"], map["metadata"]["name"], "the ConfigMap the volume names");
            for (key, value) in map["data"].as_mapping().unwrap() {
                write(&here, text(key), text(value));
            }
        } else {
            assert!(volume.get("emptyDir").is_some(), "{path}: a ConfigMap or an emptyDir");
        }
        if path == image("WORKDIR") {
            workdir = Some(here.clone());
        }
        args.map_path(path, &here);
    }

    let listen = args.value("--admin");
    assert_eq!(port_of(&listen), container_port(&container, "admin"), "--admin listens on the admin port");
    let addr = format!("127.0.0.1:{}", free_port());
    args.set("--admin", &addr);

    let argv = as_container_runs(&args.0);
    let mut command = command_of(&argv);
    command.envs(&env);
    let mut daemon = Daemon::spawn(command, &workdir.unwrap_or(dir));
    daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
    let namespace = env["POD_NAMESPACE"].clone();
    Pod { daemon, addr, _redis: redis, _schema: schema, namespace }
}

impl Pod {
    fn stop(mut self) {
        self.daemon.signal(Signal::SIGTERM);
        assert_eq!(self.daemon.wait_exit().code(), Some(0), "{}", self.daemon.log());
    }
}

// --- PromQL --------------------------------------------------------------------------

/// A PromQL expression and where it is.
struct Query {
    place: String,
    expr: String,
    /// Labels the place shows: a panel's `{{label}}` legend, an alert's `$labels.label`.
    shown_labels: Vec<String>,
}

/// The labels `{{name}}` and `{{ $labels.name }}` of a template.
fn template_labels(template: &str) -> Vec<String> {
    let mut labels = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        let end = rest[at..].find("}}").unwrap() + at;
        let inside = rest[at + 2..end].trim();
        if let Some(label) = inside.strip_prefix("$labels.") {
            labels.push(label.split_whitespace().next().unwrap().to_owned());
        } else if inside.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            labels.push(inside.to_owned());
        }
        rest = &rest[end + 2..];
    }
    labels
}

/// Every expression of the alert rules.
fn rule_queries() -> Vec<Query> {
    let rules = yaml_documents("prometheus/alerts.yaml", &read("prometheus/alerts.yaml")).remove(0);
    let mut queries = Vec::new();
    for group in rules["groups"].as_sequence().unwrap() {
        for rule in group["rules"].as_sequence().unwrap() {
            let name = rule.get("alert").or_else(|| rule.get("record")).map(text).unwrap().to_owned();
            let mut shown = Vec::new();
            for (_, annotation) in rule.get("annotations").and_then(Value::as_mapping).into_iter().flatten() {
                shown.extend(template_labels(text(annotation)));
            }
            queries.push(Query {
                place: format!("rule {name}"),
                expr: text(&rule["expr"]).to_owned(),
                shown_labels: shown,
            });
        }
    }
    queries
}

fn dashboard() -> serde_json::Value {
    serde_json::from_str(&read("grafana/slotcron.json")).expect("the dashboard is JSON")
}

/// Every expression of the dashboard's panels, with Grafana's variables replaced by what
/// they stand for; a `label_values(METRIC, LABEL)` variable as `METRIC` by `LABEL`.
fn dashboard_queries() -> Vec<Query> {
    let dashboard = dashboard();
    let grafana = |expr: &str| {
        expr.replace("$__rate_interval", "5m")
            .replace("$__range", "1h")
            .replace("$job", ".*")
            .replace("${job}", ".*")
    };
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push(Query {
                place: format!("panel {:?}", panel["title"].as_str().unwrap()),
                expr: grafana(target["expr"].as_str().unwrap()),
                shown_labels: template_labels(target["legendFormat"].as_str().unwrap_or_default()),
            });
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        let Some(query) = variable["query"]["query"].as_str() else { continue };
        let inner =
            query.strip_prefix("label_values(").and_then(|q| q.strip_suffix(')')).expect("label_values");
        let (metric, label) = inner.split_once(',').unwrap();
        queries.push(Query {
            place: format!("variable {}", variable["name"]),
            expr: format!("count by ({}) ({})", label.trim(), metric.trim()),
            shown_labels: Vec::new(),
        });
    }
    queries
}

fn parse_promql(query: &Query) -> Expr {
    promql::parse(&query.expr).unwrap_or_else(|e| panic!("{}: not PromQL: {e}\n{}", query.place, query.expr))
}

/// A selector of an expression: the metric and the labels it matches on (with each
/// matcher's operator and value).
#[derive(Debug)]
struct Selector {
    metric: String,
    matchers: Vec<(String, bool, String)>,
}

/// The selectors of `expr` and the label names its aggregations and vector matchings use.
fn walk(expr: &Expr, selectors: &mut Vec<Selector>, grouping: &mut Vec<String>) {
    let labels = |modifier: &Option<LabelModifier>, grouping: &mut Vec<String>| {
        if let Some(modifier) = modifier {
            grouping.extend(modifier.labels().labels.iter().cloned());
        }
    };
    match expr {
        Expr::Aggregate(aggregate) => {
            labels(&aggregate.modifier, grouping);
            walk(&aggregate.expr, selectors, grouping);
            if let Some(param) = &aggregate.param {
                walk(param, selectors, grouping);
            }
        }
        Expr::Unary(unary) => walk(&unary.expr, selectors, grouping),
        Expr::Binary(binary) => {
            if let Some(modifier) = &binary.modifier {
                labels(&modifier.matching, grouping);
                if let Some(card) = modifier.card.labels() {
                    grouping.extend(card.labels.iter().cloned());
                }
            }
            walk(&binary.lhs, selectors, grouping);
            walk(&binary.rhs, selectors, grouping);
        }
        Expr::Paren(paren) => walk(&paren.expr, selectors, grouping),
        Expr::Subquery(subquery) => walk(&subquery.expr, selectors, grouping),
        Expr::VectorSelector(vs) => selectors.push(selector(vs)),
        Expr::MatrixSelector(ms) => selectors.push(selector(&ms.vs)),
        Expr::Call(call) => call.args.args.iter().for_each(|arg| walk(arg, selectors, grouping)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

fn selector(vs: &promql::VectorSelector) -> Selector {
    use promql_parser::label::MatchOp;
    let metric = vs.name.clone().expect("a selector names its metric");
    let matchers = vs
        .matchers
        .matchers
        .iter()
        .filter(|m| m.name != "__name__")
        .map(|m| (m.name.clone(), matches!(m.op, MatchOp::Re(_) | MatchOp::NotRe(_)), m.value.clone()))
        .collect();
    Selector { metric, matchers }
}

/// Every query of the dashboard and the rules, parsed: (query, selectors, grouping labels).
fn all_queries() -> Vec<(Query, Vec<Selector>, Vec<String>)> {
    dashboard_queries()
        .into_iter()
        .chain(rule_queries())
        .map(|query| {
            let expr = parse_promql(&query);
            let (mut selectors, mut grouping) = (Vec::new(), Vec::new());
            walk(&expr, &mut selectors, &mut grouping);
            (query, selectors, grouping)
        })
        .collect()
}

/// The sample names of a Prometheus text exposition with the label names each carries
/// (a histogram as its `_bucket`, `_sum` and `_count` samples, as PromQL names them).
fn served(exposition: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut served: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in exposition.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let name_end = line.find(['{', ' ']).unwrap();
        let labels = served.entry(line[..name_end].to_owned()).or_default();
        if line[name_end..].starts_with('{') {
            // name="value",… with values quoted, `\"` and `\\` escaped.
            let mut rest = &line[name_end + 1..];
            while let Some(eq) = rest.find("=\"") {
                labels.insert(rest[..eq].trim_start_matches(',').to_owned());
                let mut chars = rest[eq + 2..].char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => {
                            end = Some(eq + 2 + i + 1);
                            break;
                        }
                        _ => {}
                    }
                }
                rest = &rest[end.unwrap()..];
                if rest.starts_with('}') {
                    break;
                }
            }
        }
    }
    served
}

/// The outcomes the daemon records, as `slotcron history --outcome` lists them.
fn known_outcomes() -> Vec<String> {
    let out = run(&["history", "--outcome", "no-such-outcome", "--state", "memory"]);
    let message = stderr(&out);
    let list = message.split("write one of ").nth(1).unwrap_or_else(|| panic!("{message}"));
    list.lines().next().unwrap().split(", ").map(str::to_owned).collect()
}

// --- Tests -------------------------------------------------------------------------------

#[test]
fn every_yaml_file_and_the_dashboard_parse() {
    let files = yaml_files();
    for expected in [
        "compose.yaml",
        "kubernetes/configmap.yaml",
        "kubernetes/deployment.yaml",
        "kubernetes/kustomization.yaml",
        "kubernetes/pdb.yaml",
        "kubernetes/secret.example.yaml",
        "kubernetes/service.yaml",
        "kubernetes/servicemonitor.yaml",
        "prometheus/alerts.yaml",
    ] {
        assert!(files.contains(&expected.to_owned()), "{expected} missing from {files:?}");
    }
    for file in &files {
        let documents = yaml_documents(file, &read(file));
        assert!(!documents.is_empty(), "{file}: no document");
        for document in &documents {
            assert!(document.is_mapping(), "{file}: not a mapping: {document:?}");
            if file.starts_with("kubernetes/") {
                assert!(document["apiVersion"].is_string() && document["kind"].is_string(), "{file}");
                if document["kind"] != "Kustomization" {
                    assert!(document["metadata"]["name"].is_string(), "{file}: no name");
                }
            }
        }
    }
    // kustomization.yaml lists the manifests `kubectl apply -k` applies, each a file here.
    let kustomization = manifest("kubernetes/kustomization.yaml", "Kustomization");
    for resource in strings(&kustomization["resources"]) {
        assert!(files.contains(&format!("kubernetes/{resource}")), "{resource} is not a file");
    }

    let dashboard = dashboard();
    assert_eq!(dashboard["uid"], "slotcron");
    let panels = dashboard["panels"].as_array().unwrap();
    let ids: BTreeSet<u64> = panels.iter().map(|p| p["id"].as_u64().unwrap()).collect();
    assert_eq!(ids.len(), panels.len(), "unique panel ids");
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let title = panel["title"].as_str().unwrap();
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("{title}: no targets"));
        assert!(!targets.is_empty(), "{title}: no targets");
        for target in targets {
            assert!(target["expr"].is_string(), "{title}: a target without expr");
            assert_eq!(target["datasource"]["uid"], "${datasource}", "{title}: the datasource variable");
        }
        for key in ["h", "w", "x", "y"] {
            assert!(panel["gridPos"][key].is_u64(), "{title}: gridPos.{key}");
        }
    }
}

#[test]
fn the_dashboard_and_alert_expressions_are_promql() {
    let queries: Vec<Query> = dashboard_queries().into_iter().chain(rule_queries()).collect();
    assert!(queries.len() > 20, "{} queries", queries.len());
    for query in &queries {
        parse_promql(query);
    }
}

#[test]
fn every_flag_of_the_container_commands_is_one_slotcron_run_takes() {
    let help = run(&["run", "--help"]);
    assert_eq!(help.status.code(), Some(0), "{}", stderr(&help));
    // The flags as `--help` lists them: lines such as `      --admin <ADDR>`.
    let known: BTreeSet<String> = stdout(&help)
        .lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .flat_map(|line| line.split([' ', ',']).filter(|word| word.starts_with("--")).map(str::to_owned))
        .collect();
    assert!(known.contains("--instance") && known.contains("--state"), "{known:?}");
    let mut commands = vec![("the Dockerfile's CMD".to_owned(), exec_form("CMD"))];
    for (name, service) in compose_replicas() {
        commands.push((format!("compose service {name}"), strings(&service["command"])));
    }
    commands.push(("the Deployment's args".to_owned(), strings(&container(&deployment())["args"])));
    assert_eq!(commands.len(), 5, "the image, three Compose replicas, the Deployment");
    for (what, args) in commands {
        assert_eq!(args[0], "run", "{what}: after the ENTRYPOINT (the binary), `run`");
        for flag in Args(args).flags() {
            assert!(known.contains(&flag), "{what}: {flag} is not a flag of slotcron run: {known:?}");
        }
    }
}

#[test]
fn the_configmap_holds_the_example_jobs_file_and_slotcron_check_accepts_both() {
    let map = manifest("kubernetes/configmap.yaml", "ConfigMap");
    let in_map = text(&map["data"]["jobs.toml"]);
    assert_eq!(in_map, read("jobs.toml"), "the ConfigMap's jobs.toml is deploy/jobs.toml");
    let dir = scratch("deploy-check");
    let path = write(&dir, "jobs.toml", in_map);
    let out = run(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("all valid"), "{}", stdout(&out));

    // What Compose mounts at the path the commands read.
    for (name, service) in compose_replicas() {
        let volumes = strings(&service["volumes"]);
        let jobs = strings(&service["command"])[1].clone();
        let mount = volumes.iter().find(|v| v.split(':').nth(1) == Some(jobs.as_str()));
        let source =
            mount.unwrap_or_else(|| panic!("{name}: nothing mounted at {jobs}")).split(':').next().unwrap();
        let out = run(&["check", deploy_dir().join(source).to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
    }
}

#[test]
fn the_image_user_is_numeric_and_not_root_and_the_deployment_runs_as_it() {
    let user = image("USER");
    let (uid, gid) = user.split_once(':').unwrap_or((&user, &user));
    let (uid, gid): (u64, u64) = (uid.parse().expect("a numeric uid"), gid.parse().expect("a numeric gid"));
    assert_ne!(uid, 0);
    let pod = &deployment()["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(pod["runAsNonRoot"], true);
    assert_eq!(pod["runAsUser"].as_u64(), Some(uid));
    assert_eq!(pod["runAsGroup"].as_u64(), Some(gid));
}

#[test]
fn the_grace_periods_exceed_the_shutdown_timeout_by_the_documented_margin() {
    let deployment = deployment();
    let args = Args(strings(&container(&deployment)["args"]));
    let timeout =
        args.values("--shutdown-timeout").first().map_or(DEFAULT_SHUTDOWN_TIMEOUT_SECONDS, |t| seconds(t));
    let grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        grace >= timeout + STOP_MARGIN_SECONDS,
        "terminationGracePeriodSeconds {grace} < {timeout} s + 10 s"
    );

    for (name, service) in compose_replicas() {
        let args = Args(strings(&service["command"]));
        let timeout = args
            .values("--shutdown-timeout")
            .first()
            .map_or(DEFAULT_SHUTDOWN_TIMEOUT_SECONDS, |t| seconds(t));
        let grace = seconds(text(&service["stop_grace_period"]));
        assert!(
            grace >= timeout + STOP_MARGIN_SECONDS,
            "{name}: stop_grace_period {grace} s < {timeout} s + 10 s"
        );
    }
}

#[test]
fn the_service_pdb_and_servicemonitor_select_the_deployments_pods_and_admin_port() {
    let deployment = deployment();
    let container = container(&deployment);
    let admin = container_port(&container, "admin");
    let pod_labels = deployment["spec"]["template"]["metadata"]["labels"].as_mapping().unwrap().clone();
    let selects_pods = |selector: &Value, what: &str| {
        for (key, value) in selector.as_mapping().unwrap() {
            assert_eq!(pod_labels.get(key), Some(value), "{what} selects label {key:?} the pods lack");
        }
    };
    selects_pods(&deployment["spec"]["selector"]["matchLabels"], "the Deployment");

    let service = manifest("kubernetes/service.yaml", "Service");
    selects_pods(&service["spec"]["selector"], "the Service");
    let port = &service["spec"]["ports"][0];
    assert_eq!(resolve_port(&container, &port["targetPort"]), admin, "the Service targets the admin port");

    let pdb = manifest("kubernetes/pdb.yaml", "PodDisruptionBudget");
    selects_pods(&pdb["spec"]["selector"]["matchLabels"], "the PodDisruptionBudget");

    let monitor = manifest("kubernetes/servicemonitor.yaml", "ServiceMonitor");
    let service_labels = service["metadata"]["labels"].as_mapping().unwrap();
    for (key, value) in monitor["spec"]["selector"]["matchLabels"].as_mapping().unwrap() {
        assert_eq!(service_labels.get(key), Some(value), "the ServiceMonitor selects the Service by {key:?}");
    }
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], port["name"], "the ServiceMonitor scrapes the Service's admin port");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(endpoint["honorLabels"], true, "the metrics' job label is kept");

    let annotations = &deployment["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(text(&annotations["prometheus.io/port"]).parse::<u16>().unwrap(), admin);
    assert_eq!(annotations["prometheus.io/path"], "/metrics");

    // The Secret's example has every key the container reads.
    let secret = manifest("kubernetes/secret.example.yaml", "Secret");
    assert_eq!(secret["metadata"]["name"], "slotcron");
    for key in secret_keys(&container) {
        assert!(secret["stringData"].get(key.as_str()).is_some(), "secret.example.yaml lacks {key}");
    }
}

#[test]
fn the_deployments_container_runs_and_answers_its_probes_on_the_admin_port() {
    let deployment = deployment();
    let container = container(&deployment);
    let admin = container_port(&container, "admin");
    let mut probes = Vec::new();
    for probe in ["startupProbe", "livenessProbe", "readinessProbe"] {
        let get = &container[probe]["httpGet"];
        assert_eq!(resolve_port(&container, &get["port"]), admin, "{probe} is on the admin port");
        probes.push((probe, text(&get["path"]).to_owned()));
    }
    assert_eq!(
        probes.iter().map(|(_, path)| path.as_str()).collect::<Vec<_>>(),
        ["/healthz", "/healthz", "/readyz"]
    );

    let pod = start_pod("deploy-k8s-probes");
    let bearer = [("authorization", &*format!("Bearer {TOKEN}"))];
    for (probe, path) in &probes {
        wait_until(&format!("{probe} {path} answering 200"), || {
            http::get(&pod.addr, path, &bearer).status == 200
        });
    }
    // The names clients use: the Service's (short and in the namespace), and localhost on
    // any port (kubectl port-forward); with a token, any Host is accepted.
    for host in ["slotcron:9090", &format!("slotcron.{}.svc:9090", pod.namespace), "localhost:9090"] {
        let jobs = http::get_with(&pod.addr, "/api/v1/jobs", &[("host", host), bearer[0]]);
        assert_eq!(jobs.status, 200, "Host {host}: {}", jobs.body);
        let names: Vec<String> = jobs.json()["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["heartbeat", "nightly-cleanup", "report"], "the ConfigMap's jobs");
    }
    pod.stop();
}

#[test]
fn the_deployments_probes_and_metrics_answer_the_kubelet_and_prometheus_without_a_token() {
    // The kubelet and Prometheus send no token, and the pod's IP as the Host.
    let pod = start_pod("deploy-k8s-kubelet");
    let container = container(&deployment());
    let mut paths: Vec<String> = ["startupProbe", "livenessProbe", "readinessProbe"]
        .iter()
        .map(|probe| text(&container[*probe]["httpGet"]["path"]).to_owned())
        .collect();
    paths.push(
        text(&deployment()["spec"]["template"]["metadata"]["annotations"]["prometheus.io/path"]).to_owned(),
    );
    let host = format!("10.244.1.17:{}", container_port(&container, "admin"));
    // The kubelet retries the startup probe until the daemon has started; then the rest.
    wait_until(&format!("startupProbe {} answering 200 without a token", paths[0]), || {
        http::get_with(&pod.addr, &paths[0], &[("host", &host)]).status == 200
    });
    for path in &paths {
        let answer = http::get_with(&pod.addr, path, &[("host", &host)]);
        assert_eq!(answer.status, 200, "GET {path} with Host {host} and no token: {}", answer.body);
    }
    pod.stop();
}

#[test]
fn the_compose_replicas_run_as_one_fleet_and_their_healthcheck_passes() {
    let dir = scratch("deploy-compose");
    let compose = compose();
    let replicas = compose_replicas();
    assert_eq!(replicas.keys().collect::<Vec<_>>(), ["slotcron-a", "slotcron-b", "slotcron-c"]);
    let redis = RedisServer::start(&dir);
    let schema = Schema::new("deploy_compose");
    let vars = BTreeMap::from([("SLOTCRON_ADMIN_TOKEN", TOKEN)]);
    let services: BTreeSet<&str> =
        compose["services"].as_mapping().unwrap().keys().map(|k| k.as_str().unwrap()).collect();
    let host_of = |url: &str| {
        url.split("://")
            .nth(1)
            .unwrap()
            .rsplit('@')
            .next()
            .unwrap()
            .split([':', '/'])
            .next()
            .unwrap()
            .to_owned()
    };

    let mut fleet = Vec::new();
    let mut instances = BTreeSet::new();
    for (name, service) in &replicas {
        let mut args = Args(strings(&service["command"]).iter().map(|arg| interpolate(arg, &vars)).collect());
        instances.insert(args.value("--instance"));
        let redis_url = args.value("--redis");
        assert!(services.contains(host_of(&redis_url).as_str()), "{name}: --redis {redis_url} is a service");
        args.set("--redis", &redis.url());
        let state = args.value("--state");
        assert!(state.starts_with("postgres://"), "{name}: a shared PostgreSQL state");
        assert!(services.contains(host_of(&state).as_str()), "{name}: --state {state} is a service");
        args.set("--state", &schema.state_url());
        let here = dir.join(name);
        std::fs::create_dir_all(&here).unwrap();
        for volume in strings(&service["volumes"]) {
            let mut parts = volume.split(':');
            let (source, target) = (parts.next().unwrap(), parts.next().unwrap());
            let copy = here.join(Path::new(target).file_name().unwrap());
            std::fs::copy(deploy_dir().join(source), &copy).unwrap();
            args.map_path(target, &copy);
        }
        let listen = args.value("--admin");
        let published = strings(&service["ports"]);
        let (host_port, container_port) = {
            let parts: Vec<&str> = published[0].rsplitn(3, ':').collect();
            (parts[1].to_owned(), parts[0].parse::<u16>().unwrap())
        };
        assert_eq!(port_of(&listen), container_port, "{name}: --admin listens on the published port");
        let addr = format!("127.0.0.1:{}", free_port());
        args.set("--admin", &addr);
        let mut command = command_of(&as_container_runs(&args.0));
        for (key, value) in service["environment"].as_mapping().unwrap() {
            command.env(text(key), interpolate(text(value), &vars));
        }
        let mut daemon = Daemon::spawn(command, &here);
        daemon.wait_for("for the admin API", |line| line.contains("admin API listening"));
        fleet.push((name.clone(), daemon, addr, host_port));
    }
    assert_eq!(instances.len(), 3, "three distinct instances: {instances:?}");

    let bearer = ("authorization", format!("Bearer {TOKEN}"));
    for (name, _, addr, _) in &fleet {
        wait_until(&format!("{name} seeing three members"), || {
            let metrics = http::get(addr, "/metrics", &[(bearer.0, &bearer.1)]).body;
            metrics.lines().any(|l| l == "slotcron_fleet_members 3")
        });
    }
    let state = schema.state_url();
    wait_until("a heartbeat run", || {
        history(&dir, &["heartbeat", "--state", &state]).iter().any(|r| r.outcome == "succeeded")
    });
    let runs = history(&dir, &["heartbeat", "--state", &state]);
    let mut ran: BTreeMap<String, usize> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.ran()) {
        *ran.entry(run.trigger.to_string()).or_default() += 1;
    }
    assert!(ran.values().all(|&n| n == 1), "each heartbeat trigger ran once in the fleet: {runs:?}");

    // Each replica's API, by the names its clients use: the published port on the host's
    // loopback, and the service's name in the Compose network.
    for (name, _, addr, host_port) in &fleet {
        for host in
            [format!("localhost:{host_port}"), format!("127.0.0.1:{host_port}"), format!("{name}:9090")]
        {
            let answer = http::get_with(addr, "/api/v1/jobs", &[("host", &host), (bearer.0, &bearer.1)]);
            assert_eq!(answer.status, 200, "{name} with Host {host}: {}", answer.body);
        }
    }

    // The healthcheck, the binary as a client of its own API with the service's token.
    let (name, service) = replicas.iter().next().unwrap();
    let test = strings(&service["healthcheck"]["test"]);
    assert_eq!(test[0], "CMD");
    assert_eq!(test[1], image_binary(), "{name}: the healthcheck runs the image's binary");
    let mut check = Args(test[2..].to_vec());
    let url = check.value("--admin-url");
    assert_eq!(port_of(&url), 9090, "{name}: the healthcheck asks the admin port");
    check.set("--admin-url", &format!("http://{}", fleet[0].2));
    let out = slotcron().args(check.strs()).env("SLOTCRON_ADMIN_TOKEN", TOKEN).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "the healthcheck: {}", stderr(&out));
    assert!(stdout(&out).contains("heartbeat"), "{}", stdout(&out));

    for (_, mut daemon, _, _) in fleet {
        daemon.signal(Signal::SIGTERM);
        assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    }
}

#[test]
fn the_images_command_runs_the_example_jobs_outside_a_container() {
    let dir = scratch("deploy-image");
    let cmd = exec_form("CMD");
    let mut args = Args(cmd.clone());
    // The jobs file is mounted at the path CMD names; the state goes to the volume.
    let jobs = cmd[1].clone();
    let volume = image("VOLUME");
    let workdir = image("WORKDIR");
    let mounted = dir.join("etc");
    std::fs::create_dir_all(&mounted).unwrap();
    let volume_here = dir.join("volume");
    std::fs::create_dir_all(&volume_here).unwrap();
    std::fs::copy(deploy_dir().join("jobs.toml"), mounted.join("jobs.toml")).unwrap();
    args.map_path(&jobs, &mounted.join("jobs.toml"));
    args.map_path(&volume, &volume_here);
    let mut command = command_of(&as_container_runs(&args.0));
    for (name, value) in image("ENV").split_whitespace().map(|kv| kv.split_once('=').unwrap()) {
        command.env(name, value);
    }
    assert_eq!(workdir, volume, "the working directory is the volume");
    let mut daemon = Daemon::spawn(command, &volume_here);
    daemon.wait_for("a heartbeat run", |line| {
        line.contains("run finished") && line.contains("heartbeat") && line.contains("succeeded")
    });
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    let state = args.value("--state");
    let db = Path::new(state.strip_prefix("sqlite:").expect("a SQLite state"));
    assert!(db.starts_with(&volume_here) && db.exists(), "the state {} is in the volume", db.display());
    let runs = history(&volume_here, &["heartbeat", "--state", &state]);
    assert!(runs.iter().any(|r| r.outcome == "succeeded"), "{runs:?}");
}

/// Jobs whose series the dashboard and the rules read: `ok` succeeds, `broken` fails,
/// `idle` is paused.
const METRIC_JOBS: &str = r#"[[job]]
name = "ok"
every = "1s"
command = "true"

[[job]]
name = "broken"
every = "1s"
command = "exit 3"

[[job]]
name = "idle"
cron = "0 3 * * *"
command = "true"
"#;

#[test]
fn every_metric_and_label_of_the_dashboard_and_the_alerts_is_served_by_the_daemon() {
    let dir = scratch("deploy-metrics");
    write(&dir, "jobs.toml", METRIC_JOBS);
    let redis = RedisServer::start(&dir);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut daemon =
        Daemon::run(&dir, &["jobs.toml", "--redis", &redis.url(), "--instance", "m-1", "--admin", &addr]);
    daemon.wait_for("a success", |l| {
        l.contains("run finished") && l.contains(r#"job="ok""#) && l.contains("succeeded")
    });
    daemon.wait_for("a failure", |l| {
        l.contains("run finished") && l.contains(r#"job="broken""#) && l.contains("failed")
    });
    let paused = http::post(&addr, "/api/v1/jobs/idle/pause", &[("content-type", "application/json")], "");
    assert_eq!(paused.status, 200, "{}", paused.body);
    // The coordinator goes away: its errors are counted.
    drop(redis);
    daemon.wait_for("a skip", |l| l.contains(r#"outcome="skipped-backend-unavailable""#));
    let exposition = http::get(&addr, "/metrics", &[]).body;
    let served = served(&exposition);

    let mut missing = BTreeSet::new();
    for (query, selectors, grouping) in all_queries() {
        let mut labels_here: BTreeSet<String> = TARGET_LABELS.iter().map(|l| l.to_string()).collect();
        let mut all_served = true;
        for selector in &selectors {
            let Some(labels) = served.get(&selector.metric) else {
                missing.insert(format!("{} (in {})", selector.metric, query.place));
                all_served = false;
                continue;
            };
            labels_here.extend(labels.iter().cloned());
            for (label, _, _) in &selector.matchers {
                if !labels.contains(label) && !TARGET_LABELS.contains(&label.as_str()) {
                    missing.insert(format!("label {label} of {} (in {})", selector.metric, query.place));
                }
            }
        }
        // The labels a query groups by or shows, once its metrics are there.
        for label in grouping.iter().chain(&query.shown_labels).filter(|_| all_served) {
            if !labels_here.contains(label) {
                missing.insert(format!("label {label} (in {}: {})", query.place, query.expr.trim()));
            }
        }
    }
    daemon.signal(Signal::SIGTERM);
    assert_eq!(daemon.wait_exit().code(), Some(0), "{}", daemon.log());
    assert!(
        missing.is_empty(),
        "not served by the daemon's /metrics:\n  {}\nserved:\n{exposition}",
        missing.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}

#[test]
fn every_outcome_the_dashboard_and_the_alerts_name_is_one_the_daemon_records() {
    let known = known_outcomes();
    assert!(known.contains(&"skipped-clock-skew".to_owned()), "{known:?}");
    let mut named = 0;
    for (query, selectors, _) in all_queries() {
        for (label, regex, value) in selectors.iter().flat_map(|s| &s.matchers) {
            if label != "outcome" {
                continue;
            }
            let alternatives: Vec<&str> = if *regex { value.split('|').collect() } else { vec![value] };
            for alternative in alternatives {
                named += 1;
                let found = match alternative.strip_suffix(".*") {
                    Some(prefix) => known.iter().any(|k| k.starts_with(prefix)),
                    None => known.iter().any(|k| k == alternative),
                };
                assert!(found, "{}: outcome {alternative:?} is none of {known:?}", query.place);
            }
        }
    }
    assert!(named > 10, "{named} outcomes named");
}

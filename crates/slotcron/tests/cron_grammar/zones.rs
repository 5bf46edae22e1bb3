//! The IANA zones the random cron tests draw from: those of the conformance vectors
//! (`data/cron_conformance.jsonl`), and Kathmandu (+05:45) and São Paulo (DST until 2019).
//! UTC comes first: a test that wants offset changes draws from the others.
//!
//! Plain data with no dependency: the property tests use it as `cron_grammar::zones`,
//! and the fuzz target (`fuzz/`, outside the workspace) includes this file by its path.

pub const ZONES: [&str; 15] = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "America/Santiago",
    "America/Havana",
    "Pacific/Chatham",
    "Pacific/Apia",
    "Asia/Shanghai",
    "Asia/Kolkata",
    "Asia/Kathmandu",
    "Asia/Tokyo",
    "America/Sao_Paulo",
];

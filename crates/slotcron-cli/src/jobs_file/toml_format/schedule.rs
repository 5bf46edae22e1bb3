//! The schedule of a job: exactly one of `every`, `cron`, `at` and `after`, and the
//! `timezone` of a cron or local `at` schedule.

use jiff::tz::TimeZone;
use slotcron::{CronSchedule, parse_duration};
use toml::Spanned;
use toml::de::DeValue;

use super::Reader;
use super::table::{DURATION, Table, ZONE};
use crate::jobs_file::ScheduleSpec;
use crate::{cron_error, zone};

/// The keys of which a job sets exactly one.
const SCHEDULE_KEYS: [&str; 4] = ["every", "cron", "at", "after"];

impl Reader<'_> {
    /// The one schedule of the job, and its key.
    pub(super) fn schedule(
        &mut self,
        table: &Table<'_, '_>,
        default_zone: &Option<TimeZone>,
    ) -> Option<(ScheduleSpec, &'static str)> {
        let given: Vec<(&'static str, &Spanned<DeValue<'_>>)> =
            SCHEDULE_KEYS.into_iter().filter_map(|key| table.get(key).map(|value| (key, value))).collect();
        let zone = self.zone(table, given.first().map(|(key, _)| *key), default_zone);
        let (key, value) = match given.as_slice() {
            [] => {
                self.missing(table, "schedule", "set exactly one of every, cron, at, after");
                return None;
            }
            [one] => *one,
            [(first, first_value), rest @ ..] => {
                let first_line = self.line(first_value.span());
                for (key, value) in rest {
                    let reason = format!(
                        "{key} and {first} (line {first_line}) both set; a job has exactly one of every, cron, at, after"
                    );
                    self.problem(table, key, value.span(), reason);
                }
                return None;
            }
        };
        let spec = match key {
            "every" | "after" => {
                let text = self.string(table, key, DURATION)?;
                let spec = if key == "every" { ScheduleSpec::Every } else { ScheduleSpec::After };
                parse_duration(text.get_ref()).map(spec).map_err(|e| e.to_string())
            }
            "cron" => {
                let text = self.string(table, key, "a cron expression string like \"0 3 * * *\"")?;
                match (CronSchedule::parse(text.get_ref()), zone) {
                    (Ok(cron), Some(zone)) => Ok(ScheduleSpec::Cron(cron.with_time_zone(zone))),
                    // An invalid zone is reported on its own line.
                    (Ok(_), None) => return None,
                    (Err(e), _) => Err(cron_error::reason(&e, 0)),
                }
            }
            _ => self.at(table, value, zone.as_ref())?.map(ScheduleSpec::At),
        };
        match spec {
            Ok(spec) => Some((spec, key)),
            Err(reason) => {
                self.problem(table, key, value.span(), reason);
                None
            }
        }
    }

    /// The zone of a cron job or a local `at`: its own `timezone`, else the file's.
    /// `None` if invalid (and reported), or given for a schedule it does not apply to.
    fn zone(
        &mut self,
        table: &Table<'_, '_>,
        schedule_key: Option<&str>,
        default_zone: &Option<TimeZone>,
    ) -> Option<TimeZone> {
        let Some(given) = table.get("timezone") else { return default_zone.clone() };
        let name = self.string(table, "timezone", ZONE)?;
        if let Some(key) = schedule_key.filter(|key| !["cron", "at"].contains(key)) {
            let reason = format!("applies to cron and at schedules only, and this job's schedule is {key}");
            self.problem(table, "timezone", given.span(), reason);
            return None;
        }
        zone::lookup(name.get_ref())
            .map_err(|reason| self.problem(table, "timezone", name.span(), reason))
            .ok()
    }
}

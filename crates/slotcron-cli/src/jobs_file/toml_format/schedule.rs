//! The schedule of a job: exactly one of `every`, `cron`, `at`, `after` and `run_after`, the
//! `at_time` of an `every` of whole days, and the `timezone` of a cron, local `at` or
//! `at_time` schedule.

use jiff::tz::TimeZone;
use slotcron::{CronSchedule, EveryDays, ScheduleError, parse_duration};
use toml::Spanned;
use toml::de::DeValue;

use super::Reader;
use super::table::{DURATION, Table, ZONE};
use crate::jobs_file::ScheduleSpec;
use crate::zone;

/// Seconds in a day of `every` with `at_time`.
const SECONDS_PER_DAY: u64 = 86_400;

/// The keys of which a job sets exactly one.
const SCHEDULE_KEYS: [&str; 5] = ["every", "cron", "at", "after", "run_after"];

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
                self.missing(table, "schedule", "set exactly one of every, cron, at, after, run_after");
                return None;
            }
            [one] => *one,
            [(first, first_value), rest @ ..] => {
                let first_line = self.line(first_value.span());
                for (key, value) in rest {
                    let reason = format!(
                        "{key} and {first} (line {first_line}) both set; a job has exactly one of every, cron, at, after, run_after"
                    );
                    self.problem(table, key, value.span(), reason);
                }
                return None;
            }
        };
        let at_time = self.at_time(table, key);
        let spec = match key {
            "every" if at_time.is_some() => {
                let (text, time) = (self.string(table, key, DURATION)?, at_time.flatten()?);
                self.every_days(text.get_ref(), time.get_ref(), zone?)
            }
            "every" | "after" => {
                let text = self.string(table, key, DURATION)?;
                let spec = if key == "every" { ScheduleSpec::Every } else { ScheduleSpec::After };
                parse_duration(text.get_ref()).map(spec).map_err(|e| e.to_string())
            }
            "run_after" => {
                let text = self.string(table, key, "the name of another job of the file")?;
                Ok(ScheduleSpec::RunAfter(text.get_ref().to_string()))
            }
            "cron" => {
                let text = self.string(table, key, "a cron expression string like \"0 3 * * *\"")?;
                match (CronSchedule::parse(text.get_ref()), zone) {
                    (Ok(cron), Some(zone)) => Ok(ScheduleSpec::Cron(cron.with_time_zone(zone))),
                    // An invalid zone is reported on its own line.
                    (Ok(_), None) => return None,
                    (Err(e), _) => Err(ScheduleSpec::cron_refused(text.get_ref(), &e, 0)),
                }
            }
            _ => self.at(table, value, zone.as_ref())?.map(ScheduleSpec::At),
        };
        match spec.and_then(ScheduleSpec::checked) {
            Ok(spec) => Some((spec, key)),
            Err(reason) => {
                self.problem(table, key, value.span(), reason);
                None
            }
        }
    }

    /// The job's `at_time` (`Some(None)`: given, and reported), given only beside `every`.
    fn at_time(&mut self, table: &Table<'_, '_>, schedule_key: &str) -> Option<Option<Spanned<String>>> {
        let given = table.get("at_time")?;
        if schedule_key != "every" {
            let reason =
                format!("applies to an every of whole days only, and this job's schedule is {schedule_key}");
            self.problem(table, "at_time", given.span(), reason);
            return Some(None);
        }
        let text = self.string(table, "at_time", "a time of day string like \"04:30\"")?;
        if let Err(e) = EveryDays::new(1).and_then(|d| d.at(text.get_ref())) {
            let reason = match e {
                ScheduleError::Invalid { reason, .. } => reason,
                other => other.to_string(),
            };
            self.problem(table, "at_time", text.span(), reason);
            return Some(None);
        }
        Some(Some(Spanned::new(text.span(), text.get_ref().to_string())))
    }

    /// `every` of whole days at `at_time` in `zone`: [`EveryDays`], its days counted from
    /// 1970-01-01 in that zone, so that every replica computes the same days.
    fn every_days(&self, every: &str, at_time: &str, zone: TimeZone) -> Result<ScheduleSpec, String> {
        let period = parse_duration(every).map_err(|e| e.to_string())?;
        let days = period.as_secs() / SECONDS_PER_DAY;
        if period.subsec_nanos() != 0 || period.as_secs() % SECONDS_PER_DAY != 0 || days == 0 {
            return Err(format!(
                "with at_time, every is a whole number of days (\"1d\", \"2d\"...), got {every:?}"
            ));
        }
        let days = u32::try_from(days).map_err(|_| format!("{every:?}: too many days"))?;
        let schedule = EveryDays::new(days).and_then(|d| d.at(at_time)).map_err(|e| e.to_string())?;
        Ok(ScheduleSpec::EveryDays(schedule.in_zone(zone)))
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
        let with_at_time = schedule_key == Some("every") && table.get("at_time").is_some();
        if let Some(key) = schedule_key.filter(|key| !["cron", "at"].contains(key) && !with_at_time) {
            let reason = format!("applies to cron and at schedules only, and this job's schedule is {key}");
            self.problem(table, "timezone", given.span(), reason);
            return None;
        }
        zone::lookup(name.get_ref())
            .map_err(|reason| self.problem(table, "timezone", name.span(), reason))
            .ok()
    }
}

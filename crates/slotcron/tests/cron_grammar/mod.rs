//! A grammar of valid cron expressions for property tests: a proptest strategy that
//! builds an expression tree, renders it as text, and evaluates it on a wall-clock time
//! with its own reading of the rules of `data/cron_conformance.md` — independent of the
//! library's parser and search.

#![allow(dead_code)]

pub mod zones;

use jiff::civil::{DateTime, Weekday};
use proptest::prelude::*;

const MONTHS: [&str; 12] =
    ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// How a field spells its values.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Spelling {
    Number,
    Upper,
    Lower,
}

/// One list item of a plain field.
#[derive(Debug, Clone)]
pub enum Item {
    Value(u8),
    Range(u8, u8),
    /// `*/n`
    StarStep(u8),
    /// `a-b/n`
    RangeStep(u8, u8, u8),
    /// `a/n`: from `a` to the field's maximum.
    FromStep(u8, u8),
}

#[derive(Debug, Clone)]
pub struct Plain {
    min: u8,
    max: u8,
    names: Option<(&'static [&'static str], u8)>,
    spelling: Spelling,
    /// Empty for `*`.
    items: Vec<Item>,
}

#[derive(Debug, Clone)]
pub enum DomItem {
    Plain(Item),
    Last,
    LastWeekday,
    /// `nW`
    Nearest(u8),
}

#[derive(Debug, Clone)]
pub enum DowItem {
    Plain(Item),
    /// `nL`
    Last(u8),
    /// `n#k`
    Nth(u8, u8),
}

#[derive(Debug, Clone)]
pub enum Days<T> {
    Star,
    Question,
    Items(Vec<T>),
}

/// A valid expression (but for a day no selected month has, which the parser rejects).
#[derive(Debug, Clone)]
pub struct Expr {
    pub second: Option<Plain>,
    pub minute: Plain,
    pub hour: Plain,
    pub dom: Days<DomItem>,
    /// Spelling of numbers in the day-of-month items (always digits).
    pub month: Plain,
    pub dow: Days<DowItem>,
    dow_spelling: Spelling,
}

/// What the grammar may produce.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// `a/n` steps.
    pub from_steps: bool,
    /// `LW`.
    pub last_weekday: bool,
}

impl Dialect {
    pub const SLOTCRON: Self = Self { from_steps: true, last_weekday: true };
}

fn item(min: u8, max: u8, dialect: Dialect) -> BoxedStrategy<Item> {
    let value = min..=max;
    let pair = (min..=max, min..=max).prop_map(|(a, b)| (a.min(b), a.max(b)));
    let step = 1..=max + 3;
    let mut choices = vec![
        (4, value.clone().prop_map(Item::Value).boxed()),
        (2, pair.clone().prop_map(|(a, b)| Item::Range(a, b)).boxed()),
        (2, step.clone().prop_map(Item::StarStep).boxed()),
        (1, (pair, step.clone()).prop_map(|((a, b), n)| Item::RangeStep(a, b, n)).boxed()),
    ];
    if dialect.from_steps {
        choices.push((1, (value, step).prop_map(|(a, n)| Item::FromStep(a, n)).boxed()));
    }
    proptest::strategy::Union::new_weighted(choices).boxed()
}

fn spelling() -> impl Strategy<Value = Spelling> {
    prop_oneof![Just(Spelling::Number), Just(Spelling::Upper), Just(Spelling::Lower)]
}

fn plain(
    min: u8,
    max: u8,
    names: Option<(&'static [&'static str], u8)>,
    dialect: Dialect,
) -> impl Strategy<Value = Plain> {
    let items =
        prop_oneof![1 => Just(Vec::new()), 3 => prop::collection::vec(item(min, max, dialect), 1..=3)];
    (items, spelling()).prop_map(move |(items, spelling)| Plain { min, max, names, spelling, items })
}

fn days<T: std::fmt::Debug + Clone + 'static>(item: BoxedStrategy<T>) -> impl Strategy<Value = Days<T>> {
    prop_oneof![
        2 => Just(Days::Star),
        1 => Just(Days::Question),
        4 => prop::collection::vec(item, 1..=3).prop_map(Days::Items),
    ]
}

/// Valid expressions of `dialect`, 5 or 6 fields.
pub fn expr(dialect: Dialect) -> impl Strategy<Value = Expr> {
    let dom_item = prop_oneof![
        6 => item(1, 31, dialect).prop_map(DomItem::Plain),
        1 => Just(DomItem::Last),
        1 => Just(if dialect.last_weekday { DomItem::LastWeekday } else { DomItem::Last }),
        1 => (1..=31u8).prop_map(DomItem::Nearest),
    ]
    .boxed();
    let dow_item = prop_oneof![
        4 => item(0, 7, dialect).prop_map(DowItem::Plain),
        1 => (0..=7u8).prop_map(DowItem::Last),
        1 => (0..=7u8, 1..=5u8).prop_map(|(w, k)| DowItem::Nth(w, k)),
    ]
    .boxed();
    (
        prop::option::weighted(0.3, plain(0, 59, None, dialect)),
        plain(0, 59, None, dialect),
        plain(0, 23, None, dialect),
        days(dom_item),
        plain(1, 12, Some((&MONTHS, 1)), dialect),
        days(dow_item),
        spelling(),
    )
        .prop_map(|(second, minute, hour, dom, month, dow, dow_spelling)| Expr {
            second,
            minute,
            hour,
            dom,
            month,
            dow,
            dow_spelling,
        })
}

impl Plain {
    fn value(&self, v: u8) -> String {
        match self.names {
            Some((names, first)) if self.spelling != Spelling::Number && v >= first => {
                match names.get(usize::from(v - first)) {
                    Some(name) if self.spelling == Spelling::Lower => name.to_lowercase(),
                    Some(name) => (*name).to_owned(),
                    None => v.to_string(),
                }
            }
            _ => v.to_string(),
        }
    }

    fn render_item(&self, item: &Item) -> String {
        match *item {
            Item::Value(v) => self.value(v),
            Item::Range(a, b) => format!("{}-{}", self.value(a), self.value(b)),
            Item::StarStep(n) => format!("*/{n}"),
            Item::RangeStep(a, b, n) => format!("{}-{}/{n}", self.value(a), self.value(b)),
            Item::FromStep(a, n) => format!("{}/{n}", self.value(a)),
        }
    }

    fn render(&self) -> String {
        if self.items.is_empty() {
            return "*".into();
        }
        self.items.iter().map(|item| self.render_item(item)).collect::<Vec<_>>().join(",")
    }

    fn starts_with_star(&self) -> bool {
        matches!(self.items.first(), None | Some(Item::StarStep(_)))
    }

    fn contains(&self, v: u8) -> bool {
        self.items.is_empty() || self.items.iter().any(|item| item_contains(item, v, (self.min, self.max)))
    }
}

/// Whether `item` of a field ranging `min..=max` selects `v`.
fn item_contains(item: &Item, v: u8, (min, max): (u8, u8)) -> bool {
    let (start, end, step) = match *item {
        Item::Value(a) => (a, a, 1),
        Item::Range(a, b) => (a, b, 1),
        Item::StarStep(n) => (min, max, n),
        Item::RangeStep(a, b, n) => (a, b, n),
        Item::FromStep(a, n) => (a, max, n),
    };
    v >= start && v <= end && (v - start).is_multiple_of(step)
}

fn weekday_name(v: u8, spelling: Spelling) -> String {
    match (spelling, DAYS.get(usize::from(v))) {
        (Spelling::Upper, Some(name)) => (*name).to_owned(),
        (Spelling::Lower, Some(name)) => name.to_lowercase(),
        _ => v.to_string(),
    }
}

fn sunday_zero(weekday: Weekday) -> u8 {
    weekday.to_sunday_zero_offset() as u8
}

impl Expr {
    fn dow_plain(&self, items: Vec<Item>) -> Plain {
        Plain { min: 0, max: 7, names: Some((&DAYS, 0)), spelling: self.dow_spelling, items }
    }

    /// The expression as text.
    pub fn render(&self) -> String {
        let dom = match &self.dom {
            Days::Star => "*".to_owned(),
            Days::Question => "?".to_owned(),
            Days::Items(items) => {
                let plain = Plain { min: 1, max: 31, names: None, spelling: Spelling::Number, items: vec![] };
                items
                    .iter()
                    .map(|item| match item {
                        DomItem::Plain(item) => plain.render_item(item),
                        DomItem::Last => "L".to_owned(),
                        DomItem::LastWeekday => "LW".to_owned(),
                        DomItem::Nearest(n) => format!("{n}W"),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            }
        };
        let dow = match &self.dow {
            Days::Star => "*".to_owned(),
            Days::Question => "?".to_owned(),
            Days::Items(items) => {
                let plain = self.dow_plain(vec![]);
                items
                    .iter()
                    .map(|item| match item {
                        DowItem::Plain(item) => plain.render_item(item),
                        DowItem::Last(n) => format!("{n}L"),
                        DowItem::Nth(w, k) => format!("{}#{k}", weekday_name(*w, self.dow_spelling)),
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            }
        };
        let mut fields = Vec::new();
        fields.extend(self.second.as_ref().map(Plain::render));
        fields.extend([self.minute.render(), self.hour.render(), dom, self.month.render(), dow]);
        fields.join(" ")
    }

    /// Whether the day field's text starts with `*` or is `?` (the Vixie star rule).
    fn dom_starry(&self) -> bool {
        match &self.dom {
            Days::Star | Days::Question => true,
            Days::Items(items) => matches!(items.first(), Some(DomItem::Plain(Item::StarStep(_)))),
        }
    }

    fn dow_starry(&self) -> bool {
        match &self.dow {
            Days::Star | Days::Question => true,
            Days::Items(items) => matches!(items.first(), Some(DowItem::Plain(Item::StarStep(_)))),
        }
    }

    /// The day fields are combined with AND (Vixie cron).
    pub fn days_anded(&self) -> bool {
        self.dom_starry() || self.dow_starry()
    }

    /// Whether neither day field is exactly `*` but one starts with `*` or is `?`
    /// (`0 0 */2 * 1`): Vixie cron ANDs the two, peers that look for a plain `*` only
    /// (croner) OR them. When either field is exactly `*` the two readings agree.
    pub fn star_rule_matters(&self) -> bool {
        !matches!(self.dom, Days::Star) && !matches!(self.dow, Days::Star) && self.days_anded()
    }

    /// Whether a day-of-week range ends on a day spelled `SUN` (`SUN-SUN`, `MON-SUN`):
    /// Sunday is 0 here, while croner reads such an end as 7.
    pub fn range_ends_on_named_sunday(&self) -> bool {
        let Days::Items(items) = &self.dow else { return false };
        self.dow_spelling != Spelling::Number
            && items
                .iter()
                .any(|item| matches!(item, DowItem::Plain(Item::Range(_, 0) | Item::RangeStep(_, 0, _))))
    }

    /// A fixed-time job: seconds (6 fields), minute and hour do not start with `*`.
    pub fn fixed_time(&self) -> bool {
        self.second.iter().chain([&self.minute, &self.hour]).all(|field| !field.starts_with_star())
    }

    /// Makes the expression fire every day of every month and adds `hours` to a
    /// restricted hour field, to aim it at a DST change.
    pub fn aim_at(&mut self, hours: &[u8]) {
        (self.dom, self.dow, self.month.items) = (Days::Star, Days::Star, Vec::new());
        if !self.hour.items.is_empty() {
            self.hour.items.extend(hours.iter().map(|&h| Item::Value(h)));
        }
    }

    pub fn has_seconds(&self) -> bool {
        self.second.is_some()
    }

    fn dom_matches(&self, wall: DateTime) -> bool {
        let (day, last) = (wall.day() as u8, wall.date().days_in_month() as u8);
        let items = match &self.dom {
            Days::Star | Days::Question => return true,
            Days::Items(items) => items,
        };
        let weekday_of = |d: u8| sunday_zero(wall.date().first_of_month().weekday()).wrapping_add(d - 1) % 7;
        items.iter().any(|item| match item {
            DomItem::Plain(item) => item_contains(item, day, (1, 31)),
            DomItem::Last => day == last,
            DomItem::LastWeekday => {
                let target = match weekday_of(last) {
                    0 => last - 2,
                    6 => last - 1,
                    _ => last,
                };
                day == target
            }
            DomItem::Nearest(n) => {
                let n = *n;
                n <= last
                    && day
                        == match weekday_of(n) {
                            6 if n == 1 => 3,
                            6 => n - 1,
                            0 if n == last => n - 2,
                            0 => n + 1,
                            _ => n,
                        }
            }
        })
    }

    fn dow_matches(&self, wall: DateTime) -> bool {
        let (day, last) = (wall.day() as u8, wall.date().days_in_month() as u8);
        let weekday = sunday_zero(wall.weekday());
        let items = match &self.dow {
            Days::Star | Days::Question => return true,
            Days::Items(items) => items,
        };
        items.iter().any(|item| match item {
            DowItem::Plain(item) => {
                item_contains(item, weekday, (0, 7)) || weekday == 0 && item_contains(item, 7, (0, 7))
            }
            DowItem::Last(w) => weekday == w % 7 && day + 7 > last,
            DowItem::Nth(w, k) => weekday == w % 7 && (day - 1) / 7 + 1 == *k,
        })
    }

    /// Whether `wall` is a fire time on the wall clock.
    pub fn matches(&self, wall: DateTime) -> bool {
        let second = match &self.second {
            Some(field) => field.contains(wall.second() as u8),
            None => wall.second() == 0,
        };
        let (dom, dow) = (self.dom_matches(wall), self.dow_matches(wall));
        let day = if self.days_anded() { dom && dow } else { dom || dow };
        second
            && self.minute.contains(wall.minute() as u8)
            && self.hour.contains(wall.hour() as u8)
            && self.month.contains(wall.month() as u8)
            && day
    }
}

//! Dates, timestamps and intervals as exact integers: days, and nanoseconds in `i128` (so
//! millisecond and microsecond timestamps far outside the ±292-year nanosecond range
//! still compare exactly).

use chrono::{DateTime, Months, NaiveDate, NaiveDateTime, Timelike};

use crate::error::{Error, Result};

pub const NS_PER_DAY: i128 = 86_400 * 1_000_000_000;

pub fn floor_div(a: i128, b: i128) -> i128 {
    a.div_euclid(b)
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default()
}

pub fn date_to_days(d: NaiveDate) -> i32 {
    d.signed_duration_since(epoch()).num_days() as i32
}

fn datetime_to_ns(dt: NaiveDateTime) -> i128 {
    i128::from(dt.and_utc().timestamp()) * 1_000_000_000 + i128::from(dt.nanosecond())
}

fn ns_to_datetime(ns: i128) -> Option<NaiveDateTime> {
    let secs = i64::try_from(floor_div(ns, 1_000_000_000)).ok()?;
    let nanos = ns.rem_euclid(1_000_000_000) as u32;
    DateTime::from_timestamp(secs, nanos).map(|d| d.naive_utc())
}

pub fn format_date(days: i32) -> String {
    epoch()
        .checked_add_signed(chrono::Duration::days(i64::from(days)))
        .map(|d| d.to_string())
        .unwrap_or_else(|| format!("{days} days"))
}

pub fn format_timestamp(ns: i128) -> String {
    ns_to_datetime(ns)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S%.f").to_string())
        .unwrap_or_else(|| format!("{ns} ns"))
}

/// A date literal; a timestamp text is accepted and truncated to its date, as DuckDB's
/// `CAST('2024-01-01 10:00' AS DATE)` does.
pub fn parse_date_or_timestamp_date(s: &str) -> Result<i32> {
    let t = s.trim();
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(date_to_days(d));
    }
    let (ns, _) = parse_timestamp(t).map_err(|_| {
        Error::predicate(format!("cannot read {s:?} as a date (expected YYYY-MM-DD)"))
    })?;
    Ok(floor_div(ns, NS_PER_DAY) as i32)
}

/// A time of day (`HH:MM[:SS[.fraction]]`) as nanoseconds since midnight.
pub fn parse_time(s: &str) -> Result<i64> {
    let t = s.trim();
    for f in ["%H:%M:%S%.f", "%H:%M"] {
        if let Ok(time) = chrono::NaiveTime::parse_from_str(t, f) {
            use chrono::Timelike;
            let secs = i64::from(time.num_seconds_from_midnight());
            return Ok(secs * 1_000_000_000 + i64::from(time.nanosecond()));
        }
    }
    Err(Error::predicate(format!(
        "cannot read {s:?} as a time (expected HH:MM:SS[.fraction])"
    )))
}

/// A time of day as `HH:MM:SS.fraction`.
pub fn format_time(ns: i64) -> String {
    let (secs, frac) = (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000));
    format!(
        "{:02}:{:02}:{:02}.{frac:09}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// A timestamp literal; returns nanoseconds since the epoch and whether the text carried a
/// UTC offset (then the value is that instant in UTC).
pub fn parse_timestamp(s: &str) -> Result<(i128, bool)> {
    let t = s.trim();
    const NAIVE: [&str; 4] = [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
    ];
    for f in NAIVE {
        if let Ok(dt) = NaiveDateTime::parse_from_str(t, f) {
            return Ok((datetime_to_ns(dt), false));
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok((i128::from(date_to_days(d)) * NS_PER_DAY, false));
    }
    let zulu = t.strip_suffix('Z').or_else(|| t.strip_suffix('z'));
    if let Some(rest) = zulu {
        for f in NAIVE {
            if let Ok(dt) = NaiveDateTime::parse_from_str(rest.trim(), f) {
                return Ok((datetime_to_ns(dt), true));
            }
        }
    }
    const OFFSET: [&str; 4] = [
        "%Y-%m-%d %H:%M:%S%.f%#z",
        "%Y-%m-%dT%H:%M:%S%.f%#z",
        "%Y-%m-%d %H:%M:%S%.f %#z",
        "%Y-%m-%d %H:%M%#z",
    ];
    for f in OFFSET {
        if let Ok(dt) = DateTime::parse_from_str(t, f) {
            return Ok((datetime_to_ns(dt.naive_utc()), true));
        }
    }
    Err(Error::predicate(format!(
        "cannot read {s:?} as a timestamp (expected YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM])"
    )))
}

/// Add a calendar interval: months first (clamping the day of month, as DuckDB does), then
/// the fixed part.
pub fn add_interval(ns: i128, months: i64, fixed_ns: i128) -> Result<i128> {
    let mut out = ns;
    if months != 0 {
        let dt = ns_to_datetime(ns).ok_or_else(|| Error::predicate("timestamp out of range"))?;
        let shifted = if months > 0 {
            dt.checked_add_months(Months::new(months as u32))
        } else {
            dt.checked_sub_months(Months::new(months.unsigned_abs() as u32))
        }
        .ok_or_else(|| Error::predicate("date out of range after adding an interval"))?;
        out = datetime_to_ns(shifted);
    }
    Ok(out + fixed_ns)
}

/// `'7 days'`, `'1 day 2 hours'`, `'3 months'`, `'-1 year'`: (months, nanoseconds).
pub fn parse_interval(text: &str) -> Result<(i64, i128)> {
    let bad = || {
        Error::predicate(format!(
            "cannot read interval {text:?} (expected e.g. '7 days' or '2 hours')"
        ))
    };
    let tokens: Vec<&str> = text.split_whitespace().collect();
    if tokens.is_empty() || !tokens.len().is_multiple_of(2) {
        return Err(bad());
    }
    let (mut months, mut ns) = (0i64, 0i128);
    for pair in tokens.chunks(2) {
        let qty: i64 = pair[0].parse().map_err(|_| bad())?;
        let step_ns: i128 = match pair[1].to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" => 1_000,
            "millisecond" | "milliseconds" | "ms" => 1_000_000,
            "second" | "seconds" | "sec" | "secs" | "s" => 1_000_000_000,
            "minute" | "minutes" | "min" | "mins" | "m" => 60_000_000_000,
            "hour" | "hours" | "h" => 3_600_000_000_000,
            "day" | "days" | "d" => NS_PER_DAY,
            "week" | "weeks" | "w" => 7 * NS_PER_DAY,
            "month" | "months" | "mon" | "mons" => {
                months += qty;
                continue;
            }
            "year" | "years" | "y" => {
                months += qty * 12;
                continue;
            }
            _ => return Err(bad()),
        };
        ns += i128::from(qty) * step_ns;
    }
    Ok((months, ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_with_and_without_offsets() {
        assert_eq!(
            parse_timestamp("1970-01-01 00:00:01").unwrap(),
            (1_000_000_000, false)
        );
        assert_eq!(
            parse_timestamp("1970-01-01T01:00:00+01:00").unwrap(),
            (0, true)
        );
        assert_eq!(
            parse_timestamp("1970-01-01 00:00:00.000000001Z").unwrap(),
            (1, true)
        );
        assert_eq!(parse_timestamp("1969-12-31").unwrap().0, -NS_PER_DAY);
        assert!(parse_timestamp("yesterday").is_err());
    }

    #[test]
    fn far_dates_stay_exact() {
        let (ns, _) = parse_timestamp("9999-12-31 23:59:59.999999").unwrap();
        assert_eq!(ns % 1000, 0);
        assert!(ns > i128::from(i64::MAX));
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("7 days").unwrap(), (0, 7 * NS_PER_DAY));
        assert_eq!(parse_interval("1 year 2 months").unwrap(), (14, 0));
        assert_eq!(parse_interval("-2 hours").unwrap(), (0, -7_200_000_000_000));
        assert!(parse_interval("soon").is_err());
        let jan31 =
            i128::from(date_to_days(NaiveDate::from_ymd_opt(2023, 1, 31).unwrap())) * NS_PER_DAY;
        let feb28 =
            i128::from(date_to_days(NaiveDate::from_ymd_opt(2023, 2, 28).unwrap())) * NS_PER_DAY;
        assert_eq!(add_interval(jan31, 1, 0).unwrap(), feb28);
    }
}

//! Bringing a literal into a column's domain, exactly.
//!
//! A literal either is a value of the column's type (`Exact`) or lies strictly between two
//! neighbouring values of it (`Between`), which is how `int_col < 2.5` becomes
//! `int_col <= 2` and `int8_col = 1000` becomes "never, unless NULL". No cast ever rounds
//! a comparison into a different answer.
//!
//! The comparison happens in the type DuckDB would pick: an INTEGER or DECIMAL literal is
//! brought into the column's type, but a DOUBLE literal (`1e3`, `CAST(.. AS DOUBLE)`) lifts
//! an integer, decimal or FLOAT column to DOUBLE, and a FLOAT literal lifts integers and
//! decimals to FLOAT. Such casts are monotonic but not injective, so one literal can equal a
//! whole run of column values (`Span`).

use crate::error::{Error, Result};
use crate::predicate::literal::{
    cast_literal, describe, parse_float_text, parse_number, scale_factor, Literal, SqlType,
};
use crate::predicate::time::{self, NS_PER_DAY};
use crate::predicate::value::{Domain, IntKind, Value};

#[derive(Debug, Clone, PartialEq)]
pub enum Coerced {
    Exact(Value),
    /// The literal lies strictly between `lo` and `hi`, the nearest values of the domain
    /// below and above it (`None` when there is none on that side).
    Between {
        lo: Option<Value>,
        hi: Option<Value>,
    },
    /// The literal equals every column value in `lo..=hi` (`lo < hi`): the column's values
    /// round to it when cast to the literal's floating-point type.
    Span {
        lo: Value,
        hi: Value,
    },
}

/// Bring `lit` into `domain`; `column` names the column in error messages.
pub fn coerce(lit: &Literal, domain: Domain, column: &str) -> Result<Coerced> {
    let wrong = || {
        Error::predicate(format!(
            "cannot compare column {column} ({}) with {}",
            domain_name(domain),
            describe(lit)
        ))
    };
    match domain {
        Domain::Bool => match lit {
            Literal::Bool(b) => Ok(Coerced::Exact(Value::Bool(*b))),
            Literal::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "t" | "1" => Ok(Coerced::Exact(Value::Bool(true))),
                "false" | "f" | "0" => Ok(Coerced::Exact(Value::Bool(false))),
                _ => Err(wrong()),
            },
            _ => Err(wrong()),
        },
        Domain::Float64 => Ok(Coerced::Exact(Value::Float(match lit {
            Literal::Number(n) => n.parse::<f64>().map_err(|_| wrong())?,
            Literal::Float(f) => *f,
            Literal::Real(f) => f64::from(*f),
            Literal::Str(s) => parse_float_text::<f64>(s).ok_or_else(wrong)?,
            _ => return Err(wrong()),
        }))),
        Domain::Float32 => match lit {
            // INTEGER and DECIMAL literals are cast to FLOAT, rounding once.
            Literal::Number(n) => Ok(Coerced::Exact(Value::Float(f64::from(
                n.parse::<f32>().map_err(|_| wrong())?,
            )))),
            Literal::Real(f) => Ok(Coerced::Exact(Value::Float(f64::from(*f)))),
            Literal::Str(s) => Ok(Coerced::Exact(Value::Float(f64::from(
                parse_float_text::<f32>(s).ok_or_else(wrong)?,
            )))),
            // A DOUBLE compares with the column cast to DOUBLE, which is exact.
            Literal::Float(f) => Ok(double_into_float32(*f)),
            _ => Err(wrong()),
        },
        Domain::Utf8 => match lit {
            Literal::Str(s) => Ok(Coerced::Exact(Value::Bytes(s.as_bytes().to_vec()))),
            _ => Err(wrong()),
        },
        Domain::Binary => match lit {
            Literal::Bytes(b) => Ok(Coerced::Exact(Value::Bytes(b.clone()))),
            Literal::Str(_) => match cast_literal(lit.clone(), SqlType::Blob)? {
                Literal::Bytes(b) => Ok(Coerced::Exact(Value::Bytes(b))),
                _ => Err(wrong()),
            },
            _ => Err(wrong()),
        },
        Domain::Uuid => match lit {
            Literal::Bytes(b) if b.len() == 16 => Ok(Coerced::Exact(Value::Bytes(b.clone()))),
            Literal::Str(s) => parse_uuid(s)
                .map(|b| Coerced::Exact(Value::Bytes(b.to_vec())))
                .ok_or_else(|| {
                    Error::predicate(format!(
                        "cannot compare column {column} (uuid) with '{s}': not a UUID"
                    ))
                }),
            _ => Err(wrong()),
        },
        Domain::Int { min, max, kind } => {
            let in_domain = match (kind, lit) {
                (
                    IntKind::Integer | IntKind::Decimal { .. },
                    Literal::Number(n) | Literal::Str(n),
                ) => {
                    let scale = decimal_scale(kind);
                    match parse_number(n) {
                        Some(r) => {
                            let (mn, md) = scale_factor(scale).ok_or_else(wrong)?;
                            r.scaled_floor(mn, md)
                                .map_or_else(|| Overflow::from_sign(r.num), Overflow::Fits)
                        }
                        None => return Err(wrong()),
                    }
                }
                (IntKind::Integer | IntKind::Decimal { .. }, Literal::Float(f)) => {
                    let scale = decimal_scale(kind);
                    return Ok(rounded_span(*f, min, max, |u| cast_f64(u, scale)));
                }
                (IntKind::Integer | IntKind::Decimal { .. }, Literal::Real(f)) => {
                    let scale = decimal_scale(kind);
                    return Ok(rounded_span(f64::from(*f), min, max, |u| {
                        f64::from(cast_f32(u, scale))
                    }));
                }
                (IntKind::Date, Literal::Date(d)) => Overflow::Fits((i128::from(*d), true)),
                (IntKind::Timestamp { unit_ns, .. }, Literal::Date(d)) => {
                    time_to_domain(i128::from(*d) * NS_PER_DAY, unit_ns)
                }
                (IntKind::Date, Literal::Timestamp { ns, .. }) => time_to_domain(*ns, NS_PER_DAY),
                (IntKind::Timestamp { unit_ns, .. }, Literal::Timestamp { ns, .. }) => {
                    time_to_domain(*ns, unit_ns)
                }
                (IntKind::Time { unit_ns }, Literal::Time(ns)) => {
                    time_to_domain(i128::from(*ns), unit_ns)
                }
                (IntKind::Time { unit_ns }, Literal::Str(s)) => {
                    time_to_domain(i128::from(time::parse_time(s)?), unit_ns)
                }
                (IntKind::Date, Literal::Str(s)) => {
                    let (ns, _) = time::parse_timestamp(s).map_err(|_| {
                        Error::predicate(format!(
                            "cannot compare column {column} (date) with '{s}': not a date (expected YYYY-MM-DD)"
                        ))
                    })?;
                    time_to_domain(ns, NS_PER_DAY)
                }
                (IntKind::Timestamp { unit_ns, .. }, Literal::Str(s)) => {
                    let (ns, _) = time::parse_timestamp(s)?;
                    time_to_domain(ns, unit_ns)
                }
                _ => return Err(wrong()),
            };
            Ok(place(in_domain, min, max))
        }
    }
}

/// The 16 bytes of a UUID's text, as DuckDB reads it: 32 hex digits, with or without
/// hyphens between them, optionally in braces.
fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let t = text.trim();
    let t = t
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(t);
    let hex: Vec<u8> = t.bytes().filter(|b| *b != b'-').collect();
    if hex.len() != 32 || t.starts_with('-') || t.ends_with('-') || t.contains("--") {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, pair) in hex.chunks(2).enumerate() {
        out[i] = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// A literal scaled into an integer domain: its floor and exactness, or which side of
/// every representable value it lies on.
enum Overflow {
    Fits((i128, bool)),
    Below,
    Above,
}

impl Overflow {
    fn from_sign(num: i128) -> Overflow {
        if num < 0 {
            Overflow::Below
        } else {
            Overflow::Above
        }
    }
}

fn time_to_domain(ns: i128, unit_ns: i128) -> Overflow {
    Overflow::Fits((ns.div_euclid(unit_ns), ns.rem_euclid(unit_ns) == 0))
}

fn decimal_scale(kind: IntKind) -> i8 {
    match kind {
        IntKind::Decimal { scale } => scale,
        _ => 0,
    }
}

/// `unscaled / 10^scale` correctly rounded to DOUBLE, as DuckDB casts integers and decimals.
fn cast_f64(unscaled: i128, scale: i8) -> f64 {
    if scale == 0 {
        unscaled as f64
    } else {
        format!("{unscaled}e{}", -i32::from(scale))
            .parse()
            .unwrap_or(f64::NAN)
    }
}

/// `unscaled / 10^scale` correctly rounded to FLOAT.
fn cast_f32(unscaled: i128, scale: i8) -> f32 {
    if scale == 0 {
        unscaled as f32
    } else {
        format!("{unscaled}e{}", -i32::from(scale))
            .parse()
            .unwrap_or(f32::NAN)
    }
}

/// A DOUBLE against a FLOAT column: the nearest FLOATs around it, or the FLOAT it equals.
fn double_into_float32(f: f64) -> Coerced {
    let near = f as f32;
    if f.is_nan() || f64::from(near) == f {
        return Coerced::Exact(Value::Float(f64::from(near)));
    }
    let (lo, hi) = if f64::from(near) < f {
        (near, near.next_up())
    } else {
        (near.next_down(), near)
    };
    Coerced::Between {
        lo: Some(Value::Float(f64::from(lo))),
        hi: Some(Value::Float(f64::from(hi))),
    }
}

/// Where `target` falls among the integers `min..=max` cast by the monotonic `cast`: the run
/// of integers that cast to it, or the neighbours on either side. NaN is above every number.
fn rounded_span(target: f64, min: i128, max: i128, cast: impl Fn(i128) -> f64) -> Coerced {
    let int = |x: i128| Some(Value::Int(x));
    if target.is_nan() {
        return Coerced::Between {
            lo: int(max),
            hi: None,
        };
    }
    // First integer whose cast is >= target (resp. > target), by bisection over the domain.
    let first = |pred: &dyn Fn(f64) -> bool| -> Option<i128> {
        if !pred(cast(max)) {
            return None;
        }
        let (mut lo, mut hi) = (min, max);
        while lo < hi {
            let mid = lo + (hi.wrapping_sub(lo) as u128 / 2) as i128;
            if pred(cast(mid)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(lo)
    };
    let first_ge = first(&|v| v >= target);
    let first_gt = first(&|v| v > target);
    let last_le = match first_gt {
        Some(x) if x == min => None,
        Some(x) => Some(x - 1),
        None => Some(max),
    };
    match (first_ge, last_le) {
        (Some(a), Some(b)) if a == b => Coerced::Exact(Value::Int(a)),
        (Some(a), Some(b)) if a < b => Coerced::Span {
            lo: Value::Int(a),
            hi: Value::Int(b),
        },
        (a, b) => Coerced::Between {
            lo: b.and_then(int),
            hi: a.and_then(int),
        },
    }
}

fn place(v: Overflow, min: i128, max: i128) -> Coerced {
    let int = |x: i128| Some(Value::Int(x));
    match v {
        Overflow::Below => Coerced::Between {
            lo: None,
            hi: int(min),
        },
        Overflow::Above => Coerced::Between {
            lo: int(max),
            hi: None,
        },
        Overflow::Fits((v, true)) if (min..=max).contains(&v) => Coerced::Exact(Value::Int(v)),
        Overflow::Fits((v, true)) if v < min => Coerced::Between {
            lo: None,
            hi: int(min),
        },
        Overflow::Fits((_, true)) => Coerced::Between {
            lo: int(max),
            hi: None,
        },
        Overflow::Fits((floor, false)) => Coerced::Between {
            lo: (floor >= min).then(|| floor.min(max)).and_then(int),
            hi: (floor < max).then(|| (floor + 1).max(min)).and_then(int),
        },
    }
}

pub fn domain_name(d: Domain) -> &'static str {
    match d {
        Domain::Bool => "boolean",
        Domain::Float32 | Domain::Float64 => "floating point",
        Domain::Utf8 => "string",
        Domain::Binary => "binary",
        Domain::Uuid => "uuid",
        Domain::Int { kind, .. } => match kind {
            IntKind::Integer => "integer",
            IntKind::Decimal { .. } => "decimal",
            IntKind::Date => "date",
            IntKind::Timestamp { .. } => "timestamp",
            IntKind::Time { .. } => "time",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predicate::literal::{format_decimal, Rational};
    use arrow_schema::DataType;

    fn int8() -> Domain {
        Domain::of(&DataType::Int8).unwrap()
    }

    #[test]
    fn wide_decimal_literals_are_exact() {
        // 30 digits at scale 10: the literal times 10^10 overflows i128 before the
        // division by its own 10^10 brings it back.
        let d38 = Domain::of(&DataType::Decimal128(38, 10)).unwrap();
        let unscaled: i128 = "999999999999999999999999999999".parse().unwrap();
        for (text, want) in [
            ("99999999999999999999.9999999999", unscaled),
            ("-99999999999999999999.9999999999", -unscaled),
        ] {
            let c = coerce(&Literal::Number(text.into()), d38, "d").unwrap();
            assert_eq!(c, Coerced::Exact(Value::Int(want)), "{text}");
        }
        let c = coerce(
            &Literal::Number("99999999999999999999.99999999985".into()),
            d38,
            "d",
        )
        .unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(unscaled - 1)),
                hi: Some(Value::Int(unscaled))
            }
        );
    }

    #[test]
    fn decimal_literals_beyond_the_declared_precision_are_exact() {
        // Files hold values beyond their column's declared precision (the reader does
        // not check them): a literal of such a value must be able to equal it.
        let d36 = Domain::of(&DataType::Decimal128(36, 17)).unwrap();
        let text = "922337203685477580700.92230685477500000";
        let want: i128 = "92233720368547758070092230685477500000".parse().unwrap();
        let c = coerce(&Literal::Number(text.into()), d36, "d").unwrap();
        assert_eq!(c, Coerced::Exact(Value::Int(want)));
        let d5 = Domain::of(&DataType::Decimal128(5, 2)).unwrap();
        let c = coerce(&Literal::Number("1000.00".into()), d5, "d").unwrap();
        assert_eq!(c, Coerced::Exact(Value::Int(100_000)));
    }

    #[test]
    fn numbers_parse_exactly() {
        assert_eq!(
            parse_number("12.50"),
            Some(Rational {
                num: 1250,
                den: 100
            })
        );
        assert_eq!(parse_number("-1e3"), Some(Rational { num: -1000, den: 1 }));
        assert_eq!(parse_number(".5"), Some(Rational { num: 5, den: 10 }));
        assert_eq!(parse_number("1.5e-1"), Some(Rational { num: 15, den: 100 }));
        assert_eq!(parse_number("abc"), None);
        assert_eq!(parse_number("."), None);
    }

    #[test]
    fn integers_between_neighbours() {
        let c = coerce(&Literal::Number("2.5".into()), int8(), "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(2)),
                hi: Some(Value::Int(3))
            }
        );
        let c = coerce(&Literal::Number("-2.5".into()), int8(), "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(-3)),
                hi: Some(Value::Int(-2))
            }
        );
        let c = coerce(&Literal::Number("1000".into()), int8(), "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(127)),
                hi: None
            }
        );
        let c = coerce(&Literal::Number("-128".into()), int8(), "x").unwrap();
        assert_eq!(c, Coerced::Exact(Value::Int(-128)));
        let c = coerce(&Literal::Number("127.5".into()), int8(), "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(127)),
                hi: None
            }
        );
    }

    #[test]
    fn decimals_scale() {
        let d = Domain::of(&DataType::Decimal128(5, 2)).unwrap();
        let c = coerce(&Literal::Number("1.5".into()), d, "x").unwrap();
        assert_eq!(c, Coerced::Exact(Value::Int(150)));
        let c = coerce(&Literal::Number("1.505".into()), d, "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(150)),
                hi: Some(Value::Int(151))
            }
        );
        assert_eq!(format_decimal(-5, 2), "-0.05");
        assert_eq!(format_decimal(12345, 2), "123.45");
    }

    #[test]
    fn times_and_errors() {
        let ts = Domain::of(&DataType::Timestamp(
            arrow_schema::TimeUnit::Millisecond,
            None,
        ))
        .unwrap();
        let c = coerce(
            &Literal::Timestamp {
                ns: 1_500_000,
                tz: false,
            },
            ts,
            "t",
        )
        .unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(1)),
                hi: Some(Value::Int(2))
            }
        );
        let c = coerce(
            &Literal::Str("1970-01-02".into()),
            Domain::of(&DataType::Date32).unwrap(),
            "d",
        )
        .unwrap();
        assert_eq!(c, Coerced::Exact(Value::Int(1)));
        assert!(
            matches!(coerce(&Literal::Number("5".into()), Domain::Utf8, "s"), Err(Error::Predicate(m)) if m.contains("column s"))
        );
        let c = coerce(&Literal::Float(f64::NAN), int8(), "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(127)),
                hi: None
            }
        );
    }

    #[test]
    fn doubles_lift_the_column() {
        let i64d = Domain::of(&DataType::Int64).unwrap();
        // 2^53 + 1 rounds to 2^53 as a DOUBLE, so both integers equal the literal.
        let c = coerce(&Literal::Float(9007199254740992.0), i64d, "x").unwrap();
        assert_eq!(
            c,
            Coerced::Span {
                lo: Value::Int(9007199254740992),
                hi: Value::Int(9007199254740993)
            }
        );
        let c = coerce(&Literal::Float(2.5), i64d, "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Int(2)),
                hi: Some(Value::Int(3))
            }
        );
        let dec = Domain::of(&DataType::Decimal128(5, 2)).unwrap();
        let c = coerce(&Literal::Float(1.1), dec, "x").unwrap();
        assert_eq!(c, Coerced::Exact(Value::Int(110)));
        // A FLOAT literal lifts an integer column to FLOAT: 16777217 rounds to 16777216.
        let c = coerce(&Literal::Real(16777216.0), i64d, "x").unwrap();
        assert_eq!(
            c,
            Coerced::Span {
                lo: Value::Int(16777216),
                hi: Value::Int(16777217)
            }
        );
        let f32d = Domain::of(&DataType::Float32).unwrap();
        let c = coerce(&Literal::Float(0.1), f32d, "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Float(f64::from(0.099_999_994_f32))),
                hi: Some(Value::Float(f64::from(0.1_f32)))
            }
        );
        let c = coerce(&Literal::Number("0.1".into()), f32d, "x").unwrap();
        assert_eq!(c, Coerced::Exact(Value::Float(f64::from(0.1_f32))));
        let c = coerce(&Literal::Float(1e300), f32d, "x").unwrap();
        assert_eq!(
            c,
            Coerced::Between {
                lo: Some(Value::Float(f64::from(f32::MAX))),
                hi: Some(Value::Float(f64::INFINITY))
            }
        );
    }
}

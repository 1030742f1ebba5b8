//! Constants as the SQL text gives them, before they meet a column: the literal kinds, the
//! cast targets pqindex understands, casts between constants as DuckDB does them, and exact
//! decimal arithmetic on number text. Both the parser (which folds constant casts) and the
//! coercion into a column's domain build on this.

use crate::error::{Error, Result};
use crate::predicate::time;

/// A constant, as precise as the SQL text gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    /// An exact decimal number, as written (`-12.50`, `1e3`).
    Number(String),
    /// A DOUBLE: a number in scientific notation (`1e3`), one too long for a DECIMAL, or a
    /// cast (`'NaN'::DOUBLE`). Compared with an integer, decimal or FLOAT column, the column
    /// is cast to DOUBLE, as DuckDB does.
    Float(f64),
    /// A FLOAT (`CAST(x AS REAL)`): integer and decimal columns compared with it are cast to
    /// FLOAT.
    Real(f32),
    Str(String),
    Bytes(Vec<u8>),
    /// Days since 1970-01-01.
    Date(i32),
    /// Nanoseconds since 1970-01-01 00:00; `tz` when it denotes an instant (an explicit
    /// offset or TIMESTAMPTZ) rather than a wall-clock time.
    Timestamp {
        ns: i128,
        tz: bool,
    },
    Interval {
        months: i64,
        ns: i128,
    },
    /// A time of day: nanoseconds since midnight.
    Time(i64),
}

/// The target types of a cast that pqindex understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlType {
    Bool,
    Int {
        bits: u8,
        signed: bool,
    },
    Float32,
    Float64,
    Decimal {
        precision: u8,
        scale: i8,
    },
    Varchar,
    Blob,
    Date,
    Timestamp,
    TimestampTz,
    /// `TIMESTAMP_MS` and `TIMESTAMP_S`: a timestamp rounded to this many nanoseconds.
    TimestampRounded(i128),
    Time,
}

/// An exact rational number `num / den` with `den > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rational {
    pub num: i128,
    pub den: i128,
}

impl Rational {
    /// Round half away from zero, as DuckDB casts decimals to integers.
    pub fn round_half_away(&self) -> Option<i128> {
        let q = self.num / self.den;
        let r = self.num % self.den;
        if r.checked_abs()?.checked_mul(2)? >= self.den {
            Some(q + self.num.signum())
        } else {
            Some(q)
        }
    }

    /// `self * mul_num / mul_den` with common factors cancelled first, so a product that
    /// fits is not lost to an intermediate one that does not (38 digits times 10^10 over
    /// 10^10); `None` when it does not fit.
    fn scaled(&self, mul_num: i128, mul_den: i128) -> Option<Rational> {
        let g1 = gcd(mul_num, self.den);
        let g2 = gcd(self.num, mul_den);
        Some(Rational {
            num: (self.num / g2).checked_mul(mul_num / g1)?,
            den: (self.den / g1).checked_mul(mul_den / g2)?,
        })
    }

    /// `round(self * 10^scale)`, half away from zero.
    pub fn rescale_round(&self, scale: i8) -> Option<i128> {
        let (n, d) = scale_factor(scale)?;
        self.scaled(n, d)?.round_half_away()
    }

    /// `floor(self * mul_num / mul_den)` and whether it is exact; `None` on overflow.
    pub(crate) fn scaled_floor(&self, mul_num: i128, mul_den: i128) -> Option<(i128, bool)> {
        let Rational { num, den } = self.scaled(mul_num, mul_den)?;
        Some((num.div_euclid(den), num.rem_euclid(den) == 0))
    }
}

/// The greatest common divisor of `a` and `b` (positive; 1 when both are 0).
fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    i128::try_from(a.max(1)).unwrap_or(1)
}

pub(crate) fn scale_factor(scale: i8) -> Option<(i128, i128)> {
    let p = 10i128.checked_pow(u32::from(scale.unsigned_abs()))?;
    Some(if scale >= 0 { (p, 1) } else { (1, p) })
}

/// Parse a SQL number (`-12.50`, `1e3`, `.5`) exactly; `None` if it is not a number or does
/// not fit in 38 digits.
pub fn parse_number(s: &str) -> Option<Rational> {
    let s = s.trim();
    let (neg, s) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int_part, frac_part) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut num: i128 = 0;
    for c in int_part.bytes().chain(frac_part.bytes()) {
        if !c.is_ascii_digit() {
            return None;
        }
        num = num.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
    }
    let exp10 = exp.checked_sub(frac_part.len() as i32)?;
    let (num, den) = if exp10 >= 0 {
        (num.checked_mul(10i128.checked_pow(exp10 as u32)?)?, 1)
    } else {
        (num, 10i128.checked_pow(exp10.unsigned_abs())?)
    };
    Some(Rational {
        num: if neg { -num } else { num },
        den,
    })
}

pub fn format_decimal(unscaled: i128, scale: i8) -> String {
    if scale <= 0 {
        return format!("{unscaled}{}", "0".repeat(scale.unsigned_abs() as usize));
    }
    let s = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{s:0>width$}", width = scale + 1);
    let (i, f) = padded.split_at(padded.len() - scale);
    format!("{}{i}.{f}", if unscaled < 0 { "-" } else { "" })
}

/// A cast target named as DuckDB names types.
pub fn sql_type(name: &str) -> Result<SqlType> {
    let upper = name.trim().to_ascii_uppercase();
    let (base, args) = match upper.find('(') {
        Some(i) => (
            upper[..i].trim(),
            Some(upper[i + 1..].trim_end_matches(')')),
        ),
        None => (upper.as_str(), None),
    };
    Ok(match base {
        "BOOLEAN" | "BOOL" | "LOGICAL" => SqlType::Bool,
        "TINYINT" | "INT1" => SqlType::Int {
            bits: 8,
            signed: true,
        },
        "SMALLINT" | "INT2" | "SHORT" => SqlType::Int {
            bits: 16,
            signed: true,
        },
        "INTEGER" | "INT" | "INT4" | "SIGNED" => SqlType::Int {
            bits: 32,
            signed: true,
        },
        "BIGINT" | "INT8" | "LONG" => SqlType::Int {
            bits: 64,
            signed: true,
        },
        "HUGEINT" | "INT128" => SqlType::Int {
            bits: 128,
            signed: true,
        },
        "UTINYINT" => SqlType::Int {
            bits: 8,
            signed: false,
        },
        "USMALLINT" => SqlType::Int {
            bits: 16,
            signed: false,
        },
        "UINTEGER" => SqlType::Int {
            bits: 32,
            signed: false,
        },
        "UBIGINT" => SqlType::Int {
            bits: 64,
            signed: false,
        },
        "REAL" | "FLOAT4" | "FLOAT" => SqlType::Float32,
        "DOUBLE" | "FLOAT8" | "DOUBLE PRECISION" => SqlType::Float64,
        "DECIMAL" | "NUMERIC" => {
            let (p, s) = match args {
                None => (18, 3),
                Some(a) => {
                    let mut it = a.split(',').map(|x| x.trim().parse::<u8>());
                    let p = it.next().and_then(|x| x.ok()).unwrap_or(18);
                    let s = it.next().and_then(|x| x.ok()).unwrap_or(0);
                    (p, s)
                }
            };
            if p == 0 || p > 38 || s > p {
                return Err(Error::predicate(format!("invalid decimal type {name}")));
            }
            SqlType::Decimal {
                precision: p,
                scale: s as i8,
            }
        }
        "VARCHAR" | "TEXT" | "STRING" | "CHAR" | "BPCHAR" => SqlType::Varchar,
        "BLOB" | "BYTEA" | "BINARY" | "VARBINARY" => SqlType::Blob,
        "DATE" => SqlType::Date,
        // Literals keep their nanoseconds (DuckDB's TIMESTAMP_NS holds them).
        "TIMESTAMP"
        | "DATETIME"
        | "TIMESTAMP WITHOUT TIME ZONE"
        | "TIMESTAMP_NS"
        | "TIMESTAMP_US" => SqlType::Timestamp,
        "TIMESTAMP_MS" => SqlType::TimestampRounded(1_000_000),
        "TIMESTAMP_S" => SqlType::TimestampRounded(1_000_000_000),
        "TIME" | "TIME WITHOUT TIME ZONE" => SqlType::Time,
        "TIMESTAMPTZ" | "TIMESTAMP WITH TIME ZONE" => SqlType::TimestampTz,
        _ => {
            return Err(Error::unsupported(format!(
                "type {name} is not supported in predicates"
            )))
        }
    })
}

/// Cast a constant, as DuckDB would before comparing.
pub fn cast_literal(lit: Literal, ty: SqlType) -> Result<Literal> {
    let fail = |lit: &Literal| Error::predicate(format!("cannot cast {} to {ty:?}", describe(lit)));
    Ok(match (lit, ty) {
        (Literal::Null, _) => Literal::Null,
        (Literal::Str(s), SqlType::Date) => Literal::Date(time::parse_date_or_timestamp_date(&s)?),
        (Literal::Timestamp { ns, .. }, SqlType::Date) => {
            Literal::Date(time::floor_div(ns, time::NS_PER_DAY) as i32)
        }
        (d @ Literal::Date(_), SqlType::Date) => d,
        (Literal::Str(s), SqlType::Timestamp) => {
            let (ns, _) = time::parse_timestamp(&s)?;
            Literal::Timestamp { ns, tz: false }
        }
        (Literal::Str(s), SqlType::TimestampRounded(unit)) => {
            let (ns, _) = time::parse_timestamp(&s)?;
            // DuckDB rounds to the nearest unit (half up).
            Literal::Timestamp {
                ns: time::floor_div(ns + unit / 2, unit) * unit,
                tz: false,
            }
        }
        (Literal::Timestamp { ns, tz }, SqlType::TimestampRounded(unit)) => Literal::Timestamp {
            ns: time::floor_div(ns + unit / 2, unit) * unit,
            tz,
        },
        (Literal::Str(s), SqlType::Time) => Literal::Time(time::parse_time(&s)?),
        (t @ Literal::Time(_), SqlType::Time) => t,
        (Literal::Timestamp { ns, .. }, SqlType::Time) => {
            Literal::Time(ns.rem_euclid(time::NS_PER_DAY) as i64)
        }
        (Literal::Str(s), SqlType::TimestampTz) => {
            let (ns, _) = time::parse_timestamp(&s)?;
            Literal::Timestamp { ns, tz: true }
        }
        (Literal::Date(d), SqlType::Timestamp | SqlType::TimestampTz) => Literal::Timestamp {
            ns: i128::from(d) * time::NS_PER_DAY,
            tz: ty == SqlType::TimestampTz,
        },
        (Literal::Timestamp { ns, .. }, SqlType::Timestamp | SqlType::TimestampTz) => {
            Literal::Timestamp {
                ns,
                tz: ty == SqlType::TimestampTz,
            }
        }
        (Literal::Str(s), SqlType::Varchar) => Literal::Str(s),
        (Literal::Number(n), SqlType::Varchar) => Literal::Str(n),
        (Literal::Bool(b), SqlType::Varchar) => Literal::Str(b.to_string()),
        (Literal::Str(s), SqlType::Blob) => Literal::Bytes(parse_blob(&s)?),
        (b @ Literal::Bytes(_), SqlType::Blob) => b,
        (Literal::Bool(b), SqlType::Bool) => Literal::Bool(b),
        (Literal::Str(s), SqlType::Bool) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "t" | "1" | "yes" | "y" => Literal::Bool(true),
            "false" | "f" | "0" | "no" | "n" => Literal::Bool(false),
            _ => return Err(fail(&Literal::Str(s))),
        },
        (Literal::Number(n), SqlType::Bool) => Literal::Bool(
            parse_number(&n)
                .map(|r| r.num != 0)
                .ok_or_else(|| fail(&Literal::Number(n.clone())))?,
        ),
        (Literal::Number(n), SqlType::Float32) => {
            Literal::Real(n.parse().map_err(|_| fail(&Literal::Number(n.clone())))?)
        }
        (Literal::Number(n), SqlType::Float64) => {
            Literal::Float(n.parse().map_err(|_| fail(&Literal::Number(n.clone())))?)
        }
        (Literal::Str(s), SqlType::Float32) => Literal::Real(
            parse_float_text::<f32>(&s).ok_or_else(|| fail(&Literal::Str(s.clone())))?,
        ),
        (Literal::Str(s), SqlType::Float64) => Literal::Float(
            parse_float_text::<f64>(&s).ok_or_else(|| fail(&Literal::Str(s.clone())))?,
        ),
        (Literal::Float(f), SqlType::Float32) => Literal::Real(f as f32),
        (Literal::Float(f), SqlType::Float64) => Literal::Float(f),
        (Literal::Real(f), SqlType::Float32) => Literal::Real(f),
        (Literal::Real(f), SqlType::Float64) => Literal::Float(f64::from(f)),
        (Literal::Real(f), SqlType::Int { .. }) => {
            return cast_literal(Literal::Float(f64::from(f)), ty)
        }
        (Literal::Number(n) | Literal::Str(n), SqlType::Int { bits, signed }) => {
            let r = parse_number(n.trim()).ok_or_else(|| fail(&Literal::Str(n.clone())))?;
            let v = r
                .round_half_away()
                .ok_or_else(|| fail(&Literal::Str(n.clone())))?;
            check_int_range(v, bits, signed).ok_or_else(|| fail(&Literal::Str(n.clone())))?;
            Literal::Number(v.to_string())
        }
        (Literal::Float(f), SqlType::Int { bits, signed }) => {
            if !f.is_finite() {
                return Err(fail(&Literal::Float(f)));
            }
            let v = f.round() as i128;
            check_int_range(v, bits, signed).ok_or_else(|| fail(&Literal::Float(f)))?;
            Literal::Number(v.to_string())
        }
        (Literal::Number(n) | Literal::Str(n), SqlType::Decimal { precision, scale }) => {
            let r = parse_number(n.trim()).ok_or_else(|| fail(&Literal::Str(n.clone())))?;
            let unscaled = r
                .rescale_round(scale)
                .filter(|v| v.unsigned_abs() < 10u128.pow(u32::from(precision)))
                .ok_or_else(|| fail(&Literal::Str(n.clone())))?;
            Literal::Number(format_decimal(unscaled, scale))
        }
        (lit, _) => return Err(fail(&lit)),
    })
}

fn check_int_range(v: i128, bits: u8, signed: bool) -> Option<()> {
    let (min, max) = match (bits, signed) {
        (128, true) => (i128::MIN, i128::MAX),
        (b, true) => (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1),
        (b, false) => (0, (1i128 << b) - 1),
    };
    (min..=max).contains(&v).then_some(())
}

/// A float as DuckDB reads it from text (`'NaN'`, `'-Infinity'`, `' 1.5 '`).
pub fn parse_float_text<F: std::str::FromStr>(s: &str) -> Option<F> {
    let t = s.trim().to_ascii_lowercase();
    let t = match t.as_str() {
        "+nan" | "-nan" => "nan",
        "+inf" | "infinity" | "+infinity" => "inf",
        "-infinity" => "-inf",
        t => t,
    };
    t.parse().ok()
}

/// DuckDB's blob text: bytes as written, with `\xHH` escapes.
fn parse_blob(s: &str) -> Result<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1).is_some_and(|c| *c == b'x' || *c == b'X') {
            let hex = s
                .get(i + 2..i + 4)
                .ok_or_else(|| Error::predicate(format!("invalid blob escape in {s:?}")))?;
            out.push(
                u8::from_str_radix(hex, 16)
                    .map_err(|_| Error::predicate(format!("invalid blob escape in {s:?}")))?,
            );
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

pub fn describe(lit: &Literal) -> String {
    match lit {
        Literal::Null => "NULL".into(),
        Literal::Bool(b) => b.to_string(),
        Literal::Number(n) => n.clone(),
        Literal::Float(f) => format!("{f:?} (DOUBLE)"),
        Literal::Real(f) => format!("{f:?} (FLOAT)"),
        Literal::Str(s) => format!("'{s}'"),
        Literal::Bytes(b) => format!("blob of {} bytes", b.len()),
        Literal::Date(d) => format!("DATE '{}'", time::format_date(*d)),
        Literal::Timestamp { ns, tz } => format!(
            "{} '{}'",
            if *tz { "TIMESTAMPTZ" } else { "TIMESTAMP" },
            time::format_timestamp(*ns)
        ),
        Literal::Interval { months, ns } => format!("INTERVAL {months} months {ns} ns"),
        Literal::Time(ns) => format!("TIME '{}'", time::format_time(*ns)),
    }
}

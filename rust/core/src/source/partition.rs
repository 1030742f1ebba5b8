//! Hive partition columns: `key=value` directory names, URL-decoded as Spark writes them,
//! with one type per key inferred from all its values (BIGINT, DATE, else VARCHAR).

use arrow_schema::{DataType, Field};
use percent_encoding::percent_decode_str;

use crate::error::{Error, Result};
use crate::predicate::time::parse_date_or_timestamp_date;
use crate::predicate::value::Value;

/// Spark's and Hive's name for a NULL partition value.
const NULL_PARTITION: &str = "__HIVE_DEFAULT_PARTITION__";

pub fn parse_hive_segment(segment: &str) -> Option<(String, String)> {
    let (k, v) = segment.split_once('=')?;
    if k.is_empty() {
        return None;
    }
    let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
    Some((decode(k), decode(v)))
}

/// Partition fields and each file's typed values. Every file must name the same keys in
/// the same order.
#[allow(clippy::type_complexity)]
pub fn infer_partitions(
    files: &[(String, Vec<(String, String)>)],
) -> Result<(Vec<Field>, Vec<Vec<Option<Value>>>)> {
    let Some((first_path, first)) = files.first() else {
        return Ok((Vec::new(), Vec::new()));
    };
    let keys: Vec<&String> = first.iter().map(|(k, _)| k).collect();
    for (path, parts) in files {
        let these: Vec<&String> = parts.iter().map(|(k, _)| k).collect();
        if these != keys {
            return Err(Error::Source(format!(
                "inconsistent partition directories: {first_path} has keys {keys:?} but {path} has {these:?}"
            )));
        }
    }
    let mut fields = Vec::new();
    let mut columns: Vec<Vec<Option<Value>>> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let raw: Vec<Option<&str>> = files
            .iter()
            .map(|(_, parts)| Some(parts[i].1.as_str()).filter(|v| *v != NULL_PARTITION))
            .collect();
        let present = || raw.iter().flatten();
        let (data_type, values): (DataType, Vec<Option<Value>>) =
            if present().all(|v| v.parse::<i64>().is_ok()) {
                (
                    DataType::Int64,
                    raw.iter()
                        .map(|v| {
                            v.and_then(|s| s.parse::<i64>().ok())
                                .map(|n| Value::Int(n.into()))
                        })
                        .collect(),
                )
            } else if present().all(|v| v.len() == 10 && parse_date_or_timestamp_date(v).is_ok()) {
                (
                    DataType::Date32,
                    raw.iter()
                        .map(|v| {
                            v.and_then(|s| parse_date_or_timestamp_date(s).ok())
                                .map(|d| Value::Int(d.into()))
                        })
                        .collect(),
                )
            } else {
                (
                    DataType::Utf8,
                    raw.iter()
                        .map(|v| v.map(|s| Value::Bytes(s.as_bytes().to_vec())))
                        .collect(),
                )
            };
        fields.push(Field::new(key.as_str(), data_type, true));
        columns.push(values);
    }
    let per_file = (0..files.len())
        .map(|f| columns.iter().map(|c| c[f].clone()).collect())
        .collect();
    Ok((fields, per_file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_types() {
        assert_eq!(
            parse_hive_segment("k=a%2Fb"),
            Some(("k".into(), "a/b".into()))
        );
        assert_eq!(parse_hive_segment("plain"), None);
        let files = vec![
            (
                "a".to_string(),
                vec![
                    ("d".to_string(), "2024-01-02".to_string()),
                    ("s".into(), "x".into()),
                ],
            ),
            (
                "b".to_string(),
                vec![
                    ("d".to_string(), NULL_PARTITION.to_string()),
                    ("s".into(), "1".into()),
                ],
            ),
        ];
        let (fields, values) = infer_partitions(&files).unwrap();
        assert_eq!(fields[0].data_type(), &DataType::Date32);
        assert_eq!(fields[1].data_type(), &DataType::Utf8);
        assert_eq!(values[1][0], None);
    }
}

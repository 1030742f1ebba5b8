//! A table's columns out of one data file's: renamed (column mapping, nested fields too),
//! widened (type widening), or NULL where the file predates the column.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, ListArray, StructArray};
use arrow_schema::{ArrowError, DataType, Field};

use crate::metadata::schema::file_field;

/// `array` (a file's column) as the table's column `target`.
pub fn to_table_column(array: &ArrayRef, target: &Field) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == target.data_type() {
        return Ok(array.clone());
    }
    match (array.data_type(), target.data_type()) {
        (DataType::Struct(file_fields), DataType::Struct(table_fields)) => {
            let s = array.as_struct();
            let children = table_fields
                .iter()
                .map(|t| match file_field(t, file_fields) {
                    Some((i, _)) => to_table_column(s.column(i), t),
                    None => Ok(new_null_array(t.data_type(), s.len())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Arc::new(StructArray::try_new(
                table_fields.clone(),
                children,
                s.nulls().cloned(),
            )?))
        }
        (DataType::List(_), DataType::List(table_item)) => {
            let l = array.as_list::<i32>();
            let values = to_table_column(l.values(), table_item)?;
            Ok(Arc::new(ListArray::try_new(
                table_item.clone(),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?))
        }
        _ => arrow_cast::cast(array, target.data_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::schema::PHYSICAL_NAME;
    use arrow_array::{Int32Array, Int64Array};
    use arrow_schema::Fields;
    use std::collections::HashMap;

    #[test]
    fn structs_are_renamed_widened_and_filled() {
        let phys = |name: &str, physical: &str, dt: DataType| {
            Field::new(name, dt, true).with_metadata(HashMap::from([(
                PHYSICAL_NAME.to_string(),
                physical.to_string(),
            )]))
        };
        let file_fields = Fields::from(vec![Field::new("col-1", DataType::Int32, true)]);
        let file: ArrayRef = Arc::new(StructArray::new(
            file_fields,
            vec![Arc::new(Int32Array::from(vec![Some(1), None]))],
            None,
        ));
        let table = Field::new(
            "s",
            DataType::Struct(Fields::from(vec![
                phys("a", "col-1", DataType::Int64),
                phys("b", "col-2", DataType::Utf8),
            ])),
            true,
        );
        let out = to_table_column(&file, &table).unwrap();
        let s = out.as_struct();
        assert_eq!(s.column_names(), ["a", "b"]);
        let a = s.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(a.iter().collect::<Vec<_>>(), [Some(1), None]);
        assert_eq!(s.column(1).null_count(), 2);
    }
}

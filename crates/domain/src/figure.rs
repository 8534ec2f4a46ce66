//! Figures (alert thresholds and values) on the wire as JSON numbers: `99`, not `"99"`, with a
//! fraction only where the value has one (`0.25`). Read from a number or, as before, from a
//! decimal string, so clients that send `"100"` keep working.
//!
//! Use as `#[serde(with = "crate::figure")]` on a [`Decimal`] field.

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde::de::{self, Visitor};
use serde::{Deserializer, Serializer};
use std::str::FromStr;

/// An integral figure as an integer; any other as the nearest double (alert figures carry at
/// most a few decimals: rates, ratios).
pub fn serialize<S: Serializer>(value: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    let normal = value.normalize();
    if normal.scale() == 0 {
        if let Some(i) = normal.to_i64() {
            return s.serialize_i64(i);
        }
        if let Some(u) = normal.to_u64() {
            return s.serialize_u64(u);
        }
    }
    match normal.to_f64() {
        Some(f) => s.serialize_f64(f),
        None => Err(serde::ser::Error::custom(format!(
            "{value} cannot be written as a JSON number"
        ))),
    }
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Decimal, D::Error> {
    d.deserialize_any(FigureVisitor)
}

struct FigureVisitor;

impl Visitor<'_> for FigureVisitor {
    type Value = Decimal;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a number, or a decimal number as a string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Decimal, E> {
        Ok(Decimal::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Decimal, E> {
        Ok(Decimal::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Decimal, E> {
        if !v.is_finite() {
            return Err(E::custom("the number must be finite"));
        }
        // The shortest text that reads back as `v`: 0.1 stays 0.1.
        Decimal::from_str(&v.to_string())
            .or_else(|_| Decimal::from_scientific(&format!("{v:e}")))
            .map_err(|_| E::custom(format!("{v} is out of range")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Decimal, E> {
        Decimal::from_str(v.trim()).map_err(|_| E::custom(format!("`{v}` is not a decimal number")))
    }
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;
    use serde::{Deserialize, Serialize};
    use std::str::FromStr;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct F {
        #[serde(with = "super")]
        x: Decimal,
    }

    fn d(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal")
    }

    #[test]
    fn figures_are_numbers_with_a_fraction_only_where_they_have_one() {
        let text = |s: &str| serde_json::to_string(&F { x: d(s) }).expect("serialises");
        assert_eq!(text("99"), r#"{"x":99}"#);
        assert_eq!(text("10.00"), r#"{"x":10}"#);
        assert_eq!(text("0.25"), r#"{"x":0.25}"#);
        assert_eq!(text("3.333333"), r#"{"x":3.333333}"#);
        assert_eq!(text("-2"), r#"{"x":-2}"#);
    }

    #[test]
    fn figures_are_read_from_numbers_and_from_strings() {
        let read = |s: &str| serde_json::from_str::<F>(s).map(|f| f.x);
        assert_eq!(read(r#"{"x":100}"#).expect("int"), d("100"));
        assert_eq!(read(r#"{"x":0.1}"#).expect("float"), d("0.1"));
        assert_eq!(read(r#"{"x":"250"}"#).expect("string"), d("250"));
        assert!(read(r#"{"x":"many"}"#).is_err());
        assert!(read(r#"{"x":true}"#).is_err());
    }
}

//! The fields a `FILTER` names, read out of an element's JSON attributes.
//!
//! A filtered `VSIM` tests every neighbour of every node its walk explores, thousands
//! of elements a query when matches are rare. Parsing each element's attributes into a
//! whole JSON value allocated every key and every string of the document, and took
//! most of such a query's time. Here the document is read once, front to back: keys
//! are compared where they lie, values under a key the expression does not name are
//! skipped (still read as a full parse reads them: numbers in range, strings in
//! UTF-8, so a document a full parse refuses is refused), and only the named ones are
//! built. Plain documents are read first by the faster scanner in `plain_json`; this
//! reader, serde's, reads what it declines.

use std::borrow::Cow;

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use smallvec::SmallVec;

use super::filter::Field;

/// The named fields of one document, by the names' positions (inline for the one or
/// two fields most filters name).
pub(super) type Values<'a> = SmallVec<[Option<Field<'a>>; 2]>;

/// The values of `names` in the JSON object `attr`, by position: `None` for a name
/// it does not hold or that holds a value the filter language has no use for (an
/// object, an array of more than scalars); the last of repeated keys wins, as a
/// full parse keeps it. Strings without escapes are borrowed from `attr`. `None`
/// when `attr` is not one whole, well-formed JSON object.
pub(super) fn read<'a>(attr: &'a [u8], names: &[String]) -> Option<Values<'a>> {
    super::plain_json::read(attr, names).or_else(|| read_any(attr, names))
}

/// [`read`] by serde's reader, for any document.
fn read_any<'a>(attr: &'a [u8], names: &[String]) -> Option<Values<'a>> {
    let mut de = serde_json::Deserializer::from_slice(attr);
    let values = Pick { names }.deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(values)
}

/// Reads a top-level object, keeping the values of `names`.
struct Pick<'a> {
    names: &'a [String],
}

impl<'de> DeserializeSeed<'de> for Pick<'_> {
    type Value = Values<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Values<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut values: Values<'de> = smallvec::smallvec![None; self.names.len()];
        while let Some(at) = map.next_key_seed(KeyOf(self.names))? {
            match at {
                Some(i) => values[i] = map.next_value_seed(Read::top())?,
                None => map.next_value_seed(Skip)?,
            }
        }
        Ok(values)
    }
}

/// A named field's value, built as the filter holds it: `None` for an object, or
/// for an array holding one (or, `nested`, for any array: an array's items must be
/// scalars). What is not kept is still read through, as a full parse reads it.
pub(super) struct Read {
    nested: bool,
}

impl Read {
    /// A field's own value (not an array's item).
    pub(super) fn top() -> Read {
        Read { nested: false }
    }
}

impl<'de> DeserializeSeed<'de> for Read {
    type Value = Option<Field<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Read {
    type Value = Option<Field<'de>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: Error>(self, b: bool) -> Result<Self::Value, E> {
        Ok(Some(Field::Num(f64::from(u8::from(b)))))
    }

    fn visit_i64<E: Error>(self, n: i64) -> Result<Self::Value, E> {
        // As JSON's own numbers read as f64: the nearest one.
        Ok(Some(Field::Num(n as f64)))
    }

    fn visit_u64<E: Error>(self, n: u64) -> Result<Self::Value, E> {
        Ok(Some(Field::Num(n as f64)))
    }

    fn visit_f64<E: Error>(self, n: f64) -> Result<Self::Value, E> {
        Ok(Some(Field::Num(n)))
    }

    fn visit_borrowed_str<E: Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Field::Str(Cow::Borrowed(s.as_bytes()))))
    }

    fn visit_str<E: Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Field::Str(Cow::Owned(s.as_bytes().to_vec()))))
    }

    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(Some(Field::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        if self.nested {
            while seq.next_element_seed(Skip)?.is_some() {}
            return Ok(None);
        }
        let mut items = Some(Vec::new());
        while let Some(item) = seq.next_element_seed(Read { nested: true })? {
            // One item the language cannot hold spoils the tuple; the rest is
            // still read.
            match (item, &mut items) {
                (Some(item), Some(items)) => items.push(item),
                _ => items = None,
            }
        }
        Ok(items.map(Field::Tuple))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Skip.visit_map(map)?;
        Ok(None)
    }
}

/// A value read and dropped: parsed as a full parse parses it (serde's `IgnoredAny`
/// checks only the syntax, and would take a number out of `f64`'s range), but
/// nothing is built.
struct Skip;

impl<'de> DeserializeSeed<'de> for Skip {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E: Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E: Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E: Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E: Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Skip)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Skip)?.is_some() {
            map.next_value_seed(Skip)?;
        }
        Ok(())
    }
}

/// A key: its position among the names, without allocating it.
struct KeyOf<'a>(&'a [String]);

impl<'de> DeserializeSeed<'de> for KeyOf<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyOf<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|n| n == key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value as Json;

    /// What a full parse gives for the same names, held as the filter holds it.
    fn by_full_parse(attr: &[u8], names: &[String]) -> Option<Vec<Option<Field<'static>>>> {
        let json: Json = serde_json::from_slice(attr).ok()?;
        let obj = json.as_object()?;
        Some(
            names
                .iter()
                .map(|n| obj.get(n).and_then(|v| held(v, false)))
                .collect(),
        )
    }

    /// A parsed value as the filter holds it (`None` where it holds nothing).
    fn held(v: &Json, nested: bool) -> Option<Field<'static>> {
        Some(match v {
            Json::Null => Field::Null,
            Json::Bool(b) => Field::Num(f64::from(u8::from(*b))),
            Json::Number(n) => Field::Num(n.as_f64()?),
            Json::String(s) => Field::Str(Cow::Owned(s.as_bytes().to_vec())),
            Json::Array(_) if nested => return None,
            Json::Array(items) => {
                Field::Tuple(items.iter().map(|i| held(i, true)).collect::<Option<_>>()?)
            }
            Json::Object(_) => return None,
        })
    }

    /// What the reader gives, as a plain vector (a borrowed string equals an owned
    /// one with the same bytes).
    fn picked<'a>(attr: &'a [u8], names: &[String]) -> Option<Vec<Option<Field<'a>>>> {
        read(attr, names).map(SmallVec::into_vec)
    }

    fn num(n: f64) -> Option<Field<'static>> {
        Some(Field::Num(n))
    }

    fn text(s: &str) -> Option<Field<'static>> {
        Some(Field::Str(Cow::Owned(s.as_bytes().to_vec())))
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn named_fields_only_and_whole_documents_only() {
        let want = names(&["year", "genre", "missing"]);
        let doc = br#"{"title":"a \"b\" c","year":1990,"nested":{"year":1},"genre":"drama","tags":[1,[2]]}"#;
        assert_eq!(
            picked(doc, &want),
            Some(vec![num(1990.0), text("drama"), None])
        );
        // Strings without escapes are borrowed; with them, decoded.
        let doc = br#"{"year":"a\nb","genre":"drama"}"#;
        let values = read(doc, &want).expect("an object");
        assert!(matches!(&values[0], Some(Field::Str(Cow::Owned(s))) if s == b"a\nb"));
        assert!(matches!(
            &values[1],
            Some(Field::Str(Cow::Borrowed(b"drama")))
        ));
        // Arrays of scalars are tuples; booleans numbers; objects and arrays in
        // arrays nothing.
        let doc = br#"{"year":[1,"x",null,true],"genre":[1,[2]],"missing":{"a":1}}"#;
        let tuple = Field::Tuple(vec![
            Field::Num(1.0),
            Field::Str(Cow::Owned(b"x".to_vec())),
            Field::Null,
            Field::Num(1.0),
        ]);
        assert_eq!(picked(doc, &want), Some(vec![Some(tuple), None, None]));
        // An escaped key is compared decoded; repeated keys: the last wins, even
        // when it holds nothing the filter can use.
        let doc = br#"{"ye\u0061r":1,"year":2}"#;
        assert_eq!(picked(doc, &want[..1]), Some(vec![num(2.0)]));
        let doc = br#"{"year":1,"year":{}}"#;
        assert_eq!(picked(doc, &want[..1]), Some(vec![None]));
        // Not an object, not whole, or malformed where nothing is named: none.
        for bad in [
            &b"[1,2]"[..],
            b"7",
            b"\"year\"",
            b"null",
            br#"{"year":1} x"#,
            br#"{"year":1"#,
            br#"{"other":[1,}"#,
            b"",
        ] {
            assert_eq!(picked(bad, &want), None, "{}", String::from_utf8_lossy(bad));
            assert_eq!(by_full_parse(bad, &want), None);
        }
    }

    /// A JSON value of a few levels, as attributes hold them.
    fn json_value() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::from),
            any::<i32>().prop_map(Json::from),
            (-1e6f64..1e6).prop_map(Json::from),
            "[a-z\"\\\\é ]{0,6}".prop_map(Json::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Json::from),
                prop::collection::vec(("[abk]{1,2}", inner), 0..4)
                    .prop_map(|kv| { Json::Object(kv.into_iter().collect()) }),
            ]
        })
    }

    proptest! {
        /// Numbers of every form JSON has, and some it has not, read under a named
        /// key and passed over under another: as a full parse reads them.
        #[test]
        fn numbers_agree_with_a_full_parse(
            named in "-?(0|[1-9][0-9]{0,20}|0[0-9])(\\.[0-9]{0,4})?([eE][+-]?[0-9]{0,3})?",
            other in "-?(0|[1-9][0-9]{0,20})(\\.[0-9]{1,4})?([eE][+-]?[0-9]{1,3})?",
        ) {
            let want = names(&["a"]);
            let doc = format!("{{\"b\":{other},\"a\":{named}}}");
            let got = picked(doc.as_bytes(), &want);
            prop_assert_eq!(&got, &by_full_parse(doc.as_bytes(), &want));
            // Negative zero stays negative, as serde reads it.
            if let Some([Some(Field::Num(n))]) = got.as_deref() {
                let full: Json = serde_json::from_str(&named).expect("parsed above");
                prop_assert_eq!(n.is_sign_negative(), full.as_f64().is_some_and(f64::is_sign_negative));
            }
        }
    }

    proptest! {
        /// The fields read are the fields a full parse finds, for well-formed
        /// documents, documents with repeated keys, and documents cut or corrupted.
        #[test]
        fn agrees_with_a_full_parse(
            pairs in prop::collection::vec(("[abk]{1,2}", json_value()), 0..6),
            cut in any::<prop::sample::Index>(),
            corrupt in any::<Option<(prop::sample::Index, u8)>>(),
        ) {
            // Written by hand so that repeated keys stay in the document.
            let mut doc = String::from("{");
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    doc.push(',');
                }
                doc.push_str(&Json::from(k.as_str()).to_string());
                doc.push(':');
                doc.push_str(&v.to_string());
            }
            doc.push('}');
            let mut bytes = doc.into_bytes();
            let want = names(&["a", "b", "ab", "k"]);
            prop_assert_eq!(picked(&bytes, &want), by_full_parse(&bytes, &want));
            if let Some((at, byte)) = corrupt {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            } else {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            prop_assert_eq!(picked(&bytes, &want), by_full_parse(&bytes, &want));
        }
    }
}

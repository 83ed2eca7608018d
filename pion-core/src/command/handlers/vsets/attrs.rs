//! The fields a `FILTER` names, read out of an element's JSON attributes.
//!
//! A filtered `VSIM` tests every neighbour of every node its walk explores, thousands
//! of elements a query when matches are rare. Parsing each element's attributes into a
//! whole JSON value allocated every key and every string of the document, and took
//! most of such a query's time. Here the document is read once, front to back: keys
//! are compared where they lie, values under a key the expression does not name are
//! skipped (still read as a full parse reads them: numbers in range, strings in
//! UTF-8, so a document a full parse refuses is refused), and only the named ones are
//! built.

use serde::de::{DeserializeSeed, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::Value as Json;

/// The values of `names` in the JSON object `attr`, by position (`None` for a name it
/// does not hold; the last of repeated keys wins, as a full parse keeps it). `None`
/// when `attr` is not one whole, well-formed JSON object.
pub(super) fn read(attr: &[u8], names: &[String]) -> Option<Vec<Option<Json>>> {
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
    type Value = Vec<Option<Json>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Vec<Option<Json>>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut values = vec![None; self.names.len()];
        while let Some(at) = map.next_key_seed(KeyOf(self.names))? {
            match at {
                Some(i) => values[i] = Some(map.next_value::<Json>()?),
                None => map.next_value_seed(Skip)?,
            }
        }
        Ok(values)
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

    /// What a full parse gives for the same names.
    fn by_full_parse(attr: &[u8], names: &[String]) -> Option<Vec<Option<Json>>> {
        let json: Json = serde_json::from_slice(attr).ok()?;
        let obj = json.as_object()?;
        Some(names.iter().map(|n| obj.get(n).cloned()).collect())
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn named_fields_only_and_whole_documents_only() {
        let want = names(&["year", "genre", "missing"]);
        let doc = br#"{"title":"a \"b\" c","year":1990,"nested":{"year":1},"genre":"drama","tags":[1,[2]]}"#;
        assert_eq!(
            read(doc, &want),
            Some(vec![
                Some(Json::from(1990)),
                Some(Json::from("drama")),
                None
            ])
        );
        // An escaped key is compared decoded; repeated keys: the last wins.
        let doc = br#"{"ye\u0061r":1,"year":2}"#;
        assert_eq!(read(doc, &want[..1]), Some(vec![Some(Json::from(2))]));
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
            assert_eq!(read(bad, &want), None, "{}", String::from_utf8_lossy(bad));
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
            prop_assert_eq!(read(&bytes, &want), by_full_parse(&bytes, &want));
            if let Some((at, byte)) = corrupt {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            } else {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            prop_assert_eq!(read(&bytes, &want), by_full_parse(&bytes, &want));
        }
    }
}

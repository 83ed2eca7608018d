//! Fuzzes the two query languages clients send as text: RediSearch queries (parse, and
//! FT.EXPLAIN of what parsed) and vector-set FILTER expressions (parse, and evaluation
//! against a JSON attribute). No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::command::handlers::vsets::filter::Filter;
use pion_core::index::query::{explain, parse, FieldKind, FieldList, Params};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let fields = FieldList::new([
        ("t", FieldKind::Text),
        ("g", FieldKind::Tag),
        ("n", FieldKind::Numeric),
        ("v", FieldKind::Vector),
    ]);
    let mut params = Params::new();
    params.insert("p", "x");
    params.insert("b", [0u8; 8]);
    let dialect = u32::from(first % 5);
    if let Ok(q) = parse(rest, &params, dialect, &fields) {
        let _ = explain(&q);
    }
    let (expr, attr) = rest.split_at(rest.len() / 2);
    if let Ok(f) = Filter::parse(expr) {
        let _ = f.matches(Some(attr));
        let _ = f.matches(None);
    }
});

//! lua-cjson's settings as Redis scripts see them (`cjson.encode_max_depth`,
//! `cjson.encode_sparse_array`, `cjson.encode_invalid_numbers`, …). Each function sets
//! what it is given and returns the current values, with lua-cjson's argument checks
//! and texts. The settings belong to one `cjson` table and last as long as the Lua
//! state (across scripts, until `SCRIPT FLUSH`), as they do in Redis; `cjson.new()`
//! makes a table with its own.

use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, Value};
use parking_lot::Mutex;

use super::api::raise_at;

/// What `encode_invalid_numbers` allows for NaN and infinities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidNumbers {
    /// Refused (the default).
    Off,
    /// Written as `nan`, `inf`, `-inf`.
    On,
    /// Written as `null`.
    Null,
}

/// One `cjson` table's settings; the defaults are lua-cjson's.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Encode an excessively sparse array as an object instead of refusing it.
    pub sparse_convert: bool,
    /// An array is excessively sparse when its largest index exceeds this many times
    /// its item count (0: never)...
    pub sparse_ratio: i64,
    /// ...and exceeds this index.
    pub sparse_safe: i64,
    /// Deepest nesting `encode` writes.
    pub encode_max_depth: i64,
    /// Deepest nesting `decode` reads.
    pub decode_max_depth: i64,
    /// Significant digits of encoded numbers (1 to 14).
    pub precision: i64,
    /// Whether the encode buffer is kept between calls (a memory trade-off only).
    pub keep_buffer: bool,
    /// NaN and infinities when encoding.
    pub encode_invalid: InvalidNumbers,
    /// Whether `decode` reads what JSON lacks but C's `strtod` takes: hexadecimal,
    /// `inf`, `nan`, a leading `+` or leading zeros.
    pub decode_invalid: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            precision: 14,
            keep_buffer: true,
            encode_invalid: InvalidNumbers::Off,
            decode_invalid: true,
        }
    }
}

/// Settings shared by one `cjson` table's functions.
pub type Shared = Arc<Mutex<Settings>>;

/// The arguments of one setting function, checked as lua-cjson checks them.
struct Args<'a> {
    lua: &'a Lua,
    name: &'static str,
    values: Vec<Value>,
}

impl Args<'_> {
    fn error(&self, n: usize, msg: &str) -> mlua::Error {
        raise_at(
            self.lua,
            &format!("bad argument #{n} to '{}' ({msg})", self.name),
        )
    }

    /// At most `max` arguments.
    fn at_most(&self, max: usize) -> mlua::Result<()> {
        if self.values.len() > max {
            return Err(self.error(max + 1, "found too many arguments"));
        }
        Ok(())
    }

    fn given(&self, n: usize) -> Option<&Value> {
        self.values.get(n - 1).filter(|v| !v.is_nil())
    }

    /// Argument `n` as an integer in `min..=max`, when given.
    fn integer(&self, n: usize, min: i64, max: i64) -> mlua::Result<Option<i64>> {
        let Some(v) = self.given(n) else {
            return Ok(None);
        };
        let Some(number) = super::convert::lua_number(v) else {
            return Err(self.error(n, &format!("number expected, got {}", type_name(v))));
        };
        let value = number.trunc() as i64;
        if value < min || value > max {
            return Err(self.error(n, &format!("expected integer between {min} and {max}")));
        }
        Ok(Some(value))
    }

    /// Argument `n` as one of `options` (its index), or a boolean when `booleans`
    /// (false is option 0, true option 1), when given.
    fn option(&self, n: usize, options: &[&str], booleans: bool) -> mlua::Result<Option<usize>> {
        let Some(v) = self.given(n) else {
            return Ok(None);
        };
        let text = match v {
            Value::Boolean(b) if booleans => return Ok(Some(usize::from(*b))),
            Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
            Value::Integer(i) => i.to_string(),
            Value::Number(x) => crate::util::num::fmt_g(*x, 14),
            other => {
                return Err(self.error(n, &format!("string expected, got {}", type_name(other))))
            }
        };
        match options.iter().position(|o| *o == text) {
            Some(i) => Ok(Some(i)),
            None => Err(self.error(n, &format!("invalid option '{text}'"))),
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Nil => "no value",
        Value::Integer(_) => "number",
        other => other.type_name(),
    }
}

const ON_OFF: &[&str] = &["off", "on"];

/// Registers the setting functions on `t`, all over `shared`.
pub fn install(lua: &Lua, t: &Table, shared: &Shared) -> mlua::Result<()> {
    type Setter = fn(&Args<'_>, &mut Settings) -> mlua::Result<Vec<Value>>;
    let setters: [(&'static str, Setter); 7] = [
        ("encode_sparse_array", |a, s| {
            a.at_most(3)?;
            if let Some(o) = a.option(1, ON_OFF, true)? {
                s.sparse_convert = o == 1;
            }
            if let Some(r) = a.integer(2, 0, i64::from(i32::MAX))? {
                s.sparse_ratio = r;
            }
            if let Some(safe) = a.integer(3, 0, i64::from(i32::MAX))? {
                s.sparse_safe = safe;
            }
            Ok(vec![
                Value::Boolean(s.sparse_convert),
                Value::Integer(s.sparse_ratio),
                Value::Integer(s.sparse_safe),
            ])
        }),
        ("encode_max_depth", |a, s| {
            a.at_most(1)?;
            if let Some(d) = a.integer(1, 1, i64::from(i32::MAX))? {
                s.encode_max_depth = d;
            }
            Ok(vec![Value::Integer(s.encode_max_depth)])
        }),
        ("decode_max_depth", |a, s| {
            a.at_most(1)?;
            if let Some(d) = a.integer(1, 1, i64::from(i32::MAX))? {
                s.decode_max_depth = d;
            }
            Ok(vec![Value::Integer(s.decode_max_depth)])
        }),
        ("encode_number_precision", |a, s| {
            a.at_most(1)?;
            if let Some(p) = a.integer(1, 1, 14)? {
                s.precision = p;
            }
            Ok(vec![Value::Integer(s.precision)])
        }),
        ("encode_keep_buffer", |a, s| {
            a.at_most(1)?;
            if let Some(o) = a.option(1, ON_OFF, true)? {
                s.keep_buffer = o == 1;
            }
            Ok(vec![Value::Boolean(s.keep_buffer)])
        }),
        ("encode_invalid_numbers", |a, s| {
            a.at_most(1)?;
            if let Some(o) = a.option(1, &["off", "on", "null"], true)? {
                s.encode_invalid = match o {
                    0 => InvalidNumbers::Off,
                    1 => InvalidNumbers::On,
                    _ => InvalidNumbers::Null,
                };
            }
            Ok(vec![match s.encode_invalid {
                InvalidNumbers::Off => Value::Boolean(false),
                InvalidNumbers::On => Value::Boolean(true),
                InvalidNumbers::Null => Value::String(a.lua.create_string("null")?),
            }])
        }),
        ("decode_invalid_numbers", |a, s| {
            a.at_most(1)?;
            if let Some(o) = a.option(1, ON_OFF, true)? {
                s.decode_invalid = o == 1;
            }
            Ok(vec![Value::Boolean(s.decode_invalid)])
        }),
    ];
    for (name, setter) in setters {
        let shared = Arc::clone(shared);
        let f = lua.create_function(move |lua, values: MultiValue| {
            let args = Args {
                lua,
                name,
                values: values.into_iter().collect(),
            };
            let mut settings = shared.lock();
            setter(&args, &mut settings).map(MultiValue::from_vec)
        })?;
        t.raw_set(name, f)?;
    }
    Ok(())
}

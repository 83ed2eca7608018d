//! The `struct` library scripts see (Roberto Ierusalimschy's struct 0.2 as Redis
//! bundles it, with its fix for oversized counts): `struct.pack(fmt, ...)`,
//! `struct.unpack(fmt, s [, pos])` and `struct.size(fmt)` turn Lua numbers and
//! strings into C-style binary records and back.
//!
//! The format is read as on the 64-bit little-endian machines Redis runs on: `b/B`
//! 1 byte, `h/H` 2, `l/L` and `T` 8, `i/I[n]` n bytes (4 by default, at most 32), `f`
//! and `d` IEEE floats, `x` one zero byte, `c[n]` n characters (`c0`: the whole
//! string when packing, the previous number's length when unpacking), `s` a
//! zero-terminated string; `<`, `>` set the byte order and `![n]` the largest
//! alignment (8 by default). Integers are held in 64 bits, whatever their size.

use mlua::{Lua, MultiValue, Table, Value};

use super::api::raise_at;
use super::convert::number_text;
use super::luaarg::{bad_argument, check_bytes, check_number, opt_integer, string_function};

/// The largest `i`/`I` size.
const MAX_INT_SIZE: usize = 32;

/// The default for `!` without a number: a double's alignment.
const MAX_ALIGN: usize = 8;

/// Lua 5.1's limit on stack slots for one C function (`LUAI_MAXCSTACK`).
const LUA_C_STACK_LIMIT: usize = 8000;

/// Builds the `struct` table; failures raise at the caller's line.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("pack", string_function(lua, pack)?)?;
    t.raw_set(
        "unpack",
        lua.create_function(|lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            let fields = unpack(&args).map_err(|e| raise_at(lua, &e))?;
            let mut out = Vec::with_capacity(fields.len());
            for f in fields {
                out.push(match f {
                    Field::Number(n) => Value::Number(n),
                    Field::Bytes(b) => Value::String(lua.create_string(b)?),
                });
            }
            Ok(MultiValue::from_iter(out))
        })?,
    )?;
    t.raw_set(
        "size",
        lua.create_function(|lua, args: MultiValue| {
            let args: Vec<Value> = args.into_iter().collect();
            size(&args).map(|n| n as f64).map_err(|e| raise_at(lua, &e))
        })?,
    )?;
    Ok(t)
}

/// The byte order and alignment a format has set so far.
struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            little: cfg!(target_endian = "little"),
            align: 1,
        }
    }
}

/// A format string being read, one option at a time.
struct Format<'a> {
    fmt: &'a [u8],
    pos: usize,
    /// The function name errors mention.
    fname: &'static str,
}

impl<'a> Format<'a> {
    /// The format as C reads it: up to its first zero byte.
    fn new(fmt: &'a [u8], fname: &'static str) -> Self {
        let end = memchr::memchr(0, fmt).unwrap_or(fmt.len());
        Format {
            fmt: &fmt[..end],
            pos: 0,
            fname,
        }
    }

    fn next_option(&mut self) -> Option<u8> {
        let opt = *self.fmt.get(self.pos)?;
        self.pos += 1;
        Some(opt)
    }

    /// The count after an option, or `default` when none is written.
    fn number(&mut self, default: usize) -> Result<usize, String> {
        let mut n: i32 = 0;
        let mut seen = false;
        while let Some(&d) = self.fmt.get(self.pos).filter(|d| d.is_ascii_digit()) {
            let digit = i32::from(d - b'0');
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(digit))
                .ok_or_else(|| "integral size overflow".to_string())?;
            self.pos += 1;
            seen = true;
        }
        // Not negative: it was built from digits without overflowing.
        Ok(if seen { n as usize } else { default })
    }

    /// The size of option `opt` (reading its count); 0 for options without one.
    fn size(&mut self, opt: u8) -> Result<usize, String> {
        Ok(match opt {
            b'b' | b'B' => 1,
            b'h' | b'H' => 2,
            b'l' | b'L' | b'T' | b'd' => 8,
            b'f' => 4,
            b'x' => 1,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let n = self.number(4)?;
                if n > MAX_INT_SIZE {
                    return Err(format!(
                        "integral size {n} is larger than limit of {MAX_INT_SIZE}"
                    ));
                }
                n
            }
            _ => 0,
        })
    }

    /// Applies an option that sets the byte order or alignment; any other option is
    /// unknown to the format.
    fn control(&mut self, opt: u8, h: &mut Header) -> Result<(), String> {
        match opt {
            b' ' => {}
            b'>' => h.little = false,
            b'<' => h.little = true,
            b'!' => {
                let a = self.number(MAX_ALIGN)?;
                if !a.is_power_of_two() {
                    return Err(format!("alignment {a} is not a power of 2"));
                }
                h.align = a;
            }
            other => {
                let msg = format!("invalid format option '{}'", char::from(other));
                return Err(bad_argument(1, self.fname, &msg));
            }
        }
        Ok(())
    }
}

/// Padding that puts an item of `size` at an aligned offset after `len` bytes.
fn padding(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    // The library's mask arithmetic, kept for sizes that are not powers of two.
    (size - (len & (size - 1))) & (size - 1)
}

fn is_integer_option(opt: u8) -> bool {
    matches!(
        opt,
        b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I'
    )
}

/// Bytes in the requested order from their little-endian form.
fn ordered(mut bytes: Vec<u8>, little: bool) -> Vec<u8> {
    if !little {
        bytes.reverse();
    }
    bytes
}

/// `struct.pack(fmt, ...)`.
fn pack(args: &[Value]) -> Result<Vec<u8>, String> {
    let fmt = check_bytes(args, 1, "pack")?;
    // Then the library pushes a nil after the arguments, so a missing value right
    // after the last one reads as nil, not as no value.
    let args = &[args, &[Value::Nil]].concat();
    let mut f = Format::new(&fmt, "pack");
    let mut h = Header::default();
    let mut arg = 2;
    let mut out = Vec::new();
    while let Some(opt) = f.next_option() {
        let mut size = f.size(opt)?;
        out.resize(out.len() + padding(out.len(), &h, opt, size), 0);
        match opt {
            _ if is_integer_option(opt) => {
                let n = check_number(args, arg, "pack")?;
                arg += 1;
                // Negative numbers go through the signed type, as the C casts do;
                // sizes past 8 bytes get zeros above the 64 bits.
                let value = if n < 0.0 { n as i64 as u64 } else { n as u64 };
                let mut bytes = vec![0u8; size];
                for (i, b) in bytes.iter_mut().enumerate().take(8) {
                    *b = (value >> (8 * i)) as u8;
                }
                out.extend(ordered(bytes, h.little));
            }
            b'x' => out.push(0),
            b'f' => {
                let x = check_number(args, arg, "pack")? as f32;
                arg += 1;
                out.extend(ordered(x.to_le_bytes().to_vec(), h.little));
            }
            b'd' => {
                let x = check_number(args, arg, "pack")?;
                arg += 1;
                out.extend(ordered(x.to_le_bytes().to_vec(), h.little));
            }
            b'c' | b's' => {
                let s = check_bytes(args, arg, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // The library names the argument after the string.
                    return Err(bad_argument(arg, "pack", "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                }
            }
            _ => f.control(opt, &mut h)?,
        }
    }
    Ok(out)
}

/// One unpacked value.
#[derive(Debug, PartialEq)]
enum Field {
    Number(f64),
    Bytes(Vec<u8>),
}

/// An integer field read as the library reads it: at most the low 64 bits kept, and
/// for signed options the sign bit found by its shift (taken modulo 64, as the
/// machine does for sizes past 8 bytes).
fn read_integer(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut v: u64 = 0;
    let mut push = |b: &u8| v = (v << 8) | u64::from(*b);
    if little {
        bytes.iter().rev().for_each(&mut push);
    } else {
        bytes.iter().for_each(&mut push);
    }
    if !signed {
        return v as f64;
    }
    let shift = (bytes.len() as i64 * 8 - 1) & 63;
    let mask = u64::MAX << shift;
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

/// `struct.unpack(fmt, s [, pos])`: the fields, then the position after them.
fn unpack(args: &[Value]) -> Result<Vec<Field>, String> {
    let fmt = check_bytes(args, 1, "unpack")?;
    let data = check_bytes(args, 2, "unpack")?;
    // A negative start wraps around as the C size type does, and then fails the
    // length check of the first option.
    let start = opt_integer(args, 3, "unpack", 1)? as usize;
    if start == 0 {
        return Err(bad_argument(3, "unpack", "offset must be 1 or greater"));
    }
    let mut pos = start - 1;
    let too_short = || bad_argument(2, "unpack", "data string too short");
    let fits = |pos: usize, size: usize| size <= data.len() && pos <= data.len() - size;
    let mut f = Format::new(&fmt, "unpack");
    let mut h = Header::default();
    let mut fields: Vec<Field> = Vec::new();
    while let Some(opt) = f.next_option() {
        let mut size = f.size(opt)?;
        pos = pos.wrapping_add(padding(pos, &h, opt, size));
        if !fits(pos, size) {
            return Err(too_short());
        }
        if args.len() + fields.len() + 2 > LUA_C_STACK_LIMIT {
            return Err("stack overflow (too many results)".into());
        }
        match opt {
            _ if is_integer_option(opt) => {
                let signed = opt.is_ascii_lowercase();
                let n = read_integer(&data[pos..pos + size], h.little, signed);
                fields.push(Field::Number(n));
            }
            b'x' => {}
            b'f' => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&data[pos..pos + 4]);
                let x = if h.little {
                    f32::from_le_bytes(b)
                } else {
                    f32::from_be_bytes(b)
                };
                fields.push(Field::Number(f64::from(x)));
            }
            b'd' => {
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[pos..pos + 8]);
                let x = if h.little {
                    f64::from_le_bytes(b)
                } else {
                    f64::from_be_bytes(b)
                };
                fields.push(Field::Number(x));
            }
            b'c' => {
                if size == 0 {
                    // The length is the previous field, which it replaces.
                    let n = match fields.last() {
                        Some(Field::Number(n)) => Some(*n),
                        Some(Field::Bytes(b)) => number_text(b),
                        None => None,
                    };
                    let n = n.ok_or_else(|| "format 'c0' needs a previous size".to_string())?;
                    fields.pop();
                    size = n as usize;
                    if !fits(pos, size) {
                        return Err(too_short());
                    }
                }
                fields.push(Field::Bytes(data[pos..pos + size].to_vec()));
            }
            b's' => {
                let end = memchr::memchr(0, &data[pos..])
                    .ok_or_else(|| "unfinished string in data".to_string())?;
                size = end + 1;
                fields.push(Field::Bytes(data[pos..pos + end].to_vec()));
            }
            _ => f.control(opt, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    fields.push(Field::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(fields)
}

/// `struct.size(fmt)`: the bytes a format packs to.
fn size(args: &[Value]) -> Result<usize, String> {
    let fmt = check_bytes(args, 1, "size")?;
    let mut f = Format::new(&fmt, "size");
    let mut h = Header::default();
    let mut pos = 0usize;
    while let Some(opt) = f.next_option() {
        let size = f.size(opt)?;
        pos += padding(pos, &h, opt, size);
        if opt == b's' {
            return Err(bad_argument(1, "size", "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(bad_argument(1, "size", "option 'c0' has no fixed size"));
        }
        // Letters the format does not know count for nothing here.
        if !opt.is_ascii_alphanumeric() {
            f.control(opt, &mut h)?;
        }
        pos += size;
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_records_with_alignment_and_order() {
        let lua = Lua::new();
        let v = |x: &str| Value::String(lua.create_string(x).expect("string"));
        let bytes = pack(&[
            v(">!4bi2d"),
            Value::Number(1.0),
            Value::Number(-2.0),
            Value::Number(0.5),
        ])
        .expect("pack");
        assert_eq!(
            bytes,
            // b, a pad byte to align i2, i2, and d aligned to 4 (the `!4` limit).
            [1, 0, 0xff, 0xfe, 0x3f, 0xe0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(size(&[v(">!4bi2d")]), Ok(12));
        assert_eq!(size(&[v(">!8bi2d")]), Ok(16));
        assert_eq!(pack(&[v("s"), v("ab")]), Ok(b"ab\0".to_vec()));
        assert_eq!(
            pack(&[v("c5"), v("ab")]),
            Err("bad argument #3 to 'pack' (string too short)".into())
        );
        assert_eq!(
            pack(&[v("y")]),
            Err("bad argument #1 to 'pack' (invalid format option 'y')".into())
        );
        assert_eq!(
            pack(&[v("i99999999999")]),
            Err("integral size overflow".into())
        );
        assert_eq!(
            pack(&[v("i33")]),
            Err("integral size 33 is larger than limit of 32".into())
        );
        assert_eq!(
            pack(&[v("!3")]),
            Err("alignment 3 is not a power of 2".into())
        );
    }

    #[test]
    fn unpacks_what_it_packs() {
        let lua = Lua::new();
        let v = |x: &[u8]| Value::String(lua.create_string(x).expect("string"));
        let rec = pack(&[
            v(b"<hBc0s"),
            Value::Number(-300.0),
            Value::Number(3.0),
            v(b"xyz"),
            v(b"end"),
        ])
        .expect("pack");
        let fields = unpack(&[v(b"<hBc0s"), v(&rec)]).expect("unpack");
        assert_eq!(
            fields,
            vec![
                Field::Number(-300.0),
                Field::Bytes(b"xyz".to_vec()),
                Field::Bytes(b"end".to_vec()),
                Field::Number(rec.len() as f64 + 1.0),
            ]
        );
        assert_eq!(
            unpack(&[v(b"i4"), v(b"ab")]),
            Err("bad argument #2 to 'unpack' (data string too short)".into())
        );
        assert_eq!(
            unpack(&[v(b"b"), v(b"ab"), Value::Number(0.0)]),
            Err("bad argument #3 to 'unpack' (offset must be 1 or greater)".into())
        );
        assert_eq!(
            unpack(&[v(b"s"), v(b"ab")]),
            Err("unfinished string in data".into())
        );
        assert_eq!(
            unpack(&[v(b"c0"), v(b"ab")]),
            Err("format 'c0' needs a previous size".into())
        );
        assert_eq!(
            size(&[v(b"s")]),
            Err("bad argument #1 to 'size' (option 's' has no fixed size)".into())
        );
    }
}

//! Evaluating a [`Path`] over a document: the location of every match, in
//! RedisJSON's order, so readers can borrow the values and writers can change them.
//!
//! A match is a [`Pointer`] (member names and array indices from the root) rather
//! than a reference, because one command may change several matches in turn.

use serde_json::Value as Json;

use super::path::{CmpOp, Expr, Operand, Path, Segment, Selector};

/// One step from a node to a child.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// Where a match is: the steps from the root.
pub type Pointer = Vec<Step>;

/// The deepest document descended into by `..` (deeper parts are not searched).
const MAX_DESCENT: usize = 1024;

impl Path {
    /// Every match of this path in `root`, in RedisJSON's order.
    pub fn select(&self, root: &Json) -> Vec<Pointer> {
        select_from(&self.segments, root, root, Vec::new())
    }

    /// The matches of every segment but the last, and the last segment (`None` for
    /// the root): where `JSON.SET` may add a member.
    pub fn split_last(&self) -> Option<(Path, &Segment)> {
        let (last, parent) = self.segments.split_last()?;
        Some((
            Path {
                segments: parent.to_vec(),
                legacy: self.legacy,
                text: String::new(),
                sent: String::new(),
            },
            last,
        ))
    }
}

/// The value at `ptr`.
pub fn get<'v>(root: &'v Json, ptr: &[Step]) -> Option<&'v Json> {
    let mut v = root;
    for step in ptr {
        v = match (step, v) {
            (Step::Key(k), Json::Object(m)) => m.get(k)?,
            (Step::Index(i), Json::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// The value at `ptr`, mutably.
pub fn get_mut<'v>(root: &'v mut Json, ptr: &[Step]) -> Option<&'v mut Json> {
    let mut v = root;
    for step in ptr {
        v = match (step, v) {
            (Step::Key(k), Json::Object(m)) => m.get_mut(k)?,
            (Step::Index(i), Json::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn select_from(segments: &[Segment], root: &Json, start: &Json, at: Pointer) -> Vec<Pointer> {
    let mut current = vec![at];
    for seg in segments {
        let mut next = Vec::new();
        for ptr in current {
            let Some(node) = get(start, &ptr) else {
                continue;
            };
            if seg.recursive {
                descend(&seg.selector, root, node, ptr, &mut next, 0);
            } else {
                apply(&seg.selector, root, node, &ptr, &mut next);
            }
        }
        current = next;
    }
    current
}

fn child(ptr: &[Step], step: Step) -> Pointer {
    let mut p = ptr.to_vec();
    p.push(step);
    p
}

fn descend(
    sel: &Selector,
    root: &Json,
    node: &Json,
    ptr: Pointer,
    out: &mut Vec<Pointer>,
    depth: usize,
) {
    if depth > MAX_DESCENT {
        return;
    }
    apply(sel, root, node, &ptr, out);
    match node {
        Json::Object(m) => {
            for (k, v) in m {
                descend(
                    sel,
                    root,
                    v,
                    child(&ptr, Step::Key(k.clone())),
                    out,
                    depth + 1,
                );
            }
        }
        Json::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                descend(sel, root, v, child(&ptr, Step::Index(i)), out, depth + 1);
            }
        }
        _ => {}
    }
}

/// A (possibly negative) index into an array of `len`.
fn normalize(i: i64, len: usize) -> Option<usize> {
    let len = len as i64;
    let i = if i < 0 { i + len } else { i };
    (0..len).contains(&i).then_some(i as usize)
}

fn apply(sel: &Selector, root: &Json, node: &Json, ptr: &[Step], out: &mut Vec<Pointer>) {
    match (sel, node) {
        (Selector::Names(names), Json::Object(m)) => {
            for n in names {
                if m.contains_key(n) {
                    out.push(child(ptr, Step::Key(n.clone())));
                }
            }
        }
        (Selector::Wildcard, Json::Object(m)) => {
            out.extend(m.keys().map(|k| child(ptr, Step::Key(k.clone()))));
        }
        (Selector::Wildcard, Json::Array(a)) => {
            out.extend((0..a.len()).map(|i| child(ptr, Step::Index(i))));
        }
        (Selector::Indices(ix), Json::Array(a)) => {
            for &i in ix {
                if let Some(i) = normalize(i, a.len()) {
                    out.push(child(ptr, Step::Index(i)));
                }
            }
        }
        (Selector::Slice(start, end, step), Json::Array(a)) => {
            let len = a.len() as i64;
            let step = step.unwrap_or(1);
            if step <= 0 {
                return;
            }
            let clamp = |i: i64| if i < 0 { (i + len).max(0) } else { i.min(len) };
            let s = clamp(start.unwrap_or(0));
            let e = clamp(end.unwrap_or(len));
            let mut i = s;
            while i < e {
                out.push(child(ptr, Step::Index(i as usize)));
                i += step;
            }
        }
        (Selector::Filter(expr), Json::Array(a)) => {
            for (i, v) in a.iter().enumerate() {
                if holds(expr, root, v) {
                    out.push(child(ptr, Step::Index(i)));
                }
            }
        }
        (Selector::Filter(expr), Json::Object(m)) => {
            for (k, v) in m {
                if holds(expr, root, v) {
                    out.push(child(ptr, Step::Key(k.clone())));
                }
            }
        }
        _ => {}
    }
}

/// The values an operand yields for the current node.
fn operand<'v>(op: &'v Operand, root: &'v Json, current: &'v Json) -> Vec<&'v Json> {
    match op {
        Operand::Literal(v) => vec![v],
        Operand::Current(segs) => select_from(segs, root, current, Vec::new())
            .iter()
            .filter_map(|p| get(current, p))
            .collect(),
        Operand::Root(segs) => select_from(segs, root, root, Vec::new())
            .iter()
            .filter_map(|p| get(root, p))
            .collect(),
    }
}

/// Whether a filter holds for `current`.
fn holds(expr: &Expr, root: &Json, current: &Json) -> bool {
    match expr {
        Expr::And(a, b) => holds(a, root, current) && holds(b, root, current),
        Expr::Or(a, b) => holds(a, root, current) || holds(b, root, current),
        Expr::Exists(op) => match op {
            Operand::Literal(v) => v.as_bool().unwrap_or(false),
            _ => !operand(op, root, current).is_empty(),
        },
        Expr::Cmp(l, op, r) => {
            let (ls, rs) = (operand(l, root, current), operand(r, root, current));
            ls.iter().any(|a| rs.iter().any(|b| compare(a, *op, b)))
        }
    }
}

/// One comparison of two values, with RedisJSON's rules: numbers by value, strings
/// by bytes, booleans and nulls only for (in)equality; other pairs never compare.
fn compare(a: &Json, op: CmpOp, b: &Json) -> bool {
    use std::cmp::Ordering;
    if op == CmpOp::Regex {
        return match (a, b) {
            (Json::String(s), Json::String(pattern)) => {
                regex::Regex::new(pattern).is_ok_and(|re| re.is_match(s))
            }
            _ => false,
        };
    }
    let ord = match (a, b) {
        (Json::Number(x), Json::Number(y)) => num_cmp(x, y),
        (Json::String(x), Json::String(y)) => Some(x.cmp(y)),
        (Json::Bool(x), Json::Bool(y)) => Some(x.cmp(y)),
        (Json::Null, Json::Null) => Some(Ordering::Equal),
        _ => None,
    };
    match (op, ord) {
        (CmpOp::Eq, Some(o)) => o == Ordering::Equal,
        (CmpOp::Ne, Some(o)) => o != Ordering::Equal,
        (CmpOp::Ne, None) => true,
        (_, None) => false,
        (CmpOp::Lt, Some(o)) => o == Ordering::Less,
        (CmpOp::Le, Some(o)) => o != Ordering::Greater,
        (CmpOp::Gt, Some(o)) => o == Ordering::Greater,
        (CmpOp::Ge, Some(o)) => o != Ordering::Less,
        (CmpOp::Regex, _) => false,
    }
}

fn num_cmp(x: &serde_json::Number, y: &serde_json::Number) -> Option<std::cmp::Ordering> {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return Some(a.cmp(&b));
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return Some(a.cmp(&b));
    }
    x.as_f64()?.partial_cmp(&y.as_f64()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(doc: &str, path: &str) -> String {
        let root: Json = serde_json::from_str(doc).expect("json");
        let p = Path::parse(path.as_bytes()).expect("path");
        let vals: Vec<Json> = p
            .select(&root)
            .iter()
            .map(|ptr| get(&root, ptr).cloned().expect("resolves"))
            .collect();
        serde_json::to_string(&vals).expect("serialises")
    }

    #[test]
    fn recursive_descent_lists_children_before_grandchildren() {
        let doc = r#"{"a":1,"b":{"x":1},"c":[1,2]}"#;
        assert_eq!(run(doc, "$..*"), r#"[1,{"x":1},[1,2],1,1,2]"#);
        assert_eq!(run(r#"{"x":1,"o":{"x":2,"p":{"x":3}}}"#, "$..x"), "[1,2,3]");
    }

    #[test]
    fn indices_slices_and_unions() {
        let doc = "[0,1,2,3,4]";
        assert_eq!(run(doc, "$[-1]"), "[4]");
        assert_eq!(run(doc, "$[1,-1,9]"), "[1,4]");
        assert_eq!(run(doc, "$[1:3]"), "[1,2]");
        assert_eq!(run(doc, "$[::2]"), "[0,2,4]");
        assert_eq!(run(doc, "$[-2:]"), "[3,4]");
        assert_eq!(run(r#"{"a":1,"b":2}"#, "$['b','a']"), "[2,1]");
    }

    #[test]
    fn filters_compare_numbers_strings_and_regexes() {
        let doc = r#"[{"n":1,"s":"ab"},{"n":2.5,"s":"cd"},{"n":"3"}]"#;
        assert_eq!(run(doc, "$[?(@.n > 1)].n"), "[2.5]");
        assert_eq!(run(doc, "$[?(@.n >= 1 && @.s == 'ab')].n"), "[1]");
        assert_eq!(run(doc, "$[?(@.s =~ \"^c\")].n"), "[2.5]");
        assert_eq!(run(doc, "$[?(@.s)].n"), "[1,2.5]");
        assert_eq!(run(doc, "$[?(@.n != 1)].n"), r#"[2.5,"3"]"#);
        assert_eq!(run(doc, "$[?(@.n == 1 || @.n == 2.5)].s"), r#"["ab","cd"]"#);
    }
}

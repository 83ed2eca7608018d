//! Writing whole values: `JSON.SET`, `JSON.MSET`, `JSON.MERGE` (RFC 7396) and
//! `JSON.DEL`/`JSON.FORGET`.

use serde_json::Value as Json;

use super::{arity, changed, doc, doc_mut, fits, path, path_or_root, store, value};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{JsonError, OpError, OpResult};
use crate::reply::Reply;
use crate::value::json::path::Selector;
use crate::value::json::{select, Path, Step};

/// Where a path that matches nothing may add a member: the parents' matches and the
/// member's name, when the last step names exactly one member.
fn new_member(root: &Json, p: &Path) -> Option<(Vec<select::Pointer>, String)> {
    let (parent, last) = p.split_last()?;
    match &last.selector {
        Selector::Names(names) if names.len() == 1 && !last.recursive => {
            Some((parent.select(root), names[0].clone()))
        }
        _ => None,
    }
}

/// Whether the last step of `p` is an index into an existing array that is out of
/// range (`JSON.SET` refuses it rather than answering null).
fn index_past_end(root: &Json, p: &Path) -> bool {
    let Some((parent, last)) = p.split_last() else {
        return false;
    };
    if !matches!(last.selector, Selector::Indices(_)) || last.recursive {
        return false;
    }
    parent
        .select(root)
        .iter()
        .any(|ptr| select::get(root, ptr).is_some_and(Json::is_array))
}

/// Puts `v` at every match of `p`, or adds it as a new member where the path ends
/// in one; `Ok(false)` when nothing was written (or `NX`/`XX` said not to).
pub(super) fn set_at(root: &mut Json, p: &Path, v: &Json, nx: bool, xx: bool) -> OpResult<bool> {
    let found = p.select(root);
    if !found.is_empty() {
        if nx {
            return Ok(false);
        }
        for ptr in &found {
            fits(ptr.len(), v)?;
        }
        for ptr in &found {
            if let Some(slot) = select::get_mut(root, ptr) {
                *slot = v.clone();
            }
        }
        return Ok(true);
    }
    if xx {
        return Ok(false);
    }
    let Some((parents, name)) = new_member(root, p) else {
        if index_past_end(root, p) {
            return Err(JsonError::ArrayIndex.into());
        }
        return Ok(false);
    };
    for ptr in &parents {
        fits(ptr.len() + 1, v)?;
    }
    let mut added = false;
    for ptr in parents {
        if let Some(Json::Object(m)) = select::get_mut(root, &ptr) {
            m.insert(name.clone(), v.clone());
            added = true;
        }
    }
    Ok(added)
}

/// `JSON.SET key path value [NX | XX]`.
pub(super) fn set(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 4 {
        return Err(arity(argv));
    }
    let (mut nx, mut xx) = (false, false);
    for a in &argv[4..] {
        if is_kw(a, "NX") && !nx && !xx {
            nx = true;
        } else if is_kw(a, "XX") && !nx && !xx {
            xx = true;
        } else {
            return Err(OpError::Syntax);
        }
    }
    let p = path(&argv[2])?;
    let v = value(&argv[3], false)?;
    let key = &argv[1];
    let done = match doc_mut(ctx, key)? {
        None => {
            if !p.is_root() {
                return Err(JsonError::NewAtRoot.into());
            }
            if xx {
                false
            } else {
                store(ctx, key, v)?;
                true
            }
        }
        Some(d) => set_at(&mut d.root, &p, &v, nx, xx)?,
    };
    changed(ctx, done, "json.set", key);
    Ok(if done { Reply::ok() } else { Reply::Null })
}

/// `JSON.MSET key path value [key path value ...]`: the triples are applied to
/// copies first, so one that fails leaves every key as it was.
pub(super) fn mset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 4 || !(argv.len() - 1).is_multiple_of(3) {
        return Err(arity(argv));
    }
    let mut triples = Vec::new();
    for t in argv[1..].chunks_exact(3) {
        let p = path(&t[1])?;
        let v = value(&t[2], false)?;
        triples.push((&t[0], p, v));
    }
    // As RedisJSON: a path below the root needs a key that exists before the
    // command, even when an earlier triple creates it.
    for (key, p, _) in &triples {
        if !p.is_root() && doc(ctx, key)?.is_none() {
            return Err(JsonError::NewAtRoot.into());
        }
    }
    // Each key's document as the triples leave it, and which triples wrote.
    let mut staged: Vec<(&Vec<u8>, Option<Json>)> = Vec::new();
    let mut wrote = Vec::with_capacity(triples.len());
    for (key, p, v) in &triples {
        let slot = match staged.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                let current = doc(ctx, key)?.map(|d| d.root.clone());
                staged.push((key, current));
                staged.len() - 1
            }
        };
        let done = match &mut staged[slot].1 {
            Some(root) => set_at(root, p, v, false, false)?,
            None if p.is_root() => {
                staged[slot].1 = Some(v.clone());
                true
            }
            None => return Err(JsonError::NewAtRoot.into()),
        };
        wrote.push(done.then_some(*key));
    }
    for (key, root) in staged {
        let Some(root) = root else { continue };
        match doc_mut(ctx, key)? {
            Some(d) => d.root = root,
            None => store(ctx, key, root)?,
        }
    }
    for key in wrote.into_iter().flatten() {
        ctx.notify(crate::pubsub::notify::MODULE, "json.mset", key);
    }
    Ok(Reply::ok())
}

/// RFC 7396: `patch` merged into `target` (a `null` member deletes, an object
/// merges member by member, anything else replaces).
pub(super) fn merge_patch(target: &mut Json, patch: &Json) {
    let Json::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Json::Object(serde_json::Map::new());
    }
    if let Json::Object(t) = target {
        for (k, v) in members {
            if v.is_null() {
                t.swap_remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Json::Null), v);
            }
        }
    }
}

/// `JSON.MERGE key path value`.
pub(super) fn merge(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 4 {
        return Err(arity(argv));
    }
    let p = path(&argv[2])?;
    let patch = value(&argv[3], false)?;
    let key = &argv[1];
    let done = match doc_mut(ctx, key)? {
        None => {
            if !p.is_root() {
                return Err(JsonError::NewAtRoot.into());
            }
            // A new key takes the patch as it is, nulls included (as RedisJSON).
            store(ctx, key, patch)?;
            true
        }
        Some(d) => merge_at(&mut d.root, &p, &patch)?,
    };
    changed(ctx, done, "json.merge", key);
    Ok(if done { Reply::ok() } else { Reply::Null })
}

fn merge_at(root: &mut Json, p: &Path, patch: &Json) -> OpResult<bool> {
    let found = p.select(root);
    for ptr in &found {
        fits(ptr.len(), patch)?;
    }
    if !found.is_empty() {
        for ptr in &found {
            if ptr.is_empty() {
                merge_patch(root, patch);
            } else if let Some(slot) = select::get_mut(root, ptr) {
                merge_patch(slot, patch);
            }
        }
        return Ok(true);
    }
    let Some((parents, name)) = new_member(root, p) else {
        return Ok(false);
    };
    for ptr in &parents {
        fits(ptr.len() + 1, patch)?;
    }
    let mut added = false;
    for ptr in parents {
        if let Some(Json::Object(m)) = select::get_mut(root, &ptr) {
            if !patch.is_null() {
                let mut fresh = Json::Null;
                merge_patch(&mut fresh, patch);
                m.insert(name.clone(), fresh);
            }
            added = true;
        }
    }
    Ok(added)
}

/// Removes every match of `p` and answers how many: a match inside another match
/// goes with it and is not counted; the rest go last first, so earlier locations
/// stay valid. A member leaves its object as RedisJSON's does, the last member
/// taking its place.
pub(super) fn delete_at(root: &mut Json, p: &Path) -> usize {
    let mut found = p.select(root);
    found.sort();
    found.dedup();
    let mut outer: Vec<select::Pointer> = Vec::with_capacity(found.len());
    for ptr in found {
        // Sorted, a match's descendants follow it directly: only the last kept
        // match can contain this one.
        if !outer.last().is_some_and(|o| ptr.starts_with(o)) {
            outer.push(ptr);
        }
    }
    let found = outer;
    let mut removed = 0;
    for ptr in found.iter().rev() {
        let Some((last, parent)) = ptr.split_last() else {
            continue;
        };
        let gone = match (select::get_mut(root, parent), last) {
            (Some(Json::Object(m)), Step::Key(k)) => m.swap_remove(k).is_some(),
            (Some(Json::Array(a)), Step::Index(i)) if *i < a.len() => {
                a.remove(*i);
                true
            }
            _ => false,
        };
        removed += usize::from(gone);
    }
    removed
}

/// `JSON.DEL key [path]` (and `JSON.FORGET`).
pub(super) fn del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 2 || argv.len() > 3 {
        return Err(arity(argv));
    }
    let p = path_or_root(argv, 2)?;
    let key = &argv[1];
    let removed = match doc_mut(ctx, key)? {
        None => 0,
        Some(_) if p.is_root() => {
            let db = ctx.db();
            ctx.ks.remove(db, key)?;
            1
        }
        Some(d) => delete_at(&mut d.root, &p),
    };
    changed(ctx, removed > 0, "json.del", key);
    Ok(Reply::Integer(removed as i64))
}

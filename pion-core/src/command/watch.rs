//! What a write does for `WATCH` (the watched keys are
//! [`clients::watch`](crate::clients::watch)'s): before it runs, the presence of the
//! watched keys it may change; after, the watchers of what it wrote are marked.

use std::sync::Arc;

use crate::clients::watch::Presence;
use crate::command::ctx::Ctx;
use crate::command::CommandSpec;

/// The databases a command over the whole keyspace replaces: `FLUSHALL` every one,
/// `FLUSHDB` the selected one, `SWAPDB` its two.
fn replaced_dbs(ctx: &Ctx<'_>, spec: &CommandSpec, argv: &[Vec<u8>]) -> Vec<usize> {
    match spec.name {
        "flushall" => (0..ctx.keyspace().databases()).collect(),
        "swapdb" => argv[1..3]
            .iter()
            .filter_map(|a| crate::util::num::parse_i64(a))
            .filter_map(|d| usize::try_from(d).ok())
            .collect(),
        _ => vec![ctx.db()],
    }
}

/// What a write's watchers need from before it runs: for a command over the whole
/// keyspace, every watched key of the databases it replaces with its presence there
/// (nothing removed on the way); otherwise the command's watched keys that exist (a
/// write touches a key that existed before or exists after it, never one that stays
/// absent: `DEL` of a missing key changes nothing).
pub(crate) fn existing_watched(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
) -> Vec<(usize, Vec<u8>, Presence)> {
    let registry = ctx.watches();
    if !registry.any() {
        return Vec::new();
    }
    if spec.whole_keyspace {
        let dbs = replaced_dbs(ctx, spec, argv);
        return registry
            .watched_keys()
            .into_iter()
            .filter(|(db, _)| dbs.contains(db))
            .map(|(db, k)| {
                let before = Presence::of(&mut ctx.ks, db, &k);
                (db, k, before)
            })
            .collect();
    }
    let db = ctx.db();
    keys.iter()
        .filter(|&&i| registry.is_watched(db, &argv[i]))
        .filter(|&&i| matches!(ctx.ks.peek(db, &argv[i]), Ok(Some(_))))
        .map(|&i| (db, argv[i].clone(), Presence::Live))
        .collect()
}

/// After a write that changed something: marks the watchers of every key it wrote
/// (not those it reported unmodified), as [`WatchRegistry::touch`] and
/// [`WatchRegistry::replaced`] say.
pub(crate) fn touch_written(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
    before: &[(usize, Vec<u8>, Presence)],
) {
    let registry = Arc::clone(ctx.watches());
    if !registry.any() {
        return;
    }
    if spec.whole_keyspace {
        for (db, k, was) in before {
            let now = Presence::of(&mut ctx.ks, *db, k);
            registry.replaced(*db, k, *was, now);
        }
        return;
    }
    let db = ctx.db();
    let unmodified = |k: &[u8]| ctx.unmodified_keys.iter().any(|&i| argv[i] == k);
    let mut written: Vec<&[u8]> = before
        .iter()
        .map(|(_, k, _)| k.as_slice())
        .filter(|k| !unmodified(k))
        .collect();
    for &i in keys {
        if !ctx.unmodified_keys.contains(&i)
            && !written.contains(&argv[i].as_slice())
            && matches!(ctx.ks.peek(db, &argv[i]), Ok(Some(_)))
        {
            written.push(&argv[i]);
        }
    }
    for k in written {
        let present = Presence::of(&mut ctx.ks, db, k) != Presence::Absent;
        registry.touch(db, k, present);
    }
}

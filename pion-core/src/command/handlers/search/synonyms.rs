//! `FT.SYNUPDATE` and `FT.SYNDUMP`: an index's synonym groups. A word of a group is
//! indexed beside itself as `~group`, and a query term of the group also searches
//! `~group`, so the words of a group find each other's documents. An update re-indexes
//! the index's documents unless `SKIPINITIALSCAN`, as in RediSearch; it is part of the
//! index's definition (replayed from the log and saved in snapshots).

use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::schema;
use crate::reply::Reply;

/// `FT.SYNUPDATE index group [SKIPINITIALSCAN] term…`.
pub(super) fn update(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let update = schema::parse_synupdate(argv)?;
    let engine = ctx.engine();
    let Some(index) = engine.search().get(&argv[1]) else {
        return Err(OpError::custom("Unknown index name"));
    };
    index.def.write().add_synonyms(update.group, update.terms);
    index.commands.lock().push(argv.to_vec());
    if !update.skip_scan {
        engine
            .search()
            .scan(engine.keyspace(), &index, ctx.now_ms());
    }
    Ok(Reply::ok())
}

/// `FT.SYNDUMP index`: each term with its groups (a map in RESP3).
pub(super) fn dump(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(OpError::WrongArity("FT.SYNDUMP".into()));
    }
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(OpError::custom("Unknown index name"));
    };
    let def = index.def.read();
    Ok(Reply::Map(
        def.synonyms
            .iter()
            .map(|(term, groups)| {
                (
                    Reply::Bulk(term.clone()),
                    Reply::Array(groups.iter().map(|g| Reply::Bulk(g.clone())).collect()),
                )
            })
            .collect(),
    ))
}

//! `FT.EXPLAIN` and `FT.EXPLAINCLI`: a query's parse tree as text, from
//! [`crate::index::query::explain`].
//! Without `VERBATIM` the tree shows each term's stemmed expansions
//! (`+word(expanded)`), as the query runs.

use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::query as q;
use crate::reply::Reply;

/// `FT.EXPLAIN index query [options]`: the tree as one bulk string.
pub(super) fn explain(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let text = render(ctx, argv, "FT.EXPLAIN")?;
    Ok(Reply::Bulk(text.into_bytes()))
}

/// `FT.EXPLAINCLI index query [options]`: the tree as an array of lines (the last
/// one empty, as RediSearch splits the text).
pub(super) fn explain_cli(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let text = render(ctx, argv, "FT.EXPLAINCLI")?;
    Ok(Reply::Array(
        text.split('\n')
            .map(|l| Reply::status_owned(l.to_string()))
            .collect(),
    ))
}

fn render(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], name: &str) -> OpResult<String> {
    if argv.len() < 3 {
        return Err(OpError::custom(format!(
            "ERR wrong number of arguments for '{name}' command"
        )));
    }
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(super::no_such_index(&argv[1]));
    };
    let settings = ctx.config().with(|c| c.search.clone());
    let opts = super::query::parse_options(argv, &settings)?;
    let def = index.def.read().clone();
    let query = opts
        .analysis
        .parse(&def, &argv[2], &opts.params, opts.dialect)?;
    Ok(q::explain(&query))
}

//! The `ACL` command family: users, their rules, the denial log and the ACL file.
//! The rules themselves live in [`crate::acl`].

use crate::acl::catalog::CATEGORIES;
use crate::acl::{self, describe, file};
use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{int, is_kw, text};
use crate::command::{resolve, CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

const ACL: u64 = ADMIN | NOSCRIPT | LOADING | STALE;
const PLAIN: u64 = NOSCRIPT | LOADING | STALE;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[CommandSpec::container("acl", Group::Server, SUBCOMMANDS)
    .doc("A container for Access List Control commands.", "6.0.0")];

static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("cat", -2, PLAIN, Group::Server, cat).doc(
        "Lists the ACL categories, or the commands inside a category.",
        "6.0.0",
    ),
    CommandSpec::new("deluser", -3, ACL, Group::Server, deluser)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "Deletes ACL users, and terminates their connections.",
            "6.0.0",
        ),
    CommandSpec::new("dryrun", -4, ACL, Group::Server, dryrun).doc(
        "Simulates the execution of a command by a user, without executing the command.",
        "7.0.0",
    ),
    CommandSpec::new("genpass", -2, PLAIN, Group::Server, genpass).doc(
        "Generates a pseudorandom, secure password that can be used to identify ACL users.",
        "6.0.0",
    ),
    CommandSpec::new("getuser", 3, ACL, Group::Server, getuser)
        .doc("Lists the ACL rules of a user.", "6.0.0"),
    CommandSpec::new("list", 2, ACL, Group::Server, list)
        .doc("Dumps the effective rules in ACL file format.", "6.0.0"),
    CommandSpec::new("load", 2, ACL, Group::Server, load)
        .doc("Reloads the rules from the configured ACL file.", "6.0.0"),
    CommandSpec::new("log", -2, ACL, Group::Server, log).doc(
        "Lists recent security events generated due to ACL rules.",
        "6.0.0",
    ),
    CommandSpec::new("save", 2, ACL, Group::Server, save)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "Saves the effective ACL rules in the configured ACL file.",
            "6.0.0",
        ),
    CommandSpec::new("setuser", -3, ACL, Group::Server, setuser)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("Creates and modifies an ACL user and its rules.", "6.0.0"),
    CommandSpec::new("users", 2, ACL, Group::Server, users).doc("Lists all ACL users.", "6.0.0"),
    CommandSpec::new("whoami", 2, PLAIN, Group::Server, whoami).doc(
        "Returns the authenticated username of the current connection.",
        "6.0.0",
    ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Server, help).doc(
        "Returns helpful text about the different subcommands.",
        "6.0.0",
    ),
];

const NO_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn setuser(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[2]);
    let ops: Vec<String> = argv[3..].iter().map(|a| text(a)).collect();
    ctx.acl().set_user(&name, &ops).map_err(|e| e.error())?;
    if let Some(user) = ctx.acl().user(&name) {
        crate::command::access::kill_revoked_subscribers(ctx.engine(), &user, ctx.client);
    }
    Ok(Reply::ok())
}

fn getuser(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(match ctx.acl().user(&text(&argv[2])) {
        Some(u) => describe::getuser(&u.rules()),
        None => Reply::Null,
    })
}

fn deluser(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let names: Vec<String> = argv[2..].iter().map(|a| text(a)).collect();
    let gone = ctx.acl().delete(&names)?;
    crate::command::access::disconnect(ctx.engine(), &gone, ctx.client);
    Ok(Reply::Integer(gone.len() as i64))
}

fn list(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        ctx.acl().list().into_iter().map(Reply::bulk).collect(),
    ))
}

fn users(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        ctx.acl().names().into_iter().map(Reply::bulk).collect(),
    ))
}

fn whoami(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::bulk(
        crate::command::access::client_user(ctx.engine(), ctx.client).name(),
    ))
}

fn cat(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() > 3 {
        return Err(OpError::subcommand_syntax(argv));
    }
    let Some(name) = argv.get(2) else {
        return Ok(Reply::Array(CATEGORIES.iter().map(Reply::bulk).collect()));
    };
    let name = text(name);
    let bit = acl::catalog::category_bit(&name)
        .ok_or_else(|| OpError::custom(format!("ERR Unknown category '{name}'")))?;
    let catalog = acl::catalog::catalog();
    Ok(Reply::Array(
        catalog
            .in_category(bit)
            .filter_map(|slot| catalog.entry(slot).map(|e| Reply::bulk(e.name)))
            .collect(),
    ))
}

fn log(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut count = 10usize;
    match argv.get(2) {
        None => {}
        Some(a) if is_kw(a, "reset") && argv.len() == 3 => {
            ctx.acl().log_book().lock().reset();
            return Ok(Reply::ok());
        }
        Some(a) if argv.len() == 3 => count = int(a)?.max(0) as usize,
        Some(_) => return Err(OpError::Syntax),
    }
    Ok(ctx
        .acl()
        .log_book()
        .lock()
        .reply(count, ctx.engine().now_ms()))
}

fn genpass(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() > 3 {
        return Err(OpError::WrongArity("acl|genpass".into()));
    }
    let bits = match argv.get(2) {
        Some(a) => int(a)?,
        None => 256,
    };
    if !(1..=4096).contains(&bits) {
        return Err(OpError::custom(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096",
        ));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    let mut hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(chars);
    Ok(Reply::bulk(hex))
}

fn dryrun(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[2]);
    let user = ctx
        .acl()
        .user(&name)
        .ok_or_else(|| OpError::custom(format!("ERR User '{name}' not found")))?;
    let args = &argv[3..];
    let resolved = resolve(args).map_err(|e| match e {
        OpError::WrongArity(_) => e,
        _ => OpError::custom(format!("ERR Command '{}' not found", text(&args[0]))),
    })?;
    Ok(
        match crate::command::access::check(
            &user,
            resolved.spec,
            resolved.full_name,
            resolved.stat,
            args,
        ) {
            Ok(()) => Reply::ok(),
            Err(d) => Reply::bulk(d.explain()),
        },
    )
}

fn save(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let path = ctx.acl().file().ok_or_else(|| OpError::custom(NO_FILE))?;
    file::save(ctx.acl(), &path).map_err(|e| {
        crate::log_notice!("ACL SAVE to {}: {e}", path.display());
        OpError::custom(
            "ERR There was an error trying to save the ACLs. Please check the server logs for more information",
        )
    })?;
    Ok(Reply::ok())
}

fn load(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let path = ctx.acl().file().ok_or_else(|| OpError::custom(NO_FILE))?;
    let replaced = file::load(ctx.acl(), &path).map_err(|e| OpError::custom(format!("ERR {e}")))?;
    crate::command::access::disconnect(ctx.engine(), &replaced, ctx.client);
    Ok(Reply::ok())
}

fn help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CAT [<category>]",
            "    List all commands that belong to <category>, or all command categories",
            "    when no category is specified.",
            "DELUSER <username> [<username> ...]",
            "    Delete a list of users.",
            "DRYRUN <username> <command> [<arg> ...]",
            "    Returns whether the user can execute the given command without executing the command.",
            "GETUSER <username>",
            "    Get the user's details.",
            "GENPASS [<bits>]",
            "    Generate a secure 256-bit user password. The optional `bits` argument can",
            "    be used to specify a different size.",
            "LIST",
            "    Show users details in config file format.",
            "LOAD",
            "    Reload users from the ACL file.",
            "LOG [<count> | RESET]",
            "    Show the ACL log entries.",
            "SAVE",
            "    Save the current config to the ACL file.",
            "SETUSER <username> <attribute> [<attribute> ...]",
            "    Create or modify a user with the specified attributes.",
            "USERS",
            "    List all the registered usernames.",
            "WHOAMI",
            "    Return the current connection username.",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}

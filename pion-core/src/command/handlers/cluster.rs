//! `CLUSTER`: Pion runs as one node without cluster support, and answers every
//! `CLUSTER` subcommand as a redis-server started with `cluster-enabled no` does.
//! Clients probe `CLUSTER INFO` or `CLUSTER SLOTS` to tell a cluster from a single
//! server, and tools list the subcommands through `COMMAND`, so the table carries
//! each one with Redis's arity, flags and documentation.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] =
    &[
        CommandSpec::container("cluster", Group::Cluster, SUBCOMMANDS)
            .doc("A container for cluster commands", "3.0.0"),
    ];

/// Flags of the subcommands that change the cluster's configuration.
const CONFIGURES: u64 = ADMIN | STALE | NO_ASYNC_LOADING;

/// Every subcommand of Redis 7.0, with its arity and flags.
static SUBCOMMANDS: &[CommandSpec] = &[
    sub(
        "addslots",
        -3,
        CONFIGURES,
        "Assign new hash slots to receiving node",
        "3.0.0",
    ),
    sub(
        "addslotsrange",
        -4,
        CONFIGURES,
        "Assign new hash slots to receiving node",
        "7.0.0",
    ),
    sub(
        "bumpepoch",
        2,
        CONFIGURES,
        "Advance the cluster config epoch",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "count-failure-reports",
        3,
        ADMIN | STALE,
        "Return the number of failure reports active for a given node",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "countkeysinslot",
        3,
        STALE,
        "Return the number of local keys in the specified hash slot",
        "3.0.0",
    ),
    sub(
        "delslots",
        -3,
        CONFIGURES,
        "Set hash slots as unbound in receiving node",
        "3.0.0",
    ),
    sub(
        "delslotsrange",
        -4,
        CONFIGURES,
        "Set hash slots as unbound in receiving node",
        "7.0.0",
    ),
    sub(
        "failover",
        -2,
        CONFIGURES,
        "Forces a replica to perform a manual failover of its master.",
        "3.0.0",
    ),
    sub(
        "flushslots",
        2,
        CONFIGURES,
        "Delete a node's own slots information",
        "3.0.0",
    ),
    sub(
        "forget",
        3,
        CONFIGURES,
        "Remove a node from the nodes table",
        "3.0.0",
    ),
    sub(
        "getkeysinslot",
        4,
        STALE,
        "Return local key names in the specified hash slot",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "help",
        2,
        LOADING | STALE,
        "Show helpful text about the different subcommands",
        "5.0.0",
    ),
    sub(
        "info",
        2,
        STALE,
        "Provides info about Redis Cluster node state",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "keyslot",
        3,
        STALE,
        "Returns the hash slot of the specified key",
        "3.0.0",
    ),
    sub(
        "links",
        2,
        STALE,
        "Returns a list of all TCP links to and from peer nodes in cluster",
        "7.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "meet",
        -4,
        CONFIGURES,
        "Force a node cluster to handshake with another node",
        "3.0.0",
    ),
    sub("myid", 2, STALE, "Return the node id", "3.0.0"),
    sub(
        "nodes",
        2,
        STALE,
        "Get Cluster config for the node",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "replicas",
        3,
        ADMIN | STALE,
        "List replica nodes of the specified master node",
        "5.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "replicate",
        3,
        CONFIGURES,
        "Reconfigure a node as a replica of the specified master node",
        "3.0.0",
    ),
    sub(
        "reset",
        -2,
        ADMIN | NOSCRIPT | STALE,
        "Reset a Redis Cluster node",
        "3.0.0",
    ),
    sub(
        "saveconfig",
        2,
        CONFIGURES,
        "Forces the node to save cluster state on disk",
        "3.0.0",
    ),
    sub(
        "set-config-epoch",
        3,
        CONFIGURES,
        "Set the configuration epoch in a new node",
        "3.0.0",
    ),
    sub(
        "setslot",
        -4,
        CONFIGURES,
        "Bind a hash slot to a specific node",
        "3.0.0",
    ),
    sub(
        "shards",
        2,
        STALE,
        "Get array of cluster slots to node mappings",
        "7.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "slaves",
        3,
        ADMIN | STALE,
        "List replica nodes of the specified master node",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
    sub(
        "slots",
        2,
        STALE,
        "Get array of Cluster slot to node mappings",
        "3.0.0",
    )
    .tips(&["nondeterministic_output"]),
];

/// One subcommand (the administrative ones are `@admin @dangerous`, from their flag).
const fn sub(
    name: &'static str,
    arity: i32,
    flags: u64,
    summary: &'static str,
    since: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, Group::Cluster, cluster_disabled).doc(summary, since)
}

/// Every subcommand, `HELP` included, answers what a server without cluster support
/// answers.
fn cluster_disabled(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Err(OpError::custom(
        "ERR This instance has cluster support disabled",
    ))
}

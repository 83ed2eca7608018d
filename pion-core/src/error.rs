//! Typed errors for engine operations, and the one place that maps them to the exact
//! error text a Redis client expects on the wire.

use std::borrow::Cow;
use std::fmt;

use crate::reply::{ErrorText, Reply};

/// Why an engine operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// The key holds a value of another type.
    WrongType,
    /// A syntax error in the arguments.
    Syntax,
    /// An argument that should be an integer is not one (or is out of range).
    NotInteger,
    /// An argument that should be a float is not one.
    NotFloat,
    /// An increment or decrement would overflow.
    Overflow,
    /// The key does not exist where the command needs it.
    NoSuchKey,
    /// An index is outside the value.
    IndexOutOfRange,
    /// The database index is not valid.
    DbIndexOutOfRange,
    /// Source and destination are the same object where that is refused.
    SameObject,
    /// A float operation produced NaN or infinity.
    NanOrInfinity,
    /// The wrong number of arguments for a command (the command name, lower-case).
    WrongArity(String),
    /// An unknown command.
    UnknownCommand {
        /// The command name as sent.
        name: Vec<u8>,
        /// The arguments that followed, for the error text.
        args: Vec<Vec<u8>>,
    },
    /// An unknown subcommand of a container command (`CLIENT FOO`).
    UnknownSubcommand {
        /// The subcommand as sent.
        sub: Vec<u8>,
        /// The container command, upper-case.
        command: String,
    },
    /// A string that is not a HyperLogLog where a `PF*` command needs one (Redis
    /// answers it as a wrong type).
    NotHyperLogLog,
    /// `LATENCY GRAPH` of an event with no samples (the event's name).
    NoLatencySamples(String),
    /// A HyperLogLog whose registers cannot be read (sparse opcodes that do not
    /// cover exactly its registers).
    CorruptHyperLogLog,
    /// A geo command's argument error (Redis's texts in [`GeoError::text`]).
    Geo(GeoError),
    /// A stream command's error (Redis's texts in [`StreamError::text`]).
    Stream(StreamError),
    /// A `JSON.*` command's error (RedisJSON's texts in [`JsonError::text`]).
    Json(JsonError),
    /// A `DUMP`/`RESTORE`/`MIGRATE` error (Redis's texts in [`DumpError::text`]).
    Dump(DumpError),
    /// The disk refused the log (or did before, and the engine has not healed): the
    /// failure, as `durability` describes it.
    DiskFailed(String),
    /// Any other error, with its complete wire text (prefix included).
    Custom(Cow<'static, str>),
}

/// Why `RESTORE` or `MIGRATE` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DumpError {
    /// `RESTORE` without `REPLACE` of a key that exists.
    BusyKey,
    /// A payload too short, of a newer RDB version, or with a wrong checksum.
    BadPayload,
    /// A payload whose body does not decode.
    BadData,
    /// A negative time to live.
    InvalidTtl,
    /// A negative `IDLETIME`.
    InvalidIdletime,
    /// A `FREQ` outside 0–255.
    InvalidFreq,
    /// `MIGRATE … KEYS` with a key argument that is not empty.
    KeysWithKey,
    /// `MIGRATE` could not connect to the target in time.
    Connect,
    /// `MIGRATE` lost the target or timed out (`true`: while writing).
    Io {
        /// Whether it failed writing (else reading).
        writing: bool,
    },
    /// The target answered an error (its text, without the `-`).
    Target(String),
}

impl DumpError {
    /// Redis's text for the error.
    pub fn text(&self) -> Cow<'static, str> {
        let b = Cow::Borrowed;
        match self {
            DumpError::BusyKey => b("BUSYKEY Target key name already exists."),
            DumpError::BadPayload => b("ERR DUMP payload version or checksum are wrong"),
            DumpError::BadData => b("ERR Bad data format"),
            DumpError::InvalidTtl => b("ERR Invalid TTL value, must be >= 0"),
            DumpError::InvalidIdletime => b("ERR Invalid IDLETIME value, must be >= 0"),
            DumpError::InvalidFreq => b("ERR Invalid FREQ value, must be >= 0 and <= 255"),
            DumpError::KeysWithKey => b("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"),
            DumpError::Connect => b("IOERR error or timeout connecting to the client"),
            DumpError::Io { writing: true } => b("IOERR error or timeout writing to target instance"),
            DumpError::Io { writing: false } => b("IOERR error or timeout reading to target instance"),
            DumpError::Target(text) => Cow::Owned(sanitize(format!(
                "ERR Target instance replied with error: {text}"
            ))),
        }
    }
}

impl From<DumpError> for OpError {
    fn from(e: DumpError) -> OpError {
        OpError::Dump(e)
    }
}

/// Why a geo command's arguments were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GeoError {
    /// A longitude or latitude outside the stored points' limits: the pair as
    /// C's `%f,%f` prints it.
    InvalidLonLat(String),
    /// A distance unit other than m, km, ft or mi.
    UnsupportedUnit,
    /// The member a search starts from is not in the sorted set.
    UndecodableMember,
    /// A radius, width or height that is not a number: which one.
    NotNumeric(&'static str),
    /// A negative radius.
    NegativeRadius,
    /// A negative box side.
    NegativeBox,
    /// `COUNT` of zero or less.
    CountNotPositive,
    /// `ANY` without `COUNT`.
    AnyWithoutCount,
    /// A store together with `WITHDIST`, `WITHHASH` or `WITHCOORD`: the command's
    /// wording (`GEOSEARCHSTORE` or `STORE option in GEORADIUS`).
    StoreWithReplyOptions(&'static str),
    /// No `FROMMEMBER` or `FROMLONLAT`: the command name as sent.
    NoOrigin(String),
    /// No `BYRADIUS` or `BYBOX`: the command name as sent.
    NoShape(String),
}

impl GeoError {
    /// Redis's text for this error.
    pub fn text(&self) -> Cow<'static, str> {
        match self {
            GeoError::InvalidLonLat(pair) => {
                Cow::Owned(format!("ERR invalid longitude,latitude pair {pair}"))
            }
            GeoError::UnsupportedUnit => {
                Cow::Borrowed("ERR unsupported unit provided. please use M, KM, FT, MI")
            }
            GeoError::UndecodableMember => {
                Cow::Borrowed("ERR could not decode requested zset member")
            }
            GeoError::NotNumeric(what) => Cow::Owned(format!("ERR need numeric {what}")),
            GeoError::NegativeRadius => Cow::Borrowed("ERR radius cannot be negative"),
            GeoError::NegativeBox => Cow::Borrowed("ERR height or width cannot be negative"),
            GeoError::CountNotPositive => Cow::Borrowed("ERR COUNT must be > 0"),
            GeoError::AnyWithoutCount => {
                Cow::Borrowed("ERR the ANY argument requires COUNT argument")
            }
            GeoError::StoreWithReplyOptions(what) => Cow::Owned(format!(
                "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
            )),
            GeoError::NoOrigin(cmd) => Cow::Owned(sanitize(format!(
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {cmd}"
            ))),
            GeoError::NoShape(cmd) => Cow::Owned(sanitize(format!(
                "ERR exactly one of BYRADIUS and BYBOX can be specified for {cmd}"
            ))),
        }
    }
}

/// Why a stream command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// An id that does not parse.
    InvalidId,
    /// Both `MAXLEN` and `MINID`.
    MaxlenAndMinid,
    /// A negative `MAXLEN`.
    MaxlenNegative,
    /// A negative `LIMIT`.
    LimitNegative,
    /// `LIMIT` without `MAXLEN` or `MINID`.
    LimitWithoutStrategy,
    /// `LIMIT` with an exact trim.
    LimitWithoutApprox,
    /// `XTRIM` without `MAXLEN` or `MINID`.
    XtrimWithoutStrategy,
    /// `XADD … 0-0`.
    IdZero,
    /// An `XADD` id not above the stream's last id.
    IdTooSmall,
    /// The stream's last id is the largest possible.
    Exhausted,
    /// An entry's fields exceed what one node may hold.
    TooLarge,
    /// An exclusive start at the largest id.
    InvalidStart,
    /// An exclusive end at the smallest id.
    InvalidEnd,
    /// `XREAD`'s keys and ids do not pair up.
    Unbalanced,
    /// `GROUP` given to `XREAD`.
    GroupInXread,
    /// `NOACK` given to `XREAD`.
    NoackInXread,
    /// `XREADGROUP` without `GROUP`.
    MissingGroup,
    /// `$` given to `XREADGROUP`.
    DollarInXreadgroup,
    /// `>` given to `XREAD`.
    GreaterInXread,
    /// `BLOCK` in a script: the command name as sent.
    BlockInScript(Vec<u8>),
    /// `XREADGROUP`'s key or group is missing: key, group.
    NoGroupRead(Vec<u8>, Vec<u8>),
    /// Another command's key or group is missing: key, group.
    NoKeyOrGroup(Vec<u8>, Vec<u8>),
    /// The group is missing from an existing key: group, key.
    NoGroup(Vec<u8>, Vec<u8>),
    /// A blocked `XREADGROUP`'s group went away.
    GroupGone,
    /// A blocked `XREADGROUP`'s key went away or changed type.
    KeyGone,
    /// `ENTRIESREAD` below -1.
    EntriesReadNegative,
    /// An `XGROUP` subcommand on a missing key.
    XgroupNeedsKey,
    /// `XGROUP CREATE` of an existing group.
    BusyGroup,
    /// A negative `ENTRIESADDED`.
    EntriesAddedNegative,
    /// `XSETID` below its own `MAXDELETEDID`.
    SetidBelowMaxDeleted,
    /// `XSETID` below the stream's last entry.
    SetidBelowTop,
    /// `ENTRIESADDED` below the stream's length.
    EntriesAddedBelowLength,
    /// A bad numeric argument of `XCLAIM`/`XAUTOCLAIM`: the text after `ERR `.
    BadArgument(&'static str),
    /// An unknown `XCLAIM` option, as sent.
    UnknownXclaimOption(Vec<u8>),
}

/// What C's `%s` prints of bytes: up to the first NUL, lossily.
fn c_str(b: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or(&[]))
}

impl StreamError {
    /// Redis's text for the error.
    pub fn text(&self) -> Cow<'static, str> {
        let b = Cow::Borrowed;
        match self {
            StreamError::InvalidId => b("ERR Invalid stream ID specified as stream command argument"),
            StreamError::MaxlenAndMinid => b("ERR syntax error, MAXLEN and MINID options at the same time are not compatible"),
            StreamError::MaxlenNegative => b("ERR The MAXLEN argument must be >= 0."),
            StreamError::LimitNegative => b("ERR The LIMIT argument must be >= 0."),
            StreamError::LimitWithoutStrategy => b("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"),
            StreamError::LimitWithoutApprox => b("ERR syntax error, LIMIT cannot be used without the special ~ option"),
            StreamError::XtrimWithoutStrategy => b("ERR syntax error, XTRIM must be called with a trimming strategy"),
            StreamError::IdZero => b("ERR The ID specified in XADD must be greater than 0-0"),
            StreamError::IdTooSmall => b("ERR The ID specified in XADD is equal or smaller than the target stream top item"),
            StreamError::Exhausted => b("ERR The stream has exhausted the last possible ID, unable to add more items"),
            StreamError::TooLarge => b("ERR Elements are too large to be stored"),
            StreamError::InvalidStart => b("ERR invalid start ID for the interval"),
            StreamError::InvalidEnd => b("ERR invalid end ID for the interval"),
            StreamError::Unbalanced => b("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."),
            StreamError::GroupInXread => b("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."),
            StreamError::NoackInXread => b("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."),
            StreamError::MissingGroup => b("ERR Missing GROUP option for XREADGROUP"),
            StreamError::DollarInXreadgroup => b("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."),
            StreamError::GreaterInXread => b("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."),
            StreamError::BlockInScript(cmd) => Cow::Owned(sanitize(format!(
                "ERR {} command is not allowed with BLOCK option from scripts",
                c_str(cmd)
            ))),
            StreamError::NoGroupRead(key, group) => Cow::Owned(sanitize(format!(
                "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
                c_str(key),
                c_str(group)
            ))),
            StreamError::NoKeyOrGroup(key, group) => Cow::Owned(sanitize(format!(
                "NOGROUP No such key '{}' or consumer group '{}'",
                c_str(key),
                c_str(group)
            ))),
            StreamError::NoGroup(group, key) => Cow::Owned(sanitize(format!(
                "NOGROUP No such consumer group '{}' for key name '{}'",
                c_str(group),
                c_str(key)
            ))),
            StreamError::GroupGone => b("NOGROUP the consumer group this client was blocked on no longer exists"),
            StreamError::KeyGone => b("UNBLOCKED the stream key no longer exists"),
            StreamError::EntriesReadNegative => b("ERR value for ENTRIESREAD must be positive or -1"),
            StreamError::XgroupNeedsKey => b("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."),
            StreamError::BusyGroup => b("BUSYGROUP Consumer Group name already exists"),
            StreamError::EntriesAddedNegative => b("ERR entries_added must be positive"),
            StreamError::SetidBelowMaxDeleted => b("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"),
            StreamError::SetidBelowTop => b("ERR The ID specified in XSETID is smaller than the target stream top item"),
            StreamError::EntriesAddedBelowLength => b("ERR The entries_added specified in XSETID is smaller than the target stream length"),
            StreamError::BadArgument(text) => Cow::Owned(format!("ERR {text}")),
            StreamError::UnknownXclaimOption(opt) => Cow::Owned(sanitize(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                c_str(opt)
            ))),
        }
    }
}

/// Why a `JSON.*` command failed, worded as RedisJSON words it (its texts are not
/// uniform: some carry no `ERR` prefix, some quote the path as sent and some as
/// JSONPath; each variant says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonError {
    /// The key holds another type.
    WrongKeyType,
    /// A JSONPath command on a missing key.
    NoKey,
    /// A write below the root of a key that does not exist.
    NewAtRoot,
    /// A path that matches nothing (the path as quoted).
    NoPath(String),
    /// A path that is not a number (the path as quoted).
    NotNumber(String),
    /// A path that is not a boolean.
    NotBool(String),
    /// A path that is not a string.
    NotString(String),
    /// A path that is not an array.
    NotArray(String),
    /// A path that is not an object.
    NotObject(String),
    /// The path's value has another JSON type than the command needs.
    PathType {
        /// The type the command needs.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// `JSON.SET` at an array index past the end.
    ArrayIndex,
    /// `JSON.ARRINSERT` at an index outside the array.
    IndexBounds,
    /// A number argument that is JSON but not a number.
    BadNumber,
    /// An arithmetic result that is not finite.
    NotFinite,
    /// An integer argument that is not one.
    NotInteger,
    /// A document that is not JSON: the parser's message, with or without `ERR `.
    Parse {
        /// The parser's message.
        message: String,
        /// Whether RedisJSON prefixes it with `ERR `.
        err_prefix: bool,
    },
    /// A path that does not parse: the full message.
    PathSyntax(String),
    /// A write that would nest the document deeper than Pion keeps documents.
    TooDeep,
}

impl JsonError {
    /// RedisJSON's text for this error.
    pub fn text(&self) -> Cow<'static, str> {
        match self {
            JsonError::WrongKeyType => Cow::Borrowed("Existing key has wrong Redis type"),
            JsonError::NoKey => {
                Cow::Borrowed("ERR could not perform this operation on a key that doesn't exist")
            }
            JsonError::NewAtRoot => Cow::Borrowed("ERR new objects must be created at the root"),
            JsonError::NoPath(p) => Cow::Owned(sanitize(format!("ERR Path '{p}' does not exist"))),
            JsonError::NotNumber(p) => Cow::Owned(sanitize(format!(
                "ERR Path '{p}' does not exist or does not contains a number"
            ))),
            JsonError::NotBool(p) => Cow::Owned(sanitize(format!(
                "ERR Path '{p}' does not exist or not a bool"
            ))),
            JsonError::NotString(p) => Cow::Owned(sanitize(format!(
                "ERR Path '{p}' does not exist or not a string"
            ))),
            JsonError::NotArray(p) => Cow::Owned(sanitize(format!(
                "ERR Path '{p}' does not exist or not an array"
            ))),
            JsonError::NotObject(p) => Cow::Owned(sanitize(format!(
                "ERR Path '{p}' does not exist or not an object"
            ))),
            JsonError::PathType { expected, found } => Cow::Owned(format!(
                "WRONGTYPE wrong type of path value - expected {expected} but found {found}"
            )),
            JsonError::ArrayIndex => Cow::Borrowed("ERR array index out of range"),
            JsonError::IndexBounds => Cow::Borrowed("ERR index out of bounds"),
            JsonError::BadNumber => Cow::Borrowed("bad input number"),
            JsonError::NotFinite => Cow::Borrowed("ERR result is not a number"),
            JsonError::NotInteger => Cow::Borrowed("Couldn't parse as integer"),
            JsonError::Parse {
                message,
                err_prefix,
            } => Cow::Owned(sanitize(if *err_prefix {
                format!("ERR {message}")
            } else {
                message.clone()
            })),
            JsonError::PathSyntax(m) => Cow::Owned(sanitize(m.clone())),
            JsonError::TooDeep => Cow::Borrowed("ERR recursion limit exceeded"),
        }
    }
}

impl From<StreamError> for OpError {
    fn from(e: StreamError) -> OpError {
        OpError::Stream(e)
    }
}

impl From<JsonError> for OpError {
    fn from(e: JsonError) -> OpError {
        OpError::Json(e)
    }
}

impl From<GeoError> for OpError {
    fn from(e: GeoError) -> OpError {
        OpError::Geo(e)
    }
}

impl OpError {
    /// Redis's reply to a known subcommand given the wrong arguments
    /// (`addReplySubcommandSyntaxError`): `argv[1]` as sent, `argv[0]` upper-cased.
    pub fn subcommand_syntax(argv: &[Vec<u8>]) -> OpError {
        let text = |i: usize| String::from_utf8_lossy(argv.get(i).map_or(&[][..], |a| a));
        OpError::Custom(Cow::Owned(sanitize(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try {} HELP.",
            clip(&text(1), 128),
            text(0).to_ascii_uppercase()
        ))))
    }

    /// An error with a complete Redis error text (for example `"ERR invalid expire time in 'set' command"`).
    pub fn custom(text: impl Into<Cow<'static, str>>) -> OpError {
        OpError::Custom(text.into())
    }

    /// An error whose text quotes what a client sent, made as Redis's
    /// `addReplyErrorFormat` makes it: the quoted bytes stop at a NUL byte and line
    /// breaks become spaces.
    pub fn quoting(before: &str, quoted: &[u8], after: &str) -> OpError {
        let quoted = String::from_utf8_lossy(clip_bytes(quoted, usize::MAX));
        OpError::Custom(Cow::Owned(sanitize(format!("{before}{quoted}{after}"))))
    }

    /// The exact text Redis sends for this error (without the leading `-`).
    pub fn wire_text(&self) -> Cow<'static, str> {
        match self {
            OpError::WrongType => {
                Cow::Borrowed("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            OpError::Syntax => Cow::Borrowed("ERR syntax error"),
            OpError::NotInteger => Cow::Borrowed("ERR value is not an integer or out of range"),
            OpError::NotFloat => Cow::Borrowed("ERR value is not a valid float"),
            OpError::Overflow => Cow::Borrowed("ERR increment or decrement would overflow"),
            OpError::NoSuchKey => Cow::Borrowed("ERR no such key"),
            OpError::IndexOutOfRange => Cow::Borrowed("ERR index out of range"),
            OpError::DbIndexOutOfRange => Cow::Borrowed("ERR DB index is out of range"),
            OpError::SameObject => Cow::Borrowed("ERR source and destination objects are the same"),
            OpError::NanOrInfinity => Cow::Borrowed("ERR increment would produce NaN or Infinity"),
            OpError::NotHyperLogLog => {
                Cow::Borrowed("WRONGTYPE Key is not a valid HyperLogLog string value.")
            }
            OpError::CorruptHyperLogLog => {
                Cow::Borrowed("INVALIDOBJ Corrupted HLL object detected")
            }
            OpError::Geo(e) => e.text(),
            OpError::Stream(e) => e.text(),
            OpError::Json(e) => e.text(),
            OpError::Dump(e) => e.text(),
            OpError::WrongArity(name) => Cow::Owned(format!(
                "ERR wrong number of arguments for '{name}' command"
            )),
            OpError::UnknownCommand { .. }
            | OpError::UnknownSubcommand { .. }
            | OpError::NoLatencySamples(_) => self.error_text().into(),
            OpError::DiskFailed(failure) => Cow::Owned(sanitize(format!(
                "MISCONF Errors writing to the write-ahead log: {failure}"
            ))),
            OpError::Custom(text) => text.clone(),
        }
    }

    /// The reply text for this error, keeping the bytes a client sent where the text
    /// quotes them (an unknown command or subcommand), as Redis does.
    pub fn error_text(&self) -> ErrorText {
        match self {
            OpError::UnknownCommand { name, args } => {
                // Redis quotes the arguments until their text reaches 128 bytes.
                let mut quoted = Vec::new();
                for a in args {
                    if quoted.len() >= 128 {
                        break;
                    }
                    let room = 128 - quoted.len();
                    quoted.push(b'\'');
                    quoted.extend_from_slice(clip_bytes(a, room));
                    quoted.extend_from_slice(b"' ");
                }
                let mut text = b"ERR unknown command '".to_vec();
                text.extend_from_slice(clip_bytes(name, 128));
                text.extend_from_slice(b"', with args beginning with: ");
                text.extend_from_slice(&quoted);
                ErrorText::from_bytes(sanitize_bytes(text))
            }
            OpError::NoLatencySamples(event) => {
                let text = format!("ERR No samples available for event '{event}'");
                ErrorText::from_bytes(sanitize_bytes(text.into_bytes()))
            }
            OpError::UnknownSubcommand { sub, command } => {
                let mut text = b"ERR unknown subcommand '".to_vec();
                text.extend_from_slice(clip_bytes(sub, 128));
                text.extend_from_slice(format!("'. Try {command} HELP.").as_bytes());
                ErrorText::from_bytes(sanitize_bytes(text))
            }
            other => other.wire_text().into(),
        }
    }
}

/// Redis quotes at most `max` bytes of what a client sent, and as a C string it stops
/// at the first NUL byte.
fn clip_bytes(s: &[u8], max: usize) -> &[u8] {
    let s = s.split(|&b| b == 0).next().unwrap_or(&[]);
    &s[..s.len().min(max)]
}

/// An error line may not contain CR or LF: Redis replaces them with spaces.
fn sanitize_bytes(mut s: Vec<u8>) -> Vec<u8> {
    for b in &mut s {
        if *b == b'\r' || *b == b'\n' {
            *b = b' ';
        }
    }
    s
}

/// Redis quotes at most `max` bytes of a user-supplied name in an error message, and
/// as a C string it stops at the first NUL byte.
fn clip(s: &str, max: usize) -> String {
    let s = s.split('\0').next().unwrap_or("");
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// An error line may not contain CR or LF: Redis replaces them with spaces.
fn sanitize(mut s: String) -> String {
    if s.contains(['\r', '\n']) {
        s = s.replace(['\r', '\n'], " ");
    }
    s
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.wire_text())
    }
}

impl std::error::Error for OpError {}

impl From<OpError> for Reply {
    fn from(e: OpError) -> Reply {
        Reply::Error(e.error_text())
    }
}

/// The result of an engine operation.
pub type OpResult<T> = Result<T, OpError>;

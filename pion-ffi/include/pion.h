/* Pion's C ABI: generated from pion-ffi by cbindgen; do not edit. See doc/ffi.md. */

#ifndef PION_H
#define PION_H

#include <stddef.h>
#include <stdint.h>

// The version of `pion_options` this library reads.
#define PION_OPTIONS_VERSION 1

// The outcome of a call.
typedef enum pion_status {
  // The call did what it was asked (a command's error reply is still `PION_OK`:
  // the reply says the error).
  PION_OK = 0,
  // A required pointer was null.
  PION_ERR_NULL = 1,
  // An argument is invalid (an unknown options version, a path that is not
  // UTF-8, a length that does not fit).
  PION_ERR_INVALID = 2,
  // The engine handle is not open (never opened, or already closed).
  PION_ERR_CLOSED = 3,
  // The engine could not be opened (the message names the file and why).
  PION_ERR_OPEN = 4,
  // The engine failed unexpectedly; the message says where. The engine stays
  // usable, the failed call had no effect the caller can rely on.
  PION_ERR_PANIC = 5,
  // The engine could not write to its data directory (closing flushes the log).
  PION_ERR_IO = 6,
} pion_status;

// What a reply node is.
typedef enum pion_reply_kind_t {
  // A status line (`OK`): bytes.
  PION_REPLY_STATUS = 1,
  // An error line with its code (`ERR …`, `WRONGTYPE …`): bytes.
  PION_REPLY_ERROR = 2,
  // A 64-bit integer.
  PION_REPLY_INTEGER = 3,
  // A binary-safe string: bytes.
  PION_REPLY_BULK = 4,
  // No value (a missing key, a null array).
  PION_REPLY_NIL = 5,
  // An ordered array: children.
  PION_REPLY_ARRAY = 6,
  // Keys and values alternating: children (`len` is twice the pairs).
  PION_REPLY_MAP = 7,
  // An unordered set: children.
  PION_REPLY_SET = 8,
  // A double: its value, and bytes with its text.
  PION_REPLY_DOUBLE = 9,
  // A boolean: the integer 1 or 0.
  PION_REPLY_BOOL = 10,
  // Verbatim text: bytes (without its format prefix).
  PION_REPLY_VERBATIM = 11,
  // A big number: bytes with its decimal digits.
  PION_REPLY_BIGNUM = 12,
  // An out-of-band message: children.
  PION_REPLY_PUSH = 13,
} pion_reply_kind_t;

// An open engine (opaque: a token the library looks up, never a pointer to read).
typedef struct pion_engine pion_engine;

// One node of a reply tree (opaque to C: read it through the accessors).
typedef struct pion_reply pion_reply;

// How to open an engine.
typedef struct pion_options {
  // `PION_OPTIONS_VERSION`: the layout of this struct the caller was built with.
  uint32_t version;
  // The data directory (created if missing): everything acknowledged survives a
  // restart or a crash. Null for an engine in memory only.
  const char *dir;
} pion_options;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Opens an engine and writes its handle to `*out`.
//
// `options` may be null (an engine in memory). A durable engine recovers what its
// directory holds; opening fails with `PION_ERR_OPEN` when another process has the
// directory open or its files are damaged.
//
// # Safety
// `options` is null or points to a `pion_options` whose `dir` is null or a
// NUL-terminated string; `out` is valid for a write.
enum pion_status pion_open(const struct pion_options *options, struct pion_engine **out);

// Closes an engine: a durable one's log is flushed, and its directory released
// when the last call running on it returns. Null is allowed and does nothing; closing a
// handle twice is `PION_ERR_CLOSED`.
enum pion_status pion_close(struct pion_engine *engine);

// Runs one command on database `db` and writes its reply tree to `*reply` (free it
// with `pion_reply_free`). `argv[i]` holds `argvlen[i]` bytes (binary-safe, no NUL
// needed). A command that fails still returns `PION_OK`, with an `ERROR` reply.
//
// # Safety
// `argv` and `argvlen` point to `argc` entries each; every `argv[i]` is valid for
// `argvlen[i]` bytes (it may be null when its length is 0); `reply` is valid for a
// write.
enum pion_status pion_execute(struct pion_engine *engine,
                              uint32_t db,
                              size_t argc,
                              const uint8_t *const *argv,
                              const size_t *argvlen,
                              struct pion_reply **reply);

// The kind of a node; 0 for null.
//
// # Safety
// `reply` is null or a node of a reply tree not yet freed.
int32_t pion_reply_kind(const struct pion_reply *reply);

// The integer of an `INTEGER` or `BOOL` node (0 for other kinds and null).
//
// # Safety
// `reply` is null or a node of a reply tree not yet freed.
int64_t pion_reply_integer(const struct pion_reply *reply);

// The value of a `DOUBLE` node (an `INTEGER`'s as a double; 0 otherwise).
//
// # Safety
// `reply` is null or a node of a reply tree not yet freed.
double pion_reply_double(const struct pion_reply *reply);

// The bytes of a `STATUS`, `ERROR`, `BULK`, `DOUBLE`, `VERBATIM` or `BIGNUM` node,
// with their length in `*len` (which may be null). Not NUL-terminated; borrowed
// from the tree. Null (and length 0) for other kinds and a null node.
//
// # Safety
// `reply` is null or a node of a reply tree not yet freed; `len` is null or valid
// for a write.
const uint8_t *pion_reply_bytes(const struct pion_reply *reply, size_t *len);

// How many children a node has (`ARRAY`, `SET`, `PUSH`; a `MAP`'s keys and values
// together); 0 for other kinds and null.
//
// # Safety
// `reply` is null or a node of a reply tree not yet freed.
size_t pion_reply_len(const struct pion_reply *reply);

// Child `index` of a node, borrowed from the tree; null when out of range.
//
// # Safety
// `reply` is null or a node of a reply tree not yet freed.
const struct pion_reply *pion_reply_element(const struct pion_reply *reply, size_t index);

// Frees a reply tree given its root (null is allowed and does nothing). Nodes
// reached from it must not be used afterwards; a child must never be freed alone.
//
// # Safety
// `reply` is null or a root returned by `pion_execute` and not yet freed.
void pion_reply_free(struct pion_reply *reply);

// The message of the last failed call on this thread (empty if none failed). The
// text is owned by the library and stays valid until this thread's next failed
// call; it must not be freed.
const char *pion_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* PION_H */

/* Pion's C ABI: generated from pion-ffi by cbindgen; do not edit. See doc/ffi.md. */

#ifndef PION_H
#define PION_H

#include <stddef.h>
#include <stdint.h>

// The version of `pion_options` this library reads.
#define PION_OPTIONS_VERSION 1

// `pion_vector_add` flag: keep full-precision vectors (no quantisation).
#define PION_VECTOR_NOQUANT 1

// `pion_vector_add` flag: 8-bit quantisation (the default when no flag is given).
#define PION_VECTOR_Q8 2

// `pion_vector_add` flag: binary quantisation.
#define PION_VECTOR_BIN 4

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
  // A typed call's command was refused (an unknown namespace, a wrong layer
  // size, a key of another type …); the message is its error reply.
  PION_ERR_COMMAND = 7,
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

// Fetched blocks: views of the store's buffers, held until `pion_kv_blocks_free`.
typedef struct pion_kv_blocks pion_kv_blocks;

// A search's results, nearest first (freed with `pion_neighbors_free`).
typedef struct pion_neighbors pion_neighbors;

// One node of a reply tree (opaque to C: read it through the accessors).
typedef struct pion_reply pion_reply;

// An open session (opaque: a token the library looks up, never a pointer to read).
typedef struct pion_session pion_session;

// How to open an engine.
typedef struct pion_options {
  // `PION_OPTIONS_VERSION`: the layout of this struct the caller was built with.
  uint32_t version;
  // The data directory (created if missing): everything acknowledged survives a
  // restart or a crash. Null for an engine in memory only.
  const char *dir;
} pion_options;

// A block's id: the 128-bit chain hash of its tokens and its parent's id, as 16
// bytes little-endian (all zero is the parent of a sequence's first block).
typedef struct pion_block_id {
  // The id's bytes.
  uint8_t bytes[16];
} pion_block_id;

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

// Registers namespace `ns` with its manifest (JSON: model, tokenizer, block size,
// dtype, tier, layers); registering the same manifest again is allowed.
//
// # Safety
// `ns` and `manifest_json` are NUL-terminated strings.
enum pion_status pion_kv_register(struct pion_engine *engine,
                                  const char *ns,
                                  const char *manifest_json);

// Stores one block of `ntokens` tokens after `parent` (null: the sequence's first
// block) with `nlayers` layers, layer `i` being `layer_lens[i]` bytes at
// `layers[i]` in the namespace's layout (a recurrent layer without state: length
// 0). The block's id goes to `*id` (which may be null). The bytes are copied once,
// into the store.
//
// # Safety
// `ns` is a NUL-terminated string; `parent` and `id` are null or valid; `tokens`
// holds `ntokens` u32s; `layers` and `layer_lens` hold `nlayers` entries and each
// `layers[i]` is valid for `layer_lens[i]` bytes.
enum pion_status pion_kv_put(struct pion_engine *engine,
                             const char *ns,
                             const struct pion_block_id *parent,
                             const uint32_t *tokens,
                             size_t ntokens,
                             size_t nlayers,
                             const uint8_t *const *layers,
                             const size_t *layer_lens,
                             struct pion_block_id *id);

// Finds the longest stored usable prefix of `tokens`: the tokens it covers go to
// `*matched_tokens`, its block count to `*nblocks`, and the first `max_ids` of its
// block ids to `ids` (a caller array; `*nblocks` may exceed `max_ids`, then call
// again with room for all). The out pointers may be null.
//
// # Safety
// `ns` is a NUL-terminated string; `tokens` holds `ntokens` u32s; `ids` is null or
// holds `max_ids` writable ids; the other out pointers are null or writable.
enum pion_status pion_kv_match(struct pion_engine *engine,
                               const char *ns,
                               const uint32_t *tokens,
                               size_t ntokens,
                               uint64_t *matched_tokens,
                               struct pion_block_id *ids,
                               size_t max_ids,
                               size_t *nblocks);

// Fetches `nids` blocks of `ns` (every one stored, or `PION_ERR_COMMAND`) with
// their layers (all, or the `nlayer_indexes` listed in `layer_indexes`), as views
// of the store's buffers written to `*out`; free them with `pion_kv_blocks_free`.
//
// # Safety
// `ns` is a NUL-terminated string; `ids` holds `nids` ids; `layer_indexes` is null
// or holds `nlayer_indexes` entries; `out` is valid for a write.
enum pion_status pion_kv_fetch(struct pion_engine *engine,
                               const char *ns,
                               const struct pion_block_id *ids,
                               size_t nids,
                               const uint32_t *layer_indexes,
                               size_t nlayer_indexes,
                               struct pion_kv_blocks **out);

// How many blocks a fetch holds (0 for null).
//
// # Safety
// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
size_t pion_kv_blocks_len(const struct pion_kv_blocks *blocks);

// The tokens block `i` covers (0 when out of range).
//
// # Safety
// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
uint32_t pion_kv_block_tokens(const struct pion_kv_blocks *blocks, size_t i);

// How many layers block `i` holds (those asked for; 0 when out of range).
//
// # Safety
// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
size_t pion_kv_block_layers(const struct pion_kv_blocks *blocks, size_t i);

// Layer `layer` of block `i` (the `layer`-th of those asked for): its bytes, as
// stored, with their length in `*len` (which may be null). A view of the store's
// buffer, valid until `pion_kv_blocks_free`; null (length 0) for a recurrent layer
// without state at this block, or out of range.
//
// # Safety
// `blocks` is null or a handle from `pion_kv_fetch` not yet freed; `len` is null or
// writable.
const uint8_t *pion_kv_block_layer(const struct pion_kv_blocks *blocks,
                                   size_t i,
                                   size_t layer,
                                   size_t *len);

// Releases fetched blocks (null is allowed); their views must not be used after.
//
// # Safety
// `blocks` is null or a handle from `pion_kv_fetch`, freed once.
void pion_kv_blocks_free(struct pion_kv_blocks *blocks);

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

// Opens a session on an engine and writes its handle to `*out`.
//
// # Safety
// `out` is valid for a write.
enum pion_status pion_session_open(struct pion_engine *engine, struct pion_session **out);

// Runs one command in a session (its database, its transaction) and writes its
// reply tree to `*reply`, as `pion_execute` does.
//
// # Safety
// As `pion_execute`: `argv` and `argvlen` hold `argc` entries, each `argv[i]` valid
// for `argvlen[i]` bytes; `reply` is valid for a write.
enum pion_status pion_session_execute(struct pion_session *session,
                                      size_t argc,
                                      const uint8_t *const *argv,
                                      const size_t *argvlen,
                                      struct pion_reply **reply);

// Closes a session (its transaction, if one was open, is discarded). Null is
// allowed and does nothing; closing twice is `PION_ERR_CLOSED`.
enum pion_status pion_session_close(struct pion_session *session);

// The message of the last failed call on this thread (empty if none failed). The
// text is owned by the library and stays valid until this thread's next failed
// call; it must not be freed.
const char *pion_last_error(void);

// Adds `element` (or moves it) with its `dim`-float vector to the vector set `key`
// in database `db`, creating the set on its first element; `flags` picks the
// quantisation then (0: the default). `*added` (may be null) is 1 when the element
// is new.
//
// # Safety
// `key` is a NUL-terminated string; `element` is valid for `element_len` bytes;
// `vector` holds `dim` floats; `added` is null or writable.
enum pion_status pion_vector_add(struct pion_engine *engine,
                                 uint32_t db,
                                 const char *key,
                                 const uint8_t *element,
                                 size_t element_len,
                                 const float *vector,
                                 size_t dim,
                                 uint32_t flags,
                                 int32_t *added);

// Searches the vector set `key` for the `k` elements nearest `query` (`dim`
// floats), exploring `ef` candidates (0: the set's default); the results, nearest
// first with their similarity (1 identical, 0 opposite), go to `*out`. A missing
// key gives no results.
//
// # Safety
// `key` is a NUL-terminated string; `query` holds `dim` floats; `out` is writable.
enum pion_status pion_vector_search(struct pion_engine *engine,
                                    uint32_t db,
                                    const char *key,
                                    const float *query,
                                    size_t dim,
                                    size_t k,
                                    size_t ef,
                                    struct pion_neighbors **out);

// Removes `element` from the vector set `key`; `*removed` (may be null) is 1 when it
// was there. The set goes with its last element.
//
// # Safety
// `key` is a NUL-terminated string; `element` is valid for `element_len` bytes;
// `removed` is null or writable.
enum pion_status pion_vector_remove(struct pion_engine *engine,
                                    uint32_t db,
                                    const char *key,
                                    const uint8_t *element,
                                    size_t element_len,
                                    int32_t *removed);

// How many results a search gave (0 for null).
//
// # Safety
// `n` is null or a handle from `pion_vector_search` not yet freed.
size_t pion_neighbors_len(const struct pion_neighbors *n);

// Result `i`'s element (its bytes, length in `*len`, which may be null), borrowed
// from the results; null when out of range.
//
// # Safety
// `n` is null or a handle from `pion_vector_search` not yet freed; `len` is null
// or writable.
const uint8_t *pion_neighbors_element(const struct pion_neighbors *n, size_t i, size_t *len);

// Result `i`'s similarity (NaN when out of range).
//
// # Safety
// `n` is null or a handle from `pion_vector_search` not yet freed.
double pion_neighbors_score(const struct pion_neighbors *n, size_t i);

// Frees a search's results (null is allowed).
//
// # Safety
// `n` is null or a handle from `pion_vector_search`, freed once.
void pion_neighbors_free(struct pion_neighbors *n);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* PION_H */

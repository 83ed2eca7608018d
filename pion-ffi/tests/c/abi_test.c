/* Every function of pion.h from C: engines in memory and on disk, commands with
 * binary arguments, each reply kind walked and freed, the prompt cache and vector
 * search with C types, sessions (SELECT, MULTI/EXEC), bad input, use after close, and several threads on one
 * engine. Run by pion-ffi's tests, also under valgrind.
 * usage: abi_test DATA_DIR */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pion.h"

static int failures = 0;

#define CHECK(cond)                                                         \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n",       \
              __FILE__, __LINE__, #cond, pion_last_error());                \
      failures++;                                                           \
    }                                                                       \
  } while (0)

/* Runs a command given as NUL-terminated words on an engine (db 0) or, when `s` is
 * not null, in a session; returns its reply (or NULL). */
static pion_reply *run_in(pion_engine *e, pion_session *s, int argc, const char **words) {
  const uint8_t *argv[16];
  size_t lens[16];
  for (int i = 0; i < argc; i++) {
    argv[i] = (const uint8_t *)words[i];
    lens[i] = strlen(words[i]);
  }
  pion_reply *r = NULL;
  pion_status status = s ? pion_session_execute(s, (size_t)argc, argv, lens, &r)
                         : pion_execute(e, 0, (size_t)argc, argv, lens, &r);
  CHECK(status == PION_OK);
  return status == PION_OK ? r : NULL;
}

#define WORDS(...) (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), \
                   (const char *[]){__VA_ARGS__}
#define RUN(e, ...) run_in((e), NULL, WORDS(__VA_ARGS__))
#define SRUN(s, ...) run_in(NULL, (s), WORDS(__VA_ARGS__))

static int bytes_are(const pion_reply *r, const char *want, size_t n) {
  size_t len = 0;
  const uint8_t *p = pion_reply_bytes(r, &len);
  return p != NULL && len == n && memcmp(p, want, n) == 0;
}

static void commands_and_replies(pion_engine *e) {
  pion_reply *r = RUN(e, "SET", "greeting", "hello");
  CHECK(pion_reply_kind(r) == PION_REPLY_STATUS && bytes_are(r, "OK", 2));
  pion_reply_free(r);

  /* Binary-safe arguments: a NUL inside the key and the value. */
  const uint8_t *argv[3] = {(const uint8_t *)"SET", (const uint8_t *)"k\0y", (const uint8_t *)"v\0\xff"};
  size_t lens[3] = {3, 3, 3};
  CHECK(pion_execute(e, 0, 3, argv, lens, &r) == PION_OK);
  pion_reply_free(r);
  const uint8_t *get[2] = {(const uint8_t *)"GET", (const uint8_t *)"k\0y"};
  size_t getlens[2] = {3, 3};
  CHECK(pion_execute(e, 0, 2, get, getlens, &r) == PION_OK);
  CHECK(pion_reply_kind(r) == PION_REPLY_BULK && bytes_are(r, "v\0\xff", 3));
  pion_reply_free(r);

  r = RUN(e, "INCRBY", "n", "41");
  CHECK(pion_reply_kind(r) == PION_REPLY_INTEGER && pion_reply_integer(r) == 41);
  CHECK(pion_reply_double(r) == 41.0);
  pion_reply_free(r);

  r = RUN(e, "GET", "missing");
  CHECK(pion_reply_kind(r) == PION_REPLY_NIL && pion_reply_bytes(r, NULL) == NULL);
  pion_reply_free(r);

  r = RUN(e, "NOSUCHCOMMAND");
  CHECK(pion_reply_kind(r) == PION_REPLY_ERROR);
  size_t len = 0;
  const uint8_t *text = pion_reply_bytes(r, &len);
  CHECK(text != NULL && len > 3 && memcmp(text, "ERR", 3) == 0);
  pion_reply_free(r);

  pion_reply_free(RUN(e, "RPUSH", "list", "a", "b", "c"));
  r = RUN(e, "LRANGE", "list", "0", "-1");
  CHECK(pion_reply_kind(r) == PION_REPLY_ARRAY && pion_reply_len(r) == 3);
  CHECK(bytes_are(pion_reply_element(r, 2), "c", 1));
  CHECK(pion_reply_element(r, 3) == NULL);
  pion_reply_free(r);

  pion_reply_free(RUN(e, "HSET", "h", "f", "v"));
  r = RUN(e, "HGETALL", "h");
  CHECK(pion_reply_kind(r) == PION_REPLY_MAP && pion_reply_len(r) == 2);
  CHECK(bytes_are(pion_reply_element(r, 0), "f", 1) && bytes_are(pion_reply_element(r, 1), "v", 1));
  pion_reply_free(r);

  pion_reply_free(RUN(e, "SADD", "s", "x"));
  r = RUN(e, "SMEMBERS", "s");
  CHECK(pion_reply_kind(r) == PION_REPLY_SET && pion_reply_len(r) == 1);
  pion_reply_free(r);

  pion_reply_free(RUN(e, "ZADD", "z", "2.5", "m"));
  r = RUN(e, "ZSCORE", "z", "m");
  CHECK(bytes_are(r, "2.5", 3));
  CHECK(pion_reply_kind(r) != PION_REPLY_DOUBLE || pion_reply_double(r) == 2.5);
  pion_reply_free(r);

  r = RUN(e, "SISMEMBER", "s", "x");
  CHECK(pion_reply_integer(r) == 1);
  pion_reply_free(r);

  /* Another database. */
  const uint8_t *set1[3] = {(const uint8_t *)"SET", (const uint8_t *)"only1", (const uint8_t *)"x"};
  size_t set1lens[3] = {3, 5, 1};
  CHECK(pion_execute(e, 1, 3, set1, set1lens, &r) == PION_OK);
  pion_reply_free(r);
  r = RUN(e, "EXISTS", "only1");
  CHECK(pion_reply_integer(r) == 0);
  pion_reply_free(r);
}

static void bad_input(pion_engine *e) {
  pion_reply *r = NULL;
  size_t lens[1] = {4};
  const uint8_t *nullarg[1] = {NULL};
  CHECK(pion_execute(e, 0, 1, NULL, lens, &r) == PION_ERR_NULL);
  CHECK(pion_execute(e, 0, 1, nullarg, lens, &r) == PION_ERR_NULL);
  CHECK(strcmp(pion_last_error(), "argv[0] is null") == 0);
  CHECK(pion_execute(e, 0, 0, nullarg, lens, &r) == PION_ERR_INVALID);
  CHECK(pion_execute(NULL, 0, 1, nullarg, lens, &r) == PION_ERR_NULL);
  const uint8_t *ping[1] = {(const uint8_t *)"PING"};
  CHECK(pion_execute(e, 0, 1, ping, lens, NULL) == PION_ERR_NULL);
  CHECK(pion_open(NULL, NULL) == PION_ERR_NULL);
  pion_options wrong = {99, NULL};
  pion_engine *other = NULL;
  CHECK(pion_open(&wrong, &other) == PION_ERR_INVALID && other == NULL);
  CHECK(pion_reply_kind(NULL) == 0 && pion_reply_len(NULL) == 0);
  CHECK(pion_reply_integer(NULL) == 0 && pion_reply_element(NULL, 0) == NULL);
  pion_reply_free(NULL);
  CHECK(pion_close(NULL) == PION_OK);
}

static const char *MANIFEST =
    "{\"model\":\"m\",\"block_tokens\":4,\"dtype\":\"f16\",\"layers\":["
    "{\"kind\":\"attention\",\"kv_heads\":1,\"head_dim\":8},"
    "{\"kind\":\"recurrent\",\"state_bytes\":6}]}";

/* The prompt cache: two blocks stored from this program's buffers, matched into an
 * array of ids, fetched as views of the store's buffers (also after the namespace
 * is dropped), one layer asked by index. */
static void prompt_cache(pion_engine *e) {
  CHECK(pion_kv_register(e, "ns", MANIFEST) == PION_OK);
  CHECK(pion_kv_register(e, "ns", "{") == PION_ERR_COMMAND);
  CHECK(strncmp(pion_last_error(), "ERR", 3) == 0);

  uint8_t kv1[2 * 4 * 8 * 2], kv2[2 * 4 * 8 * 2], state1[6] = {1, 2, 3, 4, 5, 6};
  for (size_t i = 0; i < sizeof kv1; i++) {
    kv1[i] = (uint8_t)i;
    kv2[i] = (uint8_t)(255 - i);
  }
  uint32_t tokens[8] = {11, 12, 13, 14, 15, 16, 17, 18};
  const uint8_t *layers1[2] = {kv1, state1};
  size_t lens1[2] = {sizeof kv1, sizeof state1};
  pion_block_id first, second;
  CHECK(pion_kv_put(e, "ns", NULL, tokens, 4, 2, layers1, lens1, &first) == PION_OK);
  const uint8_t *layers2[2] = {kv2, state1};
  CHECK(pion_kv_put(e, "ns", &first, tokens + 4, 4, 2, layers2, lens1, &second) == PION_OK);
  size_t short_len[2] = {3, 0};
  CHECK(pion_kv_put(e, "ns", &first, tokens + 4, 4, 2, layers2, short_len, NULL) == PION_ERR_COMMAND);
  CHECK(pion_kv_put(e, NULL, NULL, tokens, 4, 2, layers1, lens1, NULL) == PION_ERR_NULL);

  uint64_t matched = 0;
  size_t nblocks = 0;
  pion_block_id ids[4];
  CHECK(pion_kv_match(e, "ns", tokens, 8, &matched, ids, 4, &nblocks) == PION_OK);
  CHECK(matched == 8 && nblocks == 2);
  CHECK(memcmp(&ids[0], &first, sizeof first) == 0 && memcmp(&ids[1], &second, sizeof second) == 0);
  CHECK(pion_kv_match(e, "ns", tokens, 8, NULL, NULL, 0, &nblocks) == PION_OK && nblocks == 2);

  pion_kv_blocks *blocks = NULL;
  CHECK(pion_kv_fetch(e, "ns", ids, 2, NULL, 0, &blocks) == PION_OK);
  CHECK(pion_kv_blocks_len(blocks) == 2 && pion_kv_block_tokens(blocks, 1) == 4);
  CHECK(pion_kv_block_layers(blocks, 0) == 2);
  size_t len = 0;
  const uint8_t *view = pion_kv_block_layer(blocks, 1, 0, &len);
  CHECK(view != NULL && len == sizeof kv2 && memcmp(view, kv2, len) == 0);
  pion_reply_free(RUN(e, "KV.DROP", "ns"));
  view = pion_kv_block_layer(blocks, 0, 1, &len);
  CHECK(view != NULL && len == sizeof state1 && memcmp(view, state1, len) == 0);
  CHECK(pion_kv_block_layer(blocks, 5, 0, &len) == NULL && len == 0);
  pion_kv_blocks_free(blocks);

  CHECK(pion_kv_fetch(e, "ns", ids, 1, NULL, 0, &blocks) == PION_ERR_COMMAND);
  CHECK(pion_kv_register(e, "ns", MANIFEST) == PION_OK);
  CHECK(pion_kv_put(e, "ns", NULL, tokens, 4, 2, layers1, lens1, &first) == PION_OK);
  uint32_t only_state[1] = {1};
  CHECK(pion_kv_fetch(e, "ns", &first, 1, only_state, 1, &blocks) == PION_OK);
  CHECK(pion_kv_block_layers(blocks, 0) == 1);
  view = pion_kv_block_layer(blocks, 0, 0, &len);
  CHECK(view != NULL && len == sizeof state1);
  pion_kv_blocks_free(blocks);
  CHECK(pion_kv_blocks_len(NULL) == 0);
  pion_kv_blocks_free(NULL);
}

/* Vector search: a set filled from float arrays, searched, an element removed. */
static void vectors(pion_engine *e) {
  const float points[3][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0.7f, 0.7f, 0, 0}};
  const char *names[3] = {"a", "b", "ab"};
  for (int i = 0; i < 3; i++) {
    int added = -1;
    CHECK(pion_vector_add(e, 0, "vs", (const uint8_t *)names[i], strlen(names[i]), points[i], 4,
                          PION_VECTOR_NOQUANT, &added) == PION_OK);
    CHECK(added == 1);
  }
  const float query[4] = {0.9f, 0.2f, 0, 0};
  pion_neighbors *found = NULL;
  CHECK(pion_vector_search(e, 0, "vs", query, 4, 2, 100, &found) == PION_OK);
  CHECK(pion_neighbors_len(found) == 2);
  size_t len = 0;
  const uint8_t *name = pion_neighbors_element(found, 0, &len);
  CHECK(name != NULL && len == 1 && name[0] == 'a');
  CHECK(pion_neighbors_score(found, 0) >= pion_neighbors_score(found, 1));
  CHECK(pion_neighbors_element(found, 2, &len) == NULL && len == 0);
  pion_neighbors_free(found);

  int removed = -1;
  CHECK(pion_vector_remove(e, 0, "vs", (const uint8_t *)"a", 1, &removed) == PION_OK && removed == 1);
  CHECK(pion_vector_remove(e, 0, "vs", (const uint8_t *)"a", 1, &removed) == PION_OK && removed == 0);
  CHECK(pion_vector_add(e, 0, "vs", (const uint8_t *)"x", 1, query, 2, 0, NULL) == PION_ERR_COMMAND);
  CHECK(pion_vector_add(e, 0, "vs", (const uint8_t *)"x", 1, query, 4, 3, NULL) == PION_ERR_INVALID);
  CHECK(pion_vector_search(e, 0, "vs", query, 4, 0, 0, &found) == PION_ERR_INVALID);
  CHECK(pion_neighbors_len(NULL) == 0);
  pion_neighbors_free(NULL);
}

/* A session keeps its database and its transaction between calls. */
static void sessions(pion_engine *e) {
  pion_session *s = NULL;
  CHECK(pion_session_open(e, &s) == PION_OK);
  pion_reply_free(SRUN(s, "SELECT", "5"));
  pion_reply_free(SRUN(s, "MULTI"));
  pion_reply *r = SRUN(s, "SET", "in5", "x");
  CHECK(bytes_are(r, "QUEUED", 6));
  pion_reply_free(r);
  r = SRUN(s, "EXEC");
  CHECK(pion_reply_kind(r) == PION_REPLY_ARRAY && pion_reply_len(r) == 1);
  pion_reply_free(r);
  r = RUN(e, "EXISTS", "in5");
  CHECK(pion_reply_integer(r) == 0);
  pion_reply_free(r);
  r = SRUN(s, "EXISTS", "in5");
  CHECK(pion_reply_integer(r) == 1);
  pion_reply_free(r);
  CHECK(pion_session_close(s) == PION_OK);
  CHECK(pion_session_close(s) == PION_ERR_CLOSED);
  CHECK(pion_session_open(e, NULL) == PION_ERR_NULL);
  CHECK(pion_session_close(NULL) == PION_OK);
}

typedef struct {
  pion_engine *engine;
  const char *key;
} worker_args;

static void *worker(void *p) {
  worker_args *a = p;
  for (int i = 0; i < 200; i++) {
    pion_reply *r = RUN(a->engine, "INCR", a->key);
    CHECK(pion_reply_kind(r) == PION_REPLY_INTEGER);
    pion_reply_free(r);
  }
  return NULL;
}

static void threads(pion_engine *e) {
  enum { N = 6 };
  pthread_t t[N];
  worker_args a[N];
  for (int i = 0; i < N; i++) {
    a[i].engine = e;
    a[i].key = i % 2 ? "odd" : "even";
    CHECK(pthread_create(&t[i], NULL, worker, &a[i]) == 0);
  }
  for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
  pion_reply *r = RUN(e, "MGET", "odd", "even");
  CHECK(bytes_are(pion_reply_element(r, 0), "600", 3));
  CHECK(bytes_are(pion_reply_element(r, 1), "600", 3));
  pion_reply_free(r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  pion_engine *mem = NULL;
  CHECK(pion_open(NULL, &mem) == PION_OK && mem != NULL);
  commands_and_replies(mem);
  prompt_cache(mem);
  vectors(mem);
  sessions(mem);
  bad_input(mem);
  threads(mem);
  CHECK(pion_close(mem) == PION_OK);
  pion_reply *r = NULL;
  const uint8_t *ping[1] = {(const uint8_t *)"PING"};
  size_t pinglen[1] = {4};
  CHECK(pion_execute(mem, 0, 1, ping, pinglen, &r) == PION_ERR_CLOSED);
  CHECK(pion_close(mem) == PION_ERR_CLOSED);

  /* A durable engine: what it acknowledged is there after close and reopen. */
  pion_options opts = {PION_OPTIONS_VERSION, argv[1]};
  for (int round = 0; round < 2; round++) {
    pion_engine *disk = NULL;
    CHECK(pion_open(&opts, &disk) == PION_OK);
    if (round == 0) {
      pion_reply_free(RUN(disk, "SET", "kept", "yes"));
      pion_engine *again = NULL;
      CHECK(pion_open(&opts, &again) == PION_ERR_OPEN);
    } else {
      r = RUN(disk, "GET", "kept");
      CHECK(bytes_are(r, "yes", 3));
      pion_reply_free(r);
    }
    CHECK(pion_close(disk) == PION_OK);
  }
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("pion C ABI: all checks passed\n");
  return 0;
}

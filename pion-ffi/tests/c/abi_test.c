/* Every function of pion.h from C: engines in memory and on disk, commands with
 * binary arguments, each reply kind walked and freed, bad input, use after close,
 * and several threads on one engine. Run by pion-ffi's tests, also under valgrind.
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

/* Runs a command given as NUL-terminated words; returns its reply (or NULL). */
static pion_reply *run(pion_engine *e, int argc, const char **words) {
  const uint8_t *argv[16];
  size_t lens[16];
  for (int i = 0; i < argc; i++) {
    argv[i] = (const uint8_t *)words[i];
    lens[i] = strlen(words[i]);
  }
  pion_reply *r = NULL;
  pion_status s = pion_execute(e, 0, (size_t)argc, argv, lens, &r);
  CHECK(s == PION_OK);
  return s == PION_OK ? r : NULL;
}

#define RUN(e, ...) run((e), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(char *)), \
                        (const char *[]){__VA_ARGS__})

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

// Pion's engine from C++ through pion.h: a small RAII wrapper that opens an engine,
// runs commands given as strings, and turns each reply tree into a std::string.
// Built and run by pion-ffi's tests; see doc/ffi.md.
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pion.h"

namespace {

struct ReplyDeleter {
  void operator()(pion_reply *r) const { pion_reply_free(r); }
};
using Reply = std::unique_ptr<pion_reply, ReplyDeleter>;

class Engine {
 public:
  // In memory when `dir` is empty, durable on `dir` otherwise.
  explicit Engine(const std::string &dir = "") {
    pion_options options{PION_OPTIONS_VERSION, dir.empty() ? nullptr : dir.c_str()};
    if (pion_open(&options, &engine_) != PION_OK) {
      throw std::runtime_error(pion_last_error());
    }
  }
  ~Engine() { pion_close(engine_); }
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  Reply run(const std::vector<std::string> &args, uint32_t db = 0) {
    std::vector<const uint8_t *> argv;
    std::vector<size_t> lens;
    for (const auto &a : args) {
      argv.push_back(reinterpret_cast<const uint8_t *>(a.data()));
      lens.push_back(a.size());
    }
    pion_reply *reply = nullptr;
    if (pion_execute(engine_, db, args.size(), argv.data(), lens.data(), &reply) != PION_OK) {
      throw std::runtime_error(pion_last_error());
    }
    return Reply(reply);
  }

 private:
  pion_engine *engine_ = nullptr;
};

// A reply as text: strings as they are, integers in decimal, arrays in brackets.
std::string text(const pion_reply *r) {
  switch (pion_reply_kind(r)) {
    case PION_REPLY_INTEGER:
    case PION_REPLY_BOOL:
      return std::to_string(pion_reply_integer(r));
    case PION_REPLY_NIL:
      return "(nil)";
    case PION_REPLY_ARRAY:
    case PION_REPLY_SET:
    case PION_REPLY_MAP:
    case PION_REPLY_PUSH: {
      std::string out = "[";
      for (size_t i = 0; i < pion_reply_len(r); i++) {
        out += (i ? ", " : "") + text(pion_reply_element(r, i));
      }
      return out + "]";
    }
    default: {
      size_t len = 0;
      const uint8_t *p = pion_reply_bytes(r, &len);
      return p ? std::string(reinterpret_cast<const char *>(p), len) : std::string();
    }
  }
}

}  // namespace

int main() {
  Engine engine;
  engine.run({"SET", "greeting", "hello from Pion"});
  std::printf("%s\n", text(engine.run({"GET", "greeting"}).get()).c_str());
  engine.run({"RPUSH", "turns", "user", "assistant"});
  std::printf("%s\n", text(engine.run({"LRANGE", "turns", "0", "-1"}).get()).c_str());
  std::printf("%s\n", text(engine.run({"INCRBY", "tokens", "128"}).get()).c_str());
  return 0;
}

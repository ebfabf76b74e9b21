#include "runtime/log.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <mutex>
#include <utility>

namespace parir::runtime {
namespace {

std::mutex& sink_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

// Leaked on purpose, see set_log_sink.
LogSink*& current_sink() {
  static LogSink* sink = nullptr;
  return sink;
}

// The level $PARIR_LOGS asks for: "debug" shows everything, "info" (or "1") the info
// messages; anything else, or nothing, none.
int stderr_level() {
  static const int level = [] {
    const char* v = std::getenv("PARIR_LOGS");
    if (!v) return 1000;
    if (!strcasecmp(v, "debug")) return static_cast<int>(LogLevel::Debug);
    if (!strcasecmp(v, "info") || !std::strcmp(v, "1")) return static_cast<int>(LogLevel::Info);
    return 1000;
  }();
  return level;
}

}  // namespace

void set_log_sink(LogSink sink) {
  std::lock_guard<std::mutex> lock(sink_mutex());
  current_sink() = sink ? new LogSink(std::move(sink)) : nullptr;  // the old one is leaked
}

void log(LogLevel level, const std::string& message) {
  LogSink* sink;
  {
    std::lock_guard<std::mutex> lock(sink_mutex());
    sink = current_sink();
  }
  if (sink) {
    (*sink)(level, message);
  } else if (static_cast<int>(level) >= stderr_level()) {
    std::fprintf(stderr, "parir_torch: %s\n", message.c_str());
  }
}

DeferredLog::~DeferredLog() {
  for (const auto& [level, message] : messages_) {
    try {
      log(level, message);
    } catch (...) {
      // Logging never fails the operation it describes.
    }
  }
}

void DeferredLog::add(LogLevel level, std::string message) {
  messages_.emplace_back(level, std::move(message));
}

}  // namespace parir::runtime

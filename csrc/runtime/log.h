// What the runtime does that a user may want to see: NVRTC compilations and their time, disk
// cache hits and misses, stored binaries used, programs and modules dropped.
//
// Messages go to one sink. The Python extension installs one that forwards them to Python's
// `logging` (the "parir_torch" logger, see parir_torch/logs.py). Without one, as in a C++
// program running a saved model, they are printed to stderr when $PARIR_LOGS is "info" or
// "debug", and dropped otherwise. Only compilation and loading log, never a cached launch.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace parir::runtime {

enum class LogLevel { Debug = 10, Info = 20 };  // the values of Python's logging levels

using LogSink = std::function<void(LogLevel, const std::string&)>;

// Replaces the sink; an empty one restores the stderr default. The sink is never destroyed
// (it may hold a Python object, which cannot be released after the interpreter has gone).
void set_log_sink(LogSink sink);

// Sends a message to the sink. Callers must hold no lock that a sink (which may take Python's
// GIL) could wait on: see DeferredLog.
void log(LogLevel level, const std::string& message);

// Messages gathered while a lock is held and sent when this goes out of scope: declared before
// the lock guard, it is destroyed after the lock is released.
class DeferredLog {
 public:
  DeferredLog() = default;
  DeferredLog(const DeferredLog&) = delete;
  DeferredLog& operator=(const DeferredLog&) = delete;
  ~DeferredLog();
  void add(LogLevel level, std::string message);

 private:
  std::vector<std::pair<LogLevel, std::string>> messages_;
};

}  // namespace parir::runtime

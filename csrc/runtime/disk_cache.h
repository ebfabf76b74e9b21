// The on-disk cache of compiled kernels.
//
// Root: $PARIR_CACHE_DIR, else $XDG_CACHE_HOME/parir_torch, else ~/.cache/parir_torch. Entries
// are keyed by a hash of everything that determines the binary (the caller builds the key text:
// source, NVRTC options, target architecture, NVRTC version, project version). Writes go to a
// temporary file that is renamed into place, so readers never see half an entry and concurrent
// writers are harmless. Each entry stores its payload's length and checksum; an entry that is
// truncated or corrupt reads as a miss (and is recompiled and rewritten by the caller).
#pragma once

#include <optional>
#include <string>

namespace parir::runtime {

std::string cache_root();

// The file name of the entry for `key_text` (a hex digest of it).
std::string cache_key(const std::string& key_text);

std::optional<std::string> cache_load(const std::string& key);
// Best effort: a cache that cannot be written (read-only home, full disk) is not an error.
void cache_store(const std::string& key, const std::string& payload);

// Removes every entry under the root. Returns the number of files removed.
int cache_clear();

}  // namespace parir::runtime

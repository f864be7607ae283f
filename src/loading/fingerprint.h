// A model's files in a few bytes of text, to tell apart what computed cached data (the prompt
// cache on disk): each weight file's name, size and a hash of its first and last MiB. Cheap (two
// MiB read per file) and stable across restarts; a file replaced by another gives another text.
#pragma once

#include <string>

namespace ferrum {

// Throws ferrum::Error naming the path when it cannot be read.
std::string model_fingerprint(const std::string& path);

}  // namespace ferrum

// The merge's page path under fuzzing (page_fuzz.cc): one case = byte changes to one bundle's
// SQLite image, merged with a good bundle through parts and splicing; a case that breaks the
// merge's promises aborts the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace merge::fuzz {

enum class Outcome {
  kMerged,   // both bundles merged
  kSkipped,  // merged, the changed bundle skipped as bad
  kRefused,  // the merge failed (and wrote nothing)
};

// Runs one case: `data` holds up to 64 changes of 5 bytes each (a little-endian offset into
// the image, modulo its size, and a byte XORed into it). Aborts on a broken promise.
Outcome RunCase(const uint8_t* data, size_t size);

// The unchanged SQLite image of the bundle the cases change (node1 of a small synthetic job).
std::string SeedImage();

}  // namespace merge::fuzz

// The ragged fields of one leaf, found by listing it: the one implementation behind
// `tessera.ragged.Leaf.fields()` / `Leaf.resolve()` for local directories and buckets alike.
#pragma once

#include <string>
#include <vector>

#include "tessera/io/store.hpp"

namespace tessera::ragged {

// Array paths ("6/h_tdigest") of the arrays of the leaf's groups whose zarr.json carries a
// `ragged` attribute block, without the companions those blocks bind (`locations`, `times`).
// Sorted by group, then array. A zarr.json that is missing or is not valid JSON is skipped.
std::vector<std::string> payload_fields(const io::Store& leaf);

// The array path of `field`: itself when it contains '/', else "<group>/<field>" for the one
// numeric group holding an array of that name. UsageError naming the leaf when none or several do.
std::string resolve_field(const io::Store& leaf, const std::string& field);

}  // namespace tessera::ragged

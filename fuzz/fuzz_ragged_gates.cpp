// Fuzz target for the ragged metadata path: the input is stored in turn as the payload array's
// `zarr.json` (the gates of spec §2.2–§2.4), the location sibling's `zarr.json` (bindings and
// declarations) and the leaf root `zarr.json` (commit stamp, coverage envelope, exact
// occupancy) of a 16-cell in-memory leaf whose payload holds real digests; every reader then runs.
// A clean tessera::Error is an accepted outcome.
#define TESSERA_FUZZ_NO_ENTRY_POINT
#include "fuzz_ragged_cell.cpp"
#undef TESSERA_FUZZ_NO_ENTRY_POINT

namespace tessera::fuzzing {

inline void exercise_ragged_gates(std::span<const std::byte> bytes) {
  io::MemoryStore& store = ragged_leaf_template();
  static const bool filled = [&] {
    // Cells 0, 2, 5, 15 hold digests; their location words are the cells' own words.
    const std::uint64_t shard = ragged::morton::parse_decimal("11213");
    std::vector<std::vector<std::byte>> digests(16), locations(16);
    for (const std::uint64_t cell : {0u, 2u, 5u, 15u}) {
      for (std::uint64_t r = 0; r <= cell % 4; ++r) {
        const float row[2] = {20.0f + static_cast<float>(cell) + 0.5f * static_cast<float>(r), 1.0f};
        const auto* p = reinterpret_cast<const std::byte*>(row);
        digests[cell].insert(digests[cell].end(), p, p + 8);
        const std::uint64_t w = ragged::morton::descendant(shard, 2, cell);
        const auto* q = reinterpret_cast<const std::byte*>(&w);
        locations[cell].insert(locations[cell].end(), q, q + 8);
      }
    }
    const auto write = [&](const std::string& path, const std::vector<std::vector<std::byte>>& cells) {
      std::vector<std::span<const std::byte>> spans(cells.begin(), cells.end());
      zarr::ArrayWriter(store, path, zarr::Array::open(store, path).meta()).write_vlen_object({0}, spans);
    };
    write("6/h_tdigest", digests);
    write("6/h_tdigest_locations", locations);
    return true;
  }();
  (void)filled;
  for (const std::string key : {"6/h_tdigest/zarr.json", "6/h_tdigest_locations/zarr.json", "zarr.json"}) {
    const auto original = *store.get(key);
    store.put(key, bytes);
    exercise_ragged_reads(store, "6/h_tdigest");
    store.put(key, original);
  }
}

}  // namespace tessera::fuzzing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_ragged_gates({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}

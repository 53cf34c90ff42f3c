// One block of memory for arrays read at scattered places (a tile's gene index): from 1 MiB on,
// it starts on a 2 MiB boundary, is rounded up to whole 2 MiB, and the kernel is asked for huge
// pages there (madvise; transparent huge pages are commonly in that mode). A batch of a few genes
// touches a few cache lines in each of thousands of 4 KiB pages of the indexes; after a pass that
// streamed other memory (a batch of whole rows), each of those was a TLB miss, and the first gene
// batch after one took about twice as long as the next.
#pragma once

#include <cstddef>

namespace tessera::cells::detail {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;
  ~HugeBuffer() { reset(); }

  // Replaces the block by one of at least `bytes` (uninitialized); std::bad_alloc when none.
  void allocate(std::size_t bytes);
  void reset() noexcept;
  std::byte* data() const noexcept { return data_; }
  // Bytes held (with the rounding), for memory budgets.
  std::size_t capacity() const noexcept { return capacity_; }

  // The size from which blocks are rounded to huge pages, and the huge page.
  static constexpr std::size_t kHugeFrom = std::size_t{1} << 20;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

 private:
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
};

}  // namespace tessera::cells::detail

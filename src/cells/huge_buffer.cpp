#include "huge_buffer.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <utility>

namespace tessera::cells::detail {

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), capacity_(std::exchange(other.capacity_, 0)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

void HugeBuffer::allocate(std::size_t bytes) {
  reset();
  if (bytes == 0) return;
  const bool huge = bytes >= kHugeFrom;
  const std::size_t size = huge ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  void* p = nullptr;
  if (posix_memalign(&p, huge ? kHugePage : alignof(std::max_align_t), size) != 0) throw std::bad_alloc();
#if defined(MADV_HUGEPAGE)
  if (huge) madvise(p, size, MADV_HUGEPAGE);  // a hint: if refused, the pages stay small
#endif
  data_ = static_cast<std::byte*>(p);
  capacity_ = size;
}

void HugeBuffer::reset() noexcept {
  std::free(data_);
  data_ = nullptr;
  capacity_ = 0;
}

}  // namespace tessera::cells::detail

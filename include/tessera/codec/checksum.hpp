// CRC-32 (IEEE, as zlib/gzip), CRC-32C (Castagnoli, as iSCSI/Zarr crc32c) and SHA-256.
// The CRCs run on ISA-L's SIMD kernels; SHA-256 on OpenSSL's EVP.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace tessera::codec {

// Standard CRC-32: crc32("123456789") == 0xcbf43926. `crc` continues a previous value.
std::uint32_t crc32(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;
// CRC-32C: crc32c("123456789") == 0xe3069283. `crc` continues a previous value.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

// Thread-safety: one thread at a time per hasher.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(std::span<const std::byte> data);
  std::array<std::uint8_t, 32> finish();
  std::string finish_hex();

 private:
  void* ctx_;  // EVP_MD_CTX
};

std::string sha256_hex(std::span<const std::byte> data);

// Views any contiguous bytes (std::string, char arrays) as std::byte spans.
inline std::span<const std::byte> as_bytes(std::string_view s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

}  // namespace tessera::codec

#include "tessera/codec/checksum.hpp"

#include <isa-l/crc.h>
#include <openssl/evp.h>

#include "tessera/core/error.hpp"

namespace tessera::codec {

std::uint32_t crc32(std::span<const std::byte> data, std::uint32_t crc) noexcept {
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) noexcept {
  // ISA-L's crc32_iscsi takes and returns the un-inverted register.
  return ~crc32_iscsi(const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(data.data())),
                      static_cast<int>(data.size()), ~crc);
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) != 1)
    throw Error("sha256: cannot initialise OpenSSL digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(std::span<const std::byte> data) {
  if (EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data.data(), data.size()) != 1)
    throw Error("sha256: digest update failed");
}

std::array<std::uint8_t, 32> Sha256::finish() {
  std::array<std::uint8_t, 32> out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), out.data(), &len) != 1 || len != 32)
    throw Error("sha256: digest final failed");
  return out;
}

std::string Sha256::finish_hex() {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (std::uint8_t b : finish()) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

std::string sha256_hex(std::span<const std::byte> data) {
  Sha256 h;
  h.update(data);
  return h.finish_hex();
}

}  // namespace tessera::codec

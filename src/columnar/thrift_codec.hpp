// Thrift compact-protocol (de)serialization of the generated parquet.thrift structs over memory,
// with every string and container size limited by the bytes that remain, so a hostile footer or
// page header cannot make the decoder allocate more than a small multiple of its own size.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <thrift/TConfiguration.h>
#include <thrift/Thrift.h>
#include <thrift/protocol/TCompactProtocol.h>
#include <thrift/transport/TBufferTransports.h>

#include "parquet_types.h"
#include "tessera/core/error.hpp"

namespace tessera::columnar::detail {

// Decodes one `T` from the start of `bytes`; returns the number of bytes it occupied. Throws
// FormatError (`file`, `structure`, the Thrift message) when the bytes do not decode.
template <typename T>
std::size_t thrift_decode(std::span<const std::byte> bytes, T& out, const std::string& file,
                          const std::string& structure) {
  using apache::thrift::transport::TMemoryBuffer;
  if (bytes.empty()) throw FormatError("is empty (a Thrift struct takes at least one byte)", file, structure);
  const auto size = static_cast<std::uint32_t>(std::min<std::size_t>(bytes.size(), INT32_MAX));
  try {
    auto config = std::make_shared<apache::thrift::TConfiguration>(static_cast<int>(std::max<std::uint32_t>(size, 1)));
    auto buffer = std::make_shared<TMemoryBuffer>(reinterpret_cast<std::uint8_t*>(const_cast<std::byte*>(bytes.data())),
                                                  size, TMemoryBuffer::OBSERVE, config);
    apache::thrift::protocol::TCompactProtocolT<TMemoryBuffer> protocol(buffer, static_cast<std::int32_t>(size),
                                                                        static_cast<std::int32_t>(size));
    out.read(&protocol);
    return size - buffer->available_read();
  } catch (const apache::thrift::TException& e) {
    throw FormatError(std::string("does not decode as Thrift compact protocol: ") + e.what(), file, structure);
  } catch (const std::length_error&) {
    throw FormatError("does not decode as Thrift compact protocol: size out of range", file, structure);
  }
}

// Appends the compact-protocol encoding of `value` to `out`.
template <typename T>
void thrift_encode(const T& value, std::vector<std::byte>& out) {
  using apache::thrift::transport::TMemoryBuffer;
  auto buffer = std::make_shared<TMemoryBuffer>();
  apache::thrift::protocol::TCompactProtocolT<TMemoryBuffer> protocol(buffer);
  value.write(&protocol);
  std::uint8_t* data = nullptr;
  std::uint32_t size = 0;
  buffer->getBuffer(&data, &size);
  const auto* p = reinterpret_cast<const std::byte*>(data);
  out.insert(out.end(), p, p + size);
}

}  // namespace tessera::columnar::detail

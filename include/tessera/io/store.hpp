// Key → object storage for directory formats (Zarr stores, deltacells datasets, hive leaves).
// Keys are '/'-separated relative paths. Reads return ByteSources, so ranged reads work the same
// on a local directory and (later) on an HTTP prefix; writes are atomic per object.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tessera/io/byte_source.hpp"

namespace tessera::io {

class Store {
 public:
  virtual ~Store() = default;
  // nullptr when the key does not exist.
  virtual std::unique_ptr<ByteSource> open(const std::string& key) const = 0;
  virtual bool exists(const std::string& key) const = 0;
  // Keys directly or transitively under `prefix` (empty = all), sorted.
  virtual std::vector<std::string> list(const std::string& prefix) const = 0;
  virtual void put(const std::string& key, std::span<const std::byte> bytes) = 0;
  virtual void erase(const std::string& key) = 0;
  virtual const std::string& name() const = 0;
};

// A local directory. Keys must not escape the root ("..", absolute paths are refused).
class DirectoryStore final : public Store {
 public:
  explicit DirectoryStore(std::string root, OpenMode mode = OpenMode::Mmap);
  std::unique_ptr<ByteSource> open(const std::string& key) const override;
  bool exists(const std::string& key) const override;
  std::vector<std::string> list(const std::string& prefix) const override;
  void put(const std::string& key, std::span<const std::byte> bytes) override;
  void erase(const std::string& key) override;
  const std::string& name() const override { return root_; }
  std::string path_of(const std::string& key) const;

 private:
  std::string root_;
  OpenMode mode_;
};

}  // namespace tessera::io

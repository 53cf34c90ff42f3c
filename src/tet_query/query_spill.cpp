// Spill files of the query engine (spec tet.md §4.6): user paths checked against the allowed
// roots, temporary files in the cache root, shared read-write mappings (file-backed memory, so
// spilled data never counts against the anonymous-memory budget) and the `mmap_spill` export of
// a whole selection in logical order.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "query_internal.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace tessera::tet::qe {
namespace {

namespace fs = std::filesystem;

bool under(const fs::path& p, const fs::path& root) {
  auto pi = p.begin();
  for (auto ri = root.begin(); ri != root.end(); ++ri, ++pi) {
    if (ri->empty()) continue;  // trailing separator
    if (pi == p.end() || *pi != *ri) return false;
  }
  return true;
}

std::string io_text(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

}  // namespace

MappedFile::MappedFile(const std::string& path, std::uint64_t bytes, bool keep)
    : path_(path), size_(bytes), keep_(keep) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError(io_text("cannot create spill file", path), path);
  // The blocks are reserved before the file is mapped: a store through a shared mapping to a page
  // the filesystem cannot back raises SIGBUS (a full disk killed the process, and a Python
  // interpreter with it), while a reservation that does not fit fails here, as an IoError.
  const int reserve = bytes > 0 ? ::posix_fallocate(fd_, 0, static_cast<off_t>(checked_size(bytes))) : 0;
  if (reserve != 0) {
    const std::string text =
        "cannot reserve " + std::to_string(bytes) + " bytes for spill file " + path + ": " + std::strerror(reserve);
    ::close(fd_);
    ::unlink(path.c_str());
    throw IoError(text, path);
  }
  if (bytes > 0) {
    void* p = ::mmap(nullptr, checked_size(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) {
      const std::string text = io_text("cannot map spill file", path);
      ::close(fd_);
      ::unlink(path.c_str());
      throw IoError(text, path);
    }
    data_ = static_cast<std::byte*>(p);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  if (!keep_) ::unlink(path_.c_str());
}

void MappedFile::sync() {
  if (data_ && ::msync(data_, size_, MS_SYNC) != 0) throw IoError(io_text("cannot write spill file", path_), path_);
}

SpillOutput::SpillOutput(const std::string& path, std::uint64_t bytes) : sink_(path) {
  if (sink_.streaming())
    throw UnsupportedError(path + ": a spill output must be a regular file (it is written through a memory map)", path);
  map_ = std::make_unique<MappedFile>(sink_.temp_path(), bytes, /*keep=*/true);
}

void SpillOutput::commit() {
  map_->sync();
  map_.reset();
  sink_.commit();
}

std::string resolve_user_path(const std::string& user_path, const ExecContext& ctx) {
  fs::path p(user_path);
  if (p.is_relative()) p = fs::path(ctx.relative_base) / p;
  p = p.lexically_normal();
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  const fs::path parent = fs::weakly_canonical(p.parent_path(), ec);
  const fs::path resolved = (ec ? p.parent_path() : parent) / p.filename();
  for (const auto& root : ctx.allowed_roots)
    if (under(resolved, fs::path(root))) return resolved.string();
  fail("spill path " + user_path +
       " is not under an allowed root (.tet directory, platform cache, or --spill-allow); resolved to " +
       resolved.string());
}

std::string temp_spill_path(const ExecContext& ctx, const std::string& prefix, const std::string& ext) {
  const auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  static std::atomic<unsigned> serial{0};
  const std::string name = prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(nanos + serial++) + ext;
  std::vector<std::string> candidates = tessera::tet::cache_roots();
  for (const auto& r : ctx.allowed_roots) candidates.push_back(r);
  for (const auto& dir : candidates) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (!ec && ::access(dir.c_str(), W_OK) == 0) return (fs::path(dir) / name).string();
  }
  throw IoError("no writable spill directory (platform cache or .tet directory)");
}

ExecResult run_spill_export(const Plan& plan, const std::string& user_path, const ExecContext& ctx) {
  ExecResult res;
  res.memory_strategy = "mmap_spill";
  const std::string path = resolve_user_path(user_path, ctx);
  SpillOutput out(path, plan.logical_bytes);
  const std::size_t es = plan.ds->element_size();
  const Reduction red = make_reduction(plan.logical_shape, {});
  const CellFrame frame = global_frame(red);
  for_chunks(plan.chunks.size(), plan.chunks.size() > 1, ctx.threads, plan.read_ahead != nullptr, [&](std::size_t k) {
    thread_local std::vector<std::byte> scratch;
    const TileWalk w = tile_walk(plan, k);
    const std::byte* tile = tile_bytes(plan, k, scratch);
    for_each_run(plan, w, tile, red, frame, [&](const Run& r) {
      std::byte* dst = out.data() + r.logical * es;
      if (r.stride == 1) {
        std::memcpy(dst, r.data, r.n * es);
      } else {
        for (std::uint64_t j = 0; j < r.n; ++j) std::memcpy(dst + j * es, r.data + j * r.stride * es, es);
      }
    });
  });
  // The preview is read back from the spilled bytes, in logical order.
  res.preview.init(ctx.preview, plan.count, es);
  // memcpy needs valid pointers even for zero bytes, and an empty preview has none.
  if (!res.preview.bytes.empty()) std::memcpy(res.preview.bytes.data(), out.data(), res.preview.bytes.size());
  out.commit();
  res.fields.emplace_back("spill_f32_path", path);
  res.fields.emplace_back("spill_f32_bytes", plan.logical_bytes);
  return res;
}

}  // namespace tessera::tet::qe

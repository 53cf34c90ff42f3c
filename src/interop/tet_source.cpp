// `.tet` files as a convert input, to rechunk or recompress them or to keep some of their
// datasets: every dataset is an array of its own element type and chunking, with its footer
// metadata, and the file's history rows are kept before the new convert row. Reads go through
// TetFile::read_box, so every codec the reader knows is accepted and every chunk is checked as
// it is decoded.
#include "tessera/interop/source.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::interop {
namespace {

class TetSource final : public ArraySource {
 public:
  explicit TetSource(std::string path) : path_(std::move(path)), file_(tet::TetFile::open(path_)) {
    for (const tet::Dataset& ds : file_.datasets()) {
      SourceArray a;
      a.name = ds.name;
      a.stored = ds.dtype;
      a.shape = ds.shape;
      a.chunk_shape = ds.chunk_shape;
      if (const tet::DatasetMetadata* md = file_.metadata_of(ds.name)) a.metadata = *md;
      if (const tet::FooterExtension* ext = extension())
        if (auto it = ext->datasets.find(ds.name); it != ext->datasets.end()) a.extension = it->second;
      arrays_.push_back(std::move(a));
    }
  }

  const std::string& path() const override { return path_; }
  const std::vector<SourceArray>& arrays() const override { return arrays_; }
  std::vector<tet::HistoryRow> history() const override {
    const auto& footer = file_.layout().footer;
    return footer ? footer->history : std::vector<tet::HistoryRow>{};
  }

  tet::TypedAttributes global_attributes() const override {
    const tet::FooterExtension* ext = extension();
    return ext ? ext->attrs : tet::TypedAttributes{};
  }

  void read(std::size_t index, std::span<const std::uint64_t> origin, std::span<const std::uint64_t> extent,
            std::span<std::byte> out) const override {
    const tet::Dataset& ds = file_.datasets()[index];
    tet::Box box;
    for (std::size_t d = 0; d < origin.size(); ++d) box.push_back({origin[d], origin[d] + extent[d], 1});
    file_.read_box(ds, box, out);
  }

 private:
  const tet::FooterExtension* extension() const {
    const auto& footer = file_.layout().footer;
    return footer && footer->extension ? &*footer->extension : nullptr;
  }

  std::string path_;
  tet::TetFile file_;
  std::vector<SourceArray> arrays_;
};

}  // namespace

std::unique_ptr<ArraySource> open_tet_source(const std::string& path) { return std::make_unique<TetSource>(path); }

}  // namespace tessera::interop

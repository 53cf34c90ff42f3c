// Footer metadata imported on convert: number text, attribute selection and limits.
#include "import_metadata.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "tessera/core/text.hpp"
#include "tessera/tet/footer.hpp"

namespace tessera::interop::detail {
namespace {

constexpr std::array<std::string_view, 8> kPreferredAttrs = {"units", "long_name",    "standard_name", "description",
                                                             "title", "scale_factor", "add_offset",    "_FillValue"};

}  // namespace

std::string attribute_number_text(double v) {
  const auto f = static_cast<float>(v);
  if (std::isfinite(v) && static_cast<double>(f) == v) return decimal_text(f);
  return decimal_text(v);
}

bool valid_footer_string(std::string_view s) noexcept {
  return !s.empty() && s.size() <= tet::MetadataLimits::kStringBytes && is_valid_utf8(s);
}

std::map<std::string, std::string> collect_attrs(
    const std::vector<std::string>& names, const std::function<std::optional<std::string>(const std::string&)>& read) {
  std::map<std::string, std::string> out;
  auto take = [&](const std::string& name) {
    if (!valid_footer_string(name)) return;
    auto value = read(name);
    if (value && valid_footer_string(*value)) out.emplace(name, std::move(*value));
  };
  for (const std::string_view key : kPreferredAttrs)
    if (std::find(names.begin(), names.end(), key) != names.end()) take(std::string(key));
  for (const std::string& name : names) {
    if (out.size() >= tet::MetadataLimits::kAttrsPerDataset) break;
    if (std::find(kPreferredAttrs.begin(), kPreferredAttrs.end(), name) != kPreferredAttrs.end()) continue;
    take(name);
  }
  return out;
}

std::optional<std::vector<std::string>> limited_dim_names(std::vector<std::string> names) {
  if (names.empty() || names.size() > tet::MetadataLimits::kDimNames) return std::nullopt;
  for (const auto& n : names)
    if (!valid_footer_string(n)) return std::nullopt;
  return names;
}

bool label_count_ok(std::uint64_t n) noexcept { return n >= 1 && n <= tet::MetadataLimits::kLabelsPerAxis; }

std::optional<std::vector<std::string>> labels_of(DType dtype, std::span<const std::byte> values) {
  const std::size_t size = dtype_size(dtype);
  if (values.empty() || values.size() % size != 0) return std::nullopt;
  std::vector<std::string> labels;
  for (std::size_t at = 0; at < values.size(); at += size) {
    std::string label = element_text(dtype, values.data() + at);
    if (!valid_footer_string(label)) return std::nullopt;
    labels.push_back(std::move(label));
  }
  return labels;
}

}  // namespace tessera::interop::detail

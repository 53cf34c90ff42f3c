#include "row_classes.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/ragged/leaf_writer.hpp"

namespace tessera::ragged::build::detail {
namespace {

constexpr int kSurfaceBit = 32;    // + surface index
constexpr int kStrongestBit = 37;  // + 0, 1, 2 for a strongest confidence of 2, 3, 4

}  // namespace

RowClasses::RowClasses(const LeafSpec& leaf) {
  const auto column_index = [&](const std::string& name) {
    const auto it = std::find(columns_.begin(), columns_.end(), name);
    if (it != columns_.end()) return static_cast<std::size_t>(it - columns_.begin());
    columns_.push_back(name);
    return columns_.size() - 1;
  };
  where_.resize(leaf.fields.size());
  std::size_t strata = 0;
  for (std::size_t f = 0; f < leaf.fields.size(); ++f) {
    const FieldSpec& field = leaf.fields[f];
    if (field.where.empty()) continue;
    Bound bound{RowPredicate::parse(field.where, "field '" + field.name + "' where"), {}};
    for (const std::string& name : bound.predicate.columns()) bound.columns.push_back(column_index(name));
    where_[f] = std::move(bound);
    ++strata;
  }
  if (leaf.composition) {
    for (const std::string& name : leaf.composition->surfaces) surfaces_.push_back(column_index(name));
    threshold_ = static_cast<double>(leaf.composition->threshold);
  }
  any_ = strata > 0 || leaf.composition.has_value();
  // Every field owns one of the word's low bits once rows carry words at all.
  if (any_ && leaf.fields.size() > kMaxStrata)
    throw UsageError("a leaf with strata or a composition array holds at most " + std::to_string(kMaxStrata) +
                     " fields");
}

void RowClasses::check(const PointBlock& block, const std::string& input) const {
  if (block.size() == 0) return;  // a block of dropped-row counts only
  for (const std::string& name : columns_) {
    const auto it = block.extra.find(name);
    if (it == block.extra.end())
      throw UsageError(input + ": no column '" + name + "' (a field's where or the composition reads it)");
    if (it->second.size() != block.size())
      throw FormatError(input + ": column '" + name + "' holds " + std::to_string(it->second.size()) + " values for " +
                            std::to_string(block.size()) + " rows",
                        input, name);
  }
}

void RowClasses::classify(const PointBlock& block, std::size_t begin, std::size_t end,
                          std::span<std::uint64_t> out) const {
  std::vector<const double*> all(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) all[c] = block.extra.at(columns_[c]).data();
  std::vector<std::vector<const double*>> bound(where_.size());
  for (std::size_t f = 0; f < where_.size(); ++f)
    if (where_[f])
      for (const std::size_t c : where_[f]->columns) bound[f].push_back(all[c]);
  for (std::size_t i = begin; i < end; ++i) {
    std::uint64_t word = 0;
    for (std::size_t f = 0; f < where_.size(); ++f)
      if (!where_[f] || where_[f]->predicate(bound[f], i)) word |= std::uint64_t{1} << f;
    if (!surfaces_.empty()) {
      double strongest = -std::numeric_limits<double>::infinity();
      for (std::size_t s = 0; s < surfaces_.size(); ++s) {
        const double conf = all[surfaces_[s]][i];
        if (conf >= threshold_) word |= std::uint64_t{1} << (kSurfaceBit + s);
        strongest = std::max(strongest, conf);
      }
      for (int level = 2; level <= 4; ++level)
        if (strongest == level) word |= std::uint64_t{1} << (kStrongestBit + level - 2);
    }
    out[i] = word;
  }
}

std::uint64_t cell_composition(std::span<const std::uint64_t> words, std::span<const double> weights, std::size_t of) {
  std::array<double, 8> counts{};
  double n = 0;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (!RowClasses::in_field(words[i], of)) continue;
    const double w = weights.empty() ? 1.0 : weights[i];
    n += w;
    for (int lane = 0; lane < 8; ++lane)
      if ((words[i] >> (kSurfaceBit + lane)) & 1) counts[static_cast<std::size_t>(lane)] += w;
  }
  return composition_word(counts, n);
}

}  // namespace tessera::ragged::build::detail

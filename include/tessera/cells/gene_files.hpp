// The two per-gene objects of a dataset (spec deltacells.md §5): `gene_order.npy` (an int32
// permutation, written byte-identical to numpy's np.save; read with N1–N2) and `var_names.txt`
// (one UTF-8 name per line in stored column order; read with N4–N5).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/byte_source.hpp"

namespace tessera::cells {

// The bytes numpy's np.save writes for `order` as an int32 array. Throws UsageError when the
// values are not a permutation of 0..n-1.
std::vector<std::byte> encode_gene_order(std::span<const std::int32_t> order);
// Reads and checks gene_order.npy: N1 (npy header, `<i4` or `<i8`, shape (n_genes,)) and N2
// (a permutation of 0..n_genes-1). `object` names it in errors.
std::vector<std::int32_t> decode_gene_order(const io::ByteSource& src, std::uint64_t n_genes,
                                            std::string_view object = "gene_order.npy");

// The text of var_names.txt: each name followed by `\n`. Throws UsageError for a name holding a
// character Python's str.splitlines treats as a line boundary (or invalid UTF-8).
std::string encode_var_names(std::span<const std::string> names);
// Splits var_names.txt on `\n` (N4: valid UTF-8; a final newline ends the last line) and checks
// there are exactly n_genes names (N5).
std::vector<std::string> decode_var_names(std::string_view text, std::uint64_t n_genes,
                                          std::string_view object = "var_names.txt");
// True when Python's splitlines() would split `text` differently from the `\n` split (the
// reference would misread the file; verify warns).
bool splitlines_differs(std::string_view text);

// Names made unique the AnnData way (`var_names_make_unique`): the first occurrence unchanged,
// later ones suffixed `-1`, `-2`, … skipping names already present (spec §7.5).
std::vector<std::string> make_names_unique(const std::vector<std::string>& names);

}  // namespace tessera::cells

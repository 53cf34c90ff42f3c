#include "tessera/core/dtype.hpp"

#include <array>

namespace tessera {
namespace {

constexpr std::array<DTypeInfo, 12> kDTypes{{
    {DType::Bool, "bool", 1, DTypeKind::Bool, "|b1", "bool"},
    {DType::U8, "u8", 1, DTypeKind::Unsigned, "|u1", "uint8"},
    {DType::U16, "u16", 2, DTypeKind::Unsigned, "<u2", "uint16"},
    {DType::U32, "u32", 4, DTypeKind::Unsigned, "<u4", "uint32"},
    {DType::U64, "u64", 8, DTypeKind::Unsigned, "<u8", "uint64"},
    {DType::I8, "i8", 1, DTypeKind::Signed, "|i1", "int8"},
    {DType::I16, "i16", 2, DTypeKind::Signed, "<i2", "int16"},
    {DType::I32, "i32", 4, DTypeKind::Signed, "<i4", "int32"},
    {DType::I64, "i64", 8, DTypeKind::Signed, "<i8", "int64"},
    {DType::F16, "f16", 2, DTypeKind::Float, "<f2", "float16"},
    {DType::F32, "f32", 4, DTypeKind::Float, "<f4", "float32"},
    {DType::F64, "f64", 8, DTypeKind::Float, "<f8", "float64"},
}};

template <typename Pred>
std::optional<DType> find_dtype(Pred pred) noexcept {
  for (const auto& info : kDTypes)
    if (pred(info)) return info.dtype;
  return std::nullopt;
}

}  // namespace

const DTypeInfo& dtype_info(DType t) noexcept { return kDTypes[static_cast<std::size_t>(t)]; }

std::optional<DType> dtype_from_name(std::string_view name) noexcept {
  return find_dtype([&](const DTypeInfo& i) { return i.name == name; });
}
std::optional<DType> dtype_from_numpy_descr(std::string_view descr) noexcept {
  return find_dtype([&](const DTypeInfo& i) { return i.numpy_descr == descr; });
}
std::optional<DType> dtype_from_zarr_name(std::string_view name) noexcept {
  return find_dtype([&](const DTypeInfo& i) { return i.zarr_name == name; });
}

}  // namespace tessera

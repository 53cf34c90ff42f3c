// Element types shared by every format. Each format maps its own on-disk tags or names onto
// `DType` (e.g. `.tet` tags 1..10 in tet/dtype_tag, Zarr v3 `data_type` names in zarr/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera {

enum class DType : std::uint8_t { Bool, U8, U16, U32, U64, I8, I16, I32, I64, F16, F32, F64 };

enum class DTypeKind : std::uint8_t { Bool, Unsigned, Signed, Float };

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // short tessera name: "f32", "u8", "bool"
  std::size_t size;       // bytes per element
  DTypeKind kind;
  std::string_view numpy_descr;  // NumPy .npy descriptor: "<f4", "|u1"
  std::string_view zarr_name;    // Zarr v3 data_type: "float32", "uint8", "bool"
};

const DTypeInfo& dtype_info(DType t) noexcept;
std::optional<DType> dtype_from_name(std::string_view name) noexcept;
std::optional<DType> dtype_from_numpy_descr(std::string_view descr) noexcept;
std::optional<DType> dtype_from_zarr_name(std::string_view name) noexcept;

inline std::size_t dtype_size(DType t) noexcept { return dtype_info(t).size; }
inline bool is_float(DType t) noexcept { return dtype_info(t).kind == DTypeKind::Float; }

// Calls `f(T{})` with the C++ element type of `t` (f16 as its uint16_t bit pattern, bool as
// uint8_t), so a kernel is written once for every dtype.
template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(std::uint8_t{});
    case DType::U8: return f(std::uint8_t{});
    case DType::U16: return f(std::uint16_t{});
    case DType::U32: return f(std::uint32_t{});
    case DType::U64: return f(std::uint64_t{});
    case DType::I8: return f(std::int8_t{});
    case DType::I16: return f(std::int16_t{});
    case DType::I32: return f(std::int32_t{});
    case DType::I64: return f(std::int64_t{});
    case DType::F16: return f(std::uint16_t{});
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
  }
  return f(std::uint8_t{});
}

}  // namespace tessera

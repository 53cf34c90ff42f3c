// Latitude/longitude → order-29 point words (spec §6.4). Compiled with -ffp-contract=off: the
// authalic series must give the spec's check values exactly.
#include "tessera/ragged/geocode.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "tessera/core/error.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::ragged::geo {
namespace {

constexpr double kDegToRad = std::numbers::pi / 180.0;
constexpr double kRadToDeg = 180.0 / std::numbers::pi;

// The series coefficients F_1..F_5 from WGS84's e² = f(2 − f), with e⁴…e¹⁰ as powers of e² and
// each coefficient summed in the order the spec writes it.
struct AuthalicSeries {
  double f[5];
  AuthalicSeries() {
    const double flattening = 1.0 / 298.257223563;
    const double e2 = flattening * (2.0 - flattening);
    const double e4 = std::pow(e2, 2), e6 = std::pow(e2, 3), e8 = std::pow(e2, 4), e10 = std::pow(e2, 5);
    f[0] = -(1.0 / 3.0) * e2 - (31.0 / 180.0) * e4 - (59.0 / 560.0) * e6 - (42811.0 / 604800.0) * e8 -
           (605399.0 / 11975040.0) * e10;
    f[1] = (17.0 / 360.0) * e4 + (61.0 / 1260.0) * e6 + (76969.0 / 1814400.0) * e8 + (215431.0 / 5987520.0) * e10;
    f[2] = -(383.0 / 45360.0) * e6 - (3347.0 / 259200.0) * e8 - (1751791.0 / 119750400.0) * e10;
    f[3] = (6007.0 / 3628800.0) * e8 + (201293.0 / 59875200.0) * e10;
    f[4] = -(5839.0 / 17107200.0) * e10;
  }
};

const AuthalicSeries& series() {
  static const AuthalicSeries s;
  return s;
}

constexpr std::int64_t kNside = std::int64_t{1} << 29;

}  // namespace

Latitude parse_latitude(std::string_view name) {
  if (name == "authalic") return Latitude::Authalic;
  if (name == "geodetic-spherical") return Latitude::GeodeticSpherical;
  throw UsageError("latitude convention '" + std::string(name) + "': expected authalic or geodetic-spherical");
}

std::string_view dggs_token(Latitude c) noexcept {
  return c == Latitude::Authalic ? "authalic-wgs84" : "geodetic-spherical";
}
std::string_view name_of(Latitude c) noexcept { return c == Latitude::Authalic ? "authalic" : "geodetic-spherical"; }

double authalic_forward_deg(double lat_deg) noexcept {
  const double phi = lat_deg * kDegToRad;
  const double* f = series().f;
  // S_1 = sin 2φ, S_{j+1} = 2cos(2φ)·S_j − S_{j−1}: one sin and one cos for all five terms.
  const double two_cos = 2.0 * std::cos(2.0 * phi);
  double s_prev = 0.0, s = std::sin(2.0 * phi);
  double acc = f[0] * s;
  for (int j = 1; j < 5; ++j) {
    const double next = two_cos * s - s_prev;
    s_prev = s;
    s = next;
    acc = acc + f[j] * s;
  }
  const double beta = acc + phi;
  return std::clamp(beta * kRadToDeg, -90.0, 90.0);
}

double authalic_inverse_deg(double beta_deg) noexcept {
  if (std::abs(beta_deg) >= 90.0) return std::clamp(beta_deg, -90.0, 90.0);
  // forward(φ) − φ is a small smooth correction (< 0.2°) whose slope is far below 1, so
  // φ ← β − (forward(φ) − φ) contracts; a few steps reach the double nearest the inverse.
  double phi = beta_deg;
  for (int i = 0; i < 8; ++i) {
    const double next = beta_deg - (authalic_forward_deg(phi) - phi);
    if (next == phi) break;
    phi = next;
  }
  return std::clamp(phi, -90.0, 90.0);
}

std::uint64_t nest29(double lat_rad, double lon_rad) noexcept {
  const double z = std::sin(lat_rad);
  double lon = std::fmod(lon_rad, 2.0 * std::numbers::pi);
  if (lon < 0) lon += 2.0 * std::numbers::pi;
  const double tt = lon / (std::numbers::pi / 2.0);  // [0, 4]
  const double n = static_cast<double>(kNside);
  std::int64_t face = 0, ix = 0, iy = 0;
  if (std::abs(z) <= 2.0 / 3.0) {
    // Equatorial belt: the two diagonal coordinates of the base-cell grid.
    const double a = n * (0.5 + tt), b = 0.75 * n * z;
    const auto jp = static_cast<std::int64_t>(std::floor(a - b)), jm = static_cast<std::int64_t>(std::floor(a + b));
    const std::int64_t fp = jp / kNside, fm = jm / kNside;
    face = fp == fm ? (fp % 4) + 4 : (fp < fm ? fp % 4 : (fm % 4) + 8);
    ix = jm % kNside;
    iy = kNside - 1 - (jp % kNside);
  } else {
    // Polar caps; t = N·√(3(1 − |z|)) written without the cancellation of 1 − |z|.
    const std::int64_t f = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(tt)), 3);
    const double tp = tt - static_cast<double>(f);
    const double t = n * std::sqrt(6.0) * std::cos(std::numbers::pi / 4.0 + std::abs(lat_rad) / 2.0);
    const std::int64_t jp = std::min(static_cast<std::int64_t>(std::floor(tp * t)), kNside - 1);
    const std::int64_t jm = std::min(static_cast<std::int64_t>(std::floor((1.0 - tp) * t)), kNside - 1);
    if (z > 0) {
      face = f;
      ix = kNside - 1 - jm;
      iy = kNside - 1 - jp;
    } else {
      face = f + 8;
      ix = jp;
      iy = jm;
    }
  }
  return (static_cast<std::uint64_t>(face) << 58) |
         morton::xy_to_rank(static_cast<std::uint32_t>(ix), static_cast<std::uint32_t>(iy));
}

CoordinateFault check_coordinates(double lat_deg, double lon_deg) noexcept {
  if (!std::isfinite(lat_deg) || !std::isfinite(lon_deg)) return CoordinateFault::NonFinite;
  if (lat_deg < -90.0 || lat_deg > 90.0) return CoordinateFault::LatitudeOutOfRange;
  return CoordinateFault::Ok;
}

std::optional<std::uint64_t> point_nested29(double lat_deg, double lon_deg, Latitude convention) noexcept {
  if (check_coordinates(lat_deg, lon_deg) != CoordinateFault::Ok) return std::nullopt;
  const double lat = convention == Latitude::Authalic ? authalic_forward_deg(lat_deg) : lat_deg;
  return nest29(lat * kDegToRad, lon_deg * kDegToRad);
}

std::optional<std::uint64_t> point_word(double lat_deg, double lon_deg, Latitude convention) {
  const auto id = point_nested29(lat_deg, lon_deg, convention);
  if (!id) return std::nullopt;
  return morton::point_from_nested29(*id);
}

LatLon cell_centre(std::uint64_t nested_id, int order, Latitude convention) {
  if (order < 0 || order > 29) throw UsageError("cell order " + std::to_string(order) + " is outside 0…29");
  const std::uint64_t cells_per_face = morton::pow4(order);
  if (nested_id >= 12 * cells_per_face)
    throw UsageError("cell " + std::to_string(nested_id) + " is not a NESTED id at order " + std::to_string(order) +
                     " (ids run below 12·4^" + std::to_string(order) + ")");
  // HEALPix pix2ang for the NESTED scheme (Górski et al. 2005): the face's ring and the
  // position along it, from the face and the in-face (x, y).
  static constexpr int kFaceRow[12] = {2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4};
  static constexpr int kFaceColumn[12] = {1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7};
  const auto face = static_cast<int>(nested_id / cells_per_face);
  const morton::XY xy = morton::rank_to_xy(nested_id % cells_per_face);
  const std::int64_t nside = std::int64_t{1} << order, ix = xy.x, iy = xy.y;
  const std::int64_t ring = kFaceRow[face] * nside - ix - iy - 1;
  const double n = static_cast<double>(nside);
  std::int64_t nr = nside, kshift = 0;
  double sphere_lat = 0;
  // In the caps 1 − |z| = nr²/(3·nside²) = 2·sin²(θ/2) for the distance θ from the pole, which
  // keeps the precision a latitude from asin(z) would lose next to the poles.
  const auto from_pole = [&](std::int64_t rings) {
    return 2.0 * std::asin(static_cast<double>(rings) / (std::sqrt(6.0) * n)) * kRadToDeg;
  };
  if (ring < nside) {  // north polar cap
    nr = ring;
    sphere_lat = 90.0 - from_pole(nr);
  } else if (ring > 3 * nside) {  // south polar cap
    nr = 4 * nside - ring;
    sphere_lat = from_pole(nr) - 90.0;
  } else {  // equatorial belt
    sphere_lat = std::asin(static_cast<double>(2 * nside - ring) * 2.0 / (3.0 * n)) * kRadToDeg;
    kshift = (ring - nside) & 1;
  }
  std::int64_t jp = (kFaceColumn[face] * nr + ix - iy + 1 + kshift) / 2;
  if (jp > 4 * nside) jp -= 4 * nside;
  if (jp < 1) jp += 4 * nside;
  const double lon = (static_cast<double>(jp) - 0.5 * static_cast<double>(kshift + 1)) * 90.0 / static_cast<double>(nr);
  return {convention == Latitude::Authalic ? authalic_inverse_deg(sphere_lat) : sphere_lat, lon};
}

}  // namespace tessera::ragged::geo

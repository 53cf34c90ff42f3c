// Geocoding latitude/longitude to order-29 morton point words (spec §6.4, mortie §9).
//
//   1. rows with a non-finite coordinate or a latitude outside [−90, 90] are rejected;
//   2. the geodetic latitude becomes the WGS84 authalic latitude (a 5-term series in float64), or
//      is used as it is under the legacy `geodetic-spherical` convention;
//   3. (β, λ) hashes to a HEALPix NESTED id at order 29 (the equatorial / polar projection);
//   4. the id is packed as a point word (suffix 48 + 4·t28 + t29).
//
// The cell of a point at order k is its NESTED id shifted right by 2·(29 − k), which is what the
// writers use on the hot path (no word is decoded per row).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::ragged::geo {

enum class Latitude : std::uint8_t { Authalic, GeodeticSpherical };

// The CLI names `authalic` | `geodetic-spherical` (UsageError for anything else).
Latitude parse_latitude(std::string_view name);
// The token recorded in the group's `dggs.latitude`: "authalic-wgs84" | "geodetic-spherical".
std::string_view dggs_token(Latitude convention) noexcept;
// The CLI name.
std::string_view name_of(Latitude convention) noexcept;

// The WGS84 authalic latitude (degrees) of a geodetic latitude (degrees), by the series of spec
// §6.4 step 2, clamped to [−90, 90]. 30° → 29.888997034459614.
double authalic_forward_deg(double lat_deg) noexcept;

// The geodetic latitude (degrees) whose authalic latitude is `beta_deg`: the series above
// inverted by fixed-point iteration, so authalic_forward_deg(authalic_inverse_deg(β)) == β to
// within a few ulps.
double authalic_inverse_deg(double beta_deg) noexcept;

// The order-29 HEALPix NESTED id of a sphere point; `lat_rad` is the latitude already on the
// sphere (authalic or geodetic-spherical), `lon_rad` any finite longitude.
std::uint64_t nest29(double lat_rad, double lon_rad) noexcept;

// Why a row's coordinates were refused (Ok: they were not).
enum class CoordinateFault : std::uint8_t { Ok, NonFinite, LatitudeOutOfRange };
CoordinateFault check_coordinates(double lat_deg, double lon_deg) noexcept;

// The order-29 NESTED id of a geodetic (lat, lon) in degrees under `convention`, or nullopt when
// check_coordinates refuses the pair.
std::optional<std::uint64_t> point_nested29(double lat_deg, double lon_deg, Latitude convention) noexcept;
// The same as a packed point word.
std::optional<std::uint64_t> point_word(double lat_deg, double lon_deg, Latitude convention);

// The centre of HEALPix NESTED cell `nested_id` at `order` (0…29) as geodetic (lat, lon) degrees
// under `convention`, longitude in [0, 360) (HEALPix's pix2ang, then the inverse authalic
// latitude). UsageError for an id outside the order's 12·4^order cells.
struct LatLon {
  double lat = 0, lon = 0;
};
LatLon cell_centre(std::uint64_t nested_id, int order, Latitude convention);

}  // namespace tessera::ragged::geo

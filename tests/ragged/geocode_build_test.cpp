// Geocoding (spec §6.4): the authalic series check values, the coordinate gates, point-word
// packing, and the order-29 NESTED hash against healpy (an independent HEALPix implementation;
// skipped when python3-healpy is missing). healpy and the spec's formulation may disagree for
// points within ~1e-9 of an order-29 cell edge, so exact agreement is required for all but a
// handful of points and containment (agreement at order 27) for every point.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/geocode.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::ragged {
namespace {

TEST(Geocode, AuthalicSeriesCheckValues) {
  EXPECT_EQ(geo::authalic_forward_deg(30.0), 29.888997034459614);
  EXPECT_EQ(geo::authalic_forward_deg(45.0), 44.87170287343406);
  EXPECT_EQ(geo::authalic_forward_deg(60.0), 59.88878556988545);
  EXPECT_EQ(geo::authalic_forward_deg(-30.0), -29.888997034459614);
  EXPECT_EQ(geo::authalic_forward_deg(0.0), 0.0);
  EXPECT_EQ(geo::authalic_forward_deg(90.0), 90.0);
  EXPECT_EQ(geo::authalic_forward_deg(-90.0), -90.0);
}

TEST(Geocode, CoordinateGatesAndConventions) {
  EXPECT_EQ(geo::check_coordinates(NAN, 0), geo::CoordinateFault::NonFinite);
  EXPECT_EQ(geo::check_coordinates(0, INFINITY), geo::CoordinateFault::NonFinite);
  EXPECT_EQ(geo::check_coordinates(90.0000001, 0), geo::CoordinateFault::LatitudeOutOfRange);
  EXPECT_EQ(geo::check_coordinates(-91, 0), geo::CoordinateFault::LatitudeOutOfRange);
  EXPECT_EQ(geo::check_coordinates(-90, 720), geo::CoordinateFault::Ok);
  EXPECT_FALSE(geo::point_word(100, 0, geo::Latitude::Authalic));
  EXPECT_EQ(geo::parse_latitude("authalic"), geo::Latitude::Authalic);
  EXPECT_EQ(geo::parse_latitude("geodetic-spherical"), geo::Latitude::GeodeticSpherical);
  EXPECT_THROW(geo::parse_latitude("geodetic"), UsageError);
  EXPECT_EQ(geo::dggs_token(geo::Latitude::Authalic), "authalic-wgs84");
  // The equator at longitude 0 is the centre of base cell 4 (decimal "5…"); the poles are the
  // corners of the polar faces; longitudes wrap.
  const std::uint64_t w = *geo::point_word(0, 0, geo::Latitude::Authalic);
  EXPECT_TRUE(morton::is_point(w));
  EXPECT_EQ(morton::base_cell_of(w), 4);
  EXPECT_EQ(morton::to_decimal(w).substr(0, 2), "52");  // ix = N/2, iy = N/2 − 1: first tuple 1
  EXPECT_EQ(geo::point_word(10, -170, geo::Latitude::Authalic), geo::point_word(10, 190, geo::Latitude::Authalic));
  EXPECT_EQ(morton::base_cell_of(*geo::point_word(90, 10, geo::Latitude::Authalic)), 0);
  EXPECT_EQ(morton::base_cell_of(*geo::point_word(-90, 10, geo::Latitude::Authalic)), 8);
  // The conventions differ away from the equator and the poles.
  EXPECT_NE(geo::point_word(45, 10, geo::Latitude::Authalic),
            geo::point_word(45, 10, geo::Latitude::GeodeticSpherical));
}

TEST(Geocode, PointWordsPackTheNestedId) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t id = rng() % (12 * (std::uint64_t{1} << 58));
    const std::uint64_t w = morton::point_from_nested29(id);
    ASSERT_TRUE(morton::is_valid(w));
    ASSERT_TRUE(morton::is_point(w));
    // The point's cell at any order is the area word of the shifted id.
    for (const int k : {0, 9, 19, 28})
      ASSERT_EQ(morton::clip(w, k), morton::from_nested(id >> (2 * (29 - k)), k)) << id << " order " << k;
  }
  EXPECT_THROW(morton::point_from_nested29(12 * (std::uint64_t{1} << 58)), UsageError);
}

TEST(Geocode, Nest29AgreesWithHealpy) {
  if (tessera::testing::run_python("import healpy").rc != 0) GTEST_SKIP() << "python3-healpy is not installed";
  tessera::testing::TempDir dir("geocode");
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> lat(-90, 90), lon(-180, 360);
  constexpr std::size_t kPoints = 20000;
  std::vector<double> coords;  // (authalic lat, lon) pairs in degrees
  std::vector<std::uint64_t> ours;
  for (std::size_t i = 0; i < kPoints; ++i) {
    // Include the polar caps and the exact poles/equator.
    const double la = i == 0 ? 90.0 : i == 1 ? -90.0 : i == 2 ? 0.0 : lat(rng), lo = lon(rng);
    const double beta = geo::authalic_forward_deg(la);
    coords.push_back(beta);
    coords.push_back(lo);
    ours.push_back(*geo::point_nested29(la, lo, geo::Latitude::Authalic));
  }
  tessera::testing::write_file_bytes(dir / "coords.bin", tessera::testing::bytes_of(coords));
  const auto run = tessera::testing::run_python(R"(
import sys, numpy as np, healpy
c = np.fromfile(sys.argv[1], dtype='<f8').reshape(-1, 2)
ids = healpy.ang2pix(2**29, c[:, 1], c[:, 0], nest=True, lonlat=True).astype('<u8')
ids.tofile(sys.argv[2])
)",
                                                {(dir / "coords.bin").string(), (dir / "ids.bin").string()});
  ASSERT_EQ(run.rc, 0) << run.err;
  const auto bytes = tessera::testing::read_file_bytes(dir / "ids.bin");
  ASSERT_EQ(bytes.size(), kPoints * 8);
  std::vector<std::uint64_t> theirs(kPoints);
  std::memcpy(theirs.data(), bytes.data(), bytes.size());
  std::size_t exact = 0;
  for (std::size_t i = 0; i < kPoints; ++i) {
    exact += ours[i] == theirs[i];
    EXPECT_EQ(ours[i] >> 4, theirs[i] >> 4)
        << "point " << i << " (" << coords[2 * i] << ", " << coords[2 * i + 1] << ")";
  }
  EXPECT_GE(exact, kPoints - 5);
}

}  // namespace
}  // namespace tessera::ragged

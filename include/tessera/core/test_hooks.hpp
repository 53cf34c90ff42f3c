// Named points in write paths at which a test can stop, pause or count a process, so that tests
// reach a kill point, a race or a held lock by a deterministic mechanism instead of by sleeping.
// Every point is inert unless the environment arms the hooks; unarmed, a point costs one relaxed
// atomic load and a predictable branch. The environment is read once, on the first point passed
// (`reload` reads it again, for tests that set it in-process):
//
//   TESSERA_TEST_KILL_AT=<point>:<n>   the n-th pass (1-based) of <point> raises SIGKILL on the
//                                      process itself.
//   TESSERA_TEST_PAUSE_AT=<point>:<n>  the n-th pass of <point> creates <dir>/<point>.reached and
//                                      waits until <dir>/<point>.release exists (at most 10
//                                      minutes, then throws IoError); <dir> is
//   TESSERA_TEST_PAUSE_DIR=<dir>       (required with TESSERA_TEST_PAUSE_AT).
//   TESSERA_TEST_TRACE=<file>          every pass of every point appends "<point>\n" to <file>.
//
// Counts are per process and per point name, across threads; points passed on several threads at
// once are counted in some order, so "the n-th pass" is deterministic in number, not in which
// thread's pass it is. A malformed setting throws UsageError from the first point passed.
// The points are listed in docs/testing.md.
#pragma once

#include <atomic>
#include <string_view>

namespace tessera::test_hooks {

namespace detail {
// -1: the environment has not been read yet; 0: no hook armed; 1: armed.
extern std::atomic<int> g_state;
bool read_environment();
void reached(std::string_view point);
}  // namespace detail

// Marks that the process passes named point `name` (a string literal such as "cells.tile_written").
inline void point(std::string_view name) {
  const int state = detail::g_state.load(std::memory_order_relaxed);
  if (state == 0) [[likely]]
    return;
  if (state < 0 && !detail::read_environment()) return;
  detail::reached(name);
}

// Reads the environment again and resets every pass count (tests that arm a hook in-process).
void reload();

}  // namespace tessera::test_hooks

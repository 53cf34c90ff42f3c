// `std::visit(Overloaded{[](const A&) {…}, [](const B&) {…}}, v)`: one lambda per alternative of
// a variant. Dispatch over a closed set of kinds goes through std::visit (or a `switch` without
// `default`), so a new alternative that no lambda handles fails to compile instead of taking
// another kind's path.
#pragma once

namespace tessera {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace tessera

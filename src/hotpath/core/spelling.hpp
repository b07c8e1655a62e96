// How far apart two spellings are: the "did you mean" of a misspelt option, scenario key or name.
#pragma once

#include <cstddef>
#include <string_view>

namespace hotpath {

// The Levenshtein distance: the fewest single-character insertions, deletions and substitutions that turn `a`
// into `b` ("conections" and "connections": 1).
std::size_t edit_distance(std::string_view a, std::string_view b);

} // namespace hotpath

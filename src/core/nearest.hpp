// "Did you mean ...?": the candidate nearest to a mistyped word.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace queuectl {

// Edits that turn `a` into `b`: insertions, deletions, substitutions, and swaps of two
// neighbours ("emial" -> "email" is one), counted by bytes.
std::size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word`, when it is near enough to be what was meant: at most
// one edit for words up to 4 bytes, two up to 8, three beyond; ties go to the first listed.
// None when `word` is itself a candidate.
std::optional<std::string> nearest(const std::string& word,
                                   const std::vector<std::string>& candidates);

}  // namespace queuectl

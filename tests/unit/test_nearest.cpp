#include <doctest/doctest.h>

#include "core/nearest.hpp"

using queuectl::edit_distance;
using queuectl::nearest;

TEST_CASE("edit_distance counts insertions, deletions, substitutions and neighbour swaps") {
  CHECK(edit_distance("", "") == 0);
  CHECK(edit_distance("abc", "") == 3);
  CHECK(edit_distance("stat", "stats") == 1);
  CHECK(edit_distance("emial", "email") == 1);  // a swap
  CHECK(edit_distance("--priorty", "--priority") == 1);
  CHECK(edit_distance("--stauts", "--status") == 1);
  CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("nearest suggests only what is near enough, and nothing for an exact word") {
  const std::vector<std::string> commands = {"migrate", "enqueue", "claim", "stats", "status"};
  CHECK(nearest("stat", commands) == std::optional<std::string>("stats"));
  CHECK(nearest("enqeue", commands) == std::optional<std::string>("enqueue"));
  CHECK(nearest("claim", commands) == std::nullopt);
  CHECK(nearest("frobnicate", commands) == std::nullopt);
  CHECK(nearest("xy", {"ab"}) == std::nullopt);  // two edits in two letters is another word
  CHECK(nearest("emial", {"email", "emails"}) == std::optional<std::string>("email"));
}

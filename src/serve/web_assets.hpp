// The page of `queuectl serve` (web/index.html, app.js, app.css), embedded at build time by
// scripts/embed_web.cmake: the binary needs no files, no CDN and no Node to show it.
#pragma once

#include <string>
#include <string_view>

namespace queuectl {

struct WebAsset {
  const char* content_type;
  std::string_view body;
};

// The asset served at `path` ("/" is index.html), or nullptr.
const WebAsset* web_asset(const std::string& path);

}  // namespace queuectl

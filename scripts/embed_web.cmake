# Writes OUTPUT: a C++ file that returns each file of web/ (the page of `queuectl serve`).
set(body "")
foreach(name index.html app.js app.css)
  file(READ "${WEB_DIR}/${name}" content)
  if(name MATCHES "\\.html$")
    set(type "text/html; charset=utf-8")
  elseif(name MATCHES "\\.js$")
    set(type "text/javascript; charset=utf-8")
  else()
    set(type "text/css; charset=utf-8")
  endif()
  string(APPEND body "  if (path == \"/${name}\") { static const WebAsset a{\"${type}\", R\"QCWEB(${content})QCWEB\"}; return &a; }\n")
endforeach()
file(WRITE "${OUTPUT}.tmp" "// Generated from web/ by scripts/embed_web.cmake; do not edit.
#include \"serve/web_assets.hpp\"

namespace queuectl {

const WebAsset* web_asset(const std::string& asked) {
  const std::string path = asked == \"/\" ? std::string(\"/index.html\") : asked;
${body}  return nullptr;
}

}  // namespace queuectl
")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
